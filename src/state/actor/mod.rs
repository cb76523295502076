//! [`StateActor`]: owns the [`Store`] and serializes every request to it.
//!
//! The actor itself is here: its state, how it dispatches a request (serve
//! it now, stage it, or park it), its passes over the inbox, and watches.
//! The commit pipeline of exclusive backends is in [`commit`]; the
//! protocol of its answers in [`response`].

use std::collections::VecDeque;
use std::fmt;

use actix::WeakRecipient;
use actix::prelude::*;

use super::apply::apply;
use super::backend::{Backend, Feed, FeedMessage};
use super::delivery::{Flush, Outbox};
use super::event::{Event, WatchId};
use super::inbox::{Inbox, Queued, ReplyTx};
use super::request::{StateReply, StateRequest, Subject, WatchSink, WatchStats};
use super::routes::Routes;
use super::store::Store;
use super::subscriptions::{Domain, Subscription, Watches};
use super::watch::WatchTarget;
use crate::Error;
use crate::resource::{AnyResource, Kind, Timestamp, validate};
use batch::{Batch, ReplySlotClose};
use response::{ReplySlot, Response};
use shared::{LaneFeed, StoreLane};

mod batch;
mod commit;
pub(crate) mod response;
mod shared;

pub use commit::CloseResponse;
pub use response::StateResponse;

/// The actor that owns the [`Store`] and the watches.
///
/// Every request is a message handled to completion before the next, so the
/// store has exactly one writer and watchers see changes in the order they
/// were applied. Writes to namespaces routed to a durable
/// [`Backend`] are staged and committed as one batch per mailbox drain; see
/// [`backend`](super::backend) for the commit contract.
pub struct StateActor {
    pub(crate) store: Store,
    pub(crate) watches: Watches,
    flush: Option<WeakRecipient<Flush>>,
    pub(crate) routes: Routes,
    pub(crate) backends: Vec<Box<dyn Backend>>,
    /// The shared stores (backends with a feed), one lane each.
    pub(crate) lanes: Vec<StoreLane>,
    /// The lane of each backend (`None`: an exclusive backend).
    lane_of: Vec<Option<usize>>,
    /// The shared stores' feeds, until the actor starts.
    feeds: Vec<(usize, FeedStream)>,
    /// Staged, not yet sent to a backend.
    staged: Batch,
    /// Whether a batch is on its way to a backend.
    committing: bool,
    /// Kinds with staged or committing writes: reads of them wait. Hashed
    /// by the hash each `Kind` carries (seeded per process and computed
    /// once, see `crate::hashing`), fed to Fx rather than SipHash: two
    /// lookups per durable write, and for a hash already computed SipHash's
    /// setup and finalization cost many times Fx's single multiply.
    dirty: rustc_hash::FxHashSet<Kind>,
    /// Requests that wait for the batch in flight.
    parked: VecDeque<(StateRequest, ReplySlot)>,
    commit_scheduled: bool,
    /// Replies to the requests of this pass, held until its batched events
    /// are sent (events reach their watchers before the writer hears back).
    held: Vec<(ReplyTx, Result<StateReply, Error>)>,
    /// The requests sent through [`State`](super::State) handles.
    pub(crate) inbox: Inbox,
    /// The time of this pass: its writes share one clock read.
    pass_time: Option<Timestamp>,
    closing: Option<ReplySlotClose>,
}

type FeedStream = std::pin::Pin<Box<dyn futures::Stream<Item = FeedMessage> + Send>>;

impl Default for StateActor {
    fn default() -> Self {
        StateActor::new()
    }
}

impl StateActor {
    /// A state actor over an empty in-memory store.
    pub fn new() -> Self {
        StateActor {
            store: Store::new(),
            watches: Watches::default(),
            flush: None,
            routes: Routes::default(),
            backends: Vec::new(),
            lanes: Vec::new(),
            lane_of: Vec::new(),
            feeds: Vec::new(),
            staged: Batch::default(),
            committing: false,
            dirty: rustc_hash::FxHashSet::default(),
            parked: VecDeque::new(),
            commit_scheduled: false,
            held: Vec::new(),
            inbox: Inbox::default(),
            pass_time: None,
            closing: None,
        }
    }

