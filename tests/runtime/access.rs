//! Every access rule of the reconcile context, one test each.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::prelude::*;

type Script =
    for<'a> fn(&'a ReconcileContext) -> Pin<Box<dyn Future<Output = Result<(), Error>> + 'a>>;

/// Runs one scripted operation per reconcile and records its result.
struct Probe {
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    script: Script,
    results: Arc<Mutex<Vec<Result<(), Error>>>>,
}

impl Controller for Probe {
    fn name(&self) -> &str {
        "Probe"
    }
    fn inputs(&self) -> Vec<Input> {
        self.inputs.clone()
    }
    fn outputs(&self) -> Vec<Output> {
        self.outputs.clone()
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let result = (self.script)(cx).await;
        self.results.lock().unwrap().push(result);
        Ok(())
    }
}

/// Registers a Probe with `inputs` and output Sentence that runs `script`;
/// the result of its first reconcile.
async fn first_result(runtime: &Runtime, inputs: Vec<Input>, script: Script) -> Result<(), Error> {
    let results = Arc::new(Mutex::new(vec![]));
    let r = results.clone();
    runtime
        .register(move || Probe {
            inputs: inputs.clone(),
            outputs: vec![Output::exclusive::<SentenceSpec>()],
            script,
            results: r.clone(),
        })
        .await
        .unwrap();
    runtime.settled().await;
    results.lock().unwrap().remove(0)
}

/// Inputs: weak Int, strong Str (one id only: "only"); output: Sentence.
async fn run(script: Script) -> (Runtime, Result<(), Error>) {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new(NS, "i", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new(NS, "only", StrSpec("s".into())), None).await.unwrap();
    let inputs = vec![Input::weak::<IntSpec>(NS), Input::strong::<StrSpec>(NS).with_id("only")];
    let first = first_result(&runtime, inputs, script).await;
    (runtime, first)
}

fn assert_denied(result: Result<(), Error>, op: &str) {
    match result {
        Err(Error::AccessDenied { operation, controller, .. }) => {
            assert_eq!(operation, op);
            assert_eq!(controller, "Probe");
        }
        other => panic!("expected {op} to be denied, got {other:?}"),
    }
}

fn int() -> Pointer {
    Pointer::typed::<IntSpec>(NS, "i").erase()
}

#[actix::test]
async fn getting_a_type_that_is_neither_input_nor_output_is_denied() {
    let (_, r) = run(|cx| {
        Box::pin(
            async move { cx.get(&Pointer::new(NS, "Secrets.test.cosi.dev", "x")).await.map(drop) },
        )
    })
    .await;
    assert_denied(r, "get");
}

#[actix::test]
async fn getting_inputs_and_outputs_is_allowed() {
    let (_, r) = run(|cx| {
        Box::pin(async move {
            cx.get(&int()).await?;
            cx.get(&Pointer::typed::<StrSpec>(NS, "only")).await?;
            // Outputs are readable in any namespace; this one just does not exist.
            let missing =
                cx.get(&Pointer::typed::<SentenceSpec>("elsewhere", "x")).await.unwrap_err();
            assert!(missing.is_not_found());
            cx.list(&Kind::of::<SentenceSpec>("elsewhere"), &LabelQuery::all()).await.map(drop)
        })
    })
    .await;
    r.unwrap();
}

#[actix::test]
async fn an_id_specific_input_allows_get_of_that_id_but_not_list() {
    let (_, r) = run(|cx| {
        Box::pin(
            async move { cx.list(&Kind::of::<StrSpec>(NS), &LabelQuery::all()).await.map(drop) },
        )
    })
    .await;
    assert_denied(r, "list");
    let (_, r) = run(|cx| {
        Box::pin(async move { cx.get(&Pointer::typed::<StrSpec>(NS, "other")).await.map(drop) })
    })
    .await;
    assert_denied(r, "get");
}

