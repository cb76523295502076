//! `cosictl shards` as a subprocess against a runtime whose sharded queue
//! controller runs on an etcd this test starts (`--features etcd`; skipped
//! loudly without an `etcd` binary).
#![cfg(feature = "etcd")]

use std::process::Command;
use std::time::{Duration, Instant};

use cosi_runtime::admin::{Admin, AdminServer};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::shard::{Sharding, shard_of};
use cosi_runtime::testing::etcd::TestEtcd;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Int(i64);
impl Spec for Int {
    const TYPE: &'static str = "Ints.test.cosi.dev";
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Double(i64);
impl Spec for Double {
    const TYPE: &'static str = "Doubles.test.cosi.dev";
}

const SHARDS: u32 = 4;
const KEYS: usize = 12;

struct Doubler;

impl QueueController for Doubler {
    fn name(&self) -> &str {
        "Doubler"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<Int>("default")],
            vec![Output::exclusive::<Double>()],
        )
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let n = cx.get_typed::<Int>(ptr).await?.spec().0;
        let out = Pointer::typed::<Double>("default", ptr.id());
        cx.modify(&out, move |d: &mut Resource<Double>| d.spec_mut().0 = 2 * n).await?;
        Ok(Outcome::Done)
    }
}

/// Runs cosictl off the actix thread (the runtime answers it from there).
async fn cosictl(server: &AdminServer, args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_cosictl"));
    command.arg("--endpoint").arg(server.url()).args(args);
    let output: std::process::Output =
        tokio::task::spawn_blocking(move || command.output().unwrap()).await.unwrap();
    assert!(output.status.success(), "failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).unwrap()
}

#[actix::test]
async fn shards_prints_the_ring_and_each_owned_shard() {
    let Some(etcd) = TestEtcd::start() else { return };
    let config = etcd.config("cosictl-shards").lease_ttl(Duration::from_secs(2));
    let runtime = Runtime::builder().open(State::builder().etcd(config)).await.unwrap();
    runtime
        .register(|| Doubler)
        .sharded(Sharding::new().shards(SHARDS).member("solo"))
        .await
        .unwrap();
    for i in 0..KEYS {
        runtime
            .state()
            .create(Resource::new("default", format!("k{i}"), Int(i as i64)), None)
            .await
            .unwrap();
    }
    // The only member owns every shard once it created their keys (polled:
    // no event announces it).
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let status = runtime.shards().await;
        if status.first().is_some_and(|s| s.owned.len() == SHARDS as usize) {
            break;
        }
        assert!(Instant::now() < deadline, "solo owns no {SHARDS} shards: {status:?}");
        tokio::task::yield_now().await;
    }
    let server = Admin::new(&runtime).serve("127.0.0.1:0".parse().unwrap()).await.unwrap();

    let table = cosictl(&server, &["shards"]).await;
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows,
        [
            vec![
                "CONTROLLER",
                "MEMBER",
                "OWNED",
                "DRAINING",
                "KEYS",
                "ACQUIRED",
                "RELEASED",
                "LOST",
                "MEMBERS"
            ],
            vec!["Doubler", "solo", "4/4", "0", "12", "4", "0", "0", "solo"],
        ],
        "{table}"
    );

    let detail = cosictl(&server, &["shards", "--detail"]).await;
    let (ring, shards) = detail.split_once("\n\n").expect("two tables");
    assert_eq!(ring, table.trim_end());
    let mut lines = shards.lines();
    assert_eq!(
        lines.next().unwrap().split_whitespace().collect::<Vec<_>>(),
        ["CONTROLLER", "SHARD", "TOKEN", "KEYS", "DRAINING"]
    );
    let mut keys = [0u64; SHARDS as usize];
    for i in 0..KEYS {
        let key = Pointer::typed::<Int>("default", format!("k{i}")).erase();
        keys[shard_of(&key, SHARDS).0 as usize] += 1;
    }
    let mut seen = Vec::new();
    for line in lines {
        let cells: Vec<&str> = line.split_whitespace().collect();
        let [controller, shard, token, n, draining] = cells.as_slice() else { panic!("{line}") };
        let shard: usize = shard.parse().unwrap();
        assert_eq!((*controller, *draining), ("Doubler", "no"), "{line}");
        assert!(token.parse::<i64>().unwrap() > 0, "{line}");
        assert_eq!(n.parse::<u64>().unwrap(), keys[shard], "{line}");
        seen.push(shard);
    }
    assert_eq!(seen, [0, 1, 2, 3], "{detail}");

    let json: serde_json::Value =
        serde_json::from_str(&cosictl(&server, &["shards", "-o", "json"]).await).unwrap();
    assert_eq!(json[0]["member"], "solo");
    assert_eq!(json[0]["keys"], KEYS);
    server.stop().await;
    runtime.stop().await;
}
