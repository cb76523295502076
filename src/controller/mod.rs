//! Controllers: small actors that turn inputs into outputs.
//!
//! A [`Controller`] declares what it reads ([`Input`]: weak, strong or
//! destroy-ready) and what it writes ([`Output`]: exclusive or shared), and
//! implements one async `reconcile` that reads its inputs and writes its
//! outputs through a [`ReconcileContext`]. The runtime runs each controller in
//! its own actor.
//!
//! # A complete program
//! A controller that writes the message of the day from the hostname:
//!
//! ```
//! use cosi_runtime::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
//! #[spec(type = "Hostnames.net.cosi.dev")]
//! struct Hostname(String);
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
//! #[spec(type = "Motds.os.cosi.dev")]
//! struct Motd(String);
//!
//! /// Writes the message of the day from the hostname.
//! struct MotdController;
//!
//! impl Controller for MotdController {
//!     fn name(&self) -> &str { "MotdController" }
//!     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Hostname>("network")] }
//!     fn outputs(&self) -> Vec<Output> { vec![Output::exclusive::<Motd>()] }
//!
//!     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
//!         for host in cx.list_typed::<Hostname>("network", &LabelQuery::all()).await? {
//!             let text = format!("Welcome to {}!", host.spec().0);
//!             let motd = Pointer::typed::<Motd>("os", "motd");
//!             cx.modify(&motd, move |m| m.spec_mut().0 = text.clone()).await?;
//!         }
//!         Ok(())
//!     }
//! }
//!
//! #[actix::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let runtime = Runtime::start();
//!     runtime.register(|| MotdController).await?;
//!     let user = runtime.state().client();
//!     user.create(Resource::new("network", "hostname", Hostname("node-1".into()))).await?;
//!     // No sleeps: resolves when nothing is in flight, or says what is still busy.
//!     runtime.settled_within(std::time::Duration::from_secs(5)).await?;
//!     let motd = user.get(&Pointer::typed::<Motd>("os", "motd")).await?;
//!     assert_eq!(motd.spec().0, "Welcome to node-1!");
//!     Ok(())
//! }
//! ```
//!
//! A controller this small can also be a closure: [`from_fn`]`("MotdController",
//! inputs, outputs, async |cx| { ... })` builds one, supervised and
//! access-checked like any other (`examples/first_controller.rs`,
//! `examples/quickstart.rs`). The [`testing`](crate::testing) module tests
//! this controller on its own, and [queue controllers](#queue-controllers-one-object-at-a-time)
//! reconcile one object per call.
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
//!
//! # Queue controllers: one object at a time
//! A [`Controller`] reconciles "everything" on any change. A [`QueueController`]
//! reconciles **one resource per call**, from a work queue, with
//! per-controller concurrency and a worker pool shared by all queue
//! controllers ([`default_pool_size`]: sixteen per core) — the model of
//! controller-runtime, kube-runtime and easykube. Register one with
//! [`Runtime::register`](crate::Runtime::register); the
//! [`QueueHandle`] it returns enqueues keys from any source.
//!
//! ```
//! use cosi_runtime::prelude::*;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
//! # #[spec(type = "Ints.test.cosi.dev")]
//! # struct Int(i64);
//! # #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
//! # #[spec(type = "Strs.test.cosi.dev")]
//! # struct Str(String);
//!
//! /// Writes each `Int` as a `Str`; an `Int`'s teardown waits until its `Str` is gone.
//! struct IntToStr;
//!
//! impl QueueController for IntToStr {
//!     fn name(&self) -> &str { "IntToStr" }
//!     fn settings(&self) -> QueueSettings {
//!         QueueSettings {
//!             inputs: vec![Input::primary::<Int>("default")],
//!             outputs: vec![Output::exclusive::<Str>()],
//!             concurrency: 4, // or ..Default::default(): one at a time
//!         }
//!     }
//!     async fn reconcile(&self, cx: &ReconcileContext, ptr: &Pointer) -> Result<Outcome, ReconcileError> {
//!         let out = Pointer::typed::<Str>("default", ptr.id());
//!         // Holds IntToStr's finalizer on the Int: apply while it runs, clean up once it goes.
//!         finalizer(
//!             cx,
//!             ptr,
//!             async |int: Resource<Int>| {
//!                 let text = int.spec().0.to_string();
//!                 cx.modify(&out, move |s| s.spec_mut().0 = text.clone()).await?;
//!                 Ok(Outcome::Done) // or Outcome::RequeueAfter(d); Err(TerminalError::new(e).into()) never retries
//!             },
//!             async |_int| Ok(cx.release(&out).await?), // true once the Str is gone: let the Int go
//!         )
//!         .await
//!     }
//! }
//!
//! # actix::System::new().block_on(async {
//! let runtime = Runtime::start();
//! let handle = runtime.register(|| IntToStr).await?; // handle.enqueue(&ptr) from any source
//! let user = runtime.state().client();
//! let seven = Pointer::typed::<Int>("default", "seven");
//! user.modify(&seven, |i| i.spec_mut().0 = 7).await?;
//! runtime.settled_within(std::time::Duration::from_secs(5)).await?;
//! assert_eq!(user.get(&Pointer::typed::<Str>("default", "seven")).await?.spec().0, "7");
//! user.teardown_and_destroy(&seven).await?; // returns once IntToStr released its Str
//! # let _ = handle;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! [`finalizer`]`(cx, &ptr, apply, cleanup)` is the finalizer dance of
//! kube-runtime in one call: a missing resource is `Done`; a running one gets
//! the controller's finalizer (once), then `apply`; a tearing-down one it
//! holds gets `cleanup`, and the finalizer comes off only when `cleanup`
//! returns `Ok(true)` (an error is retried with backoff, the resource held
//! meanwhile). [`QueueSettings`] has a `Default` (concurrency 1) and
//! `QueueSettings::new(inputs, outputs).with_concurrency(4)`.
//!
//! The work queue's contract is in [`queue`](crate::queue): a key is never
//! processed concurrently, a key re-added while processing runs exactly once
//! more, delayed adds collapse to the earliest, errors and panics back off per
//! key (triggers during a backoff neither cut it short nor inflate it), a
//! [`TerminalError`] is never retried (`tests/queue/queue_model.rs` checks it with
//! many producers and consumers). A panic replaces the instance with a fresh
//! one from the factory, as for a plain controller; reconciles of other keys
//! still running finish on the old one. Per-controller metrics add queue
//! depth, time in queue, reconcile latency and retries.
//!
//! The `cosi-actors` crate (`actors/` in the repository, built only on the
//! public API) has ready-made queue controllers — `Transform` (one or many
//! outputs per input), `Cleanup`, `Destroy` — and two feeders, `Poller` and
//! `Enqueuer`: see its README.

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
//!
//! # Metrics and the dependency graph
//! [`Runtime::metrics`](crate::Runtime::metrics) gives per-controller
//! counters ([`ControllerMetrics`]: reconciles, errors, panics, restarts,
//! retries, queue figures). With the `prometheus` feature (a default),
//! `Runtime::register_metrics` puts them into your `prometheus-client`
//! registry under controller-runtime's own names, labels and buckets
//! (`controller_runtime_reconcile_total{controller,result}`,
//! `workqueue_depth`, … every series at 0 from the first scrape), so the
//! Grafana dashboards written for Kubernetes controllers work unchanged, plus
//! `cosi_*` extras (restarts and retries counted apart);
//! `Runtime::metrics_text` renders the same without a registry (the series:
//! the `prometheus` module). [`Runtime::graph`](crate::Runtime::graph) is the
//! dependency graph of controllers and resource types, exported to DOT and
//! Mermaid; [`Runtime::health`](crate::Runtime::health) says which controller
//! fails, how often and why.

