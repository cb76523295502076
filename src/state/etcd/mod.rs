//! A shared state on etcd: several runtimes, in several processes or on
//! several machines, on one state (feature `etcd`).
//!
//! ```no_run
//! use cosi_runtime::State;
//! use cosi_runtime::state::EtcdConfig;
//! # actix::System::new().block_on(async {
//! let state = State::builder()
//!     .etcd(EtcdConfig::new(["http://127.0.0.1:12379"]).prefix("plane-a"))
//!     .open()
//!     .await?;
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Expected flow
//! Opening connects, reads everything under `/<prefix>/` into the cache the
//! state actor serves reads from, and starts **one** prefix watch at the
//! revision after that read: the *change feed*. The feed is the only thing
//! that changes the cache. A write runs the state contract's rules on the
//! cache, as on every backend, and sends the result as one etcd transaction
//! that compares the key's mod revision with the one the write was computed
//! from (a create: that the key does not exist). When the transaction
//! succeeds, the caller is answered **once the feed has applied it**: so it
//! reads its own write, and its watchers saw the event before the reply, as
//! on the in-memory state. A change made by another process arrives through
//! the same feed and reaches this process's watchers and controllers exactly
//! like a local one.
//!
//! # Guarantees
//! - Keys are `/<prefix>/<namespace>/<type>/<id>` in plain text (parts
//!   escaped so none reaches into another's range); several states share one
//!   etcd under different prefixes.
//! - Versions are 1, then + 1 per write (etcd's own `version` of the key);
//!   revisions are etcd's, so [`Metadata::revision`](crate::resource::Metadata::revision)
//!   and watch resume points mean the same in every process.
//! - A transaction that finds the key changed re-runs the rules on fresh data:
//!   `update` then reports [`VersionConflict`](crate::Error::VersionConflict)
//!   or [`OwnerConflict`](crate::Error::OwnerConflict); `modify` and the
//!   finalizer edits run again, so N processes × M increments give N·M.
//! - Writes to one resource from one process go to etcd one at a time, in the
//!   order they arrived; writes to different resources are pipelined.
//! - A feed that fell behind a compaction lists again (in pages of 500 keys
//!   at one revision, so a state of any size reads whole) and emits the
//!   differences as events.
//! - No caller waits without bound: a write etcd committed but the feed has
//!   not delivered within the request timeout (the feed's member partitioned
//!   away, a silent connection) is answered with
//!   [`StorageFailure::Unavailable`] saying it is durable, and the feed
//!   watches again. Requests require a leader, so a member cut off from its
//!   cluster fails them instead of serving stale data.
//! - A write etcd refuses (larger than its request limit) is
//!   [`Error::InvalidInput`] naming the resource: retrying cannot help.
//! - etcd lost: writes fail with [`StorageFailure::Unavailable`]
//!   (controllers back off as after any error); the feed reconnects on its
//!   own and every watcher converges to the true state, without a restart.
//!   Nothing acknowledged is lost: an acknowledged write was committed by etcd.
//! - Exclusive outputs are claimed cluster-wide and fenced: see [`claims`](self#exclusive-outputs-across-processes).
//!
//! # Exclusive outputs across processes
//! A runtime on an etcd state claims each exclusive output type of a
//! registered controller with a key created only if absent,
//! `/<prefix>~owners/<type>`, tied to a lease (TTL
//! [`EtcdConfig::lease_ttl`], default 10 s, kept alive every TTL/3). The
//! claim's create revision is a **fencing token**: every write the owning
//! controller makes to that type also compares it, so a process whose lease
//! lapsed cannot write even one late resource ([`StorageFailure::Fenced`]).
//! A second process that registers the same controller is a **standby**: it
//! does not reconcile until the owner's claim goes away (lease lapsed: the
//! owner was killed or partitioned), then takes over. A process that loses
//! its lease pauses those controllers and campaigns again.
//!
//! # Assumptions
//! Every process that shares a prefix runs this runtime (nothing else writes
//! under it); clocks may differ (timestamps are the writer's).
//!
//! # Caveats
//! - An etcd state holds every namespace: per-namespace routing next to it
//!   is refused (etcd assigns the revisions, and a memory namespace beside it
//!   would need revisions of its own). Open a second, in-memory `State` for
//!   data that must stay local.
//! - A write whose answer was lost with the connection may still have been
//!   committed (etcd's own caveat); the caller got an error and retries, and
//!   the rules (versions, no-op modify) make the retry safe.
//! - Reads are served from this process's cache: another process's write is
//!   seen once the feed brings it (p50 0.6–0.8 ms on loopback here).
//! - Throughput is bounded by etcd: every write is one transaction (etcd 3.4
//!   copies its write buffer per transaction), so 64 writes in flight reach
//!   about half the rate of raw unconditional puts; see BENCHMARKS.md.
//!   Batching the writes of one mailbox drain into one transaction would
//!   make them share a revision, which watch resume points do not allow yet.
//!
//! # Errors
//! Opening: [`StorageFailure::Unavailable`]
//! if etcd does not answer within [`EtcdConfig::connect_timeout`];
//! [`Error::InvalidInput`] for a bad prefix or no
//! endpoint.

