//! Execution: where controllers run, and how they share their threads.
//!
//! # What runs where
//! A runtime lives on the actix arbiter that started it, its **home
//! arbiter**: the state actor (the single writer of every mutation), the
//! supervisor and the finalizer coordinator always run there. Each
//! controller runs where its [`Placement`] says:
//!
//! | placement | where | use it for |
//! |---|---|---|
//! | [`Placement::Home`] (the default) | the home arbiter, with the state | light controllers that mostly read and write the state |
//! | [`Placement::Spread`] | the next controller arbiter, round robin | controllers that compute |
//! | [`Placement::Arbiter(i)`](Placement::Arbiter) | controller arbiter `i` | controllers that talk to each other, kept on one thread |
//!
//! The runtime has [`RuntimeBuilder::arbiters`](crate::RuntimeBuilder::arbiters)
//! controller arbiters (default [`default_arbiters`]: one per core), each a
//! thread started when the first controller is placed on it. With
//! `arbiters(1)` every placement means the home arbiter: the single-arbiter
//! mode, everything on one thread (and what the test kit uses unless a test asks for
//! [`own_arbiter`](crate::testing::HarnessBuilder::own_arbiter)).
//! [`RuntimeBuilder::placement`](crate::RuntimeBuilder::placement) changes
//! where [`Runtime::register`](crate::Runtime::register) puts controllers;
//! `runtime.register(..).on(placement)` places one.
//!
//! **How arbiters are counted.** `arbiters(n)` counts the *controller*
//! arbiters, not every thread: with n ≥ 2 it is n controller arbiters beside
//! the home one (n + 1 threads), and `arbiters(1)` is the home arbiter alone.
//! Why: the default, one per core, should let compute-heavy controllers use
//! every core. The state's thread is mostly idle under such controllers (it
//! serves their small requests), so counting it among the n would leave
//! n − 1 threads for them and cap the spread speed-up at n − 1 cores (one
//! core on a two-core machine). A user who wants N threads in all asks for
//! `arbiters(N - 1)` (docs/ARCHITECTURE.md, 'Execution').
//!
//! A queue controller's reconciles run on its arbiter, or, wrapped in
//! [`Blocking`], spread over the blocking thread pool. A controller whose
//! reconcile blocks its thread (`std::fs`, a device, a C library) must be
//! wrapped in [`Blocking`]: blocking IO never runs on an arbiter. Wrap it in
//! its factory, `runtime.register(|| Blocking::new(MyController))` (or
//! `register`), as the flagship's `ApplyController` does
//! (`examples/netplane/`).
//!
//! # Why home is the default
//! A controller off the home arbiter pays a thread hop for every state call
//! and every change message (a wake-up of the other thread each way, tens of
//! microseconds when the thread sleeps): a light controller that awaits
//! thousands of small state calls spends more on hops than it saves.
//! Keeping chatty controllers together *off* the state's thread does not
//! help either: their partner is the state. So the default keeps every
//! controller with the state, and only controllers whose reconciles compute
//! for long enough to pay for the hops should be spread. Those need enough
//! reconciles in flight to keep their thread busy while some wait for the
//! state's replies, which the worker pool's default (sixteen per core)
//! allows. `benches/execution.rs` compares both placements, and
//! BENCHMARKS.md holds its figures.
//!
//! The hops are batched both ways: the requests of a controller arbiter wake
//! the state once per pass (its inbox), and the replies of one pass reach each
//! controller arbiter in one wake-up (its reply lane), not one per reply, so
//! a per-object controller with many reconciles in flight pays a wake-up per
//! pass rather than per call. A reconcile that awaits one call at a time
//! still pays a hop per call: there is nothing to batch.
//!
//! # Guarantees in every mode
//! Coalescing, one reconcile at a time per controller, never the same key
//! twice at once, restarts and backoff, access checks, and
//! [`Runtime::settled`](crate::Runtime::settled) hold wherever a controller
//! runs: a controller's host actor is built on its arbiter and never leaves
//! it, and every message it sends or receives carries a unit of activity
//! across threads (`settled()` counts work on every arbiter). The
//! supervisor checks a controller's claims between building it on its
//! arbiter and starting it there; a refused registration leaves nothing
//! behind.
//!
//! # Caveats
//! - Under tokio's paused clock only the home arbiter's clock is virtual:
//!   timers of a controller on another arbiter (backoffs, requeues) run in
//!   real time. Deterministic tests use a single arbiter.
//! - A controller's factory must be `Send` (it is sent to the controller's
//!   arbiter); the controller itself need not be, except in [`Blocking`].
//!
//! # Fairness
//! Every controller actor works in rounds: it handles at most
//! [`ROUND_BUDGET`] messages or finished reconciles, then yields to the
//! executor, so every other actor on its arbiter gets a turn. A hot key a
//! queue controller requeues at zero delay, an input that changes without
//! pause, or a burst of 100,000 ready keys delays another controller on the
//! same arbiter by at most one round of the hot one per turn of the other
//! (`tests/execution/fairness.rs` checks this bound by event ordering).

mod arbiters;
mod blocking;
mod budget;

pub(crate) use arbiters::{ArbiterInit, Arbiters};

/// What to write instead, when the runtime is started outside an actix
/// `System` (the usual cause: `#[tokio::main]` or `#[tokio::test]`, which
/// start a tokio runtime but no actix System, so actix would panic later,
/// deep inside itself, with a message that points nowhere near the cause).
pub(crate) const NO_SYSTEM: &str = "cosi-runtime must be started inside a running actix System, \
and there is none on this thread. Write #[actix::main] (or #[actix_rt::main]) on main instead of \
#[tokio::main], #[actix::test] instead of #[tokio::test], or run the code inside \
actix::System::new().block_on(async { .. })";

/// Panics with [`NO_SYSTEM`] unless an actix `System` runs on this thread.
#[track_caller]
pub(crate) fn require_system() {
    if actix_rt::System::try_current().is_none() {
        panic!("{NO_SYSTEM}");
    }
}
pub use arbiters::Placement;
pub use blocking::Blocking;
pub use budget::ROUND_BUDGET;
pub(crate) use budget::RoundBudget;

/// The default number of controller arbiters: one per core
/// (`std::thread::available_parallelism`), so that controllers placed with
/// [`Placement::Spread`] can use every core. An arbiter costs nothing until a
/// controller is placed on it.
pub fn default_arbiters() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get)
}
