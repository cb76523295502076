//! KRM functions: the example functions, the ResourceList wire format,
//! packages, rendering, YAML fidelity and comments, fuzzing.
//!
//! proptest keeps a module's failure seeds in
//! `tests/proptest-regressions/<file>.txt`, by file name alone: a property
//! test's module has a name no other test binary uses.

#![cfg(feature = "krm")]

#[path = "../../examples/krm/fns.rs"]
mod fns;
mod support;

mod comments;
mod downstream;
mod exec;
mod fidelity;
mod fuzz;
mod package;
mod render;
mod resource_list;
mod upstream;
mod validation;
mod wildcard;
mod yaml_scalars;
