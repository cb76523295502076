//! The [`Target`]s the suite runs against: the in-memory state, redb (routed,
//! reopened between steps), etcd (mixed with memory and redb), and any
//! third-party [`Backend`] made by a factory.

use futures::future::LocalBoxFuture;

#[cfg(feature = "redb")]
use super::ScratchDir;
use super::Target;
use crate::State;
#[cfg(feature = "redb")]
use crate::state::StateBuilder;
use crate::state::{Backend, Namespaces};

/// The in-memory state ([`State::start`]); reopening keeps the same state.
#[derive(Debug, Default)]
pub struct MemoryTarget;

impl Target for MemoryTarget {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(async { State::start() })
    }
}

/// Whether a target closes and opens its state again between the steps of
/// a check (what survives a restart must be what was acknowledged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reopen {
    /// Keep one state for the whole check.
    Never,
    /// Close the state and open it again wherever a check calls [`Target::reopen`].
    BetweenSteps,
}

/// A state whose `durable` namespaces live in a redb file in a scratch
/// directory (the rest in memory). With `reopen`, [`Target::reopen`] closes
/// the state and opens the file again.
#[cfg(feature = "redb")]
#[derive(Debug)]
pub struct RedbTarget {
    dir: ScratchDir,
    durable: Namespaces,
    reopen: Reopen,
}

#[cfg(feature = "redb")]
impl RedbTarget {
    /// Everything durable; reopened between steps with [`Reopen::BetweenSteps`].
    pub fn new(reopen: Reopen) -> Self {
        RedbTarget { dir: ScratchDir::new(), durable: Namespaces::All, reopen }
    }

    /// Only `durable` in the file, the rest in memory; reopened between steps
    /// when `reopen` (only meaningful when the checks' namespace [`NS`](super::NS) is durable:
    /// memory namespaces start empty after a reopen).
    pub fn routed(durable: impl Into<Namespaces>, reopen: Reopen) -> Self {
        RedbTarget { dir: ScratchDir::new(), durable: durable.into(), reopen }
    }

    fn builder(&self) -> StateBuilder {
        State::builder().durable(self.dir.path().join("state.redb"), self.durable.clone())
    }
}

#[cfg(feature = "redb")]
impl Target for RedbTarget {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(async { self.builder().open().await.expect("open the redb state") })
    }

    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(async move {
            if self.reopen == Reopen::Never {
                return state;
            }
            state.close().await.expect("close the redb state");
            self.builder().open().await.expect("reopen the redb state")
        })
    }
}

/// A state on a throwaway etcd ([`TestEtcd`](super::super::etcd::TestEtcd)), under
/// a prefix of its own; with `reopen`, [`Target::reopen`] closes the state
/// and opens the same prefix again (the data stays in etcd). Skipped, loudly,
/// without an `etcd` binary (failing instead when `CI` is set).
#[cfg(feature = "etcd")]
#[derive(Debug)]
pub struct EtcdTarget {
    etcd: Option<super::super::etcd::TestEtcd>,
    prefix: String,
    reopen: Reopen,
    on_etcd: Namespaces,
    /// Namespaces in a redb file beside etcd (a mix), and its directory.
    #[cfg(feature = "redb")]
    durable: Option<(ScratchDir, Namespaces)>,
}

#[cfg(feature = "etcd")]
impl EtcdTarget {
    /// Every namespace on a fresh etcd; reopened between steps with
    /// [`Reopen::BetweenSteps`].
    pub fn new(reopen: Reopen) -> Self {
        EtcdTarget::mixed(Namespaces::All, reopen)
    }

    /// A mix: `on_etcd` on a fresh etcd, every other namespace in memory.
    /// With [`Reopen::BetweenSteps`], put [`NS`](super::NS) on etcd (memory starts
    /// empty after a reopen).
    pub fn mixed(on_etcd: impl Into<Namespaces>, reopen: Reopen) -> Self {
        EtcdTarget {
            etcd: super::super::etcd::TestEtcd::start(),
            prefix: format!("conformance-{:016x}", fastrand::u64(..)),
            reopen,
            on_etcd: on_etcd.into(),
            #[cfg(feature = "redb")]
            durable: None,
        }
    }

    /// A mix of three stores: `on_etcd` on a fresh etcd, `durable` in a
    /// redb file in a scratch directory, every other namespace in memory.
    #[cfg(feature = "redb")]
    pub fn with_durable(
        on_etcd: impl Into<Namespaces>,
        durable: impl Into<Namespaces>,
        reopen: Reopen,
    ) -> Self {
        let mut target = EtcdTarget::mixed(on_etcd, reopen);
        target.durable = Some((ScratchDir::new(), durable.into()));
        target
    }

    async fn start(&self) -> State {
        let etcd = self.etcd.as_ref().expect("an etcd (the suite skips without one)");
        #[allow(unused_mut)]
        let mut builder =
            State::builder().etcd_namespaces(etcd.config(&self.prefix), self.on_etcd.clone());
        #[cfg(feature = "redb")]
        if let Some((dir, namespaces)) = &self.durable {
            builder = builder.durable(dir.path().join("state.redb"), namespaces.clone());
        }
        builder.open().await.expect("open the etcd state")
    }
}

#[cfg(feature = "etcd")]
impl Target for EtcdTarget {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(self.start())
    }

    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(async move {
            if self.reopen == Reopen::Never {
                return state;
            }
            state.close().await.expect("close the etcd state");
            self.start().await
        })
    }

    fn skipped(&self) -> Option<String> {
        self.etcd.is_none().then(|| "no `etcd` binary: the etcd conformance checks".into())
    }
}

/// A state with every namespace on a backend made by a factory: how a
/// third-party backend runs the suite. Reopening builds a new backend from the
/// factory after closing the old one, so a backend over persistent storage
/// (the factory opens the same place each time) is checked across restarts.
pub struct BackendTarget<B> {
    factory: Box<dyn FnMut() -> B>,
}

impl<B: Backend> BackendTarget<B> {
    /// A target over the backends `factory` makes.
    pub fn new(factory: impl FnMut() -> B + 'static) -> Self {
        BackendTarget { factory: Box::new(factory) }
    }

    async fn start(&mut self) -> State {
        let backend = (self.factory)();
        State::builder().backend(Namespaces::All, backend).open().await.expect("open the state")
    }
}

impl<B> std::fmt::Debug for BackendTarget<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackendTarget")
    }
}

impl<B: Backend> Target for BackendTarget<B> {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(self.start())
    }

    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(async move {
            state.close().await.expect("close the state");
            self.start().await
        })
    }
}
