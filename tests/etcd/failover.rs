//! Exclusive outputs across processes on one etcd: one owner, standbys that
//! take over when its lease lapses, and fencing of a stale owner's writes.
//!
//! Every test starts its own etcd (skipped loudly without an `etcd` binary,
//! failing under `CI`). The owner in the failover test is a real child
//! process (this test binary, started on the ignored `failover_child_owner`
//! entry point) killed with SIGKILL.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cosi_runtime::StorageFailure;
use cosi_runtime::controller::{
    ControllerStatus, Outcome, QueueController, QueueSettings, ReconcileError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::state::{EtcdConfig, WatchOptions, WatchStream};
use cosi_runtime::testing::conformance::{IntSpec, NS, StrSpec};
use cosi_runtime::testing::etcd::TestEtcd;
use futures::StreamExt;

const CHILD_ENDPOINT: &str = "COSI_FAILOVER_ENDPOINT";
const CHILD_PREFIX: &str = "COSI_FAILOVER_PREFIX";

/// Stamps each `IntSpec` input with who reconciled it: an exclusive output.
struct Stamper {
    who: String,
}

impl Controller for Stamper {
    fn name(&self) -> &str {
        "stamper"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for int in cx.list_typed::<IntSpec>(NS, &LabelQuery::all()).await? {
            let text = format!("{}:{}", self.who, int.spec().0);
            cx.modify(&stamp(int.id()), move |r: &mut Resource<StrSpec>| {
                r.spec_mut().0 = text.clone();
            })
            .await?;
        }
        Ok(())
    }
}

fn stamp(id: &str) -> Pointer {
    Pointer::typed::<StrSpec>(NS, id).erase()
}

fn config(endpoint: &str, prefix: &str) -> EtcdConfig {
    EtcdConfig::new([endpoint])
        .prefix(prefix)
        .lease_ttl(Duration::from_secs(1))
        .connect_timeout(Duration::from_secs(2))
        .request_timeout(Duration::from_secs(2))
}

async fn runtime(endpoint: &str, prefix: &str, who: &str) -> Runtime {
    let runtime = Runtime::builder().open(State::builder().etcd(config(endpoint, prefix))).await;
    let runtime = runtime.expect("open the etcd state");
    let who = who.to_owned();
    runtime.register(move || Stamper { who: who.clone() }).await.expect("register the stamper");
    runtime
}

async fn stamps(state: &State) -> WatchStream {
    let kind = Kind::of::<StrSpec>(NS);
    state.watch_kind_stream(&kind, LabelQuery::all(), &WatchOptions::bootstrap()).await.unwrap()
}

/// How long any wait of these tests may take.
const DEADLINE: Duration = Duration::from_secs(60);

/// Waits for a stamp whose text starts with `prefix`; returns its text.
async fn stamped(watch: &mut WatchStream, prefix: &str) -> String {
    while let Some(event) = watch.next().await {
        if let Some(r) = event.resource().filter(|r| !r.is_tombstone())
            && let Ok(s) = r.typed::<StrSpec>()
            && s.spec().0.starts_with(prefix)
        {
            return s.spec().0.clone();
        }
    }
    panic!("the watch ended before a stamp by {prefix}");
}

/// [`stamped`], within [`DEADLINE`].
async fn stamped_by(watch: &mut WatchStream, prefix: &str) -> String {
    tokio::time::timeout(DEADLINE, stamped(watch, prefix))
        .await
        .unwrap_or_else(|_| panic!("no stamp by {prefix} within {DEADLINE:?}"))
}

/// The owner process: a runtime with the stamper; prints `OWNER` once it
/// reconciled, then runs until killed.
#[test]
#[ignore = "a child process of standby_takes_over_when_the_owner_is_killed"]
fn failover_child_owner() {
    let (Ok(endpoint), Ok(prefix)) = (std::env::var(CHILD_ENDPOINT), std::env::var(CHILD_PREFIX))
    else {
        return;
    };
    actix::System::new().block_on(async move {
        let runtime = runtime(&endpoint, &prefix, "child").await;
        let mut watch = stamps(&runtime.state()).await;
        stamped_by(&mut watch, "child:").await;
        println!("OWNER");
        std::future::pending::<()>().await;
    });
}

#[actix::test]
async fn standby_takes_over_when_the_owner_is_killed() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = "failover";
    // The owner's runtime needs an input to stamp before it can say it owns.
    let setup = State::builder().etcd(config(&etcd.endpoint(), prefix)).open().await.unwrap();
    setup.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "failover::failover_child_owner",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENDPOINT, etcd.endpoint())
        .env(CHILD_PREFIX, prefix)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, mut owner_said) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // libtest prints `test failover_child_owner ... ` before the child's own line.
    while !owner_said.recv().await.expect("the child said OWNER").ends_with("OWNER") {}

    // This process registers the same controller: a standby.
    let standby = runtime(&etcd.endpoint(), prefix, "standby").await;
    let claims = standby.claims().await;
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert!(!claims[0].owner, "the child owns the stamps: {claims:?}");
    assert_eq!(claims[0].resource_type, StrSpec::TYPE);
    let mut watch = stamps(&standby.state()).await;
    // A write in this process reaches the owner's controller in the child.
    setup
        .modify(
            &Pointer::typed::<IntSpec>(NS, "a"),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2,
            None,
        )
        .await
        .unwrap();
    assert_eq!(stamped_by(&mut watch, "child:2").await, "child:2", "the owner reconciled");
    standby.settled().await;
    let status = standby.metrics().await[0].status;
    assert_eq!(status, ControllerStatus::Standby, "the standby never reconciled");

    child.kill().unwrap(); // SIGKILL: the lease is left to lapse
    let killed = Instant::now();
    let _ = child.wait();
    assert_eq!(stamped_by(&mut watch, "standby:").await, "standby:2");
    let took = killed.elapsed();
    eprintln!(
        "failover: SIGKILL of the owner → first reconcile by the standby: {took:?} (lease TTL 1 s)"
    );
    let claims = standby.claims().await;
    assert!(claims[0].owner && claims[0].token.is_some(), "{claims:?}");
}