    /// A state actor over `store`, with backends and their routes, keeping
    /// `history` changes for watches that resume. `shared` are the backends
    /// with a feed: each one's index, feed, and the revision its snapshot
    /// was read at.
    pub(crate) fn with_parts(
        store: Store,
        routes: Routes,
        backends: Vec<Box<dyn Backend>>,
        shared: Vec<(usize, Feed, u64)>,
        history: usize,
    ) -> Self {
        let mut watches = Watches::with_history(history);
        watches.compacted_up_to(0, store.revision());
        let mut lane_of = vec![None; backends.len()];
        let mut lanes = Vec::with_capacity(shared.len());
        let mut feeds = Vec::with_capacity(shared.len());
        for (backend, feed, revision) in shared {
            let lane = lanes.len();
            lane_of[backend] = Some(lane);
            watches.compacted_up_to(lane + 1, revision);
            lanes.push(StoreLane::new(
                backend,
                backends[backend].describe(),
                feed.patience,
                revision,
            ));
            feeds.push((lane, feed.messages));
        }
        StateActor { store, watches, routes, backends, lanes, lane_of, feeds, ..StateActor::new() }
    }

    /// The revision domain of `namespace`, and its revision now: a shared
    /// store's own, or the state's (memory and exclusive backends).
    pub(crate) fn revision_of(&self, namespace: &str) -> (Domain, u64) {
        match self.lane_of_namespace(namespace) {
            Some(lane) => (lane + 1, self.lanes[lane].feed_rev),
            None => (0, self.store.revision()),
        }
    }

    /// The one revision domain every namespace lies in, and its revision
    /// now; `None` when namespaces are split between revision sequences
    /// (some on a shared store, others on another or in the state's own).
    ///
    /// Memory and exclusive backends share the state's counter (domain 0):
    /// without a shared store every namespace is in it. With one, all
    /// namespaces must go to that one store.
    pub(crate) fn sole_domain(&self) -> Option<(Domain, u64)> {
        let own = (0, self.store.revision());
        if self.lanes.is_empty() {
            return Some(own);
        }
        match self.routes.sole_destination() {
            Some(Some(backend)) => Some(match self.lane_of[backend] {
                Some(lane) => (lane + 1, self.lanes[lane].feed_rev),
                None => own,
            }),
            Some(None) => Some(own),
            None => self.routes.destinations().all(|b| self.lane_of[b].is_none()).then_some(own),
        }
    }

    /// Lists `resource_type` in every namespace, with the revision of
    /// [`sole_domain`](Self::sole_domain).
    fn list_all_namespaces(
        &self,
        resource_type: &str,
        query: &crate::resource::LabelQuery,
    ) -> Result<StateReply, Error> {
        let resources = self.store.list_all_namespaces(resource_type, query)?;
        let revision = self.sole_domain().map(|(_, revision)| revision);
        Ok(StateReply::ListedAllNamespaces { resources, revision })
    }

    /// Whether a read across namespaces must wait for the batch in flight:
    /// some kind has writes staged or committing (not yet readable), or
    /// requests wait before it. Only asked when one of those lists is not
    /// empty, so a write to memory pays two `is_empty` checks.
    fn across_must_wait(&self, req: &StateRequest) -> bool {
        let across = match req {
            StateRequest::ListAllNamespaces { resource_type, .. } => resource_type.as_str(),
            StateRequest::Watch { target: WatchTarget::AllNamespaces { kind, .. }, .. } => {
                kind.resource_type()
            }
            _ => return false,
        };
        !self.parked.is_empty() || self.dirty.iter().any(|k| k.resource_type() == across)
    }

    fn lane_of_namespace(&self, namespace: &str) -> Option<usize> {
        if self.lanes.is_empty() {
            return None;
        }
        self.routes.route(namespace).and_then(|b| self.lane_of[b])
    }

