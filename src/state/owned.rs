//! [`Client`]: a state handle with its owner bound once; and [`Decoded`], a
//! typed list that keeps the resources that decode apart from those that don't.

use super::{State, WatchOptions, WatchStream};
use crate::Error;
use crate::resource::{Address, AnyResource, Kind, LabelQuery, Pointer, PointerTo, Resource, Spec};

/// A typed list that does not fail for one bad resource: every resource
/// whose spec decodes as `S`, and for each one that does not (written
/// dynamically, or in an older format), its pointer and the error.
#[derive(Debug)]
pub struct Decoded<S: Spec> {
    /// The resources that decoded, sorted by id.
    pub resources: Vec<Resource<S>>,
    /// The ones that did not, with why ([`Error::TypeMismatch`]).
    pub undecodable: Vec<(Pointer, Error)>,
}

impl<S: Spec> Decoded<S> {
    pub(crate) fn from_list(list: Vec<AnyResource>) -> Self {
        let mut decoded =
            Decoded { resources: Vec::with_capacity(list.len()), undecodable: vec![] };
        for resource in list {
            match resource.typed::<S>() {
                Ok(typed) => decoded.resources.push(typed),
                Err(e) => decoded.undecodable.push((resource.pointer().clone(), e)),
            }
        }
        decoded
    }
}

/// A handle to a [`State`] that writes as one owner, named once: no `None`
/// or `Some("me")` on every call. Get one with [`State::client`] (the user:
/// no owner) or [`State::client_as`] (a named owner, such as a feeder). Reads
/// through a [`TypedPointer`](crate::resource::TypedPointer) come back typed.
///
/// The [`State`] methods stay as the state contract names them (with the
/// owner on each write); a `Client` is the same calls with the owner filled in.
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
/// // One modify: creates from the constructor when missing, then applies the change.
/// user.modify(&eth0, Link::default, |l| l.spec_mut().mtu = 9000).await?;
/// assert_eq!(user.get(&eth0).await?.spec().mtu, 9000);
/// user.teardown_and_destroy(&eth0).await?;
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
#[derive(Clone, Debug)]
pub struct Client {
    state: State,
    owner: Option<String>,
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

    /// Every resource of `S` in `namespace` matching `query`, decoded one by
    /// one: a resource that does not decode as `S` is reported, not fatal.
    ///
    /// # Errors
    /// As [`list`](State::list).
    pub async fn list_decoded<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Decoded<S>, Error> {
        Ok(Decoded::from_list(self.list(&Kind::of::<S>(namespace), query).await?))
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

    /// As [`State::get`]: typed for a typed pointer.
    ///
    /// # Errors
    /// As [`State::get`].
    pub async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error> {
        self.state.get(ptr).await
    }

    /// As [`State::list`].
    ///
    /// # Errors
    /// As [`State::list`].
    pub async fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error> {
        self.state.list(kind, query).await
    }

    /// As [`State::list_decoded`]: every resource of `S` in `namespace`
    /// matching `query`, with the ones that do not decode set apart.
    ///
    /// # Errors
    /// As [`State::list`].
    pub async fn list_typed<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Decoded<S>, Error> {
        self.state.list_decoded(namespace, query).await
    }

    /// As [`State::create`], owned by this handle's owner.
    ///
    /// # Errors
    /// As [`State::create`].
    pub async fn create(&self, resource: impl Into<AnyResource>) -> Result<AnyResource, Error> {
        self.state.create(resource, self.owner()).await
    }

    /// As [`State::update`], as this handle's owner.
    ///
    /// # Errors
    /// As [`State::update`].
    pub async fn update(&self, resource: impl Into<AnyResource>) -> Result<AnyResource, Error> {
        self.state.update(resource, self.owner()).await
    }

    /// Creates the resource at `ptr` from `make()` when it is missing, then
    /// applies `change`; writes nothing when nothing changed. Retries version
    /// conflicts (`change` may run more than once). `S` comes from a typed
    /// pointer, the constructor, or the closure.
    ///
    /// # Errors
    /// As [`State::modify`].
    pub async fn modify<S, P, M, F>(
        &self,
        ptr: &P,
        make: M,
        change: F,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        M: Fn() -> S + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let at = ptr.pointer().clone();
        let empty = move || Resource::at(at.clone(), make());
        self.state
            .modify_with(ptr.pointer(), empty, change, self.owner(), super::ExpectedPhase::Running)
            .await
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

    /// As [`State::teardown_and_destroy`], as this handle's owner.
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
    use super::*;
    use crate::resource::{Phase, TypedPointer};

    #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Mtu(u32);
    impl Spec for Mtu {
        const TYPE: &'static str = "Mtus.net.cosi.dev";
    }

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct NoDefault(u32);
    impl Spec for NoDefault {
        const TYPE: &'static str = "NoDefaults.net.cosi.dev";
    }

    #[actix::test]
    async fn a_client_writes_as_its_owner_and_owner_rules_still_hold() {
        let state = State::start();
        let feeder = state.client_as("Feeder");
        let user = state.client();
        let a = Pointer::typed::<Mtu>("net", "a");
        feeder.modify(&a, Mtu::default, |r| r.spec_mut().0 = 1).await.unwrap();
        assert_eq!(state.get(&a).await.unwrap().owner(), Some("Feeder"));
        let err = user.modify(&a, Mtu::default, |r| r.spec_mut().0 = 2).await.unwrap_err();
        assert!(err.is_owner_conflict(), "{err}");
        assert!(feeder.teardown(&a).await.unwrap());
        assert_eq!(state.get(&a).await.unwrap().phase(), Phase::TearingDown);
        feeder.destroy(&a).await.unwrap();
    }

    #[actix::test]
    async fn modify_creates_from_the_constructor_without_a_default() {
        let user = State::start().client();
        let p: TypedPointer<NoDefault> = Pointer::typed("net", "x");
        let made = user.modify(&p, || NoDefault(7), |r| r.spec_mut().0 += 1).await.unwrap();
        assert_eq!((made.spec().0, made.version().get()), (8, 1));
        let again = user.modify(&p, || NoDefault(0), |r| r.spec_mut().0 += 1).await.unwrap();
        assert_eq!((again.spec().0, again.version().get()), (9, 2), "the constructor is not used");
    }

    #[actix::test]
    async fn a_typed_list_keeps_every_resource_that_decodes_and_names_the_bad_one() {
        let state = State::start();
        let user = state.client();
        user.create(Resource::new("net", "a", Mtu(1))).await.unwrap();
        // A dynamic write of the same type whose spec is not an Mtu.
        let bad = crate::resource::DynamicResource::new(
            crate::resource::Metadata::new(Pointer::of::<Mtu>("net", "b")),
            serde_json::json!({"not": "a number"}),
        );
        user.create(bad).await.unwrap();
        user.create(Resource::new("net", "c", Mtu(3))).await.unwrap();
        assert!(
            state
                .list_typed::<Mtu>("net", &LabelQuery::all())
                .await
                .unwrap_err()
                .is_type_mismatch()
        );

        let listed = user.list_typed::<Mtu>("net", &LabelQuery::all()).await.unwrap();
        let ids: Vec<_> = listed.resources.iter().map(|r| r.id().to_owned()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(listed.undecodable.len(), 1);
        assert_eq!(listed.undecodable[0].0.id(), "b");
        assert!(listed.undecodable[0].1.is_type_mismatch());
    }
}
