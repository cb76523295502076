//! [`LeaseClaims`]: a [`ClaimService`] on `coordination.k8s.io/v1` Leases, so
//! that the exclusive outputs of an operator are held by one of its replicas
//! on a cluster; and the [`LeaseFence`] a [`Sink`](super::Sink) checks before
//! each write.
//!
//! The protocol is client-go's `leaderelection` (the one controller-runtime
//! managers and the kube-scheduler use), one Lease per controller: see
//! [`LeaseClaims`] for the flow, what it guarantees and what it does not.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use actix::prelude::*;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use kube::api::{Api, ObjectMeta, PostParams};

use crate::state::ClaimService;
use crate::state::claims::{ClaimOutputs, ClaimStatus, GetClaims, Ownership, Resign};

/// The annotation a fenced [`Sink`](super::Sink) puts on every object it
/// applies: the [`FencingToken`] of the Lease its controller held when it
/// wrote, as `holder@namespace/lease:transitions`.
pub const FENCING_TOKEN_ANNOTATION: &str = "cosi.dev/fencing-token";

/// The annotation on each Lease that names the output types it claims.
pub const CLAIMS_ANNOTATION: &str = "cosi.dev/claims";

/// How [`LeaseClaims`] campaigns: the namespace of its Leases, this
/// replica's identity, and the timings of client-go's `leaderelection`
/// (defaults 15 s lease, 10 s renew deadline, 2 s retry period, as
/// controller-runtime's manager).
///
/// ```
/// use std::time::Duration;
/// use cosi_runtime::cluster::LeaseSettings;
///
/// let settings = LeaseSettings::new("operators")
///     .lease_duration(Duration::from_secs(30))
///     .renew_deadline(Duration::from_secs(20))
///     .retry_period(Duration::from_secs(4));
/// assert!(settings.identity().contains('_'));
/// ```
#[derive(Clone, Debug)]
pub struct LeaseSettings {
    namespace: String,
    identity: String,
    prefix: String,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
}

impl LeaseSettings {
    /// Leases in `namespace`; this replica's identity is `$HOSTNAME` (a
    /// pod's name) and a random suffix, unique per process.
    pub fn new(namespace: impl Into<String>) -> LeaseSettings {
        let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "cosi".to_owned());
        LeaseSettings {
            namespace: namespace.into(),
            identity: format!("{host}_{}", uuid::Uuid::new_v4()),
            prefix: "cosi-".to_owned(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    /// This replica's `holderIdentity` (unique per replica: two replicas
    /// that share one identity both believe they hold the Lease).
    #[must_use]
    pub fn with_identity(mut self, identity: impl Into<String>) -> LeaseSettings {
        self.identity = identity.into();
        self
    }

    /// This replica's `holderIdentity`.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The prefix of each Lease's name (default `cosi-`): a controller's
    /// Lease is the prefix and its name, lowercased, with every character
    /// a name cannot hold as `-` (`GreetingController`: `cosi-greetingcontroller`).
    #[must_use]
    pub fn name_prefix(mut self, prefix: impl Into<String>) -> LeaseSettings {
        self.prefix = prefix.into();
        self
    }

    /// How long a Lease holds without renewal (`leaseDurationSeconds`, whole
    /// seconds, at least 1): a standby takes over this long after it last
    /// saw the Lease change. Default 15 s.
    #[must_use]
    pub fn lease_duration(mut self, duration: Duration) -> LeaseSettings {
        self.lease_duration = duration;
        self
    }

    /// How long the holder keeps acting without a successful renewal: past
    /// it, its controllers stand by and its fenced sinks refuse to write.
    /// Shorter than the lease duration; the difference is the margin for
    /// clock rates and writes in flight. Default 10 s.
    #[must_use]
    pub fn renew_deadline(mut self, deadline: Duration) -> LeaseSettings {
        self.renew_deadline = deadline;
        self
    }

    /// How often the holder renews and a standby looks at the Lease.
    /// Shorter than the renew deadline. Default 2 s.
    #[must_use]
    pub fn retry_period(mut self, period: Duration) -> LeaseSettings {
        self.retry_period = period;
        self
    }

    /// The name of `controller`'s Lease.
    pub fn lease_name(&self, controller: &str) -> String {
        let name: String = format!("{}{controller}", self.prefix)
            .chars()
            .map(|c| c.to_ascii_lowercase())
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' })
            .collect();
        name.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_owned()
    }

    fn check(&self) -> Result<(), InvalidLeaseSettings> {
        let invalid = |reason: String| Err(InvalidLeaseSettings(reason));
        if self.lease_duration < Duration::from_secs(1) || self.lease_duration.subsec_nanos() != 0 {
            return invalid(format!(
                "the lease duration must be whole seconds, at least 1 s (leaseDurationSeconds): {:?}",
                self.lease_duration
            ));
        }
        if self.renew_deadline >= self.lease_duration {
            return invalid(format!(
                "the renew deadline ({:?}) must be shorter than the lease duration ({:?})",
                self.renew_deadline, self.lease_duration
            ));
        }
        if self.retry_period.is_zero() || self.retry_period >= self.renew_deadline {
            return invalid(format!(
                "the retry period ({:?}) must be above zero and shorter than the renew deadline ({:?})",
                self.retry_period, self.renew_deadline
            ));
        }
        if self.identity.is_empty() {
            return invalid(
                "the identity is empty (an empty holderIdentity is a free Lease)".into(),
            );
        }
        if self.namespace.is_empty() {
            return invalid("the namespace is empty".into());
        }
        Ok(())
    }
}

/// [`LeaseSettings`] that cannot work, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid lease settings: {0}")]
pub struct InvalidLeaseSettings(String);

/// Who held a controller's Lease, in which term: `leaseTransitions`
/// grows by one each time the Lease changes hands, so a write that carries
/// a smaller token than the Lease's own was made under a lost claim.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FencingToken {
    /// The Lease, as `namespace/name`.
    pub lease: String,
    /// The `holderIdentity` of the replica that held it.
    pub holder: String,
    /// The Lease's `leaseTransitions` while it held it.
    pub transitions: i32,
}

impl fmt::Display for FencingToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}:{}", self.holder, self.lease, self.transitions)
    }
}

