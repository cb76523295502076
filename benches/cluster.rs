//! A cluster as a source (feature `kubernetes`): the heap that N = 100,000
//! objects of one type cost once mirrored into the state and read by 3
//! controllers, against 3 kube-runtime reflector stores of the same objects
//! (what 3 kube-rs controllers each hold), measured in the same run.
//!
//! The cluster is this crate's Kubernetes API server over a state of its own
//! (feature `kubernetes-api`), in this process; both sides read it through
//! stock kube-runtime `watcher`s. Typed: the same Rust type on both sides
//! (`LinkObject`, shaped as a kube-rs `CustomResource`: `ObjectMeta` and a
//! typed spec), so the comparison is of copies, not representations;
//! dynamic: the mirror's spec a JSON value, the stores' `DynamicObject`s.
//! Heap = live bytes from a counting global allocator, the difference
//! between before a side starts and after it holds everything (for ours,
//! after the 3 controllers have settled; the mirror alone is reported too);
//! the server's allocations for a side's watches count in that side.
//!
//! `cargo bench --features kubernetes,kubernetes-api --bench cluster`
//! measures and writes `<target>/bench-report/cluster.json`;
//! `cargo test --features kubernetes,kubernetes-api --bench cluster` runs it
//! with N = 500 and asserts only that every side holds every object.

mod common;

use std::time::{Duration, Instant};

use common::{CountingAlloc, Mode, heap_now, write_report};
use cosi_runtime::cluster::{Mirror, Source};
use cosi_runtime::controller::{Input, Outcome, QueueController, QueueSettings, ReconcileContext};
use cosi_runtime::kubernetes::{Expose, KubernetesApi};
use cosi_runtime::prelude::*;
use futures::StreamExt;
use std::borrow::Cow;

use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ObjectMeta};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use serde::{Deserialize, Serialize};
use serde_json::json;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const NS: &str = "bench";
/// The type dynamic mirrors are stored as, on our side.
const DYNAMIC_TYPE: &str = "Links.dynamic.cosi.dev";

/// A link as the cluster stores it: a few fields, one a list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Links.bench.cosi.dev")]
struct LinkSpec {
    mtu: u32,
    kind: String,
    addresses: Vec<String>,
}

/// A link as both sides hold it, typed: what a kube-rs user's
/// `#[derive(CustomResource)]` struct is (metadata, spec), and the spec of
/// our mirror. The same Rust type on both sides: the comparison is of
/// copies, not of representations.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Links.mirror.cosi.dev")]
struct LinkObject {
    metadata: ObjectMeta,
    spec: LinkSpec,
}

impl kube::Resource for LinkObject {
    type DynamicType = ();
    type Scope = k8s_openapi::NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        "Link".into()
    }
    fn group(_: &()) -> Cow<'_, str> {
        "bench.cosi.dev".into()
    }
    fn version(_: &()) -> Cow<'_, str> {
        "v1".into()
    }
    fn plural(_: &()) -> Cow<'_, str> {
        "links".into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

fn links() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("bench.cosi.dev", "v1", "Link"))
}

/// Reads each mirror it is given (a reader like any controller of the set).
struct Reader(&'static str, &'static str);

