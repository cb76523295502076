//! [`AnyResource`]: the type-erased resource that the state stores and watches carry.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use super::typed_resource::Node;
use super::{Metadata, Phase, Pointer, Resource, Spec, Version};
use crate::Error;

/// Object-safe view of a spec of any type.
pub(crate) trait ErasedSpec: Any + Send + Sync {
    /// `S::TYPE`, or `None` for a dynamic spec.
    fn spec_type(&self) -> Option<&'static str>;
    fn eq_erased(&self, other: &dyn ErasedSpec) -> bool;
    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error>;
    /// Appends the spec's JSON to `out`, without a `serde_json::Value` between.
    #[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error>;
    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
    fn as_any(&self) -> &dyn Any;
}

impl<S: Spec> ErasedSpec for S {
    fn spec_type(&self) -> Option<&'static str> {
        Some(S::TYPE)
    }

    fn eq_erased(&self, other: &dyn ErasedSpec) -> bool {
        if let Some(o) = other.as_any().downcast_ref::<S>() {
            return self == o;
        }
        // A spec read back from a store (redb after a reopen, etcd) is kept
        // as its JSON until someone reads it typed: compared as `S`, so the
        // no-op rule holds. Compared as JSON values, an `f32` field never
        // matches (serde_json writes `1.1` but makes the value of `1.1f32`
        // `1.100000023841858`), and every no-op modify would write.
        if let Some(DynamicSpec(value)) = other.as_any().downcast_ref::<DynamicSpec>()
            && let Ok(decoded) = <S as serde::Deserialize>::deserialize(value)
        {
            return *self == decoded;
        }
        match (self.to_value(), other.to_value()) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        }
    }

    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        serde_json::to_value(self)
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, self)
    }

    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A spec kept as a serde value (from a manifest or a generic tool).
#[derive(Clone)]
pub(crate) struct DynamicSpec(pub(crate) serde_json::Value);

impl ErasedSpec for DynamicSpec {
    fn spec_type(&self) -> Option<&'static str> {
        None
    }

    fn eq_erased(&self, other: &dyn ErasedSpec) -> bool {
        match other.as_any().downcast_ref::<DynamicSpec>() {
            Some(o) => self.0 == o.0,
            // A typed spec compares itself with this JSON (as its type).
            None => other.eq_erased(self),
        }
    }

    fn to_value(&self) -> Result<serde_json::Value, serde_json::Error> {
        Ok(self.0.clone())
    }

    fn write_json(&self, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
        serde_json::to_writer(out, &self.0)
    }

    fn debug(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The spec of a tombstone: none.
#[derive(Clone)]
pub(crate) struct NoSpec;

/// What a [`Node`] may hold: a typed spec, a dynamic one, or none.
pub(crate) trait NodeSpec: Clone + Send + Sync + 'static {
    fn erased(&self) -> Option<&dyn ErasedSpec>;
}

impl<S: Spec> NodeSpec for S {
    fn erased(&self) -> Option<&dyn ErasedSpec> {
        Some(self)
    }
}

impl NodeSpec for DynamicSpec {
    fn erased(&self) -> Option<&dyn ErasedSpec> {
        Some(self)
    }
}

impl NodeSpec for NoSpec {
    fn erased(&self) -> Option<&dyn ErasedSpec> {
        None
    }
}

/// Object-safe view of a node of any spec.
pub(crate) trait ErasedNode: Any + Send + Sync {
    fn metadata(&self) -> &Metadata;
    fn metadata_mut(&mut self) -> &mut Metadata;
    /// The spec; `None` for a tombstone.
    fn spec(&self) -> Option<&dyn ErasedSpec>;
    /// A copy with other metadata (the spec cloned).
    fn with_metadata(&self, metadata: Metadata) -> Arc<dyn ErasedNode>;
}

impl<T: NodeSpec> ErasedNode for Node<T> {
    fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    fn metadata_mut(&mut self) -> &mut Metadata {
        &mut self.metadata
    }

