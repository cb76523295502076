//! Authentication and authorization of the Kubernetes API, over TLS on
//! loopback (kubectl sends `--token` only over https): a self-signed
//! certificate made at test time, a small rustls client for raw requests,
//! and the machine's `kubectl` (skipped where there is none).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use crate::kubectl;
use cosi_runtime::State;
use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer, TlsError, Tokens, User};
use cosi_runtime::resource::{Pointer, Resource, Spec};
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkConfig {
    mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

const LINKS: &str = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs";
const ADMIN: &str = "s3cret";
const VIEWER: &str = "r0";

/// A self-signed certificate for `127.0.0.1` and `localhost`: (cert PEM, key PEM).
fn certificate() -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
        .expect("a self-signed certificate");
    (made.cert.pem(), made.signing_key.serialize_pem())
}

async fn seed(state: &State) {
    for id in ["eth0", "eth1"] {
        state.create(Resource::new("config", id, LinkConfig { mtu: 1500 }), None).await.unwrap();
    }
}

fn tokens() -> Tokens {
    Tokens::new()
        .token(ADMIN, User::new("admin").write_all())
        .token(VIEWER, User::new("viewer").read(["linkconfigs"]))
}

/// The API over `state` with tokens, over TLS with `cert`.
fn api(state: &State, cert: &(String, String)) -> KubernetesApi {
    KubernetesApi::new(state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]).namespaces(["config"]))
        .unwrap()
        .server_version(1, 33)
        .tokens(tokens())
        .tls(&cert.0, &cert.1)
        .unwrap()
}

async fn serve(api: KubernetesApi) -> (KubernetesServer, SocketAddr) {
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    assert_eq!(server.url(), format!("https://{addr}"));
    (server, addr)
}

/// The state's revision of config/eth0: what a refused request must leave alone.
async fn eth0_revision(state: &State) -> u64 {
    state.get(&Pointer::typed::<LinkConfig>("config", "eth0")).await.unwrap().metadata().revision()
}

// ---- a small HTTPS client ----------------------------------------------------

struct Answer {
    status: u16,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }

    fn reason(&self) -> String {
        self.json()["reason"].as_str().unwrap_or_default().to_owned()
    }
}

/// One HTTPS request (HTTP/1.1, `Connection: close`) trusting only `ca_pem`,
/// with `Authorization: Bearer <token>` when a token is given.
async fn https(
    addr: SocketAddr,
    ca_pem: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> Answer {
    https_with(addr, ca_pem, method, path, token, "{}").await
}

/// [`https`] with a body of its own.
async fn https_with(
    addr: SocketAddr,
    ca_pem: &str,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> Answer {
    let ca = rustls::pki_types::pem::PemObject::from_pem_slice(ca_pem.as_bytes()).unwrap();
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{}\r\n{body}",
        body.len(),
        token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default()
    );
    tokio::task::spawn_blocking(move || https_blocking(addr, ca, &request)).await.unwrap()
}

fn https_blocking(addr: SocketAddr, ca: CertificateDer<'static>, request: &str) -> Answer {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::IpAddress(addr.ip().into());
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    tls.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    // The server closes after its answer; a missing close_notify is no error here.
    if let Err(e) = tls.read_to_end(&mut raw) {
        assert_eq!(e.kind(), std::io::ErrorKind::UnexpectedEof, "{e}");
    }
    let raw = String::from_utf8(raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").expect("a head and a body");
    let status = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    Answer { status, body: if chunked { dechunk(body) } else { body.to_owned() } }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        out.push_str(&rest[..size]);
        body = &rest[size + 2..];
    }
    out
}

// ---- raw requests -------------------------------------------------------------

#[actix::test]
async fn a_read_only_token_cannot_write_and_an_admins_write_reaches_the_handler() {
    let state = State::start();
    seed(&state).await;
    let cert = certificate();
    let (server, addr) = serve(api(&state, &cert)).await;
    let before = eth0_revision(&state).await;

    let list = https(addr, &cert.0, "GET", LINKS, Some(VIEWER)).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.json()["items"].as_array().map(Vec::len), Some(2));

    for (method, path, verb) in [
        ("POST", LINKS.to_owned(), "create"),
        ("PUT", format!("{LINKS}/eth0"), "update"),
        ("PATCH", format!("{LINKS}/eth0"), "patch"),
        ("DELETE", format!("{LINKS}/eth0"), "delete"),
    ] {
        let refused = https(addr, &cert.0, method, &path, Some(VIEWER)).await;
        assert_eq!((refused.status, refused.reason().as_str()), (403, "Forbidden"), "{method}");
        let message = refused.json()["message"].as_str().unwrap().to_owned();
        assert!(
            message.contains(&format!("User \"viewer\" cannot {verb} resource \"linkconfigs\""))
                && message.contains("in API group \"net.cosi.dev\" in the namespace \"config\""),
            "{message}"
        );
        // An admin's write gets past the check to the handler, which refuses
        // it for its own reasons: no body (POST, PUT, PATCH), no such object
        // (DELETE of another name), so that nothing changes here either.
        let path = if method == "DELETE" { format!("{LINKS}/missing") } else { path };
        let admitted = https(addr, &cert.0, method, &path, Some(ADMIN)).await;
        assert!(
            ![401, 403].contains(&admitted.status) && admitted.status >= 400,
            "{method}: {} {}",
            admitted.status,
            admitted.body
        );
    }
    assert_eq!(eth0_revision(&state).await, before, "nothing changed");
    server.stop().await;
}

