//! The state actor's side of an etcd state: writes as transactions, answers
//! once the change feed has applied them, conflicts re-run on fresh data.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use etcd_client::{Client, Compare, CompareOp, KvClient, Txn, TxnOp, TxnOpResponse, TxnResponse};
use futures::channel::mpsc;

use super::super::actor::{ReplySlot, Response, StateActor, StateReply, StateRequest, answer};
use super::super::backend::{Precondition, WriteOp};
use super::super::store::Change;
use super::EtcdConfig;
use super::claims::{Claims, Fence};
use super::feed::{self, Feed, FeedCommand, FeedEvent};
use super::keys::{self, Keys};
use crate::resource::{AnyResource, Pointer, Timestamp};
use crate::{Error, StorageFailure};

/// How many times one write re-runs after conflicts before it gives up with
/// [`StorageFailure::Conflict`] (only under a storm of writes to one resource).
const MAX_ATTEMPTS: u32 = 100;

/// A write waiting for its turn, or for a retry.
pub(crate) struct Queued {
    req: StateRequest,
    slot: ReplySlot,
    attempts: u32,
    /// When it started waiting for fresh data (a retry).
    since: Option<Instant>,
}

/// A committed write waiting for the feed to apply it.
struct Acked {
    slot: ReplySlot,
    reply: Result<StateReply, Error>,
    pointer: Pointer,
    since: Instant,
    revision: u64,
}

/// gRPC's `InvalidArgument`, `FailedPrecondition` and `OutOfRange`: etcd
/// refused the request itself (too large, too many operations), so sending
/// it again cannot help.
const REFUSED_CODES: [i32; 3] = [3, 9, 11];

/// The typed error of a failed etcd request about `ptr`.
fn request_error(ptr: &Pointer, store: &str, e: &etcd_client::Error) -> Error {
    if let etcd_client::Error::GRpcStatus(status) = e
        && REFUSED_CODES.contains(&i32::from(status.code()))
    {
        return Error::InvalidInput {
            resource: ptr.to_string(),
            reason: format!("{store} refused the write: {}", status.message()),
        };
    }
    super::unavailable(ptr.to_string(), format!("{store}: {e}"))
}

/// The etcd side of a state actor.
pub(crate) struct Shared {
    pub(crate) client: Client,
    /// Cloned per write (cheaper than the whole client).
    kv: KvClient,
    pub(crate) keys: Keys,
    pub(crate) config: EtcdConfig,
    /// Everything up to this etcd revision is in the cache.
    feed_rev: u64,
    /// Resources with a write in flight, and the writes queued behind it.
    busy: HashMap<Pointer, VecDeque<Queued>>,
    /// Committed writes by revision, answered once the feed reaches it.
    acked: BTreeMap<u64, Vec<Acked>>,
    /// Conflicted writes by the revision etcd was at, re-run once the feed reaches it.
    retries: BTreeMap<u64, Vec<Queued>>,
    progress: Option<mpsc::UnboundedSender<FeedCommand>>,
    feed_task: Option<actix_rt::task::JoinHandle<()>>,
    /// A check of overdue writes is scheduled.
    watchdog: bool,
    /// Whether the feed is connected.
    available: bool,
    pub(crate) claims: Claims,
}

impl Shared {
    pub(crate) fn new(client: Client, keys: Keys, config: EtcdConfig, revision: u64) -> Self {
        Shared {
            kv: client.kv_client(),
            client,
            keys,
            config,
            feed_rev: revision,
            busy: HashMap::new(),
            acked: BTreeMap::new(),
            retries: BTreeMap::new(),
            progress: None,
            feed_task: None,
            watchdog: false,
            available: true,
            claims: Claims::default(),
        }
    }

