//! The request a write serves: the object it addresses ([`Target`]), its
//! options and its body.

use std::collections::HashMap;
use std::sync::Arc;

use actix_web::http::header::CONTENT_LENGTH;
use actix_web::{HttpRequest, HttpResponse, web};
use futures::StreamExt;
use serde_json::Value;

use crate::kubernetes::object::{Object, ObjectMeta, Partial, object};
use crate::kubernetes::pages::ListMeta;
use crate::kubernetes::registry::Exposed;
use crate::kubernetes::shared::{Shared, TypePath};
use crate::kubernetes::status::Status;
use crate::kubernetes::table::{Form, OneRow, Row, Table, form};
use crate::resource::{AnyResource, Kind, Pointer};

pub(super) type Query = web::Query<HashMap<String, String>>;

/// How many times a write re-reads the stored resource after losing a race
/// with another writer (only writes without a `resourceVersion` retry).
pub(super) const ATTEMPTS: usize = 5;

/// The object a request addresses.
pub(super) struct Target {
    pub(super) exposed: Arc<Exposed>,
    pub(super) namespace: String,
    pub(super) name: String,
    /// The form the answer takes (the request's `Accept`).
    pub(super) form: Form,
}

impl Target {
    pub(super) fn pointer(&self) -> Pointer {
        Kind::new(&self.namespace, &self.exposed.resource_type).pointer(self.name.as_str())
    }

    pub(super) fn invalid(&self, why: &str) -> Status {
        Status::invalid(&self.exposed.group, &self.exposed.kind, &self.name, why)
    }

    /// 422 with one cause per `(field, message)`.
    pub(super) fn invalid_causes(&self, causes: Vec<(String, String)>) -> Status {
        Status::invalid_causes(&self.exposed.group, &self.exposed.kind, &self.name, causes)
    }

    pub(super) fn conflict(&self, why: &str) -> Status {
        Status::conflict(&self.exposed.group, &self.exposed.plural, &self.name, why)
    }

    pub(super) fn not_found(&self) -> Status {
        Status::object_not_found(&self.exposed.group, &self.exposed.plural, &self.name)
    }

