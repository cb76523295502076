//! The status subresource ([`Expose::status_subresource`]) over real HTTP on
//! loopback: kube-rs `patch_status` (apply and merge), `replace_status`,
//! `get_status`, object writes that keep the stored status, the raw paths'
//! errors (404 without the subresource, 405, 409, 422, 403), discovery,
//! OpenAPI and Table columns over `.status`; `kubectl get -o yaml` and
//! `kubectl patch --subresource=status`. Also JSON patches of
//! `metadata.ownerReferences`.

use std::net::SocketAddr;
use std::time::Duration;

use crate::kubectl::{Kubectl, kubectl_available};
use cosi_runtime::kubernetes::{
    Expose, FIELD_MANAGER_ANNOTATION, GENERATION_OFFSET_ANNOTATION, KubernetesApi,
    KubernetesServer, OWNER_REFERENCES_ANNOTATION,
};
use cosi_runtime::prelude::*;
use futures::{Stream, StreamExt};
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::Discovery;
use kube::runtime::watcher::{self, Event};
use kube::{Client, Config, ResourceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct GreetingSpec {
    text: String,
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct GreetingStatus {
    shown: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// What a kube-rs `#[derive(CustomResource)]` struct holds besides its metadata.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Greeting {
    spec: GreetingSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<GreetingStatus>,
}

impl Spec for Greeting {
    const TYPE: &'static str = "Greetings.demo.cosi.dev";
}

/// A type without a status subresource.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkConfig {
    mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.demo.cosi.dev";
}

const GREETINGS: &str = "/apis/demo.cosi.dev/v1/namespaces/config/greetings";
const LINKS: &str = "/apis/demo.cosi.dev/v1/namespaces/config/linkconfigs";
const NOTES: &str = "/apis/demo.cosi.dev/v1/namespaces/config/notes";

fn api(state: &State) -> KubernetesApi {
    KubernetesApi::new(state)
        .expose(
            Expose::of::<Greeting>("v1")
                .status_subresource()
                .short_names(["gr"])
                .column("Text", ".spec.text")
                .column("Shown", ".status.shown")
                .namespaces(["config"]),
        )
        .unwrap()
        .expose(Expose::of::<LinkConfig>("v1").column("MTU", ".spec.mtu"))
        .unwrap()
        .expose(Expose::resource_type("Notes.demo.cosi.dev", "v1").status_subresource())
        .unwrap()
}

async fn serve(api: KubernetesApi) -> (KubernetesServer, SocketAddr) {
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    (server, addr)
}

fn greeting_resource() -> ApiResource {
    let gvk = GroupVersionKind::gvk("demo.cosi.dev", "v1", "Greeting");
    ApiResource::from_gvk_with_plural(&gvk, "greetings")
}

fn greeting(id: &str, text: &str, shown: Option<u32>) -> Resource<Greeting> {
    let status = shown.map(|shown| GreetingStatus { shown, note: None });
    Resource::new("config", id, Greeting { spec: GreetingSpec { text: text.into() }, status })
}

/// What the state holds of `config/{id}`.
async fn stored(state: &State, id: &str) -> Resource<Greeting> {
    state.get(&Pointer::typed::<Greeting>("config", id)).await.unwrap()
}

fn status_of(state: &Resource<Greeting>) -> Option<u32> {
    state.spec().status.as_ref().map(|s| s.shown)
}

fn api_code(result: Result<DynamicObject, kube::Error>) -> u16 {
    match result {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// An answer: status and JSON body.
#[derive(Debug)]
struct Answer {
    status: u16,
    body: Value,
}

impl Answer {
    fn reason(&self) -> &str {
        self.body["reason"].as_str().unwrap_or_default()
    }
}

/// One HTTP/1.1 request, read to its end (bounded: 10 s).
async fn send(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &str) -> Answer {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{headers}Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(10), exchange).await.expect("an answer");
    let text = String::from_utf8(raw).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    assert!(!head.to_ascii_lowercase().contains("chunked"), "no streaming here: {head}");
    let body = if body.is_empty() { Value::Null } else { serde_json::from_str(body).unwrap() };
    Answer { status, body }
}

async fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, "GET", path, "", "").await
}