#[actix::test]
async fn an_unknown_token_or_none_is_401_and_discovery_is_open_to_any_known_user() {
    let state = State::start();
    seed(&state).await;
    let cert = certificate();
    let (server, addr) = serve(api(&state, &cert)).await;
    for path in ["/version", "/apis", "/apis/net.cosi.dev/v1alpha1", LINKS] {
        for token in [None, Some("WRONG"), Some("")] {
            let a = https(addr, &cert.0, "GET", path, token).await;
            assert_eq!((a.status, a.reason().as_str()), (401, "Unauthorized"), "{path} {token:?}");
        }
    }
    for path in ["/version", "/api", "/apis", "/apis/net.cosi.dev/v1alpha1"] {
        let a = https(addr, &cert.0, "GET", path, Some(VIEWER)).await;
        assert_eq!(a.status, 200, "{path}: {}", a.body);
    }
    // A type the viewer has no right to: refused before any handler (which
    // would answer 404, the type not being served).
    let other = https(addr, &cert.0, "GET", "/apis/net.cosi.dev/v1alpha1/routes", Some(VIEWER));
    assert_eq!(other.await.status, 403);
    let other = https(addr, &cert.0, "GET", "/apis/net.cosi.dev/v1alpha1/routes", Some(ADMIN));
    assert_eq!(other.await.status, 404);
    server.stop().await;
}

#[actix::test]
async fn anonymous_read_lets_requests_without_a_token_read_and_never_write() {
    let state = State::start();
    seed(&state).await;
    let cert = certificate();
    let (server, addr) = serve(api(&state, &cert).anonymous_read(true)).await;
    let before = eth0_revision(&state).await;
    assert_eq!(https(addr, &cert.0, "GET", "/version", None).await.status, 200);
    assert_eq!(https(addr, &cert.0, "GET", LINKS, None).await.status, 200);
    assert_eq!(https(addr, &cert.0, "GET", &format!("{LINKS}/eth1"), None).await.status, 200);
    let refused = https(addr, &cert.0, "POST", LINKS, None).await;
    assert_eq!((refused.status, refused.reason().as_str()), (403, "Forbidden"));
    assert!(
        refused.body.contains("User \\\"system:anonymous\\\" cannot create"),
        "{}",
        refused.body
    );
    let refused = https(addr, &cert.0, "DELETE", &format!("{LINKS}/eth0"), None).await;
    assert_eq!(refused.status, 403);
    // A wrong token is not anonymous.
    assert_eq!(https(addr, &cert.0, "GET", LINKS, Some("WRONG")).await.status, 401);
    assert_eq!(eth0_revision(&state).await, before, "nothing changed");
    server.stop().await;
}

#[actix::test]
async fn mounted_beside_an_applications_routes_only_the_api_paths_are_checked() {
    use actix_web::{App, HttpResponse, test, web};
    let state = State::start();
    let configure = KubernetesApi::new(&state).tokens(tokens()).configure();
    let app = test::init_service(
        App::new()
            .configure(configure)
            .route("/healthz", web::get().to(|| async { HttpResponse::Ok().body("ok") })),
    )
    .await;
    let call = |path: &'static str, token: Option<&'static str>| {
        let mut req = test::TestRequest::get().uri(path);
        if let Some(t) = token {
            req = req.insert_header(("Authorization", format!("Bearer {t}")));
        }
        req.to_request()
    };
    assert_eq!(test::call_service(&app, call("/healthz", None)).await.status(), 200);
    assert_eq!(test::call_service(&app, call("/version", None)).await.status(), 401);
    assert_eq!(test::call_service(&app, call("/version", Some(VIEWER))).await.status(), 200);
    assert_eq!(test::call_service(&app, call("/apis/x/y", Some(VIEWER))).await.status(), 404);
}

