//! Fuzz targets for every boundary of cosi-runtime that takes outside input
//! (docs/ARCHITECTURE.md, 'Hostile input'): each target is a function of
//! arbitrary bytes that must not panic, whose errors are typed, and whose
//! invariants (round trips, "a request that fails changes nothing") hold for
//! every input.
//!
//! The `cosi-fuzz` binary runs one of them under AFL++ (`scripts/fuzz.sh`),
//! or replays files through it; `tests/replay.rs` replays the committed
//! corpus and every regression input through each one.

#![warn(missing_docs, rust_2018_idioms)]

pub mod http;
mod targets;

pub use targets::*;

/// A fuzz target: a function of arbitrary bytes that panics on a bug.
pub type Target = fn(&[u8]);

/// Every target, by name (the names of `fuzz/corpus/<name>/`).
pub const TARGETS: &[(&str, Target)] = &[
    ("yaml", targets::yaml),
    ("resource_list", targets::resource_list),
    ("label_selector", targets::label_selector),
    ("field_selector", targets::field_selector),
    ("manifest", targets::manifest),
    ("pointer", targets::pointer),
    ("patch", targets::patch),
    ("admin_http", http::admin_http),
    ("kube_http", http::kube_http),
    ("state_log", targets::state_log),
];

/// The target called `name`.
pub fn target(name: &str) -> Option<Target> {
    TARGETS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}
