//! Incarnations on a shared etcd state: two states on one prefix stand for
//! two processes. A copy read in one process is refused by an update once
//! another process destroyed and created the resource again; a value written
//! before uids gets the same derived uid in every process.
//!
//! Each test starts its own etcd (skipped loudly without an `etcd` binary,
//! failing instead when `CI` is set).

use std::time::Duration;

use cosi_runtime::prelude::*;
use cosi_runtime::resource::Uid;
use cosi_runtime::testing::conformance::{IntSpec, NS};
use cosi_runtime::testing::etcd::TestEtcd;

/// How long a change may take to reach the other state's cache.
const DEADLINE: Duration = Duration::from_secs(30);

fn ptr(id: &str) -> Pointer {
    Pointer::typed::<IntSpec>(NS, id).erase()
}

fn prefix(test: &str) -> String {
    format!("{test}-{:08x}", fastrand::u32(..))
}

async fn open(etcd: &TestEtcd, prefix: &str) -> State {
    State::builder().etcd(etcd.config(prefix)).open().await.expect("open the etcd state")
}

/// Waits until `state`'s cache holds a resource at `ptr` that `pred` accepts.
async fn until(state: &State, ptr: &Pointer, pred: impl Fn(&AnyResource) -> bool) -> AnyResource {
    let mut events = state.watch_stream(ptr).await.expect("watch");
    let wait = async {
        use futures::StreamExt;
        loop {
            match events.next().await.expect("the watch goes on") {
                Event::Created(r) | Event::Updated { new: r, .. } if pred(&r) => return r,
                _ => {}
            }
        }
    };
    tokio::time::timeout(DEADLINE, wait).await.expect("the change arrives")
}

/// Waits until `state`'s cache holds the resource at `ptr` with `uid`.
async fn until_uid(state: &State, ptr: &Pointer, uid: Uid) -> AnyResource {
    until(state, ptr, |r| r.metadata().uid() == Some(uid)).await
}

#[actix::test]
async fn an_update_from_an_incarnation_another_process_replaced_is_a_version_conflict() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = prefix("incarnations");
    let here = open(&etcd, &prefix).await;
    let there = open(&etcd, &prefix).await;

    let created = here.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    let first = created.metadata().uid().expect("a uid");
    let read = until_uid(&there, &ptr("a"), first).await;
    let stale = read.typed::<IntSpec>().unwrap();

    // Another process destroys it and creates it again: version 1 again.
    here.destroy(&ptr("a"), None).await.unwrap();
    let again = here.create(Resource::new(NS, "a", IntSpec(2)), None).await.unwrap();
    let second = again.metadata().uid().expect("a uid");
    assert_ne!(first, second);
    assert_eq!(again.version(), stale.version());

    // Once `there` has seen the new incarnation (same version, same mod
    // revision precondition it would send), only the uid tells the stale
    // copy apart.
    until_uid(&there, &ptr("a"), second).await;
    let mut update = stale.clone();
    update.spec_mut().0 = 99;
    let e = there.update(update, None).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    let now = there.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    assert_eq!(now.spec(), &IntSpec(2), "untouched");
    assert_eq!(now.metadata().uid(), Some(second));
    assert_eq!(now.metadata().revision(), again.metadata().revision(), "nothing written");
    assert_eq!(here.get_typed::<IntSpec>(&ptr("a")).await.unwrap().spec(), &IntSpec(2));
    here.close().await.unwrap();
    there.close().await.unwrap();
}

#[actix::test]
async fn a_value_written_before_uids_gets_the_same_uid_in_every_process() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = prefix("legacy");
    // What a build before uids wrote: metadata without a `uid`.
    let key = format!("/{prefix}/{NS}/{}/old", IntSpec::TYPE);
    let value = serde_json::json!({
        "metadata": {
            "namespace": NS, "type": IntSpec::TYPE, "id": "old", "version": 2,
            "phase": "running",
            "created": "2024-01-02T03:04:05Z", "updated": "2024-01-02T03:04:06Z",
        },
        "spec": 5,
    });
    let mut raw = etcd_client::Client::connect([etcd.endpoint()], None).await.expect("connect");
    raw.put(key.as_str(), serde_json::to_vec(&value).unwrap(), None).await.expect("put");

    let here = open(&etcd, &prefix).await;
    let there = open(&etcd, &prefix).await;
    let read = here.get_typed::<IntSpec>(&ptr("old")).await.unwrap();
    let uid = read.metadata().uid().expect("a uid given at load");
    assert_eq!(there.get(&ptr("old")).await.unwrap().metadata().uid(), Some(uid));

    // A value fed later (another writer of the old build) gets it too.
    raw.put(
        key.replace("/old", "/late").as_str(),
        {
            let mut v = value.clone();
            v["metadata"]["id"] = "late".into();
            serde_json::to_vec(&v).unwrap()
        },
        None,
    )
    .await
    .expect("put");
    let late_here = until(&here, &ptr("late"), |_| true).await;
    let late_there = until(&there, &ptr("late"), |_| true).await;
    let late_uid = late_here.metadata().uid().expect("a uid given when fed");
    assert_ne!(late_uid, uid, "another resource");
    assert_eq!(late_there.metadata().uid(), Some(late_uid), "the same in both processes");

    // The next write stores it; the other process keeps seeing the same uid.
    let mut next = read.clone();
    next.spec_mut().0 = 6;
    let updated = here.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().uid(), Some(uid));
    // Waited for by version: the uid alone was there before the update.
    let version = updated.version();
    let seen = until(&there, &ptr("old"), move |r| r.version() == version).await;
    assert_eq!(seen.metadata().uid(), Some(uid));
    let got = raw.get(key.as_str(), None).await.expect("get");
    let kv = got.kvs().first().expect("the key");
    let stored: serde_json::Value = serde_json::from_slice(kv.value()).expect("JSON");
    assert_eq!(stored["metadata"]["uid"], uid.to_string(), "stored in the value");
    here.close().await.unwrap();
    there.close().await.unwrap();
}
