//! [`ControllerHost`]: the actor that runs one [`Controller`].
//!
//! It subscribes to the controller's input kinds, collapses any number of
//! change messages into at most one pending reconcile, runs reconciles one at
//! a time with panics caught, applies the restart policy on failure (a fresh
//! instance from the factory after a panic), and keeps its mailbox and
//! subscriptions across all of that.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix::prelude::*;
use futures::channel::oneshot;
use tracing::Instrument;

use super::access::AccessRules;
use super::metrics::{ControllerStatus, Counters, Running};
use super::outcome::{self, Echoes, Ended, run_caught};
use super::{Controller, Input, InputKind, Reach, ReconcileContext};
use crate::activity::{ActivityGuard, TimerGuard};
use crate::execution::RoundBudget;
use crate::resource::{AnyResource, Kind, Phase};
use crate::state::claims::Ownership;
use crate::state::{Event, Sink, State, WatchEvent, WatchId, WatchOptions, WatchSink, WatchTarget};
use crate::supervisor::{Decision, HostReport, RestartPolicy, RestartTracker};

/// The text of a panic payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_owned()
    }
}

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
}

impl HostEnv {
    /// A tracked watch on `kind` delivering to `recipient`.
    pub(crate) async fn watch_kind(
        &self,
        kind: Kind,
        recipient: Recipient<WatchEvent>,
    ) -> Result<WatchId, crate::Error> {
        let sink = WatchSink {
            sink: Sink::Actor(recipient),
            activity: Some(self.state.activity().clone()),
        };
        let target = WatchTarget::Kind { kind, query: crate::resource::LabelQuery::all() };
        self.state.watch_sink(target, &WatchOptions::default(), sink).await
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
    for kind in wanted {
        if current.contains_key(&kind) {
            continue;
        }
        match env.watch_kind(kind.clone(), recipient.clone()).await {
            Ok(id) => {
                current.insert(kind, id);
            }
            Err(e) => tracing::error!(
                controller = %owner,
                "controller {owner}: cannot watch {kind}: {e}"
            ),
        }
    }
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Idle,
    Pending,
    Running,
    BackingOff,
    Failed,
    Stopped,
}

#[derive(Message)]
#[rtype(result = "()")]
struct RunReconcile;

/// Stop the controller once any running reconcile ends; answers when stopped.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct StopHost;

/// The actor that runs one controller.
pub(crate) struct ControllerHost<C, F> {
    name: Arc<str>,
    // Boxed: actors must be `Unpin`, user types need not be.
    factory: Box<F>,
    instance: Option<Box<C>>,
    rules: Arc<AccessRules>,
    env: HostEnv,
    counters: Arc<Counters>,
    /// What each reconcile context reaches (state handle, counters), shared.
    reach: Arc<Reach>,
    tracker: RestartTracker,
    subscriptions: HashMap<Kind, WatchId>,
    stage: Stage,
    /// A change arrived while a reconcile was running or backing off.
    dirty: bool,
    /// Held while pending, running or backing off: `settled()` waits for it.
    busy: Option<ActivityGuard>,
    requeue: Option<(SpawnHandle, TimerGuard)>,
    stop_waiters: Vec<oneshot::Sender<()>>,
    /// Another process holds the claim on the exclusive outputs: do not reconcile.
    standby: bool,
    /// When the pending reconcile became ready (for the queue-duration histogram).
    ready_since: Option<tokio::time::Instant>,
    /// When the running reconcile started.
    started: Option<tokio::time::Instant>,
    /// The running reconcile, for the metrics.
    in_flight: Running,
    /// Why the pending reconcile runs (`object.reason` of its span).
    reason: &'static str,
    budget: RoundBudget,
    /// Whether only the controller's own writes asked for the next
    /// reconcile (`None`: nothing asked yet, or something other than a change).
    own_only: Option<bool>,
    /// Reconciles in a row caused only by its own writes.
    echoes: Echoes,
}

impl<C, F> ControllerHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    /// A host whose first reconcile is already pending (`busy` is held from
    /// the moment of registration, so `settled()` cannot slip past it).
    pub(crate) fn new(
        instance: C,
        factory: F,
        rules: AccessRules,
        env: HostEnv,
        counters: Arc<Counters>,
        busy: ActivityGuard,
    ) -> Self {
        counters.set_max_concurrent(1);
        let mut host = ControllerHost {
            name: rules.controller().clone(),
            factory: Box::new(factory),
            instance: Some(Box::new(instance)),
            rules: Arc::new(rules),
            reach: Arc::new(Reach { state: env.state.clone(), counters: counters.clone() }),
            env,
            counters,
            tracker: RestartTracker::default(),
            subscriptions: HashMap::new(),
            stage: Stage::Pending,
            dirty: false,
            busy: Some(busy),
            requeue: None,
            stop_waiters: Vec::new(),
            standby: false,
            ready_since: None,
            started: None,
            in_flight: Running::default(),
            reason: "registered",
            budget: RoundBudget::default(),
            own_only: None,
            echoes: Echoes::default(),
        };
        host.became_ready("registered");
        host
    }

