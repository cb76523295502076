//! The greeting operator (`examples/greeting_operator/`) against this
//! crate's own Kubernetes API server, driven with kubectl as a user would
//! drive it on a cluster: `kubectl apply` a greeting, and `kubectl get -o
//! yaml` shows the operator's `status.reply`; a change to the spec changes
//! the reply; `kubectl delete` removes it, and its mirror goes with it.
//! Skipped, loudly, where kubectl is missing (never on CI).

use std::time::Duration;

use crate::kubectl::{Kubectl, kubectl_available};
use crate::operator;
use cosi_runtime::kubernetes::KubernetesApi;
use cosi_runtime::prelude::{Kind, LabelQuery, Pointer, Spec, WatchOptions};
use cosi_runtime::{Runtime, State};
use futures::StreamExt;

const BOUND: Duration = Duration::from_secs(30);

/// Waits (bounded, on the cluster state's watch) until the greeting `name`
/// has `status.reply == reply`.
async fn replied(cluster: &State, name: &str, reply: &str) {
    let kind = Kind::new("default", operator::Greeting::TYPE);
    let ptr = Pointer::new("default", operator::Greeting::TYPE, name);
    let mut events = cluster
        .watch_kind_stream(&kind, LabelQuery::default(), WatchOptions::default())
        .await
        .unwrap();
    let found = tokio::time::timeout(BOUND, async {
        loop {
            if let Ok(r) = cluster.get(&ptr).await
                && r.to_dynamic().unwrap().spec()["status"]["reply"] == reply
            {
                return;
            }
            events.next().await.expect("the watch goes on");
        }
    });
    assert!(found.await.is_ok(), "greeting/{name} never replied {reply:?}");
}

fn manifest(salutation: Option<&str>) -> String {
    let salutation = salutation.map(|s| format!("\n  salutation: {s}")).unwrap_or_default();
    format!(
        "apiVersion: example.cosi.dev/v1\nkind: Greeting\nmetadata:\n  name: world\n  \
         namespace: default\nspec:\n  name: world{salutation}\n"
    )
}

#[actix::test]
async fn kubectl_applies_a_greeting_and_sees_the_operators_reply_in_its_status() {
    if !kubectl_available(33) {
        return;
    }
    // The apiserver: the CRD served with a status subresource, as crd.yaml declares it.
    let cluster = State::start();
    let api =
        KubernetesApi::new(&cluster).expose(operator::exposed().namespaces(["default"])).unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();

    let runtime = Runtime::start();
    let (_source, mirror) = operator::start(&runtime, client, "default").await.unwrap();
    tokio::time::timeout(BOUND, mirror.synced()).await.unwrap().unwrap();

    let kubectl = Kubectl::new(server.local_addr());
    let file = kubectl.file("world.yaml", &manifest(None));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    replied(&cluster, "world", "Hello, world!").await;
    let (ok, yaml) =
        kubectl.run_joined(&["get", "greeting", "world", "-n", "default", "-o", "yaml"]).await;
    assert!(ok, "{yaml}");
    assert!(yaml.contains("reply: Hello, world!"), "{yaml}");
    assert!(yaml.contains("observedGeneration:"), "{yaml}");

    let file = kubectl.file("world.yaml", &manifest(Some("Good evening")));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    replied(&cluster, "world", "Good evening, world!").await;

    let (ok, out) = kubectl.run_joined(&["delete", "greeting", "world", "-n", "default"]).await;
    assert!(ok, "{out}");
    // The mirror goes too: its watch ends in `Destroyed`.
    let ptr = Pointer::typed::<operator::Greeting>("default", "world");
    let mut watch = runtime.state().watch_stream(&ptr).await.unwrap();
    let gone = tokio::time::timeout(BOUND, async {
        while let Some(event) = watch.next().await {
            if matches!(event, cosi_runtime::prelude::Event::Destroyed(_)) {
                return;
            }
        }
    });
    assert!(gone.await.is_ok(), "the mirror is still there");
    runtime.settled_within(BOUND).await.unwrap();
    assert!(runtime.state().get(&ptr).await.unwrap_err().is_not_found());
    assert!(runtime.health().await.is_healthy(), "{:?}", runtime.health().await);
    server.stop().await;
}

/// `crd.yaml` is the CustomResourceDefinition the operator's types make
/// (`cargo run --example greeting_operator --features kubernetes,kubernetes-api -- --crd`).
#[test]
fn the_committed_crd_is_the_one_the_types_make() {
    let text = include_str!("../../examples/greeting_operator/crd.yaml");
    let json: String = text.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    let committed: serde_json::Value =
        serde_json::from_str(&json).expect("crd.yaml is JSON below its comments");
    assert_eq!(committed, operator::exposed().crd().unwrap(), "regenerate crd.yaml with --crd");
}

/// The CRD the types make reads as k8s-openapi's `CustomResourceDefinition`
/// and back unchanged, and is structural: no free-form object where the
/// types have fields.
#[test]
fn the_generated_crd_round_trips_through_k8s_openapi_and_is_structural() {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd = operator::exposed().crd().unwrap();
    let typed: CustomResourceDefinition = serde_json::from_value(crd.clone()).unwrap();
    assert_eq!(serde_json::to_value(&typed).unwrap(), crd);
    let version = &typed.spec.versions[0];
    let schema = version.schema.as_ref().unwrap().open_api_v3_schema.as_ref().unwrap();
    let properties = schema.properties.as_ref().unwrap();
    for part in ["spec", "status"] {
        let part = &properties[part];
        assert_eq!(part.type_.as_deref(), Some("object"));
        assert!(part.x_kubernetes_preserve_unknown_fields.is_none(), "{part:?}");
        assert!(!part.properties.as_ref().unwrap().is_empty());
    }
    assert!(!crd.to_string().contains("$ref"));
    assert!(version.subresources.as_ref().unwrap().status.is_some());
}
