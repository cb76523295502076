//! `cosictl` as a subprocess against a running runtime's admin endpoint.

use std::io::BufRead;
use std::process::{Command, Output, Stdio};

use cosi_runtime::admin::{Admin, AdminServer};
use cosi_runtime::controller::{
    Controller, Input, Output as Out, ReconcileContext, ReconcileResult,
};
use cosi_runtime::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Int(i64);
impl Spec for Int {
    const TYPE: &'static str = "Ints.test.cosi.dev";
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Double(i64);
impl Spec for Double {
    const TYPE: &'static str = "Doubles.test.cosi.dev";
}

struct Doubler;

impl Controller for Doubler {
    fn name(&self) -> &str {
        "Doubler"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<Int>("default")]
    }
    fn outputs(&self) -> Vec<Out> {
        vec![Out::exclusive::<Double>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for int in cx.list_typed::<Int>("default", &LabelQuery::all()).await? {
            let n = int.spec().0;
            let ptr = Pointer::typed::<Double>("default", int.id());
            cx.modify(&ptr, move |d: &mut Resource<Double>| d.spec_mut().0 = 2 * n).await?;
        }
        Ok(())
    }
}

async fn serving(expected: &[&str]) -> (Runtime, AdminServer) {
    let runtime = Runtime::start();
    runtime.register(|| Doubler).await.unwrap();
    let mut edge = Resource::new("default", "a", Int(1));
    edge.metadata_mut().labels_mut().insert("tier", "edge");
    runtime.state().create(edge, None).await.unwrap();
    runtime.state().create(Resource::new("default", "bb", Int(20)), None).await.unwrap();
    runtime.settled().await;
    let server = Admin::new(&runtime)
        .expect_controllers(expected.iter().copied())
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    (runtime, server)
}

/// Runs cosictl off the actix thread (the runtime answers it from there).
async fn cosictl(server: &AdminServer, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cosictl"));
    command.arg("--endpoint").arg(server.url()).args(args);
    tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap()
}

fn stdout(output: &Output) -> String {
    assert!(output.status.success(), "failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[actix::test]
async fn get_prints_tables_json_and_yaml() {
    let (_runtime, server) = serving(&["Doubler"]).await;
    let table = stdout(&cosictl(&server, &["get", "ints"]).await);
    assert_eq!(
        table,
        "NAMESPACE   TYPE                 ID   VERSION\n\
         default     Ints.test.cosi.dev   a    1\n\
         default     Ints.test.cosi.dev   bb   1\n"
    );
    let selected = stdout(
        &cosictl(&server, &["get", "Ints.test.cosi.dev", "-n", "default", "-l", "tier=edge"]).await,
    );
    assert_eq!(selected.lines().count(), 2, "{selected}");
    assert!(selected.contains("   a    1"), "{selected}");

    let json: serde_json::Value = serde_json::from_str(&stdout(
        &cosictl(&server, &["get", "doubles", "bb", "-o", "json"]).await,
    ))
    .unwrap();
    assert_eq!(json["spec"], 40);
    assert_eq!(json["metadata"]["owner"], "Doubler");
    let list: serde_json::Value =
        serde_json::from_str(&stdout(&cosictl(&server, &["get", "doubles", "-o", "json"]).await))
            .unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);
    let yaml = stdout(&cosictl(&server, &["get", "ints", "a", "-o", "yaml"]).await);
    assert!(yaml.contains("spec: 1") && yaml.contains("id: a"), "{yaml}");
    server.stop().await;
}

#[actix::test]
async fn graph_controllers_and_health() {
    let (_runtime, server) = serving(&["Doubler"]).await;
    let dot = stdout(&cosictl(&server, &["graph"]).await);
    assert!(dot.starts_with("digraph") && dot.contains("c:Doubler"), "{dot}");
    let svg = stdout(&cosictl(&server, &["graph", "-o", "svg"]).await);
    assert!(svg.contains("<svg") && svg.contains("Doubler"), "{svg}");
    let mermaid = stdout(&cosictl(&server, &["graph", "-o", "mermaid"]).await);
    assert!(mermaid.starts_with("flowchart"), "{mermaid}");

    let controllers = stdout(&cosictl(&server, &["controllers"]).await);
    let mut lines = controllers.lines();
    assert!(
        lines.next().unwrap().starts_with("CONTROLLER   STATUS    RECONCILES   ERRORS"),
        "{controllers}"
    );
    let row: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(&row[..2], ["Doubler", "running"], "{controllers}");
    assert_eq!(
        &row[3..7],
        ["0", "0", "0", "0"],
        "no error, panic, restart or retry: {controllers}"
    );

    let health = cosictl(&server, &["health"]).await;
    let text = stdout(&health);
    assert!(
        text.contains("[+]controllers ok") && text.ends_with("readyz check passed\n"),
        "{text}"
    );
    server.stop().await;
}

#[actix::test]
async fn watch_marks_created_and_destroyed_rows() {
    let (runtime, server) = serving(&[]).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_cosictl"))
        .args(["--endpoint", &server.url(), "get", "ints", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, mut lines) = tokio::sync::mpsc::unbounded_channel();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut next = async || lines.recv().await.expect("cosictl ended early");
    assert_eq!(next().await, "*   NAMESPACE   TYPE                 ID   VERSION");
    assert_eq!(next().await, "+   default     Ints.test.cosi.dev   a    1");
    assert_eq!(next().await, "+   default     Ints.test.cosi.dev   bb   1");

    let state = runtime.state();
    state.create(Resource::new("default", "c", Int(3)), None).await.unwrap();
    assert_eq!(next().await, "+   default     Ints.test.cosi.dev   c    1");
    let ptr = Pointer::typed::<Int>("default", "a");
    state.modify(&ptr, |r: &mut Resource<Int>| r.spec_mut().0 = 5, None).await.unwrap();
    assert_eq!(next().await, "    default     Ints.test.cosi.dev   a    2");
    state.destroy(&Pointer::typed::<Int>("default", "bb"), None).await.unwrap();
    assert_eq!(next().await, "-   default     Ints.test.cosi.dev   bb   1");

    // The server stops: the watch ends, and says why.
    server.stop().await;
    let output = tokio::task::spawn_blocking(move || {
        reader.join().unwrap();
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("the watch ended: the server is stopping"), "{stderr}");
}

#[actix::test]
async fn errors_are_clear_and_exit_non_zero() {
    let (runtime, server) = serving(&["Doubler", "Missing"]).await;
    for (args, says) in [
        (vec!["get", "widgets"], "unknown resource type \"widgets\""),
        (vec!["get", "ints", "-n", "default", "-l", "tier in (edge"], "malformed label selector"),
        (vec!["get", "ints", "zzz"], "zzz"),
        (vec!["get", "ints", "-w", "-l", "tier in (edge"], "malformed label selector"),
        (vec!["health"], "[-]controllers failed: not registered: Missing"),
    ] {
        let output = cosictl(&server, &args).await;
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(all.contains(says), "{args:?}: {all}");
    }
    server.stop().await;
    runtime.stop().await;

    // Nothing listens there any more.
    let command = Command::new(env!("CARGO_BIN_EXE_cosictl"))
        .args(["--endpoint", "http://127.0.0.1:1", "get", "ints"])
        .output();
    let output = command.unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("cosictl: cannot reach the admin endpoint at http://127.0.0.1:1"),
        "{stderr}"
    );
}

/// A loopback listener that accepts connections, reads the request, writes
/// `reply` (maybe nothing), and then keeps every connection open, silent.
fn silent_endpoint(reply: &'static str) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let serving = std::thread::spawn(move || {
        // One connection: the command under test. It is held open until the
        // client gives up and closes it (a read then returns 0).
        let (mut conn, _) = listener.accept().unwrap();
        let mut request = [0u8; 4096];
        let _ = conn.read(&mut request);
        conn.write_all(reply.as_bytes()).unwrap();
        let mut rest = Vec::new();
        let _ = conn.read_to_end(&mut rest);
    });
    (endpoint, serving)
}

fn cosictl_blocking(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cosictl")).args(args).output().unwrap()
}

#[test]
fn an_endpoint_that_accepts_and_never_answers_times_out() {
    let (endpoint, serving) = silent_endpoint("");
    let output =
        cosictl_blocking(&["--endpoint", &endpoint, "--timeout", "0.5", "get", "ints", "-n", "a"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("cosictl: the admin endpoint did not answer within 0.5s"),
        "{stderr}"
    );
    assert!(stderr.contains("--timeout"), "it says what to change: {stderr}");
    serving.join().unwrap();
}

#[test]
fn an_answer_that_stops_midway_times_out() {
    let headers = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\
                   Transfer-Encoding: chunked\r\n\r\n5\r\n[1,2,\r\n";
    let (endpoint, serving) = silent_endpoint(headers);
    let output = cosictl_blocking(&["--endpoint", &endpoint, "--timeout", "0.5", "controllers"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did not answer within 0.5s"), "{stderr}");
    serving.join().unwrap();
}

#[test]
fn the_timeout_comes_from_the_environment_and_is_checked() {
    let (endpoint, serving) = silent_endpoint("");
    let output = Command::new(env!("CARGO_BIN_EXE_cosictl"))
        .args(["--endpoint", &endpoint, "health"])
        .env("COSICTL_TIMEOUT", "0.25")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("did not answer within 0.25s"), "{stderr}");
    serving.join().unwrap();
    for bad in ["0", "-1", "soon", "NaN"] {
        let output = cosictl_blocking(&[&format!("--timeout={bad}"), "health"]);
        assert_eq!(output.status.code(), Some(2), "{bad}: a usage error");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("is not a number of seconds"), "{bad}: {stderr}");
    }
}
