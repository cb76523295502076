//! A sharded queue controller in several real processes on one etcd: every
//! key reconciled by the owner of its shard; a SIGKILLed member's shards
//! owned again within 2 × the lease TTL; a join and a leave move only the
//! shards the ring moves; and, from the reconcile log every process writes,
//! never two processes reconciling one key at once, and no write committed
//! under a shard token after a newer token's reconcile of that key began.
//!
//! The members are this test binary, started on the ignored
//! `sharded::sharded_child` entry point; each ends when its stdin closes
//! (a clean leave: its lease is revoked) or when it is killed. Every wait
//! is on a watch event or an etcd read, with a deadline; no sleeps.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::shard::{Ring, ShardId, Sharding, shard_of};
use cosi_runtime::state::{EtcdConfig, WatchOptions, WatchStream};
use cosi_runtime::testing::conformance::{IntSpec, NS, StrSpec};
use cosi_runtime::testing::etcd::TestEtcd;
use futures::StreamExt;

const ENDPOINT: &str = "COSI_SHARDED_ENDPOINT";
const PREFIX: &str = "COSI_SHARDED_PREFIX";
const MEMBER: &str = "COSI_SHARDED_MEMBER";
const LOG_DIR: &str = "COSI_SHARDED_LOG";
const WORK_MS: &str = "COSI_SHARDED_WORK_MS";

const KEYS: usize = 300;
const SHARDS: u32 = 64;
const TTL: Duration = Duration::from_secs(2);
const DEADLINE: Duration = Duration::from_secs(90);
const CONTROLLER: &str = "sharder";

fn config(endpoint: &str, prefix: &str) -> EtcdConfig {
    EtcdConfig::new([endpoint])
        .prefix(prefix)
        .lease_ttl(TTL)
        .connect_timeout(Duration::from_secs(5))
        .request_timeout(Duration::from_secs(5))
}

fn now_ns() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos()
}

/// Copies each `IntSpec` to a `StrSpec` stamped `<member>:<value>:<start>`, with a
/// 5 ms wait standing for I/O, logging each reconcile.
struct Sharder {
    member: Arc<str>,
    /// How long a reconcile's I/O takes.
    work: Duration,
    log: Arc<std::sync::Mutex<std::fs::File>>,
}

impl Sharder {
    fn log(&self, line: String) {
        let mut f = self.log.lock().unwrap();
        let _ = writeln!(f, "{line}");
        let _ = f.flush();
    }
}

impl QueueController for Sharder {
    fn name(&self) -> &str {
        CONTROLLER
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<IntSpec>(NS)],
            vec![Output::exclusive::<StrSpec>()],
        )
        .with_concurrency(8)
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let (_, token) = cx.shard().expect("a sharded reconcile has a shard");
        let start = now_ns();
        self.log(format!("START {} {} {token} {start}", ptr.id(), self.member));
        // The I/O a real reconcile does (the subject here, not a wait for a condition).
        tokio::time::sleep(self.work).await;
        let result = match cx.get_typed::<IntSpec>(ptr).await {
            Ok(int) => {
                // The start time makes every reconcile's write a change:
                // a logged commit is a write etcd committed, never a no-op
                // decided on a stale cache.
                let text = format!("{}:{}:{start}", self.member, int.spec().0);
                cx.modify(
                    &Pointer::typed::<StrSpec>(NS, ptr.id()),
                    move |s: &mut Resource<StrSpec>| {
                        s.spec_mut().0 = text.clone();
                    },
                )
                .await
                .map(|_| ())
            }
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e),
        };
        let verdict = match &result {
            Ok(()) => "COMMITTED".to_owned(),
            Err(e) => format!("FAILED {:?}", e.storage_failure()),
        };
        self.log(format!(
            "END {} {} {token} {start} {} {verdict}",
            ptr.id(),
            self.member,
            now_ns()
        ));
        result?;
        Ok(Outcome::Done)
    }
}

