//! The state served through the Kubernetes API, read and watched over real
//! HTTP on loopback: by a small hand-written client (lists, watches, errors),
//! and by the machine's `kubectl` (skipped where there is none), both the
//! oldest and the newest minor version its dispatcher runs.

use std::net::SocketAddr;
use std::time::Duration;

use crate::http::{Open, get, open, open_with, request};
use crate::kubectl::{Kubectl, kubectl_available};
use cosi_runtime::State;
use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer};
use cosi_runtime::resource::{Pointer, Resource, Spec};
use serde_json::Value;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkConfig {
    mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
const LINKS: &str = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs";

fn link(ns: &str, id: &str, mtu: u32, tier: &str) -> Resource<LinkConfig> {
    let mut r = Resource::new(ns, id, LinkConfig { mtu });
    r.metadata_mut().labels_mut().insert("tier", tier);
    r
}

/// config/eth0 (core), config/eth1 (edge), edge/wan0 (edge).
async fn seed(state: &State) {
    for r in [
        link("config", "eth0", 1500, "core"),
        link("config", "eth1", 9000, "edge"),
        link("edge", "wan0", 1400, "edge"),
    ] {
        state.create(r, None).await.unwrap();
    }
}

fn api(state: &State) -> KubernetesApi {
    KubernetesApi::new(state)
        .expose(
            Expose::of::<LinkConfig>("v1alpha1")
                .short_names(["lc"])
                .column("MTU", ".spec.mtu")
                .namespaces(["config", "edge"]),
        )
        .unwrap()
}

async fn serve(api: KubernetesApi) -> (KubernetesServer, SocketAddr) {
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    (server, addr)
}

/// A watch's body, one JSON event per line.
struct Lines {
    open: Open,
    pending: Vec<u8>,
}

impl Lines {
    fn new(open: Open) -> Self {
        Lines { open, pending: Vec::new() }
    }

    /// The next event; `None` when the stream ends. Bounded: a watch that
    /// sends nothing for 10 s fails the test.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.pending.drain(..=end).collect();
                return Some(serde_json::from_slice(&line).expect("a JSON line"));
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.open.chunk())
                .await
                .expect("a watch event within 10 s")?;
            self.pending.extend(chunk);
        }
    }

    /// The next event's type and object name.
    async fn next_named(&mut self) -> (String, String) {
        let e = self.next().await.expect("an event");
        (e["type"].as_str().unwrap().to_owned(), name(&e["object"]))
    }
}

fn name(object: &Value) -> String {
    object["metadata"]["name"].as_str().unwrap_or_default().to_owned()
}

fn revision(object: &Value) -> u64 {
    object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

async fn watch(addr: SocketAddr, path: &str) -> Lines {
    let open = open(addr, path).await;
    assert_eq!(open.status, 200);
    Lines::new(open)
}

async fn set_mtu(state: &State, id: &str, mtu: u32) -> u64 {
    let ptr = Pointer::typed::<LinkConfig>("config", id);
    let r = state.modify(&ptr, move |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = mtu, None);
    r.await.unwrap().metadata().revision()
}

#[actix::test]
async fn discovery_names_the_group_version_and_resource() {
    let state = State::start();
    let (server, addr) = serve(api(&state).server_version(1, 29)).await;
    let version = get(addr, "/version").await.json();
    assert_eq!((version["major"].as_str(), version["minor"].as_str()), (Some("1"), Some("29")));
    assert_eq!(get(addr, "/api").await.json()["kind"], "APIVersions");
    let groups = get(addr, "/apis").await.json();
    assert_eq!(groups["kind"], "APIGroupList");
    assert_eq!(groups["groups"][0]["name"], "net.cosi.dev");
    assert_eq!(groups["groups"][0]["preferredVersion"]["groupVersion"], "net.cosi.dev/v1alpha1");
    let list = get(addr, "/apis/net.cosi.dev/v1alpha1").await.json();
    assert_eq!(list["kind"], "APIResourceList");
    let r = &list["resources"][0];
    assert_eq!(r["name"], "linkconfigs");
    assert_eq!(r["singularName"], "linkconfig");
    assert_eq!(r["kind"], "LinkConfig");
    assert_eq!(r["namespaced"], true);
    assert_eq!(r["shortNames"], serde_json::json!(["lc"]));
    assert_eq!(
        r["verbs"],
        serde_json::json!([
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch"
        ])
    );
    assert_eq!(get(addr, "/apis/net.cosi.dev/v2").await.status, 404);
    server.stop().await;
}

#[actix::test]
async fn objects_map_metadata_and_spec() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let got = get(addr, &format!("{LINKS}/eth1")).await;
    assert_eq!(got.status, 200);
    let o = got.json();
    assert_eq!(o["apiVersion"], "net.cosi.dev/v1alpha1");
    assert_eq!(o["kind"], "LinkConfig");
    assert_eq!(o["spec"]["mtu"], 9000);
    let md = &o["metadata"];
    assert_eq!((md["name"].as_str(), md["namespace"].as_str()), (Some("eth1"), Some("config")));
    assert_eq!(md["labels"]["tier"], "edge");
    assert_eq!(md["generation"], 1);
    assert_eq!(md["uid"].as_str().map(str::len), Some(36), "a uuid: {md}");
    assert!(md["creationTimestamp"].as_str().unwrap().ends_with('Z'));
    let stored = state.get(&Pointer::typed::<LinkConfig>("config", "eth1")).await.unwrap();
    assert_eq!(revision(&o), stored.metadata().revision());
    server.stop().await;
}

