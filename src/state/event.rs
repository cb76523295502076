//! What watches deliver: [`Event`]s wrapped in [`WatchEvent`] messages.

use std::fmt;

use actix::Message;

use super::delivery::DeliveryToken;
use crate::resource::{AnyResource, Kind, Pointer};

/// Identifies one watch, for [`State::unwatch`](crate::State::unwatch) and to tell
/// several watches apart in one handler.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
pub struct WatchId(pub(crate) u64);

impl fmt::Display for WatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "watch#{}", self.0)
    }
}

/// A change as a watcher sees it.
#[derive(Clone, Debug, PartialEq)]
pub enum Event {
    /// The resource exists now and did not before (or, with a label query,
    /// started to match). Also the first event of a watch on an existing
    /// resource, and the bootstrap events of a kind watch.
    Created(AnyResource),
    /// The resource changed.
    Updated {
        /// What the watcher saw before.
        old: AnyResource,
        /// The resource now.
        new: AnyResource,
    },
    /// The resource is gone (or, with a label query, stopped matching). Carries
    /// its last state; for a watch on a missing resource, a tombstone.
    Destroyed(AnyResource),
    /// A kind watch with bootstrap has delivered every existing resource; live
    /// events follow.
    Bootstrapped(Kind),
}

impl Event {
    /// The resource the event is about (the new state for `Updated`); `None`
    /// for `Bootstrapped`.
    pub fn resource(&self) -> Option<&AnyResource> {
        match self {
            Event::Created(r) | Event::Destroyed(r) => Some(r),
            Event::Updated { new, .. } => Some(new),
            Event::Bootstrapped(_) => None,
        }
    }

    /// The address of the resource the event is about.
    pub fn pointer(&self) -> Option<&Pointer> {
        self.resource().map(AnyResource::pointer)
    }

    /// Short name of the variant (`created`, `updated`, `destroyed`, `bootstrapped`).
    pub fn name(&self) -> &'static str {
        match self {
            Event::Created(_) => "created",
            Event::Updated { .. } => "updated",
            Event::Destroyed(_) => "destroyed",
            Event::Bootstrapped(_) => "bootstrapped",
        }
    }
}

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
    pub(crate) _token: Option<DeliveryToken>,
}

impl WatchEvent {
    /// A message not tied to any watch's flow control (for tests and probes).
    pub fn detached(watch: WatchId, event: Event) -> Self {
        WatchEvent { watch, event, _token: None }
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
