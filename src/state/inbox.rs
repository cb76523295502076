//! [`Inbox`]: how the requests sent through [`State`](super::State) handles
//! reach the state actor.
//!
//! An actix `send` costs three allocations (the envelope, the mailbox node and
//! the reply channel) and a future that polls the mailbox's reply; a write of
//! a controller costs hardly more than that in the state itself. Requests
//! sent through a handle go instead into one queue that the state actor
//! drains whole on each turn: a push is a lock and a `Vec` push (the first one
//! after a drain wakes the actor), and the reply comes back on its own
//! one-shot channel, whose cell the calling thread reuses (see
//! [`reply`](super::reply); carried to another thread through its
//! [`ReplyLane`](super::lane), one wake-up per pass). The actor handles what one drain took as one pass, so it
//! knows exactly where a pass ends: there it sends the pass's batched events,
//! then the replies (see [`state`](super) for that order).
//!
//! Requests sent as actix messages ([`State::from_recipient`](super::State::from_recipient),
//! a test kit's interceptor) still arrive through the mailbox, one at a time.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::task::Waker;
use std::thread::ThreadId;

pub(crate) use super::lane::ReplyTx;
use super::request::StateRequest;

/// One request on its way, with where its answer goes.
pub(crate) type Queued = (StateRequest, ReplyTx);

#[derive(Default)]
struct Queue {
    requests: Vec<Queued>,
    /// The state actor's task, woken by the first push after a drain.
    waker: Option<Waker>,
    /// The actor stopped: pushes are refused.
    closed: bool,
}

#[derive(Default)]
struct Shared {
    queue: Mutex<Queue>,
    /// The actor's thread (known from its first drain): its callers are
    /// answered directly, not through a lane.
    home: OnceLock<ThreadId>,
}

/// The queue of requests between [`State`](super::State) handles and the
/// state actor (see the [module docs](self)). Cloning shares it.
#[derive(Clone, Default)]
pub(crate) struct Inbox(Arc<Shared>);

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Inbox")
    }
}

impl Inbox {
    // The lock is held for a push or a swap, never while anything else runs;
    // a panic under it (none can happen) would leave a consistent queue.
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.0.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The state actor's thread, once it drained the inbox.
    pub(crate) fn home(&self) -> Option<ThreadId> {
        self.0.home.get().copied()
    }

    /// Queues `request`; hands it back if the actor has stopped.
    pub(crate) fn push(&self, request: StateRequest, reply: ReplyTx) -> Result<(), StateRequest> {
        let waker = {
            let mut queue = self.lock();
            if queue.closed {
                return Err(request);
            }
            queue.requests.push((request, reply));
            queue.waker.take()
        };
        // Woken outside the lock: the actor may run on this very thread.
        if let Some(waker) = waker {
            waker.wake();
        }
        Ok(())
    }

    /// Moves every queued request into `into` (empty), oldest first, and
    /// has `waker` woken by the next push.
    pub(crate) fn take(&self, into: &mut Vec<Queued>, waker: &Waker) {
        let mut queue = self.lock();
        std::mem::swap(&mut queue.requests, into);
        if self.0.home.get().is_none() {
            let _ = self.0.home.set(std::thread::current().id());
        }
        if !queue.waker.as_ref().is_some_and(|w| w.will_wake(waker)) {
            queue.waker = Some(waker.clone());
        }
    }

    /// Puts back requests taken but not handled, ahead of those pushed since.
    pub(crate) fn put_back(&self, rest: impl Iterator<Item = Queued>) {
        let mut queue = self.lock();
        let newer = std::mem::take(&mut queue.requests);
        queue.requests.extend(rest);
        queue.requests.extend(newer);
    }

    /// Refuses further requests; the queued ones are dropped, so each caller
    /// hears that the state is unavailable.
    pub(crate) fn close(&self) {
        let dropped = {
            let mut queue = self.lock();
            queue.closed = true;
            queue.waker = None;
            std::mem::take(&mut queue.requests)
        };
        drop(dropped);
    }
}