#[actix::test]
async fn a_list_carries_its_snapshot_revision_and_a_watch_from_it_sees_exactly_the_later_changes() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let list = get(addr, LINKS).await.json();
    assert_eq!(list["kind"], "LinkConfigList");
    let items: Vec<String> = list["items"].as_array().unwrap().iter().map(name).collect();
    assert_eq!(items, ["eth0", "eth1"]);
    let at = revision(&list);
    let newest = list["items"].as_array().unwrap().iter().map(revision).max().unwrap();
    // Three writes so far (one of them in another namespace).
    assert_eq!(at, 3, "the list's revision is the store revision of its snapshot");
    assert!(newest <= at);

    // A change after the list, then a watch from the list's revision.
    let modified_at = set_mtu(&state, "eth0", 1280).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=true&resourceVersion={at}")).await;
    let e = w.next().await.unwrap();
    assert_eq!((e["type"].as_str(), name(&e["object"]).as_str()), (Some("MODIFIED"), "eth0"));
    assert_eq!(e["object"]["spec"]["mtu"], 1280);
    assert_eq!(revision(&e["object"]), modified_at);
    state.create(link("config", "eth2", 1500, "core"), None).await.unwrap();
    assert_eq!(w.next_named().await, ("ADDED".into(), "eth2".into()));
    server.stop().await;
}

#[actix::test]
async fn a_watch_without_a_version_starts_with_everything_in_ascending_revision() {
    let state = State::start();
    // Created in an order that their ids do not sort in.
    for id in ["c", "a", "b"] {
        state.create(link("config", id, 1500, "core"), None).await.unwrap();
    }
    let (server, addr) = serve(api(&state)).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=1")).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = w.next().await.unwrap();
        assert_eq!(e["type"], "ADDED");
        seen.push((name(&e["object"]), revision(&e["object"])));
    }
    assert_eq!(seen, [("c".into(), 1), ("a".into(), 2), ("b".into(), 3)]);
    server.stop().await;
}

/// Over several namespaces (a stream each), the initial objects still come
/// in one ascending order, each with its own revision: a client caches
/// that revision and sends it back with its next update.
#[actix::test]
async fn an_all_namespaces_watch_starts_with_every_object_at_its_own_revision_in_one_order() {
    let state = State::start();
    seed(&state).await; // config/eth0 at 1, config/eth1 at 2, edge/wan0 at 3
    let eth0 = set_mtu(&state, "eth0", 1400).await;
    let (server, addr) = serve(api(&state)).await;
    let mut w = watch(addr, "/apis/net.cosi.dev/v1alpha1/linkconfigs?watch=1").await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = w.next().await.unwrap();
        assert_eq!(e["type"], "ADDED");
        seen.push((name(&e["object"]), revision(&e["object"])));
    }
    assert_eq!(seen, [("eth1".into(), 2), ("wan0".into(), 3), ("eth0".into(), eth0)]);
    // A change after them comes after them.
    let later = set_mtu(&state, "eth1", 1300).await;
    let e = w.next().await.unwrap();
    assert_eq!((name(&e["object"]), revision(&e["object"])), ("eth1".into(), later));
    server.stop().await;
}

