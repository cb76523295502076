//! The python `kubernetes` client (from PyPI) against the state served through
//! the Kubernetes API: `CustomObjectsApi` lists, a `watch.Watch()` stream from
//! the list's version (python's capitalised booleans, bookmarks) sees changes
//! made while it runs, a watch from a version the state no longer keeps raises
//! `ApiException` 410, and a relist sees the current state.
//!
//! The script is `tests/kubernetes/watch.py`; it runs with the python
//! named by `COSI_PYTHON` (a venv with `kubernetes` installed; `.ci/run` makes
//! one: `python3 -m venv target/pyk8s && target/pyk8s/bin/pip install kubernetes`).
//! Unset, the test uses `target/pyk8s/bin/python` if there is one, and is
//! skipped, loudly, if not, unless `CI` is set: then it fails.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use cosi_runtime::State;
use cosi_runtime::kubernetes::{Expose, KubernetesApi};
use cosi_runtime::resource::{Pointer, Resource, Spec};
use serde_json::{Value, json};
use tokio::sync::mpsc;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkConfig {
    mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

/// The python to run the script with, or `None` (after saying so) when this
/// machine has none and is not CI.
fn python() -> Option<PathBuf> {
    // Unset: the venv .ci/run makes, if this checkout has one.
    let default = concat!(env!("CARGO_MANIFEST_DIR"), "/target/pyk8s/bin/python");
    let python = std::env::var_os("COSI_PYTHON")
        .or_else(|| std::path::Path::new(default).exists().then(|| default.into()));
    let Some(python) = python else {
        if std::env::var_os("CI").is_some() {
            panic!("CI is set but COSI_PYTHON is not: .ci/run makes the venv and sets it");
        }
        eprintln!(
            "SKIPPED: COSI_PYTHON is not set (a python with the `kubernetes` package, e.g. \
             `python3 -m venv target/pyk8s && target/pyk8s/bin/pip install kubernetes` \
             then COSI_PYTHON=target/pyk8s/bin/python)"
        );
        return None;
    };
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(python);
    assert!(python.exists(), "COSI_PYTHON={} does not exist", python.display());
    Some(python)
}

fn link(ns: &str, id: &str, mtu: u32) -> Resource<LinkConfig> {
    Resource::new(ns, id, LinkConfig { mtu })
}

async fn set_mtu(state: &State, id: &str, mtu: u32) -> u64 {
    let ptr = Pointer::typed::<LinkConfig>("config", id);
    let r = state.modify(&ptr, move |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = mtu, None);
    r.await.unwrap().metadata().revision()
}

async fn create(state: &State, id: &str, mtu: u32) -> u64 {
    state.create(link("config", id, mtu), None).await.unwrap().metadata().revision()
}

/// The script, running: its stdout as JSON lines, its stdin, killed on drop.
struct Script {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::UnboundedReceiver<String>,
}

impl Script {
    fn start(python: &PathBuf, url: &str) -> Script {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/kubernetes/watch.py");
        let mut child = Command::new(python)
            .arg(script)
            .args([url, "config", "net.cosi.dev", "v1alpha1", "linkconfigs"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("run {}: {e}", python.display()));
        let stdout = child.stdout.take().unwrap();
        let stdin = child.stdin.take();
        let (tx, lines) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Script { child, stdin, lines }
    }

    /// The next line, a JSON object; the script's end or 30 s of silence fail the test.
    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(30), self.lines.recv())
            .await
            .expect("a line from the script within 30 s")
            .expect("the script ended early (its stderr is above)");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next line, which must be of `phase`.
    async fn phase(&mut self, phase: &str) -> Value {
        let line = self.next().await;
        assert_eq!(line["phase"], phase, "{line}");
        line
    }

    fn go(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }
}

impl Drop for Script {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rv(v: &Value) -> u64 {
    v["resourceVersion"].as_str().expect("a resourceVersion string").parse().unwrap()
}

fn names(list: &Value) -> Vec<&str> {
    list["items"].as_array().unwrap().iter().map(|i| i["name"].as_str().unwrap()).collect()
}

#[actix::test]
async fn python_lists_watches_with_bookmarks_gets_410_from_a_compacted_version_and_relists() {
    let Some(python) = python() else { return };
    // A history of 8 changes: the first watch resumes within it, the second
    // starts from a version 10 writes later, gone by then.
    let state = State::builder().history(8).open().await.unwrap();
    create(&state, "eth0", 1500).await;
    create(&state, "eth1", 9000).await;
    state.create(link("edge", "wan0", 1400), None).await.unwrap();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").namespaces(["config", "edge"]))
        .unwrap()
        .bookmark_interval(Duration::from_millis(100));
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let url = format!("http://{}", server.local_addr());
    let mut script = Script::start(&python, &url);

    let list = script.phase("list").await;
    assert_eq!(list["kind"], "LinkConfigList");
    assert_eq!(rv(&list), 3, "the list's version is its snapshot's revision");
    assert_eq!(names(&list), ["eth0", "eth1"]);
    assert_eq!(list["items"][1]["spec"], json!({"mtu": 9000}));
    assert_eq!(list["got"], json!({"kind": "LinkConfig", "name": "eth1", "spec": {"mtu": 9000}}));
    assert_eq!(list["cluster"], json!([["config", "eth0"], ["config", "eth1"], ["edge", "wan0"]]));
    assert_eq!(script.phase("watching").await["resourceVersion"], "3");

    // Changes while the watch runs (or before it connects: it resumes from 3).
    let modified = set_mtu(&state, "eth0", 1280).await;
    let added = create(&state, "eth2", 1500).await;
    state.destroy(&Pointer::typed::<LinkConfig>("config", "eth1"), None).await.unwrap();

    // Quiet until the watch has sent a periodic bookmark (every 100 ms),
    // then the last change.
    let mut changes = Vec::new();
    let mut bookmarks = Vec::new();
    let mut done = None;
    loop {
        if done.is_none() && !bookmarks.is_empty() {
            done = Some(create(&state, "done", 1).await);
        }
        let e = script.phase("event").await;
        if e["type"] == "BOOKMARK" {
            assert_eq!(e["kind"], "LinkConfig", "{e}");
            bookmarks.push(rv(&e));
            continue;
        }
        let last = e["type"] == "ADDED" && e["name"] == "done";
        changes.push((
            e["type"].as_str().unwrap().to_owned(),
            e["name"].as_str().unwrap().to_owned(),
            rv(&e),
        ));
        if last {
            break;
        }
    }
    let done = done.expect("the last change was made");
    let c = |t: &str, n: &str, rv: u64| (t.to_owned(), n.to_owned(), rv);
    assert_eq!(
        changes,
        [
            c("MODIFIED", "eth0", modified),
            c("ADDED", "eth2", added),
            c("DELETED", "eth1", added + 1),
            c("ADDED", "done", done),
        ]
    );
    assert!(!bookmarks.is_empty(), "periodic bookmarks on a quiet watch");
    assert!(bookmarks.windows(2).all(|w| w[0] <= w[1]), "bookmarks in order: {bookmarks:?}");
    let stale = script.phase("stale").await;
    assert_eq!(stale["watched_to"], done.to_string(), "the client tracked the last version");

    // More writes than the history keeps, then a watch from the list's version.
    let mut last = 0;
    for mtu in 0..10 {
        last = set_mtu(&state, "eth0", 2000 + mtu).await;
    }
    script.go();
    let expired = script.phase("expired").await;
    assert_eq!(expired["status"], 410, "python raised ApiException 410: {expired}");
    assert!(expired["reason"].as_str().unwrap().starts_with("Expired"), "{expired}");

    let relist = script.phase("relist").await;
    assert_eq!(rv(&relist), last, "the relist is at the newest revision");
    assert_eq!(names(&relist), ["done", "eth0", "eth2"]);
    assert_eq!(relist["items"][1]["spec"], json!({"mtu": 2009}));
    assert_eq!(relist["items"][1]["resourceVersion"], last.to_string());
    script.phase("end").await;
    let status = script.child.wait().unwrap();
    assert!(status.success(), "the script exits 0: {status}");
    server.stop().await;
}

/// The python client pages a list with `limit` and `_continue`, every page
/// from one snapshot.
#[actix::test]
async fn python_pages_a_list_with_limit_and_continue() {
    let Some(python) = python() else { return };
    let state = State::start();
    for i in 0..7 {
        create(&state, &format!("eth{i}"), 1500).await;
    }
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").namespaces(["config"]))
        .unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let script = r#"
import json, sys
from kubernetes import client
configuration = client.Configuration()
configuration.host = sys.argv[1]
api = client.CustomObjectsApi(client.ApiClient(configuration))
names, pages, token = [], 0, None
while True:
    kwargs = {"limit": 3}
    if token:
        kwargs["_continue"] = token
    page = api.list_namespaced_custom_object("net.cosi.dev", "v1alpha1", "config", "linkconfigs", **kwargs)
    pages += 1
    names += [item["metadata"]["name"] for item in page["items"]]
    token = page["metadata"].get("continue")
    if not token:
        break
print(json.dumps({"names": names, "pages": pages}))
"#;
    let url = server.url();
    let out = tokio::task::spawn_blocking(move || {
        Command::new(python).arg("-c").arg(script).arg(url).output().expect("python runs")
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let expected: Vec<String> = (0..7).map(|i| format!("eth{i}")).collect();
    assert_eq!(answer, json!({"names": expected, "pages": 3}));
    server.stop().await;
}
