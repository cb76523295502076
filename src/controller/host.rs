//! [`Host`]: the actor that runs one controller, plain or queue.
//!
//! It subscribes to the controller's inputs, feeds a [`WorkQueue`] from change
//! messages (for a plain controller one fixed key: every change collapses into
//! at most one pending reconcile), hands ready keys to reconciles up to the
//! controller's concurrency and the shared worker pool's, catches panics, and
//! feeds outcomes back into the queue (success, requeue, backoff, terminal).
//! Its mailbox and subscriptions last through all of that. What differs
//! between the two kinds is a [`Hosted`]: [`Queued`](super::queue_host::Queued)
//! and [`Plain`](super::plain::Plain).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix::prelude::*;
use futures::channel::oneshot;
use tokio::time::Instant;

use super::Input;
use super::Reach;
use super::access::AccessRules;
use super::metrics::{ControllerStatus, Counters, QueueCounters, Running};
// Defined in `outcome`, with the catching of panics; the supervisor and
// `testing::panics` read it here.
pub(crate) use super::outcome::panic_message;
use super::outcome::{self, Echoes};
use super::pool::{Permit, WorkerPool};
use crate::activity::{ActivityGuard, TimerGuard};
use crate::events::{EventSink, EventType, Recorder};
use crate::execution::RoundBudget;
use crate::queue::{Completion, Taken, WorkQueue};
use crate::resource::{AnyResource, Kind, Phase, Pointer};
use crate::shard::ShardMask;
use crate::state::claims::Ownership;
use crate::state::delivery::Sink;
use crate::state::request::WatchSink;
use crate::state::watch::WatchTarget;
use crate::state::{State, WatchEvent, WatchId, WatchOptions};
use crate::supervisor::{HostReport, RestartPolicy};

/// The span one reconcile runs in, with kube-runtime's field names:
/// `controller`, `object.ref` (the resource; `*` for a plain controller,
/// which reconciles all of its inputs at once), `object.reason` (why it
/// runs) and `result` (recorded when it ends: `success`, `requeue`, `error`,
/// `terminal error` or `panic`). Target `cosi_runtime::reconcile`, level
/// INFO: `RUST_LOG=info,cosi_runtime::reconcile=warn` quiets it under env_logger.
pub(crate) fn reconcile_span(
    controller: &str,
    object: &dyn std::fmt::Display,
    reason: &str,
) -> tracing::Span {
    // A span nobody records still costs on every enter, exit and record
    // (through `log`'s checks): a disabled one costs nothing.
    if !tracing::enabled!(target: "cosi_runtime::reconcile", tracing::Level::INFO)
        && !log::log_enabled!(target: "cosi_runtime::reconcile", log::Level::Info)
    {
        return tracing::Span::none();
    }
    tracing::info_span!(
        target: "cosi_runtime::reconcile",
        "reconcile",
        controller = %controller,
        "object.ref" = %object,
        "object.reason" = %reason,
        result = tracing::field::Empty,
    )
}

/// Records how a reconcile ended on its span: the `result` field for a
/// tracing subscriber. Without one (`log` users, env_logger), recording would
/// print a line with the result alone, naming neither controller nor object;
/// so that line is written here instead, naming both.
pub(crate) fn record_result(
    span: &tracing::Span,
    controller: &str,
    object: &dyn std::fmt::Display,
    result: &'static str,
) {
    if tracing::dispatcher::has_been_set() {
        span.record("result", result);
    } else if log::log_enabled!(target: "cosi_runtime::reconcile", log::Level::Info) {
        log::info!(
            target: "cosi_runtime::reconcile",
            "reconcile; controller={controller} object.ref={object} result={result}"
        );
    }
}

/// What a host needs from the runtime.
#[derive(Clone)]
pub(crate) struct HostEnv {
    /// The state, counting activity for `settled()`.
    pub(crate) state: State,
    /// Where to report a controller that gave up or changed its inputs.
    pub(crate) supervisor: Recipient<HostReport>,
    /// How failures are retried.
    pub(crate) policy: RestartPolicy,
    /// Where Events go (`None`: off).
    pub(crate) events: EventSink,
}

