//! Checks of watches: what a watch starts with, bootstrap order, label-query
//! watches, `Updated`'s old resource, stalled subscribers, recipient watches.

use std::collections::BTreeMap;

use futures::StreamExt;

use super::Target;
use super::support::{IntSpec, int, kind, ptr};
use crate::prelude::*;
use crate::resource::Id;
use crate::state::WatchOptions;

/// Checks that watch starts with created or a tombstone.
pub async fn check_watch_starts_with_created_or_a_tombstone(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("here", 7), None).await.unwrap();
    let mut here = state.watch_stream(&ptr("here")).await.unwrap();
    match here.next().await {
        Some(Event::Created(r)) => assert_eq!(r.typed::<IntSpec>().unwrap().spec(), &IntSpec(7)),
        other => panic!("expected Created, got {other:?}"),
    }
    let mut gone = state.watch_stream(&ptr("gone")).await.unwrap();
    match gone.next().await {
        Some(Event::Destroyed(r)) => {
            assert!(r.is_tombstone());
            assert_eq!(r.pointer(), &ptr("gone"));
        }
        other => panic!("expected a tombstone, got {other:?}"),
    }
    // Then every change, in order.
    state.create(int("gone", 1), None).await.unwrap();
    state.destroy(&ptr("gone"), None).await.unwrap();
    assert!(matches!(gone.next().await, Some(Event::Created(_))));
    assert!(matches!(gone.next().await, Some(Event::Destroyed(r)) if !r.is_tombstone()));
}

/// Checks that watch kind bootstrap order then bootstrapped.
pub async fn check_watch_kind_bootstrap_order_then_bootstrapped(t: &mut dyn Target) {
    let state = t.open().await;
    for id in ["c", "a", "b"] {
        state.create(int(id, 0), None).await.unwrap();
    }
    let mut events = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    let mut seen = vec![];
    for _ in 0..3 {
        match events.next().await {
            Some(Event::Created(r)) => seen.push(r.id().to_owned()),
            other => panic!("expected Created, got {other:?}"),
        }
    }
    assert_eq!(seen, ["a", "b", "c"]);
    assert!(matches!(events.next().await, Some(Event::Bootstrapped(k)) if k == kind()));
    state.create(int("d", 0), None).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Created(r)) if r.id() == "d"));

    // Without bootstrap: live events only.
    let mut live = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::default())
        .await
        .unwrap();
    state.create(int("e", 0), None).await.unwrap();
    assert!(matches!(live.next().await, Some(Event::Created(r)) if r.id() == "e"));
}

/// Checks that label query watches turn updates into created and destroyed.
pub async fn check_label_query_watches_turn_updates_into_created_and_destroyed(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 0), None).await.unwrap();
    let query = LabelQuery::all().equal("app", "web");
    let mut events =
        state.watch_kind_stream(&kind(), query, &WatchOptions::bootstrap()).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Bootstrapped(_))), "nothing matches yet");

    let set_label = |v: Option<&'static str>| {
        let state = state.clone();
        async move {
            state
                .modify(
                    &ptr("a"),
                    move |r: &mut Resource<IntSpec>| {
                        let labels = r.metadata_mut().labels_mut();
                        match v {
                            Some(v) => labels.insert("app", v),
                            None => labels.remove("app"),
                        };
                    },
                    None,
                )
                .await
                .unwrap()
        }
    };
    set_label(Some("web")).await;
    assert!(matches!(events.next().await, Some(Event::Created(r)) if r.id() == "a"));
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1, None).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Updated { .. })));
    set_label(Some("db")).await;
    assert!(
        matches!(events.next().await, Some(Event::Destroyed(r)) if r.metadata().labels().get("app") == Some("db"))
    );
    set_label(None).await; // Still not matching: no event.
    set_label(Some("web")).await;
    assert!(matches!(events.next().await, Some(Event::Created(_))));
}

