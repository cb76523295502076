//! What watches deliver: [`Event`]s (pure data; the delivery layer wraps them
//! in [`WatchEvent`](super::WatchEvent) messages).

use std::fmt;

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
    /// its last state, whose [`revision`](crate::resource::Metadata::revision)
    /// is that of the destroy (or, for a resource that stopped matching, of the
    /// update); for a watch on a missing resource, a tombstone.
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
