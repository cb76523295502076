//! Who owns which exclusive output type, when several runtimes share a state.
//!
//! On a state that one process owns (memory, redb), the supervisor's checks
//! are the whole story: one controller per exclusive output type. On a shared
//! etcd state (feature `etcd`) the runtime also claims each exclusive output
//! type cluster-wide, and a controller whose claim another process holds is a
//! **standby**: registered, watching, not reconciling. See
//! [`state::etcd`](crate::state#etcd) for the claim protocol and its fencing.

use std::sync::Arc;

use actix::prelude::*;

/// Tells a controller host whether it owns its exclusive outputs now: `true`
/// to reconcile, `false` to stand by.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
#[rtype(result = "()")]
pub(crate) struct Ownership(pub(crate) bool);

/// Claims `types` for `controller` cluster-wide; the state tells `notify`
/// each time the claim is won or lost.
#[derive(Message)]
#[rtype(result = "()")]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) struct ClaimOutputs {
    pub(crate) controller: Arc<str>,
    pub(crate) types: Vec<String>,
    pub(crate) notify: Recipient<Ownership>,
}

/// The claims of this process, for [`State::claims`](super::State::claims).
#[derive(Message)]
#[rtype(result = "Vec<ClaimStatus>")]
pub(crate) struct GetClaims;

/// Gives up every claim of this process for good (its controllers stopped):
/// no more campaigns, and the lease is revoked so that standbys elsewhere
/// take over at once instead of after the lease TTL.
#[derive(Message)]
#[rtype(result = "()")]
#[cfg_attr(not(feature = "etcd"), allow(dead_code))]
pub(crate) struct Resign;

/// One exclusive output type claimed by a controller of this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimStatus {
    /// The output type.
    pub resource_type: String,
    /// The controller of this process that claims it.
    pub controller: String,
    /// Whether this process holds the claim (the controller reconciles); `false`: standby.
    pub owner: bool,
    /// The fencing token of a held claim (the claim key's create revision).
    pub token: Option<i64>,
}
