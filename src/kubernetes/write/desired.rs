//! What a written object asks for ([`Desired`]), read from its body, and
//! writing it over the stored resource.

use serde_json::{Map, Value};

use super::request::Target;
use crate::kubernetes::object::{
    GENERATION_OFFSET_ANNOTATION, OWNER_ANNOTATION, OWNER_REFERENCES_ANNOTATION, generation_offset,
    owner_references, reserved, spec_value,
};
use crate::kubernetes::shared::Shared;
use crate::kubernetes::status::Status;
use crate::resource::{AnyResource, Metadata, Phase};
use crate::state::ExpectedPhase;

/// Which part of an object a write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Part {
    /// The object itself (`.../{name}`, and creates): metadata and `spec`.
    /// With a status subresource the stored `status` is kept, and a create
    /// stores none.
    Object,
    /// The status subresource (`.../{name}/status`): `status` only; spec and
    /// metadata are kept as stored.
    Status,
}

/// What a written object asks for.
#[derive(Clone)]
pub(super) struct Desired {
    pub(super) metadata: Metadata,
    /// Without a status subresource, the decoded spec as it is stored; with
    /// one, the written `spec` (decoded with the status it is stored beside,
    /// see [`stored_value`]), unused by a status write.
    pub(super) spec: Value,
    /// The written `status` (read by status writes only).
    pub(super) status: Option<Value>,
    /// `fieldValidation=Strict`.
    pub(super) strict: bool,
    /// `metadata.resourceVersion`: the optimistic-concurrency precondition.
    pub(super) resource_version: Option<u64>,
    /// `metadata.uid`: the incarnation precondition.
    pub(super) uid: Option<String>,
}

fn string_map(value: Option<&Value>, what: &str) -> Result<Vec<(String, String)>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                other => Err(format!("metadata.{what}.{k}: must be a string, not {other}")),
            })
            .collect(),
        Some(other) => Err(format!("metadata.{what}: must be an object, not {other}")),
    }
}

