//! Our resources as Kubernetes objects.
//!
//! | ours | object |
//! |---|---|
//! | id | `metadata.name` |
//! | namespace | `metadata.namespace` |
//! | uid | `metadata.uid` |
//! | mod revision | `metadata.resourceVersion` (a string) |
//! | version less [`GENERATION_OFFSET_ANNOTATION`] | `metadata.generation` |
//! | created | `metadata.creationTimestamp` (RFC 3339, seconds) |
//! | labels, annotations, finalizers | the same |
//! | owner (a controller) | annotation `cosi.dev/owner` |
//! | annotation `kubernetes.cosi.dev/owner-references` | `metadata.ownerReferences` |
//! | phase `TearingDown` | `metadata.deletionTimestamp` (the time of the last write) |
//! | spec | `spec` (with a status subresource: its `spec` and `status`) |

use std::fmt;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::registry::Exposed;
use super::status::Status;
use crate::resource::{AnyResource, Metadata, Phase, StringMap, Timestamp};

/// The annotation that names the controller owning a resource.
pub const OWNER_ANNOTATION: &str = "cosi.dev/owner";

/// The annotation in which a server-side apply (`PATCH` with
/// `application/apply-patch+yaml`) records its `?fieldManager=` (the last
/// applier; who owns which field is in `metadata.managedFields`).
pub const FIELD_MANAGER_ANNOTATION: &str = "cosi.dev/field-manager";

/// The annotation in which a written object's `metadata.ownerReferences`
/// are kept, as compact JSON text (a list of objects with `apiVersion`,
/// `kind`, `name`, `uid`, and optionally `controller` and
/// `blockOwnerDeletion`). It is never served as an annotation: objects
/// carry it back as `metadata.ownerReferences` (when it holds a JSON list),
/// and a client-written annotation of this name is ignored.
///
/// The references are kept and served, and a DELETE through the API
/// collects the owner's dependents by them (its `propagationPolicy`);
/// `blockOwnerDeletion` blocks nothing. They are also what kube-runtime's
/// `Controller::owns()` maps a child to its parent through. A controller
/// writing through the [`State`](crate::State) may set this annotation
/// itself.
pub const OWNER_REFERENCES_ANNOTATION: &str = "kubernetes.cosi.dev/owner-references";

/// Reserved annotation: how many writes through this API changed the
/// object's `status` and not its `spec` (with a status subresource, the
/// state stores both, and counts a change of either as a new
/// [generation](crate::resource::Metadata::generation)). The served
/// `metadata.generation` is the state's count less this one, so it moves on
/// spec changes only, as on the apiserver: an operator that compares
/// `status.observedGeneration` with `generation` settles after its own
/// status write. A status write made through the [`State`](crate::State)
/// (a controller's) leaves this count, so it moves `generation`.
///
/// Kept by the server, never served (like [`OWNER_REFERENCES_ANNOTATION`]);
/// a client's value for it is ignored.
pub const GENERATION_OFFSET_ANNOTATION: &str = "kubernetes.cosi.dev/generation-offset";

/// Reserved annotation: the objects' field managers, kept by the server in
/// the `managedFields` form and served as `metadata.managedFields` (never
/// as an annotation); a client's value for it is ignored.
pub const MANAGED_FIELDS_ANNOTATION: &str = "kubernetes.cosi.dev/managed-fields";

/// Whether `key` is an annotation the server keeps for itself and never serves.
pub(crate) fn reserved(key: &str) -> bool {
    key == OWNER_REFERENCES_ANNOTATION
        || key == GENERATION_OFFSET_ANNOTATION
        || key == MANAGED_FIELDS_ANNOTATION
}

