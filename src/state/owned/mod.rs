//! [`Access`]: the one surface for reading and writing resources as one
//! owner, the same on a [`Client`], a controller's
//! [`ReconcileContext`](crate::controller::ReconcileContext) and a test
//! [`Harness`](crate::testing::Harness); [`Client`], a state handle with its
//! owner bound once; and [`Decoded`], a typed list that keeps the resources
//! that decode apart from those that don't.

use std::future::Future;

use super::{ExpectedPhase, State, WatchOptions, WatchStream};
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

/// The one way to read and write resources as one owner: the same calls,
/// with the same arguments and results, on a [`Client`] (a program, a
/// feeder, a tool), a controller's
/// [`ReconcileContext`](crate::controller::ReconcileContext) (access-checked,
/// writing as the controller) and a test's
/// [`Harness`](crate::testing::Harness) (writing as the user).
///
/// | call | what it does |
/// |---|---|
/// | [`get(&ptr)`](Access::get) | the resource: a [`Resource<S>`] through a [`TypedPointer<S>`](crate::resource::TypedPointer), an [`AnyResource`] through a plain [`Pointer`] |
/// | [`get_typed::<S>(&ptr)`](Access::get_typed) | a plain pointer's resource as `S` |
/// | [`list(&kind, &query)`](Access::list) | a kind's resources, sorted by id |
/// | [`list_typed::<S>(ns, &query)`](Access::list_typed) | the same, as `Vec<Resource<S>>` |
/// | [`list_decoded::<S>(ns, &query)`](Access::list_decoded) | the same, setting apart what does not decode ([`Decoded`]) |
/// | [`create(resource)`](Access::create), [`update(resource)`](Access::update) | as the owner |
/// | [`modify(&ptr, change)`](Access::modify) | read-modify-write, creating from `S::default()` when missing |
/// | [`modify_or(&ptr, initial, change)`](Access::modify_or) | the same for a spec without `Default` |
/// | [`teardown(&ptr)`](Access::teardown), [`destroy(&ptr)`](Access::destroy) | as the owner |
/// | [`release(&ptr)`](Access::release) | teardown, then destroy once nothing holds it; `true` when gone |
///
/// Implementors provide the core (`owner`, `get`, `list`, `create`,
/// `update_with_phase`, `modify_with`, `teardown`, `destroy`); every other
/// call is derived from it here, once, so it is the same everywhere. The
/// implementors also have each call as a method of their own, so code that
/// names a concrete handle needs no import; take an `&impl Access` to write a
/// helper that works on all of them.
///
/// [`State`] keeps the state contract's calls with the owner as their last
/// argument (`state.modify(&ptr, change, owner)`); a [`Client`] is those calls
/// with the owner bound once.
///
/// ```
/// use cosi_runtime::prelude::*;
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// #[spec(type = "Links.net.cosi.dev")]
/// struct Link { mtu: u32 }
///
/// /// Works on a `Client`, a `ReconcileContext` and a `Harness` alike.
/// async fn jumbo(access: &impl Access, id: &str) -> Result<Resource<Link>, Error> {
///     access.modify(&Pointer::typed::<Link>("network", id), |l| l.spec_mut().mtu = 9000).await
/// }
///
/// # actix::System::new().block_on(async {
/// let user = State::start().client();
/// assert_eq!(jumbo(&user, "eth0").await?.spec().mtu, 9000);
/// # Ok::<(), cosi_runtime::Error>(())
/// # }).unwrap();
/// ```
// The futures need not be `Send`: a reconcile runs on its controller's actor.
// Each implementor's own methods (what callers use) keep their `Send`-ness.
#[allow(async_fn_in_trait)]
pub trait Access {
    /// The owner this handle writes as (`None`: the user).
    fn owner(&self) -> Option<&str>;

    /// The resource at `ptr`: an [`AnyResource`] for a plain [`Pointer`], a
    /// [`Resource<S>`] for a [`TypedPointer<S>`](crate::resource::TypedPointer).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`]; [`Error::TypeMismatch`]
    /// (typed pointer, stored spec of another type); [`Error::AccessDenied`]
    /// (a controller reading what it did not declare).
    async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error>;

