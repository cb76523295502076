//! The [`Supervisor`] actor: registration, claims, restart policy, graph, metrics.

use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use actix::prelude::*;
use futures::future::join_all;
use indexmap::IndexMap;
use tokio::sync::watch;

use super::dependency::{DependencyDb, RegistrationError};
use super::graph::DependencyGraph;
use super::restart::{OnExceeded, RestartPolicy};
use crate::controller::host::{ControllerHost, HostEnv, StopHost, panic_message};
use crate::controller::metrics::{ControllerMetrics, ControllerSet, Counters, QueueCounters};
use crate::controller::pool::WorkerPool;
use crate::controller::queue_host::QueueHost;
use crate::controller::{
    AccessRules, Controller, Input, InputKind, Output, OutputKind, QController, QSettings,
    QueueHandle,
};
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

/// Reports from controller hosts (fire and forget).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub(crate) enum HostReport {
    /// The controller exceeded its restart intensity.
    GaveUp {
        /// The controller.
        controller: String,
        /// Its last error.
        error: String,
    },
    /// The controller replaced its inputs.
    InputsChanged {
        /// The controller.
        controller: String,
        /// The new inputs.
        inputs: Vec<Input>,
    },
}

/// What a registration produced.
pub(crate) enum Registered {
    /// A controller.
    Controller,
    /// A queue controller, with its handle.
    Queue(QueueHandle),
}

/// Starts a controller of some type inside the supervisor (type-erased).
pub(crate) trait Registration: Send {
    fn start(
        self: Box<Self>,
        sup: &mut Supervisor,
        ctx: &mut Context<Supervisor>,
    ) -> Result<Registered, RegistrationError>;
}

/// Register a controller.
#[derive(Message)]
#[rtype(result = "Result<Registered, RegistrationError>")]
pub(crate) struct Register(pub(crate) Box<dyn Registration>);

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

struct Entry {
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
    controllers: IndexMap<String, Entry>,
    state: State,
    policy: RestartPolicy,
    pool: WorkerPool,
    stopped: watch::Sender<Option<StopReason>>,
    /// Every controller's counters, shared with the metrics collector.
    live: ControllerSet,
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
    ) -> Self {
        Supervisor {
            db: DependencyDb::default(),
            controllers: IndexMap::new(),
            state,
            policy,
            pool: WorkerPool::new(pool_size),
            stopped,
            live,
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
        }
    }

    /// Records a started host.
    pub(crate) fn adopt(
        &mut self,
        name: String,
        counters: Arc<Counters>,
        queue: Option<Arc<QueueCounters>>,
        stop: Recipient<StopHost>,
    ) {
        self.live.add(&name, counters.clone(), queue.clone());
        self.controllers.insert(name, Entry { counters, queue, stop });
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
    type Result = Result<Registered, RegistrationError>;

    fn handle(
        &mut self,
        Register(registration): Register,
        ctx: &mut Context<Self>,
    ) -> Self::Result {
        registration.start(self, ctx)
    }
}

impl Handler<HostReport> for Supervisor {
    type Result = ();

    fn handle(&mut self, report: HostReport, ctx: &mut Context<Self>) {
        match report {
            HostReport::GaveUp { controller, error } => match self.policy.on_exceeded {
                OnExceeded::MarkFailed => {
                    tracing::error!(
                        controller = %controller,
                        "controller {controller} is marked failed: {error}"
                    );
                }
                OnExceeded::StopRuntime => {
                    let stopping =
                        self.stop_all(StopReason::ControllerFailed { controller, error }, ctx);
                    actix::spawn(stopping);
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
    fn start(
        self: Box<Self>,
        sup: &mut Supervisor,
        ctx: &mut Context<Supervisor>,
    ) -> Result<Registered, RegistrationError> {
        let (instance, (name, inputs, outputs)) =
            describe(&self.factory, |c: &C| (c.name().to_owned(), c.inputs(), c.outputs()))?;
        sup.claim(&name, &inputs, &outputs, false)?;
        let env = sup.host_env(ctx);
        let counters = Arc::new(Counters::default());
        let rules = AccessRules::new(Arc::from(name.as_str()), inputs, &outputs);
        let busy = env.state.activity().guard();
        let exclusive = claimed_types(&env.state, &outputs);
        let state = env.state.clone();
        let mut host =
            ControllerHost::new(instance, self.factory, rules, env, counters.clone(), busy);
        if !exclusive.is_empty() {
            host = host.standing_by();
        }
        let host = host.start();
        claim(&state, &name, exclusive, host.clone().recipient());
        tracing::debug!("controller {name} registered");
        sup.adopt(name, counters, None, host.recipient());
        Ok(Registered::Controller)
    }
}

/// The exclusive output types a controller must claim across processes:
/// none unless the state is shared (etcd).
fn claimed_types(state: &State, outputs: &[Output]) -> Vec<String> {
    if !state.is_shared() {
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
        state.claim_outputs(Arc::from(name), types, host);
    }
}

/// The rules a queue controller's settings follow beyond those of any controller.
pub(crate) fn check_queue_settings(
    name: &str,
    settings: &QSettings,
) -> Result<(), RegistrationError> {
    let invalid = |reason: &str| RegistrationError::Invalid {
        controller: name.to_owned(),
        reason: reason.to_owned(),
    };
    if settings.concurrency == 0 {
        return Err(invalid("a queue controller's concurrency must be at least 1"));
    }
    if !settings.inputs.iter().any(|i| i.kind == InputKind::Primary) {
        return Err(invalid("a queue controller needs at least one primary input"));
    }
    Ok(())
}

/// The registration of a [`QController`] built by factory `F`.
pub(crate) struct QueueRegistration<Q, F> {
    factory: F,
    _controller: PhantomData<fn() -> Q>,
}

impl<Q, F> QueueRegistration<Q, F> {
    pub(crate) fn new(factory: F) -> Self {
        QueueRegistration { factory, _controller: PhantomData }
    }
}

impl<Q, F> Registration for QueueRegistration<Q, F>
where
    Q: QController,
    F: Fn() -> Q + Send + 'static,
{
    fn start(
        self: Box<Self>,
        sup: &mut Supervisor,
        ctx: &mut Context<Supervisor>,
    ) -> Result<Registered, RegistrationError> {
        let (instance, (name, settings)) =
            describe(&self.factory, |q: &Q| (q.name().to_owned(), q.settings()))?;
        check_queue_settings(&name, &settings)?;
        sup.claim(&name, &settings.inputs, &settings.outputs, true)?;
        let env = sup.host_env(ctx);
        let counters = Arc::new(Counters::default());
        let queue_counters = Arc::new(QueueCounters::default());
        let rules = AccessRules::new(Arc::from(name.as_str()), settings.inputs, &settings.outputs);
        let busy = env.state.activity().guard();
        let exclusive = claimed_types(&env.state, &settings.outputs);
        let state = env.state.clone();
        let mut host = QueueHost::new(
            instance,
            rules,
            settings.concurrency,
            env,
            sup.pool.clone(),
            counters.clone(),
            queue_counters.clone(),
            busy,
        );
        if !exclusive.is_empty() {
            host = host.standing_by();
        }
        let host = host.start();
        claim(&state, &name, exclusive, host.clone().recipient());
        tracing::debug!("queue controller {name} registered");
        let handle = QueueHandle::new(Arc::from(name.as_str()), host.clone().recipient());
        sup.adopt(name, counters, Some(queue_counters), host.recipient());
        Ok(Registered::Queue(handle))
    }
}
