//! The Kubernetes API (feature `kubernetes-api`) against floors and peers
//! measured in the same run, over one state of N = 10,000 resources:
//!
//! - `kube_list`: `Api<DynamicObject>::list` of the N objects through stock
//!   kube-rs against our server on loopback, vs the floor: serializing the
//!   same N objects (the `ObjectList<DynamicObject>` that list returned) to
//!   JSON in this process. Beside them, where the list's time goes: the same
//!   request from a raw HTTP client that only reads the body (the server and
//!   the transfer), and kube-rs' parse of that body alone (the client).
//! - `kube_watch`: N changes (`modify`s of the N resources, 1,024 in flight)
//!   through a Kubernetes watch (chunked JSON lines) until a client has read
//!   and parsed all N events, vs the same N changes through the admin
//!   endpoint's server-sent events, vs the same writes with no watch at all.
//!   Both watches resume from the revision before the writes (no initial
//!   list), both are read by the same raw HTTP client, on a thread of its own.
//! - outside criterion, `watch_latency`: one change at a time through the
//!   Kubernetes API (a kube-rs merge patch of one object's MTU), timed from
//!   the patch until kube-runtime's `watcher` on that type delivers it, and
//!   until an in-process kind watch on the state delivers the same change;
//!   p50 and p99 of each.
//! - outside criterion, `paged_list`: a state of 1,000,000 objects (quick:
//!   2,000) listed through the API unpaged and in pages of 500
//!   (`limit`/`continue`, as client-go's pager and kube-runtime's watcher
//!   read), each by a raw HTTP client that keeps at most one page: the time
//!   of each, the time per page, and the peak heap growth of the process
//!   (server and client) during each.
//! - outside criterion: `kubectl get <plural> -A` (and `-o json`) beside
//!   `cosictl get <type>` (and `-o json`) of the same N, each a process run
//!   to its end (median of 5; kubectl's discovery cached by a first run);
//!   written to `<target>/bench-report/kubernetes.json`. Without kubectl (or
//!   a built `cosictl`), those figures are `null` (n/a in the report).
//!
//! `cargo bench --features kubernetes-api,admin --bench kubernetes`
//! measures; `cargo test --features kubernetes-api,admin --bench kubernetes`
//! runs a scaled-down smoke pass (N = 50) that asserts only functional facts.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use actix::SystemRunner;
use common::{CountingAlloc, Mode, pipelined};
use cosi_runtime::admin::{Admin, AdminServer, Bind};
use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer};
use cosi_runtime::prelude::*;
use criterion::{Criterion, Throughput};
use kube::api::{Api, DynamicObject, ListParams, ObjectList};
use kube::core::{ApiResource, GroupVersionKind};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The namespace the resources live in.
const NS: &str = "bench";
/// Served as `links` in group `bench.cosi.dev`, kind `Link`.
const GROUP: &str = "bench.cosi.dev";
const VERSION: &str = "v1";
const PLURAL: &str = "links";

/// A link's configuration: a spec of a few fields, one of them a list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Links.bench.cosi.dev")]
struct LinkSpec {
    mtu: u32,
    up: bool,
    kind: String,
    addresses: Vec<String>,
}

fn id(i: u64) -> String {
    format!("link{i:05}")
}

fn link(i: u64) -> Resource<LinkSpec> {
    let spec = LinkSpec {
        mtu: 1500,
        up: i.is_multiple_of(2),
        kind: "physical".into(),
        addresses: vec![format!("10.{}.{}.1/24", i / 256 % 256, i % 256)],
    };
    let mut r = Resource::new(NS, id(i), spec);
    r.metadata_mut().labels_mut().insert("tier", if i.is_multiple_of(3) { "edge" } else { "core" });
    r
}

/// Client buffers that hold every event of a round, on both servers: the
/// bench measures throughput, not the cut-off of a slow client.
fn watch_buffer(n: u64) -> usize {
    n as usize * 2
}

