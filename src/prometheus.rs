//! The runtime's metrics in the OpenMetrics text format, rendered by the
//! `prometheus-client` crate (feature `prometheus`, on by default).
//!
//! Two ways in: [`Runtime::register_metrics`](crate::Runtime::register_metrics)
//! registers a collector into an application's own registry (it reads the live
//! counters at each scrape), and [`render`] turns a snapshot into text for an
//! application with no registry.
//!
//! # controller-runtime's series
//!
//! Under controller-runtime's names, labels, semantics and buckets, unprefixed,
//! so that the dashboards and alerts written for Kubernetes controllers work
//! unchanged. Every series of a registered controller is there from the first
//! scrape, at 0.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `controller_runtime_reconcile_total` | counter | `controller`, `result` | reconciles by result: `success`, `error` (errors and panics), `requeue` (asked to run again at once), `requeue_after` (asked to run again after a delay) |
//! | `controller_runtime_reconcile_errors_total` | counter | `controller` | reconciles that failed: errors, terminal errors and panics |
//! | `controller_runtime_terminal_reconcile_errors_total` | counter | `controller` | reconciles that returned a [`TerminalError`](crate::controller::TerminalError) |
//! | `controller_runtime_reconcile_panics_total` | counter | `controller` | reconciles that panicked |
//! | `controller_runtime_reconcile_timeouts_total` | counter | `controller` | always 0: the runtime puts no time limit on a reconcile |
//! | `controller_runtime_reconcile_time_seconds` | histogram | `controller` | reconcile durations ([`RECONCILE_TIME_BUCKETS`](crate::controller::RECONCILE_TIME_BUCKETS)) |
//! | `controller_runtime_active_workers` | gauge | `controller` | reconciles running now |
//! | `controller_runtime_max_concurrent_reconciles` | gauge | `controller` | 1 for a controller, the concurrency of a queue controller |
//! | `workqueue_depth` | gauge | `name`, `controller`, `priority` (empty) | items ready to run (not those waiting for a time, nor those running) |
//! | `workqueue_adds_total` | counter | `name`, `controller` | items that became ready |
//! | `workqueue_retries_total` | counter | `name`, `controller` | items queued with a delay: failure backoffs, `requeue_after`s, delayed enqueues |
//! | `workqueue_queue_duration_seconds` | histogram | `name`, `controller` | from ready to running ([`WORKQUEUE_DURATION_BUCKETS`](crate::controller::WORKQUEUE_DURATION_BUCKETS)) |
//! | `workqueue_work_duration_seconds` | histogram | `name`, `controller` | from running to done (same buckets) |
//! | `workqueue_unfinished_work_seconds` | gauge | `name`, `controller` | how long the items running now have run, added up |
//! | `workqueue_longest_running_processor_seconds` | gauge | `name`, `controller` | how long the longest-running item has run |
//!
//! `name` and `controller` both carry the controller's name, as in
//! controller-runtime. A plain [`Controller`](crate::controller::Controller)'s
//! work queue holds at most its one pending reconcile; a
//! [`QueueController`](crate::controller::QueueController)'s holds its keys.
//!
//! # The runtime's own series
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `cosi_controller_wakeups_total`, `_reconciles_total`, `_errors_total`, `_panics_total`, `_restarts_total`, `_retries_total`, `_reads_total`, `_writes_total` | counter | `controller` |
//! | `cosi_controller_status` | gauge (1 for the current status) | `controller`, `status` |
//! | `cosi_queue_depth`, `cosi_queue_processing` | gauge | `controller` |
//! | `cosi_queue_retries_total` | counter | `controller` |
//! | `cosi_queue_wait_seconds`, `cosi_queue_reconcile_seconds` | histogram | `controller` |
//!
//! `cosi_controller_restarts_total` counts fresh instances built from the
//! factory after a panic; `cosi_controller_retries_total` counts failed
//! reconciles scheduled to run again after a backoff. The `cosi_queue_*`
//! series are for queue controllers only (`cosi_queue_depth` counts every
//! waiting key, delayed ones included).
//!
//! # Sharded controllers
//!
//! For each [sharded](crate::shard) queue controller of this process (on an
//! etcd state), from its [`ShardStatus`]; absent
//! when there is none. Each process reports its own member's view.
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `cosi_shards` | gauge | `controller` | the controller's virtual shards (the same in every member) |
//! | `cosi_shards_owned` | gauge | `controller` | shards this process owns now (those draining included) |
//! | `cosi_shards_draining` | gauge | `controller` | owned shards being drained before they are handed to another member |
//! | `cosi_shard_members` | gauge | `controller` | live members of the ring, as this process last read them from etcd |
//! | `cosi_shard_handoffs_total` | counter | `controller`, `kind` | shards `acquired` (key created), `released` (drained and handed on) and `lost` (the lease lapsed or the key was taken) |
//! | `cosi_shard_takeover_seconds` | histogram | `controller` | for each shard acquired: from the read in which the ring first gave it to this member to its key's creation, including the previous owner's drain or lease expiry ([`TAKEOVER_BUCKETS`]) |
//!
//! How many keys each owned shard holds is not a series (counting them
//! lists the state): the admin endpoint's `GET /api/v1/shards` counts them
//! on request.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::controller::metrics::ControllerSet;
use crate::controller::{ControllerMetrics, HistogramSnapshot};
use crate::state::{ShardService, ShardStatus, TAKEOVER_BUCKETS, TakeoverTimes};

