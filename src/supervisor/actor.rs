//! The [`Supervisor`] actor: registration, claims, restart policy, graph, metrics.

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::prelude::*;
use actix_rt::ArbiterHandle;
use futures::channel::oneshot;
use futures::future::join_all;
use indexmap::IndexMap;
use tokio::sync::watch;

use super::dependency::{DependencyDb, RegistrationError};
use super::graph::DependencyGraph;
use super::report::HostReport;
use super::restart::{OnExceeded, RestartPolicy};
use crate::activity::ActivityGuard;
use crate::controller::host::{HostEnv, StopHost, panic_message};
use crate::controller::metrics::{ControllerMetrics, ControllerSet, Counters, QueueCounters};
use crate::controller::plain::plain_host;
use crate::controller::pool::WorkerPool;
use crate::controller::queue::Enqueue;
use crate::controller::queue_host::queue_host;
use crate::controller::{
    AccessRules, Controller, Input, InputKind, Output, OutputKind, QueueController, QueueHandle,
    QueueSettings,
};
use crate::events::EventSink;
use crate::execution::{Arbiters, Placement};
use crate::state::State;
use crate::state::claims::Ownership;

/// Why a runtime stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// [`Runtime::stop`](crate::Runtime::stop) was called.
    Requested,
    /// A controller exceeded its restart intensity under
    /// [`OnExceeded::StopRuntime`].
    ControllerFailed {
        /// The controller.
        controller: String,
        /// Its last error.
        error: String,
    },
}

/// What a registration produced.
pub(crate) enum Registered {
    /// A controller.
    Controller,
    /// A queue controller, with its handle.
    Queue(QueueHandle),
}

/// A controller of some type to register (type-erased). It is sent to the
/// arbiter that will run it, where [`prepare`](Registration::prepare) builds
/// the first instance and reads its declarations; the supervisor checks the
/// claims; the host then starts there.
pub(crate) trait Registration: Send {
    /// Builds the first instance (panics caught) and reads its declarations.
    fn prepare(self: Box<Self>) -> Result<(Declared, Box<dyn Prepared>), RegistrationError>;

    /// Shards a queue controller (others ignore it).
    fn shard(&mut self, sharding: crate::shard::Sharding) {
        let _ = sharding;
    }
}

/// A built instance waiting for its claims to be admitted, on the arbiter
/// that will run it (it need not be `Send`).
pub(crate) trait Prepared {
    /// Starts the host actor on the current arbiter.
    fn start(self: Box<Self>, launch: Launch) -> Started;
}

/// What a controller declared at registration.
pub(crate) struct Declared {
    name: String,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    /// A queue controller's concurrency.
    concurrency: Option<usize>,
    /// A sharded queue controller: its exclusive outputs are not claimed
    /// across processes (the shard fences take their place).
    sharded: bool,
}

/// What the supervisor gives a host it admitted (crosses to its arbiter).
pub(crate) struct Launch {
    env: HostEnv,
    rules: AccessRules,
    counters: Arc<Counters>,
    queue_counters: Option<Arc<QueueCounters>>,
    pool: WorkerPool,
    busy: ActivityGuard,
    /// Start standing by until the claims on exclusive outputs are won.
    standby: bool,
}

/// The addresses of a started host (cross back to the supervisor).
pub(crate) struct Started {
    stop: Recipient<StopHost>,
    ownership: Recipient<Ownership>,
    queue: Option<Recipient<Enqueue>>,
}

/// A registration in progress.
type Step = ResponseActFuture<Supervisor, Result<Registered, RegistrationError>>;

/// What the supervisor keeps of an admission until the host started.
struct Admitted {
    counters: Arc<Counters>,
    queue_counters: Option<Arc<QueueCounters>>,
    exclusive: Vec<String>,
}

/// Register a controller, placed as asked.
#[derive(Message)]
#[rtype(result = "Result<Registered, RegistrationError>")]
pub(crate) struct Register(pub(crate) Box<dyn Registration>, pub(crate) Placement);

