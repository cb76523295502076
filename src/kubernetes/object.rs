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

use serde_json::{Map, Value, json};

use super::registry::Exposed;
use super::status::Status;
use crate::resource::{AnyResource, Phase, StringMap, Timestamp};

/// The annotation that names the controller owning a resource.
pub const OWNER_ANNOTATION: &str = "cosi.dev/owner";

/// The annotation in which a server-side apply (`PATCH` with
/// `application/apply-patch+yaml`) records its `?fieldManager=` (the last
/// applier; there are no per-field `managedFields`).
pub const FIELD_MANAGER_ANNOTATION: &str = "cosi.dev/field-manager";

/// RFC 3339 in whole seconds, as Kubernetes writes times.
pub(crate) fn time(t: Timestamp) -> String {
    humantime::format_rfc3339_seconds(t.to_system_time()).to_string()
}

fn string_map(map: &StringMap) -> Map<String, Value> {
    map.iter().map(|(k, v)| (k.to_owned(), Value::String(v.to_owned()))).collect()
}

/// The object's `metadata`, with `resource_version` as its `resourceVersion`
/// (a watch may send a later one than the resource's own; see the watch module).
pub(crate) fn metadata(resource: &AnyResource, resource_version: u64) -> Value {
    let md = resource.metadata();
    let mut out = Map::new();
    out.insert("name".into(), md.id().into());
    out.insert("namespace".into(), md.namespace().into());
    if let Some(uid) = md.uid() {
        out.insert("uid".into(), uid.to_string().into());
    }
    out.insert("resourceVersion".into(), resource_version.to_string().into());
    out.insert("generation".into(), md.version().get().into());
    out.insert("creationTimestamp".into(), time(md.created()).into());
    if md.phase() == Phase::TearingDown {
        out.insert("deletionTimestamp".into(), time(md.updated()).into());
    }
    if !md.labels().is_empty() {
        out.insert("labels".into(), Value::Object(string_map(md.labels())));
    }
    let mut annotations = string_map(md.annotations());
    if let Some(owner) = md.owner() {
        annotations.insert(OWNER_ANNOTATION.into(), owner.into());
    }
    if !annotations.is_empty() {
        out.insert("annotations".into(), Value::Object(annotations));
    }
    if !md.finalizers().is_empty() {
        out.insert("finalizers".into(), md.finalizers().to_vec().into());
    }
    Value::Object(out)
}

/// The whole object: `apiVersion`, `kind`, `metadata`, `spec`.
///
/// # Errors
/// 500 when the spec does not serialize.
pub(crate) fn object(
    exposed: &Exposed,
    resource: &AnyResource,
    resource_version: u64,
) -> Result<Value, Status> {
    let spec = resource.to_dynamic().map_err(|e| Status::internal(e.to_string()))?;
    Ok(json!({
        "apiVersion": exposed.api_version(),
        "kind": exposed.kind,
        "metadata": metadata(resource, resource_version),
        "spec": spec.spec(),
    }))
}

/// The object's metadata alone, as a Table row carries it.
pub(crate) fn partial(resource: &AnyResource, resource_version: u64) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata(resource, resource_version),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{Metadata, Pointer};

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
}
