//! Lists and watches of a type across every namespace (DESIGN.md §18):
//! sorted by (namespace, id) over namespaces routed to different stores,
//! one revision when memory and redb namespaces share the state's counter,
//! and watches that see namespaces made after they started.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::{IntSpec, StrSpec};
use cosi_runtime::prelude::*;
use cosi_runtime::state::backend::CommitFuture;
use cosi_runtime::state::{Backend, CommitOutcome, Namespaces, Snapshot, WatchOptions, Write};
use cosi_runtime::testing::conformance::ScratchDir;
use futures::StreamExt;
use tokio::sync::Semaphore;

fn int(ns: &str, id: &str, value: i64) -> AnyResource {
    Resource::new(ns, id, IntSpec(value)).into_any()
}

fn addresses(listed: &[AnyResource]) -> Vec<(String, String)> {
    listed.iter().map(|r| (r.pointer().namespace().to_owned(), r.id().to_owned())).collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(ns, id)| ((*ns).to_owned(), (*id).to_owned())).collect()
}

/// A state with namespace `durable` in a redb file and every other one in memory.
async fn mixed(dir: &ScratchDir) -> State {
    State::builder().durable(dir.path().join("state.redb"), ["durable"]).open().await.unwrap()
}

#[actix::test]
async fn a_list_across_memory_and_redb_namespaces_is_sorted_by_namespace_then_id() {
    let dir = ScratchDir::new();
    let state = mixed(&dir).await;
    for (ns, id) in [("memory", "b"), ("durable", "z"), ("memory", "a"), ("durable", "c")] {
        state.create(int(ns, id, 1), None).await.unwrap();
    }
    state
        .create(Resource::new("memory", "other", StrSpec("x".into())).into_any(), None)
        .await
        .unwrap();
    let all = state.list_all_namespaces(IntSpec::TYPE, &LabelQuery::all()).await.unwrap();
    let expected = pairs(&[("durable", "c"), ("durable", "z"), ("memory", "a"), ("memory", "b")]);
    assert_eq!(addresses(&all), expected);
}

#[actix::test]
async fn memory_and_redb_namespaces_answer_one_revision_that_a_watch_resumes_from() {
    let dir = ScratchDir::new();
    let state = mixed(&dir).await;
    state.create(int("memory", "a", 1), None).await.unwrap();
    state.create(int("durable", "b", 1), None).await.unwrap();
    let (items, revision) =
        state.list_all_namespaces_with_revision(IntSpec::TYPE, &LabelQuery::all()).await.unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(revision, Some(2), "memory and redb share the state's revisions");
    let mut watch = state
        .watch_all_namespaces_stream(
            IntSpec::TYPE,
            LabelQuery::all(),
            WatchOptions::resume_from(revision.unwrap()),
        )
        .await
        .unwrap();
    state.create(int("durable", "c", 1), None).await.unwrap();
    state.create(int("fresh", "d", 1), None).await.unwrap();
    for expected in [("durable", "c", 3), ("fresh", "d", 4)] {
        let Some(Event::Created(r)) = watch.next().await else { panic!("a creation") };
        assert_eq!((r.pointer().namespace(), r.id(), watch.revision()), expected);
    }
}

#[actix::test]
async fn a_label_query_filters_a_list_across_namespaces() {
    let state = State::start();
    let mut web = Resource::new("a", "web", IntSpec(1));
    web.metadata_mut().labels_mut().insert("app", "web");
    state.create(web.into_any(), None).await.unwrap();
    state.create(int("b", "db", 1), None).await.unwrap();
    let query = LabelQuery::all().equal("app", "web");
    let listed = state.list_all_namespaces(IntSpec::TYPE, &query).await.unwrap();
    assert_eq!(addresses(&listed), pairs(&[("a", "web")]));
}