/// The state with its N resources, served by both endpoints.
struct Setup {
    state: State,
    n: u64,
    kube: SocketAddr,
    admin: SocketAddr,
    api: Api<DynamicObject>,
    /// Rounds of writes done (each round sets every MTU to a new value).
    rounds: u32,
    /// The store revision of the last write.
    revision: u64,
    /// The watch client's thread.
    client: std::sync::mpsc::Sender<WatchJob>,
    /// Kept running for the whole bench.
    _servers: (Runtime, KubernetesServer, AdminServer),
}

/// A runtime whose state holds links `0..n` (created 1,024 in flight).
async fn populated(n: u64) -> (Runtime, State) {
    let runtime = Runtime::start();
    let state = runtime.state();
    pipelined(n, 1024, |i| {
        let state = state.clone();
        async move {
            state.create(link(i), None).await.expect("create");
        }
    })
    .await;
    (runtime, state)
}

async fn setup(n: u64) -> Setup {
    let (runtime, state) = populated(n).await;
    let api = KubernetesApi::new(&state)
        .expose(
            Expose::of::<LinkSpec>(VERSION)
                .short_names(["lk"])
                .column("MTU", ".spec.mtu")
                .column("UP", ".spec.up")
                .namespaces([NS]),
        )
        .expect("expose")
        .watch_buffer(watch_buffer(n));
    let kube = api.serve("127.0.0.1:0".parse().expect("addr")).await.expect("serve the API");
    let admin = Admin::new(&runtime)
        .kinds([Kind::of::<LinkSpec>(NS)])
        .watch_buffer(watch_buffer(n))
        .serve(Bind::Tcp("127.0.0.1:0".parse().expect("addr")))
        .await
        .expect("serve the admin endpoint");
    let Bind::Tcp(admin_addr) = *admin.bind() else { unreachable!("a TCP bind") };
    let config = kube::Config::new(kube.url().parse().expect("a URL"));
    let client = kube::Client::try_from(config).expect("a kube client");
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, "Link");
    let ar = ApiResource::from_gvk_with_plural(&gvk, PLURAL);
    let api = Api::namespaced_with(client, NS, &ar);
    let kube_addr = kube.local_addr();
    let revision = state
        .get(&Pointer::typed::<LinkSpec>(NS, id(n - 1)))
        .await
        .expect("the last create")
        .metadata()
        .revision();
    let client = client_thread();
    Setup {
        state,
        n,
        kube: kube_addr,
        admin: admin_addr,
        api,
        rounds: 0,
        revision,
        client,
        _servers: (runtime, kube, admin),
    }
}

// ---------------------------------------------------------------------------
// watch_latency

/// The MTU of `object` if it is the watched link's.
fn watched_mtu(object: &DynamicObject, name: &str) -> Option<u64> {
    (object.metadata.name.as_deref() == Some(name)).then(|| object.data["spec"]["mtu"].as_u64())?
}

/// `n` changes of one link through the Kubernetes API (kube-rs merge
/// patches, one at a time), each timed until kube-runtime's watcher sees it
/// and until an in-process watch on the state sees it (the two watch the
/// same change); the two latencies, in that order.
async fn watch_latencies(setup: &mut Setup, n: u64) -> (Vec<Duration>, Vec<Duration>) {
    use futures::StreamExt;
    use kube::api::{Patch, PatchParams};
    use kube::runtime::watcher;

    let name = id(0);
    let mut kube_watch = watcher(setup.api.clone(), watcher::Config::default()).boxed();
    // Past the initial listing: every object once, then InitDone.
    loop {
        match kube_watch.next().await.expect("the watcher runs").expect("a watcher event") {
            watcher::Event::InitDone => break,
            _ => continue,
        }
    }
    let kind = Kind::of::<LinkSpec>(NS);
    let mut local = setup
        .state
        .watch_kind_stream(&kind, LabelQuery::all(), &Default::default())
        .await
        .expect("an in-process watch");
    let mut kube_rs = Vec::with_capacity(n as usize);
    let mut in_process = Vec::with_capacity(n as usize);
    // MTUs no round of the other measurements sets (those stay below 10,000).
    for mtu in 1_000_001..=1_000_000 + n {
        let started = Instant::now();
        let patch = Patch::Merge(json!({"spec": {"mtu": mtu}}));
        let params = PatchParams::default();
        let write = setup.api.patch(&name, &params, &patch);
        let seen_by_kube_rs = async {
            loop {
                let event = kube_watch.next().await.expect("the watcher runs");
                if let Ok(watcher::Event::Apply(object)) = event
                    && watched_mtu(&object, &name) == Some(mtu)
                {
                    return started.elapsed();
                }
            }
        };
        let seen_in_process = async {
            loop {
                let event = local.next().await.expect("the watch runs");
                if let Some(r) = event.resource()
                    && u64::from(r.typed::<LinkSpec>().expect("a link").spec().mtu) == mtu
                {
                    return started.elapsed();
                }
            }
        };
        let (written, kube_rs_saw, in_process_saw) =
            futures::join!(write, seen_by_kube_rs, seen_in_process);
        written.expect("a patch through the API");
        kube_rs.push(kube_rs_saw);
        in_process.push(in_process_saw);
    }
    (kube_rs, in_process)
}

