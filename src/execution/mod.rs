//! Execution: where controllers run, and how they share their threads.
//!
//! # Fairness
//! Every controller actor works in rounds: it handles at most
//! [`ROUND_BUDGET`] messages or finished reconciles, then yields to the
//! executor, so every other actor on its arbiter gets a turn. A hot key a
//! queue controller requeues at zero delay, an input that changes without
//! pause, or a burst of 100,000 ready keys delays another controller on the
//! same arbiter by at most one round of the hot one per turn of the other
//! (`tests/execution_fairness.rs` checks this bound by event ordering).

mod arbiters;
mod blocking;
mod budget;

pub(crate) use arbiters::Arbiters;
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
