//! Model test: random operation sequences run against the state actor and a
//! plain reference model must agree on every result and on the final contents.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{IntSpec, NS};
use cosi_runtime::prelude::*;
use proptest::prelude::*;

const IDS: [&str; 3] = ["a", "b", "c"];
const OWNERS: [Option<&str>; 3] = [None, Some("x"), Some("y")];
const FINALIZERS: [&str; 2] = ["f1", "f2"];

#[derive(Clone, Debug)]
enum Op {
    Get(usize),
    List(Option<&'static str>),
    Create {
        id: usize,
        value: i64,
        owner: usize,
        app: Option<&'static str>,
        fin: Option<usize>,
    },
    /// `version_skew` is added to the model's current version (0 = correct).
    Update {
        id: usize,
        value: i64,
        owner: usize,
        version_skew: i64,
        expect_teardown: bool,
    },
    Modify {
        id: usize,
        value: i64,
        owner: usize,
        app: Option<&'static str>,
    },
    Destroy {
        id: usize,
        owner: usize,
    },
    Teardown {
        id: usize,
        owner: usize,
    },
    AddFinalizer {
        id: usize,
        fin: usize,
    },
    RemoveFinalizer {
        id: usize,
        fin: usize,
    },
}

fn app() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![Just(None), Just(Some("web")), Just(Some("db"))]
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0..IDS.len();
    let owner = 0..OWNERS.len();
    let fin = 0..FINALIZERS.len();
    prop_oneof![
        id.clone().prop_map(Op::Get),
        app().prop_map(Op::List),
        (id.clone(), 0..3i64, owner.clone(), app(), proptest::option::of(fin.clone()))
            .prop_map(|(id, value, owner, app, fin)| Op::Create { id, value, owner, app, fin }),
        (
            id.clone(),
            0..3i64,
            owner.clone(),
            prop_oneof![3 => Just(0i64), 1 => -1..=1i64],
            any::<bool>()
        )
            .prop_map(|(id, value, owner, version_skew, expect_teardown)| Op::Update {
                id,
                value,
                owner,
                version_skew,
                expect_teardown
            }),
        (id.clone(), 0..3i64, owner.clone(), app())
            .prop_map(|(id, value, owner, app)| { Op::Modify { id, value, owner, app } }),
        (id.clone(), owner.clone()).prop_map(|(id, owner)| Op::Destroy { id, owner }),
        (id.clone(), owner.clone()).prop_map(|(id, owner)| Op::Teardown { id, owner }),
        (id.clone(), fin.clone()).prop_map(|(id, fin)| Op::AddFinalizer { id, fin }),
        (id, fin).prop_map(|(id, fin)| Op::RemoveFinalizer { id, fin }),
    ]
}

/// The reference model: plain data and the contract's rules, nothing else.
#[derive(Clone, Debug, PartialEq)]
struct Model {
    value: i64,
    version: u64,
    owner: Option<&'static str>,
    tearing_down: bool,
    finalizers: BTreeSet<&'static str>,
    app: Option<&'static str>,
}

/// What an operation returned, reduced to comparable facts.
#[derive(Debug, PartialEq)]
enum Observed {
    Resource(Model),
    Ids(Vec<String>),
    Ready(bool),
    Done,
    Err(&'static str),
}

fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::NotFound { .. } => "not found",
        Error::AlreadyExists { .. } => "already exists",
        Error::VersionConflict { .. } => "version conflict",
        Error::OwnerConflict { .. } => "owner conflict",
        Error::PhaseConflict { .. } => "phase conflict",
        Error::PendingFinalizers { .. } => "pending finalizers",
        Error::InvalidInput { .. } => "invalid input",
        Error::TypeMismatch { .. } => "type mismatch",
        _ => "other",
    }
}

