//! Controllers: small actors that turn inputs into outputs.
//!
//! A [`Controller`] declares what it reads ([`Input`]: weak, strong or
//! destroy-ready) and what it writes ([`Output`]: exclusive or shared), and
//! implements one async `reconcile` that reads its inputs and writes its
//! outputs through a [`ReconcileContext`]. The runtime runs each controller in
//! its own actor.
//!
//! # The controller lifecycle
//!
//! ## Expected flow
//! 1. [`Runtime::register`](crate::Runtime::register) takes a factory, builds a
//!    first instance, and the supervisor checks its claims (unique name, no
//!    conflicting outputs, no duplicate inputs). Nothing is left behind if that fails.
//! 2. The controller's actor subscribes to every input kind, then runs the
//!    first reconcile.
//! 3. A change to an input (for destroy-ready inputs: a resource becoming
//!    tearing-down with no finalizers) queues a reconcile. Any number of changes
//!    that arrive while a reconcile is pending or running collapse into **one**
//!    further reconcile, which reads the current state.
//! 4. `cx.requeue_after(d)` asks for another reconcile after `d`.
//! 5. A reconcile that returns an error, or panics, is retried after an
//!    exponential backoff with jitter (reset by a success). After a panic the
//!    instance is dropped and a fresh one is built from the factory; the actor,
//!    its mailbox and its subscriptions stay.
//! 6. With a restart-intensity limit ([`Intensity`](crate::supervisor::Intensity)),
//!    a controller whose reconciles fail (errors or panics, each followed by a
//!    retry) more than N times in T is marked failed (or stops the runtime, by
//!    policy). In the metrics, `retries` counts those retries and `restarts`
//!    only the fresh instances built after a panic.
//! 7. A reconcile refused an access its declarations do not allow
//!    ([`Error::AccessDenied`](crate::Error::AccessDenied), even wrapped in
//!    another error) is a bug in the program, not a transient failure: the
//!    controller is marked failed at once, without retries, with one ERROR
//!    line naming the declaration to add, also shown by
//!    [`Runtime::health`](crate::Runtime::health). A queue controller stops
//!    for every key alike.
//! 8. A controller whose reconciles, [`SELF_TRIGGER_LIMIT`] in a row, were
//!    triggered by nothing but its own writes is looping (an output it
//!    also watches fully, or a write that is not a function of its inputs):
//!    it goes on, but logs it once at WARN and health reports it.
//! 9. [`Runtime::stop`](crate::Runtime::stop) lets a running reconcile finish,
//!    then stops the controller.
//!
//! The teardown flow a strong input enables: the controller puts its finalizer
//! on input `I` while `I` is running; when `I` is torn down it tears down its
//! outputs, destroys them once they are destroy-ready (a destroy-ready input on
//! its own output type wakes it then), and removes its finalizer from `I`;
//! [`State::teardown_and_destroy(I)`](crate::State::teardown_and_destroy)
//! completes only then. This cascades through any depth.
//!
//! ## Guarantees
//! - One reconcile at a time per controller; never two concurrently.
//! - A change that lands after a reconcile started is never lost: it causes
//!   one more reconcile.
//! - A controller reaches the state only through its context, and every call
//!   is checked against its declarations (below).
//! - A failing or panicking controller never affects another one.
//! - `Runtime::settled()` resolves only when no change message is in flight, no
//!   reconcile is pending, running or waiting out a backoff.
//!
//! ## Assumptions
//! - Reconciles are level-based and idempotent: they read the current state
//!   and converge, whatever the sequence of changes that led there.
//! - A reconcile does not block its thread (it runs on an actix arbiter,
//!   shared with other controllers), unless the controller is wrapped in
//!   [`Blocking`](crate::execution::Blocking), which runs it on the blocking
//!   thread pool. See [`execution`](crate::execution) for what runs where.
//!
//! ## Caveats
//! - `settled()` waits through backoffs, so a controller that fails forever
//!   (with no intensity limit) keeps the runtime unsettled.
//! - A `requeue_after` timer does not count as pending work: the runtime is
//!   settled until it fires. [`Runtime::idle`](crate::Runtime::idle) waits
//!   for such timers too, with a bound.
//! - The instance is rebuilt only after a panic; after an error it is kept.
//!
//! ## Errors
//! - Registration: [`RegistrationError`](crate::supervisor::RegistrationError).
//! - Inside a reconcile, every context call returns [`Error`](crate::Error):
//!   [`AccessDenied`](crate::Error::AccessDenied) when the declarations do not
//!   allow it, otherwise whatever the state answers.
//!
//! # Access rules
//! | operation | allowed when |
//! |---|---|
//! | `get` | the type is an output type, or an input covers the resource |
//! | `list` | the type is an output type, or an input without an id covers the kind |
//! | `create`, `update`, `modify`, `teardown`, `destroy` | the type is an output type; the controller is stamped as owner |
//! | `add_finalizer`, `remove_finalizer` | a strong input covers the resource; only the controller's own finalizer |
//!
//! Finalizers change only through `add_finalizer` and `remove_finalizer`: a
//! `create` that carries finalizers, and an `update` or `modify` whose result
//! has other finalizers than the stored resource, are refused too
//! (`AccessDenied`, nothing written). An output's finalizers are other
//! parties' holds on it; a `modify` that rebuilds the resource from scratch
//! would otherwise drop them silently. Leave `finalizers` as read.

//! # Tracing
//! The runtime logs through [`tracing`](https://docs.rs/tracing). Each
//! reconcile runs in a span `reconcile` (target `cosi_runtime::reconcile`,
//! level INFO) with kube-runtime's field names: `controller`, `object.ref`
//! (the resource of a queue controller; `*` for a plain controller, which
//! reconciles all its inputs at once), `object.reason` (`registered`,
//! `input changed`, `input changed while reconciling`, `requeue requested`,
//! `retry after failure`, `claim acquired`, `queued`) and `result`
//! (`success`, `requeue`, `error`, `terminal error`, `panic`), recorded when it
//! ends. Warnings and errors carry `controller` (and `object.ref`) as fields of
//! their own, so they read well without the span.
//!
//! With no tracing subscriber installed, tracing's `log` feature turns all of
//! this into `log` records, so `env_logger` users keep every line; the span
//! then becomes two INFO lines per reconcile (`reconcile; controller=… ` and
//! `reconcile; result=…`). Quiet them with
//! `RUST_LOG=info,cosi_runtime::reconcile=warn`.

mod access;
mod context;
mod finalize;
mod from_fn;
mod health;
pub(crate) mod host;
pub(crate) mod metrics;
mod outcome;
pub(crate) mod plain;
pub(crate) mod pool;
pub(crate) mod queue;
pub(crate) mod queue_host;
mod spec;

pub(crate) use access::AccessRules;
pub(crate) use context::Reach;
pub use context::ReconcileContext;
pub use finalize::finalizer;
pub use from_fn::{FnController, from_fn};
pub use health::{ControllerHealth, Health};
pub use metrics::{
    ControllerMetrics, ControllerStatus, HistogramSnapshot, LATENCY_BUCKETS, QueueMetrics,
    RECONCILE_TIME_BUCKETS, WORKQUEUE_DURATION_BUCKETS, WorkQueueMetrics,
};
pub use outcome::SELF_TRIGGER_LIMIT;
pub use pool::default_pool_size;
pub use queue::{DEFAULT_CONCURRENCY, Outcome, QController, QSettings, QueueHandle, TerminalError};
pub use spec::{Controller, Input, InputKind, Output, OutputKind, ReconcileError, ReconcileResult};