impl std::str::FromStr for FencingToken {
    type Err = String;

    /// Reads `holder@namespace/lease:transitions`, as written in
    /// [`FENCING_TOKEN_ANNOTATION`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || format!("not a fencing token (holder@namespace/lease:transitions): {s:?}");
        let (rest, transitions) = s.rsplit_once(':').ok_or_else(bad)?;
        let (holder, lease) = rest.rsplit_once('@').ok_or_else(bad)?;
        let transitions = transitions.parse().map_err(|_| bad())?;
        Ok(FencingToken { lease: lease.to_owned(), holder: holder.to_owned(), transitions })
    }
}

/// A held Lease as the fences see it: its token, and until when this
/// replica may act on it (its last renewal's send time plus the renew deadline).
#[derive(Clone, Debug)]
struct Held {
    token: FencingToken,
    valid_until: Instant,
}

/// The held Leases of this replica, by controller. The lock is held for one
/// map operation, never across an `.await`.
#[derive(Clone, Default, Debug)]
struct Fences(Arc<Mutex<HashMap<String, Held>>>);

impl Fences {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn token(&self, controller: &str, now: Instant) -> Option<FencingToken> {
        self.map().get(controller).filter(|h| now < h.valid_until).map(|h| h.token.clone())
    }

    fn hold(&self, controller: &str, held: Held) {
        self.map().insert(controller.to_owned(), held);
    }

    fn lose(&self, controller: &str) {
        self.map().remove(controller);
    }

    fn clear(&self) -> usize {
        let mut map = self.map();
        let n = map.len();
        map.clear();
        n
    }
}

/// Whether a controller of this replica holds its Lease now: what a
/// [`Sink`](super::Sink) made [`fenced`](super::Sink::fenced) checks before
/// each write. Cheap to clone; get one from [`LeaseClaims::fence`].
#[derive(Clone, Debug)]
pub struct LeaseFence {
    controller: Arc<str>,
    fences: Fences,
}

impl LeaseFence {
    /// The controller whose Lease this is.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The token of the Lease while this replica holds it and its last
    /// renewal is younger than the renew deadline (measured on this
    /// replica's monotonic clock); `None` otherwise: do not write.
    pub fn token(&self) -> Option<FencingToken> {
        self.fences.token(&self.controller, Instant::now())
    }
}

