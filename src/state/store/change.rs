//! [`Change`]: what a write of the [`Store`](super::Store) did, for watchers.

use crate::resource::AnyResource;

/// One change to the stored state, as the store reports it to watchers.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A resource was created.
    Created(AnyResource),
    /// A resource was written; `old` is what was stored before.
    Updated {
        /// The previous stored state.
        old: AnyResource,
        /// The new stored state.
        new: AnyResource,
    },
    /// A resource was destroyed; this is its last stored state.
    Destroyed(AnyResource),
}

impl Change {
    /// The resource as it is now (or was last, for `Destroyed`).
    pub fn resource(&self) -> &AnyResource {
        match self {
            Change::Created(r) | Change::Destroyed(r) => r,
            Change::Updated { new, .. } => new,
        }
    }
}
