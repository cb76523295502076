//! [`Access`]: the one surface for reading and writing resources as one
//! owner, the same on a [`Client`], a controller's
//! [`ReconcileContext`](crate::controller::ReconcileContext) and a test
//! [`Harness`](crate::testing::Harness); [`Client`], a state handle with its
//! owner bound once; and [`Decoded`], a typed list that keeps the resources
//! that decode apart from those that don't.
//!
//! - [`access`]: the [`Access`] trait, its core and the calls derived from it.
//! - [`client`]: [`Client`] and how a [`State`](super::State) makes one.
//! - [`decoded`]: [`Decoded`] and the `list_decoded` of a
//!   [`State`](super::State).
//! - [`implementors`]: [`Access`] for a [`Client`] and a
//!   [`ReconcileContext`](crate::controller::ReconcileContext), and the
//!   derived calls as their own methods.

mod access;
mod client;
mod decoded;
pub(crate) mod implementors;

pub use access::Access;
pub use client::Client;
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