#[actix::test]
async fn creating_a_type_that_is_not_an_output_is_denied() {
    let (runtime, r) = run(|cx| {
        Box::pin(async move { cx.create(Resource::new(NS, "new", IntSpec(5))).await.map(drop) })
    })
    .await;
    assert_denied(r, "create");
    let e = runtime.state().get(&Pointer::typed::<IntSpec>(NS, "new")).await.unwrap_err();
    assert!(e.is_not_found(), "nothing was written");
}

#[actix::test]
async fn updating_an_input_is_denied() {
    let (_, r) = run(|cx| {
        Box::pin(async move {
            let mut i = cx.get_typed::<IntSpec>(&int()).await?;
            i.spec_mut().0 = 99;
            cx.update(i).await.map(drop)
        })
    })
    .await;
    assert_denied(r, "update");
}

#[actix::test]
async fn modifying_an_input_is_denied() {
    let (runtime, r) = run(|cx| {
        Box::pin(async move {
            cx.modify(&int(), |i: &mut Resource<IntSpec>| i.spec_mut().0 = 99).await.map(drop)
        })
    })
    .await;
    assert_denied(r, "modify");
    let i = runtime.state().get_typed::<IntSpec>(&int()).await.unwrap();
    assert_eq!(i.spec(), &IntSpec(1));
}

#[actix::test]
async fn tearing_down_an_input_is_denied() {
    let (_, r) = run(|cx| Box::pin(async move { cx.teardown(&int()).await.map(drop) })).await;
    assert_denied(r, "teardown");
}

#[actix::test]
async fn destroying_an_input_is_denied() {
    let (_, r) = run(|cx| Box::pin(async move { cx.destroy(&int()).await })).await;
    assert_denied(r, "destroy");
}

#[actix::test]
async fn adding_a_finalizer_to_a_weak_input_is_denied() {
    let (_, r) = run(|cx| Box::pin(async move { cx.add_finalizer(&int()).await.map(drop) })).await;
    assert_denied(r, "add_finalizer");
}

#[actix::test]
async fn removing_a_finalizer_from_an_output_is_denied() {
    let (_, r) = run(|cx| {
        Box::pin(async move { cx.remove_finalizer(&Pointer::typed::<SentenceSpec>(NS, "x")).await })
    })
    .await;
    assert_denied(r, "remove_finalizer");
}

#[actix::test]
async fn finalizers_on_a_strong_input_are_the_controllers_own() {
    let (runtime, r) = run(|cx| {
        Box::pin(
            async move { cx.add_finalizer(&Pointer::typed::<StrSpec>(NS, "only")).await.map(drop) },
        )
    })
    .await;
    r.unwrap();
    let s = runtime.state().get(&Pointer::typed::<StrSpec>(NS, "only")).await.unwrap();
    assert_eq!(s.metadata().finalizers().to_vec(), ["Probe"]);
}

#[actix::test]
async fn writes_are_stamped_with_the_controller_as_owner() {
    let (runtime, r) = run(|cx| {
        Box::pin(async move {
            cx.create(Resource::new(NS, "mine", SentenceSpec("hi".into()))).await.map(drop)
        })
    })
    .await;
    r.unwrap();
    let mine = runtime.state().get(&Pointer::typed::<SentenceSpec>(NS, "mine")).await.unwrap();
    assert_eq!(mine.owner(), Some("Probe"));
}

#[actix::test]
async fn an_output_created_by_someone_else_cannot_be_changed() {
    let runtime = Runtime::start();
    runtime
        .state()
        .create(Resource::new(NS, "user", SentenceSpec("by hand".into())), None)
        .await
        .unwrap();
    let r = first_result(&runtime, vec![], |cx| {
        Box::pin(async move {
            cx.modify(&sentence("user"), |s: &mut Resource<SentenceSpec>| {
                s.spec_mut().0 = "taken".into()
            })
            .await
            .map(drop)
        })
    })
    .await;
    let e = r.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
}

fn sentence(id: &str) -> Pointer {
    Pointer::typed::<SentenceSpec>(NS, id).erase()
}

