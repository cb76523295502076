//! A sharded queue controller in three processes on one etcd: each key is
//! reconciled by the member that owns its shard, and the ring says who
//! owns which shard.
//!
//! ```sh
//! cargo run --example sharded --features etcd                 # starts its own etcd (needs the binary)
//! cargo run --example sharded --features etcd -- --endpoint http://127.0.0.1:2379
//! ```
//!
//! Each member is this program again (`--member NAME`): a runtime on the
//! shared etcd state with one queue controller, `greeter`, registered
//! `.sharded(..)` over 16 virtual shards. This process starts three
//! members, creates 24 `Names`, waits until every `Greeting` was written by
//! the member the ring gives its key, prints who reconciled what and each
//! member's view of the ring (`Runtime::shards`), and ends the members (a
//! clean leave: their lease is revoked).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::shard::{Ring, ShardId, Sharding};
use cosi_runtime::state::{EtcdConfig, WatchOptions};
use futures::StreamExt;
use serde::{Deserialize, Serialize};
use tokio::sync::mpsc;

const NS: &str = "sharded";
const SHARDS: u32 = 16;
const NAMES: usize = 24;
const MEMBERS: [&str; 3] = ["member-a", "member-b", "member-c"];
const DEADLINE: Duration = Duration::from_secs(60);

/// Someone to greet.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Names.sharded.cosi.dev")]
struct Name {
    name: String,
}

/// A greeting, and the member that wrote it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Greetings.sharded.cosi.dev")]
struct Greeting {
    text: String,
    member: String,
}

/// Greets each name; only the keys of the shards this member owns reach it.
struct Greeter {
    member: String,
}

impl QueueController for Greeter {
    fn name(&self) -> &str {
        "greeter"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(vec![Input::primary::<Name>(NS)], vec![Output::exclusive::<Greeting>()])
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let name = match cx.get_typed::<Name>(ptr).await {
            Ok(n) => n.spec().name.clone(),
            Err(e) if e.is_not_found() => return Ok(Outcome::Done),
            Err(e) => return Err(e.into()),
        };
        let (shard, token) = cx.shard().unwrap_or_default();
        println!("  [{}] reconciles {} (shard {shard}, token {token})", self.member, ptr.id());
        let member = self.member.clone();
        let out = Pointer::typed::<Greeting>(NS, ptr.id());
        cx.modify(&out, move |g: &mut Resource<Greeting>| {
            *g.spec_mut() = Greeting { text: format!("hello, {name}"), member: member.clone() };
        })
        .await?;
        Ok(Outcome::Done)
    }
}

struct Args {
    member: Option<String>,
    endpoint: Option<String>,
    prefix: String,
}

fn args() -> Result<Args, String> {
    // A prefix of its own per run: a run starts with an empty store.
    let prefix = format!("sharded-demo-{}", std::process::id());
    let mut args = Args { member: None, endpoint: None, prefix };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--member" => args.member = Some(value()?),
            "--endpoint" => args.endpoint = Some(value()?),
            "--prefix" => args.prefix = value()?,
            other => {
                return Err(format!("unknown flag {other}; see the top of examples/sharded.rs"));
            }
        }
    }
    Ok(args)
}

fn config(endpoint: &str, prefix: &str) -> EtcdConfig {
    EtcdConfig::new([endpoint]).prefix(prefix).lease_ttl(Duration::from_secs(2))
}

/// One member: a runtime with the sharded greeter. Each `ring` line on
/// stdin is answered with its view of the ring; it leaves when stdin closes.
async fn member(name: String, endpoint: String, prefix: String) -> Result<(), Error> {
    let runtime =
        Runtime::builder().open(State::builder().etcd(config(&endpoint, &prefix))).await?;
    let me = name.clone();
    runtime
        .register(move || Greeter { member: me.clone() })
        .sharded(Sharding::new().shards(SHARDS).member(name.clone()))
        .await
        .map_err(|e| Error::InvalidInput { resource: "greeter".into(), reason: e.to_string() })?;
    println!("READY {name}");
    let (tx, mut lines) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    while let Some(line) = lines.recv().await {
        if line == "ring" {
            for s in runtime.shards().await {
                let owned: Vec<String> = s.owned.iter().map(|(n, _)| n.to_string()).collect();
                println!(
                    "RING {} owns [{}] of {}; draining {:?}; members {}; acquired {}, released {}, lost {}; takeover mean {:.0?}, max {:.0?}",
                    s.member,
                    owned.join(","),
                    s.shards,
                    s.draining,
                    s.members.join(","),
                    s.acquired,
                    s.released,
                    s.lost,
                    s.takeover.mean(),
                    s.takeover.max,
                );
            }
        }
    }
    runtime.stop().await;
    println!("  [{name}] left");
    Ok(())
}

/// A member process: its stdin, and the `READY`/`RING` lines of its stdout
/// (the others are printed as they come).
struct Member {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    control: mpsc::UnboundedReceiver<String>,
}

