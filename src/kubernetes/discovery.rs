//! Discovery: `/version`, `/api`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`.
//!
//! Legacy discovery (what kubectl 1.27–1.33, client-go, kube-rs and the
//! python client all read), and aggregated discovery on `/api` and `/apis`
//! for a client whose `Accept` asks for it (`APIGroupDiscoveryList`,
//! `apidiscovery.k8s.io` `v2` or `v2beta1`: kubectl 1.30+, kube-rs'
//! `Discovery::run_aggregated`): every group, version and type in one
//! answer, with the exact `Content-Type` clients check.

use actix_web::{HttpRequest, HttpResponse, web};
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

/// `GET /api`: the core group's versions (`v1`: namespaces are always
/// served there), or with an aggregated-discovery `Accept` the core group
/// whole.
pub(super) async fn core(shared: web::Data<Shared>, req: HttpRequest) -> HttpResponse {
    let versions = shared.registry().versions_of("");
    if let Some(version) = aggregated(&req) {
        return aggregated_list(version, vec![group_discovery(&shared, "", &versions)]);
    }
    HttpResponse::Ok().json(json!({
        "kind": "APIVersions",
        "versions": versions,
        "serverAddressByClientCIDRs": [],
    }))
}

/// `GET /api/{version}`: the core group's types.
pub(super) async fn core_resources(
    shared: web::Data<Shared>,
    path: web::Path<String>,
) -> Result<HttpResponse, Status> {
    resource_list(&shared, "", &path.into_inner())
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

/// The aggregated discovery version `req` asks for (`v2`, `v2beta1`), if any:
/// the first media type of its `Accept` that names one.
fn aggregated(req: &HttpRequest) -> Option<&'static str> {
    let accept = req.headers().get(actix_web::http::header::ACCEPT)?.to_str().ok()?;
    for media in accept.split(',') {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        let has = |p: &str| params.iter().any(|q| q.replace(' ', "") == p);
        if !(has("as=APIGroupDiscoveryList") && has("g=apidiscovery.k8s.io")) {
            continue;
        }
        if has("v=v2") {
            return Some("v2");
        }
        if has("v=v2beta1") {
            return Some("v2beta1");
        }
    }
    None
}

/// An `APIGroupDiscoveryList` of `items`, with the `Content-Type` clients
/// check before they read it as one.
fn aggregated_list(version: &str, items: Vec<Value>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(format!(
            "application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList"
        ))
        .json(json!({
            "kind": "APIGroupDiscoveryList",
            "apiVersion": format!("apidiscovery.k8s.io/{version}"),
            "metadata": {},
            "items": items,
        }))
}

/// One exposed group as aggregated discovery gives it: each version with
/// its types.
fn group_discovery(shared: &Shared, name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|version| {
            let resources: Vec<Value> = shared
                .registry()
                .types
                .iter()
                .filter(|t| t.group == name && &t.version == version)
                .map(|t| {
                    let kind = json!({ "group": t.group, "version": t.version, "kind": t.kind });
                    let mut resource = json!({
                        "resource": t.plural,
                        "responseKind": kind,
                        "scope": if t.cluster.is_some() { "Cluster" } else { "Namespaced" },
                        "singularResource": t.singular,
                        "verbs": VERBS,
                        "shortNames": t.short_names,
                        "categories": t.categories,
                    });
                    let mut subresources = Vec::new();
                    if t.status {
                        subresources.push(json!({
                            "subresource": "status",
                            "responseKind": kind,
                            "verbs": ["get", "patch", "update"],
                        }));
                    }
                    if t.scale.is_some() {
                        subresources.push(json!({
                            "subresource": "scale",
                            "responseKind": { "group": "autoscaling", "version": "v1", "kind": "Scale" },
                            "verbs": ["get", "patch", "update"],
                        }));
                    }
                    if !subresources.is_empty() {
                        resource["subresources"] = Value::Array(subresources);
                    }
                    resource
                })
                .collect();
            json!({ "version": version, "resources": resources, "freshness": "Current" })
        })
        .collect();
    json!({ "metadata": { "name": name }, "versions": versions })
}

/// The verbs of every exposed type.
const VERBS: [&str; 8] =
    ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

pub(super) async fn groups(shared: web::Data<Shared>, req: HttpRequest) -> HttpResponse {
    // The core group is `/api`'s.
    let named = shared.registry().groups().into_iter().filter(|(name, _)| !name.is_empty());
    if let Some(version) = aggregated(&req) {
        let items =
            named.map(|(name, versions)| group_discovery(&shared, &name, &versions)).collect();
        return aggregated_list(version, items);
    }
    let groups: Vec<Value> = named.map(|(name, versions)| group_json(&name, &versions)).collect();
    HttpResponse::Ok().json(json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }))
}

pub(super) async fn group(
    shared: web::Data<Shared>,
    path: web::Path<String>,
) -> Result<HttpResponse, Status> {
    let name = path.into_inner();
    let groups = shared.registry().groups();
    let (_, versions) = groups
        .iter()
        .find(|(g, _)| *g == name && !g.is_empty())
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
    if group.is_empty() {
        return Err(Status::not_found("the server has no API group \"\""));
    }
    resource_list(&shared, &group, &version)
}

/// The `APIResourceList` of `group`'s `version` (`group` empty: the core group's).
fn resource_list(shared: &Shared, group: &str, version: &str) -> Result<HttpResponse, Status> {
    let resources: Vec<Value> = shared
        .registry()
        .types
        .iter()
        .filter(|t| t.group == group && t.version == version)
        .flat_map(|t| {
            let status = t.status.then(|| {
                json!({
                    "name": format!("{}/status", t.plural),
                    "singularName": "",
                    "namespaced": t.cluster.is_none(),
                    "kind": t.kind,
                    "verbs": ["get", "patch", "update"],
                })
            });
            let main = json!({
                "name": t.plural,
                "singularName": t.singular,
                "namespaced": t.cluster.is_none(),
                "kind": t.kind,
                "verbs": VERBS,
                "shortNames": t.short_names,
                "categories": t.categories,
            });
            let scale = t.scale.is_some().then(|| {
                json!({
                    "name": format!("{}/scale", t.plural),
                    "singularName": "",
                    "namespaced": t.cluster.is_none(),
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                })
            });
            std::iter::once(main).chain(status).chain(scale)
        })
        .collect();
    if resources.is_empty() {
        return Err(Status::not_found(format!("the server has no API {group}/{version}")));
    }
    Ok(HttpResponse::Ok().json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") },
        "resources": resources,
    })))
}