async fn put(addr: SocketAddr, path: &str, body: &Value) -> Answer {
    send(addr, "PUT", path, "Content-Type: application/json\r\n", &body.to_string()).await
}

async fn patch(addr: SocketAddr, path: &str, content_type: &str, body: &Value) -> Answer {
    let headers = format!("Content-Type: {content_type}\r\n");
    send(addr, "PATCH", path, &headers, &body.to_string()).await
}

const MERGE: &str = "application/merge-patch+json";
const JSON: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// The watcher's next event; 20 s of silence fail the test.
async fn next<S>(events: &mut S) -> Event<DynamicObject>
where
    S: Stream<Item = Result<Event<DynamicObject>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(20), events.next())
        .await
        .expect("a watcher event within 20 s")
        .expect("the watcher never ends")
        .expect("no watcher error")
}

#[actix::test]
async fn kube_rs_writes_the_status_subresource_and_object_writes_keep_the_status() {
    let state = State::start();
    let (server, _) = serve(api(&state)).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();

    // Discovery lists the subresource.
    let discovery = Discovery::new(client.clone()).filter(&["demo.cosi.dev"]).run().await.unwrap();
    let gvk = GroupVersionKind::gvk("demo.cosi.dev", "v1", "Greeting");
    let (_, caps) = discovery.resolve_gvk(&gvk).expect("discovery finds Greeting");
    let subresources: Vec<_> = caps.subresources.iter().map(|(r, _)| r.plural.clone()).collect();
    assert_eq!(subresources, ["status"], "{caps:?}");
    let (_, status_caps) = &caps.subresources[0];
    for verb in ["get", "patch", "update"] {
        assert!(status_caps.supports_operation(verb), "{verb}: {status_caps:?}");
    }

    let greetings: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "config", &greeting_resource());
    let mut events = watcher::watcher(greetings.clone(), watcher::Config::default()).boxed();
    assert!(matches!(next(&mut events).await, Event::Init));
    assert!(matches!(next(&mut events).await, Event::InitDone));

    // A create may not set the status: it is dropped.
    let object = DynamicObject::new("hello", &greeting_resource())
        .data(json!({"spec": {"text": "hi"}, "status": {"shown": 9}}));
    let created = greetings.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(created.data["spec"]["text"], "hi");
    assert!(created.data.get("status").is_none(), "{:?}", created.data);
    assert_eq!(status_of(&stored(&state, "hello").await), None);
    assert!(matches!(next(&mut events).await, Event::Apply(_)));

    // Server-side apply of the status.
    let applied = json!({
        "apiVersion": "demo.cosi.dev/v1",
        "kind": "Greeting",
        "status": {"shown": 1},
    });
    let params = PatchParams::apply("greeter");
    let written = greetings.patch_status("hello", &params, &Patch::Apply(&applied)).await.unwrap();
    assert_eq!(written.data["status"], json!({"shown": 1}));
    assert_eq!(written.data["spec"], json!({"text": "hi"}), "the spec is kept");
    let kept = stored(&state, "hello").await;
    assert_eq!(status_of(&kept), Some(1));
    assert_eq!(kept.metadata().annotations().get(FIELD_MANAGER_ANNOTATION), None);
    match next(&mut events).await {
        Event::Apply(o) => assert_eq!(o.data["status"]["shown"], 1),
        other => panic!("{other:?}"),
    }
    // Its generation stays (status writes leave it, as on the apiserver).
    assert_eq!(written.metadata.generation, created.metadata.generation);

    // A merge patch of the status, and a read of it.
    let merge = json!({"status": {"note": "first"}});
    let params = PatchParams::default();
    greetings.patch_status("hello", &params, &Patch::Merge(&merge)).await.unwrap();
    let read = greetings.get_status("hello").await.unwrap();
    assert_eq!(read.data["status"], json!({"shown": 1, "note": "first"}));
    assert_eq!(read.data["spec"]["text"], "hi");
    assert!(matches!(next(&mut events).await, Event::Apply(_)));

    // replace_status takes the status alone: the spec and labels sent are not written.
    let mut whole = read.clone();
    whole.data["status"] = json!({"shown": 5});
    whole.data["spec"]["text"] = json!("ignored");
    whole.labels_mut().insert("ignored".into(), "yes".into());
    let replaced = greetings.replace_status("hello", &PostParams::default(), &whole).await.unwrap();
    assert_eq!(replaced.data["status"], json!({"shown": 5}));
    assert_eq!(replaced.data["spec"]["text"], "hi");
    assert!(replaced.labels().is_empty(), "{:?}", replaced.labels());
    let kept = stored(&state, "hello").await;
    assert_eq!((kept.spec().spec.text.as_str(), status_of(&kept)), ("hi", Some(5)));
    assert!(matches!(next(&mut events).await, Event::Apply(_)));
    // From a stale resourceVersion: 409, nothing written.
    let mut stale = whole.clone();
    stale.data["status"] = json!({"shown": 6});
    let stale = greetings.replace_status("hello", &PostParams::default(), &stale).await;
    assert_eq!(api_code(stale), 409);
    assert_eq!(status_of(&stored(&state, "hello").await), Some(5));

    // Object writes take the spec and keep the stored status: merge...
    let merge = json!({"spec": {"text": "hey"}, "status": {"shown": 99}});
    let patched = greetings.patch("hello", &params, &Patch::Merge(&merge)).await.unwrap();
    assert_eq!(
        (&patched.data["spec"]["text"], &patched.data["status"]["shown"]),
        (&json!("hey"), &json!(5))
    );
    // ...apply...
    let mut apply = applied.clone();
    apply["metadata"] = json!({"name": "hello"});
    apply["spec"] = json!({"text": "yo"});
    apply["status"] = json!({"shown": 98});
    let apply = greetings.patch("hello", &PatchParams::apply("m"), &Patch::Apply(&apply)).await;
    assert_eq!(apply.unwrap().data["status"]["shown"], 5);
    // ...replace.
    let mut whole = greetings.get("hello").await.unwrap();
    whole.data["spec"]["text"] = json!("hello");
    whole.data["status"]["shown"] = json!(97);
    let replaced = greetings.replace("hello", &PostParams::default(), &whole).await.unwrap();
    assert_eq!(replaced.data["status"]["shown"], 5);
    let kept = stored(&state, "hello").await;
    assert_eq!((kept.spec().spec.text.as_str(), status_of(&kept)), ("hello", Some(5)));
    // An apply that creates stores no status either.
    let mut fresh = applied.clone();
    fresh["metadata"] = json!({"name": "new"});
    fresh["spec"] = json!({"text": "new"});
    let params = PatchParams::apply("m");
    let created = greetings.patch("new", &params, &Patch::Apply(&fresh)).await.unwrap();
    assert!(created.data.get("status").is_none(), "{:?}", created.data);
    assert_eq!(status_of(&stored(&state, "new").await), None);

    // Status writes to a missing object: 404, applies included; nothing created.
    let missing = greetings.patch_status("nope", &params, &Patch::Apply(&applied)).await;
    assert_eq!(api_code(missing), 404);
    let merge = json!({"status": {"shown": 1}});
    let params = PatchParams::default();
    let missing = greetings.patch_status("nope", &params, &Patch::Merge(&merge)).await;
    assert_eq!(api_code(missing), 404);
    let mut other = whole.clone();
    other.metadata.name = Some("nope".into());
    other.metadata.resource_version = None;
    let missing = greetings.replace_status("nope", &PostParams::default(), &other).await;
    assert_eq!(api_code(missing), 404);
    assert_eq!(api_code(greetings.get_status("nope").await), 404);
    assert!(state.get(&Pointer::typed::<Greeting>("config", "nope")).await.is_err());
    drop(events);
    server.stop().await;
}

