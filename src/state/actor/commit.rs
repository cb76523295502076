//! The commit pipeline of the exclusive backends: writes staged in the
//! cache during a pass go to their backends as one batch per mailbox drain
//! ([`CommitStaged`]), are published and answered once committed (or rolled
//! back), and then the requests parked behind them are served. [`Close`]
//! goes through the same pipeline: a last commit, then every backend released.

use std::fmt;

use actix::dev::{MessageResponse, OneshotSender};
use actix::prelude::*;

use super::StateActor;
use super::batch::{Batch, ReplySlotClose};
use super::response::{Response, answer};
use crate::Error;
use crate::state::apply::write_of;
use crate::state::backend::{Write, batch_failed};
use crate::state::request::Close;
use crate::state::request::Subject;
use crate::state::store::Change;

/// Asks the state actor to commit what it staged (sent to itself, so it runs
/// after the mailbox is drained: one batch per drain).
#[derive(Message)]
#[rtype(result = "()")]
struct CommitStaged;

impl StateActor {
    /// Asks for a commit of what this pass staged once the mailbox is drained.
    pub(crate) fn schedule_commit(&mut self, ctx: &mut Context<Self>) {
        if !self.commit_scheduled {
            self.commit_scheduled = true;
            ctx.notify(CommitStaged);
        }
    }

    /// Sends the staged batch to its backends (one commit per backend).
    fn commit(&mut self, ctx: &mut Context<Self>) {
        self.commit_scheduled = false;
        self.commit_lanes(ctx);
        // The next batch starts at this one's size (up to a bound: one huge
        // batch must not pin its memory): grown from empty, its two lists
        // and the backends' write lists would reallocate many times per
        // batch, a cost paid on every write.
        const KEEP: usize = 1024;
        let next = Batch {
            changes: Vec::with_capacity(self.staged.changes.len().min(KEEP)),
            waiting: Vec::with_capacity(self.staged.waiting.len().min(KEEP)),
        };
        let batch = std::mem::replace(&mut self.staged, next);
        if batch.changes.is_empty() && batch.waiting.is_empty() {
            self.close_if_idle(ctx);
            return;
        }
        let mut counts = vec![0; self.backends.len()];
        for (_, _, backend) in &batch.changes {
            counts[*backend] += 1;
        }
        let mut per_backend: Vec<Vec<Write>> = counts.into_iter().map(Vec::with_capacity).collect();
        for (change, revision, backend) in &batch.changes {
            per_backend[*backend].push(write_of(change, *revision));
        }
        let (committed, commits): (Vec<usize>, Vec<_>) = per_backend
            .into_iter()
            .enumerate()
            .filter(|(_, writes)| !writes.is_empty())
            .map(|(i, writes)| (i, self.backends[i].commit(writes)))
            .unzip();
        self.committing = true;
        let done = futures::future::join_all(commits);
        ctx.spawn(done.into_actor(self).map(move |results, act, ctx| {
            // Each backend's own outcome: a batch over two files, one of
            // which failed, stands in the other.
            let failed: Vec<(usize, Error)> = committed
                .into_iter()
                .zip(results)
                .filter_map(|(i, result)| result.err().map(|e| (i, e)))
                .collect();
            act.finish(batch, &failed, ctx);
        }));
    }

    /// The error of the failed backend a waiting caller's request went to,
    /// if it went to one (looked up only when a backend failed).
    fn failure_of<'e>(&self, failed: &'e [(usize, Error)], about: &Subject) -> Option<&'e Error> {
        if failed.is_empty() {
            return None;
        }
        let backend = match about {
            Subject::Resource(p) => self.routes.route(p.kind().namespace()),
            Subject::Kind(k) => self.routes.route(k.namespace()),
            Subject::AllNamespaces(_) | Subject::Watch(_) | Subject::State => None,
        }?;
        failed.iter().find(|(b, _)| *b == backend).map(|(_, e)| e)
    }

    /// Lets readers outside the actor read the cache when it holds nothing
    /// uncommitted and the state is open (see [`CacheView`](crate::state::cache::CacheView)).
    pub(crate) fn refresh_view(&self) {
        self.store.set_readable(self.dirty.is_empty() && self.closing.is_none());
    }

    /// Publishes and answers the committed part of a batch and rolls back
    /// the writes of each backend in `failed` (with its error); then serves
    /// what waited for it.
    fn finish(&mut self, batch: Batch, failed: &[(usize, Error)], ctx: &mut Context<Self>) {
        self.committing = false;
        self.dirty.clear();
        let failed_backend = |backend: &usize| failed.iter().any(|(b, _)| b == backend);
        for (backend, e) in failed {
            let lost: Vec<&Change> =
                batch.changes.iter().filter(|(_, _, b)| b == backend).map(|(c, _, _)| c).collect();
            tracing::error!("state: a commit of {} writes failed, rolled back: {e}", lost.len());
            self.store.rollback(lost.into_iter());
        }
        for (change, revision, backend) in &batch.changes {
            if !failed_backend(backend) {
                self.watches.publish(change, *revision);
            }
        }
        self.send_pending();
        for (slot, about, reply) in batch.waiting {
            match self.failure_of(failed, &about) {
                None => answer(&slot, reply),
                Some(e) => answer(&slot, Err(batch_failed(e, about.to_string()))),
            }
        }
        self.refresh_view();
        for (req, slot) in std::mem::take(&mut self.parked) {
            if let Response::Now(reply) = self.dispatch(req, ctx, Some(slot.clone()))
                && let Some(tx) = slot.take()
            {
                self.held.push((crate::state::lane::ReplyTx::direct(tx), reply));
            }
        }
        // The parked requests served now are a pass: their events, then their replies.
        self.send_pending();
        self.close_if_idle(ctx);
    }

    pub(crate) fn close_if_idle(&mut self, ctx: &mut Context<Self>) {
        if self.committing || self.commit_scheduled || !self.parked.is_empty() {
            return;
        }
        if self.lanes.iter().any(|l| !l.is_idle()) {
            return;
        }
        let Some(slot) = self.closing.take() else {
            return;
        };
        // The actor stops before its spawned items run again.
        self.send_pending();
        let closes: Vec<_> = self.backends.iter_mut().map(|b| b.close()).collect();
        ctx.wait(futures::future::join_all(closes).into_actor(self).map(move |_, _, ctx| {
            if let Some(tx) = slot.take() {
                let _ = tx.send(Ok(()));
            }
            ctx.stop();
        }));
    }
}

impl Handler<CommitStaged> for StateActor {
    type Result = ();

    fn handle(&mut self, _: CommitStaged, ctx: &mut Self::Context) {
        self.commit(ctx);
    }
}

/// The answer to [`Close`], once every backend is released.
pub struct CloseResponse(ReplySlotClose);

impl fmt::Debug for CloseResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CloseResponse")
    }
}

impl MessageResponse<StateActor, Close> for CloseResponse {
    fn handle(self, _: &mut Context<StateActor>, tx: Option<OneshotSender<Result<(), Error>>>) {
        self.0.set(tx);
    }
}

impl Handler<Close> for StateActor {
    type Result = CloseResponse;

    fn handle(&mut self, _: Close, ctx: &mut Self::Context) -> Self::Result {
        let slot = ReplySlotClose::default();
        self.closing = Some(slot.clone());
        self.refresh_view();
        if !self.commit_scheduled {
            // Runs after actix stored the caller's channel in the slot.
            self.commit_scheduled = true;
            ctx.notify(CommitStaged);
        }
        CloseResponse(slot)
    }
}
