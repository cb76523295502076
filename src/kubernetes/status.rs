//! Errors as Kubernetes `Status` objects: what clients read (`reason`, `code`).

use std::fmt;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::{Value, json};

/// A failed request, answered as a `Status` object
/// (`{kind: Status, apiVersion: v1, status: Failure, message, reason, code}`).
///
/// kubectl prints `Error from server (<reason>): <message>`; clients branch on
/// `code` and `reason` (400 `BadRequest`, 401 `Unauthorized`, 403
/// `Forbidden`, 404 `NotFound`, 405 `MethodNotAllowed`, 406 `NotAcceptable`,
/// 409 `AlreadyExists` and `Conflict`, 410 `Expired`, 413
/// `RequestEntityTooLarge`, 415 `UnsupportedMediaType`, 422 `Invalid`, 500 `InternalError`, 503
/// `ServiceUnavailable`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Status {
    code: u16,
    reason: &'static str,
    message: String,
    details: Option<Box<Details>>,
}

/// What a `NotFound` is about, in `details`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Details {
    name: String,
    group: String,
    kind: String,
    /// `causes`: (field, message), as kubectl prints a 422.
    causes: Vec<(String, String)>,
    /// The causes are field-manager conflicts (a 409 of an apply).
    conflict: bool,
}

impl Details {
    fn of(group: &str, plural: &str, name: &str) -> Option<Box<Details>> {
        Some(Box::new(Details {
            name: name.into(),
            group: group.into(),
            kind: plural.into(),
            causes: Vec::new(),
            conflict: false,
        }))
    }
}

/// `plural.group`, or `plural` in the core group (as the apiserver names a type).
fn qualified(group: &str, plural: &str) -> String {
    if group.is_empty() { plural.to_owned() } else { format!("{plural}.{group}") }
}

