//! The redb state file: what survives a reopen, and the typed errors at open
//! that leave a file untouched.

use cosi_runtime::prelude::*;
use cosi_runtime::state::RedbBackend;
use cosi_runtime::testing::conformance::ScratchDir;
use cosi_runtime::{Runtime, StorageFailure};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Routes.net.cosi.dev")]
struct Route {
    destination: String,
    gateway: Option<String>,
    metric: u32,
}

fn failure(err: &Error) -> Option<StorageFailure> {
    match err {
        Error::Storage { failure, .. } => Some(*failure),
        _ => None,
    }
}

#[actix::test]
async fn a_typed_spec_reads_back_typed_after_a_reopen_without_registration() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let route =
        Route { destination: "10.0.0.0/8".into(), gateway: Some("10.0.0.1".into()), metric: 7 };
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    let mut r = Resource::new("config", "default", route.clone());
    r.metadata_mut().labels_mut().insert("table", "main");
    r.metadata_mut().finalizers_mut().add("RouteController");
    let stored = state.client_as("RouteController").create(r).await.unwrap();
    state.client_as("RouteController").teardown(stored.pointer()).await.unwrap();
    let stored = state.get(stored.pointer()).await.unwrap();
    state.close().await.unwrap();

    let state = State::open_durable(&file, ["config"]).await.unwrap();
    let back = state.get_typed::<Route>(stored.pointer()).await.unwrap();
    assert_eq!(back.spec(), &route);
    assert_eq!(back.metadata(), stored.metadata(), "metadata as stored");
    assert_eq!(back.metadata().created(), stored.metadata().created());
    assert_eq!(back.metadata().updated(), stored.metadata().updated());
    assert_eq!(back.metadata().revision(), stored.metadata().revision());
    assert_eq!(back.metadata().phase(), Phase::TearingDown);
    // The store revision went on from where it was.
    let next = state.create(Resource::new("config", "second", route), None).await.unwrap();
    assert!(next.metadata().revision() > stored.metadata().revision());
}

#[actix::test]
async fn only_the_durable_namespaces_survive_a_reopen() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    let route = Route::default();
    state.create(Resource::new("config", "kept", route.clone()), None).await.unwrap();
    state.create(Resource::new("status", "lost", route), None).await.unwrap();
    state.close().await.unwrap();
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    assert!(state.get(&Pointer::typed::<Route>("config", "kept")).await.is_ok());
    assert!(
        state.get(&Pointer::typed::<Route>("status", "lost")).await.unwrap_err().is_not_found()
    );
}

#[actix::test]
async fn a_file_open_elsewhere_is_locked_and_stays_usable() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    state.create(Resource::new("config", "a", Route::default()), None).await.unwrap();
    let err = State::open_durable(&file, ["config"]).await.unwrap_err();
    assert_eq!(failure(&err), Some(StorageFailure::Locked), "{err}");
    assert!(err.to_string().contains("state.redb"), "names the file: {err}");
    // The first state goes on, and after it closes the file opens.
    state.create(Resource::new("config", "b", Route::default()), None).await.unwrap();
    state.close().await.unwrap();
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    assert_eq!(
        state.list(&Kind::of::<Route>("config"), &LabelQuery::all()).await.unwrap().len(),
        2
    );
}

#[actix::test]
async fn a_file_that_is_not_a_state_is_corrupt_and_left_untouched() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let garbage = b"this is somebody's notes, not a database\n".repeat(100);
    std::fs::write(&file, &garbage).unwrap();
    let err = State::open_durable(&file, ["config"]).await.unwrap_err();
    assert_eq!(failure(&err), Some(StorageFailure::Corrupt), "{err}");
    assert!(std::fs::read(&file).unwrap() == garbage, "the file is untouched");
}

#[actix::test]
async fn a_damaged_state_file_is_refused_and_left_untouched() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    for i in 0..50 {
        state
            .create(Resource::new("config", format!("r{i}"), Route::default()), None)
            .await
            .unwrap();
    }
    state.close().await.unwrap();
    // Keep redb's header, scramble everything after it.
    let mut bytes = std::fs::read(&file).unwrap();
    for b in bytes.iter_mut().skip(64) {
        *b = !*b;
    }
    std::fs::write(&file, &bytes).unwrap();
    let err = State::open_durable(&file, ["config"]).await.unwrap_err();
    assert!(err.is_storage(), "{err}");
    assert!(std::fs::read(&file).unwrap() == bytes, "the file is untouched");
}

#[actix::test]
async fn a_newer_format_is_refused_and_left_untouched() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    {
        // What a future version would write: its own format number.
        let db = redb::Database::create(&file).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut meta =
                txn.open_table(redb::TableDefinition::<&str, u64>::new("cosi.meta")).unwrap();
            meta.insert("format", cosi_runtime::state::FORMAT_VERSION + 1).unwrap();
        }
        txn.commit().unwrap();
    }
    let before = std::fs::read(&file).unwrap();
    let err = State::open_durable(&file, ["config"]).await.unwrap_err();
    assert_eq!(failure(&err), Some(StorageFailure::UnsupportedFormat), "{err}");
    assert!(err.to_string().contains("format version 2"), "{err}");
    assert!(std::fs::read(&file).unwrap() == before, "the file is untouched");
}

#[actix::test]
async fn a_place_that_cannot_be_written_is_a_typed_error() {
    // As root, permissions do not stop a write; a path under a regular file
    // fails for everybody.
    let dir = ScratchDir::new();
    let blocker = dir.path().join("not-a-directory");
    std::fs::write(&blocker, b"x").unwrap();
    let err = State::open_durable(blocker.join("state.redb"), ["config"]).await.unwrap_err();
    assert!(err.is_storage(), "{err}");
    assert!(err.to_string().contains("not-a-directory"), "names the place: {err}");
    let err = RedbBackend::open("/proc/cosi-cannot-create/state.redb").unwrap_err();
    assert!(err.is_storage(), "{err}");
}

