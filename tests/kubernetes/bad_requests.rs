//! Bad requests to the Kubernetes API, over real HTTP on loopback, while a
//! controller in the same runtime keeps reconciling: unknown types (404),
//! malformed selectors and parameters (400), malformed bodies and patches
//! (400, 422, 409 as the apiserver sorts them), bodies of 10 MB (413, or a
//! cut connection) and a watch client that never reads (cut off). Each is
//! answered with a Kubernetes `Status`, changes nothing, and leaves the
//! runtime reconciling and the API answering.
//!
//! Nothing waits on the clock: the tests wait on `settled_within`, on the
//! state's watch count, and on answers; every wait is bounded.

use std::net::SocketAddr;
use std::time::Duration;

use cosi_runtime::controller::from_fn;
use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer};
use cosi_runtime::prelude::*;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkConfig {
    mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

/// The controller's output: what it saw of every `LinkConfig` in `config`.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkSummary {
    links: u32,
    total_mtu: u64,
}

impl Spec for LinkSummary {
    const TYPE: &'static str = "LinkSummaries.net.cosi.dev";
}

const LINKS: &str = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs";
const JSON: &str = "application/json";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";
/// 10 MB: over the API's default limit (3 MiB) and anything actix-web
/// would read by itself.
const HUGE: usize = 10 * 1000 * 1000;
/// How long any one wait may take before the test fails (a bound, not a pause).
const BOUND: Duration = Duration::from_secs(30);

fn link_ptr(id: &str) -> Pointer {
    Pointer::typed::<LinkConfig>("config", id).erase()
}

fn summary_ptr() -> Pointer {
    Pointer::typed::<LinkSummary>("status", "links").erase()
}

/// A runtime with the summarizing controller, eth0 (1500) and eth1 (9000)
/// in its state, and the API over it.
struct Fixture {
    runtime: Runtime,
    state: State,
    server: KubernetesServer,
    addr: SocketAddr,
}

impl Fixture {
    async fn start() -> Fixture {
        Fixture::start_with(|api| api).await
    }

    async fn start_with(configure: impl FnOnce(KubernetesApi) -> KubernetesApi) -> Fixture {
        let runtime = Runtime::start();
        runtime
            .register(|| {
                from_fn(
                    "Summarizer",
                    vec![Input::weak::<LinkConfig>("config")],
                    vec![Output::exclusive::<LinkSummary>()],
                    async |cx| {
                        let links =
                            cx.list_typed::<LinkConfig>("config", &LabelQuery::all()).await?;
                        let running = links.iter().filter(|l| l.phase() == Phase::Running);
                        let summary = LinkSummary {
                            links: running.clone().count() as u32,
                            total_mtu: running.map(|l| u64::from(l.spec().mtu)).sum(),
                        };
                        let out = Pointer::typed::<LinkSummary>("status", "links");
                        cx.modify(&out, move |s| *s.spec_mut() = summary.clone()).await?;
                        Ok(())
                    },
                )
            })
            .await
            .unwrap();
        let state = runtime.state();
        for (id, mtu) in [("eth0", 1500), ("eth1", 9000)] {
            state.create(Resource::new("config", id, LinkConfig { mtu }), None).await.unwrap();
        }
        let api = KubernetesApi::new(&state)
            .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]).namespaces(["config"]))
            .unwrap()
            .expose(Expose::of::<LinkSummary>("v1alpha1").namespaces(["status"]))
            .unwrap();
        let server = configure(api).serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = server.local_addr();
        let fixture = Fixture { runtime, state, server, addr };
        fixture.expect_summary(2, 10_500).await;
        fixture
    }

    /// Once the runtime has settled, the controller's output sums its inputs.
    async fn expect_summary(&self, links: u32, total_mtu: u64) {
        self.runtime.settled_within(BOUND).await.expect("the runtime settles");
        let summary = self.state.get(&summary_ptr()).await.unwrap();
        let summary = summary.typed::<LinkSummary>().unwrap();
        assert_eq!(summary.spec(), &LinkSummary { links, total_mtu });
    }

    /// Every stored resource (links and the summary) with its revision and
    /// spec: what a request that changes nothing leaves as it was.
    async fn fingerprint(&self) -> Vec<(String, u64, Value)> {
        let mut all = Vec::new();
        for (ns, ty) in [("config", LinkConfig::TYPE), ("status", LinkSummary::TYPE)] {
            let kind = Kind::new(ns, ty);
            for r in self.state.list(&kind, &LabelQuery::all()).await.unwrap() {
                let spec = r.to_dynamic().unwrap().spec().clone();
                all.push((r.id().to_string(), r.metadata().revision(), spec));
            }
        }
        all
    }

    /// After whatever went before: a write through the API still goes in,
    /// the controller still follows it, and a normal list still answers.
    async fn still_reconciles_and_serves(self) {
        let before = self.state.list_typed::<LinkConfig>("config", &LabelQuery::all()).await;
        let before = before.unwrap();
        let count = before.len() as u32;
        let total: u64 = before.iter().map(|r| u64::from(r.spec().mtu)).sum();
        let created = send(self.addr, "POST", LINKS, JSON, &object("eth-last", 1280)).await;
        assert_eq!(created.status, 201, "{}", created.text);
        self.expect_summary(count + 1, total + 1280).await;
        let list = send(self.addr, "GET", LINKS, JSON, b"").await;
        assert_eq!(list.status, 200, "{}", list.text);
        let list = list.json();
        assert_eq!(list["kind"], "LinkConfigList");
        let names: Vec<&str> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names.len() as u32, count + 1, "{names:?}");
        assert!(names.contains(&"eth-last"), "{names:?}");
        let summary = send(
            self.addr,
            "GET",
            "/apis/net.cosi.dev/v1alpha1/namespaces/status/linksummaries/links",
            JSON,
            b"",
        )
        .await;
        assert_eq!(summary.json()["spec"]["links"], count + 1);
        self.server.stop().await;
    }
}