impl HostEnv {
    /// A tracked watch on every resource of `kind` delivering to `sink`,
    /// bootstrapped (each existing resource first) or not; with `shards`,
    /// only the changes of keys in those shards.
    pub(crate) async fn watch_kind(
        &self,
        kind: Kind,
        sink: Sink,
        bootstrap: bool,
        shards: Option<Arc<ShardMask>>,
    ) -> Result<WatchId, crate::Error> {
        let sink = WatchSink { sink, activity: Some(self.state.activity().clone()), shards };
        let query = crate::resource::LabelQuery::all();
        // The kind of an input on every namespace.
        let target = if kind.namespace() == crate::state::watch::ALL_NAMESPACES {
            WatchTarget::all_namespaces(kind.resource_type(), query)
        } else {
            WatchTarget::Kind { kind, query }
        };
        let options = WatchOptions { bootstrap, ..WatchOptions::default() };
        self.state.watch_sink(target, &options, sink).await
    }

    /// Watches each of `kinds` that `current` does not watch yet (a sink from
    /// `sink` each, filtered by its shard mask if it has one), adding its id
    /// to `current`. A kind that cannot be watched is logged, naming the
    /// controller, and left out.
    pub(crate) async fn watch_missing(
        &self,
        kinds: impl IntoIterator<Item = (Kind, Option<Arc<ShardMask>>)>,
        sink: impl Fn() -> Sink,
        bootstrap: bool,
        current: &mut HashMap<Kind, WatchId>,
        controller: &str,
    ) {
        for (kind, shards) in kinds {
            if current.contains_key(&kind) {
                continue;
            }
            match self.watch_kind(kind.clone(), sink(), bootstrap, shards).await {
                Ok(id) => {
                    current.insert(kind, id);
                }
                Err(e) => tracing::error!(
                    controller = %controller,
                    "controller {controller}: cannot watch {kind}: {e}"
                ),
            }
        }
    }
}

/// Subscribes `recipient` to every kind in `wanted` missing from `current`,
/// and unsubscribes those no longer wanted. Returns the new subscription map.
pub(crate) async fn resubscribe(
    env: HostEnv,
    mut current: HashMap<Kind, WatchId>,
    wanted: Vec<Kind>,
    recipient: Recipient<WatchEvent>,
    owner: Arc<str>,
) -> HashMap<Kind, WatchId> {
    let stale: Vec<Kind> = current.keys().filter(|k| !wanted.contains(k)).cloned().collect();
    for kind in stale {
        if let Some(id) = current.remove(&kind) {
            let _ = env.state.unwatch(id).await;
        }
    }
    let wanted = wanted.into_iter().map(|k| (k, None));
    env.watch_missing(wanted, || Sink::Actor(recipient.clone()), false, &mut current, &owner).await;
    current
}

/// The distinct kinds a list of inputs watches.
pub(crate) fn watched_kinds(inputs: &[Input]) -> Vec<Kind> {
    let mut kinds: Vec<Kind> = Vec::new();
    for input in inputs {
        let k = input.watched_kind();
        if !kinds.contains(&k) {
            kinds.push(k);
        }
    }
    kinds
}

/// The end of a host: its watches are ended (in a task of their own, as the
/// actor is stopping) and whoever waited for the stop is told.
pub(crate) fn wind_down(
    env: &HostEnv,
    subscriptions: &mut HashMap<Kind, WatchId>,
    stop_waiters: &mut Vec<oneshot::Sender<()>>,
) {
    for (_, id) in subscriptions.drain() {
        let state = env.state.clone();
        actix::spawn(async move {
            let _ = state.unwatch(id).await;
        });
    }
    for waiter in stop_waiters.drain(..) {
        let _ = waiter.send(());
    }
}

/// Whether a resource is tearing down with no finalizers.
pub(crate) fn destroy_ready(r: &AnyResource) -> bool {
    r.phase() == Phase::TearingDown && r.metadata().finalizers().is_empty()
}

/// What one reconcile came back with: its key, when it started, and what the
/// kind of controller needs to finish it.
pub(crate) type Finished<R> = (<R as Hosted>::Key, Instant, <R as Hosted>::Return);

/// One reconcile under way, boxed once where it is made (moving the future
/// through wrappers copied it whole, several times: a large share of a
/// short reconcile's cost).
pub(crate) type Work<R> = Pin<Box<dyn Future<Output = Finished<R>>>>;

