//! The targets over HTTP handlers: the admin endpoint and the Kubernetes
//! API, driven in process (`actix_web::test`), one request per input.
//!
//! An input is a request in a plain text form, close to HTTP/1.1:
//!
//! ```text
//! PATCH /apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0?fieldManager=x
//! Content-Type: application/merge-patch+json
//!
//! {"spec": {"mtu": 9000}}
//! ```
//!
//! The first line is the method and the request target, then header lines
//! up to an empty line, then the body. An input whose method or target an
//! HTTP server would refuse before any handler runs (not a token, not an
//! origin-form URI) is skipped, as are header lines that are not headers.

use std::cell::OnceCell;
use std::future::Future;

use actix_web::body::{BodySize, MessageBody};
use actix_web::http::header::{AUTHORIZATION, HeaderName, HeaderValue};
use actix_web::http::{Method, Uri};
use actix_web::{App, test};
use cosi_runtime::Runtime;
use cosi_runtime::admin::Admin;
use cosi_runtime::controller::{Input, Output, from_fn};
use cosi_runtime::kubernetes::{Expose, KubernetesApi, Tokens, User};
use cosi_runtime::resource::{Kind, LabelQuery, Pointer, Resource, Spec};
use cosi_runtime::state::State;
use serde_json::Value;

use crate::targets::LinkConfig;

/// One decoded request.
#[derive(Clone, Debug)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// The request target: a path and maybe a query.
    pub uri: String,
    /// The path of `uri`, as the router sees it (without query or fragment).
    pub path: String,
    /// The headers, in order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Request {
    /// Decodes an input (see the module docs); `None` for one no server
    /// would hand to a handler.
    pub fn decode(data: &[u8]) -> Option<Request> {
        let mut rest = data;
        let mut line = || {
            let end = rest.iter().position(|b| *b == b'\n');
            let (line, next) = match end {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            rest = next;
            line.strip_suffix(b"\r").unwrap_or(line)
        };
        let first = line();
        let space = first.iter().position(|b| *b == b' ')?;
        let method = Method::from_bytes(&first[..space]).ok()?;
        let uri = std::str::from_utf8(&first[space + 1..]).ok()?.to_owned();
        let parsed: Uri = uri.parse().ok()?;
        if !uri.starts_with('/') || parsed.scheme().is_some() {
            return None;
        }
        let mut headers = Vec::new();
        loop {
            let header = line();
            if header.is_empty() {
                break;
            }
            let Some(colon) = header.iter().position(|b| *b == b':') else { continue };
            let (Ok(name), Ok(value)) = (
                HeaderName::from_bytes(&header[..colon]),
                HeaderValue::from_bytes(header[colon + 1..].trim_ascii()),
            ) else {
                continue;
            };
            headers.push((name, value));
        }
        let path = parsed.path().to_owned();
        Some(Request { method, uri, path, headers, body: rest.to_vec() })
    }

    fn to_test_request(&self) -> test::TestRequest {
        let mut req = test::TestRequest::default().method(self.method.clone()).uri(&self.uri);
        for (name, value) in &self.headers {
            req = req.append_header((name.clone(), value.clone()));
        }
        req.set_payload(self.body.clone())
    }
}

/// An answer: its status, and its body when it has a known size (a watch's
/// stream is never read: it would not end).
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body, unless it is a stream.
    pub body: Option<Vec<u8>>,
}

impl Answer {
    fn json(&self) -> Option<Value> {
        self.body.as_ref().and_then(|b| serde_json::from_slice(b).ok())
    }
}

/// Sends `request` to the service `app` (from `test::init_service`).
pub async fn send<S, B>(app: &S, request: &Request) -> Answer
where
    S: actix_web::dev::Service<
            actix_http::Request,
            Response = actix_web::dev::ServiceResponse<B>,
            Error = actix_web::Error,
        >,
    B: MessageBody,
{
    match test::try_call_service(app, request.to_test_request().to_request()).await {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let body = match resp.response().body().size() {
                BodySize::Stream => None,
                BodySize::None | BodySize::Sized(_) => Some(test::read_body(resp).await.to_vec()),
            };
            Answer { status, body }
        }
        Err(e) => {
            let resp = e.error_response();
            let status = resp.status().as_u16();
            let body = match resp.into_body().try_into_bytes() {
                Ok(bytes) => Some(bytes.to_vec()),
                Err(_) => None,
            };
            Answer { status, body }
        }
    }
}

thread_local! {
    /// The actix system the HTTP targets run in, one per thread, made once.
    static SYSTEM: actix::SystemRunner = actix::System::new();
    /// The admin target's runtime, made once (the admin endpoint only reads).
    static ADMIN: OnceCell<Runtime> = const { OnceCell::new() };
}

/// Whether `COSI_FUZZ_TRACE` is set: the HTTP targets then print each
/// request and its answer (to see what seeds reach).
fn trace() -> bool {
    static TRACE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *TRACE.get_or_init(|| std::env::var_os("COSI_FUZZ_TRACE").is_some())
}

