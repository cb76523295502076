//! [`Plain`]: what a [`Controller`] makes of the one [`Host`].
//!
//! A plain controller reconciles all of its inputs at once, so its queue
//! holds one fixed key, [`All`]: any number of changes collapse into at most
//! one pending reconcile, and a change that lands while a reconcile runs
//! causes exactly one more. What it adds to the queue's contract: a pending
//! reconcile waits for the message turn to end (every change already in the
//! mailbox is absorbed by it), the restart policy (a fresh instance from the
//! factory after a panic, a restart-intensity limit, a terminal error that
//! stops the controller), inputs that change at run time, and standby that
//! drops what was pending.

use std::collections::HashMap;
use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;
use tracing::Instrument;

use super::access::AccessRules;
use super::host::{
    Host, HostEnv, Hosted, SubscribeFuture, Work, destroy_ready, reconcile_span, record_result,
    resubscribe, watched_kinds,
};
use super::metrics::{ControllerStatus, Counters};
use super::outcome::{self, Ended, panic_message, run_caught};
use super::pool::{Permit, WorkerPool};
use super::{Controller, Input, InputKind, ReconcileContext};
use crate::activity::{ActivityGuard, TimerGuard};
use crate::queue::{Completion, Taken};
use crate::resource::AnyResource;
use crate::state::{Event, WatchEvent};
use crate::supervisor::{Decision, HostReport, RestartTracker};

/// The one key of a plain controller's queue: everything it reads (`*` as
/// the `object.ref` of its spans).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct All;

impl fmt::Display for All {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("*")
    }
}

/// What a plain controller's reconcile hands back.
pub(crate) enum Returned<C> {
    /// It ran: how it ended, the instance unless it panicked (a panicked
    /// instance may be half-updated: the retry gets a fresh one), and its
    /// context (new inputs, requeue).
    Reconciled { ended: Ended<()>, instance: Option<Box<C>>, cx: ReconcileContext },
    /// The factory panicked building the instance to run.
    FactoryPanicked(String),
}

/// A plain controller in its host, with what its restart policy keeps.
pub(crate) struct Plain<C, F> {
    // Boxed: actors must be `Unpin`, user types need not be.
    factory: Box<F>,
    instance: Option<Box<C>>,
    tracker: RestartTracker,
    /// Why the pending reconcile runs (`object.reason` of its span).
    reason: &'static str,
    /// Whether only the controller's own writes asked for the next
    /// reconcile (`None`: nothing asked yet, or something other than a change).
    own_only: Option<bool>,
    /// A reconcile is running.
    running: bool,
    /// A change arrived while a reconcile was running or backing off.
    dirty: bool,
    requeue: Option<(SpawnHandle, TimerGuard)>,
    /// How the last reconcile failed, for the line that says when it is retried.
    failure: Option<(String, &'static str)>,
}

/// The host of a plain controller.
pub(crate) type PlainHost<C, F> = Host<Plain<C, F>>;

/// A host whose first reconcile is already pending (`busy` is held from the
/// moment of registration, so `settled()` cannot slip past it).
pub(crate) fn plain_host<C, F>(
    instance: C,
    factory: F,
    rules: AccessRules,
    env: HostEnv,
    counters: Arc<Counters>,
    busy: ActivityGuard,
) -> PlainHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    let plain = Plain {
        factory: Box::new(factory),
        instance: Some(Box::new(instance)),
        tracker: RestartTracker::default(),
        reason: "registered",
        own_only: None,
        running: false,
        dirty: false,
        requeue: None,
        failure: None,
    };
    // Its own pool of one: the shared pool caps queue controllers only.
    let pool = WorkerPool::new(1);
    let mut host = Host::new(plain, rules, 1, env, pool, counters, Arc::default(), busy);
    host.queue.add(All, Instant::now());
    host.refresh();
    host
}