    /// The resources of `kind` matching `query`, sorted by id.
    ///
    /// # Errors
    /// [`Error::InvalidInput`]; [`Error::AccessDenied`].
    async fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error>;

    /// Creates `resource`, owned by this handle's owner; returns it as stored
    /// (version 1).
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; [`Error::InvalidInput`]; [`Error::AccessDenied`].
    async fn create(&self, resource: impl Into<AnyResource>) -> Result<AnyResource, Error>;

    /// Updates `resource` (carrying the version it was read at) as this
    /// handle's owner, expecting the stored one in `expected_phase`.
    ///
    /// # Errors
    /// In this order: [`Error::NotFound`], [`Error::OwnerConflict`],
    /// [`Error::VersionConflict`], [`Error::PhaseConflict`]; and
    /// [`Error::InvalidInput`], [`Error::AccessDenied`].
    async fn update_with_phase(
        &self,
        resource: impl Into<AnyResource>,
        expected_phase: ExpectedPhase,
    ) -> Result<AnyResource, Error>;

    /// The general read-modify-write: applies `change` to the resource at
    /// `ptr`, or to `empty()` when it is missing, as this handle's owner,
    /// expecting `expected_phase`. Writes nothing when nothing changed.
    /// `change` runs inside the state actor, atomically with the write; it is
    /// `Fn` because a shared backend may run it again on fresh data.
    ///
    /// # Errors
    /// [`Error::OwnerConflict`]; [`Error::PhaseConflict`]; [`Error::TypeMismatch`];
    /// [`Error::InvalidInput`]; [`Error::AccessDenied`].
    async fn modify_with<S, P, E, F>(
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
        F: Fn(&mut Resource<S>) + Send + 'static;

    /// Moves the resource at `ptr` to `TearingDown` (idempotent) and returns
    /// whether it is ready to destroy (no finalizers).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`]; [`Error::AccessDenied`].
    async fn teardown(&self, ptr: &Pointer) -> Result<bool, Error>;

    /// Destroys the resource at `ptr` (it need not be tearing down, but must
    /// have no finalizers).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`]; [`Error::PendingFinalizers`];
    /// [`Error::AccessDenied`].
    async fn destroy(&self, ptr: &Pointer) -> Result<(), Error>;

    /// The resource at a plain `ptr`, as spec type `S` (a
    /// [`TypedPointer`](crate::resource::TypedPointer)'s [`get`](Access::get)
    /// infers it).
    ///
    /// # Errors
    /// As [`get`](Access::get), and [`Error::TypeMismatch`].
    async fn get_typed<S: Spec>(&self, ptr: &Pointer) -> Result<Resource<S>, Error> {
        self.get(ptr).await?.typed()
    }

    /// The resources of spec type `S` in `namespace` matching `query`, sorted by id.
    ///
    /// # Errors
    /// As [`list`](Access::list), and [`Error::TypeMismatch`] naming the
    /// first resource that does not decode as `S` (use
    /// [`list_decoded`](Access::list_decoded) to read the others).
    async fn list_typed<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Vec<Resource<S>>, Error> {
        self.list(&Kind::of::<S>(namespace), query).await?.iter().map(AnyResource::typed).collect()
    }

    /// The resources of spec type `S` in `namespace` matching `query`, each
    /// decoded on its own: the ones that do not decode as `S` are set apart, named.
    ///
    /// # Errors
    /// As [`list`](Access::list).
    async fn list_decoded<S: Spec>(
        &self,
        namespace: &str,
        query: &LabelQuery,
    ) -> Result<Decoded<S>, Error> {
        Ok(Decoded::from_list(self.list(&Kind::of::<S>(namespace), query).await?))
    }

    /// Updates `resource` (carrying the version it was read at) as this
    /// handle's owner; the stored resource must be running.
    ///
    /// # Errors
    /// As [`update_with_phase`](Access::update_with_phase).
    fn update(
        &self,
        resource: impl Into<AnyResource>,
    ) -> impl Future<Output = Result<AnyResource, Error>> {
        self.update_with_phase(resource, ExpectedPhase::Running)
    }

    /// Creates or changes the resource at `ptr` through `change`, starting
    /// from `S::default()` when it is missing; writes nothing (no version
    /// bump, no event) when nothing changed. `S` comes from a typed pointer
    /// or the closure.
    ///
    /// # Errors
    /// As [`modify_with`](Access::modify_with); [`Error::PhaseConflict`] when
    /// the resource is tearing down.
    fn modify<S, P, F>(
        &self,
        ptr: &P,
        change: F,
    ) -> impl Future<Output = Result<Resource<S>, Error>>
    where
        S: Spec + Default,
        P: PointerTo<S> + ?Sized,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        // The future of `modify_with` itself, no wrapper around it (futures
        // are moved whole: every layer costs a reconcile a copy).
        let at = ptr.pointer().clone();
        let empty = move || Resource::at(at.clone(), S::default());
        self.modify_with(ptr, empty, change, ExpectedPhase::Running)
    }

