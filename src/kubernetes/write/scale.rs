//! The `scale` subresource ([`Expose::scale`](crate::kubernetes::Expose::scale)):
//! `GET`, `PUT` and `PATCH .../{plural}/{name}/scale` read and write an
//! `autoscaling/v1` `Scale` whose `spec.replicas` is the object's field at
//! the spec replicas path, `status.replicas` the one at the status replicas
//! path, and `status.selector` the one at the label selector path (what
//! `kubectl scale`, kube-rs' `get_scale`/`patch_scale` and the
//! HorizontalPodAutoscaler use). A write of the scale writes the object's
//! replicas field alone, as a PUT of the object would (a controller's
//! object is a `403`, a stale `metadata.resourceVersion` a `409`).

use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::{Map, Value, json};

use super::desired::{Part, desired, update_over};
use super::managed::Managed;
use super::request::{ATTEMPTS, ItemPath, Query, Target, item, json_body, options, read_body};
use crate::kubernetes::object::{MANAGED_FIELDS_ANNOTATION, object};
use crate::kubernetes::patch::{PatchError, json_patch, merge_patch};
use crate::kubernetes::registry::{Exposed, Step};
use crate::kubernetes::shared::Shared;
use crate::kubernetes::status::Status;
use crate::resource::AnyResource;

/// The object of a `.../{name}/scale` request: 404 when its type has no
/// scale subresource.
fn scale_item(shared: &Shared, path: ItemPath) -> Result<Target, Status> {
    let target = item(shared, path)?;
    if target.exposed.scale.is_none() {
        return Err(no_scale(&target.exposed));
    }
    Ok(target)
}

/// The 404 of a scale request to a type without a scale subresource.
pub(in crate::kubernetes) fn no_scale(exposed: &Exposed) -> Status {
    Status::not_found(format!(
        "the server could not find the requested resource ({}/{} has no scale subresource)",
        exposed.qualified_plural(),
        exposed.version
    ))
}

/// The value at `steps` in `doc`.
fn at<'a>(doc: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps.iter().try_fold(doc, |v, step| match step {
        Step::Field(f) => v.get(f),
        Step::Index(i) => v.get(*i),
    })
}

/// Sets the value at `steps` in `doc`, making the objects on the way.
fn set(doc: &mut Value, steps: &[Step], value: Value) -> Result<(), String> {
    let Some((last, path)) = steps.split_last() else { return Err("an empty path".into()) };
    let mut here = doc;
    for step in path {
        here = match step {
            Step::Field(f) => {
                if here.is_null() {
                    *here = Value::Object(Map::new());
                }
                here.as_object_mut()
                    .ok_or("the replicas field's parent is no object")?
                    .entry(f.clone())
                    .or_insert(Value::Null)
            }
            Step::Index(i) => here.get_mut(*i).ok_or_else(|| format!("no item {i}"))?,
        };
    }
    if here.is_null() && matches!(last, Step::Field(_)) {
        *here = Value::Object(Map::new());
    }
    match (last, here) {
        (Step::Field(f), Value::Object(map)) => {
            map.insert(f.clone(), value);
            Ok(())
        }
        (Step::Index(i), Value::Array(items)) if *i < items.len() => {
            items[*i] = value;
            Ok(())
        }
        _ => Err("the replicas field's parent is no object".into()),
    }
}

/// The `Scale` of `stored`.
fn scale_of(target: &Target, stored: &AnyResource) -> Result<Value, Status> {
    let exposed = &target.exposed;
    let paths = exposed.scale.as_ref().ok_or_else(|| no_scale(exposed))?;
    let revision = stored.metadata().revision();
    let doc = object(exposed, stored, revision)?;
    let replicas = |steps: &[Step]| at(&doc, steps).and_then(Value::as_i64).unwrap_or(0);
    let mut metadata = json!({
        "name": doc["metadata"]["name"],
        "resourceVersion": doc["metadata"]["resourceVersion"],
        "creationTimestamp": doc["metadata"]["creationTimestamp"],
    });
    for field in ["namespace", "uid"] {
        if let Some(v) = doc["metadata"].get(field) {
            metadata[field] = v.clone();
        }
    }
    let mut status = json!({ "replicas": replicas(&paths.status) });
    if let Some(selector) = paths.selector.as_ref().and_then(|s| at(&doc, s)) {
        status["selector"] = selector.clone();
    }
    Ok(json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": metadata,
        "spec": { "replicas": replicas(&paths.spec) },
        "status": status,
    }))
}

