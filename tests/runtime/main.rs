//! The runtime: registration, supervision, access rules, finalizers,
//! settling and metrics. One module per behaviour.
//!
//! The tests that read `log` output or set a tracing subscriber run in
//! binaries of their own (`tracing`, `runtime_log`, `tracing_spans`).

#[path = "../common/mod.rs"]
mod common;

mod access;
mod chain;
mod closure_controllers;
mod coalescing;
mod declaration_errors;
mod events;
mod finalizers;
mod former_names;
mod health;
mod idle;
mod intensity;
mod lifecycle;
mod metrics_scrape;
mod registration;
mod restarts;
mod settle_failed;
mod shared_outputs;
