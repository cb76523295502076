//! Flow-controlled delivery of watch events to one subscriber.
//!
//! Each watch has a *window* of events that may be in flight (sent, not yet
//! dropped by the subscriber). While the window has room, events go straight
//! out with `do_send` (one send discipline per subscriber, so order is kept).
//! When it is full, events go to a [`Backlog`](backlog::Backlog) that
//! coalesces them to the latest state per resource. Dropping a delivered
//! message returns its slot; when the in-flight count falls to half the
//! window and a backlog exists, the subscriber's side asks the state actor to
//! flush.
//!
//! The result: a stalled subscriber costs at most `window` queued messages plus
//! one backlog entry per distinct resource, whatever the number of updates, and
//! it receives every resource's latest state once it catches up.
//!
//! - [`watch_event`]: [`WatchEvent`], the public message of one event.
//! - [`sink`]: where a watch's events go ([`Sink`]), and [`WatchBatch`], the
//!   one message a batched sink gets per pass.
//! - [`credit`]: the flow-control slots shared with delivered messages
//!   ([`DeliveryToken`](credit::DeliveryToken)) and the [`Flush`] request.
//! - [`backlog`]: the coalescing of a subscriber that is behind.
//! - [`outbox`]: [`Outbox`], one watch's delivery state, tying them together.

mod backlog;
mod credit;
mod outbox;
mod sink;
mod watch_event;

pub(crate) use credit::Flush;
pub(crate) use outbox::Outbox;
pub(crate) use sink::{Sink, WatchBatch};
pub use watch_event::WatchEvent;

/// A resource of test spec `Num(v)` at version `v` (for the tests of the
/// submodules).
#[cfg(test)]
fn r(id: &str, v: u64) -> crate::resource::AnyResource {
    use crate::resource::test_specs::Num;
    use crate::resource::{Resource, Version};
    let mut r = Resource::new("ns", id, Num(v as i64)).into_any();
    r.metadata_mut().set_version(Version::new(v));
    r
}
