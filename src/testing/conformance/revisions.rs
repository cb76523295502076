//! Checks of store revisions: they grow per write, lists, gets and
//! `Destroyed` carry theirs, watches resume from them, per namespace, and a
//! coalesced backlog goes out in ascending revision.

use std::collections::BTreeMap;

use futures::StreamExt;

use super::Target;
use super::support::{IntSpec, NS, NS_BESIDE, int, kind, ptr};
use crate::prelude::*;
use crate::state::WatchOptions;

/// Checks that revisions grow per write and watches resume.
pub async fn check_revisions_grow_per_write_and_watches_resume(t: &mut dyn Target) {
    let state = t.open().await;
    let a = state.create(int("a", 1), None).await.unwrap();
    let b = state.create(int("b", 1), None).await.unwrap();
    assert!(b.metadata().revision() > a.metadata().revision(), "one revision per write");
    let mut watch = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    while !matches!(watch.next().await, Some(Event::Bootstrapped(_))) {}
    let seen = watch.revision();
    assert!(seen >= b.metadata().revision(), "caught up after bootstrap");
    drop(watch);
    // Missed while away: an update, a destroy, a create.
    let a2 = state
        .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    assert!(a2.metadata().revision() > b.metadata().revision());
    state.destroy(&ptr("b"), None).await.unwrap();
    state.create(int("c", 3), None).await.unwrap();
    let mut resumed = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(seen))
        .await
        .unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Updated { new, .. }) if new.id() == "a"));
    assert!(matches!(resumed.next().await, Some(Event::Destroyed(r)) if r.id() == "b"));
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "c"));
    // Nothing more was missed: the next event is a live one.
    state.create(int("d", 4), None).await.unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "d"));
    // A revision ahead of the state is refused, and so is one no longer kept
    // after a reopen (a memory state keeps everything it saw).
    let ahead = WatchOptions::resume_from(resumed.revision() + 1_000);
    let err = state.watch_kind_stream(&kind(), LabelQuery::all(), &ahead).await.unwrap_err();
    assert!(err.is_compacted(), "{err}");
    let both = WatchOptions { resume_from: Some(seen), ..WatchOptions::bootstrap() };
    let err = state.watch_kind_stream(&kind(), LabelQuery::all(), &both).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

/// Checks that a list carries the store revision of its snapshot: a watch
/// resumed from it delivers exactly what the list did not show.
pub async fn check_a_list_carries_the_revision_of_its_snapshot(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let b = state.create(int("b", 1), None).await.unwrap();
    let (items, revision) = state.list_with_revision(&kind(), &LabelQuery::all()).await.unwrap();
    assert_eq!(items.iter().map(|r| r.id().to_string()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(revision >= b.metadata().revision(), "the snapshot holds b: {revision}");
    assert!(items.iter().all(|r| r.metadata().revision() <= revision));
    // The same snapshot, as a plain list sees it.
    assert_eq!(items, state.list(&kind(), &LabelQuery::all()).await.unwrap());
    // After the list: an update and a create.
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    state.create(int("c", 3), None).await.unwrap();
    let mut resumed = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(revision))
        .await
        .unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Updated { new, .. }) if new.id() == "a"));
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "c"));
    // Nothing the list showed comes again, nothing after is missed.
    state.create(int("d", 4), None).await.unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "d"));
    // Another namespace's kind, empty: a revision all the same, from which
    // a watch of it resumes. (Not compared with `revision`: in a state over
    // several stores, another namespace may count revisions of its own.)
    let other = Kind::of::<IntSpec>(NS_BESIDE);
    let (none, at) = state.list_with_revision(&other, &LabelQuery::all()).await.unwrap();
    assert!(none.is_empty());
    let mut beside = state
        .watch_kind_stream(&other, LabelQuery::all(), &WatchOptions::resume_from(at))
        .await
        .unwrap();
    let e = state.create(Resource::new(NS_BESIDE, "e", IntSpec(5)), None).await.unwrap();
    assert!(matches!(beside.next().await, Some(Event::Created(r)) if r.id() == "e"));
    assert!(e.metadata().revision() > at, "{} <= {at}", e.metadata().revision());
    let bad = Kind::new(NS, "");
    let err = state.list_with_revision(&bad, &LabelQuery::all()).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

