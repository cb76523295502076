//! The routes of the Kubernetes API: which handler answers which method and path.

use actix_web::web;

use super::shared::Shared;
use super::{discovery, health, list, openapi, review, status, write};

pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    let not_allowed = || web::to(status::not_allowed);
    for (path, methods) in [
        ("/version", vec![web::get().to(discovery::version)]),
        ("/healthz", vec![web::get().to(health::health)]),
        ("/livez", vec![web::get().to(health::health)]),
        ("/readyz", vec![web::get().to(health::health)]),
        ("/healthz/{check}", vec![web::get().to(health::health)]),
        ("/livez/{check}", vec![web::get().to(health::health)]),
        ("/readyz/{check}", vec![web::get().to(health::health)]),
        ("/api", vec![web::get().to(discovery::core)]),
        ("/api/v1", vec![web::get().to(discovery::core_resources)]),
        ("/api/v1/namespaces", vec![web::get().to(discovery::namespaces)]),
        ("/api/v1/namespaces/{namespace}", vec![web::get().to(discovery::namespace)]),
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
        ("/apis/{group}/{version}/{plural}", vec![web::get().to(list::all_namespaces)]),
        (
            "/apis/{group}/{version}/namespaces/{namespace}/{plural}",
            vec![
                web::get().to(list::namespaced),
                web::post().to(write::create),
                web::delete().to(write::delete_collection),
            ],
        ),
        (
            "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}",
            vec![
                web::get().to(list::get),
                web::put().to(write::replace),
                web::patch().to(write::patch),
                web::delete().to(write::delete),
            ],
        ),
        (
            "/apis/{group}/{version}/namespaces/{namespace}/{plural}/{name}/status",
            vec![
                web::get().to(list::get_status),
                web::put().to(write::replace_status),
                web::patch().to(write::patch_status),
            ],
        ),
        ("/openapi/v2", vec![web::get().to(openapi::v2)]),
        ("/openapi/v3", vec![web::get().to(openapi::index)]),
        ("/openapi/v3/apis/{group}/{version}", vec![web::get().to(openapi::group_version)]),
    ] {
        let mut resource = web::resource(path);
        for method in methods {
            resource = resource.route(method);
        }
        let other = if path.ends_with("/status") {
            web::to(status_other_method)
        } else if path == "/apis/{group}/{version}/{plural}" {
            web::to(collection_other_method)
        } else {
            not_allowed()
        };
        cfg.service(resource.default_service(other));
    }
    for path in ["/api/{tail:.*}", "/apis/{tail:.*}"] {
        cfg.service(web::resource(path).to(status::no_such_path));
    }
}

/// Another method than GET, PUT, PATCH on `.../{name}/status`: `405` where
/// the type has a status subresource, `404` where it has none (the path
/// names nothing served), as for any method there.
async fn status_other_method(
    shared: web::Data<Shared>,
    path: web::Path<(String, String, String, String, String)>,
    req: actix_web::HttpRequest,
) -> actix_web::HttpResponse {
    use actix_web::ResponseError;
    let (group, version, _, plural, _) = path.into_inner();
    match shared.exposed(&group, &version, &plural) {
        Ok(exposed) if exposed.status => status::not_allowed(req).await,
        Ok(exposed) => write::no_status(&exposed).error_response(),
        Err(status) => status.error_response(),
    }
}

/// Another method than GET on `/apis/{group}/{version}/{plural}`: `405`
/// for a type served (its objects are written in their namespace), `404`
/// for one that is not, as the apiserver answers a path that names nothing.
async fn collection_other_method(
    shared: web::Data<Shared>,
    path: web::Path<(String, String, String)>,
    req: actix_web::HttpRequest,
) -> actix_web::HttpResponse {
    use actix_web::ResponseError;
    let (group, version, plural) = path.into_inner();
    match shared.exposed(&group, &version, &plural) {
        Ok(_) => status::not_allowed(req).await,
        Err(status) => status.error_response(),
    }
}