    /// The pending reconcile became ready to run (client-go: an add).
    fn became_ready(&mut self, reason: &'static str) {
        self.stage = Stage::Pending;
        self.reason = reason;
        self.ready_since = Some(tokio::time::Instant::now());
        Counters::bump(&self.counters.work_queue.adds);
        self.counters.work_queue.depth.store(1, Ordering::Relaxed);
    }

    /// The pending reconcile left the queue without running.
    fn dropped_pending(&mut self) {
        self.ready_since = None;
        self.counters.work_queue.depth.store(0, Ordering::Relaxed);
    }

    /// The pending reconcile starts running.
    fn starting(&mut self) {
        let now = tokio::time::Instant::now();
        let waited = self.ready_since.take().map(|since| now.saturating_duration_since(since));
        self.counters.work_queue.depth.store(0, Ordering::Relaxed);
        outcome::started(&self.counters, &mut self.in_flight, now, waited);
        self.started = Some(now);
    }

    /// The running reconcile ended, however it ended.
    fn ended(&mut self) {
        if let Some(started) = self.started.take() {
            outcome::finished(
                &self.counters,
                &mut self.in_flight,
                started,
                tokio::time::Instant::now(),
            );
        } else {
            self.counters.active_workers.store(0, Ordering::Relaxed);
        }
    }

    /// Starts standing by: no reconcile until [`Ownership`] says it owns its outputs.
    pub(crate) fn standing_by(mut self) -> Self {
        self.standby = true;
        self.counters.set_status(ControllerStatus::Standby);
        self
    }

    fn wants(&self, event: &Event) -> bool {
        let Some(r) = event.resource() else {
            return false;
        };
        let p = r.pointer();
        self.rules
            .inputs()
            .iter()
            .filter(|i| i.covers(p.namespace(), p.resource_type(), p.id()))
            .any(|i| i.dependency != InputKind::DestroyReady || destroy_ready(r))
    }

    /// Something asked for a reconcile (`own`: a change the controller made
    /// itself).
    fn trigger(&mut self, reason: &'static str, own: bool, ctx: &mut Context<Self>) {
        Counters::bump_own(&self.counters.wakeups);
        self.own_only = Some(self.own_only.unwrap_or(true) && own);
        match self.stage {
            Stage::Idle => {
                self.became_ready(reason);
                self.busy = Some(self.env.state.activity().guard());
                ctx.notify(RunReconcile);
            }
            Stage::Running | Stage::BackingOff => self.dirty = true,
            Stage::Pending | Stage::Failed | Stage::Stopped => {}
        }
    }