/// A member: a runtime with the sharded controller, until stdin closes.
#[test]
#[ignore = "a child process of the sharded tests, started by them"]
fn sharded_child() {
    let (Ok(endpoint), Ok(prefix), Ok(member), Ok(dir)) = (
        std::env::var(ENDPOINT),
        std::env::var(PREFIX),
        std::env::var(MEMBER),
        std::env::var(LOG_DIR),
    ) else {
        return;
    };
    actix::System::new().block_on(async move {
        let runtime = Runtime::builder()
            .open(State::builder().etcd(config(&endpoint, &prefix)))
            .await
            .expect("open the etcd state");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(format!("{dir}/{member}.log"))
            .unwrap();
        let log = Arc::new(std::sync::Mutex::new(file));
        let name: Arc<str> = Arc::from(member.as_str());
        let work = Duration::from_millis(
            std::env::var(WORK_MS).ok().and_then(|ms| ms.parse().ok()).unwrap_or(5),
        );
        runtime
            .register(move || Sharder { member: name.clone(), work, log: log.clone() })
            .sharded(Sharding::new().shards(SHARDS).member(member.clone()))
            .await
            .expect("register");
        println!("READY");
        // Each `count` line on stdin is answered with `HOLDS <n>`: the keys
        // of the primary kind this process's state holds. The channel ends
        // with stdin.
        let (tx, mut asked) = futures::channel::mpsc::unbounded::<()>();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { return };
                if line == "count" && tx.unbounded_send(()).is_err() {
                    return;
                }
            }
        });
        let kind = Kind::of::<IntSpec>(NS);
        while asked.next().await.is_some() {
            let held = runtime.state().list(&kind, &LabelQuery::all()).await.unwrap().len();
            println!("HOLDS {held}");
        }
        runtime.stop().await;
    });
}

struct Member {
    name: String,
    child: Child,
    /// Its stdout's lines; disconnected once it exited.
    lines: std::sync::mpsc::Receiver<String>,
}

impl Member {
    /// A clean leave: closes its stdin and waits, within [`DEADLINE`], for it to exit.
    fn leave(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + DEADLINE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(_) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    panic!("{} did not exit within {DEADLINE:?} of its stdin closing", self.name)
                }
            }
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{} exited with {status}", self.name);
    }

    /// How many keys of the primary kind its state holds.
    fn holds(&mut self) -> usize {
        writeln!(self.child.stdin.as_mut().unwrap(), "count").unwrap();
        loop {
            let line = self
                .lines
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|e| panic!("{} did not answer `count`: {e}", self.name));
            if let Some(n) = line.strip_prefix("HOLDS ") {
                return n.parse().unwrap();
            }
        }
    }

    /// SIGKILL, and reaps it.
    fn kill(&mut self) {
        self.child.kill().unwrap();
        let _ = self.child.wait();
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        // A failed test leaves no member behind (an exited one is reaped already).
        if matches!(self.child.try_wait(), Ok(None)) {
            self.kill();
        }
    }
}

fn spawn(endpoint: &str, prefix: &str, name: &str, dir: &str) -> Member {
    spawn_working(endpoint, prefix, name, dir, 5)
}

/// A member whose reconciles take `work_ms` of I/O.
fn spawn_working(endpoint: &str, prefix: &str, name: &str, dir: &str, work_ms: u64) -> Member {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["sharded::sharded_child", "--exact", "--ignored", "--nocapture", "--test-threads=1"])
        .env(ENDPOINT, endpoint)
        .env(PREFIX, prefix)
        .env(MEMBER, name)
        .env(LOG_DIR, dir)
        .env(WORK_MS, work_ms.to_string())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // A member's panic shows in the test's output.
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let member = Member { name: name.to_owned(), child, lines };
    let deadline = Instant::now() + DEADLINE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match member.lines.recv_timeout(left) {
            Ok(line) if line.ends_with("READY") => return member,
            Ok(_) => {}
            Err(e) => panic!("{name} did not say READY within {DEADLINE:?}: {e}"),
        }
    }
}

/// The member each key's output should name, per the ring of `members`.
fn expected(members: &[&str]) -> BTreeMap<String, String> {
    let ring = Ring::new(SHARDS, members.iter().copied());
    (0..KEYS)
        .map(|i| {
            let key = Pointer::typed::<IntSpec>(NS, format!("k{i}")).erase();
            (key.id().to_owned(), ring.owner_of(&key).unwrap().to_owned())
        })
        .collect()
}

