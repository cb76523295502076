//! A cluster as a source (feature `kubernetes`): the heap that N = 100,000
//! objects of one type cost once mirrored into the state and read by 3
//! controllers, against 3 kube-runtime reflector stores of the same objects
//! (what 3 kube-rs controllers each hold), measured in the same run.
//!
//! The cluster is this crate's Kubernetes API server over a state of its own
//! (feature `kubernetes-api`), in this process; both sides read it through
//! stock kube-runtime `watcher`s (dynamic objects: the mirror's spec is the
//! object as a JSON value, a reflector's store holds `DynamicObject`s).
//! Heap = live bytes from a counting global allocator, the difference
//! between before a side starts and after it has listed everything (and,
//! for ours, after the 3 controllers have settled); the server's own
//! allocations for a side's watches count in that side.
//!
//! `cargo bench --features kubernetes,kubernetes-api --bench cluster`
//! measures and writes `<target>/bench-report/cluster.json`;
//! `cargo test --features kubernetes,kubernetes-api --bench cluster` runs it
//! with N = 500 and asserts only that both sides hold every object.

mod common;

use std::time::{Duration, Instant};

use common::{CountingAlloc, Mode, heap_now, write_report};
use cosi_runtime::cluster::{Mirror, Source};
use cosi_runtime::controller::{Input, Outcome, QController, QSettings, ReconcileContext};
use cosi_runtime::kubernetes::{Expose, KubernetesApi};
use cosi_runtime::prelude::*;
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const NS: &str = "bench";
/// The type the mirrors are stored as, on our side.
const MIRROR_TYPE: &str = "Links.mirror.cosi.dev";

/// A link as the cluster stores it: a few fields, one a list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Links.bench.cosi.dev")]
struct LinkSpec {
    mtu: u32,
    kind: String,
    addresses: Vec<String>,
}

fn links() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("bench.cosi.dev", "v1", "Link"))
}

/// Reads each mirror it is given (a reader like any controller of the set).
struct Reader(&'static str);

impl QController for Reader {
    fn name(&self) -> &str {
        self.0
    }
    fn settings(&self) -> QSettings {
        QSettings::new(vec![Input::new(&Kind::new(NS, MIRROR_TYPE), InputKind::Primary)], vec![])
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let _ = cx.get(ptr).await;
        Ok(Outcome::Done)
    }
}

fn mib(bytes: isize) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

fn main() {
    let mode = Mode::from_args();
    if mode.list {
        println!("cluster_memory: bench");
        return;
    }
    let n: usize = mode.scale(100_000, 500);
    actix::System::new().block_on(run(mode, n));
}

async fn run(mode: Mode, n: usize) {
    // ---- the cluster: N links served by our Kubernetes API ----
    let cluster = State::start();
    for i in 0..n {
        let spec = LinkSpec {
            mtu: 1500,
            kind: "ethernet".into(),
            addresses: vec![format!("10.{}.{}.1/24", i / 256 % 256, i % 256)],
        };
        let mut r = Resource::new(NS, format!("link-{i:06}"), spec);
        r.metadata_mut().labels_mut().insert("tier", if i % 2 == 0 { "edge" } else { "core" });
        cluster.create(r, None).await.unwrap();
    }
    let api = KubernetesApi::new(&cluster).expose(Expose::of::<LinkSpec>("v1")).unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();

    // ---- ours: one mirror in the state, 3 controllers reading it ----
    let before = heap_now();
    let started = Instant::now();
    let runtime = Runtime::start();
    let source = Source::new(client.clone(), runtime.state());
    let handle = source.mirror(Mirror::dynamic(links(), MIRROR_TYPE).namespace(NS));
    handle.synced().await.unwrap();
    let mirror = heap_now() - before;
    for name in ["ReaderOne", "ReaderTwo", "ReaderThree"] {
        runtime.register_queue(move || Reader(name)).await.unwrap();
    }
    runtime.settled_within(Duration::from_secs(600)).await.unwrap();
    let ours_secs = started.elapsed().as_secs_f64();
    let ours = heap_now() - before;
    let mirrored = runtime.state().list(&Kind::new(NS, MIRROR_TYPE), &LabelQuery::default()).await;
    assert_eq!(mirrored.unwrap().len(), n, "every object mirrored");

    // ---- kube-rs: a reflector store per controller ----
    let reflectors = |count: usize| {
        let client = client.clone();
        async move {
            let before = heap_now();
            let started = Instant::now();
            let mut stores = Vec::new();
            for _ in 0..count {
                let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &links());
                let writer = reflector::store::Writer::new(links());
                let reader = writer.as_reader();
                let stream = reflector(writer, watcher(api, watcher::Config::default()));
                let task = actix_rt::spawn(stream.default_backoff().for_each(|_| async {}));
                reader.wait_until_ready().await.unwrap();
                stores.push((reader, task));
            }
            let secs = started.elapsed().as_secs_f64();
            let heap = heap_now() - before;
            for (reader, _) in &stores {
                assert_eq!(reader.len(), n, "every object in each store");
            }
            for (_, task) in stores {
                task.abort();
            }
            (heap, secs)
        }
    };
    let (one, one_secs) = reflectors(1).await;
    let (three, three_secs) = reflectors(3).await;

    let report = json!({
        "n": n,
        "controllers": 3,
        "ours_bytes": ours,
        "mirror_bytes": mirror,
        "readers_bytes": ours - mirror,
        "ours_secs": ours_secs,
        "reflector_bytes": one,
        "reflector_secs": one_secs,
        "reflectors3_bytes": three,
        "reflectors3_secs": three_secs,
        "ours_per_object": ours as f64 / n as f64,
        "reflectors3_per_object": three as f64 / n as f64,
    });
    println!(
        "{n} objects, 3 readers: ours {:.1} MiB (the mirror {:.1} MiB; {:.1} s), 1 reflector {:.1} MiB, 3 reflectors {:.1} MiB ({:.1} s): {:.2}x",
        mib(ours),
        mib(mirror),
        ours_secs,
        mib(one),
        mib(three),
        three_secs,
        ours as f64 / three as f64
    );
    write_report(&mode, "cluster", &report);
    drop(source);
    server.stop().await;
}
