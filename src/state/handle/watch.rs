//! The watches of a [`State`] handle: [`WatchOptions`], the watch requests,
//! and [`WatchStream`], a watch as a [`Stream`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix::prelude::*;
use futures::Stream;
use futures::channel::mpsc::{UnboundedReceiver, unbounded};
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
use futures::{FutureExt, StreamExt, stream::LocalBoxStream};

use super::State;
use crate::Error;
use crate::resource::{Kind, LabelQuery, Pointer};
use crate::state::delivery::{Sink, WatchEvent};
use crate::state::event::{Event, WatchId};
use crate::state::request::unexpected;
use crate::state::request::{StateReply, StateRequest, WatchSink, WatchStats};
use crate::state::watch::WatchTarget;

/// How many events a watch keeps in flight before it coalesces (see [`WatchEvent`]).
pub const DEFAULT_WATCH_WINDOW: usize = 1024;

/// Options of a kind watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WatchOptions {
    /// Deliver every existing match first (sorted by id), then
    /// [`Event::Bootstrapped`].
    pub bootstrap: bool,
    /// Flow-control window: events in flight before the backlog coalesces.
    pub window: usize,
    /// Deliver only the changes after this store revision (the
    /// [`WatchEvent::revision`] of the last event handled): no initial state,
    /// no bootstrap. [`Error::Compacted`] when the state no longer keeps
    /// them; bootstrap again then.
    pub resume_from: Option<u64>,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions { bootstrap: false, window: DEFAULT_WATCH_WINDOW, resume_from: None }
    }
}

/// `true` or `false`: bootstrap or not, other options at their defaults.
impl From<bool> for WatchOptions {
    fn from(bootstrap: bool) -> Self {
        WatchOptions { bootstrap, ..WatchOptions::default() }
    }
}

impl From<&WatchOptions> for WatchOptions {
    fn from(options: &WatchOptions) -> Self {
        options.clone()
    }
}

impl WatchOptions {
    /// Options with bootstrap on.
    pub fn bootstrap() -> Self {
        WatchOptions { bootstrap: true, ..WatchOptions::default() }
    }

    /// Options that resume after `revision` (see [`resume_from`](WatchOptions::resume_from)).
    pub fn resume_from(revision: u64) -> Self {
        WatchOptions { resume_from: Some(revision), ..WatchOptions::default() }
    }

    /// These options with another window.
    #[must_use]
    pub fn with_window(mut self, window: usize) -> Self {
        self.window = window.max(1);
        self
    }
}

impl State {
    pub(crate) async fn watch_sink(
        &self,
        target: WatchTarget,
        options: &WatchOptions,
        sink: WatchSink,
    ) -> Result<WatchId, Error> {
        let req = StateRequest::Watch {
            target,
            bootstrap: options.bootstrap,
            sink,
            window: options.window,
            resume_from: options.resume_from,
        };
        match self.send(req).await? {
            StateReply::Watching(id) => Ok(id),
            other => Err(unexpected(other, "watch")),
        }
    }

