//! Writes through the Kubernetes API over real HTTP on loopback: create,
//! replace, merge / JSON / apply patches, delete, their errors (409, 422,
//! 403, 415) and the OpenAPI that `kubectl apply` reads; then the machine's
//! `kubectl` (skipped where there is none) applying, patching and deleting.

use std::net::SocketAddr;
use std::time::Duration;

use crate::kubectl::{Kubectl, kubectl_available};
use cosi_runtime::kubernetes::{Expose, FIELD_MANAGER_ANNOTATION, KubernetesApi, KubernetesServer};
use cosi_runtime::prelude::*;
use futures::StreamExt;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub(crate) struct LinkConfig {
    pub(crate) mtu: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bond: Option<String>,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

pub(crate) const LINKS: &str = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs";

pub(crate) fn ptr(id: &str) -> Pointer {
    Pointer::typed::<LinkConfig>("config", id).erase()
}

pub(crate) fn link(id: &str, mtu: u32) -> Resource<LinkConfig> {
    Resource::new("config", id, LinkConfig { mtu, bond: None })
}

pub(crate) fn api(state: &State) -> KubernetesApi {
    KubernetesApi::new(state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]).namespaces(["config"]))
        .unwrap()
        .expose(Expose::resource_type("Notes.misc.cosi.dev", "v1"))
        .unwrap()
}

pub(crate) async fn serve(api: KubernetesApi) -> (KubernetesServer, SocketAddr) {
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    (server, addr)
}

/// An answer: status and JSON body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Value,
}

impl Answer {
    pub(crate) fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }
}

/// One HTTP/1.1 request with a body, read to its end (bounded: 10 s).
pub(crate) async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
) -> Answer {
    send_accepting(addr, method, path, content_type, "application/json", body).await
}

/// [`send`] with an `Accept` header of its own.
pub(crate) async fn send_accepting(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    accept: &str,
    body: &str,
) -> Answer {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: {content_type}\r\nAccept: {accept}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange).await.expect("an answer");
    let text = String::from_utf8(raw).unwrap();
    let (head, mut body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let mut decoded = String::new();
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        while let Some((size, rest)) = body.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            decoded.push_str(&rest[..size]);
            body = &rest[size + 2..];
        }
    } else {
        decoded = body.to_owned();
    }
    let body =
        if decoded.is_empty() { Value::Null } else { serde_json::from_str(&decoded).unwrap() };
    Answer { status, body }
}

pub(crate) async fn post(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    send(addr, "POST", path, "application/json", &body.to_string()).await
}

pub(crate) async fn put(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    send(addr, "PUT", path, "application/json", &body.to_string()).await
}

pub(crate) async fn patch(
    addr: SocketAddr,
    path: &str,
    content_type: &str,
    body: &Value,
) -> Answer {
    send(addr, "PATCH", path, content_type, &body.to_string()).await
}

pub(crate) async fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, "GET", path, "application/json", "").await
}

fn object(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "net.cosi.dev/v1alpha1",
        "kind": "LinkConfig",
        "metadata": {"name": name, "namespace": "config", "labels": {"tier": "edge"}},
        "spec": spec,
    })
}

async fn mtu(state: &State, id: &str) -> u32 {
    state.get(&ptr(id)).await.unwrap().typed::<LinkConfig>().unwrap().spec().mtu
}

/// Waits (bounded) until the resource is gone from the state.
async fn destroyed(state: &State, id: &str) {
    let mut watch = state.watch_stream(&ptr(id)).await.unwrap();
    let gone = async {
        while let Some(event) = watch.next().await {
            if matches!(event, Event::Destroyed(_)) {
                return;
            }
        }
        panic!("the watch ended");
    };
    tokio::time::timeout(Duration::from_secs(10), gone).await.expect("destroyed within 10 s");
}