fn latency_figures(mut samples: Vec<Duration>) -> Value {
    samples.sort();
    json!({
        "samples": samples.len(),
        "p50_ns": common::ns(common::percentile(&samples, 50.0)),
        "p99_ns": common::ns(common::percentile(&samples, 99.0)),
        "max_ns": common::ns(*samples.last().expect("samples")),
    })
}

// ---------------------------------------------------------------------------
// paged_list

/// Reads a response's body to its end, keeping none of it; its length.
async fn drain(mut r: Response) -> usize {
    let (mut buf, mut total) = (Vec::new(), 0);
    while r.body_into(&mut buf).await {
        total += buf.len();
        buf.clear();
    }
    total + buf.len()
}

/// `n` objects listed through the API unpaged, then in pages of `page`.
async fn paged_list(n: u64, page: usize) -> Value {
    let (runtime, state) = populated(n).await;
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkSpec>(VERSION).namespaces([NS]))
        .expect("expose");
    let server = api.serve("127.0.0.1:0".parse().expect("addr")).await.expect("serve");
    let addr = server.local_addr();
    let path = format!("/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}");
    let accept = [("Accept", "application/json")];

    let base = common::peak_start();
    let started = Instant::now();
    let r = Response::open(addr, &path, &accept).await;
    assert_eq!(r.status, 200);
    let bytes = drain(r).await;
    let unpaged = started.elapsed();
    let unpaged_peak = common::peak_stop() - base;

    let base = common::peak_start();
    let started = Instant::now();
    let (mut listed, mut pages, mut token) = (0usize, Vec::new(), None::<String>);
    loop {
        let at = Instant::now();
        let query = match &token {
            Some(t) => format!("{path}?limit={page}&continue={t}"),
            None => format!("{path}?limit={page}"),
        };
        let r = Response::open(addr, &query, &accept).await;
        assert_eq!(r.status, 200);
        let body: Value = serde_json::from_slice(&r.body().await).expect("a page");
        pages.push(at.elapsed());
        listed += body["items"].as_array().map_or(0, Vec::len);
        match body["metadata"]["continue"].as_str() {
            Some(next) => token = Some(next.to_owned()),
            None => break,
        }
    }
    let paged = started.elapsed();
    let paged_peak = common::peak_stop() - base;
    assert_eq!(listed as u64, n, "the pages hold every object once");
    server.stop().await;
    runtime.stop().await;
    let count = pages.len();
    pages.sort();
    json!({
        "n": n,
        "page": page,
        "unpaged": { "ns": common::ns(unpaged), "bytes": bytes, "peak_heap_growth_bytes": unpaged_peak },
        "paged": {
            "ns": common::ns(paged),
            "pages": count,
            "page_p50_ns": common::ns(common::percentile(&pages, 50.0)),
            "page_max_ns": common::ns(*pages.last().expect("a page")),
            "peak_heap_growth_bytes": paged_peak,
        },
    })
}

// ---------------------------------------------------------------------------
// A raw HTTP/1.1 client: one request per connection, the body read as it comes.

