//! Watches as server-sent events over real HTTP: the initial list, the
//! bootstrapped marker, then changes; one resource; a slow reader is
//! disconnected and never holds the state back; a client reconnecting with
//! `Last-Event-ID` resumes where it left off.

use std::net::SocketAddr;

use crate::common::{IntSpec, NS};
use crate::http::{self, open, open_with};
use cosi_runtime::admin::{Admin, AdminServer, Bind};
use cosi_runtime::prelude::*;

async fn serve(runtime: &Runtime, buffer: usize) -> (AdminServer, SocketAddr) {
    let server = Admin::new(runtime)
        .kinds([Kind::of::<IntSpec>(NS)])
        .watch_buffer(buffer)
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let Bind::Tcp(addr) = *server.bind() else { unreachable!("a TCP bind") };
    (server, addr)
}

#[actix::test]
async fn a_bootstrap_and_a_burst_larger_than_the_buffer_reach_a_client_that_reads() {
    let runtime = Runtime::start();
    let state = runtime.state();
    // Five times the buffer exists already; as many more come in one burst.
    let n = 5 * 8;
    for k in 0..n {
        state.create(Resource::new(NS, format!("r{k:02}"), IntSpec(k)), None).await.unwrap();
    }
    let (server, addr) = serve(&runtime, 8).await;
    let mut watch = open(addr, "/api/v1/watch/default/ints").await;
    for k in 0..n {
        let e = watch.event().await.expect("an initial event, not the end");
        assert_eq!((e.event.as_str(), e.resource_id()), ("created", format!("r{k:02}").as_str()));
    }
    assert_eq!(watch.event().await.unwrap().event, "bootstrapped");
    let creates = (n..2 * n).map(|k| {
        let state = state.clone();
        async move { state.create(Resource::new(NS, format!("r{k:02}"), IntSpec(k)), None).await }
    });
    for created in futures::future::join_all(creates).await {
        created.unwrap();
    }
    for _ in n..2 * n {
        let e = watch.event().await.expect("a change, not the end");
        assert_eq!(e.event, "created");
    }
    server.stop().await;
}

#[actix::test]
async fn a_watch_lists_marks_bootstrapped_then_streams_changes() {
    let runtime = Runtime::start();
    let state = runtime.state();
    for (id, n) in [("b", 2), ("a", 1)] {
        state.create(Resource::new(NS, id, IntSpec(n)), None).await.unwrap();
    }
    let (server, addr) = serve(&runtime, 64).await;
    let mut watch = open(addr, "/api/v1/watch/default/ints").await;
    assert_eq!(watch.status, 200);
    assert_eq!(
        watch.headers.iter().find(|(k, _)| k == "content-type").map(|(_, v)| v.as_str()),
        Some("text/event-stream")
    );
    let first = watch.event().await.unwrap();
    assert_eq!((first.event.as_str(), first.resource_id()), ("created", "a"));
    assert_eq!(first.data["spec"], 1);
    let second = watch.event().await.unwrap();
    assert_eq!((second.event.as_str(), second.resource_id()), ("created", "b"));
    let marker = watch.event().await.unwrap();
    assert_eq!(marker.event, "bootstrapped");
    assert_eq!(marker.data["type"], "Ints.test.cosi.dev");

    let ptr = Pointer::typed::<IntSpec>(NS, "a");
    state.modify(&ptr, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 10, None).await.unwrap();
    state.create(Resource::new(NS, "c", IntSpec(3)), None).await.unwrap();
    state.destroy(&Pointer::typed::<IntSpec>(NS, "b"), None).await.unwrap();
    let updated = watch.event().await.unwrap();
    assert_eq!((updated.event.as_str(), updated.resource_id()), ("updated", "a"));
    assert_eq!(updated.data["spec"], 10);
    assert!(updated.id.is_some(), "changes carry the store revision");
    let created = watch.event().await.unwrap();
    assert_eq!((created.event.as_str(), created.resource_id()), ("created", "c"));
    let destroyed = watch.event().await.unwrap();
    assert_eq!((destroyed.event.as_str(), destroyed.resource_id()), ("destroyed", "b"));
    server.stop().await;
}