    /// [`modify`](Access::modify) for a spec without `Default` (or another
    /// start): a missing resource starts from `initial`, which is otherwise
    /// unused.
    ///
    /// # Errors
    /// As [`modify`](Access::modify).
    fn modify_or<S, P, F>(
        &self,
        ptr: &P,
        initial: S,
        change: F,
    ) -> impl Future<Output = Result<Resource<S>, Error>>
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let at = ptr.pointer().clone();
        let empty = move || Resource::at(at.clone(), initial.clone());
        self.modify_with(ptr, empty, change, ExpectedPhase::Running)
    }

    /// Tears the resource at `ptr` down and destroys it once nothing holds it
    /// (no finalizers); returns `true` when it is gone (also if it never
    /// existed), `false` while finalizers hold it. Call it again when the
    /// holders let go: the non-blocking half of
    /// [`teardown_and_destroy`](Client::teardown_and_destroy), what a
    /// controller uses on its outputs.
    ///
    /// # Errors
    /// [`Error::OwnerConflict`]; [`Error::AccessDenied`].
    async fn release(&self, ptr: &Pointer) -> Result<bool, Error> {
        match self.teardown(ptr).await {
            Ok(true) => match self.destroy(ptr).await {
                Ok(()) => Ok(true),
                Err(e) if e.is_not_found() => Ok(true),
                Err(e) if e.is_pending_finalizers() => Ok(false),
                Err(e) => Err(e),
            },
            Ok(false) => Ok(false),
            Err(e) if e.is_not_found() => Ok(true),
            Err(e) => Err(e),
        }
    }
}

/// A handle to a [`State`] that writes as one owner, named once: no `None`
/// or `Some("me")` on every call. Get one with [`State::client`] (the user:
/// no owner) or [`State::client_as`] (a named owner, such as a feeder). It
/// has the [`Access`] calls (the same as a controller's
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

    /// As [`Access::get`].
    ///
    /// # Errors
    /// As [`State::get`].
    pub async fn get<P: Address + ?Sized>(&self, ptr: &P) -> Result<P::Resource, Error> {
        self.state.get(ptr).await
    }

    /// As [`Access::list`].
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

