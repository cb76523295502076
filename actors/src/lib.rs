//! # cosi-actors
//!
//! Ready-made actors for [cosi-runtime](cosi_runtime), built only on its public
//! API (so they double as examples of it).
//!
//! - [`Poller`]: a feeder that calls your function on an interval and mirrors
//!   the items it returns into resources (creates, updates, destroys what
//!   vanished). A supervised controller itself; others react to its resources.
//! - [`Enqueuer`]: pushes keys into a queue controller from any event source:
//!   async code, streams, or plain threads.

#![warn(missing_docs, missing_debug_implementations, rust_2018_idioms)]
#![deny(unsafe_code)]

mod enqueuer;
mod poller;

pub use enqueuer::Enqueuer;
pub use poller::{PollError, PollResult, Poller};