fn object(name: &str, mtu: u32) -> Vec<u8> {
    json!({
        "apiVersion": "net.cosi.dev/v1alpha1",
        "kind": "LinkConfig",
        "metadata": {"name": name, "namespace": "config"},
        "spec": {"mtu": mtu},
    })
    .to_string()
    .into_bytes()
}

/// An answer: its status and its body.
#[derive(Debug)]
struct Answer {
    status: u16,
    text: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text)
            .unwrap_or_else(|e| panic!("not JSON ({e}), status {}: {:?}", self.status, self.text))
    }

    /// Asserts a Kubernetes `Status` of `code` and `reason`; its message.
    #[track_caller]
    fn assert_status(&self, code: u16, reason: &str) -> String {
        assert_eq!(self.status, code, "{}", self.text);
        let s = self.json();
        assert_eq!(
            (s["kind"].as_str(), s["apiVersion"].as_str(), s["status"].as_str()),
            (Some("Status"), Some("v1"), Some("Failure")),
            "{s}"
        );
        assert_eq!(
            (s["code"].as_u64(), s["reason"].as_str()),
            (Some(u64::from(code)), Some(reason)),
            "{s}"
        );
        let message = s["message"].as_str().unwrap_or_default().to_owned();
        assert!(!message.is_empty(), "{s}");
        message
    }
}

/// Splits a raw HTTP/1.1 answer into status and (de-chunked) body.
fn parse(raw: &[u8]) -> Answer {
    let text = String::from_utf8_lossy(raw);
    let (head, body) =
        text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("an HTTP answer: {text:?}"));
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let mut decoded = String::new();
    if chunked {
        let mut rest = body;
        while let Some((size, after)) = rest.split_once("\r\n") {
            let size = usize::from_str_radix(size.trim(), 16).unwrap();
            if size == 0 {
                break;
            }
            decoded.push_str(&after[..size]);
            rest = &after[size + 2..];
        }
    } else {
        decoded = body.to_owned();
    }
    Answer { status, text: decoded }
}

/// One request with a body, its answer read to the end (bounded).
async fn send(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
) -> Answer {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(body).await.unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        raw
    };
    let raw = tokio::time::timeout(BOUND, exchange).await.expect("an answer");
    parse(&raw)
}

async fn get(addr: SocketAddr, path: &str) -> Answer {
    send(addr, "GET", path, JSON, b"").await
}

/// What became of a request whose body is over the limit.
#[derive(Debug)]
enum Refused {
    /// The server answered (and then closed the connection).
    Answered(Answer),
    /// The server closed the connection before an answer came through.
    Cut,
}

/// Sends `body` (as one announced `Content-Length`, or chunked with no
/// length) while reading whatever the server answers; the server may stop
/// reading and close at any moment, so write errors are expected.
async fn send_huge(
    addr: SocketAddr,
    method: &str,
    path: &str,
    content_type: &str,
    body: Vec<u8>,
    chunked: bool,
) -> Refused {
    let stream = TcpStream::connect(addr).await.unwrap();
    let (mut read, mut write) = stream.into_split();
    let length = if chunked {
        "Transfer-Encoding: chunked".to_owned()
    } else {
        format!("Content-Length: {}", body.len())
    };
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: {content_type}\r\n{length}\r\n\r\n"
    );
    let writer = tokio::spawn(async move {
        write.write_all(head.as_bytes()).await?;
        for piece in body.chunks(64 * 1024) {
            if chunked {
                write.write_all(format!("{:x}\r\n", piece.len()).as_bytes()).await?;
                write.write_all(piece).await?;
                write.write_all(b"\r\n").await?;
            } else {
                write.write_all(piece).await?;
            }
        }
        if chunked {
            write.write_all(b"0\r\n\r\n").await?;
        }
        Ok::<_, std::io::Error>(write)
    });
    let reading = async {
        let mut raw = Vec::new();
        let mut buf = vec![0; 16 * 1024];
        loop {
            match read.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
                // A reset once the server closed on an unread body.
                Err(_) => break,
            }
        }
        raw
    };
    let raw = tokio::time::timeout(BOUND, reading).await.expect("an answer or the end");
    // Whatever the writer got to: the server has answered or closed.
    let _ = writer.await;
    if raw.is_empty() { Refused::Cut } else { Refused::Answered(parse(&raw)) }
}

// ---- the scenarios -----------------------------------------------------------