/// A fixed snapshot, for [`render`].
#[derive(Debug)]
struct Snapshot(Vec<ControllerMetrics>);

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        encode_all(&mut encoder, &self.0)
    }
}

/// A runtime's live counters, and its sharded controllers' status, read at
/// each scrape.
#[derive(Debug)]
struct Live(ControllerSet, Option<ShardService>);

impl Collector for Live {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        encode_all(&mut encoder, &self.0.snapshot())?;
        match &self.1 {
            Some(service) => shards(&mut encoder, &service.snapshot()),
            None => Ok(()),
        }
    }
}

/// Registers a collector of `live` and of `shards` (the state's shard
/// service, if it has one) into `registry`.
pub(crate) fn register(registry: &mut Registry, live: ControllerSet, shards: Option<ShardService>) {
    registry.register_collector(Box::new(Live(live, shards)));
}

/// A fixed snapshot of controllers and sharded controllers.
#[derive(Debug)]
struct WithShards(Vec<ControllerMetrics>, Vec<ShardStatus>);

impl Collector for WithShards {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        encode_all(&mut encoder, &self.0)?;
        shards(&mut encoder, &self.1)
    }
}

/// Renders `metrics` (from [`Runtime::metrics`](crate::Runtime::metrics)) in
/// the OpenMetrics text format (it ends with `# EOF`; serve it as
/// `application/openmetrics-text; version=1.0.0; charset=utf-8`).
///
/// ```
/// # actix::System::new().block_on(async {
/// let runtime = cosi_runtime::Runtime::start();
/// let text = cosi_runtime::prometheus::render(&runtime.metrics().await);
/// assert!(text.ends_with("# EOF\n"));
/// # });
/// ```
pub fn render(metrics: &[ControllerMetrics]) -> String {
    encode_text(Box::new(Snapshot(metrics.to_vec())))
}

/// [`render`], followed by the series of sharded controllers (see
/// [Sharded controllers](self#sharded-controllers)) from `shards`
/// ([`ShardService::status`]).
///
/// ```
/// use cosi_runtime::state::ShardStatus;
///
/// let status = ShardStatus {
///     controller: "widgets".into(),
///     member: "a".into(),
///     shards: 16,
///     members: vec!["a".into(), "b".into()],
///     owned: vec![(3, 41), (9, 42)],
///     draining: vec![],
///     acquired: 2,
///     released: 0,
///     lost: 0,
///     takeover: Default::default(),
/// };
/// let text = cosi_runtime::prometheus::render_with_shards(&[], &[status]);
/// assert!(text.contains("cosi_shards_owned{controller=\"widgets\"} 2"));
/// ```
pub fn render_with_shards(metrics: &[ControllerMetrics], shards: &[ShardStatus]) -> String {
    encode_text(Box::new(WithShards(metrics.to_vec(), shards.to_vec())))
}

fn encode_text(collector: Box<dyn Collector>) -> String {
    let mut registry = Registry::default();
    registry.register_collector(collector);
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
}

