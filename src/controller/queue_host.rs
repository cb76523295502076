//! [`Queued`]: what a [`QueueController`] makes of the one [`Host`].
//!
//! Change messages queue resources (primary inputs directly, mapped inputs
//! through `map_input`), as do [`QueueHandle`]s; each ready key is one
//! reconcile, up to the controller's concurrency and the shared worker
//! pool's, and its outcome goes back into the queue (success, requeue,
//! per-key backoff, terminal).
//!
//! [`QueueHandle`]: super::QueueHandle

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix::prelude::*;
use tokio::time::Instant;
use tracing::Instrument;

use super::access::AccessRules;
use super::host::{
    Host, HostEnv, Hosted, SubscribeFuture, Work, destroy_ready, reconcile_span, record_result,
    watched_kinds,
};
use super::metrics::{ControllerStatus, Counters, QueueCounters};
use super::outcome::{self, Ended, panic_message, run_caught};
use super::pool::{Permit, WorkerPool};
use super::queue::{Enqueue, Outcome, QueueController};
use super::{Input, InputKind, ReconcileContext};
use crate::Error;
use crate::activity::ActivityGuard;
use crate::queue::{Completion, Taken};
use crate::resource::{AnyResource, Kind, LabelQuery, Pointer};
use crate::shard::{ShardMask, Sharding, shard_of};
use crate::state::delivery::{Sink, WatchBatch};
use crate::state::shards::{Hold, ShardEvent, ShardFence, ShardService, WriterGuard};
use crate::state::{Event, WatchEvent};
use crate::supervisor::HostReport;

/// A reconcile's outcome with the `cx.requeue_after` it asked for: the shorter delay wins.
fn with_requeue(outcome: Outcome, requeue: Option<std::time::Duration>) -> Outcome {
    match (outcome, requeue) {
        (Outcome::RequeueAfter(d), Some(r)) => Outcome::RequeueAfter(d.min(r)),
        (Outcome::Done, Some(r)) => Outcome::RequeueAfter(r),
        (outcome, None) => outcome,
    }
}

/// The host of a queue controller.
pub(crate) type QueueHost<Q> = Host<Queued<Q>>;

/// A queue controller in its host, with what its queueing keeps.
pub(crate) struct Queued<Q> {
    controller: Rc<Q>,
    /// Builds the fresh instance that replaces one whose reconcile panicked.
    factory: Box<dyn Fn() -> Q>,
    /// A listing of every primary (for `requeues_all`) is in flight: further
    /// asks join it (its keys run after the changes that asked).
    requeueing_all: bool,
    /// The keys queued only by changes the controller made itself (empty in
    /// a controller that does not read what it writes: no cost then).
    own_triggered: crate::hashing::SeededSet<Pointer>,
    /// Destroy-ready input kinds whose bootstrap is not over: every resource
    /// of theirs is mapped until then (leftovers of an earlier run are found).
    bootstrapping: Vec<Kind>,
    /// A sharded controller's shards (`None`: unsharded, no cost).
    shards: Option<Box<Shards>>,
}

/// What a sharded queue controller's host keeps of its shards.
struct Shards {
    service: ShardService,
    count: u32,
    /// Owned shards and their fences.
    owned: HashMap<u32, ShardFence>,
    /// The same shards, as the state reads them to filter the primary
    /// watches (changes of other shards are never delivered here).
    mask: Arc<ShardMask>,
    /// The shards whose keys of the primary kinds the store keeps for this
    /// process: owned or being drained (`None`: every key is kept).
    held: Option<Arc<ShardMask>>,
    /// Shards being given up: nothing of theirs starts; `Drained` once none runs.
    draining: std::collections::HashSet<u32>,
    /// Reconciles running, by shard.
    running: HashMap<u32, usize>,
    /// Shards acquired whose keys are still to be listed and queued.
    resync: Vec<u32>,
    resyncing: bool,
}

impl Shards {
    fn shard(&self, key: &Pointer) -> u32 {
        shard_of(key, self.count).0
    }

    /// The store keeps `shard`'s keys for this process from now on.
    fn hold(&self, shard: u32) {
        if let Some(held) = &self.held {
            held.insert(shard);
            self.service.holds().changed();
        }
    }