#[actix::test]
async fn without_tokens_the_api_stays_open() {
    let state = State::start();
    seed(&state).await;
    let cert = certificate();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1"))
        .unwrap()
        .tls(&cert.0, &cert.1)
        .unwrap();
    let (server, addr) = serve(api).await;
    assert_eq!(https(addr, &cert.0, "GET", LINKS, None).await.status, 200);
    // A write reaches the handler (which wants a body), no 401 or 403.
    assert_eq!(https(addr, &cert.0, "POST", LINKS, None).await.status, 422);
    server.stop().await;
}

#[test]
fn a_bad_certificate_or_key_is_a_typed_error() {
    let state_less = || {
        // `tls` needs no running state: any KubernetesApi will do.
        actix::System::new().block_on(async { KubernetesApi::new(&State::start()) })
    };
    let (cert, key) = certificate();
    let (_, other_key) = certificate();
    let e = state_less().tls("", &key).unwrap_err();
    assert!(matches!(e, TlsError::NoCertificate), "{e}");
    let e = state_less().tls(&cert, "not a key").unwrap_err();
    assert!(matches!(e, TlsError::Key(_)), "{e}");
    let e = state_less().tls(&cert, &other_key).unwrap_err();
    assert!(matches!(e, TlsError::Rejected(_)), "{e}");
    assert!(state_less().tls(&cert, &key).is_ok());
}

// ---- kubectl ----------------------------------------------------------------

/// Runs kubectl against `addr`, over https trusting `ca_pem` when given (else
/// plain http), with an empty kubeconfig and a cache of its own: (success,
/// stdout, stderr).
async fn kubectl(addr: SocketAddr, ca_pem: Option<&str>, args: &[&str]) -> (bool, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("config"), "").unwrap();
    let mut cmd = Command::new("timeout");
    cmd.arg("60")
        .arg("kubectl")
        .env("KUBECONFIG", dir.path().join("config"))
        .env("HOME", dir.path());
    match ca_pem {
        Some(pem) => {
            let ca = dir.path().join("ca.pem");
            std::fs::write(&ca, pem).unwrap();
            cmd.arg("--server")
                .arg(format!("https://{addr}"))
                .arg("--certificate-authority")
                .arg(ca);
        }
        None => {
            cmd.arg("--server").arg(format!("http://{addr}"));
        }
    }
    cmd.arg("--cache-dir").arg(dir.path().join("cache")).args(args).stdin(Stdio::null());
    let out =
        tokio::task::spawn_blocking(move || cmd.output().expect("kubectl runs")).await.unwrap();
    drop(dir);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[actix::test]
async fn kubectl_reads_with_a_right_token_and_is_refused_with_a_wrong_one() {
    if !kubectl::kubectl_available(33) {
        return;
    }
    let state = State::start();
    seed(&state).await;
    let cert = certificate();
    let (server, addr) = serve(api(&state, &cert)).await;
    let before = eth0_revision(&state).await;

    let (ok, out, err) =
        kubectl(addr, Some(&cert.0), &["get", "linkconfigs", "-n", "config", "--token", VIEWER])
            .await;
    assert!(ok, "{out}{err}");
    let names: Vec<&str> =
        out.lines().skip(1).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(names, ["eth0", "eth1"], "{out}");

    let args = ["get", "linkconfigs", "-n", "config", "--token", "WRONG"];
    let (ok, out, err) = kubectl(addr, Some(&cert.0), &args).await;
    assert!(!ok, "{out}{err}");
    // What kubectl says of a 401 on discovery (of a real apiserver's too).
    assert!(err.contains("error: You must be logged in to the server"), "{err}");

    // The viewer cannot delete; the state is unchanged.
    let (ok, out, err) =
        kubectl(addr, Some(&cert.0), &["delete", "lc", "eth0", "-n", "config", "--token", VIEWER])
            .await;
    assert!(!ok, "{out}{err}");
    assert!(
        err.contains("Error from server (Forbidden)")
            && err.contains("User \"viewer\" cannot delete resource \"linkconfigs\""),
        "{err}"
    );
    assert_eq!(eth0_revision(&state).await, before, "nothing changed");
    server.stop().await;
}

