//! What one client of our HTTP servers (the admin endpoint, the Kubernetes
//! API) may cost: a bounded query string, and a bounded number of open
//! watches per client address. Shared by both servers; each exposes the
//! settings on its builder.
//!
//! A watch holds its slot for as long as its response body lives: the slot
//! goes back when the client disconnects, when the server cuts a client that
//! reads too slowly, or when the watch ends (timeout, error).

// The middleware and the counted body are the Kubernetes API's alone; the
// admin endpoint checks its limits in its handlers.
#![cfg_attr(not(feature = "kubernetes-api"), allow(unused_imports))]

use std::collections::HashMap;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::middleware::Next;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};

/// Default of the watches one client address may hold open at once.
pub const DEFAULT_MAX_WATCHES_PER_CLIENT: usize = 100;

/// Default of the longest query string accepted, in bytes. (Below it,
/// actix-web bounds the whole request head, request line and headers, at
/// 128 KiB and 96 headers, and answers 431 past that: a fixed limit.)
pub const DEFAULT_MAX_QUERY_BYTES: usize = 16 * 1024;

/// The limits of one server, and the watches open on it per client.
#[derive(Debug)]
pub(crate) struct ClientLimits {
    pub(crate) max_watches: usize,
    pub(crate) max_query: usize,
    open: Mutex<HashMap<Option<IpAddr>, usize>>,
}

/// Why a request was refused before its handler ran.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// 414: the query string is longer than the limit.
    QueryTooLong { length: usize, limit: usize },
    /// 429: the client already holds the most watches it may.
    TooManyWatches { client: Option<IpAddr>, limit: usize },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::QueryTooLong { length, limit } => {
                write!(
                    f,
                    "the query string is {length} bytes, more than the {limit} this server accepts"
                )
            }
            Refused::TooManyWatches { client, limit } => {
                let client = client.map_or("this client".to_owned(), |ip| ip.to_string());
                write!(
                    f,
                    "{client} already has {limit} watches open, the most one client may: close one, or raise the server's max_watches_per_client"
                )
            }
        }
    }
}

impl ClientLimits {
    pub(crate) fn new(max_watches: usize, max_query: usize) -> Arc<Self> {
        Arc::new(ClientLimits { max_watches, max_query, open: Mutex::default() })
    }

    /// Checks the query length (and, for a watch, takes a slot of the client).
    pub(crate) fn admit(
        self: &Arc<Self>,
        req: &HttpRequest,
        is_watch: bool,
    ) -> Result<Option<WatchSlot>, Refused> {
        let length = req.query_string().len();
        if length > self.max_query {
            return Err(Refused::QueryTooLong { length, limit: self.max_query });
        }
        if !is_watch {
            return Ok(None);
        }
        let client = req.peer_addr().map(|a| a.ip());
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(client).or_default();
        if *count >= self.max_watches {
            return Err(Refused::TooManyWatches { client, limit: self.max_watches });
        }
        *count += 1;
        Ok(Some(WatchSlot { limits: self.clone(), client }))
    }

    /// The watches `client` holds open now.
    #[cfg(test)]
    pub(crate) fn open_watches(&self, client: Option<IpAddr>) -> usize {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).get(&client).copied().unwrap_or(0)
    }

    #[cfg(feature = "kubernetes-api")]
    /// The middleware: refuses with `refuse` what the limits do not admit,
    /// and ties a watch's slot to its response body.
    pub(crate) async fn check(
        self: Arc<Self>,
        req: ServiceRequest,
        next: Next<BoxBody>,
        is_watch: fn(&ServiceRequest) -> bool,
        refuse: fn(&Refused) -> HttpResponse,
    ) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
        let watch = is_watch(&req);
        match self.admit(req.request(), watch) {
            Err(refused) => {
                tracing::debug!("refused {}: {refused}", req.path());
                let response = refuse(&refused);
                Ok(req.into_response(response))
            }
            Ok(None) => next.call(req).await,
            Ok(Some(slot)) => {
                let response = next.call(req).await?;
                Ok(response.map_body(|_, body| slot.hold(body)))
            }
        }
    }
}

/// One open watch of a client; returned when dropped.
#[derive(Debug)]
pub(crate) struct WatchSlot {
    limits: Arc<ClientLimits>,
    client: Option<IpAddr>,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut open = self.limits.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.client) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.client);
            }
        }
    }
}

#[cfg(feature = "kubernetes-api")]
impl WatchSlot {
    /// Ties the slot to `body`: returned when the body is dropped.
    pub(crate) fn hold(self, body: BoxBody) -> BoxBody {
        BoxBody::new(Holding { body, _slot: self })
    }
}