/// One family: a descriptor, then one sample per row.
fn family<'m, L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder<'_>,
    name: &str,
    help: &str,
    kind: MetricType,
    rows: impl IntoIterator<Item = (L, Sample<'m>)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, kind)?;
    for (labels, sample) in rows {
        let mut metric = family.encode_family(&labels)?;
        match sample {
            Sample::Counter(v) => metric.encode_counter::<NoLabelSet, _, u64>(&v, None)?,
            Sample::Gauge(v) => metric.encode_gauge(&v)?,
            Sample::Seconds(v) => metric.encode_gauge(&v)?,
            Sample::Histogram(h) => {
                // The encoder wants per-bucket counts (it accumulates) and a +Inf bucket.
                let mut buckets = Vec::with_capacity(h.cumulative.len() + 1);
                let mut below = 0;
                for (bound, cumulative) in &h.cumulative {
                    buckets.push((*bound, cumulative - below));
                    below = *cumulative;
                }
                buckets.push((f64::INFINITY, h.count.saturating_sub(below)));
                metric.encode_histogram::<NoLabelSet>(
                    h.sum.as_secs_f64(),
                    h.count,
                    &buckets,
                    None,
                )?;
            }
        }
    }
    Ok(())
}

/// One sample's value.
enum Sample<'m> {
    Counter(u64),
    Gauge(u64),
    Seconds(f64),
    Histogram(&'m HistogramSnapshot),
}

/// A counter's name, help and value.
type CounterSpec = (&'static str, &'static str, fn(&ControllerMetrics) -> u64);

type ByController<'m> = [(&'static str, &'m str); 1];
type ByQueue<'m> = [(&'static str, &'m str); 2];

fn by_controller(m: &ControllerMetrics) -> ByController<'_> {
    [("controller", &m.controller)]
}

fn by_queue(m: &ControllerMetrics) -> ByQueue<'_> {
    [("name", &m.controller), ("controller", &m.controller)]
}

/// A family with one sample per controller.
fn per_controller<'m>(
    e: &mut DescriptorEncoder<'_>,
    all: &'m [ControllerMetrics],
    name: &str,
    help: &str,
    kind: MetricType,
    value: impl Fn(&'m ControllerMetrics) -> Sample<'m>,
) -> fmt::Result {
    family(e, name, help, kind, all.iter().map(|m| (by_controller(m), value(m))))
}

/// A family with one sample per controller's work queue.
fn per_queue<'m>(
    e: &mut DescriptorEncoder<'_>,
    all: &'m [ControllerMetrics],
    name: &str,
    help: &str,
    kind: MetricType,
    value: impl Fn(&'m ControllerMetrics) -> Sample<'m>,
) -> fmt::Result {
    family(e, name, help, kind, all.iter().map(|m| (by_queue(m), value(m))))
}

fn encode_all(e: &mut DescriptorEncoder<'_>, all: &[ControllerMetrics]) -> fmt::Result {
    controller_runtime(e, all)?;
    workqueue(e, all)?;
    cosi(e, all)
}

/// controller-runtime's `controller_runtime_*` series.
fn controller_runtime(e: &mut DescriptorEncoder<'_>, all: &[ControllerMetrics]) -> fmt::Result {
    use MetricType::{Counter, Gauge, Histogram};
    let results = all.iter().flat_map(|m| {
        let success = m.reconciles.saturating_sub(m.requeues + m.requeues_after);
        [
            ("success", success),
            ("error", m.errors + m.panics),
            ("requeue", m.requeues),
            ("requeue_after", m.requeues_after),
        ]
        .map(|(result, n)| {
            let labels: [(&str, &str); 2] = [("controller", &m.controller), ("result", result)];
            (labels, Sample::Counter(n))
        })
    });
    family(
        e,
        "controller_runtime_reconcile",
        "Reconciles per controller and result",
        Counter,
        results,
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_reconcile_errors",
        "Reconciles that failed (errors, terminal errors and panics) per controller",
        Counter,
        |m| Sample::Counter(m.errors + m.panics),
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_terminal_reconcile_errors",
        "Reconciles that returned a terminal error per controller",
        Counter,
        |m| Sample::Counter(m.terminal_errors),
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_reconcile_panics",
        "Reconciles that panicked per controller",
        Counter,
        |m| Sample::Counter(m.panics),
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_reconcile_timeouts",
        "Reconciles that ran out of time per controller (no time limit is set: always 0)",
        Counter,
        |_| Sample::Counter(0),
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_reconcile_time_seconds",
        "How long reconciles took per controller",
        Histogram,
        |m| Sample::Histogram(&m.reconcile_time),
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_max_concurrent_reconciles",
        "How many reconciles of a controller may run at once",
        Gauge,
        |m| Sample::Gauge(m.max_concurrent_reconciles),
    )?;
    per_controller(
        e,
        all,
        "controller_runtime_active_workers",
        "Reconciles running now per controller",
        Gauge,
        |m| Sample::Gauge(m.active_workers),
    )
}

