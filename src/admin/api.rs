//! `/api/v1`: resource types, resources, watches, controllers, the graph.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use actix_web::{HttpResponse, web};
use serde::Serialize;
use serde_json::{Value, json};

use super::error::ApiError;
use super::shared::Shared;
use super::sse::resource_json;
use crate::controller::ControllerMetrics;
use crate::resource::{Kind, LabelQuery, Pointer, validate};
use crate::supervisor::DependencyGraph;

pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    let not_allowed = || web::to(super::error::not_allowed);
    for (path, route) in [
        ("/api/v1/types", web::get().to(types)),
        ("/api/v1/resources/{namespace}/{type}", web::get().to(list)),
        ("/api/v1/resources/{namespace}/{type}/{id:.+}", web::get().to(get)),
        ("/api/v1/watch/{namespace}/{type}", web::get().to(watch_kind)),
        ("/api/v1/watch/{namespace}/{type}/{id:.+}", web::get().to(watch_one)),
        ("/api/v1/controllers", web::get().to(controllers)),
        ("/api/v1/graph", web::get().to(graph)),
        ("/api/v1/shards", web::get().to(super::shards::shards)),
    ] {
        cfg.service(web::resource(path).route(route).default_service(not_allowed()));
    }
}

type Query = web::Query<HashMap<String, String>>;

/// Every known resource type with the namespaces it is read from (declared
/// kinds included).
async fn known_types(shared: &Shared) -> BTreeMap<String, BTreeSet<String>> {
    let graph = shared.runtime.graph().await;
    let mut types: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for edge in graph.edges() {
        let namespaces = types.entry(edge.resource_type.clone()).or_default();
        if let Some(ns) = &edge.namespace {
            namespaces.insert(ns.clone());
        }
    }
    for kind in &shared.kinds {
        types
            .entry(kind.resource_type().to_owned())
            .or_default()
            .insert(kind.namespace().to_owned());
    }
    types
}

/// Resolves a type as written in a path: the full type, or its first
/// segment in any case when only one type has it.
async fn resolve_type(shared: &Shared, written: &str) -> Result<String, ApiError> {
    validate::name("type", written).map_err(ApiError::bad_request)?;
    let known = known_types(shared).await;
    if known.contains_key(written) {
        return Ok(written.to_owned());
    }
    let lower = written.to_lowercase();
    let matches: Vec<&String> = known
        .keys()
        .filter(|t| {
            t.to_lowercase() == lower
                || t.split('.').next().is_some_and(|first| first.to_lowercase() == lower)
        })
        .collect();
    match matches.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(ApiError::not_found(format!(
            "unknown resource type {written:?} (known: {})",
            known.keys().cloned().collect::<Vec<_>>().join(", ")
        ))),
        several => Err(ApiError::bad_request(format!(
            "resource type {written:?} is ambiguous: {}",
            several.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
        ))),
    }
}

fn selector(query: &HashMap<String, String>) -> Result<LabelQuery, ApiError> {
    query
        .get("labels")
        .map_or(Ok(LabelQuery::all()), |s| s.parse())
        .map_err(|e| ApiError::bad_request(e.to_string()))
}

async fn kind_of(shared: &Shared, namespace: &str, written: &str) -> Result<Kind, ApiError> {
    validate::name("namespace", namespace).map_err(ApiError::bad_request)?;
    Ok(Kind::new(namespace, resolve_type(shared, written).await?))
}

#[derive(Serialize)]
struct TypeInfo {
    #[serde(rename = "type")]
    resource_type: String,
    namespaces: BTreeSet<String>,
}

async fn types(shared: web::Data<Shared>) -> HttpResponse {
    let mut known = known_types(&shared).await;
    // A type only written (no controller reads it) has no namespace in the
    // graph: look for its resources in the namespaces of the others.
    let candidates: BTreeSet<String> = known.values().flatten().cloned().collect();
    let state = shared.runtime.state();
    for (resource_type, namespaces) in known.iter_mut().filter(|(_, ns)| ns.is_empty()) {
        for ns in &candidates {
            let kind = Kind::new(ns, resource_type);
            if state.list(&kind, &LabelQuery::all()).await.is_ok_and(|found| !found.is_empty()) {
                namespaces.insert(ns.clone());
            }
        }
    }
    let types: Vec<TypeInfo> = known
        .into_iter()
        .map(|(resource_type, namespaces)| TypeInfo { resource_type, namespaces })
        .collect();
    HttpResponse::Ok().json(types)
}

async fn list(
    shared: web::Data<Shared>,
    path: web::Path<(String, String)>,
    query: Query,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    shared.limits.admit(&req, false)?;
    let (namespace, written) = path.into_inner();
    let kind = kind_of(&shared, &namespace, &written).await?;
    let selector = selector(&query)?;
    let resources = shared.runtime.state().list(&kind, &selector).await?;
    let items = resources.iter().map(resource_json).collect::<Result<Vec<_>, _>>()?;
    Ok(HttpResponse::Ok().json(items))
}