/// Unknown groups, versions and plurals (and discovery of them) are 404
/// `NotFound` statuses, whatever the method, and change nothing.
async fn unknown_types(fx: &Fixture) {
    let before = fx.fingerprint().await;
    for path in [
        "/apis/nope.dev/v1/namespaces/config/linkconfigs",
        "/apis/nope.dev/v1/namespaces/config/linkconfigs/eth0",
        "/apis/nope.dev/v1/linkconfigs",
        "/apis/nope.dev/v1",
        "/apis/nope.dev",
        "/apis/net.cosi.dev/v9/namespaces/config/linkconfigs",
        "/apis/net.cosi.dev/v9/namespaces/config/linkconfigs/eth0",
        "/apis/net.cosi.dev/v9/linkconfigs",
        "/apis/net.cosi.dev/v9",
        "/apis/net.cosi.dev/v1alpha1/namespaces/config/links",
        "/apis/net.cosi.dev/v1alpha1/namespaces/config/links/eth0",
        "/apis/net.cosi.dev/v1alpha1/links",
        "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0/status",
        "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0/a/b/c",
        "/api/v2",
        "/api/v1/pods",
    ] {
        get(fx.addr, path).await.assert_status(404, "NotFound");
        get(fx.addr, &format!("{path}?watch=true")).await.assert_status(404, "NotFound");
    }
    // Writes to types that are not served: 404 before the body is even read.
    let garbage = b"{not json";
    for (method, path) in [
        ("POST", "/apis/nope.dev/v1/namespaces/config/linkconfigs"),
        ("POST", "/apis/net.cosi.dev/v9/namespaces/config/linkconfigs"),
        ("POST", "/apis/net.cosi.dev/v1alpha1/namespaces/config/links"),
        ("PUT", "/apis/nope.dev/v1/namespaces/config/linkconfigs/eth0"),
        ("PATCH", "/apis/net.cosi.dev/v9/namespaces/config/linkconfigs/eth0"),
        ("DELETE", "/apis/net.cosi.dev/v1alpha1/namespaces/config/links/eth0"),
        ("PATCH", "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0/status"),
        ("DELETE", "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0/status"),
    ] {
        for body in [&object("eth0", 1)[..], garbage] {
            let content_type = if method == "PATCH" { MERGE } else { JSON };
            let answer = send(fx.addr, method, path, content_type, body).await;
            answer.assert_status(404, "NotFound");
        }
    }
    // An unknown object of a served type: 404 naming it.
    let missing = get(fx.addr, &format!("{LINKS}/eth9")).await;
    let message = missing.assert_status(404, "NotFound");
    assert_eq!(message, "linkconfigs.net.cosi.dev \"eth9\" not found");
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
}

/// Selectors that do not parse, and field selectors on fields not served,
/// are 400 `BadRequest` on lists (one namespace and all) and watches.
async fn malformed_selectors(fx: &Fixture) {
    let baseline = fx.state.watch_count().await.unwrap();
    let bad = [
        "labelSelector=tier%20in%20(a",
        "labelSelector=tier%20in%20a)",
        "labelSelector=a,,b",
        "labelSelector=bad%20key%3D1",
        "labelSelector=tier%20on%20(a)",
        "labelSelector=-x",
        "labelSelector=tier%20in%20(a,)",
        "fieldSelector=metadata.name",
        "fieldSelector=metadata.name%3Deth0,bogus",
        "fieldSelector=spec.mtu%3D1500",
        "fieldSelector=status.phase%3DRunning",
        "fieldSelector=metadata.labels%3Dx",
    ];
    for query in bad {
        for base in [LINKS, "/apis/net.cosi.dev/v1alpha1/linkconfigs"] {
            for watch in ["", "&watch=true"] {
                let path = format!("{base}?{query}{watch}");
                let message = get(fx.addr, &path).await.assert_status(400, "BadRequest");
                let what = if query.starts_with("label") { "labelSelector" } else { "field" };
                assert!(message.contains(what), "{path}: {message}");
            }
        }
    }
    assert_eq!(fx.state.watch_count().await.unwrap(), baseline, "no watch was started");
}

/// Other parameters that do not parse are 400 too; a timeout too long for
/// the clock is cut short instead of overflowing it.
async fn malformed_parameters(fx: &Fixture) {
    let before = fx.fingerprint().await;
    for query in [
        "watch=yes",
        "watch=true&timeoutSeconds=-1",
        "watch=true&timeoutSeconds=ten",
        "watch=true&resourceVersion=abc",
        "watch=true&resourceVersion=-5",
        "watch=true&allowWatchBookmarks=maybe",
        "watch=true&sendInitialEvents=2",
    ] {
        get(fx.addr, &format!("{LINKS}?{query}")).await.assert_status(400, "BadRequest");
    }
    for query in ["fieldValidation=Bogus", "dryRun=Some"] {
        let answer =
            send(fx.addr, "POST", &format!("{LINKS}?{query}"), JSON, &object("eth7", 1)).await;
        answer.assert_status(400, "BadRequest");
        let answer =
            send(fx.addr, "PUT", &format!("{LINKS}/eth0?{query}"), JSON, &object("eth0", 1)).await;
        answer.assert_status(400, "BadRequest");
    }
    // A namespace in the URL that is not a valid name (too long).
    let long = "n".repeat(300);
    let path = format!("/apis/net.cosi.dev/v1alpha1/namespaces/{long}/linkconfigs");
    get(fx.addr, &path).await.assert_status(400, "BadRequest");
    let body = json!({"metadata": {"name": "eth7"}, "spec": {"mtu": 1}}).to_string();
    send(fx.addr, "POST", &path, JSON, body.as_bytes()).await.assert_status(400, "BadRequest");
    // u64::MAX seconds: the watch starts (its timeout cut to the longest)
    // rather than overflowing the clock; it ends when the client resets
    // the connection (a quiet close is heard at the next event sent).
    let baseline = fx.state.watch_count().await.unwrap();
    let path = format!("{LINKS}?watch=true&timeoutSeconds=18446744073709551615");
    let stream = watch_raw(fx.addr, &path).await;
    let mut reader = tokio::io::BufReader::new(stream);
    let mut status_line = String::new();
    let read = tokio::io::AsyncBufReadExt::read_line(&mut reader, &mut status_line);
    tokio::time::timeout(BOUND, read).await.expect("an answer").unwrap();
    assert!(status_line.starts_with("HTTP/1.1 200"), "{status_line:?}");
    watches_come_to(&fx.state, baseline + 1).await;
    let stream = reader.into_inner();
    stream.set_zero_linger().unwrap();
    drop(stream);
    watches_come_to(&fx.state, baseline).await;
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
}

