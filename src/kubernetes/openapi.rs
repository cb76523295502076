//! OpenAPI v3: an index (`/openapi/v3`) and one document per group-version
//! (`/openapi/v3/apis/{group}/{version}`), enough for `kubectl apply` with
//! its default validation: kubectl finds the kind's PATCH operation, sees it
//! takes `fieldValidation`, and leaves validation to the server
//! (`fieldValidation=Strict`). The PATCH operation lists merge, JSON and
//! apply patches, not strategic merge: kubectl's client-side apply then
//! sends merge patches.

use std::hash::{Hash, Hasher};

use actix_web::{HttpResponse, web};
use serde_json::{Map, Value, json};

use super::registry::Exposed;
use super::shared::Shared;
use super::status::Status;

/// The document of one group-version.
fn document(shared: &Shared, group: &str, version: &str) -> Option<Value> {
    let registry = shared.registry();
    let types: Vec<&Exposed> = registry
        .types
        .iter()
        .map(|t| &**t)
        .filter(|t| t.group == group && t.version == version)
        .collect();
    if types.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for t in types {
        let reversed: Vec<&str> = t.group.split('.').rev().collect();
        let prefix = if t.group.is_empty() { "core".to_owned() } else { reversed.join(".") };
        let schema_name = format!("{prefix}.{}.{}", t.version, t.kind);
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let mut properties = t.body_properties();
        properties["apiVersion"] = json!({"type": "string"});
        properties["kind"] = json!({"type": "string"});
        properties["metadata"] =
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        let mut schema = json!({
            "type": "object",
            "description": format!("{} ({}), served by cosi-runtime", t.kind, t.resource_type),
            "properties": properties,
            "x-kubernetes-group-version-kind": [gvk],
        });
        if t.status {
            schema["properties"]["status"] = t.status_schema();
        }
        schemas.insert(schema_name.clone(), schema);
        let reference = json!({"$ref": format!("#/components/schemas/{schema_name}")});
        let ok = |code: &str| json!({code: {"description": "OK", "content": {"application/json": {"schema": reference}}}});
        let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string"}, "uniqueItems": true});
        let in_path = |name: &str| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}});
        let body = |types: &[&str]| {
            let content: Map<String, Value> = types
                .iter()
                .map(|ct| ((*ct).to_owned(), json!({"schema": {"type": "object"}})))
                .collect();
            json!({"content": content, "required": true})
        };
        let op = |action: &str,
                  suffix: &str,
                  responses: Value,
                  params: Vec<Value>,
                  request: Option<Value>| {
            let mut op = json!({
                "operationId": format!("{action}{}{suffix}", t.kind),
                "x-kubernetes-action": action,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": params,
                "responses": responses,
            });
            if let Some(request) = request {
                op["requestBody"] = request;
            }
            op
        };
        let base = t.collection_path();
        let scope: Vec<Value> =
            if t.cluster.is_some() { vec![] } else { vec![in_path("namespace")] };
        let mut post = scope.clone();
        post.extend([query("fieldValidation"), query("fieldManager"), query("dryRun")]);
        paths.insert(
            base.clone(),
            json!({
                "get": op("list", "", json!({"200": {"description": "OK"}}), scope.clone(), None),
                "post": op("post", "", ok("201"), post, Some(body(&["application/json"]))),
            }),
        );
        let mut item = scope.clone();
        item.push(in_path("name"));
        let with = |extra: &[&str]| {
            let mut params = item.clone();
            params.extend(extra.iter().map(|q| query(q)));
            params
        };
        // GET, PUT and PATCH of one object: the object's own operations,
        // and its status subresource's (named apart by `suffix`; its PATCH
        // takes `fieldValidation` too: kubectl looks at any PATCH of the
        // kind to decide whether the server validates).
        let item_ops = |suffix: &str| {
            json!({
                "get": op("get", suffix, ok("200"), with(&[]), None),
                "put": op(
                    "put",
                    suffix,
                    ok("200"),
                    with(&["fieldValidation", "fieldManager", "dryRun"]),
                    Some(body(&["application/json"])),
                ),
                "patch": op(
                    "patch",
                    suffix,
                    ok("200"),
                    with(&["fieldValidation", "fieldManager", "dryRun", "force"]),
                    Some(body(&[
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/apply-patch+yaml",
                    ])),
                ),
            })
        };
        let mut object = item_ops("");
        object["delete"] =
            op("delete", "", ok("200"), with(&["dryRun"]), Some(body(&["application/json"])));
        paths.insert(format!("{base}/{{name}}"), object);
        if t.status {
            paths.insert(format!("{base}/{{name}}/status"), item_ops("Status"));
        }
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v{}.{}", shared.server_version.0, shared.server_version.1)},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
}

