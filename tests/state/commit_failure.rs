//! A failed commit (docs/ARCHITECTURE.md, 'Backends and durability'): every
//! caller of the batch gets a typed storage error naming its resource, watchers
//! see nothing of it, the cache matches the store afterwards, and the next
//! batch succeeds. The backend here is a third-party one written against the
//! public [`Backend`] trait, failing on demand.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use cosi_runtime::prelude::*;
use cosi_runtime::state::backend::CommitFuture;
use cosi_runtime::state::{
    Backend, CommitOutcome, Namespaces, Precondition, Snapshot, Write, WriteOp,
};
use cosi_runtime::testing::conformance::{BackendTarget, IntSpec, NS};
use cosi_runtime::{StorageFailure, state_conformance};
use futures::StreamExt;
use futures::future::join_all;

/// What a `Flaky` backend holds, shared with the test.
#[derive(Default)]
struct Shared {
    stored: Mutex<BTreeMap<String, (u64, AnyResource)>>,
    revision: AtomicUsize,
    fail: AtomicBool,
    batches: AtomicUsize,
}

/// A backend over a map that fails every commit while `fail` is set.
struct Flaky(Arc<Shared>);

impl Backend for Flaky {
    fn describe(&self) -> String {
        "flaky test backend".into()
    }

    fn load(&mut self) -> Result<Snapshot, Error> {
        let stored = self.0.stored.lock().unwrap();
        Ok(Snapshot {
            revision: self.0.revision.load(Ordering::SeqCst) as u64,
            resources: stored.values().map(|(_, r)| r.clone()).collect(),
        })
    }

    fn commit(&mut self, batch: Vec<Write>) -> CommitFuture {
        let shared = self.0.clone();
        Box::pin(async move {
            shared.batches.fetch_add(1, Ordering::SeqCst);
            let first = batch[0].pointer.to_string();
            if shared.fail.load(Ordering::SeqCst) {
                return Err(Error::Storage {
                    resource: first,
                    failure: StorageFailure::Io,
                    reason: "injected: disk full".into(),
                });
            }
            let mut stored = shared.stored.lock().unwrap();
            let mut done = Vec::new();
            for w in batch {
                let key = w.pointer.to_string();
                let holds = match (w.precondition, stored.get(&key)) {
                    (Precondition::Absent, None) => true,
                    (Precondition::Revision(r), Some((s, _))) => r == *s,
                    _ => false,
                };
                assert!(holds, "precondition {:?} of {key} does not hold", w.precondition);
                match w.op {
                    WriteOp::Put(r) => {
                        stored.insert(key, (w.revision, r));
                    }
                    WriteOp::Delete => {
                        stored.remove(&key);
                    }
                }
                shared.revision.store(w.revision as usize, Ordering::SeqCst);
                done.push(CommitOutcome::Committed(w.revision));
            }
            Ok(done)
        })
    }
}

// The whole contract also holds over this third-party backend, reopened
// between steps from what it stored: one line.
state_conformance!(flaky_backend_conformance, {
    let shared = Arc::new(Shared::default());
    BackendTarget::new(move || Flaky(shared.clone()))
});

fn ptr(id: &str) -> Pointer {
    Pointer::typed::<IntSpec>(NS, id).erase()
}

async fn open(shared: &Arc<Shared>) -> State {
    State::builder().backend(Namespaces::All, Flaky(shared.clone())).open().await.unwrap()
}

#[actix::test]
async fn a_failed_commit_reports_storage_errors_rolls_back_and_publishes_nothing() {
    let shared = Arc::new(Shared::default());
    let state = open(&shared).await;
    state.create(Resource::new(NS, "kept", IntSpec(1)), None).await.unwrap();
    let mut watch = state
        .watch_kind_stream(&Kind::of::<IntSpec>(NS), LabelQuery::all(), &Default::default())
        .await
        .unwrap();

    shared.fail.store(true, Ordering::SeqCst);
    // Several callers in one batch: creates, an update and a destroy.
    let creates =
        join_all(
            (0..8).map(|i| {
                let state = state.clone();
                async move {
                    state.create(Resource::new(NS, format!("new-{i}"), IntSpec(i)), None).await
                }
            }),
        );
    let kept = ptr("kept");
    let update = state.modify(&kept, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 99, None);
    let (creates, update) = futures::join!(creates, update);
    for (i, result) in creates.into_iter().enumerate() {
        let err = result.unwrap_err();
        assert!(
            matches!(&err, Error::Storage { failure: StorageFailure::Io, .. }),
            "typed storage error: {err}"
        );
        assert!(err.to_string().contains(&format!("new-{i}")), "names its resource: {err}");
        assert!(err.to_string().contains("disk full"), "{err}");
    }
    let err = update.unwrap_err();
    assert!(err.is_storage() && err.to_string().contains("kept"), "{err}");
    let err = state.destroy(&ptr("kept"), None).await.unwrap_err();
    assert!(err.is_storage(), "{err}");

    // The cache rolled back: it matches the store.
    let listed = state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
    assert_eq!(listed.len(), 1);
    let kept = listed[0].typed::<IntSpec>().unwrap();
    assert_eq!((kept.spec(), kept.version().get()), (&IntSpec(1), 1));
    let stored = shared.stored.lock().unwrap().clone();
    assert_eq!(stored.len(), 1);
    assert_eq!(stored.values().next().unwrap().1, listed[0]);

    // The next batch succeeds, and it is the first thing the watcher sees.
    shared.fail.store(false, Ordering::SeqCst);
    let next = state
        .modify(&ptr("kept"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    assert_eq!(next.version().get(), 2);
    match watch.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
            assert_eq!(new.typed::<IntSpec>().unwrap().spec(), &IntSpec(2));
        }
        other => panic!("the watcher saw something of the failed batch: {other:?}"),
    }
    assert_eq!(shared.stored.lock().unwrap().values().next().unwrap().1.version().get(), 2);
}