/// What the engine knows of a Lease as last read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Record {
    /// `holderIdentity` (empty: free, released).
    pub(crate) holder: String,
    /// `leaseDurationSeconds`.
    pub(crate) duration: Duration,
    /// `leaseTransitions`.
    pub(crate) transitions: i32,
    /// `metadata.resourceVersion`: any write changes it.
    pub(crate) version: String,
}

/// What to do with a Lease after reading it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// There is none: create it, held by this replica, `leaseTransitions` 0.
    Create,
    /// Write it (precondition: the version read) as held by this replica
    /// with `transitions`; `new_term`: a new `acquireTime` (it changed hands).
    Take { transitions: i32, new_term: bool },
    /// Another replica holds it and it has not expired: look again later.
    Wait,
}

/// The decisions of one replica about one Lease, as client-go's
/// `LeaderElector` makes them: pure, the clock given. Expiry is measured on
/// this replica's own monotonic clock from the moment it first saw the
/// Lease's current version, never from the `renewTime` another replica
/// wrote, so clock offsets between machines do not matter (only their rates).
#[derive(Debug)]
pub(crate) struct Elector {
    identity: String,
    renew_deadline: Duration,
    /// The Lease's version last read, and when it was first seen.
    observed: Option<(Record, Instant)>,
    /// While held: the term's transitions and until when this replica may act.
    held: Option<(i32, Instant)>,
}

impl Elector {
    pub(crate) fn new(identity: impl Into<String>, renew_deadline: Duration) -> Elector {
        Elector { identity: identity.into(), renew_deadline, observed: None, held: None }
    }

    /// Records the Lease as read at `now` (`None`: there is none). Returns
    /// `true` when a held Lease turns out lost: another replica holds it now,
    /// or it was released or deleted behind this one's back.
    pub(crate) fn observe(&mut self, current: Option<&Record>, now: Instant) -> bool {
        match current {
            Some(record) => {
                if self.observed.as_ref().is_none_or(|(seen, _)| seen != record) {
                    self.observed = Some((record.clone(), now));
                }
            }
            None => self.observed = None,
        }
        let still_ours = current.is_some_and(|r| {
            r.holder == self.identity && self.held.is_some_and(|(t, _)| t == r.transitions)
        });
        if self.held.is_some() && !still_ours {
            self.held = None;
            return true;
        }
        false
    }

    /// What to do with the Lease last observed, at `now`.
    pub(crate) fn step(&self, now: Instant) -> Step {
        let Some((record, seen)) = &self.observed else { return Step::Create };
        if record.holder == self.identity {
            // Ours (a renewal, or a write of ours whose answer was lost):
            // nobody held it since, so the term and its token go on.
            return Step::Take { transitions: record.transitions, new_term: false };
        }
        let expired = now >= *seen + record.duration;
        if record.holder.is_empty() || expired {
            Step::Take { transitions: record.transitions.saturating_add(1), new_term: true }
        } else {
            Step::Wait
        }
    }

    /// A write of `step` sent at `sent` succeeded and stored `record`:
    /// this replica holds the Lease until `sent` + the renew deadline.
    /// Returns that instant, and whether the hold is new (ownership won).
    pub(crate) fn written(&mut self, record: Record, sent: Instant) -> (Instant, bool) {
        let valid_until = sent + self.renew_deadline;
        let new = self.held.is_none_or(|(t, _)| t != record.transitions);
        self.held = Some((record.transitions, valid_until));
        // Our own write: observed when sent (a standby saw it no earlier).
        self.observed = Some((record, sent));
        (valid_until, new)
    }

    /// Whether the hold lapsed at `now` (no renewal within the renew
    /// deadline); then it is dropped.
    pub(crate) fn lapsed(&mut self, now: Instant) -> bool {
        match self.held {
            Some((_, until)) if now >= until => {
                self.held = None;
                true
            }
            _ => false,
        }
    }

    /// The held term's transitions.
    #[cfg(test)]
    pub(crate) fn held(&self) -> Option<i32> {
        self.held.map(|(t, _)| t)
    }

    /// Drops the hold (resigning).
    pub(crate) fn release(&mut self) -> Option<i32> {
        self.held.take().map(|(t, _)| t)
    }
}