impl<C, F> PlainHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    fn wants(&self, event: &Event) -> bool {
        let Some(r) = event.resource() else {
            return false;
        };
        let p = r.pointer();
        self.rules
            .inputs()
            .iter()
            .filter(|i| i.covers(p.namespace(), p.resource_type(), p.id()))
            .any(|i| i.input_kind != InputKind::DestroyReady || destroy_ready(r))
    }

    /// Something asked for a reconcile (`own`: a change the controller made
    /// itself).
    fn trigger(&mut self, reason: &'static str, own: bool, ctx: &mut Context<Self>) {
        Counters::bump_own(&self.counters.wakeups);
        let plain = &mut self.controller;
        plain.own_only = Some(plain.own_only.unwrap_or(true) && own);
        if self.failed || self.queue.is_shutdown() {
            return;
        }
        if plain.running || self.queue.stats().backing_off > 0 {
            // A retry after a failure reads the current state anyway.
            plain.dirty = true;
        } else if self.queue.is_empty() {
            plain.reason = reason;
            self.queue.add(All, Instant::now());
            self.pump_soon(ctx);
        }
    }

    /// A requeue after `delay` (above zero: a zero one goes back to the queue
    /// at once, see `complete`).
    fn schedule_requeue(&mut self, delay: Duration, ctx: &mut Context<Self>) {
        Counters::bump(&self.counters.work_queue.retries);
        let handle = ctx.run_later(delay, |act, ctx| {
            let timer = act.controller.requeue.take();
            act.trigger("requeue requested", false, ctx);
            drop(timer); // after the trigger took its unit: never idle in between
        });
        self.controller.requeue = Some((handle, self.env.state.activity().timer()));
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

    /// After a failure the counters already hold: retry (the restart policy
    /// sets the delay), give up, or stop.
    fn failure(
        &mut self,
        error: String,
        panicked: bool,
        ctx: &mut Context<Self>,
    ) -> (Completion, Option<Duration>) {
        if self.queue.is_shutdown() {
            // Stopping: no retry.
            return (Completion::Terminal, None);
        }
        let what = if panicked { "panicked" } else { "failed" };
        match self.controller.tracker.on_failure(&self.env.policy, Instant::now(), fastrand::f64())
        {
            Decision::Retry(delay) => {
                self.controller.failure = Some((error, what));
                (Completion::Failure, Some(delay))
            }
            Decision::GiveUp => {
                self.give_up(error, &format!("{what}; restart intensity exceeded"), true, ctx);
                (Completion::Terminal, None)
            }
        }
    }

    /// Marks the controller failed for good and tells the supervisor
    /// (`exceeded`: past its restart intensity, rather than terminal).
    fn give_up(&mut self, error: String, why: &str, exceeded: bool, ctx: &mut Context<Self>) {
        tracing::error!(
            controller = %self.name,
            "controller {}: reconcile {why}: {error}; giving up",
            self.name
        );
        self.failed = true;
        self.counters.set_status(ControllerStatus::Failed);
        self.record_failed(format!("reconcile {why}: {error}"));
        if let Some((timer, _armed)) = self.controller.requeue.take() {
            ctx.cancel_future(timer);
        }
        self.env.supervisor.do_send(HostReport::GaveUp {
            controller: self.name.to_string(),
            error,
            exceeded,
        });
    }
}