fn hash(value: &Value) -> String {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    format!("{:016X}", hasher.finish())
}

/// `GET /openapi/v3`: where each group-version's document is.
pub(super) async fn index(shared: web::Data<Shared>) -> HttpResponse {
    let mut paths = Map::new();
    for (group, versions) in shared.registry().groups() {
        for version in versions {
            let Some(doc) = document(&shared, &group, &version) else { continue };
            let at = if group.is_empty() {
                format!("api/{version}")
            } else {
                format!("apis/{group}/{version}")
            };
            paths.insert(
                at.clone(),
                json!({"serverRelativeURL": format!("/openapi/v3/{at}?hash={}", hash(&doc))}),
            );
        }
    }
    HttpResponse::Ok().json(json!({"paths": paths}))
}

/// A group-version's document path: `group` empty for `/openapi/v3/api/{version}`.
#[derive(serde::Deserialize)]
pub(super) struct GroupVersion {
    #[serde(default)]
    group: String,
    version: String,
}

/// `GET /openapi/v3/apis/{group}/{version}` (`/openapi/v3/api/{version}`).
pub(super) async fn group_version(
    shared: web::Data<Shared>,
    path: web::Path<GroupVersion>,
) -> Result<HttpResponse, Status> {
    let GroupVersion { group, version } = path.into_inner();
    document(&shared, &group, &version).map(|doc| HttpResponse::Ok().json(doc)).ok_or_else(|| {
        Status::not_found(format!(
            "no OpenAPI document for {group}/{version}: nothing served there"
        ))
    })
}

/// The OpenAPI v2 document (as protobuf): only what kubectl 1.27–1.29 read
/// before an apply with validation, a PATCH operation per kind carrying
/// `x-kubernetes-group-version-kind` and a `fieldValidation` query
/// parameter, so that they leave validation to the server. No definitions:
/// clients then validate nothing themselves.
fn v2_protobuf(shared: &Shared) -> Vec<u8> {
    use super::protobuf::{field, message};
    let query = |name: &str| {
        // ParametersItem.parameter / Parameter.non_body_parameter /
        // NonBodyParameter.query_parameter_sub_schema {in, name, type}
        let sub = message([field(2, b"query"), field(4, name.as_bytes()), field(6, b"string")]);
        field(8, &field(1, &field(2, &field(3, &sub))))
    };
    let registry = shared.registry();
    let paths = registry.types.iter().map(|t| {
        let yaml = format!("group: {}\nkind: {}\nversion: {}\n", t.group, t.kind, t.version);
        // NamedAny {name, value: Any {yaml}}
        let gvk = message([
            field(1, b"x-kubernetes-group-version-kind"),
            field(2, &field(2, yaml.as_bytes())),
        ]);
        let operation = message([
            field(5, format!("patch{}", t.kind).as_bytes()),
            query("fieldValidation"),
            query("fieldManager"),
            query("dryRun"),
            field(13, &gvk),
        ]);
        let name = format!("{}/{{name}}", t.collection_path());
        // Paths.path: NamedPathItem {name, value: PathItem {patch}}
        field(2, &message([field(1, name.as_bytes()), field(2, &field(8, &operation))]))
    });
    let version = format!("v{}.{}", shared.server_version.0, shared.server_version.1);
    message([
        field(1, b"2.0"),
        field(2, &message([field(1, b"Kubernetes"), field(2, version.as_bytes())])),
        field(8, &message(paths)),
    ])
}

/// `GET /openapi/v2`: protobuf (what kubectl asks for), else the same as JSON.
pub(super) async fn v2(shared: web::Data<Shared>, req: actix_web::HttpRequest) -> HttpResponse {
    let accept = req
        .headers()
        .get(actix_web::http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if accept.contains("protobuf") {
        return HttpResponse::Ok()
            .content_type("application/octet-stream")
            .body(v2_protobuf(&shared));
    }
    let mut paths = Map::new();
    for t in &shared.registry().types {
        let query = |name: &str| json!({"name": name, "in": "query", "type": "string", "uniqueItems": true});
        paths.insert(
            format!("{}/{{name}}", t.collection_path()),
            json!({"patch": {
                "operationId": format!("patch{}", t.kind),
                "parameters": [query("fieldValidation"), query("fieldManager"), query("dryRun")],
                "responses": {"200": {"description": "OK"}},
                "x-kubernetes-group-version-kind": {"group": t.group, "kind": t.kind, "version": t.version},
            }}),
        );
    }
    HttpResponse::Ok().json(json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": format!("v{}.{}", shared.server_version.0, shared.server_version.1)},
        "paths": paths,
    }))
}