    /// Starts the change feed; its messages go to the state actor's stream.
    pub(crate) fn start_feed(&mut self) -> mpsc::UnboundedReceiver<Feed> {
        let (tx, rx) = mpsc::unbounded();
        let (progress_tx, progress_rx) = mpsc::unbounded();
        self.progress = Some(progress_tx);
        let run = feed::run(
            self.client.clone(),
            self.keys.clone(),
            self.feed_rev + 1,
            tx,
            progress_rx,
            self.config.request_timeout,
        );
        self.feed_task = Some(actix_rt::spawn(run));
        rx
    }

    /// Stops the change feed and gives up the claims (closing); resolves
    /// once etcd revoked the lease (or did not answer in time).
    pub(crate) fn stop(&mut self) -> impl Future<Output = ()> + Send + 'static {
        if let Some(task) = self.feed_task.take() {
            task.abort();
        }
        self.progress = None;
        self.claims.release(&self.client, self.config.request_timeout)
    }

    fn ask_progress(&self) {
        self.tell_feed(FeedCommand::Progress);
    }

    fn tell_feed(&self, command: FeedCommand) {
        if let Some(p) = &self.progress {
            let _ = p.unbounded_send(command);
        }
    }

    /// Whether nothing is in flight (for closing).
    pub(crate) fn is_idle(&self) -> bool {
        self.busy.is_empty() && self.acked.is_empty() && self.retries.is_empty()
    }

    fn describe(&self) -> String {
        self.config.describe()
    }
}

/// The address a write request is about.
fn written_pointer(req: &StateRequest) -> Option<Pointer> {
    match req.about() {
        super::super::actor::Subject::Resource(p) => Some(p),
        _ => None,
    }
}

/// The owner acting in a write request, if any.
fn acting_owner(req: &StateRequest) -> Option<&Arc<str>> {
    match req {
        StateRequest::Create { owner, .. }
        | StateRequest::Update { owner, .. }
        | StateRequest::Modify { owner, .. }
        | StateRequest::Destroy { owner, .. }
        | StateRequest::Teardown { owner, .. } => owner.as_ref(),
        _ => None,
    }
}

/// The transaction that makes `change` durable if nothing changed under it.
fn txn_of(keys: &Keys, change: &Change, fence: Option<&Fence>) -> Result<Txn, Error> {
    let write = super::super::apply::write_of(change, 0);
    let key = keys.resource(&write.pointer);
    let mut when = vec![match write.precondition {
        Precondition::Absent => Compare::create_revision(key.clone(), CompareOp::Equal, 0),
        Precondition::Revision(r) => Compare::mod_revision(key.clone(), CompareOp::Equal, r as i64),
    }];
    let op = match &write.op {
        WriteOp::Put(res) => TxnOp::put(key, keys::encode(res)?, None),
        WriteOp::Delete => TxnOp::delete(key, None),
    };
    let mut otherwise = Vec::new();
    if let Some(fence) = fence {
        when.push(Compare::create_revision(fence.key.clone(), CompareOp::Equal, fence.token));
        otherwise.push(TxnOp::get(fence.key.clone(), None));
    }
    Ok(Txn::new().when(when).and_then(vec![op]).or_else(otherwise))
}

/// Whether a failed transaction failed on its fence (the claim is gone or
/// belongs to another process now).
fn fence_lost(resp: &TxnResponse, fence: Option<&Fence>) -> bool {
    let Some(fence) = fence else {
        return false;
    };
    match resp.op_responses().first() {
        Some(TxnOpResponse::Get(get)) => {
            get.kvs().first().is_none_or(|kv| kv.create_revision() != fence.token)
        }
        _ => true,
    }
}

/// Removes and returns the entries of `waiting` that are `late`.
fn take_late<T>(waiting: &mut BTreeMap<u64, Vec<T>>, late: impl Fn(&T) -> bool) -> Vec<T> {
    let mut out = Vec::new();
    for entries in waiting.values_mut() {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(entries).into_iter().partition(&late);
        *entries = kept;
        out.extend(gone);
    }
    waiting.retain(|_, v| !v.is_empty());
    out
}

