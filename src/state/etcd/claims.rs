//! Claims of exclusive output types across processes, and their fences.
//!
//! One lease per process (TTL [`EtcdConfig::lease_ttl`](super::EtcdConfig::lease_ttl),
//! kept alive every TTL/3). A controller's exclusive output types are claimed
//! together, in one transaction that creates every claim key only if none
//! exists, on that lease: all or nothing, so two processes can never each
//! hold half of a controller's claims. The transaction's revision, the keys'
//! create revision, is the fencing token. A controller that did not win
//! stands by and tries again every TTL/4 (at least 100 ms): the owner's keys
//! vanish with its lease. When the lease is lost (etcd said so, or no
//! keep-alive was answered for a whole TTL), every held claim is lost: its
//! controllers stand by, their writes are refused, and the process campaigns
//! again on a new lease.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use actix::prelude::*;
use etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp};
use futures::channel::mpsc;

use super::super::claims::{ClaimOutputs, ClaimStatus, GetClaims, Ownership, Resign};
use super::EtcdConfig;
use super::keys::Keys;
use crate::resource::Pointer;
use crate::{Error, StorageFailure};

/// A held claim's fencing token: the create revision of the claim key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    /// The claim key.
    pub(crate) key: String,
    /// Its create revision when this process created it.
    pub(crate) token: i64,
    /// The controller that holds it.
    pub(crate) controller: Arc<str>,
    /// The lease lapsed or another process holds the claim now.
    pub(crate) lost: bool,
}

impl Fence {
    /// Refuses a write at once when the claim is known to be lost.
    pub(crate) fn check(&self, ptr: &Pointer) -> Result<(), Error> {
        if self.lost { Err(self.refused(ptr)) } else { Ok(()) }
    }

    /// The error of a write the fence refused.
    pub(crate) fn refused(&self, ptr: &Pointer) -> Error {
        Error::Storage {
            resource: ptr.to_string(),
            failure: StorageFailure::Fenced,
            reason: format!(
                "controller {} no longer holds the claim {} (fencing token {})",
                self.controller, self.key, self.token
            ),
        }
    }
}

/// A controller's claim, won or not.
struct Campaign {
    controller: Arc<str>,
    types: Vec<String>,
    notify: Recipient<Ownership>,
    /// The fencing token while the claim is held.
    token: Option<i64>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Lease {
    #[default]
    None,
    Granting,
    Held(i64),
}

/// The fences of the claims this process holds, by resource type: written
/// by the [`ClaimsActor`], read by the store's commits (which mark a fence
/// lost when etcd says another process holds the claim now). The lock is
/// held for one map operation, never across an `.await`.
#[derive(Clone, Default, Debug)]
pub(crate) struct Fences(Arc<Mutex<HashMap<String, Fence>>>);

impl Fences {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Fence>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The fence a write of `owner` to `resource_type` must pass, if this
    /// process claimed that type for that controller.
    pub(crate) fn fence(&self, owner: &str, resource_type: &str) -> Option<Fence> {
        self.map().get(resource_type).filter(|f| &*f.controller == owner).cloned()
    }

    fn won(&self, resource_type: &str, fence: Fence) {
        self.map().insert(resource_type.to_owned(), fence);
    }

    /// Marks the claim behind `fence` lost (a write found another token).
    pub(crate) fn lost_fence(&self, fence: &Fence) {
        for held in self.map().values_mut() {
            if held.key == fence.key && held.token == fence.token {
                held.lost = true;
            }
        }
    }

    fn lose_all(&self) {
        for fence in self.map().values_mut() {
            fence.lost = true;
        }
    }

    /// Gives up every fence; how many there were.
    fn clear(&self) -> usize {
        let mut map = self.map();
        let n = map.len();
        map.clear();
        n
    }
}

/// The claims of this process: campaigns and the lease.
#[derive(Default)]
struct Claims {
    campaigns: Vec<Campaign>,
    lease: Lease,
    keepalive: Option<actix_rt::task::JoinHandle<()>>,
    /// A round of campaign transactions is in flight.
    campaigning: bool,
    /// A retry of the campaign is scheduled.
    retry_armed: bool,
}

impl std::fmt::Debug for Claims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claims").field("lease", &self.lease).finish_non_exhaustive()
    }
}

/// The lease of this process ended (expired, revoked, or unanswered for a TTL).
#[derive(Debug)]
pub(crate) struct LeaseLost {
    pub(crate) id: i64,
    pub(crate) reason: String,
}

impl Claims {
    /// What this process claims, and whether it holds it.
    fn status(&self) -> Vec<ClaimStatus> {
        let mut out = Vec::new();
        for c in &self.campaigns {
            for t in &c.types {
                out.push(ClaimStatus {
                    resource_type: t.clone(),
                    controller: c.controller.to_string(),
                    owner: c.token.is_some(),
                    token: c.token,
                });
            }
        }
        out
    }

