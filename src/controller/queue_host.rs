//! [`QueueHost`]: the actor that runs one [`QController`].
//!
//! It feeds a [`WorkQueue`] from change messages (primary inputs directly,
//! mapped inputs through `map_input`) and from [`QueueHandle`]s, hands ready
//! keys to reconciles up to the controller's concurrency and the shared
//! worker pool's, catches panics, and feeds outcomes back into the queue
//! (success, requeue, per-key backoff, terminal).
//!
//! [`QueueHandle`]: super::QueueHandle

use std::collections::HashMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use actix::prelude::*;
use futures::channel::oneshot;
use tokio::time::Instant;
use tracing::Instrument;

use super::access::AccessRules;
use super::host::destroy_ready;
use super::host::{
    HostEnv, StopHost, panic_message, reconcile_span, record_result, watched_kinds, wind_down,
};
use super::metrics::{ControllerStatus, Counters, QueueCounters, Running};
use super::outcome::{self, Echoes, Ended, run_caught};
use super::pool::{Permit, WorkerPool};
use super::queue::{Enqueue, Outcome, QController};
use super::{Input, InputKind, Reach, ReconcileContext};
use crate::Error;
use crate::activity::{ActivityGuard, TimerGuard};
use crate::execution::RoundBudget;
use crate::queue::{Completion, Taken, WorkQueue};
use crate::resource::{AnyResource, Kind, LabelQuery, Pointer};
use crate::state::claims::Ownership;
use crate::state::{
    Event, Sink, WatchBatch, WatchEvent, WatchId, WatchOptions, WatchSink, WatchTarget,
};
use crate::supervisor::HostReport;

/// What one reconcile came back with, and when it started.
type Finished = (Pointer, Ended<Outcome>, Instant);

/// One reconcile under way, boxed once where it is made (moving the future
/// through wrappers copied it whole, several times: a large share of a
/// short reconcile's cost).
type Work = Pin<Box<dyn Future<Output = Finished>>>;

/// A reconcile's outcome with the `cx.requeue_after` it asked for: the shorter delay wins.
fn with_requeue(outcome: Outcome, requeue: Option<std::time::Duration>) -> Outcome {
    match (outcome, requeue) {
        (Outcome::RequeueAfter(d), Some(r)) => Outcome::RequeueAfter(d.min(r)),
        (Outcome::Done, Some(r)) => Outcome::RequeueAfter(r),
        (outcome, None) => outcome,
    }
}

/// The actor that runs one queue controller.
pub(crate) struct QueueHost<Q> {
    name: Arc<str>,
    controller: Rc<Q>,
    rules: Arc<AccessRules>,
    env: HostEnv,
    pool: WorkerPool,
    queue: WorkQueue<Pointer>,
    concurrency: usize,
    /// The reconciles under way, by start time (for the metrics).
    in_flight: Running,
    counters: Arc<Counters>,
    /// What each reconcile context reaches (state handle, counters), shared.
    reach: Arc<Reach>,
    queue_counters: Arc<QueueCounters>,
    subscriptions: HashMap<Kind, WatchId>,
    /// Held while any key is ready, running, backing off or waiting for a permit.
    busy: Option<ActivityGuard>,
    timer: Option<(Instant, SpawnHandle, TimerGuard)>,
    waiting_for_permit: bool,
    stop_waiters: Vec<oneshot::Sender<()>>,
    /// Another process holds the claim on the exclusive outputs: keys queue
    /// up, nothing runs.
    standby: bool,
    budget: RoundBudget,
    /// A listing of every primary (for `requeues_all`) is in flight: further
    /// asks join it (its keys run after the changes that asked).
    requeueing_all: bool,
    /// The reconciles under way (as many as are running), polled by [`Drive`].
    work: Vec<Work>,
    /// [`Drive`] is polling `work` now (what starts meanwhile, it polls too).
    driving: bool,
    /// The host's task, to have [`Drive`] poll a reconcile started elsewhere.
    waker: Option<std::task::Waker>,
    /// The keys queued only by changes the controller made itself (empty in
    /// a controller that does not read what it writes: no cost then).
    own_triggered: rustc_hash::FxHashSet<Pointer>,
    /// Reconciles in a row caused only by its own writes.
    echoes: Echoes,
    /// Destroy-ready input kinds whose bootstrap is not over: every resource
    /// of theirs is mapped until then (leftovers of an earlier run are found).
    bootstrapping: Vec<Kind>,
    /// Refused an access its declarations do not allow: nothing more runs.
    failed: bool,
}