impl Member {
    fn spawn(name: &str, endpoint: &str, prefix: &str) -> Member {
        let mut child = Command::new(std::env::current_exe().expect("this program"))
            .args(["--member", name, "--endpoint", endpoint, "--prefix", prefix])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start a member");
        let stdout = child.stdout.take().expect("piped");
        let (tx, control) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.starts_with("READY") || line.starts_with("RING") {
                    if tx.send(line).is_err() {
                        return;
                    }
                } else {
                    println!("{line}");
                }
            }
        });
        let stdin = child.stdin.take();
        Member { name: name.to_owned(), child, stdin, control }
    }

    /// The next control line, within [`DEADLINE`].
    async fn next(&mut self) -> Result<String, String> {
        match tokio::time::timeout(DEADLINE, self.control.recv()).await {
            Ok(Some(line)) => Ok(line),
            Ok(None) => Err(format!("{} ended", self.name)),
            Err(_) => Err(format!("{} said nothing within {DEADLINE:?}", self.name)),
        }
    }

    /// Its view of the ring: the `RING` line.
    async fn ring(&mut self) -> Result<String, String> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        writeln!(stdin, "ring").map_err(|e| e.to_string())?;
        self.next().await
    }

    /// Asks it to leave: closes its stdin.
    fn stop(&mut self) {
        drop(self.stdin.take());
    }

    /// A clean leave: closes its stdin and waits for it to exit.
    async fn leave(mut self) -> Result<(), String> {
        self.stop();
        let mut child = self.child;
        let status = tokio::task::spawn_blocking(move || child.wait())
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        if status.success() { Ok(()) } else { Err(format!("{} exited with {status}", self.name)) }
    }
}

/// The shards `member` owns per the ring of every member, as a `RING` line lists them.
fn share(ring: &Ring, member: &str) -> String {
    let owned: Vec<String> = (0..SHARDS)
        .filter(|s| ring.owner(ShardId(*s)) == Some(member))
        .map(|s| s.to_string())
        .collect();
    format!("owns [{}] of {SHARDS}", owned.join(","))
}

async fn demo(args: Args) -> Result<(), Box<dyn std::error::Error>> {
    let _etcd;
    let endpoint = match &args.endpoint {
        Some(e) => e.clone(),
        None => {
            println!("starting a throwaway etcd on loopback…");
            let Some(etcd) = cosi_runtime::testing::etcd::TestEtcd::start() else {
                return Err("no `etcd` binary: install etcd-server, or pass --endpoint URL".into());
            };
            let endpoint = etcd.endpoint();
            _etcd = etcd;
            endpoint
        }
    };
    println!("etcd at {endpoint}, prefix {}, {SHARDS} virtual shards", args.prefix);
    let state = State::builder().etcd(config(&endpoint, &args.prefix)).open().await?;
    let kind = Kind::of::<Greeting>(NS);
    let mut watch =
        state.watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::bootstrap()).await?;

    println!("starting {} members", MEMBERS.len());
    let mut members: Vec<Member> =
        MEMBERS.iter().map(|m| Member::spawn(m, &endpoint, &args.prefix)).collect();
    for m in &mut members {
        m.next().await?;
    }
    println!("creating {NAMES} names");
    for i in 0..NAMES {
        let name = Name { name: format!("user {i}") };
        state.client().create(Resource::new(NS, format!("name-{i:02}"), name)).await?;
    }

    // Every greeting written by the member the ring of all three gives its
    // key (a key reconciled by one member before its shard moved is
    // reconciled again by the next owner).
    let ring = Ring::new(SHARDS, MEMBERS);
    let want: BTreeMap<String, String> = (0..NAMES)
        .map(|i| {
            let key = Pointer::typed::<Name>(NS, format!("name-{i:02}")).erase();
            let owner = ring.owner_of(&key).expect("a ring of three has owners");
            (key.id().to_owned(), owner.to_owned())
        })
        .collect();
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    let deadline = Instant::now() + DEADLINE;
    while want.iter().any(|(id, m)| seen.get(id) != Some(m)) {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(left, watch.next())
            .await
            .map_err(|_| format!("greetings not all written by their owners within {DEADLINE:?}"))?
            .ok_or("the watch ended")?;
        if let Some(r) = event.resource().filter(|r| !r.is_tombstone())
            && let Ok(g) = r.typed::<Greeting>()
        {
            seen.insert(r.id().to_owned(), g.spec().member.clone());
        }
    }
    println!("\nwho greeted whom (each name's shard decides):");
    for m in MEMBERS {
        let ids: Vec<&str> =
            seen.iter().filter(|(_, by)| by.as_str() == m).map(|(id, _)| id.as_str()).collect();
        println!("  {m}: {} names: {}", ids.len(), ids.join(" "));
    }

    // Each member's view of the ring, once it owns its share (asked again
    // until then: a shard with no names may still be on its way).
    println!("\nthe ring, as each member reports it (Runtime::shards):");
    for m in &mut members {
        let expected = share(&ring, &m.name);
        let line = loop {
            let line = m.ring().await?;
            if line.contains(&expected) {
                break line;
            }
            if Instant::now() > deadline {
                return Err(format!("{} does not own its share: {line}", m.name).into());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        println!("  {}", line.trim_start_matches("RING "));
    }

    println!("\nending the members (each revokes its lease)");
    // All at once: none takes over the shards of another on its way out.
    for m in &mut members {
        m.stop();
    }
    for m in members {
        m.leave().await?;
    }
    println!("done: {NAMES} names greeted by {} members", MEMBERS.len());
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let system = actix::System::new();
    match args.member.clone() {
        Some(name) => {
            let endpoint = args.endpoint.clone().ok_or("--member needs --endpoint")?;
            system.block_on(member(name, endpoint, args.prefix))?;
        }
        None => system.block_on(demo(args))?,
    }
    Ok(())
}