/// A response being read.
struct Response {
    stream: TcpStream,
    /// Bytes read from the socket and not yet consumed.
    raw: Vec<u8>,
    pos: usize,
    framing: Framing,
    status: u16,
}

enum Framing {
    Length(usize),
    /// Bytes left in the current chunk; whether its CRLF is still to come.
    Chunked {
        left: usize,
        crlf: bool,
    },
    UntilClose,
    Done,
}

impl Response {
    async fn open(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut stream = TcpStream::connect(addr).await.expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{extra}\r\n");
        stream.write_all(request.as_bytes()).await.expect("send the request");
        let mut r = Response {
            stream,
            raw: Vec::with_capacity(256 * 1024),
            pos: 0,
            framing: Framing::UntilClose,
            status: 0,
        };
        let end = loop {
            if let Some(end) = r.raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break end;
            }
            assert!(r.fill().await, "the connection closed inside the headers");
        };
        let head = String::from_utf8_lossy(&r.raw[..end]).into_owned();
        r.pos = end + 4;
        let mut lines = head.lines();
        r.status = lines
            .next()
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|s| s.parse().ok())
            .expect("a status line");
        for line in lines {
            let Some((k, v)) = line.split_once(':') else { continue };
            let (k, v) = (k.trim(), v.trim());
            if k.eq_ignore_ascii_case("content-length") {
                r.framing = Framing::Length(v.parse().expect("a length"));
            } else if k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked") {
                r.framing = Framing::Chunked { left: 0, crlf: false };
            }
        }
        r
    }

    /// Reads more from the socket; false at its end.
    async fn fill(&mut self) -> bool {
        if self.pos > 0 && self.pos == self.raw.len() {
            self.raw.clear();
            self.pos = 0;
        } else if self.pos > 128 * 1024 {
            self.raw.drain(..self.pos);
            self.pos = 0;
        }
        let len = self.raw.len();
        self.raw.resize(len + 64 * 1024, 0);
        let n = self.stream.read(&mut self.raw[len..]).await.unwrap_or(0);
        self.raw.truncate(len + n);
        n > 0
    }

    /// Appends the next bytes of the body to `out`; false at its end.
    async fn body_into(&mut self, out: &mut Vec<u8>) -> bool {
        loop {
            let available = self.raw.len() - self.pos;
            match &mut self.framing {
                Framing::Done => return false,
                Framing::Length(0) => {
                    self.framing = Framing::Done;
                    return false;
                }
                Framing::Length(left) if available > 0 => {
                    let take = available.min(*left);
                    out.extend_from_slice(&self.raw[self.pos..self.pos + take]);
                    self.pos += take;
                    *left -= take;
                    return true;
                }
                Framing::UntilClose if available > 0 => {
                    out.extend_from_slice(&self.raw[self.pos..]);
                    self.pos = self.raw.len();
                    return true;
                }
                Framing::Chunked { left, crlf } if *left > 0 && available > 0 => {
                    let take = available.min(*left);
                    out.extend_from_slice(&self.raw[self.pos..self.pos + take]);
                    self.pos += take;
                    *left -= take;
                    *crlf = *left == 0;
                    return true;
                }
                Framing::Chunked { left: 0, crlf } => {
                    let rest = &self.raw[self.pos..];
                    if *crlf {
                        if rest.len() >= 2 {
                            assert_eq!(&rest[..2], b"\r\n", "a chunk ends with CRLF");
                            self.pos += 2;
                            *crlf = false;
                            continue;
                        }
                    } else if let Some(end) = rest.windows(2).position(|w| w == b"\r\n") {
                        let size = std::str::from_utf8(&rest[..end]).expect("a chunk size");
                        let size = usize::from_str_radix(size.trim(), 16).expect("a chunk size");
                        self.pos += end + 2;
                        if size == 0 {
                            self.framing = Framing::Done;
                            return false;
                        }
                        self.framing = Framing::Chunked { left: size, crlf: false };
                        continue;
                    }
                }
                _ => {}
            }
            if !self.fill().await {
                let whole = matches!(self.framing, Framing::UntilClose);
                self.framing = Framing::Done;
                assert!(whole, "the connection closed inside the body");
                return false;
            }
        }
    }

    async fn body(mut self) -> Vec<u8> {
        let mut out = Vec::new();
        while self.body_into(&mut out).await {}
        out
    }
}