impl Status {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        Status { code, reason, message: message.into(), details: None }
    }

    /// 404 `NotFound`: no such object, type or path.
    pub fn not_found(message: impl Into<String>) -> Self {
        Status::new(404, "NotFound", message)
    }

    /// 404 for object `name` of `plural` in `group`, worded as the apiserver
    /// words it (`linkconfigs.net.cosi.dev "eth0" not found`).
    pub fn object_not_found(group: &str, plural: &str, name: &str) -> Self {
        let mut status =
            Status::not_found(format!("{} \"{name}\" not found", qualified(group, plural)));
        status.details = Details::of(group, plural, name);
        status
    }

    /// 409 `AlreadyExists`: a create found the object
    /// (`linkconfigs.net.cosi.dev "eth0" already exists`).
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let mut status = Status::new(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", qualified(group, plural)),
        );
        status.details = Details::of(group, plural, name);
        status
    }

    /// 409 `Conflict`: a stale `resourceVersion` or `uid` (the client reads
    /// again and retries).
    pub fn conflict(group: &str, plural: &str, name: &str, why: &str) -> Self {
        let mut status = Status::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {why}",
                qualified(group, plural)
            ),
        );
        status.details = Details::of(group, plural, name);
        status
    }

    /// 403 `Forbidden`: the object is owned by a controller (read-only to
    /// clients), or the user has no right to the request.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Status::new(403, "Forbidden", message)
    }

    /// 422 `Invalid`: the object does not validate (a spec that does not
    /// decode, an unknown field under `fieldValidation=Strict`, a failed
    /// JSON patch `test`), with one cause: `why` read as `field: message`
    /// when it starts with a field path, else a message about no field.
    /// Worded as the apiserver words it, by the type's kind:
    /// `LinkConfig.net.cosi.dev "eth8" is invalid: spec.mtu: Invalid value: …`.
    pub fn invalid(group: &str, kind: &str, name: &str, why: &str) -> Self {
        let cause = match why.split_once(": ") {
            Some((field, message)) if !field.is_empty() && !field.contains(' ') => {
                (field.to_owned(), message.to_owned())
            }
            _ => (String::new(), why.to_owned()),
        };
        Status::invalid_causes(group, kind, name, vec![cause])
    }

    /// 422 `Invalid` with one cause per `(field, message)`: the message
    /// lists them (in brackets when there are several), `details.causes`
    /// holds each, as kubectl prints them.
    pub fn invalid_causes(
        group: &str,
        kind: &str,
        name: &str,
        causes: Vec<(String, String)>,
    ) -> Self {
        let parts: Vec<String> = causes
            .iter()
            .map(
                |(field, message)| {
                    if field.is_empty() { message.clone() } else { format!("{field}: {message}") }
                },
            )
            .collect();
        let why =
            if parts.len() == 1 { parts[0].clone() } else { format!("[{}]", parts.join(", ")) };
        let qualified = if group.is_empty() { kind.to_owned() } else { format!("{kind}.{group}") };
        let mut status =
            Status::new(422, "Invalid", format!("{qualified} \"{name}\" is invalid: {why}"));
        status.details = Details::of(group, kind, name);
        if let Some(details) = &mut status.details {
            details.causes = causes;
        }
        status
    }

    /// 409 `Conflict` of a server-side apply that would change fields other
    /// managers own: one cause (`FieldManagerConflict`) per field, as the
    /// apiserver answers (`Apply failed with 1 conflict: conflict with
    /// "kubectl-edit": .spec.mtu`).
    pub fn apply_conflict(
        group: &str,
        plural: &str,
        name: &str,
        conflicts: Vec<(String, String)>,
    ) -> Self {
        let n = conflicts.len();
        let listed: Vec<String> = conflicts
            .iter()
            .map(|(field, manager)| format!("conflict with {manager:?}: {field}"))
            .collect();
        let message = format!(
            "Apply failed with {n} conflict{}: {}",
            if n == 1 { "" } else { "s" },
            listed.join("\n")
        );
        let mut status = Status::new(409, "Conflict", message);
        status.details = Details::of(group, plural, name);
        if let Some(details) = &mut status.details {
            details.causes = conflicts
                .into_iter()
                .map(|(field, manager)| (field, format!("conflict with {manager:?}")))
                .collect();
            details.conflict = true;
        }
        status
    }

    /// 415 `UnsupportedMediaType`: a patch type not served (strategic merge).
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Status::new(
            415,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (not {content_type})"
            ),
        )
    }

    /// 400 `BadRequest`: a malformed parameter (selector, version, boolean).
    pub fn bad_request(message: impl Into<String>) -> Self {
        Status::new(400, "BadRequest", message)
    }

    /// 413 `RequestEntityTooLarge`: a request body over the limit
    /// ([`max_request_body`](super::KubernetesApi::max_request_body)), or a
    /// JSON patch of too many operations.
    pub fn request_entity_too_large(message: impl Into<String>) -> Self {
        Status::new(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {}", message.into()),
        )
    }

    /// 429 `TooManyRequests`: a client over its watch limit
    /// ([`max_watches_per_client`](super::KubernetesApi::max_watches_per_client)).
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Status::new(429, "TooManyRequests", message)
    }

    /// 414 `RequestURITooLong`: a query string over
    /// [`max_query_bytes`](super::KubernetesApi::max_query_bytes).
    pub fn uri_too_long(message: impl Into<String>) -> Self {
        Status::new(414, "RequestURITooLong", message)
    }

    /// 405 `MethodNotAllowed`: a method the path does not serve.
    pub fn method_not_allowed(method: &str, path: &str) -> Self {
        Status::new(
            405,
            "MethodNotAllowed",
            format!("the server does not allow {method} on {path}"),
        )
    }

    /// 410 `Expired`: a watch asked for a revision the state no longer keeps.
    pub fn expired(message: impl Into<String>) -> Self {
        Status::new(410, "Expired", message)
    }

    /// 401 `Unauthorized`: no credentials where they are required, or
    /// credentials the server does not know (worded as the apiserver words it).
    pub fn unauthorized() -> Self {
        Status::new(401, "Unauthorized", "Unauthorized")
    }

    /// 401 `Unauthorized` saying why.
    pub(crate) fn unauthorized_because(why: &str) -> Self {
        Status::new(401, "Unauthorized", format!("Unauthorized: {why}"))
    }

    /// 403 `Forbidden`: the user is known but has no right to the request.
    /// `object`: the `(group, plural, name)` it is about, for `details`.
    pub(crate) fn forbidden_for(
        message: impl Into<String>,
        object: Option<(&str, &str, &str)>,
    ) -> Self {
        let mut status = Status::new(403, "Forbidden", message);
        status.details = object.and_then(|(group, plural, name)| Details::of(group, plural, name));
        status
    }

    /// 500 `InternalError`.
    pub fn internal(message: impl Into<String>) -> Self {
        Status::new(500, "InternalError", message)
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.code
    }

    /// The machine-readable reason (`NotFound`, `Expired`, ...).
    pub fn reason(&self) -> &'static str {
        self.reason
    }

    /// The message for humans.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The `Status` object.
    pub fn to_json(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            status["details"] = json!({ "name": d.name, "group": d.group, "kind": d.kind });
            if !d.causes.is_empty() {
                status["details"]["causes"] = d
                    .causes
                    .iter()
                    .map(|(field, message)| {
                        let reason = if d.conflict {
                            "FieldManagerConflict"
                        } else if message.starts_with("Required value") {
                            "FieldValueRequired"
                        } else {
                            "FieldValueInvalid"
                        };
                        json!({"reason": reason, "message": message, "field": field})
                    })
                    .collect();
            }
        }
        status
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for Status {}