    /// Watches one resource: first its current state (`Created`, or `Destroyed`
    /// with a tombstone if it is missing), then every change, delivered to `recipient`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn watch(
        &self,
        ptr: &Pointer,
        recipient: Recipient<WatchEvent>,
    ) -> Result<WatchId, Error> {
        self.watch_sink(
            WatchTarget::Resource(ptr.clone()),
            &WatchOptions::default(),
            WatchSink::recipient(recipient),
        )
        .await
    }

    /// Watches every resource of `kind` matching `query`, delivered to
    /// `recipient`. `options` is a [`WatchOptions`], or just `true`/`false`
    /// for bootstrap: with bootstrap, existing matches come first as
    /// `Created` (sorted by id), then one `Bootstrapped`. With a non-empty
    /// query, an update that starts matching arrives as `Created` and one
    /// that stops matching as `Destroyed`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`]; [`Error::Compacted`] when resuming from a
    /// revision the state no longer keeps.
    pub async fn watch_kind(
        &self,
        kind: &Kind,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
        recipient: Recipient<WatchEvent>,
    ) -> Result<WatchId, Error> {
        self.watch_sink(
            WatchTarget::Kind { kind: kind.clone(), query },
            &options.into(),
            WatchSink::recipient(recipient),
        )
        .await
    }

    async fn stream(
        &self,
        target: WatchTarget,
        options: &WatchOptions,
    ) -> Result<WatchStream, Error> {
        let (tx, rx) = unbounded();
        let sink = WatchSink { sink: Sink::Channel(tx), activity: None, shards: None };
        let id = self.watch_sink(target, options, sink).await?;
        Ok(WatchStream {
            id,
            rx,
            revision: options.resume_from.unwrap_or(0),
            state: Some(self.0.requests.clone()),
        })
    }

    /// [`watch`](State::watch) as a [`Stream`] of [`Event`]s, for code that is not an actor.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn watch_stream(&self, ptr: &Pointer) -> Result<WatchStream, Error> {
        self.stream(WatchTarget::Resource(ptr.clone()), &WatchOptions::default()).await
    }

    /// [`watch_kind`](State::watch_kind) as a [`Stream`] of [`Event`]s.
    ///
    /// # Errors
    /// [`Error::InvalidInput`].
    pub async fn watch_kind_stream(
        &self,
        kind: &Kind,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
    ) -> Result<WatchStream, Error> {
        self.stream(WatchTarget::Kind { kind: kind.clone(), query }, &options.into()).await
    }

    /// Watches every resource of type `resource_type` matching `query` in
    /// every namespace, delivered to `recipient`: what
    /// [`watch_kind`](State::watch_kind) does for one namespace, with the
    /// same options, flow control and coalescing.
    ///
    /// # Guarantees
    /// - With bootstrap, every existing match comes first as `Created`,
    ///   sorted by (namespace, id), then one [`Event::Bootstrapped`] whose
    ///   kind has the type and the namespace
    ///   [`ALL_NAMESPACES`](crate::state::ALL_NAMESPACES) (`*`).
    /// - Live events follow for every namespace, those created after the
    ///   watch started included.
    /// - Resuming ([`WatchOptions::resume_from`]) delivers exactly the
    ///   changes after the revision when one revision sequence covers every
    ///   namespace: no namespace is routed to a shared store (memory and
    ///   exclusive backends such as redb share the state's revisions), or
    ///   every namespace goes to one shared store. That is when
    ///   [`list_all_namespaces_with_revision`](State::list_all_namespaces_with_revision)
    ///   answers a revision.
    ///
    /// # Caveats
    /// When namespaces lie in stores with revision sequences of their own,
    /// each event carries its own store's revision (they are not comparable
    /// across stores), and a resume is [`Error::Compacted`]: bootstrap instead.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad type; [`Error::Compacted`] as above,
    /// or when resuming from a revision the state no longer keeps.
    pub async fn watch_all_namespaces(
        &self,
        resource_type: &str,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
        recipient: Recipient<WatchEvent>,
    ) -> Result<WatchId, Error> {
        self.watch_sink(
            WatchTarget::all_namespaces(resource_type, query),
            &options.into(),
            WatchSink::recipient(recipient),
        )
        .await
    }

    /// [`watch_all_namespaces`](State::watch_all_namespaces) as a [`Stream`]
    /// of [`Event`]s.
    ///
    /// ```
    /// # use cosi_runtime::State;
    /// # use cosi_runtime::resource::{Resource, Spec, LabelQuery};
    /// # use cosi_runtime::state::{Event, WatchOptions};
    /// # use futures::StreamExt;
    /// # #[actix::main]
    /// # async fn main() -> Result<(), cosi_runtime::Error> {
    /// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Motd(String);
    /// # impl Spec for Motd { const TYPE: &'static str = "Motds.example.dev"; }
    /// let state = State::start();
    /// state.create(Resource::new("a", "x", Motd("hi".into())).into_any(), None).await?;
    /// let (items, revision) =
    ///     state.list_all_namespaces_with_revision(Motd::TYPE, &LabelQuery::all()).await?;
    /// assert_eq!(items.len(), 1);
    /// // Everything after the list, in every namespace, new ones included:
    /// let mut watch = state
    ///     .watch_all_namespaces_stream(Motd::TYPE, LabelQuery::all(), WatchOptions::resume_from(revision.unwrap()))
    ///     .await?;
    /// state.create(Resource::new("b", "y", Motd("hey".into())).into_any(), None).await?;
    /// let Some(Event::Created(r)) = watch.next().await else { panic!() };
    /// assert_eq!((r.pointer().namespace(), r.id()), ("b", "y"));
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`watch_all_namespaces`](State::watch_all_namespaces).
    pub async fn watch_all_namespaces_stream(
        &self,
        resource_type: &str,
        query: LabelQuery,
        options: impl Into<WatchOptions>,
    ) -> Result<WatchStream, Error> {
        self.stream(WatchTarget::all_namespaces(resource_type, query), &options.into()).await
    }

    /// Ends a watch (a watch also ends by itself once its subscriber is gone).
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    pub async fn unwatch(&self, id: WatchId) -> Result<(), Error> {
        self.done(StateRequest::Unwatch { id }).await
    }

    /// How many watches are registered on this state. A dropped
    /// [`WatchStream`] unregisters at once; an actor subscriber that stopped
    /// without [`unwatch`](State::unwatch) stays registered until a change
    /// it would have seen prunes it, or a later watch: a watch of a whole
    /// kind goes at the next watch of its kind, a watch of one resource at
    /// the next watch of that resource, or at the latest once its kind has
    /// had as many new watches of one resource as it held.
    ///
    /// # Errors
    /// [`Error::Unavailable`].
    pub async fn watch_count(&self) -> Result<usize, Error> {
        match self.send(StateRequest::CountWatches).await? {
            StateReply::Count(n) => Ok(n),
            other => Err(unexpected(other, "count_watches")),
        }
    }

    /// Flow-control figures of a watch: events in flight and backlog entries.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the watch has ended.
    pub async fn watch_stats(&self, id: WatchId) -> Result<WatchStats, Error> {
        match self.send(StateRequest::WatchStats { id }).await? {
            StateReply::Stats(s) => Ok(s),
            other => Err(unexpected(other, "watch_stats")),
        }
    }
}