#[actix::test]
async fn post_creates_with_201_and_a_second_post_is_409_already_exists() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let created = post(addr, LINKS, &object("eth0", json!({"mtu": 1500}))).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["metadata"]["labels"]["tier"], "edge");
    let stored = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!(stored.typed::<LinkConfig>().unwrap().spec().mtu, 1500, "reads back typed");
    assert_eq!(stored.owner(), None);
    assert_eq!(
        created.body["metadata"]["resourceVersion"],
        stored.metadata().revision().to_string()
    );
    let again = post(addr, LINKS, &object("eth0", json!({"mtu": 9000}))).await;
    assert_eq!((again.status, again.reason()), (409, "AlreadyExists"));
    assert_eq!(mtu(&state, "eth0").await, 1500);
    let nameless = post(addr, LINKS, &json!({"spec": {"mtu": 1}})).await;
    assert_eq!((nameless.status, nameless.reason()), (422, "Invalid"));
    server.stop().await;
}

#[actix::test]
async fn put_with_the_current_resource_version_replaces_spec_and_labels() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let current = get(addr, &format!("{LINKS}/eth0")).await.body;
    let mut body = object("eth0", json!({"mtu": 9000}));
    body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"].clone();
    body["metadata"]["uid"] = current["metadata"]["uid"].clone();
    let replaced = put(addr, &format!("{LINKS}/eth0"), &body).await;
    assert_eq!(replaced.status, 200, "{:?}", replaced.body);
    assert_eq!(replaced.body["spec"]["mtu"], 9000);
    let stored = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!(stored.metadata().labels().get("tier"), Some("edge"));
    assert_eq!(mtu(&state, "eth0").await, 9000);
    let missing = put(addr, &format!("{LINKS}/eth9"), &object("eth9", json!({"mtu": 1}))).await;
    assert_eq!((missing.status, missing.reason()), (404, "NotFound"));
    server.stop().await;
}

#[actix::test]
async fn a_put_with_a_stale_resource_version_is_409_conflict_and_changes_nothing() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let read = get(addr, &format!("{LINKS}/eth0")).await.body;
    state
        .modify(&ptr("eth0"), |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = 1600, None)
        .await
        .unwrap();
    let before = state.get(&ptr("eth0")).await.unwrap();
    let mut body = object("eth0", json!({"mtu": 9000}));
    body["metadata"]["resourceVersion"] = read["metadata"]["resourceVersion"].clone();
    let stale = put(addr, &format!("{LINKS}/eth0"), &body).await;
    assert_eq!((stale.status, stale.reason()), (409, "Conflict"), "{:?}", stale.body);
    let mut wrong_uid = object("eth0", json!({"mtu": 9000}));
    wrong_uid["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let stale = put(addr, &format!("{LINKS}/eth0"), &wrong_uid).await;
    assert_eq!((stale.status, stale.reason()), (409, "Conflict"));
    let after = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!(after.metadata().revision(), before.metadata().revision(), "nothing written");
    assert_eq!(mtu(&state, "eth0").await, 1600);
    server.stop().await;
}

#[actix::test]
async fn a_spec_that_does_not_decode_is_422_invalid_and_changes_nothing() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let bad = post(addr, LINKS, &object("eth1", json!({"mtu": "jumbo"}))).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"), "{:?}", bad.body);
    assert!(bad.body["message"].as_str().unwrap().contains("spec"), "{:?}", bad.body);
    assert!(state.get(&ptr("eth1")).await.unwrap_err().is_not_found());
    let before = state.get(&ptr("eth0")).await.unwrap().metadata().revision();
    let bad = put(addr, &format!("{LINKS}/eth0"), &object("eth0", json!({"mtu": -1}))).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"));
    let merge = "application/merge-patch+json";
    let bad = patch(addr, &format!("{LINKS}/eth0"), merge, &json!({"spec": {"mtu": null}})).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"), "mtu is required: {:?}", bad.body);
    assert_eq!(state.get(&ptr("eth0")).await.unwrap().metadata().revision(), before);
    server.stop().await;
}