impl ResponseError for Status {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status_code()).json(self.to_json())
    }
}

impl From<crate::Error> for Status {
    fn from(e: crate::Error) -> Self {
        use crate::Error;
        match &e {
            Error::NotFound { .. } => Status::not_found(e.to_string()),
            Error::AlreadyExists { .. } => Status::new(409, "AlreadyExists", e.to_string()),
            Error::VersionConflict { .. }
            | Error::PhaseConflict { .. }
            | Error::PendingFinalizers { .. } => Status::new(409, "Conflict", e.to_string()),
            Error::OwnerConflict { .. } => Status::forbidden(e.to_string()),
            Error::InvalidInput { .. } => Status::bad_request(e.to_string()),
            Error::Compacted { .. } => Status::expired(e.to_string()),
            Error::Unavailable { .. } => Status::new(503, "ServiceUnavailable", e.to_string()),
            _ => Status::internal(e.to_string()),
        }
    }
}

/// The answer to any method but GET on a served path.
pub(super) async fn not_allowed(req: actix_web::HttpRequest) -> HttpResponse {
    Status::method_not_allowed(req.method().as_str(), req.path()).error_response()
}

/// The answer to a path under `/api` or `/apis` that names nothing served,
/// whatever the method (as the apiserver answers): `404 NotFound`.
pub(super) async fn no_such_path(req: actix_web::HttpRequest) -> HttpResponse {
    Status::not_found(format!("the server could not find the requested resource ({})", req.path()))
        .error_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_names_its_object_like_the_apiserver() {
        let s = Status::object_not_found("net.cosi.dev", "linkconfigs", "eth9").to_json();
        assert_eq!(s["message"], "linkconfigs.net.cosi.dev \"eth9\" not found");
        assert_eq!((s["code"].as_u64(), s["reason"].as_str()), (Some(404), Some("NotFound")));
        assert_eq!(s["details"]["name"], "eth9");
        assert_eq!((s["kind"].as_str(), s["status"].as_str()), (Some("Status"), Some("Failure")));
    }

    #[test]
    fn state_errors_map_to_kubernetes_codes() {
        let ptr = crate::resource::Pointer::new("ns", "As.x.dev", "a");
        assert_eq!(Status::from(crate::Error::NotFound { resource: ptr }).code(), 404);
        let compacted =
            crate::Error::Compacted { resource: "k".into(), revision: 1, reason: "old".into() };
        assert_eq!(Status::from(compacted).reason(), "Expired");
    }

    #[actix::test]
    async fn a_path_that_names_nothing_is_404_whatever_the_method() {
        use actix_web::body::MessageBody;
        use actix_web::test::TestRequest;
        let path = "/apis/net.cosi.dev/v1alpha1/namespaces/config/linkconfigs/eth0/status";
        for req in [TestRequest::get(), TestRequest::patch(), TestRequest::delete()] {
            let resp = no_such_path(req.uri(path).to_http_request()).await;
            assert_eq!(resp.status(), 404);
            let body = resp.into_body().try_into_bytes().unwrap();
            let status: Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(status["reason"], "NotFound");
        }
    }

    #[test]
    fn too_large_is_a_413_request_entity_too_large() {
        let s = Status::request_entity_too_large("limit is 3145728 bytes");
        assert_eq!((s.code(), s.reason()), (413, "RequestEntityTooLarge"));
        assert_eq!(s.message(), "Request entity too large: limit is 3145728 bytes");
    }
}
