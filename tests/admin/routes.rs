//! The admin endpoint over real HTTP on a loopback port: metrics, probes,
//! resources with label selectors, controllers, the graph in every format,
//! JSON errors for bad input, GET only, mounting into an own `App`, and a
//! unix socket.

use std::net::SocketAddr;

use crate::common::controllers::int_to_str;
use crate::common::{IntSpec, NS};
use crate::http::{get, request};
use cosi_runtime::admin::{Admin, AdminServer, Bind};
use cosi_runtime::prelude::*;

const LOOPBACK: &str = "127.0.0.1:0";

fn addr(server: &AdminServer) -> SocketAddr {
    match server.bind() {
        Bind::Tcp(addr) => *addr,
        other => panic!("not TCP: {other}"),
    }
}

async fn int(runtime: &Runtime, id: &str, n: i64, tier: Option<&str>) {
    let mut r = Resource::new(NS, id, IntSpec(n));
    if let Some(tier) = tier {
        r.metadata_mut().labels_mut().insert("tier", tier);
    }
    runtime.state().create(r, None).await.unwrap();
}

/// A runtime with IntToStr and three integers, settled, and its endpoint.
async fn serving() -> (Runtime, AdminServer, SocketAddr) {
    let runtime = Runtime::start();
    runtime.register(int_to_str).await.unwrap();
    int(&runtime, "b", 2, Some("edge")).await;
    int(&runtime, "a", 1, Some("core")).await;
    int(&runtime, "c", 3, None).await;
    runtime.settled().await;
    let server = Admin::new(&runtime)
        .expect_controllers(["IntToStr"])
        .serve(LOOPBACK.parse().unwrap())
        .await
        .unwrap();
    let addr = addr(&server);
    (runtime, server, addr)
}

fn ids(items: &serde_json::Value) -> Vec<&str> {
    items.as_array().unwrap().iter().map(|r| r["metadata"]["id"].as_str().unwrap()).collect()
}

