//! Property test of the work queue: many producers and consumers, random
//! delays, failures and requeues, under a simulated clock.
//!
//! Checked against a simple reference model of obligations: a key added at
//! time T must be handed out at some time ≥ T (unless it is mid-backoff, where
//! the retry covers it), never while it is already held by a consumer, and the
//! queue must drain completely once the producers stop.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use cosi_runtime::queue::{Completion, WorkQueue};
use cosi_runtime::supervisor::Backoff;
use proptest::prelude::*;
use tokio::time::Instant;

const KEYS: u8 = 6;
const CONSUMERS: usize = 4;

#[derive(Clone, Debug)]
enum Op {
    Add(u8),
    AddAfter(u8, u64),
    Get(usize),
    Done(usize, Outcome),
    Advance(u64),
}

#[derive(Clone, Copy, Debug)]
enum Outcome {
    Success,
    Requeue(u64),
    Failure,
    Terminal,
}

fn op() -> impl Strategy<Value = Op> {
    let outcome = prop_oneof![
        4 => Just(Outcome::Success),
        1 => (1..50u64).prop_map(Outcome::Requeue),
        2 => Just(Outcome::Failure),
        1 => Just(Outcome::Terminal),
    ];
    prop_oneof![
        4 => (0..KEYS).prop_map(Op::Add),
        2 => (0..KEYS, 1..50u64).prop_map(|(k, d)| Op::AddAfter(k, d)),
        4 => (0..CONSUMERS).prop_map(Op::Get),
        4 => (0..CONSUMERS, outcome).prop_map(|(c, o)| Op::Done(c, o)),
        2 => (1..40u64).prop_map(Op::Advance),
    ]
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

struct Sim {
    q: WorkQueue<u8>,
    now: Instant,
    held: [Option<u8>; CONSUMERS],
    /// Reference model: keys that must still be handed out, with the time of
    /// the add that created the obligation.
    owed: BTreeMap<u8, Instant>,
    handed_out: usize,
}

impl Sim {
    fn new() -> Self {
        let backoff = Backoff { initial: ms(5), max: ms(80), multiplier: 2.0, jitter: 0.5 };
        Sim {
            q: WorkQueue::with_seed(backoff, 42),
            now: Instant::now(),
            held: [None; CONSUMERS],
            owed: BTreeMap::new(),
            handed_out: 0,
        }
    }

    fn held_keys(&self) -> BTreeSet<u8> {
        self.held.iter().flatten().copied().collect()
    }

    /// Delayed adds collapse to the earliest time, so the earliest
    /// outstanding obligation is the one a run must satisfy.
    fn owe(&mut self, key: u8, at: Instant) {
        let t = self.owed.entry(key).or_insert(at);
        *t = (*t).min(at);
    }

    fn get(&mut self, consumer: usize) -> Result<(), TestCaseError> {
        if self.held[consumer].is_some() {
            return Ok(());
        }
        if let Some((key, _)) = self.q.get(self.now) {
            prop_assert!(
                !self.held_keys().contains(&key),
                "key {} handed out while already processing",
                key
            );
            self.held[consumer] = Some(key);
            self.handed_out += 1;
            // Any add made before now is covered by this run.
            if self.owed.get(&key).is_some_and(|t| *t <= self.now) {
                self.owed.remove(&key);
            }
        }
        Ok(())
    }

    fn done(&mut self, consumer: usize, outcome: Outcome) {
        let Some(key) = self.held[consumer].take() else {
            return;
        };
        let completion = match outcome {
            Outcome::Success => Completion::Success,
            Outcome::Requeue(d) => Completion::RequeueAfter(ms(d)),
            Outcome::Failure => Completion::Failure,
            Outcome::Terminal => Completion::Terminal,
        };
        if let Some(delay) = self.q.done(&key, completion, self.now) {
            // The retry is an obligation too.
            self.owe(key, self.now + delay);
        }
        if let Outcome::Requeue(d) = outcome {
            self.owe(key, self.now + ms(d));
        }
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        match *op {
            Op::Add(k) => {
                self.q.add(k, self.now);
                self.owe(k, self.now);
            }
            Op::AddAfter(k, d) => {
                self.q.add_after(k, ms(d), self.now);
                self.owe(k, self.now + ms(d));
            }
            Op::Get(c) => self.get(c)?,
            Op::Done(c, o) => self.done(c, o),
            Op::Advance(d) => self.now += ms(d),
        }
        Ok(())
    }

    /// Producers have stopped: consumers succeed at everything until empty.
    fn drain(&mut self) -> Result<(), TestCaseError> {
        for c in 0..CONSUMERS {
            self.done(c, Outcome::Success);
        }
        for _ in 0..10_000 {
            if self.q.is_empty() {
                return Ok(());
            }
            let mut progressed = false;
            for c in 0..CONSUMERS {
                self.get(c)?;
                progressed |= self.held[c].is_some();
                self.done(c, Outcome::Success);
            }
            if !progressed {
                match self.q.next_due() {
                    Some(due) => self.now = self.now.max(due),
                    None => prop_assert!(false, "deadlock: keys left but none ready or due"),
                }
            }
        }
        prop_assert!(false, "did not drain");
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    #[test]
    fn the_queue_never_double_hands_out_never_deadlocks_and_processes_every_key(
        ops in proptest::collection::vec(op(), 1..200)
    ) {
        let mut sim = Sim::new();
        for op in &ops {
            sim.apply(op)?;
            let stats = sim.q.stats();
            prop_assert_eq!(stats.processing, sim.held_keys().len());
            let failing = (0..KEYS).filter(|k| sim.q.failures(k) > 0).count();
            prop_assert_eq!(sim.q.failing_keys(), failing, "failing keys counted as they are");
        }
        sim.drain()?;
        prop_assert!(sim.owed.is_empty(), "never processed after being added: {:?}", sim.owed);
        prop_assert_eq!(sim.q.stats().processing, 0);
        prop_assert_eq!(sim.q.len(), 0, "no per-key state left");
        prop_assert_eq!(sim.q.failing_keys(), 0);
    }
}
