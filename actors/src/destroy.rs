//! [`Destroy`]: destroys resources of one kind once they are torn down and free.

use std::fmt;
use std::marker::PhantomData;

use cosi_runtime::controller::{
    Outcome, QueueController, QueueHandle, QueueSettings, ReconcileError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::RegistrationError;

/// A generic controller that destroys each resource of type `T` in one
/// namespace as soon as it is tearing down and holds no finalizers.
///
/// It lets the controller that tears a resource down forget about it: no
/// destroy-ready input, no second pass.
///
/// ```
/// use cosi_actors::Destroy;
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Route;
/// # impl Spec for Route { const TYPE: &'static str = "Routes.net.cosi.dev"; }
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::start();
/// Destroy::<Route>::register(&runtime, "network").await?;
/// let state = runtime.state().client();
/// let route = state.create(Resource::new("network", "default", Route)).await?;
/// state.teardown(route.pointer()).await?;
/// runtime.settled().await;
/// assert!(state.get(route.pointer()).await.unwrap_err().is_not_found());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Expected flow
/// Each resource of the kind is queued at start and on each change; one that
/// is tearing down with no finalizers is destroyed.
///
/// # Guarantees
/// - It never destroys a running resource, nor one that a finalizer holds
///   (the state refuses it; the finalizer's removal queues it again).
/// - It destroys as the resource's **owner** (whoever created it), so it
///   works for the outputs of any controller.
///
/// # Caveats
/// - Acting for the owner is deliberate (the Go runtime's destroy controller
///   does the same) and is why it takes a [`State`] handle instead of
///   writing through its reconcile context, which would only let it write
///   its own outputs. It declares no outputs, so it never conflicts with the
///   controller that holds the type exclusively.
///
/// # Errors
/// State errors fail that resource's reconcile, retried with backoff.
pub struct Destroy<T: Spec> {
    name: String,
    namespace: String,
    state: State,
    _type: PhantomData<fn() -> T>,
}

impl<T: Spec> fmt::Debug for Destroy<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Destroy")
            .field("name", &self.name)
            .field("kind", &Kind::of::<T>(&self.namespace))
            .finish()
    }
}

impl<T: Spec> Destroy<T> {
    /// A destroy controller for `T` in `namespace`, writing through `state`
    /// (the runtime's: [`Runtime::state`]). Its name is `Destroy(<namespace>/<type>)`.
    pub fn new(state: State, namespace: impl Into<String>) -> Self {
        let namespace = namespace.into();
        let name = format!("Destroy({})", Kind::of::<T>(&namespace));
        Destroy { name, namespace, state, _type: PhantomData }
    }

    /// Renames it (its controller name in metrics and health).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Registers a destroy controller for `T` in `namespace` with `runtime`.
    ///
    /// # Errors
    /// As [`Runtime::register`].
    pub async fn register(
        runtime: &Runtime,
        namespace: impl Into<String>,
    ) -> Result<QueueHandle, RegistrationError> {
        let (state, namespace) = (runtime.state(), namespace.into());
        runtime.register(move || Destroy::<T>::new(state.clone(), namespace.clone())).await
    }
}

impl<T: Spec> QueueController for Destroy<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<T>(&self.namespace)],
            outputs: vec![],
            concurrency: 4,
        }
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let resource = match cx.get(ptr).await {
            Ok(resource) => resource,
            Err(e) if e.is_not_found() => return Ok(Outcome::Done),
            Err(e) => return Err(e.into()),
        };
        destroy_if_free(&self.state, &resource).await?;
        Ok(Outcome::Done)
    }
}

/// Destroys `resource` as its owner if it is tearing down and free of
/// finalizers; whether it is gone.
pub(crate) async fn destroy_if_free(state: &State, resource: &AnyResource) -> Result<bool, Error> {
    if resource.phase() != Phase::TearingDown || !resource.metadata().finalizers().is_empty() {
        return Ok(false);
    }
    destroy_as_owner(state, resource.pointer(), resource.owner()).await
}

/// Destroys the resource at `ptr` as `owner`; whether it is gone. A
/// finalizer that came back, or a re-creation by someone else, is not an
/// error: its change queues the resource again.
pub(crate) async fn destroy_as_owner(
    state: &State,
    ptr: &Pointer,
    owner: Option<&str>,
) -> Result<bool, Error> {
    match state.destroy(ptr, owner).await {
        Ok(()) => Ok(true),
        Err(e) if e.is_not_found() => Ok(true),
        Err(e) if e.is_pending_finalizers() || e.is_owner_conflict() => Ok(false),
        Err(e) => Err(e),
    }
}