/// A watch as a [`Stream`] of [`Event`]s.
///
/// Taking an item from the stream returns its flow-control slot. Dropping the
/// stream ends the watch.
pub struct WatchStream {
    id: WatchId,
    rx: UnboundedReceiver<WatchEvent>,
    revision: u64,
    state: Option<Recipient<StateRequest>>,
}

impl Drop for WatchStream {
    fn drop(&mut self) {
        // Unregister at once: a watch on a quiet kind would otherwise stay
        // until the next change of that kind.
        if let Some(state) = self.state.take() {
            state.do_send(StateRequest::Unwatch { id: self.id });
        }
    }
}

impl WatchStream {
    /// The watch id (for [`State::watch_stats`] or [`State::unwatch`]).
    pub fn id(&self) -> WatchId {
        self.id
    }

    /// The store revision this stream is caught up to: the
    /// [`WatchEvent::revision`] of the last event taken from it. Resume a new
    /// watch from here ([`WatchOptions::resume_from`]) after this one is dropped.
    pub fn revision(&self) -> u64 {
        self.revision
    }
}

/// A watch's events, each with the revision its stream had reached once it
/// was taken (what the servers write as an event's version).
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
pub(crate) type Revisioned = LocalBoxStream<'static, (Event, u64)>;

// The servers' watches (the admin endpoint's SSE, the Kubernetes API's watch).
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
impl State {
    /// A watch of `kind`'s resources matching `query`, or of resource `one`
    /// alone when given (`query` is then not read): the state sends it that
    /// resource's changes only, where a kind's watch would send every change
    /// of the kind to filter. A bootstrapping watch of one resource has the
    /// shape of a kind's bootstrap, which the servers' clients expect: the
    /// state starts it with the resource as it is (or a tombstone when there
    /// is none), which becomes its `Created` (or nothing), then
    /// [`Event::Bootstrapped`].
    ///
    /// # Errors
    /// As [`watch_kind_stream`](State::watch_kind_stream).
    pub(crate) async fn watch_revisioned(
        &self,
        kind: &Kind,
        query: &LabelQuery,
        one: Option<&Pointer>,
        options: &WatchOptions,
    ) -> Result<Revisioned, Error> {
        let Some(ptr) = one else {
            let stream = self.watch_kind_stream(kind, query.clone(), options.clone()).await?;
            return Ok(with_revisions(stream));
        };
        let events =
            with_revisions(self.stream(WatchTarget::Resource(ptr.clone()), options).await?);
        if !options.bootstrap {
            return Ok(events);
        }
        let kind = kind.clone();
        let bootstrap = events.into_future().map(move |(first, rest)| {
            let start = match first {
                Some((Event::Created(r), at)) => {
                    vec![(Event::Created(r), at), (Event::Bootstrapped(kind), at)]
                }
                Some((_, at)) => vec![(Event::Bootstrapped(kind), at)],
                None => Vec::new(),
            };
            futures::stream::iter(start).chain(rest)
        });
        Ok(bootstrap.flatten_stream().boxed_local())
    }
}

impl State {
    /// [`watch_all_namespaces_stream`](State::watch_all_namespaces_stream),
    /// each event with the revision the stream is caught up to once it is
    /// taken (what the Kubernetes API's all-namespace watches send).
    #[cfg(feature = "kubernetes-api")]
    pub(crate) async fn watch_revisioned_all(
        &self,
        resource_type: &str,
        query: &LabelQuery,
        options: &WatchOptions,
    ) -> Result<Revisioned, Error> {
        let stream =
            self.watch_all_namespaces_stream(resource_type, query.clone(), options.clone()).await?;
        Ok(with_revisions(stream))
    }
}

/// `stream`'s events, each with the revision it is caught up to once taken.
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
fn with_revisions(stream: WatchStream) -> Revisioned {
    futures::stream::unfold(stream, |mut stream| async move {
        let event = stream.next().await?;
        let revision = stream.revision();
        Some(((event, revision), stream))
    })
    .boxed_local()
}

impl fmt::Debug for WatchStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchStream").field("id", &self.id).finish()
    }
}

impl Stream for WatchStream {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        let polled = Pin::new(&mut self.rx).poll_next(cx);
        if let Poll::Ready(Some(msg)) = &polled {
            self.revision = self.revision.max(msg.revision());
        }
        polled.map(|m| m.map(WatchEvent::into_event))
    }
}
