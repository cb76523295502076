//! Kinds shaped as Kubernetes shapes them: the core group (`/api/v1`),
//! cluster-scoped types, objects whose top-level fields are not `spec`
//! (a ConfigMap's `data`), and namespaces as objects (`get ns`, a write
//! into a missing namespace is `NotFound`, deleting one empties it).

use std::collections::BTreeMap;

use cosi_runtime::kubernetes::{CLUSTER_NAMESPACE, Expose, KubernetesApi};
use cosi_runtime::prelude::*;
use cosi_runtime::resource::LabelQuery;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, Config};
use serde_json::json;

use crate::kubectl::{Kubectl, kubectl_available};
use crate::write::{api, get, post, send, serve};

/// ConfigMaps in the core group, stored whole (`data`, `binaryData`,
/// `immutable`), and a cluster-scoped kind of our own.
fn kinds(state: &State) -> KubernetesApi {
    api(state)
        .expose(Expose::resource_type("ConfigMaps", "v1").core_group().top_level_fields())
        .unwrap()
        .expose(
            Expose::resource_type("Regions.geo.cosi.dev", "v1")
                .cluster_scoped("geo")
                .top_level_fields()
                .column("Zone", ".zone"),
        )
        .unwrap()
}

#[actix::test]
async fn kube_rs_api_of_configmap_creates_gets_replaces_lists_and_deletes_in_the_core_group() {
    let state = State::start();
    let (server, _) = serve(kinds(&state)).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");

    let mut map = ConfigMap::default();
    map.metadata.name = Some("settings".into());
    map.data = Some(BTreeMap::from([("mode".into(), "fast".into())]));
    map.immutable = Some(false);
    let created = maps.create(&PostParams::default(), &map).await.unwrap();
    assert_eq!(created.data, map.data, "top-level data is stored, not dropped");
    assert_eq!(created.immutable, Some(false));
    let stored = state
        .get(&Kind::new("default", "ConfigMaps").pointer("settings"))
        .await
        .unwrap()
        .to_dynamic()
        .unwrap();
    assert_eq!(stored.spec(), &json!({"data": {"mode": "fast"}, "immutable": false}));

    let got = maps.get("settings").await.unwrap();
    assert_eq!(got.data, map.data);
    assert_eq!(got.metadata.namespace.as_deref(), Some("default"));

    let mut newer = got.clone();
    newer.data = Some(BTreeMap::from([("mode".into(), "safe".into())]));
    let replaced = maps.replace("settings", &PostParams::default(), &newer).await.unwrap();
    assert_eq!(replaced.data.unwrap()["mode"], "safe");
    // `got` carries the version before the replace.
    let stale = maps.replace("settings", &PostParams::default(), &got).await.unwrap_err();
    match stale {
        kube::Error::Api(s) => assert_eq!(s.code, 409, "{s:?}"),
        other => panic!("a stale replace is a 409: {other}"),
    }

    let listed = maps.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].data.as_ref().unwrap()["mode"], "safe");

    maps.delete("settings", &DeleteParams::default()).await.unwrap();
    let gone = maps.get_opt("settings").await.unwrap();
    assert!(gone.is_none(), "deleted");

    // Discovery names it in the core group, namespaced.
    let discovery = kube::discovery::Discovery::new(client).run_aggregated().await.unwrap();
    let (resource, caps) = discovery
        .resolve_gvk(&kube::core::GroupVersionKind::gvk("", "v1", "ConfigMap"))
        .expect("aggregated discovery finds ConfigMap in the core group");
    assert_eq!(
        (resource.plural.as_str(), caps.scope),
        ("configmaps", kube::discovery::Scope::Namespaced)
    );
    server.stop().await;
}