    fn run(&mut self, ctx: &mut Context<Self>) {
        if self.stage != Stage::Pending {
            return;
        }
        if self.standby {
            // Ownership(true) triggers a reconcile of everything.
            self.stage = Stage::Idle;
            self.busy = None;
            self.dropped_pending();
            return;
        }
        self.stage = Stage::Running;
        self.starting();
        self.dirty = false;
        let own_only = self.own_only.take() == Some(true);
        self.echoes.start(own_only, &self.counters, &self.name, &"*");
        if let Some((timer, _armed)) = self.requeue.take() {
            ctx.cancel_future(timer);
        }
        let instance = match self.instance.take() {
            Some(i) => Some(i),
            None => match std::panic::catch_unwind(AssertUnwindSafe(|| (self.factory)())) {
                Ok(i) => {
                    Counters::bump(&self.counters.restarts);
                    Some(Box::new(i))
                }
                Err(panic) => {
                    let msg = format!("the factory panicked: {}", panic_message(&*panic));
                    self.ended();
                    Counters::bump(&self.counters.panics);
                    self.counters.failed(&msg);
                    self.failed(msg, true, ctx);
                    return;
                }
            },
        };
        let Some(mut instance) = instance else {
            return;
        };
        let span = reconcile_span(&self.name, &"*", self.reason);
        let recorded = span.clone();
        let mut cx = ReconcileContext::new(self.reach.clone(), self.rules.clone(), false);
        let work = async move {
            let ended = run_caught(instance.reconcile(&mut cx)).await;
            let requeue = cx.requeue_requested();
            let result = ended.label(|()| if requeue { "requeue" } else { "success" });
            record_result(&recorded, cx.name(), &"*", result);
            match ended {
                // A panicked instance may be half-updated: it is dropped and
                // replaced from the factory on the retry.
                Ended::Panicked(_) => (None, cx, ended),
                _ => (Some(instance), cx, ended),
            }
        };
        ctx.spawn(
            work.instrument(span)
                .into_actor(self)
                .map(|(instance, cx, outcome), act, ctx| act.finished(instance, cx, outcome, ctx)),
        );
    }

    fn finished(
        &mut self,
        instance: Option<Box<C>>,
        mut cx: ReconcileContext,
        ended: Ended<()>,
        ctx: &mut Context<Self>,
    ) {
        self.budget.spend(ctx);
        self.instance = instance;
        self.ended();
        if let Some((inputs, rules)) = cx.take_new_inputs() {
            self.rules = rules;
            self.dirty = true;
            self.follow_inputs(inputs, ctx);
        }
        let failure = ended.account(&self.counters, None).unwrap_or_default();
        match ended {
            Ended::Succeeded(()) => {
                self.tracker.on_success();
                self.counters.set_status(if self.standby {
                    ControllerStatus::Standby
                } else {
                    ControllerStatus::Running
                });
                let requeue = cx.take_requeue();
                self.counters.requeued(requeue);
                if let Some(delay) = requeue {
                    self.schedule_requeue(delay, ctx);
                }
                if !self.stop_waiters.is_empty() {
                    self.finish_stop(ctx);
                } else if self.dirty {
                    self.dirty = false;
                    self.became_ready("input changed while reconciling");
                    ctx.notify(RunReconcile);
                } else {
                    self.stage = Stage::Idle;
                    self.busy = None;
                }
            }
            Ended::Terminal(_) | Ended::Denied(_) => {
                let why = if matches!(ended, Ended::Denied(_)) {
                    "was denied an access its declarations do not allow (a bug in the program: \
                     not retried)"
                } else {
                    "returned a terminal error"
                };
                self.give_up(failure, why, ctx);
                if !self.stop_waiters.is_empty() {
                    self.finish_stop(ctx);
                }
            }
            Ended::Failed(error) => self.failed(error.to_string(), false, ctx),
            Ended::Panicked(panic) => self.failed(panic, true, ctx),
        }
    }

    /// After a failure the counters already hold: retry, give up or stop.
    fn failed(&mut self, error: String, panicked: bool, ctx: &mut Context<Self>) {
        if !self.stop_waiters.is_empty() {
            self.finish_stop(ctx);
            return;
        }
        let what = if panicked { "panicked" } else { "failed" };
        match self.tracker.on_failure(
            &self.env.policy,
            tokio::time::Instant::now(),
            fastrand::f64(),
        ) {
            Decision::Retry(delay) => {
                tracing::warn!(
                    controller = %self.name,
                    "controller {}: reconcile {what}: {error}; retrying in {delay:?}",
                    self.name
                );
                self.stage = Stage::BackingOff;
                self.counters.set_status(ControllerStatus::BackingOff);
                Counters::bump(&self.counters.retries);
                Counters::bump(&self.counters.work_queue.retries);
                ctx.run_later(delay, |act, ctx| {
                    if act.stage == Stage::BackingOff {
                        act.became_ready("retry after failure");
                        act.run(ctx);
                    }
                });
            }
            Decision::GiveUp => {
                self.give_up(error, &format!("{what}; restart intensity exceeded"), ctx);
            }
        }
    }

