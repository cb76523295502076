//! Stock kube-rs against the state served through the Kubernetes API, over
//! plain http on loopback: `Discovery` finds the exposed type, an
//! `Api<DynamicObject>` lists and gets it, and kube-runtime's `watcher` (its
//! default configuration) sees its initial list, the changes made while it
//! runs, and, when its watch fell off the state's bounded history, the 410
//! and a relist that ends with exactly the state's resources. Its writes:
//! create, merge and server-side apply patches, a replace from a stale
//! `resourceVersion` (409), and a delete held by a controller's finalizer.

use std::collections::BTreeMap;
use std::time::Duration;

use cosi_runtime::controller::{
    Input, Outcome, QueueController, QueueSettings, ReconcileContext, ReconcileError, finalizer,
};
use cosi_runtime::kubernetes::{Expose, FIELD_MANAGER_ANNOTATION, KubernetesApi, KubernetesServer};
use cosi_runtime::resource::{Phase, Pointer, Resource, Spec};
use cosi_runtime::{Runtime, State};
use futures::{Stream, StreamExt};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::runtime::reflector;
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::watcher::{self, Event};
use kube::{Client, Config, ResourceExt};
use serde_json::{Value, json};

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkConfig {
    mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

fn link(ns: &str, id: &str, mtu: u32) -> Resource<LinkConfig> {
    Resource::new(ns, id, LinkConfig { mtu })
}

async fn create(state: &State, id: &str, mtu: u32) -> u64 {
    state.create(link("config", id, mtu), None).await.unwrap().metadata().revision()
}

async fn set_mtu(state: &State, id: &str, mtu: u32) -> u64 {
    let ptr = Pointer::typed::<LinkConfig>("config", id);
    let r = state.modify(&ptr, move |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = mtu, None);
    r.await.unwrap().metadata().revision()
}

/// What the state holds in namespace `config`: name → (revision, mtu).
async fn stored(state: &State) -> BTreeMap<String, (String, u64)> {
    let all = state.list_typed::<LinkConfig>("config", &Default::default()).await.unwrap();
    all.iter()
        .map(|r| {
            let md = r.metadata();
            (md.id().to_string(), (md.revision().to_string(), u64::from(r.spec().mtu)))
        })
        .collect()
}

/// The same, as a client saw it.
fn seen<'a>(
    objects: impl IntoIterator<Item = &'a DynamicObject>,
) -> BTreeMap<String, (String, u64)> {
    objects
        .into_iter()
        .map(|o| {
            let rv = o.resource_version().expect("every object carries a resourceVersion");
            (o.name_any(), (rv, o.data["spec"]["mtu"].as_u64().unwrap()))
        })
        .collect()
}

/// The watcher's next event, errors included; 20 s of silence fail the test.
async fn next<S>(events: &mut S) -> Result<Event<DynamicObject>, watcher::Error>
where
    S: Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("a watcher event within 20 s")
        .expect("the watcher never ends")
}

/// Events up to and including the next `InitDone`, after an `Init`: the
/// objects of that (re)list, and the errors seen before its `Init`.
async fn relist<S>(events: &mut S) -> (Vec<DynamicObject>, Vec<watcher::Error>)
where
    S: Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Unpin,
{
    let mut errors = Vec::new();
    loop {
        match next(events).await {
            Ok(Event::Init) => break,
            Ok(Event::Apply(_) | Event::Delete(_)) => {}
            Ok(e) => panic!("{e:?} before Init"),
            Err(e) => errors.push(e),
        }
    }
    let mut objects = Vec::new();
    loop {
        match next(events).await {
            Ok(Event::InitApply(o)) => objects.push(o),
            Ok(Event::InitDone) => return (objects, errors),
            other => panic!("{other:?} during a relist"),
        }
    }
}