#[actix::test]
async fn a_cluster_scoped_kind_lives_at_the_cluster_scope_and_is_404_under_a_namespace() {
    let state = State::start();
    let (server, addr) = serve(kinds(&state)).await;
    let region = json!({"metadata": {"name": "eu"}, "zone": "eu-west-1"});
    let created = post(addr, "/apis/geo.cosi.dev/v1/regions", &region).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert!(created.body["metadata"].get("namespace").is_none(), "{:?}", created.body);
    assert_eq!(created.body["zone"], "eu-west-1");
    // Kept in the state namespace the exposure names.
    let kept = state.list(&Kind::new("geo", "Regions.geo.cosi.dev"), &LabelQuery::all()).await;
    assert_eq!(kept.unwrap().len(), 1);

    let read = get(addr, "/apis/geo.cosi.dev/v1/regions/eu").await;
    assert_eq!((read.status, read.body["zone"].as_str()), (200, Some("eu-west-1")));
    let listed = get(addr, "/apis/geo.cosi.dev/v1/regions").await;
    assert_eq!(listed.body["items"].as_array().unwrap().len(), 1);
    let namespaced = get(addr, "/apis/geo.cosi.dev/v1/namespaces/geo/regions/eu").await;
    assert_eq!((namespaced.status, namespaced.reason()), (404, "NotFound"));
    let resources = get(addr, "/apis/geo.cosi.dev/v1").await;
    assert_eq!(resources.body["resources"][0]["namespaced"], false);
    let deleted =
        send(addr, "DELETE", "/apis/geo.cosi.dev/v1/regions/eu", "application/json", "").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    server.stop().await;
}

#[actix::test]
async fn a_write_into_a_missing_namespace_is_404_until_the_namespace_is_created() {
    let state = State::start();
    let (server, addr) = serve(kinds(&state)).await;
    let note = json!({"metadata": {"name": "n1"}, "spec": {"text": "hi"}});
    let missing = post(addr, "/apis/misc.cosi.dev/v1/namespaces/prod/notes", &note).await;
    assert_eq!((missing.status, missing.reason()), (404, "NotFound"));
    assert_eq!(missing.body["message"], "namespaces \"prod\" not found");

    let ns = post(addr, "/api/v1/namespaces", &json!({"metadata": {"name": "prod"}})).await;
    assert_eq!(ns.status, 201, "{:?}", ns.body);
    assert_eq!(ns.body["status"]["phase"], "Active");
    let stored = post(addr, "/apis/misc.cosi.dev/v1/namespaces/prod/notes", &note).await;
    assert_eq!(stored.status, 201, "{:?}", stored.body);

    // Every namespace: the declared ones (`default`, `config`) and the object.
    let namespaces = get(addr, "/api/v1/namespaces").await;
    let names: Vec<&str> = namespaces.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["config", "default", "prod"]);
    assert_eq!(get(addr, "/api/v1/namespaces/prod").await.status, 200);
    assert_eq!(get(addr, "/api/v1/namespaces/nowhere").await.status, 404);
    // All namespaces (`-A`) read it.
    let all = get(addr, "/apis/misc.cosi.dev/v1/notes").await;
    assert_eq!(all.body["items"][0]["metadata"]["namespace"], "prod");
    server.stop().await;
}