/// Snapshot every controller's counters.
#[derive(Message)]
#[rtype(result = "Vec<ControllerMetrics>")]
pub(crate) struct GetMetrics;

/// The dependency graph.
#[derive(Message)]
#[rtype(result = "DependencyGraph")]
pub(crate) struct GetGraph;

/// Stop every controller (waiting for running reconciles to end).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct StopAll(pub(crate) StopReason);

/// A running controller as the supervisor keeps it: its counters and how to stop it.
struct RunningController {
    counters: Arc<Counters>,
    queue: Option<Arc<QueueCounters>>,
    stop: Recipient<StopHost>,
}

/// The actor that owns registration, the dependency database and the restart
/// policy.
///
/// Each controller runs in its own host actor; the supervisor validates its
/// claims before starting it, hands it the restart policy, hears when it gives
/// up, and stops it with the runtime.
pub struct Supervisor {
    db: DependencyDb,
    controllers: IndexMap<String, RunningController>,
    state: State,
    policy: RestartPolicy,
    pool: WorkerPool,
    stopped: watch::Sender<Option<StopReason>>,
    /// Every controller's counters, shared with the metrics collector.
    live: ControllerSet,
    /// The arbiters controllers run on (none: all on this one).
    arbiters: Arbiters,
    /// Where the hosts' Events go.
    events: EventSink,
}