/// client-go's `workqueue_*` series.
fn workqueue(e: &mut DescriptorEncoder<'_>, all: &[ControllerMetrics]) -> fmt::Result {
    use MetricType::{Counter, Gauge, Histogram};
    let depth = all.iter().map(|m| {
        let labels: [(&str, &str); 3] =
            [("name", &m.controller), ("controller", &m.controller), ("priority", "")];
        (labels, Sample::Gauge(m.work_queue.depth))
    });
    family(e, "workqueue_depth", "Items ready to run in a work queue", Gauge, depth)?;
    per_queue(e, all, "workqueue_adds", "Items that became ready in a work queue", Counter, |m| {
        Sample::Counter(m.work_queue.adds)
    })?;
    per_queue(
        e,
        all,
        "workqueue_retries",
        "Items queued with a delay (backoffs and requested requeues) in a work queue",
        Counter,
        |m| Sample::Counter(m.work_queue.retries),
    )?;
    per_queue(
        e,
        all,
        "workqueue_queue_duration_seconds",
        "How long items waited in a work queue between becoming ready and running",
        Histogram,
        |m| Sample::Histogram(&m.work_queue.queue_duration),
    )?;
    per_queue(
        e,
        all,
        "workqueue_work_duration_seconds",
        "How long processing an item of a work queue took",
        Histogram,
        |m| Sample::Histogram(&m.work_queue.work_duration),
    )?;
    per_queue(
        e,
        all,
        "workqueue_unfinished_work_seconds",
        "How long the items of a work queue being processed now have run, added up",
        Gauge,
        |m| Sample::Seconds(m.work_queue.unfinished_work.as_secs_f64()),
    )?;
    per_queue(
        e,
        all,
        "workqueue_longest_running_processor_seconds",
        "How long the longest-running item of a work queue being processed now has run",
        Gauge,
        |m| Sample::Seconds(m.work_queue.longest_running.as_secs_f64()),
    )
}

/// The runtime's own `cosi_*` series.
fn cosi(e: &mut DescriptorEncoder<'_>, all: &[ControllerMetrics]) -> fmt::Result {
    use MetricType::{Counter, Gauge, Histogram};
    let counters: [CounterSpec; 8] = [
        ("cosi_controller_wakeups", "Change notifications that asked for a reconcile", |m| {
            m.wakeups
        }),
        ("cosi_controller_reconciles", "Reconciles that succeeded", |m| m.reconciles),
        ("cosi_controller_errors", "Reconciles that returned an error", |m| m.errors),
        ("cosi_controller_panics", "Reconciles that panicked", |m| m.panics),
        ("cosi_controller_restarts", "Fresh controller instances built after a panic", |m| {
            m.restarts
        }),
        (
            "cosi_controller_retries",
            "Failed reconciles scheduled to run again after a backoff",
            |m| m.retries,
        ),
        ("cosi_controller_reads", "State reads", |m| m.reads),
        ("cosi_controller_writes", "State writes that changed something", |m| m.writes),
    ];
    for (name, help, value) in counters {
        per_controller(e, all, name, help, Counter, |m| Sample::Counter(value(m)))?;
    }
    let status = all.iter().map(|m| {
        let labels: [(&str, String); 2] =
            [("controller", m.controller.clone()), ("status", m.status.to_string())];
        (labels, Sample::Gauge(1))
    });
    family(e, "cosi_controller_status", "1 for the controller's current status", Gauge, status)?;
    let queues: Vec<(&ControllerMetrics, &crate::controller::QueueMetrics)> =
        all.iter().filter_map(|m| m.queue.as_ref().map(|q| (m, q))).collect();
    if queues.is_empty() {
        return Ok(());
    }
    let rows = |value: fn(&crate::controller::QueueMetrics) -> Sample<'_>| {
        queues.iter().map(move |(m, q)| (by_controller(m), value(q)))
    };
    family(
        e,
        "cosi_queue_depth",
        "Keys waiting in the queue",
        Gauge,
        rows(|q| Sample::Gauge(q.depth)),
    )?;
    family(
        e,
        "cosi_queue_processing",
        "Keys being reconciled",
        Gauge,
        rows(|q| Sample::Gauge(q.processing)),
    )?;
    family(
        e,
        "cosi_queue_retries",
        "Retries scheduled after failures",
        Counter,
        rows(|q| Sample::Counter(q.retries)),
    )?;
    family(
        e,
        "cosi_queue_wait_seconds",
        "Time keys waited in the queue",
        Histogram,
        rows(|q| Sample::Histogram(&q.time_in_queue)),
    )?;
    family(
        e,
        "cosi_queue_reconcile_seconds",
        "Time reconciles took",
        Histogram,
        rows(|q| Sample::Histogram(&q.reconcile_latency)),
    )
}