#[actix::test]
async fn a_watch_without_a_version_sends_every_initial_object_even_past_the_watch_buffer() {
    // Five times the client's buffer: the initial events wait for room as
    // the client reads them; none is dropped and the watch is not cut off.
    let state = State::start();
    let n = 5 * 64;
    for k in 0..n {
        state.create(link("config", &format!("l{k}"), 1500, "core"), None).await.unwrap();
    }
    let (server, addr) = serve(api(&state).watch_buffer(64)).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=1")).await;
    let mut seen = Vec::new();
    for _ in 0..n {
        let e = w.next().await.expect("an initial event");
        assert_eq!(e["type"], "ADDED");
        seen.push(revision(&e["object"]));
    }
    assert_eq!(seen, (1..=n as u64).collect::<Vec<_>>(), "every object once, by revision");
    // And the watch goes on past its initial events.
    state.create(link("config", "late", 1500, "core"), None).await.unwrap();
    assert_eq!(w.next_named().await, ("ADDED".into(), "late".into()));
    server.stop().await;
}

#[actix::test]
async fn a_burst_of_changes_larger_than_the_watch_buffer_reaches_a_client_that_reads() {
    // 1,000 creates with many in flight, through a buffer of 64: the client
    // reads all the while, so it never falls behind and sees every one.
    let state = State::start();
    let (server, addr) = serve(api(&state).watch_buffer(64)).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=1")).await;
    let n = 1000;
    let writer = {
        let state = state.clone();
        actix::spawn(async move {
            let creates =
                (0..n).map(|k| {
                    let state = state.clone();
                    async move {
                        state.create(link("config", &format!("l{k}"), 1500, "core"), None).await
                    }
                });
            for created in futures::future::join_all(creates).await {
                created.unwrap();
            }
        })
    };
    let mut seen = 0;
    while seen < n {
        let e = w.next().await.expect("a change, not the end of the watch");
        assert_eq!(e["type"], "ADDED");
        seen += 1;
    }
    writer.await.unwrap();
    server.stop().await;
}

#[actix::test]
async fn a_deleted_event_carries_the_destroys_revision_and_revisions_never_go_back() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=true")).await;
    let mut last = 0;
    for _ in 0..2 {
        let e = w.next().await.unwrap();
        last = last.max(revision(&e["object"]));
    }
    set_mtu(&state, "eth1", 1400).await;
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth0"), None).await.unwrap();
    let modified = w.next().await.unwrap();
    assert_eq!(modified["type"], "MODIFIED");
    let deleted = w.next().await.unwrap();
    assert_eq!(
        (deleted["type"].as_str(), name(&deleted["object"]).as_str()),
        (Some("DELETED"), "eth0")
    );
    let (m, d) = (revision(&modified["object"]), revision(&deleted["object"]));
    assert!(last < m && m < d, "revisions {last} < {m} < {d}");
    assert_eq!(d, 5, "the destroy is the fifth write");
    server.stop().await;
}

#[actix::test]
async fn a_watch_from_a_compacted_revision_gets_an_in_stream_410_then_ends() {
    let state = State::builder().history(2).open().await.unwrap();
    seed(&state).await;
    for mtu in [1, 2, 3] {
        set_mtu(&state, "eth0", mtu).await;
    }
    let (server, addr) = serve(api(&state)).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=true&resourceVersion=1")).await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "ERROR");
    let status = &e["object"];
    assert_eq!(
        (status["kind"].as_str(), status["apiVersion"].as_str()),
        (Some("Status"), Some("v1"))
    );
    assert_eq!((status["code"].as_u64(), status["reason"].as_str()), (Some(410), Some("Expired")));
    assert_eq!(status["status"], "Failure");
    assert!(w.next().await.is_none(), "the stream ends after the error");
    server.stop().await;
}