    /// Marks the controller failed for good and tells the supervisor.
    fn give_up(&mut self, error: String, why: &str, ctx: &mut Context<Self>) {
        tracing::error!(
            controller = %self.name,
            "controller {}: reconcile {why}: {error}; giving up",
            self.name
        );
        self.stage = Stage::Failed;
        self.counters.set_status(ControllerStatus::Failed);
        self.busy = None;
        if let Some((timer, _armed)) = self.requeue.take() {
            ctx.cancel_future(timer);
        }
        self.env
            .supervisor
            .do_send(HostReport::GaveUp { controller: self.name.to_string(), error });
    }

    fn schedule_requeue(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        if !delay.is_zero() {
            Counters::bump(&self.counters.work_queue.retries);
        }
        let handle = ctx.run_later(delay, |act, ctx| {
            let timer = act.requeue.take();
            act.trigger("requeue requested", false, ctx);
            drop(timer); // after the trigger took its unit: never idle in between
        });
        self.requeue = Some((handle, self.env.state.activity().timer()));
    }

    fn follow_inputs(&mut self, inputs: Vec<Input>, ctx: &mut Context<Self>) {
        self.env.supervisor.do_send(HostReport::InputsChanged {
            controller: self.name.to_string(),
            inputs: inputs.clone(),
        });
        let busy = self.env.state.activity().guard();
        let fut = resubscribe(
            self.env.clone(),
            std::mem::take(&mut self.subscriptions),
            watched_kinds(&inputs),
            ctx.address().recipient(),
            self.name.clone(),
        );
        ctx.wait(fut.into_actor(self).map(move |subs, act, _| {
            let _busy = busy;
            act.subscriptions = subs;
        }));
    }

    fn finish_stop(&mut self, ctx: &mut Context<Self>) {
        if self.stage != Stage::Failed {
            self.counters.set_status(ControllerStatus::Stopped);
        }
        self.stage = Stage::Stopped;
        self.busy = None;
        self.dropped_pending();
        wind_down(&self.env, &mut self.subscriptions, &mut self.stop_waiters);
        ctx.stop();
    }
}

impl<C, F> Actor for ControllerHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Subscribe first, then run the initial reconcile: a change that lands
        // in between is seen by that reconcile or arrives as an event.
        let fut = resubscribe(
            self.env.clone(),
            HashMap::new(),
            watched_kinds(self.rules.inputs()),
            ctx.address().recipient(),
            self.name.clone(),
        );
        ctx.wait(fut.into_actor(self).map(|subs, act, ctx| {
            act.subscriptions = subs;
            act.run(ctx);
        }));
    }
}

impl<C, F> Handler<WatchEvent> for ControllerHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Result = ();

    fn handle(&mut self, msg: WatchEvent, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        if self.wants(msg.event()) {
            let own = msg.event().resource().and_then(AnyResource::owner) == Some(&*self.name);
            self.trigger("input changed", own, ctx);
        }
    }
}

impl<C, F> Handler<RunReconcile> for ControllerHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Result = ();

    fn handle(&mut self, _: RunReconcile, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        self.run(ctx);
    }
}

impl<C, F> Handler<Ownership> for ControllerHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Result = ();

    fn handle(&mut self, Ownership(owner): Ownership, ctx: &mut Context<Self>) {
        if owner != self.standby || self.stage == Stage::Stopped {
            return;
        }
        self.standby = !owner;
        if owner {
            tracing::info!("controller {}: owns its outputs; reconciling", self.name);
            self.counters.set_status(ControllerStatus::Running);
            self.trigger("claim acquired", false, ctx);
            return;
        }
        tracing::warn!(
            controller = %self.name,
            "controller {}: lost its claim; standing by",
            self.name
        );
        self.counters.set_status(ControllerStatus::Standby);
        // A fresh instance on takeover: nothing learnt as owner carries over.
        self.instance = None;
        if matches!(self.stage, Stage::Pending | Stage::BackingOff) {
            self.stage = Stage::Idle;
            self.busy = None;
            self.dropped_pending();
        }
    }
}

impl<C, F> Handler<StopHost> for ControllerHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: StopHost, ctx: &mut Context<Self>) -> Self::Result {
        let (tx, rx) = oneshot::channel();
        self.stop_waiters.push(tx);
        if self.stage != Stage::Running {
            self.finish_stop(ctx);
        }
        Box::pin(async move {
            let _ = rx.await;
        })
    }
}