/// A takeover record as a histogram to encode.
fn takeover_histogram(t: &TakeoverTimes) -> HistogramSnapshot {
    HistogramSnapshot {
        count: t.count,
        sum: t.sum,
        max: t.max,
        cumulative: TAKEOVER_BUCKETS
            .iter()
            .enumerate()
            .map(|(i, bound)| (*bound, t.cumulative.get(i).copied().unwrap_or(0)))
            .collect(),
    }
}

/// The `cosi_shard*` series of sharded controllers.
fn shards(e: &mut DescriptorEncoder<'_>, all: &[ShardStatus]) -> fmt::Result {
    use MetricType::{Counter, Gauge, Histogram};
    if all.is_empty() {
        return Ok(());
    }
    let gauge = |value: fn(&ShardStatus) -> u64| {
        all.iter().map(move |s| ([("controller", s.controller.as_str())], Sample::Gauge(value(s))))
    };
    family(
        e,
        "cosi_shards",
        "Virtual shards of a sharded controller",
        Gauge,
        gauge(|s| u64::from(s.shards)),
    )?;
    family(
        e,
        "cosi_shards_owned",
        "Shards of a sharded controller this process owns",
        Gauge,
        gauge(|s| s.owned.len() as u64),
    )?;
    family(
        e,
        "cosi_shards_draining",
        "Owned shards being drained before they are handed to another member",
        Gauge,
        gauge(|s| s.draining.len() as u64),
    )?;
    family(
        e,
        "cosi_shard_members",
        "Live members of a sharded controller's ring, as last read",
        Gauge,
        gauge(|s| s.members.len() as u64),
    )?;
    let handoffs = all.iter().flat_map(|s| {
        [("acquired", s.acquired), ("released", s.released), ("lost", s.lost)].map(|(kind, n)| {
            let labels: [(&str, &str); 2] = [("controller", &s.controller), ("kind", kind)];
            (labels, Sample::Counter(n))
        })
    });
    family(
        e,
        "cosi_shard_handoffs",
        "Shards acquired, released after draining, and lost, per sharded controller",
        Counter,
        handoffs,
    )?;
    let takeovers: Vec<HistogramSnapshot> =
        all.iter().map(|s| takeover_histogram(&s.takeover)).collect();
    family(
        e,
        "cosi_shard_takeover_seconds",
        "From the ring giving this member a shard to its key created",
        Histogram,
        all.iter()
            .zip(&takeovers)
            .map(|(s, h)| ([("controller", s.controller.as_str())], Sample::Histogram(h))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::{ControllerStatus, QueueMetrics};
    use std::time::Duration;

    fn metrics(name: &str, queue: bool) -> ControllerMetrics {
        ControllerMetrics {
            controller: name.into(),
            status: ControllerStatus::Running,
            wakeups: 3,
            reconciles: 2,
            errors: 1,
            terminal_errors: 0,
            panics: 0,
            restarts: 1,
            retries: 1,
            requeues: 0,
            requeues_after: 1,
            active_workers: 0,
            max_concurrent_reconciles: 1,
            reconcile_time: HistogramSnapshot::default(),
            work_queue: crate::controller::WorkQueueMetrics::default(),
            failures_in_a_row: 0,
            last_error: None,
            reads: 5,
            writes: 4,
            self_triggered: 0,
            queue: queue.then(|| QueueMetrics {
                depth: 7,
                processing: 1,
                retries: 2,
                time_in_queue: HistogramSnapshot {
                    count: 3,
                    sum: Duration::from_millis(30),
                    max: Duration::from_millis(20),
                    cumulative: vec![(0.001, 1), (0.01, 2), (0.1, 3)],
                },
                reconcile_latency: HistogramSnapshot::default(),
            }),
        }
    }

    #[test]
    fn renders_counters_status_and_queue_histograms() {
        let text = render(&[metrics("Plain", false), metrics("Queue", true)]);
        for line in [
            "controller_runtime_reconcile_total{controller=\"Plain\",result=\"success\"} 1",
            "controller_runtime_reconcile_total{controller=\"Plain\",result=\"requeue_after\"} 1",
            "controller_runtime_reconcile_total{controller=\"Plain\",result=\"error\"} 1",
            "workqueue_depth{name=\"Queue\",controller=\"Queue\",priority=\"\"} 0",
            "# TYPE cosi_controller_reconciles counter",
            "cosi_controller_reconciles_total{controller=\"Plain\"} 2",
            "cosi_controller_writes_total{controller=\"Queue\"} 4",
            "cosi_controller_status{controller=\"Plain\",status=\"running\"} 1",
            "cosi_queue_depth{controller=\"Queue\"} 7",
            "cosi_queue_retries_total{controller=\"Queue\"} 2",
            "cosi_queue_wait_seconds_bucket{le=\"0.01\",controller=\"Queue\"} 2",
            "cosi_queue_wait_seconds_bucket{le=\"+Inf\",controller=\"Queue\"} 3",
            "cosi_queue_wait_seconds_count{controller=\"Queue\"} 3",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
        assert!(!text.contains("cosi_queue_depth{controller=\"Plain\"}"));
        assert!(!text.contains("cosi_shard"), "no sharded controller, no shard series");
    }

    #[test]
    fn renders_the_shards_of_sharded_controllers() {
        let mut takeover = TakeoverTimes::default();
        takeover.observe(Duration::from_millis(20));
        takeover.observe(Duration::from_secs(3));
        let status = ShardStatus {
            controller: "Widgets".into(),
            member: "a".into(),
            shards: 64,
            members: vec!["a".into(), "b".into(), "c".into()],
            owned: vec![(1, 10), (5, 11), (7, 12)],
            draining: vec![7],
            acquired: 4,
            released: 1,
            lost: 2,
            takeover,
        };
        let text = render_with_shards(&[metrics("Widgets", true)], &[status]);
        for line in [
            "cosi_queue_depth{controller=\"Widgets\"} 7",
            "cosi_shards{controller=\"Widgets\"} 64",
            "cosi_shards_owned{controller=\"Widgets\"} 3",
            "cosi_shards_draining{controller=\"Widgets\"} 1",
            "cosi_shard_members{controller=\"Widgets\"} 3",
            "# TYPE cosi_shard_handoffs counter",
            "cosi_shard_handoffs_total{controller=\"Widgets\",kind=\"acquired\"} 4",
            "cosi_shard_handoffs_total{controller=\"Widgets\",kind=\"released\"} 1",
            "cosi_shard_handoffs_total{controller=\"Widgets\",kind=\"lost\"} 2",
            "# TYPE cosi_shard_takeover_seconds histogram",
            "cosi_shard_takeover_seconds_bucket{le=\"0.025\",controller=\"Widgets\"} 1",
            "cosi_shard_takeover_seconds_bucket{le=\"5.0\",controller=\"Widgets\"} 2",
            "cosi_shard_takeover_seconds_bucket{le=\"+Inf\",controller=\"Widgets\"} 2",
            "cosi_shard_takeover_seconds_count{controller=\"Widgets\"} 2",
            "cosi_shard_takeover_seconds_sum{controller=\"Widgets\"} 3.02",
        ] {
            assert!(text.contains(line), "missing {line} in\n{text}");
        }
    }
}