impl<Q: QController> QueueHost<Q> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        controller: Q,
        rules: AccessRules,
        concurrency: usize,
        env: HostEnv,
        pool: WorkerPool,
        counters: Arc<Counters>,
        queue_counters: Arc<QueueCounters>,
        busy: ActivityGuard,
    ) -> Self {
        counters.set_max_concurrent(concurrency.max(1));
        QueueHost {
            name: rules.controller().clone(),
            controller: Rc::new(controller),
            rules: Arc::new(rules),
            queue: WorkQueue::new(env.policy.backoff),
            reach: Arc::new(Reach { state: env.state.clone(), counters: counters.clone() }),
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
            requeueing_all: false,
            budget: RoundBudget::default(),
            work: Vec::new(),
            driving: false,
            waker: None,
            own_triggered: rustc_hash::FxHashSet::default(),
            echoes: Echoes::default(),
            bootstrapping: Vec::new(),
            failed: false,
        }
    }

    /// Starts standing by: keys queue up, none runs until [`Ownership`] says
    /// it owns its outputs.
    pub(crate) fn standing_by(mut self) -> Self {
        self.standby = true;
        self.counters.set_status(ControllerStatus::Standby);
        self
    }

    fn inputs_of(&self, kind: InputKind) -> impl Iterator<Item = &Input> {
        self.rules.inputs().iter().filter(move |i| i.dependency == kind)
    }

    fn is_primary(&self, ptr: &Pointer) -> bool {
        self.rules.covered_by(ptr, |i| i.dependency == InputKind::Primary)
    }

    /// Whether a change of `resource` goes through `map_resource`: a mapped
    /// input always; a destroy-ready input during its bootstrap, and then
    /// once the resource is destroy-ready or destroyed.
    fn is_mapped(&self, resource: &AnyResource, destroyed: bool) -> bool {
        let ptr = resource.pointer();
        self.rules.covered_by(ptr, |i| i.dependency == InputKind::Mapped)
            || (self.rules.covered_by(ptr, |i| i.dependency == InputKind::DestroyReady)
                && (destroyed
                    || destroy_ready(resource)
                    || self.bootstrapping.contains(ptr.kind())))
    }

    /// Queues `key`, remembering whether only the controller's own writes
    /// asked for it.
    fn add(&mut self, key: Pointer, own: bool, now: Instant) {
        if own {
            self.own_triggered.insert(key.clone());
        } else if !self.own_triggered.is_empty() {
            self.own_triggered.remove(&key);
        }
        self.queue.add(key, now);
    }

    /// Queues the primary resources a change asks for; returns whether the
    /// controller asked for every primary resource.
    fn on_change(&mut self, resource: &AnyResource, destroyed: bool, now: Instant) -> bool {
        let ptr = resource.pointer();
        let own = resource.owner() == Some(&*self.name);
        if self.is_primary(ptr) {
            Counters::bump_own(&self.counters.wakeups);
            self.add(ptr.clone(), own, now);
        }
        if !self.is_mapped(resource, destroyed) {
            return false;
        }
        Counters::bump_own(&self.counters.wakeups);
        let controller = self.controller.clone();
        let mapped = std::panic::catch_unwind(AssertUnwindSafe(|| {
            (controller.map_resource(resource), controller.requeues_all(resource))
        }));
        match mapped {
            Ok((targets, all)) => {
                for target in targets {
                    if self.is_primary(&target) {
                        self.add(target, own, now);
                    } else {
                        tracing::error!(
                            controller = %self.name,
                            "object.ref" = %ptr,
                            "queue controller {}: map_input({ptr}) returned {target}, which is not a primary input",
                            self.name
                        );
                    }
                }
                all
            }
            Err(panic) => {
                tracing::error!(
                    controller = %self.name,
                    "object.ref" = %ptr,
                    "queue controller {}: map_input({ptr}) panicked: {}",
                    self.name,
                    panic_message(&*panic)
                );
                false
            }
        }
    }

    /// Queues what an event asks for; whether it was a change (not a marker).
    fn on_event(&mut self, event: &Event, now: Instant, ctx: &mut Context<Self>) -> bool {
        if let Event::Bootstrapped(kind) = event {
            self.bootstrapping.retain(|k| k != kind);
            return false;
        }
        let Some(resource) = event.resource() else {
            return false;
        };
        if self.on_change(resource, matches!(event, Event::Destroyed(_)), now) {
            self.requeue_all(ctx);
        }
        true
    }

    /// Lists every primary kind and queues each resource (see
    /// [`QController::requeues_all`]). Holds activity until they are queued.
    fn requeue_all(&mut self, ctx: &mut Context<Self>) {
        if self.requeueing_all {
            return;
        }
        self.requeueing_all = true;
        let kinds = watched_kinds(&self.inputs_of(InputKind::Primary).cloned().collect::<Vec<_>>());
        let state = self.env.state.clone();
        let name = self.name.clone();
        let busy = self.env.state.activity().guard();
        let list = async move {
            let mut all = Vec::new();
            for kind in kinds {
                match state.list(&kind, &LabelQuery::all()).await {
                    Ok(resources) => all.extend(resources.iter().map(|r| r.pointer().clone())),
                    Err(e) => {
                        tracing::warn!(controller = %name, "cannot list {kind} to requeue it: {e}")
                    }
                }
            }
            (all, busy)
        };
        ctx.spawn(list.into_actor(self).map(|(all, busy), act, ctx| {
            act.requeueing_all = false;
            let now = Instant::now();
            for ptr in all {
                if act.is_primary(&ptr) {
                    act.queue.add(ptr, now);
                }
            }
            act.pump(ctx);
            drop(busy); // after the pump took its unit: never idle in between
        }));
    }

    /// Starts reconciles while there is ready work, room under the
    /// concurrency, and a pool permit.
    fn pump(&mut self, ctx: &mut Context<Self>) {
        self.pump_at(Instant::now(), ctx);
    }

    /// [`pump`](Self::pump) with the time already read (one clock read per
    /// turn: it shows in a profile of many short reconciles).
    fn pump_at(&mut self, now: Instant, ctx: &mut Context<Self>) {
        if self.standby || self.failed {
            self.refresh();
            return;
        }
        while self.work.len() < self.concurrency && self.queue.has_ready(now) {
            let Some(permit) = self.pool.try_acquire() else {
                self.wait_for_permit(ctx);
                break;
            };
            self.start_one(permit, now);
        }
        self.arm_timer(ctx);
        self.refresh();
    }

    fn wait_for_permit(&mut self, ctx: &mut Context<Self>) {
        if self.waiting_for_permit {
            return;
        }
        self.waiting_for_permit = true;
        ctx.spawn(self.pool.clone().acquire().into_actor(self).map(|permit, act, ctx| {
            act.waiting_for_permit = false;
            if let Some(permit) = permit
                && act.work.len() < act.concurrency
                && act.queue.has_ready(Instant::now())
            {
                act.start_one(permit, Instant::now());
            }
            act.pump(ctx);
        }));
    }

    fn start_one(&mut self, permit: Permit, now: Instant) {
        let Some(Taken { key: ptr, waited, failures }) = self.queue.take(now) else {
            return;
        };
        self.queue_counters.time_in_queue.observe(waited);
        let reason = if failures > 0 { "retry after failure" } else { "queued" };
        let own_only = !self.own_triggered.is_empty() && self.own_triggered.remove(&ptr);
        self.echoes.start(own_only, &self.counters, &self.name, &ptr);
        let span = reconcile_span(&self.name, &ptr, reason);
        outcome::started(&self.counters, &mut self.in_flight, now, Some(waited));
        let controller = self.controller.clone();
        let cx = ReconcileContext::new(self.reach.clone(), self.rules.clone(), true);
        self.work.push(Box::pin(async move {
            let _permit = permit;
            let ended = {
                let mut reconcile = std::pin::pin!(
                    run_caught(async {
                        let outcome = controller.reconcile(&cx, &ptr).await?;
                        Ok(with_requeue(outcome, cx.take_requeue()))
                    })
                    .instrument(span)
                );
                let ended = reconcile.as_mut().await;
                // Recorded on the span the reconcile ran in (no second handle
                // kept: the future stays small enough for the allocator's
                // per-thread cache of small blocks).
                let result = ended.label(|outcome| match outcome {
                    Outcome::Done => "success",
                    Outcome::RequeueAfter(_) => "requeue",
                });
                record_result(reconcile.span(), cx.name(), &ptr, result);
                ended
            };
            (ptr, ended, now)
        }));
        if !self.driving
            && let Some(waker) = &self.waker
        {
            // Started by a handler or a timer: `Drive` polls it on its next turn.
            waker.wake_by_ref();
        }
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
    fn finished(&mut self, (ptr, ended, started): Finished, now: Instant, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        let took = outcome::finished(&self.counters, &mut self.in_flight, started, now);
        self.queue_counters.latency.observe(took);
        ended.account(&self.counters, Some(&ptr));
        let completion = match ended {
            Ended::Succeeded(Outcome::Done) => Completion::Success,
            Ended::Succeeded(Outcome::RequeueAfter(d)) => {
                self.counters.requeued(Some(d));
                if !d.is_zero() {
                    Counters::bump(&self.counters.work_queue.retries);
                }
                Completion::RequeueAfter(d)
            }
            Ended::Terminal(e) => {
                tracing::error!(
                    controller = %self.name,
                    "object.ref" = %ptr,
                    "queue controller {}: {ptr}: {e}; not retried",
                    self.name
                );
                Completion::Terminal
            }
            Ended::Denied(e) => {
                self.fail(&ptr, &e);
                Completion::Terminal
            }
            Ended::Failed(e) => {
                tracing::warn!(
                    controller = %self.name,
                    "object.ref" = %ptr,
                    "queue controller {}: {ptr}: reconcile failed: {e}",
                    self.name
                );
                Completion::Failure
            }
            Ended::Panicked(panic) => {
                tracing::warn!(
                    controller = %self.name,
                    "object.ref" = %ptr,
                    "queue controller {}: {ptr}: reconcile panicked: {panic}",
                    self.name
                );
                Completion::Failure
            }
        };
        if let Some(delay) = self.queue.done(&ptr, completion, now) {
            Counters::bump(&self.counters.retries);
            Counters::bump(&self.counters.work_queue.retries);
            self.queue_counters.retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("queue controller {}: {ptr}: retry in {delay:?}", self.name);
        }
        if self.queue.is_drained() {
            self.finish_stop(ctx);
            return;
        }
        self.pump_at(now, ctx);
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
    fn refresh(&mut self) {
        let stats = self.queue.stats();
        let depth = stats.ready + stats.delayed + stats.backing_off;
        self.queue_counters.depth.store(depth as u64, Ordering::Relaxed);
        self.queue_counters.processing.store(self.work.len() as u64, Ordering::Relaxed);
        self.counters.work_queue.depth.store(stats.ready as u64, Ordering::Relaxed);
        self.counters.work_queue.adds.store(self.queue.adds(), Ordering::Relaxed);
        self.counters.set_status(if self.failed {
            ControllerStatus::Failed
        } else if self.standby {
            ControllerStatus::Standby
        } else if stats.backing_off > 0 {
            ControllerStatus::BackingOff
        } else {
            ControllerStatus::Running
        });
        // A standby's queued keys are not pending work: `settled()` passes them.
        let pending = !self.work.is_empty()
            || (!self.standby
                && !self.failed
                && (stats.ready > 0 || stats.backing_off > 0 || self.waiting_for_permit));
        if pending && self.busy.is_none() {
            self.busy = Some(self.env.state.activity().guard());
        } else if !pending {
            self.busy = None;
        }
    }

    /// A reconcile of `ptr` was refused an access the declarations do not
    /// allow: a bug in the program that no retry fixes, for every key alike.
    /// The controller stops reconciling (its queued keys stay, not counted
    /// as pending work) and reports itself failed.
    fn fail(&mut self, ptr: &Pointer, error: &super::ReconcileError) {
        if self.failed {
            return;
        }
        self.failed = true;
        self.counters.set_status(ControllerStatus::Failed);
        let error = format!("{ptr}: {error}");
        tracing::error!(
            controller = %self.name,
            "object.ref" = %ptr,
            "queue controller {}: reconcile of {error}; a bug in the program: not retried, \
             the controller stops",
            self.name
        );
        self.env
            .supervisor
            .do_send(HostReport::GaveUp { controller: self.name.to_string(), error });
    }

    fn finish_stop(&mut self, ctx: &mut Context<Self>) {
        self.counters.set_status(ControllerStatus::Stopped);
        self.busy = None;
        wind_down(&self.env, &mut self.subscriptions, &mut self.stop_waiters);
        ctx.stop();
    }
}

impl<Q: QController> Actor for QueueHost<Q> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Every kind bootstraps: each existing primary resource is queued, and
        // each existing mapped or destroy-ready resource is mapped (so a
        // primary whose mapped resource outlived it, say an output left
        // behind, is found at start).
        let env = self.env.clone();
        let recipient: Recipient<WatchBatch> = ctx.address().recipient();
        let primary: Vec<Kind> =
            watched_kinds(&self.inputs_of(InputKind::Primary).cloned().collect::<Vec<_>>());
        self.bootstrapping =
            watched_kinds(&self.inputs_of(InputKind::DestroyReady).cloned().collect::<Vec<_>>());
        let mapped: Vec<Kind> = watched_kinds(
            &self
                .rules
                .inputs()
                .iter()
                .filter(|i| matches!(i.dependency, InputKind::Mapped | InputKind::DestroyReady))
                .cloned()
                .collect::<Vec<_>>(),
        );
        let name = self.name.clone();
        let subscribe = async move {
            let mut subs = HashMap::new();
            for kind in primary.into_iter().chain(mapped) {
                if subs.contains_key(&kind) {
                    continue;
                }
                let sink = WatchSink {
                    sink: Sink::Batch(recipient.clone()),
                    activity: Some(env.state.activity().clone()),
                };
                let options = WatchOptions { bootstrap: true, ..WatchOptions::default() };
                let target = WatchTarget::Kind { kind: kind.clone(), query: LabelQuery::all() };
                match env.state.watch_sink(target, &options, sink).await {
                    Ok(id) => {
                        subs.insert(kind, id);
                    }
                    Err(e) => tracing::error!(
                        controller = %name,
                        "queue controller {name}: cannot watch {kind}: {e}"
                    ),
                }
            }
            subs
        };
        ctx.spawn(Drive);
        ctx.wait(subscribe.into_actor(self).map(|subs, act, ctx| {
            act.subscriptions = subs;
            act.pump(ctx);
        }));
    }
}

