//! Reads without a round trip (reads are served from the cached view the state
//! actor owns; docs/ARCHITECTURE.md, 'Backends and durability'): a `State`
//! handle reads that view directly, and still never sees a write before its
//! commit, reads its own writes at once, and answers `Unavailable` once the
//! state is closed.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use cosi_runtime::prelude::*;
use cosi_runtime::state::backend::CommitFuture;
use cosi_runtime::state::{Backend, CommitOutcome, Namespaces, Snapshot, Write};
use cosi_runtime::testing::conformance::{IntSpec, NS};
use futures::FutureExt;
use tokio::sync::Semaphore;

/// A backend whose commits each wait for one permit of `gate`.
struct Gated {
    gate: Arc<Semaphore>,
    commits: Arc<AtomicUsize>,
}

impl Backend for Gated {
    fn describe(&self) -> String {
        "gated test backend".into()
    }

    fn load(&mut self) -> Result<Snapshot, Error> {
        Ok(Snapshot::default())
    }

    fn commit(&mut self, batch: Vec<Write>) -> CommitFuture {
        let (gate, commits) = (self.gate.clone(), self.commits.clone());
        Box::pin(async move {
            commits.fetch_add(1, Ordering::SeqCst);
            gate.acquire().await.expect("the gate stays open").forget();
            Ok(batch.into_iter().map(|w| CommitOutcome::Committed(w.revision)).collect())
        })
    }
}

fn ptr(id: &str) -> TypedPointer<IntSpec> {
    Pointer::typed::<IntSpec>(NS, id)
}

async fn yield_until(mut done: impl FnMut() -> bool) {
    for _ in 0..10_000 {
        if done() {
            return;
        }
        tokio::task::yield_now().await;
    }
    panic!("the condition never held");
}

#[actix::test]
async fn a_read_never_sees_a_write_before_its_commit() {
    let gate = Arc::new(Semaphore::new(1));
    let commits = Arc::new(AtomicUsize::new(0));
    let backend = Gated { gate: gate.clone(), commits: commits.clone() };
    let state = State::builder().backend(Namespaces::All, backend).open().await.unwrap();
    // The first commit passes the gate; the second waits on it.
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();

    let writer = state.clone();
    let write = actix::spawn(async move {
        writer.modify(&ptr("a"), |r| r.spec_mut().0 = 2, None).await.unwrap();
    });
    yield_until(|| commits.load(Ordering::SeqCst) == 2).await;

    // Staged, not committed: a read waits for the commit instead of reading
    // the cache (which already holds the write).
    let a = ptr("a");
    let mut read = Box::pin(state.get(&a));
    for _ in 0..100 {
        assert!((&mut read).now_or_never().is_none(), "a read answered before the commit");
        tokio::task::yield_now().await;
    }
    gate.add_permits(1);
    let read = read.await.unwrap();
    assert_eq!(read.spec().0, 2, "the read waited for the commit and sees the write");
    write.await.unwrap();
    gate.add_permits(usize::MAX >> 4);
}

#[actix::test]
async fn a_writer_reads_its_own_write_at_once_from_another_arbiter() {
    let state = State::start();
    let arbiter = actix::Arbiter::new();
    let (tx, rx) = futures::channel::oneshot::channel();
    let remote = state.clone();
    arbiter.spawn(async move {
        let mut seen = Vec::new();
        for k in 0..100 {
            let id = format!("n{k}");
            remote.create(Resource::new(NS, id.as_str(), IntSpec(k)), None).await.unwrap();
            let read = remote.get(&ptr(&id)).await.unwrap();
            seen.push(read.spec().0);
            remote.modify(&ptr(&id), move |r| r.spec_mut().0 = -k, None).await.unwrap();
            let read = remote.get(&ptr(&id)).await.unwrap();
            seen.push(read.spec().0);
        }
        let listed = remote.list_typed::<IntSpec>(NS, &LabelQuery::all()).await.unwrap();
        let _ = tx.send((seen, listed.len()));
    });
    let (seen, listed) = rx.await.unwrap();
    let expected: Vec<i64> = (0..100).flat_map(|k| [k, -k]).collect();
    assert_eq!(seen, expected, "every read after a write sees that write");
    assert_eq!(listed, 100);
    arbiter.stop();
}

#[actix::test]
async fn a_closed_state_answers_unavailable_to_reads_and_writes() {
    let state = State::start();
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    state.close().await.unwrap();
    let e = state.get(&ptr("a")).await.unwrap_err();
    assert!(matches!(e, Error::Unavailable { .. }), "{e}");
    let e = state.list_typed::<IntSpec>(NS, &LabelQuery::all()).await.unwrap_err();
    assert!(matches!(e, Error::Unavailable { .. }), "{e}");
    // Writes too, and the error names the resource.
    let e = state.create(Resource::new(NS, "after-close", IntSpec(2)), None).await.unwrap_err();
    assert!(matches!(e, Error::Unavailable { .. }) && e.to_string().contains("after-close"), "{e}");
}

#[actix::test]
async fn reads_of_a_bad_address_fail_as_a_request_would() {
    let state = State::start();
    let e = state.get(&Pointer::new(NS, "Ints", "")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    let e = state.get(&ptr("missing")).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}
