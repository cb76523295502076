//! [`Access`]: the one surface for reading and writing resources as one
//! owner. Its implementors provide the core; every other call is derived
//! from it here, once.

use std::future::Future;

use super::Decoded;
use crate::Error;
use crate::resource::{Address, AnyResource, Kind, LabelQuery, Pointer, PointerTo, Resource, Spec};
use crate::state::ExpectedPhase;

/// The one way to read and write resources as one owner: the same calls,
/// with the same arguments and results, on a [`Client`](super::Client) (a
/// program, a feeder, a tool, as the owner it was made for), a controller's
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
/// [`State`](crate::state::State) keeps the state contract's calls with the
/// owner explicit, as their last argument (`state.modify(&ptr, change,
/// owner)`); a [`Client`](super::Client) is those calls with the owner bound
/// once (`state.client()` for the user, `state.client_as(owner)`).
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
    /// [`teardown_and_destroy`](super::Client::teardown_and_destroy), what a
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

#[cfg(test)]
mod tests {
    use super::super::test_specs::Mtu;
    use super::*;
    use crate::resource::{Phase, TypedPointer};
    use crate::state::State;

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct NoDefault(u32);
    impl Spec for NoDefault {
        const TYPE: &'static str = "NoDefaults.net.cosi.dev";
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
}