fn traced(request: &Request, answer: &Answer) {
    if trace() {
        let body = answer.body.as_deref().map(String::from_utf8_lossy);
        let body: String = body.as_deref().unwrap_or("<stream>").chars().take(300).collect();
        eprintln!("{} {} -> {} {body}", request.method, request.uri, answer.status);
    }
}

fn block_on<F: Future>(future: F) -> F::Output {
    SYSTEM.with(|system| system.block_on(future))
}

/// What a controller of the admin target's runtime writes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkSummary {
    /// Links seen.
    pub links: u32,
}

impl Spec for LinkSummary {
    const TYPE: &'static str = "LinkSummaries.net.cosi.dev";
}

const DYNAMIC: &str = "Things.fuzz.cosi.dev";

async fn admin_runtime() -> Runtime {
    let runtime = Runtime::start();
    runtime
        .register(|| {
            from_fn(
                "Summarizer",
                vec![Input::weak::<LinkConfig>("config")],
                vec![Output::exclusive::<LinkSummary>()],
                async |cx| {
                    let links = cx.list_typed::<LinkConfig>("config", &LabelQuery::all()).await?;
                    let summary = LinkSummary { links: links.len() as u32 };
                    let out = Pointer::typed::<LinkSummary>("status", "links");
                    cx.modify(&out, move |s| *s.spec_mut() = summary.clone()).await?;
                    Ok(())
                },
            )
        })
        .await
        .expect("the controller registers");
    seed_links(&runtime.state()).await;
    runtime.settled().await;
    runtime
}

/// eth0 (labelled), eth1 (with a finalizer) and a controller-owned eth2 in
/// `config`, a dynamic thing in `other`.
async fn seed_links(state: &State) {
    let mut eth0 = Resource::new("config", "eth0", LinkConfig { mtu: 1500 });
    eth0.metadata_mut().labels_mut().insert("tier", "edge");
    state.create(eth0, None).await.expect("eth0");
    let mut eth1 = Resource::new("config", "eth1", LinkConfig { mtu: 9000 });
    eth1.metadata_mut().finalizers_mut().add("net.cosi.dev/cleanup");
    state.create(eth1, None).await.expect("eth1");
    let eth2 = Resource::new("config", "eth2", LinkConfig { mtu: 1280 });
    state.create(eth2, Some("Linker")).await.expect("eth2");
    let thing = cosi_runtime::resource::DynamicResource::new(
        cosi_runtime::resource::Metadata::new(Pointer::new("other", DYNAMIC, "t1")),
        serde_json::json!({"a": [1, 2, {"b": "c"}]}),
    );
    state.create(thing.into_any(), None).await.expect("t1");
}

/// Every resource of the fuzzed types in `namespaces`, as JSON (metadata
/// with revisions and versions, spec): equal before and after a request
/// that changed nothing.
async fn fingerprint(state: &State, namespaces: &[String]) -> Vec<Value> {
    let mut all = Vec::new();
    for ns in namespaces {
        for ty in [LinkConfig::TYPE, LinkSummary::TYPE, DYNAMIC] {
            let Ok(found) = state.list(&Kind::new(ns, ty), &LabelQuery::all()).await else {
                continue;
            };
            for r in found {
                all.push(serde_json::to_value(r.to_dynamic().expect("dynamic")).expect("json"));
            }
        }
    }
    all
}

/// `%XX` decoded (a bad escape is kept as written).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) =
                (bytes.get(i + 1).and_then(|b| hex(*b)), bytes.get(i + 2).and_then(|b| hex(*b)))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The namespaces a request may touch: the fixtures' and the one its path names.
fn namespaces_of(request: &Request) -> Vec<String> {
    let mut namespaces: Vec<String> = ["config", "status", "other"].map(String::from).to_vec();
    let segments: Vec<&str> = request.path.split('/').collect();
    for pair in segments.windows(2) {
        if pair[0] == "namespaces" || pair[0] == "resources" || pair[0] == "watch" {
            let ns = percent_decode(pair[1]);
            if !namespaces.contains(&ns) {
                namespaces.push(ns);
            }
        }
    }
    namespaces
}

