//! The test kit (`cosi_runtime::testing`): harness, probe, faults, panics,
//! the paused clock, and the README's example of it.

#[path = "../common/mod.rs"]
mod common;

mod kit;
mod readme;