/// The record of a Lease as read.
fn record(lease: &Lease) -> Record {
    let spec = lease.spec.clone().unwrap_or_default();
    Record {
        holder: spec.holder_identity.unwrap_or_default(),
        duration: Duration::from_secs(spec.lease_duration_seconds.unwrap_or(0).max(0) as u64),
        transitions: spec.lease_transitions.unwrap_or(0),
        version: lease.metadata.resource_version.clone().unwrap_or_default(),
    }
}

/// A controller's claim, won or not.
struct Campaign {
    controller: Arc<str>,
    types: Vec<String>,
    notify: Recipient<Ownership>,
    lease: String,
    elector: Elector,
    /// The Lease as last read or written (kept fields: acquireTime, labels).
    last: Option<Lease>,
    /// A read or write of this Lease is in flight.
    busy: bool,
}

/// The actor behind [`LeaseClaims`].
struct LeaseActor {
    api: Api<Lease>,
    settings: LeaseSettings,
    campaigns: Vec<Campaign>,
    fences: Fences,
    resigned: bool,
}

impl Actor for LeaseActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.settings.retry_period, |act, ctx| {
            for i in 0..act.campaigns.len() {
                act.attempt(i, ctx);
            }
        });
    }
}

/// An answer of the cluster, or none in time.
type Answer<T> = Result<Result<T, kube::Error>, tokio::time::error::Elapsed>;

fn describe<T>(answer: &Answer<T>) -> String {
    match answer {
        Ok(Ok(_)) => "ok".into(),
        Ok(Err(kube::Error::Api(status))) => format!("{} {}", status.code, status.message),
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer in time".into(),
    }
}

impl LeaseActor {
    /// How long one request may take: a holder's renewal no longer than
    /// what is left of its hold.
    fn patience(&self, i: usize) -> Duration {
        let deadline = self.settings.renew_deadline;
        match self.campaigns[i].elector.held {
            Some((_, until)) => until.saturating_duration_since(Instant::now()).min(deadline),
            None => deadline,
        }
        .max(Duration::from_millis(10))
    }

    /// Reads the Lease of campaign `i`, then acts on it.
    fn attempt(&mut self, i: usize, ctx: &mut Context<Self>) {
        if self.resigned || self.campaigns[i].busy {
            return;
        }
        self.campaigns[i].busy = true;
        let api = self.api.clone();
        let name = self.campaigns[i].lease.clone();
        let patience = self.patience(i);
        let read = async move { tokio::time::timeout(patience, api.get_opt(&name)).await };
        ctx.spawn(read.into_actor(self).map(move |answer, act, ctx| act.read(i, answer, ctx)));
    }

    fn read(&mut self, i: usize, answer: Answer<Option<Lease>>, ctx: &mut Context<Self>) {
        let Some(c) = self.campaigns.get_mut(i) else { return };
        let Ok(Ok(current)) = answer else {
            c.busy = false;
            tracing::debug!("leases: reading {} failed: {}", c.lease, describe(&answer));
            return;
        };
        let now = Instant::now();
        if c.elector.observe(current.as_ref().map(record).as_ref(), now) {
            let holder = current.as_ref().map(record).map(|r| r.holder).unwrap_or_default();
            self.lost(i, &format!("the Lease is held by {holder:?} now"));
        }
        let c = &mut self.campaigns[i];
        c.last = current;
        let step = c.elector.step(now);
        if step == Step::Wait {
            c.busy = false;
            return;
        }
        let lease = self.desired(i, &step);
        let api = self.api.clone();
        let patience = self.patience(i);
        let create = step == Step::Create;
        let name = self.campaigns[i].lease.clone();
        let sent = Instant::now();
        let write = async move {
            let params = PostParams::default();
            let write = async {
                if create {
                    api.create(&params, &lease).await
                } else {
                    api.replace(&name, &params, &lease).await
                }
            };
            tokio::time::timeout(patience, write).await
        };
        ctx.spawn(write.into_actor(self).map(move |answer, act, ctx| {
            act.written(i, sent, answer, ctx);
        }));
    }