/// Waits until every output names the member the ring of `members` gives.
/// On a failure, tells the keys still off, their shards and who holds those.
async fn converge(
    watch: &mut WatchStream,
    seen: &mut HashMap<String, String>,
    client: &mut etcd_client::Client,
    prefix: &str,
    members: &[&str],
) {
    let want = expected(members);
    let done = |seen: &HashMap<String, String>| {
        want.iter().all(|(id, m)| seen.get(id).is_some_and(|s| s.split(':').next() == Some(m)))
    };
    let deadline = Instant::now() + DEADLINE;
    while !done(seen) {
        let left = deadline.saturating_duration_since(Instant::now());
        let Ok(event) = tokio::time::timeout(left, watch.next()).await else {
            let held = holders(client, prefix).await;
            panic!(
                "not converged to {members:?} within {DEADLINE:?}: {}",
                unconverged(&want, seen, &held)
            );
        };
        let event = event.expect("the watch ended");
        if let Some(r) = event.resource().filter(|r| !r.is_tombstone())
            && let Ok(s) = r.typed::<StrSpec>()
        {
            seen.insert(r.id().to_owned(), s.spec().0.clone());
        }
    }
}

/// The keys whose output does not name the member the ring gives, with their
/// shard and its holder (at most 10 of them), for a failure's message.
fn unconverged(
    want: &BTreeMap<String, String>,
    seen: &HashMap<String, String>,
    held: &BTreeMap<u32, String>,
) -> String {
    let off: Vec<String> = want
        .iter()
        .filter(|(id, m)| seen.get(*id).is_none_or(|s| s.split(':').next() != Some(m)))
        .map(|(id, m)| {
            let key = Pointer::typed::<IntSpec>(NS, id.as_str()).erase();
            let shard = shard_of(&key, SHARDS).0;
            let holder = held.get(&shard);
            format!("{id} (shard {shard} held by {holder:?}) wants {m}, has {:?}", seen.get(id))
        })
        .collect();
    let shown: Vec<&str> = off.iter().take(10).map(String::as_str).collect();
    format!("{} keys off, e.g. {}", off.len(), shown.join("; "))
}

/// The shard keys and the member each is held by.
async fn holders(client: &mut etcd_client::Client, prefix: &str) -> BTreeMap<u32, String> {
    let range = format!("/{prefix}~shards/{CONTROLLER}/s/");
    let got = client
        .get(range.clone(), Some(etcd_client::GetOptions::new().with_prefix()))
        .await
        .unwrap();
    got.kvs()
        .iter()
        .map(|kv| {
            let shard = kv.key_str().unwrap().strip_prefix(&range).unwrap().parse().unwrap();
            (shard, kv.value_str().unwrap().to_owned())
        })
        .collect()
}

/// Waits until every shard key exists and is held by one of `members`; how long it took.
async fn shards_owned_by(client: &mut etcd_client::Client, prefix: &str, members: &[&str]) {
    let range = format!("/{prefix}~shards/{CONTROLLER}/s/");
    let options = etcd_client::WatchOptions::new().with_prefix();
    let mut stream = client.watch(range.clone(), Some(options)).await.unwrap();
    let deadline = Instant::now() + DEADLINE;
    loop {
        let held = holders(client, prefix).await;
        if held.len() == SHARDS as usize && held.values().all(|m| members.contains(&m.as_str())) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        let message = tokio::time::timeout(left, stream.message()).await.unwrap_or_else(|_| {
            let ring = Ring::new(SHARDS, members.iter().copied());
            let off: Vec<String> = (0..SHARDS)
                .filter(|s| held.get(s).is_none_or(|m| !members.contains(&m.as_str())))
                .map(|s| {
                    let owner = ring.owner(ShardId(s)).unwrap();
                    format!("{s} held by {:?}, {owner} to take it", held.get(&s))
                })
                .collect();
            panic!("shards not owned by {members:?} within {DEADLINE:?}: {}", off.join("; "))
        });
        message.unwrap().expect("the watch of the shard keys ended");
    }
}

#[derive(Debug, Clone)]
struct Run {
    key: String,
    member: String,
    token: i64,
    start: u128,
    end: u128,
    committed: bool,
}