impl std::fmt::Debug for Supervisor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Supervisor")
            .field("controllers", &self.controllers.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl Supervisor {
    pub(crate) fn new(
        state: State,
        policy: RestartPolicy,
        pool_size: usize,
        stopped: watch::Sender<Option<StopReason>>,
        live: ControllerSet,
        arbiters: Arbiters,
        events: EventSink,
    ) -> Self {
        Supervisor {
            db: DependencyDb::default(),
            controllers: IndexMap::new(),
            state,
            policy,
            pool: WorkerPool::new(pool_size),
            stopped,
            live,
            arbiters,
            events,
        }
    }

    fn is_stopped(&self) -> bool {
        self.stopped.borrow().is_some()
    }

    /// Validates and records the claims of a new controller.
    pub(crate) fn claim(
        &mut self,
        name: &str,
        inputs: &[Input],
        outputs: &[Output],
        queue: bool,
    ) -> Result<(), RegistrationError> {
        if self.is_stopped() {
            return Err(RegistrationError::Stopped { controller: name.to_owned() });
        }
        self.db.register(name, inputs, outputs, queue)
    }

    /// What a host started by this supervisor gets.
    pub(crate) fn host_env(&self, ctx: &Context<Self>) -> HostEnv {
        HostEnv {
            state: self.state.clone(),
            supervisor: ctx.address().recipient(),
            policy: self.policy,
            events: self.events.clone(),
        }
    }

    /// Checks and records the claims of a prepared controller, and what its
    /// host gets.
    fn admit(
        &mut self,
        declared: &Declared,
        ctx: &Context<Self>,
    ) -> Result<(Launch, Admitted), RegistrationError> {
        let queue = declared.concurrency.is_some();
        self.claim(&declared.name, &declared.inputs, &declared.outputs, queue)?;
        let env = self.host_env(ctx);
        let counters = Arc::new(Counters::default());
        let queue_counters = queue.then(|| Arc::new(QueueCounters::default()));
        let rules = AccessRules::new(
            Arc::from(declared.name.as_str()),
            declared.inputs.clone(),
            &declared.outputs,
        );
        let busy = env.state.activity().guard();
        let exclusive = if declared.sharded {
            Vec::new()
        } else {
            claimed_types(&env.state, &declared.outputs)
        };
        let launch = Launch {
            env,
            rules,
            counters: counters.clone(),
            queue_counters: queue_counters.clone(),
            pool: self.pool.clone(),
            busy,
            standby: !exclusive.is_empty(),
        };
        Ok((launch, Admitted { counters, queue_counters, exclusive }))
    }

    /// Records a started host.
    fn adopt(&mut self, name: String, admitted: Admitted, started: Started) -> Registered {
        claim(&self.state, &name, admitted.exclusive, started.ownership);
        let registered = match started.queue {
            Some(queue) => Registered::Queue(QueueHandle::new(Arc::from(name.as_str()), queue)),
            None => Registered::Controller,
        };
        tracing::debug!(controller = %name, "controller {name} registered");
        self.live.add(&name, admitted.counters.clone(), admitted.queue_counters.clone());
        let entry = RunningController {
            counters: admitted.counters,
            queue: admitted.queue_counters,
            stop: started.stop,
        };
        self.controllers.insert(name, entry);
        registered
    }

    /// Registers on this arbiter, at once.
    fn register_here(
        &mut self,
        registration: Box<dyn Registration>,
        ctx: &Context<Self>,
    ) -> Result<Registered, RegistrationError> {
        let (declared, prepared) = registration.prepare()?;
        let (launch, admitted) = self.admit(&declared, ctx)?;
        let started = prepared.start(launch);
        Ok(self.adopt(declared.name, admitted, started))
    }

    /// Registers on `arbiter`: the instance is built and its host started
    /// there; the claims are checked here in between. The supervisor handles
    /// nothing else meanwhile (a stop or another registration waits).
    fn register_on(
        &mut self,
        registration: Box<dyn Registration>,
        arbiter: &ArbiterHandle,
    ) -> Step {
        let stopped = || RegistrationError::Stopped { controller: "<unknown>".into() };
        let (declared_tx, declared_rx) = oneshot::channel();
        let (launch_tx, launch_rx) = oneshot::channel::<Launch>();
        let (started_tx, started_rx) = oneshot::channel();
        // The closure is sent; the instance it builds stays on that arbiter.
        let sent = arbiter.spawn_fn(move || {
            let (declared, prepared) = match registration.prepare() {
                Ok(prepared) => prepared,
                Err(e) => {
                    let _ = declared_tx.send(Err(e));
                    return;
                }
            };
            let _ = declared_tx.send(Ok(declared));
            actix::spawn(async move {
                // No launch: the claims were refused, and the instance is dropped here.
                if let Ok(launch) = launch_rx.await {
                    let _ = started_tx.send(prepared.start(launch));
                }
            });
        });
        if !sent {
            return Box::pin(fut::ready(Err(stopped())));
        }
        Box::pin(declared_rx.into_actor(self).then(move |declared, act, ctx| {
            let admitted = match declared {
                Ok(Ok(declared)) => act.admit(&declared, ctx).map(|a| (declared, a)),
                Ok(Err(e)) => Err(e),
                Err(_) => Err(stopped()),
            };
            let (declared, admitted) = match admitted {
                Ok((declared, (launch, admitted))) => {
                    let _ = launch_tx.send(launch);
                    (declared, admitted)
                }
                Err(e) => return Box::pin(fut::ready(Err(e))) as Step,
            };
            Box::pin(started_rx.into_actor(act).map(move |started, act, _| {
                match started {
                    Ok(started) => Ok(act.adopt(declared.name, admitted, started)),
                    Err(_) => {
                        // The arbiter went away after the claims were recorded.
                        act.db.unregister(&declared.name);
                        Err(stopped())
                    }
                }
            })) as Step
        }))
    }

    fn stop_all(
        &mut self,
        reason: StopReason,
        ctx: &mut Context<Self>,
    ) -> impl Future<Output = ()> + 'static {
        if !self.is_stopped() {
            tracing::info!("runtime stopping: {reason:?}");
            self.stopped.send_replace(Some(reason));
        }
        let stops: Vec<_> = self.controllers.values().map(|e| e.stop.send(StopHost)).collect();
        let _ = ctx;
        async move {
            let _ = join_all(stops).await;
        }
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;
}

impl Handler<Register> for Supervisor {
    type Result = AtomicResponse<Self, Result<Registered, RegistrationError>>;

    fn handle(
        &mut self,
        Register(registration, placement): Register,
        ctx: &mut Context<Self>,
    ) -> Self::Result {
        let registering = match self.arbiters.place(placement) {
            None => Box::pin(fut::ready(self.register_here(registration, ctx))),
            Some(arbiter) => self.register_on(registration, &arbiter),
        };
        AtomicResponse::new(registering)
    }
}

impl Handler<HostReport> for Supervisor {
    type Result = ();

    fn handle(&mut self, report: HostReport, ctx: &mut Context<Self>) {
        match report {
            HostReport::GaveUp { controller, error, exceeded } => match self.policy.on_exceeded {
                OnExceeded::StopRuntime if exceeded => {
                    let stopping =
                        self.stop_all(StopReason::ControllerFailed { controller, error }, ctx);
                    actix::spawn(stopping);
                }
                _ => {
                    // The host logged why, at ERROR: one failure, one line.
                    tracing::debug!(
                        controller = %controller,
                        "controller {controller} is marked failed: {error}"
                    );
                }
            },
            HostReport::InputsChanged { controller, inputs } => {
                if let Err(e) = self.db.update_inputs(&controller, inputs) {
                    tracing::error!(
                        controller = %controller,
                        "controller {controller}: inputs not recorded: {e}"
                    );
                }
            }
        }
    }
}

impl Handler<GetMetrics> for Supervisor {
    type Result = MessageResult<GetMetrics>;

    fn handle(&mut self, _: GetMetrics, _: &mut Context<Self>) -> Self::Result {
        MessageResult(
            self.controllers
                .iter()
                .map(|(name, e)| e.counters.snapshot(name, e.queue.as_deref()))
                .collect(),
        )
    }
}

impl Handler<GetGraph> for Supervisor {
    type Result = MessageResult<GetGraph>;

    fn handle(&mut self, _: GetGraph, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.db.graph())
    }
}

