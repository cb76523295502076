//! Execution: arbiters, blocking reconciles, fairness on one arbiter, and a
//! chain under panics across arbiters.
//!
//! `stress` installs a panic hook for the process (it silences its own
//! intentional panics only, and hands every other one to the hook before it).

#[path = "../common/mod.rs"]
mod common;

mod arbiters;
mod blocking;
mod fairness;
mod stress;