/// Fields of `input` its canonical form lost: unknown to the spec type.
/// A `null`, `[]` or `{}` the type does not write back is not counted
/// (`skip_serializing_if` fields).
fn unknown_fields(input: &Value, canonical: &Value, path: &str, out: &mut Vec<String>) {
    match (input, canonical) {
        (Value::Object(input), Value::Object(canonical)) => {
            for (key, value) in input {
                let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
                match canonical.get(key) {
                    Some(c) => unknown_fields(value, c, &at, out),
                    None => {
                        let empty = match value {
                            Value::Null => true,
                            Value::Array(a) => a.is_empty(),
                            Value::Object(o) => o.is_empty(),
                            _ => false,
                        };
                        if !empty {
                            out.push(at);
                        }
                    }
                }
            }
        }
        (Value::Array(input), Value::Array(canonical)) if input.len() == canonical.len() => {
            for (i, (value, c)) in input.iter().zip(canonical).enumerate() {
                unknown_fields(value, c, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// Reads a written object. `path_name` is the name in the URL (PUT, PATCH);
/// the body's must agree. Unknown top-level and metadata fields are a 422
/// under `strict` and ignored otherwise; `status` is ignored unless `part`
/// is [`Part::Status`]; the spec of a type without a status subresource is
/// decoded (see [`Expose::of`](crate::kubernetes::Expose::of)).
pub(super) fn desired(
    target: &Target,
    body: &Value,
    strict: bool,
    part: Part,
) -> Result<Desired, Status> {
    let Value::Object(body) = body else {
        return Err(Status::bad_request("the request body is not a JSON object"));
    };
    let exposed = &target.exposed;
    if let Some(v) = body.get("apiVersion").and_then(Value::as_str)
        && v != exposed.api_version()
    {
        return Err(Status::bad_request(format!(
            "the API version in the data ({v}) does not match the expected API version ({})",
            exposed.api_version()
        )));
    }
    if let Some(k) = body.get("kind").and_then(Value::as_str)
        && k != exposed.kind
    {
        return Err(Status::bad_request(format!(
            "the kind in the data ({k}) does not match the expected kind ({})",
            exposed.kind
        )));
    }
    if strict {
        let unknown = unknown_envelope_fields(body, exposed.top_level);
        if !unknown.is_empty() {
            return Err(unknown_fields_error(target, &unknown));
        }
    }
    let empty = Map::new();
    let md = match body.get("metadata") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(md)) => md,
        Some(_) => return Err(target.invalid("metadata: must be an object")),
    };
    match md.get("name").and_then(Value::as_str) {
        Some(name) if name != target.name => {
            return Err(Status::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                target.name
            )));
        }
        _ => {}
    }
    // A cluster-scoped object has none (an empty one is none); the
    // apiserver clears one a client sends.
    if let Some(ns) = md.get("namespace").and_then(Value::as_str)
        && ns != target.namespace
        && target.exposed.cluster.is_none()
    {
        return Err(Status::bad_request(format!(
            "the namespace of the object ({ns}) does not match the namespace on the request ({})",
            target.namespace
        )));
    }
    let mut metadata = Metadata::new(target.pointer());
    for (k, v) in string_map(md.get("labels"), "labels").map_err(|e| target.invalid(&e))? {
        metadata.labels_mut().insert(k, v);
    }
    for (k, v) in
        string_map(md.get("annotations"), "annotations").map_err(|e| target.invalid(&e))?
    {
        if k != OWNER_ANNOTATION && !reserved(&k) {
            metadata.annotations_mut().insert(k, v);
        }
    }
    if let Some(references) =
        owner_references(md.get("ownerReferences")).map_err(|e| target.invalid(&e))?
    {
        metadata.annotations_mut().insert(OWNER_REFERENCES_ANNOTATION, references);
    }
    match md.get("finalizers") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for f in items {
                let f = f
                    .as_str()
                    .ok_or_else(|| target.invalid("metadata.finalizers: must be strings"))?;
                metadata.finalizers_mut().add(f);
            }
        }
        Some(_) => return Err(target.invalid("metadata.finalizers: must be a list of strings")),
    }
    let resource_version = match md.get("resourceVersion") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(Value::String(s)) => Some(s.parse::<u64>().map_err(|_| {
            Status::bad_request(format!("metadata.resourceVersion {s:?} is not a resource version"))
        })?),
        Some(other) => {
            return Err(
                target.invalid(&format!("metadata.resourceVersion: {other} is not a string"))
            );
        }
    };
    let uid = md.get("uid").and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_owned);
    let (spec, status) = match part {
        Part::Status => (Value::Null, body.get("status").filter(|s| !s.is_null()).cloned()),
        Part::Object if exposed.top_level => {
            let mut fields = body.clone();
            for envelope in ["apiVersion", "kind", "metadata"] {
                fields.remove(envelope);
            }
            let fields = match exposed.view {
                Some(view) => view.stored(Value::Object(fields)),
                None => Value::Object(fields),
            };
            match fields {
                Value::Object(mut fields) if exposed.status => {
                    fields.remove("status");
                    (Value::Object(fields), None)
                }
                fields => (decoded_body(target, fields, strict)?, None),
            }
        }
        Part::Object => {
            let spec = body.get("spec").cloned().unwrap_or_else(|| Value::Object(Map::new()));
            if exposed.status { (spec, None) } else { (decoded_spec(target, spec, strict)?, None) }
        }
    };
    Ok(Desired { metadata, spec, status, strict, resource_version, uid })
}

/// The fields of an object around its spec, as the apiserver knows them.
const ENVELOPE: [&str; 5] = ["apiVersion", "kind", "metadata", "spec", "status"];

/// The fields of `ObjectMeta`.
const OBJECT_META: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// The fields of a written object's top level and metadata that no object
/// has (a typo such as `spce:` or `metadata.label:`), as `fieldValidation=
/// Strict` refuses them. Without it they are dropped, as the apiserver does.
/// With `top_level` fields, the body's are the type's to judge.
fn unknown_envelope_fields(body: &Map<String, Value>, top_level: bool) -> Vec<String> {
    let mut unknown: Vec<String> =
        body.keys().filter(|k| !top_level && !ENVELOPE.contains(&k.as_str())).cloned().collect();
    if let Some(Value::Object(md)) = body.get("metadata") {
        unknown.extend(
            md.keys()
                .filter(|k| !OBJECT_META.contains(&k.as_str()))
                .map(|k| format!("metadata.{k}")),
        );
    }
    unknown
}

/// `unknown` fields as a 422, one cause each.
fn unknown_fields_error(target: &Target, unknown: &[String]) -> Status {
    target.invalid_causes(
        unknown
            .iter()
            .map(|f| (f.clone(), format!("unknown field {:?}", f.rsplit('.').next().unwrap_or(f))))
            .collect(),
    )
}