pub(crate) mod claims;
pub(crate) mod feed;
pub(crate) mod keys;
pub(crate) mod shared;

use std::time::Duration;

use etcd_client::{Client, ConnectOptions};

use crate::{Error, StorageFailure};
use keys::Keys;

/// How to reach etcd, and under which prefix the state lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdConfig {
    endpoints: Vec<String>,
    prefix: String,
    connect_timeout: Duration,
    request_timeout: Duration,
    lease_ttl: Duration,
}

impl EtcdConfig {
    /// A state on the etcd at `endpoints` (`http://host:port`), under the
    /// prefix `cosi`, connect and request timeouts of 5 s, claims on a 10 s lease.
    pub fn new<E: Into<String>>(endpoints: impl IntoIterator<Item = E>) -> Self {
        EtcdConfig {
            endpoints: endpoints.into_iter().map(Into::into).collect(),
            prefix: "cosi".into(),
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(5),
            lease_ttl: Duration::from_secs(10),
        }
    }

    /// The key prefix (default `cosi`): states under different prefixes share
    /// one etcd without seeing each other.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long opening waits for etcd to answer (default 5 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// How long one request waits before it fails as unavailable (default 5 s).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// The TTL of the lease that claims of exclusive outputs hang on (default
    /// 10 s, whole seconds, at least 1): how long a standby waits after the
    /// owner died before it takes over.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.lease_ttl = ttl;
        self
    }

    /// The endpoints, for messages.
    pub fn endpoints(&self) -> &[String] {
        &self.endpoints
    }

    pub(crate) fn describe(&self) -> String {
        format!("etcd at {} (prefix {})", self.endpoints.join(","), self.prefix)
    }
}

/// The error for etcd not answering.
pub(crate) fn unavailable(resource: impl Into<String>, reason: impl ToString) -> Error {
    Error::Storage {
        resource: resource.into(),
        failure: StorageFailure::Unavailable,
        reason: reason.to_string(),
    }
}

/// Connects and reads everything under the prefix.
pub(crate) async fn connect(
    config: EtcdConfig,
) -> Result<(shared::Shared, Vec<crate::resource::AnyResource>, u64), Error> {
    let keys = Keys::new(&config.prefix)?;
    if config.endpoints.is_empty() {
        return Err(Error::InvalidInput {
            resource: config.describe(),
            reason: "no etcd endpoint given".into(),
        });
    }
    // require_leader: a member cut off from its cluster fails requests and
    // cancels watches instead of serving stale data or a silent feed.
    let options = ConnectOptions::new()
        .with_connect_timeout(config.connect_timeout)
        .with_timeout(config.request_timeout)
        .with_require_leader(true);
    let deadline = config.connect_timeout;
    let connecting = Client::connect(config.endpoints.clone(), Some(options));
    let mut client = match tokio::time::timeout(deadline, connecting).await {
        Ok(Ok(client)) => client,
        Ok(Err(e)) => return Err(unavailable(config.describe(), e)),
        Err(_) => {
            return Err(unavailable(config.describe(), format!("no answer within {deadline:?}")));
        }
    };
    let (resources, revision) = feed::list_all(&mut client, &keys, deadline)
        .await
        .map_err(|reason| unavailable(config.describe(), reason))?;
    let shared = shared::Shared::new(client, keys, config, revision);
    Ok((shared, resources, revision))
}