#[actix::test]
async fn metrics_and_probes_answer_in_their_formats() {
    let (runtime, server, addr) = serving().await;
    let metrics = get(addr, "/metrics").await;
    assert_eq!(metrics.status, 200);
    assert_eq!(
        metrics.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    assert!(
        metrics.body.contains(
            "controller_runtime_reconcile_total{controller=\"IntToStr\",result=\"success\"}"
        ),
        "{}",
        metrics.body
    );
    assert!(metrics.body.ends_with("# EOF\n"));

    runtime.settled().await;
    let health = get(addr, "/healthz").await;
    assert_eq!((health.status, health.body.as_str()), (200, "ok"));
    let ready = get(addr, "/readyz").await;
    assert_eq!((ready.status, ready.body.as_str()), (200, "ok"));
    let verbose = get(addr, "/readyz?verbose").await;
    assert_eq!(verbose.status, 200);
    for line in [
        "[+]ping ok",
        "[+]state ok",
        "[+]bootstrapped ok",
        "[+]controllers ok",
        "readyz check passed",
    ] {
        assert!(verbose.body.contains(line), "{line} missing:\n{}", verbose.body);
    }
    let one = get(addr, "/readyz/controllers").await;
    assert_eq!((one.status, one.body.as_str()), (200, "ok"));
    let unknown = get(addr, "/readyz/nope").await;
    assert_eq!(unknown.status, 404);
    assert!(unknown.json()["error"].as_str().unwrap().contains("bootstrapped"));
    server.stop().await;
}

#[actix::test]
async fn readiness_fails_while_a_controller_is_missing_or_failed() {
    let runtime = Runtime::start();
    runtime.register(int_to_str).await.unwrap();
    runtime.settled().await;
    let server = Admin::new(&runtime)
        .expect_controllers(["IntToStr", "Missing"])
        .serve(LOOPBACK.parse().unwrap())
        .await
        .unwrap();
    let addr = addr(&server);
    let ready = get(addr, "/readyz").await;
    assert_eq!(ready.status, 503);
    assert!(
        ready.body.contains("[-]controllers failed: not registered: Missing"),
        "{}",
        ready.body
    );
    assert!(ready.body.ends_with("readyz check failed"), "{}", ready.body);
    // Excluding the failing check passes.
    let excluded = get(addr, "/readyz?exclude=controllers,bootstrapped").await;
    assert_eq!(excluded.status, 200, "{}", excluded.body);
    // Liveness does not depend on controllers.
    assert_eq!(get(addr, "/healthz").await.status, 200);
    runtime.stop().await;
    let stopped = get(addr, "/readyz?verbose").await;
    assert_eq!(stopped.status, 503);
    assert!(stopped.body.contains("[-]running failed"), "{}", stopped.body);
    server.stop().await;
}

#[actix::test]
async fn resources_are_listed_filtered_and_fetched_as_json() {
    let (_runtime, server, addr) = serving().await;
    let all = get(addr, "/api/v1/resources/default/Ints.test.cosi.dev").await;
    assert_eq!(all.status, 200);
    assert_eq!(all.header("content-type"), Some("application/json"));
    assert_eq!(ids(&all.json()), ["a", "b", "c"], "sorted by id");
    assert_eq!(all.json()[1]["spec"], 2);

    let edge = get(addr, "/api/v1/resources/default/Ints.test.cosi.dev?labels=tier%3Dedge").await;
    assert_eq!(ids(&edge.json()), ["b"]);
    let labelled = get(addr, "/api/v1/resources/default/ints?labels=tier").await;
    assert_eq!(ids(&labelled.json()), ["a", "b"], "the short, case-insensitive type name works");
    let not_core = get(addr, "/api/v1/resources/default/ints?labels=tier%20notin%20(core)").await;
    assert_eq!(ids(&not_core.json()), ["b"]);

    let one = get(addr, "/api/v1/resources/default/Strs.test.cosi.dev/b").await;
    assert_eq!(one.status, 200);
    let one = one.json();
    assert_eq!(one["spec"], "2");
    assert_eq!(one["metadata"]["owner"], "IntToStr");
    assert_eq!(one["metadata"]["version"], 1);

    let types = get(addr, "/api/v1/types").await.json();
    assert_eq!(
        types,
        serde_json::json!([
            { "type": "Ints.test.cosi.dev", "namespaces": ["default"] },
            { "type": "Strs.test.cosi.dev", "namespaces": ["default"] },
        ])
    );
    server.stop().await;
}

#[actix::test]
async fn bad_input_gets_a_4xx_with_a_json_error_that_says_why() {
    let (runtime, server, addr) = serving().await;
    let long = "n".repeat(300);
    for (path, status, says) in [
        ("/api/v1/resources/default/Widgets", 404, "unknown resource type \"Widgets\""),
        (
            "/api/v1/resources/default/ints?labels=tier%20in%20(edge",
            400,
            "malformed label selector",
        ),
        ("/api/v1/resources/default/ints?labels=bad%20key%3D1", 400, "\"bad key=1\""),
        ("/api/v1/resources/default/ints/a%01b", 400, "contains the control character"),
        (&format!("/api/v1/resources/{long}/ints"), 400, "namespace is 300 bytes long"),
        ("/api/v1/resources/default/ints/zzz", 404, "zzz"),
        ("/api/v1/graph?format=png", 400, "unknown graph format \"png\""),
        ("/api/v1/watch/default/Widgets", 404, "unknown resource type"),
        ("/healthz/nope", 404, "no check \"nope\""),
    ] {
        let answer = get(addr, path).await;
        assert_eq!(answer.status, status, "{path}: {}", answer.body);
        assert_eq!(answer.header("content-type"), Some("application/json"), "{path}");
        let json = answer.json();
        let error = json["error"].as_str().unwrap();
        assert!(error.contains(says), "{path}: {error}");
        assert_eq!(json["status"], status);
    }
    for method in ["POST", "PUT", "DELETE", "PATCH"] {
        let answer = request(addr, method, "/api/v1/resources/default/ints/a").await;
        assert_eq!(answer.status, 405, "{method}");
        assert!(answer.json()["error"].as_str().unwrap().contains("read-only"));
    }
    // Nothing changed, and the runtime is fine.
    runtime.settled().await;
    assert!(runtime.health().await.is_healthy());
    assert_eq!(
        runtime.state().list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap().len(),
        3
    );
    server.stop().await;
}

#[actix::test]
async fn controllers_and_the_graph_in_every_format() {
    let (_runtime, server, addr) = serving().await;
    let controllers = get(addr, "/api/v1/controllers").await.json();
    let c = &controllers[0];
    assert_eq!(c["name"], "IntToStr");
    assert_eq!(c["status"], "running");
    assert_eq!(c["healthy"], true);
    assert!(c["counters"]["reconciles"].as_u64().unwrap() >= 1);
    assert_eq!(c["counters"]["errors"], 0);
    assert_eq!(
        c["outputs"],
        serde_json::json!([{ "type": "Strs.test.cosi.dev", "kind": "exclusive" }])
    );
    assert_eq!(c["inputs"].as_array().unwrap().len(), 2);

    let json = get(addr, "/api/v1/graph").await.json();
    assert_eq!(json["controllers"], serde_json::json!(["IntToStr"]));
    assert_eq!(json["edges"].as_array().unwrap().len(), 3);
    let dot = get(addr, "/api/v1/graph?format=dot").await;
    assert_eq!(dot.header("content-type"), Some("text/vnd.graphviz"));
    assert!(dot.body.starts_with("digraph"));
    let mermaid = get(addr, "/api/v1/graph?format=mermaid").await;
    assert!(mermaid.body.starts_with("flowchart"), "{}", mermaid.body);
    let svg = get(addr, "/api/v1/graph?format=svg").await;
    assert_eq!(svg.status, 200);
    assert_eq!(svg.header("content-type"), Some("image/svg+xml"));
    assert!(svg.body.contains("<svg") && svg.body.contains("IntToStr"), "{}", svg.body);
    server.stop().await;
}

#[actix::test]
async fn the_routes_mount_into_an_own_app() {
    use actix_web::{App, HttpServer, web};
    let (runtime, server, _) = serving().await;
    server.stop().await;
    let routes = Admin::new(&runtime).configure();
    let own = HttpServer::new(move || {
        App::new()
            .route("/", web::get().to(|| async { "my app" }))
            .service(web::scope("/admin").configure(routes.clone()))
    })
    .workers(1)
    .disable_signals()
    .bind(LOOPBACK)
    .unwrap();
    let addr = own.addrs()[0];
    let own = own.run();
    let handle = own.handle();
    actix::spawn(own);
    assert_eq!(get(addr, "/").await.body, "my app");
    assert_eq!(
        ids(&get(addr, "/admin/api/v1/resources/default/strs").await.json()),
        ["a", "b", "c"]
    );
    assert_eq!(get(addr, "/admin/healthz").await.body, "ok");
    handle.stop(false).await;
}

#[cfg(unix)]
#[actix::test]
async fn it_serves_on_a_unix_socket() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.sock");
    let runtime = Runtime::start();
    let server = Admin::new(&runtime).serve(Bind::Unix(path.clone())).await.unwrap();
    assert_eq!(server.url(), format!("unix:{}", path.display()));
    let mut stream = tokio::net::UnixStream::connect(&path).await.unwrap();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nok"), "{answer}");

    // The path is taken: a second endpoint there is refused, and so is a
    // path holding something else than a socket.
    let taken = Admin::new(&runtime).serve(Bind::Unix(path.clone())).await.unwrap_err();
    assert_eq!(taken.kind(), std::io::ErrorKind::AddrInUse, "{taken}");
    let file = dir.path().join("not-a-socket");
    std::fs::write(&file, "keep me").unwrap();
    let refused = Admin::new(&runtime).serve(Bind::Unix(file.clone())).await.unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::AlreadyExists, "{refused}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "keep me");

    server.stop().await;
    assert!(!path.exists(), "the socket file is removed");
}
