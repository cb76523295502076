//! Several **processes** on one etcd state: a write in one reaches the
//! watchers of the others, a version race between processes has exactly one
//! winner, and concurrent `modify` increments from several processes lose
//! nothing.
//!
//! The children are this same test binary, started on the ignored
//! `etcd_child` entry point with their role, the endpoint and the prefix in
//! environment variables. A child answers on stdout with lines that start
//! with `COSI ` (everything else the test harness prints is ignored) and
//! takes commands from stdin, one per line; a child ends when its stdin
//! closes. Every wait has a deadline and waits on a line, a watch event or a
//! reply, never on a clock.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::Duration;

use cosi_runtime::prelude::*;
use cosi_runtime::state::{EtcdConfig, WatchOptions, WatchStream};
use cosi_runtime::testing::conformance::{IntSpec, NS};
use cosi_runtime::testing::etcd::TestEtcd;
use futures::channel::mpsc::{UnboundedReceiver, unbounded};
use futures::{FutureExt, StreamExt};

const ROLE_ENV: &str = "COSI_ETCD_CHILD_ROLE";
const ENDPOINT_ENV: &str = "COSI_ETCD_CHILD_ENDPOINT";
const PREFIX_ENV: &str = "COSI_ETCD_CHILD_PREFIX";
const INDEX_ENV: &str = "COSI_ETCD_CHILD_INDEX";

/// How long any one line, event or reply may take before the test fails
/// (generous: the machine may be busy compiling).
const DEADLINE: Duration = Duration::from_secs(60);

/// Resources the version race runs on, one race each.
const RACES: usize = 10;
/// Processes in the version race and in the increments.
const PROCESSES: usize = 3;
/// Increments per process.
const INCREMENTS: usize = 200;
/// Increments each process keeps in flight.
const IN_FLIGHT: usize = 4;

fn ptr(id: &str) -> Pointer {
    Pointer::typed::<IntSpec>(NS, id).erase()
}

fn kind() -> Kind {
    Kind::of::<IntSpec>(NS)
}

fn value(r: &AnyResource) -> i64 {
    r.typed::<IntSpec>().expect("an IntSpec").spec().0
}

fn unique_prefix(test: &str) -> String {
    format!("{test}-{:08x}", fastrand::u32(..))
}

async fn open(config: EtcdConfig) -> State {
    State::builder().etcd(config).open().await.expect("open the etcd state")
}

/// The next event of `watch`, failing the test after [`DEADLINE`].
async fn next_event(watch: &mut WatchStream) -> Event {
    match tokio::time::timeout(DEADLINE, watch.next()).await {
        Ok(Some(event)) => event,
        Ok(None) => panic!("the watch ended"),
        Err(_) => panic!("no watch event within {DEADLINE:?}"),
    }
}

/// A kind watch with bootstrap, read past its bootstrap.
async fn watch_after_bootstrap(state: &State) -> WatchStream {
    let mut watch = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .expect("watch");
    while !matches!(next_event(&mut watch).await, Event::Bootstrapped(_)) {}
    watch
}

/// One event as a line both processes print the same way:
/// `<event> <id> <version> <revision> <value>`.
fn describe(event: &Event, revision: u64) -> String {
    let r = event.resource().expect("a resource event");
    format!("{} {} {} {} {}", event.name(), r.id(), r.version().get(), revision, value(r))
}

// ---------------------------------------------------------------------------
// The children

/// Prints one answer line for the parent.
fn say(line: impl AsRef<str>) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "COSI {}", line.as_ref());
    let _ = out.flush();
}

