//! Watches: chunked JSON lines, one event each, from the state's kind watches.
//!
//! A task takes the state's events as they come and puts lines into a
//! bounded channel the response body drains as fast as the client reads.
//! The task never waits for the client: when the channel is full, the client
//! is too slow, and its watch ends (the state's own flow control never fills
//! because of a client; see `admin::sse` for the same design).
//!
//! Revisions never go backwards within one watch:
//! - the initial `ADDED` events of a bootstrap are sent in ascending revision
//!   (the state sends them by id);
//! - live events carry their resource's revision, and `DELETED` the
//!   destroy's (the state stamps it on the destroyed resource), and a
//!   backlog the state coalesced while the client was behind comes in
//!   ascending revision too (see [`state`](crate::state));
//! - one watch over several namespaces merges several streams, each in
//!   order: an event that would still go lower is raised to the highest
//!   revision sent so far.

use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpResponse;
use actix_web::web::{Bytes, BytesMut};
use futures::future::Either;
use futures::stream::{LocalBoxStream, SelectAll};
use futures::{FutureExt, Stream, StreamExt};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::json;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::object::{Object, ObjectMeta, Partial};
use super::pages::ListMeta;
use super::params::{FieldSelector, ListParams, Start};
use super::registry::Exposed;
use super::shared::Shared;
use super::status::Status;
use super::table::{Form, OneRow, Row, Table};
use crate::http_stop::{OpenWatch, STOPPING, StopSignal};
use crate::resource::{AnyResource, Id, Kind, Pointer};
use crate::state::handle::Revisioned;
use crate::state::{Event, WatchOptions};

/// One line: `{"type": ..., "object": ...}` and a newline, written straight
/// from `object` (no value tree).
fn line<T: Serialize>(kind: &str, object: &T) -> Bytes {
    /// The event as it is written.
    struct Line<'a, T> {
        kind: &'a str,
        object: &'a T,
    }
    impl<T: Serialize> Serialize for Line<'_, T> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let mut out = s.serialize_map(Some(2))?;
            out.serialize_entry("type", self.kind)?;
            out.serialize_entry("object", self.object)?;
            out.end()
        }
    }
    let mut text = Vec::with_capacity(512);
    if let Err(e) = serde_json::to_writer(&mut text, &Line { kind, object }) {
        text.clear();
        let status = Status::internal(e.to_string()).to_json();
        // A value of strings and numbers always serializes.
        let _ = serde_json::to_writer(&mut text, &Line { kind: "ERROR", object: &status });
    }
    text.push(b'\n');
    Bytes::from(text)
}

/// An event of stream `.0`, and that stream's revision once it is taken.
type Tagged = (usize, Event, u64);

/// A stream's events and revisions, tagged with its index.
fn tagged(index: usize, events: Revisioned) -> LocalBoxStream<'static, Tagged> {
    events.map(move |(event, revision)| (index, event, revision)).boxed_local()
}

/// Starts a watch of `exposed` in `namespaces` and answers with its stream.
pub(super) async fn watch(
    shared: &Shared,
    exposed: Arc<Exposed>,
    namespaces: Vec<String>,
    params: ListParams,
    form: Form,
) -> Result<HttpResponse, Status> {
    let options = match params.start {
        Start::Now => WatchOptions::bootstrap(),
        Start::After(revision) => WatchOptions::resume_from(revision),
    };
    let bootstrap = options.bootstrap;
    // A watch of one object by name (and no label selector) is a watch of
    // that resource: the state sends it that object's changes only, not
    // every change of the kind for this task to filter.
    let single = params.fields.name().filter(|_| params.labels.is_all()).map(Id::from);
    let (tx, rx) = mpsc::channel::<Bytes>(shared.watch_buffer);
    let mut streams = Vec::new();
    let all = namespaces.iter().any(|ns| ns == crate::state::ALL_NAMESPACES);
    if all {
        let opened = shared
            .state
            .watch_revisioned_all(&exposed.resource_type, &params.labels, &options)
            .await;
        match opened {
            Ok(stream) => streams.push(stream),
            Err(e) if e.is_compacted() => return Ok(expired(shared, tx, rx, &params, &e)),
            Err(e) => return Err(e.into()),
        }
    }
    for namespace in namespaces.iter().filter(|_| !all) {
        let kind = Kind::new(namespace, &exposed.resource_type);
        let one = single.as_ref().map(|id| Pointer::from_parts(kind.clone(), id.clone()));
        let opened =
            shared.state.watch_revisioned(&kind, &params.labels, one.as_ref(), &options).await;
        match opened {
            Ok(stream) => streams.push(stream),
            Err(e) if e.is_compacted() => return Ok(expired(shared, tx, rx, &params, &e)),
            Err(e) => return Err(e.into()),
        }
    }
    let forward = Forward {
        // Each stream is caught up to where it starts from.
        caught: vec![options.resume_from.unwrap_or(0); streams.len()],
        pending: vec![Some(Vec::new()); if bootstrap { streams.len() } else { 0 }],
        bootstrapping: if bootstrap { streams.len() } else { 0 },
        bootstrapped: None,
        initial: Vec::new(),
        held: Vec::new(),
        out: Vec::new(),
        initial_events_end: bootstrap && params.send_initial_events && params.bookmarks,
        last: 0,
        exposed,
        fields: params.fields.clone(),
        form,
        bookmarks: params.bookmarks,
        interval: shared.bookmark_interval,
        deadline: params.timeout.map(|t| Instant::now() + t),
        buffer: shared.watch_buffer,
        stop: shared.closing.stopping(),
        tx,
    };
    if streams.is_empty() {
        // No namespace to read (an all-namespaces watch when the type is in
        // none, or a field selector that admits none of them): the watch
        // stays open until its timeout like any quiet one. Ended at once,
        // clients (informers, kube-rs' watcher) would watch again and again
        // without a pause.
        actix_web::rt::spawn(forward.run(futures::stream::pending()));
    } else {
        let merged: SelectAll<_> =
            futures::stream::select_all(streams.into_iter().enumerate().map(|(i, s)| tagged(i, s)));
        actix_web::rt::spawn(forward.run(merged));
    }
    Ok(respond(rx, shared.closing.opened()))
}