impl Handler<StopAll> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, StopAll(reason): StopAll, ctx: &mut Context<Self>) -> Self::Result {
        Box::pin(self.stop_all(reason, ctx))
    }
}

/// The registration of a [`Controller`] built by factory `F`.
pub(crate) struct ControllerRegistration<C, F> {
    factory: F,
    _controller: PhantomData<fn() -> C>,
}

impl<C, F> ControllerRegistration<C, F> {
    pub(crate) fn new(factory: F) -> Self {
        ControllerRegistration { factory, _controller: PhantomData }
    }
}

/// Builds the first instance and reads its declarations, panics caught.
pub(crate) fn describe<T, D, F: Fn() -> T>(
    factory: &F,
    declare: impl FnOnce(&T) -> D,
) -> Result<(T, D), RegistrationError> {
    let panicked =
        |controller: &str, p: Box<dyn std::any::Any + Send>| RegistrationError::Panicked {
            controller: controller.to_owned(),
            message: panic_message(&*p),
        };
    let instance = std::panic::catch_unwind(AssertUnwindSafe(factory))
        .map_err(|p| panicked("<factory>", p))?;
    let declared = std::panic::catch_unwind(AssertUnwindSafe(|| declare(&instance)))
        .map_err(|p| panicked("<declarations>", p))?;
    Ok((instance, declared))
}

impl<C, F> Registration for ControllerRegistration<C, F>
where
    C: Controller,
    F: Fn() -> C + Send + 'static,
{
    fn prepare(self: Box<Self>) -> Result<(Declared, Box<dyn Prepared>), RegistrationError> {
        let (instance, (name, inputs, outputs)) =
            describe(&self.factory, |c: &C| (c.name().to_owned(), c.inputs(), c.outputs()))?;
        let declared = Declared { name, inputs, outputs, concurrency: None, sharded: false };
        Ok((declared, Box::new(PreparedController { instance, factory: self.factory })))
    }
}

struct PreparedController<C, F> {
    instance: C,
    factory: F,
}

impl<C, F> Prepared for PreparedController<C, F>
where
    C: Controller,
    F: Fn() -> C + 'static,
{
    fn start(self: Box<Self>, launch: Launch) -> Started {
        let mut host = plain_host(
            self.instance,
            self.factory,
            launch.rules,
            launch.env,
            launch.counters,
            launch.busy,
        );
        if launch.standby {
            host = host.standing_by();
        }
        let host = host.start();
        Started { stop: host.clone().recipient(), ownership: host.recipient(), queue: None }
    }
}