/// The count kept in [`GENERATION_OFFSET_ANNOTATION`] (0 without it).
pub(crate) fn generation_offset(md: &Metadata) -> u64 {
    md.annotations().get(GENERATION_OFFSET_ANNOTATION).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// The served `metadata.generation`: the state's count of changes of what
/// it stores ([`Metadata::generation`]: metadata-only writes such as a
/// controller's finalizer add leave it) less the API's status-only writes
/// ([`GENERATION_OFFSET_ANNOTATION`]). Data stored before the state
/// counted starts from its version.
pub(crate) fn generation(md: &Metadata) -> u64 {
    let counted = match md.generation() {
        0 => md.version().get(),
        counted => counted,
    };
    counted.saturating_sub(generation_offset(md))
}

/// Reads a written object's `metadata.ownerReferences` (`value`) into the
/// text kept in [`OWNER_REFERENCES_ANNOTATION`]: `None` when there are none.
///
/// # Errors
/// What is wrong, naming the field (`metadata.ownerReferences[0].uid: ...`),
/// for a `422 Invalid`: no list of objects, a required string missing or
/// empty, a flag that is no boolean, an unknown field, or more than one
/// reference with `controller: true` (as the apiserver refuses).
pub(crate) fn owner_references(value: Option<&Value>) -> Result<Option<String>, String> {
    const FIELD: &str = "metadata.ownerReferences";
    let items = match value {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(format!("{FIELD}: must be a list of objects, not {other}")),
    };
    let mut controllers = 0;
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::Object(item) = item else {
            return Err(format!("{FIELD}[{i}]: must be an object, not {item}"));
        };
        let mut reference = Map::new();
        for (key, value) in item {
            let at = format!("{FIELD}[{i}].{key}");
            match (key.as_str(), value) {
                ("apiVersion" | "kind" | "name" | "uid", Value::String(text))
                    if !text.is_empty() =>
                {
                    reference.insert(key.clone(), value.clone());
                }
                ("apiVersion" | "kind" | "name" | "uid", Value::String(_)) => {
                    return Err(format!("{at}: Required value"));
                }
                ("apiVersion" | "kind" | "name" | "uid", other) => {
                    return Err(format!("{at}: must be a string, not {other}"));
                }
                ("controller" | "blockOwnerDeletion", Value::Null) => {}
                ("controller" | "blockOwnerDeletion", Value::Bool(flag)) => {
                    controllers += usize::from(key == "controller" && *flag);
                    reference.insert(key.clone(), value.clone());
                }
                ("controller" | "blockOwnerDeletion", other) => {
                    return Err(format!("{at}: must be a boolean, not {other}"));
                }
                _ => return Err(format!("{at}: unknown field {key:?}")),
            }
        }
        for required in ["apiVersion", "kind", "name", "uid"] {
            if !reference.contains_key(required) {
                return Err(format!("{FIELD}[{i}].{required}: Required value"));
            }
        }
        out.push(Value::Object(reference));
    }
    if controllers > 1 {
        return Err(format!("{FIELD}: Only one reference can have Controller set to true"));
    }
    Ok((!out.is_empty()).then(|| Value::Array(out).to_string()))
}

/// The references kept in [`OWNER_REFERENCES_ANNOTATION`], when it holds a
/// JSON list.
fn served_owner_references(annotations: &StringMap) -> Option<Value> {
    let text = annotations.get(OWNER_REFERENCES_ANNOTATION)?;
    serde_json::from_str::<Value>(text).ok().filter(Value::is_array)
}

/// A time in RFC 3339, whole seconds, as Kubernetes writes times.
struct Rfc3339(Timestamp);

impl fmt::Display for Rfc3339 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        humantime::format_rfc3339_seconds(self.0.to_system_time()).fmt(f)
    }
}

/// The object's `metadata`, with `resource_version` as its `resourceVersion`
/// (a watch may send a later one than the resource's own; see the watch module).
#[cfg(test)]
pub(crate) fn metadata(resource: &AnyResource, resource_version: u64) -> Value {
    // Infallible: string keys and values, numbers.
    serde_json::to_value(ObjectMeta::new(resource, resource_version)).unwrap_or(Value::Null)
}