    /// The Lease as this replica writes it for `step`.
    fn desired(&self, i: usize, step: &Step) -> Lease {
        let c = &self.campaigns[i];
        let now = MicroTime(k8s_openapi::jiff::Timestamp::now());
        let last = c.last.clone().unwrap_or_default();
        let old = last.spec.clone().unwrap_or_default();
        let (transitions, acquire) = match step {
            Step::Take { transitions, new_term: false } => {
                (*transitions, old.acquire_time.clone().unwrap_or_else(|| now.clone()))
            }
            Step::Take { transitions, new_term: true } => (*transitions, now.clone()),
            Step::Create | Step::Wait => (0, now.clone()),
        };
        let mut annotations = last.metadata.annotations.clone().unwrap_or_default();
        annotations.insert(CLAIMS_ANNOTATION.to_owned(), c.types.join(","));
        Lease {
            metadata: ObjectMeta {
                name: Some(c.lease.clone()),
                namespace: Some(self.settings.namespace.clone()),
                resource_version: last.metadata.resource_version.clone(),
                labels: last.metadata.labels.clone(),
                annotations: Some(annotations),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(self.settings.identity.clone()),
                lease_duration_seconds: Some(self.settings.lease_duration.as_secs() as i32),
                acquire_time: Some(acquire),
                renew_time: Some(now),
                lease_transitions: Some(transitions),
                ..old
            }),
        }
    }

    fn written(&mut self, i: usize, sent: Instant, answer: Answer<Lease>, ctx: &mut Context<Self>) {
        let Some(c) = self.campaigns.get_mut(i) else { return };
        c.busy = false;
        let Ok(Ok(lease)) = answer else {
            // A conflict: another replica wrote first; the next read tells.
            tracing::debug!("leases: writing {} failed: {}", c.lease, describe(&answer));
            return;
        };
        let stored = record(&lease);
        let (valid_until, won) = c.elector.written(stored.clone(), sent);
        c.last = Some(lease);
        let token = FencingToken {
            lease: format!("{}/{}", self.settings.namespace, c.lease),
            holder: self.settings.identity.clone(),
            transitions: stored.transitions,
        };
        self.fences.hold(&c.controller, Held { token: token.clone(), valid_until });
        if won {
            tracing::info!(
                "leases: controller {} owns {} (Lease {token})",
                c.controller,
                c.types.join(", ")
            );
            c.notify.do_send(Ownership(true));
        }
        let wait = valid_until.saturating_duration_since(Instant::now());
        ctx.run_later(wait, move |act, _| {
            let lapsed = act.campaigns.get_mut(i).is_some_and(|c| c.elector.lapsed(Instant::now()));
            if lapsed {
                act.lost(i, "no renewal succeeded within the renew deadline");
            }
        });
    }

    /// Campaign `i` lost its Lease: its sinks refuse, its controller stands by.
    fn lost(&mut self, i: usize, why: &str) {
        let c = &mut self.campaigns[i];
        c.elector.release();
        self.fences.lose(&c.controller);
        tracing::warn!(
            "leases: controller {} lost {} ({why}); standing by",
            c.controller,
            c.types.join(", ")
        );
        c.notify.do_send(Ownership(false));
    }
}

impl Handler<ClaimOutputs> for LeaseActor {
    type Result = ();

    fn handle(&mut self, msg: ClaimOutputs, ctx: &mut Context<Self>) {
        if self.resigned {
            return;
        }
        let ClaimOutputs { controller, types, notify } = msg;
        let lease = self.settings.lease_name(&controller);
        let elector = Elector::new(self.settings.identity.clone(), self.settings.renew_deadline);
        let campaign =
            Campaign { controller, types, notify, lease, elector, last: None, busy: false };
        self.campaigns.push(campaign);
        self.attempt(self.campaigns.len() - 1, ctx);
    }
}

impl Handler<GetClaims> for LeaseActor {
    type Result = MessageResult<GetClaims>;

    fn handle(&mut self, _: GetClaims, _: &mut Context<Self>) -> Self::Result {
        let now = Instant::now();
        let mut out = Vec::new();
        for c in &self.campaigns {
            let token = self.fences.token(&c.controller, now).map(|t| i64::from(t.transitions));
            for t in &c.types {
                out.push(ClaimStatus {
                    resource_type: t.clone(),
                    controller: c.controller.to_string(),
                    owner: token.is_some(),
                    token,
                });
            }
        }
        MessageResult(out)
    }
}

impl Handler<Resign> for LeaseActor {
    type Result = ResponseFuture<()>;

