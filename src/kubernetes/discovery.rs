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

/// The core group, `v1`: none of our types, only the implicit namespaces
/// (clients such as kube-rs' `Discovery` refuse a core group without a
/// version).
pub(super) async fn core(req: HttpRequest) -> HttpResponse {
    if let Some(version) = aggregated(&req) {
        let namespaces = json!({
            "resource": "namespaces",
            "responseKind": { "group": "", "version": "v1", "kind": "Namespace" },
            "scope": "Cluster",
            "singularResource": "namespace",
            "verbs": ["get", "list"],
            "shortNames": ["ns"],
        });
        let core = json!({
            "metadata": { "name": "" },
            "versions": [{ "version": "v1", "resources": [namespaces], "freshness": "Current" }],
        });
        return aggregated_list(version, vec![core]);
    }
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
            "verbs": ["get", "list"],
            "shortNames": ["ns"],
        }],
    }))
}

/// `GET /api/v1/namespaces`: the namespaces the API serves (those named by
/// [`KubernetesApi::namespaces`](super::KubernetesApi::namespaces) and by
/// each type's [`Expose::namespaces`](super::Expose::namespaces)), as a
/// `NamespaceList`, or the Table `kubectl get ns` asks for.
pub(super) async fn namespaces(shared: web::Data<Shared>, req: HttpRequest) -> HttpResponse {
    let mut names: std::collections::BTreeSet<&str> =
        shared.namespaces.iter().map(String::as_str).collect();
    for t in &shared.registry.types {
        names.extend(t.namespaces.iter().map(String::as_str));
    }
    let accept = req.headers().get(actix_web::http::header::ACCEPT).and_then(|v| v.to_str().ok());
    if super::table::form(accept) == super::table::Form::Table {
        let rows: Vec<Value> = names
            .iter()
            .map(|name| {
                json!({
                    "cells": [name, "Active", "<unknown>"],
                    "object": {
                        "kind": "PartialObjectMetadata",
                        "apiVersion": "meta.k8s.io/v1",
                        "metadata": { "name": name },
                    },
                })
            })
            .collect();
        return HttpResponse::Ok().json(json!({
            "kind": "Table",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": {},
            "columnDefinitions": [
                { "name": "Name", "type": "string", "format": "name", "priority": 0, "description": "The namespace's name." },
                { "name": "Status", "type": "string", "format": "", "priority": 0, "description": "Its phase." },
                { "name": "Age", "type": "string", "format": "", "priority": 0, "description": "Namespaces are implicit: no age." },
            ],
            "rows": rows,
        }));
    }
    let items: Vec<Value> = names.iter().map(|name| namespace_json(name)).collect();
    HttpResponse::Ok().json(json!({
        "kind": "NamespaceList",
        "apiVersion": "v1",
        "metadata": {},
        "items": items,
    }))
}

fn namespace_json(name: &str) -> Value {
    json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": { "name": name },
        "spec": {},
        "status": { "phase": "Active" },
    })
}

/// `GET /api/v1/namespaces/{name}`: kubectl reads the namespace when an
/// object is not found, to tell a missing namespace from a missing object.
/// Namespaces are implicit in the state: every valid name exists.
pub(super) async fn namespace(path: web::Path<String>) -> Result<HttpResponse, Status> {
    let name = path.into_inner();
    crate::resource::validate::name("namespace", &name).map_err(Status::bad_request)?;
    Ok(HttpResponse::Ok().json(namespace_json(&name)))
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
                .registry
                .types
                .iter()
                .filter(|t| t.group == name && &t.version == version)
                .map(|t| {
                    let kind = json!({ "group": t.group, "version": t.version, "kind": t.kind });
                    let mut resource = json!({
                        "resource": t.plural,
                        "responseKind": kind,
                        "scope": "Namespaced",
                        "singularResource": t.singular,
                        "verbs": VERBS,
                        "shortNames": t.short_names,
                        "categories": t.categories,
                    });
                    if t.status {
                        resource["subresources"] = json!([{
                            "subresource": "status",
                            "responseKind": kind,
                            "verbs": ["get", "patch", "update"],
                        }]);
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
    if let Some(version) = aggregated(&req) {
        let items = shared
            .registry
            .groups()
            .iter()
            .map(|(name, versions)| group_discovery(&shared, name, versions))
            .collect();
        return aggregated_list(version, items);
    }
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
                "verbs": VERBS,
                "shortNames": t.short_names,
                "categories": t.categories,
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