// ---------------------------------------------------------------------------
// kube_list

fn kube_list(c: &mut Criterion, sys: &SystemRunner, setup: &Setup) {
    let n = setup.n;
    let list = sys.block_on(setup.api.list(&ListParams::default())).expect("kube-rs lists");
    assert_eq!(list.items.len() as u64, n, "kube-rs lists every resource");
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("link00000"));
    assert_eq!(list.items[0].data["spec"]["addresses"][0], "10.0.0.1/24");
    let path = format!("/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}");
    let body = sys.block_on(async {
        let r = Response::open(setup.kube, &path, &[("Accept", "application/json")]).await;
        assert_eq!(r.status, 200);
        r.body().await
    });
    let parsed: ObjectList<DynamicObject> = serde_json::from_slice(&body).expect("a list");
    assert_eq!(parsed.items.len() as u64, n);
    let floor = serde_json::to_vec(&list).expect("serialize");

    let mut g = c.benchmark_group("kube_list");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    g.bench_function("kube_rs_list", |b| {
        b.iter(|| {
            let list = sys.block_on(setup.api.list(&ListParams::default())).expect("list");
            assert_eq!(list.items.len() as u64, n);
            list
        })
    });
    g.bench_function("floor_serialize", |b| {
        b.iter(|| serde_json::to_vec(std::hint::black_box(&list)).expect("serialize"))
    });
    g.bench_function("raw_http_body", |b| {
        b.iter(|| {
            sys.block_on(async {
                let r = Response::open(setup.kube, &path, &[("Accept", "application/json")]).await;
                r.body().await
            })
        })
    });
    g.bench_function("client_parse", |b| {
        b.iter(|| {
            serde_json::from_slice::<ObjectList<DynamicObject>>(std::hint::black_box(&body))
                .expect("parse")
        })
    });
    g.finish();
    let object_bytes = serde_json::to_vec(&list.items[0]).expect("serialize").len();
    eprintln!(
        "kube_list: {n} objects, {} bytes served ({object_bytes} bytes for the first object), floor {} bytes",
        body.len(),
        floor.len()
    );
}

// ---------------------------------------------------------------------------
// kube_watch

/// Which watch reads the changes.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Route {
    Kubernetes,
    AdminSse,
    None,
}

/// An event as both routes carry it: the resource's name (or id) and MTU.
#[derive(Deserialize)]
struct KubeEvent {
    #[serde(rename = "type")]
    kind: String,
    object: KubeObject,
}

#[derive(Deserialize)]
struct KubeObject {
    metadata: KubeMeta,
    spec: Mtu,
}

#[derive(Deserialize)]
struct KubeMeta {
    name: String,
}

#[derive(Deserialize)]
struct Mtu {
    mtu: u32,
}

#[derive(Deserialize)]
struct AdminResource {
    metadata: AdminMeta,
    spec: Mtu,
}

#[derive(Deserialize)]
struct AdminMeta {
    id: String,
}

/// Checks one event: the change of this round to a resource not seen yet.
fn check(seen: &mut [bool], name: &str, mtu: u32, expected: u32) {
    assert_eq!(mtu, expected, "{name}: the MTU of this round");
    let i: usize = name.strip_prefix("link").and_then(|s| s.parse().ok()).expect("a link id");
    assert!(!std::mem::replace(&mut seen[i], true), "{name} seen twice");
}

/// Where the first complete record of `buf` ends: a newline (a Kubernetes
/// watch line), or an empty line (a server-sent event).
fn record_end(buf: &[u8], route: Route) -> Option<usize> {
    let mut from = 0;
    loop {
        let at = from + buf[from..].iter().position(|&b| b == b'\n')?;
        if route == Route::Kubernetes || buf.get(at + 1) == Some(&b'\n') {
            return Some(at);
        }
        from = at + 1;
    }
}