#[actix::test]
async fn generation_moves_on_spec_changes_only_as_on_the_apiserver() {
    let state = State::start();
    let (server, _) = serve(api(&state)).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let greetings: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), "config", &greeting_resource());
    let generation = |o: &DynamicObject| o.metadata.generation.unwrap();
    let version = |o: &DynamicObject| o.metadata.resource_version.clone().unwrap();

    let object =
        DynamicObject::new("hello", &greeting_resource()).data(json!({"spec": {"text": "hi"}}));
    let created = greetings.create(&PostParams::default(), &object).await.unwrap();
    assert_eq!(generation(&created), 1);

    // The operator's pattern: status writes that record observedGeneration
    // move the resourceVersion, never the generation it compares with.
    let params = PatchParams::default();
    let mut last = created.clone();
    for shown in 1..=3 {
        let status = json!({"status": {"shown": shown}});
        let written =
            greetings.patch_status("hello", &params, &Patch::Merge(&status)).await.unwrap();
        assert_eq!(generation(&written), 1, "status write {shown}");
        assert_ne!(version(&written), version(&last), "a status write is a write");
        last = written;
    }
    // Labels, annotations and finalizers alone leave it too.
    let labels = json!({"metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}}});
    let labelled = greetings.patch("hello", &params, &Patch::Merge(&labels)).await.unwrap();
    assert_eq!(generation(&labelled), 1);
    assert_ne!(version(&labelled), version(&last));

    // A spec change moves it by one, however many writes came before.
    let spec = json!({"spec": {"text": "hey"}});
    let changed = greetings.patch("hello", &params, &Patch::Merge(&spec)).await.unwrap();
    assert_eq!(generation(&changed), 2);
    let status = json!({"status": {"shown": 4}});
    let written = greetings.patch_status("hello", &params, &Patch::Merge(&status)).await.unwrap();
    assert_eq!(generation(&written), 2);

    // The count is the server's: never served, and a client's value is ignored.
    let read = greetings.get("hello").await.unwrap();
    assert_eq!(generation(&read), 2);
    assert!(
        !read.annotations().contains_key(GENERATION_OFFSET_ANNOTATION),
        "{:?}",
        read.annotations()
    );
    let mut forged = read.clone();
    forged.annotations_mut().insert(GENERATION_OFFSET_ANNOTATION.into(), "100".into());
    forged.data["spec"]["text"] = json!("forged");
    let replaced = greetings.replace("hello", &PostParams::default(), &forged).await.unwrap();
    assert_eq!(generation(&replaced), 3, "a spec change through replace");
    assert!(!replaced.annotations().contains_key(GENERATION_OFFSET_ANNOTATION));

    // A write through the state (a controller's) moves it whatever it
    // changed: a spec change made in process is never hidden from clients.
    let ptr = Pointer::typed::<Greeting>("config", "hello");
    state
        .modify(&ptr, |g: &mut Resource<Greeting>| g.spec_mut().status = None, None)
        .await
        .unwrap();
    assert_eq!(generation(&greetings.get("hello").await.unwrap()), 4);
    let written = greetings.patch_status("hello", &params, &Patch::Merge(&status)).await.unwrap();
    assert_eq!(generation(&written), 4);

    // Without a status subresource the whole value is the spec: a label
    // write leaves the generation, a spec write moves it.
    let link_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("demo.cosi.dev", "v1", "LinkConfig"),
        "linkconfigs",
    );
    let links: Api<DynamicObject> = Api::namespaced_with(client, "config", &link_resource);
    let link = DynamicObject::new("eth0", &link_resource).data(json!({"spec": {"mtu": 1500}}));
    let created = links.create(&PostParams::default(), &link).await.unwrap();
    assert_eq!(generation(&created), 1);
    let labels = json!({"metadata": {"labels": {"site": "lab"}}});
    let labelled = links.patch("eth0", &params, &Patch::Merge(&labels)).await.unwrap();
    assert_eq!(generation(&labelled), 1);
    let spec = json!({"spec": {"mtu": 9000}});
    let changed = links.patch("eth0", &params, &Patch::Merge(&spec)).await.unwrap();
    assert_eq!(generation(&changed), 2);
    server.stop().await;
}