/// Checks that a get with its revision reads the resource (or none) at a
/// store revision that holds every earlier write: a watch resumed from it
/// delivers what came after.
pub async fn check_a_get_carries_the_revision_it_was_read_at(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let b = state.create(int("b", 1), None).await.unwrap();
    let (found, revision) = state.get_with_revision(&ptr("a")).await.unwrap();
    assert_eq!(found, Some(state.get(&ptr("a")).await.unwrap()));
    assert!(revision >= b.metadata().revision(), "the read came after b: {revision}");
    let (none, at) = state.get_with_revision(&ptr("nope")).await.unwrap();
    assert_eq!((none, at), (None, revision), "nothing was written between the reads");
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    let mut after = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(revision))
        .await
        .unwrap();
    assert!(matches!(after.next().await, Some(Event::Updated { new, .. }) if new.id() == "a"));
    let bad = Pointer::typed::<IntSpec>(NS, "");
    let err = state.get_with_revision(&bad).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

/// Checks that each namespace resumes from its own revisions, whichever
/// store holds it: writes to [`NS`] and [`NS_BESIDE`] interleaved, a list
/// of each with its revision, more interleaved writes, then a watch of each
/// resumed from its own list's revision gets exactly its namespace's
/// changes since, and then its live ones.
pub async fn check_each_namespace_resumes_from_its_own_revisions(t: &mut dyn Target) {
    let state = t.open().await;
    let beside = |id: &str, n: i64| Resource::new(NS_BESIDE, id, IntSpec(n));
    let kinds = [kind(), Kind::of::<IntSpec>(NS_BESIDE)];
    for i in 0..3 {
        state.create(int(&format!("a{i}"), i), None).await.unwrap();
        state.create(beside(&format!("x{i}"), i), None).await.unwrap();
    }
    let mut revisions = Vec::new();
    for k in &kinds {
        let (items, revision) = state.list_with_revision(k, &LabelQuery::all()).await.unwrap();
        assert_eq!(items.len(), 3, "{k}");
        assert!(items.iter().all(|r| r.metadata().revision() <= revision), "{k}");
        revisions.push(revision);
    }
    // Missed by both watches: interleaved writes to both namespaces.
    for i in 0..3 {
        let n = 10 + i;
        state
            .modify(
                &ptr(&format!("a{i}")),
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n,
                None,
            )
            .await
            .unwrap();
        let x = Pointer::typed::<IntSpec>(NS_BESIDE, format!("x{i}"));
        state.destroy(&x, None).await.unwrap();
    }
    state.create(int("b", 7), None).await.unwrap();
    state.create(beside("y", 8), None).await.unwrap();
    let mut watches = Vec::new();
    for (k, revision) in kinds.iter().zip(&revisions) {
        let options = WatchOptions::resume_from(*revision);
        watches.push(state.watch_kind_stream(k, LabelQuery::all(), &options).await.unwrap());
    }
    let [mut mine, mut theirs] = <[_; 2]>::try_from(watches).expect("two watches");
    for i in 0..3 {
        let id = format!("a{i}");
        let got = mine.next().await;
        assert!(matches!(&got, Some(Event::Updated { new, .. }) if new.id() == id), "{got:?}");
    }
    assert!(matches!(mine.next().await, Some(Event::Created(r)) if r.id() == "b"));
    for i in 0..3 {
        let id = format!("x{i}");
        assert!(matches!(theirs.next().await, Some(Event::Destroyed(r)) if r.id() == id));
    }
    assert!(matches!(theirs.next().await, Some(Event::Created(r)) if r.id() == "y"));
    // Nothing else was missed: the next event of each is a live one.
    state.create(beside("z", 9), None).await.unwrap();
    state.create(int("c", 9), None).await.unwrap();
    assert!(matches!(theirs.next().await, Some(Event::Created(r)) if r.id() == "z"));
    assert!(matches!(mine.next().await, Some(Event::Created(r)) if r.id() == "c"));
    // Each watch's revisions grew from its own list's.
    assert!(mine.revision() > revisions[0] && theirs.revision() > revisions[1]);
}

