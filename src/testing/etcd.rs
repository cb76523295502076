//! A throwaway etcd for tests (feature `etcd`): one node on free loopback
//! ports, a scratch data directory, stopped on drop.
//!
//! ```no_run
//! use cosi_runtime::State;
//! use cosi_runtime::testing::etcd::TestEtcd;
//! # actix::System::new().block_on(async {
//! let Some(etcd) = TestEtcd::start() else { return }; // no `etcd` binary: skipped, loudly
//! let state = State::builder().etcd(etcd.config("my-test")).open().await.unwrap();
//! # });
//! ```
//!
//! Without an `etcd` binary on `PATH` (or in `COSI_ETCD`), [`TestEtcd::start`]
//! prints that the test is skipped and returns `None`; with the `CI`
//! environment variable set it panics instead, so CI never skips in silence.
//! It never uses port 2379 (a system etcd may run there).

use std::io::{Read, Write as _};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::scratch::ScratchDir;
use crate::state::EtcdConfig;

/// A single-node etcd on loopback, for one test.
#[derive(Debug)]
pub struct TestEtcd {
    child: Option<Child>,
    dir: ScratchDir,
    client_port: u16,
    peer_port: u16,
}

/// The etcd binary: `COSI_ETCD`, or `etcd` on `PATH`.
fn binary() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("COSI_ETCD") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("etcd")).find(|p| p.is_file())
}

fn free_port() -> u16 {
    loop {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind a loopback port");
        let port = listener.local_addr().expect("a local address").port();
        if port != 2379 && port != 2380 {
            return port;
        }
    }
}

/// Whether etcd's `/health` says so.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect((Ipv4Addr::LOCALHOST, port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"GET /health HTTP/1.0\r\nHost: localhost\r\n\r\n").is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = stream.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

impl TestEtcd {
    /// Starts etcd and waits until it is healthy (about 0.35 s).
    ///
    /// Returns `None`, after printing why, when no `etcd` binary exists and
    /// `CI` is not set.
    ///
    /// # Panics
    /// When etcd does not start or become healthy within 20 s, or when the
    /// binary is missing and `CI` is set.
    pub fn start() -> Option<TestEtcd> {
        if binary().is_none() {
            if std::env::var_os("CI").is_some() {
                panic!("CI is set but no `etcd` binary was found: install etcd-server");
            }
            eprintln!(
                "SKIPPED: this test needs an `etcd` binary (apt-get install etcd-server, \
                 or COSI_ETCD=/path/to/etcd)"
            );
            return None;
        }
        // A free port can be taken again between our probe and etcd's bind
        // (tests run in parallel, and every client connection takes an
        // ephemeral port): on "address already in use", try other ports.
        let mut attempts = 0;
        loop {
            let client_port = free_port();
            let mut peer_port = free_port();
            while peer_port == client_port {
                peer_port = free_port();
            }
            let mut etcd = TestEtcd { child: None, dir: ScratchDir::new(), client_port, peer_port };
            match etcd.launch() {
                Ok(()) => return Some(etcd),
                Err(log) if log.contains("address already in use") && attempts < 10 => {
                    attempts += 1;
                }
                Err(log) => panic!("etcd did not start: {log}"),
            }
        }
    }

    /// Starts the etcd process and waits until it is healthy; on an early
    /// exit, returns its log.
    fn launch(&mut self) -> Result<(), String> {
        let (c, p) = (self.client_port, self.peer_port);
        let client = format!("http://127.0.0.1:{c}");
        let peer = format!("http://127.0.0.1:{p}");
        let log = std::fs::File::create(self.dir.path().join("etcd.log")).expect("etcd log file");
        let child = Command::new(binary().expect("an etcd binary"))
            .arg("--name=test")
            .arg(format!("--data-dir={}", self.dir.path().join("data").display()))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={peer}"))
            .arg(format!("--initial-advertise-peer-urls={peer}"))
            .arg(format!("--initial-cluster=test={peer}"))
            .args(["--initial-cluster-state=new", "--heartbeat-interval=10"])
            .args(["--election-timeout=100", "--log-level=warn", "--logger=zap"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log))
            .spawn()
            .expect("start etcd");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !healthy(c) {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                self.child = None;
                return Err(format!("etcd exited with {status}: {}", self.log()));
            }
            assert!(Instant::now() < deadline, "etcd not healthy after 20 s: {}", self.log());
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("etcd.log")).unwrap_or_default()
    }

    /// The client URL, `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.client_port)
    }

    /// A state configuration for this etcd under `prefix`, with short
    /// timeouts (2 s) fit for tests.
    pub fn config(&self, prefix: &str) -> EtcdConfig {
        EtcdConfig::new([self.endpoint()])
            .prefix(prefix)
            .connect_timeout(Duration::from_secs(2))
            .request_timeout(Duration::from_secs(2))
    }

    /// Kills etcd (SIGKILL); [`restart`](Self::restart) brings it back.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts etcd again on the same ports and data directory.
    ///
    /// # Panics
    /// As [`start`](Self::start).
    pub fn restart(&mut self) {
        self.kill();
        // The ports must stay the same (clients hold the endpoint); another
        // process may have grabbed one meanwhile, so wait for it to go.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match self.launch() {
                Ok(()) => return,
                Err(log) if log.contains("address already in use") && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(log) => panic!("etcd did not restart: {log}"),
            }
        }
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        self.kill();
    }
}