/// The object's `metadata`, serialized straight from the resource (what
/// [`metadata`] builds as a value).
#[derive(Clone, Copy)]
pub(crate) struct ObjectMeta<'a> {
    pub(crate) resource: &'a AnyResource,
    pub(crate) resource_version: u64,
    /// A cluster-scoped object's: no `namespace`.
    pub(crate) cluster: bool,
}

impl<'a> ObjectMeta<'a> {
    /// A namespaced object's metadata.
    #[cfg(test)]
    pub(crate) fn new(resource: &'a AnyResource, resource_version: u64) -> Self {
        ObjectMeta { resource, resource_version, cluster: false }
    }

    /// The metadata of an object of `exposed` (no namespace when it is
    /// cluster-scoped).
    pub(crate) fn of(exposed: &Exposed, resource: &'a AnyResource, resource_version: u64) -> Self {
        ObjectMeta { resource, resource_version, cluster: exposed.cluster.is_some() }
    }
}

/// `collect_str` of a value that displays as itself (no `String` built).
struct Str<T>(T);

impl<T: fmt::Display> Serialize for Str<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

/// The annotations as served: the resource's but
/// [`OWNER_REFERENCES_ANNOTATION`] (served as `ownerReferences`), and the
/// owner's in [`OWNER_ANNOTATION`] (replacing one of that name), in key order.
struct Annotations<'a> {
    annotations: &'a StringMap,
    owner: Option<&'a str>,
}

impl Annotations<'_> {
    /// Whether any annotation is served.
    fn any(&self) -> bool {
        self.owner.is_some() || self.annotations.keys().any(|k| !reserved(k))
    }
}

impl Serialize for Annotations<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let shown = self.annotations.iter().filter(|(k, _)| !reserved(k));
        let Some(owner) = self.owner else {
            return s.collect_map(shown);
        };
        let mut map = s.serialize_map(None)?;
        let mut owner = Some(owner);
        for (k, v) in shown {
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
        if !self.cluster {
            out.serialize_entry("namespace", md.namespace())?;
        }
        if let Some(uid) = md.uid() {
            out.serialize_entry("uid", &Str(uid))?;
        }
        out.serialize_entry("resourceVersion", &Str(self.resource_version))?;
        out.serialize_entry("generation", &generation(md))?;
        out.serialize_entry("creationTimestamp", &Str(Rfc3339(md.created())))?;
        if md.phase() == Phase::TearingDown {
            out.serialize_entry("deletionTimestamp", &Str(Rfc3339(md.updated())))?;
        }
        if !md.labels().is_empty() {
            out.serialize_entry("labels", md.labels())?;
        }
        let annotations = Annotations { annotations: md.annotations(), owner: md.owner() };
        if annotations.any() {
            out.serialize_entry("annotations", &annotations)?;
        }
        if let Some(references) = served_owner_references(md.annotations()) {
            out.serialize_entry("ownerReferences", &references)?;
        }
        if let Some(managed) = md
            .annotations()
            .get(MANAGED_FIELDS_ANNOTATION)
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
        {
            out.serialize_entry("managedFields", &managed)?;
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

/// A whole object, `{apiVersion, kind, metadata, spec}` (and `status` with
/// a status subresource), serialized straight from the resource: no value
/// is built but the spec's.
pub(crate) struct Object<'a> {
    pub(crate) exposed: &'a Exposed,
    pub(crate) resource: &'a AnyResource,
    pub(crate) resource_version: u64,
    pub(crate) spec: Value,
    pub(crate) status: Option<Value>,
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
        let stored = spec_value(resource)?;
        let stored = match exposed.view {
            Some(view) => view.served(stored),
            None => stored,
        };
        let (spec, status) = exposed.split(stored);
        Ok(Object { exposed, resource, resource_version, spec, status })
    }
}

