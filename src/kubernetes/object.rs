//! Our resources as Kubernetes objects.
//!
//! | ours | object |
//! |---|---|
//! | id | `metadata.name` |
//! | namespace | `metadata.namespace` |
//! | uid | `metadata.uid` |
//! | mod revision | `metadata.resourceVersion` (a string) |
//! | version | `metadata.generation` |
//! | created | `metadata.creationTimestamp` (RFC 3339, seconds) |
//! | labels, annotations, finalizers | the same |
//! | owner (a controller) | annotation `cosi.dev/owner` |
//! | phase `TearingDown` | `metadata.deletionTimestamp` (the time of the last write) |
//! | spec | `spec` |

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::registry::Exposed;
use super::status::Status;
use crate::resource::{AnyResource, Phase, StringMap, Timestamp};

/// The annotation that names the controller owning a resource.
pub const OWNER_ANNOTATION: &str = "cosi.dev/owner";

/// The annotation in which a server-side apply (`PATCH` with
/// `application/apply-patch+yaml`) records its `?fieldManager=` (the last
/// applier; there are no per-field `managedFields`).
pub const FIELD_MANAGER_ANNOTATION: &str = "cosi.dev/field-manager";

/// A time in RFC 3339, whole seconds, as Kubernetes writes times.
struct Rfc3339(Timestamp);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        humantime::format_rfc3339_seconds(self.0.to_system_time()).fmt(f)
    }
}

/// The object's `metadata`, with `resource_version` as its `resourceVersion`
/// (a watch may send a later one than the resource's own; see the watch module).
pub(crate) fn metadata(resource: &AnyResource, resource_version: u64) -> Value {
    // Infallible: string keys and values, numbers.
    serde_json::to_value(ObjectMeta { resource, resource_version }).unwrap_or(Value::Null)
}

/// The object's `metadata`, serialized straight from the resource (what
/// [`metadata`] builds as a value).
#[derive(Clone, Copy)]
pub(crate) struct ObjectMeta<'a> {
    pub(crate) resource: &'a AnyResource,
    pub(crate) resource_version: u64,
}

/// `collect_str` of a value that displays as itself (no `String` built).
struct Str<T>(T);

impl<T: fmt::Display> Serialize for Str<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The annotations as served: the resource's, and the owner's in
/// [`OWNER_ANNOTATION`] (replacing one of that name), in key order.
struct Annotations<'a> {
    annotations: &'a StringMap,
    owner: Option<&'a str>,
}

impl Serialize for Annotations<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let Some(owner) = self.owner else {
            return s.collect_map(self.annotations.iter());
        };
        let mut map = s.serialize_map(None)?;
        let mut owner = Some(owner);
        for (k, v) in self.annotations.iter() {
            if k >= OWNER_ANNOTATION
                && let Some(o) = owner.take()
            {
                map.serialize_entry(OWNER_ANNOTATION, o)?;
            }
            if k != OWNER_ANNOTATION {
                map.serialize_entry(k, v)?;
            }
        }
        if let Some(o) = owner {
            map.serialize_entry(OWNER_ANNOTATION, o)?;
        }
        map.end()
    }
}

/// The finalizers as a list.
struct Finalizers<'a>(&'a crate::resource::Finalizers);

impl Serialize for Finalizers<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl Serialize for ObjectMeta<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let md = self.resource.metadata();
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("name", md.id())?;
        out.serialize_entry("namespace", md.namespace())?;
        if let Some(uid) = md.uid() {
            out.serialize_entry("uid", &Str(uid))?;
        }
        out.serialize_entry("resourceVersion", &Str(self.resource_version))?;
        out.serialize_entry("generation", &md.version().get())?;
        out.serialize_entry("creationTimestamp", &Str(Rfc3339(md.created())))?;
        if md.phase() == Phase::TearingDown {
            out.serialize_entry("deletionTimestamp", &Str(Rfc3339(md.updated())))?;
        }
        if !md.labels().is_empty() {
            out.serialize_entry("labels", md.labels())?;
        }
        if !md.annotations().is_empty() || md.owner().is_some() {
            let annotations = Annotations { annotations: md.annotations(), owner: md.owner() };
            out.serialize_entry("annotations", &annotations)?;
        }
        if !md.finalizers().is_empty() {
            out.serialize_entry("finalizers", &Finalizers(md.finalizers()))?;
        }
        out.end()
    }
}

/// The spec of `resource` as a value (the one form an erased spec has).
///
/// # Errors
/// 500 when the spec does not serialize (or the resource is a tombstone).
pub(crate) fn spec_value(resource: &AnyResource) -> Result<Value, Status> {
    // What `AnyResource::to_dynamic` says, without copying the metadata.
    let md = resource.metadata();
    let spec = resource.0.spec().ok_or_else(|| {
        Status::internal(crate::Error::NotFound { resource: md.pointer().clone() }.to_string())
    })?;
    spec.to_value().map_err(|e| {
        let error = crate::Error::InvalidInput {
            resource: md.pointer().to_string(),
            reason: format!("the spec does not serialize: {e}"),
        };
        Status::internal(error.to_string())
    })
}

/// A whole object, `{apiVersion, kind, metadata, spec}`, serialized straight
/// from the resource: no value is built but the spec's.
pub(crate) struct Object<'a> {
    pub(crate) exposed: &'a Exposed,
    pub(crate) resource: &'a AnyResource,
    pub(crate) resource_version: u64,
    pub(crate) spec: Value,
}

