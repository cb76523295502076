//! The finalizer coordinator: holds a resource's destruction until the
//! controllers that depend on it have released it.
//!
//! # Expected flow
//! 1. A controller with a strong input `I` adds its finalizer to `I` while `I`
//!    is running, and writes its outputs from it.
//! 2. Someone calls [`State::teardown_and_destroy(I)`](crate::State::teardown_and_destroy).
//!    The coordinator tears `I` down (phase `TearingDown`). If `I` has no
//!    finalizers it is destroyed at once and the call returns.
//! 3. Otherwise the call is parked and the coordinator watches `I`.
//! 4. The controller is woken by the change of `I`, sees it tearing down, tears
//!    down and destroys its own outputs (waiting, through a destroy-ready input,
//!    for *their* dependents in turn), then removes its finalizer from `I`.
//! 5. The coordinator sees `I` with no finalizers, destroys it, and every parked
//!    call for `I` returns `Ok(())`.
//!
//! The same flow runs at every level, so a teardown cascades through any depth
//! of controllers.
//!
//! # Guarantees
//! - A call returns `Ok(())` only once `I` is destroyed (by the coordinator or by
//!   anyone else while the call waited).
//! - Any number of concurrent calls for one resource share one wait and all
//!   return `Ok(())`, or `NotFound` for those that started after it was gone.
//! - A finalizer added back while the coordinator destroys is respected: the
//!   destroy fails with `PendingFinalizers` and the wait goes on.
//!
//! # Assumptions
//! - The controllers holding finalizers on `I` are running and eventually
//!   release them. If one has failed for good, the call waits until it is
//!   restarted (or forever): use a timeout if that matters.
//!
//! # Caveats
//! - If `I` is destroyed and re-created under the same id while a call waits,
//!   the call returns `Ok(())` for the original and leaves the new one alone.
//!
//! # Errors
//! - [`Error::NotFound`](crate::Error::NotFound) if `I` does not exist when the call starts.
//! - [`Error::OwnerConflict`](crate::Error::OwnerConflict) if the caller does not own `I`.
//! - [`Error::Unavailable`](crate::Error::Unavailable) if the state or the coordinator is not running.

pub(crate) mod coordinator;

pub(crate) use coordinator::FinalizerCoordinator;