/// Over https, kubectl without credentials prompts for a user name (and
/// fails without a terminal): anonymous kubectl is a plain-http affair, e.g.
/// a read-only loopback port beside the https one with tokens.
#[actix::test]
async fn kubectl_reads_anonymously_when_anonymous_read_is_on_and_cannot_delete() {
    if !kubectl::kubectl_available(33) {
        return;
    }
    let state = State::start();
    seed(&state).await;
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]).namespaces(["config"]))
        .unwrap()
        .tokens(tokens());
    // Anonymous read off (the default): 401.
    let server = api.clone().serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let (ok, out, err) = kubectl(server.local_addr(), None, &["get", "lc", "-n", "config"]).await;
    assert!(!ok && err.contains("error: You must be logged in to the server"), "{out}{err}");
    server.stop().await;

    let server = api.anonymous_read(true).serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let addr = server.local_addr();
    let before = eth0_revision(&state).await;
    let (ok, out, err) = kubectl(addr, None, &["get", "lc", "eth1", "-n", "config"]).await;
    assert!(ok, "{out}{err}");
    assert!(out.contains("eth1"), "{out}");
    let (ok, out, err) = kubectl(addr, None, &["delete", "lc", "eth0", "-n", "config"]).await;
    assert!(!ok, "{out}{err}");
    assert!(
        err.contains("Error from server (Forbidden)")
            && err.contains("User \"system:anonymous\" cannot delete resource \"linkconfigs\""),
        "{err}"
    );
    assert_eq!(eth0_revision(&state).await, before, "nothing changed");
    server.stop().await;
}

/// `kubectl auth can-i` answers from the token's rights, `kubectl auth
/// whoami` names its user (kubectl 1.27 asks `v1beta1`, 1.33 `v1`).
async fn kubectl_asks_what_it_may_do_and_who_it_is(minor: u32) {
    let state = State::start();
    seed(&state).await;
    let cert = certificate();
    let (server, addr) = serve(api(&state, &cert).server_version(1, minor)).await;
    let ca = Some(cert.0.as_str());
    for (token, verb, expected) in [
        (VIEWER, "get", "yes"),
        (VIEWER, "list", "yes"),
        (VIEWER, "create", "no"),
        (VIEWER, "delete", "no"),
        (ADMIN, "create", "yes"),
        (ADMIN, "delete", "yes"),
    ] {
        let args = ["auth", "can-i", verb, "linkconfigs", "-n", "config", "--token", token];
        let (_, out, err) = kubectl(addr, ca, &args).await;
        // `can-i` exits 1 for "no", and prints the reason after it.
        let answer = out.trim().split(" - ").next().unwrap_or_default();
        assert_eq!(answer, expected, "{token} {verb}: {out}{err}");
    }
    for (token, user) in [(VIEWER, "viewer"), (ADMIN, "admin")] {
        let (ok, out, err) = kubectl(addr, ca, &["auth", "whoami", "--token", token]).await;
        assert!(ok && out.contains(user), "{token}: {out}{err}");
    }
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_27_asks_what_it_may_do_and_who_it_is() {
    if kubectl::kubectl_available(27) {
        kubectl_asks_what_it_may_do_and_who_it_is(27).await;
    }
}

#[actix::test]
async fn kubectl_1_33_asks_what_it_may_do_and_who_it_is() {
    if kubectl::kubectl_available(33) {
        kubectl_asks_what_it_may_do_and_who_it_is(33).await;
    }
}

#[actix::test]
async fn a_review_answers_for_its_caller_and_needs_no_right_of_its_own() {
    let state = State::start();
    let cert = certificate();
    let (server, addr) = serve(api(&state, &cert)).await;
    let ca = cert.0.as_str();
    let review = serde_json::json!({
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"namespace": "config", "verb": "create", "group": "net.cosi.dev", "resource": "linkconfigs"}},
    })
    .to_string();
    let path = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let viewer = https_with(addr, ca, "POST", path, Some(VIEWER), &review).await;
    assert_eq!(viewer.status, 201, "{}", viewer.body);
    assert_eq!(viewer.json()["status"]["allowed"], false);
    let admin = https_with(addr, ca, "POST", path, Some(ADMIN), &review).await;
    assert_eq!(admin.json()["status"]["allowed"], true);
    let nobody = https_with(addr, ca, "POST", path, None, &review).await;
    assert_eq!(nobody.status, 401);
    let who = "/apis/authentication.k8s.io/v1/selfsubjectreviews";
    let me = https(addr, ca, "POST", who, Some(VIEWER)).await;
    assert_eq!(me.json()["status"]["userInfo"]["username"], "viewer");
    server.stop().await;
}
