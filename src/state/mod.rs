//! The state: where resources live, and the only way to change them.
//!
//! - [`Store`](crate::dev::Store) is the pure engine: it applies every rule of the state contract
//!   over a [`Backend`] and reports each [`Change`](crate::dev::Change). No actors; unit-tested directly.
//! - [`StateActor`](crate::dev::StateActor) owns one `Store` and serializes every request to it
//!   ([`StateRequest`](crate::dev::StateRequest)); it publishes each change to the watches that see it.
//! - [`Backend`]s keep the writes of chosen namespaces: durable on this
//!   node ([`RedbBackend`]: one file on disk), or shared with other
//!   processes (`EtcdBackend`, feature `etcd`); the
//!   rest stays in memory. Any mix, by namespace. See [`backend`] for the
//!   one contract every store implements and [`StateBuilder`] to open one:
//!
//! ```no_run
//! use cosi_runtime::State;
//! # actix::System::new().block_on(async {
//! // Configuration persists in one file; runtime status stays in memory.
//! let state = State::open_durable("/var/lib/netplane/state.redb", ["config"]).await?;
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```
//! - [`State`] is the cloneable handle with async `get`, `list`, `create`,
//!   `update`, `modify`, `destroy`, `teardown`, `add_finalizer`,
//!   `remove_finalizer`, `teardown_and_destroy`, `watch` and `watch_kind`.
//!
//! # A tour
//! [`State::start`] (inside an actix `System`) starts the state actor and
//! returns a cloneable handle. Every write is a request to that actor, so
//! there is exactly one writer (requests queue up in one inbox that the actor
//! drains whole each turn); reads are served from its cache without a
//! message:
//!
//! ```
//! use cosi_runtime::prelude::*;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
//! #[spec(type = "Links.net.cosi.dev")]
//! struct LinkSpec { mtu: u32, up: bool }
//!
//! # actix::System::new().block_on(async {
//! let state = State::start();
//! let user = state.client(); // a handle that writes as the user; state.client_as("name") for an owner
//! user.create(Resource::new("network", "eth0", LinkSpec { mtu: 1500, up: false })).await?;
//! let eth0 = Pointer::typed::<LinkSpec>("network", "eth0"); // knows its spec type
//! user.modify(&eth0, |l| l.spec_mut().up = true).await?; // creates from LinkSpec::default() if missing
//! let link = user.get(&eth0).await?; // a Resource<LinkSpec>
//! assert!(link.spec().up);
//! let links = user.list_typed::<LinkSpec>("network", &LabelQuery::all()).await?; // sorted by id
//! assert_eq!(links.len(), 1);
//! user.teardown_and_destroy(&eth0).await?;
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```
//!
//! **One way to read and write.** A [`Client`] (a program, a feeder, a
//! tool: `state.client()` writes as the user, `state.client_as("me")` as an
//! owner), a controller's
//! [`ReconcileContext`](crate::controller::ReconcileContext) (writing as the
//! controller) and a test's [`Harness`](crate::testing::Harness) have the
//! same calls, with the same arguments and results — the [`Access`] trait,
//! which also lets you write a helper once for all of them:
//!
//! | call | |
//! |---|---|
//! | `get(&ptr)` | a `Resource<S>` through a `TypedPointer<S>`, an `AnyResource` through a plain `Pointer`; `get_typed::<S>(&ptr)` names `S` for a plain one |
//! | `list(&kind, &query)`, `list_typed::<S>(ns, &query)` | sorted by id; `list_decoded::<S>` sets apart what no longer decodes, naming it |
//! | `create(r)`, `update(r)` | as the handle's owner |
//! | `modify(&ptr, change)` | read-modify-write, from `S::default()` when missing; `modify_or(&ptr, initial, change)` for a spec without `Default` |
//! | `teardown(&ptr)`, `destroy(&ptr)`, `release(&ptr)` | `release` tears down, then destroys once nothing holds it (`true`: gone) |
//!
//! [`State`] itself has the state contract's calls with the owner explicit,
//! as their last argument (`state.create(r, None)`, `state.modify(&ptr,
//! change, Some("me"))`): the raw contract, for the runtime's own writers,
//! tools and tests that act as several owners at once. Programs write
//! through a `Client`. `State` and `Client` also have `teardown_and_destroy`,
//! finalizers and watches. A
//! [`TypedPointer<S>`](crate::resource::TypedPointer) derefs to a plain
//! `Pointer` and `erase()`s into one; reads through it come back typed and
//! `modify` closures need no annotation.
//!
//! Errors are one enum, [`Error`](crate::Error), whose every variant names
//! the resource it is about, with `is_not_found()`-style helpers. Bad input
//! (an empty, over-long or control-character name, a bad label key) is
//! `InvalidInput` and nothing is stored; reading a resource as the wrong spec
//! type is `TypeMismatch`, never a panic.
//!
//! # The contract
//! - `get`: the resource or `NotFound`. `list`: a kind filtered by a
//!   [`LabelQuery`](crate::resource::LabelQuery), sorted by id.
//! - `create`: `AlreadyExists` if the id exists; version 1 and a new
//!   [`uid`](crate::resource::Metadata::uid) for this incarnation; phase,
//!   finalizers and labels as given; the caller becomes the owner.
//! - `update`: checks in this order: `NotFound`, `OwnerConflict` (owners match
//!   exactly; none matches only none), `VersionConflict` (the caller sends the
//!   version it read, and the uid of the incarnation it read if it has one: a
//!   resource destroyed and created again since is a conflict even at the same
//!   version), `PhaseConflict` (expected `Running` unless told otherwise).
//!   Then version + 1, `created` and `uid` kept.
//! - `modify`: create if missing, update otherwise; if the result equals the
//!   stored resource nothing is written and no event is sent.
//! - `destroy`: `NotFound`, `OwnerConflict`, `PendingFinalizers`; the resource
//!   need not be tearing down.
//! - `teardown`: phase `TearingDown` (idempotent, never back to `Running`);
//!   returns whether no finalizers remain.
//! - `add_finalizer`/`remove_finalizer`: ignore owner and phase; concurrent
//!   calls converge.
//! - `teardown_and_destroy`: served by the
//!   [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator).
//! - Watches: see below.
//!
//! # Reads without a round trip
//! `get` and `list` on a [`State`] handle (and through a controller's
//! [`ReconcileContext`](crate::controller::ReconcileContext)) read the cached
//! view the state actor owns directly, under a read lock, with no message to
//! the actor: a reconcile that reads its input and writes its output costs
//! one round trip, not two. The actor is still the only writer, and holds the
//! lock for one store operation at a time, never while user code runs.
//!
//! - **Guarantees.** A read sees every write the actor has applied, in its
//!   order: a caller reads its own writes (a write's reply comes after the
//!   write is in the cache), and a controller woken by a change reads that
//!   change or a later one. A read never sees a write to a durable namespace
//!   before its commit: while a batch is staged or committing, reads go to
//!   the actor as requests, which serves them after the commit (and answers
//!   the rolled-back state if it failed). Errors are the same as a request's
//!   (`InvalidInput` for a bad address, `NotFound`, `Unavailable` once the
//!   state is closed).
//! - **Caveats.** A handle made by [`State::from_recipient`] (a probe) sends
//!   every read to its recipient. While a write to a shared store (etcd) is
//!   being computed, reads ask the actor for that moment; its result reaches
//!   the cache only through the store's change feed.
//!
//! # Requests in passes; changes in batches, replies after them
//! Requests sent through a [`State`] handle do not travel as actix messages:
//! they go into one queue (an allocation-free push; the first push after a
//! drain wakes the actor) that the state actor takes whole on each turn.
//! What one drain took is a **pass**. Requests sent as actix messages (a
//! probe's [`State::from_recipient`] handle) are a pass each.
//!
//! The runtime's queue controllers ([`QueueController`](crate::controller::QueueController))
//! watch in batches: the changes one pass makes reach each of them as **one**
//! message, not one per change. A burst of 1,000 creates then wakes a
//! per-object controller once, and queues its keys in one go.
//!
//! Replies to callers on other arbiter threads travel the same way: the
//! replies of a pass for one thread go into that thread's reply lane, woken
//! once, and are handed out there in order (callers on the actor's thread,
//! or on a thread without an actix arbiter, are answered directly).
//!
//! - **Guarantees.** Requests are served in the order they were sent
//!   (through one handle or several on one thread). A write's reply comes
//!   after the changes of its pass are on their way to every watcher: when a
//!   caller hears back, the controllers its write concerns have it in their
//!   mailboxes, and [`Runtime::settled`](crate::Runtime::settled) waits for
//!   them. A change counts in its watch's window and in `settled()` from the
//!   moment it is made. Per-resource order and the coalescing rules below
//!   are unchanged.
//! - **Expected flow.** The actor serves every request of the pass in order
//!   (durable writes are staged and answered after their commit, as
//!   [`backend`] describes), then sends the pass's batched changes (one
//!   message per watch), then the replies in order.
//! - **Caveats.** Plain controllers, and the actors and streams that users
//!   subscribe ([`State::watch_kind`], [`WatchEvent`]), get one message per
//!   change, sent as it is made (a plain controller collapses changes into
//!   one reconcile anyway).
//!
//! # Watches and slow subscribers
//! `watch(ptr)` first yields the current state (`Created`, or `Destroyed` with a
//! tombstone), then every change. `watch_kind(kind, query, bootstrap)` with
//! bootstrap yields `Created` for each match sorted by id, then `Bootstrapped`,
//! then live events; `Updated` carries the old resource; with a label query an
//! update that starts matching arrives as `Created`, one that stops as `Destroyed`.
//!
//! The Go original keeps a fixed ring buffer per type and kills the whole
//! runtime when a watcher falls behind it. Here a subscriber that falls behind
//! is **coalesced**: each watch has a window of events in flight
//! ([`WatchOptions::window`], default [`DEFAULT_WATCH_WINDOW`]); past it,
//! changes collect in a backlog that keeps only the latest state per resource.
//! So a stalled subscriber costs at most the window plus one entry per distinct
//! resource, no matter how many updates happen; nothing else slows down; and
//! once it catches up it sees the latest state of every resource it watches.
//! What it does not see are the intermediate versions (an `Updated` then spans
//! several versions, and a resource created and destroyed while it was behind
//! never shows up). Per-resource order is always kept, and the backlog goes
//! out in ascending revision: a resource's turn is that of its last change
//! (a `Bootstrapped` marker keeps its place; no change crosses it).
//!
//! # Revisions and resuming
//! Every write takes the next store-wide revision (one per write, not per
//! batch); a stored resource carries the revision of its last write
//! ([`Metadata::revision`](crate::resource::Metadata::revision)). Each
//! delivered [`WatchEvent`] tells the revision the watch is caught up to; a
//! watcher that went away resumes with [`WatchOptions::resume_from`] and gets
//! exactly the changes it missed, as long as the state still keeps them (the
//! last [`DEFAULT_HISTORY`] changes by default; after a reopen, only what
//! came after it). Only the watched kind's own changes count: a watch of a
//! quiet kind resumes from its last event however many changes of other
//! kinds pushed older ones out. Otherwise the watch fails with
//! [`Error::Compacted`](crate::Error::Compacted), and the caller bootstraps again.
//!
//! Two guarantees make list-then-watch exact, as a Kubernetes informer needs
//! it, on every backend:
//! - [`State::list_with_revision`] returns a list with the store revision of
//!   its snapshot; a watch resumed from that revision delivers exactly the
//!   changes the list does not show.
//! - One watch never sees revisions go backwards: live events come in
//!   revision order, a coalesced backlog in ascending revision (above), and a
//!   `Destroyed` event carries the resource's last state with the
//!   **destroy's** revision (a destroy is a write: it takes a revision of its
//!   own), so the resource in it is newer than any event before it.
//!
//! # Durable namespaces
//! By default everything lives in memory. An OS or an appliance keeps its
//! configuration across reboots and crashes: route those namespaces to a
//! durable backend (feature `redb`, a default) and keep runtime status in
//! memory. One line opens a [redb](https://www.redb.org) file and loads what
//! it holds:
//!
//! ```
//! use cosi_runtime::prelude::*;
//! # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
//! # #[spec(type = "Hostnames.net.cosi.dev")]
//! # struct Hostname(String);
//! # actix::System::new().block_on(async {
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("state.redb");
//! // Namespace "config" is durable, every other one stays in memory.
//! let runtime = Runtime::builder().open_durable(&path, ["config"]).await?;
//! runtime.state().client().create(Resource::new("config", "hostname", Hostname("node-1".into()))).await?;
//! runtime.stop().await;
//! runtime.state().close().await?; // commits, releases the file
//!
//! // After a restart (or a crash): the configuration is there, typed.
//! let state = State::open_durable(&path, ["config"]).await?;
//! let host = state.get_typed::<Hostname>(&Pointer::typed::<Hostname>("config", "hostname")).await?;
//! assert_eq!(host.spec().0, "node-1");
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```
//!
//! A write is acknowledged only once it is on disk: the writes of one pass
//! go to disk as one batch, one synced append to a write-ahead log beside the
//! file (`NAME.wal`; keep it with its `.redb` when you copy a state that was
//! not closed), and `SIGKILL` at any moment loses nothing acknowledged and
//! never leaves a batch half written. Reads never touch the disk. A watch
//! resumes from a revision after a reopen ([`WatchOptions::resume_from`]).
//! [`RedbBackend`] gives the flow, every guarantee and the errors at open
//! (locked, damaged, newer format, not writable). Under each fault, what
//! holds, and the test that shows it:
//!
//! | fault | guaranteed | test |
//! |---|---|---|
//! | `SIGKILL` while writing | nothing acknowledged lost, no batch half written, versions never go back | `tests/state/crash.rs` (10 kills; `COSI_CRASH_KILLS=50` for more) |
//! | `SIGKILL` while creating a new file | the file is whole or absent: it always opens | `tests/state/crash.rs` |
//! | disk full | writes fail with `StorageFailure::Full` and change nothing; reads go on; memory namespaces unaffected; writes resume on their own once space is freed | `tests/state_disk_full.rs`, on [`testing::LimitedDisk`](crate::testing::LimitedDisk) |
//! | a damaged or foreign file | `StorageFailure::Corrupt` at open, the file untouched | `tests/state/corrupt_file.rs` |
//! | a commit that fails | the cache rolled back, every caller of the batch told, watchers see nothing | `tests/state/commit_failure.rs` |
//!
//! `examples/soak.rs` runs the same under churn, killing itself every few
//! seconds (`--state DIR --crash-every SECS`).
//!
//! # Several stores in one state
//! Routing mixes stores freely by namespace (the Go runtime's namespaced
//! router): a node can keep the cluster's configuration on a shared etcd
//! (feature `etcd`: several processes on one state, exclusive outputs
//! claimed cluster-wide; see the `state::etcd` module), its own durable state
//! in its redb file, and its runtime status in memory, in one [`State`]
//! ([`StateBuilder`]: `State::builder().etcd_namespaces(config,
//! ["cluster"]).durable(path, ["node"]).open()`).
//!
//! Every store plugs in through the one [`Backend`] contract; the state actor
//! has no store-specific code. Each store keeps its own revisions (see
//! [`backend`](backend#revisions-of-a-mix)). Exclusive outputs are claimed
//! across the processes that share the etcd store whatever namespace they are
//! written in: a node-local controller declares its outputs `shared`
//! (`tests/etcd/mixed_node.rs`: two nodes as child processes, one planner
//! owner and one standby, each applying the plan to its own redb and memory
//! namespaces). The conformance suite ([`testing::conformance`](crate::testing::conformance))
//! runs on memory, redb, redb reopened, etcd, etcd reopened, and two mixes
//! (etcd + memory, etcd + redb + memory); your own backend proves itself
//! with it.

pub(crate) mod actor;
pub(crate) mod apply;
pub mod backend;
mod cache;
pub(crate) mod claims;
pub(crate) mod client;
mod collection;
pub(crate) mod delivery;
#[cfg(feature = "etcd")]
pub mod etcd;
mod event;
pub(crate) mod handle;
mod id_index;
mod inbox;
mod label_index;
mod lane;
mod open;
#[cfg(feature = "redb")]
mod redb;
#[cfg(feature = "redb")]
mod redb_log;
mod reply;
pub(crate) mod request;
mod routes;
pub(crate) mod shards;
mod slab;
pub(crate) mod store;
mod subscriptions;
pub(crate) mod watch;

/// The former name of [`CommitOutcome`], kept for one release.
#[doc(hidden)]
pub use backend::CommitOutcome as Outcome;
pub use backend::{
    Backend, CommitOutcome, Feed, FeedChange, FeedMessage, FeedScope, Precondition, Snapshot,
    Write, WriteOp,
};
pub use claims::{ClaimService, ClaimStatus};
pub use client::{Access, Client, Decoded};
pub use delivery::WatchEvent;
#[cfg(feature = "etcd")]
pub use etcd::{EtcdBackend, EtcdConfig};
pub use event::{Event, WatchId};
pub use handle::{BusyGuard, DEFAULT_WATCH_WINDOW, State, WatchOptions, WatchStream};
pub use open::StateBuilder;
#[cfg(feature = "redb")]
pub use redb::{FORMAT_VERSION, RedbBackend};
pub use request::WatchStats;
pub use routes::Namespaces;
pub use shards::{ShardService, ShardStatus, TAKEOVER_BUCKETS, TakeoverTimes};

/// The durable state's write-ahead log reader, callable on its own by the
/// fuzz targets (`fuzz/` in the repository): a log file is input from disk.
/// Not part of the API: hidden from the docs, and free to change.
#[cfg(feature = "redb")]
#[doc(hidden)]
pub mod fuzzing {
    /// Reads `bytes` as a write-ahead log the way an open does (every
    /// record after batch `logged`) and walks each record's writes. Returns
    /// the number of records and of writes.
    ///
    /// # Errors
    /// What an open reports: a record that passes its checksum but does not
    /// parse.
    pub fn write_ahead_log(bytes: &[u8], logged: u64) -> Result<(usize, usize), std::io::Error> {
        let records = super::redb_log::scan(bytes, logged)?;
        let writes = records.iter().map(|r| r.entries().count()).sum();
        Ok((records.len(), writes))
    }
}
pub use store::ExpectedPhase;
pub use subscriptions::DEFAULT_HISTORY;
pub use watch::ALL_NAMESPACES;