#[actix::test]
async fn a_bad_type_is_invalid_input_for_lists_and_watches_across_namespaces() {
    let state = State::start();
    let err = state.list_all_namespaces("", &LabelQuery::all()).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
    let err = state.watch_all_namespaces_stream("", LabelQuery::all(), true).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

#[actix::test]
async fn a_watch_across_namespaces_bootstraps_then_sees_a_namespace_made_after_it_started() {
    let state = State::start();
    state.create(int("b", "1", 1), None).await.unwrap();
    state.create(int("a", "2", 1), None).await.unwrap();
    let mut watch =
        state.watch_all_namespaces_stream(IntSpec::TYPE, LabelQuery::all(), true).await.unwrap();
    let mut bootstrap = Vec::new();
    loop {
        match watch.next().await.unwrap() {
            Event::Created(r) => bootstrap.push(r),
            Event::Bootstrapped(kind) => {
                assert_eq!(kind.resource_type(), IntSpec::TYPE);
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(addresses(&bootstrap), pairs(&[("a", "2"), ("b", "1")]));
    state.create(int("later", "x", 1), None).await.unwrap();
    state
        .modify(&Pointer::typed::<IntSpec>("later", "x"), |r| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    state.destroy(&Pointer::typed::<IntSpec>("b", "1"), None).await.unwrap();
    assert!(matches!(watch.next().await, Some(Event::Created(r)) if r.id() == "x"));
    assert!(matches!(watch.next().await, Some(Event::Updated { new, .. }) if new.id() == "x"));
    assert!(matches!(watch.next().await, Some(Event::Destroyed(r)) if r.id() == "1"));
}

#[actix::test]
async fn a_slow_watch_across_namespaces_coalesces_past_its_window() {
    let state = State::start();
    let options = WatchOptions::default().with_window(2);
    let mut watch =
        state.watch_all_namespaces_stream(IntSpec::TYPE, LabelQuery::all(), options).await.unwrap();
    for round in 0..5 {
        for ns in ["a", "b", "c"] {
            let ptr = Pointer::typed::<IntSpec>(ns, "r");
            state.modify(&ptr, move |r| r.spec_mut().0 = round, None).await.unwrap();
        }
    }
    let stats = state.watch_stats(watch.id()).await.unwrap();
    assert_eq!(stats.in_flight, 2, "no more than the window in flight");
    assert_eq!(stats.backlog, 3, "one entry per resource, one id in three namespaces");
    let mut last = std::collections::BTreeMap::new();
    while last.len() < 3 || last.values().any(|v| *v != 4) {
        let event = watch.next().await.unwrap();
        let r = event.resource().unwrap().typed::<IntSpec>().unwrap();
        last.insert(r.pointer().namespace().to_owned(), r.spec().0);
    }
}

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

#[actix::test]
async fn a_list_across_namespaces_waits_for_the_commit_of_a_staged_write() {
    let gate = Arc::new(Semaphore::new(0));
    let commits = Arc::new(AtomicUsize::new(0));
    let backend = Gated { gate: gate.clone(), commits: commits.clone() };
    let state =
        State::builder().backend(Namespaces::from(["durable"]), backend).open().await.unwrap();
    state.create(int("memory", "a", 1), None).await.unwrap();
    let writer = state.clone();
    let write = actix::spawn(async move { writer.create(int("durable", "b", 1), None).await });
    while commits.load(Ordering::SeqCst) == 0 {
        tokio::task::yield_now().await;
    }
    let reader = state.clone();
    let list = actix::spawn(async move {
        reader.list_all_namespaces_with_revision(IntSpec::TYPE, &LabelQuery::all()).await
    });
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
    assert!(!list.is_finished(), "the list waits for the staged write's commit");
    gate.add_permits(1);
    write.await.unwrap().unwrap();
    let (items, revision) = list.await.unwrap().unwrap();
    assert_eq!(addresses(&items), pairs(&[("durable", "b"), ("memory", "a")]));
    assert_eq!(revision, Some(2));
}
