//! `/healthz`, `/livez` and `/readyz`, as the apiserver answers them: `200
//! ok` (plain text) when every check passes, `500` naming the failed checks
//! otherwise; `?verbose` lists every check (`[+]ping ok`), `?exclude=NAME`
//! skips one, and `/livez/NAME` (likewise the others) runs one alone.
//!
//! The checks: `ping` (the server answers), `state` (the state actor
//! answers a request), and for `/readyz` also `shutdown` (the server is not
//! stopping). Like the apiserver's, these paths need no token.

use actix_web::{HttpRequest, HttpResponse, web};

use super::shared::Shared;

/// The endpoints, each with its checks.
const ENDPOINTS: [(&str, &[&str]); 3] = [
    ("healthz", &["ping", "state"]),
    ("livez", &["ping", "state"]),
    ("readyz", &["ping", "state", "shutdown"]),
];

/// Whether `path` is one of the health endpoints (or one of their checks).
pub(crate) fn is_health_path(path: &str) -> bool {
    let first = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    ENDPOINTS.iter().any(|(name, _)| *name == first)
}

async fn passes(shared: &Shared, check: &str) -> bool {
    match check {
        "ping" => true,
        "state" => shared.state.watch_count().await.is_ok(),
        "shutdown" => !shared.closing.is_stopping(),
        _ => false,
    }
}

/// `GET /{endpoint}` and `GET /{endpoint}/{check}`.
pub(super) async fn health(shared: web::Data<Shared>, req: HttpRequest) -> HttpResponse {
    let mut segments = req.path().trim_matches('/').split('/');
    let endpoint = segments.next().unwrap_or_default();
    let only = segments.next();
    let Some((_, checks)) = ENDPOINTS.iter().find(|(name, _)| *name == endpoint) else {
        return HttpResponse::NotFound().content_type("text/plain").body("404 page not found\n");
    };
    let query = web::Query::<Vec<(String, String)>>::from_query(req.query_string())
        .map(web::Query::into_inner)
        .unwrap_or_default();
    let verbose = query.iter().any(|(k, _)| k == "verbose");
    let excluded: Vec<&str> =
        query.iter().filter(|(k, _)| k == "exclude").map(|(_, v)| v.as_str()).collect();
    if let Some(one) = only {
        if !checks.contains(&one) {
            return HttpResponse::NotFound()
                .content_type("text/plain")
                .body("404 page not found\n");
        }
        return if passes(&shared, one).await {
            HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("ok")
        } else {
            HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body(format!("internal server error: {one} check failed\n"))
        };
    }
    let mut lines = String::new();
    let mut failed = false;
    for check in checks.iter() {
        if excluded.contains(check) {
            lines.push_str(&format!("[+]{check} excluded: ok\n"));
            continue;
        }
        if passes(&shared, check).await {
            lines.push_str(&format!("[+]{check} ok\n"));
        } else {
            failed = true;
            lines.push_str(&format!("[-]{check} failed: reason withheld\n"));
        }
    }
    if failed {
        return HttpResponse::InternalServerError()
            .content_type("text/plain; charset=utf-8")
            .body(format!("{lines}{endpoint} check failed\n"));
    }
    let body = if verbose { format!("{lines}{endpoint} check passed\n") } else { "ok".to_owned() };
    HttpResponse::Ok().content_type("text/plain; charset=utf-8").body(body)
}