#[actix::test]
async fn a_watch_of_a_quiet_namespace_resumes_after_another_namespace_overflowed_the_history() {
    let state = State::builder().history(4).open().await.unwrap();
    seed(&state).await;
    let seen = set_mtu(&state, "eth0", 1280).await;
    // Many more changes than the history keeps, all in the other namespace.
    for mtu in 1..=20 {
        let ptr = Pointer::typed::<LinkConfig>("edge", "wan0");
        state
            .modify(&ptr, move |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = mtu, None)
            .await
            .unwrap();
    }
    let next = set_mtu(&state, "eth1", 1400).await;
    let (server, addr) = serve(api(&state)).await;
    // The client resumes config's watch from the last version it saw there.
    let mut w = watch(addr, &format!("{LINKS}?watch=true&resourceVersion={seen}")).await;
    let e = w.next().await.unwrap();
    assert_eq!(e["type"], "MODIFIED", "{e}");
    assert_eq!(e["object"]["metadata"]["name"], "eth1");
    assert_eq!(e["object"]["metadata"]["resourceVersion"], next.to_string());
    server.stop().await;
}

#[actix::test]
async fn a_stopped_server_ends_every_open_watch_with_an_in_stream_410() {
    let state = State::start();
    seed(&state).await;
    let at = set_mtu(&state, "eth0", 1280).await;
    let (server, addr) = serve(api(&state)).await;
    // One watch from no version (its initial events read), one resumed from
    // a revision, one of one name: each is open when the server stops.
    let mut all = watch(addr, &format!("{LINKS}?watch=true")).await;
    assert_eq!(all.next_named().await.0, "ADDED");
    assert_eq!(all.next_named().await.0, "ADDED");
    let mut resumed = watch(addr, &format!("{LINKS}?watch=true&resourceVersion={at}")).await;
    let one = format!("{LINKS}?watch=true&fieldSelector=metadata.name%3Deth1&resourceVersion={at}");
    let mut one = watch(addr, &one).await;
    let last = set_mtu(&state, "eth1", 8000).await;
    for w in [&mut all, &mut resumed, &mut one] {
        let e = w.next().await.unwrap();
        assert_eq!((e["type"].as_str(), revision(&e["object"])), (Some("MODIFIED"), last));
    }
    server.stop().await;
    for w in [&mut all, &mut resumed, &mut one] {
        let e = w.next().await.expect("a last event");
        assert_eq!(e["type"], "ERROR", "{e}");
        let status = &e["object"];
        assert_eq!(
            (status["code"].as_u64(), status["reason"].as_str()),
            (Some(410), Some("Expired"))
        );
        assert!(status["message"].as_str().unwrap().contains("stopping"), "{status}");
        assert!(w.next().await.is_none(), "the stream ends after the error");
    }
}

#[actix::test]
async fn timeout_seconds_ends_the_watch_cleanly() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let mut w = watch(addr, &format!("{LINKS}?watch=true&timeoutSeconds=1")).await;
    assert_eq!(w.next_named().await.0, "ADDED");
    assert_eq!(w.next_named().await.0, "ADDED");
    assert!(w.next().await.is_none(), "the stream ends, with its last chunk");
    server.stop().await;
}

/// A watch over no namespace at all (here a field selector admits none of
/// the type's) is a quiet watch, not one that ends at once: clients would
/// otherwise watch again in a tight loop.
#[actix::test]
async fn an_all_namespaces_watch_that_admits_no_namespace_stays_open_until_its_timeout() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let path = "/apis/net.cosi.dev/v1alpha1/linkconfigs?watch=true&timeoutSeconds=1\
                &fieldSelector=metadata.namespace%3Dnowhere";
    let opened = std::time::Instant::now();
    let mut w = watch(addr, path).await;
    assert!(w.next().await.is_none(), "no event, then the end at the timeout");
    assert!(opened.elapsed() >= Duration::from_secs(1), "ended after {:?}", opened.elapsed());
    server.stop().await;
}

#[actix::test]
async fn bookmarks_arrive_on_a_quiet_watch_and_after_the_initial_events() {
    let state = State::start();
    seed(&state).await;
    let api = api(&state).bookmark_interval(Duration::from_millis(50));
    let (server, addr) = serve(api).await;
    let path = format!(
        "{LINKS}?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
    );
    let mut w = watch(addr, &path).await;
    assert_eq!(w.next_named().await.0, "ADDED");
    assert_eq!(w.next_named().await.0, "ADDED");
    let end = w.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert_eq!(end["object"]["kind"], "LinkConfig");
    assert_eq!(revision(&end["object"]), 3);
    let periodic = w.next().await.unwrap();
    assert_eq!(periodic["type"], "BOOKMARK");
    assert_eq!(revision(&periodic["object"]), 3);
    assert!(periodic["object"]["metadata"].get("annotations").is_none());
    server.stop().await;
}