    /// Stops keeping the lease alive, and revokes it (a clean shutdown: the
    /// standbys take over at once instead of after the TTL).
    fn release(
        &mut self,
        client: &Client,
        timeout: Duration,
    ) -> impl Future<Output = ()> + Send + 'static {
        if let Some(task) = self.keepalive.take() {
            task.abort();
        }
        let lease = std::mem::take(&mut self.lease);
        let mut client = client.clone();
        async move {
            if let Lease::Held(id) = lease {
                let _ = tokio::time::timeout(timeout, client.lease_revoke(id)).await;
            }
        }
    }
}

/// Keeps lease `id` alive every TTL/3 until etcd says it expired or no
/// keep-alive was answered for a whole TTL; then reports it lost.
pub(crate) async fn keep_alive(
    mut client: Client,
    id: i64,
    ttl: Duration,
    tx: mpsc::UnboundedSender<LeaseLost>,
) {
    let period = ttl / 3;
    let mut last_ok = Instant::now();
    let mut conn = None;
    loop {
        if conn.is_none() {
            conn = tokio::time::timeout(period, client.lease_keep_alive(id))
                .await
                .ok()
                .and_then(Result::ok);
        }
        if let Some((keeper, stream)) = conn.as_mut() {
            let beat = async {
                keeper.keep_alive().await?;
                stream.message().await
            };
            match tokio::time::timeout(period, beat).await {
                Ok(Ok(Some(resp))) if resp.ttl() > 0 => last_ok = Instant::now(),
                Ok(Ok(Some(_))) => {
                    let _ = tx.unbounded_send(LeaseLost {
                        id,
                        reason: "etcd says the lease expired".into(),
                    });
                    return;
                }
                _ => conn = None,
            }
        }
        if last_ok.elapsed() >= ttl {
            let reason = format!("no keep-alive was answered for {ttl:?}");
            let _ = tx.unbounded_send(LeaseLost { id, reason });
            return;
        }
        tokio::time::sleep(period).await;
    }
}

/// The transaction that claims every type of a campaign, all or none.
fn claim_txn(keys: &Keys, types: &[String], controller: &str, lease: i64) -> Txn {
    let when: Vec<_> = types
        .iter()
        .map(|t| Compare::create_revision(keys.claim(t), CompareOp::Equal, 0))
        .collect();
    let holder = format!("{controller} (pid {})", std::process::id());
    let puts: Vec<_> = types
        .iter()
        .map(|t| {
            TxnOp::put(keys.claim(t), holder.clone(), Some(PutOptions::new().with_lease(lease)))
        })
        .collect();
    Txn::new().when(when).and_then(puts)
}

/// The claim service of an etcd store: an actor of its own, next to the
/// state actor (see [`ClaimService`](super::super::ClaimService)).
pub(crate) struct ClaimsActor {
    client: Client,
    keys: Keys,
    config: EtcdConfig,
    claims: Claims,
    fences: Fences,
}

impl ClaimsActor {
    pub(crate) fn new(client: Client, keys: Keys, config: EtcdConfig, fences: Fences) -> Self {
        ClaimsActor { client, keys, config, claims: Claims::default(), fences }
    }

    /// Tries to win every claim not held; grants a lease first if needed.
    fn campaign(&mut self, ctx: &mut Context<Self>) {
        // etcd grants whole seconds: keep alive and time out by what it granted.
        let ttl = Duration::from_secs(self.config.lease_ttl.as_secs().max(1));
        let claims = &mut self.claims;
        if claims.campaigning || claims.campaigns.iter().all(|c| c.token.is_some()) {
            return;
        }
        let lease = match claims.lease {
            Lease::Granting => return,
            Lease::Held(id) => id,
            Lease::None => {
                claims.lease = Lease::Granting;
                let mut client = self.client.clone();
                let timeout = self.config.request_timeout;
                let grant = async move {
                    tokio::time::timeout(timeout, client.lease_grant(ttl.as_secs() as i64, None))
                        .await
                };
                ctx.spawn(grant.into_actor(self).map(move |result, act, ctx| match result {
                    Ok(Ok(resp)) => act.lease_granted(resp.id(), ttl, ctx),
                    Ok(Err(e)) => act.campaign_later(format!("no lease: {e}"), ctx),
                    Err(_) => act.campaign_later("no lease: etcd did not answer".into(), ctx),
                }));
                return;
            }
        };
        claims.campaigning = true;
        let keys = self.keys.clone();
        let timeout = self.config.request_timeout;
        let rounds: Vec<_> = claims
            .campaigns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.token.is_none())
            .map(|(i, c)| {
                let txn = claim_txn(&keys, &c.types, &c.controller, lease);
                let mut client = self.client.clone();
                async move { (i, tokio::time::timeout(timeout, client.txn(txn)).await) }
            })
            .collect();
        let done = futures::future::join_all(rounds);
        ctx.spawn(done.into_actor(self).map(move |results, act, ctx| {
            act.claims.campaigning = false;
            for (i, result) in results {
                match result {
                    Ok(Ok(resp)) if resp.succeeded() => {
                        let token = resp.header().map_or(0, |h| h.revision());
                        act.won(i, token, lease);
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::debug!("claims: campaign failed: {e}"),
                    Err(_) => tracing::debug!("claims: campaign unanswered"),
                }
            }
            act.campaign_later(String::new(), ctx);
        }));
    }

