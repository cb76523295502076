//! `SelfSubjectAccessReview` (`kubectl auth can-i`) and `SelfSubjectReview`
//! (`kubectl auth whoami`): the caller asks what it may do and who it is,
//! answered from the configured [tokens](super::Tokens).
//!
//! A caller's rights are by type (plural): `get`, `list` and `watch` are
//! reads, every other verb a write. A non-resource request (`/healthz`,
//! discovery) is allowed to read. A server with no tokens configured lets
//! everyone do everything, and says so: its callers are anonymous.

use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use serde_json::{Value, json};

use super::auth::{Caller, REVIEW_VERSIONS};
use super::protobuf::{MAGIC, read_field, read_fields};
use super::status::Status;

fn caller(req: &HttpRequest) -> Option<Caller> {
    req.extensions().get::<Caller>().cloned()
}

/// The review a request sends: JSON, or the protobuf kubectl sends for
/// the built-in kinds (`application/vnd.kubernetes.protobuf`), read into the
/// same JSON shape.
fn body(bytes: &[u8]) -> Result<Value, Status> {
    if let Some(envelope) = bytes.strip_prefix(MAGIC) {
        return protobuf_review(envelope)
            .ok_or_else(|| Status::bad_request("the review is not a SelfSubjectAccessReview"));
    }
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| Status::bad_request(format!("the review is not JSON: {e}")))?;
    if !value.is_object() {
        return Err(Status::bad_request("the review is not a JSON object"));
    }
    Ok(value)
}

/// A protobuf `SelfSubjectAccessReview` in its `runtime.Unknown` envelope
/// (the review in field 2, `raw`), as the JSON review it stands for:
/// `spec` (2) with `resourceAttributes` (1: namespace, verb, group,
/// version, resource, subresource, name) or `nonResourceAttributes` (2:
/// path, verb).
fn protobuf_review(envelope: &[u8]) -> Option<Value> {
    let review = read_field(envelope, 2)?;
    let spec = read_field(review, 2)?;
    let strings = |message: &[u8], names: &[&str]| -> Option<Value> {
        let mut out = serde_json::Map::new();
        for (number, value) in read_fields(message)? {
            let Some(name) =
                usize::try_from(number).ok().and_then(|n| names.get(n.wrapping_sub(1)))
            else {
                continue;
            };
            out.insert((*name).to_owned(), Value::String(String::from_utf8(value.to_vec()).ok()?));
        }
        Some(Value::Object(out))
    };
    let mut json_spec = serde_json::Map::new();
    if let Some(attributes) = read_field(spec, 1) {
        let names = ["namespace", "verb", "group", "version", "resource", "subresource", "name"];
        json_spec.insert("resourceAttributes".into(), strings(attributes, &names)?);
    }
    if let Some(attributes) = read_field(spec, 2) {
        json_spec.insert("nonResourceAttributes".into(), strings(attributes, &["path", "verb"])?);
    }
    Some(json!({ "spec": json_spec }))
}

/// `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`.
pub(super) async fn access_review(
    req: HttpRequest,
    bytes: web::Bytes,
) -> Result<HttpResponse, Status> {
    let mut review = body(&bytes)?;
    let spec = &review["spec"];
    let (allowed, reason) = match caller(&req) {
        None => {
            (true, "the server has no tokens configured: everyone may do everything".to_owned())
        }
        Some(caller) => {
            if let Some(attributes) = spec.get("resourceAttributes").filter(|a| a.is_object()) {
                let verb = attributes["verb"].as_str().unwrap_or_default();
                let resource = attributes["resource"].as_str().unwrap_or_default();
                if verb.is_empty() || resource.is_empty() {
                    return Err(Status::bad_request(
                        "spec.resourceAttributes needs a verb and a resource",
                    ));
                }
                let allowed = caller.may(verb, resource);
                let how = if allowed { "may" } else { "may not" };
                (allowed, format!("user {:?} {how} {verb} {resource}", caller.name()))
            } else if let Some(attributes) =
                spec.get("nonResourceAttributes").filter(|a| a.is_object())
            {
                let verb = attributes["verb"].as_str().unwrap_or_default();
                let allowed = verb == "get";
                (allowed, format!("non-resource paths are read-only (verb {verb:?})"))
            } else {
                return Err(Status::bad_request(
                    "spec needs resourceAttributes or nonResourceAttributes",
                ));
            }
        }
    };
    review["apiVersion"] = json!("authorization.k8s.io/v1");
    review["kind"] = json!("SelfSubjectAccessReview");
    review["status"] = json!({ "allowed": allowed, "reason": reason });
    Ok(HttpResponse::Created().json(review))
}

/// `POST /apis/authentication.k8s.io/{v1,v1beta1,v1alpha1}/selfsubjectreviews`.
pub(super) async fn self_review(
    req: HttpRequest,
    path: web::Path<String>,
    bytes: web::Bytes,
) -> Result<HttpResponse, Status> {
    let version = path.into_inner();
    if !REVIEW_VERSIONS.contains(&version.as_str()) {
        return Err(Status::not_found(format!(
            "the server has no API authentication.k8s.io/{version}"
        )));
    }
    // The review asks nothing: its body (JSON or protobuf) is not read.
    drop(bytes);
    let (name, groups) = match caller(&req) {
        Some(caller) => (caller.name().to_owned(), caller.groups()),
        None => (super::ANONYMOUS.to_owned(), vec!["system:unauthenticated"]),
    };
    Ok(HttpResponse::Created().json(json!({
        "apiVersion": format!("authentication.k8s.io/{version}"),
        "kind": "SelfSubjectReview",
        "metadata": { "creationTimestamp": null },
        "status": { "userInfo": { "username": name, "groups": groups } },
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::protobuf::field as ld;

    #[test]
    fn a_protobuf_review_reads_as_its_json() {
        let attributes =
            [ld(1, b"config"), ld(2, b"create"), ld(3, b"net.cosi.dev"), ld(5, b"linkconfigs")]
                .concat();
        let review = [ld(1, b""), ld(2, &ld(1, &attributes))].concat();
        // A varint field (0) and the envelope's type meta before the review.
        let envelope = [vec![0x18, 0x01], ld(1, b"meta"), ld(2, &review)].concat();
        let body = [MAGIC, &envelope].concat();
        let read = super::body(&body).unwrap();
        assert_eq!(
            read["spec"]["resourceAttributes"],
            json!({"namespace": "config", "verb": "create", "group": "net.cosi.dev", "resource": "linkconfigs"})
        );
        let truncated = [MAGIC, &envelope[..envelope.len() - 3]].concat();
        assert_eq!(super::body(&truncated).unwrap_err().code(), 400);
    }
}