/// The reply's resource carries the revision etcd gave the write.
fn stamped(reply: Result<StateReply, Error>, revision: u64) -> Result<StateReply, Error> {
    match reply {
        Ok(StateReply::Resource(mut r)) => {
            r.metadata_mut().set_revision(revision);
            Ok(StateReply::Resource(r))
        }
        other => other,
    }
}

/// The transaction for a write, and the fence it passes; an error if the
/// write cannot be sent (etcd unreachable, the claim lost, a value that does
/// not encode).
fn prepare(
    shared: &Shared,
    req: &StateRequest,
    ptr: &Pointer,
    change: &Change,
) -> Result<(Txn, Option<Fence>), Error> {
    if !shared.available {
        return Err(super::unavailable(
            ptr.to_string(),
            format!("{} is unreachable; the write was not sent", shared.describe()),
        ));
    }
    let fence = acting_owner(req)
        .and_then(|owner| shared.claims.fence(owner, ptr.resource_type()))
        .cloned();
    if let Some(fence) = &fence {
        fence.check(ptr)?;
    }
    Ok((txn_of(&shared.keys, change, fence.as_ref())?, fence))
}

impl StateActor {
    /// Serves a request of an etcd state: reads from the cache at once,
    /// writes as transactions.
    pub(crate) fn dispatch_shared(
        &mut self,
        req: StateRequest,
        ctx: &mut Context<Self>,
        slot: Option<ReplySlot>,
    ) -> Response {
        let Some(ptr) = written_pointer(&req).filter(|_| req.is_write()) else {
            return Response::Now(self.serve(req));
        };
        let slot = slot.unwrap_or_default();
        let shared = self.shared_mut();
        if let Some(queue) = shared.busy.get_mut(&ptr) {
            queue.push_back(Queued { req, slot: slot.clone(), attempts: 0, since: None });
            return Response::Later(slot);
        }
        let queued = Queued { req, slot: slot.clone(), attempts: 0, since: None };
        match self.start_write(queued, ptr, ctx) {
            Some(reply) => Response::Now(reply),
            None => Response::Later(slot),
        }
    }

    fn shared_mut(&mut self) -> &mut Shared {
        self.shared.as_mut().expect("an etcd state")
    }

    /// Runs the rules on the cache and sends the result to etcd; `Some` if
    /// the answer is known now (an error, or nothing to write). The resource
    /// is marked busy while the write is in flight.
    fn start_write(
        &mut self,
        q: Queued,
        ptr: Pointer,
        ctx: &mut Context<Self>,
    ) -> Option<Result<StateReply, Error>> {
        let before = self.store.revision();
        let applied = super::super::apply::apply_ref(&mut self.store, &q.req, Timestamp::now());
        let Some((reply, Some(change))) = applied else {
            self.release_if_idle(&ptr);
            return applied.map(|(reply, _)| reply);
        };
        // The cache changes only through the feed: undo, and send the write.
        self.store.rollback(std::iter::once(&change));
        self.store.set_revision(before);
        let shared = self.shared.as_mut().expect("an etcd state");
        let prepared = prepare(shared, &q.req, &ptr, &change);
        let (txn, fence) = match prepared {
            Ok(prepared) => prepared,
            Err(e) => {
                self.release_if_idle(&ptr);
                return Some(Err(e));
            }
        };
        let shared = self.shared.as_mut().expect("an etcd state");
        shared.busy.entry(ptr.clone()).or_default();
        let mut kv = shared.kv.clone();
        let timeout = shared.config.request_timeout;
        let store = shared.describe();
        let about = ptr.clone();
        let sent = async move { tokio::time::timeout(timeout, kv.txn(txn)).await };
        ctx.spawn(sent.into_actor(self).map(move |result, act, ctx| {
            let result = match result {
                Ok(Ok(resp)) => Ok(resp),
                Ok(Err(e)) => Err(request_error(&about, &store, &e)),
                Err(_) => Err(super::unavailable(
                    about.to_string(),
                    format!("{store}: no answer within {timeout:?}"),
                )),
            };
            act.txn_done(q, ptr, reply, fence, result, ctx);
        }));
        None
    }

