//! The typed [`Resource<S>`], and the [`Node`] it shares with
//! [`AnyResource`](super::AnyResource): metadata and spec in one allocation.

use std::fmt;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Id, Metadata, Phase, Pointer, Spec, Version};
use crate::Error;

/// Metadata and a spec in one allocation: the stored form of a resource
/// (`Arc<Node<S>>` is both a [`Resource<S>`] and, erased, an [`AnyResource`]).
#[derive(Clone)]
pub(crate) struct Node<T> {
    pub(crate) metadata: Metadata,
    pub(crate) spec: T,
}

/// A resource with a spec of known type `S`: metadata plus spec, shared.
///
/// Metadata and spec sit together behind one [`Arc`] (the same allocation
/// the state stores), so reading a resource out of the state copies nothing,
/// and cloning it is one reference-count increment;
/// [`metadata_mut`](Resource::metadata_mut) and [`spec_mut`](Resource::spec_mut)
/// copy it on first write if it is shared.
pub struct Resource<S>(pub(crate) Arc<Node<S>>);

impl<S> Clone for Resource<S> {
    fn clone(&self) -> Self {
        Resource(self.0.clone())
    }
}

impl<S: Spec> Resource<S> {
    /// A new resource of type `S::TYPE` in `namespace` with `id`.
    pub fn new(namespace: impl AsRef<str>, id: impl Into<Id>, spec: S) -> Self {
        Resource::at(Pointer::typed::<S>(namespace, id).erase(), spec)
    }

    /// A new resource at `pointer`, whose type the caller checked is `S::TYPE`.
    pub(crate) fn at(pointer: Pointer, spec: S) -> Self {
        debug_assert_eq!(pointer.resource_type(), S::TYPE);
        Resource(Arc::new(Node { metadata: Metadata::new(pointer), spec }))
    }

    /// A resource from existing metadata; its type must be `S::TYPE`.
    pub fn from_parts(metadata: Metadata, spec: S) -> Result<Self, Error> {
        if metadata.resource_type() != S::TYPE {
            return Err(Error::TypeMismatch {
                resource: metadata.pointer().clone(),
                expected: S::TYPE.to_owned(),
                actual: metadata.resource_type().to_owned(),
            });
        }
        Ok(Resource(Arc::new(Node { metadata, spec })))
    }

    /// The typed view of a stored node (its type checked by the caller).
    pub(crate) fn from_node(node: Arc<Node<S>>) -> Self {
        Resource(node)
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.0.metadata
    }

    /// The metadata, for changing labels, annotations, finalizers or phase
    /// (copied first if it is shared with the state).
    pub fn metadata_mut(&mut self) -> &mut Metadata {
        &mut Arc::make_mut(&mut self.0).metadata
    }

    /// The spec.
    pub fn spec(&self) -> &S {
        &self.0.spec
    }

    /// The spec, for changing (copied first if it is shared with the state).
    pub fn spec_mut(&mut self) -> &mut S {
        &mut Arc::make_mut(&mut self.0).spec
    }

    /// Replaces the spec.
    pub fn set_spec(&mut self, spec: S) {
        match Arc::get_mut(&mut self.0) {
            Some(node) => node.spec = spec,
            None => self.0 = Arc::new(Node { metadata: self.0.metadata.clone(), spec }),
        }
    }

    /// The spec, by value.
    pub fn into_spec(self) -> S {
        Arc::try_unwrap(self.0).map_or_else(|shared| shared.spec.clone(), |node| node.spec)
    }

    /// The address.
    pub fn pointer(&self) -> &Pointer {
        self.metadata().pointer()
    }

    /// The id.
    pub fn id(&self) -> &str {
        self.metadata().id()
    }

    /// The version.
    pub fn version(&self) -> Version {
        self.metadata().version()
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.metadata().phase()
    }

    /// The owner (the controller that created it; `None` for the user's).
    pub fn owner(&self) -> Option<&str> {
        self.metadata().owner()
    }
}

impl<S: Spec> PartialEq for Resource<S> {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.metadata() == other.metadata() && self.spec() == other.spec())
    }
}

impl<S: Spec> fmt::Debug for Resource<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resource")
            .field("metadata", self.metadata())
            .field("spec", self.spec())
            .finish()
    }
}

#[derive(Serialize)]
struct WireRef<'a, S> {
    metadata: &'a Metadata,
    spec: &'a S,
}

#[derive(Deserialize)]
struct WireOwned<S> {
    metadata: Metadata,
    spec: S,
}

impl<S: Spec> Serialize for Resource<S> {
    fn serialize<Ser: Serializer>(&self, s: Ser) -> Result<Ser::Ok, Ser::Error> {
        WireRef { metadata: self.metadata(), spec: self.spec() }.serialize(s)
    }
}

impl<'de, S: Spec> Deserialize<'de> for Resource<S> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = WireOwned::<S>::deserialize(d)?;
        Resource::from_parts(w.metadata, w.spec).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_specs::{Num, Text};

    #[test]
    fn spec_mut_copies_only_shared_specs() {
        let mut a = Resource::new("ns", "a", Num(1));
        let b = a.clone();
        a.spec_mut().0 = 2;
        assert_eq!(b.spec().0, 1);
        assert_eq!(a.spec().0, 2);
    }

    #[test]
    fn from_parts_rejects_a_foreign_type() {
        let md = Metadata::new(Pointer::new("ns", "Other", "a"));
        let err = Resource::from_parts(md, Num(1)).unwrap_err();
        assert!(err.is_type_mismatch(), "{err}");
    }

    #[test]
    fn typed_resources_round_trip_through_json() {
        let mut r = Resource::new("ns", "a", Num(7));
        r.metadata_mut().labels_mut().insert("x", "y");
        let json = serde_json::to_string(&r).unwrap();
        let back: Resource<Num> = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
        assert!(serde_json::from_str::<Resource<Text>>(&json).is_err());
    }
}