/// Drives a host's reconciles (spawned at start, it ends with the host's
/// last handle): one item of the actor's context for all of them, rather
/// than one boxed, spawned item each.
struct Drive;

impl<Q: QController> ActorFuture<QueueHost<Q>> for Drive {
    type Output = ();

    fn poll(
        self: Pin<&mut Self>,
        act: &mut QueueHost<Q>,
        ctx: &mut Context<QueueHost<Q>>,
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

impl<Q: QController> Handler<WatchEvent> for QueueHost<Q> {
    type Result = ();

    fn handle(&mut self, msg: WatchEvent, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        let now = Instant::now();
        if self.on_event(msg.event(), now, ctx) {
            self.pump_at(now, ctx);
        }
    }
}

impl<Q: QController> Handler<WatchBatch> for QueueHost<Q> {
    type Result = ();

    fn handle(&mut self, batch: WatchBatch, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        let now = Instant::now();
        let mut changed = false;
        for msg in batch.events() {
            changed |= self.on_event(msg.event(), now, ctx);
        }
        // Their delivery slots return before the reconciles start.
        drop(batch);
        if changed {
            self.pump_at(now, ctx);
        }
    }
}

impl<Q: QController> Handler<Enqueue> for QueueHost<Q> {
    type Result = Result<(), Error>;

    fn handle(&mut self, msg: Enqueue, ctx: &mut Context<Self>) -> Self::Result {
        self.budget.spend(ctx);
        if !self.is_primary(&msg.pointer) {
            return Err(Error::InvalidInput {
                resource: msg.pointer.to_string(),
                reason: format!("not a primary input of queue controller {:?}", self.name),
            });
        }
        if !msg.after.is_zero() {
            Counters::bump(&self.counters.work_queue.retries);
        }
        self.queue.add_after(msg.pointer, msg.after, Instant::now());
        self.pump(ctx);
        Ok(())
    }
}

impl<Q: QController> Handler<Ownership> for QueueHost<Q> {
    type Result = ();

    fn handle(&mut self, Ownership(owner): Ownership, ctx: &mut Context<Self>) {
        if owner != self.standby {
            return;
        }
        self.standby = !owner;
        if owner {
            tracing::info!("queue controller {}: owns its outputs; reconciling", self.name);
        } else {
            tracing::warn!(
                controller = %self.name,
                "queue controller {}: lost its claim; standing by",
                self.name
            );
        }
        self.pump(ctx);
    }
}

impl<Q: QController> Handler<StopHost> for QueueHost<Q> {
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