/// The exclusive output types a controller must claim across processes:
/// none unless a store of the state is shared (it has a [`ClaimService`](crate::state::ClaimService)).
fn claimed_types(state: &State, outputs: &[Output]) -> Vec<String> {
    if state.claim_service().is_none() {
        return Vec::new();
    }
    outputs
        .iter()
        .filter(|o| o.kind == OutputKind::Exclusive)
        .map(|o| o.resource_type.to_string())
        .collect()
}

/// Claims `types` for a controller that starts standing by.
fn claim(state: &State, name: &str, types: Vec<String>, host: Recipient<Ownership>) {
    if !types.is_empty() {
        tracing::info!("controller {name}: claiming {} across processes", types.join(", "));
        if let Some(claims) = state.claim_service() {
            claims.claim(Arc::from(name), types, host);
        }
    }
}

/// The rules a queue controller's settings follow beyond those of any controller.
pub(crate) fn check_queue_settings(
    name: &str,
    settings: &QueueSettings,
) -> Result<(), RegistrationError> {
    let invalid = |reason: &str| RegistrationError::Invalid {
        controller: name.to_owned(),
        reason: reason.to_owned(),
    };
    if settings.concurrency == 0 {
        return Err(invalid("a queue controller's concurrency must be at least 1"));
    }
    if !settings.inputs.iter().any(|i| i.input_kind == InputKind::Primary) {
        return Err(invalid("a queue controller needs at least one primary input"));
    }
    Ok(())
}

/// The registration of a [`QueueController`] built by factory `F`.
pub(crate) struct QueueRegistration<Q, F> {
    factory: F,
    sharding: Option<crate::shard::Sharding>,
    _controller: PhantomData<fn() -> Q>,
}

impl<Q, F> QueueRegistration<Q, F> {
    pub(crate) fn new(factory: F) -> Self {
        QueueRegistration { factory, sharding: None, _controller: PhantomData }
    }
}

impl<Q, F> Registration for QueueRegistration<Q, F>
where
    Q: QueueController,
    F: Fn() -> Q + Send + 'static,
{
    fn prepare(self: Box<Self>) -> Result<(Declared, Box<dyn Prepared>), RegistrationError> {
        let (instance, (name, settings)) =
            describe(&self.factory, |q: &Q| (q.name().to_owned(), q.settings()))?;
        check_queue_settings(&name, &settings)?;
        let declared = Declared {
            name,
            inputs: settings.inputs,
            outputs: settings.outputs,
            concurrency: Some(settings.concurrency),
            sharded: self.sharding.is_some(),
        };
        let concurrency = settings.concurrency;
        let factory = self.factory;
        let sharding = self.sharding;
        Ok((declared, Box::new(PreparedQueue { instance, factory, concurrency, sharding })))
    }

    fn shard(&mut self, sharding: crate::shard::Sharding) {
        self.sharding = Some(sharding);
    }
}

struct PreparedQueue<Q, F> {
    instance: Q,
    factory: F,
    concurrency: usize,
    sharding: Option<crate::shard::Sharding>,
}

impl<Q, F> Prepared for PreparedQueue<Q, F>
where
    Q: QueueController,
    F: Fn() -> Q + 'static,
{
    fn start(self: Box<Self>, launch: Launch) -> Started {
        let Launch { env, rules, counters, queue_counters, pool, busy, standby } = launch;
        let queue_counters = queue_counters.unwrap_or_default();
        let mut host = queue_host(
            self.instance,
            Box::new(self.factory),
            rules,
            self.concurrency,
            env,
            pool,
            counters,
            queue_counters,
            busy,
        );
        if standby {
            host = host.standing_by();
        }
        let service = match &self.sharding {
            Some(sharding) => host.sharded(sharding),
            None => None,
        };
        let host = host.start();
        if let Some(join) = service {
            join(host.clone().recipient());
        }
        Started {
            stop: host.clone().recipient(),
            ownership: host.clone().recipient(),
            queue: Some(host.recipient()),
        }
    }
}