#[actix::test]
async fn an_unknown_field_is_422_under_strict_validation_and_dropped_otherwise() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let strict = format!("{LINKS}?fieldValidation=Strict");
    let bad = post(addr, &strict, &object("eth0", json!({"mtu": 1500, "speed": 10}))).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"));
    assert!(bad.body["message"].as_str().unwrap().contains("spec.speed"), "{:?}", bad.body);
    assert!(state.get(&ptr("eth0")).await.unwrap_err().is_not_found());
    let ok = post(addr, &strict, &object("eth0", json!({"mtu": 1500, "bond": null}))).await;
    assert_eq!(ok.status, 201, "a null optional field is known: {:?}", ok.body);
    let lax = post(addr, LINKS, &object("eth1", json!({"mtu": 1500, "speed": 10}))).await;
    assert_eq!(lax.status, 201);
    assert_eq!(lax.body["spec"], json!({"mtu": 1500}), "pruned");
    // A typo around the spec is an unknown field too: the spec would
    // otherwise be stored empty without a word.
    let mut typo = object("eth2", json!({"mtu": 1500}));
    typo["spce"] = typo["spec"].take();
    typo["metadata"]["label"] = json!({"tier": "core"});
    let bad = post(addr, &strict, &typo).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"));
    let message = bad.body["message"].as_str().unwrap();
    assert!(message.contains("unknown field \"spce\""), "{message}");
    assert!(message.contains("metadata.label"), "{message}");
    assert!(state.get(&ptr("eth2")).await.unwrap_err().is_not_found());
    server.stop().await;
}

#[actix::test]
async fn the_dynamic_form_accepts_any_object_spec() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let notes = "/apis/misc.cosi.dev/v1/namespaces/config/notes";
    let body = json!({"metadata": {"name": "n1"}, "spec": {"text": "hi", "any": [1, {"x": 2}]}});
    let created = post(addr, &format!("{notes}?fieldValidation=Strict"), &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let stored = state.get(&Pointer::new("config", "Notes.misc.cosi.dev", "n1")).await.unwrap();
    assert_eq!(stored.to_dynamic().unwrap().spec()["any"][1]["x"], 2);
    let scalar = post(addr, notes, &json!({"metadata": {"name": "n2"}, "spec": 3})).await;
    assert_eq!((scalar.status, scalar.reason()), (422, "Invalid"));
    server.stop().await;
}

#[actix::test]
async fn merge_and_json_patches_apply_and_a_failed_test_is_422_changing_nothing() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let path = format!("{LINKS}/eth0");
    let merged = patch(
        addr,
        &path,
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"tier": "core"}}, "spec": {"mtu": 9000}}),
    )
    .await;
    assert_eq!(merged.status, 200, "{:?}", merged.body);
    assert_eq!(mtu(&state, "eth0").await, 9000);
    let json_patch = "application/json-patch+json";
    let ops = json!([
        {"op": "test", "path": "/spec/mtu", "value": 9000},
        {"op": "replace", "path": "/spec/mtu", "value": 1400},
        {"op": "add", "path": "/metadata/labels/a~1b", "value": "x"}
    ]);
    let patched = patch(addr, &path, json_patch, &ops).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(mtu(&state, "eth0").await, 1400);
    let stored = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!(stored.metadata().labels().get("a/b"), Some("x"));
    assert_eq!(stored.metadata().labels().get("tier"), Some("core"));

    let before = stored.metadata().revision();
    let failing = json!([
        {"op": "replace", "path": "/spec/mtu", "value": 1},
        {"op": "test", "path": "/spec/mtu", "value": 9000}
    ]);
    let failed = patch(addr, &path, json_patch, &failing).await;
    assert_eq!((failed.status, failed.reason()), (422, "Invalid"), "{:?}", failed.body);
    let stale = json!({"metadata": {"resourceVersion": "1"}, "spec": {"mtu": 1}});
    let stale = patch(addr, &path, "application/merge-patch+json", &stale).await;
    assert_eq!((stale.status, stale.reason()), (409, "Conflict"));
    assert_eq!(state.get(&ptr("eth0")).await.unwrap().metadata().revision(), before);
    let missing = patch(addr, &format!("{LINKS}/eth9"), json_patch, &json!([])).await;
    assert_eq!(missing.status, 404);
    server.stop().await;
}

#[actix::test]
async fn strategic_merge_is_415_unsupported_media_type() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let smp = "application/strategic-merge-patch+json";
    let r = patch(addr, &format!("{LINKS}/eth0"), smp, &json!({"spec": {"mtu": 1}})).await;
    assert_eq!((r.status, r.reason()), (415, "UnsupportedMediaType"));
    assert_eq!(mtu(&state, "eth0").await, 1500);
    server.stop().await;
}

