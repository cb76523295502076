//! [`WatchEvent`]: the public actix message a watch delivers, one event with
//! the revision the watch is caught up to and its flow-control slot.

use std::fmt;

use actix::Message;

use super::credit::DeliveryToken;
use crate::state::event::{Event, WatchId};

/// The actix message a watch delivers to its [`Recipient`](actix::Recipient).
///
/// Flow control: the state keeps at most a window of these in flight per
/// watch; dropping the message returns its slot. A subscriber that falls
/// behind has its backlog coalesced to the latest state per resource (see
/// [`state`](crate::state) for the exact rules), so its memory stays bounded
/// and it never stops the runtime.
///
/// ```
/// use actix::prelude::*;
/// use cosi_runtime::state::{Event, WatchEvent};
///
/// struct Printer;
/// impl Actor for Printer {
///     type Context = Context<Self>;
/// }
/// impl Handler<WatchEvent> for Printer {
///     type Result = ();
///     fn handle(&mut self, msg: WatchEvent, _: &mut Context<Self>) {
///         if let Event::Updated { old, new } = msg.event() {
///             println!("{} {} -> {}", new.pointer(), old.version(), new.version());
///         }
///     }
/// }
/// ```
pub struct WatchEvent {
    pub(crate) watch: WatchId,
    pub(crate) event: Event,
    pub(crate) revision: u64,
    pub(crate) _token: Option<DeliveryToken>,
}

impl WatchEvent {
    /// A message not tied to any watch's flow control (for tests and probes).
    pub fn detached(watch: WatchId, event: Event) -> Self {
        WatchEvent { watch, event, revision: 0, _token: None }
    }

    /// The store revision this watch is caught up to once this event is
    /// handled: every change up to it that the watch sees has been delivered.
    /// Resume a watch from here ([`WatchOptions::resume_from`](crate::state::WatchOptions::resume_from))
    /// and it delivers exactly what came after. (While a slow subscriber's
    /// backlog drains, this stays at the revision before the backlog began,
    /// and jumps to the latest only with the backlog's last event.)
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Which watch delivered it.
    pub fn watch_id(&self) -> WatchId {
        self.watch
    }

    /// The event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The event by value (returns the flow-control slot).
    pub fn into_event(self) -> Event {
        self.event
    }
}

impl Message for WatchEvent {
    type Result = ();
}

impl fmt::Debug for WatchEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchEvent")
            .field("watch", &self.watch)
            .field("event", &self.event)
            .finish()
    }
}
