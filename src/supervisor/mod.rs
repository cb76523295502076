//! The supervisor: registration, the dependency database of claims, the
//! restart policy, and the dependency graph.
//!
//! The pure parts stand on their own: [`restart`](RestartPolicy) (backoff,
//! intensity), the dependency graph ([`DependencyGraph`]) and the database
//! of claims, which enforces the registration rules listed below (a
//! [`ReconcileContext`](crate::controller::ReconcileContext) checks new
//! inputs against them too). The [`Supervisor`] actor applies them: it
//! validates every registration against the claims already made (all or
//! nothing), starts each controller in its own host actor with the restart
//! policy, and decides what happens when a controller exceeds its restart
//! intensity, which the host reports to it.
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

// From the bottom up: `graph` and `restart` name nothing of the crate's
// controllers; `dependency` (the claims) and `report` (what a host tells the
// supervisor) name only the controllers' declarations, so the controller
// module's context and hosts use them; `actor`, the Supervisor, sits above
// the hosts it starts.
pub(crate) mod actor;
mod dependency;
mod graph;
mod report;
mod restart;

pub use actor::StopReason;
pub(crate) use actor::Supervisor;
pub use dependency::RegistrationError;
pub use graph::{DependencyGraph, Edge, EdgeKind};
pub use restart::{Backoff, Intensity, OnExceeded, RestartPolicy};

pub(crate) use actor::{
    ControllerRegistration, GetGraph, GetMetrics, QueueRegistration, Register, Registered,
    Registration, StopAll, check_queue_settings, describe,
};
pub(crate) use dependency::{DependencyDb, check_inputs};
pub(crate) use report::HostReport;
pub(crate) use restart::{Decision, RestartTracker};