#[actix::test]
async fn deleting_a_namespace_deletes_what_is_in_it_then_the_namespace() {
    let state = State::start();
    let (server, addr) = serve(kinds(&state)).await;
    assert_eq!(
        post(addr, "/api/v1/namespaces", &json!({"metadata": {"name": "tmp"}})).await.status,
        201
    );
    for name in ["a", "b"] {
        // `a` holds its delete until its finalizer is removed.
        let finalizers = if name == "a" { json!(["keep"]) } else { json!([]) };
        let note =
            json!({"metadata": {"name": name, "finalizers": finalizers}, "spec": {"text": name}});
        let answer = post(addr, "/apis/misc.cosi.dev/v1/namespaces/tmp/notes", &note).await;
        assert_eq!(answer.status, 201);
    }
    let namespace = Kind::new(CLUSTER_NAMESPACE, "Namespaces").pointer("tmp");
    let mut watch = state.watch_stream(&namespace).await.unwrap();

    let deleted = send(addr, "DELETE", "/api/v1/namespaces/tmp", "application/json", "").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string(), "{:?}", deleted.body);
    // A namespace being deleted takes nothing new.
    let late = json!({"metadata": {"name": "c"}, "spec": {"text": "c"}});
    let refused = post(addr, "/apis/misc.cosi.dev/v1/namespaces/tmp/notes", &late).await;
    assert_eq!(refused.status, 403, "{:?}", refused.body);
    let notes = Kind::new("tmp", "Notes.misc.cosi.dev");
    state.remove_finalizer(&notes.pointer("a"), "keep").await.unwrap();

    // The namespace goes once what was in it has gone.
    while let Some(event) = watch.next().await {
        if matches!(event, cosi_runtime::state::Event::Destroyed(_)) {
            break;
        }
    }
    assert!(state.list(&notes, &LabelQuery::all()).await.unwrap().is_empty());
    assert_eq!(get(addr, "/api/v1/namespaces/tmp").await.status, 404);
    server.stop().await;
}

#[actix::test]
async fn kubectl_gets_and_creates_namespaces_and_an_apply_into_a_missing_one_is_not_found() {
    for minor in [27, 33] {
        if !kubectl_available(minor) {
            continue;
        }
        let state = State::start();
        let (server, addr) = serve(kinds(&state).server_version(1, minor)).await;
        let kubectl = Kubectl::new(addr);
        let (ok, out, err) = kubectl.run(&["get", "ns"]).await;
        assert!(ok, "{err}");
        assert!(out.contains("config") && out.contains("Active"), "1.{minor}: {out}");
        let manifest = kubectl.file(
            "note.yaml",
            "apiVersion: misc.cosi.dev/v1\nkind: Note\nmetadata:\n  name: n1\n  namespace: prod\nspec:\n  text: hi\n",
        );
        let (ok, _, err) = kubectl.run(&["apply", "-f", &manifest]).await;
        assert!(
            !ok && err.contains("NotFound") && err.contains("namespaces \"prod\" not found"),
            "1.{minor}: {err}"
        );
        let (ok, _, err) = kubectl.run(&["create", "namespace", "prod"]).await;
        assert!(ok, "1.{minor}: {err}");
        let (ok, out, err) = kubectl.run(&["apply", "-f", &manifest]).await;
        assert!(ok, "1.{minor}: {err}");
        assert!(out.contains("note.misc.cosi.dev/n1 created"), "1.{minor}: {out}");
        let (ok, out, err) = kubectl.run(&["get", "notes", "-A"]).await;
        assert!(ok && out.contains("prod") && out.contains("n1"), "1.{minor}: {out}{err}");
        server.stop().await;
    }
}

#[actix::test]
async fn kube_rs_api_of_events_k8s_io_event_round_trips_every_field() {
    use k8s_openapi::api::core::v1::{EventSource, ObjectReference};
    use k8s_openapi::api::events::v1::{Event, EventSeries};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, Time};

    let state = State::start();
    let (server, _) = serve(kinds(&state).events()).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let events: Api<Event> = Api::namespaced(client, "config");
    let micro: MicroTime = serde_json::from_value(json!("2026-11-28T15:00:00.123456Z")).unwrap();
    let time: Time = serde_json::from_value(json!("2026-11-28T15:00:00Z")).unwrap();
    let reference = ObjectReference {
        api_version: Some("net.cosi.dev/v1alpha1".into()),
        kind: Some("LinkConfig".into()),
        name: Some("eth0".into()),
        namespace: Some("config".into()),
        uid: Some("4f1c".into()),
        ..Default::default()
    };
    let mut event = Event {
        action: Some("Reconcile".into()),
        deprecated_count: Some(3),
        deprecated_first_timestamp: Some(time.clone()),
        deprecated_last_timestamp: Some(time.clone()),
        deprecated_source: Some(EventSource { component: Some("netplane".into()), host: None }),
        event_time: Some(micro.clone()),
        note: Some("mtu 99 is below 576".into()),
        reason: Some("ReconcileError".into()),
        regarding: Some(reference.clone()),
        related: Some(reference),
        reporting_controller: Some("cosi-runtime/LinkController".into()),
        reporting_instance: Some("node-1".into()),
        series: Some(EventSeries { count: 3, last_observed_time: micro.clone() }),
        type_: Some("Warning".into()),
        ..Default::default()
    };
    event.metadata.name = Some("eth0.abc".into());
    let created = events.create(&PostParams::default(), &event).await.unwrap();
    let read = events.get("eth0.abc").await.unwrap();
    for got in [created, read] {
        let mut expected = event.clone();
        expected.metadata = got.metadata.clone();
        assert_eq!(got, expected, "every field round-trips");
    }
    server.stop().await;
}

