//! [`Blocking`]: a controller whose reconciles run on the blocking thread pool.

use std::fmt;
use std::sync::Arc;

use crate::controller::{
    Controller, Input, Outcome, Output, QueueController, QueueSettings, ReconcileContext,
    ReconcileError, ReconcileResult,
};
use crate::resource::{AnyResource, Pointer};

/// Declares that a controller's reconcile blocks its thread (file or device
/// IO, a C library, a long computation): each reconcile then runs on the
/// blocking thread pool (`tokio::task::spawn_blocking`), never on an
/// arbiter, so the controllers and the state that share the arbiter go on.
///
/// Wrap the controller in its factory; it registers like any other, through
/// [`Runtime::register`](crate::Runtime::register) for a [`Controller`] and
/// [`Runtime::register`](crate::Runtime::register) for a
/// [`QueueController`] (whose reconciles of distinct keys then run in parallel,
/// up to its concurrency and the worker pool's):
///
/// ```
/// use cosi_runtime::Runtime;
/// use cosi_runtime::controller::{Controller, Input, Output, ReconcileContext, ReconcileResult};
/// use cosi_runtime::execution::Blocking;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Config(String);
/// # impl cosi_runtime::resource::Spec for Config { const TYPE: &'static str = "Configs.test.cosi.dev"; }
///
/// struct WriteConfig { path: std::path::PathBuf }
///
/// impl Controller for WriteConfig {
///     fn name(&self) -> &str { "WriteConfig" }
///     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Config>("default")] }
///     fn outputs(&self) -> Vec<Output> { vec![] }
///     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
///         let all = cosi_runtime::resource::LabelQuery::all();
///         let text: String = cx.list_typed::<Config>("default", &all).await?
///             .iter().map(|c| c.spec().0.clone()).collect();
///         std::fs::write(&self.path, text)?; // blocks: fine on the blocking pool
///         Ok(())
///     }
/// }
///
/// # actix::System::new().block_on(async {
/// # let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("config");
/// let runtime = Runtime::start();
/// runtime.register(move || Blocking::new(WriteConfig { path: path.clone() })).await?;
/// runtime.settled().await;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// Every guarantee of the controller kinds holds: one reconcile at a time for
/// a [`Controller`], never the same key twice at once for a [`QueueController`],
/// coalescing, retries, access checks, `settled()`. A panic on the pool
/// thread is a panic of the reconcile: the instance is rebuilt from the
/// factory.
///
/// # Costs and bounds
/// - The controller must be `Send + Sync`: it is shared with the pool
///   thread (a queue controller's reconciles of distinct keys share it at once).
/// - Each reconcile costs a hand-off to a pool thread and back (tens of
///   microseconds on a loaded machine), and every state call in it crosses
///   threads. Only worth it when the reconcile really blocks.
/// - The pool grows on demand (tokio's default: up to 512 threads); a queue
///   controller's concurrency and the worker pool bound how many of its
///   reconciles block at once.
pub struct Blocking<T> {
    // `None` only while a plain controller's reconcile has it on a pool
    // thread, or after that reconcile panicked (the host then drops this
    // wrapper and builds a fresh one from the factory).
    inner: Option<Arc<T>>,
}

impl<T> fmt::Debug for Blocking<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blocking").field("on_a_pool_thread", &self.inner.is_none()).finish()
    }
}

/// What a reconcile on the pool came back with, or the panic it raised.
fn settle<R>(joined: Result<R, tokio::task::JoinError>) -> Result<R, ReconcileError> {
    match joined {
        Ok(returned) => Ok(returned),
        Err(e) => match e.try_into_panic() {
            // Resumed on the host, which catches it as a panic of the
            // reconcile. `resume_unwind` runs no panic hook: the test kit's
            // log of this thread hears of it here (the hook recorded it on
            // the pool thread, which works for no test in particular).
            Ok(panic) => {
                crate::testing::panics::record_resumed(panic.as_ref());
                std::panic::resume_unwind(panic)
            }
            Err(e) => Err(Box::new(e)),
        },
    }
}

impl<C: Controller + Send + Sync> Blocking<C> {
    fn take(&mut self) -> Result<Arc<C>, ReconcileError> {
        self.inner.take().ok_or_else(|| "the controller instance was lost on a pool thread".into())
    }
}

impl<T> Blocking<T> {
    fn shared(&self) -> &T {
        self.inner.as_deref().expect("a queue controller's instance never leaves its wrapper")
    }
}

impl<T> Blocking<T> {
    /// Wraps `controller` (a [`Controller`] or a [`QueueController`]): its
    /// reconciles run on the blocking thread pool.
    pub fn new(controller: T) -> Self {
        Blocking { inner: Some(Arc::new(controller)) }
    }
}

impl<C: Controller + Send + Sync> Controller for Blocking<C> {
    fn name(&self) -> &str {
        // Asked for at registration only, never while a reconcile runs.
        self.inner.as_deref().map_or("<on a pool thread>", Controller::name)
    }

    fn inputs(&self) -> Vec<Input> {
        self.inner.as_deref().map(Controller::inputs).unwrap_or_default()
    }

    fn outputs(&self) -> Vec<Output> {
        self.inner.as_deref().map(Controller::outputs).unwrap_or_default()
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let mut controller = self.take()?;
        // The pool thread gets the context (requeues and new inputs come back
        // with it); a fork stands in meanwhile.
        let stand_in = cx.fork();
        let mut moved = std::mem::replace(cx, stand_in);
        let joined = tokio::task::spawn_blocking(move || {
            let result = match Arc::get_mut(&mut controller) {
                Some(c) => tokio::runtime::Handle::current().block_on(c.reconcile(&mut moved)),
                None => Err("a controller instance is shared".into()),
            };
            (controller, moved, result)
        })
        .await;
        let (controller, moved, result) = settle(joined)?;
        self.inner = Some(controller);
        *cx = moved;
        result
    }
}

impl<Q: QueueController + Send + Sync> QueueController for Blocking<Q> {
    fn name(&self) -> &str {
        self.shared().name()
    }

    fn settings(&self) -> QueueSettings {
        self.shared().settings()
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let controller =
            Arc::clone(self.inner.as_ref().expect("a queue controller never leaves its wrapper"));
        let (fork, ptr) = (cx.fork(), ptr.clone());
        let joined = tokio::task::spawn_blocking(move || {
            let result =
                tokio::runtime::Handle::current().block_on(controller.reconcile(&fork, &ptr));
            // A `cx.requeue_after` on the pool thread comes back with the result.
            (result, fork.take_requeue())
        })
        .await;
        let (result, requeue) = settle(joined)?;
        if let Some(delay) = requeue {
            cx.requeue_after(delay);
        }
        result
    }

    fn map_input(&self, ptr: &Pointer) -> Vec<Pointer> {
        self.shared().map_input(ptr)
    }

    fn map_resource(&self, input: &AnyResource) -> Vec<Pointer> {
        self.shared().map_resource(input)
    }

    fn requeues_all(&self, input: &AnyResource) -> bool {
        self.shared().requeues_all(input)
    }
}
