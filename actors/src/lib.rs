//! # cosi-actors
//!
//! Ready-made actors for [cosi-runtime](cosi_runtime), built only on its public
//! API (so they double as examples of it).
//!
//! The [README](https://github.com/cosi-runtime/cosi-runtime/tree/main/actors)
//! has a short example of each.
//!
//! - [`Poller`]: a feeder that calls your function on an interval and mirrors
//!   the items it returns into resources (creates, updates, destroys what
//!   vanished). A supervised controller itself; others react to its resources.
//! - Generic controllers, the three shapes most controllers of a control
//!   plane take:
//!   - [`Transform`]: one input type → one output type through your mapping,
//!     per object, optionally holding a finalizer on each input until the
//!     outputs made from it are gone; [`Transform::many`] makes any number
//!     of outputs of each input. It watches its outputs only for their
//!     destruction, so it never wakes itself by writing them;
//!   - [`Cleanup`]: when a resource goes away, removes the resources that
//!     point at it (by label or mapping);
//!   - [`Destroy`]: destroys resources of a type once they are torn down and
//!     free of finalizers.
//! - [`Enqueuer`]: pushes keys into a queue controller from any event source:
//!   async code, streams, or plain threads.

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![deny(unsafe_code)]

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

mod cleanup;
mod destroy;
mod enqueuer;
mod poller;
mod transform;

pub use cleanup::{Cleanup, MAPPED_RETRY};
pub use destroy::Destroy;
pub use enqueuer::Enqueuer;
pub use poller::{PollError, PollResult, Poller};
pub use transform::{INPUT_LABEL, Mapped, MappedMany, Transform};
