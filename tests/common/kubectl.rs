//! kubectl for the Kubernetes API tests: the machine's dispatcher (it runs
//! `kubectl.1.27` … `kubectl.1.33` by the server's `/version`) against a
//! server on loopback, with an empty kubeconfig and a cache of its own,
//! bounded in time, killed when its guard drops. Part of the `kubernetes`
//! and `cluster` test binaries (`#[path = "../common/kubectl.rs"] mod kubectl;`).

use std::io::BufRead;
use std::net::SocketAddr;
use std::process::{Command, Stdio};
use std::time::Duration;

use tokio::sync::mpsc;

/// The machine's kubectl dispatcher with the client of `minor`, if both are there.
pub fn kubectl_available(minor: u32) -> bool {
    let bin = std::path::Path::new("/usr/lib/google-cloud-sdk/bin");
    let found = Command::new("kubectl")
        .arg("--help")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
        && bin.join(format!("kubectl.1.{minor}")).exists();
    if !found {
        // CI machines have it: there a missing kubectl fails, never skips.
        assert!(
            std::env::var_os("CI").is_none(),
            "kubectl (with kubectl.1.{minor}) is missing on a CI machine"
        );
        eprintln!("SKIPPED: kubectl (with kubectl.1.{minor}) is not installed here");
    }
    found
}

/// kubectl against `addr`, with an empty kubeconfig and a cache of its own.
pub struct Kubectl {
    dir: tempfile::TempDir,
    addr: SocketAddr,
}

impl Kubectl {
    pub fn new(addr: SocketAddr) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config"), "").unwrap();
        Kubectl { dir, addr }
    }

    /// Writes `text` to the file `name` in kubectl's directory; its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }

    /// [`run`](Self::run) with stdout and stderr joined.
    pub async fn run_joined(&self, args: &[&str]) -> (bool, String) {
        let (ok, out, err) = self.run(args).await;
        (ok, format!("{out}{err}"))
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.env("KUBECONFIG", self.dir.path().join("config"))
            .env("HOME", self.dir.path())
            .arg("--server")
            .arg(format!("http://{}", self.addr))
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd
    }

    /// Starts kubectl; its output arrives line by line on the returned
    /// channel (stderr lines prefixed `E: `). The child is killed when the
    /// guard drops.
    pub fn spawn(&self, args: &[&str]) -> (ChildGuard, mpsc::UnboundedReceiver<String>) {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let (tx, rx) = mpsc::unbounded_channel();
        let out = child.stdout.take().unwrap();
        let err = child.stderr.take().unwrap();
        let tx2 = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let _ = tx2.send(format!("E: {line}"));
            }
        });
        (ChildGuard(child), rx)
    }

    /// Runs kubectl to its end (at most 60 s) and returns (success, stdout, stderr).
    pub async fn run(&self, args: &[&str]) -> (bool, String, String) {
        let (mut guard, mut rx) = self.spawn(args);
        let (mut out, mut err) = (String::new(), String::new());
        let collect = async {
            while let Some(line) = rx.recv().await {
                let (to, text) = match line.strip_prefix("E: ") {
                    Some(e) => (&mut err, e.to_owned()),
                    None => (&mut out, line),
                };
                to.push_str(&text);
                to.push('\n');
            }
        };
        tokio::time::timeout(Duration::from_secs(60), collect)
            .await
            .unwrap_or_else(|_| panic!("kubectl {args:?} still runs after 60 s: {out}{err}"));
        // Its output closed: it has ended, or is about to.
        let (tx, done) = tokio::sync::oneshot::channel();
        let mut child = std::mem::replace(&mut guard.0, Command::new("true").spawn().unwrap());
        std::thread::spawn(move || {
            let _ = tx.send(child.wait().map(|s| s.success()).unwrap_or(false));
        });
        let ok = tokio::time::timeout(Duration::from_secs(10), done).await.unwrap().unwrap();
        (ok, out, err)
    }
}

/// Kills the child when dropped (a test that fails does not leave kubectl behind).
pub struct ChildGuard(pub std::process::Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
