//! `/healthz` and `/readyz` in the Kubernetes probe text format, and `/metrics`.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::Duration;

use actix_web::{HttpResponse, web};

use super::error::ApiError;
use super::shared::Shared;
use crate::controller::ControllerStatus;

/// How long the actors get to answer a liveness check.
const ANSWER_WITHIN: Duration = Duration::from_secs(1);

pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    let not_allowed = || web::to(super::error::not_allowed);
    cfg.service(
        web::resource("/metrics").route(web::get().to(metrics)).default_service(not_allowed()),
    )
    .service(web::resource("/healthz").route(web::get().to(healthz)).default_service(not_allowed()))
    .service(
        web::resource("/healthz/{check}")
            .route(web::get().to(healthz_one))
            .default_service(not_allowed()),
    )
    .service(web::resource("/readyz").route(web::get().to(readyz)).default_service(not_allowed()))
    .service(
        web::resource("/readyz/{check}")
            .route(web::get().to(readyz_one))
            .default_service(not_allowed()),
    );
}

async fn metrics(shared: web::Data<Shared>) -> Result<HttpResponse, ApiError> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &shared.registry)
        .map_err(|_| ApiError::internal("the metrics could not be encoded"))?;
    Ok(HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(text))
}

/// One check's verdict: `Err` carries why it failed.
type Verdict = Result<(), String>;

async fn liveness(shared: &Shared) -> Vec<(&'static str, Verdict)> {
    let supervisor = match tokio::time::timeout(ANSWER_WITHIN, shared.runtime.metrics()).await {
        Ok(_) => Ok(()),
        Err(_) => Err(format!("the supervisor did not answer within {ANSWER_WITHIN:?}")),
    };
    let state =
        match tokio::time::timeout(ANSWER_WITHIN, shared.runtime.state().watch_count()).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("the state did not answer within {ANSWER_WITHIN:?}")),
        };
    vec![("ping", Ok(())), ("supervisor", supervisor), ("state", state)]
}

async fn readiness(shared: &Shared) -> Vec<(&'static str, Verdict)> {
    let mut checks = liveness(shared).await;
    let running = match shared.runtime.stop_reason() {
        None => Ok(()),
        Some(reason) => Err(format!("the runtime stopped: {reason:?}")),
    };
    // Settled now counts too (the watcher task may not have run yet).
    if !shared.bootstrapped.load(Ordering::Acquire)
        && tokio::time::timeout(Duration::ZERO, shared.runtime.settled()).await.is_ok()
    {
        shared.bootstrapped.store(true, Ordering::Release);
    }
    let bootstrapped = if shared.bootstrapped.load(Ordering::Acquire) {
        Ok(())
    } else {
        Err("the runtime has not settled yet".to_owned())
    };
    let metrics = shared.runtime.metrics().await;
    let missing: Vec<&str> = shared
        .expected
        .iter()
        .filter(|name| !metrics.iter().any(|m| &m.controller == *name))
        .map(String::as_str)
        .collect();
    let failed: Vec<&str> = metrics
        .iter()
        .filter(|m| m.status == ControllerStatus::Failed)
        .map(|m| m.controller.as_str())
        .collect();
    let controllers = match (missing.is_empty(), failed.is_empty()) {
        (true, true) => Ok(()),
        (false, _) => Err(format!("not registered: {}", missing.join(", "))),
        (true, false) => Err(format!("failed: {}", failed.join(", "))),
    };
    checks.extend([
        ("running", running),
        ("bootstrapped", bootstrapped),
        ("controllers", controllers),
    ]);
    checks
}

/// The Kubernetes probe answer: `ok`, or one line per check.
fn answer(
    probe: &str,
    checks: Vec<(&'static str, Verdict)>,
    query: &HashMap<String, String>,
) -> HttpResponse {
    let excluded: Vec<&str> = query
        .iter()
        .filter(|(k, _)| k.as_str() == "exclude")
        .flat_map(|(_, v)| v.split(','))
        .collect();
    let checks: Vec<_> = checks.into_iter().filter(|(n, _)| !excluded.contains(n)).collect();
    let passed = checks.iter().all(|(_, v)| v.is_ok());
    let verbose = query.contains_key("verbose");
    let mut body = String::new();
    if passed && !verbose {
        body.push_str("ok");
    } else {
        for (name, verdict) in &checks {
            let _ = match verdict {
                Ok(()) => writeln!(body, "[+]{name} ok"),
                Err(why) => writeln!(body, "[-]{name} failed: {why}"),
            };
        }
        for name in &excluded {
            let _ = writeln!(body, "[+]{name} excluded: ok");
        }
        let _ = write!(body, "{probe} check {}", if passed { "passed" } else { "failed" });
    }
    let mut response = if passed { HttpResponse::Ok() } else { HttpResponse::ServiceUnavailable() };
    response.content_type("text/plain; charset=utf-8").body(body)
}

/// One named check, or 404.
fn only(
    checks: Vec<(&'static str, Verdict)>,
    name: &str,
) -> Result<Vec<(&'static str, Verdict)>, ApiError> {
    let known: Vec<&str> = checks.iter().map(|(n, _)| *n).collect();
    let one: Vec<_> = checks.into_iter().filter(|(n, _)| *n == name).collect();
    if one.is_empty() {
        return Err(ApiError::not_found(format!(
            "no check {name:?} (checks: {})",
            known.join(", ")
        )));
    }
    Ok(one)
}

type Query = web::Query<HashMap<String, String>>;

async fn healthz(shared: web::Data<Shared>, query: Query) -> HttpResponse {
    answer("healthz", liveness(&shared).await, &query)
}

async fn readyz(shared: web::Data<Shared>, query: Query) -> HttpResponse {
    answer("readyz", readiness(&shared).await, &query)
}

async fn healthz_one(
    shared: web::Data<Shared>,
    check: web::Path<String>,
    query: Query,
) -> Result<HttpResponse, ApiError> {
    Ok(answer("healthz", only(liveness(&shared).await, &check)?, &query))
}

async fn readyz_one(
    shared: web::Data<Shared>,
    check: web::Path<String>,
    query: Query,
) -> Result<HttpResponse, ApiError> {
    Ok(answer("readyz", only(readiness(&shared).await, &check)?, &query))
}