/// Checks that `Destroyed` carries the destroy's own revision (above the
/// resource's last write), live and resumed.
pub async fn check_destroyed_carries_the_destroys_revision(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let mut live = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    while !matches!(live.next().await, Some(Event::Bootstrapped(_))) {}
    let before = live.revision();
    let a = state
        .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    state.destroy(&ptr("a"), None).await.unwrap();
    assert!(matches!(live.next().await, Some(Event::Updated { .. })));
    let Some(Event::Destroyed(gone)) = live.next().await else { panic!("a destroy") };
    let destroyed_at = gone.metadata().revision();
    assert!(destroyed_at > a.metadata().revision(), "{destroyed_at} after the last write");
    assert_eq!(destroyed_at, live.revision(), "the watch reached the destroy's revision");
    assert_eq!((gone.version(), gone.typed::<IntSpec>().unwrap().spec().0), (a.version(), 2));
    let again = state.create(int("a", 3), None).await.unwrap();
    assert!(again.metadata().revision() > destroyed_at);
    let mut resumed = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(before))
        .await
        .unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Updated { .. })));
    let Some(Event::Destroyed(gone)) = resumed.next().await else { panic!("a destroy") };
    assert_eq!(gone.metadata().revision(), destroyed_at, "history keeps the destroy's revision");
}

/// Checks that a subscriber that fell behind gets its coalesced backlog in
/// ascending revision (a resource's turn is that of its last change).
pub async fn check_a_coalesced_backlog_goes_out_in_ascending_revision(t: &mut dyn Target) {
    let state = t.open().await;
    const RESOURCES: usize = 10;
    for i in 0..RESOURCES {
        state.create(int(&format!("r{i}"), 0), None).await.unwrap();
    }
    // Never polled while the writes run: its window fills, the rest coalesces.
    let options = WatchOptions::default().with_window(4);
    let mut stalled = state.watch_kind_stream(&kind(), LabelQuery::all(), &options).await.unwrap();
    for n in 1..=200_i64 {
        // Touch the resources out of id order, and destroy and re-create one.
        let id = format!("r{}", (n as usize * 7) % RESOURCES);
        if n % 50 == 0 {
            state.destroy(&ptr(&id), None).await.unwrap();
            state.create(int(&id, n), None).await.unwrap();
        } else {
            let p = ptr(&id);
            state
                .modify(&p, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None)
                .await
                .unwrap();
        }
    }
    assert!(state.watch_stats(stalled.id()).await.unwrap().backlog > 0, "it fell behind");
    let expected: BTreeMap<String, i64> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.id().to_string(), r.typed::<IntSpec>().unwrap().spec().0))
        .collect();
    let mut latest = BTreeMap::new();
    let mut last = 0;
    while latest != expected {
        let event = stalled.next().await.expect("the watch goes on");
        let resource = event.resource().expect("a resource event");
        let revision = resource.metadata().revision();
        assert!(revision >= last, "revision {revision} delivered after {last}: {event:?}");
        last = revision;
        match event {
            Event::Created(r) | Event::Updated { new: r, .. } => {
                latest.insert(r.id().to_string(), r.typed::<IntSpec>().unwrap().spec().0);
            }
            Event::Destroyed(r) => {
                latest.remove(r.id());
            }
            Event::Bootstrapped(_) => unreachable!("no bootstrap"),
        }
    }
}