#[actix::test]
async fn a_stale_owner_cannot_write_after_losing_its_lease() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = "fenced";
    let a = runtime(&etcd.endpoint(), prefix, "a").await;
    let mut watch = stamps(&a.state()).await;
    a.state().create(Resource::new(NS, "x", IntSpec(1)), None).await.unwrap();
    stamped_by(&mut watch, "a:1").await;
    let b = runtime(&etcd.endpoint(), prefix, "b").await;
    assert!(!b.claims().await[0].owner);

    // Revoke A's lease behind its back, as if it had been partitioned away.
    let mut client = etcd_client::Client::connect([etcd.endpoint()], None).await.unwrap();
    let key = format!("/{prefix}~owners/{}", StrSpec::TYPE);
    let claim = client.get(key.as_str(), None).await.unwrap();
    let lease = claim.kvs()[0].lease();
    client.lease_revoke(lease).await.unwrap();

    // A still writes as the stamper: refused, whether A noticed yet or not.
    let late = a
        .state()
        .client_as("stamper")
        .modify(&stamp("x"), |r: &mut Resource<StrSpec>| r.spec_mut().0 = "a:late".into())
        .await
        .unwrap_err();
    assert_eq!(late.storage_failure(), Some(StorageFailure::Fenced), "{late}");
    // B takes over and reconciles; A's late write never landed.
    let mut watch = stamps(&b.state()).await;
    assert_eq!(stamped_by(&mut watch, "b:").await, "b:1");
    let x = b.state().get(&stamp("x")).await.unwrap();
    assert_eq!(x.typed::<StrSpec>().unwrap().spec().0, "b:1");
    // Readers in the stale process still write their finalizers: only the
    // owning controller is fenced.
    a.state().add_finalizer(&stamp("x"), "reader").await.unwrap();
}

/// The per-object form of the stamper: one key per input.
struct QStamper {
    who: String,
}

impl QueueController for QStamper {
    fn name(&self) -> &str {
        "qstamper"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![Output::exclusive::<StrSpec>()],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let Ok(int) = cx.get_typed::<IntSpec>(ptr).await else { return Ok(Outcome::Done) };
        let text = format!("{}:{}", self.who, int.spec().0);
        cx.modify(&stamp(ptr.id()), move |r: &mut Resource<StrSpec>| r.spec_mut().0 = text.clone())
            .await?;
        Ok(Outcome::Done)
    }
}

async fn queue_runtime(endpoint: &str, prefix: &str, who: &str) -> Runtime {
    let runtime = Runtime::builder().open(State::builder().etcd(config(endpoint, prefix))).await;
    let runtime = runtime.expect("open the etcd state");
    let who = who.to_owned();
    runtime.register(move || QStamper { who: who.clone() }).await.expect("register");
    runtime
}

