//! A watch as server-sent events, with a bounded buffer per client.
//!
//! A task takes the state's events as they come and puts SSE frames into a
//! bounded channel; the response body drains that channel as fast as the
//! client reads. The task never waits for the client: when the channel is
//! full the client is too slow, the task ends its watch, and the body closes
//! the connection after one last `error` event. The state's own flow control
//! ([`WatchOptions::window`](crate::state::WatchOptions)) never fills
//! because of a client.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::Bytes;
use futures::StreamExt;
use futures::future::Either;
use serde_json::Value;
use tokio::sync::mpsc;

use super::error::ApiError;
use super::shared::Shared;
use crate::http_limits::WatchSlot;
use crate::http_stop::{STOPPING, StopSignal};
use crate::resource::{AnyResource, Kind, LabelQuery, Pointer};
use crate::state::handle::Revisioned;
use crate::state::{Event, WatchOptions};

/// How often a quiet watch sends a comment, so that proxies and clients see
/// the connection alive.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One SSE frame: `event`, optional `id`, one `data` line.
fn frame(event: &str, id: Option<u64>, data: &serde_json::Value) -> Bytes {
    let id = id.map(|id| format!("id: {id}\n")).unwrap_or_default();
    Bytes::from(format!("event: {event}\n{id}data: {data}\n\n"))
}

/// The last frame of a watch when the server stops: an empty `id` clears
/// the client's last event id, so that an `EventSource` reconnects without
/// `Last-Event-ID` (from the start) rather than resume from a revision of
/// a state that will not be there.
fn stopping_frame() -> Bytes {
    let data = serde_json::json!({ "reason": format!("{STOPPING}: watch again from the start") });
    Bytes::from(format!("event: stopping\nid:\ndata: {data}\n\n"))
}

/// A resource as JSON: metadata and spec.
pub(super) fn resource_json(r: &AnyResource) -> Result<Value, ApiError> {
    let dynamic = r.to_dynamic().map_err(|e| ApiError::internal(e.to_string()))?;
    serde_json::to_value(dynamic).map_err(|e| ApiError::internal(e.to_string()))
}

fn event_frame(event: &Event, revision: u64) -> Bytes {
    let data = match event {
        Event::Bootstrapped(kind) => {
            Ok(serde_json::json!({ "namespace": kind.namespace(), "type": kind.resource_type() }))
        }
        Event::Created(r) | Event::Destroyed(r) | Event::Updated { new: r, .. } => resource_json(r),
    };
    match data {
        Ok(data) => frame(event.name(), (revision > 0).then_some(revision), &data),
        Err(e) => frame("error", None, &serde_json::json!({ "error": e.message() })),
    }
}

/// The revision a reconnecting client saw last: its `Last-Event-ID` header
/// (the `id` of the last event it got; every change carries its store
/// revision there).
///
/// # Errors
/// 400 when the header is there but not a revision.
pub(super) fn last_event_id(req: &actix_web::HttpRequest) -> Result<Option<u64>, ApiError> {
    let Some(value) = req.headers().get("last-event-id") else {
        return Ok(None);
    };
    value.to_str().ok().and_then(|v| v.trim().parse().ok()).map(Some).ok_or_else(|| {
        ApiError::bad_request(format!(
            "Last-Event-ID {value:?} is not a revision (the id of an event this endpoint sent)"
        ))
    })
}

/// Starts a watch of `kind` (only resource `one`, when given) and answers
/// with its event stream.
///
/// With `resume_from` (a reconnecting client's `Last-Event-ID`), the stream
/// carries only the changes after that revision, without the initial list.
/// When the state no longer keeps them, the stream starts with an event
/// `reset` and bootstraps as a new watch does.
pub(super) async fn watch(
    shared: &Shared,
    kind: Kind,
    query: LabelQuery,
    one: Option<Pointer>,
    resume_from: Option<u64>,
    slot: Option<WatchSlot>,
) -> Result<HttpResponse, ApiError> {
    let state = shared.runtime.state();
    let one = one.as_ref();
    let mut reset = None;
    let bootstrap = WatchOptions::bootstrap();
    let stream = match resume_from {
        Some(from) => {
            let options = WatchOptions { resume_from: Some(from), ..WatchOptions::default() };
            match state.watch_revisioned(&kind, &query, one, &options).await {
                Err(e) if e.is_compacted() => {
                    reset =
                        Some(frame("reset", None, &serde_json::json!({ "reason": e.to_string() })));
                    state.watch_revisioned(&kind, &query, one, &bootstrap).await?
                }
                resumed => resumed?,
            }
        }
        None => state.watch_revisioned(&kind, &query, one, &bootstrap).await?,
    };
    let (tx, rx) = mpsc::channel(shared.watch_buffer);
    if let Some(reset) = reset {
        // The channel is new and empty: there is room.
        let _ = tx.try_send(reset);
    }
    let overflowed = Arc::new(AtomicBool::new(false));
    let stop = shared.closing.stopping();
    actix_web::rt::spawn(forward(stream, tx, overflowed.clone(), shared.watch_buffer, stop));
    // The client's watch slot goes back, and the server's stop stops
    // waiting for this watch, when the body is dropped.
    let open = (slot, shared.closing.opened());
    let body = futures::stream::unfold(Some((rx, overflowed, open)), |state| async move {
        let (mut rx, overflowed, open) = state?;
        match rx.recv().await {
            Some(frame) => {
                Some((Ok::<_, std::convert::Infallible>(frame), Some((rx, overflowed, open))))
            }
            None if overflowed.load(Ordering::Acquire) => {
                let why = "the client read too slowly: its event buffer overflowed; watch again";
                Some((Ok(frame("error", None, &serde_json::json!({ "error": why }))), None))
            }
            None => None,
        }
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .force_close()
        .streaming(body))
}

/// Moves events from the state's watch into the client's buffer until the
/// client is gone, too slow, the watch ends, or the server stops (then a
/// last `stopping` frame).
async fn forward(
    mut stream: Revisioned,
    tx: mpsc::Sender<Bytes>,
    overflowed: Arc<AtomicBool>,
    buffer: usize,
    mut stop: StopSignal,
) {
    loop {
        let next = {
            let closed = std::pin::pin!(tx.closed());
            let stopped = std::pin::pin!(stop.requested());
            let item = std::pin::pin!(tokio::time::timeout(KEEP_ALIVE, stream.next()));
            match futures::future::select(futures::future::select(closed, stopped), item).await {
                Either::Left((Either::Left(_), _)) => return,
                Either::Left((Either::Right(_), _)) => {
                    let _ = crate::http_limits::offer(&tx, stopping_frame()).await;
                    return;
                }
                Either::Right((next, _)) => next,
            }
        };
        let frame = match next {
            Err(_) => Bytes::from_static(b": keep-alive\n\n"),
            Ok(None) => return,
            Ok(Some((event, revision))) => event_frame(&event, revision),
        };
        match crate::http_limits::offer(&tx, frame).await {
            Ok(()) => {}
            Err(crate::http_limits::NotTaken::Full) => {
                tracing::warn!(
                    "admin endpoint: a watch client fell {buffer} events behind; disconnecting it"
                );
                overflowed.store(true, Ordering::Release);
                // The watch ends before the client can see the end.
                drop(stream);
                return;
            }
            Err(crate::http_limits::NotTaken::Closed) => return,
        }
    }
}
