//! # cosi-runtime
//!
//! Build operating systems and control planes out of small controllers, on actix.
//!
//! Resources (strict [`Metadata`](resource::Metadata) plus an opaque spec) live
//! in a [`State`] whose single actor serializes every change and tells
//! watchers about it.
//!
//! Controllers are actors that declare what they read and write; a supervisor
//! validates those claims and restarts controllers that fail.
//!
//! ## Where to start
//! - [`Runtime`]: start one inside your actix `System`, register controllers,
//!   wait for [`settled`](Runtime::settled).
//! - [`controller`]: the [`Controller`](controller::Controller) trait and its
//!   lifecycle (expected flow, guarantees, assumptions, caveats, errors), and
//!   the per-object [`QController`](controller::QController).
//! - [`queue`]: the work queue behind queue controllers, usable on its own.
//! - [`resource`]: the data model ([`Resource`](resource::Resource),
//!   [`Spec`](resource::Spec), [`Pointer`](resource::Pointer), ...).
//! - [`State`]: create, read, update, tear down and watch resources; keep
//!   chosen namespaces durable on disk ([`State::open_durable`], the
//!   [`Backend`](state::Backend) contract in [`state::backend`]); or share
//!   one state between processes on etcd (`state::etcd`, feature `etcd`:
//!   exclusive outputs claimed cluster-wide, standbys that take over).
//! - [`finalizer`]: how a teardown waits for the controllers that hold a resource.
//! - [`supervisor`]: registration rules, restart policy, the dependency graph;
//!   [`Runtime::health`] and [`Runtime::settled_within`] when something fails.
//! - [`testing`]: test one controller in isolation, deterministically.
//! - `krm` (feature `krm`, default): KRM functions for kpt and nephio's
//!   fn-runtime model (For/Owns/Watch, the condition choreography).
//!
//! Each layer is usable on its own: the [`Store`](state::Store) is plain data
//! and rules, the [`StateActor`](state::StateActor) needs no runtime, and a
//! [`State`] works without controllers.
//!
//! ```
//! use cosi_runtime::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
//! struct Hostname(String);
//! impl Spec for Hostname {
//!     const TYPE: &'static str = "Hostnames.net.cosi.dev";
//! }
//!
//! # actix::System::new().block_on(async {
//! let state = State::start();
//! let created = state.create(Resource::new("network", "hostname", Hostname("node-1".into())), None).await?;
//! assert_eq!(created.version().get(), 1);
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![deny(unsafe_code)]

#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod activity;
pub mod controller;
mod error;
pub mod execution;
pub mod finalizer;
#[cfg(feature = "krm")]
pub mod krm;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod queue;
pub mod resource;
mod runtime;
pub mod state;
pub mod supervisor;
pub mod testing;

pub use error::{Error, Result, StorageFailure};
pub use runtime::{NotIdle, NotSettled, Runtime, RuntimeBuilder};
pub use state::State;

/// The names most programs need, in one import.
pub mod prelude {
    pub use crate::Runtime;
    pub use crate::controller::{
        Controller, Input, InputKind, Output, OutputKind, ReconcileContext, ReconcileResult,
    };
    pub use crate::error::Error;
    pub use crate::resource::{
        AnyResource, Kind, LabelQuery, Metadata, Phase, Pointer, Resource, Spec, Version,
    };
    pub use crate::state::{Event, ExpectedPhase, State, WatchEvent};
}