#[actix::test]
async fn kube_rs_discovers_lists_gets_and_its_watcher_follows_changes_and_relists_after_a_410() {
    // A history of 16 changes, a watch buffer of 8 events: a watcher that
    // stops reading while hundreds of large changes happen is cut off, and
    // by then its version is gone from the history.
    let state = State::builder().history(16).open().await.unwrap();
    create(&state, "eth0", 1500).await;
    create(&state, "eth1", 9000).await;
    state.create(link("edge", "wan0", 1400), None).await.unwrap();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").namespaces(["config", "edge"]))
        .unwrap()
        .watch_buffer(8);
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let config = Config::new(server.url().parse().unwrap());
    let client = Client::try_from(config).unwrap();

    // Discovery (legacy: /apis, /apis/g/v), of our group: an unfiltered run
    // fails on the empty core group, see `unfiltered_discovery_runs` below.
    let discovery = Discovery::new(client.clone()).filter(&["net.cosi.dev"]).run().await.unwrap();
    let gvk = GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig");
    let (ar, caps) = discovery.resolve_gvk(&gvk).expect("discovery finds LinkConfig");
    assert_eq!(
        (ar.plural.as_str(), ar.api_version.as_str()),
        ("linkconfigs", "net.cosi.dev/v1alpha1")
    );
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.supports_operation("watch"), "{caps:?}");

    // List and get.
    let links: Api<DynamicObject> = Api::namespaced_with(client.clone(), "config", &ar);
    let list = links.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.metadata.resource_version.as_deref(), Some("3"));
    assert_eq!(seen(&list.items), stored(&state).await);
    let eth1 = links.get("eth1").await.unwrap();
    assert_eq!(eth1.resource_version().as_deref(), Some("2"));
    assert_eq!(eth1.data["spec"]["mtu"], 9000);
    assert_eq!(eth1.types.as_ref().map(|t| t.kind.as_str()), Some("LinkConfig"));
    let missing = links.get("nope").await.unwrap_err();
    assert!(matches!(&missing, kube::Error::Api(s) if s.code == 404), "{missing:?}");

    // A stock watcher: its initial list...
    let baseline = state.watch_count().await.unwrap();
    let mut events = watcher::watcher(links.clone(), watcher::Config::default()).boxed();
    let (objects, errors) = relist(&mut events).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(seen(&objects), stored(&state).await);

    // ...then the changes made while it runs.
    let modified = set_mtu(&state, "eth0", 1280).await;
    let added = create(&state, "eth2", 1500).await;
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth1"), None).await.unwrap();
    let mut changes = Vec::new();
    for _ in 0..3 {
        match next(&mut events).await.unwrap() {
            Event::Apply(o) => changes.push(("apply", o.name_any(), o.resource_version())),
            Event::Delete(o) => changes.push(("delete", o.name_any(), o.resource_version())),
            other => panic!("{other:?}"),
        }
    }
    let rv = |r: u64| Some(r.to_string());
    assert_eq!(
        changes,
        [
            ("apply", "eth0".into(), rv(modified)),
            ("apply", "eth2".into(), rv(added)),
            ("delete", "eth1".into(), rv(added + 1)),
        ]
    );
    assert_eq!(state.watch_count().await.unwrap(), baseline + 1, "the watcher's watch");

    // The watcher stops reading while 400 changes of 64 KiB happen: far more
    // than the socket buffers and the watch buffer hold, and than the history
    // keeps. The server cuts its watch off.
    let big = "x".repeat(64 * 1024);
    for i in 0..400 {
        let payload = format!("{i}{big}");
        let ptr = Pointer::typed::<LinkConfig>("config", "eth2");
        let modify = state.modify(
            &ptr,
            move |r: &mut Resource<LinkConfig>| {
                r.metadata_mut().annotations_mut().insert("payload", payload.as_str());
            },
            None,
        );
        modify.await.unwrap();
    }
    let cut = async {
        // Each count is a round trip through the state actor; in between,
        // the server runs on (no sleep: it cuts the watch when its buffer fills).
        while state.watch_count().await.unwrap() != baseline {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), cut).await.expect("the slow watch is cut off");
    set_mtu(&state, "eth2", 1400).await;
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth0"), None).await.unwrap();
    create(&state, "eth3", 576).await;

    // Reading again: what the buffers held, the end of the watch, a re-watch
    // from the last version it saw: 410 Expired, and a relist.
    let (objects, errors) = relist(&mut events).await;
    let gone = errors.iter().any(|e| matches!(e, watcher::Error::WatchError(s) if s.code == 410));
    assert!(gone, "the re-watch got a 410: {errors:?}");
    let relisted = seen(&objects);
    assert_eq!(relisted, stored(&state).await, "the relist is exactly the state");
    assert_eq!(relisted.keys().collect::<Vec<_>>(), ["eth2", "eth3"]);

    // And it keeps watching from the relist.
    set_mtu(&state, "eth3", 1500).await;
    match next(&mut events).await.unwrap() {
        Event::Apply(o) => {
            assert_eq!((o.name_any().as_str(), &o.data["spec"]["mtu"]), ("eth3", &1500.into()))
        }
        other => panic!("{other:?}"),
    }
    drop(events);
    server.stop().await;
}

/// `Discovery::run()` without a filter also reads the core group: `/api` must
/// name `v1` and `/api/v1` answer an `APIResourceList` (kube-rs fails on an
/// empty `/api` with `Discovery(EmptyApiGroup(""))`).
#[actix::test]
async fn unfiltered_discovery_runs() {
    let state = State::start();
    let api = KubernetesApi::new(&state).expose(Expose::of::<LinkConfig>("v1alpha1")).unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let discovery = Discovery::new(client).run().await.unwrap();
    let gvk = GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig");
    assert!(discovery.resolve_gvk(&gvk).is_some());
    server.stop().await;
}

