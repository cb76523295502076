//! Fairness: a hot spot on an arbiter never freezes the other controllers on it.
//!
//! Every scenario runs on a single arbiter (the worst case: the hot spot, the
//! state and the quiet controller share one thread) and measures a quiet
//! controller's latency by event ordering: how much work the hot spot did
//! between the quiet controller's trigger and the start of its reconcile.
//!
//! The bound: a controller actor does at most [`ROUND_BUDGET`] units of work
//! (messages, finished reconciles) before it yields, and the quiet
//! controller's trigger takes a few turns to reach it (the request to the
//! state, the change message, the reconcile). So the hot spot does at most
//! [`TURNS`] rounds of work in between.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::common::{IntSpec, SentenceSpec, StrSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::execution::ROUND_BUDGET;
use cosi_runtime::prelude::*;
use futures::StreamExt;
use tokio::sync::watch;

/// Rounds of the hot spot a quiet controller's trigger may take to start its
/// reconcile: it takes one (measured), four leave room to spare.
const TURNS: u64 = 4;

/// The most units of work a hot spot may do while a quiet controller waits.
const BOUND: u64 = TURNS * ROUND_BUDGET as u64;

/// The most units of work a hot spot may do while the `block_on` body (a
/// test's, a user's `#[actix::main]`) waits for a state change of its own.
const MAIN_BOUND: u64 = 16 * ROUND_BUDGET as u64;

/// A hot spot gives up after this much work, so that a broken scheduler fails
/// the test instead of hanging it.
const SAFETY: u64 = 1_000_000;

/// How much work the hot spot has done, and whether it should stop.
#[derive(Default)]
struct Hot {
    done: AtomicU64,
    stop: AtomicBool,
}

impl Hot {
    fn count(&self) -> u64 {
        self.done.load(Ordering::SeqCst)
    }
    fn keep_going(&self) -> bool {
        !self.stop.load(Ordering::SeqCst) && self.count() < SAFETY
    }
}

/// Reacts to `StrSpec`s in "quiet": when one exists, reports the hot spot's
/// count at the start of the reconcile.
struct Quiet {
    hot: Arc<Hot>,
    seen: watch::Sender<Option<u64>>,
}

impl Controller for Quiet {
    fn name(&self) -> &str {
        "Quiet"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<StrSpec>("quiet")]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<SentenceSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let at = self.hot.count();
        let inputs = cx.list_typed::<StrSpec>("quiet", &LabelQuery::all()).await?;
        if !inputs.is_empty() {
            self.seen.send_replace(Some(at));
        }
        for input in inputs {
            let text = format!("{} sentence", input.spec().0);
            cx.modify(
                &Pointer::typed::<SentenceSpec>("quiet", input.id()),
                move |s: &mut Resource<SentenceSpec>| s.spec_mut().0 = text.clone(),
            )
            .await?;
        }
        Ok(())
    }
}

/// Registers `Quiet` and returns the receiver of what it saw.
async fn quiet(runtime: &Runtime, hot: &Arc<Hot>) -> watch::Receiver<Option<u64>> {
    let (tx, rx) = watch::channel(None);
    let hot = hot.clone();
    runtime.register(move || Quiet { hot: hot.clone(), seen: tx.clone() }).await.unwrap();
    rx
}

/// Triggers `Quiet` and returns the hot spot's count before the trigger and
/// at the start of the reconcile it caused.
async fn trigger_quiet(
    runtime: &Runtime,
    hot: &Hot,
    seen: &mut watch::Receiver<Option<u64>>,
) -> (u64, u64) {
    let before = hot.count();
    runtime.state().create(Resource::new("quiet", "y", StrSpec("y".into())), None).await.unwrap();
    let at = seen.wait_for(Option::is_some).await.unwrap().unwrap();
    (before, at)
}