    /// Releases every held Lease as client-go's `ReleaseOnCancel` does: an
    /// empty `holderIdentity`, `leaseDurationSeconds` 1, the transitions
    /// kept; the fences close first, so nothing is written after.
    fn handle(&mut self, _: Resign, _: &mut Context<Self>) -> Self::Result {
        self.resigned = true;
        let held = self.fences.clear();
        if held > 0 {
            tracing::info!("leases: giving up {held} Lease(s)");
        }
        let mut releases = Vec::new();
        for c in std::mem::take(&mut self.campaigns) {
            let mut elector = c.elector;
            let (Some(transitions), Some(mut lease)) = (elector.release(), c.last) else {
                continue;
            };
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            spec.holder_identity = Some(String::new());
            spec.lease_duration_seconds = Some(1);
            spec.lease_transitions = Some(transitions);
            spec.renew_time = Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
            let api = self.api.clone();
            let name = c.lease;
            let patience = self.settings.renew_deadline;
            releases.push(async move {
                let params = PostParams::default();
                let release = api.replace(&name, &params, &lease);
                if let Ok(Err(e)) = tokio::time::timeout(patience, release).await {
                    tracing::debug!("leases: releasing {name} failed: {e}");
                }
            });
        }
        Box::pin(async move {
            futures::future::join_all(releases).await;
        })
    }
}

/// A claim service on `coordination.k8s.io/v1` Leases: the exclusive
/// outputs of each controller of a runtime are held by one replica of the
/// operator at a time, the others stand by and take over when it goes.
/// Started on the current arbiter; cheap to clone.
///
/// One Lease per controller ([`LeaseSettings::lease_name`], in the
/// namespace the settings name; its `cosi.dev/claims` annotation lists the
/// output types), not per output type: a controller's types are won and
/// lost together, which a Lease per type could not promise (the API has no
/// transaction across objects).
///
/// ```no_run
/// use cosi_runtime::Runtime;
/// use cosi_runtime::cluster::{LeaseClaims, LeaseSettings, Sink};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let client = kube::Client::try_default().await?;
/// let claims = LeaseClaims::start(client.clone(), LeaseSettings::new("operators"))?;
/// let runtime = Runtime::builder().claims(claims.service()).start();
/// // The controller's writes to the cluster go through a fenced sink.
/// let sink = Sink::new(client, "GreetingController").fenced(claims.fence("GreetingController"));
/// # let _ = (runtime, sink);
/// # Ok(()) }
/// ```
///
/// # Expected flow
/// The supervisor claims the exclusive outputs of each controller it
/// starts ([`RuntimeBuilder::claims`](crate::RuntimeBuilder::claims)); the
/// controller stands by. Every retry period this replica reads the
/// controller's Lease and: creates it when there is none; takes it
/// (`holderIdentity` itself, `leaseTransitions` + 1, a new `acquireTime`)
/// when it is free (released) or expired; renews it (`renewTime`) when it
/// holds it; waits otherwise. Every write carries the `resourceVersion`
/// read, so of two replicas that race only one wins (the other gets 409
/// and reads again). Winning tells the controller to reconcile; losing (a
/// read shows another holder, or no renewal succeeded within the renew
/// deadline) tells it to stand by. [`Runtime::stop`](crate::Runtime::stop)
/// releases the held Leases (empty holder, as client-go's
/// `ReleaseOnCancel`), so a standby takes over within a retry period
/// instead of a lease duration.
///
/// # Guarantees
/// - A standby takes a Lease only when its holder released it, or when its
///   `resourceVersion` did not change for a whole `leaseDurationSeconds`
///   measured on the standby's own clock from when it first saw that
///   version: never from the holder's `renewTime`, so clock offsets between
///   machines do not matter.
/// - The holder acts only until the send time of its last successful
///   renewal plus the renew deadline, on its own clock. The Lease cannot
///   look expired to anyone before that renewal was sent plus the lease
///   duration; the renew deadline is shorter. So once a standby has taken
///   over, the old holder has stopped: its controller stands by, and its
///   fenced [`Sink`](super::Sink)s refuse every write, checking the
///   [`LeaseFence`] immediately before sending it.
/// - Each term has a [`FencingToken`] (`leaseTransitions`), which fenced
///   sinks write into an annotation ([`FENCING_TOKEN_ANNOTATION`]) of the
///   objects they apply, so an observer can tell a stale write.
///
/// # Caveats
/// - There is no store that refuses a stale write, as etcd's claim
///   transaction does: the guarantee holds when a write checked by the
///   fence reaches the apiserver within the lease duration minus the renew
///   deadline (5 s by default), and when the machines' clocks run at
///   rates closer than that margin to each other. A write stuck longer in
///   flight (a partition that holds the TCP connection) can land late.
/// - A status write cannot carry the annotation: the apiserver keeps an
///   object's metadata as stored on `/status` writes. A controller that
///   wants its status writes attributed records
///   [`Sink::fencing_token`](super::Sink::fencing_token) in its status.
/// - Leases are per controller name: two operators that name a controller
///   alike share its Lease (set a [`name_prefix`](LeaseSettings::name_prefix)
///   per operator), and two controllers of different names that claim one
///   type are not kept apart across replicas.
/// - Only sinks made [`fenced`](super::Sink::fenced) are fenced; writes
///   through other clients are the controller's business.
///
/// # Errors
/// [`start`](LeaseClaims::start) refuses [`InvalidLeaseSettings`]. A
/// failed read or write of a Lease is logged and tried again after the
/// retry period; a holder that cannot renew for its renew deadline stands
/// by (and campaigns again).
///
/// RBAC: the replica's service account needs `get`, `create` and `update`
/// on `leases` in group `coordination.k8s.io`, in the namespace of the settings.
#[derive(Clone)]
pub struct LeaseClaims {
    addr: Addr<LeaseActor>,
    fences: Fences,
    identity: Arc<str>,
}