#[actix::test]
async fn a_watch_of_one_resource_and_with_a_selector() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let mut edge = Resource::new(NS, "e", IntSpec(1));
    edge.metadata_mut().labels_mut().insert("tier", "edge");
    state.create(edge, None).await.unwrap();
    state.create(Resource::new(NS, "x", IntSpec(2)), None).await.unwrap();
    let (server, addr) = serve(&runtime, 64).await;

    let mut one = open(addr, "/api/v1/watch/default/ints/x").await;
    let mut labelled = open(addr, "/api/v1/watch/default/ints?labels=tier%3Dedge").await;
    for (watch, id) in [(&mut one, "x"), (&mut labelled, "e")] {
        let first = watch.event().await.unwrap();
        assert_eq!((first.event.as_str(), first.resource_id()), ("created", id));
        assert_eq!(watch.event().await.unwrap().event, "bootstrapped");
    }
    // Changes to other resources pass both by.
    state
        .modify(
            &Pointer::typed::<IntSpec>(NS, "e"),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 5,
            None,
        )
        .await
        .unwrap();
    state
        .modify(
            &Pointer::typed::<IntSpec>(NS, "x"),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 6,
            None,
        )
        .await
        .unwrap();
    let x = one.event().await.unwrap();
    assert_eq!(
        (x.event.as_str(), x.resource_id(), x.data["spec"].as_i64()),
        ("updated", "x", Some(6))
    );
    let e = labelled.event().await.unwrap();
    assert_eq!(
        (e.event.as_str(), e.resource_id(), e.data["spec"].as_i64()),
        ("updated", "e", Some(5))
    );
    server.stop().await;
}

#[actix::test]
async fn a_watch_of_one_absent_resource_sees_it_come_and_go_and_resumes_with_only_its_changes() {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new(NS, "other", IntSpec(0)), None).await.unwrap();
    let (server, addr) = serve(&runtime, 64).await;

    let mut one = open(addr, "/api/v1/watch/default/ints/x").await;
    assert_eq!(one.event().await.unwrap().event, "bootstrapped", "nothing to list first");
    state.create(Resource::new(NS, "y", IntSpec(1)), None).await.unwrap();
    set(&state, 2).await;
    let created = one.event().await.unwrap();
    assert_eq!(
        (created.event.as_str(), created.resource_id(), created.data["spec"].as_i64()),
        ("created", "x", Some(2)),
        "another resource's creation passed it by"
    );
    let last = created.id.clone().expect("a change carries its revision");
    drop(one);

    state.create(Resource::new(NS, "z", IntSpec(3)), None).await.unwrap();
    set(&state, 4).await;
    state.teardown(&x(), None).await.unwrap();
    state.destroy(&x(), None).await.unwrap();
    let mut resumed =
        open_with(addr, "/api/v1/watch/default/ints/x", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = resumed.event().await.unwrap();
        assert_eq!(e.resource_id(), "x", "{e:?}");
        seen.push(e.event);
    }
    assert_eq!(seen, ["updated", "updated", "destroyed"], "4, then torn down, then gone");
    server.stop().await;
}