// The files, from the bottom up: each names items only of the files listed
// before it (the `pub use` lines below are facades, not dependencies).
// - `declarations`: Input, Output and their kinds (plain data);
// - `metrics` (the counters, SELF_TRIGGER_LIMIT), `pool`, `health`, and
//   `access` (the access rules over the declarations); the supervisor's
//   `dependency` database and `report` message also sit on the declarations;
// - `context`: the ReconcileContext (it checks new inputs against the
//   supervisor's `dependency` rules);
// - `spec` (the Controller trait) and `queue` (the QueueController trait, its
//   handle), both taking a context; `from_fn` and `finalize` build on them;
// - `outcome`: what a host does around one reconcile;
// - `host`: the actor that runs a controller (the supervisor's `restart`
//   policy, and its `report` for what it tells the supervisor);
// - `plain` and `queue_host`: the two kinds of controller in a host;
// - the supervisor's `actor`, which starts hosts, sits above them all.
mod access;
mod context;
mod declarations;
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

pub use crate::registration::{Factory, Plain, Queue, Registering};
/// The former name of [`QueueController`], kept for one release.
#[doc(hidden)]
pub use queue::QueueController as QController;
/// The former name of [`QueueSettings`], kept for one release.
#[doc(hidden)]
pub type QSettings = QueueSettings;
pub(crate) use access::AccessRules;
pub(crate) use context::Reach;
pub use context::ReconcileContext;
pub use declarations::{ALL_NAMESPACES, Input, InputKind, Output, OutputKind};
pub use finalize::finalizer;
pub use from_fn::{FnController, from_fn};
pub use health::{ControllerHealth, Health};
pub use metrics::{
    ControllerMetrics, ControllerStatus, HistogramSnapshot, LATENCY_BUCKETS, QueueMetrics,
    RECONCILE_TIME_BUCKETS, SELF_TRIGGER_LIMIT, WORKQUEUE_DURATION_BUCKETS, WorkQueueMetrics,
};
pub use pool::default_pool_size;
pub use queue::{
    DEFAULT_CONCURRENCY, Outcome, QueueController, QueueHandle, QueueSettings, TerminalError,
};
pub use spec::{Controller, ReconcileError, ReconcileResult};
