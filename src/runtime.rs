//! [`Runtime`] and [`RuntimeBuilder`]: start the actors, register controllers,
//! settle, stop.

use std::fmt;
use std::sync::Arc;

use actix::prelude::*;
use tokio::sync::watch;

use crate::activity::Activity;
use crate::controller::metrics::ControllerSet;
use crate::controller::{ControllerMetrics, default_pool_size};
use crate::events::actor::EventWriter;
use crate::events::{EventSettings, ToWriter};
use crate::execution::{ArbiterInit, Arbiters, Placement, default_arbiters};
use crate::registration::{Factory, Registering};
use crate::state::actor::StateActor;
use crate::state::{State, StateBuilder};
use crate::supervisor::{
    Backoff, DependencyGraph, GetGraph, GetMetrics, Intensity, OnExceeded, RestartPolicy, StopAll,
    StopReason, Supervisor,
};

/// Configures and starts a [`Runtime`].
///
/// ```
/// use std::time::Duration;
/// use cosi_runtime::Runtime;
/// use cosi_runtime::supervisor::{Backoff, Intensity, OnExceeded};
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::builder()
///     .backoff(Backoff { initial: Duration::from_millis(10), ..Backoff::default() })
///     .restart_intensity(Intensity { max_restarts: 5, within: Duration::from_secs(10) }, OnExceeded::MarkFailed)
///     .start();
/// runtime.settled().await;
/// # });
/// ```
#[derive(Clone)]
pub struct RuntimeBuilder {
    policy: RestartPolicy,
    pool_size: usize,
    arbiters: usize,
    placement: Placement,
    /// Wraps the state handle controllers get (the test kit records through it).
    intercept: Option<Arc<dyn Fn(State) -> State + Send + Sync>>,
    /// Runs first on each controller arbiter's thread.
    arbiter_init: Option<ArbiterInit>,
    patience: std::time::Duration,
    /// How Events are recorded (`None`: off).
    events: Option<EventSettings>,
    /// Claims exclusive outputs across processes, instead of the state's own service.
    claims: Option<crate::state::ClaimService>,
}

impl fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RuntimeBuilder")
            .field("policy", &self.policy)
            .field("pool_size", &self.pool_size)
            .field("arbiters", &self.arbiters)
            .field("placement", &self.placement)
            .field("events", &self.events)
            .field("claims", &self.claims.is_some())
            .finish_non_exhaustive()
    }
}

impl Default for RuntimeBuilder {
    fn default() -> Self {
        RuntimeBuilder {
            policy: RestartPolicy::default(),
            pool_size: default_pool_size(),
            arbiters: default_arbiters(),
            placement: Placement::default(),
            intercept: None,
            arbiter_init: None,
            patience: SETTLED_PATIENCE,
            events: Some(EventSettings::default()),
            claims: None,
        }
    }
}

impl RuntimeBuilder {
    /// The whole restart policy.
    #[must_use]
    pub fn restart_policy(mut self, policy: RestartPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// The backoff between retries of a failed reconcile.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.policy.backoff = backoff;
        self
    }

    /// A restart-intensity limit, and what happens past it.
    #[must_use]
    pub fn restart_intensity(mut self, intensity: Intensity, on_exceeded: OnExceeded) -> Self {
        self.policy.intensity = Some(intensity);
        self.policy.on_exceeded = on_exceeded;
        self
    }

    /// How many queue-controller reconciles may run at once across all queue
    /// controllers (default: [`default_pool_size`]). Each queue controller's
    /// own concurrency applies too. The restart policy's backoff is also the
    /// queue controllers' per-key backoff.
    #[must_use]
    pub fn worker_pool(mut self, size: usize) -> Self {
        self.pool_size = size.max(1);
        self
    }