/// Bodies that are not JSON, or not an object, are 400 on POST and PUT;
/// objects that do not validate are 422; nothing is stored.
async fn malformed_bodies(fx: &Fixture) {
    let before = fx.fingerprint().await;
    let not_json: [&[u8]; 7] = [
        b"",
        b"{",
        b"not json",
        b"{\"metadata\": {\"name\": \"eth7\"}, \"spec\": ",
        b"\xff\xfe\x00garbage",
        b"{\"metadata\": {\"name\": \"eth7\"}} trailing",
        b"{\"a\": 1, \"a\": }",
    ];
    for body in not_json {
        send(fx.addr, "POST", LINKS, JSON, body).await.assert_status(400, "BadRequest");
        send(fx.addr, "PUT", &format!("{LINKS}/eth0"), JSON, body)
            .await
            .assert_status(400, "BadRequest");
    }
    // JSON, but not an object; or an object of another kind or name.
    for body in [
        json!([]),
        json!("eth7"),
        json!(null),
        json!(17),
        json!({"apiVersion": "v1", "kind": "LinkConfig", "metadata": {"name": "eth0"}, "spec": {"mtu": 1}}),
        json!({"kind": "Pod", "metadata": {"name": "eth0"}, "spec": {"mtu": 1}}),
        json!({"metadata": {"name": "eth0", "namespace": "other"}, "spec": {"mtu": 1}}),
    ] {
        let body = body.to_string().into_bytes();
        send(fx.addr, "POST", LINKS, JSON, &body).await.assert_status(400, "BadRequest");
        send(fx.addr, "PUT", &format!("{LINKS}/eth0"), JSON, &body)
            .await
            .assert_status(400, "BadRequest");
    }
    let renamed = object("eth1", 1);
    send(fx.addr, "PUT", &format!("{LINKS}/eth0"), JSON, &renamed)
        .await
        .assert_status(400, "BadRequest");
    // Objects that do not validate: 422 Invalid.
    for body in [
        json!({"metadata": {"name": "eth7"}, "spec": {"mtu": "jumbo"}}),
        json!({"metadata": {"name": "eth7"}, "spec": {"mtu": -1}}),
        json!({"metadata": {"name": "eth7"}, "spec": 5}),
        json!({"metadata": {"name": "eth7", "labels": {"a": 1}}, "spec": {"mtu": 1}}),
        json!({"metadata": {"name": "eth7", "finalizers": "x"}, "spec": {"mtu": 1}}),
        json!({"metadata": "eth7", "spec": {"mtu": 1}}),
        json!({"spec": {"mtu": 1}}),
    ] {
        let body = body.to_string().into_bytes();
        send(fx.addr, "POST", LINKS, JSON, &body).await.assert_status(422, "Invalid");
    }
    let bad_spec = json!({"metadata": {"name": "eth0"}, "spec": {"mtu": "jumbo"}}).to_string();
    let answer = send(fx.addr, "PUT", &format!("{LINKS}/eth0"), JSON, bad_spec.as_bytes()).await;
    answer.assert_status(422, "Invalid");
    // DELETE options that are not JSON.
    let answer = send(fx.addr, "DELETE", &format!("{LINKS}/eth0"), JSON, b"{oops").await;
    answer.assert_status(400, "BadRequest");
    assert!(fx.state.get(&link_ptr("eth7")).await.unwrap_err().is_not_found());
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
}