    fn watch(
        &mut self,
        target: WatchTarget,
        bootstrap: bool,
        sink: WatchSink,
        window: usize,
        resume_from: Option<u64>,
    ) -> Result<WatchId, Error> {
        let (domain, revision) = match &target {
            WatchTarget::Resource(p) => {
                validate::pointer(p)?;
                self.revision_of(p.namespace())
            }
            WatchTarget::Kind { kind, .. } => {
                validate::kind(kind)?;
                self.revision_of(kind.namespace())
            }
            WatchTarget::AllNamespaces { kind, .. } => {
                validate::resource_type(kind.resource_type())?;
                match (self.sole_domain(), resume_from) {
                    (Some(sole), _) => sole,
                    // Live events carry their own store's revision; only a
                    // resume needs one sequence.
                    (None, None) => (0, self.store.revision()),
                    (None, Some(from)) => {
                        return Err(Error::Compacted {
                            resource: format!("{} in every namespace", kind.resource_type()),
                            revision: from,
                            reason: "its namespaces lie in stores with revisions of their \
                                     own: a watch across them cannot resume; bootstrap again"
                                .into(),
                        });
                    }
                }
            }
        };
        let missed = match resume_from {
            Some(_) if bootstrap => {
                return Err(Error::InvalidInput {
                    resource: target.kind().to_string(),
                    reason: "a watch either bootstraps or resumes from a revision, not both".into(),
                });
            }
            Some(from) => Some(self.watches.missed(&target, from, revision, domain)?),
            None => None,
        };
        let id = self.watches.next_id();
        let shards = sink.shards;
        let mut outbox = Outbox::new(id, sink.sink, window, self.flush.clone(), sink.activity);
        let admits = |r: &AnyResource| shards.as_ref().is_none_or(|m| m.admits(r.pointer()));
        match (&target, missed) {
            (_, Some(missed)) => {
                for (event, rev) in missed {
                    if event.resource().is_none_or(&admits) {
                        outbox.publish(event, rev);
                    }
                }
            }
            (WatchTarget::Resource(ptr), None) => outbox.publish(
                match self.store.get(ptr) {
                    Ok(r) => Event::Created(r),
                    Err(_) => Event::Destroyed(AnyResource::tombstone(ptr.clone())),
                },
                revision,
            ),
            (WatchTarget::Kind { kind, query }, None) if bootstrap => {
                self.store.for_each_match(kind, query, |r| {
                    if admits(r) {
                        outbox.publish(Event::Created(r.clone()), revision)
                    }
                });
                outbox.publish(Event::Bootstrapped(kind.clone()), revision);
            }
            (WatchTarget::AllNamespaces { kind, query }, None) if bootstrap => {
                self.store.for_each_match_all_namespaces(kind.resource_type(), query, |r| {
                    if admits(r) {
                        outbox.publish(Event::Created(r.clone()), revision)
                    }
                });
                outbox.publish(Event::Bootstrapped(kind.clone()), revision);
            }
            (WatchTarget::Kind { .. } | WatchTarget::AllNamespaces { .. }, None) => {}
        }
        // The initial events come before the reply that names the watch.
        outbox.send_pending();
        self.watches.add(Subscription { id, target, outbox, shards });
        Ok(id)
    }

    /// The backend a request goes to (`None`: memory), and the kind it reads.
    fn route_of(&self, req: &StateRequest) -> (Option<usize>, Option<Kind>) {
        if self.routes.is_empty() {
            return (None, None);
        }
        let kind = match req.about() {
            Subject::Resource(p) => p.kind().clone(),
            Subject::Kind(k) => k,
            // Reads across namespaces: served by the actor itself (see
            // `across_must_wait`).
            Subject::AllNamespaces(_) | Subject::Watch(_) | Subject::State => return (None, None),
        };
        (self.routes.route(kind.namespace()), Some(kind))
    }

