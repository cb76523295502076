//! Work-queue benchmarks, each against a minimal baseline run in the same process:
//!
//! - `queue/add_get_done`: 1,000 keys, each `add`ed, handed out by `get` and
//!   marked `done` (the shape of controller-runtime's `BenchmarkAddGetDone`).
//! - `queue/add_only`: 1,000 `add`s of distinct keys into an empty queue
//!   (controller-runtime's `BenchmarkAddOnly`).
//!
//! Keys are resource pointers, as queue controllers use them. The baseline is
//! the least a deduplicating FIFO must do: a `HashSet` for membership and a
//! `VecDeque` for order, no delays, no per-key exclusion, no backoff.
//! controller-runtime's priority queue is quoted as an external reference
//! (reported at about 1.05 µs per Add+Get+Done and 91 ns per Add on a laptop
//! CPU); it cannot run in this process.

mod common;

use std::collections::{HashSet, VecDeque};
use std::hint::black_box;

use common::{CountingAlloc, IntSpec, Mode, NS};
use cosi_runtime::queue::{Completion, WorkQueue};
use cosi_runtime::resource::Pointer;
use cosi_runtime::supervisor::Backoff;
use criterion::{BatchSize, Criterion, Throughput};
use tokio::time::Instant;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// The minimal deduplicating FIFO.
#[derive(Default)]
struct Fifo {
    queued: HashSet<Pointer>,
    order: VecDeque<Pointer>,
}

impl Fifo {
    fn add(&mut self, key: Pointer) {
        if self.queued.insert(key.clone()) {
            self.order.push_back(key);
        }
    }

    fn get(&mut self) -> Option<Pointer> {
        let key = self.order.pop_front()?;
        self.queued.remove(&key);
        Some(key)
    }
}

fn keys(n: usize) -> Vec<Pointer> {
    (0..n).map(|i| Pointer::typed::<IntSpec>(NS, format!("key-{i:05}")).erase()).collect()
}

fn bench(c: &mut Criterion, n: usize) {
    let keys = keys(n);
    let now = Instant::now();
    let mut g = c.benchmark_group("queue");
    g.throughput(Throughput::Elements(n as u64));

    g.bench_function("baseline_add_get", |b| {
        let mut fifo = Fifo::default();
        b.iter(|| {
            for k in &keys {
                fifo.add(k.clone());
            }
            while let Some(k) = fifo.get() {
                black_box(k);
            }
        });
    });
    g.bench_function("add_get_done", |b| {
        let mut q = WorkQueue::new(Backoff::default());
        b.iter(|| {
            for k in &keys {
                q.add(k.clone(), now);
            }
            while let Some((k, _)) = q.get(now) {
                q.done(&k, Completion::Success, now);
            }
        });
    });
    g.bench_function("baseline_add_only", |b| {
        b.iter_batched_ref(
            Fifo::default,
            |fifo| {
                for k in &keys {
                    fifo.add(k.clone());
                }
            },
            BatchSize::SmallInput,
        );
    });
    g.bench_function("add_only", |b| {
        b.iter_batched_ref(
            || WorkQueue::new(Backoff::default()),
            |q| {
                for k in &keys {
                    q.add(k.clone(), now);
                }
            },
            BatchSize::SmallInput,
        );
    });
    g.finish();
}

fn main() {
    let mode = Mode::from_args();
    let mut c = mode.criterion();
    bench(&mut c, mode.scale(1000, 100));
    // The smoke run checks the queue did its job once more.
    let mut q = WorkQueue::new(Backoff::default());
    let now = Instant::now();
    for k in keys(10) {
        q.add(k.clone(), now);
        q.add(k, now);
    }
    let mut handed = 0;
    while let Some((k, _)) = q.get(now) {
        q.done(&k, Completion::Success, now);
        handed += 1;
    }
    assert_eq!(handed, 10, "each key handed out once");
    assert!(q.is_empty());
    c.final_summary();
}
