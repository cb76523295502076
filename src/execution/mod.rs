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

mod blocking;
mod budget;

pub use blocking::Blocking;
pub use budget::ROUND_BUDGET;
pub(crate) use budget::RoundBudget;