#[actix::test]
async fn python_style_booleans_start_a_watch() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let list = get(addr, LINKS).await.json();
    let path = format!(
        "{LINKS}?allowWatchBookmarks=True&resourceVersion={}&timeoutSeconds=30&watch=True",
        revision(&list)
    );
    let mut w = watch(addr, &path).await;
    state.create(link("config", "eth7", 1500, "core"), None).await.unwrap();
    assert_eq!(w.next_named().await, ("ADDED".into(), "eth7".into()));
    assert_eq!(get(addr, &format!("{LINKS}?watch=yes")).await.status, 400);
    server.stop().await;
}

#[actix::test]
async fn a_field_selector_on_name_filters_lists_and_watches() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let list = get(addr, &format!("{LINKS}?fieldSelector=metadata.name%3Deth1")).await.json();
    let items: Vec<String> = list["items"].as_array().unwrap().iter().map(name).collect();
    assert_eq!(items, ["eth1"]);
    let all = "/apis/net.cosi.dev/v1alpha1/linkconfigs?fieldSelector=metadata.namespace!%3Dconfig";
    let items: Vec<String> =
        get(addr, all).await.json()["items"].as_array().unwrap().iter().map(name).collect();
    assert_eq!(items, ["wan0"]);
    let mut w = watch(addr, &format!("{LINKS}?watch=true&fieldSelector=metadata.name==eth0")).await;
    assert_eq!(w.next_named().await, ("ADDED".into(), "eth0".into()));
    set_mtu(&state, "eth1", 1).await;
    set_mtu(&state, "eth0", 2).await;
    assert_eq!(w.next_named().await, ("MODIFIED".into(), "eth0".into()), "eth1 filtered out");
    let bad = get(addr, &format!("{LINKS}?fieldSelector=spec.mtu%3D1")).await;
    assert_eq!((bad.status, bad.json()["reason"].as_str()), (400, Some("BadRequest")));
    server.stop().await;
}

/// The first event of a watch of `name` in config resumed from revision `at`.
async fn first_of_name_from(addr: SocketAddr, name: &str, at: u64) -> Value {
    let path = format!("{LINKS}?watch=1&resourceVersion={at}&fieldSelector=metadata.name={name}");
    watch(addr, &path).await.next().await.unwrap()
}

#[actix::test]
async fn a_list_of_one_name_is_that_object_at_the_store_revision_with_labels_and_namespaces_applied()
 {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let list_of = |query: &str| format!("{LINKS}?fieldSelector=metadata.name%3D{query}");
    let names = |list: &Value| -> Vec<String> {
        list["items"].as_array().unwrap().iter().map(name).collect()
    };

    let one = get(addr, &list_of("eth1")).await.json();
    assert_eq!((one["kind"].as_str(), names(&one)), (Some("LinkConfigList"), vec!["eth1".into()]));
    assert_eq!(revision(&one), 3, "the store revision, not the object's (2)");
    let absent = get(addr, &list_of("eth9")).await.json();
    assert_eq!((names(&absent), revision(&absent)), (vec![], 3));
    let unlabelled = get(addr, &format!("{}&labelSelector=tier%3Dcore", list_of("eth1"))).await;
    assert_eq!(names(&unlabelled.json()), Vec::<String>::new(), "eth1 is tier=edge");
    let both = get(addr, &format!("{},metadata.name%3Deth0", list_of("eth1"))).await.json();
    assert_eq!(names(&both), Vec::<String>::new(), "two names: nothing has both");
    let everywhere = "/apis/net.cosi.dev/v1alpha1/linkconfigs?fieldSelector=metadata.name%3Dwan0";
    assert_eq!(names(&get(addr, everywhere).await.json()), ["wan0"], "found in its namespace");

    // A watch of that name from the list's revision: exactly what came after.
    set_mtu(&state, "eth0", 1).await;
    let at = revision(&one);
    set_mtu(&state, "eth1", 2).await;
    let e = first_of_name_from(addr, "eth1", at).await;
    assert_eq!((e["type"].as_str(), name(&e["object"]).as_str()), (Some("MODIFIED"), "eth1"));
    assert_eq!(e["object"]["spec"]["mtu"], 2);
    server.stop().await;
}

