//! [`Harness`]: one controller against a real state actor, and nothing else.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use futures::StreamExt;

use super::panics;
use super::record::{Fault, Faults, Log, Recorded};
use crate::controller::{Controller, ControllerMetrics, QueueController, QueueHandle};
use crate::execution::Placement;
use crate::resource::{AnyResource, Pointer, PointerTo, Resource, Spec};
use crate::state::request::{StateReply, StateRequest};
use crate::state::{Client, State};
use crate::supervisor::{Backoff, RegistrationError};
use crate::{Error, Runtime};

/// Sits between the controller and the state actor: records the controller's
/// writes and fires injected faults.
struct Interceptor {
    inner: Recipient<StateRequest>,
    writes: Log,
    faults: Faults,
}

impl Actor for Interceptor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(0);
    }
}

impl Handler<StateRequest> for Interceptor {
    type Result = ResponseFuture<Result<StateReply, Error>>;

    fn handle(&mut self, req: StateRequest, _: &mut Context<Self>) -> Self::Result {
        let record = req.is_write().then(|| Recorded::of(&req));
        if let Some(error) = self.faults.fire(&req) {
            if let Some(r) = record {
                self.writes.push(r.answered(&Err(error.clone())));
            }
            return Box::pin(futures::future::ready(Err(error)));
        }
        let about = req.about();
        let sent = self.inner.send(req);
        let writes = self.writes.clone();
        Box::pin(async move {
            let reply = sent.await.unwrap_or_else(|_| {
                Err(Error::Unavailable { resource: about.to_string(), service: "the state actor" })
            });
            if let Some(r) = record
                && !matches!(reply, Ok(StateReply::Unchanged(_)))
            {
                writes.push(r.answered(&reply));
            }
            reply
        })
    }
}

/// Options of a [`Harness`].
#[derive(Clone, Debug)]
pub struct HarnessBuilder {
    backoff: Backoff,
    allow_panics: bool,
    timeout: Duration,
    off_home: bool,
}

impl Default for HarnessBuilder {
    fn default() -> Self {
        HarnessBuilder {
            backoff: Backoff {
                initial: Duration::from_millis(10),
                max: Duration::from_secs(1),
                multiplier: 2.0,
                jitter: 0.0,
            },
            allow_panics: false,
            timeout: Duration::from_secs(10),
            off_home: false,
        }
    }
}

impl HarnessBuilder {
    /// The retry backoff (default: 10 ms doubling to 1 s, no jitter).
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Runs the controller on an arbiter of its own, off the state's thread
    /// (the multi-arbiter mode; see [`execution`](crate::execution)). By
    /// default everything runs on the test's arbiter, deterministically.
    ///
    /// Under tokio's paused clock only the test's arbiter has virtual time:
    /// the controller's own timers (backoffs, requeues) then run in real time.
    #[must_use]
    pub fn own_arbiter(mut self) -> Self {
        self.off_home = true;
        self
    }

    /// Lets the controller panic without failing the test (to test recovery).
    #[must_use]
    pub fn allow_panics(mut self) -> Self {
        self.allow_panics = true;
        self
    }

    /// How long [`Harness::wait_for`] and [`Harness::settle`] wait before they
    /// fail the test with what is still busy (default 10 s; virtual time
    /// under a paused clock).
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn runtime(&self) -> (Runtime, Log, Faults) {
        let writes = Log::default();
        let faults = Faults::default();
        let (w, f) = (writes.clone(), faults.clone());
        let (arbiters, placement) =
            if self.off_home { (2, Placement::Spread) } else { (1, Placement::Home) };
        let runtime = Runtime::builder()
            .arbiters(arbiters)
            .placement(placement)
            .backoff(self.backoff)
            .intercept_controllers(Arc::new(move |state: State| {
                let inner = state.requests().clone();
                let proxy = Interceptor { inner, writes: w.clone(), faults: f.clone() }.start();
                state.redirect(proxy.recipient())
            }))
            // A panic on the controller's own arbiter fails this test too.
            .on_arbiter_start({
                let log = panics::this_thread();
                Arc::new(move || panics::forward_to(log.clone()))
            })
            .start();
        (runtime, writes, faults)
    }

