//! The write path of a shared store: serving its requests, batching a
//! pass's writes, answering them as the feed brings them, retrying
//! conflicts, and the watchdog.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use actix::prelude::*;

use super::{Acked, MAX_ATTEMPTS, Pending, Staged, acting_owner, take_late, written_pointer};
use crate::resource::Pointer;
use crate::state::actor::StateActor;
use crate::state::actor::response::{ReplySlot, Response, answer};
use crate::state::backend::{CommitOutcome, batch_failed};
use crate::state::request::{StateReply, StateRequest};
use crate::{Error, StorageFailure};

impl StateActor {
    /// Serves a request about a namespace of the shared store in `lane`:
    /// reads from the cache at once, writes through the store.
    pub(crate) fn dispatch_shared(
        &mut self,
        lane: usize,
        req: StateRequest,
        ctx: &mut Context<Self>,
        slot: Option<ReplySlot>,
    ) -> Response {
        let Some(ptr) = written_pointer(&req).filter(|_| req.is_write()) else {
            return Response::Now(self.serve(req));
        };
        let slot = slot.unwrap_or_default();
        let pending = Pending { req, slot: slot.clone(), attempts: 0, since: None };
        if let Some(queue) = self.lanes[lane].busy.get_mut(&ptr) {
            queue.push_back(pending);
            return Response::Later(slot);
        }
        match self.start_write(lane, pending, ptr, ctx) {
            Some(reply) => Response::Now(reply),
            None => Response::Later(slot),
        }
    }

    /// Runs the rules on the cache and stages the result for the store;
    /// `Some` if the answer is known now (an error, or nothing to write).
    /// The resource is busy until its write is answered.
    fn start_write(
        &mut self,
        lane: usize,
        pending: Pending,
        ptr: Pointer,
        ctx: &mut Context<Self>,
    ) -> Option<Result<StateReply, Error>> {
        let before = self.store.revision();
        // Its own clock read: a write re-run from a commit's or the feed's
        // completion runs outside a pass, and must not leave a pass time
        // behind for the next pass's writes.
        let now = crate::resource::Timestamp::now();
        // Readers outside the actor must not see the write before the feed
        // brings it: they ask the actor while it is in the cache.
        self.store.set_readable(false);
        let applied = crate::state::apply::apply_ref(&mut self.store, &pending.req, now);
        let change = match applied {
            Some((reply, Some(change))) => (reply, change),
            other => {
                self.refresh_view();
                self.release_if_idle(lane, &ptr);
                return other.map(|(reply, _)| reply);
            }
        };
        let (reply, change) = change;
        // The cache changes only through the feed: undo, and send the write.
        self.store.rollback(std::iter::once(&change));
        self.store.set_revision(before);
        self.refresh_view();
        let l = &mut self.lanes[lane];
        if !l.available {
            let reason = format!("{} is unreachable; the write was not sent", l.describe);
            let e = l.unavailable(ptr.to_string(), reason);
            self.release_if_idle(lane, &ptr);
            return Some(Err(e));
        }
        let mut write = crate::state::apply::write_of(&change, 0);
        write.owner = acting_owner(&pending.req).cloned();
        l.busy.entry(ptr.clone()).or_default();
        l.staged.push(Staged { pending, pointer: ptr, write, reply });
        self.schedule_commit(ctx);
        None
    }

    /// Sends each lane's staged writes to its store, one batch per lane.
    pub(crate) fn commit_lanes(&mut self, ctx: &mut Context<Self>) {
        for lane in 0..self.lanes.len() {
            if !self.lanes[lane].has_staged() {
                continue;
            }
            let staged = std::mem::take(&mut self.lanes[lane].staged);
            let mut writes = Vec::with_capacity(staged.len());
            let mut waiting = Vec::with_capacity(staged.len());
            for s in staged {
                writes.push(s.write);
                waiting.push((s.pending, s.pointer, s.reply));
            }
            let backend = self.lanes[lane].backend;
            self.lanes[lane].in_flight += 1;
            let sent = self.backends[backend].commit(writes);
            ctx.spawn(sent.into_actor(self).map(move |result, act, ctx| {
                act.lane_committed(lane, waiting, result, ctx);
            }));
        }
    }

