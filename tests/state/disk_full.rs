//! A durable state whose disk fills up ([`LimitedDisk`]: the file cannot grow
//! past a limit, and growing fails with ENOSPC as a full disk does): writes
//! fail with `StorageFailure::Full` and change nothing, reads go on, nothing
//! acknowledged is lost, other namespaces keep working, and writes succeed
//! again once space is freed.

use cosi_runtime::prelude::*;
use cosi_runtime::state::StateBuilder;
use cosi_runtime::testing::LimitedDisk;
use cosi_runtime::testing::conformance::ScratchDir;
use cosi_runtime::{Error, StorageFailure};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Blob(String);
impl Spec for Blob {
    const TYPE: &'static str = "Blobs.test.cosi.dev";
}

fn blob(ns: &str, i: usize) -> Resource<Blob> {
    // 64 KiB each: a few of them make the file grow.
    Resource::new(ns, format!("b{i:05}"), Blob(format!("{i}-").repeat(64 * 1024 / 4)))
}

/// Creates blobs from `from` on until one fails: its number and error.
async fn fill(state: &State, from: usize, acked: &mut Vec<AnyResource>) -> (usize, Error) {
    for i in from..2_000 {
        match state.create(blob("config", i), None).await {
            Ok(r) => acked.push(r),
            Err(e) => return (i, e),
        }
    }
    panic!("the file had to grow, and could not");
}

fn is_full(e: &Error) -> bool {
    matches!(e, Error::Storage { failure: StorageFailure::Full, .. })
}

#[actix::test]
async fn a_full_disk_fails_writes_as_full_keeps_reads_and_recovers_when_space_returns() {
    let dir = ScratchDir::new();
    let path = dir.path().join("state.redb");
    let disk = LimitedDisk::new(u64::MAX);
    let state =
        StateBuilder::new().backend(["config"], disk.backend(&path).unwrap()).open().await.unwrap();
    let mut acked = Vec::new();
    for i in 0..4 {
        acked.push(state.create(blob("config", i), None).await.unwrap());
    }
    // The disk is full: the file may not grow any more.
    disk.set_limit(disk.used());
    let (i, e) = fill(&state, 4, &mut acked).await;
    assert!(is_full(&e), "{e}");
    assert!(e.to_string().contains("no space left"), "{e}");
    // Not written, not in the state; what was acknowledged is served.
    let missing = Pointer::typed::<Blob>("config", format!("b{i:05}"));
    assert!(state.get(&missing).await.unwrap_err().is_not_found());
    let kind = Kind::of::<Blob>("config");
    assert_eq!(state.list(&kind, &LabelQuery::all()).await.unwrap().len(), acked.len());
    assert_eq!(state.get(&acked[0].pointer().clone()).await.unwrap().version(), acked[0].version());
    // Still full: refused again with the same failure once the file has no
    // room left inside (the failed write's reopen may have freed some: redb
    // drops the pages of commits its log holds, and replays them).
    disk.set_limit(disk.used());
    let (i, again) = fill(&state, i, &mut acked).await;
    assert!(is_full(&again), "{again}");
    // A namespace in memory is not on that disk: it keeps working.
    state.create(blob("status", 0), None).await.unwrap();

    // Space returns: writes resume, on their own.
    disk.set_limit(u64::MAX);
    let created = state.create(blob("config", i), None).await.unwrap();
    acked.push(created);
    let updated = state
        .modify(
            &acked[0].pointer().clone(),
            |r: &mut Resource<Blob>| r.spec_mut().0.push('!'),
            None,
        )
        .await
        .unwrap();
    acked[0] = updated.into_any();
    state.close().await.unwrap();

    // Reopened from the file: exactly what was acknowledged.
    let reopened = State::open_durable(&path, ["config"]).await.unwrap();
    let stored = reopened.list(&kind, &LabelQuery::all()).await.unwrap();
    assert_eq!(stored.len(), acked.len());
    for (stored, acked) in stored.iter().zip(&acked) {
        assert_eq!((stored.id(), stored.version()), (acked.id(), acked.version()));
        assert_eq!(stored.typed::<Blob>().unwrap().spec(), acked.typed::<Blob>().unwrap().spec());
    }
    reopened.close().await.unwrap();
}