/// A queue controller over `IntSpec`s in "hot": the key "hot" requeues itself
/// at zero delay (returning at once, without awaiting anything) until told to
/// stop; every other key is done in one reconcile. With a mapped input on
/// `StrSpec`s in "trigger", each such change fans out to `fan_out` keys.
struct Spinner {
    hot: Arc<Hot>,
    ordinary: Arc<Ordinary>,
    fan_out: usize,
}

/// The keys other than "hot": how many were done, and the hot spot's count
/// (which includes them) when the first started and when the last was done.
#[derive(Default)]
struct Ordinary {
    done: AtomicU64,
    first_at: AtomicU64,
    last_at: AtomicU64,
}

impl Ordinary {
    fn first_at(&self) -> Option<u64> {
        Some(self.first_at.load(Ordering::SeqCst)).filter(|at| *at > 0)
    }
}

impl QueueController for Spinner {
    fn name(&self) -> &str {
        "Spinner"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>("hot"), Input::mapped::<StrSpec>("trigger")],
            outputs: vec![],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let at = self.hot.done.fetch_add(1, Ordering::SeqCst) + 1;
        if ptr.id() == "hot" {
            if self.hot.keep_going() {
                return Ok(Outcome::RequeueAfter(Duration::ZERO));
            }
            return Ok(Outcome::Done);
        }
        let _ = self.ordinary.first_at.compare_exchange(0, at, Ordering::SeqCst, Ordering::SeqCst);
        self.ordinary.done.fetch_add(1, Ordering::SeqCst);
        self.ordinary.last_at.store(at, Ordering::SeqCst);
        Ok(Outcome::Done)
    }
    fn map_input(&self, _: &Pointer) -> Vec<Pointer> {
        (0..self.fan_out)
            .map(|i| Pointer::typed::<IntSpec>("hot", format!("k{i}")).erase())
            .collect()
    }
}

async fn spinner(runtime: &Runtime, hot: &Arc<Hot>, fan_out: usize) -> Arc<Ordinary> {
    let ordinary = Arc::new(Ordinary::default());
    let (h, o) = (hot.clone(), ordinary.clone());
    runtime
        .register(move || Spinner { hot: h.clone(), ordinary: o.clone(), fan_out })
        .await
        .unwrap();
    ordinary
}

/// Waits (by yielding, so the hot spot runs) until the hot spot did `n` units.
async fn until_hot(hot: &Hot, n: u64) {
    while hot.count() < n {
        tokio::task::yield_now().await;
    }
}

#[actix::test]
async fn a_key_requeued_at_zero_delay_leaves_other_controllers_running() {
    let runtime = Runtime::builder().arbiters(1).start();
    let hot = Arc::new(Hot::default());
    let mut seen = quiet(&runtime, &hot).await;
    spinner(&runtime, &hot, 0).await;
    runtime.state().create(Resource::new("hot", "hot", IntSpec(1)), None).await.unwrap();
    until_hot(&hot, 10 * ROUND_BUDGET as u64).await;

    let (before, at) = trigger_quiet(&runtime, &hot, &mut seen).await;
    assert!(at < SAFETY, "the hot key had hit its safety limit before the quiet controller ran");
    assert!(
        at - before <= BOUND,
        "the hot key ran {} times while the quiet controller waited (bound {BOUND})",
        at - before
    );

    hot.stop.store(true, Ordering::SeqCst);
    runtime.settled().await;
    runtime.stop().await;
}

#[actix::test]
async fn a_key_requeued_at_zero_delay_leaves_the_other_keys_of_its_queue_running() {
    const KEYS: u64 = 1_000;
    let runtime = Runtime::builder().arbiters(1).start();
    let hot = Arc::new(Hot::default());
    let ordinary = spinner(&runtime, &hot, KEYS as usize).await;
    let state = runtime.state();
    state.create(Resource::new("hot", "hot", IntSpec(1)), None).await.unwrap();
    until_hot(&hot, 10 * ROUND_BUDGET as u64).await;

    state.create(Resource::new("trigger", "t", StrSpec("t".into())), None).await.unwrap();
    let first = loop {
        if let Some(at) = ordinary.first_at() {
            break at;
        }
        tokio::task::yield_now().await;
    };
    while ordinary.done.load(Ordering::SeqCst) < KEYS {
        tokio::task::yield_now().await;
    }
    let last = ordinary.last_at.load(Ordering::SeqCst);
    assert!(last < SAFETY, "the hot key had hit its safety limit before the others drained");
    // The queue hands keys out in order: the hot key, requeued behind the
    // thousand, waits its turn; it runs at most once per worker meanwhile.
    let hot_runs = last - first - (KEYS - 1);
    assert!(hot_runs <= 4, "the hot key ran {hot_runs} times while {KEYS} keys drained");
    hot.stop.store(true, Ordering::SeqCst);
    runtime.settled().await;
    runtime.stop().await;
}