impl fmt::Debug for LeaseClaims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseClaims").field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl LeaseClaims {
    /// Starts the service on the current arbiter, with its Leases in the
    /// namespace of `settings`, read and written through `client`.
    ///
    /// # Errors
    /// [`InvalidLeaseSettings`]: a lease duration not in whole seconds, a
    /// renew deadline not shorter than it, a retry period not shorter than
    /// the renew deadline, an empty identity or namespace.
    pub fn start(
        client: kube::Client,
        settings: LeaseSettings,
    ) -> Result<LeaseClaims, InvalidLeaseSettings> {
        settings.check()?;
        crate::execution::require_system();
        let fences = Fences::default();
        let identity = Arc::from(settings.identity.as_str());
        let api = Api::namespaced(client, &settings.namespace);
        let actor = LeaseActor {
            api,
            settings,
            campaigns: Vec::new(),
            fences: fences.clone(),
            resigned: false,
        };
        Ok(LeaseClaims { addr: actor.start(), fences, identity })
    }

    /// The service to give the runtime
    /// ([`RuntimeBuilder::claims`](crate::RuntimeBuilder::claims)).
    pub fn service(&self) -> ClaimService {
        ClaimService::of(&self.addr)
    }

    /// The fence of `controller`'s Lease, for its [`Sink`](super::Sink).
    pub fn fence(&self, controller: &str) -> LeaseFence {
        LeaseFence { controller: Arc::from(controller), fences: self.fences.clone() }
    }

    /// This replica's `holderIdentity`.
    pub fn identity(&self) -> &str {
        &self.identity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    fn rec(holder: &str, transitions: i32, version: &str) -> Record {
        Record { holder: holder.into(), duration: 10 * SEC, transitions, version: version.into() }
    }

    fn elector() -> Elector {
        Elector::new("me", 7 * SEC)
    }

    #[test]
    fn a_missing_lease_is_created_and_a_free_one_taken_in_a_new_term() {
        let t0 = Instant::now();
        let mut e = elector();
        assert!(!e.observe(None, t0));
        assert_eq!(e.step(t0), Step::Create);
        e.observe(Some(&rec("", 3, "5")), t0);
        assert_eq!(e.step(t0), Step::Take { transitions: 4, new_term: true });
    }

    #[test]
    fn another_holders_lease_expires_a_duration_after_its_version_was_first_seen() {
        let t0 = Instant::now();
        let mut e = elector();
        e.observe(Some(&rec("other", 2, "7")), t0);
        assert_eq!(e.step(t0 + 9 * SEC), Step::Wait);
        // Seen again unchanged: the clock still runs from the first sight.
        e.observe(Some(&rec("other", 2, "7")), t0 + 5 * SEC);
        assert_eq!(e.step(t0 + 10 * SEC), Step::Take { transitions: 3, new_term: true });
        // A renewal (a new version) restarts it, whatever its renewTime says.
        e.observe(Some(&rec("other", 2, "8")), t0 + 10 * SEC);
        assert_eq!(e.step(t0 + 19 * SEC), Step::Wait);
        assert_eq!(e.step(t0 + 20 * SEC), Step::Take { transitions: 3, new_term: true });
    }

    #[test]
    fn the_holder_renews_in_its_term_and_lapses_at_the_renew_deadline() {
        let t0 = Instant::now();
        let mut e = elector();
        e.observe(Some(&rec("", 0, "1")), t0);
        let (until, won) = e.written(rec("me", 1, "2"), t0);
        assert!(won);
        assert_eq!(until, t0 + 7 * SEC);
        assert_eq!(e.held(), Some(1));
        assert!(!e.observe(Some(&rec("me", 1, "2")), t0 + SEC));
        assert_eq!(e.step(t0 + SEC), Step::Take { transitions: 1, new_term: false });
        let (until, won) = e.written(rec("me", 1, "3"), t0 + SEC);
        assert!(!won, "a renewal wins nothing new");
        assert!(!e.lapsed(until - Duration::from_millis(1)));
        assert!(e.lapsed(until));
        assert_eq!(e.held(), None);
        // The renew deadline is shorter than the duration: nobody else can
        // have seen it expire yet.
        assert!(until < t0 + SEC + 10 * SEC);
    }

    #[test]
    fn a_holder_that_reads_another_holder_or_no_lease_has_lost() {
        let t0 = Instant::now();
        let mut e = elector();
        e.written(rec("me", 4, "9"), t0);
        assert!(e.observe(Some(&rec("other", 5, "10")), t0 + SEC));
        assert_eq!(e.held(), None);
        assert_eq!(e.step(t0 + SEC), Step::Wait);
        let mut e = elector();
        e.written(rec("me", 4, "9"), t0);
        assert!(e.observe(None, t0 + SEC), "deleted behind our back");
        let mut e = elector();
        e.written(rec("me", 4, "9"), t0);
        assert!(e.observe(Some(&rec("", 4, "10")), t0 + SEC), "released behind our back");
    }

    #[test]
    fn our_own_record_after_a_lapse_is_taken_back_in_the_same_term() {
        let t0 = Instant::now();
        let mut e = elector();
        e.written(rec("me", 4, "9"), t0);
        assert!(e.lapsed(t0 + 7 * SEC));
        assert!(!e.observe(Some(&rec("me", 4, "9")), t0 + 8 * SEC));
        assert_eq!(e.step(t0 + 8 * SEC), Step::Take { transitions: 4, new_term: false });
        let (_, won) = e.written(rec("me", 4, "11"), t0 + 8 * SEC);
        assert!(won, "held again after the lapse");
    }

    #[test]
    fn tokens_read_back_and_lease_names_are_dns_names() {
        let token =
            FencingToken { lease: "ops/cosi-a".into(), holder: "h_1@x".into(), transitions: 3 };
        assert_eq!(token.to_string(), "h_1@x@ops/cosi-a:3");
        assert_eq!(token.to_string().parse::<FencingToken>().unwrap(), token);
        assert!("nope".parse::<FencingToken>().is_err());
        let s = LeaseSettings::new("ops");
        assert_eq!(s.lease_name("GreetingController"), "cosi-greetingcontroller");
        assert_eq!(s.lease_name("My_Ctl!"), "cosi-my-ctl");
    }

    #[test]
    fn settings_keep_the_deadlines_in_order() {
        let s = LeaseSettings::new("ops");
        assert!(s.check().is_ok(), "the defaults: 15 s, 10 s, 2 s");
        assert!(s.clone().renew_deadline(15 * SEC).check().is_err());
        assert!(s.clone().retry_period(10 * SEC).check().is_err());
        assert!(s.clone().lease_duration(Duration::from_millis(1500)).check().is_err());
        assert!(s.clone().with_identity("").check().is_err());
        let short = s.lease_duration(SEC).renew_deadline(Duration::from_millis(600));
        assert!(short.retry_period(Duration::from_millis(200)).check().is_ok());
    }
}
