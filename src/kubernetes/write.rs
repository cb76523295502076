//! Writes: create (POST), replace (PUT), patch (PATCH: merge, JSON, apply)
//! and delete (DELETE), all as the user (no owner): a resource owned by a
//! controller is read-only to clients.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use actix_web::{HttpRequest, HttpResponse, web};
use futures::StreamExt;
use serde_json::{Map, Value};

use super::Shared;
use super::object::{
    FIELD_MANAGER_ANNOTATION, GENERATION_OFFSET_ANNOTATION, OWNER_ANNOTATION,
    OWNER_REFERENCES_ANNOTATION, object, owner_references, spec_value,
};
use super::patch::{PatchError, json_patch, merge_patch};
use super::registry::Exposed;
use super::status::Status;
use crate::resource::{AnyResource, Kind, Metadata, Phase, Pointer};
use crate::state::ExpectedPhase;

type Query = web::Query<HashMap<String, String>>;

/// How many times a write re-reads the stored resource after losing a race
/// with another writer (only writes without a `resourceVersion` retry).
const ATTEMPTS: usize = 5;

/// The object a request addresses.
struct Target {
    exposed: Arc<Exposed>,
    namespace: String,
    name: String,
}

impl Target {
    fn pointer(&self) -> Pointer {
        Kind::new(&self.namespace, &self.exposed.resource_type).pointer(self.name.as_str())
    }

    fn invalid(&self, why: &str) -> Status {
        Status::invalid(&self.exposed.group, &self.exposed.plural, &self.name, why)
    }

    fn conflict(&self, why: &str) -> Status {
        Status::conflict(&self.exposed.group, &self.exposed.plural, &self.name, why)
    }

    fn not_found(&self) -> Status {
        Status::object_not_found(&self.exposed.group, &self.exposed.plural, &self.name)
    }

    /// A state error as the apiserver would word it.
    fn error(&self, e: crate::Error) -> Status {
        use crate::Error;
        match &e {
            Error::NotFound { .. } => self.not_found(),
            Error::AlreadyExists { .. } => {
                Status::already_exists(&self.exposed.group, &self.exposed.plural, &self.name)
            }
            Error::VersionConflict { .. } | Error::PhaseConflict { .. } => self.conflict(&format!(
                "the object has been modified; please apply your changes to the latest version and try again ({e})"
            )),
            Error::InvalidInput { reason, .. } => self.invalid(reason),
            _ => Status::from(e),
        }
    }

    /// 403 when `stored` is owned by a controller.
    fn writable(&self, stored: &AnyResource) -> Result<(), Status> {
        match stored.owner() {
            Some(owner) => Err(Status::forbidden(format!(
                "{}.{} \"{}\" is owned by controller {owner:?}: it is read-only to clients",
                self.exposed.plural, self.exposed.group, self.name
            ))),
            None => Ok(()),
        }
    }