/// A watch from a revision the state no longer keeps: HTTP 200 and the
/// error in the stream (clients read a watch's status from its events, and
/// relist on 410).
fn expired(
    shared: &Shared,
    tx: mpsc::Sender<Bytes>,
    rx: mpsc::Receiver<Bytes>,
    params: &ListParams,
    e: &crate::Error,
) -> HttpResponse {
    let status = Status::expired(format!(
        "too old resource version: {} ({e})",
        match params.start {
            Start::After(r) => r,
            Start::Now => 0,
        }
    ));
    // The channel is new and empty: there is room.
    let _ = tx.try_send(line("ERROR", &status.to_json()));
    drop(tx);
    respond(rx, shared.closing.opened())
}

/// Events the forwarding task takes in one go when they are ready at once.
const BATCH: usize = 64;

/// The most bytes of queued lines one chunk of the body joins: half of
/// actix-web's write buffer (32 KiB), which takes chunks until it is full,
/// so that lines leave the client's buffer (`watch_buffer` events) about
/// as late as one by one, and a client that stops reading is cut off as soon.
const CHUNK: usize = 16 * 1024;

/// The body: lines as they come (those already queued behind one go out in
/// the same chunk, nothing waits for more); it ends when the task ends
/// (timeout, a client too slow, the state gone), which closes the chunked
/// stream cleanly. `open` counts it open until the body is dropped.
fn respond(rx: mpsc::Receiver<Bytes>, open: OpenWatch) -> HttpResponse {
    let body = futures::stream::unfold((rx, open), |(mut rx, open)| async move {
        let line = rx.recv().await?;
        let Ok(next) = rx.try_recv() else {
            return Some((Ok::<_, std::convert::Infallible>(line), (rx, open)));
        };
        let mut chunk = BytesMut::with_capacity(CHUNK.min(16 * (line.len() + next.len())));
        chunk.extend_from_slice(&line);
        chunk.extend_from_slice(&next);
        while chunk.len() < CHUNK {
            match rx.try_recv() {
                Ok(line) => chunk.extend_from_slice(&line),
                Err(_) => break,
            }
        }
        Some((Ok(chunk.freeze()), (rx, open)))
    });
    HttpResponse::Ok()
        .content_type("application/json")
        .insert_header(("cache-control", "no-cache, private"))
        .force_close()
        .streaming(body)
}

/// The task between the state's streams and the client's buffer.
struct Forward {
    exposed: Arc<Exposed>,
    fields: FieldSelector,
    form: Form,
    bookmarks: bool,
    /// Send a bookmark annotated `k8s.io/initial-events-end` once every
    /// stream has bootstrapped.
    initial_events_end: bool,
    interval: Duration,
    deadline: Option<Instant>,
    buffer: usize,
    /// The server's stop: the watch ends with a 410.
    stop: StopSignal,
    tx: mpsc::Sender<Bytes>,
    /// Per stream, the revision it has caught up to.
    caught: Vec<u64>,
    /// Per stream, its initial events until its `Bootstrapped` (then `None`).
    pending: Vec<Option<Vec<AnyResource>>>,
    /// The initial events of every stream once the last one has
    /// bootstrapped, in revision order: sent by
    /// [`flush_initial`](Self::flush_initial) before anything else, waiting
    /// for room in the client's buffer (they are all ready at once, and may
    /// be many more than it holds).
    bootstrapped: Option<Vec<AnyResource>>,
    /// The initial events of the streams that have bootstrapped, while
    /// others still do (a watch over several namespaces has a stream each).
    initial: Vec<AnyResource>,
    /// The later events of the streams that have bootstrapped, while others
    /// still do: sent after every initial event, in revision order.
    held: Vec<(usize, Event, u64)>,
    /// Streams that have not bootstrapped yet.
    bootstrapping: usize,
    /// The highest revision sent.
    last: u64,
    /// Lines waiting for [`deliver`](Self::deliver).
    out: Vec<Bytes>,
}