#[actix::test]
async fn a_standby_queue_controller_queues_keys_and_reconciles_them_all_on_takeover() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = "queue-failover";
    let a = queue_runtime(&etcd.endpoint(), prefix, "a").await;
    let mut watch = stamps(&a.state()).await;
    a.state().create(Resource::new(NS, "x", IntSpec(1)), None).await.unwrap();
    stamped_by(&mut watch, "a:1").await;
    let b = queue_runtime(&etcd.endpoint(), prefix, "b").await;
    // Keys reach the standby's queue but do not run; settled() is not held up.
    a.state().create(Resource::new(NS, "y", IntSpec(2)), None).await.unwrap();
    stamped_by(&mut watch, "a:2").await;
    b.settled().await;
    let m = &b.metrics().await[0];
    assert_eq!((m.status, m.reconciles), (ControllerStatus::Standby, 0), "{m:?}");

    // A's claim goes (its lease revoked, as by a partition): B takes over and
    // reconciles every key it queued while standing by. A campaigns again at
    // once, on a new lease, and may win the claim back before B's next
    // campaign: whenever A holds it (its token is the claim key's create
    // revision), its lease is revoked again.
    let mut client = etcd_client::Client::connect([etcd.endpoint()], None).await.unwrap();
    let key = format!("/{prefix}~owners/{}", StrSpec::TYPE);
    let mut seen = std::collections::BTreeSet::new();
    let mut watch = stamps(&b.state()).await;
    let deadline = Instant::now() + DEADLINE;
    let mut revoked = 0;
    while seen.len() < 2 {
        let claim = client.get(key.as_str(), None).await.unwrap();
        if let Some(kv) = claim.kvs().first()
            && a.claims().await[0].token == Some(kv.create_revision())
        {
            let _ = client.lease_revoke(kv.lease()).await;
            revoked += 1;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        // A claim A won back is looked for again after 2 × TTL.
        let step = left.min(Duration::from_secs(2));
        match tokio::time::timeout(step, stamped(&mut watch, "b:")).await {
            Ok(stamp) => {
                seen.insert(stamp);
            }
            Err(_) if step < left => {}
            Err(_) => panic!(
                "B stamped only {seen:?} within {DEADLINE:?} ({revoked} revokes of A's \
                 lease); A: {:?}, B: {:?}",
                a.claims().await,
                b.claims().await
            ),
        }
    }
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), ["b:1", "b:2"]);
    assert_eq!(b.metrics().await[0].status, ControllerStatus::Running);
}

#[actix::test]
async fn claims_on_a_state_one_process_owns_are_not_needed() {
    let runtime = Runtime::start();
    runtime.register(|| Stamper { who: "solo".into() }).await.unwrap();
    runtime.state().create(Resource::new(NS, "x", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert!(runtime.claims().await.is_empty());
    let x = runtime.state().get(&stamp("x")).await.unwrap();
    assert_eq!(x.typed::<StrSpec>().unwrap().spec().0, "solo:1", "reconciles at once");
}

#[actix::test]
async fn a_stopped_owner_gives_up_its_claim_at_once_and_the_standby_takes_over() {
    let Some(etcd) = TestEtcd::start() else { return };
    let prefix = "handover";
    let a = runtime(&etcd.endpoint(), prefix, "a").await;
    let mut watch = stamps(&a.state()).await;
    a.state().create(Resource::new(NS, "x", IntSpec(1)), None).await.unwrap();
    stamped_by(&mut watch, "a:1").await;
    let b = runtime(&etcd.endpoint(), prefix, "b").await;
    assert!(!b.claims().await[0].owner);

    let mut client = etcd_client::Client::connect([etcd.endpoint()], None).await.unwrap();
    let key = format!("/{prefix}~owners/{}", StrSpec::TYPE);
    let a_lease = client.get(key.as_str(), None).await.unwrap().kvs()[0].lease();

    a.stop().await;
    // A's lease is revoked as soon as stop() returns, not left to expire: the
    // claim is gone, or already B's.
    let leases = client.leases().await.unwrap();
    assert!(leases.leases().iter().all(|l| l.id() != a_lease), "A's lease still exists");
    let claim = client.get(key.as_str(), None).await.unwrap();
    assert!(claim.kvs().iter().all(|kv| kv.lease() != a_lease));
    assert!(a.claims().await.is_empty(), "a stopped runtime claims nothing");

    let mut watch = stamps(&b.state()).await;
    assert_eq!(stamped_by(&mut watch, "b:").await, "b:1");
    assert!(b.claims().await[0].owner);
}