    fn harness(&self, runtime: Runtime, writes: Log, faults: Faults) -> Harness {
        Harness {
            user: runtime.state().client(),
            runtime,
            writes,
            faults,
            panic_mark: panics::mark(),
            allow_panics: self.allow_panics,
            timeout: self.timeout,
            queue: None,
        }
    }

    /// A harness running the controller built by `factory`.
    ///
    /// # Errors
    /// The registration error, if its declarations are refused.
    pub async fn start<C, F>(self, factory: F) -> Result<Harness, RegistrationError>
    where
        C: Controller,
        F: Fn() -> C + Send + 'static,
    {
        panics::capture();
        let (runtime, writes, faults) = self.runtime();
        let harness = self.harness(runtime, writes, faults);
        harness.runtime.register(factory).await?;
        Ok(harness)
    }

    /// A harness running the queue controller built by `factory`.
    ///
    /// # Errors
    /// The registration error, if its settings are refused.
    pub async fn start_queue<Q, F>(self, factory: F) -> Result<Harness, RegistrationError>
    where
        Q: QueueController,
        F: Fn() -> Q + Send + 'static,
    {
        panics::capture();
        let (runtime, writes, faults) = self.runtime();
        let mut harness = self.harness(runtime, writes, faults);
        harness.queue = Some(harness.runtime.register(factory).await?);
        Ok(harness)
    }
}

/// Runs one controller (or queue controller) against a real state actor and
/// nothing else, so a test can drive it like a user and look at what it did.
///
/// - Arrange and act as a user (owner `None`) with the same calls as
///   everywhere else: a harness derefs to a user [`Client`] and is an
///   [`Access`](crate::state::Access), so `h.create(..)`, `h.modify(&ptr, change)`,
///   `h.get(&ptr)`, `h.list_typed::<S>(..)`, `h.teardown(&ptr)`,
///   `h.destroy(&ptr)`, `h.teardown_and_destroy(&ptr)` return the state's
///   `Result`s (`.unwrap()` them, or assert on the error).
/// - Step with [`settle`](Harness::settle): it returns when nothing is in
///   flight, no reconcile is pending and no retry waits (virtual time runs
///   under `tokio::time::pause()`).
/// - Look with `get`, [`finalizers`](Harness::finalizers),
///   [`writes`](Harness::writes) (the controller's own writes, in order),
///   [`reconciles`](Harness::reconciles) and [`wait_for`](Harness::wait_for).
/// - Break things with [`inject`](Harness::inject).
/// - **A panic anywhere in the system fails the test**, at the next
///   [`settle`](Harness::settle) or when the harness is dropped, unless
///   [`HarnessBuilder::allow_panics`] was set.
///
/// ```
/// use cosi_runtime::prelude::*;
/// use cosi_runtime::testing::Harness;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Int(i64);
/// # impl Spec for Int { const TYPE: &'static str = "Ints.test.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Double(i64);
/// # impl Spec for Double { const TYPE: &'static str = "Doubles.test.cosi.dev"; }
/// # struct Doubler;
/// # impl Controller for Doubler {
/// #     fn name(&self) -> &str { "Doubler" }
/// #     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Int>("default")] }
/// #     fn outputs(&self) -> Vec<Output> { vec![Output::exclusive::<Double>()] }
/// #     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
/// #         for i in cx.list_typed::<Int>("default", &LabelQuery::all()).await? {
/// #             let n = i.spec().0;
/// #             cx.modify(&Pointer::typed::<Double>("default", i.id()), move |d| d.spec_mut().0 = 2 * n).await?;
/// #         }
/// #         Ok(())
/// #     }
/// # }
///
/// # actix::System::new().block_on(async {
/// let h = Harness::new(|| Doubler).await;
/// h.modify(&Pointer::typed::<Int>("default", "x"), |i| i.spec_mut().0 = 21).await?;
/// h.settle().await;
/// assert_eq!(h.get(&Pointer::typed::<Double>("default", "x")).await?.spec().0, 42);
/// assert_eq!(h.write_log(), ["modify default/Doubles.test.cosi.dev/x"]);
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
pub struct Harness {
    user: Client,
    runtime: Runtime,
    writes: Log,
    faults: Faults,
    panic_mark: usize,
    allow_panics: bool,
    timeout: Duration,
    queue: Option<QueueHandle>,
}