#[actix::test]
async fn status_paths_answer_like_the_apiserver_and_types_without_the_subresource_are_unchanged() {
    let state = State::start();
    state.create(greeting("g1", "hi", Some(1)), None).await.unwrap();
    state.create(Resource::new("config", "eth0", LinkConfig { mtu: 1500 }), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;

    // Served objects: spec and status apart.
    let g1 = get(addr, &format!("{GREETINGS}/g1")).await;
    assert_eq!(g1.status, 200, "{:?}", g1.body);
    assert_eq!(g1.body["spec"], json!({"text": "hi"}));
    assert_eq!(g1.body["status"], json!({"shown": 1}));
    assert_eq!(get(addr, &format!("{GREETINGS}/g1/status")).await.body, g1.body);
    let eth0 = get(addr, &format!("{LINKS}/eth0")).await;
    assert_eq!(eth0.body["spec"], json!({"mtu": 1500}));
    assert!(eth0.body.get("status").is_none(), "{:?}", eth0.body);

    // A type without the subresource: 404 whatever the method, nothing written.
    let path = format!("{LINKS}/eth0/status");
    for answer in [
        get(addr, &path).await,
        put(addr, &path, &json!({"metadata": {"name": "eth0"}, "spec": {"mtu": 1}})).await,
        patch(addr, &path, MERGE, &json!({"spec": {"mtu": 1}})).await,
        send(addr, "DELETE", &path, "", "").await,
        send(addr, "POST", &path, "", "{}").await,
    ] {
        assert_eq!((answer.status, answer.reason()), (404, "NotFound"), "{:?}", answer.body);
    }
    // Its object writes ignore a status, as they always did.
    let written = patch(addr, &format!("{LINKS}/eth0"), MERGE, &json!({"status": {"x": 1}})).await;
    assert_eq!(written.status, 200, "{:?}", written.body);
    assert!(written.body.get("status").is_none(), "{:?}", written.body);
    // A type that has it: other methods are 405.
    let path = format!("{GREETINGS}/g1/status");
    for method in ["DELETE", "POST"] {
        let answer = send(addr, method, &path, "", "{}").await;
        assert_eq!((answer.status, answer.reason()), (405, "MethodNotAllowed"), "{method}");
    }

    // A JSON patch on /status writes the status only.
    let ops = json!([
        {"op": "test", "path": "/status/shown", "value": 1},
        {"op": "replace", "path": "/status/shown", "value": 7},
        {"op": "replace", "path": "/spec/text", "value": "ignored"},
        {"op": "add", "path": "/metadata/labels", "value": {"ignored": "yes"}},
    ]);
    let answer = patch(addr, &path, JSON, &ops).await;
    assert_eq!(answer.status, 200, "{:?}", answer.body);
    assert_eq!(answer.body["status"]["shown"], 7);
    assert_eq!(answer.body["spec"]["text"], "hi");
    assert!(answer.body["metadata"].get("labels").is_none(), "{:?}", answer.body);
    let failed = json!([{"op": "test", "path": "/status/shown", "value": 1}]);
    assert_eq!(patch(addr, &path, JSON, &failed).await.status, 422);
    // A resourceVersion the patch sets is a precondition.
    let stale = json!({"metadata": {"resourceVersion": "1"}, "status": {"shown": 8}});
    assert_eq!(patch(addr, &path, MERGE, &stale).await.reason(), "Conflict");
    // Validation of the status: the type's (422), unknown fields under Strict.
    let bad = patch(addr, &path, MERGE, &json!({"status": {"shown": "many"}})).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"), "{:?}", bad.body);
    let strict = format!("{path}?fieldValidation=Strict");
    let unknown = patch(addr, &strict, MERGE, &json!({"status": {"bogus": 1}})).await;
    assert_eq!(unknown.status, 422, "{:?}", unknown.body);
    assert!(
        unknown.body["message"].as_str().unwrap().contains("status.bogus"),
        "{:?}",
        unknown.body
    );
    let dropped = patch(addr, &path, MERGE, &json!({"status": {"bogus": 1}})).await;
    assert_eq!(dropped.body["status"], json!({"shown": 7}), "dropped without Strict");
    // An apply needs a field manager; a status of null clears it.
    let apply =
        json!({"apiVersion": "demo.cosi.dev/v1", "kind": "Greeting", "status": {"shown": 2}});
    assert_eq!(patch(addr, &path, APPLY, &apply).await.status, 400);
    let cleared = patch(addr, &path, MERGE, &json!({"status": null})).await;
    assert!(cleared.body.get("status").is_none(), "{:?}", cleared.body);
    assert_eq!(status_of(&stored(&state, "g1").await), None);
    assert_eq!(stored(&state, "g1").await.spec().spec.text, "hi");

    // The dynamic form: spec and status objects.
    let note = json!({"metadata": {"name": "n1"}, "spec": {"a": 1}, "status": {"b": 2}});
    let created = send(addr, "POST", NOTES, "", &note.to_string()).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert!(created.body.get("status").is_none(), "{:?}", created.body);
    let set = put(addr, &format!("{NOTES}/n1/status"), &note).await;
    assert_eq!((set.status, &set.body["status"]), (200, &json!({"b": 2})), "{:?}", set.body);
    let bad = patch(addr, &format!("{NOTES}/n1/status"), MERGE, &json!({"status": 3})).await;
    assert_eq!((bad.status, bad.reason()), (422, "Invalid"), "{:?}", bad.body);

    // A resource a controller owns: 403 to status writes too.
    state.client_as("Greeter").create(greeting("owned", "hi", Some(1))).await.unwrap();
    let owned = format!("{GREETINGS}/owned/status");
    for answer in [
        patch(addr, &owned, MERGE, &json!({"status": {"shown": 2}})).await,
        put(addr, &owned, &json!({"metadata": {"name": "owned"}, "status": {"shown": 2}})).await,
    ] {
        assert_eq!((answer.status, answer.reason()), (403, "Forbidden"), "{:?}", answer.body);
    }
    assert_eq!(status_of(&stored(&state, "owned").await), Some(1));
    assert_eq!(get(addr, &owned).await.status, 200, "reads are open");
    server.stop().await;
}

#[actix::test]
async fn discovery_openapi_and_table_columns_know_the_status() {
    let state = State::start();
    state.create(greeting("g1", "hi", Some(3)), None).await.unwrap();
    state.create(greeting("g2", "yo", None), None).await.unwrap();
    state.create(Resource::new("config", "eth0", LinkConfig { mtu: 1500 }), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;

    let resources = get(addr, "/apis/demo.cosi.dev/v1").await.body;
    let named = |name: &str| {
        resources["resources"].as_array().unwrap().iter().find(|r| r["name"] == name).cloned()
    };
    assert_eq!(named("greetings/status").unwrap()["verbs"], json!(["get", "patch", "update"]));
    assert_eq!(named("greetings/status").unwrap()["kind"], "Greeting");
    assert!(named("notes/status").is_some());
    assert!(named("linkconfigs/status").is_none(), "{resources}");

    let doc = get(addr, "/openapi/v3/apis/demo.cosi.dev/v1").await.body;
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["dev.cosi.demo.v1.Greeting"]["properties"]["status"]["type"], "object");
    assert!(schemas["dev.cosi.demo.v1.LinkConfig"]["properties"].get("status").is_none());
    let status_path =
        &doc["paths"]["/apis/demo.cosi.dev/v1/namespaces/{namespace}/greetings/{name}/status"];
    let params = status_path["patch"]["parameters"].as_array().unwrap();
    assert!(params.iter().any(|p| p["name"] == "fieldValidation"), "{status_path}");
    assert_eq!(status_path["patch"]["x-kubernetes-group-version-kind"]["kind"], "Greeting");

    let table = "Accept: application/json;as=Table;g=meta.k8s.io;v=v1\r\n";
    let rows = send(addr, "GET", GREETINGS, table, "").await.body;
    let cells: Vec<_> =
        rows["rows"].as_array().unwrap().iter().map(|r| r["cells"].clone()).collect();
    assert_eq!(cells[0].as_array().unwrap()[..3], [json!("g1"), json!("hi"), json!(3)]);
    assert_eq!(cells[1].as_array().unwrap()[..3], [json!("g2"), json!("yo"), Value::Null]);
    let rows = send(addr, "GET", LINKS, table, "").await.body;
    assert_eq!(rows["rows"][0]["cells"][1], 1500, "{rows}");
    let one = send(addr, "GET", &format!("{GREETINGS}/g1/status"), table, "").await.body;
    assert_eq!(one["rows"][0]["cells"][2], 3, "{one}");
    server.stop().await;
}

/// JSON patches reach `metadata.ownerReferences` as served (they are kept in
/// an annotation, never served as one).
#[actix::test]
async fn json_patches_edit_owner_references() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let owner = |name: &str| json!({"apiVersion": "v1", "kind": "Node", "name": name, "uid": name});
    let body = json!({"metadata": {"name": "g1", "ownerReferences": [owner("a"), owner("b")]},
                      "spec": {"text": "hi"}});
    let created = send(addr, "POST", GREETINGS, "", &body.to_string()).await;
    assert_eq!(created.body["metadata"]["ownerReferences"], json!([owner("a"), owner("b")]));
    let path = format!("{GREETINGS}/g1");
    let ops = json!([
        {"op": "remove", "path": "/metadata/ownerReferences/0"},
        {"op": "add", "path": "/metadata/ownerReferences/-", "value": owner("c")},
        {"op": "add", "path": "/metadata/annotations", "value": {OWNER_REFERENCES_ANNOTATION: "[]"}},
    ]);
    let patched = patch(addr, &path, JSON, &ops).await;
    assert_eq!(patched.status, 200, "{:?}", patched.body);
    assert_eq!(patched.body["metadata"]["ownerReferences"], json!([owner("b"), owner("c")]));
    assert!(patched.body["metadata"].get("annotations").is_none(), "{:?}", patched.body);
    // A status write keeps them.
    let status = json!({"status": {"shown": 1}, "metadata": {"ownerReferences": null}});
    let status = patch(addr, &format!("{path}/status"), MERGE, &status).await;
    assert_eq!(status.body["metadata"]["ownerReferences"], json!([owner("b"), owner("c")]));
    let kept = stored(&state, "g1").await;
    let kept = kept.metadata().annotations().get(OWNER_REFERENCES_ANNOTATION).unwrap().to_owned();
    assert_eq!(serde_json::from_str::<Value>(&kept).unwrap(), json!([owner("b"), owner("c")]));
    server.stop().await;
}

