//! [`StateBuilder`]: open a state whose chosen namespaces are durable.

use std::fmt;
#[cfg(feature = "redb")]
use std::path::PathBuf;

use std::sync::Arc;

use actix::prelude::*;

use super::actor::StateActor;
use super::backend::{Backend, Feed};
use super::claims::ClaimService;
use super::handle::{Parts, State};
use super::routes::{Namespaces, Routes};
use super::store::Store;
use super::subscriptions::DEFAULT_HISTORY;
use crate::Error;
use crate::activity::Activity;
use crate::finalizer::FinalizerCoordinator;

type BlockingOpener = Box<dyn FnOnce() -> Result<Box<dyn Backend>, Error> + Send>;

/// How a backend is opened: a file on a blocking thread, or a store reached
/// over the network, connected on the arbiter.
enum Opener {
    Blocking(BlockingOpener),
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    Connect(futures::future::LocalBoxFuture<'static, Result<Box<dyn Backend>, Error>>),
}

/// Opens a [`State`] with some namespaces on durable backends and the rest in
/// memory (an OS persists its configuration, not its runtime status).
///
/// Default: everything in memory, as [`State::start`].
///
/// ```
/// use cosi_runtime::state::StateBuilder;
/// # actix::System::new().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let state = StateBuilder::new()
///     .durable(dir.path().join("state.redb"), ["config"])
///     .open()
///     .await?;
/// state.close().await?;
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
///
/// # Errors at open
/// Every backend is opened and read when [`open`](StateBuilder::open) runs
/// (on a blocking thread, never on the arbiter); a file that cannot be used
/// gives [`Error::Storage`] and the state does not start.
#[must_use]
pub struct StateBuilder {
    backends: Vec<(Namespaces, Opener)>,
    history: usize,
    pub(crate) activity: Option<Activity>,
}

impl Default for StateBuilder {
    fn default() -> Self {
        StateBuilder::new()
    }
}

impl fmt::Debug for StateBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateBuilder")
            .field("backends", &self.backends.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("history", &self.history)
            .finish()
    }
}

impl StateBuilder {
    /// Everything in memory, the default history.
    pub fn new() -> Self {
        StateBuilder { backends: Vec::new(), history: DEFAULT_HISTORY, activity: None }
    }

    /// Keeps `namespaces` in `backend`. The first backend that claims a
    /// namespace gets it; [`Namespaces::All`] takes whatever no list names.
    pub fn backend(mut self, namespaces: impl Into<Namespaces>, backend: impl Backend) -> Self {
        let open: BlockingOpener = Box::new(move || Ok(Box::new(backend) as _));
        self.backends.push((namespaces.into(), Opener::Blocking(open)));
        self
    }

    /// Keeps `namespaces` durable in a [`RedbBackend`](super::RedbBackend) file
    /// at `path` (created if missing).
    #[cfg(feature = "redb")]
    pub fn durable(mut self, path: impl Into<PathBuf>, namespaces: impl Into<Namespaces>) -> Self {
        let path = path.into();
        let open: BlockingOpener =
            Box::new(move || Ok(Box::new(super::RedbBackend::open(&path)?) as _));
        self.backends.push((namespaces.into(), Opener::Blocking(open)));
        self
    }

    /// How many recent changes the state keeps for watches that resume
    /// (default [`DEFAULT_HISTORY`]; 0 turns resuming off). A watch of a
    /// kind resumes as long as none of *that kind's* changes after its
    /// revision were dropped: a quiet kind's watch resumes from its last
    /// event however many changes of other kinds came since.
    pub fn history(mut self, changes: usize) -> Self {
        self.history = changes;
        self
    }

    /// Opens every backend, loads what they hold into the cache, and starts
    /// the state on the current arbiter. Must be called inside a running
    /// actix `System`.
    ///
    /// # Errors
    /// [`Error::Storage`] when a backend cannot be opened or read;
    /// [`Error::InvalidInput`] for a shared store's bad configuration.
    pub async fn open(self) -> Result<State, Error> {
        let StateBuilder { backends, history, activity } = self;
        let mut namespaces = Vec::with_capacity(backends.len());
        let mut openers = Vec::with_capacity(backends.len());
        for (ns, opener) in backends {
            namespaces.push(ns);
            // Stores reached over the network connect here, on the arbiter;
            // files open below, on a blocking thread.
            openers.push(match opener {
                Opener::Blocking(open) => open,
                Opener::Connect(connect) => {
                    let backend = connect.await?;
                    Box::new(move || Ok(backend)) as BlockingOpener
                }
            });
        }
        // First come, first served: a later `add` overwrites, so add in reverse.
        let mut routes = Routes::default();
        for (i, ns) in namespaces.iter().enumerate().rev() {
            routes.add(ns, i);
        }
        let (routes, loaded) = actix_rt::task::spawn_blocking(move || {
            let loaded = load_all(openers, &routes);
            (routes, loaded)
        })
        .await
        .map_err(|e| Error::Storage {
            resource: "the state".into(),
            failure: crate::StorageFailure::Io,
            reason: format!("the thread that opened the backends failed: {e}"),
        })?;
        let Loaded { store, backends, shared } = loaded?;
        let claims = backends.iter().find_map(|b| b.claims());
        let actor = StateActor::with_parts(store, routes, backends, shared, history);
        Ok(State::start_actor(actor, activity.unwrap_or_default(), claims))
    }
}