impl fmt::Debug for Harness {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Harness").field("runtime", &self.runtime).finish_non_exhaustive()
    }
}

fn must<T>(what: &str, result: Result<T, Error>) -> T {
    result.unwrap_or_else(|e| panic!("harness: {what} failed: {e}"))
}

impl Harness {
    /// Options.
    pub fn builder() -> HarnessBuilder {
        HarnessBuilder::default()
    }

    /// A harness running the controller built by `factory` (panics if its
    /// registration is refused; use [`HarnessBuilder::start`] to test that).
    pub async fn new<C, F>(factory: F) -> Harness
    where
        C: Controller,
        F: Fn() -> C + Send + 'static,
    {
        must_register(HarnessBuilder::default().start(factory).await)
    }

    /// A harness running the queue controller built by `factory`.
    pub async fn queue<Q, F>(factory: F) -> Harness
    where
        Q: QueueController,
        F: Fn() -> Q + Send + 'static,
    {
        must_register(HarnessBuilder::default().start_queue(factory).await)
    }

    /// The runtime behind the harness.
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// The state, for calls with an explicit owner (the harness itself acts
    /// as the user).
    pub fn state(&self) -> State {
        self.runtime.state()
    }

    /// The user's [`Client`] the harness derefs to.
    pub fn client(&self) -> &Client {
        &self.user
    }

    /// The queue controller's handle (for harnesses made with [`queue`](Harness::queue)).
    pub fn queue_handle(&self) -> Option<&QueueHandle> {
        self.queue.as_ref()
    }

    /// Waits until the system is settled, then fails the test if anything
    /// panicked (at once, if a panic happens while waiting).
    ///
    /// # Panics
    /// - After the [timeout](HarnessBuilder::timeout) (10 s by default, virtual
    ///   under a paused clock), naming what is still busy: a controller that
    ///   fails forever ends the test with its last error instead of hanging it.
    /// - When the system settled with the controller marked failed (a plain
    ///   controller's terminal error, an access its declarations do not
    ///   allow, its restart intensity exceeded), naming it and its last
    ///   error: [`Runtime::settled_within`]'s error. A test that makes the
    ///   controller fail on purpose checks
    ///   `h.runtime().settled_within(d).await.unwrap_err()` instead.
    pub async fn settle(&self) {
        let settled = self.until_panic(self.runtime.settled_within(self.timeout)).await;
        if let Some(Err(busy)) = settled {
            panic!("harness: {busy}");
        }
        self.check_panics();
    }

    /// Moves tokio's paused clock `d` forward (plus the millisecond by which
    /// the timer wheel rounds deadlines up), then [settles](Self::settle):
    /// how a test gets past a `requeue_after`, an `enqueue_after` or a
    /// backoff without sleeping.
    ///
    /// ```
    /// # use cosi_runtime::testing::Harness;
    /// # use cosi_runtime::prelude::*;
    /// # struct Tick;
    /// # impl Controller for Tick {
    /// #     fn name(&self) -> &str { "Tick" }
    /// #     fn inputs(&self) -> Vec<Input> { vec![] }
    /// #     fn outputs(&self) -> Vec<Output> { vec![] }
    /// #     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
    /// #         cx.requeue_after(std::time::Duration::from_secs(30));
    /// #         Ok(())
    /// #     }
    /// # }
    /// # actix::System::new().block_on(async {
    /// tokio::time::pause();
    /// let h = Harness::new(|| Tick).await;
    /// h.settle().await;
    /// assert_eq!(h.reconciles().await, 1);
    /// h.advance(std::time::Duration::from_secs(30)).await; // the requeue comes due
    /// assert_eq!(h.reconciles().await, 2);
    /// # });
    /// ```
    ///
    /// Without `tokio::time::pause()` this really waits `d`.
    ///
    /// # Panics
    /// As [`settle`](Self::settle).
    pub async fn advance(&self, d: Duration) {
        // Under a paused clock a sleep is an advance: the runtime auto-advances
        // to each timer due on the way, so the work they start runs in order.
        tokio::time::sleep(d + Duration::from_millis(1)).await;
        self.settle().await;
    }