/// What differs between the two kinds of controller one [`Host`] runs: how
/// a reconcile is called and what its end means. What a change queues is
/// each kind's own `Handler<WatchEvent>` (and a queue controller's
/// `Handler<WatchBatch>`, `Handler<Enqueue>`).
///
/// A queue controller ([`Queued`](super::queue_host::Queued)) queues the
/// resources a change maps to and reconciles each one; a plain controller
/// ([`Plain`](super::plain::Plain)) is a queue of one fixed key, so that its
/// "at most one pending reconcile, one more after a change that lands while
/// it runs" is the queue's contract for that key.
pub(crate) trait Hosted: Sized + Unpin + 'static {
    /// What the queue holds.
    type Key: Clone + Eq + Hash + Ord + fmt::Display + Unpin + 'static;
    /// What a reconcile hands back besides its key and start time.
    type Return: 'static;

    /// Subscribes to the inputs at start (the returned future is awaited
    /// before anything else runs).
    fn subscribe(host: &mut Host<Self>, ctx: &mut Context<Host<Self>>) -> SubscribeFuture;
    /// Makes the reconcile of a key just taken from the queue, for [`Drive`]
    /// to poll (`None`: started as an item of its own, see `OWN_ITEM`).
    fn start(
        host: &mut Host<Self>,
        taken: Taken<Self::Key>,
        permit: Permit,
        now: Instant,
        ctx: &mut Context<Host<Self>>,
    ) -> Option<Work<Self>>;
    /// A reconcile ended: what the queue is told, with the backoff delay of
    /// a retry when the controller sets it itself.
    fn complete(
        host: &mut Host<Self>,
        key: &Self::Key,
        returned: Self::Return,
        ctx: &mut Context<Host<Self>>,
    ) -> (Completion, Option<Duration>);
    /// The queue took the completion (`retry`: the backoff delay of a retry):
    /// stop, or go on.
    fn completed(
        host: &mut Host<Self>,
        key: &Self::Key,
        completion: Completion,
        retry: Option<Duration>,
        now: Instant,
        ctx: &mut Context<Host<Self>>,
    );
    /// Nothing may start: standing by or failed (the queue is left as is,
    /// or pending work dropped).
    fn held(host: &mut Host<Self>);
    /// The claim on the exclusive outputs was won (`true`) or lost.
    fn ownership(host: &mut Host<Self>, owner: bool, ctx: &mut Context<Host<Self>>);
    /// The status the host ends with when it stops.
    fn stopped(host: &mut Host<Self>);
    /// Whether the status follows the queue (ready, backing off), or the
    /// controller sets it at each step itself.
    const STATUS_FROM_QUEUE: bool;
    /// Whether each reconcile is an item of the actor's context of its own,
    /// rather than one of those [`Drive`] polls. A plain controller's is: its
    /// one reconcile at a time costs nothing to spawn, and where actix polls
    /// an item (after the mailbox, even while the round budget has the
    /// context wait) decides how many changes each reconcile reads at once.
    const OWN_ITEM: bool;
}

/// The subscriptions a host starts with, once made.
pub(crate) type SubscribeFuture = Pin<Box<dyn Future<Output = HashMap<Kind, WatchId>>>>;

/// Start the ready work: sent once by a wake-up that waits for the message
/// turn to end (a plain controller's, see [`Plain`](super::plain::Plain)).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct RunReconcile;

/// Stop the controller once any running reconcile ends; answers when stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct StopHost;