/// Implements [`Access`]'s core for a type whose inherent methods of the
/// same names already are that core (`Client`, `ReconcileContext`), with
/// `$owner` (of `$this`, the value) for [`Access::owner`].
macro_rules! core_by_inherent {
    ($ty:ty, |$this:ident| $owner:expr) => {
        impl $crate::state::Access for $ty {
            fn owner(&self) -> Option<&str> {
                let $this = self;
                $owner
            }
            fn get<P: $crate::resource::Address + ?Sized>(
                &self,
                ptr: &P,
            ) -> impl std::future::Future<Output = Result<P::Resource, $crate::Error>> {
                <$ty>::get(self, ptr)
            }
            fn list(
                &self,
                kind: &$crate::resource::Kind,
                query: &$crate::resource::LabelQuery,
            ) -> impl std::future::Future<Output = Result<Vec<$crate::resource::AnyResource>, $crate::Error>> {
                <$ty>::list(self, kind, query)
            }
            fn create(
                &self,
                resource: impl Into<$crate::resource::AnyResource>,
            ) -> impl std::future::Future<Output = Result<$crate::resource::AnyResource, $crate::Error>> {
                <$ty>::create(self, resource)
            }
            fn update_with_phase(
                &self,
                resource: impl Into<$crate::resource::AnyResource>,
                expected_phase: $crate::state::ExpectedPhase,
            ) -> impl std::future::Future<Output = Result<$crate::resource::AnyResource, $crate::Error>> {
                <$ty>::update_with_phase(self, resource, expected_phase)
            }
            fn modify_with<S, P, E, F>(
                &self,
                ptr: &P,
                empty: E,
                change: F,
                expected_phase: $crate::state::ExpectedPhase,
            ) -> impl std::future::Future<Output = Result<$crate::resource::Resource<S>, $crate::Error>>
            where
                S: $crate::resource::Spec,
                P: $crate::resource::PointerTo<S> + ?Sized,
                E: Fn() -> $crate::resource::Resource<S> + Send + 'static,
                F: Fn(&mut $crate::resource::Resource<S>) + Send + 'static,
            {
                <$ty>::modify_with(self, ptr, empty, change, expected_phase)
            }
            fn teardown(
                &self,
                ptr: &$crate::resource::Pointer,
            ) -> impl std::future::Future<Output = Result<bool, $crate::Error>> {
                <$ty>::teardown(self, ptr)
            }
            fn destroy(&self, ptr: &$crate::resource::Pointer) -> impl std::future::Future<Output = Result<(), $crate::Error>> {
                <$ty>::destroy(self, ptr)
            }
        }
    };
}

core_by_inherent!(Client, |client| client.owner.as_deref());
// The controller's calls as the one `Access` surface: it writes as itself.
core_by_inherent!(crate::controller::ReconcileContext, |cx| Some(cx.name()));

/// The derived [`Access`] calls as methods of each implementor's own, so
/// that code naming a `Client` or a `ReconcileContext` needs no import. Each
/// is the trait's one implementation.
macro_rules! derived_calls {
    ($($ty:ty),*) => {$(
        impl $ty {
            /// As [`Access::get_typed`]: a plain pointer's resource as spec type `S`.
            ///
            /// # Errors
            /// As [`Access::get_typed`].
            pub fn get_typed<S: Spec>(&self, ptr: &Pointer) -> impl Future<Output = Result<Resource<S>, Error>> {
                Access::get_typed(self, ptr)
            }

            /// As [`Access::list_typed`]: the resources of `S` in `namespace`
            /// matching `query`, sorted by id.
            ///
            /// # Errors
            /// As [`Access::list_typed`].
            pub fn list_typed<S: Spec>(
                &self,
                namespace: &str,
                query: &LabelQuery,
            ) -> impl Future<Output = Result<Vec<Resource<S>>, Error>> {
                Access::list_typed(self, namespace, query)
            }

            /// As [`Access::list_decoded`]: the same, with the ones that do not
            /// decode as `S` set apart.
            ///
            /// # Errors
            /// As [`Access::list_decoded`].
            pub fn list_decoded<S: Spec>(
                &self,
                namespace: &str,
                query: &LabelQuery,
            ) -> impl Future<Output = Result<Decoded<S>, Error>> {
                Access::list_decoded(self, namespace, query)
            }

            /// As [`Access::update`]: updates `resource` (carrying the version
            /// it was read at); the stored one must be running.
            ///
            /// # Errors
            /// As [`Access::update`].
            pub fn update(
                &self,
                resource: impl Into<AnyResource>,
            ) -> impl Future<Output = Result<AnyResource, Error>> {
                Access::update(self, resource)
            }

            /// As [`Access::modify`]: creates or changes the resource at `ptr`
            /// through `change` (from `S::default()` when missing); writes
            /// nothing when nothing changed.
            ///
            /// # Errors
            /// As [`Access::modify`].
            pub fn modify<S, P, F>(&self, ptr: &P, change: F) -> impl Future<Output = Result<Resource<S>, Error>>
            where
                S: Spec + Default,
                P: PointerTo<S> + ?Sized,
                F: Fn(&mut Resource<S>) + Send + 'static,
            {
                Access::modify(self, ptr, change)
            }

            /// As [`Access::modify_or`]: [`modify`](Self::modify) starting from
            /// `initial` when the resource is missing.
            ///
            /// # Errors
            /// As [`Access::modify`].
            pub fn modify_or<S, P, F>(
                &self,
                ptr: &P,
                initial: S,
                change: F,
            ) -> impl Future<Output = Result<Resource<S>, Error>>
            where
                S: Spec,
                P: PointerTo<S> + ?Sized,
                F: Fn(&mut Resource<S>) + Send + 'static,
            {
                Access::modify_or(self, ptr, initial, change)
            }

            /// As [`Access::release`]: tears the resource down and destroys it
            /// once nothing holds it; `true` when it is gone.
            ///
            /// # Errors
            /// As [`Access::release`].
            pub fn release(&self, ptr: &Pointer) -> impl Future<Output = Result<bool, Error>> {
                Access::release(self, ptr)
            }
        }
    )*};
}