#[actix::test]
async fn a_slow_reader_is_disconnected_and_never_holds_the_state_back() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let (server, addr) = serve(&runtime, 8).await;
    let baseline = state.watch_count().await.unwrap();
    // Subscribes, then reads nothing while a lot happens.
    let mut slow = open(addr, "/api/v1/watch/default/ints").await;
    let mut fast = open(addr, "/api/v1/watch/default/ints").await;
    assert_eq!(fast.event().await.unwrap().event, "bootstrapped");
    assert_eq!(state.watch_count().await.unwrap(), baseline + 2);

    // 400 resources of 64 KiB: far more than the socket buffers hold.
    let big = "x".repeat(64 * 1024);
    let mut seen = 0;
    for i in 0..400 {
        let mut r = Resource::new(NS, format!("r{i:03}"), IntSpec(i));
        r.metadata_mut().annotations_mut().insert("payload", big.as_str());
        state.create(r, None).await.unwrap();
        // The fast reader keeps up and sees every change.
        let event = fast.event().await.unwrap();
        assert_eq!(
            (event.event.as_str(), event.resource_id()),
            ("created", format!("r{i:03}").as_str())
        );
        seen += 1;
    }
    assert_eq!(seen, 400);
    runtime.settled().await;

    // The slow reader gets what its buffer held, then the reason, then the end.
    assert_eq!(slow.event().await.unwrap().event, "bootstrapped");
    let mut last = None;
    while let Some(event) = slow.event().await {
        last = Some(event);
    }
    let last = last.expect("some events, then the error");
    assert_eq!(last.event, "error");
    assert!(last.data["error"].as_str().unwrap().contains("too slowly"), "{:?}", last.data);
    // Its watch is gone; the fast one stays.
    assert_eq!(state.watch_count().await.unwrap(), baseline + 1);
    drop(fast);
    server.stop().await;
}

fn x() -> Pointer {
    Pointer::typed::<IntSpec>(NS, "x").erase()
}

async fn set(state: &State, n: i64) {
    state.modify(&x(), move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None).await.unwrap();
}

/// A watch of `path`, read past its bootstrap: `x`, the only resource, then
/// the marker.
async fn past_bootstrap_of_x(addr: SocketAddr, path: &str) -> http::Open {
    let mut watch = open(addr, path).await;
    assert_eq!(watch.event().await.unwrap().event, "created");
    assert_eq!(watch.event().await.unwrap().event, "bootstrapped");
    watch
}

#[actix::test]
async fn a_client_reconnecting_with_last_event_id_gets_only_what_it_missed() {
    let runtime = Runtime::start();
    let state = runtime.state();
    set(&state, 1).await;
    let (server, addr) = serve(&runtime, 64).await;
    let mut watch = past_bootstrap_of_x(addr, "/api/v1/watch/default/ints").await;
    set(&state, 2).await;
    let seen = watch.event().await.unwrap();
    assert_eq!((seen.event.as_str(), seen.data["spec"].as_i64()), ("updated", Some(2)));
    let last = seen.id.clone().expect("a change carries its revision");
    drop(watch); // the connection drops

    set(&state, 3).await;
    state.create(Resource::new(NS, "y", IntSpec(7)), None).await.unwrap();
    let mut resumed =
        open_with(addr, "/api/v1/watch/default/ints", &[("Last-Event-ID", &last)]).await;
    assert_eq!(resumed.status, 200);
    let first = resumed.event().await.unwrap();
    assert_eq!(
        (first.event.as_str(), first.resource_id(), first.data["spec"].as_i64()),
        ("updated", "x", Some(3)),
        "no initial list and no bootstrapped marker: the first change it missed"
    );
    let second = resumed.event().await.unwrap();
    assert_eq!((second.event.as_str(), second.resource_id()), ("created", "y"));
    let ids: Vec<u64> = [&last, first.id.as_ref().unwrap(), second.id.as_ref().unwrap()]
        .map(|i| i.parse().unwrap())
        .to_vec();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "revisions only go up: {ids:?}");
    server.stop().await;
}

#[actix::test]
async fn a_client_resuming_past_the_kept_history_is_reset_and_bootstrapped() {
    let runtime = Runtime::start();
    let state = runtime.state();
    set(&state, 0).await;
    let (server, addr) = serve(&runtime, 64).await;
    let stale = state.get(&x()).await.unwrap().metadata().revision().to_string();
    // More changes than the state keeps for watches that resume.
    for n in 1..=(cosi_runtime::state::DEFAULT_HISTORY as i64 + 10) {
        set(&state, n).await;
    }
    let mut watch =
        open_with(addr, "/api/v1/watch/default/ints", &[("Last-Event-ID", &stale)]).await;
    assert_eq!(watch.status, 200);
    let reset = watch.event().await.unwrap();
    assert_eq!(reset.event, "reset");
    assert!(reset.data["reason"].as_str().is_some_and(|r| !r.is_empty()), "{:?}", reset.data);
    let created = watch.event().await.unwrap();
    assert_eq!((created.event.as_str(), created.resource_id()), ("created", "x"));
    assert_eq!(
        created.data["spec"].as_i64(),
        Some(cosi_runtime::state::DEFAULT_HISTORY as i64 + 10)
    );
    assert_eq!(watch.event().await.unwrap().event, "bootstrapped");
    server.stop().await;
}