#[actix::test]
async fn a_watch_of_one_name_sees_that_object_only_from_now_or_from_a_version() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let by_name = |name: &str| format!("{LINKS}?watch=1&fieldSelector=metadata.name%3D{name}");

    // An object that does not exist yet: nothing at first, then its life.
    let mut absent = watch(addr, &by_name("eth9")).await;
    set_mtu(&state, "eth0", 1400).await;
    state.create(link("config", "eth9", 1500, "core"), None).await.unwrap();
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth9"), None).await.unwrap();
    assert_eq!(absent.next_named().await, ("ADDED".into(), "eth9".into()));
    assert_eq!(absent.next_named().await, ("DELETED".into(), "eth9".into()));

    // From a version: only what came after it, of that object.
    let at = set_mtu(&state, "eth1", 1300).await;
    set_mtu(&state, "eth0", 1200).await;
    set_mtu(&state, "eth1", 1100).await;
    let e = first_of_name_from(addr, "eth1", at).await;
    assert_eq!((e["type"].as_str(), name(&e["object"]).as_str()), (Some("MODIFIED"), "eth1"));
    assert_eq!(e["object"]["spec"]["mtu"], 1100);

    // Across every namespace, with the initial-events-end bookmark.
    let path = "/apis/net.cosi.dev/v1alpha1/linkconfigs?watch=1&fieldSelector=metadata.name%3Dwan0\
                &allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let mut everywhere = watch(addr, path).await;
    assert_eq!(everywhere.next_named().await, ("ADDED".into(), "wan0".into()));
    let end = everywhere.next().await.unwrap();
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");

    // With a label selector too (the kind's watch, filtered): the same answers.
    let mut labelled = watch(addr, &format!("{}&labelSelector=tier%3Dcore", by_name("eth0"))).await;
    assert_eq!(labelled.next_named().await, ("ADDED".into(), "eth0".into()));
    set_mtu(&state, "eth1", 1000).await;
    set_mtu(&state, "eth0", 1000).await;
    assert_eq!(labelled.next_named().await, ("MODIFIED".into(), "eth0".into()));
    server.stop().await;
}

#[actix::test]
async fn a_label_selector_filters_and_a_bad_one_is_a_400_status() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let list = get(addr, "/apis/net.cosi.dev/v1alpha1/linkconfigs?labelSelector=tier%3Dedge").await;
    let items: Vec<String> = list.json()["items"].as_array().unwrap().iter().map(name).collect();
    assert_eq!(items, ["eth1", "wan0"]);
    let bad = get(addr, &format!("{LINKS}?labelSelector=tier%20in%20(a")).await;
    assert_eq!(bad.status, 400);
    assert_eq!(bad.json()["kind"], "Status");
    server.stop().await;
}

#[actix::test]
async fn an_unknown_id_or_type_is_a_404_status() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let missing = get(addr, &format!("{LINKS}/eth9")).await;
    assert_eq!(missing.status, 404);
    let s = missing.json();
    assert_eq!((s["kind"].as_str(), s["reason"].as_str()), (Some("Status"), Some("NotFound")));
    assert_eq!(s["message"], "linkconfigs.net.cosi.dev \"eth9\" not found");
    for path in [
        "/apis/net.cosi.dev/v1alpha1/namespaces/config/links",
        "/apis/other.dev/v1/namespaces/config/linkconfigs",
        "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0/status",
    ] {
        let r = get(addr, path).await;
        assert_eq!((r.status, r.json()["reason"].as_str()), (404, Some("NotFound")), "{path}");
    }
    server.stop().await;
}