fn observe(r: &AnyResource) -> Model {
    let md = r.metadata();
    Model {
        value: r.typed::<IntSpec>().unwrap().spec().0,
        version: md.version().get(),
        owner: OWNERS.iter().flatten().copied().find(|o| Some(*o) == md.owner()),
        tearing_down: md.phase() == Phase::TearingDown,
        finalizers: FINALIZERS.iter().copied().filter(|f| md.finalizers().contains(f)).collect(),
        app: ["web", "db"].into_iter().find(|a| md.labels().get("app") == Some(*a)),
    }
}

fn apply_model(models: &mut BTreeMap<&'static str, Model>, op: &Op) -> Observed {
    use Observed::{Done, Err, Ready};
    match *op {
        Op::Get(id) => match models.get(IDS[id]) {
            Some(m) => Observed::Resource(m.clone()),
            None => Err("not found"),
        },
        Op::List(app) => Observed::Ids(
            models
                .iter()
                .filter(|(_, m)| app.is_none() || m.app == app)
                .map(|(id, _)| (*id).to_owned())
                .collect(),
        ),
        Op::Create { id, value, owner, app, fin } => {
            if models.contains_key(IDS[id]) {
                return Err("already exists");
            }
            let m = Model {
                value,
                version: 1,
                owner: OWNERS[owner],
                tearing_down: false,
                finalizers: fin.map(|f| FINALIZERS[f]).into_iter().collect(),
                app,
            };
            models.insert(IDS[id], m.clone());
            Observed::Resource(m)
        }
        Op::Update { id, value, owner, version_skew, expect_teardown } => {
            let Some(m) = models.get_mut(IDS[id]) else {
                return Err("not found");
            };
            if m.owner != OWNERS[owner] {
                return Err("owner conflict");
            }
            if version_skew != 0 {
                return Err("version conflict");
            }
            if m.tearing_down != expect_teardown {
                return Err("phase conflict");
            }
            m.value = value;
            m.version += 1;
            Observed::Resource(m.clone())
        }
        Op::Modify { id, value, owner, app } => match models.get_mut(IDS[id]) {
            None => {
                let m = Model {
                    value,
                    version: 1,
                    owner: OWNERS[owner],
                    tearing_down: false,
                    finalizers: BTreeSet::new(),
                    app,
                };
                models.insert(IDS[id], m.clone());
                Observed::Resource(m)
            }
            Some(m) => {
                if m.owner != OWNERS[owner] {
                    return Err("owner conflict");
                }
                if m.tearing_down {
                    return Err("phase conflict");
                }
                if m.value != value || m.app != app {
                    m.value = value;
                    m.app = app;
                    m.version += 1;
                }
                Observed::Resource(m.clone())
            }
        },
        Op::Destroy { id, owner } => {
            let Some(m) = models.get(IDS[id]) else {
                return Err("not found");
            };
            if m.owner != OWNERS[owner] {
                return Err("owner conflict");
            }
            if !m.finalizers.is_empty() {
                return Err("pending finalizers");
            }
            models.remove(IDS[id]);
            Done
        }
        Op::Teardown { id, owner } => {
            let Some(m) = models.get_mut(IDS[id]) else {
                return Err("not found");
            };
            if m.owner != OWNERS[owner] {
                return Err("owner conflict");
            }
            if !m.tearing_down {
                m.tearing_down = true;
                m.version += 1;
            }
            Ready(m.finalizers.is_empty())
        }
        Op::AddFinalizer { id, fin } => {
            let Some(m) = models.get_mut(IDS[id]) else {
                return Err("not found");
            };
            if m.finalizers.insert(FINALIZERS[fin]) {
                m.version += 1;
            }
            Done
        }
        Op::RemoveFinalizer { id, fin } => {
            let Some(m) = models.get_mut(IDS[id]) else {
                return Err("not found");
            };
            if m.finalizers.remove(FINALIZERS[fin]) {
                m.version += 1;
            }
            Done
        }
    }
}

fn ptr(id: usize) -> Pointer {
    Pointer::typed::<IntSpec>(NS, IDS[id]).erase()
}

