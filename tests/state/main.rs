//! The state: the conformance suite on every backend, the durable file
//! (reopen, crash, full disk, corruption, failed commits), delivery, the
//! inbox, reply lanes, watches, direct reads, and the model test. The etcd
//! backend's own tests are the `etcd` binary; its conformance runs here with
//! `--features etcd` (`cargo test --features etcd --test state etcd`).
//!
//! `crash` starts this binary again as its child (`crash::crash_child_writer`).
//! proptest keeps a module's failure seeds in
//! `tests/proptest-regressions/<file>.txt`, by file name alone: a property
//! test's module has a name no other test binary uses.

#[path = "../common/mod.rs"]
mod common;

mod across_namespaces;
mod batched_delivery;
mod commit_failure;
mod conformance;
mod corrupt_file;
mod crash;
mod direct_reads;
mod disk_full;
mod durable;
mod inbox;
mod reply_lanes;
mod state_model;
mod watch_lifetime;
mod watch_resume;
