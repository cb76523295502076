//! `GET /api/v1/shards` and the `cosi_shard*` series over real HTTP, for a
//! sharded queue controller run by two runtimes (two members) on one etcd
//! this test starts (skipped loudly without an `etcd` binary).

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use crate::common::{IntSpec, NS, StrSpec};
use crate::http::get;
use cosi_runtime::admin::{Admin, Bind};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::shard::{Ring, ShardId, Sharding, shard_of};
use cosi_runtime::testing::etcd::TestEtcd;

const SHARDS: u32 = 8;
const KEYS: usize = 40;
const DEADLINE: Duration = Duration::from_secs(30);

/// Copies each integer to a string.
struct Copier;

impl QueueController for Copier {
    fn name(&self) -> &str {
        "Copier"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<IntSpec>(NS)],
            vec![Output::exclusive::<StrSpec>()],
        )
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let n = cx.get_typed::<IntSpec>(ptr).await?.spec().0;
        let out = Pointer::typed::<StrSpec>(NS, ptr.id());
        cx.modify(&out, move |s: &mut Resource<StrSpec>| s.spec_mut().0 = n.to_string()).await?;
        Ok(Outcome::Done)
    }
}

async fn member(etcd: &TestEtcd, name: &str) -> Runtime {
    let config = etcd.config("admin-shards").lease_ttl(Duration::from_secs(2));
    let runtime = Runtime::builder().open(State::builder().etcd(config)).await.unwrap();
    runtime.register(|| Copier).sharded(Sharding::new().shards(SHARDS).member(name)).await.unwrap();
    runtime
}

/// The shards each member owns, once both own what the ring of both gives
/// them (polled, within [`DEADLINE`]).
async fn converged(a: &Runtime, b: &Runtime) -> BTreeMap<String, BTreeSet<u32>> {
    let ring = Ring::new(SHARDS, ["a", "b"]);
    let want = |m: &str| -> BTreeSet<u32> {
        (0..SHARDS).filter(|s| ring.owner(ShardId(*s)) == Some(m)).collect()
    };
    let deadline = Instant::now() + DEADLINE;
    loop {
        let mut owned = BTreeMap::new();
        for runtime in [a, b] {
            for status in runtime.shards().await {
                owned.insert(status.member, status.owned.iter().map(|(s, _)| *s).collect());
            }
        }
        if owned.get("a") == Some(&want("a")) && owned.get("b") == Some(&want("b")) {
            return owned;
        }
        assert!(Instant::now() < deadline, "not converged within {DEADLINE:?}: {owned:?}");
        // Polling the members' status (no event announces a hand-off).
        tokio::task::yield_now().await;
    }
}

fn addr(bind: &Bind) -> SocketAddr {
    match bind {
        Bind::Tcp(addr) => *addr,
        other => panic!("not TCP: {other}"),
    }
}

#[actix::test]
async fn shards_route_and_series_show_the_ring_and_keys_per_shard() {
    let Some(etcd) = TestEtcd::start() else { return };
    let a = member(&etcd, "a").await;
    let b = member(&etcd, "b").await;
    // Written by a process that holds every key (a member holds only its share).
    let writer = State::builder().etcd(etcd.config("admin-shards")).open().await.unwrap();
    for i in 0..KEYS {
        writer.create(Resource::new(NS, format!("k{i}"), IntSpec(i as i64)), None).await.unwrap();
    }
    let owned = converged(&a, &b).await;
    let mut per_shard: BTreeMap<u32, u64> = BTreeMap::new();
    for i in 0..KEYS {
        let key = Pointer::typed::<IntSpec>(NS, format!("k{i}")).erase();
        *per_shard.entry(shard_of(&key, SHARDS).0).or_default() += 1;
    }
    // `a`'s state has loaded the keys of the shards it owns.
    let share: u64 = owned["a"].iter().filter_map(|s| per_shard.get(s)).sum();
    let kind = Kind::of::<IntSpec>(NS);
    let deadline = Instant::now() + DEADLINE;
    while a.state().list(&kind, &LabelQuery::all()).await.unwrap().len() as u64 != share {
        assert!(Instant::now() < deadline, "a's state did not hold its share within {DEADLINE:?}");
        tokio::task::yield_now().await;
    }

    let server = Admin::new(&a).serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let at = addr(server.bind());
    let answer = get(at, "/api/v1/shards").await;
    assert_eq!(answer.status, 200, "{}", answer.body);
    let all = answer.json();
    let [c] = all.as_array().unwrap().as_slice() else { panic!("one controller: {all}") };
    assert_eq!(c["controller"], "Copier");
    assert_eq!(c["member"], "a");
    assert_eq!(c["shards"], SHARDS);
    let mut members: Vec<&str> =
        c["members"].as_array().unwrap().iter().map(|m| m.as_str().unwrap()).collect();
    members.sort_unstable();
    assert_eq!(members, ["a", "b"]);
    assert_eq!(
        c["primary"],
        serde_json::json!([{ "namespace": NS, "type": "Ints.test.cosi.dev" }])
    );
    let shown: BTreeSet<u32> = c["owned"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let shard = o["shard"].as_u64().unwrap() as u32;
            assert_eq!(o["keys"], per_shard.get(&shard).copied().unwrap_or(0), "shard {shard}");
            assert!(o["token"].as_i64().unwrap() > 0, "{o}");
            assert_eq!(o["draining"], false);
            shard
        })
        .collect();
    assert_eq!(Some(&shown), owned.get("a"));
    let keys: u64 = shown.iter().filter_map(|s| per_shard.get(s)).sum();
    assert_eq!(c["keys"], keys);
    // `a` may have owned every shard before `b` joined, and released `b`'s since.
    let acquired = c["handoffs"]["acquired"].as_u64().unwrap();
    let released = c["handoffs"]["released"].as_u64().unwrap();
    assert_eq!(c["handoffs"]["lost"], 0);
    assert_eq!(acquired - released, shown.len() as u64, "{c}");
    assert_eq!(c["takeover"]["count"], acquired, "every acquired shard timed");
    assert!(c["takeover"]["max_seconds"].as_f64().unwrap() > 0.0);

    let metrics = get(at, "/metrics").await.body;
    let n = shown.len();
    for line in [
        format!("cosi_shards{{controller=\"Copier\"}} {SHARDS}"),
        format!("cosi_shards_owned{{controller=\"Copier\"}} {n}"),
        "cosi_shards_draining{controller=\"Copier\"} 0".to_owned(),
        "cosi_shard_members{controller=\"Copier\"} 2".to_owned(),
        format!("cosi_shard_handoffs_total{{controller=\"Copier\",kind=\"acquired\"}} {acquired}"),
        format!("cosi_shard_handoffs_total{{controller=\"Copier\",kind=\"released\"}} {released}"),
        "cosi_shard_handoffs_total{controller=\"Copier\",kind=\"lost\"} 0".to_owned(),
        format!("cosi_shard_takeover_seconds_count{{controller=\"Copier\"}} {acquired}"),
    ] {
        assert!(metrics.contains(&line), "missing {line} in\n{metrics}");
    }
    server.stop().await;
    b.stop().await;
    a.stop().await;
}

#[actix::test]
async fn shards_route_is_empty_without_a_sharded_controller() {
    let runtime = Runtime::start();
    let server = Admin::new(&runtime).serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let answer = get(addr(server.bind()), "/api/v1/shards").await;
    assert_eq!((answer.status, answer.json()), (200, serde_json::json!([])));
    server.stop().await;
}