/// JSON patches as the apiserver sorts them: not an array of operations is
/// 400; an operation that cannot apply (unknown, a bad or missing path, a
/// missing value) is 422; too many operations 413; nothing changes.
async fn malformed_json_patches(fx: &Fixture) {
    let before = fx.fingerprint().await;
    let path = format!("{LINKS}/eth0");
    for body in [&b"[{\"op\": "[..], b"not json", b""] {
        send(fx.addr, "PATCH", &path, JSON_PATCH, body).await.assert_status(400, "BadRequest");
    }
    for ops in [
        json!({"op": "replace", "path": "/spec/mtu", "value": 1}),
        json!("replace"),
        json!([1, 2]),
        json!([{"op": "replace", "path": "/spec/mtu", "value": 1}, "and"]),
    ] {
        let body = ops.to_string().into_bytes();
        let message =
            send(fx.addr, "PATCH", &path, JSON_PATCH, &body).await.assert_status(400, "BadRequest");
        assert!(message.contains("array"), "{ops}: {message}");
    }
    for ops in [
        json!([{"op": "frobnicate", "path": "/spec/mtu", "value": 1}]),
        json!([{"path": "/spec/mtu", "value": 1}]),
        json!([{"op": "replace", "path": "spec/mtu", "value": 1}]),
        json!([{"op": "replace", "value": 1}]),
        json!([{"op": "replace", "path": "/spec/nope", "value": 1}]),
        json!([{"op": "add", "path": "/spec/deep/er", "value": 1}]),
        json!([{"op": "remove", "path": "/metadata/labels/none"}]),
        json!([{"op": "replace", "path": "/spec/mtu"}]),
        json!([{"op": "move", "path": "/spec/x"}]),
        json!([{"op": "copy", "from": "/nowhere", "path": "/spec/x"}]),
        // The first operation would apply: all or nothing.
        json!([{"op": "replace", "path": "/spec/mtu", "value": 1}, {"op": "bogus", "path": "/"}]),
    ] {
        let body = ops.to_string().into_bytes();
        send(fx.addr, "PATCH", &path, JSON_PATCH, &body).await.assert_status(422, "Invalid");
    }
    // A patch that applies but leaves an object that does not validate.
    let ops = json!([{"op": "replace", "path": "/spec/mtu", "value": "jumbo"}]).to_string();
    send(fx.addr, "PATCH", &path, JSON_PATCH, ops.as_bytes()).await.assert_status(422, "Invalid");
    let ops = json!([{"op": "replace", "path": "", "value": [1]}]).to_string();
    send(fx.addr, "PATCH", &path, JSON_PATCH, ops.as_bytes())
        .await
        .assert_status(400, "BadRequest");
    // Too many operations (the apiserver's 10 000).
    let op = json!({"op": "test", "path": "/spec/mtu", "value": 1500});
    let many = serde_json::to_vec(&vec![op; 10_001]).unwrap();
    let message = send(fx.addr, "PATCH", &path, JSON_PATCH, &many)
        .await
        .assert_status(413, "RequestEntityTooLarge");
    assert!(message.contains("10000"), "{message}");
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
}

/// Merge and apply patches that are not JSON objects are 400; one that
/// leaves an invalid object is 422; nothing changes.
async fn malformed_merge_patches(fx: &Fixture) {
    let before = fx.fingerprint().await;
    let path = format!("{LINKS}/eth0");
    let apply = format!("{path}?fieldManager=ops");
    for (content_type, target) in [(MERGE, &path), (APPLY, &apply)] {
        for body in [&b"{\"spec\": "[..], b"", b"{\"spec\": {\"mtu\": 1}}}", b"\xff"] {
            let answer = send(fx.addr, "PATCH", target, content_type, body).await;
            answer.assert_status(400, "BadRequest");
        }
        for patch in [json!("spec"), json!([1]), json!(null), json!(3)] {
            let body = patch.to_string().into_bytes();
            let answer = send(fx.addr, "PATCH", target, content_type, &body).await;
            answer.assert_status(400, "BadRequest");
        }
        for patch in [
            json!({"spec": 5}),
            json!({"spec": {"mtu": "jumbo"}}),
            json!({"spec": {"mtu": null}}),
            json!({"metadata": {"labels": {"tier": 5}}}),
            json!({"metadata": "eth0"}),
        ] {
            let body = patch.to_string().into_bytes();
            let answer = send(fx.addr, "PATCH", target, content_type, &body).await;
            answer.assert_status(422, "Invalid");
        }
        let renamed = json!({"metadata": {"name": "eth1"}}).to_string();
        let answer = send(fx.addr, "PATCH", target, content_type, renamed.as_bytes()).await;
        answer.assert_status(400, "BadRequest");
    }
    let yaml = send(fx.addr, "PATCH", &path, MERGE, b"spec: {mtu: 1}").await;
    yaml.assert_status(400, "BadRequest");
    // An apply without a field manager; a patch type not served.
    let body = json!({"spec": {"mtu": 1}}).to_string();
    send(fx.addr, "PATCH", &path, APPLY, body.as_bytes()).await.assert_status(400, "BadRequest");
    for content_type in ["application/strategic-merge-patch+json", "text/plain", "application/json"]
    {
        let answer = send(fx.addr, "PATCH", &path, content_type, body.as_bytes()).await;
        answer.assert_status(415, "UnsupportedMediaType");
    }
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
}