/// The actor that runs one controller, of either kind (see [`Hosted`]).
pub(crate) struct Host<R: Hosted> {
    pub(super) name: Arc<str>,
    /// The kind-specific part: the controller and what it keeps.
    pub(super) controller: R,
    pub(super) rules: Arc<AccessRules>,
    pub(super) env: HostEnv,
    pool: WorkerPool,
    pub(super) queue: WorkQueue<R::Key>,
    concurrency: usize,
    /// The reconciles under way, by start time (for the metrics).
    pub(super) in_flight: Running,
    pub(super) counters: Arc<Counters>,
    /// What each reconcile context reaches (state handle, counters), shared.
    pub(super) reach: Arc<Reach>,
    pub(super) queue_counters: Arc<QueueCounters>,
    pub(super) subscriptions: HashMap<Kind, WatchId>,
    /// Held while any key is ready, running, backing off or waiting for a permit.
    busy: Option<ActivityGuard>,
    timer: Option<(Instant, SpawnHandle, TimerGuard)>,
    waiting_for_permit: bool,
    stop_waiters: Vec<oneshot::Sender<()>>,
    /// Another process holds the claim on the exclusive outputs: nothing runs.
    pub(super) standby: bool,
    pub(super) budget: RoundBudget,
    /// The reconciles under way (as many as are running), polled by [`Drive`].
    work: Vec<Work<R>>,
    /// [`Drive`] is polling `work` now (what starts meanwhile, it polls too).
    driving: bool,
    /// The host's task, to have [`Drive`] poll a reconcile started elsewhere.
    waker: Option<std::task::Waker>,
    /// Reconciles in a row caused only by its own writes.
    pub(super) echoes: Echoes,
    /// Failed for good (an access its declarations do not allow; for a plain
    /// controller also a terminal error or the restart intensity): nothing
    /// more runs.
    pub(super) failed: bool,
    /// A [`RunReconcile`] is on its way.
    run_sent: bool,
    /// The reconciles under way as items of their own (see [`Hosted::OWN_ITEM`]).
    own_items: usize,
}