/// `Discovery::run_aggregated()` reads `/api` and `/apis` as aggregated
/// discovery (v2): it finds the exposed type, its scope and its status
/// subresource's absence, and the core group's namespaces.
#[actix::test]
async fn aggregated_discovery_finds_the_exposed_groups() {
    let state = State::start();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]))
        .unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let discovery = Discovery::new(client).run_aggregated().await.unwrap();
    let gvk = GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig");
    let (resource, capabilities) = discovery.resolve_gvk(&gvk).expect("the exposed type");
    assert_eq!(resource.plural, "linkconfigs");
    assert_eq!(capabilities.scope, Scope::Namespaced);
    assert!(discovery.has_group("net.cosi.dev"));
    let namespaces = GroupVersionKind::gvk("", "v1", "Namespace");
    let (_, capabilities) = discovery.resolve_gvk(&namespaces).expect("the core group");
    assert_eq!(capabilities.scope, Scope::Cluster);
    server.stop().await;
}

/// A watcher with paged initial lists (kube-runtime's default page size,
/// 500) over every namespace converges on 20,000 objects.
#[actix::test]
async fn a_watcher_with_paged_lists_converges_on_twenty_thousand_objects() {
    let state = State::start();
    for i in 0..20_000u32 {
        let ns = if i % 2 == 0 { "config" } else { "edge" };
        state.create(link(ns, &format!("eth{i:05}"), 1500), None).await.unwrap();
    }
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").namespaces(["config", "edge"]))
        .unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let all: Api<DynamicObject> = Api::all_with(client, &link_resource());
    let paged = all.list(&ListParams::default().limit(500)).await.unwrap();
    assert_eq!(paged.items.len(), 500);
    assert!(paged.metadata.continue_.is_some(), "a page, with a continue token");
    assert_eq!(paged.metadata.remaining_item_count, Some(19_500));
    let writer = reflector::store::Writer::<DynamicObject>::new(link_resource());
    let reader = writer.as_reader();
    let mut events =
        reflector::reflector(writer, watcher::watcher(all, watcher::Config::default())).boxed();
    let (objects, errors) = relist(&mut events).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(objects.len(), 20_000);
    assert_eq!(reader.state().len(), 20_000);
    drop(events);
    server.stop().await;
}

/// A watcher in streaming-list mode (`sendInitialEvents=true`: the initial
/// objects as watch events, ended by the `initial-events-end` bookmark) over
/// every namespace, feeding a stock reflector whose store follows the state.
#[actix::test]
async fn a_streaming_list_watcher_over_all_namespaces_feeds_a_reflector() {
    let state = State::start();
    create(&state, "eth0", 1500).await;
    create(&state, "eth1", 9000).await;
    state.create(link("edge", "wan0", 1400), None).await.unwrap();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").namespaces(["config", "edge"]))
        .unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let gvk = GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "linkconfigs");
    let all: Api<DynamicObject> = Api::all_with(client, &ar);

    let list = all.list(&ListParams::default()).await.unwrap();
    let names: Vec<_> = list.items.iter().map(|o| (o.namespace().unwrap(), o.name_any())).collect();
    let pair = |ns: &str, n: &str| (ns.to_owned(), n.to_owned());
    assert_eq!(names, [pair("config", "eth0"), pair("config", "eth1"), pair("edge", "wan0")]);
    // Metadata-only reads (what `metadata_watcher` lists), and a missing name.
    let metas = all.list_metadata(&ListParams::default()).await.unwrap();
    let revisions: Vec<_> = metas.items.iter().map(|m| m.resource_version().unwrap()).collect();
    assert_eq!(revisions, ["1", "2", "3"]);
    let config: Api<DynamicObject> = Api::namespaced_with(all.clone().into_client(), "config", &ar);
    assert_eq!(config.get_metadata("eth1").await.unwrap().name_any(), "eth1");
    assert!(config.get_opt("nope").await.unwrap().is_none());

    let writer = reflector::store::Writer::<DynamicObject>::new(ar.clone());
    let reader = writer.as_reader();
    let config = watcher::Config::default().streaming_lists();
    let mut events = reflector::reflector(writer, watcher::watcher(all, config)).boxed();
    let (objects, errors) = relist(&mut events).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(objects.len(), 3, "{objects:?}");
    assert_eq!(reader.state().len(), 3);

    set_mtu(&state, "eth0", 1280).await;
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth1"), None).await.unwrap();
    state.create(link("edge", "wan1", 1400), None).await.unwrap();
    for _ in 0..3 {
        assert!(matches!(next(&mut events).await, Ok(Event::Apply(_) | Event::Delete(_))));
    }
    let mut cached: Vec<_> = reader
        .state()
        .iter()
        .map(|o| (o.namespace().unwrap(), o.name_any(), o.data["spec"]["mtu"].as_u64().unwrap()))
        .collect();
    cached.sort();
    let row = |ns: &str, n: &str, mtu: u64| (ns.to_owned(), n.to_owned(), mtu);
    assert_eq!(
        cached,
        [row("config", "eth0", 1280), row("edge", "wan0", 1400), row("edge", "wan1", 1400)]
    );
    drop(events);
    server.stop().await;
}