/// Reads events from `r` until all `n` of this round are in (`mtu`).
async fn read_events(mut r: Response, route: Route, n: u64, mtu: u32) {
    let mut seen = vec![false; n as usize];
    let mut count = 0u64;
    let mut buf = Vec::with_capacity(256 * 1024);
    let mut start = 0;
    let separator = if route == Route::Kubernetes { 1 } else { 2 };
    while count < n {
        // Complete records in buf[start..].
        while let Some(end) = record_end(&buf[start..], route) {
            let record = &buf[start..start + end];
            start += end + separator;
            match route {
                Route::Kubernetes => {
                    let event: KubeEvent = serde_json::from_slice(record).expect("an event");
                    assert_eq!(event.kind, "MODIFIED");
                    check(&mut seen, &event.object.metadata.name, event.object.spec.mtu, mtu);
                    count += 1;
                }
                Route::AdminSse => {
                    // `event: NAME`, `id: REVISION`, `data: JSON`; a comment starts with ':'.
                    if record.first() == Some(&b':') {
                        continue;
                    }
                    let text = std::str::from_utf8(record).expect("UTF-8");
                    let mut lines = text.lines();
                    assert_eq!(lines.next(), Some("event: updated"), "{text}");
                    let data = lines
                        .find_map(|l| l.strip_prefix("data: "))
                        .unwrap_or_else(|| panic!("no data in {text}"));
                    let r: AdminResource = serde_json::from_str(data).expect("a resource");
                    check(&mut seen, &r.metadata.id, r.spec.mtu, mtu);
                    count += 1;
                }
                Route::None => unreachable!("no watch, no events"),
            }
            if count == n {
                break;
            }
        }
        if count == n {
            break;
        }
        if start > 0 {
            buf.drain(..start);
            start = 0;
        }
        assert!(r.body_into(&mut buf).await, "the watch ended after {count} of {n} events");
    }
}

/// One round: every resource's MTU set to a new value (1,024 in flight),
/// read back through `route`; the time from the first write to the last
/// event read.
/// A watch for the client thread to open and read.
struct WatchJob {
    addr: SocketAddr,
    path: String,
    header: (&'static str, String),
    route: Route,
    n: u64,
    mtu: u32,
    /// The status, once the headers are in (the watch is registered then).
    opened: tokio::sync::oneshot::Sender<u16>,
    /// Every event of the round is read.
    done: tokio::sync::oneshot::Sender<()>,
}

/// The client of the watches: a thread of its own, as a client would be a
/// process of its own, so that its reading and parsing does not share the
/// thread of the state and the writes.
fn client_thread() -> std::sync::mpsc::Sender<WatchJob> {
    let (tx, rx) = std::sync::mpsc::channel::<WatchJob>();
    std::thread::Builder::new()
        .name("watch-client".into())
        .spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            for job in rx {
                rt.block_on(async {
                    let header = (job.header.0, job.header.1.as_str());
                    let r = Response::open(job.addr, &job.path, &[header]).await;
                    let status = r.status;
                    let _ = job.opened.send(status);
                    if status == 200 {
                        read_events(r, job.route, job.n, job.mtu).await;
                        let _ = job.done.send(());
                    }
                });
            }
        })
        .expect("the client thread starts");
    tx
}