    fn spec(&self) -> Option<&dyn ErasedSpec> {
        self.spec.erased()
    }

    fn with_metadata(&self, metadata: Metadata) -> Arc<dyn ErasedNode> {
        Arc::new(Node { metadata, spec: self.spec.clone() })
    }
}

/// A resource of any type: what the state stores and what watches deliver.
///
/// Cloning is one reference-count increment. Read it back as a typed
/// [`Resource<S>`] with [`typed`](AnyResource::typed) (which shares it, as
/// [`Resource::into_any`] does the other way: metadata and spec are one
/// allocation): a wrong type is an [`Error::TypeMismatch`], never a panic. A resource created from a
/// [`DynamicResource`](super::DynamicResource) (spec as a serde value) is converted on that read.
///
/// A *tombstone* is an `AnyResource` with metadata but no spec: a watch on a
/// missing resource starts with `Destroyed(tombstone)`.
///
/// ```
/// # use cosi_runtime::resource::{AnyResource, Resource, Spec};
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Mtu(u32);
/// # impl Spec for Mtu { const TYPE: &'static str = "Mtus.net.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Hostname(String);
/// # impl Spec for Hostname { const TYPE: &'static str = "Hostnames.net.cosi.dev"; }
/// let any: AnyResource = Resource::new("network", "eth0", Mtu(1500)).into();
/// assert_eq!(any.typed::<Mtu>().unwrap().spec(), &Mtu(1500));
/// assert!(any.typed::<Hostname>().unwrap_err().is_type_mismatch());
/// ```
#[derive(Clone)]
pub struct AnyResource(pub(crate) Arc<dyn ErasedNode>);

impl AnyResource {
    pub(crate) fn from_dynamic(metadata: Metadata, value: serde_json::Value) -> Self {
        AnyResource(Arc::new(Node { metadata, spec: DynamicSpec(value) }))
    }

    /// A tombstone: the metadata of `pointer` and no spec.
    pub fn tombstone(pointer: Pointer) -> Self {
        AnyResource(Arc::new(Node { metadata: Metadata::new(pointer), spec: NoSpec }))
    }

    /// Whether this is a tombstone (no spec).
    pub fn is_tombstone(&self) -> bool {
        self.0.spec().is_none()
    }