    /// How many arbiters (threads) may run controllers besides the home
    /// arbiter, the one that starts the runtime and runs the state
    /// (default: [`default_arbiters`], one per core). Each is started when
    /// the first controller is placed on it. With `1`, everything runs on the
    /// home arbiter, whatever the placement: the single-arbiter mode.
    /// See [`execution`](crate::execution) for what runs where, and for
    /// why n counts the controller arbiters only (n + 1 threads for n ≥ 2;
    /// docs/ARCHITECTURE.md, 'Execution').
    #[must_use]
    pub fn arbiters(mut self, n: usize) -> Self {
        self.arbiters = n.max(1);
        self
    }

    /// Where [`Runtime::register`] places a
    /// controller (default: [`Placement::Home`], with the state: light
    /// controllers pay no thread hop per state call there, see
    /// [`execution`](crate::execution)).
    /// `runtime.register(factory).on(placement)` places one explicitly.
    #[must_use]
    pub fn placement(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// How long [`Runtime::settled`] waits with no progress (no reconcile
    /// ended) before it logs, once, at WARN, what is still busy (default
    /// [`SETTLED_PATIENCE`]). It goes on waiting after that.
    #[must_use]
    pub fn settled_patience(mut self, patience: std::time::Duration) -> Self {
        self.patience = patience;
        self
    }

    /// Records Events with `settings` (on by default, with
    /// [`EventSettings::default`]): reconcile failures, panics, restarts,
    /// failed controllers, and what controllers record themselves, as
    /// Kubernetes Events in the state (see [`events`](crate::events)).
    ///
    /// ```
    /// use cosi_runtime::Runtime;
    /// use cosi_runtime::events::EventSettings;
    /// # actix::System::new().block_on(async {
    /// let runtime = Runtime::builder()
    ///     .events(EventSettings { namespace: "cosi-system".into(), ..EventSettings::default() })
    ///     .start();
    /// # runtime.settled().await;
    /// # });
    /// ```
    #[must_use]
    pub fn events(mut self, settings: EventSettings) -> Self {
        self.events = Some(settings);
        self
    }

    /// Records no Events: [`Recorder`](crate::events::Recorder)s do nothing.
    #[must_use]
    pub fn without_events(mut self) -> Self {
        self.events = None;
        self
    }

    pub(crate) fn intercept_controllers(
        mut self,
        intercept: Arc<dyn Fn(State) -> State + Send + Sync>,
    ) -> Self {
        self.intercept = Some(intercept);
        self
    }

    /// Runs `init` first on the thread of each controller arbiter, before
    /// any controller starts there (for the test kit).
    pub(crate) fn on_arbiter_start(mut self, init: ArbiterInit) -> Self {
        self.arbiter_init = Some(init);
        self
    }

    /// Claims the exclusive outputs of every controller through `claims`,
    /// across the replicas of this program: a controller reconciles only
    /// while its replica holds the claim, and stands by otherwise. For an
    /// operator on a local state (memory, redb) whose outputs go to a
    /// Kubernetes cluster: [`LeaseClaims`](crate::cluster::LeaseClaims)
    /// (feature `kubernetes`) claims on `coordination.k8s.io` Leases.
    ///
    /// A shared etcd state has a service of its own, which fences the
    /// store's writes; this one replaces it (and that fencing with it).
    ///
    /// ```no_run
    /// # #[cfg(feature = "kubernetes")]
    /// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
    /// use cosi_runtime::Runtime;
    /// use cosi_runtime::cluster::{LeaseClaims, LeaseSettings};
    ///
    /// let client = kube::Client::try_default().await?;
    /// let claims = LeaseClaims::start(client, LeaseSettings::new("operators"))?;
    /// let runtime = Runtime::builder().claims(claims.service()).start();
    /// # let _ = runtime;
    /// # Ok(()) }
    /// ```
    pub fn claims(mut self, claims: crate::state::ClaimService) -> Self {
        self.claims = Some(claims);
        self
    }

    /// Starts the runtime over an in-memory state, on the current arbiter.
    ///
    /// # Panics
    /// Outside a running actix `System` (under `#[tokio::main]` or
    /// `#[tokio::test]`, say), with a message that says what to write
    /// instead: `#[actix::main]`, `#[actix::test]`.
    #[track_caller]
    pub fn start(self) -> Runtime {
        let activity = Activity::new();
        let state = State::start_actor(StateActor::new(), activity.clone(), None);
        self.start_over(state, activity)
    }

    /// Opens the state `state` describes (durable namespaces, history; see
    /// [`StateBuilder`]) and starts the runtime over it, on the current arbiter.
    ///
    /// The runtime owns the state it opens: [`Runtime::stop`] closes it, so
    /// the same file can be opened again at once, in this process or another.
    ///
    /// ```
    /// use cosi_runtime::{Runtime, State};
    /// # actix::System::new().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("state.redb");
    /// let runtime = Runtime::builder().open(State::builder().durable(&path, ["config"])).await?;
    /// runtime.stop().await; // stops the controllers and closes the state file
    /// let again = Runtime::builder().open(State::builder().durable(&path, ["config"])).await?;
    /// again.stop().await;
    /// # Ok::<(), cosi_runtime::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) when a backend cannot be opened.
    pub async fn open(self, mut state: StateBuilder) -> Result<Runtime, crate::Error> {
        let activity = Activity::new();
        state.activity = Some(activity.clone());
        let state = state.open().await?;
        let mut runtime = self.start_over(state, activity);
        runtime.owns_state = true;
        Ok(runtime)
    }

    /// Opens a state that keeps `namespaces` durable in the file at `path`
    /// and the rest in memory, and starts the runtime over it: the one-line
    /// form of [`open`](RuntimeBuilder::open).
    ///
    /// # Errors
    /// [`Error::Storage`](crate::Error::Storage) when the file cannot be used.
    #[cfg(feature = "redb")]
    pub async fn open_durable(
        self,
        path: impl Into<std::path::PathBuf>,
        namespaces: impl Into<crate::state::Namespaces>,
    ) -> Result<Runtime, crate::Error> {
        self.open(State::builder().durable(path, namespaces)).await
    }

    fn start_over(self, state: State, activity: Activity) -> Runtime {
        let state = match &self.claims {
            Some(claims) => state.with_claim_service(claims.clone()),
            None => state,
        };
        let (stopped_tx, stopped) = watch::channel(None);
        let controller_state = match &self.intercept {
            Some(intercept) => intercept(state.clone()),
            None => state.clone(),
        };
        let live = ControllerSet::default();
        let arbiters = Arbiters::new(self.arbiters, self.arbiter_init.clone());
        // The writer writes through the runtime's own handle, never the
        // intercepted one: Events are not the controllers' writes.
        let events = self.events.map(|settings| EventWriter::start(state.clone(), settings));
        let supervisor = Supervisor::new(
            controller_state,
            self.policy,
            self.pool_size,
            stopped_tx,
            live.clone(),
            arbiters,
            events.clone().map(Addr::recipient),
        )
        .start();
        Runtime {
            state,
            supervisor,
            activity,
            stopped,
            live,
            placement: self.placement,
            owns_state: false,
            patience: self.patience,
            events,
        }
    }
}

/// A running set of actors: the state, the finalizer coordinator, the
/// supervisor and one actor per registered controller.
///
/// Cheap to clone; every clone drives the same runtime. The actors live in the
/// actix `System` they were started in: dropping every `Runtime` handle does
/// not stop the controllers (they go on reacting to the state). Call
/// [`stop`](Runtime::stop) to end them, or stop the `System`.
///
/// ```
/// use cosi_runtime::Runtime;
/// use cosi_runtime::controller::{Controller, Input, Output, ReconcileContext, ReconcileResult};
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Int(i64);
/// # impl Spec for Int { const TYPE: &'static str = "Ints.test.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Double(i64);
/// # impl Spec for Double { const TYPE: &'static str = "Doubles.test.cosi.dev"; }
///
/// struct Doubler;
/// impl Controller for Doubler {
///     fn name(&self) -> &str { "Doubler" }
///     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Int>("default")] }
///     fn outputs(&self) -> Vec<Output> { vec![Output::exclusive::<Double>()] }
///     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
///         for int in cx.list_typed::<Int>("default", &LabelQuery::all()).await? {
///             let n = int.spec().0;
///             cx.modify(&Pointer::typed::<Double>("default", int.id()), move |d: &mut Resource<Double>| d.spec_mut().0 = 2 * n).await?;
///         }
///         Ok(())
///     }
/// }
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::start();
/// runtime.register(|| Doubler).await?;
/// runtime.state().client().create(Resource::new("default", "x", Int(21))).await?;
/// runtime.settled().await;
/// let double = runtime.state().get_typed::<Double>(&Pointer::typed::<Double>("default", "x")).await?;
/// assert_eq!(double.spec().0, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct Runtime {
    state: State,
    supervisor: Addr<Supervisor>,
    activity: Activity,
    stopped: watch::Receiver<Option<StopReason>>,
    /// Every controller's live counters (for `register_metrics`, and the
    /// progress `settled` watches).
    live: ControllerSet,
    placement: Placement,
    /// The runtime opened its state ([`RuntimeBuilder::open`]): `stop` closes it.
    owns_state: bool,
    /// How long [`settled`](Runtime::settled) waits without progress before
    /// it says what is still busy.
    patience: std::time::Duration,
    /// The Event writer (`None`: Events are off).
    events: Option<Addr<EventWriter>>,
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime")
            .field("busy", &self.activity.busy())
            .field("stopped", &*self.stopped.borrow())
            .finish()
    }
}