#[actix::test]
async fn a_stopped_server_ends_every_watch_with_a_stopping_event_that_clears_the_last_event_id() {
    let runtime = Runtime::start();
    let state = runtime.state();
    set(&state, 1).await;
    let (server, addr) = serve(&runtime, 64).await;
    let mut kind = past_bootstrap_of_x(addr, "/api/v1/watch/default/ints").await;
    let mut one = past_bootstrap_of_x(addr, "/api/v1/watch/default/ints/x").await;
    set(&state, 2).await;
    for watch in [&mut kind, &mut one] {
        let seen = watch.event().await.unwrap();
        assert!(seen.event == "updated" && seen.id.as_deref().is_some_and(|id| !id.is_empty()));
    }
    server.stop().await;
    // A client that reconnected with its last id to a server back on a
    // fresh state, whose revisions have passed that id, would resume from
    // the wrong history: the empty id sends it back to the start.
    for watch in [&mut kind, &mut one] {
        let last = watch.event().await.expect("a last event");
        assert_eq!((last.event.as_str(), last.id.as_deref()), ("stopping", Some("")), "{last:?}");
        let reason = last.data["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("the server is stopping"), "{last:?}");
        assert!(watch.event().await.is_none(), "the stream ends after it");
    }
}

#[actix::test]
async fn a_last_event_id_that_is_not_a_revision_is_a_bad_request() {
    let runtime = Runtime::start();
    let (server, addr) = serve(&runtime, 64).await;
    let answer = open_with(addr, "/api/v1/watch/default/ints", &[("Last-Event-ID", "yesterday")])
        .await
        .body()
        .await;
    assert_eq!(answer.status, 400);
    assert!(
        answer.json()["error"].as_str().unwrap().contains("Last-Event-ID"),
        "{:?}",
        answer.json()
    );
    server.stop().await;
}

#[actix::test]
async fn a_client_over_its_watch_limit_is_429_until_one_of_its_watches_ends() {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    let server = Admin::new(&runtime)
        .kinds([Kind::of::<IntSpec>(NS)])
        .max_watches_per_client(2)
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let Bind::Tcp(addr) = *server.bind() else { unreachable!("a TCP bind") };
    let first = open(addr, "/api/v1/watch/default/ints").await;
    let second = open(addr, "/api/v1/watch/default/ints/a").await;
    assert_eq!((first.status, second.status), (200, 200));
    let third = http::get(addr, "/api/v1/watch/default/ints").await;
    assert_eq!(third.status, 429, "{}", third.body);
    let error = third.json()["error"].as_str().unwrap().to_owned();
    assert!(error.starts_with("127.0.0.1 already has 2 watches open"), "{error}");
    // Lists are not watches.
    assert_eq!(http::get(addr, "/api/v1/resources/default/ints").await.status, 200);
    // The first client goes away; the server notices at its next writes to
    // it (each change goes out), and the slot comes back.
    drop(first);
    let ptr = Pointer::typed::<IntSpec>(NS, "a");
    let mut admitted = None;
    for n in 2..1_000 {
        state
            .modify(&ptr, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None)
            .await
            .unwrap();
        let again = open(addr, "/api/v1/watch/default/ints").await;
        if again.status == 200 {
            admitted = Some(again);
            break;
        }
        assert_eq!(again.status, 429);
    }
    assert!(admitted.is_some(), "the slot came back");
    // A query string over the limit is 414.
    let long = format!("/api/v1/resources/default/ints?labels={}", "a".repeat(20 * 1024));
    let answer = http::get(addr, &long).await;
    assert_eq!(answer.status, 414, "{}", answer.body);
    assert!(answer.json()["error"].as_str().unwrap().contains("more than the 16384"));
    server.stop().await;
}