    /// A state error as the apiserver would word it.
    pub(super) fn error(&self, e: crate::Error) -> Status {
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
    pub(super) fn writable(&self, stored: &AnyResource) -> Result<(), Status> {
        match stored.owner() {
            Some(owner) => Err(Status::forbidden(format!(
                "{} \"{}\" is owned by controller {owner:?}: it is read-only to clients",
                self.exposed.qualified_plural(),
                self.name
            ))),
            None => Ok(()),
        }
    }

    pub(super) async fn stored(&self, shared: &Shared) -> Result<Option<AnyResource>, Status> {
        match shared.state.get(&self.pointer()).await {
            Ok(r) => Ok(Some(r)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// `403` when a controller of the runtime the API was given
    /// ([`controllers`](crate::kubernetes::KubernetesApi::controllers))
    /// outputs this type exclusively: a client's object there would be no
    /// controller's, and that controller would fail on it for ever.
    ///
    /// First, the namespace must exist (see
    /// [`namespaces`](crate::kubernetes::namespaces)): `404` when it does not.
    pub(super) async fn admit(&self, shared: &Shared) -> Result<(), Status> {
        if self.exposed.cluster.is_none() {
            shared.admit_namespace(&self.namespace).await?;
        }
        let Some(controllers) = &shared.controllers else { return Ok(()) };
        let graph = controllers.graph().await;
        let owner = graph.edges().iter().find(|e| {
            e.kind == crate::supervisor::EdgeKind::OutputExclusive
                && e.resource_type == self.exposed.resource_type
        });
        match owner {
            None => Ok(()),
            Some(edge) => Err(Status::forbidden(format!(
                "{} \"{}\" is forbidden: {} is the exclusive output of controller {:?}: \
                 clients cannot create its objects",
                self.exposed.qualified_plural(),
                self.name,
                self.exposed.kind,
                edge.controller
            ))),
        }
    }

    /// Answers in the form the request's `Accept` asks for, as a read
    /// would: the object, its metadata only (`PartialObjectMetadata`), or a
    /// one-row `Table`.
    pub(super) fn respond(
        &self,
        resource: &AnyResource,
        created: bool,
    ) -> Result<HttpResponse, Status> {
        let revision = resource.metadata().revision();
        let body = match self.form {
            Form::Full => object(&self.exposed, resource, revision)?,
            Form::Metadata => {
                serde_json::to_value(Partial(ObjectMeta::of(&self.exposed, resource, revision)))
                    .map_err(|e| Status::internal(e.to_string()))?
            }
            Form::Table => {
                let object = Object::new(&self.exposed, resource, revision)?;
                let row = Row::new(&object, std::time::SystemTime::now());
                let table = Table {
                    exposed: &self.exposed,
                    rows: OneRow(row),
                    meta: ListMeta::at(revision),
                };
                serde_json::to_value(&table).map_err(|e| Status::internal(e.to_string()))?
            }
        };
        Ok(if created { HttpResponse::Created() } else { HttpResponse::Ok() }.json(body))
    }

    /// The form `req`'s `Accept` asks the answer in.
    pub(super) fn answering(mut self, req: &HttpRequest) -> Self {
        let accept = req.headers().get(actix_web::http::header::ACCEPT);
        self.form = form(accept.and_then(|v| v.to_str().ok()));
        self
    }
}

/// The object (or, with no name, the collection) `path` addresses.
/// A collection write (POST, DELETE) without a namespace on a namespaced
/// type is a `405`, as the apiserver answers it.
pub(super) fn target(shared: &Shared, path: &TypePath, method: &str) -> Result<Target, Status> {
    if path.namespace.is_none() && path.name.is_none() {
        let exposed = shared.exposed(&path.group, &path.version, &path.plural)?;
        if exposed.cluster.is_none() {
            let at = format!("/{}/{}", exposed.group_version_path(), exposed.plural);
            return Err(Status::method_not_allowed(method, &at));
        }
    }
    let (exposed, namespace) = shared.scoped(path)?;
    Ok(Target { exposed, namespace, name: path.name(), form: Form::Full })
}

/// The options every write takes: `fieldValidation`, `dryRun`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Options {
    /// `fieldValidation=Strict`: an unknown field is a 422.
    pub(super) strict: bool,
    /// `dryRun=All`: every check runs and the answer is what would be
    /// stored, but nothing is.
    pub(super) dry_run: bool,
}

/// The options of a write's query.
pub(super) fn options(query: &HashMap<String, String>) -> Result<Options, Status> {
    let dry_run = match query.get("dryRun").map(String::as_str) {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(Status::bad_request(format!(
                "Invalid dry run value {other:?}: supported values are: All"
            )));
        }
    };
    let strict = match query.get("fieldValidation").map(String::as_str) {
        Some("Strict") => true,
        None | Some("" | "Warn" | "Ignore") => false,
        Some(other) => {
            return Err(Status::bad_request(format!(
                "fieldValidation={other:?}: expected Strict, Warn or Ignore"
            )));
        }
    };
    Ok(Options { strict, dry_run })
}

/// The field manager of a write: its `fieldManager`, else the client's
/// `User-Agent` up to its first `/` (as the apiserver names managers it is
/// not told), else `unknown`.
pub(super) fn manager_of(query: &HashMap<String, String>, req: &HttpRequest) -> String {
    if let Some(m) = query.get("fieldManager").filter(|m| !m.is_empty()) {
        return m.clone();
    }
    req.headers()
        .get(actix_web::http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .and_then(|agent| agent.split('/').next())
        .map(str::trim)
        .filter(|name| !name.is_empty())
        .unwrap_or("unknown")
        .to_owned()
}

/// Now, as a managed-fields entry's `time`.
pub(super) fn now_rfc3339() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

/// The characters of a generated name's suffix, as the apiserver draws
/// them (no vowels, no look-alikes).
const NAME_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// `prefix` and five random characters: a name for `metadata.generateName`.
pub(super) fn generated_name(prefix: &str) -> String {
    let random = uuid::Uuid::new_v4();
    let suffix: String = random.as_bytes()[..5]
        .iter()
        .map(|b| NAME_ALPHABET[usize::from(*b) % NAME_ALPHABET.len()] as char)
        .collect();
    format!("{prefix}{suffix}")
}

/// Why `name` is not a name the apiserver accepts for an object it
/// creates: a lowercase RFC 1123 subdomain of at most 253 characters.
pub(super) fn name_error(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some(format!(
            "metadata.name: Invalid value: {name:?}: must be no more than 253 characters"
        ));
    }
    if crate::resource::validate::dns_subdomain(name).is_ok() {
        return None;
    }
    Some(format!(
        "metadata.name: Invalid value: {name:?}: a lowercase RFC 1123 subdomain must consist of \
         lower case alphanumeric characters, '-' or '.', and must start and end with an \
         alphanumeric character (e.g. 'example.com', regex used for validation is \
         '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ))
}

/// The request body, at most [`max_request_body`](crate::kubernetes::KubernetesApi::max_request_body)
/// bytes. A larger one is a `413`: before any of it is read when its
/// `Content-Length` says so, else as soon as the limit is passed (the rest
/// is never read; actix-web closes the connection after the answer).
pub(super) async fn read_body(
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

/// The JSON of a request body (or of the protobuf kubectl sends for a
/// core-group kind, see [`protobuf::object`](crate::kubernetes::protobuf::object)).
pub(super) fn json_body(body: &[u8]) -> Result<Value, Status> {
    if let Some(envelope) = body.strip_prefix(crate::kubernetes::protobuf::MAGIC) {
        return crate::kubernetes::protobuf::object(envelope).ok_or_else(|| {
            Status::bad_request("the request body is no Kubernetes object (protobuf)")
        });
    }
    serde_json::from_slice(body)
        .map_err(|e| Status::bad_request(format!("the request body is not JSON: {e}")))
}

pub(super) type ItemPath = web::Path<TypePath>;

pub(super) fn item(shared: &Shared, path: ItemPath) -> Result<Target, Status> {
    target(shared, &path, "")
}

/// The object of a `.../{name}/status` request: 404 when its type has no
/// status subresource (as for any path that names nothing served).
pub(super) fn status_item(shared: &Shared, path: ItemPath) -> Result<Target, Status> {
    let target = item(shared, path)?;
    if !target.exposed.status {
        return Err(no_status(&target.exposed));
    }
    Ok(target)
}

/// The 404 of a status request to a type without a status subresource.
pub(in crate::kubernetes) fn no_status(exposed: &Exposed) -> Status {
    Status::not_found(format!(
        "the server could not find the requested resource ({}/{} has no status subresource)",
        exposed.qualified_plural(),
        exposed.version
    ))
}