    /// Whether the spec is dynamic (a serde value, not yet read as a typed spec).
    pub fn is_dynamic(&self) -> bool {
        self.0.spec().is_some_and(|s| s.spec_type().is_none())
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        self.0.metadata()
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

    /// The owner.
    pub fn owner(&self) -> Option<&str> {
        self.metadata().owner()
    }

    /// The typed resource, if the resource type is `S::TYPE`: the same
    /// allocation, shared (a dynamic spec is decoded into a new one).
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] when the type differs (or a dynamic spec does not
    /// decode as `S`); [`Error::NotFound`] for a tombstone.
    pub fn typed<S: Spec>(&self) -> Result<Resource<S>, Error> {
        let md = self.metadata();
        let mismatch = |actual: String| Error::TypeMismatch {
            resource: md.pointer().clone(),
            expected: S::TYPE.to_owned(),
            actual,
        };
        let Some(spec) = self.0.spec() else {
            return Err(Error::NotFound { resource: md.pointer().clone() });
        };
        if md.resource_type() != S::TYPE {
            return Err(mismatch(md.resource_type().to_owned()));
        }
        // The node itself, shared, when it holds an `S` (checked before the
        // reference count moves).
        if (&*self.0 as &dyn Any).is::<Node<S>>()
            && let Ok(node) = (self.0.clone() as Arc<dyn Any + Send + Sync>).downcast::<Node<S>>()
        {
            return Ok(Resource::from_node(node));
        }
        match spec.as_any().downcast_ref::<DynamicSpec>() {
            Some(dynamic) => {
                let spec: S = serde_json::from_value(dynamic.0.clone()).map_err(|e| {
                    mismatch(format!("{} (its spec does not decode: {e})", md.resource_type()))
                })?;
                Resource::from_parts(md.clone(), spec)
            }
            None => Err(mismatch(format!(
                "{} (a spec of another Rust type with the same TYPE)",
                md.resource_type()
            ))),
        }
    }

    /// A reference to the spec if it is stored as `S` (dynamic specs are not converted).
    pub fn spec_ref<S: Spec>(&self) -> Option<&S> {
        self.0.spec()?.as_any().downcast_ref::<S>()
    }

    /// Appends the JSON of [`to_dynamic`](Self::to_dynamic)'s result to
    /// `out` (`{"metadata":…,"spec":…}`, which reads back as a
    /// [`DynamicResource`](super::DynamicResource)) straight from the stored spec: no copy of the
    /// metadata, no `serde_json::Value` tree (what durable stores encode).
    ///
    /// # Errors
    /// [`Error::NotFound`] for a tombstone; [`Error::InvalidInput`] if the
    /// metadata or the spec does not serialize (`out` then holds part of it).
    #[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) -> Result<(), Error> {
        let md = self.metadata();
        let spec =
            self.0.spec().ok_or_else(|| Error::NotFound { resource: md.pointer().clone() })?;
        let failed = |e: serde_json::Error| Error::InvalidInput {
            resource: md.pointer().to_string(),
            reason: format!("does not serialize: {e}"),
        };
        // The field names and order of `DynamicResource`'s derived Serialize.
        out.extend_from_slice(br#"{"metadata":"#);
        md.write_json(out);
        out.extend_from_slice(br#","spec":"#);
        spec.write_json(out).map_err(failed)?;
        out.push(b'}');
        Ok(())
    }

    /// Whether both carry equal specs (tombstones are equal to each other).
    pub fn spec_eq(&self, other: &AnyResource) -> bool {
        match (self.0.spec(), other.0.spec()) {
            (None, None) => true,
            (Some(a), Some(b)) => std::ptr::addr_eq(a, b) || a.eq_erased(b),
            _ => false,
        }
    }

    /// Whether both handles point at the same stored value.
    pub fn ptr_eq(&self, other: &AnyResource) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// Mutable metadata, copying the resource first if it is shared.
    pub(crate) fn metadata_mut(&mut self) -> &mut Metadata {
        if Arc::get_mut(&mut self.0).is_none() {
            self.0 = self.0.with_metadata(self.0.metadata().clone());
        }
        Arc::get_mut(&mut self.0).expect("a copy nobody else holds").metadata_mut()
    }

    /// The same spec with other metadata.
    pub(crate) fn with_metadata(&self, metadata: Metadata) -> AnyResource {
        AnyResource(self.0.with_metadata(metadata))
    }
}

impl<S: Spec> Resource<S> {
    /// The type-erased form the state stores (the same allocation).
    pub fn into_any(self) -> AnyResource {
        AnyResource(self.0)
    }
}

impl<S: Spec> From<Resource<S>> for AnyResource {
    fn from(r: Resource<S>) -> Self {
        r.into_any()
    }
}

impl PartialEq for AnyResource {
    fn eq(&self, other: &Self) -> bool {
        self.ptr_eq(other) || (self.metadata() == other.metadata() && self.spec_eq(other))
    }
}

impl fmt::Debug for AnyResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        struct SpecDebug<'a>(Option<&'a dyn ErasedSpec>);
        impl fmt::Debug for SpecDebug<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self.0 {
                    Some(s) => s.debug(f),
                    None => f.write_str("<tombstone>"),
                }
            }
        }
        f.debug_struct("AnyResource")
            .field("metadata", self.metadata())
            .field("spec", &SpecDebug(self.0.spec()))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::DynamicResource;
    use super::super::spec::tests::{Num, Text};
    use super::*;

    #[test]
    fn typed_round_trip_shares_the_resource() {
        let r = Resource::new("ns", "a", Num(5));
        let any = r.clone().into_any();
        let back = any.typed::<Num>().unwrap();
        assert!(std::ptr::eq(back.spec(), r.spec()), "no copy either way");
        assert_eq!(any.spec_ref::<Num>(), Some(&Num(5)));
        assert_eq!(any.spec_ref::<Text>(), None);
    }

    #[test]
    fn wrong_type_is_an_error_naming_the_resource() {
        let any = Resource::new("ns", "a", Num(5)).into_any();
        let err = any.typed::<Text>().unwrap_err();
        assert!(err.is_type_mismatch());
        assert!(err.to_string().contains("ns/Nums.test.cosi.dev/a"), "{err}");
    }

    #[test]
    fn tombstones_have_no_spec() {
        let t = AnyResource::tombstone(Pointer::new("ns", "T", "gone"));
        assert!(t.is_tombstone());
        assert!(t.typed::<Num>().unwrap_err().is_not_found());
        assert!(t.to_dynamic().unwrap_err().is_not_found());
    }

    #[test]
    fn write_json_reads_back_as_the_dynamic_form_for_typed_and_dynamic_specs() {
        let mut typed = Resource::new("ns", "a", Num(7)).into_any();
        typed.metadata_mut().labels_mut().insert("tier", "web");
        let dynamic =
            AnyResource::from_dynamic(typed.metadata().clone(), serde_json::json!({"x": [1, 2]}));
        for res in [typed, dynamic] {
            let mut out = Vec::new();
            res.write_json(&mut out).unwrap();
            let back: DynamicResource = serde_json::from_slice(&out).unwrap();
            assert_eq!(back, res.to_dynamic().unwrap());
        }
        let tombstone = AnyResource::tombstone(Pointer::new("ns", "T", "gone"));
        assert!(tombstone.write_json(&mut Vec::new()).unwrap_err().is_not_found());
    }

    #[test]
    fn dynamic_specs_convert_on_typed_reads_and_compare_by_value() {
        let md = Metadata::new(Pointer::typed::<Num>("ns", "a").erase());
        let dynamic = AnyResource::from_dynamic(md.clone(), serde_json::json!(5));
        assert!(dynamic.is_dynamic());
        assert_eq!(dynamic.typed::<Num>().unwrap().spec(), &Num(5));
        let typed = Resource::new("ns", "a", Num(5)).into_any();
        assert_eq!(dynamic, typed);
        let bad = AnyResource::from_dynamic(md, serde_json::json!("five"));
        assert!(bad.typed::<Num>().unwrap_err().is_type_mismatch());
    }

    /// What a store gives back is the JSON it wrote: a typed spec equals it
    /// when it decodes to an equal spec, even where the JSON value of the
    /// typed spec differs (an `f32`, widened), so a no-op stays a no-op.
    #[test]
    fn a_typed_spec_equals_its_json_read_back_even_with_an_f32() {
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
        struct Ratio(f32);
        impl Spec for Ratio {
            const TYPE: &'static str = "Ratios.test.cosi.dev";
        }
        let typed = Resource::new("ns", "a", Ratio(1.1)).into_any();
        let mut json = Vec::new();
        typed.write_json(&mut json).unwrap();
        let read: DynamicResource = serde_json::from_slice(&json).unwrap();
        let stored = read.into_any();
        assert!(stored.is_dynamic());
        assert!(typed.spec_eq(&stored) && stored.spec_eq(&typed), "both ways");
        let other = Resource::new("ns", "a", Ratio(1.2)).into_any();
        assert!(!other.spec_eq(&stored) && !stored.spec_eq(&other));
    }

    #[test]
    fn equality_ignores_timestamps_but_not_specs() {
        let a = Resource::new("ns", "a", Num(1)).into_any();
        let mut b = Resource::new("ns", "a", Num(1)).into_any();
        b.metadata_mut().set_updated(super::super::Timestamp::now());
        assert_eq!(a, b);
        let c = Resource::new("ns", "a", Num(2)).into_any();
        assert_ne!(a, c);
    }
}