impl Runtime {
    /// A builder, to configure the restart policy.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// Starts a runtime with the default policy over an in-memory state.
    ///
    /// # Panics
    /// Outside a running actix `System`, saying what to write instead (see
    /// [`RuntimeBuilder::start`]).
    #[track_caller]
    pub fn start() -> Runtime {
        RuntimeBuilder::default().start()
    }

    /// The state, for user reads and writes (act as owner `None`).
    pub fn state(&self) -> State {
        self.state.clone()
    }

    /// Registers a controller built by `factory` (called again for a fresh
    /// instance after a panic): a [`Controller`](crate::controller::Controller),
    /// or a [`QueueController`](crate::controller::QueueController), for
    /// which it returns a [`QueueHandle`](crate::controller::QueueHandle) to push keys into its queue from
    /// other event sources. Works before and after other controllers run.
    /// Options go before the `.await`: [`on`](crate::controller::Registering::on) a placement.
    ///
    /// ```
    /// use cosi_runtime::prelude::*;
    /// use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
    /// use cosi_runtime::execution::Placement;
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
    /// # #[spec(type = "Links.net.cosi.dev")]
    /// # struct Link;
    /// struct Mirror;
    /// impl QueueController for Mirror {
    ///     fn name(&self) -> &str { "Mirror" }
    ///     fn settings(&self) -> QueueSettings {
    ///         QueueSettings { inputs: vec![Input::primary::<Link>("net")], outputs: vec![], concurrency: 4 }
    ///     }
    ///     async fn reconcile(&self, _: &ReconcileContext, _: &Pointer) -> Result<Outcome, ReconcileError> {
    ///         Ok(Outcome::Done)
    ///     }
    /// }
    ///
    /// # actix::System::new().block_on(async {
    /// let runtime = Runtime::start();
    /// let queue = runtime.register(|| Mirror).on(Placement::Home).await?;
    /// queue.enqueue(&Pointer::typed::<Link>("net", "eth0")).await.expect("eth0 is a primary");
    /// runtime.settled().await;
    /// # Ok::<(), cosi_runtime::supervisor::RegistrationError>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`RegistrationError`](crate::supervisor::RegistrationError) if the claims conflict with registered
    /// controllers, the declarations are invalid (for a queue controller
    /// also a concurrency of 0 or no primary input), or the runtime is
    /// stopped. Nothing is left behind on error.
    pub fn register<M, F: Factory<M>>(&self, factory: F) -> Registering<'_, M, F> {
        Registering::new(&self.supervisor, factory, self.placement)
    }

    /// `register(factory).on(placement)`, the former name, kept for one release.
    #[doc(hidden)]
    pub fn register_on<M, F: Factory<M>>(
        &self,
        placement: Placement,
        factory: F,
    ) -> Registering<'_, M, F> {
        self.register(factory).on(placement)
    }

    /// `register(factory)` of a queue controller, the former name, kept
    /// for one release.
    #[doc(hidden)]
    pub fn register_queue<F: Factory<crate::controller::Queue>>(
        &self,
        factory: F,
    ) -> Registering<'_, crate::controller::Queue, F> {
        self.register(factory)
    }

    /// `register(factory).on(placement)` of a queue controller, the former
    /// name, kept for one release.
    #[doc(hidden)]
    pub fn register_queue_on<F: Factory<crate::controller::Queue>>(
        &self,
        placement: Placement,
        factory: F,
    ) -> Registering<'_, crate::controller::Queue, F> {
        self.register(factory).on(placement)
    }

    /// Resolves when nothing is in flight: no state request awaiting an
    /// answer, no change message undelivered, no reconcile pending, running or
    /// backing off. Tests and tools wait on this instead of sleeping.
    ///
    /// Delayed work that was asked for — a `requeue_after`, an
    /// `enqueue_after`, a queue item due later — is not waited for: the
    /// runtime is settled until it comes due. [`idle`](Runtime::idle) waits
    /// for that too. A requeue or enqueue at zero delay is not delayed: it is
    /// a reconcile pending now, which this waits for.
    ///
    /// It has no bound: a controller that fails for ever, or keeps
    /// re-triggering itself, keeps the runtime busy. So that such a wait is
    /// not silent, once a patience ([`SETTLED_PATIENCE`], see
    /// [`RuntimeBuilder::settled_patience`]) passes with no reconcile ending,
    /// or with a controller [looping](crate::controller::ControllerHealth::is_looping),
    /// it logs once, at WARN, what is still busy (what
    /// [`settled_within`](Runtime::settled_within) reports), and waits on.
    /// Prefer `settled_within` where giving up is an option.
    pub async fn settled(&self) {
        let mut settled = std::pin::pin!(self.activity.settled());
        let (mut progress, _) = self.live.progress();
        let mut waited = std::time::Duration::ZERO;
        loop {
            if tokio::time::timeout(self.patience, &mut settled).await.is_ok() {
                return;
            }
            waited += self.patience;
            let (ended, looping) = self.live.progress();
            if looping || ended == progress {
                let report = self.not_settled(waited).await;
                let why = if looping {
                    "a controller keeps re-triggering itself".to_owned()
                } else {
                    format!("no reconcile ended in the last {:?}", self.patience)
                };
                tracing::warn!(
                    "runtime.settled() has been waiting for {waited:?}, and {why}: {report}"
                );
                settled.await;
                return;
            }
            progress = ended;
        }
    }

    /// Resolves when the runtime is [`settled`](Runtime::settled) **and** no
    /// delayed work is pending either (no `requeue_after` or `enqueue_after`
    /// timer armed), so that what a caller reads next is final: for tests
    /// and for shutdown. Gives up after `bound` (virtual time under tokio's
    /// paused clock).
    ///
    /// ```
    /// # use std::time::Duration;
    /// # actix::System::new().block_on(async {
    /// let runtime = cosi_runtime::Runtime::start();
    /// runtime.idle(Duration::from_secs(5)).await?;
    /// # Ok::<(), cosi_runtime::NotIdle>(())
    /// # }).unwrap();
    /// ```
    ///
    /// # Errors
    /// [`NotIdle`] with what was still pending when `bound` ran out (a
    /// controller that requeues itself forever never becomes idle).
    pub async fn idle(&self, bound: std::time::Duration) -> Result<(), NotIdle> {
        match tokio::time::timeout(bound, self.activity.idle()).await {
            Ok(()) => Ok(()),
            Err(_) => {
                Err(NotIdle { bound, busy: self.activity.busy(), timers: self.activity.timers() })
            }
        }
    }

    /// Stops every controller (each finishes its running reconcile first).
    /// On a shared (etcd) state this process then gives up its claims and
    /// revokes its lease, so standbys in other processes take over at once,
    /// not after the lease TTL.
    ///
    /// A state the runtime opened itself ([`RuntimeBuilder::open`],
    /// [`open_durable`](RuntimeBuilder::open_durable)) is then closed: what
    /// was written is committed, the file and its lock are released (the
    /// same file opens again at once, in this process too), and later
    /// requests get [`Error::Unavailable`](crate::Error::Unavailable). An
    /// in-memory state ([`Runtime::start`]) stays readable through existing
    /// handles.
    pub async fn stop(&self) {
        let _ = self.supervisor.send(StopAll(StopReason::Requested)).await;
        // Repeats of Events still waiting for their interval are written now.
        if let Some(events) = &self.events {
            let (done, flushed) = futures::channel::oneshot::channel();
            events.do_send(ToWriter::Flush(done));
            let _ = flushed.await;
        }
        // The stopped controllers' claims go at once (the lease is revoked),
        // so that standbys elsewhere take over without waiting for its TTL.
        if let Some(claims) = self.state.claim_service() {
            claims.resign().await;
        }
        if self.owns_state
            && let Err(e) = self.state.close().await
        {
            tracing::warn!("stopping the runtime: closing its state failed: {e}");
        }
    }

    /// Resolves when the runtime stops, with the reason.
    pub async fn stopped(&self) -> StopReason {
        let mut rx = self.stopped.clone();
        match rx.wait_for(Option::is_some).await {
            Ok(reason) => reason.clone().unwrap_or(StopReason::Requested),
            Err(_) => StopReason::Requested,
        }
    }

    /// Whether the runtime has stopped, and why.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stopped.borrow().clone()
    }

    /// Who owns what, on a shared (etcd) state: each exclusive output type a
    /// controller of this runtime claims, and whether this process holds the
    /// claim (the controller reconciles) or stands by. Empty on a state that
    /// one process owns. A standby controller's status is
    /// [`Standby`](crate::controller::ControllerStatus::Standby) in
    /// [`metrics`](Self::metrics) (`cosi_controller_status{status="standby"}`).
    pub async fn claims(&self) -> Vec<crate::state::ClaimStatus> {
        self.state.claims().await
    }

    /// The sharded controllers of this runtime, on an etcd state: for each,
    /// this process's member name, the ring's members, the shards it owns
    /// with their fencing tokens, those draining, its hand-offs and
    /// takeover times (see [`ShardStatus`](crate::state::ShardStatus)).
    /// Empty on a state without a shard service.
    ///
    /// ```
    /// # actix::System::new().block_on(async {
    /// let runtime = cosi_runtime::Runtime::start();
    /// assert!(runtime.shards().await.is_empty(), "an in-memory state shards nothing");
    /// # });
    /// ```
    pub async fn shards(&self) -> Vec<crate::state::ShardStatus> {
        match self.shard_service() {
            Some(service) => service.status().await,
            None => Vec::new(),
        }
    }

    /// How every controller is doing: running, standing by, backing off
    /// (with the attempt count and the last error), or failed (with why).
    /// See [`Health`](crate::controller::Health).
    pub async fn health(&self) -> crate::controller::Health {
        let metrics = self.metrics().await;
        crate::controller::Health { controllers: metrics.iter().map(Into::into).collect() }
    }

    /// [`settled`](Self::settled), giving up after `deadline` with what is
    /// still busy; and an error too when it settled with a controller
    /// [`Failed`](crate::controller::ControllerStatus::Failed). For tests and
    /// tools that must not hang in silence, nor pass over a failure.
    ///
    /// # Expected flow
    /// 1. It waits, at most `deadline` (virtual time under tokio's paused
    ///    clock), for what [`settled`](Self::settled) waits for.
    /// 2. Once settled, it reads every controller's status: none failed is
    ///    `Ok(())`.
    ///
    /// ```
    /// # actix::System::new().block_on(async {
    /// let runtime = cosi_runtime::Runtime::start();
    /// runtime.settled_within(std::time::Duration::from_secs(5)).await.unwrap();
    /// # });
    /// ```
    ///
    /// # Guarantees
    /// - A controller that failed for good (a terminal error of a plain
    ///   controller, an access its declarations do not allow, its restart
    ///   intensity exceeded) never passes unnoticed: it holds no work, so the
    ///   runtime settles, and this says so, naming it and why.
    /// - [`settled`](Self::settled), which returns nothing, resolves as
    ///   before: the failure is in [`health`](Self::health).
    /// - A [`testing::Harness`](crate::testing::Harness)'s `settle()` is
    ///   this: it fails the test with the same text.
    ///
    /// # Errors
    /// [`NotSettled`]: with [`settled`](NotSettled::settled) false, naming
    /// what was busy when the deadline passed (the controllers backing off,
    /// failing, or with work ready or running; not those whose keys only
    /// wait for a requested time: those do not hold `settled()`) and their
    /// last errors; with `settled` true, naming each failed controller and
    /// its last error (its [`failed`](NotSettled::failed) list).
    pub async fn settled_within(&self, deadline: std::time::Duration) -> Result<(), NotSettled> {
        if tokio::time::timeout(deadline, self.activity.settled()).await.is_ok() {
            let failed = failed(&self.metrics().await);
            if failed.is_empty() {
                return Ok(());
            }
            return Err(NotSettled { deadline, units: 0, busy: Vec::new(), failed, settled: true });
        }
        Err(self.not_settled(deadline).await)
    }

    /// What is busy, after waiting `waited` for the runtime to settle.
    async fn not_settled(&self, waited: std::time::Duration) -> NotSettled {
        let metrics = self.metrics().await;
        let busy = metrics
            .iter()
            .filter_map(|m| {
                // What holds `settled()`: work ready or running (keys waiting
                // for a requested time do not), or a failing controller.
                let c = crate::controller::ControllerHealth::from(m);
                let failing =
                    !c.is_healthy() && c.status != crate::controller::ControllerStatus::Failed;
                (failing || m.work_queue.depth + m.active_workers > 0).then_some(c)
            })
            .collect();
        let failed = failed(&metrics);
        NotSettled { deadline: waited, units: self.activity.busy(), busy, failed, settled: false }
    }

    /// Every controller's counters, in registration order.
    pub async fn metrics(&self) -> Vec<ControllerMetrics> {
        self.supervisor.send(GetMetrics).await.unwrap_or_default()
    }

    /// Every controller's counters in the Prometheus text format (see
    /// [`prometheus`](crate::prometheus)), with the shards of sharded
    /// controllers on an etcd state.
    #[cfg(feature = "prometheus")]
    pub async fn metrics_text(&self) -> String {
        crate::prometheus::render_with_shards(&self.metrics().await, &self.shards().await)
    }

    /// The state's shard service (an etcd state's), for sharded controllers.
    fn shard_service(&self) -> Option<crate::state::ShardService> {
        self.state.claim_service().and_then(|c| c.shards()).cloned()
    }

    /// Registers a collector of this runtime's metrics into `registry`: at
    /// each scrape it reads every controller's live counters (controllers
    /// registered later included), and the shards of sharded controllers
    /// on an etcd state. The series are controller-runtime's
    /// (`controller_runtime_*`, `workqueue_*`) and ours (`cosi_*`); see
    /// [`prometheus`](crate::prometheus) for the list.
    ///
    /// Register into the **root** registry: a sub-registry's prefix would
    /// rename controller-runtime's series and break the dashboards built for
    /// them.
    ///
    /// ```
    /// use prometheus_client::registry::Registry;
    /// # actix::System::new().block_on(async {
    /// let runtime = cosi_runtime::Runtime::start();
    /// let mut registry = Registry::default();
    /// runtime.register_metrics(&mut registry);
    /// let mut text = String::new();
    /// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    /// assert!(text.ends_with("# EOF\n"));
    /// # });
    /// ```
    #[cfg(feature = "prometheus")]
    pub fn register_metrics(&self, registry: &mut prometheus_client::registry::Registry) {
        crate::prometheus::register(registry, self.live.clone(), self.shard_service());
    }

    /// The dependency graph of the registered controllers.
    pub async fn graph(&self) -> DependencyGraph {
        self.supervisor.send(GetGraph).await.unwrap_or_default()
    }

    /// A handle that asks for [`graph`](Self::graph) from any thread (what
    /// the Kubernetes API's admission reads the exclusive outputs from).
    #[cfg(feature = "kubernetes-api")]
    pub(crate) fn graph_source(&self) -> GraphSource {
        GraphSource(self.supervisor.clone())
    }
}