/// `GET .../{plural}/{name}/scale`.
pub(in crate::kubernetes) async fn get_scale(
    shared: web::Data<Shared>,
    path: ItemPath,
) -> Result<HttpResponse, Status> {
    let target = scale_item(&shared, path)?;
    let stored = target.stored(&shared).await?.ok_or_else(|| target.not_found())?;
    Ok(HttpResponse::Ok().json(scale_of(&target, &stored)?))
}

/// `PUT .../{plural}/{name}/scale`: a `Scale` whose `spec.replicas` is
/// written to the object.
pub(in crate::kubernetes) async fn replace_scale(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = scale_item(&shared, path)?;
    let dry_run = options(&query)?.dry_run;
    let body = json_body(&read_body(&shared, &req, payload).await?)?;
    write_scale(&shared, &target, dry_run, |_| Ok(body.clone())).await
}

/// `PATCH .../{plural}/{name}/scale`: a merge (or apply) or JSON patch of
/// the current `Scale`.
pub(in crate::kubernetes) async fn patch_scale(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = scale_item(&shared, path)?;
    let dry_run = options(&query)?.dry_run;
    let content_type = req.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let json = match content_type.split(';').next().unwrap_or("").trim() {
        "application/merge-patch+json" | "application/apply-patch+yaml" => false,
        "application/json-patch+json" => true,
        _ => return Err(Status::unsupported_media_type(content_type)),
    };
    let body = read_body(&shared, &req, payload).await?;
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| Status::bad_request(format!("the patch is not JSON: {e}")))?;
    write_scale(&shared, &target, dry_run, |mut scale| {
        if json {
            json_patch(&mut scale, &patch).map_err(|e| match e {
                PatchError::Malformed(m) => Status::bad_request(m),
                PatchError::TooLarge(m) => Status::request_entity_too_large(m),
                PatchError::Failed(m) => target.invalid(&m),
            })?;
        } else {
            merge_patch(&mut scale, &patch);
        }
        Ok(scale)
    })
    .await
}

/// Writes the replicas of the `Scale` that `scale` makes of the current
/// one into the object; answers the new `Scale`.
async fn write_scale(
    shared: &Shared,
    target: &Target,
    dry_run: bool,
    scale: impl Fn(Value) -> Result<Value, Status>,
) -> Result<HttpResponse, Status> {
    let paths = target.exposed.scale.clone().ok_or_else(|| no_scale(&target.exposed))?;
    for _ in 0..ATTEMPTS {
        let stored = target.stored(shared).await?.ok_or_else(|| target.not_found())?;
        target.writable(&stored)?;
        let wanted = scale(scale_of(target, &stored)?)?;
        let replicas = match wanted["spec"]["replicas"].as_i64() {
            Some(n) if n >= 0 => n,
            _ => {
                return Err(target.invalid(&format!(
                    "spec.replicas: Invalid value: {}: must be a non-negative integer",
                    wanted["spec"]["replicas"]
                )));
            }
        };
        if let Some(rv) = wanted["metadata"]["resourceVersion"].as_str().filter(|s| !s.is_empty())
            && rv != stored.metadata().revision().to_string()
        {
            return Err(target.conflict(
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        let mut doc = object(&target.exposed, &stored, stored.metadata().revision())?;
        set(&mut doc, &paths.spec, Value::from(replicas)).map_err(|e| target.invalid(&e))?;
        let mut desired = desired(target, &doc, false, Part::Object)?;
        let managed =
            Managed::parse(stored.metadata().annotations().get(MANAGED_FIELDS_ANNOTATION));
        if let Some(text) = managed.annotation() {
            desired.metadata.annotations_mut().insert(MANAGED_FIELDS_ANNOTATION, text);
        }
        if let Some(written) =
            update_over(shared, target, &desired, &stored, Part::Object, dry_run).await?
        {
            return Ok(HttpResponse::Ok().json(scale_of(target, &written)?));
        }
    }
    Err(target.conflict("too many concurrent writes; try again"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_are_read_and_set_along_their_path() {
        let steps = |p: &str| crate::kubernetes::registry::parse_path(p).unwrap();
        let mut doc = json!({"spec": {"replicas": 2}});
        assert_eq!(at(&doc, &steps(".spec.replicas")), Some(&json!(2)));
        set(&mut doc, &steps(".spec.replicas"), json!(5)).unwrap();
        set(&mut doc, &steps(".status.scale.replicas"), json!(1)).unwrap();
        assert_eq!(doc, json!({"spec": {"replicas": 5}, "status": {"scale": {"replicas": 1}}}));
        assert!(set(&mut json!({"spec": 3}), &steps(".spec.replicas"), json!(1)).is_err());
    }
}