impl QueueController for Reader {
    fn name(&self) -> &str {
        self.0
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(vec![Input::new(&Kind::new(NS, self.1), InputKind::Primary)], vec![])
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

/// A reflector store of `K` fed by a watcher on `api`, running: its length
/// (a function, read when asked) and its task.
async fn reflect<K>(
    api: Api<K>,
    dyntype: K::DynamicType,
) -> (Box<dyn Fn() -> usize>, actix_rt::task::JoinHandle<()>)
where
    K: kube::Resource
        + Clone
        + std::fmt::Debug
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
    K::DynamicType: Clone + Eq + std::hash::Hash + Unpin,
{
    let writer = reflector::store::Writer::new(dyntype);
    let reader = writer.as_reader();
    let stream = reflector(writer, watcher(api, watcher::Config::default()));
    let task = actix_rt::spawn(stream.default_backoff().for_each(|_| async {}));
    reader.wait_until_ready().await.unwrap();
    (Box::new(move || reader.len()), task)
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
    let ours = |mirror: Mirror| {
        let client = client.clone();
        async move {
            let resource_type: &'static str = mirror.resource_type().to_owned().leak();
            let before = heap_now();
            let started = Instant::now();
            let runtime = Runtime::start();
            let source = Source::new(client, runtime.state());
            source.mirror(mirror).synced().await.unwrap();
            let alone = heap_now() - before;
            for name in ["ReaderOne", "ReaderTwo", "ReaderThree"] {
                runtime.register(move || Reader(name, resource_type)).await.unwrap();
            }
            runtime.settled_within(Duration::from_secs(600)).await.unwrap();
            let secs = started.elapsed().as_secs_f64();
            let heap = heap_now() - before;
            let kind = Kind::new(NS, resource_type);
            let mirrored = runtime.state().list(&kind, &LabelQuery::default()).await;
            assert_eq!(mirrored.unwrap().len(), n, "every object mirrored");
            (heap, alone, secs, runtime, source)
        }
    };
    let (typed, typed_alone, typed_secs, typed_runtime, typed_source) =
        ours(Mirror::of::<LinkObject>(links()).namespace(NS)).await;
    let (dynamic, dynamic_alone, dynamic_secs, dynamic_runtime, dynamic_source) =
        ours(Mirror::dynamic(links(), DYNAMIC_TYPE).namespace(NS)).await;

    // ---- kube-rs: a reflector store per controller ----
    let reflectors = |count: usize, typed: bool| {
        let client = client.clone();
        async move {
            let before = heap_now();
            let started = Instant::now();
            let mut stores = Vec::new();
            for _ in 0..count {
                let (len, task) = if typed {
                    reflect::<LinkObject>(Api::namespaced(client.clone(), NS), ()).await
                } else {
                    let api = Api::namespaced_with(client.clone(), NS, &links());
                    reflect::<DynamicObject>(api, links()).await
                };
                assert_eq!(len(), n, "every object in each store");
                stores.push((len, task));
            }
            let secs = started.elapsed().as_secs_f64();
            let heap = heap_now() - before;
            for (_, task) in stores {
                task.abort();
            }
            (heap, secs)
        }
    };
    let (one, _) = reflectors(1, true).await;
    let (three, three_secs) = reflectors(3, true).await;
    let (three_dynamic, _) = reflectors(3, false).await;

    let report = json!({
        "n": n,
        "controllers": 3,
        "ours_bytes": typed,
        "mirror_bytes": typed_alone,
        "readers_bytes": typed - typed_alone,
        "ours_secs": typed_secs,
        "reflector_bytes": one,
        "reflectors3_bytes": three,
        "reflectors3_secs": three_secs,
        "dynamic_ours_bytes": dynamic,
        "dynamic_mirror_bytes": dynamic_alone,
        "dynamic_ours_secs": dynamic_secs,
        "dynamic_reflectors3_bytes": three_dynamic,
    });
    println!(
        "{n} objects, 3 readers, typed: ours {:.1} MiB (the mirror {:.1} MiB; {:.1} s), 1 reflector {:.1} MiB, \
         3 reflectors {:.1} MiB ({:.1} s): {:.2}x; dynamic: ours {:.1} MiB ({:.1} s), 3 reflectors {:.1} MiB: {:.2}x",
        mib(typed),
        mib(typed_alone),
        typed_secs,
        mib(one),
        mib(three),
        three_secs,
        typed as f64 / three as f64,
        mib(dynamic),
        dynamic_secs,
        mib(three_dynamic),
        dynamic as f64 / three_dynamic as f64,
    );
    write_report(&mode, "cluster", &report);
    drop((typed_source, dynamic_source, typed_runtime, dynamic_runtime));
    server.stop().await;
}
