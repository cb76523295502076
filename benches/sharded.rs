//! A sharded queue controller over several real processes on one etcd
//! (issue 53), in the same run:
//!
//! - **Throughput**: reconciles that each wait 5 ms (I/O-bound) and write one
//!   output, 8 in flight per process. One member, then three (fresh
//!   members and a fresh prefix each), over the same keys: once the ring
//!   settled and each member holds its share, one write of the shared `go`
//!   resource queues every key (each member lists only its share), and the
//!   time until every output shows that round gives the rate.
//! - **Memory**: the heap a member's process holds for the sharded kind, with
//!   N objects of it: one member (it holds all of them) beside each of three
//!   (each holds its share), less a member's heap on an empty store. Each
//!   member's process counts its allocations (the bench's counting
//!   allocator) and reports its live heap once it holds its share.
//!
//! Writes `<target>/bench-report/sharded.json`. The members are this binary
//! started again with `COSI_SHARDED_BENCH_MEMBER` set. Without an `etcd`
//! binary it says SKIPPED. `cargo bench --features etcd --bench sharded`
//! measures; `cargo test --features etcd --bench sharded` runs a scaled-down
//! smoke pass that asserts only functional facts.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{CountingAlloc, IntSpec, Mode, NS, SentenceSpec, StrSpec, pipelined};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::shard::{Ring, Sharding};
use cosi_runtime::state::{EtcdConfig, WatchOptions};
use cosi_runtime::testing::etcd::TestEtcd;
use futures::StreamExt;
use serde_json::json;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const MEMBER: &str = "COSI_SHARDED_BENCH_MEMBER";
const ENDPOINT: &str = "COSI_SHARDED_BENCH_ENDPOINT";
const PREFIX: &str = "COSI_SHARDED_BENCH_PREFIX";
const SHARDS: u32 = cosi_runtime::shard::DEFAULT_SHARDS;
const CONCURRENCY: usize = 8;
const WORK: Duration = Duration::from_millis(5);
const DEADLINE: Duration = Duration::from_secs(300);
const CONTROLLER: &str = "bench-sharder";
/// The id of the shared resource whose change queues every key.
const GO: &str = "go";

fn config(endpoint: &str, prefix: &str) -> EtcdConfig {
    EtcdConfig::new([endpoint])
        .prefix(prefix)
        .lease_ttl(Duration::from_secs(2))
        .connect_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(30))
}

/// Dormant until the `go` resource names a round; then each reconcile waits
/// 5 ms (its I/O) and writes `<member>:<round>` to the key's output.
struct Sharder {
    member: String,
}

impl QueueController for Sharder {
    fn name(&self) -> &str {
        CONTROLLER
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<IntSpec>(NS), Input::mapped::<SentenceSpec>(NS)],
            vec![Output::exclusive::<StrSpec>()],
        )
        .with_concurrency(CONCURRENCY)
    }
    fn map_input(&self, _: &Pointer) -> Vec<Pointer> {
        Vec::new()
    }
    fn requeues_all(&self, input: &AnyResource) -> bool {
        input.id() == GO
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let go = Pointer::typed::<SentenceSpec>(NS, GO);
        let round = match cx.get_typed::<SentenceSpec>(&go).await {
            Ok(r) => r.spec().0.clone(),
            Err(e) if e.is_not_found() => return Ok(Outcome::Done),
            Err(e) => return Err(e.into()),
        };
        // The I/O a real reconcile does: the subject of the bench.
        tokio::time::sleep(WORK).await;
        let text = format!("{}:{round}", self.member);
        cx.modify(&Pointer::typed::<StrSpec>(NS, ptr.id()), move |s: &mut Resource<StrSpec>| {
            s.spec_mut().0 = text.clone();
        })
        .await?;
        Ok(Outcome::Done)
    }
}