/// One round: every resource's MTU set to a new value (1,024 in flight),
/// read back through `route` by the client thread; the time from the first
/// write to the last event read.
async fn watch_round(setup: &mut Setup, route: Route) -> Duration {
    setup.rounds += 1;
    let mtu = 1500 + setup.rounds;
    let n = setup.n;
    let from = setup.revision.to_string();
    let (addr, path, header) = match route {
        Route::Kubernetes => (
            setup.kube,
            format!(
                "/apis/{GROUP}/{VERSION}/namespaces/{NS}/{PLURAL}?watch=true&resourceVersion={from}"
            ),
            ("Accept", "application/json".to_owned()),
        ),
        Route::AdminSse => {
            (setup.admin, format!("/api/v1/watch/{NS}/links"), ("Last-Event-ID", from))
        }
        Route::None => (setup.admin, String::new(), ("", String::new())),
    };
    let done = if route == Route::None {
        None
    } else {
        let (opened, opened_rx) = tokio::sync::oneshot::channel();
        let (done, done_rx) = tokio::sync::oneshot::channel();
        let job = WatchJob { addr, path, header, route, n, mtu, opened, done };
        setup.client.send(job).expect("the client thread runs");
        // The headers are in: the watch is registered.
        assert_eq!(opened_rx.await, Ok(200), "{route:?}");
        Some(done_rx)
    };
    let state = setup.state.clone();
    let highest = std::cell::Cell::new(setup.revision);
    let started = Instant::now();
    let writes = pipelined(n, 1024, |i| {
        let (state, highest) = (state.clone(), &highest);
        async move {
            let ptr = Pointer::typed::<LinkSpec>(NS, id(i));
            let r = state
                .modify(&ptr, move |r: &mut Resource<LinkSpec>| r.spec_mut().mtu = mtu, None)
                .await
                .expect("modify");
            highest.set(highest.get().max(r.metadata().revision()));
        }
    });
    match done {
        Some(done) => {
            let ((), read) = futures::join!(writes, done);
            read.expect("the client read every event");
        }
        None => writes.await,
    }
    let elapsed = started.elapsed();
    setup.revision = highest.get();
    elapsed
}

fn kube_watch(c: &mut Criterion, sys: &SystemRunner, setup: &mut Setup) {
    let n = setup.n;
    let mut g = c.benchmark_group("kube_watch");
    g.throughput(Throughput::Elements(n));
    g.sample_size(10);
    for (name, route) in [
        ("kubernetes_watch", Route::Kubernetes),
        ("admin_sse_watch", Route::AdminSse),
        ("writes_alone", Route::None),
    ] {
        g.bench_function(name, |b| {
            b.iter_custom(|iters| {
                sys.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += watch_round(setup, route).await;
                    }
                    total
                })
            })
        });
    }
    g.finish();
}

// ---------------------------------------------------------------------------
// kubectl and cosictl

/// A command's wall time to its end, and its stdout.
async fn timed(mut cmd: Command) -> (Duration, Vec<u8>) {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let started = Instant::now();
    let out = tokio::task::spawn_blocking(move || cmd.output())
        .await
        .expect("the waiting thread")
        .expect("the command starts");
    let elapsed = started.elapsed();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (elapsed, out.stdout)
}

/// `cosictl` next to this bench's binary (`cargo build --release -p cosictl`).
fn cosictl_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile = exe.parent()?.parent()?;
    let target = profile.parent()?;
    [profile.to_path_buf(), target.join("release"), target.join("debug")]
        .into_iter()
        .map(|dir| dir.join("cosictl"))
        .find(|p| p.exists())
}