// ---- writes ---------------------------------------------------------------------

/// The API over `state`, served on loopback, and an `Api<DynamicObject>` of
/// `linkconfigs` in `config` pointed at it.
async fn serve_links(state: &State) -> (KubernetesServer, Api<DynamicObject>) {
    let api = KubernetesApi::new(state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").namespaces(["config"]))
        .unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let gvk = GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "linkconfigs");
    (server, Api::namespaced_with(client, "config", &ar))
}

fn link_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig");
    ApiResource::from_gvk_with_plural(&gvk, "linkconfigs")
}

/// What the state holds of `config/{id}`.
async fn stored_link(state: &State, id: &str) -> Resource<LinkConfig> {
    state.get(&Pointer::typed::<LinkConfig>("config", id)).await.unwrap()
}

#[actix::test]
async fn kube_rs_creates_a_dynamic_object_and_the_state_holds_it() {
    let state = State::start();
    let (server, links) = serve_links(&state).await;
    let mut object =
        DynamicObject::new("eth5", &link_resource()).data(json!({"spec": {"mtu": 1400}}));
    object.labels_mut().insert("tier".into(), "edge".into());
    let created = links.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(created.name_any(), "eth5");
    assert_eq!(created.data["spec"]["mtu"], 1400);

    let link = stored_link(&state, "eth5").await;
    assert_eq!(link.spec(), &LinkConfig { mtu: 1400 });
    assert_eq!(link.metadata().labels().get("tier"), Some("edge"));
    assert_eq!(link.owner(), None, "written as the user");
    assert_eq!(created.resource_version(), Some(link.metadata().revision().to_string()));
    assert_eq!(created.uid(), link.metadata().uid().map(|u| u.to_string()));
    // The list a client makes next has it.
    let listed = links.list(&ListParams::default()).await.unwrap();
    assert_eq!(seen(&listed.items), stored(&state).await);

    // A second create of the name: 409 AlreadyExists, nothing written.
    let again = DynamicObject::new("eth5", &link_resource()).data(json!({"spec": {"mtu": 1}}));
    let err = links.create(&PostParams::default(), &again).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
        "{err:?}"
    );
    assert_eq!(stored_link(&state, "eth5").await.spec().mtu, 1400);
    server.stop().await;
}