/// Checks that updated carries the old resource.
pub async fn check_updated_carries_the_old_resource(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
            assert_eq!(new.typed::<IntSpec>().unwrap().spec(), &IntSpec(2));
            assert_eq!(old.version().next(), new.version());
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    state.teardown(&ptr("a"), None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.phase(), Phase::Running);
            assert_eq!(new.phase(), Phase::TearingDown);
        }
        other => panic!("expected Updated, got {other:?}"),
    }
}

/// Checks that a stalled subscriber stays bounded and catches up.
pub async fn check_a_stalled_subscriber_stays_bounded_and_catches_up(t: &mut dyn Target) {
    let state = t.open().await;
    const UPDATES: i64 = 10_000;
    const RESOURCES: usize = 10;
    for i in 0..RESOURCES {
        state.create(int(&format!("r{i}"), 0), None).await.unwrap();
    }
    let options = WatchOptions::default().with_window(64);
    // Never polled while the updates run: stalled.
    let mut stalled = state.watch_kind_stream(&kind(), LabelQuery::all(), &options).await.unwrap();
    let id = stalled.id();
    let mut max_seen = (0, 0);
    for n in 1..=UPDATES {
        let p = ptr(&format!("r{}", n as usize % RESOURCES));
        state.modify(&p, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None).await.unwrap();
        if n % 1_000 == 0 {
            let stats = state.watch_stats(id).await.unwrap();
            max_seen = (max_seen.0.max(stats.in_flight), max_seen.1.max(stats.backlog));
        }
    }
    assert!(max_seen.0 <= 64, "in flight bounded by the window: {max_seen:?}");
    assert!(max_seen.1 <= RESOURCES, "backlog bounded by resources: {max_seen:?}");

    // A healthy neighbour kept working throughout.
    assert_eq!(state.list(&kind(), &LabelQuery::all()).await.unwrap().len(), RESOURCES);

    // Catching up yields every resource's latest state, nothing lost.
    let mut latest: BTreeMap<Id, i64> = BTreeMap::new();
    let expected: BTreeMap<Id, i64> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| (Id::from(r.id()), r.typed::<IntSpec>().unwrap().spec().0))
        .collect();
    while latest != expected {
        match stalled.next().await {
            Some(Event::Updated { new, .. } | Event::Created(new)) => {
                latest.insert(Id::from(new.id()), new.typed::<IntSpec>().unwrap().spec().0);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let stats = state.watch_stats(id).await.unwrap();
    assert_eq!(stats.backlog, 0);
}

/// Checks that recipient watches deliver to actors.
pub async fn check_recipient_watches_deliver_to_actors(t: &mut dyn Target) {
    let state = t.open().await;
    use actix::prelude::*;
    use futures::channel::mpsc;

    struct Forward(mpsc::UnboundedSender<Event>);
    impl Actor for Forward {
        type Context = Context<Self>;
    }
    impl Handler<WatchEvent> for Forward {
        type Result = ();
        fn handle(&mut self, msg: WatchEvent, _: &mut Context<Self>) {
            let _ = self.0.unbounded_send(msg.into_event());
        }
    }

    let (tx, mut rx) = mpsc::unbounded();
    let actor = Forward(tx).start();
    state.create(int("a", 1), None).await.unwrap();
    let id = state
        .watch_kind(&kind(), LabelQuery::all(), true, actor.clone().recipient())
        .await
        .unwrap();
    assert!(matches!(rx.next().await, Some(Event::Created(r)) if r.id() == "a"));
    assert!(matches!(rx.next().await, Some(Event::Bootstrapped(_))));
    state.destroy(&ptr("a"), None).await.unwrap();
    assert!(matches!(rx.next().await, Some(Event::Destroyed(_))));
    state.unwatch(id).await.unwrap();
    assert!(state.watch_stats(id).await.unwrap_err().is_invalid_input());
    let single = state.watch(&ptr("a"), actor.recipient()).await.unwrap();
    assert!(matches!(rx.next().await, Some(Event::Destroyed(r)) if r.is_tombstone()));
    state.unwatch(single).await.unwrap();
}