#[actix::test]
async fn the_scale_subresource_reads_and_writes_the_replicas_for_kube_rs_and_kubectl() {
    use kube::api::{DynamicObject, Patch, PatchParams};
    use kube::core::{ApiResource, GroupVersionKind};

    let state = State::start();
    let pools = Expose::resource_type("Pools.demo.cosi.dev", "v1")
        .status_subresource()
        .scale(".spec.replicas", ".status.replicas", Some(".status.selector"))
        .namespaces(["config"]);
    let (server, addr) = serve(api(&state).expose(pools).unwrap()).await;
    let pool = json!({
        "metadata": {"name": "p1"},
        "spec": {"replicas": 2, "image": "web"},
    });
    assert_eq!(
        post(addr, "/apis/demo.cosi.dev/v1/namespaces/config/pools", &pool).await.status,
        201
    );
    let status = json!({"status": {"replicas": 2, "selector": "app=web"}});
    let patched = crate::write::patch(
        addr,
        "/apis/demo.cosi.dev/v1/namespaces/config/pools/p1/status",
        "application/merge-patch+json",
        &status,
    )
    .await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);

    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("demo.cosi.dev", "v1", "Pool"),
        "pools",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(client, "config", &resource);
    let scale = api.get_scale("p1").await.unwrap();
    assert_eq!(scale.spec.as_ref().and_then(|s| s.replicas), Some(2));
    let observed = scale.status.as_ref().unwrap();
    assert_eq!((observed.replicas, observed.selector.as_deref()), (2, Some("app=web")));

    let params = PatchParams::default();
    let scaled = api
        .patch_scale("p1", &params, &Patch::Merge(json!({"spec": {"replicas": 5}})))
        .await
        .unwrap();
    assert_eq!(scaled.spec.and_then(|s| s.replicas), Some(5));
    let object = api.get("p1").await.unwrap();
    assert_eq!(
        object.data["spec"],
        json!({"replicas": 5, "image": "web"}),
        "only the replicas changed"
    );
    assert_eq!(object.data["status"]["replicas"], 2, "the status is kept");

    let mut stale = scale.clone();
    stale.spec.as_mut().unwrap().replicas = Some(1);
    let refused = api.replace_scale("p1", &PostParams::default(), &stale).await;
    assert!(matches!(refused, Err(kube::Error::Api(ref s)) if s.code == 409), "{refused:?}");

    let none = get(addr, "/apis/misc.cosi.dev/v1/namespaces/config/notes/n1/scale").await;
    assert_eq!(none.status, 404);

    for minor in [27, 33] {
        if !kubectl_available(minor) {
            continue;
        }
        let kubectl = Kubectl::new(addr);
        let replicas = format!("--replicas={minor}");
        let (ok, out, err) =
            kubectl.run(&["scale", "pools", "p1", "-n", "config", &replicas]).await;
        assert!(ok && out.contains("scaled"), "1.{minor}: {out}{err}");
        let read = get(addr, "/apis/demo.cosi.dev/v1/namespaces/config/pools/p1").await;
        assert_eq!(read.body["spec"]["replicas"], minor, "1.{minor}");
    }
    server.stop().await;
}