    /// Serves `req` now, stages it, or parks it until the batch in flight is done.
    fn dispatch(
        &mut self,
        req: StateRequest,
        ctx: &mut Context<Self>,
        slot: Option<ReplySlot>,
    ) -> Response {
        let (route, kind) = self.route_of(&req);
        let Some(backend) = route else {
            if !(self.dirty.is_empty() && self.parked.is_empty()) && self.across_must_wait(&req) {
                let slot = slot.unwrap_or_default();
                self.parked.push_back((req, slot.clone()));
                return Response::Later(slot);
            }
            return Response::Now(self.serve(req));
        };
        if let Some(lane) = self.lane_of[backend] {
            let revision = self.lanes[lane].feed_rev;
            return match self.dispatch_shared(lane, req, ctx, slot) {
                Response::Now(reply) => Response::Now(in_domain(reply, revision)),
                later => later,
            };
        }
        let dirty = kind.as_ref().is_some_and(|k| self.dirty.contains(k));
        let must_wait = !self.parked.is_empty()
            || (req.is_write() && self.committing)
            || (!req.is_write() && dirty);
        if must_wait {
            let slot = slot.unwrap_or_default();
            self.parked.push_back((req, slot.clone()));
            return Response::Later(slot);
        }
        if !req.is_write() {
            return Response::Now(self.serve(req));
        }
        // Formatted only if the commit fails.
        let about = req.about();
        // Readers outside the actor must not see a write before it is
        // committed: they ask the actor until the batch is done.
        self.store.set_readable(false);
        let now = self.now();
        let (reply, change) = match apply(&mut self.store, req, now) {
            Ok(applied) => applied,
            Err(other) => (self.serve(other), None),
        };
        let Some(change) = change else {
            if !dirty {
                self.refresh_view();
                return Response::Now(reply);
            }
            // Computed on staged data: it shares the batch's fate.
            let slot = slot.unwrap_or_default();
            self.staged.waiting.push((slot.clone(), about, reply));
            return Response::Later(slot);
        };
        if let Some(k) = kind {
            self.dirty.insert(k);
        }
        self.staged.changes.push((change, self.store.revision(), backend));
        let slot = slot.unwrap_or_default();
        self.staged.waiting.push((slot.clone(), about, reply));
        self.schedule_commit(ctx);
        Response::Later(slot)
    }

    /// Serves a request at once (memory namespaces, reads, watches).
    pub(crate) fn serve(&mut self, req: StateRequest) -> Result<StateReply, Error> {
        let now = self.now();
        let req = match apply(&mut self.store, req, now) {
            Ok((reply, change)) => {
                if let Some(change) = change {
                    self.watches.publish(&change, self.store.revision());
                }
                return reply;
            }
            Err(watch_request) => watch_request,
        };
        match req {
            StateRequest::Watch { target, bootstrap, sink, window, resume_from } => {
                self.watch(target, bootstrap, sink, window, resume_from).map(StateReply::Watching)
            }
            StateRequest::Unwatch { id } => {
                self.watches.remove(id);
                Ok(StateReply::Done)
            }
            StateRequest::ListAllNamespaces { resource_type, query } => {
                self.list_all_namespaces(&resource_type, &query)
            }
            StateRequest::CountWatches => Ok(StateReply::Count(self.watches.len())),
            StateRequest::WatchStats { id } => match self.watches.get_mut(id) {
                Some(sub) => {
                    let (in_flight, backlog) = sub.outbox.stats();
                    Ok(StateReply::Stats(WatchStats { in_flight, backlog }))
                }
                None => Err(Error::InvalidInput {
                    resource: id.to_string(),
                    reason: "no such watch (it ended, or its subscriber went away)".into(),
                }),
            },
            other => Err(Error::InvalidInput {
                resource: other.subject(),
                reason: "not a watch request".into(),
            }),
        }
    }

    /// The time of this pass (one clock read for all its writes).
    pub(crate) fn now(&mut self) -> Timestamp {
        *self.pass_time.get_or_insert_with(Timestamp::now)
    }

    /// Ends a pass: sends the batched events, then the replies held behind them.
    pub(crate) fn send_pending(&mut self) {
        self.pass_time = None;
        self.watches.send_pending();
        // Drained in place: the list keeps its capacity for the next pass.
        super::lane::deliver(&mut self.held);
    }