    fn txn_done(
        &mut self,
        mut q: Queued,
        ptr: Pointer,
        reply: Result<StateReply, Error>,
        fence: Option<Fence>,
        result: Result<TxnResponse, Error>,
        ctx: &mut Context<Self>,
    ) {
        let shared = self.shared_mut();
        let resp = match result {
            Ok(resp) => resp,
            Err(e) => {
                answer(&q.slot, Err(e));
                self.release(&ptr, ctx);
                return;
            }
        };
        let revision = resp.header().map_or(0, |h| h.revision() as u64);
        tracing::trace!(
            "etcd: write of {ptr} answered at {revision}: succeeded {}",
            resp.succeeded()
        );
        if resp.succeeded() {
            let reply = stamped(reply, revision);
            let acked =
                Acked { slot: q.slot, reply, pointer: ptr, since: Instant::now(), revision };
            shared.acked.entry(revision).or_default().push(acked);
            self.settle_shared(ctx);
            self.arm_watchdog(ctx);
            return;
        }
        if fence_lost(&resp, fence.as_ref()) {
            let fence = fence.expect("a fenced write");
            shared.claims.lost_fence(&fence);
            answer(&q.slot, Err(fence.refused(&ptr)));
            self.release(&ptr, ctx);
            return;
        }
        q.attempts += 1;
        if q.attempts >= MAX_ATTEMPTS {
            let e = Error::Storage {
                resource: ptr.to_string(),
                failure: StorageFailure::Conflict,
                reason: format!("still conflicting after {MAX_ATTEMPTS} attempts"),
            };
            answer(&q.slot, Err(e));
            self.release(&ptr, ctx);
            return;
        }
        // The cache was behind etcd: run the rules again once the feed has
        // caught up with the revision the transaction saw.
        q.since.get_or_insert_with(Instant::now);
        shared.retries.entry(revision).or_default().push(q);
        shared.ask_progress();
        self.settle_shared(ctx);
        self.arm_watchdog(ctx);
    }

    /// One timer, every 100 ms while writes wait for the feed: asks the feed
    /// for progress again while conflicted writes wait (a progress request
    /// is ignored while the watch catches up), and checks that no write
    /// waits longer than the request timeout: a feed that does not move (its
    /// etcd member partitioned away, a silent connection) must not hold
    /// callers without bound.
    fn arm_watchdog(&mut self, ctx: &mut Context<Self>) {
        let shared = self.shared_mut();
        if shared.watchdog {
            return;
        }
        shared.watchdog = true;
        ctx.run_later(Duration::from_millis(100), |act, ctx| {
            act.shared_mut().watchdog = false;
            act.expire_overdue(ctx);
        });
    }

    /// Answers the writes that waited for the feed longer than the request
    /// timeout with [`StorageFailure::Unavailable`], and has the feed watch
    /// again.
    fn expire_overdue(&mut self, ctx: &mut Context<Self>) {
        let shared = self.shared_mut();
        let limit = shared.config.request_timeout;
        let store = shared.describe();
        let overdue = |since: Instant| since.elapsed() >= limit;
        let expired_acks = take_late(&mut shared.acked, |a| overdue(a.since));
        let expired_retries = take_late(&mut shared.retries, |q| q.since.is_some_and(overdue));
        if !shared.retries.is_empty() {
            shared.ask_progress();
        }
        let stalled = !expired_acks.is_empty() || !expired_retries.is_empty();
        if stalled {
            tracing::warn!(
                "state: the change feed of {store} has not moved for {limit:?}; failing {} writes and watching again",
                expired_acks.len() + expired_retries.len()
            );
            shared.tell_feed(FeedCommand::Reconnect);
        }
        let waiting = !shared.acked.is_empty() || !shared.retries.is_empty();
        for a in expired_acks {
            let reason = format!(
                "{store} committed the write at revision {}, but the change feed has not \
                 delivered it within {limit:?}; it is durable and shows once the feed recovers",
                a.revision
            );
            answer(&a.slot, Err(super::unavailable(a.pointer.to_string(), reason)));
            self.release(&a.pointer, ctx);
        }
        for q in expired_retries {
            let ptr = written_pointer(&q.req);
            let about = ptr.as_ref().map_or_else(String::new, ToString::to_string);
            let reason = format!("{store}: the change feed has not caught up within {limit:?}");
            answer(&q.slot, Err(super::unavailable(about, reason)));
            if let Some(ptr) = ptr {
                self.release(&ptr, ctx);
            }
        }
        if waiting {
            self.arm_watchdog(ctx);
        }
        self.close_if_idle(ctx);
    }