/// Two field managers applying one field: the second is refused with a
/// 409 naming the field and the first manager, unless it forces; the
/// object's `managedFields` then lists both, each with what it owns.
#[actix::test]
async fn two_appliers_of_one_field_conflict_unless_forced_and_both_are_listed() {
    let state = State::start();
    let (server, links) = serve_links(&state).await;
    let object = |spec: Value| {
        json!({"apiVersion": "net.cosi.dev/v1alpha1", "kind": "LinkConfig",
               "metadata": {"name": "eth7"}, "spec": spec})
    };
    let mut first = object(json!({"mtu": 1500}));
    first["metadata"]["labels"] = json!({"tier": "core"});
    links.patch("eth7", &PatchParams::apply("netops"), &Patch::Apply(&first)).await.unwrap();
    let second = object(json!({"mtu": 9000}));
    let refused = links.patch("eth7", &PatchParams::apply("tuner"), &Patch::Apply(&second)).await;
    let Err(kube::Error::Api(status)) = refused else { panic!("a conflict: {refused:?}") };
    assert_eq!((status.code, status.reason.as_str()), (409, "Conflict"));
    assert!(status.message.contains(r#"conflict with "netops": .spec.mtu"#), "{}", status.message);
    assert_eq!(stored_link(&state, "eth7").await.spec().mtu, 1500, "nothing written");

    let forced = PatchParams::apply("tuner").force();
    let taken = links.patch("eth7", &forced, &Patch::Apply(&second)).await.unwrap();
    assert_eq!(taken.data["spec"]["mtu"], 9000);
    let managers: Vec<(String, String)> = taken
        .managed_fields()
        .iter()
        .map(|m| (m.manager.clone().unwrap(), m.operation.clone().unwrap()))
        .collect();
    let pair = |m: &str| (m.to_owned(), "Apply".to_owned());
    assert_eq!(managers, [pair("netops"), pair("tuner")]);
    let owned = |manager: &str| {
        let entry = taken.managed_fields().iter().find(|m| m.manager.as_deref() == Some(manager));
        entry.unwrap().fields_v1.clone().unwrap().0
    };
    let labels = json!({"f:metadata": {"f:labels": {"f:tier": {}}}});
    assert_eq!(owned("netops"), labels, "mtu was taken over");
    assert_eq!(owned("tuner"), json!({"f:spec": {"f:mtu": {}}}));
    server.stop().await;
}

#[actix::test]
async fn kube_rs_merge_patches_and_server_side_applies_with_a_field_manager() {
    let state = State::start();
    create(&state, "eth0", 1500).await;
    let (server, links) = serve_links(&state).await;

    // Merge patch: spec and a label.
    let merge = json!({"metadata": {"labels": {"tier": "core"}}, "spec": {"mtu": 9000}});
    let patched =
        links.patch("eth0", &PatchParams::default(), &Patch::Merge(&merge)).await.unwrap();
    assert_eq!(patched.data["spec"]["mtu"], 9000);
    let stored = stored_link(&state, "eth0").await;
    assert_eq!(stored.spec().mtu, 9000);
    assert_eq!(stored.metadata().labels().get("tier"), Some("core"));
    assert_eq!(patched.resource_version(), Some(stored.metadata().revision().to_string()));

    // Server-side apply onto the existing object: the field manager is
    // recorded, and what the apply leaves out (the label) is kept.
    let applied = json!({
        "apiVersion": "net.cosi.dev/v1alpha1",
        "kind": "LinkConfig",
        "metadata": {"name": "eth0"},
        "spec": {"mtu": 1280},
    });
    let params = PatchParams::apply("mgr");
    let result = links.patch("eth0", &params, &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(result.data["spec"]["mtu"], 1280);
    assert_eq!(result.annotations().get(FIELD_MANAGER_ANNOTATION).map(String::as_str), Some("mgr"));
    let stored = stored_link(&state, "eth0").await;
    assert_eq!(stored.spec().mtu, 1280);
    assert_eq!(stored.metadata().annotations().get(FIELD_MANAGER_ANNOTATION), Some("mgr"));
    assert_eq!(stored.metadata().labels().get("tier"), Some("core"));

    // Server-side apply of a missing object creates it.
    let mut fresh = applied.clone();
    fresh["metadata"]["name"] = json!("eth7");
    fresh["spec"]["mtu"] = json!(576);
    let created = links.patch("eth7", &params, &Patch::Apply(&fresh)).await.unwrap();
    assert_eq!(created.name_any(), "eth7");
    let stored = stored_link(&state, "eth7").await;
    assert_eq!(stored.spec().mtu, 576);
    assert_eq!(stored.metadata().annotations().get(FIELD_MANAGER_ANNOTATION), Some("mgr"));

    // A merge patch that does not decode: 422, nothing written.
    let bad = json!({"spec": {"mtu": "jumbo"}});
    let err = links.patch("eth0", &PatchParams::default(), &Patch::Merge(&bad)).await.unwrap_err();
    assert!(matches!(&err, kube::Error::Api(s) if s.code == 422), "{err:?}");
    assert_eq!(stored_link(&state, "eth0").await.spec().mtu, 1280);
    server.stop().await;
}

#[actix::test]
async fn kube_rs_replace_from_a_stale_resource_version_is_a_409_api_error() {
    let state = State::start();
    create(&state, "eth0", 1500).await;
    let (server, links) = serve_links(&state).await;
    let read = links.get("eth0").await.unwrap();
    // Someone else writes after the read.
    let newer = set_mtu(&state, "eth0", 1400).await;

    let mut stale = read.clone();
    stale.data["spec"]["mtu"] = json!(9000);
    let err = links.replace("eth0", &PostParams::default(), &stale).await.unwrap_err();
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "Conflict"),
        "{err:?}"
    );
    let stored = stored_link(&state, "eth0").await;
    assert_eq!((stored.spec().mtu, stored.metadata().revision()), (1400, newer), "unchanged");

    // Read again, replace again: it goes in.
    let mut fresh = links.get("eth0").await.unwrap();
    fresh.data["spec"]["mtu"] = json!(9000);
    let replaced = links.replace("eth0", &PostParams::default(), &fresh).await.unwrap();
    assert_eq!(replaced.data["spec"]["mtu"], 9000);
    assert_eq!(stored_link(&state, "eth0").await.spec().mtu, 9000);
    server.stop().await;
}

/// Holds a finalizer on every `LinkConfig` in `config`, and lets go once a
/// torn-down one is labelled `release=true` (its cleanup is done then).
struct Holder;

impl QueueController for Holder {
    fn name(&self) -> &str {
        "Holder"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(vec![Input::primary::<LinkConfig>("config")], vec![])
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        finalizer(
            cx,
            ptr,
            async |_: Resource<LinkConfig>| Ok(Outcome::Done),
            async |r| Ok(r.metadata().labels().get("release") == Some("true")),
        )
        .await
    }
}

#[actix::test]
async fn kube_rs_delete_of_an_object_a_controller_holds_returns_and_it_is_gone_once_released() {
    let runtime = Runtime::start();
    runtime.register(|| Holder).await.unwrap();
    let state = runtime.state();
    let (server, links) = serve_links(&state).await;
    let bound = Duration::from_secs(20);
    let object = DynamicObject::new("eth0", &link_resource()).data(json!({"spec": {"mtu": 1500}}));
    links.create(&PostParams::default(), &object).await.unwrap();
    runtime.settled_within(bound).await.unwrap();
    let held = links.get("eth0").await.unwrap();
    assert_eq!(held.finalizers(), ["Holder"]);
    let uid = held.uid().unwrap();

    // The delete returns at once, with the object being torn down.
    let deleted = links.delete("eth0", &DeleteParams::background()).await.unwrap();
    let torn = deleted.left().expect("the object (still held), not a Status");
    assert!(torn.metadata.deletion_timestamp.is_some(), "{torn:?}");
    // The controller ran its cleanup and holds on: the object stays, torn down.
    runtime.settled_within(bound).await.unwrap();
    let still = links.get("eth0").await.unwrap();
    assert!(still.metadata.deletion_timestamp.is_some(), "{still:?}");
    assert_eq!(still.finalizers(), ["Holder"]);
    let ptr = Pointer::typed::<LinkConfig>("config", "eth0");
    assert_eq!(state.get(&ptr).await.unwrap().phase(), Phase::TearingDown);

    // Updates are still taken while it is torn down: the label lets the
    // controller release its finalizer, and the object goes.
    let release = json!({"metadata": {"labels": {"release": "true"}}});
    links.patch("eth0", &PatchParams::default(), &Patch::Merge(&release)).await.unwrap();
    let gone = await_condition(links.clone(), "eth0", conditions::is_deleted(&uid));
    let gone = tokio::time::timeout(bound, gone).await.expect("deleted within 20 s");
    assert!(gone.unwrap().is_none(), "the watch saw it deleted");
    assert!(links.get_opt("eth0").await.unwrap().is_none());
    assert!(state.get(&ptr).await.unwrap_err().is_not_found());
    server.stop().await;
}

// ---- metadata only ----------------------------------------------------------------

/// `GET path` with `accept`, its JSON body (a plain, unchunked answer).
async fn raw_json(server: &KubernetesServer, path: &str, accept: &str) -> serde_json::Value {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.local_addr();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    serde_json::from_str(body).unwrap()
}

/// A watcher's next event, which must not be an error; 20 s of silence fail.
async fn next_meta<S, T>(events: &mut S) -> Event<T>
where
    S: Stream<Item = Result<Event<T>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("an event within 20 s")
        .expect("the watcher goes on")
        .expect("no watcher error")
}