/// The reconciles of every log; one still running when its process was
/// killed ends at `killed` (ns).
fn read_logs(dir: &str, killed: &HashMap<String, u128>) -> Vec<Run> {
    let mut runs = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut open: HashMap<(String, u128), Run> = HashMap::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split(' ').collect();
            let (key, member, token, start) =
                (f[1].to_owned(), f[2].to_owned(), f[3].parse().unwrap(), f[4].parse().unwrap());
            if f[0] == "START" {
                let run = Run {
                    key: key.clone(),
                    member,
                    token,
                    start,
                    end: u128::MAX,
                    committed: false,
                };
                open.insert((key, start), run);
            } else if let Some(mut run) = open.remove(&(key, start)) {
                run.end = f[5].parse().unwrap();
                run.committed = f[6] == "COMMITTED";
                runs.push(run);
            }
        }
        for (_, mut run) in open {
            run.end = *killed.get(&run.member).expect("only a killed member leaves a run open");
            runs.push(run);
        }
    }
    runs
}

/// Waits until each of `members` holds exactly the keys of the shards the
/// ring of all of them gives it, and nothing else (its state loads a shard's
/// keys when it takes the shard and forgets them when it gives it up).
fn each_holds_its_share(members: &mut [Member]) {
    let names: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let want = expected(&names);
    let deadline = Instant::now() + DEADLINE;
    for member in members {
        let share = want.values().filter(|m| **m == member.name).count();
        loop {
            let held = member.holds();
            if held == share {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{} holds {held} keys, its share is {share} of {KEYS}",
                member.name
            );
        }
    }
}

/// Modifies the primary resources in turns until `stop` is set, so that
/// reconciles run while shards move.
/// Returns how many writes it made.
async fn keep_writing(state: State, stop: Arc<std::sync::atomic::AtomicBool>) -> usize {
    let mut written = 0;
    // The pace of the load (a write every 4 ms), not a wait for a condition.
    let mut tick = tokio::time::interval(Duration::from_millis(4));
    while !stop.load(std::sync::atomic::Ordering::Acquire) {
        tick.tick().await;
        let key = Pointer::typed::<IntSpec>(NS, format!("k{}", fastrand::usize(..KEYS)));
        let bumped = state.modify(&key, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None);
        if bumped.await.is_ok() {
            written += 1;
        }
    }
    written
}

/// The logs' verdict: no two processes reconciled one key at once, and no
/// write under a shard token committed after a newer token's reconcile of
/// that key began. Runs whose write was refused (a paused process that woke
/// after losing its shard) are held only to the second rule.
fn check_logs(runs: &[Run], overlap_counts_refused: bool) {
    let mut by_key: HashMap<&str, Vec<&Run>> = HashMap::new();
    for run in runs {
        by_key.entry(&run.key).or_default().push(run);
    }
    for (key, runs) in by_key {
        for a in &runs {
            for b in &runs {
                let counted = overlap_counts_refused || (a.committed && b.committed);
                if a.member != b.member && counted {
                    assert!(
                        a.end <= b.start || b.end <= a.start,
                        "{key}: overlapping reconciles {a:?} and {b:?}"
                    );
                }
                if a.token < b.token && a.committed {
                    assert!(
                        a.end <= b.start,
                        "{key}: a write under {a:?} committed after {b:?} began"
                    );
                }
            }
        }
    }
}

/// How many reconciles the log at `path` shows started and not ended.
fn running(path: &str) -> usize {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let started = text.lines().filter(|l| l.starts_with("START ")).count();
    started.saturating_sub(text.lines().filter(|l| l.starts_with("END ")).count())
}

/// What each multi-process scenario starts from: an etcd, a prefix holding
/// `KEYS` primary resources, a watch of the outputs, a raw client, and the
/// directory of the members' logs.
struct Setup {
    _etcd: TestEtcd,
    endpoint: String,
    prefix: String,
    dir: tempfile::TempDir,
    state: State,
    watch: WatchStream,
    seen: HashMap<String, String>,
    client: etcd_client::Client,
}