    /// Drops the busy mark of `ptr` if nothing is queued behind it.
    fn release_if_idle(&mut self, ptr: &Pointer) {
        let shared = self.shared_mut();
        if shared.busy.get(ptr).is_some_and(VecDeque::is_empty) {
            shared.busy.remove(ptr);
        }
    }

    /// The write in flight for `ptr` is done: start the next one queued.
    fn release(&mut self, ptr: &Pointer, ctx: &mut Context<Self>) {
        loop {
            let shared = self.shared_mut();
            let Some(queue) = shared.busy.get_mut(ptr) else {
                return;
            };
            let Some(next) = queue.pop_front() else {
                shared.busy.remove(ptr);
                return;
            };
            let slot = next.slot.clone();
            match self.start_write(next, ptr.clone(), ctx) {
                Some(reply) => answer(&slot, reply),
                None => return,
            }
        }
    }

    /// Answers the writes the feed has applied, and re-runs the conflicted
    /// writes whose fresh data has arrived.
    fn settle_shared(&mut self, ctx: &mut Context<Self>) {
        let shared = self.shared_mut();
        let rev = shared.feed_rev;
        let later_acked = shared.acked.split_off(&(rev + 1));
        let done = std::mem::replace(&mut shared.acked, later_acked);
        let later_retries = shared.retries.split_off(&(rev + 1));
        let retry = std::mem::replace(&mut shared.retries, later_retries);
        for acked in done.into_values().flatten() {
            answer(&acked.slot, acked.reply);
            self.release(&acked.pointer, ctx);
        }
        for q in retry.into_values().flatten() {
            let Some(ptr) = written_pointer(&q.req) else { continue };
            let slot = q.slot.clone();
            if let Some(reply) = self.start_write(q, ptr.clone(), ctx) {
                answer(&slot, reply);
                self.release(&ptr, ctx);
            }
        }
        self.close_if_idle(ctx);
    }

    /// Applies what the feed brought: the cache changes, watchers hear it,
    /// and the writes it completes are answered.
    pub(crate) fn apply_feed(&mut self, msg: Feed, ctx: &mut Context<Self>) {
        tracing::trace!("etcd: feed {msg:?}");
        match msg {
            Feed::Events(events, last) => {
                for event in events {
                    match event {
                        FeedEvent::Put(res) => {
                            let rev = res.metadata().revision();
                            self.store.set_revision(self.store.revision().max(rev));
                            let change = self.store.put_external(res);
                            self.watches.publish(&change, rev);
                        }
                        FeedEvent::Delete(ptr, rev) => {
                            self.store.set_revision(self.store.revision().max(rev));
                            if let Some(change) = self.store.remove_external(&ptr) {
                                self.watches.publish(&change, rev);
                            }
                        }
                    }
                }
                self.caught_up(last);
            }
            Feed::Progress(rev) => self.caught_up(rev),
            Feed::Resync(resources, rev) => self.resync(resources, rev),
            Feed::Lost(reason) => {
                tracing::error!(
                    "state: {} is unreachable ({reason}); writes fail until it is back",
                    self.shared_mut().describe()
                );
                self.shared_mut().available = false;
            }
            Feed::Restored => {
                let shared = self.shared_mut();
                tracing::info!("state: {} is reachable again", shared.describe());
                shared.available = true;
                if !shared.retries.is_empty() {
                    shared.ask_progress();
                }
            }
        }
        // Watchers hear the changes before the writers they complete.
        self.send_pending();
        self.settle_shared(ctx);
    }