#[actix::test]
async fn apply_patch_creates_then_merges_and_records_its_field_manager() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let apply = "application/apply-patch+yaml";
    let path = format!("{LINKS}/eth0?fieldManager=ops&fieldValidation=Strict");
    let created = patch(addr, &path, apply, &object("eth0", json!({"mtu": 1500}))).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let updated = patch(addr, &path, apply, &object("eth0", json!({"mtu": 9000}))).await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    let stored = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!(stored.metadata().annotations().get(FIELD_MANAGER_ANNOTATION), Some("ops"));
    assert_eq!(mtu(&state, "eth0").await, 9000);
    let anonymous =
        patch(addr, &format!("{LINKS}/eth0"), apply, &object("eth0", json!({"mtu": 1}))).await;
    assert_eq!(anonymous.status, 400, "apply needs a field manager");
    server.stop().await;
}

#[actix::test]
async fn a_resource_owned_by_a_controller_is_403_forbidden_to_writes() {
    let state = State::start();
    state.client_as("LinkController").create(link("eth0", 1500)).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let path = format!("{LINKS}/eth0");
    let merge = "application/merge-patch+json";
    for answer in [
        put(addr, &path, &object("eth0", json!({"mtu": 1}))).await,
        patch(addr, &path, merge, &json!({"spec": {"mtu": 1}})).await,
        send(addr, "DELETE", &path, "application/json", "").await,
    ] {
        assert_eq!((answer.status, answer.reason()), (403, "Forbidden"), "{:?}", answer.body);
    }
    let stored = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!((stored.phase(), stored.version().get()), (Phase::Running, 1), "unchanged");
    server.stop().await;
}

#[actix::test]
async fn delete_without_finalizers_destroys_at_once() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let deleted = send(addr, "DELETE", &format!("{LINKS}/eth0"), "application/json", "").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(deleted.body["metadata"]["name"], "eth0");
    assert!(state.get(&ptr("eth0")).await.unwrap_err().is_not_found());
    let again = send(addr, "DELETE", &format!("{LINKS}/eth0"), "application/json", "").await;
    assert_eq!((again.status, again.reason()), (404, "NotFound"));
    server.stop().await;
}

