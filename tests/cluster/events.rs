//! The Events a runtime records, published to a cluster (this crate's own
//! API server plays it): `EventSink` applies each new or repeated Event
//! there, and names the cluster object an Event about a mirror regards.

use cosi_runtime::cluster::EventSink;
use cosi_runtime::events::{Event, EventType, ObjectReference};
use cosi_runtime::kubernetes::KubernetesApi;
use cosi_runtime::prelude::*;
use cosi_runtime::resource::Spec;
use futures::StreamExt;

/// Waits until the cluster holds Event `id` in `namespace` with at least
/// `count` occurrences, and answers it.
async fn published(cluster: &State, namespace: &str, id: &str, count: i32) -> Event {
    let kind = Kind::new(namespace, Event::TYPE);
    let options = cosi_runtime::state::WatchOptions::default();
    let mut watch = cluster.watch_kind_stream(&kind, LabelQuery::all(), options).await.unwrap();
    loop {
        if let Ok(r) = cluster.get(&kind.pointer(id)).await {
            let event = r.typed::<Event>().unwrap().spec().clone();
            if event.count() >= count {
                return event;
            }
        }
        watch.next().await.expect("the watch goes on");
    }
}

#[actix::test]
async fn recorded_events_and_their_repeats_are_applied_to_the_cluster() {
    let cluster = State::start();
    let api = KubernetesApi::new(&cluster).namespaces(["config"]).events();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();

    let state = State::start();
    let sink = EventSink::start(client, &state, ["config"]).await.unwrap();
    let now = cosi_runtime::resource::Timestamp::now();
    let mut event = Event {
        event_time: now.into(),
        reporting_controller: "cosi-runtime/LinkController".into(),
        reporting_instance: "node-1".into(),
        action: "Reconcile".into(),
        reason: "ReconcileError".into(),
        regarding: ObjectReference {
            kind: "LinkConfig".into(),
            namespace: Some("config".into()),
            name: "eth9".into(),
            ..Default::default()
        },
        note: "mtu 99 is below 576".into(),
        event_type: EventType::Warning,
        deprecated_count: 1,
        deprecated_first_timestamp: now.into(),
        deprecated_last_timestamp: now.into(),
        series: None,
        related: None,
    };
    let ptr = Kind::new("config", Event::TYPE).pointer("eth9.1");
    state.client().create(Resource::new("config", "eth9.1", event.clone())).await.unwrap();
    let first = published(&cluster, "config", "eth9.1", 1).await;
    assert_eq!((first.reason.as_str(), first.regarding.name.as_str()), ("ReconcileError", "eth9"));

    event.deprecated_count = 3;
    let mut next = state.get(&ptr).await.unwrap().typed::<Event>().unwrap();
    *next.spec_mut() = event;
    state.update(next, None).await.unwrap();
    let repeated = published(&cluster, "config", "eth9.1", 3).await;
    assert_eq!(repeated.note, "mtu 99 is below 576");
    sink.stop();
    server.stop().await;
}

#[actix::test]
async fn an_event_about_a_mirror_names_the_cluster_object_it_mirrors() {
    let cluster = State::start();
    let api = KubernetesApi::new(&cluster).namespaces(["config"]).events();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();

    let state = State::start();
    // A mirror's spec is the whole cluster object.
    let object = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "config", "uid": "c1u5-7e2"},
    });
    let mirror = cosi_runtime::resource::DynamicResource::new(
        cosi_runtime::resource::Metadata::new(
            Kind::new("config", "ConfigMaps.core.k8s.io").pointer("settings"),
        ),
        object,
    );
    state.create(cosi_runtime::resource::AnyResource::from(mirror), None).await.unwrap();
    let sink = EventSink::mirrors_of(client, &state, ["config"], ["ConfigMaps.core.k8s.io"])
        .await
        .unwrap();
    let now = cosi_runtime::resource::Timestamp::now();
    let event = Event {
        event_time: now.into(),
        series: None,
        reporting_controller: "cosi-runtime/Settings".into(),
        reporting_instance: "node-1".into(),
        action: "Reconcile".into(),
        reason: "Applied".into(),
        regarding: ObjectReference {
            api_version: Some("core.k8s.io".into()),
            kind: "ConfigMap".into(),
            namespace: Some("config".into()),
            name: "settings".into(),
            uid: Some("state-uid".into()),
        },
        related: None,
        note: "applied".into(),
        event_type: EventType::Normal,
        deprecated_count: 1,
        deprecated_first_timestamp: now.into(),
        deprecated_last_timestamp: now.into(),
    };
    state.client().create(Resource::new("config", "settings.1", event)).await.unwrap();
    let published = published(&cluster, "config", "settings.1", 1).await;
    assert_eq!(published.regarding.uid.as_deref(), Some("c1u5-7e2"), "the cluster object's uid");
    assert_eq!(published.regarding.api_version.as_deref(), Some("v1"));
    sink.stop();
    server.stop().await;
}