async fn pointer_of(
    shared: &Shared,
    (namespace, written, id): (String, String, String),
) -> Result<Pointer, ApiError> {
    let kind = kind_of(shared, &namespace, &written).await?;
    validate::name("id", &id).map_err(ApiError::bad_request)?;
    Ok(kind.pointer(id))
}

async fn get(
    shared: web::Data<Shared>,
    path: web::Path<(String, String, String)>,
) -> Result<HttpResponse, ApiError> {
    let ptr = pointer_of(&shared, path.into_inner()).await?;
    let resource = shared.runtime.state().get(&ptr).await?;
    Ok(HttpResponse::Ok().json(resource_json(&resource)?))
}

async fn watch_kind(
    shared: web::Data<Shared>,
    path: web::Path<(String, String)>,
    query: Query,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let slot = shared.limits.admit(&req, true)?;
    let resume = super::sse::last_event_id(&req)?;
    let (namespace, written) = path.into_inner();
    let kind = kind_of(&shared, &namespace, &written).await?;
    super::sse::watch(&shared, kind, selector(&query)?, None, resume, slot).await
}

async fn watch_one(
    shared: web::Data<Shared>,
    path: web::Path<(String, String, String)>,
    req: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let slot = shared.limits.admit(&req, true)?;
    let resume = super::sse::last_event_id(&req)?;
    let ptr = pointer_of(&shared, path.into_inner()).await?;
    super::sse::watch(&shared, ptr.kind().clone(), LabelQuery::all(), Some(ptr), resume, slot).await
}

fn controller_json(m: &ControllerMetrics, graph: &DependencyGraph) -> Value {
    let health = crate::controller::ControllerHealth::from(m);
    let edges = graph.edges().iter().filter(|e| e.controller == m.controller);
    let (inputs, outputs): (Vec<_>, Vec<_>) = edges.partition(|e| e.kind.is_input());
    json!({
        "name": m.controller,
        "status": m.status.to_string(),
        "healthy": health.is_healthy(),
        "failures_in_a_row": m.failures_in_a_row,
        "last_error": m.last_error,
        "queue": m.queue.as_ref().map(|q| json!({ "waiting": q.depth, "running": q.processing })),
        "counters": {
            "wakeups": m.wakeups,
            "reconciles": m.reconciles,
            "errors": m.errors,
            "terminal_errors": m.terminal_errors,
            "panics": m.panics,
            "restarts": m.restarts,
            "retries": m.retries,
            "requeues": m.requeues,
            "requeues_after": m.requeues_after,
            "reads": m.reads,
            "writes": m.writes,
            "active_workers": m.active_workers,
            "max_concurrent_reconciles": m.max_concurrent_reconciles,
        },
        "inputs": inputs.iter().map(|e| json!({
            "namespace": e.namespace, "type": e.resource_type, "id": e.id, "kind": e.kind.label(),
        })).collect::<Vec<_>>(),
        "outputs": outputs.iter().map(|e| json!({
            "type": e.resource_type, "kind": e.kind.label(),
        })).collect::<Vec<_>>(),
    })
}

async fn controllers(shared: web::Data<Shared>) -> HttpResponse {
    let metrics = shared.runtime.metrics().await;
    let graph = shared.runtime.graph().await;
    let all: Vec<Value> = metrics.iter().map(|m| controller_json(m, &graph)).collect();
    HttpResponse::Ok().json(all)
}

fn graph_json(graph: &DependencyGraph) -> Value {
    json!({
        "controllers": graph.controllers(),
        "resource_types": graph.resource_types(),
        "edges": graph.edges().iter().map(|e| json!({
            "controller": e.controller,
            "resource_type": e.resource_type,
            "namespace": e.namespace,
            "id": e.id,
            "kind": e.kind.label(),
            "direction": if e.kind.is_input() { "input" } else { "output" },
        })).collect::<Vec<_>>(),
    })
}

async fn graph(shared: web::Data<Shared>, query: Query) -> Result<HttpResponse, ApiError> {
    let graph = shared.runtime.graph().await;
    match query.get("format").map_or("json", String::as_str) {
        "json" => Ok(HttpResponse::Ok().json(graph_json(&graph))),
        "dot" => Ok(HttpResponse::Ok().content_type("text/vnd.graphviz").body(graph.to_dot())),
        "mermaid" => Ok(HttpResponse::Ok()
            .content_type("text/plain; charset=utf-8")
            .body(graph.to_mermaid())),
        "svg" => {
            let svg = web::block(move || super::svg::render(&graph))
                .await
                .map_err(|_| ApiError::internal("the graph layout failed"))??;
            Ok(HttpResponse::Ok().content_type("image/svg+xml").body(svg))
        }
        other => Err(ApiError::bad_request(format!(
            "unknown graph format {other:?} (json, dot, mermaid, svg)"
        ))),
    }
}