    fn caught_up(&mut self, rev: u64) {
        let shared = self.shared_mut();
        shared.feed_rev = shared.feed_rev.max(rev);
        let rev = shared.feed_rev;
        self.store.set_revision(self.store.revision().max(rev));
    }

    /// Replaces the cache with `resources` (read at `rev`), publishing the
    /// differences.
    fn resync(&mut self, resources: Vec<AnyResource>, rev: u64) {
        let cached = self.store.pointers().into_iter().filter_map(|p| self.store.get(&p).ok());
        let diffs = differences(cached.collect(), resources);
        tracing::info!("etcd: re-listed at revision {rev}: {} differences", diffs.len());
        self.store.set_revision(self.store.revision().max(rev));
        for diff in diffs {
            let change = match diff {
                Diff::Put(res) => Some(self.store.put_external(res)),
                Diff::Remove(ptr) => self.store.remove_external(&ptr),
            };
            if let Some(change) = change {
                self.watches.publish(&change, rev);
            }
        }
        self.caught_up(rev);
    }
}

/// One step from the cached view to a fresh listing.
#[derive(Debug, PartialEq)]
enum Diff {
    /// Store this (created or changed since).
    Put(AnyResource),
    /// Gone since.
    Remove(Pointer),
}

/// What turns `cached` into `fresh`: resources whose mod revision moved are
/// put, missing ones removed, new ones put (sorted by address, so watchers
/// see a stable order).
fn differences(cached: Vec<AnyResource>, fresh: Vec<AnyResource>) -> Vec<Diff> {
    let mut fresh: HashMap<Pointer, AnyResource> =
        fresh.into_iter().map(|r| (r.pointer().clone(), r)).collect();
    let mut out = Vec::new();
    for cur in cached {
        match fresh.remove(cur.pointer()) {
            Some(res) if res.metadata().revision() == cur.metadata().revision() => {}
            Some(res) => out.push(Diff::Put(res)),
            None => out.push(Diff::Remove(cur.pointer().clone())),
        }
    }
    let mut created: Vec<_> = fresh.into_values().collect();
    created.sort_by(|a, b| a.pointer().cmp(b.pointer()));
    out.extend(created.into_iter().map(Diff::Put));
    out
}

impl StreamHandler<Feed> for StateActor {
    fn handle(&mut self, msg: Feed, ctx: &mut Context<Self>) {
        self.apply_feed(msg, ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // The feed ends only when the state closes; the actor decides when to stop.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Resource;
    use crate::resource::test_specs::Num;

    fn at(id: &str, n: i64, rev: u64) -> AnyResource {
        let mut r = Resource::new("ns", id, Num(n)).into_any();
        r.metadata_mut().set_revision(rev);
        r
    }

    #[test]
    fn a_relist_yields_exactly_what_changed() {
        let cached = vec![at("same", 1, 5), at("changed", 1, 6), at("gone", 1, 7)];
        let fresh =
            vec![at("same", 1, 5), at("changed", 2, 9), at("new-b", 3, 10), at("new-a", 4, 11)];
        let diffs = differences(cached, fresh);
        assert_eq!(
            diffs,
            vec![
                Diff::Put(at("changed", 2, 9)),
                Diff::Remove(at("gone", 1, 7).pointer().clone()),
                Diff::Put(at("new-a", 4, 11)),
                Diff::Put(at("new-b", 3, 10)),
            ]
        );
    }

    #[test]
    fn a_relist_of_the_same_state_yields_nothing() {
        let both = || vec![at("a", 1, 2), at("b", 2, 3)];
        assert!(differences(both(), both()).is_empty());
    }
}