/// `kubectl get -o yaml` shows the status, `kubectl get` its column, and
/// `kubectl patch --subresource=status` writes it.
async fn kubectl_reads_and_patches_the_status(minor: u32) {
    let state = State::start();
    state.create(greeting("g1", "hi", Some(3)), None).await.unwrap();
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    let (ok, out) =
        kubectl.run_joined(&["get", "greeting", "g1", "-n", "config", "-o", "yaml"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("status:\n  shown: 3"), "{out}");
    assert!(out.contains("spec:\n  text: hi"), "{out}");
    let (ok, out) = kubectl.run_joined(&["get", "gr", "-n", "config"]).await;
    assert!(ok, "{out}");
    let header: Vec<_> = out.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "TEXT", "SHOWN", "AGE"], "{out}");
    let row: Vec<_> = out.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(row[..3], ["g1", "hi", "3"], "{out}");

    let merge = r#"{"status":{"shown":4},"spec":{"text":"ignored"}}"#;
    let args = ["patch", "greeting", "g1", "-n", "config", "--subresource=status", "--type=merge"];
    let (ok, out) = kubectl.run_joined(&[&args[..], &["-p", merge]].concat()).await;
    assert!(ok, "{out}");
    let kept = stored(&state, "g1").await;
    assert_eq!((kept.spec().spec.text.as_str(), status_of(&kept)), ("hi", Some(4)));
    // A patch of the object leaves the status be.
    let merge = r#"{"status":{"shown":5},"spec":{"text":"hey"}}"#;
    let (ok, out) = kubectl
        .run_joined(&["patch", "greeting", "g1", "-n", "config", "--type=merge", "-p", merge])
        .await;
    assert!(ok, "{out}");
    let kept = stored(&state, "g1").await;
    assert_eq!((kept.spec().spec.text.as_str(), status_of(&kept)), ("hey", Some(4)));
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_33_reads_and_patches_the_status() {
    if kubectl_available(33) {
        kubectl_reads_and_patches_the_status(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_reads_and_patches_the_status() {
    if kubectl_available(27) {
        kubectl_reads_and_patches_the_status(27).await;
    }
}
