//! [`StateBuilder`]: open a state whose chosen namespaces are durable.

use std::fmt;
#[cfg(feature = "redb")]
use std::path::PathBuf;

use super::actor::{Routes, StateActor};
use super::backend::Backend;
use super::client::State;
use super::store::Store;
use super::subscriptions::DEFAULT_HISTORY;
use crate::Error;
use crate::activity::Activity;

/// Which namespaces a backend keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Namespaces {
    /// Every namespace not routed elsewhere.
    All,
    /// Exactly these.
    Only(Vec<String>),
}

impl<S: Into<String>, const N: usize> From<[S; N]> for Namespaces {
    fn from(list: [S; N]) -> Self {
        Namespaces::Only(list.into_iter().map(Into::into).collect())
    }
}

impl<S: Into<String>> From<Vec<S>> for Namespaces {
    fn from(list: Vec<S>) -> Self {
        Namespaces::Only(list.into_iter().map(Into::into).collect())
    }
}

type Opener = Box<dyn FnOnce() -> Result<Box<dyn Backend>, Error> + Send>;

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
    #[cfg(feature = "etcd")]
    etcd: Option<super::EtcdConfig>,
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
        StateBuilder {
            backends: Vec::new(),
            #[cfg(feature = "etcd")]
            etcd: None,
            history: DEFAULT_HISTORY,
            activity: None,
        }
    }

    /// Keeps `namespaces` in `backend`. The first backend that claims a
    /// namespace gets it; [`Namespaces::All`] takes whatever no list names.
    pub fn backend(mut self, namespaces: impl Into<Namespaces>, backend: impl Backend) -> Self {
        self.backends.push((namespaces.into(), Box::new(move || Ok(Box::new(backend) as _))));
        self
    }

    /// Keeps `namespaces` durable in a [`RedbBackend`](super::RedbBackend) file
    /// at `path` (created if missing).
    #[cfg(feature = "redb")]
    pub fn durable(mut self, path: impl Into<PathBuf>, namespaces: impl Into<Namespaces>) -> Self {
        let path = path.into();
        self.backends.push((
            namespaces.into(),
            Box::new(move || Ok(Box::new(super::RedbBackend::open(&path)?) as _)),
        ));
        self
    }

    /// How many recent changes the state keeps for watches that resume
    /// (default [`DEFAULT_HISTORY`]; 0 turns resuming off).
    pub fn history(mut self, changes: usize) -> Self {
        self.history = changes;
        self
    }

    /// Opens every backend, loads what they hold into the cache, and starts
    /// the state on the current arbiter. Must be called inside a running
    /// actix `System`.
    ///
    /// # Errors
    /// [`Error::Storage`] when a backend cannot be opened or read.
    pub async fn open(self) -> Result<State, Error> {
        #[cfg(feature = "etcd")]
        let (this, etcd) = {
            let mut this = self;
            let etcd = this.etcd.take();
            (this, etcd)
        };
        #[cfg(not(feature = "etcd"))]
        let this = self;
        #[cfg(feature = "etcd")]
        if let Some(config) = etcd {
            return this.open_etcd(config).await;
        }
        let StateBuilder { backends, history, activity, .. } = this;
        let (namespaces, openers): (Vec<_>, Vec<_>) = backends.into_iter().unzip();
        let loaded =
            actix_rt::task::spawn_blocking(move || load_all(openers)).await.map_err(|e| {
                Error::Storage {
                    resource: "the state".into(),
                    failure: crate::StorageFailure::Io,
                    reason: format!("the thread that opened the backends failed: {e}"),
                }
            })??;
        let (store, backends) = loaded;
        // First come, first served: a later `add` overwrites, so add in reverse.
        let mut routes = Routes::default();
        for (i, ns) in namespaces.iter().enumerate().rev() {
            routes.add(ns, i);
        }
        let actor = StateActor::with_parts(store, routes, backends, history);
        Ok(State::start_actor(actor, activity.unwrap_or_default()))
    }
}

#[cfg(feature = "etcd")]
impl StateBuilder {
    /// Every namespace on a shared etcd state (feature `etcd`): see
    /// [`state::etcd`](super::etcd) for what it guarantees.
    ///
    /// ```no_run
    /// use cosi_runtime::State;
    /// use cosi_runtime::state::EtcdConfig;
    /// # actix::System::new().block_on(async {
    /// let state = State::builder().etcd(EtcdConfig::new(["http://127.0.0.1:12379"])).open().await?;
    /// # Ok::<(), cosi_runtime::Error>(())
    /// # }).unwrap();
    /// ```
    ///
    /// An etcd state holds every namespace: [`open`](Self::open) refuses it
    /// next to another backend ([`Error::InvalidInput`]).
    pub fn etcd(mut self, config: super::EtcdConfig) -> Self {
        self.etcd = Some(config);
        self
    }

    async fn open_etcd(self, config: super::EtcdConfig) -> Result<State, Error> {
        if !self.backends.is_empty() {
            return Err(Error::InvalidInput {
                resource: config.describe(),
                reason: "an etcd state holds every namespace; it cannot be combined with \
                         other backends (open a second, in-memory State for local data)"
                    .into(),
            });
        }
        let (shared, resources, revision) = super::etcd::connect(config).await?;
        let mut store = Store::new();
        store.load(resources, revision);
        let actor = StateActor::with_shared(store, shared, self.history);
        Ok(State::start_actor(actor, self.activity.unwrap_or_default()))
    }
}

fn load_all(openers: Vec<Opener>) -> Result<(Store, Vec<Box<dyn Backend>>), Error> {
    let mut store = Store::new();
    let mut backends = Vec::with_capacity(openers.len());
    for open in openers {
        let mut backend = open()?;
        let snapshot = backend.load()?;
        store.load(snapshot.resources, snapshot.revision);
        backends.push(backend);
    }
    Ok((store, backends))
}