/// Asks a runtime's supervisor for its [`DependencyGraph`], from any thread.
#[cfg(feature = "kubernetes-api")]
#[derive(Clone, Debug)]
pub(crate) struct GraphSource(Addr<Supervisor>);

#[cfg(feature = "kubernetes-api")]
impl GraphSource {
    /// The graph now (empty once the runtime stopped).
    pub(crate) async fn graph(&self) -> DependencyGraph {
        self.0.send(GetGraph).await.unwrap_or_default()
    }
}

/// How long [`Runtime::settled`] waits with no progress before it says, once,
/// what is still busy: 30 seconds.
pub const SETTLED_PATIENCE: std::time::Duration = std::time::Duration::from_secs(30);

/// The controllers marked failed, as health reports them.
fn failed(metrics: &[ControllerMetrics]) -> Vec<crate::controller::ControllerHealth> {
    metrics
        .iter()
        .map(crate::controller::ControllerHealth::from)
        .filter(|c| c.status == crate::controller::ControllerStatus::Failed)
        .collect()
}

/// [`Runtime::settled_within`] did not end well: the runtime was still busy
/// when its deadline passed, or it settled with failed controllers.
///
/// Its text names the controllers, with their last errors:
/// `the runtime settled, but controller Parser failed: Parser: failed, 1
/// failures in a row, last error: bad input (terminal)`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(self))]
pub struct NotSettled {
    /// The deadline (that passed, unless [`settled`](Self::settled)).
    pub deadline: std::time::Duration,
    /// Units of work in progress (requests, messages, reconciles, retries).
    pub units: usize,
    /// The controllers that were busy or failing, with their last errors.
    pub busy: Vec<crate::controller::ControllerHealth>,
    /// The controllers marked [`Failed`](crate::controller::ControllerStatus::Failed),
    /// with why (their last errors).
    pub failed: Vec<crate::controller::ControllerHealth>,
    /// Whether the runtime did settle (then the error is `failed`).
    pub settled: bool,
}

