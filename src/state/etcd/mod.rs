//! A shared state on etcd: several runtimes, in several processes or on
//! several machines, on one state (feature `etcd`).
//!
//! ```no_run
//! use cosi_runtime::State;
//! use cosi_runtime::state::EtcdConfig;
//! # actix::System::new().block_on(async {
//! // Every namespace on etcd; `etcd_namespaces` routes some there and
//! // others to redb or memory.
//! let state = State::builder()
//!     .etcd(EtcdConfig::new(["http://127.0.0.1:12379"]).prefix("plane-a"))
//!     .open()
//!     .await?;
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```
//!
//! # Expected flow
//! The store is an [`EtcdBackend`], a [`Backend`](super::Backend) with a
//! feed: the state actor treats it as it treats every shared store (see
//! [`backend`](super::backend#shared-stores)); nothing in the actor is
//! particular to etcd. Opening connects, reads everything under
//! `/<prefix>/` into the cache the state actor serves reads from, and starts
//! **one** prefix watch at the revision after that read: the *change feed*.
//! The feed is the only thing that changes the cache for these namespaces.
//! A write runs the state contract's rules on the cache, as on every
//! backend; the writes of one pass of the actor go to etcd as **one**
//! transaction, each write nested in it with its own compare (the key's mod
//! revision it was computed from; a create: that the key does not exist).
//! A committed write's caller is answered **once the feed has applied it**:
//! so it reads its own write, and its watchers saw the event before the
//! reply, as on the in-memory state. A change made by another process
//! arrives through the same feed and reaches this process's watchers and
//! controllers exactly like a local one.
//!
//! # Guarantees
//! - Keys are `/<prefix>/<namespace>/<type>/<id>` in plain text (parts
//!   escaped so none reaches into another's range); several states share one
//!   etcd under different prefixes.
//! - Versions are 1, then + 1 per write (etcd's own `version` of the key).
//! - **Revisions** are etcd's, with the write's place in its transaction
//!   below them: a state revision is `etcd_revision × 4096 + place`. The
//!   writes of one transaction share one etcd revision, and their place
//!   (their order among that revision's changes, which every process sees
//!   alike) keeps one revision per write, as the state contract requires: a
//!   watch resumed after any of them gets exactly the rest.
//!   [`Metadata::revision`](crate::resource::Metadata::revision) and watch
//!   resume points mean the same in every process. A resource read by a
//!   listing (at open, or after a compaction) carries the first revision of
//!   its etcd revision (a listing does not tell the place).
//! - A write that finds its key changed re-runs the rules on fresh data
//!   (only that write; the others of its transaction stand):
//!   `update` then reports [`VersionConflict`](crate::Error::VersionConflict)
//!   or [`OwnerConflict`](crate::Error::OwnerConflict); `modify` and the
//!   finalizer edits run again, so N processes × M increments give N·M.
//! - Writes to one resource from one process go to etcd one at a time, in the
//!   order they arrived; writes to different resources are batched per pass
//!   and pipelined.
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
//!   [`Error::InvalidInput`] naming the resource: retrying cannot help. A
//!   transaction refused whole is sent again one write at a time, so only
//!   the culprit fails.
//! - etcd lost: writes fail with [`StorageFailure::Unavailable`]
//!   (controllers back off as after any error); the feed reconnects on its
//!   own and every watcher converges to the true state, without a restart.
//!   Nothing acknowledged is lost: an acknowledged write was committed by etcd.
//! - Exclusive outputs are claimed cluster-wide and fenced: see [`claims`](self#exclusive-outputs-across-processes).
//!   The claims are a [`ClaimService`](super::ClaimService), an actor of
//!   their own that the supervisor uses; the store reads the fences it
//!   holds when it builds a transaction.
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
//! A runtime on etcd registers its controllers as usual; the claims are
//! taken at registration, and a standby shows as
//! [`ControllerStatus::Standby`](crate::controller::ControllerStatus::Standby).
//! [`Runtime::stop`](crate::Runtime::stop) revokes the lease instead of
//! letting it expire, so a standby takes over at its next claim check
//! (every TTL/4) rather than after the TTL:
//!
//! ```no_run
//! use cosi_runtime::prelude::*;
//! use cosi_runtime::state::EtcdConfig;
//! # actix::System::new().block_on(async {
//! let config = EtcdConfig::new(["http://10.0.0.1:2379"]).prefix("plane-a");
//! let runtime = Runtime::builder().open(State::builder().etcd(config)).await?;
//! // runtime.register(..): each exclusive output claimed cluster-wide
//! println!("{:?}", runtime.claims().await); // who owns what: owner, or standby
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! `cargo run --example cluster --features etcd` starts a throwaway etcd
//! and three control-plane processes, kills the owner of the scheduler with
//! `SIGKILL`, and shows a standby taking over (`tests/etcd/failover.rs`
//! measures it). Tests start their own etcd on free loopback ports
//! ([`TestEtcd`](crate::testing::etcd::TestEtcd)); without an `etcd` binary
//! they say so and skip (`CI=1` makes that a failure):
//! `cargo test --features etcd --test state etcd`.
//!
//! # Assumptions
//! Every process that shares a prefix runs this runtime (nothing else writes
//! under it); clocks may differ (timestamps are the writer's).
//!
//! # Caveats
//! - Next to other stores (memory, redb) on one state, the etcd namespaces
//!   keep etcd's revisions and the others the state's own: revisions of
//!   namespaces on different stores are not comparable (each watch is about
//!   one namespace; see [`backend`](super::backend#revisions-of-a-mix)).
//! - A write whose answer was lost with the connection may still have been
//!   committed (etcd's own caveat); the caller got an error and retries, and
//!   the rules (versions, no-op modify) make the retry safe.
//! - Reads are served from this process's cache: another process's write is
//!   seen once the feed brings it (under a millisecond on loopback).
//! - Throughput is bounded by etcd; the writes of one pass share a
//!   transaction (etcd 3.4 copies its write buffer per transaction), see
//!   BENCHMARKS.md for the rate against raw puts.
//!
//! # Errors
//! Opening: [`StorageFailure::Unavailable`]
//! if etcd does not answer within [`EtcdConfig::connect_timeout`];
//! [`Error::InvalidInput`] for a bad prefix or no
//! endpoint.

mod backend;
pub(crate) mod claims;
pub(crate) mod feed;
pub(crate) mod keys;
mod revision;
pub(crate) mod shards;

pub use backend::EtcdBackend;
pub use revision::etcd_revision;

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

/// Connects and reads everything under the prefix: the client, the keys,
/// the resources and the etcd revision they were read at.
pub(crate) async fn connect(
    config: &EtcdConfig,
) -> Result<(Client, Keys, Vec<crate::resource::AnyResource>, u64), Error> {
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
    Ok((client, keys, resources, revision))
}