impl<R: Hosted> Host<R> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        controller: R,
        rules: AccessRules,
        concurrency: usize,
        env: HostEnv,
        pool: WorkerPool,
        counters: Arc<Counters>,
        queue_counters: Arc<QueueCounters>,
        busy: ActivityGuard,
    ) -> Self {
        counters.set_max_concurrent(concurrency.max(1));
        let events = Recorder::new(&env.events, rules.controller().clone(), env.state.activity());
        Host {
            name: rules.controller().clone(),
            controller,
            rules: Arc::new(rules),
            queue: WorkQueue::new(env.policy.backoff),
            reach: Arc::new(Reach { events, state: env.state.clone(), counters: counters.clone() }),
            env,
            pool,
            concurrency: concurrency.max(1),
            in_flight: Running::default(),
            counters,
            queue_counters,
            subscriptions: HashMap::new(),
            busy: Some(busy),
            timer: None,
            waiting_for_permit: false,
            stop_waiters: Vec::new(),
            standby: false,
            budget: RoundBudget::default(),
            work: Vec::new(),
            driving: false,
            waker: None,
            echoes: Echoes::default(),
            failed: false,
            run_sent: false,
            own_items: 0,
        }
    }

    /// Records a Warning about how a reconcile ended (action `Reconcile`),
    /// about `regarding`, or the controller (`None`).
    pub(super) fn warn(&self, reason: &'static str, note: String, regarding: Option<&Pointer>) {
        self.reach.events.runtime(EventType::Warning, reason, "Reconcile", note, regarding);
    }

    /// Records that the controller is failed for good (`Failed`, a Warning
    /// about the controller, action `Supervise`).
    pub(super) fn record_failed(&self, note: String) {
        self.reach.events.runtime(EventType::Warning, "Failed", "Supervise", note, None);
    }

    /// Records that a fresh instance replaced one that panicked
    /// (`Restarted`, Normal, about the controller, action `Restart`).
    pub(super) fn record_restarted(&self) {
        let note = "a fresh instance from the factory replaced the one that panicked".to_owned();
        self.reach.events.runtime(EventType::Normal, "Restarted", "Restart", note, None);
    }

    /// Starts standing by: nothing runs until [`Ownership`] says it owns its
    /// outputs.
    pub(crate) fn standing_by(mut self) -> Self {
        self.standby = true;
        self.counters.set_status(ControllerStatus::Standby);
        self
    }

    /// How many reconciles are under way.
    fn running(&self) -> usize {
        if R::OWN_ITEM { self.own_items } else { self.work.len() }
    }

    /// Starts reconciles while there is ready work, room under the
    /// concurrency, and a pool permit.
    pub(super) fn pump(&mut self, ctx: &mut Context<Self>) {
        self.pump_at(Instant::now(), ctx);
    }

    /// [`pump`](Self::pump) with the time already read (one clock read per
    /// turn: it shows in a profile of many short reconciles).
    pub(super) fn pump_at(&mut self, now: Instant, ctx: &mut Context<Self>) {
        if self.standby || self.failed {
            R::held(self);
            self.refresh();
            return;
        }
        while self.running() < self.concurrency && self.queue.has_ready(now) {
            let Some(permit) = self.pool.try_acquire() else {
                self.wait_for_permit(ctx);
                break;
            };
            self.start_one(permit, now, ctx);
        }
        self.arm_timer(ctx);
        self.refresh();
    }

    /// Pumps once the current message turn is over: what else is in the
    /// mailbox now is queued first (and, for a plain controller, absorbed by
    /// the pending reconcile).
    pub(super) fn pump_soon(&mut self, ctx: &mut Context<Self>) {
        self.refresh();
        if !self.run_sent {
            self.run_sent = true;
            ctx.notify(RunReconcile);
        }
    }

    fn wait_for_permit(&mut self, ctx: &mut Context<Self>) {
        if self.waiting_for_permit {
            return;
        }
        self.waiting_for_permit = true;
        ctx.spawn(self.pool.clone().acquire().into_actor(self).map(|permit, act, ctx| {
            act.waiting_for_permit = false;
            if let Some(permit) = permit
                && act.running() < act.concurrency
                && act.queue.has_ready(Instant::now())
            {
                act.start_one(permit, Instant::now(), ctx);
            }
            act.pump(ctx);
        }));
    }

    fn start_one(&mut self, permit: Permit, now: Instant, ctx: &mut Context<Self>) {
        let Some(taken) = self.queue.take(now) else {
            return;
        };
        let Some(work) = R::start(self, taken, permit, now, ctx) else {
            return;
        };
        self.work.push(work);
        if !self.driving
            && let Some(waker) = &self.waker
        {
            // Started by a handler or a timer: `Drive` polls it on its next turn.
            waker.wake_by_ref();
        }
    }

    /// Runs `work` as an item of the actor's context of its own (see
    /// [`Hosted::OWN_ITEM`]), unboxed: an item is boxed once already.
    pub(super) fn spawn_own(
        &mut self,
        work: impl Future<Output = Finished<R>> + 'static,
        ctx: &mut Context<Self>,
    ) {
        self.own_items += 1;
        ctx.spawn(work.into_actor(self).map(|finished, act, ctx| {
            act.own_items -= 1;
            act.finished(finished, Instant::now(), ctx);
        }));
    }

    /// Polls every reconcile under way; each one that ends is finished (which
    /// may start more, polled in the same loop). Stops where the round budget
    /// made the context wait.
    fn drive(&mut self, ctx: &mut Context<Self>, task: &mut std::task::Context<'_>) {
        if !self.waker.as_ref().is_some_and(|w| w.will_wake(task.waker())) {
            self.waker = Some(task.waker().clone());
        }
        self.driving = true;
        // One clock read for every reconcile that ends in this pass.
        let mut now = None;
        let mut i = 0;
        while i < self.work.len() && !ctx.waiting() {
            match self.work[i].as_mut().poll(task) {
                std::task::Poll::Ready(finished) => {
                    drop(self.work.swap_remove(i));
                    let now = *now.get_or_insert_with(Instant::now);
                    self.finished(finished, now, ctx);
                }
                std::task::Poll::Pending => i += 1,
            }
        }
        self.driving = false;
    }

    /// A reconcile ended (seen at `now`).
    fn finished(
        &mut self,
        (key, started, returned): Finished<R>,
        now: Instant,
        ctx: &mut Context<Self>,
    ) {
        self.budget.spend(ctx);
        let took = outcome::finished(&self.counters, &mut self.in_flight, started, now);
        self.queue_counters.latency.observe(took);
        let (completion, backoff) = R::complete(self, &key, returned, ctx);
        let retry = self.queue.done_with(&key, completion, backoff, now);
        R::completed(self, &key, completion, retry, now, ctx);
    }

    /// Keeps one timer armed for the earliest waiting key.
    fn arm_timer(&mut self, ctx: &mut Context<Self>) {
        let Some(due) = self.queue.next_due() else {
            if let Some((_, handle, _armed)) = self.timer.take() {
                ctx.cancel_future(handle);
            }
            return;
        };
        // An armed timer that fires no later than `due` serves: when it fires
        // early, the pump finds nothing due and arms the next one. Cancelling
        // and re-arming on every later due time churns the actor's timers.
        if self.timer.as_ref().is_some_and(|(at, _, _)| *at <= due) {
            return;
        }
        if let Some((_, handle, _armed)) = self.timer.take() {
            ctx.cancel_future(handle);
        }
        let delay = due.saturating_duration_since(Instant::now());
        let handle = ctx.run_later(delay, |act, ctx| {
            let timer = act.timer.take();
            act.pump(ctx);
            drop(timer); // after the pump took its unit: never idle in between
        });
        self.timer = Some((due, handle, self.env.state.activity().timer()));
    }

    /// Publishes queue figures and holds activity while work is pending.
    pub(super) fn refresh(&mut self) {
        let stats = self.queue.stats();
        let depth = stats.ready + stats.delayed + stats.backing_off;
        self.queue_counters.depth.store(depth as u64, Ordering::Relaxed);
        self.queue_counters.processing.store(self.running() as u64, Ordering::Relaxed);
        self.counters.work_queue.depth.store(stats.ready as u64, Ordering::Relaxed);
        self.counters.work_queue.adds.store(self.queue.adds(), Ordering::Relaxed);
        if R::STATUS_FROM_QUEUE {
            self.counters.set_status(if self.failed {
                ControllerStatus::Failed
            } else if self.standby {
                ControllerStatus::Standby
            } else if stats.backing_off > 0 {
                ControllerStatus::BackingOff
            } else {
                ControllerStatus::Running
            });
        }
        // A standby's queued keys are not pending work: `settled()` passes them.
        let pending = self.running() > 0
            || (!self.standby
                && !self.failed
                && (stats.ready > 0 || stats.backing_off > 0 || self.waiting_for_permit));
        if pending && self.busy.is_none() {
            self.busy = Some(self.env.state.activity().guard());
        } else if !pending {
            self.busy = None;
        }
    }

    pub(super) fn finish_stop(&mut self, ctx: &mut Context<Self>) {
        R::stopped(self);
        self.busy = None;
        wind_down(&self.env, &mut self.subscriptions, &mut self.stop_waiters);
        ctx.stop();
    }
}