#[cfg(feature = "etcd")]
impl StateBuilder {
    /// Keeps every namespace that no other backend of this builder names on
    /// a shared etcd store (feature `etcd`): see [`state::etcd`](super::etcd)
    /// for what it guarantees. Connects when [`open`](Self::open) runs.
    ///
    /// ```no_run
    /// use cosi_runtime::State;
    /// use cosi_runtime::state::EtcdConfig;
    /// # actix::System::new().block_on(async {
    /// let state = State::builder().etcd(EtcdConfig::new(["http://127.0.0.1:12379"])).open().await?;
    /// # Ok::<(), cosi_runtime::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn etcd(self, config: super::EtcdConfig) -> Self {
        self.etcd_namespaces(config, Namespaces::All)
    }

    /// Keeps `namespaces` on a shared etcd store (feature `etcd`), next to
    /// whatever else this builder routes: the Go runtime's namespaced
    /// router, one state over several stores. See [`backend`](super::backend#revisions-of-a-mix)
    /// for how the revisions of a mix compose.
    ///
    /// ```no_run
    /// use cosi_runtime::State;
    /// use cosi_runtime::state::EtcdConfig;
    /// # actix::System::new().block_on(async {
    /// // Cluster-wide configuration shared on etcd, this node's own state
    /// // on disk, everything else (runtime status) in memory.
    /// let state = State::builder()
    ///     .etcd_namespaces(EtcdConfig::new(["http://127.0.0.1:12379"]), ["cluster"])
    ///     .durable("/var/lib/node/state.redb", ["node"])
    ///     .open()
    ///     .await?;
    /// # Ok::<(), cosi_runtime::Error>(())
    /// # }).unwrap();
    /// ```
    pub fn etcd_namespaces(
        mut self,
        config: super::EtcdConfig,
        namespaces: impl Into<Namespaces>,
    ) -> Self {
        let connect = async move {
            let backend = super::etcd::EtcdBackend::connect(config).await?;
            Ok(Box::new(backend) as Box<dyn Backend>)
        };
        self.backends.push((namespaces.into(), Opener::Connect(Box::pin(connect))));
        self
    }
}

/// The backends opened and loaded, the cache filled.
struct Loaded {
    store: Store,
    backends: Vec<Box<dyn Backend>>,
    /// The shared stores: index, feed, the revision of their snapshot.
    shared: Vec<(usize, Feed, u64)>,
}

fn load_all(openers: Vec<BlockingOpener>, routes: &Routes) -> Result<Loaded, Error> {
    let mut store = Store::new();
    let mut backends = Vec::with_capacity(openers.len());
    let mut shared = Vec::new();
    for open in openers {
        let mut backend = open()?;
        let snapshot = backend.load()?;
        match backend.feed() {
            Some(feed) => {
                // Other processes on the same store may route more of their
                // namespaces there: only this state's namespaces of it load.
                let index = backends.len();
                let mut resources = snapshot.resources;
                resources.retain(|r| routes.route(r.pointer().namespace()) == Some(index));
                store.load_shared(resources);
                shared.push((index, feed, snapshot.revision));
            }
            None => store.load(snapshot.resources, snapshot.revision),
        }
        backends.push(backend);
    }
    Ok(Loaded { store, backends, shared })
}

/// Starting a state: the one place that spawns the state actor and its
/// finalizer coordinator.
impl State {
    /// Starts an in-memory state (a [`StateActor`](crate::dev::StateActor) and a [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator))
    /// on the current arbiter.
    ///
    /// # Panics
    /// Outside a running actix `System` (under `#[tokio::main]`, say), with
    /// a message that says what to write instead.
    #[track_caller]
    pub fn start() -> State {
        State::start_actor(StateActor::new(), Activity::new(), None)
    }

    /// A [`StateBuilder`]: some namespaces on durable backends, the rest in memory.
    pub fn builder() -> StateBuilder {
        StateBuilder::new()
    }

    /// Opens a state that keeps `namespaces` durable in the file at `path`
    /// (created if missing) and everything else in memory; what the file
    /// holds is loaded first. The one-line form of
    /// `State::builder().durable(path, namespaces).open()`.
    ///
    /// # Errors
    /// [`Error::Storage`] if the file cannot be used (locked by another
    /// process, corrupt, of a newer format, in a read-only place).
    #[cfg(feature = "redb")]
    pub async fn open_durable(
        path: impl Into<std::path::PathBuf>,
        namespaces: impl Into<Namespaces>,
    ) -> Result<State, Error> {
        State::builder().durable(path, namespaces).open().await
    }

    /// Starts `actor` and its finalizer coordinator on the current arbiter.
    pub(crate) fn start_actor(
        actor: StateActor,
        activity: Activity,
        claims: Option<ClaimService>,
    ) -> State {
        crate::execution::require_system();
        let view = Some(actor.store.view());
        let inbox = Some(actor.inbox.clone());
        let actor = actor.start();
        let closer = actor.clone().recipient();
        let bare = Parts {
            requests: actor.recipient(),
            coordinator: None,
            activity,
            closer: Some(closer),
            claims,
            view,
            inbox,
        };
        let coordinator = FinalizerCoordinator::new(State(Arc::new(bare.clone()))).start();
        State(Arc::new(Parts { coordinator: Some(coordinator.recipient()), ..bare }))
    }
}