/// A member process: the sharded controller until stdin closes; answers
/// `count` with `HOLDS <n>` (primary keys its state holds) and `heap` with
/// `HEAP <bytes>` (its live heap).
fn member_main(member: String) {
    let endpoint = std::env::var(ENDPOINT).expect("the endpoint");
    let prefix = std::env::var(PREFIX).expect("the prefix");
    actix::System::new().block_on(async move {
        let runtime = Runtime::builder()
            .open(State::builder().etcd(config(&endpoint, &prefix)))
            .await
            .expect("open the etcd state");
        let name = member.clone();
        runtime
            .register(move || Sharder { member: name.clone() })
            .sharded(Sharding::new().shards(SHARDS).member(member))
            .await
            .expect("register");
        println!("READY");
        let (tx, mut asked) = futures::channel::mpsc::unbounded::<String>();
        std::thread::spawn(move || {
            for line in std::io::stdin().lines() {
                let Ok(line) = line else { return };
                if tx.unbounded_send(line).is_err() {
                    return;
                }
            }
        });
        let kind = Kind::of::<IntSpec>(NS);
        while let Some(line) = asked.next().await {
            match line.as_str() {
                "count" => {
                    let held = runtime.state().list(&kind, &LabelQuery::all()).await.unwrap();
                    println!("HOLDS {}", held.len());
                }
                "heap" => {
                    runtime.settled().await;
                    println!("HEAP {}", common::heap_now());
                }
                _ => {}
            }
        }
        runtime.stop().await;
    });
}

struct Member {
    name: String,
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Member {
    fn spawn(endpoint: &str, prefix: &str, name: &str) -> Member {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .env(MEMBER, name)
            .env(ENDPOINT, endpoint)
            .env(PREFIX, prefix)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a member");
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
        member.answer("READY");
        member
    }

    /// The next line that starts with `prefix`, without it.
    fn answer(&self, prefix: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(DEADLINE)
                .unwrap_or_else(|e| panic!("{} said no {prefix}: {e}", self.name));
            if let Some(rest) = line.strip_prefix(prefix) {
                return rest.trim().to_owned();
            }
        }
    }

    fn ask(&mut self, question: &str, prefix: &str) -> u64 {
        writeln!(self.child.stdin.as_mut().unwrap(), "{question}").unwrap();
        self.answer(prefix).parse().unwrap()
    }

    /// Closes stdin (a clean leave) and waits for the process.
    fn leave(mut self) {
        drop(self.child.stdin.take());
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{} exited with {status}", self.name);
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("m{i}")).collect()
}

/// Starts `n` members and waits until each holds exactly the keys the ring
/// of all of them gives it (its shards owned, their keys loaded).
fn start_members(endpoint: &str, prefix: &str, n: usize, keys: u64) -> Vec<Member> {
    let names = names(n);
    let mut members: Vec<Member> =
        names.iter().map(|m| Member::spawn(endpoint, prefix, m)).collect();
    let ring = Ring::new(SHARDS, names.iter().map(String::as_str));
    let mut share: BTreeMap<&str, u64> = BTreeMap::new();
    for k in 0..keys {
        let key = Pointer::typed::<IntSpec>(NS, key_id(k)).erase();
        *share.entry(ring.owner_of(&key).unwrap()).or_default() += 1;
    }
    let deadline = Instant::now() + DEADLINE;
    for m in &mut members {
        let want = share.get(m.name.as_str()).copied().unwrap_or(0);
        // Asked again until it holds its share: the hand-offs of the
        // members' joins have no event this process could wait on.
        while m.ask("count", "HOLDS") != want {
            assert!(Instant::now() < deadline, "{} does not hold its {want} keys", m.name);
        }
    }
    members
}

fn key_id(k: u64) -> String {
    format!("k{k:06}")
}

async fn create_keys(state: &State, keys: u64) {
    pipelined(keys, 64, |k| {
        let state = state.clone();
        async move {
            state.create(Resource::new(NS, key_id(k), IntSpec(k as i64)), None).await.unwrap();
        }
    })
    .await;
}

