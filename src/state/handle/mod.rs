//! [`State`]: the cloneable handle users (and the runtime) talk to the state through.
//!
//! The handle and its opening and closing are here; its requests by concern
//! in [`reads`], [`writes`] and [`watch`], and how a request travels to the
//! state actor and its answer back in [`send`].

use std::fmt;
use std::sync::Arc;

use actix::prelude::*;

use super::cache::CacheView;
use super::claims::ClaimService;
use super::inbox::Inbox;
use super::request::{Close, StateRequest, TeardownAndDestroy};
use crate::Error;
use crate::activity::Activity;

mod reads;
mod send;
mod watch;
mod writes;

#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
pub(crate) use watch::Revisioned;
pub use watch::{DEFAULT_WATCH_WINDOW, WatchOptions, WatchStream};

/// A cloneable handle to the state. A clone is cheap (one reference count):
/// clone it into every task or future that needs it.
///
/// All operations go to one [`StateActor`](crate::dev::StateActor) that applies them one at a time;
/// `teardown_and_destroy` goes to the [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator). Its writes
/// take the owner explicitly, as the state contract states them (controller
/// names; the user is `None`); programs write through a
/// [`Client`](crate::state::Client) ([`client`](State::client),
/// [`client_as`](State::client_as)), the one write surface
/// ([`Access`](crate::state::Access)) they share with controllers and tests.
///
/// ```
/// use cosi_runtime::State;
/// use cosi_runtime::resource::{Pointer, Resource, Spec};
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Mtu(u32);
/// # impl Spec for Mtu { const TYPE: &'static str = "Mtus.net.cosi.dev"; }
///
/// # actix::System::new().block_on(async {
/// let state = State::start();
/// state.create(Resource::new("net", "eth0", Mtu(1500)), None).await?;
/// let updated = state
///     .modify(&Pointer::typed::<Mtu>("net", "eth0"), |r: &mut Resource<Mtu>| r.spec_mut().0 = 9000, None)
///     .await?;
/// assert_eq!(updated.version().get(), 2);
/// state.teardown_and_destroy(updated.pointer(), None).await?;
/// assert!(state.get(updated.pointer()).await.unwrap_err().is_not_found());
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct State(pub(super) Arc<Parts>);

/// What a [`State`] handle holds, shared by its clones: a clone is one
/// reference count, not three boxed recipients and five counts. A handle
/// is cloned into nearly every request's future (the usual
/// `let state = state.clone(); async move { … }`), so a clone must cost
/// next to nothing beside the request itself.
#[derive(Clone)]
pub(super) struct Parts {
    pub(super) requests: Recipient<StateRequest>,
    pub(super) coordinator: Option<Recipient<TeardownAndDestroy>>,
    pub(super) activity: Activity,
    pub(super) closer: Option<Recipient<Close>>,
    /// The claim service of a shared store, if the state has one.
    pub(super) claims: Option<ClaimService>,
    /// The state actor's cache, read without a message while it allows;
    /// `None` for a handle that sends everything elsewhere (a probe).
    pub(super) view: Option<CacheView>,
    /// The state actor's request queue (no actix message per request);
    /// `None` for a handle that sends everything elsewhere (a probe).
    pub(super) inbox: Option<Inbox>,
}

impl fmt::Debug for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("State")
            .field("coordinator", &self.0.coordinator.is_some())
            .finish_non_exhaustive()
    }
}

impl State {
    /// The exclusive output types this process claims on a shared (etcd)
    /// state, and whether it holds each claim or stands by. Empty on a state
    /// that one process owns (memory, redb): there the supervisor's checks
    /// are enough.
    pub async fn claims(&self) -> Vec<super::ClaimStatus> {
        match &self.0.claims {
            Some(claims) => claims.status().await,
            None => Vec::new(),
        }
    }

    /// The service that claims exclusive outputs across the processes that
    /// share one of this state's stores (`None`: every store is this
    /// process's own). See [`ClaimService`].
    pub fn claim_service(&self) -> Option<&ClaimService> {
        self.0.claims.as_ref()
    }

    /// This handle with `claims` as its claim service (replacing the
    /// state's own, if it has one): for `RuntimeBuilder::claims`.
    pub(crate) fn with_claim_service(&self, claims: ClaimService) -> State {
        State(Arc::new(Parts { claims: Some(claims), ..(*self.0).clone() }))
    }

    /// Commits what is staged, releases every backend (the state file and its
    /// lock), and stops the state actor; resolves once all that is done, so
    /// the same file can be opened again right after. Later requests through
    /// any handle of this state get [`Error::Unavailable`]. Closing a state
    /// that is already closed (say, by [`Runtime::stop`](crate::Runtime::stop))
    /// does nothing.
    ///
    /// # Errors
    /// [`Error::Unavailable`] for a handle with no state actor behind it
    /// ([`from_recipient`](State::from_recipient)); [`Error::Storage`] if the
    /// last commit fails.
    pub async fn close(&self) -> Result<(), Error> {
        let Some(closer) = &self.0.closer else {
            return Err(Error::Unavailable {
                resource: "the state".into(),
                service: "the state actor",
            });
        };
        // An actor that is gone has closed already.
        closer.send(Close).await.unwrap_or(Ok(()))
    }

    /// A handle that sends every request to `requests` (a probe in tests, or a
    /// state actor started elsewhere). It has no finalizer coordinator:
    /// [`teardown_and_destroy`](State::teardown_and_destroy) answers
    /// [`Error::Unavailable`].
    pub fn from_recipient(requests: Recipient<StateRequest>) -> State {
        State(Arc::new(Parts {
            requests,
            coordinator: None,
            activity: Activity::new(),
            closer: None,
            claims: None,
            view: None,
            inbox: None,
        }))
    }

    pub(crate) fn requests(&self) -> &Recipient<StateRequest> {
        &self.0.requests
    }

    /// The same handle (activity, coordinator) sending requests elsewhere.
    pub(crate) fn redirect(&self, requests: Recipient<StateRequest>) -> State {
        State(Arc::new(Parts { requests, view: None, inbox: None, ..(*self.0).clone() }))
    }

    pub(crate) fn activity(&self) -> &Activity {
        &self.0.activity
    }

    /// Marks work in progress on behalf of the runtime until the guard drops:
    /// [`Runtime::settled`](crate::Runtime::settled) waits for it. For feeders
    /// and tools that drive controllers from outside (a poller in the middle of
    /// a poll, say), so that tests can settle instead of sleeping.
    pub fn busy(&self) -> BusyGuard {
        BusyGuard(self.0.activity.guard())
    }
}

/// Work in progress that [`Runtime::settled`](crate::Runtime::settled) waits
/// for; see [`State::busy`].
#[derive(Debug)]
pub struct BusyGuard(#[allow(dead_code)] crate::activity::ActivityGuard);