#[actix::test]
async fn a_k8s_openapi_type_is_exposed_as_it_is_and_writes_must_decode_as_it() {
    use cosi_runtime::kubernetes::k8s_resource_type;
    use k8s_openapi::api::core::v1::Namespace;

    let state = State::start();
    let api = KubernetesApi::new(&state)
        .namespaces(["config"])
        .expose(Expose::k8s::<ConfigMap>())
        .unwrap();
    let (server, addr) = serve(api).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let maps: Api<ConfigMap> = Api::namespaced(client, "config");
    let mut map = ConfigMap::default();
    map.metadata.name = Some("m".into());
    map.data = Some(BTreeMap::from([("k".into(), "v".into())]));
    let created = maps.create(&PostParams::default(), &map).await.unwrap();
    assert_eq!(created.data, map.data);
    let kept = Kind::new("config", k8s_resource_type::<ConfigMap>()).pointer("m");
    assert_eq!(
        state.get(&kept).await.unwrap().to_dynamic().unwrap().spec(),
        &json!({"data": {"k": "v"}})
    );

    // Not a ConfigMap: a 422 naming the field.
    let bad = json!({"metadata": {"name": "bad"}, "data": {"k": 1}});
    let refused = post(addr, "/api/v1/namespaces/config/configmaps", &bad).await;
    assert_eq!((refused.status, refused.reason()), (422, "Invalid"), "{:?}", refused.body);
    assert_eq!(refused.body["details"]["causes"][0]["field"], "data.k", "{:?}", refused.body);
    assert_eq!(k8s_resource_type::<Namespace>(), "Namespaces");
    server.stop().await;
}

#[actix::test]
async fn all_namespaces_lists_and_watches_read_every_namespace_of_the_engine() {
    use crate::write::{LinkConfig, link};

    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    // Written through the State into a namespace the API neither declares
    // nor holds an object for (as a controller may).
    let elsewhere = Resource::new("edge-7", "wan0", LinkConfig { mtu: 1400, bond: None });
    state.create(elsewhere, None).await.unwrap();
    let (server, addr) = serve(kinds(&state)).await;

    let all = get(addr, "/apis/net.cosi.dev/v1alpha1/linkconfigs").await;
    let found: Vec<(&str, &str)> = all.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (i["metadata"]["namespace"].as_str().unwrap(), i["metadata"]["name"].as_str().unwrap())
        })
        .collect();
    assert_eq!(found, [("config", "eth0"), ("edge-7", "wan0")]);
    let revision = all.body["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    assert_eq!(revision, "2", "the store revision of the one snapshot");
    let selected = get(
        addr,
        "/apis/net.cosi.dev/v1alpha1/linkconfigs?fieldSelector=metadata.namespace%3Dedge-7",
    )
    .await;
    assert_eq!(selected.body["items"].as_array().unwrap().len(), 1);

    // A watch from that revision sees a change in yet another namespace.
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let links: Api<kube::api::DynamicObject> = Api::all_with(
        client,
        &kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("net.cosi.dev", "v1alpha1", "LinkConfig"),
            "linkconfigs",
        ),
    );
    let params = kube::api::WatchParams::default();
    let mut events = links.watch(&params, &revision).await.unwrap().boxed();
    let later = Resource::new("lab", "eth3", LinkConfig { mtu: 9000, bond: None });
    state.create(later, None).await.unwrap();
    let event = events.next().await.unwrap().unwrap();
    match event {
        kube::api::WatchEvent::Added(o) => {
            assert_eq!(
                (o.metadata.namespace.as_deref(), o.metadata.name.as_deref()),
                (Some("lab"), Some("eth3"))
            );
        }
        other => panic!("expected the new link: {other:?}"),
    }
    server.stop().await;
}
