//! Crash safety of the durable state: a child process writes continuously and
//! reports each acknowledged write; the test kills it with SIGKILL at random
//! moments, reopens the file, and checks that every acknowledged write is
//! there, no resource is torn, and versions never go back.
//!
//! 10 kills by default; `COSI_CRASH_KILLS=50` for more. The child is this same
//! test binary, started on the ignored `crash_child_writer` entry point.
//!
//! A second test kills the child while it creates a new state file (40 times by
//! default, `COSI_CREATE_KILLS`): every file left behind must open.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::time::Instant;

use cosi_runtime::prelude::*;
use cosi_runtime::testing::conformance::{IntSpec, ScratchDir};

const CHILD_ENV: &str = "COSI_CRASH_CHILD_FILE";
const IDS: usize = 16;
const WRITERS: usize = 8;

fn ptr(i: usize) -> Pointer {
    Pointer::typed::<IntSpec>("config", format!("counter-{i}")).erase()
}

/// The child: increments counters forever, printing `ACK <id> <version> <value>`
/// after each acknowledged write. Each counter's value is always version - 1.
#[test]
#[ignore = "the crash test's child process, started by acknowledged_writes_survive_sigkill"]
fn crash_child_writer() {
    let Ok(file) = std::env::var(CHILD_ENV) else {
        return;
    };
    actix::System::new().block_on(async move {
        // The parent may kill from here on: the creation window included.
        println!("OPENING");
        let _ = std::io::stdout().flush();
        let state = State::open_durable(file, ["config"]).await.expect("open");
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            let stdout = std::io::stdout();
            for line in rx {
                let mut out = stdout.lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
        });
        let writers = (0..WRITERS).map(|w| {
            let (state, tx) = (state.clone(), tx.clone());
            async move {
                let mut n = w;
                loop {
                    let p = ptr(n % IDS);
                    n = n.wrapping_mul(31).wrapping_add(7 + w);
                    let stored = state
                        .modify_with(
                            &p,
                            {
                                let id = p.id().to_owned();
                                move || Resource::new("config", id.clone(), IntSpec(-1))
                            },
                            |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1,
                            None,
                            ExpectedPhase::Running,
                        )
                        .await
                        .expect("write");
                    let line = format!(
                        "ACK {} {} {}",
                        stored.id(),
                        stored.version().get(),
                        stored.spec().0
                    );
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        });
        futures::future::join_all(writers).await;
    });
}

/// Starts the child writer (this test binary) on `file`, its stdout piped.
fn spawn_writer(file: &std::path::Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "crash::crash_child_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, file)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// What the file holds: id → (version, value), after checking every record.
fn reopen_and_check(file: &std::path::Path) -> BTreeMap<String, (u64, i64)> {
    actix::System::new().block_on(async {
        let state = State::open_durable(file, ["config"]).await.expect("reopen after SIGKILL");
        let all = state.list(&Kind::of::<IntSpec>("config"), &LabelQuery::all()).await.unwrap();
        let mut seen = BTreeMap::new();
        for r in all {
            let typed = r.typed::<IntSpec>().expect("every record decodes (nothing torn)");
            let (version, value) = (typed.version().get(), typed.spec().0);
            assert_eq!(value, version as i64 - 1, "{}: value and version agree", r.id());
            seen.insert(r.id().to_owned(), (version, value));
        }
        state.close().await.unwrap();
        seen
    })
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let kills: usize =
        std::env::var("COSI_CRASH_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(10);
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    let mut previous: BTreeMap<String, (u64, i64)> = BTreeMap::new();
    let (mut acks_total, started) = (0usize, Instant::now());
    for round in 0..kills {
        let mut child = spawn_writer(&file);
        // Kill after a random number of acknowledged writes: a random moment
        // of the run, chosen by events rather than by a clock.
        let kill_after = fastrand::usize(20..1_500);
        let mut acked: BTreeMap<String, u64> = BTreeMap::new();
        let mut count = 0usize;
        let mut killed = false;
        for line in BufReader::new(child.stdout.take().unwrap()).lines() {
            let Ok(line) = line else { break };
            let parts: Vec<&str> = line.split(' ').collect();
            if let ["ACK", id, version, _value] = parts[..] {
                let v: u64 = version.parse().unwrap();
                let e = acked.entry(id.to_owned()).or_default();
                *e = (*e).max(v);
                count += 1;
                if count == kill_after && !killed {
                    child.kill().unwrap(); // SIGKILL; the lines already written still count
                    killed = true;
                }
            }
        }
        if !killed {
            child.kill().unwrap();
        }
        child.wait().unwrap();
        acks_total += count;
        assert!(count > 0 || round > 0, "the child acknowledged no write before the first kill");
        let now = reopen_and_check(&file);
        for (id, version) in &acked {
            let stored = now.get(id).map_or(0, |(v, _)| *v);
            assert!(
                stored >= *version,
                "round {round}: {id} acknowledged at version {version}, found {stored}"
            );
        }
        for (id, (version, _)) in &previous {
            let stored = now.get(id).map_or(0, |(v, _)| *v);
            assert!(stored >= *version, "round {round}: {id} went back from {version} to {stored}");
        }
        previous = now;
    }
    eprintln!(
        "crash test: {kills} SIGKILLs, {acks_total} acknowledged writes, all found after reopen ({:.1} s)",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn a_kill_while_creating_a_new_file_never_leaves_it_unopenable() {
    let kills: usize =
        std::env::var("COSI_CREATE_KILLS").ok().and_then(|k| k.parse().ok()).unwrap_or(40);
    let dir = ScratchDir::new();
    let (mut absent, mut created) = (0, 0);
    for round in 0..kills {
        let file = dir.path().join(format!("state-{round}.redb"));
        let mut child = spawn_writer(&file);
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Killed at a random moment after the child starts opening: from at
        // once to some milliseconds in (creating a file takes a few), counted
        // in yields of this thread rather than measured on a clock.
        for line in lines.by_ref() {
            if line.unwrap().ends_with("OPENING") {
                break;
            }
        }
        for _ in 0..fastrand::usize(0..(round + 1) * 500) {
            std::thread::yield_now();
        }
        child.kill().unwrap();
        child.wait().unwrap();
        if file.exists() {
            created += 1;
        } else {
            absent += 1;
        }
        // Whatever the kill left, the file opens (created now if it was not
        // there), every record in it whole.
        reopen_and_check(&file);
        let leftover = dir.path().join(format!("state-{round}.redb.creating"));
        assert!(!leftover.exists(), "round {round}: the open removed {}", leftover.display());
    }
    eprintln!(
        "creation crash test: {kills} SIGKILLs while opening; the file was there after {created}, \
         not yet after {absent}; every one opened"
    );
}
