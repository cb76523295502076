//! Three control-plane processes on one etcd: one owns the scheduler, two
//! stand by; the owner is killed with SIGKILL and a standby takes over.
//!
//! ```sh
//! cargo run --example cluster --features etcd                 # starts its own etcd (needs the binary)
//! cargo run --example cluster --features etcd -- --endpoint http://127.0.0.1:2379 --ttl 2
//! ```
//!
//! Each node is this program again (`--node NAME`): a runtime on the shared
//! etcd state with one controller, `scheduler`, whose output type
//! (`Assignments`) is exclusive. Only the node holding the cluster-wide claim
//! reconciles; the others watch and wait. This process creates jobs, watches
//! the assignments, kills the owner, and measures how long the cluster
//! takes to assign again.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use cosi_runtime::prelude::*;
use cosi_runtime::state::{EtcdConfig, WatchOptions, WatchStream};
use futures::StreamExt;
use serde::{Deserialize, Serialize};

const NS: &str = "cluster";

/// Work to place on a node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Jobs.cluster.cosi.dev")]
struct Job {
    cpu: u32,
}

/// Where a job runs, written only by the scheduler that owns the claim.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Assignments.cluster.cosi.dev")]
struct Assignment {
    node: String,
}

/// Assigns every job to the node it runs on: the owner takes them all.
struct Scheduler {
    node: String,
}

impl Controller for Scheduler {
    fn name(&self) -> &str {
        "scheduler"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<Job>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<Assignment>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for job in cx.list_typed::<Job>(NS, &LabelQuery::all()).await? {
            let node = self.node.clone();
            let ptr = Pointer::typed::<Assignment>(NS, job.id());
            let before = cx.get_typed::<Assignment>(&ptr).await.ok().map(|a| a.spec().node.clone());
            if before.as_deref() != Some(self.node.as_str()) {
                println!("  [{}] assigns {} to itself", self.node, job.id());
            }
            cx.modify(&ptr, move |a: &mut Resource<Assignment>| a.spec_mut().node = node.clone())
                .await?;
        }
        Ok(())
    }
}

struct Args {
    node: Option<String>,
    endpoint: Option<String>,
    prefix: String,
    ttl: u64,
    nodes: usize,
}

fn args() -> Result<Args, String> {
    let mut args =
        Args { node: None, endpoint: None, prefix: "cluster-demo".into(), ttl: 1, nodes: 3 };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--node" => args.node = Some(value()?),
            "--endpoint" => args.endpoint = Some(value()?),
            "--prefix" => args.prefix = value()?,
            "--ttl" => args.ttl = value()?.parse().map_err(|e| format!("--ttl: {e}"))?,
            "--nodes" => args.nodes = value()?.parse().map_err(|e| format!("--nodes: {e}"))?,
            other => {
                return Err(format!("unknown flag {other}; see the top of examples/cluster.rs"));
            }
        }
    }
    if args.nodes < 2 {
        return Err("--nodes: at least 2 (one owner, one standby)".into());
    }
    Ok(args)
}

fn config(endpoint: &str, prefix: &str, ttl: u64) -> EtcdConfig {
    EtcdConfig::new([endpoint]).prefix(prefix).lease_ttl(Duration::from_secs(ttl))
}

/// One node: a runtime with the scheduler, until killed.
async fn node(name: String, endpoint: String, prefix: String, ttl: u64) -> Result<(), Error> {
    let runtime =
        Runtime::builder().open(State::builder().etcd(config(&endpoint, &prefix, ttl))).await?;
    let me = name.clone();
    runtime
        .register(move || Scheduler { node: me.clone() })
        .await
        .map_err(|e| Error::InvalidInput { resource: "scheduler".into(), reason: e.to_string() })?;
    println!(
        "  [{name}] up, pid {}; scheduler registered, claiming its output",
        std::process::id()
    );
    // Who owns what, as the runtime reports it: print each change.
    let mut owner = false;
    loop {
        let claims = runtime.claims().await;
        let now = !claims.is_empty() && claims.iter().all(|c| c.owner);
        if now != owner {
            owner = now;
            let token = claims.first().and_then(|c| c.token).unwrap_or_default();
            println!("  [{name}] holds the scheduler's claim (fencing token {token})");
        }
        actix_rt::time::sleep(Duration::from_millis(50)).await;
    }
}

