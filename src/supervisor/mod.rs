//! The supervisor: registration, the dependency database of claims, the
//! restart policy, and the dependency graph.
//!
//! The pure parts stand on their own: [`restart`](RestartPolicy) (backoff,
//! intensity) and the dependency graph ([`DependencyGraph`]). The
//! [`Supervisor`] actor applies them: it validates every registration against
//! the claims already made (all or nothing), starts each controller in its own
//! host actor with the restart policy, and decides what happens when a
//! controller exceeds its restart intensity.
//!
//! # Registration rules
//! - Controller names are unique.
//! - An input is (namespace, type, optional id, kind); two inputs of one
//!   controller with the same (namespace, type, id) are an error.
//! - Outputs are keyed by type. Refused: a second exclusive claim; a shared
//!   claim on an exclusively held type; an exclusive claim on a shared type;
//!   one controller sharing a type twice.
//! - A failed registration leaves nothing behind (the Go original keeps the
//!   outputs it added before a failing input; we roll back).

pub(crate) mod actor;
mod dependency;
mod graph;
mod restart;

pub use actor::StopReason;
pub(crate) use actor::Supervisor;
pub use dependency::RegistrationError;
pub use graph::{DependencyGraph, Edge, EdgeKind};
pub use restart::{Backoff, Intensity, OnExceeded, RestartPolicy};

pub(crate) use actor::{
    ControllerRegistration, GetGraph, GetMetrics, HostReport, QueueRegistration, Register,
    Registered, Registration, StopAll, check_queue_settings, describe,
};
pub(crate) use dependency::{DependencyDb, check_inputs};
pub(crate) use restart::{Decision, RestartTracker};
