//! KRM functions and nephio's fn-runtime model (feature `krm`, opt-in:
//! `cosi-runtime = { version = "0.1", features = ["krm"] }`).
//!
//! A KRM function reads a [`ResourceList`] of Kubernetes-style objects on
//! stdin and writes it back on stdout; kpt runs it with
//! `kpt fn eval DIR --exec ./my-fn` or from a Kptfile pipeline. This module
//! gives you:
//!
//! - the wire format: [`ResourceList`], [`FnResult`] with severities, exit
//!   code 1 iff an `error` result is present;
//! - a YAML layer ([`yaml`]) that gives objects a function does not change
//!   back with every scalar's text, type and quoting intact and every comment
//!   in its place, and keeps kpt's path/index/id annotations;
//! - validation before any mutation, all or nothing ([`apply`]);
//! - [`run_stdio`], the whole `main` of an exec function;
//! - the fn-runtime model: [`Upstream`] (For/Owns/Watch, populate → diff →
//!   create / update / delete-mark), [`Downstream`] (removes delete-marked
//!   children, actuates the others) and [`Wildcard`] (the final function), which
//!   talk through Kptfile conditions ([`conditions`]);
//! - [`render`](render::render): a package converges in one process on the
//!   controller engine.
//!
//! # The condition choreography
//! The owner annotation (`fnruntime.nephio.org/owner` by default, see
//! [`Keys`]) holds `<apiVersion>.<Kind>.<name>` of the parent. An upstream
//! function never removes an item: a child that is no longer desired (or any
//! child when a required watch is missing or invalid) gets
//! `fnruntime.nephio.org/delete: "true"`, and the downstream function removes
//! it. Each child has a Kptfile condition of type `<apiVersion>.<Kind>.<name>`
//! of the child and reason = the owner value, `False` while a downstream
//! function has work to do.
//!
//! # Example
//! ```
//! use cosi_runtime::krm::{run, Downstream, Gvk};
//!
//! // A downstream function that labels the ConfigMaps it actuates.
//! let actuator = Downstream::new("actuator", Gvk::new("v1", "ConfigMap"), |cm| {
//!     cm.set_annotation("example.com/actuated", "true");
//!     Ok(())
//! });
//! let input = br#"
//! apiVersion: config.kubernetes.io/v1
//! kind: ResourceList
//! items:
//! - apiVersion: kpt.dev/v1
//!   kind: Kptfile
//!   metadata:
//!     name: pkg
//!   status:
//!     conditions:
//!     - type: v1.ConfigMap.a
//!       status: "False"
//!       reason: example.com/v1.Cluster.a
//! - apiVersion: v1
//!   kind: ConfigMap
//!   metadata:
//!     name: a
//!     annotations:
//!       fnruntime.nephio.org/owner: example.com/v1.Cluster.a
//!   data:
//!     mode: "0640"
//! "#;
//! let out = run(&actuator, input);
//! assert_eq!(out.exit_code, 0);
//! assert!(out.stdout.contains("example.com/actuated: \"true\""));
//! assert!(out.stdout.contains("status: \"True\""));
//! assert!(out.stdout.contains("mode: \"0640\""));
//! ```
//!
//! # The example package
//! `examples/krm/package/` holds a Kptfile, a `Site` with a region, two
//! `Cluster`s and an unrelated ConfigMap and Pod. Three functions
//! (`examples/krm/fns.rs`) render it:
//!
//! - `krm_cluster_config` (upstream): For each `Cluster` a ConfigMap
//!   `<cluster>-config` with its name, node count and the Site's region —
//!   only while exactly one Site with a region exists; otherwise every such
//!   ConfigMap is delete-marked.
//! - `krm_configmap_actuator` (downstream): removes delete-marked ConfigMaps,
//!   marks the others `example.com/actuated: "true"` and sets their
//!   condition True.
//! - `krm_package_summary` (wildcard): once every other condition is True, a
//!   `Summary` listing the live ConfigMaps.
//!
//! Run them with kpt, or pipe the binaries yourself, or let the package
//! converge in one process, where each function is a controller on the
//! engine ([`render`](render::render)):
//!
//! ```sh
//! cargo build --release --examples
//! kpt fn render examples/krm/package --allow-exec                  # the Kptfile pipeline runs the binaries
//! cargo run --release --example krm_render -- examples/krm/package # in process: prints each function's rounds
//! ```
//!
//! Without kpt, `krm_render --source` prints the package as a
//! `ResourceList` and `--sink` writes one back, so the binaries pipe as kpt
//! would run them:
//!
//! ```sh
//! E=target/release/examples
//! $E/krm_render examples/krm/package --source | $E/krm_cluster_config \
//!   | $E/krm_configmap_actuator | $E/krm_package_summary | $E/krm_render examples/krm/package --sink
//! ```
//!
//! Delete a Cluster and render again: its ConfigMap goes and the Summary
//! follows. Objects a function does not change come back as they were
//! written (`0640` stays `0640`, `"on"` stays quoted, comments stay where
//! they were: see [`yaml`]), and the in-process render writes the same bytes
//! as `kpt fn render` (`tests/krm/comments.rs` checks it against the `kpt`
//! on your PATH): as kpt does after each function, a comment follows its
//! field when a function rebuilds, reorders or replaces it, and goes with a
//! field a function deletes. A function of your own is a `main` of one line:
//! `fn main() -> ExitCode { cosi_runtime::krm::run_stdio(&my_function()) }`.
//! BENCHMARKS.md ("KRM functions") times the render of a 10,003-item
//! package in process, through the piped exec binaries and through `kpt fn
//! render`.

pub mod conditions;
mod downstream;
mod error;
mod function;
mod object;
pub mod package;
pub mod render;
mod resource_list;
mod results;
mod upstream;
pub mod validate;
mod wildcard;
pub mod yaml;

pub use conditions::{Condition, DEFAULT_PREFIX, Keys, Status};
pub use downstream::{ActuateFn, Downstream};
pub use error::KrmError;
pub use function::{Declaration, Function, Output, apply, run, run_stdio};
pub use object::{
    FILE_ANNOTATIONS, Gvk, ID_ANNOTATION, INDEX_ANNOTATION, LEGACY_ID_ANNOTATION,
    LEGACY_INDEX_ANNOTATION, LEGACY_PATH_ANNOTATION, Object, PATH_ANNOTATION,
};
pub use resource_list::{API_VERSION, API_VERSION_V1BETA1, ResourceList};
pub use results::{Field, FileRef, FnResult, ResourceRef, Severity, exit_code};
pub use upstream::{CheckFn, PopulateFn, Upstream, Watch, WatchScope, Watched};
pub use wildcard::{GenerateFn, Wildcard};