    /// `shard` is given up: told to the service, and the store forgets its keys.
    fn give_up(&self, controller: Arc<str>, shard: u32) {
        self.unhold(shard);
        self.service.drained(controller, shard);
    }

    fn unhold(&self, shard: u32) {
        if let Some(held) = &self.held {
            held.remove(shard);
            self.service.holds().changed();
        }
    }

    fn owns(&self, key: &Pointer) -> bool {
        self.owned.contains_key(&self.shard(key))
    }
}

/// The host of queue controller `controller`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn queue_host<Q: QueueController>(
    controller: Q,
    factory: Box<dyn Fn() -> Q>,
    rules: AccessRules,
    concurrency: usize,
    env: HostEnv,
    pool: WorkerPool,
    counters: Arc<Counters>,
    queue_counters: Arc<QueueCounters>,
    busy: ActivityGuard,
) -> QueueHost<Q> {
    let queued = Queued {
        controller: Rc::new(controller),
        factory,
        requeueing_all: false,
        own_triggered: Default::default(),
        bootstrapping: Vec::new(),
        shards: None,
    };
    Host::new(queued, rules, concurrency, env, pool, counters, queue_counters, busy)
}

impl<Q: QueueController> Queued<Q> {
    /// After a panic: the instance is replaced by a fresh one from the
    /// factory (the one that panicked may hold broken state, such as a
    /// poisoned lock or a half-done update), as a plain controller's is.
    /// Reconciles of other keys still running finish on the old one. If the
    /// factory panics too, the old instance is kept: the retry runs on it.
    /// Returns whether it was replaced.
    fn renew(&mut self, counters: &Counters, name: &str) -> bool {
        match std::panic::catch_unwind(AssertUnwindSafe(|| (self.factory)())) {
            Ok(fresh) => {
                self.controller = Rc::new(fresh);
                Counters::bump(&counters.restarts);
                true
            }
            Err(panic) => {
                tracing::error!(
                    controller = %name,
                "queue controller {name}: the factory panicked building a fresh instance: {}; \
                 the retries run on the instance that panicked",
                    panic_message(&*panic)
                );
                false
            }
        }
    }
}

/// Joins a sharded controller's members once its host runs.
pub(crate) type JoinShards = Box<dyn FnOnce(Recipient<ShardEvent>)>;

impl<Q: QueueController> QueueHost<Q> {
    /// Shards this controller as `sharding` says, if its state has a shard
    /// service (etcd); what joins the members once the host started.
    pub(crate) fn sharded(&mut self, sharding: &Sharding) -> Option<JoinShards> {
        let Some(service) = self.env.state.claim_service().and_then(|c| c.shards()).cloned() else {
            tracing::warn!(
                controller = %self.name,
                "queue controller {}: sharded, but the state has no shard service (etcd); \
                 it owns every key",
                self.name
            );
            return None;
        };
        let count = sharding.shard_count();
        let member = sharding.member_or_made();
        // The store keeps only the held shards of each primary kind the
        // controller does not also map (a mapped kind is read whole).
        let held = (!sharding.keeps_every_key()).then(|| Arc::new(ShardMask::new(count)));
        if let Some(held) = &held {
            let (primary, mapped) = self.watched_inputs();
            for kind in primary.into_iter().filter(|k| !mapped.contains(k)) {
                let namespace = (kind.namespace() != crate::state::watch::ALL_NAMESPACES)
                    .then(|| kind.namespace().into());
                service.holds().add(Hold {
                    resource_type: kind.resource_type().into(),
                    namespace,
                    mask: held.clone(),
                });
            }
        }
        self.controller.shards = Some(Box::new(Shards {
            service: service.clone(),
            count,
            owned: HashMap::new(),
            mask: Arc::new(ShardMask::new(count)),
            held,
            draining: Default::default(),
            running: HashMap::new(),
            resync: Vec::new(),
            resyncing: false,
        }));
        let name = self.name.clone();
        Some(Box::new(move |host| service.join(name, count, member, host)))
    }