    /// Runs `work`, cut short by a panic anywhere unless panics are allowed.
    async fn until_panic<T>(&self, work: impl std::future::Future<Output = T>) -> Option<T> {
        if self.allow_panics {
            return Some(work.await);
        }
        let work = std::pin::pin!(work);
        let panicked = std::pin::pin!(panics::after(self.panic_mark));
        match futures::future::select(work, panicked).await {
            futures::future::Either::Left((value, _)) => Some(value),
            futures::future::Either::Right(((), _)) => None,
        }
    }

    /// Fails the test if any actor or controller panicked since the harness started.
    pub fn check_panics(&self) {
        if self.allow_panics {
            return;
        }
        let panics = panics::since(self.panic_mark);
        assert!(panics.is_empty(), "harness: the system panicked: {panics:#?}");
    }

    /// The panics seen since the harness started (with or without `allow_panics`).
    pub fn panics(&self) -> Vec<String> {
        panics::since(self.panic_mark)
    }

    /// The finalizers on the resource at `ptr` (empty if it does not exist).
    pub async fn finalizers(&self, ptr: &Pointer) -> Vec<String> {
        match self.state().get(ptr).await {
            Ok(r) => r.metadata().finalizers().to_vec(),
            Err(_) => Vec::new(),
        }
    }

    /// Every write the controller made that changed something or failed, in
    /// order (no-op modifies are not writes).
    pub fn writes(&self) -> Vec<Recorded> {
        self.writes.all()
    }

    /// The writes, as `"operation subject"` lines, for exact assertions.
    pub fn write_log(&self) -> Vec<String> {
        self.writes.all().iter().map(ToString::to_string).collect()
    }

    /// The writes so far, clearing the log.
    pub fn take_writes(&self) -> Vec<Recorded> {
        self.writes.take()
    }

    /// Makes a request of the controller fail (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.faults.push(fault);
    }

    /// The controller's counters.
    pub async fn metrics(&self) -> ControllerMetrics {
        self.runtime
            .metrics()
            .await
            .into_iter()
            .next()
            .expect("harness: the controller is registered")
    }

    /// Successful reconciles so far.
    pub async fn reconciles(&self) -> u64 {
        self.metrics().await.reconciles
    }

    /// Waits, driven by watch events (no polling, no sleeps), until `check`
    /// holds for the resource at `ptr` (`None`: it does not exist). Fails the
    /// test after the harness timeout (virtual time under a paused clock).
    pub async fn wait_for<S, P, F>(&self, ptr: &P, mut check: F)
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        F: FnMut(Option<&Resource<S>>) -> bool,
    {
        let ptr = ptr.pointer();
        let mut events = must("watch", self.state().watch_stream(ptr).await);
        let mut last = None;
        let waiting = async {
            while let Some(event) = events.next().await {
                let current = event
                    .resource()
                    .filter(|r| {
                        !r.is_tombstone() && !matches!(event, crate::state::Event::Destroyed(_))
                    })
                    .map(AnyResource::typed::<S>)
                    .transpose()
                    .unwrap_or_else(|e| panic!("harness: {ptr}: {e}"));
                if check(current.as_ref()) {
                    return true;
                }
                last = Some(format!("{current:?}"));
            }
            false
        };
        let met = self
            .until_panic(tokio::time::timeout(self.timeout, waiting))
            .await
            .and_then(Result::ok)
            .unwrap_or(false);
        self.check_panics();
        assert!(
            met,
            "harness: {ptr} did not reach the expected state within {:?}; last seen: {}",
            self.timeout,
            last.as_deref().unwrap_or("nothing")
        );
        self.check_panics();
    }
}

impl std::ops::Deref for Harness {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.user
    }
}

// The user's calls, as everywhere (see `Access`).
crate::state::client::implementors::core_by_inherent!(Harness => Client, |h| &h.user);

fn must_register(h: Result<Harness, RegistrationError>) -> Harness {
    h.unwrap_or_else(|e| panic!("harness: registration failed: {e}"))
}

impl Drop for Harness {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            self.check_panics();
        }
    }
}