/// The kubectl client that serves `server` (the machine's dispatcher picks it
/// by the server's `/version`), or why there is none.
fn kubectl_version(server: &str) -> Result<String, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    std::fs::write(dir.path().join("config"), "").map_err(|e| e.to_string())?;
    let out = Command::new("kubectl")
        .env("KUBECONFIG", dir.path().join("config"))
        .env("HOME", dir.path())
        .args(["--server", server, "version", "-o", "json"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("kubectl: {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    Ok(v["clientVersion"]["gitVersion"].as_str().unwrap_or("?").to_owned())
}

/// Runs `cmd()` once to warm up (and checks its output), then `runs` times.
async fn measure(
    runs: usize,
    cmd: impl Fn() -> Command,
    check: impl Fn(&[u8]),
) -> serde_json::Value {
    let (_, out) = timed(cmd()).await;
    check(&out);
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs {
        samples.push(timed(cmd()).await.0);
    }
    json!({
        "median_ns": common::ns(common::median(samples.clone())),
        "samples_ns": samples.iter().map(|d| common::ns(*d)).collect::<Vec<_>>(),
    })
}

/// Lines of a table: a header and one per resource.
fn table_lines(n: u64) -> impl Fn(&[u8]) {
    move |out| {
        let text = String::from_utf8_lossy(out);
        assert_eq!(text.lines().count() as u64, n + 1, "a header and {n} rows:\n{text}");
    }
}

fn json_items(n: u64, kubectl: bool) -> impl Fn(&[u8]) {
    move |out| {
        let v: Value = serde_json::from_slice(out).expect("JSON");
        let items = if kubectl { &v["items"] } else { &v };
        assert_eq!(items.as_array().map(Vec::len), Some(n as usize), "{n} items");
    }
}

fn clients(mode: &Mode, sys: &SystemRunner, setup: &Setup) -> serde_json::Value {
    let n = setup.n;
    let runs = mode.scale(5, 1);
    let kube_url = format!("http://{}", setup.kube);
    let admin_url = format!("http://{}", setup.admin);
    let cosictl = cosictl_binary();
    let dir = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(dir.path().join("config"), "").expect("an empty kubeconfig");
    let kubectl_cmd = |extra: &[&str]| {
        let mut cmd = Command::new("kubectl");
        cmd.env("KUBECONFIG", dir.path().join("config"))
            .env("HOME", dir.path())
            .args(["--server", &kube_url, "--cache-dir"])
            .arg(dir.path().join("cache"))
            .args(["get", PLURAL, "-A"])
            .args(extra);
        cmd
    };
    let cosictl_cmd = |binary: &PathBuf, extra: &[&str]| {
        let mut cmd = Command::new(binary);
        cmd.args(["--endpoint", &admin_url, "get", "links"]).args(extra);
        cmd
    };
    sys.block_on(async {
        let server = kube_url.clone();
        let kubectl = tokio::task::spawn_blocking(move || kubectl_version(&server))
            .await
            .expect("the waiting thread");
        let (kubectl_table, kubectl_json) = match &kubectl {
            Ok(_) => (
                measure(runs, || kubectl_cmd(&[]), table_lines(n)).await,
                measure(runs, || kubectl_cmd(&["-o", "json"]), json_items(n, true)).await,
            ),
            Err(why) => {
                eprintln!("SKIPPED kubectl: {why}");
                (Value::Null, Value::Null)
            }
        };
        let (cosictl_table, cosictl_json) = match &cosictl {
            Some(binary) => (
                measure(runs, || cosictl_cmd(binary, &[]), table_lines(n)).await,
                measure(runs, || cosictl_cmd(binary, &["-o", "json"]), json_items(n, false)).await,
            ),
            None => {
                eprintln!("SKIPPED cosictl: build it first (cargo build --release -p cosictl)");
                (Value::Null, Value::Null)
            }
        };
        json!({
            "n": n,
            "runs": runs,
            "kubectl_version": kubectl.ok(),
            "cosictl": cosictl.map(|p| p.display().to_string()),
            "kubectl_table": kubectl_table,
            "kubectl_json": kubectl_json,
            "cosictl_table": cosictl_table,
            "cosictl_json": cosictl_json,
        })
    })
}

fn main() {
    let mode = Mode::from_args();
    let mut c = mode.criterion();
    let sys = actix::System::new();
    let n = mode.scale(10_000, 50);
    let mut setup = sys.block_on(setup(n));
    kube_list(&mut c, &sys, &setup);
    kube_watch(&mut c, &sys, &mut setup);
    let latency = mode.wants("watch_latency").then(|| {
        let (kube_rs, in_process) = sys.block_on(watch_latencies(&mut setup, mode.scale(1_000, 20)));
        json!({ "kube_rs_watcher": latency_figures(kube_rs), "in_process": latency_figures(in_process) })
    });
    let paged = mode
        .wants("paged_list")
        .then(|| sys.block_on(paged_list(mode.scale(1_000_000, 2_000), 500)));
    let clients = mode.wants("clients").then(|| clients(&mode, &sys, &setup));
    if clients.is_some() || latency.is_some() || paged.is_some() {
        let report = json!({
            "quick": !mode.full,
            "n": n,
            "watch_buffer": watch_buffer(n),
            "write_window": 1024,
            "clients": clients,
            "watch_latency": latency,
            "paged_list": paged,
        });
        common::write_report(&mode, "kubernetes", &report);
    }
    c.final_summary();
}
