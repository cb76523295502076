//! The write handlers: create (POST), replace (PUT), patch (PATCH) and
//! delete (DELETE), each with its `/status` form where it has one.

use actix_web::http::header::CONTENT_TYPE;
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::Value;

use super::desired::{Part, desired, stored_value, update_over};
use super::gc::{self, Propagation};
use super::managed::Managed;
use super::request::{
    ATTEMPTS, ItemPath, Options, Query, Target, generated_name, item, json_body, manager_of,
    name_error, now_rfc3339, options, read_body, status_item, target,
};
use crate::kubernetes::object::{FIELD_MANAGER_ANNOTATION, MANAGED_FIELDS_ANNOTATION, object};
use crate::kubernetes::params::{ListParams, parse_bool};
use crate::kubernetes::patch::{PatchError, json_patch, merge_patch};
use crate::kubernetes::shared::Shared;
use crate::kubernetes::status::Status;
use crate::kubernetes::{crds, namespaces};
use crate::resource::Metadata;
use crate::resource::{AnyResource, Kind};

/// `POST /apis/{group}/{version}/namespaces/{namespace}/{plural}`: 201 and
/// the stored object; 409 `AlreadyExists`. Without a `metadata.name`, a
/// `metadata.generateName` is the prefix of a name drawn at random (drawn
/// again when taken). The name must be a lowercase RFC 1123 subdomain, as
/// the apiserver requires (422). With `dryRun=All`, 201 and the object as
/// it would be stored, storing nothing.
pub(in crate::kubernetes) async fn create(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    // The type first (404), as the apiserver routes before it reads a body.
    let mut target = target(&shared, &path, "POST")?.answering(&req);
    let options = options(&query)?;
    let mut body = json_body(&read_body(&shared, &req, payload).await?)?;
    if !body.is_object() {
        // Before the name is looked for: no object, no name (400, not 422).
        return Err(Status::bad_request("the request body is not a JSON object"));
    }
    let manager = manager_of(&query, &req);
    let api_version = target.exposed.api_version();
    let named = body["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    let prefix = body["metadata"]["generateName"].as_str().unwrap_or_default().to_owned();
    let generate = named.is_empty() && !prefix.is_empty();
    for _ in 0..if generate { ATTEMPTS } else { 1 } {
        target.name = if generate { generated_name(&prefix) } else { named.clone() };
        if target.name.is_empty() {
            return Err(
                target.invalid("metadata.name: Required value: name or generateName is required")
            );
        }
        if let Some(why) = name_error(&target.name) {
            return Err(target.invalid(&why));
        }
        target.admit(&shared).await?;
        if generate {
            body["metadata"]["name"] = Value::String(target.name.clone());
        }
        let mut desired = desired(&target, &body, options.strict, Part::Object)?;
        let mut managed = Managed::default();
        let after = owned_part(&target, body.clone());
        managed.update(&manager, &api_version, &Value::Null, &after, &now_rfc3339());
        keep_managed(&mut desired.metadata, &managed);
        // With a status subresource, a create stores no status.
        let value = stored_value(&target, &desired, None, Part::Object)?;
        let resource = AnyResource::from_dynamic(desired.metadata, value);
        let created = if options.dry_run {
            match target.stored(&shared).await? {
                Some(_) => Err(crate::Error::AlreadyExists { resource: target.pointer() }),
                None => Ok(resource),
            }
        } else {
            shared.state.create(resource, None).await
        };
        match created {
            Ok(stored) => {
                synced(&shared, &target, options.dry_run).await;
                return target.respond(&stored, true);
            }
            Err(crate::Error::AlreadyExists { .. }) if generate => continue,
            Err(e) => return Err(target.error(e)),
        }
    }
    Err(target.error(crate::Error::AlreadyExists { resource: target.pointer() }))
}

/// After a write of a CustomResourceDefinition (not a dry run), the types
/// served follow the CRDs.
async fn synced(shared: &Shared, target: &Target, dry_run: bool) {
    if crds::is_crds(&target.exposed) && !dry_run {
        shared.sync_crds().await;
    }
}

/// The managed fields `stored` carries (none for a new object).
fn managed_of(stored: Option<&AnyResource>) -> Managed {
    Managed::parse(stored.and_then(|r| r.metadata().annotations().get(MANAGED_FIELDS_ANNOTATION)))
}

/// Keeps `managed` in `md` (the annotation goes when nobody manages anything).
fn keep_managed(md: &mut Metadata, managed: &Managed) {
    match managed.annotation() {
        Some(text) => drop(md.annotations_mut().insert(MANAGED_FIELDS_ANNOTATION, text)),
        None => drop(md.annotations_mut().remove(MANAGED_FIELDS_ANNOTATION)),
    }
}

/// An object as field ownership reads it: with a status subresource, an
/// object write leaves the status alone, so it is left out.
fn owned_part(target: &Target, mut doc: Value) -> Value {
    if target.exposed.status
        && let Value::Object(map) = &mut doc
    {
        map.remove("status");
    }
    doc
}

/// `PUT .../{plural}/{name}`: replaces labels, annotations, finalizers,
/// owner references and spec. `metadata.resourceVersion` (and
/// `metadata.uid`), when sent, must be the stored ones (409 `Conflict`);
/// without them the write is unconditional.
pub(in crate::kubernetes) async fn replace(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = item(&shared, path)?.answering(&req);
    replace_part(&shared, target, query, req, payload, Part::Object).await
}

/// `PUT .../{plural}/{name}/status`: replaces the status alone (see
/// [`Expose::status_subresource`](crate::kubernetes::Expose::status_subresource)); 404
/// for a type without a status subresource.
pub(in crate::kubernetes) async fn replace_status(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = status_item(&shared, path)?.answering(&req);
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
    let options = options(&query)?;
    let manager = manager_of(&query, &req);
    let body = json_body(&read_body(shared, &req, payload).await?)?;
    let written = desired(&target, &body, options.strict, part)?;
    for _ in 0..ATTEMPTS {
        let stored = target.stored(shared).await?.ok_or_else(|| target.not_found())?;
        let mut desired = written.clone();
        if part == Part::Object {
            let mut managed = managed_of(Some(&stored));
            let before = owned_part(&target, object(&target.exposed, &stored, 0)?);
            let after = owned_part(&target, body.clone());
            let api_version = target.exposed.api_version();
            managed.update(&manager, &api_version, &before, &after, &now_rfc3339());
            keep_managed(&mut desired.metadata, &managed);
        }
        if let Some(written) =
            update_over(shared, &target, &desired, &stored, part, options.dry_run).await?
        {
            synced(shared, &target, options.dry_run).await;
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
pub(in crate::kubernetes) async fn patch(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = item(&shared, path)?.answering(&req);
    patch_part(&shared, target, query, req, payload, Part::Object).await
}

/// `PATCH .../{plural}/{name}/status`: the patch types of [`patch`], applied
/// to the object as served; only its `status` is written (spec and
/// metadata are kept as stored, a resourceVersion the patch sets is still a
/// precondition). A missing object is a 404, applies included; an apply's
/// field manager is not recorded (metadata is not written). 404 for a type
/// without a status subresource.
pub(in crate::kubernetes) async fn patch_status(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = status_item(&shared, path)?.answering(&req);
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
    let Options { strict, dry_run } = options(&query)?;
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
    let force = query.get("force").map_or(Ok(false), |v| parse_bool("force", v))?;
    let updater = manager_of(&query, &req);
    let api_version = target.exposed.api_version();
    // Who owns what once the patch is in: `before` the stored object (`Null`
    // for a create), `after` the patched one.
    let ownership = |stored: Option<&AnyResource>, before: &Value, after: &Value| {
        let mut managed = managed_of(stored);
        let now = now_rfc3339();
        match &manager {
            Some(m) => {
                let applied = owned_part(&target, patch.clone());
                managed.apply(m, &api_version, before, &applied, force, &now).map_err(
                    |conflicts| {
                        let conflicts =
                            conflicts.into_iter().map(|c| (c.field, c.manager)).collect();
                        let e = &target.exposed;
                        Status::apply_conflict(&e.group, &e.plural, &target.name, conflicts)
                    },
                )?;
            }
            None => managed.update(&updater, &api_version, before, after, &now),
        }
        Ok::<_, Status>(managed)
    };
    for _ in 0..ATTEMPTS {
        let Some(stored) = target.stored(shared).await? else {
            if kind != PatchType::Apply || part == Part::Status {
                return Err(target.not_found());
            }
            // Server-side apply of a missing object creates it.
            if let Some(why) = name_error(&target.name) {
                return Err(target.invalid(&why));
            }
            target.admit(shared).await?;
            let mut desired = desired_of(&patch)?;
            let managed = ownership(None, &Value::Null, &owned_part(&target, patch.clone()))?;
            keep_managed(&mut desired.metadata, &managed);
            let value = stored_value(&target, &desired, None, Part::Object)?;
            let resource = AnyResource::from_dynamic(desired.metadata, value);
            if dry_run {
                return target.respond(&resource, true);
            }
            match shared.state.create(resource, None).await {
                Ok(created) => {
                    synced(shared, &target, false).await;
                    return target.respond(&created, true);
                }
                Err(crate::Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(target.error(e)),
            }
        };
        target.writable(&stored)?;
        let mut doc = object(&target.exposed, &stored, stored.metadata().revision())?;
        let before = owned_part(&target, doc.clone());
        match kind {
            PatchType::Merge | PatchType::Apply => merge_patch(&mut doc, &patch),
            PatchType::Json => json_patch(&mut doc, &patch).map_err(|e| match e {
                PatchError::Malformed(m) => Status::bad_request(m),
                PatchError::TooLarge(m) => Status::request_entity_too_large(m),
                PatchError::Failed(m) => target.invalid(&m),
            })?,
        }
        let mut desired = desired_of(&doc)?;
        if part == Part::Object {
            let managed = ownership(Some(&stored), &before, &owned_part(&target, doc.clone()))?;
            keep_managed(&mut desired.metadata, &managed);
        }
        if let Some(written) =
            update_over(shared, &target, &desired, &stored, part, dry_run).await?
        {
            synced(shared, &target, dry_run).await;
            return target.respond(&written, false);
        }
    }
    Err(target.conflict("too many concurrent writes; try again"))
}

/// `DELETE .../{plural}/{name}`: tears the resource down at once (it shows
/// `deletionTimestamp`) and destroys it when no finalizers remain, in the
/// background if some do; answers the torn-down object. Honours
/// `preconditions` (`uid`, `resourceVersion`) in the body (409). Its
/// dependents (by `ownerReferences`) are collected by the body's
/// `propagationPolicy` (see `gc.rs`): Background by default, Foreground,
/// Orphan. With `dryRun=All`, the checks alone: the object as stored,
/// unchanged.
pub(in crate::kubernetes) async fn delete(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, Status> {
    let target = item(&shared, path)?.answering(&req);
    let dry_run = options(&query)?.dry_run;
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
    let propagation =
        Propagation::of(&options, query.get("propagationPolicy").map(String::as_str))?;
    if dry_run {
        return target.respond(&stored, false);
    }
    let uid = stored.metadata().uid().map(|u| u.to_string());
    if propagation == Propagation::Orphan
        && let Some(uid) = &uid
    {
        gc::orphan(&shared.state, &shared.registry(), &target.namespace, uid)
            .await
            .map_err(|e| target.error(e))?;
    }
    if propagation == Propagation::Foreground {
        shared
            .state
            .add_finalizer(&target.pointer(), gc::FOREGROUND)
            .await
            .map_err(|e| target.error(e))?;
    }
    // A namespace is held until what is in it is gone.
    let namespace =
        namespaces::is_namespaces(&target.exposed.resource_type) && target.exposed.group.is_empty();
    if namespace && stored.phase() == crate::resource::Phase::Running {
        shared
            .state
            .add_finalizer(&target.pointer(), namespaces::NAMESPACE_FINALIZER)
            .await
            .map_err(|e| target.error(e))?;
    }
    let crd = crds::is_crds(&target.exposed).then(|| super::desired::stored_body(&stored));
    let torn = delete_stored(&shared, &target, stored).await?;
    if let Some(Ok(body)) = crd {
        shared.sync_crds().await;
        let shared = shared.clone();
        actix::spawn(async move { shared.delete_crd_objects(&body).await });
    }
    if namespace {
        let (shared, name) = (shared.clone(), target.name.clone());
        actix::spawn(
            async move { namespaces::empty(&shared.state, &shared.registry(), &name).await },
        );
    }
    if let Some(uid) = uid
        && propagation != Propagation::Orphan
    {
        collect_dependents(&shared, &target, uid, propagation);
    }
    target.respond(&torn, false)
}

/// Deletes the dependents of the object `target` names (whose uid is
/// `uid`), in the background; with `Foreground`, then releases the object.
fn collect_dependents(
    shared: &web::Data<Shared>,
    target: &Target,
    uid: String,
    propagation: Propagation,
) {
    let (shared, ptr, namespace) = (shared.clone(), target.pointer(), target.namespace.clone());
    actix::spawn(async move {
        let collected = gc::collect(&shared.state, &shared.registry(), &namespace, uid).await;
        if let Err(e) = collected {
            tracing::warn!("Kubernetes API: deleting the dependents of {ptr}: {e}");
        }
        if propagation == Propagation::Foreground {
            match shared.state.remove_finalizer(&ptr, gc::FOREGROUND).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => tracing::warn!("Kubernetes API: releasing {ptr}: {e}"),
            }
        }
    });
}

/// Tears `stored` down and destroys it once no finalizers hold it (in the
/// background if some do); the torn-down object.
async fn delete_stored(
    shared: &Shared,
    target: &Target,
    stored: AnyResource,
) -> Result<AnyResource, Status> {
    let ptr = target.pointer();
    shared.state.teardown(&ptr, None).await.map_err(|e| target.error(e))?;
    let torn = target.stored(shared).await?.unwrap_or(stored);
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
    Ok(torn)
}

/// `DELETE .../namespaces/{namespace}/{plural}`: deletes every object the
/// `labelSelector` and `fieldSelector` select (every object without them),
/// each as a DELETE of it would (its dependents collected in the
/// background), and answers them as a `<Kind>List`. When
/// one of them is a controller's, `403` and nothing is deleted. With
/// `dryRun=All`, the objects that would be deleted.
pub(in crate::kubernetes) async fn delete_collection(
    shared: web::Data<Shared>,
    path: ItemPath,
    query: Query,
) -> Result<HttpResponse, Status> {
    let mut target = target(&shared, &path, "DELETE")?;
    let dry_run = options(&query)?.dry_run;
    let params = ListParams::parse(&query)?;
    params.fields.check(&target.exposed)?;
    let kind = Kind::new(&target.namespace, &target.exposed.resource_type);
    let found = shared.state.list(&kind, &params.labels).await.map_err(Status::from)?;
    let selected: Vec<AnyResource> =
        found.into_iter().filter(|r| params.fields.matches_object(&target.exposed, r)).collect();
    for resource in &selected {
        target.name = resource.id().to_owned();
        target.writable(resource)?;
    }
    let mut items = Vec::with_capacity(selected.len());
    for resource in selected {
        target.name = resource.id().to_owned();
        let uid = resource.metadata().uid().map(|u| u.to_string());
        let deleted = if dry_run {
            resource
        } else {
            match delete_stored(&shared, &target, resource).await {
                Ok(torn) => {
                    if let Some(uid) = uid {
                        collect_dependents(&shared, &target, uid, Propagation::Background);
                    }
                    torn
                }
                // Deleted by someone else meanwhile: not this request's.
                Err(status) if status.code() == 404 => continue,
                Err(status) => return Err(status),
            }
        };
        items.push(object(&target.exposed, &deleted, deleted.metadata().revision())?);
    }
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "apiVersion": target.exposed.api_version(),
        "kind": format!("{}List", target.exposed.kind),
        "metadata": {},
        "items": items,
    })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Kind;
    use serde_json::json;

    // ---- requests through the routes (actix-web's test service) ----

    use actix_web::test::{TestRequest, call_service, init_service, read_body};
    use actix_web::{App, http::StatusCode};

    const NOTES: &str = "/apis/misc.cosi.dev/v1/namespaces/config/notes";

    fn api(state: &crate::State) -> crate::kubernetes::KubernetesApi {
        crate::kubernetes::KubernetesApi::new(state)
            .expose(crate::kubernetes::Expose::resource_type("Notes.misc.cosi.dev", "v1"))
            .unwrap()
            .namespaces(["config"])
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
