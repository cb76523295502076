//! [`HostReport`]: what a controller's host tells the supervisor.
//!
//! It is defined here, apart from the [`Supervisor`](super::Supervisor)
//! actor that handles it, so that the hosts send it without depending on the
//! actor that starts them: this file names only the controller's
//! declarations.

use actix::prelude::*;

use crate::controller::Input;

/// Reports from controller hosts (fire and forget): what a host tells the
/// [`Supervisor`](super::Supervisor).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub(crate) enum HostReport {
    /// The controller is failed for good: it exceeded its restart
    /// intensity, returned a terminal error or was denied an access.
    GaveUp {
        /// The controller.
        controller: String,
        /// Its last error.
        error: String,
        /// Whether it exceeded its restart intensity (the only failure
        /// [`OnExceeded::StopRuntime`](super::OnExceeded::StopRuntime) stops
        /// the runtime for; a terminal error marks the one controller failed,
        /// whatever the policy).
        exceeded: bool,
    },
    /// The controller replaced its inputs.
    InputsChanged {
        /// The controller.
        controller: String,
        /// The new inputs.
        inputs: Vec<Input>,
    },
}