impl Setup {
    /// `None` without an etcd binary.
    async fn start(name: &str) -> Option<Setup> {
        let etcd = TestEtcd::start()?;
        let prefix = format!("{name}-{:08x}", fastrand::u32(..));
        let endpoint = etcd.endpoint();
        let state = State::builder().etcd(config(&endpoint, &prefix)).open().await.unwrap();
        for i in 0..KEYS {
            let r = Resource::new(NS, format!("k{i}"), IntSpec(i as i64));
            state.create(r, None).await.unwrap();
        }
        let kind = Kind::of::<StrSpec>(NS);
        let watch = state
            .watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::bootstrap())
            .await
            .unwrap();
        // Every request of the test's own client is bounded.
        let options = etcd_client::ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_timeout(Duration::from_secs(5));
        let client = etcd_client::Client::connect([endpoint.clone()], Some(options)).await.unwrap();
        let dir = tempfile::tempdir().unwrap();
        Some(Setup {
            _etcd: etcd,
            endpoint,
            prefix,
            dir,
            state,
            watch,
            seen: HashMap::new(),
            client,
        })
    }

    fn dir(&self) -> String {
        self.dir.path().to_str().unwrap().to_owned()
    }

    async fn converge(&mut self, members: &[&str]) {
        converge(&mut self.watch, &mut self.seen, &mut self.client, &self.prefix, members).await;
    }

    async fn shards_owned_by(&mut self, members: &[&str]) {
        shards_owned_by(&mut self.client, &self.prefix, members).await;
    }
}

