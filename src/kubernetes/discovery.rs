//! Discovery: `/version`, `/api`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`.
//!
//! Legacy discovery only (what kubectl 1.27–1.33, client-go, kube-rs and the
//! python client all read). Clients that ask for aggregated discovery (v2)
//! first get plain `application/json` and fall back to it.

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};

use super::shared::Shared;
use super::status::Status;

pub(super) async fn version(shared: web::Data<Shared>) -> HttpResponse {
    let (major, minor) = shared.server_version;
    HttpResponse::Ok().json(json!({
        "major": major.to_string(),
        "minor": minor.to_string(),
        "gitVersion": format!("v{major}.{minor}.0"),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "cosi-runtime",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    }))
}

/// The core group, `v1`: none of our types, only the implicit namespaces
/// (clients such as kube-rs' `Discovery` refuse a core group without a
/// version).
pub(super) async fn core() -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [],
    }))
}

/// `GET /api/v1`: the core group's one resource here, the implicit namespaces
/// (get only: see [`namespace`]).
pub(super) async fn core_resources() -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": "v1",
        "resources": [{
            "name": "namespaces",
            "singularName": "namespace",
            "namespaced": false,
            "kind": "Namespace",
            "verbs": ["get"],
            "shortNames": ["ns"],
        }],
    }))
}

/// `GET /api/v1/namespaces/{name}`: kubectl reads the namespace when an
/// object is not found, to tell a missing namespace from a missing object.
/// Namespaces are implicit in the state: every valid name exists.
pub(super) async fn namespace(path: web::Path<String>) -> Result<HttpResponse, Status> {
    let name = path.into_inner();
    crate::resource::validate::name("namespace", &name).map_err(Status::bad_request)?;
    Ok(HttpResponse::Ok().json(json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": { "name": name },
        "spec": {},
        "status": { "phase": "Active" },
    })))
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| json!({ "groupVersion": format!("{name}/{v}"), "version": v }))
        .collect();
    json!({
        "name": name,
        "preferredVersion": versions.first().cloned().unwrap_or(Value::Null),
        "versions": versions,
    })
}

pub(super) async fn groups(shared: web::Data<Shared>) -> HttpResponse {
    let groups: Vec<Value> = shared
        .registry
        .groups()
        .iter()
        .map(|(name, versions)| group_json(name, versions))
        .collect();
    HttpResponse::Ok().json(json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }))
}

pub(super) async fn group(
    shared: web::Data<Shared>,
    path: web::Path<String>,
) -> Result<HttpResponse, Status> {
    let name = path.into_inner();
    let groups = shared.registry.groups();
    let (_, versions) = groups
        .iter()
        .find(|(g, _)| *g == name)
        .ok_or_else(|| Status::not_found(format!("the server has no API group {name:?}")))?;
    let mut group = group_json(&name, versions);
    group["kind"] = "APIGroup".into();
    group["apiVersion"] = "v1".into();
    Ok(HttpResponse::Ok().json(group))
}

pub(super) async fn resources(
    shared: web::Data<Shared>,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, Status> {
    let (group, version) = path.into_inner();
    let resources: Vec<Value> = shared
        .registry
        .types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .flat_map(|t| {
            let status = t.status.then(|| {
                json!({
                    "name": format!("{}/status", t.plural),
                    "singularName": "",
                    "namespaced": true,
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                })
            });
            let main = json!({
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": true,
                "kind": t.kind,
                "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
                "shortNames": t.short_names,
            });
            std::iter::once(main).chain(status)
        })
        .collect();
    if resources.is_empty() {
        return Err(Status::not_found(format!("the server has no API {group}/{version}")));
    }
    Ok(HttpResponse::Ok().json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": format!("{group}/{version}"),
        "resources": resources,
    })))
}