#[actix::test]
async fn a_burst_of_a_hundred_thousand_keys_leaves_other_controllers_running() {
    const BURST: usize = 100_000;
    let runtime = Runtime::builder().arbiters(1).start();
    let hot = Arc::new(Hot::default());
    let mut seen = quiet(&runtime, &hot).await;
    let ordinary = spinner(&runtime, &hot, BURST).await;
    runtime.settled().await;

    runtime.state().create(Resource::new("trigger", "t", StrSpec("t".into())), None).await.unwrap();
    until_hot(&hot, 1).await;
    let (before, at) = trigger_quiet(&runtime, &hot, &mut seen).await;
    assert!(at < BURST as u64, "the burst was over before the quiet controller ran");
    assert!(
        at - before <= BOUND,
        "{} keys ran while the quiet controller waited (bound {BOUND})",
        at - before
    );

    runtime.settled().await;
    assert_eq!(ordinary.done.load(Ordering::SeqCst), BURST as u64, "every key of the burst ran");
    runtime.stop().await;
}

/// Mirrors the `IntSpec` "x" in "busy" to a `StrSpec`, every time it changes.
struct Follower;

impl Controller for Follower {
    fn name(&self) -> &str {
        "Follower"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>("busy")]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for input in cx.list_typed::<IntSpec>("busy", &LabelQuery::all()).await? {
            let text = input.spec().0.to_string();
            cx.modify(
                &Pointer::typed::<StrSpec>("busy", input.id()),
                move |s: &mut Resource<StrSpec>| s.spec_mut().0 = text.clone(),
            )
            .await?;
        }
        Ok(())
    }
}

#[actix::test]
async fn an_input_that_changes_without_pause_leaves_other_controllers_running() {
    let runtime = Runtime::builder().arbiters(1).start();
    let writes = Arc::new(Hot::default());
    let mut seen = quiet(&runtime, &writes).await;
    runtime.register(|| Follower).await.unwrap();
    let state = runtime.state();
    let x = Pointer::typed::<IntSpec>("busy", "x");
    state.create(Resource::new("busy", "x", IntSpec(0)), None).await.unwrap();
    let feeder = {
        let (state, writes, x) = (state.clone(), writes.clone(), x.clone());
        actix::spawn(async move {
            while writes.keep_going() {
                let n = writes.done.fetch_add(1, Ordering::SeqCst) as i64 + 1;
                state
                    .modify(&x, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None)
                    .await
                    .unwrap();
            }
        })
    };
    until_hot(&writes, 1_000).await;

    let (before, at) = trigger_quiet(&runtime, &writes, &mut seen).await;
    assert!(
        at - before <= BOUND,
        "{} writes landed while the quiet controller waited (bound {BOUND})",
        at - before
    );

    writes.stop.store(true, Ordering::SeqCst);
    feeder.await.unwrap();
    runtime.settled().await;
    let last = writes.count() as i64;
    let mirrored =
        state.get_typed::<StrSpec>(&Pointer::typed::<StrSpec>("busy", "x")).await.unwrap();
    assert_eq!(mirrored.spec().0, last.to_string(), "the follower caught up with the last write");
    runtime.stop().await;
}

/// A plain controller that requeues itself at zero delay (returning at once,
/// without awaiting anything) until told to stop.
struct PlainSpinner(Arc<Hot>);