    fn won(&mut self, i: usize, token: i64, lease: i64) {
        let claims = &mut self.claims;
        if claims.lease != Lease::Held(lease) {
            return; // the lease was lost meanwhile: the keys go with it
        }
        let Some(c) = claims.campaigns.get_mut(i) else { return };
        c.token = Some(token);
        for t in &c.types {
            let fence = Fence {
                key: self.keys.claim(t),
                token,
                controller: c.controller.clone(),
                lost: false,
            };
            self.fences.won(t, fence);
        }
        tracing::info!(
            "claims: controller {} owns {} (fencing token {token})",
            c.controller,
            c.types.join(", ")
        );
        c.notify.do_send(Ownership(true));
    }

    /// Campaigns again after TTL/4 while some claim is not held.
    fn campaign_later(&mut self, why: String, ctx: &mut Context<Self>) {
        if self.claims.lease == Lease::Granting {
            self.claims.lease = Lease::None;
            tracing::warn!("claims: {why}; trying again");
        }
        let claims = &mut self.claims;
        if claims.retry_armed || claims.campaigns.iter().all(|c| c.token.is_some()) {
            return;
        }
        claims.retry_armed = true;
        let every =
            (self.config.lease_ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(2));
        ctx.run_later(every, |act, ctx| {
            act.claims.retry_armed = false;
            act.campaign(ctx);
        });
    }

    fn lease_granted(&mut self, id: i64, ttl: Duration, ctx: &mut Context<Self>) {
        let (tx, rx) = mpsc::unbounded();
        let task = actix_rt::spawn(keep_alive(self.client.clone(), id, ttl, tx));
        self.claims.lease = Lease::Held(id);
        if let Some(old) = self.claims.keepalive.replace(task) {
            old.abort();
        }
        ctx.add_stream(rx);
        self.campaign(ctx);
    }
}

impl Actor for ClaimsActor {
    type Context = Context<Self>;
}

impl StreamHandler<LeaseLost> for ClaimsActor {
    fn handle(&mut self, lost: LeaseLost, ctx: &mut Context<Self>) {
        if self.claims.lease != Lease::Held(lost.id) {
            return;
        }
        self.fences.lose_all();
        let claims = &mut self.claims;
        claims.lease = Lease::None;
        for c in &mut claims.campaigns {
            if c.token.take().is_some() {
                tracing::warn!(
                    "claims: controller {} lost {} ({}); standing by",
                    c.controller,
                    c.types.join(", "),
                    lost.reason
                );
                c.notify.do_send(Ownership(false));
            }
        }
        self.campaign(ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}

impl Handler<ClaimOutputs> for ClaimsActor {
    type Result = ();

    fn handle(&mut self, msg: ClaimOutputs, ctx: &mut Context<Self>) {
        let ClaimOutputs { controller, types, notify } = msg;
        self.claims.campaigns.push(Campaign { controller, types, notify, token: None });
        self.campaign(ctx);
    }
}

impl Handler<Resign> for ClaimsActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Resign, _: &mut Context<Self>) -> Self::Result {
        let held = self.fences.clear();
        if held > 0 || self.claims.lease != Lease::None {
            tracing::info!("claims: giving up {held} claim(s); the lease is revoked");
        }
        self.claims.campaigns.clear();
        Box::pin(self.claims.release(&self.client, self.config.request_timeout))
    }
}

impl Handler<GetClaims> for ClaimsActor {
    type Result = MessageResult<GetClaims>;

    fn handle(&mut self, _: GetClaims, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.claims.status())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(controller: &str) -> Fence {
        Fence {
            key: "/c~owners/T".into(),
            token: 7,
            controller: Arc::from(controller),
            lost: false,
        }
    }

    #[test]
    fn only_the_claiming_controller_is_fenced() {
        let claims = Fences::default();
        claims.won("T", fence("c"));
        assert!(claims.fence("c", "T").is_some());
        assert!(claims.fence("other", "T").is_none(), "finalizer edits of readers pass");
        assert!(claims.fence("c", "U").is_none());
    }

    #[test]
    fn a_lost_fence_refuses_at_once_with_a_typed_error() {
        let claims = Fences::default();
        claims.won("T", fence("c"));
        claims.lost_fence(&fence("c"));
        let ptr = Pointer::new("ns", "T", "a");
        let e = claims.fence("c", "T").unwrap().check(&ptr).unwrap_err();
        assert_eq!(e.storage_failure(), Some(StorageFailure::Fenced));
        assert!(e.to_string().contains("ns"), "{e}");
    }
}