fn describe(e: &NotSettled) -> String {
    let list = |cs: &[crate::controller::ControllerHealth]| -> String {
        cs.iter().map(|c| format!("\n  {c}")).collect()
    };
    let names = |cs: &[crate::controller::ControllerHealth]| -> String {
        let names: Vec<&str> = cs.iter().map(|c| c.controller.as_str()).collect();
        match names.as_slice() {
            [one] => format!("controller {one}"),
            many => format!("controllers {}", many.join(", ")),
        }
    };
    if e.settled {
        return format!("the runtime settled, but {} failed:{}", names(&e.failed), list(&e.failed));
    }
    let mut text = format!(
        "the runtime had not settled after {:?} ({} units of work in progress)",
        e.deadline, e.units
    );
    if e.busy.is_empty() {
        text.push_str("; no controller was busy (a request or a watch delivery was)");
    } else {
        text.push_str(&list(&e.busy));
    }
    if !e.failed.is_empty() {
        text.push_str(&format!("\nand {} failed:{}", names(&e.failed), list(&e.failed)));
    }
    text
}

/// [`Runtime::idle`] ran out of time: work or timers were still pending.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "the runtime was not idle after {bound:?}: {busy} units of work in progress, {timers} timers of delayed work armed"
)]
pub struct NotIdle {
    /// The bound that ran out.
    pub bound: std::time::Duration,
    /// Units of work in progress (requests, messages, reconciles, retries).
    pub busy: usize,
    /// Timers of delayed work armed (`requeue_after`, `enqueue_after`, due queue items).
    pub timers: usize,
}