/// Why the forwarding ends.
struct Done;

/// Why a watch ends before its events do.
enum Ended {
    ClientGone,
    ServerStopping,
}

impl Forward {
    async fn run(mut self, mut merged: impl Stream<Item = Tagged> + Unpin) {
        let mut next_bookmark = Instant::now() + self.interval;
        loop {
            let wake = match self.deadline {
                Some(deadline) if !self.bookmarks => deadline,
                Some(deadline) => deadline.min(next_bookmark),
                None if self.bookmarks => next_bookmark,
                // Nothing to wake for but events; a far tick is harmless.
                None => Instant::now() + Duration::from_secs(3600),
            };
            let next = {
                // The client gone or the server stopping end the watch.
                let closed = std::pin::pin!(self.tx.closed());
                let stop = std::pin::pin!(self.stop.requested());
                let timer = std::pin::pin!(tokio::time::sleep_until(wake));
                let item = merged.next();
                let ended = futures::future::select(closed, stop);
                match futures::future::select(ended, futures::future::select(timer, item)).await {
                    Either::Left((Either::Left(_), _)) => Err(Ended::ClientGone),
                    Either::Left((Either::Right(_), _)) => Err(Ended::ServerStopping),
                    Either::Right((Either::Left(_), _)) => Ok(None),
                    Either::Right((Either::Right((item, _)), _)) => Ok(Some(item)),
                }
            };
            let next = match next {
                Ok(next) => next,
                Err(Ended::ClientGone) => return,
                Err(Ended::ServerStopping) => return self.stopping().await,
            };
            // Every stream ended (the state is gone): what is queued still goes.
            let mut ended = false;
            match next {
                None => {
                    if self.deadline.is_some_and(|d| Instant::now() >= d) {
                        // The client's timeoutSeconds: end the stream cleanly.
                        return;
                    }
                    if self.bookmarks && Instant::now() >= next_bookmark {
                        next_bookmark = Instant::now() + self.interval;
                        self.bookmark(false);
                    }
                }
                Some(None) => ended = true,
                Some(Some((index, event, revision))) => {
                    self.event(index, event, revision);
                    // The events ready behind it, without a timer and a
                    // close check each (a batch is short: the timer's
                    // deadlines move by microseconds at most).
                    for _ in 0..BATCH {
                        if self.bootstrapped.is_some() {
                            break;
                        }
                        match merged.next().now_or_never() {
                            Some(Some((index, event, revision))) => {
                                self.event(index, event, revision);
                            }
                            Some(None) => {
                                ended = true;
                                break;
                            }
                            None => break,
                        }
                    }
                }
            }
            if self.bootstrapped.is_some() && self.flush_initial().await.is_err() {
                return;
            }
            if self.deliver().await.is_err() || ended {
                return;
            }
        }
    }

    /// The server stops: a 410 `Expired` after what is queued, then the
    /// end. A watch cannot resume across the restart: a state kept on disk
    /// comes back with no history to resume from, a state in memory comes
    /// back with its revisions started again (a client resuming from its
    /// last version would take the new state's revisions for the old
    /// one's). The 410 makes every client list again, whatever comes back.
    async fn stopping(&mut self) {
        let status = Status::expired(format!("{STOPPING}: list again"));
        self.out.push(line("ERROR", &status.to_json()));
        let _ = self.deliver().await;
    }

    /// Puts the queued lines into the client's buffer (a full one gets a
    /// few turns to drain into the connection, see
    /// [`offer`](crate::http_limits::offer)); a client that has stopped
    /// reading has its watch ended.
    async fn deliver(&mut self) -> Result<(), Done> {
        let mut out = std::mem::take(&mut self.out);
        for line in out.drain(..) {
            match crate::http_limits::offer(&self.tx, line).await {
                Ok(()) => {}
                Err(crate::http_limits::NotTaken::Full) => {
                    tracing::warn!(
                        "Kubernetes API: a watch client fell {} events behind; ending its watch",
                        self.buffer
                    );
                    return Err(Done);
                }
                Err(crate::http_limits::NotTaken::Closed) => return Err(Done),
            }
        }
        self.out = out;
        Ok(())
    }