fn with_app(r: &mut Resource<IntSpec>, app: Option<&'static str>) {
    let labels = r.metadata_mut().labels_mut();
    match app {
        Some(a) => labels.insert("app", a),
        None => labels.remove("app"),
    };
}

async fn apply_state(state: &State, models: &BTreeMap<&'static str, Model>, op: &Op) -> Observed {
    let resource = |r: Result<AnyResource, Error>| match r {
        Ok(r) => Observed::Resource(observe(&r)),
        Err(e) => Observed::Err(error_kind(&e)),
    };
    let done = |r: Result<(), Error>| match r {
        Ok(()) => Observed::Done,
        Err(e) => Observed::Err(error_kind(&e)),
    };
    match *op {
        Op::Get(id) => resource(state.get(&ptr(id)).await),
        Op::List(app) => {
            let query = app.map_or_else(LabelQuery::all, |a| LabelQuery::all().equal("app", a));
            let list = state.list(&Kind::of::<IntSpec>(NS), &query).await.unwrap();
            Observed::Ids(list.iter().map(|r| r.id().to_owned()).collect())
        }
        Op::Create { id, value, owner, app, fin } => {
            let mut r = Resource::new(NS, IDS[id], IntSpec(value));
            with_app(&mut r, app);
            if let Some(f) = fin {
                r.metadata_mut().finalizers_mut().add(FINALIZERS[f]);
            }
            resource(state.create(r, OWNERS[owner]).await)
        }
        Op::Update { id, value, owner, version_skew, expect_teardown } => {
            let mut r = Resource::new(NS, IDS[id], IntSpec(value));
            // Start from the stored metadata, as a caller that read it would.
            if let Some(m) = models.get(IDS[id]) {
                let stored = state.get_typed::<IntSpec>(&ptr(id)).await.unwrap();
                r = stored;
                r.spec_mut().0 = value;
                let v = m.version as i64 + version_skew;
                r.metadata_mut().set_version(Version::new(v.max(0) as u64));
            }
            let phase =
                if expect_teardown { ExpectedPhase::TearingDown } else { ExpectedPhase::Running };
            resource(state.update_with_phase(r, OWNERS[owner], phase).await)
        }
        Op::Modify { id, value, owner, app } => {
            let r = state
                .modify(
                    &ptr(id),
                    move |r: &mut Resource<IntSpec>| {
                        r.spec_mut().0 = value;
                        with_app(r, app);
                    },
                    OWNERS[owner],
                )
                .await;
            resource(r.map(Resource::into_any))
        }
        Op::Destroy { id, owner } => done(state.destroy(&ptr(id), OWNERS[owner]).await),
        Op::Teardown { id, owner } => match state.teardown(&ptr(id), OWNERS[owner]).await {
            Ok(ready) => Observed::Ready(ready),
            Err(e) => Observed::Err(error_kind(&e)),
        },
        Op::AddFinalizer { id, fin } => done(state.add_finalizer(&ptr(id), FINALIZERS[fin]).await),
        Op::RemoveFinalizer { id, fin } => {
            done(state.remove_finalizer(&ptr(id), FINALIZERS[fin]).await)
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn state_actor_agrees_with_the_reference_model(ops in proptest::collection::vec(op(), 1..60)) {
        let system = actix::System::new();
        let result: Result<(), TestCaseError> = system.block_on(async {
            let state = State::start();
            let mut models = BTreeMap::new();
            for (step, op) in ops.iter().enumerate() {
                let actual = apply_state(&state, &models, op).await;
                let expected = apply_model(&mut models, op);
                prop_assert_eq!(actual, expected, "step {}: {:?}", step, op);
            }
            let stored = state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
            let contents: BTreeMap<String, Model> =
                stored.iter().map(|r| (r.id().to_owned(), observe(r))).collect();
            let expected: BTreeMap<String, Model> =
                models.iter().map(|(id, m)| ((*id).to_owned(), m.clone())).collect();
            prop_assert_eq!(contents, expected);
            Ok(())
        });
        result?;
    }
}
