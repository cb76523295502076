//! [`Client`]: a handle to a [`State`] that writes as one owner, named once,
//! and the [`State`] calls that make one.

use crate::Error;
use crate::resource::{Address, AnyResource, Kind, LabelQuery, Pointer, PointerTo, Resource, Spec};
use crate::state::{ExpectedPhase, State, WatchOptions, WatchStream};

/// A handle to a [`State`] that writes as one owner, named once: no `None`
/// or `Some("me")` on every call. Get one with [`State::client`] (the user:
/// no owner) or [`State::client_as`] (a named owner, such as a feeder). It
/// has the [`Access`](super::Access) calls (the same as a controller's
/// [`ReconcileContext`](crate::controller::ReconcileContext)), plus
/// [`teardown_and_destroy`](Client::teardown_and_destroy), finalizers and watches.
///
/// The [`State`] methods stay as the state contract names them (with the
/// owner last on each write); a `Client` is the same calls with the owner filled in.
///
/// ```
/// use cosi_runtime::prelude::*;
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// #[spec(type = "Links.net.cosi.dev")]
/// struct Link { mtu: u32 }
///
/// # actix::System::new().block_on(async {
/// let user = State::start().client();
/// let eth0 = Pointer::typed::<Link>("network", "eth0");
/// // Creates from `Link::default()` when missing, then applies the change.
/// user.modify(&eth0, |l| l.spec_mut().mtu = 9000).await?;
/// assert_eq!(user.get(&eth0).await?.spec().mtu, 9000);
/// user.teardown_and_destroy(&eth0).await?;
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    state: State,
    pub(super) owner: Option<String>,
}

impl State {
    /// A handle that writes as the user (no owner).
    pub fn client(&self) -> Client {
        Client { state: self.clone(), owner: None }
    }

    /// A handle that writes as `owner` (a controller name, for a feeder or a tool
    /// that writes what a controller would).
    pub fn client_as(&self, owner: impl Into<String>) -> Client {
        Client { state: self.clone(), owner: Some(owner.into()) }
    }
}

impl Client {
    /// The owner this handle writes as (`None`: the user).
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The state underneath.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// As [`Access::get`](super::Access::get).
    ///
    /// # Errors
    /// As [`State::get`].
    pub async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error> {
        self.state.get(ptr).await
    }

    /// As [`Access::list`](super::Access::list).
    ///
    /// # Errors
    /// As [`State::list`].
    pub async fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error> {
        self.state.list(kind, query).await
    }

    /// As [`State::create`], owned by this handle's owner.
    ///
    /// # Errors
    /// As [`State::create`].
    pub async fn create(&self, resource: impl Into<AnyResource>) -> Result<AnyResource, Error> {
        self.state.create(resource, self.owner()).await
    }

    /// As [`State::update_with_phase`], as this handle's owner.
    ///
    /// # Errors
    /// As [`State::update`].
    pub async fn update_with_phase(
        &self,
        resource: impl Into<AnyResource>,
        expected_phase: ExpectedPhase,
    ) -> Result<AnyResource, Error> {
        self.state.update_with_phase(resource, self.owner(), expected_phase).await
    }

    /// As [`State::modify_with`], as this handle's owner.
    ///
    /// # Errors
    /// As [`State::modify`].
    pub async fn modify_with<S, P, E, F>(
        &self,
        ptr: &P,
        empty: E,
        change: F,
        expected_phase: ExpectedPhase,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        E: Fn() -> Resource<S> + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        self.state.modify_with(ptr, empty, change, self.owner(), expected_phase).await
    }

    /// As [`State::destroy`], as this handle's owner.
    ///
    /// # Errors
    /// As [`State::destroy`].
    pub async fn destroy(&self, ptr: &Pointer) -> Result<(), Error> {
        self.state.destroy(ptr, self.owner()).await
    }

    /// As [`State::teardown`], as this handle's owner.
    ///
    /// # Errors
    /// As [`State::teardown`].
    pub async fn teardown(&self, ptr: &Pointer) -> Result<bool, Error> {
        self.state.teardown(ptr, self.owner()).await
    }

    /// As [`State::teardown_and_destroy`], as this handle's owner: tears the
    /// resource down, waits until its finalizers are gone, destroys it.
    ///
    /// # Errors
    /// As [`State::teardown_and_destroy`].
    pub async fn teardown_and_destroy(&self, ptr: &Pointer) -> Result<(), Error> {
        self.state.teardown_and_destroy(ptr, self.owner()).await
    }

    /// As [`State::add_finalizer`] (finalizers ignore owners).
    ///
    /// # Errors
    /// As [`State::add_finalizer`].
    pub async fn add_finalizer(&self, ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
        self.state.add_finalizer(ptr, finalizer).await
    }

    /// As [`State::remove_finalizer`] (finalizers ignore owners).
    ///
    /// # Errors
    /// As [`State::remove_finalizer`].
    pub async fn remove_finalizer(&self, ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
        self.state.remove_finalizer(ptr, finalizer).await
    }

    /// As [`State::watch_stream`].
    ///
    /// # Errors
    /// As [`State::watch_stream`].
    pub async fn watch(&self, ptr: &Pointer) -> Result<WatchStream, Error> {
        self.state.watch_stream(ptr).await
    }

    /// As [`State::watch_kind_stream`]: `options` is a [`WatchOptions`] or a
    /// bootstrap `bool`.
    ///
    /// # Errors
    /// As [`State::watch_kind_stream`].
    pub async fn watch_kind(
        &self,
        kind: &Kind,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
    ) -> Result<WatchStream, Error> {
        self.state.watch_kind_stream(kind, query, options).await
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_specs::Mtu;
    use super::*;
    use crate::resource::Phase;

    #[actix::test]
    async fn a_client_writes_as_its_owner_and_owner_rules_still_hold() {
        let state = State::start();
        let feeder = state.client_as("Feeder");
        let user = state.client();
        let a = Pointer::typed::<Mtu>("net", "a");
        feeder.modify(&a, |r| r.spec_mut().0 = 1).await.unwrap();
        assert_eq!(state.get(&a).await.unwrap().owner(), Some("Feeder"));
        let err = user.modify(&a, |r| r.spec_mut().0 = 2).await.unwrap_err();
        assert!(err.is_owner_conflict(), "{err}");
        assert!(feeder.teardown(&a).await.unwrap());
        assert_eq!(state.get(&a).await.unwrap().phase(), Phase::TearingDown);
        feeder.destroy(&a).await.unwrap();
    }

    #[actix::test]
    async fn a_clients_futures_are_send() {
        fn send<T: Send>(_: T) {}
        let user = State::start().client();
        let p = Pointer::typed::<Mtu>("net", "s");
        // Never polled: only the futures' types matter.
        send(user.modify(&p, |r| r.spec_mut().0 = 1));
        send(user.modify_or(&p, Mtu(1), |r| r.spec_mut().0 = 1));
        send(user.list_typed::<Mtu>("net", &LabelQuery::all()));
        send(user.release(&p));
        send(user.get(&p));
    }
}