/// One throughput run with `n` members on a fresh prefix: the rate of
/// reconciles (each 5 ms of I/O and a write) from the `go` write until
/// every output shows the round.
fn throughput(sys: &actix::SystemRunner, etcd: &TestEtcd, n: usize, keys: u64) -> f64 {
    let prefix = format!("bench-sharded-{n}-{:08x}", fastrand::u32(..));
    let state =
        sys.block_on(State::builder().etcd(config(&etcd.endpoint(), &prefix)).open()).unwrap();
    sys.block_on(create_keys(&state, keys));
    let members = start_members(&etcd.endpoint(), &prefix, n, keys);
    let round = "round-1";
    let took = sys.block_on(async {
        let kind = Kind::of::<StrSpec>(NS);
        let mut watch = state
            .watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::default())
            .await
            .unwrap();
        let started = Instant::now();
        state.create(Resource::new(NS, GO, SentenceSpec(round.into())), None).await.unwrap();
        let mut done = std::collections::HashSet::new();
        while (done.len() as u64) < keys {
            let left = DEADLINE.saturating_sub(started.elapsed());
            let event = tokio::time::timeout(left, watch.next())
                .await
                .unwrap_or_else(|_| panic!("{} of {keys} outputs within {DEADLINE:?}", done.len()))
                .expect("the watch ended");
            if let Some(r) = event.resource().filter(|r| !r.is_tombstone())
                && let Ok(s) = r.typed::<StrSpec>()
                && s.spec().0.ends_with(round)
            {
                done.insert(r.id().to_owned());
            }
        }
        started.elapsed()
    });
    for m in members {
        m.leave();
    }
    let rate = keys as f64 / took.as_secs_f64();
    println!("sharded throughput: {n} member(s), {keys} reconciles in {took:?}: {rate:.0}/s");
    rate
}

/// The live heap of each of `n` members holding its share of the `keys`
/// objects under `prefix` (written already).
fn heaps(etcd: &TestEtcd, prefix: &str, n: usize, keys: u64) -> Vec<u64> {
    let mut members = start_members(&etcd.endpoint(), prefix, n, keys);
    let heaps = members.iter_mut().map(|m| m.ask("heap", "HEAP")).collect();
    for m in members {
        m.leave();
    }
    heaps
}

fn main() {
    if let Ok(member) = std::env::var(MEMBER) {
        member_main(member);
        return;
    }
    let mode = Mode::from_args();
    if mode.list {
        return;
    }
    let Some(etcd) = TestEtcd::start() else { return };
    let sys = actix::System::new();
    let keys = mode.scale(6_000, 120);
    let one = throughput(&sys, &etcd, 1, keys);
    let three = throughput(&sys, &etcd, 3, keys);

    let objects = std::env::var("COSI_SHARDED_BENCH_OBJECTS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(mode.scale(100_000, 2_000));
    let empty = heaps(&etcd, &format!("bench-sharded-empty-{:08x}", fastrand::u32(..)), 1, 0)[0];
    let prefix = format!("bench-sharded-mem-{:08x}", fastrand::u32(..));
    let state =
        sys.block_on(State::builder().etcd(config(&etcd.endpoint(), &prefix)).open()).unwrap();
    sys.block_on(create_keys(&state, objects));
    let solo = heaps(&etcd, &prefix, 1, objects)[0];
    let each = heaps(&etcd, &prefix, 3, objects);
    let per_kind = |heap: u64| heap.saturating_sub(empty);
    let largest = each.iter().copied().map(per_kind).max().unwrap_or(0);
    let memory_ratio = largest as f64 / per_kind(solo).max(1) as f64;
    println!(
        "sharded memory: {objects} objects, one member {} B for the kind, the largest of three {} B \
         ({memory_ratio:.2} of one); a member on an empty store {empty} B",
        per_kind(solo),
        largest
    );
    // Functional facts only (the smoke pass too): every key was reconciled
    // by both member sets, and every member held exactly its share (the
    // waits above). The heaps are reported, not asserted: at the smoke
    // pass's size a process's other allocations move them as much.
    assert!(one > 0.0 && three > 0.0);
    common::write_report(
        &mode,
        "sharded",
        &json!({
            "throughput": {
                "keys": keys,
                "work_ms": WORK.as_millis() as u64,
                "concurrency": CONCURRENCY,
                "shards": SHARDS,
                "one_per_second": one,
                "three_per_second": three,
                "ratio": three / one,
            },
            "memory": {
                "objects": objects,
                "empty_member_heap": empty,
                "one_member_heap": solo,
                "three_member_heaps": each,
                "one_for_kind": per_kind(solo),
                "largest_of_three_for_kind": largest,
                "ratio": memory_ratio,
            },
        }),
    );
}