/// A response body that holds a watch slot while it lives.
#[cfg(feature = "kubernetes-api")]
struct Holding {
    body: BoxBody,
    _slot: WatchSlot,
}

#[cfg(feature = "kubernetes-api")]
impl MessageBody for Holding {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_next(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn slots_are_counted_per_client_and_returned_on_drop() {
        let limits = ClientLimits::new(2, 64);
        let from = |ip: &str| {
            TestRequest::get()
                .uri("/w")
                .peer_addr(format!("{ip}:1000").parse().unwrap())
                .to_http_request()
        };
        let a = "127.0.0.1".parse().ok();
        let first = limits.admit(&from("127.0.0.1"), true).unwrap();
        let second = limits.admit(&from("127.0.0.1"), true).unwrap();
        let refused = limits.admit(&from("127.0.0.1"), true).unwrap_err();
        assert_eq!(refused, Refused::TooManyWatches { client: a, limit: 2 });
        assert!(refused.to_string().starts_with("127.0.0.1 already has 2 watches open"));
        // Another client has its own count; plain requests take no slot.
        let other = limits.admit(&from("127.0.0.2"), true).unwrap();
        assert!(limits.admit(&from("127.0.0.1"), false).unwrap().is_none());
        assert_eq!(limits.open_watches(a), 2);
        drop(first);
        assert_eq!(limits.open_watches(a), 1);
        let third = limits.admit(&from("127.0.0.1"), true).unwrap();
        drop((second, third, other));
        assert_eq!(limits.open_watches(a), 0);
        assert!(limits.open.lock().unwrap().is_empty(), "no entry left behind");
    }

    #[test]
    fn a_long_query_is_refused() {
        let limits = ClientLimits::new(2, 16);
        let ok = TestRequest::get().uri("/x?labelSelector=a").to_http_request();
        assert!(limits.admit(&ok, false).is_ok());
        let long = TestRequest::get()
            .uri(&format!("/x?labelSelector={}", "a".repeat(20)))
            .to_http_request();
        let refused = limits.admit(&long, true).unwrap_err();
        assert_eq!(refused, Refused::QueryTooLong { length: 34, limit: 16 });
        assert_eq!(limits.open_watches(None), 0, "a refused watch takes no slot");
    }

    #[actix_rt::test]
    async fn offer_waits_for_a_reader_and_gives_up_on_one_that_stopped() {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(1);
        // A reader on the same thread: the turns let it drain the buffer.
        let reader = actix_rt::spawn(async move {
            let mut got = Vec::new();
            while let Some(v) = rx.recv().await {
                got.push(v);
            }
            got
        });
        for v in 0..100 {
            assert_eq!(offer(&tx, v).await, Ok(()));
        }
        drop(tx);
        assert_eq!(reader.await.unwrap(), (0..100).collect::<Vec<_>>());

        // Nobody reads: the buffer's one slot, then full after the turns.
        let (tx, rx) = tokio::sync::mpsc::channel::<u32>(1);
        assert_eq!(offer(&tx, 1).await, Ok(()));
        assert_eq!(offer(&tx, 2).await, Err(NotTaken::Full));
        drop(rx);
        assert_eq!(offer(&tx, 3).await, Err(NotTaken::Closed));
    }
}

/// Turns of the executor a full client buffer gets to drain before its
/// watch counts as too slow ([`offer`]).
const DRAIN_TURNS: usize = 64;

/// Why [`offer`] could not put an item into a client's buffer.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotTaken {
    /// Still full after [`DRAIN_TURNS`] turns: the client stopped reading
    /// (its connection takes no more either).
    Full,
    /// The client is gone.
    Closed,
}

/// Puts `item` into a watch client's bounded buffer. A full buffer gets a
/// few turns of the executor to drain into the connection first: the
/// response body runs on the same thread as the task that fills it, and
/// events that are ready at once come without a pause (a bootstrap of more
/// resources than the buffer holds, a burst of changes), so without them a
/// client that reads as fast as the events come would be cut off.
pub(crate) async fn offer<T>(tx: &tokio::sync::mpsc::Sender<T>, item: T) -> Result<(), NotTaken> {
    use tokio::sync::mpsc::error::TrySendError;
    let mut item = item;
    let mut turns = 0;
    loop {
        match tx.try_send(item) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Full(back)) if turns < DRAIN_TURNS => {
                turns += 1;
                item = back;
                tokio::task::yield_now().await;
            }
            Err(TrySendError::Full(_)) => return Err(NotTaken::Full),
            Err(TrySendError::Closed(_)) => return Err(NotTaken::Closed),
        }
    }
}