impl Serialize for Object<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("apiVersion", &ApiVersion(self.exposed))?;
        out.serialize_entry("kind", &self.exposed.kind)?;
        let meta = ObjectMeta::of(self.exposed, self.resource, self.resource_version);
        out.serialize_entry("metadata", &meta)?;
        match (&self.spec, self.exposed.top_level) {
            (Value::Object(body), true) => {
                for (key, value) in body {
                    out.serialize_entry(key, value)?;
                }
            }
            (_, true) => {}
            (spec, false) => out.serialize_entry("spec", spec)?,
        }
        if let Some(status) = &self.status {
            out.serialize_entry("status", status)?;
        }
        out.end()
    }
}

/// `group/version`, written without a `String` of its own.
pub(crate) struct ApiVersion<'a>(pub(crate) &'a Exposed);

impl Serialize for ApiVersion<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.group.is_empty() {
            return s.serialize_str(&self.0.version);
        }
        s.collect_str(&format_args!("{}/{}", self.0.group, self.0.version))
    }
}

/// The whole object as a value: `apiVersion`, `kind`, `metadata`, `spec`
/// (and `status`).
///
/// # Errors
/// 500 when the spec does not serialize.
pub(crate) fn object(
    exposed: &Exposed,
    resource: &AnyResource,
    resource_version: u64,
) -> Result<Value, Status> {
    Ok(Object::new(exposed, resource, resource_version)?.to_value())
}