    fn lane_committed(
        &mut self,
        lane: usize,
        waiting: Vec<(Pending, Pointer, Result<StateReply, Error>)>,
        result: Result<Vec<CommitOutcome>, Error>,
        ctx: &mut Context<Self>,
    ) {
        self.lanes[lane].in_flight -= 1;
        let outcomes = match result {
            Ok(outcomes) if outcomes.len() == waiting.len() => outcomes,
            Ok(outcomes) => {
                let e = Error::Storage {
                    resource: self.lanes[lane].describe.clone(),
                    failure: StorageFailure::Io,
                    reason: format!(
                        "the store answered {} outcomes for {} writes",
                        outcomes.len(),
                        waiting.len()
                    ),
                };
                return self.fail_batch(lane, waiting, &e, ctx);
            }
            Err(e) => return self.fail_batch(lane, waiting, &e, ctx),
        };
        let mut ask_progress = false;
        for ((mut pending, ptr, reply), outcome) in waiting.into_iter().zip(outcomes) {
            tracing::trace!("shared store: write of {ptr}: {outcome:?}");
            match outcome {
                CommitOutcome::Committed(revision) => {
                    let since = Instant::now();
                    let acked = Acked { slot: pending.slot, reply, pointer: ptr, since, revision };
                    self.lanes[lane].acked.entry(revision).or_default().push(acked);
                }
                CommitOutcome::Refused(e) => {
                    answer(&pending.slot, Err(e));
                    self.release(lane, &ptr, ctx);
                }
                CommitOutcome::Conflict { .. } if pending.attempts + 1 >= MAX_ATTEMPTS => {
                    let e = Error::Storage {
                        resource: ptr.to_string(),
                        failure: StorageFailure::Conflict,
                        reason: format!("still conflicting after {MAX_ATTEMPTS} attempts"),
                    };
                    answer(&pending.slot, Err(e));
                    self.release(lane, &ptr, ctx);
                }
                CommitOutcome::Conflict { seen } => {
                    // The cache was behind the store: run the rules again
                    // once the feed has caught up with what the store saw.
                    pending.attempts += 1;
                    pending.since.get_or_insert_with(Instant::now);
                    self.lanes[lane].retries.entry(seen).or_default().push(pending);
                    ask_progress = true;
                }
            }
        }
        if ask_progress {
            let backend = self.lanes[lane].backend;
            self.backends[backend].ask_progress();
        }
        self.settle_lane(lane, ctx);
        self.arm_watchdog(lane, ctx);
    }

    fn fail_batch(
        &mut self,
        lane: usize,
        waiting: Vec<(Pending, Pointer, Result<StateReply, Error>)>,
        e: &Error,
        ctx: &mut Context<Self>,
    ) {
        tracing::warn!("shared store: a batch of {} writes failed: {e}", waiting.len());
        for (pending, ptr, _) in waiting {
            answer(&pending.slot, Err(batch_failed(e, ptr.to_string())));
            self.release(lane, &ptr, ctx);
        }
        self.close_if_idle(ctx);
    }

    /// One timer, every 100 ms while writes wait for the feed: asks the feed
    /// for progress again while conflicted writes wait (a progress request
    /// may be ignored while the feed catches up), and checks that no write
    /// waits longer than the store's patience: a feed that does not move
    /// (its server partitioned away, a silent connection) must not hold
    /// callers without bound.
    fn arm_watchdog(&mut self, lane: usize, ctx: &mut Context<Self>) {
        let l = &mut self.lanes[lane];
        if l.watchdog || (l.acked.is_empty() && l.retries.is_empty()) {
            return;
        }
        l.watchdog = true;
        ctx.run_later(Duration::from_millis(100), move |act, ctx| {
            act.lanes[lane].watchdog = false;
            act.expire_overdue(lane, ctx);
        });
    }