impl<R: Hosted> Actor for Host<R> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Subscribe first, then start: a change that lands in between is
        // seen by the first reconciles or arrives as an event.
        let subscribe = R::subscribe(self, ctx);
        if !R::OWN_ITEM {
            // An idle item in front of the reconciles would have actix poll
            // them every other round when the round budget cuts rounds short.
            ctx.spawn(Drive);
        }
        ctx.wait(subscribe.into_actor(self).map(|subs, act, ctx| {
            act.subscriptions = subs;
            act.pump(ctx);
        }));
    }
}

/// Drives a host's reconciles (spawned at start unless they are items of
/// their own, see [`Hosted::OWN_ITEM`]; it ends with the host's last
/// handle): one item of the actor's context for all of them, rather than one
/// boxed, spawned item each.
struct Drive;

impl<R: Hosted> ActorFuture<Host<R>> for Drive {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut Host<R>,
        ctx: &mut Context<Host<R>>,
        task: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        act.drive(ctx, task);
        if act.work.is_empty() && !ctx.connected() {
            // Nothing under way and nobody left to send work: let the actor
            // stop, as it would without this item.
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    }
}

impl<R: Hosted> Handler<RunReconcile> for Host<R> {
    type Result = ();

    fn handle(&mut self, _: RunReconcile, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        self.run_sent = false;
        self.pump(ctx);
    }
}

impl<R: Hosted> Handler<Ownership> for Host<R> {
    type Result = ();

    fn handle(&mut self, Ownership(owner): Ownership, ctx: &mut Context<Self>) {
        if owner != self.standby {
            return;
        }
        self.standby = !owner;
        R::ownership(self, owner, ctx);
    }
}

impl<R: Hosted> Handler<StopHost> for Host<R> {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: StopHost, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.stop_waiters.push(tx);
        self.queue.shutdown();
        if self.queue.is_drained() {
            self.finish_stop(ctx);
        } else {
            self.refresh();
        }
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}