#[actix::test]
async fn writes_of_one_mailbox_drain_are_committed_as_one_batch() {
    let shared = Arc::new(Shared::default());
    let state = open(&shared).await;
    let before = shared.batches.load(Ordering::SeqCst);
    let results = join_all((0..64).map(|i| {
        let state = state.clone();
        async move { state.create(Resource::new(NS, format!("r{i}"), IntSpec(i)), None).await }
    }))
    .await;
    assert!(results.iter().all(Result::is_ok));
    let batches = shared.batches.load(Ordering::SeqCst) - before;
    assert!(batches < 64, "64 concurrent writes took {batches} commits: group commit");
    assert_eq!(shared.stored.lock().unwrap().len(), 64);
}

#[actix::test]
async fn reads_of_a_namespace_in_memory_never_wait_for_a_commit() {
    let shared = Arc::new(Shared::default());
    let state = State::builder().backend(["config"], Flaky(shared.clone())).open().await.unwrap();
    state.create(Resource::new(NS, "status", IntSpec(1)), None).await.unwrap();
    assert!(shared.stored.lock().unwrap().is_empty(), "memory namespaces are not stored");
    state.create(Resource::new("config", "c", IntSpec(1)), None).await.unwrap();
    assert_eq!(shared.stored.lock().unwrap().len(), 1, "durable namespaces are");
    shared.fail.store(true, Ordering::SeqCst);
    assert!(state.create(Resource::new("config", "d", IntSpec(1)), None).await.is_err());
    // A failing disk does not hold back the in-memory namespaces.
    state.create(Resource::new(NS, "other", IntSpec(2)), None).await.unwrap();
}

/// Two stores in one state, and a batch with writes to both: the one whose
/// commit failed is rolled back and its callers told; the other's writes
/// stand, in the cache and in its store, and are published. (Rolled back
/// too, they would be in one place and not the other: the store would hold
/// a write its callers were told failed, and refuse the next one.)
#[actix::test]
async fn a_batch_over_two_stores_stands_in_the_one_that_committed() {
    let (ok, failing) = (Arc::new(Shared::default()), Arc::new(Shared::default()));
    let state = State::builder()
        .backend(["a"], Flaky(ok.clone()))
        .backend(["b"], Flaky(failing.clone()))
        .open()
        .await
        .unwrap();
    let mut watch = state
        .watch_kind_stream(&Kind::of::<IntSpec>("a"), LabelQuery::all(), &Default::default())
        .await
        .unwrap();
    failing.fail.store(true, Ordering::SeqCst);
    let (in_a, in_b) = futures::join!(
        state.create(Resource::new("a", "x", IntSpec(1)), None),
        state.create(Resource::new("b", "y", IntSpec(2)), None),
    );
    assert_eq!(in_a.unwrap().version().get(), 1);
    let err = in_b.unwrap_err();
    assert!(err.is_storage() && err.to_string().contains("b/"), "{err}");
    assert_eq!(ok.stored.lock().unwrap().len(), 1, "a's store holds its write");
    assert!(state.get(&Pointer::typed::<IntSpec>("a", "x")).await.is_ok(), "and so does the cache");
    assert!(state.get(&Pointer::typed::<IntSpec>("b", "y")).await.unwrap_err().is_not_found());
    assert!(matches!(watch.next().await, Some(Event::Created(r)) if r.id() == "x"));
    // The next write to a's resource finds its store as the cache says.
    let x = Pointer::typed::<IntSpec>("a", "x");
    let next = state.modify(&x, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 3, None).await;
    assert_eq!(next.unwrap().version().get(), 2);
}
