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
//!   the per-object [`QueueController`](controller::QueueController).
//! - [`queue`]: the work queue behind queue controllers, usable on its own.
//! - [`resource`]: the data model ([`Resource`](resource::Resource),
//!   [`Spec`](resource::Spec), [`Pointer`](resource::Pointer), ...).
//! - [`State`]: create, read, update, tear down and watch resources; keep
//!   chosen namespaces durable on disk ([`State::open_durable`], the
//!   [`Backend`](state::Backend) contract in [`state::backend`]); or share
//!   one state between processes on etcd (`state::etcd`, feature `etcd`:
//!   exclusive outputs claimed cluster-wide, standbys that take over).
//! - [`finalizer`]: how a teardown waits for the controllers that hold a resource.
//! - [`execution`]: what runs where: the home arbiter, controller arbiters
//!   ([`Placement`](execution::Placement)), blocking reconciles
//!   ([`Blocking`](execution::Blocking)), fairness.
//! - [`supervisor`]: registration rules, restart policy, the dependency graph;
//!   [`Runtime::health`] and [`Runtime::settled_within`] when something fails.
//! - [`events`]: Kubernetes Events recorded by the runtime (failures,
//!   panics, restarts) and by controllers (`cx.event(..)`).
//! - [`testing`]: test one controller in isolation, deterministically.
//! - Shortcuts: [`State::client`] (a handle with its owner bound once),
//!   [`TypedPointer`](resource::TypedPointer) (reads and modifies infer the
//!   spec type), `#[derive(Spec)]`, closure controllers
//!   ([`controller::from_fn`]); the generic controllers (`Transform`,
//!   `Cleanup`, `Destroy`) are in the `cosi-actors` crate.
//! - [`prelude`] for programs and controller authors; [`dev`] for backend
//!   and actor authors (the state actor and its messages, the supervisor).
//! - `krm` (feature `krm`): KRM functions for kpt and nephio's
//!   fn-runtime model (For/Owns/Watch, the condition choreography).
//! - `prometheus` (feature `prometheus`, default): controller-runtime's metrics
//!   in your registry ([`Runtime::register_metrics`]).
//! - `admin` (feature `admin`): a read-only HTTP endpoint on actix-web with
//!   metrics, probes, resources, watches as server-sent events, controllers and
//!   the dependency graph (SVG too), for `cosictl` and `curl`.
//! - `kubernetes` (feature `kubernetes-api`): the state served through the
//!   Kubernetes API, to kubectl, client-go, kube-rs and python clients.
//! - `cluster` (feature `kubernetes`): a Kubernetes cluster as source and
//!   sink: its objects mirrored into the state, outputs written back by
//!   server-side apply.
//!
//! Each layer is usable on its own: the [`Store`](dev::Store) is plain data
//! and rules, the [`StateActor`](dev::StateActor) needs no runtime, and a
//! [`State`] works without controllers.
//!
//! ## The repository
//! Beside this crate (`src/`, one directory per module above):
//! - `actors/`: the `cosi-actors` crate (generic controllers and feeders);
//!   `cosictl/`: the admin endpoint's CLI; `derive/`: `#[derive(Spec)]`.
//! - `examples/`: indexed in `examples/README.md`; the flagship is
//!   `examples/netplane/`.
//! - `tests/`, by prefix: `runtime_*` (controllers, supervision), `queue_*`,
//!   `state_*` (the conformance suite on every backend, crashes, full disks,
//!   the model test), `etcd_*` (several processes), `admin_*`,
//!   `kubernetes_*` (with the machine's kubectl), `cluster_*`, `example_*`.
//! - `benches/` (criterion, each case beside a baseline; `benches/kube-peer/`
//!   is the kube-runtime peer) and `scripts/benchmarks.sh`, which writes
//!   `BENCHMARKS.md`; `scripts/instructions.py` counts instructions per
//!   object with callgrind.
//! - `fuzz/`: the AFL++ fuzz targets, a Cargo project of its own
//!   (`fuzz/README.md`).
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
//! let state = State::start().client(); // writes as the user
//! let created = state.create(Resource::new("network", "hostname", Hostname("node-1".into()))).await?;
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
#[cfg(feature = "admin")]
pub mod admin;
mod backoff;
#[cfg(feature = "kubernetes")]
pub mod cluster;
pub mod controller;
mod error;
pub mod events;
pub mod execution;
pub mod finalizer;
mod hashing;
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
mod http_limits;
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
mod http_stop;
#[cfg(feature = "krm")]
pub mod krm;
#[cfg(feature = "kubernetes-api")]
pub mod kubernetes;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod queue;
mod registration;
pub mod resource;
mod runtime;
pub mod shard;
pub mod state;
pub mod supervisor;
pub mod testing;

pub use error::{Error, Result, StorageFailure};
pub use runtime::{NotIdle, NotSettled, Runtime, RuntimeBuilder, SETTLED_PATIENCE};
pub use state::State;

/// The names most programs need, in one import: resources and specs
/// (with `#[derive(Spec)]`), the state and its watches, both controller
/// kinds and what their reconciles return, the runtime and its policies.
pub mod prelude {
    pub use crate::Runtime;
    pub use crate::controller::{
        Controller, Input, InputKind, Outcome, Output, OutputKind, QueueController, QueueHandle,
        QueueSettings, ReconcileContext, ReconcileError, ReconcileResult, TerminalError, finalizer,
    };
    #[doc(hidden)]
    pub use crate::controller::{QController, QSettings};
    pub use crate::error::Error;
    pub use crate::resource::{
        AnyResource, Kind, LabelQuery, Metadata, Phase, Pointer, Resource, Spec, TypedPointer,
        Version,
    };
    pub use crate::state::{
        Access, Client, Decoded, Event, ExpectedPhase, State, WatchEvent, WatchOptions,
    };
    pub use crate::supervisor::{Backoff, RestartPolicy};
}

/// For backend and actor authors: the state actor and its messages, the
/// pure [`Store`](dev::Store) it wraps, the supervisor and the finalizer
/// coordinator. Programs that only use a runtime never need these (actix
/// keeps its own such items in a `dev` module too).
pub mod dev {
    pub use crate::finalizer::coordinator::FinalizerCoordinator;
    pub use crate::state::actor::{CloseResponse, StateActor, StateResponse};
    #[doc(hidden)]
    pub use crate::state::backend::CommitOutcome as Outcome;
    pub use crate::state::backend::{
        Backend, CommitOutcome, Feed, FeedChange, FeedMessage, FeedScope, Precondition, Snapshot,
        Write, WriteOp,
    };
    pub use crate::state::request::{
        Close, StateReply, StateRequest, Subject, TeardownAndDestroy, WatchSink,
    };
    pub use crate::state::store::{Change, ModifyFn, Store};
    pub use crate::state::watch::WatchTarget;
    pub use crate::supervisor::actor::Supervisor;
}