derived_calls!(Client, crate::controller::ReconcileContext);

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
        feeder.modify(&a, |r| r.spec_mut().0 = 1).await.unwrap();
        assert_eq!(state.get(&a).await.unwrap().owner(), Some("Feeder"));
        let err = user.modify(&a, |r| r.spec_mut().0 = 2).await.unwrap_err();
        assert!(err.is_owner_conflict(), "{err}");
        assert!(feeder.teardown(&a).await.unwrap());
        assert_eq!(state.get(&a).await.unwrap().phase(), Phase::TearingDown);
        feeder.destroy(&a).await.unwrap();
    }

    #[actix::test]
    async fn modify_or_starts_from_the_initial_spec_without_a_default() {
        let user = State::start().client();
        let p: TypedPointer<NoDefault> = Pointer::typed("net", "x");
        let made = user.modify_or(&p, NoDefault(7), |r| r.spec_mut().0 += 1).await.unwrap();
        assert_eq!((made.spec().0, made.version().get()), (8, 1));
        let again = user.modify_or(&p, NoDefault(0), |r| r.spec_mut().0 += 1).await.unwrap();
        assert_eq!((again.spec().0, again.version().get()), (9, 2), "the initial spec is not used");
    }

    #[actix::test]
    async fn release_destroys_once_nothing_holds_and_counts_a_missing_resource_as_gone() {
        let user = State::start().client();
        let p = Pointer::typed::<Mtu>("net", "held");
        user.modify(&p, |r| r.spec_mut().0 = 1).await.unwrap();
        user.add_finalizer(&p, "holder").await.unwrap();
        assert!(!user.release(&p).await.unwrap(), "a finalizer holds it");
        assert_eq!(user.get(&p).await.unwrap().phase(), Phase::TearingDown);
        user.remove_finalizer(&p, "holder").await.unwrap();
        assert!(user.release(&p).await.unwrap());
        assert!(user.get(&p).await.unwrap_err().is_not_found());
        assert!(user.release(&p).await.unwrap(), "gone is gone");
    }

    /// Generic code over [`Access`] sees the same calls as the handle's own methods.
    async fn bump(access: &impl Access, p: &TypedPointer<Mtu>) -> Result<u32, Error> {
        Ok(access.modify(p, |r| r.spec_mut().0 += 1).await?.spec().0)
    }

    #[actix::test]
    async fn the_access_trait_and_the_clients_own_methods_are_the_same_calls() {
        let user = State::start().client();
        let p = Pointer::typed::<Mtu>("net", "n");
        assert_eq!(bump(&user, &p).await.unwrap(), 1);
        assert_eq!(user.modify(&p, |r| r.spec_mut().0 += 1).await.unwrap().spec().0, 2);
        assert_eq!(Access::owner(&user), None);
        let listed: Vec<Resource<Mtu>> = user.list_typed("net", &LabelQuery::all()).await.unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(user.get_typed::<Mtu>(&p).await.unwrap().spec().0, 2);
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
            user.list_typed::<Mtu>("net", &LabelQuery::all()).await.unwrap_err().is_type_mismatch()
        );

        let listed = user.list_decoded::<Mtu>("net", &LabelQuery::all()).await.unwrap();
        let ids: Vec<_> = listed.resources.iter().map(|r| r.id().to_owned()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(listed.undecodable.len(), 1);
        assert_eq!(listed.undecodable[0].0.id(), "b");
        assert!(listed.undecodable[0].1.is_type_mismatch());
    }
}