#[actix::test]
async fn delete_with_a_finalizer_shows_a_deletion_timestamp_until_it_is_released() {
    let state = State::start();
    let mut r = link("eth0", 1500);
    r.metadata_mut().finalizers_mut().add("LinkController");
    state.create(r, None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let path = format!("{LINKS}/eth0");
    let body = json!({"propagationPolicy": "Background"}).to_string();
    let deleted = send(addr, "DELETE", &path, "application/json", &body).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string(), "{:?}", deleted.body);
    let read = get(addr, &path).await.body;
    assert!(read["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(state.get(&ptr("eth0")).await.unwrap().phase(), Phase::TearingDown);
    state.remove_finalizer(&ptr("eth0"), "LinkController").await.unwrap();
    destroyed(&state, "eth0").await;
    server.stop().await;
}

#[actix::test]
async fn openapi_v3_indexes_each_group_version_and_describes_its_kinds() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let index = get(addr, "/openapi/v3").await;
    assert_eq!(index.status, 200);
    let url = index.body["paths"]["apis/net.cosi.dev/v1alpha1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(url.starts_with("/openapi/v3/apis/net.cosi.dev/v1alpha1"), "{url}");
    let doc = get(addr, &url).await.body;
    let schema = &doc["components"]["schemas"]["dev.cosi.net.v1alpha1.LinkConfig"];
    assert_eq!(schema["x-kubernetes-group-version-kind"][0]["kind"], "LinkConfig");
    let item =
        &doc["paths"]["/apis/net.cosi.dev/v1alpha1/namespaces/{namespace}/linkconfigs/{name}"];
    assert_eq!(item["patch"]["x-kubernetes-group-version-kind"]["kind"], "LinkConfig");
    let params = item["patch"]["parameters"].as_array().unwrap();
    assert!(params.iter().any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
    assert_eq!(get(addr, "/openapi/v3/apis/nope.dev/v1").await.status, 404);
    server.stop().await;
}

// ---- kubectl ----------------------------------------------------------------

const MANIFEST: &str = "apiVersion: net.cosi.dev/v1alpha1
kind: LinkConfig
metadata:
  name: eth5
  namespace: config
  labels:
    tier: edge
spec:
  mtu: MTU
";

/// `kubectl apply -f` twice (create, then a merge patch), `apply
/// --server-side`, `patch --type merge`, `patch --type json`, and a
/// strategic patch refused with 415; all with default validation.
async fn kubectl_applies_and_patches(minor: u32) {
    let state = State::start();
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    let file = kubectl.file("a.yaml", &MANIFEST.replace("MTU", "1500"));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    assert!(out.contains("created"), "{out}");
    assert_eq!(mtu(&state, "eth5").await, 1500);
    let file = kubectl.file("a.yaml", &MANIFEST.replace("MTU", "9000"));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    assert!(out.contains("configured"), "{out}");
    assert_eq!(mtu(&state, "eth5").await, 9000);

    let bogus = kubectl.file("b.yaml", &MANIFEST.replace("MTU", "1500\n  speed: 10"));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &bogus]).await;
    assert!(!ok && out.contains("speed"), "strict validation: {out}");
    assert_eq!(mtu(&state, "eth5").await, 9000);

    let ssa = kubectl.file("c.yaml", &MANIFEST.replace("MTU", "1400").replace("eth5", "eth6"));
    let (ok, out) = kubectl.run_joined(&["apply", "--server-side", "-f", &ssa]).await;
    assert!(ok, "{out}");
    assert_eq!(mtu(&state, "eth6").await, 1400);
    let ssa = kubectl.file("c.yaml", &MANIFEST.replace("MTU", "1300").replace("eth5", "eth6"));
    let (ok, out) = kubectl.run_joined(&["apply", "--server-side", "-f", &ssa]).await;
    assert!(ok, "{out}");
    assert_eq!(mtu(&state, "eth6").await, 1300);

    let merge = r#"{"spec":{"mtu":9100}}"#;
    let (ok, out) = kubectl
        .run_joined(&[
            "patch",
            "linkconfig",
            "eth5",
            "-n",
            "config",
            "--type",
            "merge",
            "-p",
            merge,
        ])
        .await;
    assert!(ok, "{out}");
    assert_eq!(mtu(&state, "eth5").await, 9100);
    let ops = r#"[{"op":"replace","path":"/spec/mtu","value":9200}]"#;
    let (ok, out) = kubectl
        .run_joined(&["patch", "lc", "eth5", "-n", "config", "--type", "json", "-p", ops])
        .await;
    assert!(ok, "{out}");
    assert_eq!(mtu(&state, "eth5").await, 9200);
    let (ok, out) = kubectl
        .run_joined(&["patch", "lc", "eth5", "-n", "config", "--type", "strategic", "-p", merge])
        .await;
    assert!(!ok, "{out}");
    assert!(out.contains("415") || out.contains("not supported"), "{out}");
    assert_eq!(mtu(&state, "eth5").await, 9200);
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_33_applies_patches_and_is_refused_strategic_merge() {
    if kubectl_available(33) {
        kubectl_applies_and_patches(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_applies_patches_and_is_refused_strategic_merge() {
    if kubectl_available(27) {
        kubectl_applies_and_patches(27).await;
    }
}

/// Holds a finalizer on every `LinkConfig` and lets go when it is torn down.
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
        finalizer(cx, ptr, async |_: Resource<LinkConfig>| Ok(Outcome::Done), async |_| Ok(true))
            .await
    }
}

async fn kubectl_deletes_once_the_controller_lets_go(minor: u32) {
    let runtime = Runtime::start();
    runtime.register(|| Holder).await.unwrap();
    let state = runtime.state();
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    let file = kubectl.file("a.yaml", &MANIFEST.replace("MTU", "1500"));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    runtime.settled().await;
    let held = state.get(&ptr("eth5")).await.unwrap();
    assert_eq!(held.metadata().finalizers().to_vec(), ["Holder"]);
    let (ok, out) = kubectl.run_joined(&["delete", "linkconfig", "eth5", "-n", "config"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("deleted"), "{out}");
    // kubectl waits for DELETED: the controller let go and the resource is gone.
    assert!(state.get(&ptr("eth5")).await.unwrap_err().is_not_found());
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_33_delete_returns_once_a_controller_releases_its_finalizer() {
    if kubectl_available(33) {
        kubectl_deletes_once_the_controller_lets_go(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_delete_returns_once_a_controller_releases_its_finalizer() {
    if kubectl_available(27) {
        kubectl_deletes_once_the_controller_lets_go(27).await;
    }
}