/// The child's stdin as a stream of lines; it ends when the parent closes it.
fn commands() -> UnboundedReceiver<String> {
    let (tx, rx) = unbounded();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.unbounded_send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Every child process: what it does depends on its role.
#[test]
#[ignore = "a child process of the etcd multi-process tests, started by them"]
fn etcd_child() {
    let Ok(role) = std::env::var(ROLE_ENV) else {
        return;
    };
    let endpoint = std::env::var(ENDPOINT_ENV).expect("the endpoint");
    let prefix = std::env::var(PREFIX_ENV).expect("the prefix");
    let index: i64 = std::env::var(INDEX_ENV).ok().and_then(|i| i.parse().ok()).unwrap_or(0);
    let config = EtcdConfig::new([endpoint])
        .prefix(prefix)
        .connect_timeout(Duration::from_secs(10))
        .request_timeout(Duration::from_secs(10));
    actix::System::new().block_on(async move {
        let state = match State::builder().etcd(config).open().await {
            Ok(state) => state,
            Err(e) => {
                say(format!("OPEN FAILED {e}"));
                panic!("open the etcd state: {e}");
            }
        };
        let commands = commands();
        match role.as_str() {
            "watcher" => child_watcher(&state, commands).await,
            "writer" => child_writer(&state).await,
            "updater" => child_updater(&state, commands, index).await,
            "incrementer" => child_incrementer(&state, commands).await,
            "counter" => {
                let all = state.list(&kind(), &LabelQuery::all()).await.expect("list");
                say(format!("COUNT {}", all.len()));
            }
            other => panic!("unknown role {other}"),
        }
        state.close().await.expect("close");
        say("EXIT");
    });
}

/// Watches the kind and prints every event as `EVENT <describe>` until its
/// stdin closes.
async fn child_watcher(state: &State, mut commands: UnboundedReceiver<String>) {
    let mut watch = watch_after_bootstrap(state).await;
    say("READY");
    loop {
        futures::select! {
            event = watch.next().fuse() => {
                let event = event.expect("the watch ended");
                say(format!("EVENT {}", describe(&event, watch.revision())));
            }
            command = commands.next() => {
                if command.is_none() {
                    return;
                }
            }
        }
    }
}

/// Creates `w` (1), updates it (2), destroys it, printing `ACK <describe>`
/// of the first two.
async fn child_writer(state: &State) {
    let created = state.create(Resource::new(NS, "w", IntSpec(1)), None).await.expect("create");
    say(format!(
        "ACK {}",
        describe(&Event::Created(created.clone()), created.metadata().revision())
    ));
    let mut next = created.typed::<IntSpec>().expect("typed");
    next.spec_mut().0 = 2;
    let updated = state.update(next, None).await.expect("update");
    say(format!(
        "ACK {}",
        describe(
            &Event::Updated { old: created, new: updated.clone() },
            updated.metadata().revision()
        )
    ));
    state.destroy(&ptr("w"), None).await.expect("destroy");
    say("ACK destroyed");
}

/// Reads `race-0` … every race resource at version 1, says `READY`, then on
/// each `GO <i>` updates `race-<i>` from what it read to `100 + index` and
/// prints `RESULT <i> OK <version>`, `RESULT <i> CONFLICT <sent> <stored>` or
/// `RESULT <i> ERROR <error>`.
async fn child_updater(state: &State, mut commands: UnboundedReceiver<String>, index: i64) {
    let mut read = BTreeMap::new();
    for i in 0..RACES {
        let r = state.get_typed::<IntSpec>(&ptr(&format!("race-{i}"))).await.expect("read");
        assert_eq!(r.version().get(), 1, "every race starts at version 1");
        read.insert(i, r);
    }
    say("READY");
    while let Some(command) = commands.next().await {
        let i: usize = command.strip_prefix("GO ").and_then(|i| i.parse().ok()).expect("GO <i>");
        let mut r = read.remove(&i).expect("one update per race");
        r.spec_mut().0 = 100 + index;
        match state.update(r, None).await {
            Ok(stored) => say(format!("RESULT {i} OK {}", stored.version().get())),
            Err(Error::VersionConflict { sent, stored, .. }) => {
                say(format!("RESULT {i} CONFLICT {} {}", sent.get(), stored.get()));
            }
            Err(e) => say(format!("RESULT {i} ERROR {e}")),
        }
    }
}

/// Says `READY`, waits for `GO`, then increments `counter` [`INCREMENTS`]
/// times with `modify` ([`IN_FLIGHT`] at a time), printing `ACK <value>` for
/// each, then `DONE`.
async fn child_incrementer(state: &State, mut commands: UnboundedReceiver<String>) {
    say("READY");
    assert_eq!(commands.next().await.as_deref(), Some("GO"));
    let counter = ptr("counter");
    let mut started = 0;
    while started < INCREMENTS {
        let batch = IN_FLIGHT.min(INCREMENTS - started);
        started += batch;
        let acks = (0..batch)
            .map(|_| state.modify(&counter, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None));
        for stored in futures::future::join_all(acks).await {
            let stored = stored.expect("an increment");
            say(format!("ACK {}", stored.spec().0));
        }
    }
    say("DONE");
}

// ---------------------------------------------------------------------------
// The parent's side

/// A child process and the answer lines it printed.
struct ChildProcess {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: UnboundedReceiver<String>,
}

impl ChildProcess {
    /// Starts this test binary as a child in `role`.
    fn spawn(role: &str, etcd: &TestEtcd, prefix: &str, index: usize) -> ChildProcess {
        let exe = std::env::current_exe().expect("the test binary");
        let mut child = Command::new(exe)
            .args([
                "processes::etcd_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE_ENV, role)
            .env(ENDPOINT_ENV, etcd.endpoint())
            .env(PREFIX_ENV, prefix)
            .env(INDEX_ENV, index.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start a child process");
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, lines) = unbounded();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                // The harness prints `test etcd_child ... ` before the first answer.
                if let Some((_, answer)) = line.split_once("COSI ")
                    && tx.unbounded_send(answer.to_owned()).is_err()
                {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        ChildProcess { name: format!("{role}#{index}"), child, stdin, lines }
    }

    /// The next answer line; fails the test if the child ends first or
    /// nothing comes within [`DEADLINE`].
    async fn line(&mut self) -> String {
        match tokio::time::timeout(DEADLINE, self.lines.next()).await {
            Ok(Some(line)) => line,
            Ok(None) => {
                let status = self.child.wait().expect("wait for the child");
                panic!("{} ended ({status}) before answering", self.name)
            }
            Err(_) => panic!("{} did not answer within {DEADLINE:?}", self.name),
        }
    }

    /// Expects exactly `expected` as the next answer.
    async fn expect(&mut self, expected: &str) {
        let line = self.line().await;
        assert_eq!(line, expected, "{} answered", self.name);
    }

    fn send(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("stdin still open");
        writeln!(stdin, "{command}").expect("write to the child");
        stdin.flush().expect("flush to the child");
    }

    /// Closes its stdin, then expects `EXIT` and a successful exit.
    async fn finish(mut self) {
        self.stdin = None;
        self.expect("EXIT").await;
        // The line stream ends when the child's stdout closes (it exits).
        if let Ok(Some(line)) = tokio::time::timeout(DEADLINE, self.lines.next()).await {
            panic!("{} said more after EXIT: {line}", self.name);
        }
        let status = self.child.wait().expect("wait for the child");
        assert!(status.success(), "{} exited with {status}", self.name);
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        // A failed test leaves no child behind (a finished child is already reaped).
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn block_on<F: std::future::Future<Output = ()>>(test: F) {
    actix::System::new().block_on(test);
}

// ---------------------------------------------------------------------------
// The tests

/// Three processes: a child writes; the parent's watch and another child's
/// watch both see its create, update and destroy, with the same versions
/// and revisions the writer was given.
#[test]
fn a_childs_writes_reach_watches_in_the_parent_and_in_another_child() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("watch3");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let mut watch = watch_after_bootstrap(&state).await;
        let mut watcher = ChildProcess::spawn("watcher", &etcd, &prefix, 0);
        watcher.expect("READY").await;

        let mut writer = ChildProcess::spawn("writer", &etcd, &prefix, 1);
        let created = writer.line().await;
        let updated = writer.line().await;
        writer.expect("ACK destroyed").await;
        writer.finish().await;

        let mut seen = Vec::new();
        for _ in 0..3 {
            let event = next_event(&mut watch).await;
            seen.push(describe(&event, watch.revision()));
        }
        let (create_rev, update_rev) = (
            created.split(' ').nth(4).expect("a revision").parse::<u64>().expect("a number"),
            updated.split(' ').nth(4).expect("a revision").parse::<u64>().expect("a number"),
        );
        assert_eq!(created, format!("ACK created w 1 {create_rev} 1"));
        assert_eq!(updated, format!("ACK updated w 2 {update_rev} 2"));
        assert_eq!(seen[0], format!("created w 1 {create_rev} 1"), "the parent saw the create");
        assert_eq!(seen[1], format!("updated w 2 {update_rev} 2"), "the parent saw the update");
        assert!(seen[2].starts_with("destroyed w 2 "), "the parent saw the destroy: {}", seen[2]);
        let destroy_rev: u64 = seen[2].split(' ').nth(3).unwrap().parse().unwrap();
        assert!(destroy_rev > update_rev, "the destroy comes after the update");

        for expected in &seen {
            watcher.expect(&format!("EVENT {expected}")).await;
        }
        watcher.finish().await;
        assert!(state.get(&ptr("w")).await.unwrap_err().is_not_found());
        state.close().await.expect("close");
    });
}

/// Two processes: the parent writes; a child's watch sees the create, the
/// update and the destroy at the revisions the parent was given.
#[test]
fn the_parents_writes_reach_a_watch_in_a_child() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("watch2");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let mut watcher = ChildProcess::spawn("watcher", &etcd, &prefix, 0);
        watcher.expect("READY").await;

        let created = state.create(Resource::new(NS, "p", IntSpec(1)), None).await.unwrap();
        let updated = state
            .modify(&ptr("p"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
            .await
            .unwrap();
        let mut watch = watch_after_bootstrap(&state).await;
        state.destroy(&ptr("p"), None).await.unwrap();
        let destroyed = next_event(&mut watch).await;
        assert!(matches!(destroyed, Event::Destroyed(_)));

        watcher.expect(&format!("EVENT created p 1 {} 1", created.metadata().revision())).await;
        watcher.expect(&format!("EVENT updated p 2 {} 2", updated.metadata().revision())).await;
        watcher.expect(&format!("EVENT {}", describe(&destroyed, watch.revision()))).await;
        watcher.finish().await;
        state.close().await.expect("close");
    });
}

/// Three processes update one resource from the same version at the same
/// moment, [`RACES`] times: exactly one wins each race, the others get a
/// typed [`Error::VersionConflict`] naming the versions, and the winner's
/// value is what every process then reads.
#[test]
fn concurrent_updates_from_three_processes_have_one_winner_and_version_conflicts() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("race");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        for i in 0..RACES {
            state.create(Resource::new(NS, format!("race-{i}"), IntSpec(0)), None).await.unwrap();
        }
        let mut watch = watch_after_bootstrap(&state).await;
        let mut children: Vec<_> =
            (0..PROCESSES).map(|i| ChildProcess::spawn("updater", &etcd, &prefix, i)).collect();
        for child in &mut children {
            child.expect("READY").await;
        }
        for i in 0..RACES {
            for child in &mut children {
                child.send(&format!("GO {i}"));
            }
            let mut winners = Vec::new();
            for (index, child) in children.iter_mut().enumerate() {
                let result = child.line().await;
                if result == format!("RESULT {i} OK 2") {
                    winners.push(index);
                } else {
                    assert_eq!(result, format!("RESULT {i} CONFLICT 1 2"), "{}", child.name);
                }
            }
            assert_eq!(winners.len(), 1, "race {i}: exactly one winner, got {winners:?}");
            let event = next_event(&mut watch).await;
            let Event::Updated { new, .. } = &event else { panic!("an update, got {event:?}") };
            assert_eq!(new.id(), format!("race-{i}"));
            assert_eq!((new.version().get(), value(new)), (2, 100 + winners[0] as i64));
        }
        for child in children {
            child.finish().await;
        }
        state.close().await.expect("close");
    });
}