    /// Lists the primary kinds and queues the keys of the shards acquired
    /// since the last listing. Holds activity until they are queued.
    fn resync(&mut self, ctx: &mut Context<Self>) {
        let Some(shards) = &mut self.controller.shards else { return };
        if shards.resyncing || shards.resync.is_empty() {
            return;
        }
        shards.resyncing = true;
        let wanted: std::collections::HashSet<u32> = shards.resync.drain(..).collect();
        let busy = self.env.state.activity().guard();
        let list = self.list_primaries("resync");
        ctx.spawn(list.into_actor(self).map(move |all, act, ctx| {
            let now = Instant::now();
            if let Some(shards) = &mut act.controller.shards {
                shards.resyncing = false;
                let keep: Vec<Pointer> = all
                    .into_iter()
                    .filter(|p| {
                        let s = shards.shard(p);
                        wanted.contains(&s) && shards.owned.contains_key(&s)
                    })
                    .collect();
                for ptr in keep {
                    if act.is_primary(&ptr) {
                        act.queue.add(ptr, now);
                    }
                }
            }
            act.resync(ctx);
            act.pump(ctx);
            drop(busy);
        }));
    }

    /// Lists every primary kind (an input on every namespace across them):
    /// the addresses, in kind order. A kind that cannot be listed is logged,
    /// with `why` it was listed, and left out.
    fn list_primaries(&self, why: &'static str) -> impl Future<Output = Vec<Pointer>> + 'static {
        let kinds = watched_kinds(&self.inputs_of(InputKind::Primary).cloned().collect::<Vec<_>>());
        let state = self.env.state.clone();
        let name = self.name.clone();
        async move {
            let mut all = Vec::new();
            for kind in kinds {
                let listed = if kind.namespace() == crate::state::watch::ALL_NAMESPACES {
                    state.list_all_namespaces(kind.resource_type(), &LabelQuery::all()).await
                } else {
                    state.list(&kind, &LabelQuery::all()).await
                };
                match listed {
                    Ok(resources) => all.extend(resources.iter().map(|r| r.pointer().clone())),
                    Err(e) => {
                        tracing::warn!(controller = %name, "cannot list {kind} to {why}: {e}")
                    }
                }
            }
            all
        }
    }

    /// The kinds the primary inputs watch, and those the mapped and
    /// destroy-ready inputs watch.
    fn watched_inputs(&self) -> (Vec<Kind>, Vec<Kind>) {
        let primary =
            watched_kinds(&self.inputs_of(InputKind::Primary).cloned().collect::<Vec<_>>());
        let mapped: Vec<Input> = self
            .rules
            .inputs()
            .iter()
            .filter(|i| matches!(i.input_kind, InputKind::Mapped | InputKind::DestroyReady))
            .cloned()
            .collect();
        (primary, watched_kinds(&mapped))
    }

    fn inputs_of(&self, kind: InputKind) -> impl Iterator<Item = &Input> {
        self.rules.inputs().iter().filter(move |i| i.input_kind == kind)
    }

    fn is_primary(&self, ptr: &Pointer) -> bool {
        self.rules.covered_by(ptr, |i| i.input_kind == InputKind::Primary)
    }

    /// Whether a change of `resource` goes through `map_resource`: a mapped
    /// input always; a destroy-ready input during its bootstrap, and then
    /// once the resource is destroy-ready or destroyed.
    fn is_mapped(&self, resource: &AnyResource, destroyed: bool) -> bool {
        let ptr = resource.pointer();
        self.rules.covered_by(ptr, |i| i.input_kind == InputKind::Mapped)
            || (self.rules.covered_by(ptr, |i| i.input_kind == InputKind::DestroyReady)
                && (destroyed
                    || destroy_ready(resource)
                    || self.controller.bootstrapping.iter().any(|k| {
                        k == ptr.kind()
                            || (k.namespace() == crate::state::watch::ALL_NAMESPACES
                                && k.resource_type() == ptr.resource_type())
                    })))
    }

    /// Queues `key`, remembering whether only the controller's own writes
    /// asked for it.
    fn add(&mut self, key: Pointer, own: bool, now: Instant) {
        if let Some(shards) = &self.controller.shards
            && !shards.owns(&key)
        {
            return; // another process's shard, or one being given up
        }
        let own_triggered = &mut self.controller.own_triggered;
        if own {
            own_triggered.insert(key.clone());
        } else if !own_triggered.is_empty() {
            own_triggered.remove(&key);
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
        let controller = self.controller.controller.clone();
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
            self.controller.bootstrapping.retain(|k| k != kind);
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
    /// [`QueueController::requeues_all`]). Holds activity until they are queued.
    fn requeue_all(&mut self, ctx: &mut Context<Self>) {
        if self.controller.requeueing_all {
            return;
        }
        self.controller.requeueing_all = true;
        let busy = self.env.state.activity().guard();
        let list = self.list_primaries("requeue it");
        ctx.spawn(list.into_actor(self).map(|all, act, ctx| {
            act.controller.requeueing_all = false;
            let now = Instant::now();
            for ptr in all {
                let mine = act.controller.shards.as_ref().is_none_or(|s| s.owns(&ptr));
                if mine && act.is_primary(&ptr) {
                    act.queue.add(ptr, now);
                }
            }
            act.pump(ctx);
            drop(busy); // after the pump took its unit: never idle in between
        }));
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
        self.record_failed(format!("reconcile of {error}; a bug in the program: not retried"));
        tracing::error!(
            controller = %self.name,
            "object.ref" = %ptr,
            "queue controller {}: reconcile of {error}; a bug in the program: not retried, \
             the controller stops",
            self.name
        );
        self.env.supervisor.do_send(HostReport::GaveUp {
            controller: self.name.to_string(),
            error,
            exceeded: false,
        });
    }
}

impl<Q: QueueController> Hosted for Queued<Q> {
    type Key = Pointer;
    type Return = Ended<Outcome>;
    const STATUS_FROM_QUEUE: bool = true;
    const OWN_ITEM: bool = false;

    fn subscribe(host: &mut QueueHost<Q>, ctx: &mut Context<QueueHost<Q>>) -> SubscribeFuture {
        // Every kind bootstraps: each existing primary resource is queued, and
        // each existing mapped or destroy-ready resource is mapped (so a
        // primary whose mapped resource outlived it, say an output left
        // behind, is found at start).
        let env = host.env.clone();
        let recipient: Recipient<WatchBatch> = ctx.address().recipient();
        let (primary, mapped) = host.watched_inputs();
        host.controller.bootstrapping =
            watched_kinds(&host.inputs_of(InputKind::DestroyReady).cloned().collect::<Vec<_>>());
        // A sharded controller's primary watches carry its shards: the state
        // delivers only their changes. A kind it also maps is not filtered
        // (a change of any key may map to one of its own).
        let mask = host.controller.shards.as_ref().map(|s| s.mask.clone());
        let primary: Vec<(Kind, Option<Arc<ShardMask>>)> = primary
            .into_iter()
            .map(|k| {
                let filter = if mapped.contains(&k) { None } else { mask.clone() };
                (k, filter)
            })
            .collect();
        let name = host.name.clone();
        Box::pin(async move {
            let mut subs = HashMap::new();
            let sink = || Sink::Batch(recipient.clone());
            let kinds = primary.into_iter().chain(mapped.into_iter().map(|k| (k, None)));
            env.watch_missing(kinds, sink, true, &mut subs, &name).await;
            subs
        })
    }

    // This and the two hooks that finish a reconcile are the queue
    // controller's hot path: inlined into the host, they cost what methods
    // of the host would; as calls, the future they build is built and then
    // copied.
    #[inline(always)]
    fn start(
        host: &mut QueueHost<Q>,
        Taken { key: ptr, waited, failures }: Taken<Pointer>,
        permit: Permit,
        now: Instant,
        _: &mut Context<QueueHost<Q>>,
    ) -> Option<Work<Self>> {
        let mut writer = None;
        if let Some(shards) = &mut host.controller.shards {
            let shard = shards.shard(&ptr);
            let Some(fence) = shards.owned.get(&shard) else {
                // Its shard was given up or lost while it waited: dropped.
                host.queue.done(&ptr, crate::queue::Completion::Success, now);
                return None;
            };
            // Writes as an allocation of its own, fenced by the shard's token.
            let name: Arc<str> = Arc::from(&*host.name);
            let guard = shards.service.writers().register(&name, fence.clone());
            *shards.running.entry(shard).or_default() += 1;
            writer = Some((name, guard, (shard, fence.token)));
        }
        host.queue_counters.time_in_queue.observe(waited);
        let reason = if failures > 0 { "retry after failure" } else { "queued" };
        let own_triggered = &mut host.controller.own_triggered;
        let own_only = !own_triggered.is_empty() && own_triggered.remove(&ptr);
        host.echoes.start(own_only, &host.counters, &host.name, &ptr);
        let span = reconcile_span(&host.name, &ptr, reason);
        outcome::started(&host.counters, &mut host.in_flight, now, Some(waited));
        let controller = host.controller.controller.clone();
        let mut cx = ReconcileContext::new(host.reach.clone(), host.rules.clone(), true);
        let mut guard: Option<WriterGuard> = None;
        if let Some((name, g, shard)) = writer {
            cx = cx.writing_as(name, shard);
            guard = Some(g);
        }
        Some(Box::pin(async move {
            let _permit = permit;
            let _writer = guard;
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
            (ptr, now, ended)
        }))
    }

    #[inline(always)]
    fn complete(
        host: &mut QueueHost<Q>,
        ptr: &Pointer,
        ended: Ended<Outcome>,
        _: &mut Context<QueueHost<Q>>,
    ) -> (Completion, Option<Duration>) {
        // The failure streak (health's `failures_in_a_row`, `last_error`)
        // ends with a success only when no other key is still failing: one
        // key that succeeds says nothing of another that keeps failing.
        let failing = host.queue.failing_keys();
        let others_failing = failing > 0 && failing > usize::from(host.queue.failures(ptr) > 0);
        ended.account(&host.counters, Some(ptr), !others_failing);
        let completion = match ended {
            Ended::Succeeded(Outcome::Done) => Completion::Success,
            Ended::Succeeded(Outcome::RequeueAfter(d)) => {
                host.counters.requeued(Some(d));
                if !d.is_zero() {
                    Counters::bump(&host.counters.work_queue.retries);
                }
                Completion::RequeueAfter(d)
            }
            Ended::Terminal(e) => {
                host.warn("TerminalError", e.to_string(), Some(ptr));
                tracing::error!(
                    controller = %host.name,
                    "object.ref" = %ptr,
                    "queue controller {}: {ptr}: {e}; not retried",
                    host.name
                );
                Completion::Terminal
            }
            Ended::Denied(e) => {
                host.warn("AccessDenied", e.to_string(), Some(ptr));
                host.fail(ptr, &e);
                Completion::Terminal
            }
            Ended::Failed(e) => {
                host.warn("ReconcileError", e.to_string(), Some(ptr));
                tracing::warn!(
                    controller = %host.name,
                    "object.ref" = %ptr,
                    "queue controller {}: {ptr}: reconcile failed: {e}",
                    host.name
                );
                Completion::Failure
            }
            Ended::Panicked(panic) => {
                tracing::warn!(
                    controller = %host.name,
                    "object.ref" = %ptr,
                    "queue controller {}: {ptr}: reconcile panicked: {panic}",
                    host.name
                );
                host.warn("Panic", panic, Some(ptr));
                if host.controller.renew(&host.counters, &host.name) {
                    host.record_restarted();
                }
                Completion::Failure
            }
        };
        (completion, None)
    }

    #[inline(always)]
    fn completed(
        host: &mut QueueHost<Q>,
        ptr: &Pointer,
        _: Completion,
        retry: Option<Duration>,
        now: Instant,
        ctx: &mut Context<QueueHost<Q>>,
    ) {
        if let Some(shards) = &mut host.controller.shards {
            let shard = shards.shard(ptr);
            let running = shards.running.entry(shard).or_default();
            *running = running.saturating_sub(1);
            if *running == 0 {
                shards.running.remove(&shard);
                if shards.draining.remove(&shard) {
                    shards.give_up(host.name.clone(), shard);
                }
            }
        }
        if let Some(delay) = retry {
            Counters::bump(&host.counters.retries);
            Counters::bump(&host.counters.work_queue.retries);
            host.queue_counters.retries.fetch_add(1, Ordering::Relaxed);
            tracing::debug!("queue controller {}: {ptr}: retry in {delay:?}", host.name);
        }
        if host.queue.is_drained() {
            host.finish_stop(ctx);
            return;
        }
        host.pump_at(now, ctx);
    }

    /// Keys queue up meanwhile; they run once it may start again.
    fn held(_: &mut QueueHost<Q>) {}

    fn ownership(host: &mut QueueHost<Q>, owner: bool, ctx: &mut Context<QueueHost<Q>>) {
        if owner {
            tracing::info!("queue controller {}: owns its outputs; reconciling", host.name);
        } else {
            tracing::warn!(
                controller = %host.name,
                "queue controller {}: lost its claim; standing by",
                host.name
            );
        }
        host.pump(ctx);
    }

    fn stopped(host: &mut QueueHost<Q>) {
        host.counters.set_status(ControllerStatus::Stopped);
    }
}

impl<Q: QueueController> Handler<WatchEvent> for QueueHost<Q> {
    type Result = ();

    fn handle(&mut self, msg: WatchEvent, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        let now = Instant::now();
        if self.on_event(msg.event(), now, ctx) {
            self.pump_at(now, ctx);
        }
    }
}

impl<Q: QueueController> Handler<WatchBatch> for QueueHost<Q> {
    type Result = ();

    fn handle(&mut self, batch: WatchBatch, ctx: &mut Context<Self>) {
        self.budget.spend(ctx);
        let now = Instant::now();
        let mut changed = false;
        for msg in batch.events() {
            changed |= self.on_event(msg.event(), now, ctx);
        }
        // Their delivery slots return before the reconciles start; the
        // batch's units of activity stay until the pump took its own. With
        // the host on another arbiter than the caller of `settled()`, a gap
        // between the two let `settled()` see the runtime idle with the
        // events' work not yet queued (the spread per-object chain smoke
        // pass once settled with none of its 300 sentences).
        let busy = self.env.state.activity().guard();
        drop(batch);
        if changed {
            self.pump_at(now, ctx);
        }
        drop(busy);
    }
}

impl<Q: QueueController> Handler<ShardEvent> for QueueHost<Q> {
    type Result = ();

    fn handle(&mut self, event: ShardEvent, ctx: &mut Context<Self>) {
        let Some(shards) = &mut self.controller.shards else { return };
        match event {
            ShardEvent::Acquired { shard, key, token } => {
                tracing::debug!("queue controller {}: owns shard {shard} ({token})", self.name);
                shards.draining.remove(&shard);
                shards.owned.insert(shard, ShardFence { key, token });
                shards.mask.insert(shard);
                shards.hold(shard);
                shards.resync.push(shard);
                self.resync(ctx);
            }
            ShardEvent::Release { shard } => {
                // Owned or not (a stray key of this process's lease), the
                // shard goes once none of its reconciles runs.
                shards.owned.remove(&shard);
                shards.mask.remove(shard);
                if shards.running.contains_key(&shard) {
                    shards.draining.insert(shard);
                } else {
                    shards.give_up(self.name.clone(), shard);
                }
            }
            ShardEvent::Lost { shard } => {
                tracing::warn!("queue controller {}: lost shard {shard}", self.name);
                shards.owned.remove(&shard);
                shards.mask.remove(shard);
                shards.draining.remove(&shard);
                shards.unhold(shard);
            }
        }
    }
}

impl<Q: QueueController> Handler<Enqueue> for QueueHost<Q> {
    type Result = Result<(), Error>;

    fn handle(&mut self, msg: Enqueue, ctx: &mut Context<Self>) -> Self::Result {
        self.budget.spend(ctx);
        if !self.is_primary(&msg.pointer) {
            return Err(Error::InvalidInput {
                resource: msg.pointer.to_string(),
                reason: format!("not a primary input of queue controller {:?}", self.name),
            });
        }
        if let Some(shards) = &self.controller.shards
            && !shards.owns(&msg.pointer)
        {
            return Ok(()); // another process's shard: its owner reconciles it
        }
        if !msg.after.is_zero() {
            Counters::bump(&self.counters.work_queue.retries);
        }
        self.queue.add_after(msg.pointer, msg.after, Instant::now());
        self.pump(ctx);
        Ok(())
    }
}