#[actix::test]
async fn methods_a_path_does_not_serve_are_405_method_not_allowed() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    for (method, path) in [
        ("POST", "/apis/net.cosi.dev/v1alpha1".to_owned()),
        ("DELETE", "/version".to_owned()),
        ("PUT", LINKS.to_owned()),
        ("POST", format!("{LINKS}/eth0")),
    ] {
        let r = request(addr, method, &path).await;
        assert_eq!(
            (r.status, r.json()["reason"].as_str()),
            (405, Some("MethodNotAllowed")),
            "{method} {path}"
        );
    }
    assert!(state.get(&Pointer::typed::<LinkConfig>("config", "eth0")).await.is_ok());
    server.stop().await;
}

#[actix::test]
async fn a_table_has_name_print_columns_and_age_with_metadata_in_each_row() {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state)).await;
    let t = open_with(addr, LINKS, &[("Accept", TABLE)]).await.body().await.json();
    assert_eq!(t["kind"], "Table");
    let columns: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["Name", "MTU", "Age"]);
    let row = &t["rows"][1];
    assert_eq!(row["cells"][0], "eth1");
    assert_eq!(row["cells"][1], 9000);
    assert!(row["cells"][2].as_str().unwrap().ends_with('s'), "an age: {row}");
    assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(row["object"]["metadata"]["labels"]["tier"], "edge");
    // A watch under the Table Accept header: a one-row Table per event.
    let open = open_with(
        addr,
        &format!("{LINKS}?watch=true&fieldSelector=metadata.name%3Deth0"),
        &[("Accept", TABLE)],
    )
    .await;
    let mut w = Lines::new(open);
    let e = w.next().await.unwrap();
    assert_eq!((e["type"].as_str(), e["object"]["kind"].as_str()), (Some("ADDED"), Some("Table")));
    assert_eq!(e["object"]["rows"][0]["cells"][0], "eth0");
    server.stop().await;
}

#[actix::test]
async fn a_watch_client_that_stops_reading_is_cut_off_and_never_holds_the_state_back() {
    let state = State::start();
    let (server, addr) = serve(api(&state).watch_buffer(8)).await;
    let baseline = state.watch_count().await.unwrap();
    // Subscribes, then reads nothing while a lot happens.
    let slow = open(addr, &format!("{LINKS}?watch=true")).await;
    let mut fast = watch(addr, &format!("{LINKS}?watch=true")).await;
    // The fast watch is registered once it answered; wait for the slow one too.
    while state.watch_count().await.unwrap() < baseline + 2 {
        tokio::task::yield_now().await;
    }
    // 400 resources of 64 KiB: far more than the socket buffers hold.
    let big = "x".repeat(64 * 1024);
    for i in 0..400 {
        let mut r = link("config", &format!("r{i:03}"), 1500, "core");
        r.metadata_mut().annotations_mut().insert("payload", big.as_str());
        state.create(r, None).await.unwrap();
        // The fast reader keeps up and sees every change.
        assert_eq!(w_name(&mut fast).await, format!("r{i:03}"));
    }
    // The slow reader gets what its buffers held, then the end; its watch is gone.
    let mut slow = Lines::new(slow);
    let mut got = 0;
    while slow.next().await.is_some() {
        got += 1;
    }
    assert!(got < 400, "the slow reader was cut off ({got} events)");
    // Its watch is unregistered (a message to the state actor, on its way).
    let gone = async {
        while state.watch_count().await.unwrap() != baseline + 1 {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), gone).await.expect("the slow watch ends");
    drop(fast);
    server.stop().await;
}

async fn w_name(w: &mut Lines) -> String {
    w.next_named().await.1
}

// ---- kubectl ----------------------------------------------------------------

/// Columns of a kubectl table line.
fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[actix::test]
async fn kubectl_api_resources_lists_the_type_with_its_short_name() {
    if !kubectl_available(33) {
        return;
    }
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let (ok, out, err) = Kubectl::new(addr).run(&["api-resources"]).await;
    assert!(ok, "{out}{err}");
    let row =
        out.lines().find(|l| l.starts_with("linkconfigs")).unwrap_or_else(|| panic!("{out}{err}"));
    assert_eq!(words(row), ["linkconfigs", "lc", "net.cosi.dev/v1alpha1", "true", "LinkConfig"]);
    server.stop().await;
}

