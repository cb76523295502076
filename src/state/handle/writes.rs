//! The writes of a [`State`] handle: create, update, modify, destroy,
//! teardown and finalizers.

use std::sync::Arc;

use super::State;
use crate::Error;
use crate::resource::{AnyResource, Pointer, PointerTo, Resource, Spec};
use crate::state::request::StateRequest;
use crate::state::request::TeardownAndDestroy;
use crate::state::request::reply_ready;
use crate::state::store::ExpectedPhase;
#[cfg(feature = "kubernetes")]
use crate::state::store::ModifyFn;

fn owner_arc(owner: Option<&str>) -> Option<Arc<str>> {
    owner.map(Arc::from)
}

impl State {
    /// A read-modify-write through an erased function: `modify` maps the
    /// stored resource (or `None`) to the desired one (for writers that hold
    /// resources of a type known only at run time, such as the cluster source).
    #[cfg(feature = "kubernetes")]
    pub(crate) fn modify_erased(
        &self,
        pointer: &Pointer,
        owner: Option<Arc<str>>,
        expected_phase: ExpectedPhase,
        modify: ModifyFn,
    ) -> impl Future<Output = Result<AnyResource, Error>> + '_ {
        self.resource(StateRequest::Modify {
            pointer: pointer.clone(),
            owner,
            expected_phase,
            modify,
            keep_finalizers: false,
        })
    }

    /// Creates `resource` owned by `owner`. The state sets version 1, the owner
    /// and the timestamps; returns the stored resource.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; [`Error::InvalidInput`].
    pub async fn create(
        &self,
        resource: impl Into<AnyResource>,
        owner: Option<&str>,
    ) -> Result<AnyResource, Error> {
        self.resource(StateRequest::create(resource.into(), owner_arc(owner))).await
    }

    /// Updates `resource`, which must carry the version it was read at, with
    /// `owner` and expecting the stored resource to be running.
    ///
    /// A resource read from the state also carries its incarnation's
    /// [`uid`](crate::resource::Metadata::uid): if the resource was destroyed
    /// and created again since, the update is an [`Error::VersionConflict`]
    /// even at the same version. A resource built from scratch, without a
    /// uid, is checked by its version only.
    ///
    /// # Errors
    /// In this order: [`Error::NotFound`], [`Error::OwnerConflict`],
    /// [`Error::VersionConflict`], [`Error::PhaseConflict`]; and [`Error::InvalidInput`].
    pub async fn update(
        &self,
        resource: impl Into<AnyResource>,
        owner: Option<&str>,
    ) -> Result<AnyResource, Error> {
        self.update_with_phase(resource, owner, ExpectedPhase::Running).await
    }

    /// [`update`](State::update) with another expected phase.
    ///
    /// # Errors
    /// As [`update`](State::update).
    pub async fn update_with_phase(
        &self,
        resource: impl Into<AnyResource>,
        owner: Option<&str>,
        expected_phase: ExpectedPhase,
    ) -> Result<AnyResource, Error> {
        let req = StateRequest::update(resource.into(), owner_arc(owner), expected_phase, false);
        self.resource(req).await
    }

    /// Creates or updates the resource at `ptr` by applying `f` to its current
    /// state (or to a new resource with `S::default()` if it is missing).
    ///
    /// `f` runs inside the state actor, atomically with the write, so there is
    /// never a version conflict to retry; keep it short and non-blocking. It is
    /// `Fn`: a backend shared with other processes re-runs it on fresh data when
    /// the stored resource changed under it. If the
    /// result equals the stored resource, nothing is written and no event is
    /// sent. If `f` panics, the panic resumes in the caller.
    ///
    /// # Errors
    /// [`Error::OwnerConflict`]; [`Error::PhaseConflict`] if the resource is
    /// tearing down; [`Error::TypeMismatch`]; [`Error::InvalidInput`].
    pub async fn modify<S, P, F>(
        &self,
        ptr: &P,
        f: F,
        owner: Option<&str>,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec + Default,
        P: PointerTo<S> + ?Sized,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let ptr = ptr.pointer();
        let at = ptr.clone();
        self.modify_with(
            ptr,
            move || Resource::at(at.clone(), S::default()),
            f,
            owner,
            ExpectedPhase::Running,
        )
        .await
    }

    /// [`modify`](State::modify) with an explicit starting resource for the
    /// missing case (for specs without `Default`) and an expected phase.
    ///
    /// # Errors
    /// As [`modify`](State::modify).
    pub async fn modify_with<S, P, E, F>(
        &self,
        ptr: &P,
        empty: E,
        f: F,
        owner: Option<&str>,
        expected_phase: ExpectedPhase,
    ) -> Result<Resource<S>, Error>
    where
        S: Spec,
        P: PointerTo<S> + ?Sized,
        E: Fn() -> Resource<S> + Send + 'static,
        F: Fn(&mut Resource<S>) + Send + 'static,
    {
        let owner = owner_arc(owner);
        let req = StateRequest::modify(ptr.pointer(), owner, expected_phase, false, empty, f)?;
        self.resource(req).await?.typed()
    }

    /// Destroys the resource at `ptr`. It need not be tearing down, but it must
    /// have no finalizers.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`]; [`Error::PendingFinalizers`].
    pub async fn destroy(&self, ptr: &Pointer, owner: Option<&str>) -> Result<(), Error> {
        self.done(StateRequest::destroy(ptr, owner_arc(owner))).await
    }

    /// Moves the resource at `ptr` to `TearingDown` (idempotent) and returns
    /// whether it is ready to destroy (no finalizers).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`].
    pub async fn teardown(&self, ptr: &Pointer, owner: Option<&str>) -> Result<bool, Error> {
        reply_ready(self.send(StateRequest::teardown(ptr, owner_arc(owner))).await?)
    }

    /// Adds `finalizer` to the resource at `ptr`, whatever its owner and phase.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`].
    pub async fn add_finalizer(&self, ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
        self.done(StateRequest::add_finalizer(ptr, finalizer, ExpectedPhase::Any)).await
    }

    /// Removes `finalizer` from the resource at `ptr`, whatever its owner and phase.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`].
    pub async fn remove_finalizer(&self, ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
        self.done(StateRequest::remove_finalizer(ptr, finalizer)).await
    }

    /// Tears the resource down, waits until its finalizers are gone, and destroys it.
    ///
    /// Served by the [`FinalizerCoordinator`](crate::dev::FinalizerCoordinator); see its documentation for the
    /// lifecycle. A resource that is destroyed by someone else while this waits
    /// counts as success, so many concurrent calls for one resource all finish
    /// without error (or with `NotFound` if it was already gone when they started).
    ///
    /// # Errors
    /// [`Error::NotFound`] if it does not exist; [`Error::OwnerConflict`];
    /// [`Error::Unavailable`] if this handle has no coordinator.
    pub async fn teardown_and_destroy(
        &self,
        ptr: &Pointer,
        owner: Option<&str>,
    ) -> Result<(), Error> {
        let Some(coordinator) = &self.0.coordinator else {
            return Err(Error::Unavailable {
                resource: ptr.to_string(),
                service: "the finalizer coordinator",
            });
        };
        let msg = TeardownAndDestroy { pointer: ptr.clone(), owner: owner_arc(owner) };
        coordinator.send(msg).await.unwrap_or_else(|_| {
            Err(Error::Unavailable {
                resource: ptr.to_string(),
                service: "the finalizer coordinator",
            })
        })
    }
}