    /// Handles the requests one drain of the inbox took, as one pass: each
    /// is served (or staged, or parked) in order, then the pass's events go
    /// out, then the replies. Stops early if a request made the actor wait
    /// (it is closing): the rest go back to the inbox.
    fn handle_pass(&mut self, batch: &mut Vec<Queued>, ctx: &mut Context<Self>) {
        let mut requests = batch.drain(..);
        for (req, tx) in requests.by_ref() {
            match self.dispatch(req, ctx, None) {
                Response::Now(reply) => self.held.push((tx, reply)),
                Response::Later(slot) => slot.set(Some(tx.into_sender())),
            }
            if ctx.waiting() {
                break;
            }
        }
        if requests.len() > 0 {
            self.inbox.put_back(requests);
        }
        self.send_pending();
    }
}

impl Actor for StateActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        // Requests are awaited one per caller, so the mailbox is bounded by the
        // number of concurrent callers; never park them.
        ctx.set_mailbox_capacity(0);
        let weak: WeakRecipient<Flush> = ctx.address().downgrade().recipient();
        self.flush = Some(weak);
        ctx.spawn(DrainInbox::default());
        for (lane, feed) in std::mem::take(&mut self.feeds) {
            ctx.add_stream(futures::StreamExt::map(feed, move |msg| LaneFeed(lane, msg)));
        }
        self.refresh_view();
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.send_pending();
        self.inbox.close();
        self.store.set_readable(false);
    }
}

impl Handler<StateRequest> for StateActor {
    type Result = StateResponse;

    /// A request that came as an actix message is a pass of its own: its
    /// events go out before its reply.
    fn handle(&mut self, req: StateRequest, ctx: &mut Self::Context) -> Self::Result {
        let response = self.dispatch(req, ctx, None);
        self.send_pending();
        StateResponse(response)
    }
}

/// Drains the [`Inbox`] on every turn of the state actor (spawned at start):
/// each drain is one pass. It ends once the actor's mailbox has no sender
/// left (every [`State`](super::State) handle holds one), so that the actor
/// stops once the last handle is gone: a pending item would keep it alive
/// for good.
#[derive(Default)]
struct DrainInbox {
    /// The requests of one pass (its capacity kept from pass to pass).
    batch: Vec<Queued>,
}

impl ActorFuture<StateActor> for DrainInbox {
    type Output = ();

    fn poll(
        self: std::pin::Pin<&mut Self>,
        act: &mut StateActor,
        ctx: &mut Context<StateActor>,
        task: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        let this = self.get_mut();
        act.inbox.take(&mut this.batch, task.waker());
        if !this.batch.is_empty() {
            act.handle_pass(&mut this.batch, ctx);
        }
        if ctx.connected() {
            std::task::Poll::Pending
        } else {
            // No handle is left to send more (the actor's mailbox wakes it
            // when its last sender goes).
            std::task::Poll::Ready(())
        }
    }
}

/// A read's reply in a shared store's namespace: a list carries the
/// store's revision, not the state's own.
fn in_domain(reply: Result<StateReply, Error>, revision: u64) -> Result<StateReply, Error> {
    match reply {
        Ok(StateReply::Listed { resources, .. }) => Ok(StateReply::Listed { resources, revision }),
        other => other,
    }
}

impl actix::dev::MessageResponse<StateActor, StateRequest> for StateResponse {
    fn handle(
        self,
        _: &mut Context<StateActor>,
        tx: Option<actix::dev::OneshotSender<Result<StateReply, Error>>>,
    ) {
        match self.0 {
            Response::Now(reply) => {
                if let Some(tx) = tx {
                    let _ = tx.send(reply);
                }
            }
            Response::Later(slot) => slot.set(tx.map(super::lane::Sender::Actix)),
        }
    }
}

impl Handler<Flush> for StateActor {
    type Result = ();

    fn handle(&mut self, Flush(id): Flush, _: &mut Self::Context) {
        if let Some(sub) = self.watches.get_mut(id) {
            sub.outbox.flush();
            sub.outbox.send_pending();
        }
    }
}

impl fmt::Debug for StateActor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateActor")
            .field("resources", &self.store.len())
            .field("watches", &self.watches.len())
            .field("revision", &self.store.revision())
            .field("backends", &self.backends)
            .finish()
    }
}