fn spawn_node(name: &str, endpoint: &str, args: &Args) -> Child {
    Command::new(std::env::current_exe().expect("this program"))
        .args(["--node", name, "--endpoint", endpoint, "--prefix", &args.prefix])
        .args(["--ttl", &args.ttl.to_string()])
        .stdin(Stdio::null())
        .spawn()
        .expect("start a node")
}

/// Waits for an assignment event of a job and node that satisfy `want`;
/// returns the node.
async fn assigned(watch: &mut WatchStream, want: impl Fn(&str, &str) -> bool) -> String {
    while let Some(event) = watch.next().await {
        if let Some(r) = event.resource().filter(|r| !r.is_tombstone())
            && let Ok(a) = r.typed::<Assignment>()
            && want(r.id(), &a.spec().node)
        {
            return a.spec().node.clone();
        }
    }
    panic!("the watch ended");
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
    println!("etcd at {endpoint}, prefix {}, claim lease TTL {} s", args.prefix, args.ttl);
    let state = State::builder().etcd(config(&endpoint, &args.prefix, args.ttl)).open().await?;
    let kind = Kind::of::<Assignment>(NS);
    let mut watch =
        state.watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::bootstrap()).await?;

    println!("starting {} nodes", args.nodes);
    let mut nodes: Vec<(String, Child)> = (1..=args.nodes)
        .map(|i| {
            let name = format!("node-{i}");
            let child = spawn_node(&name, &endpoint, &args);
            (name, child)
        })
        .collect();
    println!("creating job-1 and job-2");
    for (i, id) in ["job-1", "job-2"].iter().enumerate() {
        state
            .modify(
                &Pointer::typed::<Job>(NS, *id),
                move |j: &mut Resource<Job>| j.spec_mut().cpu = i as u32 + 1,
                None,
            )
            .await?;
    }
    let owner = assigned(&mut watch, |_, _| true).await;
    println!("→ {owner} owns the scheduler; the others stand by");

    let at = nodes.iter().position(|(n, _)| *n == owner).expect("the owner is one of ours");
    let (_, mut child) = nodes.remove(at);
    println!("killing {owner} (SIGKILL): its lease is left to lapse");
    child.kill()?;
    let killed = Instant::now();
    child.wait()?;
    let next = assigned(&mut watch, |_, n| n != owner).await;
    let took = killed.elapsed();
    println!(
        "→ {next} took over {:.2} s after the kill (lease TTL {} s)",
        took.as_secs_f64(),
        args.ttl
    );

    println!("creating job-3: assigned by the new owner");
    state.client().create(Resource::new(NS, "job-3", Job { cpu: 3 })).await?;
    assigned(&mut watch, |job, n| job == "job-3" && n == next).await;
    let jobs = state.list_typed::<Assignment>(NS, &LabelQuery::all()).await?;
    for a in &jobs {
        println!("  {} → {}", a.id(), a.spec().node);
    }
    for (_, mut child) in nodes {
        let _ = child.kill();
        let _ = child.wait();
    }
    // Clean up under the prefix so the next run starts empty.
    for a in jobs {
        state.client_as("scheduler").destroy(a.pointer()).await.ok();
    }
    for id in ["job-1", "job-2", "job-3"] {
        state.client().destroy(&Pointer::typed::<Job>(NS, id)).await.ok();
    }
    println!("done: failover in {:.2} s", took.as_secs_f64());
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = args()?;
    let system = actix::System::new();
    match args.node.clone() {
        Some(name) => {
            let endpoint = args.endpoint.clone().ok_or("--node needs --endpoint")?;
            system.block_on(node(name, endpoint, args.prefix, args.ttl))?;
        }
        None => system.block_on(demo(args))?,
    }
    Ok(())
}
