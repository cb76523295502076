//! [`finalizer`]: a queue controller's finalizer dance in one call.

use super::{Outcome, ReconcileContext, ReconcileError};
use crate::resource::{Phase, PointerTo, Resource, Spec};

/// Reconciles the primary resource at `ptr` holding this controller's
/// finalizer on it: `apply` while it runs, `cleanup` once when it is torn
/// down, and only then lets it go. The finalizer dance of kube-runtime's
/// `finalizer()`, for a [`QueueController`](super::QueueController)'s primary input.
///
/// ```
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// # #[spec(type = "Ints.test.cosi.dev")]
/// # struct Int(i64);
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// # #[spec(type = "Strs.test.cosi.dev")]
/// # struct Str(String);
///
/// /// Writes each `Int` as a `Str`; a torn-down `Int` waits until its `Str` is gone.
/// struct IntToStr;
///
/// impl QueueController for IntToStr {
///     fn name(&self) -> &str { "IntToStr" }
///     fn settings(&self) -> QueueSettings {
///         QueueSettings::new(vec![Input::primary::<Int>("default")], vec![Output::exclusive::<Str>()])
///     }
///     async fn reconcile(&self, cx: &ReconcileContext, ptr: &Pointer) -> Result<Outcome, ReconcileError> {
///         let out = Pointer::typed::<Str>("default", ptr.id());
///         finalizer(
///             cx,
///             ptr,
///             async |int: Resource<Int>| {
///                 let text = int.spec().0.to_string();
///                 cx.modify(&out, move |s| s.spec_mut().0 = text.clone()).await?;
///                 Ok(Outcome::Done)
///             },
///             async |_| Ok(cx.release(&out).await?), // done once the output is gone
///         )
///         .await
///     }
/// }
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::start();
/// runtime.register(|| IntToStr).await?;
/// let user = runtime.state().client();
/// let seven = Pointer::typed::<Int>("default", "seven");
/// user.modify(&seven, |i| i.spec_mut().0 = 7).await?;
/// runtime.settled().await;
/// assert_eq!(user.get(&seven).await?.metadata().finalizers().to_vec(), ["IntToStr"]);
/// assert_eq!(user.get(&Pointer::typed::<Str>("default", "seven")).await?.spec().0, "7");
///
/// user.teardown_and_destroy(&seven).await?; // waits for the cleanup
/// assert!(user.get(&Pointer::typed::<Str>("default", "seven")).await.unwrap_err().is_not_found());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Expected flow
/// 1. Reads the resource at `ptr` as `S` (from a
///    [`TypedPointer<S>`](crate::resource::TypedPointer), or the closures'
///    annotation for a plain pointer). Missing: returns [`Outcome::Done`],
///    running neither closure.
/// 2. **Running**: puts the controller's finalizer on it if it is not there
///    yet ([`ReconcileContext::add_finalizer`]). If that answers that the
///    resource is gone or going, returns `Done`: the change that did it
///    queues the key again. Then runs `apply(resource)` and returns what it
///    returns.
/// 3. **Tearing down, finalizer held**: runs `cleanup(resource)`. `Ok(true)`
///    (done: what the controller made from it is gone) removes the
///    finalizer, which lets the teardown proceed
///    ([`State::teardown_and_destroy`](crate::State::teardown_and_destroy)
///    returns once every holder let go), and returns `Done`. `Ok(false)`
///    (not yet: an output still has finalizers of its own, say) keeps the
///    finalizer and returns `Done`; the next trigger runs `cleanup` again.
/// 4. **Tearing down, finalizer not held** (cleaned up already, or never
///    applied): returns `Done`, running neither closure.
///
/// # Guarantees
/// - `apply` runs only while the controller holds its finalizer on the
///   resource, so whatever `apply` made, `cleanup` gets to undo before the
///   resource can be destroyed.
/// - The finalizer is removed only after `cleanup` returned `Ok(true)`: a
///   failing or unfinished cleanup holds the resource (and its
///   `teardown_and_destroy`) for as long as it takes.
/// - Errors of the closures come back unchanged: an error is retried with
///   the queue's per-key backoff, a [`TerminalError`](super::TerminalError)
///   is not; the finalizer stays on meanwhile.
///
/// # Assumptions
/// - `ptr` is a primary (or mapped) input of the controller, the inputs on
///   which a queue controller may hold finalizers; the controller's name is
///   its finalizer.
/// - Both closures are idempotent: `apply` runs on every reconcile of a
///   running resource, and `cleanup` may run again after an error, after
///   `Ok(false)`, or when removing the finalizer failed.
///
/// # Caveats
/// - Adding the finalizer changes the resource, which queues its key once
///   more: the first reconcile of a new resource is followed by a second
///   one (as with kube-runtime), which `apply` must tolerate.
/// - `apply` gets the resource as read before the finalizer was added (its
///   finalizer list does not show it yet).
/// - After `Ok(false)` nothing requeues the key by itself: make sure a change
///   does (a [mapped input](super::Input::mapped) on the output type, whose
///   changes [`map_input`](super::QueueController::map_input) maps back to the
///   primary, wakes it when an output goes), or call
///   [`cx.requeue_after(d)`](ReconcileContext::requeue_after) in `cleanup`.
///
/// # Errors
/// What the closures return; [`Error::AccessDenied`](crate::Error::AccessDenied)
/// when `ptr` is not an input that allows finalizers;
/// [`Error::TypeMismatch`](crate::Error::TypeMismatch) when the stored spec
/// is not an `S`; any other error of the state while reading the resource
/// or editing its finalizers (retried with backoff like the others).
pub async fn finalizer<S, P, A, C>(
    cx: &ReconcileContext,
    ptr: &P,
    apply: A,
    cleanup: C,
) -> Result<Outcome, ReconcileError>
where
    S: Spec,
    P: PointerTo<S> + ?Sized,
    A: AsyncFnOnce(Resource<S>) -> Result<Outcome, ReconcileError>,
    C: AsyncFnOnce(Resource<S>) -> Result<bool, ReconcileError>,
{
    let ptr = ptr.pointer();
    let resource = match cx.get(ptr).await {
        Ok(found) => found.typed::<S>()?,
        Err(e) if e.is_not_found() => return Ok(Outcome::Done),
        Err(e) => return Err(e.into()),
    };
    let held = resource.metadata().finalizers().contains(cx.name());
    match resource.phase() {
        Phase::TearingDown if !held => Ok(Outcome::Done),
        Phase::TearingDown => {
            if cleanup(resource).await? {
                cx.remove_finalizer(ptr).await?;
            }
            Ok(Outcome::Done)
        }
        Phase::Running => {
            if !held && !cx.add_finalizer(ptr).await? {
                return Ok(Outcome::Done); // gone or going: its change queues us again
            }
            apply(resource).await
        }
    }
}