/// The body of a type with [top-level fields](crate::kubernetes::Expose::top_level_fields)
/// as it is stored: decoded as the exposed type (causes and unknown fields
/// named from the top, `data.mode`); the dynamic form stores it as written.
fn decoded_body(target: &Target, body: Value, strict: bool) -> Result<Value, Status> {
    let Some(decoder) = &target.exposed.decoder else { return Ok(body) };
    let canonical = decoder.decode(&body).map_err(|e| {
        let field = if e.field.is_empty() { "body".to_owned() } else { e.under("") };
        target.invalid_causes(vec![(field, e.message)])
    })?;
    if strict {
        let mut unknown = Vec::new();
        unknown_fields(&body, &canonical, "", &mut unknown);
        if !unknown.is_empty() {
            return Err(unknown_fields_error(target, &unknown));
        }
    }
    Ok(canonical)
}

/// The spec of a type without a status subresource, as it is stored.
fn decoded_spec(target: &Target, spec: Value, strict: bool) -> Result<Value, Status> {
    match &target.exposed.decoder {
        Some(decoder) => {
            let canonical = decoder
                .decode(&spec)
                .map_err(|e| target.invalid_causes(vec![(e.under("spec"), e.message)]))?;
            if strict {
                let mut unknown = Vec::new();
                unknown_fields(&spec, &canonical, "spec", &mut unknown);
                if !unknown.is_empty() {
                    return Err(unknown_fields_error(target, &unknown));
                }
            }
            Ok(canonical)
        }
        None if spec.is_object() => Ok(spec),
        None => Err(target.invalid(&format!("spec: must be an object, not {spec}"))),
    }
}

/// What is stored for a type with a status subresource: `{"spec": spec,
/// "status": status}` (no `status` when there is none), decoded as the
/// exposed type (whose unknown fields, under `strict`, are a 422 naming
/// `spec.…` or `status.…`). The dynamic form takes an object `spec` and an
/// object `status`. `part` is the part written (named by a decoding error).
fn combined(
    target: &Target,
    spec: Value,
    status: Option<Value>,
    strict: bool,
    part: Part,
) -> Result<Value, Status> {
    let top_level = target.exposed.top_level;
    let mut doc = match spec {
        Value::Object(body) if top_level => body,
        _ if top_level => Map::new(),
        spec => Map::from_iter([("spec".to_owned(), spec)]),
    };
    if let Some(status) = status {
        doc.insert("status".into(), status);
    }
    let doc = Value::Object(doc);
    if top_level {
        if target.exposed.decoder.is_none()
            && let Some(status) = doc.get("status").filter(|s| !s.is_object())
        {
            return Err(target.invalid(&format!("status: must be an object, not {status}")));
        }
        return decoded_body(target, doc, strict);
    }
    let Some(decoder) = &target.exposed.decoder else {
        for (field, value) in [("spec", &doc["spec"]), ("status", &doc["status"])] {
            let absent = field == "status" && value.is_null();
            if !(value.is_object() || absent) {
                return Err(target.invalid(&format!("{field}: must be an object, not {value}")));
            }
        }
        return Ok(doc);
    };
    let written = if part == Part::Status { "status" } else { "spec" };
    // The decoded document is `{spec, status}`: its paths start with the part.
    let canonical = decoder.decode(&doc).map_err(|e| {
        let field = if e.field.is_empty() { written.to_owned() } else { e.under("") };
        target.invalid_causes(vec![(field, e.message)])
    })?;
    if strict {
        let mut unknown = Vec::new();
        for field in ["spec", "status"] {
            if let Some(value) = doc.get(field) {
                let known = canonical.get(field).unwrap_or(&Value::Null);
                unknown_fields(value, known, field, &mut unknown);
            }
        }
        if !unknown.is_empty() {
            return Err(unknown_fields_error(target, &unknown));
        }
    }
    Ok(canonical)
}

/// The value `stored` keeps (its body).
pub(super) fn stored_body(stored: &AnyResource) -> Result<Value, Status> {
    spec_value(stored)
}

/// What `desired` stores over `stored` (`None`: a create), writing `part`.
pub(super) fn stored_value(
    target: &Target,
    desired: &Desired,
    stored: Option<&AnyResource>,
    part: Part,
) -> Result<Value, Status> {
    let exposed = &target.exposed;
    if !exposed.status {
        return Ok(desired.spec.clone());
    }
    let kept = match stored {
        Some(stored) => exposed.split(spec_value(stored)?),
        None => (Value::Null, None),
    };
    match part {
        Part::Object => combined(target, desired.spec.clone(), kept.1, desired.strict, part),
        Part::Status => combined(target, kept.0, desired.status.clone(), desired.strict, part),
    }
}