/// The Probe's output "held" exists, owned by the Probe, with a finalizer
/// of someone else's ("Holder") on it; runs `script` once; the first result.
async fn run_on_held_output(script: Script) -> (Runtime, Result<(), Error>) {
    let runtime = Runtime::start();
    let state = runtime.state();
    state
        .client_as("Probe")
        .create(Resource::new(NS, "held", SentenceSpec("made".into())))
        .await
        .unwrap();
    state.add_finalizer(&sentence("held"), "Holder").await.unwrap();
    let first = first_result(&runtime, vec![], script).await;
    (runtime, first)
}

async fn held_finalizers(runtime: &Runtime) -> Vec<String> {
    runtime.state().get(&sentence("held")).await.unwrap().metadata().finalizers().to_vec()
}

#[actix::test]
async fn creating_an_output_with_finalizers_is_denied() {
    let (runtime, r) = run(|cx| {
        Box::pin(async move {
            let mut s = Resource::new(NS, "new", SentenceSpec("hi".into()));
            s.metadata_mut().finalizers_mut().add("Probe");
            cx.create(s).await.map(drop)
        })
    })
    .await;
    assert_denied(r, "create");
    let e = runtime.state().get(&sentence("new")).await.unwrap_err();
    assert!(e.is_not_found(), "nothing was written: {e}");
}

#[actix::test]
async fn a_modify_that_adds_a_finalizer_to_an_output_is_denied() {
    let (runtime, r) = run_on_held_output(|cx| {
        Box::pin(async move {
            cx.modify(&sentence("held"), |s: &mut Resource<SentenceSpec>| {
                s.metadata_mut().finalizers_mut().add("Probe");
            })
            .await
            .map(drop)
        })
    })
    .await;
    assert_denied(r, "modify");
    assert_eq!(held_finalizers(&runtime).await, ["Holder"]);
}

#[actix::test]
async fn a_modify_that_rebuilds_an_output_cannot_drop_anothers_finalizer() {
    let (runtime, r) = run_on_held_output(|cx| {
        Box::pin(async move {
            cx.modify(&sentence("held"), |s: &mut Resource<SentenceSpec>| {
                *s = Resource::new(NS, "held", SentenceSpec("rebuilt".into()));
            })
            .await
            .map(drop)
        })
    })
    .await;
    assert_denied(r, "modify");
    let held = runtime.state().get_typed::<SentenceSpec>(&sentence("held")).await.unwrap();
    assert_eq!(held.spec().0, "made", "nothing was written");
    assert_eq!(held.metadata().finalizers().to_vec(), ["Holder"]);
}

#[actix::test]
async fn an_update_that_removes_an_outputs_finalizer_is_denied() {
    let (runtime, r) = run_on_held_output(|cx| {
        Box::pin(async move {
            let mut s = cx.get_typed::<SentenceSpec>(&sentence("held")).await?;
            s.metadata_mut().finalizers_mut().remove("Holder");
            s.spec_mut().0 = "changed".into();
            cx.update(s).await.map(drop)
        })
    })
    .await;
    assert_denied(r, "update");
    assert_eq!(held_finalizers(&runtime).await, ["Holder"]);
}

#[actix::test]
async fn writes_that_leave_finalizers_as_read_keep_anothers_hold() {
    let (runtime, r) = run_on_held_output(|cx| {
        Box::pin(async move {
            cx.modify(&sentence("held"), |s: &mut Resource<SentenceSpec>| {
                s.spec_mut().0 = "modified".into();
            })
            .await?;
            let mut s = cx.get_typed::<SentenceSpec>(&sentence("held")).await?;
            s.spec_mut().0 = "updated".into();
            cx.update(s).await.map(drop)
        })
    })
    .await;
    r.unwrap();
    let held = runtime.state().get_typed::<SentenceSpec>(&sentence("held")).await.unwrap();
    assert_eq!(held.spec().0, "updated");
    assert_eq!(held.metadata().finalizers().to_vec(), ["Holder"]);
}