#[actix::test]
async fn metadata_only_lists_gets_and_a_metadata_watcher_carry_no_specs() {
    let state = State::start();
    create(&state, "eth0", 1500).await;
    create(&state, "eth1", 9000).await;
    let (server, api) = serve_links(&state).await;
    // What kube-rs' list_metadata asks for, and gets: no spec.
    let path = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs";
    let accept = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
    let list = raw_json(&server, path, accept).await;
    assert_eq!(
        (list["kind"].as_str(), list["apiVersion"].as_str()),
        (Some("PartialObjectMetadataList"), Some("meta.k8s.io/v1"))
    );
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
    assert_eq!(list["items"][0]["kind"], "PartialObjectMetadata");
    assert_eq!(list["items"][1]["metadata"]["name"], "eth1");
    assert!(list["items"][0].get("spec").is_none(), "{list}");
    let one = raw_json(
        &server,
        &format!("{path}/eth0"),
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_eq!(
        (one["kind"].as_str(), one["metadata"]["name"].as_str()),
        (Some("PartialObjectMetadata"), Some("eth0"))
    );
    assert!(one.get("spec").is_none(), "{one}");
    assert_eq!(api.get_metadata("eth1").await.unwrap().metadata.generation, Some(1));

    // A stock watcher of `Api<PartialObjectMeta<_>>` (metadata-only
    // requests): the initial list, then changes, no spec.
    let metas: Api<kube::core::PartialObjectMeta<DynamicObject>> =
        Api::namespaced_with(api.into_client(), "config", &link_resource());
    let mut events = watcher::watcher(metas, watcher::Config::default()).boxed();
    assert!(matches!(next_meta(&mut events).await, Event::Init));
    let mut names = Vec::new();
    loop {
        match next_meta(&mut events).await {
            Event::InitApply(m) => names.push(m.name_any()),
            Event::InitDone => break,
            other => panic!("{other:?} during the list"),
        }
    }
    assert_eq!(names, ["eth0", "eth1"]);
    let revision = set_mtu(&state, "eth0", 1280).await;
    let Event::Apply(changed) = next_meta(&mut events).await else { panic!("an apply") };
    assert_eq!(changed.name_any(), "eth0");
    assert_eq!(changed.resource_version(), Some(revision.to_string()));
    assert_eq!(changed.metadata.generation, Some(2));
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth1"), None).await.unwrap();
    let Event::Delete(gone) = next_meta(&mut events).await else { panic!("a delete") };
    assert_eq!(gone.name_any(), "eth1");
    drop(events);
    server.stop().await;
}

// ---- a server restarted on a fresh state ------------------------------------------

/// A watcher that knew a server whose history is gone (it restarted on a
/// fresh in-memory state, whose revisions start again below the watcher's)
/// re-watches from a version the new state has not reached. That watch must
/// end in an in-stream 410 (an HTTP error at watch start is retried with the
/// same version for ever), and the watcher relists the new state's objects.
#[actix::test]
async fn a_watcher_relists_when_the_server_restarts_on_a_fresh_state() {
    let old = State::start();
    for (id, mtu) in [("eth0", 1500), ("eth1", 9000), ("eth2", 1400)] {
        old.create(link("config", id, mtu), None).await.unwrap();
    }
    for mtu in 1..=10 {
        let ptr = Pointer::typed::<LinkConfig>("config", "eth0");
        old.modify(&ptr, move |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = mtu, None)
            .await
            .unwrap();
    }
    let expose = || Expose::of::<LinkConfig>("v1alpha1").namespaces(["config"]);
    let server = KubernetesApi::new(&old).expose(expose()).unwrap();
    let server = server.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let links: Api<DynamicObject> = Api::namespaced_with(client, "config", &link_resource());
    let mut events = kube::runtime::WatchStreamExt::default_backoff(watcher::watcher(
        links.clone(),
        watcher::Config::default(),
    ))
    .boxed();
    let (objects, errors) = relist(&mut events).await;
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(seen(&objects), stored(&old).await);
    // One change seen live: the watcher's version is now the old state's last.
    let last = set_mtu(&old, "eth1", 1280).await;
    match next(&mut events).await.unwrap() {
        Event::Apply(o) => assert_eq!(o.resource_version(), Some(last.to_string())),
        other => panic!("{other:?}"),
    }
    server.stop().await;

    // The same address, a fresh state: two objects, revisions 1 and 2.
    let new = State::start();
    new.create(link("config", "lo", 65536), None).await.unwrap();
    new.create(link("config", "wg0", 1420), None).await.unwrap();
    assert!(last > 2, "the watcher's version is beyond the new state's");
    let server = KubernetesApi::new(&new).expose(expose()).unwrap().serve(addr).await.unwrap();

    let (objects, errors) = relist(&mut events).await;
    let gone = errors.iter().any(|e| matches!(e, watcher::Error::WatchError(s) if s.code == 410));
    assert!(gone, "the re-watch from {last} got an in-stream 410: {errors:?}");
    let relisted = seen(&objects);
    assert_eq!(relisted, stored(&new).await, "the relist is exactly the new state");
    assert_eq!(relisted.keys().collect::<Vec<_>>(), ["lo", "wg0"]);

    // And it follows the new state from there.
    set_mtu(&new, "wg0", 1380).await;
    match next(&mut events).await.unwrap() {
        Event::Apply(o) => {
            assert_eq!((o.name_any().as_str(), &o.data["spec"]["mtu"]), ("wg0", &1380.into()))
        }
        other => panic!("{other:?}"),
    }
    drop(events);
    server.stop().await;
}

/// A list from a version beyond the state's revision (the same client, after
/// such a restart, with client-go's reflector habit of listing from its last
/// version) is a `410 Expired` at once, with or without
/// `resourceVersionMatch=NotOlderThan`, where the apiserver would wait and
/// answer 504: the version will never come. Up to the current revision a
/// list is served as before.
#[actix::test]
async fn a_list_from_a_version_the_state_has_not_reached_is_410_expired() {
    let state = State::start();
    create(&state, "eth0", 1500).await;
    let current = create(&state, "eth1", 9000).await;
    let (server, links) = serve_links(&state).await;
    let beyond = (current + 1).to_string();
    for params in [
        ListParams::default().at(&beyond),
        ListParams::default().at(&beyond).matching(kube::api::VersionMatch::NotOlderThan),
        ListParams::default().at("18446744073709551615"),
    ] {
        let error = links.list(&params).await.unwrap_err();
        match &error {
            kube::Error::Api(s) => {
                assert_eq!((s.code, s.reason.as_str()), (410, "Expired"), "{s:?}");
                assert!(s.message.contains("Too large resource version"), "{}", s.message);
            }
            other => panic!("{params:?}: {other:?}"),
        }
    }
    for at in ["0", "1", &current.to_string()] {
        let list = links.list(&ListParams::default().at(at)).await.unwrap();
        assert_eq!(list.metadata.resource_version, Some(current.to_string()), "from {at}");
        assert_eq!(list.items.len(), 2);
    }
    server.stop().await;
}

// ---- ownerReferences ----------------------------------------------------------------

/// `metadata.ownerReferences` written by kube-rs are kept (in the state, in
/// the reserved annotation) and served back on get, list, metadata-only
/// reads and watches; merge, JSON and apply patches change them; bad ones
/// are a 422 naming the field; a client-written annotation of the reserved
/// name is ignored.
#[actix::test]
async fn owner_references_are_kept_served_patched_and_validated() {
    use cosi_runtime::kubernetes::OWNER_REFERENCES_ANNOTATION;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    let state = State::start();
    let (server, links) = serve_links(&state).await;
    let node = |name: &str, controller: Option<bool>| OwnerReference {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
        controller,
        block_owner_deletion: None,
    };
    let mut object =
        DynamicObject::new("eth0", &link_resource()).data(json!({"spec": {"mtu": 1500}}));
    object.metadata.owner_references = Some(vec![node("n1", Some(true))]);
    object.annotations_mut().insert(OWNER_REFERENCES_ANNOTATION.into(), "[]".into());
    let created = links.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(created.owner_references(), [node("n1", Some(true))]);
    assert!(created.metadata.annotations.is_none(), "{:?}", created.metadata.annotations);
    let kept = stored_link(&state, "eth0").await;
    let kept = kept.metadata().annotations().get(OWNER_REFERENCES_ANNOTATION).map(str::to_owned);
    assert_eq!(
        kept.as_deref(),
        Some(r#"[{"apiVersion":"v1","controller":true,"kind":"Node","name":"n1","uid":"uid-n1"}]"#)
    );

    // Read back every way.
    assert_eq!(links.get("eth0").await.unwrap().owner_references(), [node("n1", Some(true))]);
    let listed = links.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items[0].owner_references(), [node("n1", Some(true))]);
    let metas = links.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(metas.items[0].owner_references(), [node("n1", Some(true))]);
    let mut events = watcher::watcher(links.clone(), watcher::Config::default()).boxed();
    let (objects, _) = relist(&mut events).await;
    assert_eq!(objects[0].owner_references(), [node("n1", Some(true))]);

    // A merge patch adds one (the list is replaced whole, as in a CRD).
    let both = json!({"metadata": {"ownerReferences": [node("n1", Some(true)), node("n2", None)]}});
    let patched = links.patch("eth0", &PatchParams::default(), &Patch::Merge(&both)).await.unwrap();
    assert_eq!(patched.owner_references(), [node("n1", Some(true)), node("n2", None)]);
    match next(&mut events).await.unwrap() {
        Event::Apply(o) => assert_eq!(o.owner_references().len(), 2),
        other => panic!("{other:?}"),
    }
    // A merge patch of the list replaces it whole (JSON patches: see
    // tests/kubernetes/status.rs).
    let one = json!({"metadata": {"ownerReferences": [node("n2", None)]}});
    let params = PatchParams::default();
    let patched = links.patch("eth0", &params, &Patch::Merge(&one)).await.unwrap();
    assert_eq!(patched.owner_references(), [node("n2", None)]);
    // An apply that leaves them out keeps them; one that names them sets them.
    let apply = |refs: Value| {
        json!({"apiVersion": "net.cosi.dev/v1alpha1", "kind": "LinkConfig",
               "metadata": {"name": "eth0", "ownerReferences": refs}, "spec": {"mtu": 1400}})
    };
    let mut keep = apply(Value::Null);
    keep["metadata"].as_object_mut().unwrap().remove("ownerReferences");
    let applied = links.patch("eth0", &PatchParams::apply("m"), &Patch::Apply(&keep)).await;
    assert_eq!(applied.unwrap().owner_references(), [node("n2", None)]);
    let set = apply(json!([node("n3", Some(false))]));
    let applied = links.patch("eth0", &PatchParams::apply("m"), &Patch::Apply(&set)).await;
    assert_eq!(applied.unwrap().owner_references(), [node("n3", Some(false))]);
    // A replace without them drops them, and the annotation with them.
    let mut read = links.get("eth0").await.unwrap();
    read.metadata.owner_references = None;
    let replaced = links.replace("eth0", &PostParams::default(), &read).await.unwrap();
    assert!(replaced.owner_references().is_empty());
    let kept = stored_link(&state, "eth0").await;
    assert!(kept.metadata().annotations().get(OWNER_REFERENCES_ANNOTATION).is_none());

    // Bad references: 422 naming the field, nothing written.
    let revision = stored_link(&state, "eth0").await.metadata().revision();
    for (bad, field) in [
        (json!({"name": "n1"}), "metadata.ownerReferences"),
        (
            json!([{"apiVersion": "v1", "kind": "Node", "name": "n1"}]),
            "metadata.ownerReferences[0].uid",
        ),
        (
            json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u", "controller": "yes"}]),
            "metadata.ownerReferences[0].controller",
        ),
        (json!([node("n1", Some(true)), node("n2", Some(true))]), "metadata.ownerReferences"),
    ] {
        let patch = json!({"metadata": {"ownerReferences": bad}});
        let err = links.patch("eth0", &params, &Patch::Merge(&patch)).await.unwrap_err();
        match &err {
            kube::Error::Api(s) => {
                assert_eq!((s.code, s.reason.as_str()), (422, "Invalid"), "{bad}: {s:?}");
                assert!(s.message.contains(&format!("{field}: ")), "{bad}: {}", s.message);
            }
            other => panic!("{bad}: {other:?}"),
        }
    }
    assert_eq!(stored_link(&state, "eth0").await.metadata().revision(), revision, "unchanged");
    drop(events);
    server.stop().await;
}
