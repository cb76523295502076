//! Where a watch's events go ([`Sink`]), and [`WatchBatch`]: the events of
//! one pass of the state actor in one message, for a batched sink.

use actix::{Message, Recipient};
use futures::channel::mpsc::UnboundedSender;

use super::credit::DeliveryToken;
use super::watch_event::WatchEvent;

/// The events of one watch that one pass of the state actor produced, in one
/// message: how the runtime's queue controllers subscribe.
///
/// A message per event costs an envelope, a mailbox push and a wake each; a
/// per-object controller hears one event per object it handles. The state
/// actor collects a batched watch's events during a pass and sends them
/// (before any reply to the writes that caused them) at the end of the pass.
/// The batch holds the flow-control slots of all its events.
pub(crate) struct WatchBatch {
    pub(super) events: BatchEvents,
    /// The flow-control slots (and units of activity) of all its events,
    /// returned together when the batch is dropped.
    pub(super) _token: DeliveryToken,
}

pub(super) enum BatchEvents {
    /// A pass that made one change (a writer alone): no list to allocate.
    One(WatchEvent),
    /// Several, in the order they were made.
    Many(Vec<WatchEvent>),
}

impl WatchBatch {
    /// The events, in order.
    pub(crate) fn events(&self) -> &[WatchEvent] {
        match &self.events {
            BatchEvents::One(event) => std::slice::from_ref(event),
            BatchEvents::Many(events) => events,
        }
    }
}

impl Message for WatchBatch {
    type Result = ();
}

/// Where a watch's events go.
pub(crate) enum Sink {
    /// An actor.
    Actor(Recipient<WatchEvent>),
    /// An actor of the runtime, in [`WatchBatch`]es.
    Batch(Recipient<WatchBatch>),
    /// A [`WatchStream`](crate::state::WatchStream).
    Channel(UnboundedSender<WatchEvent>),
}

impl Sink {
    pub(super) fn is_closed(&self) -> bool {
        match self {
            Sink::Actor(r) => !r.connected(),
            Sink::Batch(r) => !r.connected(),
            Sink::Channel(c) => c.is_closed(),
        }
    }
}