impl Controller for PlainSpinner {
    fn name(&self) -> &str {
        "PlainSpinner"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.0.done.fetch_add(1, Ordering::SeqCst);
        if self.0.keep_going() {
            cx.requeue_after(Duration::ZERO);
        }
        Ok(())
    }
}

#[actix::test]
async fn a_plain_controller_requeued_at_zero_delay_yields_between_two_of_its_reconciles() {
    let runtime = Runtime::builder().arbiters(1).start();
    let hot = Arc::new(Hot::default());
    let mut seen = quiet(&runtime, &hot).await;
    let h = hot.clone();
    runtime.register(move || PlainSpinner(h.clone())).await.unwrap();
    until_hot(&hot, 10).await;

    let (before, at) = trigger_quiet(&runtime, &hot, &mut seen).await;
    assert!(at < SAFETY, "the spinner had hit its safety limit before the quiet controller ran");
    // One reconcile of the spinner per turn of the executor, not a round
    // budget's worth: a reconcile that blocked its thread would otherwise
    // hold the arbiter that many times as long.
    assert!(
        at - before <= TURNS,
        "the spinner ran {} times while the quiet controller waited (bound {TURNS})",
        at - before
    );

    hot.stop.store(true, Ordering::SeqCst);
    runtime.settled().await;
    runtime.stop().await;
}

/// A queue controller over `IntSpec`s in "hot" whose every key requeues
/// itself at zero delay until told to stop, counting its reconciles.
struct Forever(Arc<Hot>);

impl QueueController for Forever {
    fn name(&self) -> &str {
        "Forever"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>("hot")],
            outputs: vec![],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        _: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        self.0.done.fetch_add(1, Ordering::SeqCst);
        if self.0.keep_going() {
            return Ok(Outcome::RequeueAfter(Duration::ZERO));
        }
        Ok(Outcome::Done)
    }
}

/// The `block_on` body (a test's body, a user's `#[actix::main]`) waits on a
/// state change through a watch while a queue key spins at zero delay: it
/// must get its turn, whatever the arbiters.
async fn main_task_waits_for_a_change_beside_a_spinning_key(arbiters: usize) {
    let runtime = Runtime::builder().arbiters(arbiters).start();
    let hot = Arc::new(Hot::default());
    let h = hot.clone();
    runtime.register(move || Forever(h.clone())).await.unwrap();
    let state = runtime.state();
    state.create(Resource::new("hot", "hot", IntSpec(1)), None).await.unwrap();
    until_hot(&hot, 10 * ROUND_BUDGET as u64).await;

    let watched = Pointer::typed::<StrSpec>("main", "m");
    let mut changes = state.watch_stream(&watched).await.unwrap();
    let before = hot.count();
    state.create(Resource::new("main", "m", StrSpec("m".into())), None).await.unwrap();
    loop {
        let event = changes.next().await.expect("the watch delivers the create");
        if matches!(event, Event::Created(_)) {
            break;
        }
    }
    let at = hot.count();
    assert!(at < SAFETY, "the hot key hit its safety limit before the main task saw its change");
    // The body takes several steps (a request, its reply, the event), each a
    // turn of the `block_on` future: measured 4 rounds of the hot key in all,
    // and 60 when the executor polled that future once per 61 ready tasks.
    assert!(
        at - before <= MAIN_BOUND,
        "the hot key ran {} times while the main task waited for its change (bound {MAIN_BOUND})",
        at - before
    );
    hot.stop.store(true, Ordering::SeqCst);
    runtime.settled().await;
    runtime.stop().await;
}

#[actix::test]
async fn the_main_task_sees_its_change_while_a_key_requeues_at_zero_on_one_arbiter() {
    main_task_waits_for_a_change_beside_a_spinning_key(1).await;
}

#[actix::test]
async fn the_main_task_sees_its_change_while_a_key_requeues_at_zero_on_two_arbiters() {
    main_task_waits_for_a_change_beside_a_spinning_key(2).await;
}
