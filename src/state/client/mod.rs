//! The user surface, the top layer of the state. [`Access`]: the one surface
//! for reading and writing resources, the same on a [`Client`] (as its
//! owner), a controller's [`ReconcileContext`](crate::controller::ReconcileContext)
//! and a test [`Harness`](crate::testing::Harness); [`Client`], a state
//! handle with its owner bound once; and [`Decoded`], a typed list that
//! keeps the resources that decode apart from those that don't.
//!
//! - [`access`]: the [`Access`] trait, its core and the calls derived from it.
//! - [`as_owner`]: [`Client`] and how a [`State`](super::State) makes one.
//! - [`decoded`]: the [`Decoded`] list.
//! - [`implementors`]: [`Access`] for a [`Client`] (a controller's context
//!   invokes the same macros), and the derived calls as their own methods.

mod access;
mod as_owner;
mod decoded;
pub(crate) mod implementors;

pub use access::Access;
pub use as_owner::Client;
pub use decoded::Decoded;

/// Specs for the tests of the submodules.
#[cfg(test)]
mod test_specs {
    use crate::resource::Spec;

    #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    pub(super) struct Mtu(pub(super) u32);
    impl Spec for Mtu {
        const TYPE: &'static str = "Mtus.net.cosi.dev";
    }
}