impl<'a> Object<'a> {
    /// The object of `resource` at `resource_version`.
    ///
    /// # Errors
    /// 500 when the spec does not serialize.
    pub(crate) fn new(
        exposed: &'a Exposed,
        resource: &'a AnyResource,
        resource_version: u64,
    ) -> Result<Object<'a>, Status> {
        Ok(Object { exposed, resource, resource_version, spec: spec_value(resource)? })
    }
}

impl Serialize for Object<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(4))?;
        out.serialize_entry("apiVersion", &ApiVersion(self.exposed))?;
        out.serialize_entry("kind", &self.exposed.kind)?;
        let meta = ObjectMeta { resource: self.resource, resource_version: self.resource_version };
        out.serialize_entry("metadata", &meta)?;
        out.serialize_entry("spec", &self.spec)?;
        out.end()
    }
}

/// `group/version`, written without a `String` of its own.
pub(crate) struct ApiVersion<'a>(pub(crate) &'a Exposed);

impl Serialize for ApiVersion<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&format_args!("{}/{}", self.0.group, self.0.version))
    }
}

/// The whole object as a value: `apiVersion`, `kind`, `metadata`, `spec`.
///
/// # Errors
/// 500 when the spec does not serialize.
pub(crate) fn object(
    exposed: &Exposed,
    resource: &AnyResource,
    resource_version: u64,
) -> Result<Value, Status> {
    let Object { spec, .. } = Object::new(exposed, resource, resource_version)?;
    let mut out = Map::new();
    out.insert("apiVersion".into(), exposed.api_version().into());
    out.insert("kind".into(), exposed.kind.clone().into());
    out.insert("metadata".into(), metadata(resource, resource_version));
    out.insert("spec".into(), spec);
    Ok(Value::Object(out))
}

/// The object's metadata alone, as a Table row carries it.
pub(crate) struct Partial<'a>(pub(crate) ObjectMeta<'a>);

impl Serialize for Partial<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(3))?;
        out.serialize_entry("kind", "PartialObjectMetadata")?;
        out.serialize_entry("apiVersion", "meta.k8s.io/v1")?;
        out.serialize_entry("metadata", &self.0)?;
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;
    use crate::kubernetes::Expose;
    use crate::resource::{Metadata, Pointer, Uid};

    #[test]
    fn metadata_maps_ours_to_kubernetes() {
        let mut md = Metadata::new(Pointer::new("config", "LinkConfigs.net.cosi.dev", "eth0"));
        md.labels_mut().insert("tier", "edge");
        md.finalizers_mut().add("AddressController");
        md.set_phase(Phase::TearingDown);
        let r = AnyResource::from_dynamic(md, json!({"mtu": 1500}));
        let m = metadata(&r, 42);
        assert_eq!(m["name"], "eth0");
        assert_eq!(m["namespace"], "config");
        assert_eq!(m["resourceVersion"], "42");
        assert_eq!(m["labels"]["tier"], "edge");
        assert_eq!(m["finalizers"][0], "AddressController");
        assert_eq!(m["creationTimestamp"], "1970-01-01T00:00:00Z");
        assert_eq!(m["deletionTimestamp"], "1970-01-01T00:00:00Z");
        assert!(m.get("annotations").is_none(), "no owner, no annotations: {m}");
    }

    #[test]
    fn objects_are_written_straight_as_their_values_read() {
        let exposed =
            Expose::resource_type("LinkConfigs.net.cosi.dev", "v1alpha1").resolve().unwrap();
        let mut md = Metadata::new(Pointer::new("config", "LinkConfigs.net.cosi.dev", "eth0"));
        md.set_uid(Some(Uid::from(uuid::Uuid::from_u128(7))));
        md.labels_mut().insert("tier", "edge");
        // The owner replaces an annotation of its name, in key order.
        for (k, v) in [("a", "1"), (OWNER_ANNOTATION, "stale"), ("z\"q", "2")] {
            md.annotations_mut().insert(k, v);
        }
        md.set_owner(Some(Arc::from("LinkController")));
        md.finalizers_mut().add("b");
        md.finalizers_mut().add("a");
        let r = AnyResource::from_dynamic(md, json!({"mtu": 1500, "addrs": ["10.0.0.1/24"]}));
        let written = serde_json::to_vec(&Object::new(&exposed, &r, 9).unwrap()).unwrap();
        let read: Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(read, object(&exposed, &r, 9).unwrap());
        assert_eq!(
            read,
            json!({
                "apiVersion": "net.cosi.dev/v1alpha1",
                "kind": "LinkConfig",
                "metadata": {
                    "name": "eth0",
                    "namespace": "config",
                    "uid": "00000000-0000-0000-0000-000000000007",
                    "resourceVersion": "9",
                    "generation": 0,
                    "creationTimestamp": "1970-01-01T00:00:00Z",
                    "labels": {"tier": "edge"},
                    "annotations": {"a": "1", OWNER_ANNOTATION: "LinkController", "z\"q": "2"},
                    "finalizers": ["a", "b"],
                },
                "spec": {"mtu": 1500, "addrs": ["10.0.0.1/24"]},
            })
        );
        let text = String::from_utf8(written).unwrap();
        assert_eq!(text.matches(OWNER_ANNOTATION).count(), 1, "{text}");
        let partial =
            serde_json::to_value(Partial(ObjectMeta { resource: &r, resource_version: 9 }));
        assert_eq!(partial.unwrap()["metadata"], read["metadata"]);

        let tombstone =
            AnyResource::tombstone(Pointer::new("config", "LinkConfigs.net.cosi.dev", "x"));
        assert_eq!(Object::new(&exposed, &tombstone, 1).err().unwrap().code(), 500);
    }
}