impl Object<'_> {
    /// The object as a value (what it serializes to).
    pub(crate) fn to_value(&self) -> Value {
        let mut out = Map::new();
        out.insert("apiVersion".into(), self.exposed.api_version().into());
        out.insert("kind".into(), self.exposed.kind.clone().into());
        let meta = ObjectMeta::of(self.exposed, self.resource, self.resource_version);
        out.insert("metadata".into(), serde_json::to_value(meta).unwrap_or(Value::Null));
        match (&self.spec, self.exposed.top_level) {
            (Value::Object(body), true) => out.extend(body.clone()),
            (_, true) => {}
            (spec, false) => drop(out.insert("spec".into(), spec.clone())),
        }
        if let Some(status) = &self.status {
            out.insert("status".into(), status.clone());
        }
        Value::Object(out)
    }
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
        let partial = serde_json::to_value(Partial(ObjectMeta::new(&r, 9)));
        assert_eq!(partial.unwrap()["metadata"], read["metadata"]);

        let tombstone =
            AnyResource::tombstone(Pointer::new("config", "LinkConfigs.net.cosi.dev", "x"));
        assert_eq!(Object::new(&exposed, &tombstone, 1).err().unwrap().code(), 500);
    }

    #[test]
    fn owner_references_are_validated_and_kept_as_compact_json() {
        let owner = json!({"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "u1"});
        assert_eq!(owner_references(None), Ok(None));
        assert_eq!(owner_references(Some(&Value::Null)), Ok(None));
        assert_eq!(owner_references(Some(&json!([]))), Ok(None), "none: no annotation");
        let both = json!([
            {"kind": "Node", "apiVersion": "v1", "name": "n1", "uid": "u1", "controller": true,
             "blockOwnerDeletion": null},
            {"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "u2", "controller": false,
             "blockOwnerDeletion": true},
        ]);
        let kept = owner_references(Some(&both)).unwrap().unwrap();
        assert_eq!(
            kept,
            r#"[{"apiVersion":"v1","controller":true,"kind":"Node","name":"n1","uid":"u1"},{"apiVersion":"v1","blockOwnerDeletion":true,"controller":false,"kind":"Node","name":"n2","uid":"u2"}]"#
        );

        let with = |key: &str, value: Value| {
            let mut r = owner.clone();
            r[key] = value;
            json!([owner.clone(), r])
        };
        let without_uid = {
            let mut r = owner.clone();
            r.as_object_mut().unwrap().remove("uid");
            json!([r])
        };
        let two_controllers = json!([
            with("controller", true.into())[1].clone(),
            with("controller", true.into())[1].clone(),
        ]);
        for (bad, error) in [
            (json!({"name": "n1"}), "metadata.ownerReferences: must be a list of objects"),
            (json!(["n1"]), "metadata.ownerReferences[0]: must be an object"),
            (without_uid, "metadata.ownerReferences[0].uid: Required value"),
            (with("name", "".into()), "metadata.ownerReferences[1].name: Required value"),
            (with("kind", 3.into()), "metadata.ownerReferences[1].kind: must be a string"),
            (
                with("controller", "yes".into()),
                "metadata.ownerReferences[1].controller: must be a boolean",
            ),
            (
                with("blockOwnerDeletion", 1.into()),
                "metadata.ownerReferences[1].blockOwnerDeletion: must be a boolean",
            ),
            (with("extra", 1.into()), "metadata.ownerReferences[1].extra: unknown field"),
            (
                two_controllers,
                "metadata.ownerReferences: Only one reference can have Controller set to true",
            ),
        ] {
            let e = owner_references(Some(&bad)).unwrap_err();
            assert!(e.starts_with(error), "{bad}: {e}");
        }
    }

    #[test]
    fn owner_references_are_served_from_their_annotation_never_as_one() {
        let mut md = Metadata::new(Pointer::new("config", "LinkConfigs.net.cosi.dev", "eth0"));
        let kept = r#"[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"u1"}]"#;
        md.annotations_mut().insert(OWNER_REFERENCES_ANNOTATION, kept);
        let r = AnyResource::from_dynamic(md.clone(), json!({}));
        let m = metadata(&r, 1);
        assert_eq!(m["ownerReferences"], serde_json::from_str::<Value>(kept).unwrap());
        assert!(m.get("annotations").is_none(), "the only annotation is not served: {m}");
        let text = serde_json::to_string(&ObjectMeta::new(&r, 1));
        assert!(!text.unwrap().contains(OWNER_REFERENCES_ANNOTATION));

        // Beside other annotations and an owner.
        md.annotations_mut().insert("a", "1");
        md.annotations_mut().insert("z", "2");
        md.set_owner(Some(Arc::from("NodeController")));
        let r = AnyResource::from_dynamic(md.clone(), json!({}));
        let m = metadata(&r, 1);
        assert_eq!(
            m["annotations"],
            json!({"a": "1", OWNER_ANNOTATION: "NodeController", "z": "2"})
        );
        assert_eq!(m["ownerReferences"][0]["name"], "n1");

        // Text that is no JSON list (a controller's own) is served as neither.
        md.annotations_mut().insert(OWNER_REFERENCES_ANNOTATION, "{not json");
        let m = metadata(&AnyResource::from_dynamic(md, json!({})), 1);
        assert!(m.get("ownerReferences").is_none(), "{m}");
        assert_eq!(m["annotations"].as_object().unwrap().len(), 3, "{m}");
    }

    #[test]
    fn with_a_status_subresource_objects_carry_spec_and_status_apart() {
        let exposed = Expose::resource_type("Greetings.demo.cosi.dev", "v1")
            .status_subresource()
            .resolve()
            .unwrap();
        let md = Metadata::new(Pointer::new("config", "Greetings.demo.cosi.dev", "g1"));
        let r = AnyResource::from_dynamic(
            md.clone(),
            json!({"spec": {"text": "hi"}, "status": {"shown": 1}}),
        );
        let written = serde_json::to_vec(&Object::new(&exposed, &r, 4).unwrap()).unwrap();
        let read: Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(read, object(&exposed, &r, 4).unwrap());
        assert_eq!(read["spec"], json!({"text": "hi"}));
        assert_eq!(read["status"], json!({"shown": 1}));
        // No status: none served.
        let r = AnyResource::from_dynamic(md, json!({"spec": {"text": "hi"}}));
        let read = object(&exposed, &r, 4).unwrap();
        assert_eq!(
            read.as_object().unwrap().keys().collect::<Vec<_>>(),
            ["apiVersion", "kind", "metadata", "spec"]
        );
        let text = serde_json::to_string(&Object::new(&exposed, &r, 4).unwrap()).unwrap();
        assert!(!text.contains("status"), "{text}");
    }
}