impl<C, F> Hosted for Plain<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Key = All;
    type Return = Returned<C>;
    const STATUS_FROM_QUEUE: bool = false;
    const OWN_ITEM: bool = true;

    fn subscribe(
        host: &mut PlainHost<C, F>,
        ctx: &mut Context<PlainHost<C, F>>,
    ) -> SubscribeFuture {
        Box::pin(resubscribe(
            host.env.clone(),
            HashMap::new(),
            watched_kinds(host.rules.inputs()),
            ctx.address().recipient(),
            host.name.clone(),
        ))
    }

    fn start(
        host: &mut PlainHost<C, F>,
        Taken { waited, failures, .. }: Taken<All>,
        permit: Permit,
        now: Instant,
        ctx: &mut Context<PlainHost<C, F>>,
    ) -> Option<Work<Self>> {
        outcome::started(&host.counters, &mut host.in_flight, now, Some(waited));
        let plain = &mut host.controller;
        plain.running = true;
        plain.dirty = false;
        let reason = if failures > 0 { "retry after failure" } else { plain.reason };
        let own_only = plain.own_only.take() == Some(true);
        host.echoes.start(own_only, &host.counters, &host.name, &All);
        let plain = &mut host.controller;
        if let Some((timer, _armed)) = plain.requeue.take() {
            ctx.cancel_future(timer);
        }
        let mut instance = match plain.instance.take() {
            Some(i) => i,
            None => match std::panic::catch_unwind(AssertUnwindSafe(|| (plain.factory)())) {
                Ok(i) => {
                    Counters::bump(&host.counters.restarts);
                    host.record_restarted();
                    Box::new(i)
                }
                Err(panic) => {
                    let msg = format!("the factory panicked: {}", panic_message(&*panic));
                    let failed = std::future::ready((All, now, Returned::FactoryPanicked(msg)));
                    host.spawn_own(failed, ctx);
                    return None;
                }
            },
        };
        let span = reconcile_span(&host.name, &All, reason);
        let recorded = span.clone();
        let mut cx = ReconcileContext::new(host.reach.clone(), host.rules.clone(), false);
        let work = async move {
            let _permit = permit;
            let ended = run_caught(instance.reconcile(&mut cx)).await;
            let requeue = cx.requeue_requested();
            let result = ended.label(|()| if requeue { "requeue" } else { "success" });
            record_result(&recorded, cx.name(), &All, result);
            let instance = match ended {
                Ended::Panicked(_) => None,
                _ => Some(instance),
            };
            (All, now, Returned::Reconciled { ended, instance, cx })
        };
        host.spawn_own(work.instrument(span), ctx);
        None
    }

    fn complete(
        host: &mut PlainHost<C, F>,
        _: &All,
        returned: Returned<C>,
        ctx: &mut Context<PlainHost<C, F>>,
    ) -> (Completion, Option<Duration>) {
        host.controller.running = false;
        let (ended, mut cx) = match returned {
            Returned::FactoryPanicked(msg) => {
                Counters::bump(&host.counters.panics);
                host.counters.failed(&msg);
                host.warn("Panic", msg.clone(), None);
                return host.failure(msg, true, ctx);
            }
            Returned::Reconciled { ended, instance, cx } => {
                host.controller.instance = instance;
                (ended, cx)
            }
        };
        if let Some((inputs, rules)) = cx.take_new_inputs() {
            host.rules = rules;
            host.controller.dirty = true;
            host.follow_inputs(inputs, ctx);
        }
        let failure = ended.account(&host.counters, None, true).unwrap_or_default();
        match ended {
            Ended::Succeeded(()) => {
                host.controller.tracker.on_success();
                host.counters.set_status(if host.standby {
                    ControllerStatus::Standby
                } else {
                    ControllerStatus::Running
                });
                let requeue = cx.take_requeue();
                host.counters.requeued(requeue);
                match requeue {
                    // Again, at once: a ready item, as a queue controller's
                    // zero requeue is, so `settled()` waits for it. A timer
                    // would fire only at the clock's next tick (up to 1 ms
                    // idle), and `settled()` does not wait for timers. The
                    // host yields first, as that timer did: a controller that
                    // requeues itself at zero gives every other task of its
                    // arbiter a turn between two of its reconciles (the
                    // round budget alone would let 64 of them run, which for
                    // a reconcile that blocks is the arbiter frozen 64 times
                    // as long), and the changes already in its mailbox join
                    // the next reconcile.
                    Some(delay) if delay.is_zero() => {
                        host.controller.reason = "requeue requested";
                        host.budget.yield_now(ctx);
                        return (Completion::RequeueAfter(Duration::ZERO), None);
                    }
                    Some(delay) => host.schedule_requeue(delay, ctx),
                    None => {}
                }
                (Completion::Success, None)
            }
            Ended::Terminal(_) | Ended::Denied(_) => {
                let reason = if matches!(ended, Ended::Denied(_)) {
                    "AccessDenied"
                } else {
                    "TerminalError"
                };
                host.warn(reason, failure.clone(), None);
                let why = if matches!(ended, Ended::Denied(_)) {
                    "was denied an access its declarations do not allow (a bug in the program: \
                     not retried)"
                } else {
                    "returned a terminal error"
                };
                host.give_up(failure, why, false, ctx);
                (Completion::Terminal, None)
            }
            Ended::Failed(error) => {
                host.warn("ReconcileError", error.to_string(), None);
                host.failure(error.to_string(), false, ctx)
            }
            Ended::Panicked(panic) => {
                host.warn("Panic", panic.clone(), None);
                host.failure(panic, true, ctx)
            }
        }
    }

    fn completed(
        host: &mut PlainHost<C, F>,
        _: &All,
        completion: Completion,
        retry: Option<Duration>,
        now: Instant,
        ctx: &mut Context<PlainHost<C, F>>,
    ) {
        if let Some(delay) = retry {
            let (error, what) = host.controller.failure.take().unwrap_or_default();
            tracing::warn!(
                controller = %host.name,
                "controller {}: reconcile {what}: {error}; retrying in {delay:?}",
                host.name
            );
            host.counters.set_status(ControllerStatus::BackingOff);
            Counters::bump(&host.counters.retries);
            Counters::bump(&host.counters.work_queue.retries);
        }
        if host.queue.is_drained() {
            host.finish_stop(ctx);
            return;
        }
        if completion == Completion::Success && host.controller.dirty {
            host.controller.dirty = false;
            host.controller.reason = "input changed while reconciling";
            host.queue.add(All, now);
            host.pump_soon(ctx);
            return;
        }
        host.pump_at(now, ctx);
    }

    /// What was pending is dropped: winning the claim back triggers a
    /// reconcile of everything.
    fn held(host: &mut PlainHost<C, F>) {
        if host.queue.stats().ready > 0 {
            host.queue.forget(&All);
        }
    }

    fn ownership(host: &mut PlainHost<C, F>, owner: bool, ctx: &mut Context<PlainHost<C, F>>) {
        if owner {
            tracing::info!("controller {}: owns its outputs; reconciling", host.name);
            host.counters.set_status(ControllerStatus::Running);
            host.trigger("claim acquired", false, ctx);
            return;
        }
        tracing::warn!(
            controller = %host.name,
            "controller {}: lost its claim; standing by",
            host.name
        );
        host.counters.set_status(ControllerStatus::Standby);
        // A fresh instance on takeover: nothing learnt as owner carries over.
        host.controller.instance = None;
        if !host.controller.running {
            // Pending or backing off: dropped.
            host.queue.forget(&All);
            host.refresh();
        }
    }

    fn stopped(host: &mut PlainHost<C, F>) {
        if !host.failed {
            host.counters.set_status(ControllerStatus::Stopped);
        }
        host.counters.work_queue.depth.store(0, std::sync::atomic::Ordering::Relaxed);
    }
}

impl<C, F> Handler<WatchEvent> for PlainHost<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    type Result = ();

    /// A change the controller reads triggers a reconcile once the message
    /// turn is over.
    fn handle(&mut self, msg: WatchEvent, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        if self.wants(msg.event()) {
            let own = msg.event().resource().and_then(AnyResource::owner) == Some(&*self.name);
            self.trigger("input changed", own, ctx);
        }
    }
}