    /// Queues a bookmark at the revision every stream has caught up to,
    /// unless some stream is behind what was sent already (it never goes
    /// backwards).
    fn bookmark(&mut self, initial_events_end: bool) {
        if self.bootstrapping > 0 {
            return;
        }
        let Some(&revision) = self.caught.iter().min() else {
            return;
        };
        if revision < self.last {
            return;
        }
        self.last = revision;
        let mut metadata = json!({ "resourceVersion": revision.to_string() });
        if initial_events_end {
            metadata["annotations"] = json!({ "k8s.io/initial-events-end": "true" });
        }
        let object = json!({
            "kind": self.exposed.kind,
            "apiVersion": self.exposed.api_version(),
            "metadata": metadata,
        });
        self.out.push(line("BOOKMARK", &object));
    }

    /// Sends the initial events of every stream, once the last has
    /// bootstrapped (then the initial-events-end bookmark, then the events
    /// held meanwhile), a batch at a time through
    /// [`deliver`](Self::deliver): an initial set larger than the buffer
    /// reaches a client that reads, one that stops reading is cut off as
    /// with any other events.
    async fn flush_initial(&mut self) -> Result<(), Done> {
        self.deliver().await?;
        let initial = self.bootstrapped.take().unwrap_or_default();
        for r in initial {
            self.change("ADDED", &r, r.metadata().revision());
            if self.out.len() >= BATCH {
                self.deliver().await?;
            }
        }
        if self.initial_events_end {
            self.bookmark(true);
        }
        // The streams' own orders, merged (a stable sort of ordered runs).
        let mut held = std::mem::take(&mut self.held);
        held.sort_by_key(|(_, _, revision)| *revision);
        for (index, event, revision) in held {
            self.event(index, event, revision);
            if self.out.len() >= BATCH {
                self.deliver().await?;
            }
        }
        self.deliver().await
    }

    /// Queues what `event` of stream `index` shows the client. The initial
    /// events of all streams wait for the last `Bootstrapped` and go out
    /// together in revision order (each object with its own revision, as a
    /// client caches it for its next update), and so do, after them, the
    /// later events of the streams done first.
    fn event(&mut self, index: usize, event: Event, revision: u64) {
        self.caught[index] = revision;
        if let Some(Some(initial)) = self.pending.get_mut(index) {
            match event {
                Event::Created(r) => {
                    initial.push(r);
                    return;
                }
                Event::Bootstrapped(_) => {
                    let done = self.pending[index].take().unwrap_or_default();
                    self.initial.extend(done);
                    self.bootstrapping -= 1;
                    if self.bootstrapping == 0 {
                        let mut all = std::mem::take(&mut self.initial);
                        all.sort_by_key(|r| r.metadata().revision());
                        // Sent by the task before its next event (`flush_initial`).
                        self.bootstrapped = Some(all);
                    }
                    return;
                }
                // Not during a bootstrap: the state sends every initial event first.
                _ => {}
            }
        }
        if self.bootstrapping > 0 || self.bootstrapped.is_some() {
            self.held.push((index, event, revision));
            return;
        }
        match event {
            Event::Created(r) => {
                let own = r.metadata().revision();
                self.change("ADDED", &r, own)
            }
            Event::Updated { new, .. } => {
                let own = new.metadata().revision();
                self.change("MODIFIED", &new, own)
            }
            Event::Destroyed(r) => {
                let own = r.metadata().revision().max(revision);
                self.change("DELETED", &r, own)
            }
            Event::Bootstrapped(_) => {}
        }
    }

    /// Queues the line of a change, unless the field selector leaves it out.
    fn change(&mut self, kind: &str, resource: &AnyResource, own: u64) {
        if let Some(line) = self.render(kind, resource, own) {
            self.out.push(line);
        }
    }

    /// The line of a change (`None`: the field selector leaves it out).
    fn render(&mut self, kind: &str, resource: &AnyResource, own: u64) -> Option<Bytes> {
        if !self.fields.matches_object(&self.exposed, resource) {
            return None;
        }
        let revision = own.max(self.last);
        self.last = revision;
        if self.form == Form::Metadata {
            let partial = Partial(ObjectMeta::of(&self.exposed, resource, revision));
            return Some(line(kind, &partial));
        }
        let object = match Object::new(&self.exposed, resource, revision) {
            Ok(object) => object,
            Err(status) => return Some(line("ERROR", &status.to_json())),
        };
        Some(if self.form == Form::Table {
            let row = Row::new(&object, std::time::SystemTime::now());
            let table =
                Table { exposed: &self.exposed, rows: OneRow(row), meta: ListMeta::at(revision) };
            line(kind, &table)
        } else {
            line(kind, &object)
        })
    }
}