/// The admin endpoint (read-only) over a runtime with one controller and
/// four resources: every answer is a valid status, no `500`, errors on
/// `/api/v1` are `{"error", "status"}` JSON of the same status, and no
/// request changes the state.
pub fn admin_http(data: &[u8]) {
    let Some(request) = Request::decode(data) else { return };
    block_on(async {
        let runtime = match ADMIN.with(|cell| cell.get().cloned()) {
            Some(runtime) => runtime,
            None => {
                let runtime = admin_runtime().await;
                ADMIN.with(|cell| cell.get_or_init(|| runtime.clone()).clone())
            }
        };
        let admin = Admin::new(&runtime)
            .expect_controllers(["Summarizer"])
            .kinds([Kind::new("other", DYNAMIC)]);
        let app = test::init_service(App::new().configure(admin.configure())).await;
        let state = runtime.state();
        let namespaces = namespaces_of(&request);
        let before = fingerprint(&state, &namespaces).await;
        let answer = send(&app, &request).await;
        traced(&request, &answer);
        assert!((100..600).contains(&answer.status), "status {}", answer.status);
        let probe = ["/healthz", "/readyz"].iter().any(|p| request.path.starts_with(p));
        assert!(
            answer.status < 500 || (probe && answer.status == 503),
            "{} {}: {} {:?}",
            request.method,
            request.uri,
            answer.status,
            answer.body.as_deref().map(String::from_utf8_lossy)
        );
        if answer.status >= 400 && is_admin_api_route(&request.path) {
            let json = answer.json().unwrap_or_else(|| panic!("not JSON: {answer:?}"));
            assert_eq!(json["status"], answer.status, "{json}");
            assert!(json["error"].is_string(), "{json}");
        }
        drop(answer);
        assert_eq!(fingerprint(&state, &namespaces).await, before, "the admin endpoint wrote");
    });
}

/// Whether `path` is one of the admin endpoint's `/api/v1` routes (whose
/// errors are JSON): other paths get actix-web's own empty `404`.
fn is_admin_api_route(path: &str) -> bool {
    if ["/api/v1/types", "/api/v1/controllers", "/api/v1/graph"].contains(&path) {
        return true;
    }
    ["/api/v1/resources/", "/api/v1/watch/"].iter().any(|prefix| {
        path.strip_prefix(prefix).is_some_and(|rest| {
            let mut parts = rest.splitn(3, '/');
            let (ns, ty, id) = (parts.next(), parts.next(), parts.next());
            ns.is_some_and(|s| !s.is_empty())
                && ty.is_some_and(|s| !s.is_empty())
                && id.is_none_or(|s| !s.is_empty())
        })
    })
}

/// Whether `path` is one the Kubernetes API answers (whose errors are
/// `Status` objects): `/version`, everything under `/api` and `/apis`, and
/// the OpenAPI documents. Other paths get actix-web's own empty `404`.
fn is_api_path(path: &str) -> bool {
    let openapi_group = path.strip_prefix("/openapi/v3/apis/").is_some_and(|rest| {
        let parts: Vec<&str> = rest.split('/').collect();
        parts.len() == 2 && parts.iter().all(|p| !p.is_empty())
    });
    ["/version", "/api", "/apis", "/openapi/v2", "/openapi/v3"].contains(&path)
        || path.starts_with("/api/")
        || path.starts_with("/apis/")
        || openapi_group
}

/// The Kubernetes API over a fresh state per input, two types exposed (one
/// typed, one dynamic), four resources (one with a finalizer, one owned by
/// a controller), bearer tokens when the request carries an Authorization
/// header: every answer is a valid status, no `500`, every error on
/// the API's paths is a `Status` of the same code, and a request that fails
/// changes nothing.
pub fn kube_http(data: &[u8]) {
    let Some(request) = Request::decode(data) else { return };
    block_on(async {
        let state = State::start();
        seed_links(&state).await;
        let mut api = KubernetesApi::new(&state)
            .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]).namespaces(["config"]))
            .expect("LinkConfig exposed")
            .expose(Expose::resource_type(DYNAMIC, "v1").kind("Thing").namespaces(["other"]))
            .expect("Thing exposed")
            .max_request_body(64 * 1024);
        // A request with an Authorization header meets the token check:
        // `admin` writes everything, `viewer` reads linkconfigs, anonymous
        // requests read.
        if request.headers.iter().any(|(name, _)| name == AUTHORIZATION) {
            api = api
                .tokens(
                    Tokens::new()
                        .token("s3cret", User::new("admin").write_all())
                        .token("r0", User::new("viewer").read(["linkconfigs"])),
                )
                .anonymous_read(true);
        }
        let app = test::init_service(App::new().configure(api.configure())).await;
        let namespaces = namespaces_of(&request);
        let before = fingerprint(&state, &namespaces).await;
        let answer = send(&app, &request).await;
        traced(&request, &answer);
        assert!((100..600).contains(&answer.status), "status {}", answer.status);
        assert!(
            answer.status < 500,
            "{} {}: {} {:?}",
            request.method,
            request.uri,
            answer.status,
            answer.body.as_deref().map(String::from_utf8_lossy)
        );
        if answer.status >= 400 && is_api_path(&request.path) {
            let json = answer.json().unwrap_or_else(|| panic!("not JSON: {answer:?}"));
            assert_eq!(json["kind"], "Status", "{json}");
            assert_eq!(json["code"], answer.status, "{json}");
        }
        let failed = answer.status >= 400;
        drop(answer);
        if failed {
            let after = fingerprint(&state, &namespaces).await;
            assert_eq!(after, before, "a request that failed changed the state");
        }
    });
}