/// A JSON patch whose `test` fails is 422 `Invalid`; writes from a stale
/// `resourceVersion` (or another incarnation's uid) are 409 `Conflict`.
async fn failed_tests_and_stale_versions(fx: &Fixture) {
    let path = format!("{LINKS}/eth0");
    let read = get(fx.addr, &path).await.json();
    let stale = read["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    // A change after the read: the read's version is stale now.
    let ptr = link_ptr("eth0");
    let modify =
        fx.state.modify(&ptr, |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = 1400, None);
    modify.await.unwrap();
    fx.expect_summary(2, 10_400).await;
    let before = fx.fingerprint().await;

    let failing = json!([
        {"op": "replace", "path": "/spec/mtu", "value": 1},
        {"op": "test", "path": "/spec/mtu", "value": 1500}
    ]);
    let answer = send(fx.addr, "PATCH", &path, JSON_PATCH, failing.to_string().as_bytes()).await;
    let message = answer.assert_status(422, "Invalid");
    assert!(message.contains("test failed"), "{message}");
    let answer = answer.json();
    assert_eq!(answer["details"]["name"], "eth0");

    let stale_ops = json!([
        {"op": "replace", "path": "/metadata/resourceVersion", "value": stale},
        {"op": "replace", "path": "/spec/mtu", "value": 1}
    ]);
    let answer = send(fx.addr, "PATCH", &path, JSON_PATCH, stale_ops.to_string().as_bytes()).await;
    answer.assert_status(409, "Conflict");
    let stale_merge = json!({"metadata": {"resourceVersion": stale}, "spec": {"mtu": 1}});
    let answer = send(fx.addr, "PATCH", &path, MERGE, stale_merge.to_string().as_bytes()).await;
    answer.assert_status(409, "Conflict");
    let mut stale_put: Value = serde_json::from_slice(&object("eth0", 1)).unwrap();
    stale_put["metadata"]["resourceVersion"] = json!(stale);
    let answer = send(fx.addr, "PUT", &path, JSON, stale_put.to_string().as_bytes()).await;
    answer.assert_status(409, "Conflict");
    let wrong_uid = json!({"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}});
    let answer = send(fx.addr, "DELETE", &path, JSON, wrong_uid.to_string().as_bytes()).await;
    answer.assert_status(409, "Conflict");
    let stale_delete = json!({"preconditions": {"resourceVersion": stale}});
    let answer = send(fx.addr, "DELETE", &path, JSON, stale_delete.to_string().as_bytes()).await;
    answer.assert_status(409, "Conflict");
    let exists = send(fx.addr, "POST", LINKS, JSON, &object("eth0", 1)).await;
    exists.assert_status(409, "AlreadyExists");
    // The summary is owned by the controller: read-only to clients.
    let owned = "/apis/net.cosi.dev/v1alpha1/namespaces/status/linksummaries/links";
    let answer = send(fx.addr, "PATCH", owned, MERGE, br#"{"spec": {"links": 0}}"#).await;
    answer.assert_status(403, "Forbidden");
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
    fx.expect_summary(2, 10_400).await;
}

/// Asserts a body over the limit was refused: a 413 `Status`, or the
/// connection cut before an answer.
#[track_caller]
fn assert_refused(refused: &Refused) {
    match refused {
        Refused::Answered(answer) => {
            let message = answer.assert_status(413, "RequestEntityTooLarge");
            assert!(message.contains("limit is"), "{message}");
        }
        Refused::Cut => {}
    }
}

/// A huge valid object: 10 MB in an annotation.
fn huge_object(name: &str) -> Vec<u8> {
    let mut o: Value = serde_json::from_slice(&object(name, 1500)).unwrap();
    o["metadata"]["annotations"] = json!({"payload": "x".repeat(HUGE)});
    o.to_string().into_bytes()
}

/// A body of 10 MB on POST: 413 at once when its length is announced, 413
/// or a cut connection when it comes chunked; nothing is stored.
async fn huge_posts(fx: &Fixture) {
    let before = fx.fingerprint().await;
    // Announced: answered before the body is read. The client sends the
    // head only, and reads the answer.
    let mut stream = TcpStream::connect(fx.addr).await.unwrap();
    let head = format!(
        "POST {LINKS} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: {JSON}\r\nContent-Length: {HUGE}\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let read = stream.read_to_end(&mut raw);
    tokio::time::timeout(BOUND, read).await.expect("an answer").unwrap();
    let message = parse(&raw).assert_status(413, "RequestEntityTooLarge");
    assert!(message.contains(&format!("limit is {}", 3 * 1024 * 1024)), "{message}");
    // Sent whole, with its length, and chunked without one.
    for chunked in [false, true] {
        let refused =
            send_huge(fx.addr, "POST", LINKS, JSON, huge_object("eth-huge"), chunked).await;
        assert_refused(&refused);
    }
    assert!(fx.state.get(&link_ptr("eth-huge")).await.unwrap_err().is_not_found());
    assert_eq!(fx.fingerprint().await, before, "nothing stored");
}

/// A body of 10 MB on PATCH (merge, JSON patch, apply) and PUT: refused,
/// nothing changes.
async fn huge_patches(fx: &Fixture) {
    let before = fx.fingerprint().await;
    let path = format!("{LINKS}/eth0");
    let merge = json!({"metadata": {"annotations": {"payload": "x".repeat(HUGE)}}}).to_string();
    let ops = json!([{"op": "add", "path": "/metadata/annotations", "value": {"payload": "x".repeat(HUGE)}}]);
    let apply = format!("{path}?fieldManager=ops");
    for (target, content_type, body, chunked) in [
        (&path, MERGE, merge.clone().into_bytes(), false),
        (&path, MERGE, merge.into_bytes(), true),
        (&path, JSON_PATCH, ops.to_string().into_bytes(), false),
        (&apply, APPLY, huge_object("eth0"), true),
    ] {
        let refused = send_huge(fx.addr, "PATCH", target, content_type, body, chunked).await;
        assert_refused(&refused);
    }
    let refused = send_huge(fx.addr, "PUT", &path, JSON, huge_object("eth0"), false).await;
    assert_refused(&refused);
    assert_eq!(fx.fingerprint().await, before, "nothing changed");
}

/// Opens a watch and sends its request; never reads.
async fn watch_raw(addr: SocketAddr, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    stream
}

/// Waits (bounded) until the state counts `count` watches. Each count is a
/// round trip through the state actor; in between, the server runs on.
async fn watches_come_to(state: &State, count: usize) {
    let reached = async {
        while state.watch_count().await.unwrap() != count {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(BOUND, reached)
        .await
        .unwrap_or_else(|_| panic!("the state's watches come to {count}"));
}

/// A watch whose client never reads is cut off once its buffer fills,
/// while the controller keeps following its inputs.
async fn a_watch_that_never_reads(fx: &Fixture) {
    let baseline = fx.state.watch_count().await.unwrap();
    let slow = watch_raw(fx.addr, &format!("{LINKS}?watch=true")).await;
    watches_come_to(&fx.state, baseline + 1).await;
    let links = fx.state.list_typed::<LinkConfig>("config", &LabelQuery::all()).await.unwrap();
    let count = links.len() as u32;
    let others: u64 =
        links.iter().filter(|l| l.id() != "eth1").map(|l| u64::from(l.spec().mtu)).sum();
    // 400 changes of 64 KiB: far more than the watch buffer (8 events) and
    // the socket buffers hold. The controller follows every batch of them.
    let big = "x".repeat(64 * 1024);
    let ptr = link_ptr("eth1");
    for i in 1..=400u32 {
        let payload = format!("{i}{big}");
        let modify = fx.state.modify(
            &ptr,
            move |r: &mut Resource<LinkConfig>| {
                r.spec_mut().mtu = 9000 + i;
                r.metadata_mut().annotations_mut().insert("payload", payload.as_str());
            },
            None,
        );
        modify.await.unwrap();
        if i % 50 == 0 {
            fx.expect_summary(count, others + 9000 + u64::from(i)).await;
        }
    }
    // The server ended the slow watch: the state's watch is gone...
    watches_come_to(&fx.state, baseline).await;
    // ...while the runtime kept reconciling, and still does.
    let modify =
        fx.state.modify(&ptr, |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = 1280, None);
    modify.await.unwrap();
    fx.expect_summary(count, others + 1280).await;
    // Reading at last: what the buffers held, then the end of the stream,
    // far short of the 400 changes.
    let mut slow = slow;
    let mut raw = Vec::new();
    let read = slow.read_to_end(&mut raw);
    let read = tokio::time::timeout(BOUND, read).await.expect("the cut-off watch ends");
    assert!(read.is_ok(), "{read:?}");
    let answer = parse(&raw);
    assert_eq!(answer.status, 200);
    let events: Vec<Value> =
        answer.text.lines().map(|l| serde_json::from_str(l).expect("a JSON event")).collect();
    assert!(events.len() >= 2, "the initial ADDED events at least: {}", events.len());
    assert!(events.len() < 400, "cut off, not sent all: {} events", events.len());
    assert!(events.iter().all(|e| e["type"] == "ADDED" || e["type"] == "MODIFIED"));
}

/// Opens a watch and reads its status line only; the stream stays open.
async fn open_watch(addr: SocketAddr, path: &str) -> (u16, TcpStream) {
    let mut stream = watch_raw(addr, path).await;
    let mut head = Vec::new();
    let read = async {
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n") {
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
    };
    tokio::time::timeout(BOUND, read).await.expect("a status line");
    let line = String::from_utf8_lossy(&head);
    (line.split_whitespace().nth(1).unwrap().parse().unwrap(), stream)
}

/// Two watches per client: a third is 429 until one of them ends; lists
/// are not watches; a client that went away gives its slot back.
async fn too_many_watches(fx: &Fixture) {
    let baseline = fx.state.watch_count().await.unwrap();
    let (status, first) = open_watch(fx.addr, &format!("{LINKS}?watch=true")).await;
    assert_eq!(status, 200);
    // The python client's spelling counts too.
    let (status, _second) =
        open_watch(fx.addr, &format!("{LINKS}?watch=True&timeoutSeconds=600")).await;
    assert_eq!(status, 200);
    watches_come_to(&fx.state, baseline + 2).await;
    let third = get(fx.addr, &format!("{LINKS}?watch=true")).await;
    let message = third.assert_status(429, "TooManyRequests");
    assert!(message.starts_with("127.0.0.1 already has 2 watches open"), "{message}");
    assert_eq!(fx.state.watch_count().await.unwrap(), baseline + 2, "no watch was started");
    assert_eq!(get(fx.addr, LINKS).await.status, 200, "a list is not a watch");
    // The first client goes away. The server notices at its next writes to
    // that connection (a change of a link goes out to it), and the slot
    // comes back: a new watch is admitted.
    drop(first);
    let eth0 = link_ptr("eth0");
    let admitted = async {
        for mtu in 1400.. {
            let modify = fx.state.modify(
                &eth0,
                move |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = mtu,
                None,
            );
            modify.await.unwrap();
            let (status, stream) = open_watch(fx.addr, &format!("{LINKS}?watch=true")).await;
            if status == 200 {
                return stream;
            }
            assert_eq!(status, 429);
        }
        unreachable!()
    };
    let _third = tokio::time::timeout(BOUND, admitted).await.expect("the slot comes back");
}

/// A query string over the limit is 414; actix-web's own bound on the
/// request head (128 KiB) cuts a longer one; the server goes on.
async fn long_queries(fx: &Fixture) {
    let long = format!("{LINKS}?labelSelector={}", "a".repeat(20 * 1024));
    let message = get(fx.addr, &long).await.assert_status(414, "RequestURITooLong");
    assert!(message.contains("more than the 16384 this server accepts"), "{message}");
    let huge = format!("{LINKS}?labelSelector={}", "a".repeat(200 * 1024));
    let exchange = async {
        let mut stream = TcpStream::connect(fx.addr).await.unwrap();
        let request = format!("GET {huge} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let _ = stream.write_all(request.as_bytes()).await;
        let mut raw = Vec::new();
        let _ = stream.read_to_end(&mut raw).await;
        raw
    };
    let raw = tokio::time::timeout(BOUND, exchange).await.expect("an answer or a cut");
    let text = String::from_utf8_lossy(&raw);
    assert!(raw.is_empty() || text.starts_with("HTTP/1.1 431"), "{text}");
    assert_eq!(get(fx.addr, LINKS).await.status, 200);
}

// ---- the tests -----------------------------------------------------------------

#[actix::test]
async fn unknown_groups_versions_and_plurals_are_404_not_found_statuses() {
    let fx = Fixture::start().await;
    unknown_types(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn malformed_label_and_field_selectors_are_400_bad_request_statuses() {
    let fx = Fixture::start().await;
    malformed_selectors(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn malformed_parameters_are_400_and_a_huge_timeout_does_not_overflow() {
    let fx = Fixture::start().await;
    malformed_parameters(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn bodies_that_are_not_json_objects_are_400_invalid_objects_422_and_nothing_is_stored() {
    let fx = Fixture::start().await;
    malformed_bodies(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn malformed_json_patches_are_400_or_422_and_too_many_operations_413() {
    let fx = Fixture::start().await;
    malformed_json_patches(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn malformed_merge_and_apply_patches_are_400_or_422_and_change_nothing() {
    let fx = Fixture::start().await;
    malformed_merge_patches(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn a_failed_json_patch_test_is_422_and_stale_versions_are_409_conflict() {
    let fx = Fixture::start().await;
    failed_tests_and_stale_versions(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn a_10_mb_post_is_413_or_cut_off_and_stores_nothing() {
    let fx = Fixture::start().await;
    huge_posts(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn a_10_mb_patch_or_put_is_413_or_cut_off_and_changes_nothing() {
    let fx = Fixture::start().await;
    huge_patches(&fx).await;
    fx.still_reconciles_and_serves().await;
}

/// Below the limit a large object goes in: 1 MiB is more than actix-web
/// reads by default (256 KiB), less than the apiserver's 3 MiB. A limit
/// set smaller refuses it.
#[actix::test]
async fn the_body_limit_is_3_mib_by_default_and_configurable() {
    let fx = Fixture::start().await;
    let mut o: Value = serde_json::from_slice(&object("eth-big", 1500)).unwrap();
    o["metadata"]["annotations"] = json!({"payload": "x".repeat(1024 * 1024)});
    let body = o.to_string().into_bytes();
    let created = send(fx.addr, "POST", LINKS, JSON, &body).await;
    assert_eq!(created.status, 201, "{}", &created.text[..created.text.len().min(300)]);
    let stored = fx.state.get(&link_ptr("eth-big")).await.unwrap();
    assert_eq!(stored.metadata().annotations().get("payload").map(str::len), Some(1024 * 1024));
    fx.expect_summary(3, 12_000).await;
    fx.still_reconciles_and_serves().await;

    let fx = Fixture::start_with(|api| api.max_request_body(64 * 1024)).await;
    let before = fx.fingerprint().await;
    let refused = send_huge(fx.addr, "POST", LINKS, JSON, body.clone(), false).await;
    assert_refused(&refused);
    let refused = send_huge(fx.addr, "POST", LINKS, JSON, body, true).await;
    assert_refused(&refused);
    let small = send(fx.addr, "POST", LINKS, JSON, &object("eth-small", 576)).await;
    assert_eq!(small.status, 201, "{}", small.text);
    assert!(fx.state.get(&link_ptr("eth-big")).await.unwrap_err().is_not_found());
    assert_eq!(fx.fingerprint().await.len(), before.len() + 1, "eth-small only");
    fx.expect_summary(3, 11_076).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn a_watch_client_that_never_reads_is_cut_off_while_the_runtime_keeps_reconciling() {
    let fx = Fixture::start_with(|api| api.watch_buffer(8)).await;
    a_watch_that_never_reads(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn a_client_over_its_watch_limit_is_429_until_one_of_its_watches_ends() {
    let fx = Fixture::start_with(|api| api.max_watches_per_client(2)).await;
    too_many_watches(&fx).await;
    fx.still_reconciles_and_serves().await;
}

#[actix::test]
async fn a_query_string_over_the_limit_is_414_and_a_huge_head_is_cut() {
    let fx = Fixture::start().await;
    long_queries(&fx).await;
    fx.still_reconciles_and_serves().await;
}

/// Every kind of bad request above, one after the other against one
/// server and runtime: afterwards it still reconciles and answers a list.
#[actix::test]
async fn after_every_bad_request_the_runtime_still_reconciles_and_the_api_still_lists() {
    let fx = Fixture::start_with(|api| api.watch_buffer(8)).await;
    unknown_types(&fx).await;
    malformed_selectors(&fx).await;
    malformed_parameters(&fx).await;
    malformed_bodies(&fx).await;
    malformed_json_patches(&fx).await;
    malformed_merge_patches(&fx).await;
    failed_tests_and_stale_versions(&fx).await;
    huge_posts(&fx).await;
    huge_patches(&fx).await;
    a_watch_that_never_reads(&fx).await;
    long_queries(&fx).await;
    fx.still_reconciles_and_serves().await;
}
