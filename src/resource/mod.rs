//! The resource model: pure data, no actors and no IO.
//!
//! A **resource** is strictly defined [`Metadata`] plus an opaque **spec**.
//!
//! - [`Pointer`] addresses one resource (namespace, type, id); [`Kind`] a collection
//!   (namespace, type).
//! - [`Spec`] is implemented by your payload types; [`Resource<S>`] pairs metadata
//!   with a typed spec.
//! - [`Uid`] tells incarnations apart: a resource destroyed and created again
//!   at the same address is another one, and an update computed from the old
//!   one is a conflict.
//! - [`AnyResource`] is the type-erased, cheaply cloned form the state stores and
//!   watches deliver; [`AnyResource::typed`] reads it back (a wrong type is an
//!   error, never a panic).
//! - [`DynamicResource`] holds the spec as a serde value, for manifests and tools.
//! - [`LabelQuery`] filters lists and watches by labels.
//! - [`validate`] lists the input rules the state enforces.

mod any;
mod dynamic;
mod labels;
mod metadata;
mod names;
mod parse;
pub(crate) mod pointer;
mod query;
mod selector;
mod spec;
mod typed;
mod typed_resource;
mod uid;
pub mod validate;
mod version;

pub use any::AnyResource;
/// `#[derive(Spec)]` with `#[spec(type = "Plural.group.example")]`: see [`Spec`](trait@Spec).
pub use cosi_derive::Spec;
pub use dynamic::DynamicResource;
pub use labels::{Annotations, Finalizers, Labels, StringMap};
pub use metadata::Metadata;
pub(crate) use pointer::KindMap;
pub use pointer::{Id, Kind, Pointer};
pub use query::{LabelQuery, LabelTerm};
pub use selector::SelectorError;
pub use spec::Spec;
pub use typed::{Address, PointerTo, TypedPointer};
pub use typed_resource::Resource;
pub use uid::Uid;
pub use version::{Phase, Timestamp, Version};

#[cfg(test)]
pub(crate) use spec::tests as test_specs;
