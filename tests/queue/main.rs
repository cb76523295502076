//! Queue controllers, their finalizer helper, and the work queue's model test.
//!
//! proptest keeps a module's failure seeds in
//! `tests/proptest-regressions/<file>.txt`, by file name alone: a property
//! test's module has a name no other test binary uses.

#[path = "../common/mod.rs"]
mod common;

mod all_namespaces;
mod controller;
mod finalizer_helper;
mod queue_model;