/// `kubectl get` as a table, `-o yaml`, `-A`, `-l`, for one client version.
async fn kubectl_reads(minor: u32) {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);

    let (ok, out, err) = kubectl.run(&["version", "-o", "json"]).await;
    assert!(ok, "{out}{err}");
    let version: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        version["clientVersion"]["minor"],
        minor.to_string(),
        "the dispatcher ran kubectl.1.{minor}"
    );
    assert_eq!(version["serverVersion"]["minor"], minor.to_string());

    let (ok, out, err) = kubectl.run(&["get", "linkconfigs", "-n", "config"]).await;
    assert!(ok, "{out}{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(words).collect();
    assert_eq!(lines[0], ["NAME", "MTU", "AGE"], "{out}");
    assert_eq!(&lines[1][..2], ["eth0", "1500"], "{out}");
    assert_eq!(&lines[2][..2], ["eth1", "9000"], "{out}");
    assert_eq!(lines.len(), 3, "{out}");

    let (ok, out, err) = kubectl.run(&["get", "lc", "eth1", "-n", "config", "-o", "yaml"]).await;
    assert!(ok, "{out}{err}");
    for expected in [
        "kind: LinkConfig",
        "apiVersion: net.cosi.dev/v1alpha1",
        "name: eth1",
        "namespace: config",
        "mtu: 9000",
        "tier: edge",
        "resourceVersion: \"2\"",
    ] {
        assert!(out.contains(expected), "{expected:?} in:\n{out}");
    }

    let (ok, out, err) = kubectl.run(&["get", "linkconfigs", "-A"]).await;
    assert!(ok, "{out}{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(words).collect();
    assert_eq!(lines[0], ["NAMESPACE", "NAME", "MTU", "AGE"], "{out}");
    let rows: Vec<(&str, &str)> = lines[1..].iter().map(|l| (l[0], l[1])).collect();
    assert_eq!(rows, [("config", "eth0"), ("config", "eth1"), ("edge", "wan0")], "{out}");

    let (ok, out, err) =
        kubectl.run(&["get", "linkconfigs", "-A", "-l", "tier=edge", "--show-labels"]).await;
    assert!(ok, "{out}{err}");
    let lines: Vec<Vec<&str>> = out.lines().map(words).collect();
    assert_eq!(lines[0], ["NAMESPACE", "NAME", "MTU", "AGE", "LABELS"], "{out}");
    let rows: Vec<(&str, &str, &str)> = lines[1..].iter().map(|l| (l[0], l[1], l[4])).collect();
    assert_eq!(rows, [("config", "eth1", "tier=edge"), ("edge", "wan0", "tier=edge")], "{out}");

    let (ok, out, err) = kubectl.run(&["get", "linkconfigs", "eth9", "-n", "config"]).await;
    assert!(!ok, "{out}");
    assert!(err.contains("NotFound") && err.contains("\"eth9\" not found"), "{err}");
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_33_gets_tables_yaml_all_namespaces_and_labels() {
    if kubectl_available(33) {
        kubectl_reads(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_gets_tables_yaml_all_namespaces_and_labels() {
    if kubectl_available(27) {
        kubectl_reads(27).await;
    }
}

async fn kubectl_watches(minor: u32) {
    let state = State::start();
    seed(&state).await;
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    let (_child, mut lines) = kubectl.spawn(&["get", "linkconfigs", "-n", "config", "-w"]);
    let mut next = async || {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.recv())
            .await
            .expect("kubectl prints within 30 s")
            .expect("kubectl still runs");
        assert!(!line.starts_with("E: "), "{line}");
        line
    };
    assert_eq!(words(&next().await), ["NAME", "MTU", "AGE"]);
    assert_eq!(words(&next().await)[..2], ["eth0", "1500"]);
    assert_eq!(words(&next().await)[..2], ["eth1", "9000"]);
    // kubectl is watching (from the list's revision) once it printed the list;
    // changes made now arrive as rows.
    state.create(link("config", "eth5", 4000, "core"), None).await.unwrap();
    assert_eq!(words(&next().await)[..2], ["eth5", "4000"]);
    set_mtu(&state, "eth0", 1280).await;
    assert_eq!(words(&next().await)[..2], ["eth0", "1280"]);
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_33_get_watch_shows_changes_made_in_flight() {
    if kubectl_available(33) {
        kubectl_watches(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_get_watch_shows_changes_made_in_flight() {
    if kubectl_available(27) {
        kubectl_watches(27).await;
    }
}
