//! The routes of the Kubernetes API: which handler answers which method and path.

use actix_web::web;

use super::shared::{Shared, TypePath};
use super::{discovery, health, list, openapi, review, status, write};

pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    for (path, methods) in [
        ("/version", vec![web::get().to(discovery::version)]),
        ("/healthz", vec![web::get().to(health::health)]),
        ("/livez", vec![web::get().to(health::health)]),
        ("/readyz", vec![web::get().to(health::health)]),
        ("/healthz/{check}", vec![web::get().to(health::health)]),
        ("/livez/{check}", vec![web::get().to(health::health)]),
        ("/readyz/{check}", vec![web::get().to(health::health)]),
        ("/api", vec![web::get().to(discovery::core)]),
        ("/api/{version}", vec![web::get().to(discovery::core_resources)]),
        ("/apis", vec![web::get().to(discovery::groups)]),
        ("/apis/{group}", vec![web::get().to(discovery::group)]),
        ("/apis/{group}/{version}", vec![web::get().to(discovery::resources)]),
        (
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            vec![web::post().to(review::access_review)],
        ),
        (
            "/apis/authentication.k8s.io/{version}/selfsubjectreviews",
            vec![web::post().to(review::self_review)],
        ),
    ] {
        add(cfg, path, methods);
    }
    // The core group's types under `/api/{version}`, the others' under
    // `/apis/{group}/{version}`; namespaced paths before cluster-scoped
    // ones (`.../namespaces/{ns}/{plural}` would otherwise read as the
    // status of an object of a type named `namespaces`).
    for prefix in ["/apis/{group}/{version}", "/api/{version}"] {
        for (tail, methods) in [
            (
                "/namespaces/{namespace}/{plural}",
                vec![
                    web::get().to(list::collection),
                    web::post().to(write::create),
                    web::delete().to(write::delete_collection),
                ],
            ),
            (
                "/namespaces/{namespace}/{plural}/{name}",
                vec![
                    web::get().to(list::get),
                    web::put().to(write::replace),
                    web::patch().to(write::patch),
                    web::delete().to(write::delete),
                ],
            ),
            (
                "/namespaces/{namespace}/{plural}/{name}/status",
                vec![
                    web::get().to(list::get_status),
                    web::put().to(write::replace_status),
                    web::patch().to(write::patch_status),
                ],
            ),
            (
                "/namespaces/{namespace}/{plural}/{name}/scale",
                vec![
                    web::get().to(write::get_scale),
                    web::put().to(write::replace_scale),
                    web::patch().to(write::patch_scale),
                ],
            ),
            (
                "/{plural}",
                vec![
                    web::get().to(list::collection),
                    web::post().to(write::create),
                    web::delete().to(write::delete_collection),
                ],
            ),
            (
                "/{plural}/{name}",
                vec![
                    web::get().to(list::get),
                    web::put().to(write::replace),
                    web::patch().to(write::patch),
                    web::delete().to(write::delete),
                ],
            ),
            (
                "/{plural}/{name}/status",
                vec![
                    web::get().to(list::get_status),
                    web::put().to(write::replace_status),
                    web::patch().to(write::patch_status),
                ],
            ),
            (
                "/{plural}/{name}/scale",
                vec![
                    web::get().to(write::get_scale),
                    web::put().to(write::replace_scale),
                    web::patch().to(write::patch_scale),
                ],
            ),
        ] {
            add(cfg, &format!("{prefix}{tail}"), methods);
        }
    }
    for (path, methods) in [
        ("/openapi/v2", vec![web::get().to(openapi::v2)]),
        ("/openapi/v3", vec![web::get().to(openapi::index)]),
        ("/openapi/v3/apis/{group}/{version}", vec![web::get().to(openapi::group_version)]),
        ("/openapi/v3/api/{version}", vec![web::get().to(openapi::group_version)]),
    ] {
        add(cfg, path, methods);
    }
    for path in ["/api/{tail:.*}", "/apis/{tail:.*}"] {
        cfg.service(web::resource(path).to(status::no_such_path));
    }
}

/// Serves `methods` at `path`; any other method is a `405` where the path
/// names something served (see [`other_method`]), else a `404`.
fn add(cfg: &mut web::ServiceConfig, path: &str, methods: Vec<actix_web::Route>) {
    {
        let mut resource = web::resource(path);
        for method in methods {
            resource = resource.route(method);
        }
        let other = if path.contains("{plural}") {
            web::to(other_method)
        } else {
            web::to(status::not_allowed)
        };
        cfg.service(resource.default_service(other));
    }
}

/// Another method than those served on a path that names a type: `404`
/// when the type is not served, is asked in the wrong scope, or has no
/// status (scale) subresource for a `.../status` (`.../scale`) path (the path names nothing
/// served), else `405`, as the apiserver answers.
async fn other_method(
    shared: web::Data<Shared>,
    path: web::Path<TypePath>,
    req: actix_web::HttpRequest,
) -> actix_web::HttpResponse {
    use actix_web::ResponseError;
    let path = path.into_inner();
    let scoped = if path.namespace.is_none() && path.name.is_none() {
        // `/apis/{g}/{v}/{plural}`: every namespace of a namespaced type.
        shared.exposed(&path.group, &path.version, &path.plural)
    } else {
        shared.scoped(&path).map(|(exposed, _)| exposed)
    };
    match scoped {
        Ok(exposed) if req.path().ends_with("/status") && !exposed.status => {
            write::no_status(&exposed).error_response()
        }
        Ok(exposed) if req.path().ends_with("/scale") && exposed.scale.is_none() => {
            write::no_scale(&exposed).error_response()
        }
        Ok(_) => status::not_allowed(req).await,
        Err(status) => status.error_response(),
    }
}