    async fn stored(&self, shared: &Shared) -> Result<Option<AnyResource>, Status> {
        match shared.state.get(&self.pointer()).await {
            Ok(r) => Ok(Some(r)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn respond(&self, resource: &AnyResource, created: bool) -> Result<HttpResponse, Status> {
        let body = object(&self.exposed, resource, resource.metadata().revision())?;
        Ok(if created { HttpResponse::Created() } else { HttpResponse::Ok() }.json(body))
    }
}

fn target(
    shared: &Shared,
    (group, version, namespace, plural): (String, String, String, String),
    name: String,
) -> Result<Target, Status> {
    let exposed = shared.exposed(&group, &version, &plural)?;
    crate::resource::validate::name("namespace", &namespace).map_err(Status::bad_request)?;
    Ok(Target { exposed, namespace, name })
}

/// The options every write takes: `fieldValidation`, `dryRun`.
fn strict(query: &HashMap<String, String>) -> Result<bool, Status> {
    if query.contains_key("dryRun") {
        return Err(Status::bad_request("dryRun is not supported by this server"));
    }
    match query.get("fieldValidation").map(String::as_str) {
        Some("Strict") => Ok(true),
        None | Some("" | "Warn" | "Ignore") => Ok(false),
        Some(other) => Err(Status::bad_request(format!(
            "fieldValidation={other:?}: expected Strict, Warn or Ignore"
        ))),
    }
}

/// The request body, at most [`max_request_body`](super::KubernetesApi::max_request_body)
/// bytes. A larger one is a `413`: before any of it is read when its
/// `Content-Length` says so, else as soon as the limit is passed (the rest
/// is never read; actix-web closes the connection after the answer).
async fn read_body(
    shared: &Shared,
    req: &HttpRequest,
    mut payload: web::Payload,
) -> Result<web::Bytes, Status> {
    let limit = shared.max_request_body;
    let too_large = || Status::request_entity_too_large(format!("limit is {limit} bytes"));
    let announced = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|n| n > limit as u64) {
        return Err(too_large());
    }
    // Bounded by the limit, checked above.
    let mut body = web::BytesMut::with_capacity(announced.map_or(0, |n| n as usize));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|e| Status::bad_request(format!("the request body could not be read: {e}")))?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

fn json_body(body: &[u8]) -> Result<Value, Status> {
    serde_json::from_slice(body)
        .map_err(|e| Status::bad_request(format!("the request body is not JSON: {e}")))
}

/// Which part of an object a write changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Part {
    /// The object itself (`.../{name}`, and creates): metadata and `spec`.
    /// With a status subresource the stored `status` is kept, and a create
    /// stores none.
    Object,
    /// The status subresource (`.../{name}/status`): `status` only; spec and
    /// metadata are kept as stored.
    Status,
}

/// What a written object asks for.
struct Desired {
    metadata: Metadata,
    /// Without a status subresource, the decoded spec as it is stored; with
    /// one, the written `spec` (decoded with the status it is stored beside,
    /// see [`stored_value`]), unused by a status write.
    spec: Value,
    /// The written `status` (read by status writes only).
    status: Option<Value>,
    /// `fieldValidation=Strict`.
    strict: bool,
    /// `metadata.resourceVersion`: the optimistic-concurrency precondition.
    resource_version: Option<u64>,
    /// `metadata.uid`: the incarnation precondition.
    uid: Option<String>,
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
                let at = format!("{path}.{key}");
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
/// decoded (see [`Expose::of`](super::Expose::of)).
fn desired(target: &Target, body: &Value, strict: bool, part: Part) -> Result<Desired, Status> {
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
        let unknown = unknown_envelope_fields(body);
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
    if let Some(ns) = md.get("namespace").and_then(Value::as_str)
        && ns != target.namespace
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
        if k != OWNER_ANNOTATION && !super::object::reserved(&k) {
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
fn unknown_envelope_fields(body: &Map<String, Value>) -> Vec<String> {
    let mut unknown: Vec<String> =
        body.keys().filter(|k| !ENVELOPE.contains(&k.as_str())).cloned().collect();
    if let Some(Value::Object(md)) = body.get("metadata") {
        unknown.extend(
            md.keys()
                .filter(|k| !OBJECT_META.contains(&k.as_str()))
                .map(|k| format!("metadata.{k}")),
        );
    }
    unknown
}

/// `unknown` fields as a 422's reason.
fn unknown_fields_error(target: &Target, unknown: &[String]) -> Status {
    let fields = unknown
        .iter()
        .map(|f| format!("{f}: unknown field {:?}", f.rsplit('.').next().unwrap_or(f)))
        .collect::<Vec<_>>()
        .join(", ");
    target.invalid(&fields)
}

/// The spec of a type without a status subresource, as it is stored.
fn decoded_spec(target: &Target, spec: Value, strict: bool) -> Result<Value, Status> {
    match &target.exposed.decoder {
        Some(decoder) => {
            let canonical =
                decoder.decode(&spec).map_err(|e| target.invalid(&format!("spec: {e}")))?;
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
    let mut doc = Map::new();
    doc.insert("spec".into(), spec);
    if let Some(status) = status {
        doc.insert("status".into(), status);
    }
    let doc = Value::Object(doc);
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
    let canonical = decoder.decode(&doc).map_err(|e| target.invalid(&format!("{written}: {e}")))?;
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

/// What `desired` stores over `stored` (`None`: a create), writing `part`.
fn stored_value(
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
/// update at the stored version. `None`: another write won the race.
async fn update_over(
    shared: &Shared,
    target: &Target,
    desired: &Desired,
    stored: &AnyResource,
    part: Part,
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
    let mut resource = AnyResource::from_dynamic(md, value);
    if changes_nothing(&resource, stored) {
        return Ok(Some(stored.clone()));
    }
    if !spec_changed {
        // The version moves, the served generation does not.
        let offset = super::object::generation_offset(smd) + 1;
        resource
            .metadata_mut()
            .annotations_mut()
            .insert(GENERATION_OFFSET_ANNOTATION, offset.to_string());
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

/// `POST /apis/{group}/{version}/namespaces/{namespace}/{plural}`: 201 and
/// the stored object; 409 `AlreadyExists`.
pub(super) async fn create(
    shared: web::Data<Shared>,
    path: web::Path<(String, String, String, String)>,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    // The type first (404), as the apiserver routes before it reads a body.
    let mut target = target(&shared, path.into_inner(), String::new())?;
    let strict = strict(&query)?;
    let body = json_body(&read_body(&shared, &req, payload).await?)?;
    if !body.is_object() {
        // Before the name is looked for: no object, no name (400, not 422).
        return Err(Status::bad_request("the request body is not a JSON object"));
    }
    target.name = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    if target.name.is_empty() {
        return Err(target.invalid("metadata.name: Required value: name is required"));
    }
    let desired = desired(&target, &body, strict, Part::Object)?;
    // With a status subresource, a create stores no status.
    let value = stored_value(&target, &desired, None, Part::Object)?;
    let resource = AnyResource::from_dynamic(desired.metadata, value);
    let stored = shared.state.create(resource, None).await.map_err(|e| target.error(e))?;
    target.respond(&stored, true)
}

type ItemPath = web::Path<(String, String, String, String, String)>;

fn item(shared: &Shared, path: ItemPath) -> Result<Target, Status> {
    let (g, v, ns, plural, name) = path.into_inner();
    target(shared, (g, v, ns, plural), name)
}

/// The object of a `.../{name}/status` request: 404 when its type has no
/// status subresource (as for any path that names nothing served).
fn status_item(shared: &Shared, path: ItemPath) -> Result<Target, Status> {
    let target = item(shared, path)?;
    if !target.exposed.status {
        return Err(no_status(&target.exposed));
    }
    Ok(target)
}

/// The 404 of a status request to a type without a status subresource.
pub(super) fn no_status(exposed: &Exposed) -> Status {
    Status::not_found(format!(
        "the server could not find the requested resource ({}.{}/{} has no status subresource)",
        exposed.plural, exposed.group, exposed.version
    ))
}

/// `PUT .../{plural}/{name}`: replaces labels, annotations, finalizers,
/// owner references and spec. `metadata.resourceVersion` (and
/// `metadata.uid`), when sent, must be the stored ones (409 `Conflict`);
/// without them the write is unconditional.
pub(super) async fn replace(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = item(&shared, path)?;
    replace_part(&shared, target, query, req, payload, Part::Object).await
}

/// `PUT .../{plural}/{name}/status`: replaces the status alone (see
/// [`Expose::status_subresource`](super::Expose::status_subresource)); 404
/// for a type without a status subresource.
pub(super) async fn replace_status(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = status_item(&shared, path)?;
    replace_part(&shared, target, query, req, payload, Part::Status).await
}

async fn replace_part(
    shared: &Shared,
    target: Target,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
    part: Part,
) -> Result<HttpResponse, Status> {
    let strict = strict(&query)?;
    let body = read_body(shared, &req, payload).await?;
    let desired = desired(&target, &json_body(&body)?, strict, part)?;
    for _ in 0..ATTEMPTS {
        let stored = target.stored(shared).await?.ok_or_else(|| target.not_found())?;
        if let Some(written) = update_over(shared, &target, &desired, &stored, part).await? {
            return target.respond(&written, false);
        }
    }
    Err(target.conflict("too many concurrent writes; try again"))
}

/// The patch types served, by `Content-Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PatchType {
    Merge,
    Json,
    Apply,
}

fn patch_type(req: &HttpRequest) -> Result<PatchType, Status> {
    let content_type = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    match content_type.split(';').next().unwrap_or("").trim() {
        "application/merge-patch+json" => Ok(PatchType::Merge),
        "application/json-patch+json" => Ok(PatchType::Json),
        "application/apply-patch+yaml" => Ok(PatchType::Apply),
        _ => Err(Status::unsupported_media_type(content_type)),
    }
}

/// `PATCH .../{plural}/{name}`: `application/merge-patch+json` (RFC 7386),
/// `application/json-patch+json` (RFC 6902; a failed `test` is a 422), or
/// `application/apply-patch+yaml` (server-side apply, see the module docs);
/// anything else (strategic merge) is a 415.
pub(super) async fn patch(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = item(&shared, path)?;
    patch_part(&shared, target, query, req, payload, Part::Object).await
}

/// `PATCH .../{plural}/{name}/status`: the patch types of [`patch`], applied
/// to the object as served; only its `status` is written (spec and
/// metadata are kept as stored, a resourceVersion the patch sets is still a
/// precondition). A missing object is a 404, applies included; an apply's
/// field manager is not recorded (metadata is not written). 404 for a type
/// without a status subresource.
pub(super) async fn patch_status(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = status_item(&shared, path)?;
    patch_part(&shared, target, query, req, payload, Part::Status).await
}

async fn patch_part(
    shared: &Shared,
    target: Target,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
    part: Part,
) -> Result<HttpResponse, Status> {
    let kind = patch_type(&req)?;
    let strict = strict(&query)?;
    let body = read_body(shared, &req, payload).await?;
    let patch = serde_json::from_slice::<Value>(&body).map_err(|e| {
        Status::bad_request(format!(
            "the patch is not JSON (apply patches are read as JSON, which kubectl sends): {e}"
        ))
    })?;
    // An apply patch is an object (the apiserver decodes it into one): a
    // merge of anything else would replace the whole object.
    if kind == PatchType::Apply && !patch.is_object() {
        return Err(Status::bad_request("an apply patch is a JSON object"));
    }
    let manager = match (kind, query.get("fieldManager")) {
        (PatchType::Apply, Some(m)) if !m.is_empty() => Some(m.clone()),
        (PatchType::Apply, _) => {
            return Err(Status::bad_request(
                "PATCH, application/apply-patch+yaml requires a fieldManager",
            ));
        }
        _ => None,
    };
    // Recorded in what the patched object asks for once it has been read:
    // never into the patched document, where a `metadata` (or
    // `annotations`) that is no object would be replaced by one instead of
    // refused.
    let desired_of = |doc: &Value| {
        let mut desired = desired(&target, doc, strict, part)?;
        if let Some(m) = &manager {
            desired.metadata.annotations_mut().insert(FIELD_MANAGER_ANNOTATION, m.as_str());
        }
        Ok::<_, Status>(desired)
    };
    for _ in 0..ATTEMPTS {
        let Some(stored) = target.stored(shared).await? else {
            if kind != PatchType::Apply || part == Part::Status {
                return Err(target.not_found());
            }
            // Server-side apply of a missing object creates it.
            let desired = desired_of(&patch)?;
            let value = stored_value(&target, &desired, None, Part::Object)?;
            let resource = AnyResource::from_dynamic(desired.metadata, value);
            match shared.state.create(resource, None).await {
                Ok(created) => return target.respond(&created, true),
                Err(crate::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(target.error(e)),
            }
        };
        target.writable(&stored)?;
        let mut doc = object(&target.exposed, &stored, stored.metadata().revision())?;
        match kind {
            PatchType::Merge | PatchType::Apply => merge_patch(&mut doc, &patch),
            PatchType::Json => json_patch(&mut doc, &patch).map_err(|e| match e {
                PatchError::Malformed(m) => Status::bad_request(m),
                PatchError::TooLarge(m) => Status::request_entity_too_large(m),
                PatchError::Failed(m) => target.invalid(&m),
            })?,
        }
        let desired = desired_of(&doc)?;
        if let Some(written) = update_over(shared, &target, &desired, &stored, part).await? {
            return target.respond(&written, false);
        }
    }
    Err(target.conflict("too many concurrent writes; try again"))
}

/// `DELETE .../{plural}/{name}`: tears the resource down at once (it shows
/// `deletionTimestamp`) and destroys it when no finalizers remain, in the
/// background if some do; answers the torn-down object. Honours
/// `preconditions` (`uid`, `resourceVersion`) in the body (409).
pub(super) async fn delete(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = item(&shared, path)?;
    strict(&query)?;
    let body = read_body(&shared, &req, payload).await?;
    let options =
        if body.iter().all(u8::is_ascii_whitespace) { Value::Null } else { json_body(&body)? };
    let stored = target.stored(&shared).await?.ok_or_else(|| target.not_found())?;
    target.writable(&stored)?;
    let pre = &options["preconditions"];
    let resource_version = pre["resourceVersion"].as_str().and_then(|s| s.parse::<u64>().ok());
    if let Some(rv) = resource_version
        && rv != stored.metadata().revision()
    {
        return Err(target.conflict(&format!(
            "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
            stored.metadata().revision()
        )));
    }
    if let Some(uid) = pre["uid"].as_str()
        && stored.metadata().uid().map(|u| u.to_string()).as_deref() != Some(uid)
    {
        return Err(target.conflict(&format!("Precondition failed: UID in precondition: {uid}")));
    }
    let ptr = target.pointer();
    shared.state.teardown(&ptr, None).await.map_err(|e| target.error(e))?;
    let torn = target.stored(&shared).await?.unwrap_or(stored);
    // Destroyed at once when nothing holds it; else (or when a finalizer
    // came in between) in the background, once the finalizers are gone.
    let held = !torn.metadata().finalizers().is_empty()
        || matches!(
            shared.state.destroy(&ptr, None).await,
            Err(crate::Error::PendingFinalizers { .. })
        );
    if held {
        let state = shared.state.clone();
        actix::spawn(async move {
            match state.teardown_and_destroy(&ptr, None).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => tracing::warn!("Kubernetes API: deleting {ptr}: {e}"),
            }
        });
    }
    target.respond(&torn, false)
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

    // ---- requests through the routes (actix-web's test service) ----

    use actix_web::test::{TestRequest, call_service, init_service, read_body};
    use actix_web::{App, http::StatusCode};

    const NOTES: &str = "/apis/misc.cosi.dev/v1/namespaces/config/notes";

    fn api(state: &crate::State) -> super::super::KubernetesApi {
        super::super::KubernetesApi::new(state)
            .expose(super::super::Expose::resource_type("Notes.misc.cosi.dev", "v1"))
            .unwrap()
    }

    /// Status code and JSON body (`Null` when it is not JSON) of `req`
    /// (a `TestRequest::to_request()`).
    async fn answer<S, R, B>(app: &S, req: R) -> (StatusCode, Value)
    where
        S: actix_web::dev::Service<
                R,
                Response = actix_web::dev::ServiceResponse<B>,
                Error = actix_web::Error,
            >,
        B: actix_web::body::MessageBody,
    {
        let resp = call_service(app, req).await;
        let status = resp.status();
        let body = read_body(resp).await;
        (status, serde_json::from_slice(&body).unwrap_or(Value::Null))
    }

    fn note(name: &str, text: &str) -> Value {
        json!({"metadata": {"name": name}, "spec": {"text": text}})
    }

    async fn notes(state: &crate::State) -> usize {
        let kind = Kind::new("config", "Notes.misc.cosi.dev");
        state.list(&kind, &crate::resource::LabelQuery::all()).await.unwrap().len()
    }

    /// actix-web's own `Bytes` extractor stops at 256 KiB with a plain-text
    /// 413: bodies are read up to `max_request_body` (3 MiB by default),
    /// and refused past it with a `Status`.
    #[actix::test]
    async fn bodies_are_read_up_to_the_limit_and_refused_past_it_with_a_status() {
        let state = crate::State::start();
        let app = init_service(App::new().configure(api(&state).configure())).await;
        let large = note("large", &"x".repeat(1024 * 1024)).to_string();
        let (code, _) =
            answer(&app, TestRequest::post().uri(NOTES).set_payload(large).to_request()).await;
        assert_eq!(code, StatusCode::CREATED, "1 MiB is under the default 3 MiB");

        let small = api(&state).max_request_body(2048);
        let app = init_service(App::new().configure(small.configure())).await;
        let over = note("over", &"x".repeat(4096)).to_string();
        let item = format!("{NOTES}/large");
        for (method, uri) in [
            (TestRequest::post(), NOTES),
            (TestRequest::put(), item.as_str()),
            (TestRequest::patch(), item.as_str()),
        ] {
            let req = method
                .uri(uri)
                .insert_header((CONTENT_TYPE, "application/merge-patch+json"))
                .set_payload(over.clone());
            let (code, status) = answer(&app, req.to_request()).await;
            assert_eq!(code, StatusCode::PAYLOAD_TOO_LARGE, "{uri}: {status}");
            assert_eq!(
                (status["kind"].as_str(), status["reason"].as_str()),
                (Some("Status"), Some("RequestEntityTooLarge"))
            );
            assert_eq!(status["message"], "Request entity too large: limit is 2048 bytes");
        }
        assert_eq!(notes(&state).await, 1, "nothing written past the limit");
        let stored = state.get(&Kind::new("config", "Notes.misc.cosi.dev").pointer("large")).await;
        assert_eq!(stored.unwrap().metadata().revision(), 1, "unchanged");
    }

    #[actix::test]
    async fn a_write_to_a_type_not_served_is_404_before_its_body_is_read() {
        let state = crate::State::start();
        let app = init_service(App::new().configure(api(&state).configure())).await;
        let unknown = "/apis/misc.cosi.dev/v1/namespaces/config/nope";
        let req = TestRequest::post().uri(unknown).set_payload("{not json");
        let (code, status) = answer(&app, req.to_request()).await;
        assert_eq!((code.as_u16(), status["reason"].as_str()), (404, Some("NotFound")));
    }

    #[actix::test]
    async fn a_create_whose_body_is_no_object_is_a_400_not_a_missing_name() {
        let state = crate::State::start();
        let app = init_service(App::new().configure(api(&state).configure())).await;
        for body in ["[]", "\"n1\"", "null", "3"] {
            let (code, status) =
                answer(&app, TestRequest::post().uri(NOTES).set_payload(body).to_request()).await;
            assert_eq!(
                (code.as_u16(), status["reason"].as_str()),
                (400, Some("BadRequest")),
                "{body}"
            );
        }
        assert_eq!(notes(&state).await, 0);
    }

    /// The field manager used to be merged into the patched document, where
    /// it replaced a `metadata` (or `annotations`) that is no object: an
    /// invalid apply went in as a valid one.
    #[actix::test]
    async fn an_apply_whose_metadata_is_no_object_is_refused() {
        let state = crate::State::start();
        let app = init_service(App::new().configure(api(&state).configure())).await;
        let created = TestRequest::post().uri(NOTES).set_payload(note("n1", "hi").to_string());
        assert_eq!(answer(&app, created.to_request()).await.0, StatusCode::CREATED);
        for (name, patch) in [
            ("n1", json!({"metadata": "n1"})),
            ("n1", json!({"metadata": {"annotations": "x"}})),
            ("n1", json!([{"op": "add"}])),
            ("n2", json!({"metadata": "n2", "spec": {}})),
            ("n2", json!("n2")),
        ] {
            let req = TestRequest::patch()
                .uri(&format!("{NOTES}/{name}?fieldManager=ops"))
                .insert_header((CONTENT_TYPE, "application/apply-patch+yaml"))
                .set_payload(patch.to_string());
            let (code, status) = answer(&app, req.to_request()).await;
            assert!(matches!(code.as_u16(), 400 | 422), "{patch}: {code} {status}");
            assert_eq!(status["kind"], "Status");
        }
        let stored = state.get(&Kind::new("config", "Notes.misc.cosi.dev").pointer("n1")).await;
        let stored = stored.unwrap();
        assert_eq!(stored.metadata().revision(), 1, "unchanged");
        assert_eq!(stored.metadata().annotations().get(FIELD_MANAGER_ANNOTATION), None);
        assert_eq!(notes(&state).await, 1, "n2 not created");
    }
}