/// One attempt at writing `desired` over `stored`: preconditions, then an
/// update at the stored version (with `dry_run`, what it would store, not
/// stored). `None`: another write won the race.
pub(super) async fn update_over(
    shared: &Shared,
    target: &Target,
    desired: &Desired,
    stored: &AnyResource,
    part: Part,
    dry_run: bool,
) -> Result<Option<AnyResource>, Status> {
    target.writable(stored)?;
    let smd = stored.metadata();
    if let Some(rv) = desired.resource_version
        && rv != smd.revision()
    {
        return Err(target.conflict(
            "the object has been modified; please apply your changes to the latest version and try again",
        ));
    }
    if let Some(uid) = &desired.uid
        && smd.uid().map(|u| u.to_string()).as_deref() != Some(uid.as_str())
    {
        return Err(target.conflict(&format!(
            "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
            smd.uid().map(|u| u.to_string()).unwrap_or_default()
        )));
    }
    let value = stored_value(target, desired, Some(stored), part)?;
    // A status write keeps the stored spec (`stored_value`): no comparison.
    let spec_changed = part == Part::Object && spec_changed(target, &value, stored)?;
    let md = match part {
        Part::Object => {
            let mut md = desired.metadata.clone();
            md.set_version(smd.version());
            md.set_uid(smd.uid());
            md.set_phase(smd.phase());
            // The server's count (a client never sees or sends it).
            if let Some(offset) = smd.annotations().get(GENERATION_OFFSET_ANNOTATION) {
                md.annotations_mut().insert(GENERATION_OFFSET_ANNOTATION, offset);
            }
            md
        }
        // Labels, annotations, finalizers, owner references as stored.
        Part::Status => smd.clone(),
    };
    let phase = match smd.phase() {
        Phase::Running => ExpectedPhase::Running,
        Phase::TearingDown => ExpectedPhase::TearingDown,
    };
    // A write that changes nothing is none, as on the apiserver (no new
    // resourceVersion, no watch event): a controller that applies what is
    // already there does not wake itself, or its owner's watch, again.
    let status_only = part == Part::Status
        || (target.exposed.status && !spec_changed && value != spec_value(stored)?);
    let mut resource = AnyResource::from_dynamic(md, value);
    if changes_nothing(&resource, stored) {
        return Ok(Some(stored.clone()));
    }
    if status_only {
        // The state counts a change of what it stores, status included; the
        // served generation counts spec changes only.
        let offset = generation_offset(smd) + 1;
        resource
            .metadata_mut()
            .annotations_mut()
            .insert(GENERATION_OFFSET_ANNOTATION, offset.to_string());
    }
    if dry_run {
        // What the update would store: the stored revision stays (none
        // was taken), the version is the next.
        let next = smd.version().next();
        resource.metadata_mut().set_version(next);
        resource.metadata_mut().set_revision(smd.revision());
        return Ok(Some(resource));
    }
    match shared.state.update_with_phase(resource, None, phase).await {
        Ok(r) => Ok(Some(r)),
        Err(crate::Error::VersionConflict { .. } | crate::Error::PhaseConflict { .. }) => Ok(None),
        Err(e) => Err(target.error(e)),
    }
}

/// Whether writing `desired` over `stored` would change nothing a client
/// can write (labels, annotations, finalizers, the stored value).
fn changes_nothing(desired: &AnyResource, stored: &AnyResource) -> bool {
    let (d, s) = (desired.metadata(), stored.metadata());
    d.labels() == s.labels()
        && d.annotations() == s.annotations()
        && d.finalizers() == s.finalizers()
        && desired.spec_eq(stored)
}

/// Whether storing `value` over `stored` changes the object's `spec` (with a
/// status subresource, the `spec` half of the stored value; otherwise all
/// of it): what moves `metadata.generation` on the apiserver.
fn spec_changed(target: &Target, value: &Value, stored: &AnyResource) -> Result<bool, Status> {
    let before = spec_value(stored)?;
    let spec = |v: Value| target.exposed.split(v).0;
    Ok(spec(value.clone()) != spec(before))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_what_the_canonical_form_lost() {
        let mut out = Vec::new();
        unknown_fields(
            &json!({"mtu": 1, "bogus": 2, "empty": [], "none": null, "nested": [{"a": 1, "b": 2}]}),
            &json!({"mtu": 1, "nested": [{"a": 1}]}),
            "spec",
            &mut out,
        );
        assert_eq!(out, ["spec.bogus", "spec.nested[0].b"]);
    }
}