/// Three processes each increment one counter [`INCREMENTS`] times with
/// `modify`, all at once: no increment is lost. Every acknowledged
/// increment returned a distinct value, together exactly 1..=N·M, and the
/// counter ends at N·M, version N·M (the first increment created it).
#[test]
fn concurrent_modify_increments_from_three_processes_lose_nothing() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("increments");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let mut watch = watch_after_bootstrap(&state).await;
        let mut children: Vec<_> =
            (0..PROCESSES).map(|i| ChildProcess::spawn("incrementer", &etcd, &prefix, i)).collect();
        for child in &mut children {
            child.expect("READY").await;
        }
        for child in &mut children {
            child.send("GO");
        }
        let mut acked = Vec::new();
        for child in &mut children {
            let mut last = 0;
            for _ in 0..INCREMENTS {
                let line = child.line().await;
                let v: i64 = line
                    .strip_prefix("ACK ")
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| panic!("{}: {line}", child.name));
                assert!(v > last, "{}: its own increments only grow ({last} then {v})", child.name);
                last = v;
                acked.push(v);
            }
            child.expect("DONE").await;
        }
        for child in children {
            child.finish().await;
        }
        let total = (PROCESSES * INCREMENTS) as i64;
        acked.sort_unstable();
        assert_eq!(acked, (1..=total).collect::<Vec<_>>(), "every increment acknowledged once");

        // This process's watch converges to the final value.
        loop {
            let event = next_event(&mut watch).await;
            let r = event.resource().expect("a resource event");
            assert!(value(r) <= total, "never beyond N·M");
            if value(r) == total {
                break;
            }
        }
        let counter = state.get_typed::<IntSpec>(&ptr("counter")).await.unwrap();
        assert_eq!((counter.spec().0, counter.version().get()), (total, total as u64));
        state.close().await.expect("close");

        // And so does a process that opens the state afterwards.
        let fresh = open(etcd.config(&prefix)).await;
        let counter = fresh.get_typed::<IntSpec>(&ptr("counter")).await.unwrap();
        assert_eq!((counter.spec().0, counter.version().get()), (total, total as u64));
        fresh.close().await.expect("close");
    });
}

/// A process opens a shared state that another filled with more than 4 MiB
/// (6,000 resources with a 1 KB label each): it reads all of it.
///
/// Opening (and a re-list after a compaction) reads the prefix in pages of
/// 500 keys at one revision: far below the gRPC client's 4 MiB answer limit.
#[test]
fn a_process_opening_a_large_shared_state_reads_all_of_it() {
    const RESOURCES: usize = 6_000;
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = unique_prefix("large");
    block_on(async move {
        let state = open(etcd.config(&prefix)).await;
        let pad = "x".repeat(1_000);
        for window in (0..RESOURCES).collect::<Vec<_>>().chunks(64) {
            let creates = window.iter().map(|i| {
                let mut r = Resource::new(NS, format!("r{i:06}"), IntSpec(*i as i64));
                r.metadata_mut().labels_mut().insert("pad", pad.as_str());
                state.create(r, None)
            });
            for created in futures::future::join_all(creates).await {
                created.expect("create");
            }
        }
        let mut counter = ChildProcess::spawn("counter", &etcd, &prefix, 0);
        counter.expect(&format!("COUNT {RESOURCES}")).await;
        counter.finish().await;
        state.close().await.expect("close");
    });
}
