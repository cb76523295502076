//! How a request travels from a [`State`] handle to the state actor (its
//! inbox, or its mailbox for a handle without one), and its answer back.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::State;
use crate::Error;
use crate::resource::AnyResource;
use crate::state::lane::{ReplyLane, ReplyTx};
use crate::state::reply::{self, ReplyReceiver};
use crate::state::request::{StateReply, StateRequest, reply_done, reply_resource};

impl State {
    /// Sends a raw request (the typed methods are built on this).
    ///
    /// # Errors
    /// Whatever the state answers; [`Error::Unavailable`] if it is not running.
    pub async fn request(&self, req: StateRequest) -> Result<StateReply, Error> {
        self.send(req).await
    }

    /// Sends `req` now; the returned [`Reply`] resolves to its answer.
    ///
    /// A small future (the request is already on its way), so that the
    /// futures awaiting state calls stay small: a reconcile's future is
    /// moved into place, and its size is copied with it.
    pub(crate) fn send(&self, req: StateRequest) -> Reply<'_> {
        let busy = self.0.activity.hold();
        let op = req.operation();
        let unavailable = |req: StateRequest| {
            Some(Err(Error::Unavailable { resource: req.about().to_string(), service: SERVICE }))
        };
        let pending = match &self.0.inbox {
            Some(inbox) => {
                let (tx, rx) = reply::channel();
                let lane = ReplyLane::of_caller(inbox.home());
                let reply = ReplyTx::through(tx, lane);
                match inbox.push(req, reply) {
                    // Outside tokio's cooperative budget (the reply cell
                    // never consults it): a reply is ready only after the
                    // state actor ran, so waiting for one cannot starve
                    // anyone, while under the budget a `join_all` over more
                    // than 128 creates would find every reply past the 128th
                    // pending, its task woken and polled again for each.
                    Ok(()) => Pending::Inbox(rx),
                    Err(req) => Pending::Done(unavailable(req)),
                }
            }
            // Named from the request while it is still here: a stopped actor
            // is seen before sending.
            None if !self.0.requests.connected() => Pending::Done(unavailable(req)),
            None => {
                Pending::Mailbox(Box::pin(tokio::task::unconstrained(self.0.requests.send(req))))
            }
        };
        Reply { pending, op, _busy: busy }
    }

    /// Sends `req` now; its answer's resource. (Plain functions returning
    /// small futures, like [`send`](State::send): an `async fn` would keep
    /// the 100-byte request in its future.)
    pub(super) fn resource(
        &self,
        req: StateRequest,
    ) -> impl Future<Output = Result<AnyResource, Error>> + '_ {
        let op = req.operation();
        let reply = self.send(req);
        async move { reply_resource(reply.await?, op) }
    }

    /// Sends `req` now; its answer, which carries nothing.
    pub(super) fn done(&self, req: StateRequest) -> impl Future<Output = Result<(), Error>> + '_ {
        let op = req.operation();
        let reply = self.send(req);
        async move { reply_done(reply.await?, op) }
    }
}

const SERVICE: &str = "the state actor";

/// An actix request's answer (a handle without an inbox: a probe, an interceptor).
type MailboxReply =
    Pin<Box<dyn Future<Output = Result<Result<StateReply, Error>, actix::MailboxError>> + Send>>;

/// Where a sent request's answer will come from.
enum Pending {
    /// The inbox's reply channel.
    Inbox(ReplyReceiver),
    /// The actor's mailbox.
    Mailbox(MailboxReply),
    /// Known already (the state is stopped).
    Done(Option<Result<StateReply, Error>>),
}

/// The answer to a request [`State::send`] sent: a future that holds only
/// the reply channel and one unit of activity (so `settled()` waits for it).
pub(crate) struct Reply<'a> {
    pending: Pending,
    op: &'static str,
    _busy: crate::activity::ActivityHold<'a>,
}

impl Future for Reply<'_> {
    type Output = Result<StateReply, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let answer = match &mut self.pending {
            Pending::Inbox(rx) => std::task::ready!(Pin::new(rx).poll(cx)),
            Pending::Mailbox(request) => std::task::ready!(request.as_mut().poll(cx)).ok(),
            Pending::Done(answer) => answer.take(),
        };
        Poll::Ready(match answer {
            Some(Ok(StateReply::ModifyPanicked(panic))) => std::panic::resume_unwind(panic),
            Some(answer) => answer,
            // It stopped while the request waited (or the answer was taken).
            None => Err(Error::Unavailable {
                resource: format!("a {} request", self.op),
                service: SERVICE,
            }),
        })
    }
}
