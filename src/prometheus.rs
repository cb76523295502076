//! The runtime's metrics in the Prometheus text exposition format, rendered by
//! the `prometheus-client` crate (feature `prometheus`, on by default).
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `cosi_controller_wakeups_total`, `_reconciles_total`, `_errors_total`, `_panics_total`, `_restarts_total`, `_reads_total`, `_writes_total` | counter | `controller` |
//! | `cosi_controller_status` | gauge (1 for the current status) | `controller`, `status` |
//! | `cosi_queue_depth`, `cosi_queue_processing` | gauge | `controller` |
//! | `cosi_queue_retries_total` | counter | `controller` |
//! | `cosi_queue_wait_seconds`, `cosi_queue_reconcile_seconds` | histogram | `controller` |

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::controller::{ControllerMetrics, HistogramSnapshot};

#[derive(Debug)]
struct Snapshot(Vec<ControllerMetrics>);

type Labels<'a> = [(&'static str, &'a str); 1];

fn counters(
    encoder: &mut DescriptorEncoder<'_>,
    metrics: &[ControllerMetrics],
    name: &str,
    help: &str,
    value: impl Fn(&ControllerMetrics) -> u64,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for m in metrics {
        let labels: Labels<'_> = [("controller", &m.controller)];
        family.encode_family(&labels)?.encode_counter::<NoLabelSet, _, u64>(&value(m), None)?;
    }
    Ok(())
}

fn histogram(
    encoder: &mut DescriptorEncoder<'_>,
    metrics: &[ControllerMetrics],
    name: &str,
    help: &str,
    value: impl Fn(&ControllerMetrics) -> Option<&HistogramSnapshot>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for m in metrics {
        let Some(h) = value(m) else { continue };
        // The encoder wants per-bucket counts (it accumulates) and a +Inf bucket.
        let mut buckets = Vec::with_capacity(h.cumulative.len() + 1);
        let mut below = 0;
        for (bound, cumulative) in &h.cumulative {
            buckets.push((*bound, cumulative - below));
            below = *cumulative;
        }
        buckets.push((f64::INFINITY, h.count - below));
        let labels: Labels<'_> = [("controller", &m.controller)];
        family.encode_family(&labels)?.encode_histogram::<NoLabelSet>(
            h.sum.as_secs_f64(),
            h.count,
            &buckets,
            None,
        )?;
    }
    Ok(())
}

impl Collector for Snapshot {
    fn encode(&self, mut encoder: DescriptorEncoder<'_>) -> fmt::Result {
        let all = &self.0;
        let e = &mut encoder;
        counters(
            e,
            all,
            "controller_wakeups",
            "Change notifications that asked for a reconcile.",
            |m| m.wakeups,
        )?;
        counters(e, all, "controller_reconciles", "Reconciles that succeeded.", |m| m.reconciles)?;
        counters(e, all, "controller_errors", "Reconciles that returned an error.", |m| m.errors)?;
        counters(e, all, "controller_panics", "Reconciles that panicked.", |m| m.panics)?;
        counters(e, all, "controller_restarts", "Retries after a failed reconcile.", |m| {
            m.restarts
        })?;
        counters(e, all, "controller_reads", "State reads.", |m| m.reads)?;
        counters(e, all, "controller_writes", "State writes that changed something.", |m| {
            m.writes
        })?;
        let mut status = e.encode_descriptor(
            "controller_status",
            "1 for the controller's current status.",
            None,
            MetricType::Gauge,
        )?;
        for m in all {
            let current = m.status.to_string();
            let labels = [("controller", m.controller.as_str()), ("status", current.as_str())];
            status.encode_family(&labels)?.encode_gauge(&1u64)?;
        }
        let queues: Vec<ControllerMetrics> =
            all.iter().filter(|m| m.queue.is_some()).cloned().collect();
        if queues.is_empty() {
            return Ok(());
        }
        let mut depth = e.encode_descriptor(
            "queue_depth",
            "Keys waiting in the queue.",
            None,
            MetricType::Gauge,
        )?;
        for m in &queues {
            let labels: Labels<'_> = [("controller", &m.controller)];
            let q = m.queue.as_ref().map_or(0, |q| q.depth);
            depth.encode_family(&labels)?.encode_gauge(&q)?;
        }
        let mut busy = e.encode_descriptor(
            "queue_processing",
            "Keys being reconciled.",
            None,
            MetricType::Gauge,
        )?;
        for m in &queues {
            let labels: Labels<'_> = [("controller", &m.controller)];
            let q = m.queue.as_ref().map_or(0, |q| q.processing);
            busy.encode_family(&labels)?.encode_gauge(&q)?;
        }
        counters(e, &queues, "queue_retries", "Retries scheduled after failures.", |m| {
            m.queue.as_ref().map_or(0, |q| q.retries)
        })?;
        histogram(e, &queues, "queue_wait_seconds", "Time keys waited in the queue.", |m| {
            m.queue.as_ref().map(|q| &q.time_in_queue)
        })?;
        histogram(e, &queues, "queue_reconcile_seconds", "Time reconciles took.", |m| {
            m.queue.as_ref().map(|q| &q.reconcile_latency)
        })
    }
}

/// Renders `metrics` (from [`Runtime::metrics`](crate::Runtime::metrics)) in
/// the Prometheus text exposition format.
///
/// ```
/// # actix::System::new().block_on(async {
/// let runtime = cosi_runtime::Runtime::start();
/// let text = cosi_runtime::prometheus::render(&runtime.metrics().await);
/// assert!(text.ends_with("# EOF\n"));
/// # });
/// ```
pub fn render(metrics: &[ControllerMetrics]) -> String {
    let mut registry = Registry::with_prefix("cosi");
    registry.register_collector(Box::new(Snapshot(metrics.to_vec())));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::text::encode(&mut out, &registry);
    out
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
            panics: 0,
            restarts: 1,
            failures_in_a_row: 0,
            last_error: None,
            reads: 5,
            writes: 4,
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
    }
}
