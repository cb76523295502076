//! A Kubernetes cluster as a sink: a `Sink` writes by server-side apply as
//! one field manager. The cluster is this crate's Kubernetes API server on
//! loopback over a state of its own.

use crate::kubectl::{Kubectl, kubectl_available};
use cosi_runtime::State;
use cosi_runtime::cluster::{Sink, SinkError};
use cosi_runtime::controller::{ReconcileError, TerminalError};
use cosi_runtime::kubernetes::{Expose, FIELD_MANAGER_ANNOTATION, KubernetesApi, KubernetesServer};
use cosi_runtime::prelude::Pointer;
use cosi_runtime::resource::{DynamicResource, Metadata};
use kube::api::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use serde_json::{Value, json};

const TYPE: &str = "Greetings.example.cosi.dev";

fn greetings() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"))
}

async fn serve(state: &State) -> (KubernetesServer, Client) {
    let expose = Expose::resource_type(TYPE, "v1").status_subresource().namespaces(["default"]);
    let api = KubernetesApi::new(state).expose(expose).unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    (server, client)
}

async fn greeting(state: &State, name: &str, whom: &str) {
    let md = Metadata::new(Pointer::new("default", TYPE, name));
    let r = DynamicResource::new(md, json!({"spec": {"name": whom}}));
    state.create(r.into_any(), None).await.unwrap();
}

async fn stored(state: &State, name: &str) -> Value {
    let r = state.get(&Pointer::new("default", TYPE, name)).await.unwrap();
    r.to_dynamic().unwrap().spec().clone()
}

#[actix::test]
async fn a_status_applied_by_the_sink_lands_on_the_object_and_kubectl_shows_it() {
    let state = State::start();
    let (server, client) = serve(&state).await;
    greeting(&state, "world", "world").await;
    let sink = Sink::new(client, "GreetingController");
    assert_eq!(sink.field_manager(), "GreetingController");

    let applied = sink
        .apply_status(&greetings(), Some("default"), "world", json!({"reply": "Hello, world!"}))
        .await
        .unwrap();
    assert_eq!(applied.data["status"]["reply"], "Hello, world!");
    // The same apply again changes nothing: no new resourceVersion, no
    // watch event (so a controller's own write does not wake it for ever).
    let again = sink
        .apply_status(&greetings(), Some("default"), "world", json!({"reply": "Hello, world!"}))
        .await
        .unwrap();
    assert_eq!(again.metadata.resource_version, applied.metadata.resource_version);
    assert_eq!(stored(&state, "world").await["status"]["reply"], "Hello, world!");
    assert_eq!(stored(&state, "world").await["spec"]["name"], "world", "the spec is kept");

    if kubectl_available(33) {
        let kubectl = Kubectl::new(server.local_addr());
        let (ok, yaml) =
            kubectl.run_joined(&["get", "greeting", "world", "-n", "default", "-o", "yaml"]).await;
        assert!(ok, "{yaml}");
        assert!(yaml.contains("status:\n  reply: Hello, world!"), "{yaml}");
    }
    server.stop().await;
}

#[actix::test]
async fn whole_objects_are_applied_created_then_changed_and_a_delete_of_nothing_is_done() {
    let state = State::start();
    let (server, client) = serve(&state).await;
    let sink = Sink::new(client, "Owner");
    let object =
        json!({"metadata": {"name": "made", "namespace": "default"}, "spec": {"name": "a"}});
    let made = sink.apply(&greetings(), object).await.unwrap();
    assert_eq!(made.data["spec"]["name"], "a");
    let object =
        json!({"metadata": {"name": "made", "namespace": "default"}, "spec": {"name": "b"}});
    sink.apply(&greetings(), object).await.unwrap();
    assert_eq!(stored(&state, "made").await["spec"]["name"], "b");
    let r = state.get(&Pointer::new("default", TYPE, "made")).await.unwrap();
    assert_eq!(r.metadata().annotations().get(FIELD_MANAGER_ANNOTATION), Some("Owner"));

    sink.delete(&greetings(), Some("default"), "made").await.unwrap();
    assert!(state.get(&Pointer::new("default", TYPE, "made")).await.unwrap_err().is_not_found());
    sink.delete(&greetings(), Some("default"), "made").await.unwrap();
    server.stop().await;
}

/// The error as a reconcile would return it with `?`.
fn reconcile_error(e: SinkError) -> ReconcileError {
    e.into()
}

#[actix::test]
async fn four_hundreds_are_terminal_and_conflicts_and_outages_are_retried() {
    let state = State::start();
    let (server, client) = serve(&state).await;
    greeting(&state, "world", "world").await;
    let sink = Sink::new(client.clone(), "GreetingController");

    // No such object: a 404 no retry can fix.
    let missing = sink.apply_status(&greetings(), Some("default"), "nobody", json!({})).await;
    let missing = missing.unwrap_err();
    assert_eq!(missing.code(), Some(404), "{missing}");
    assert!(missing.is_terminal());
    assert!(missing.to_string().contains("greetings/default/nobody/status"), "{missing}");
    assert!(TerminalError::is_terminal(&reconcile_error(missing)), "kept through `?`");

    // A type the cluster does not serve: 404 too.
    let unknown =
        ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Unknown"));
    let object = json!({"metadata": {"name": "x", "namespace": "default"}});
    assert!(sink.apply(&unknown, object).await.unwrap_err().is_terminal());

    // An object without a name is never sent.
    let nameless = sink.apply(&greetings(), json!({"metadata": {}})).await.unwrap_err();
    assert!(matches!(nameless, SinkError::InvalidObject { .. }), "{nameless}");

    // A write from a stale version: a 409 conflict, retried.
    let stale = json!({
        "metadata": {"name": "world", "namespace": "default", "resourceVersion": "1"},
        "spec": {"name": "everyone"},
    });
    let other = json!({"spec": {"name": "someone"}});
    let raw =
        kube::Api::<kube::api::DynamicObject>::namespaced_with(client, "default", &greetings());
    raw.patch("world", &Default::default(), &kube::api::Patch::Merge(&other)).await.unwrap();
    let conflict = sink.apply(&greetings(), stale).await.unwrap_err();
    assert_eq!(conflict.code(), Some(409), "{conflict}");
    assert!(!conflict.is_terminal());
    assert!(!TerminalError::is_terminal(&reconcile_error(conflict)));

    // The cluster gone: a transport error, retried.
    let url = server.url();
    server.stop().await;
    let gone = Sink::new(Client::try_from(Config::new(url.parse().unwrap())).unwrap(), "X");
    let down = gone.apply_status(&greetings(), Some("default"), "world", json!({})).await;
    let down = down.unwrap_err();
    assert!(matches!(down, SinkError::Transport { .. }), "{down}");
    assert!(!down.is_terminal());
}
