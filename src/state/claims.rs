//! Who owns which exclusive output type, when several runtimes share a state.
//!
//! On a state that one process owns (memory, redb), the supervisor's checks
//! are the whole story: one controller per exclusive output type. On a shared
//! etcd state (feature `etcd`) the runtime also claims each exclusive output
//! type cluster-wide, and a controller whose claim another process holds is a
//! **standby**: registered, watching, not reconciling. See
//! [`state::etcd`](crate::state#etcd) for the claim protocol and its fencing.
//! An operator whose outputs go to a Kubernetes cluster (feature
//! `kubernetes`) claims them on Leases instead: `cluster::LeaseClaims`,
//! given to `RuntimeBuilder::claims`.

use std::sync::Arc;

use actix::prelude::*;

/// The service that claims exclusive output types across the processes that
/// share a store ([`Backend::claims`](super::Backend::claims)), and fences the
/// writes of the controllers that hold them. The supervisor uses it: it
/// claims the exclusive outputs of each controller it starts, holds the
/// controller as a standby while another process owns them, and resigns
/// when the runtime stops. A [`State`](super::State) whose stores are all
/// its own (memory, redb) has none.
///
/// # Expected flow
/// Registering a controller with exclusive outputs sends its types to the
/// service; the controller stands by until the service says it owns them,
/// and stands by again whenever the claim is lost.
///
/// # Guarantees
/// The service is an actor of its own, next to the state actor: claims are
/// never a request of the state, and the state actor has no part in them
/// beyond routing a write to the store that fences it.
///
/// # Caveats
/// Outputs are declared by type, not by namespace: on a state with a shared
/// store, **every** exclusive output type is claimed across the processes
/// that share it, even one a controller writes only to a namespace on this
/// node's own store. A node-local controller that every node runs declares
/// its outputs [`shared`](crate::controller::Output::shared) instead.
#[derive(Clone)]
pub struct ClaimService {
    claim: Recipient<ClaimOutputs>,
    get: Recipient<GetClaims>,
    resign: Recipient<Resign>,
    shards: Option<super::ShardService>,
}

impl std::fmt::Debug for ClaimService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ClaimService")
    }
}

impl ClaimService {
    /// A service served by `actor`.
    #[cfg_attr(not(any(feature = "etcd", feature = "kubernetes")), allow(dead_code))]
    pub(crate) fn of<A>(actor: &Addr<A>) -> Self
    where
        A: Actor<Context = Context<A>>
            + Handler<ClaimOutputs>
            + Handler<GetClaims>
            + Handler<Resign>,
    {
        ClaimService {
            claim: actor.clone().recipient(),
            get: actor.clone().recipient(),
            resign: actor.clone().recipient(),
            shards: None,
        }
    }

    /// The same service, also sharing the shards of sharded controllers.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn with_shards(mut self, shards: super::ShardService) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The service that shares the shards of sharded queue controllers
    /// among the processes on this store (etcd only).
    pub fn shards(&self) -> Option<&super::ShardService> {
        self.shards.as_ref()
    }

    /// What this process claims, and whether it holds each claim.
    pub async fn status(&self) -> Vec<ClaimStatus> {
        self.get.send(GetClaims).await.unwrap_or_default()
    }

    /// Claims `types` for `controller`; `notify` hears each time the claim
    /// is won or lost.
    pub(crate) fn claim(
        &self,
        controller: Arc<str>,
        types: Vec<String>,
        notify: Recipient<Ownership>,
    ) {
        self.claim.do_send(ClaimOutputs { controller, types, notify });
    }

    /// Gives up every claim for good; resolves once released.
    pub(crate) async fn resign(&self) {
        let _ = self.resign.send(Resign).await;
        if let Some(shards) = &self.shards {
            shards.resign().await;
        }
    }
}

/// Tells a controller host whether it owns its exclusive outputs now: `true`
/// to reconcile, `false` to stand by.
#[derive(Message, Clone, Copy, Debug, PartialEq, Eq)]
#[rtype(result = "()")]
pub(crate) struct Ownership(pub(crate) bool);

/// Claims `types` for `controller` cluster-wide; the state tells `notify`
/// each time the claim is won or lost.
#[derive(Message)]
#[rtype(result = "()")]
#[cfg_attr(not(any(feature = "etcd", feature = "kubernetes")), allow(dead_code))]
pub(crate) struct ClaimOutputs {
    pub(crate) controller: Arc<str>,
    pub(crate) types: Vec<String>,
    pub(crate) notify: Recipient<Ownership>,
}

/// The claims of this process, for [`ClaimService::status`].
#[derive(Message)]
#[rtype(result = "Vec<ClaimStatus>")]
pub(crate) struct GetClaims;

/// Gives up every claim of this process for good (its controllers stopped):
/// no more campaigns, and the lease is revoked so that standbys elsewhere
/// take over at once instead of after the lease TTL.
#[derive(Message)]
#[rtype(result = "()")]
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
    /// The fencing token of a held claim (on etcd the claim key's create
    /// revision; on Leases, `cluster::LeaseClaims`, the Lease's `leaseTransitions`).
    pub token: Option<i64>,
}