/// A change of membership in the churn.
enum Step {
    Join(&'static str),
    Leave(&'static str),
    Kill(&'static str),
}

#[actix::test]
async fn members_share_keys_take_over_and_never_overlap() {
    let Some(mut t) = Setup::start("sharded").await else { return };
    let (endpoint, prefix, dir_path) = (t.endpoint.clone(), t.prefix.clone(), t.dir());

    // Three members: every key reconciled by the owner of its shard, and
    // each process holds only its share of the keys.
    let mut members: Vec<Member> =
        ["p0", "p1", "p2"].iter().map(|n| spawn(&endpoint, &prefix, n, &dir_path)).collect();
    t.converge(&["p0", "p1", "p2"]).await;
    t.shards_owned_by(&["p0", "p1", "p2"]).await;
    each_holds_its_share(&mut members);

    // SIGKILL p1: its shards are owned again within 2 × TTL, every key converges.
    let mut killed = HashMap::new();
    let mut p1 = members.remove(1);
    p1.kill();
    let at = Instant::now();
    killed.insert(p1.name.clone(), now_ns());
    t.shards_owned_by(&["p0", "p2"]).await;
    let took = at.elapsed();
    eprintln!(
        "sharded: SIGKILL of a member → its shards owned again: {took:?} (lease TTL {TTL:?})"
    );
    assert!(took <= 2 * TTL, "takeover took {took:?}, more than 2 × {TTL:?}");
    t.converge(&["p0", "p2"]).await;

    // A join: p3 takes its shards, only from the others, once they drained.
    let before = expected(&["p0", "p2"]);
    let after = expected(&["p0", "p2", "p3"]);
    let moved = before.iter().filter(|(k, m)| after[*k] != **m).count();
    assert!(before.iter().all(|(k, m)| after[k] == *m || after[k] == "p3"));
    eprintln!("sharded: a third member joining moves {moved} of {KEYS} keys");
    members.push(spawn(&endpoint, &prefix, "p3", &dir_path));
    t.converge(&["p0", "p2", "p3"]).await;
    t.shards_owned_by(&["p0", "p2", "p3"]).await;
    each_holds_its_share(&mut members);

    // A clean leave: p2 stops (drains, revokes its lease); p0 and p3 take over.
    members.remove(1).leave();
    t.shards_owned_by(&["p0", "p3"]).await;
    t.converge(&["p0", "p3"]).await;

    // Churn while the keys keep changing: joins, leaves and kills, each
    // moving shards between live processes that reconcile as they go.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = actix::spawn(keep_writing(t.state.clone(), stop.clone()));
    let mut changes = 3;
    let mut handoffs = 0;
    for step in [
        Step::Join("p4"),
        Step::Kill("p0"),
        Step::Join("p5"),
        Step::Leave("p3"),
        Step::Join("p6"),
        Step::Kill("p4"),
        Step::Join("p7"),
        Step::Leave("p5"),
    ] {
        let old: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
        match step {
            Step::Join(name) => members.push(spawn(&endpoint, &prefix, name, &dir_path)),
            Step::Leave(name) => {
                let at = members.iter().position(|m| m.name == name).unwrap();
                members.remove(at).leave();
            }
            Step::Kill(name) => {
                let at = members.iter().position(|m| m.name == name).unwrap();
                let mut member = members.remove(at);
                member.kill();
                killed.insert(member.name.clone(), now_ns());
            }
        }
        let names: Vec<String> = members.iter().map(|m| m.name.clone()).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let old: Vec<&str> = old.iter().map(String::as_str).collect();
        let (was, now) = (Ring::new(SHARDS, old), Ring::new(SHARDS, names.iter().copied()));
        handoffs +=
            (0..SHARDS).filter(|s| was.owner(ShardId(*s)) != now.owner(ShardId(*s))).count();
        changes += 1;
        t.shards_owned_by(&names).await;
        t.converge(&names).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Release);
    let written = writer.await.unwrap();
    each_holds_its_share(&mut members);
    eprintln!(
        "sharded: {changes} membership changes (joins, leaves, kills) moved {handoffs} shards \
         in the churn; {written} writes meanwhile"
    );
    assert!(changes >= 10);

    for m in members {
        m.leave();
    }

    // The logs: no two processes on one key at once; no stale commit.
    let runs = read_logs(&dir_path, &killed);
    assert!(runs.len() >= KEYS, "{} reconciles logged", runs.len());
    check_logs(&runs, true);
    let stale = runs.iter().filter(|r| !r.committed).count();
    eprintln!("sharded: {} reconciles logged, {stale} not committed", runs.len());
}

#[actix::test]
async fn a_paused_member_loses_its_shards_and_its_late_writes_are_refused() {
    let Some(mut t) = Setup::start("paused").await else { return };
    let (endpoint, prefix, dir_path) = (t.endpoint.clone(), t.prefix.clone(), t.dir());
    // Reconciles of 200 ms, always 8 running: p0 is paused in the middle of some.
    let mut members: Vec<Member> =
        ["p0", "p1"].iter().map(|n| spawn_working(&endpoint, &prefix, n, &dir_path, 200)).collect();
    t.converge(&["p0", "p1"]).await;

    // Reconciles run while p0 is paused past its lease: p1 takes every shard.
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = actix::spawn(keep_writing(t.state.clone(), stop.clone()));
    // Paused only once reconciles of its run (their start logged, their end not).
    let log = format!("{dir_path}/p0.log");
    let deadline = Instant::now() + DEADLINE;
    while running(&log) == 0 {
        assert!(Instant::now() < deadline, "p0 ran no reconcile within {DEADLINE:?}");
        tokio::task::yield_now().await;
    }
    let pid = members[0].child.id().to_string();
    let signal = |sig: &str| {
        let status = Command::new("kill").args([sig, pid.as_str()]).status().unwrap();
        assert!(status.success(), "kill {sig} {pid}: {status}");
    };
    signal("-STOP");
    let paused = Instant::now();
    t.shards_owned_by(&["p1"]).await;
    eprintln!("sharded: a member paused → its shards owned by the other in {:?}", paused.elapsed());
    t.converge(&["p1"]).await;

    // p0 wakes: what it was writing is refused; it joins again and takes its
    // shards back once p1 drained them.
    signal("-CONT");
    t.shards_owned_by(&["p0", "p1"]).await;
    t.converge(&["p0", "p1"]).await;
    stop.store(true, std::sync::atomic::Ordering::Release);
    writer.await.unwrap();
    each_holds_its_share(&mut members);
    for m in members {
        m.leave();
    }
    let runs = read_logs(&dir_path, &HashMap::new());
    check_logs(&runs, false);
    let refused = runs.iter().filter(|r| !r.committed && r.member == "p0").count();
    eprintln!("sharded: {} reconciles logged; p0's refused after its pause: {refused}", runs.len());
    assert!(refused > 0, "p0 was paused with reconciles running: their writes must be refused");
}

/// Opens a runtime on `prefix` with the sharded controller as `member`,
/// logging to `dir`.
async fn member_in_process(endpoint: &str, prefix: &str, member: &str, dir: &str) -> Runtime {
    let runtime = Runtime::builder()
        .open(State::builder().etcd(config(endpoint, prefix)))
        .await
        .expect("open the etcd state");
    let file = std::fs::File::create(format!("{dir}/{member}.log")).unwrap();
    let log = Arc::new(std::sync::Mutex::new(file));
    let name: Arc<str> = Arc::from(member);
    let work = Duration::from_millis(5);
    runtime
        .register(move || Sharder { member: name.clone(), work, log: log.clone() })
        .sharded(Sharding::new().shards(SHARDS).member(member))
        .await
        .expect("register");
    runtime
}

#[actix::test]
async fn a_member_reads_only_its_share_and_a_write_to_another_share_is_refused() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = format!("share-{:08x}", fastrand::u32(..));
    let endpoint = etcd.endpoint();
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().to_str().unwrap();
    let state = State::builder().etcd(config(&endpoint, &prefix)).open().await.unwrap();
    for i in 0..KEYS {
        state.create(Resource::new(NS, format!("k{i}"), IntSpec(i as i64)), None).await.unwrap();
    }
    let a = member_in_process(&endpoint, &prefix, "a", dir_path).await;
    let b = member_in_process(&endpoint, &prefix, "b", dir_path).await;
    let want = expected(&["a", "b"]);
    let share = |m: &str| want.iter().filter(|(_, o)| *o == m).map(|(k, _)| k.clone()).collect();
    let (share_a, share_b): (Vec<String>, Vec<String>) = (share("a"), share("b"));
    let kind = Kind::of::<IntSpec>(NS);
    let deadline = Instant::now() + DEADLINE;
    for (runtime, mine) in [(&a, &share_a), (&b, &share_b)] {
        loop {
            let mut held: Vec<String> = runtime
                .state()
                .list(&kind, &LabelQuery::all())
                .await
                .unwrap()
                .iter()
                .map(|r| r.id().to_owned())
                .collect();
            held.sort();
            let mut want = mine.clone();
            want.sort();
            if held == want {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "holds {} keys, its share is {}",
                held.len(),
                want.len()
            );
            tokio::task::yield_now().await;
        }
    }
    // The whole state still has every key; a member refuses a write to an
    // existing key of the other's shard, naming the shard, and takes one to its own.
    assert_eq!(state.list(&kind, &LabelQuery::all()).await.unwrap().len(), KEYS);
    let theirs = Pointer::typed::<IntSpec>(NS, share_b[0].as_str());
    let unseen = a.state().get(&theirs).await.unwrap_err();
    assert!(unseen.is_not_found(), "{unseen}");
    let refused = a
        .state()
        .modify(&theirs, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None)
        .await
        .unwrap_err();
    assert!(matches!(refused, Error::InvalidInput { .. }), "{refused}");
    assert!(refused.to_string().contains("shard"), "{refused}");
    let fresh_theirs = (0..)
        .map(|i| Resource::new(NS, format!("new{i}"), IntSpec(1)))
        .find(|r| expected_owner(&["a", "b"], r.pointer()) == "b")
        .unwrap();
    // A new key of b's shard written from a goes to the store: b holds it,
    // a does not.
    let created = fresh_theirs.pointer().clone();
    a.state().create(fresh_theirs, None).await.unwrap();
    let deadline = Instant::now() + DEADLINE;
    while b.state().get(&created).await.is_err() {
        assert!(Instant::now() < deadline, "b did not get {created} within {DEADLINE:?}");
        tokio::task::yield_now().await;
    }
    assert!(a.state().get(&created).await.unwrap_err().is_not_found());
    let ours = Pointer::typed::<IntSpec>(NS, share_a[0].as_str());
    a.state().modify(&ours, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None).await.unwrap();
    a.stop().await;
    b.stop().await;
}

/// The member the ring of `members` gives `key` to.
fn expected_owner<'a>(members: &[&'a str], key: &Pointer) -> &'a str {
    let ring = Ring::new(SHARDS, members.iter().copied());
    let owner = ring.owner_of(key).unwrap();
    members.iter().copied().find(|m| *m == owner).unwrap()
}