    /// Answers the writes that waited for the feed longer than the store's
    /// patience with [`StorageFailure::Unavailable`], and has the feed
    /// watch again.
    fn expire_overdue(&mut self, lane: usize, ctx: &mut Context<Self>) {
        let l = &mut self.lanes[lane];
        let limit = l.patience;
        let overdue = |since: Instant| since.elapsed() >= limit;
        let expired_acks = take_late(&mut l.acked, |a| overdue(a.since));
        let expired_retries = take_late(&mut l.retries, |q| q.since.is_some_and(overdue));
        let retrying = !l.retries.is_empty();
        let store = l.describe.clone();
        let backend = l.backend;
        if retrying {
            self.backends[backend].ask_progress();
        }
        if !expired_acks.is_empty() || !expired_retries.is_empty() {
            tracing::warn!(
                "state: the change feed of {store} has not moved for {limit:?}; failing {} writes and watching again",
                expired_acks.len() + expired_retries.len()
            );
            self.backends[backend].rewatch();
        }
        for a in expired_acks {
            let reason = format!(
                "{store} committed the write at revision {}, but the change feed has not \
                 delivered it within {limit:?}; it is durable and shows once the feed recovers",
                a.revision
            );
            let e = self.lanes[lane].unavailable(a.pointer.to_string(), reason);
            answer(&a.slot, Err(e));
            self.release(lane, &a.pointer, ctx);
        }
        for q in expired_retries {
            let ptr = written_pointer(&q.req);
            let about = ptr.as_ref().map_or_else(String::new, ToString::to_string);
            let reason = format!("{store}: the change feed has not caught up within {limit:?}");
            answer(&q.slot, Err(self.lanes[lane].unavailable(about, reason)));
            if let Some(ptr) = ptr {
                self.release(lane, &ptr, ctx);
            }
        }
        self.arm_watchdog(lane, ctx);
        self.close_if_idle(ctx);
    }

    /// Drops the busy mark of `ptr` if nothing is queued behind it.
    fn release_if_idle(&mut self, lane: usize, ptr: &Pointer) {
        let busy = &mut self.lanes[lane].busy;
        if busy.get(ptr).is_some_and(VecDeque::is_empty) {
            busy.remove(ptr);
        }
    }

    /// The write in flight for `ptr` is done: start the next one queued.
    fn release(&mut self, lane: usize, ptr: &Pointer, ctx: &mut Context<Self>) {
        loop {
            let busy = &mut self.lanes[lane].busy;
            let Some(queue) = busy.get_mut(ptr) else {
                return;
            };
            let Some(next) = queue.pop_front() else {
                busy.remove(ptr);
                return;
            };
            let slot = next.slot.clone();
            match self.start_write(lane, next, ptr.clone(), ctx) {
                Some(reply) => answer(&slot, reply),
                None => return,
            }
        }
    }

    /// Answers the writes the feed has brought, and re-runs the conflicted
    /// writes whose fresh data has arrived.
    pub(super) fn settle_lane(&mut self, lane: usize, ctx: &mut Context<Self>) {
        let l = &mut self.lanes[lane];
        let rev = l.feed_rev;
        let later_acked = l.acked.split_off(&(rev + 1));
        let done = std::mem::replace(&mut l.acked, later_acked);
        let later_retries = l.retries.split_off(&(rev + 1));
        let retry = std::mem::replace(&mut l.retries, later_retries);
        for acked in done.into_values().flatten() {
            let reply = self.as_cached(acked.reply, &acked.pointer);
            answer(&acked.slot, reply);
            self.release(lane, &acked.pointer, ctx);
        }
        for q in retry.into_values().flatten() {
            let Some(ptr) = written_pointer(&q.req) else { continue };
            let slot = q.slot.clone();
            if let Some(reply) = self.start_write(lane, q, ptr.clone(), ctx) {
                answer(&slot, reply);
                self.release(lane, &ptr, ctx);
            }
        }
        self.close_if_idle(ctx);
    }

    /// A write's reply as the feed brought it: the store assigned the
    /// revision, so the resource answered is the cached one when it is
    /// still that write (same incarnation and version).
    fn as_cached(
        &self,
        reply: Result<StateReply, Error>,
        ptr: &Pointer,
    ) -> Result<StateReply, Error> {
        match reply {
            Ok(StateReply::Resource(r)) => match self.store.get(ptr) {
                Ok(cached)
                    if cached.version() == r.version()
                        && cached.metadata().uid() == r.metadata().uid() =>
                {
                    Ok(StateReply::Resource(cached))
                }
                _ => Ok(StateReply::Resource(r)),
            },
            other => other,
        }
    }
}