#[actix::test]
async fn a_runtime_opens_a_durable_state_in_one_line() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let runtime = Runtime::builder().open_durable(&file, ["config"]).await.unwrap();
    runtime.state().create(Resource::new("config", "r", Route::default()), None).await.unwrap();
    runtime.settled().await;
    runtime.stop().await;
    runtime.state().close().await.unwrap();
    let runtime = Runtime::builder().open_durable(&file, ["config"]).await.unwrap();
    let r =
        runtime.state().get_typed::<Route>(&Pointer::typed::<Route>("config", "r")).await.unwrap();
    assert_eq!(r.version().get(), 1);
}

/// What a build before uids wrote: format 1, each resource as its revision
/// then JSON metadata without a `uid`.
fn write_a_file_without_uids(file: &std::path::Path) {
    let db = redb::Database::create(file).unwrap();
    let txn = db.begin_write().unwrap();
    {
        let mut meta =
            txn.open_table(redb::TableDefinition::<&str, u64>::new("cosi.meta")).unwrap();
        meta.insert("format", 1).unwrap();
        meta.insert("revision", 4).unwrap();
        let mut resources =
            txn.open_table(redb::TableDefinition::<&str, &[u8]>::new("cosi.resources")).unwrap();
        let json = serde_json::json!({
            "metadata": {
                "namespace": "config", "type": "Routes.net.cosi.dev", "id": "old",
                "version": 3, "phase": "running",
                "created": "2024-01-02T03:04:05Z", "updated": "2024-01-02T03:04:06Z",
            },
            "spec": { "destination": "0.0.0.0/0", "gateway": null, "metric": 1 },
        });
        let mut value = 4u64.to_be_bytes().to_vec();
        value.extend(serde_json::to_vec(&json).unwrap());
        resources.insert("config\0Routes.net.cosi.dev\0old", value.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

#[actix::test]
async fn a_file_written_before_uids_opens_with_stable_uids_and_refuses_stale_updates() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    write_a_file_without_uids(&file);
    let p = Pointer::typed::<Route>("config", "old");

    let state = State::open_durable(&file, ["config"]).await.unwrap();
    let read = state.get_typed::<Route>(&p).await.unwrap();
    let uid = read.metadata().uid().expect("a uid given at load");
    assert_eq!(read.version().get(), 3);
    state.close().await.unwrap();

    // The same uid after a reopen, before anything wrote it...
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    assert_eq!(state.get(&p).await.unwrap().metadata().uid(), Some(uid), "stable");
    // ... and stored by the next write.
    let mut next = read.clone();
    next.spec_mut().metric = 2;
    let updated = state.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().uid(), Some(uid));
    state.close().await.unwrap();
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    let stored = state.get_typed::<Route>(&p).await.unwrap();
    assert_eq!(stored.metadata().uid(), Some(uid));

    // A copy read from it is refused once it was destroyed and created again.
    state.destroy(&p, None).await.unwrap();
    let again = state.create(Resource::new("config", "old", Route::default()), None).await.unwrap();
    assert_ne!(again.metadata().uid(), Some(uid));
    let mut stale = stored;
    stale.metadata_mut().set_version(again.version());
    let e = state.update(stale, None).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    assert_eq!(state.get_typed::<Route>(&p).await.unwrap().spec(), &Route::default());
}

/// The store revision goes on after a reopen from the newest write, whether
/// that write survives as a record or not: a destroy of the newest resource
/// (its record, with its revision, is gone), puts after a destroy, and the
/// same in one batch (writes sent together, committed as one).
#[actix::test]
async fn the_store_revision_survives_a_reopen_whatever_the_newest_write_was() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let kind = Kind::of::<Route>("config");
    let p = |id: &str| Pointer::typed::<Route>("config", id);
    let route = || Route::default();
    let revision = |state: State| {
        let kind = kind.clone();
        async move { state.list_with_revision(&kind, &LabelQuery::all()).await.unwrap().1 }
    };

    // The newest write is a destroy.
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    state.create(Resource::new("config", "a", route()), None).await.unwrap();
    let b = state.create(Resource::new("config", "b", route()), None).await.unwrap();
    state.destroy(&p("b"), None).await.unwrap();
    let destroyed = revision(state.clone()).await;
    assert!(destroyed > b.metadata().revision());
    state.close().await.unwrap();
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    assert_eq!(revision(state.clone()).await, destroyed, "not the newest record's revision");
    let c = state.create(Resource::new("config", "c", route()), None).await.unwrap();
    assert!(c.metadata().revision() > destroyed);

    // Puts after a destroy, then a destroy and puts in one batch.
    let d = state.create(Resource::new("config", "d", route()), None).await.unwrap();
    state.close().await.unwrap();
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    assert_eq!(revision(state.clone()).await, d.metadata().revision());
    let d_ptr = p("d");
    let (e, gone, f) = futures::join!(
        state.create(Resource::new("config", "e", route()), None),
        state.destroy(&d_ptr, None),
        state.create(Resource::new("config", "f", route()), None),
    );
    gone.unwrap();
    let newest = e.unwrap().metadata().revision().max(f.unwrap().metadata().revision());
    let before = revision(state.clone()).await;
    assert!(before >= newest);
    state.close().await.unwrap();
    let state = State::open_durable(&file, ["config"]).await.unwrap();
    assert_eq!(revision(state.clone()).await, before);
    let g = state.create(Resource::new("config", "g", route()), None).await.unwrap();
    assert!(g.metadata().revision() > before);
    state.close().await.unwrap();
}
