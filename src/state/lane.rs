//! [`ReplyLane`]: the replies of one pass of the state actor, carried to another
//! thread in one wake-up.
//!
//! A reply is a one-shot channel's send. Sent from the state actor's thread to
//! a caller on another arbiter, each send wakes that caller's task there: a
//! remote wake-up of the other thread's runtime (a system call, and a thread
//! woken from its sleep) per reply. A queue controller with 16 reconciles in
//! flight off the state's thread paid that 16 times per pass.
//!
//! So each arbiter thread that sends requests has a lane: the state actor puts
//! the replies of a pass for that thread into its lane and wakes the lane's
//! task once; that task, on the caller's thread, sends each reply there (a
//! local wake-up). Callers on the actor's own thread, and threads that run no
//! actix arbiter to host the task, get their replies directly.
//!
//! Order is kept: the replies of one pass go into a lane in the pass's order
//! and come out in it, and each caller awaits its own channel.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use std::thread::ThreadId;

use actix::dev::OneshotSender;

use super::reply::ReplySender;
use super::request::StateReply;
use crate::Error;

/// A reply's channel to its caller: the reply cell of a request sent
/// through a [`State`](super::State) handle, or actix's channel of one sent
/// as a message.
pub(crate) enum Sender {
    /// A request from the inbox.
    Cell(ReplySender),
    /// A request from the actor's mailbox.
    Actix(OneshotSender<Result<StateReply, Error>>),
}

impl Sender {
    /// Answers (an answer nobody waits for any more is dropped).
    pub(crate) fn send(self, reply: Result<StateReply, Error>) {
        match self {
            Sender::Cell(tx) => tx.send(reply),
            Sender::Actix(tx) => {
                let _ = tx.send(reply);
            }
        }
    }
}

type Held = (Sender, Result<StateReply, Error>);

#[derive(Default)]
struct Queue {
    replies: Vec<Held>,
    /// The lane's task, woken by the first reply after it drained.
    waker: Option<Waker>,
}

/// The replies on their way to one thread (see the [module docs](self)).
pub(crate) struct ReplyLane {
    thread: ThreadId,
    queue: Mutex<Queue>,
    /// Cleared when the lane's task is dropped (its runtime ended): the
    /// thread then gets a new lane.
    alive: AtomicBool,
}

impl std::fmt::Debug for ReplyLane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplyLane").field("thread", &self.thread).finish_non_exhaustive()
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<ReplyLane>>> = const { RefCell::new(None) };
}

impl ReplyLane {
    /// The lane of the calling thread, made (and its task spawned on the
    /// thread's arbiter) on first use; `None` on the state actor's own thread
    /// (`home`: replies are sent there directly) and on a thread without an
    /// arbiter.
    pub(crate) fn of_caller(home: Option<ThreadId>) -> Option<Arc<ReplyLane>> {
        CURRENT.with(|current| {
            let mut current = current.try_borrow_mut().ok()?;
            if let Some(lane) = current.as_ref().filter(|l| l.alive.load(Ordering::Acquire)) {
                // No clone on the actor's thread: most requests come from there.
                return (Some(lane.thread) != home).then(|| lane.clone());
            }
            let arbiter = actix_rt::Arbiter::try_current()?;
            let lane = Arc::new(ReplyLane {
                thread: std::thread::current().id(),
                queue: Mutex::new(Queue::default()),
                alive: AtomicBool::new(true),
            });
            // Spawned through the arbiter's handle: it never panics (a stopped
            // arbiter refuses it, and the thread gets direct replies).
            if !arbiter.spawn(Drain(lane.clone())) {
                return None;
            }
            *current = Some(lane.clone());
            (Some(lane.thread) != home).then_some(lane)
        })
    }

    // Held for a push or a swap only; nothing that can panic runs under it.
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues a reply; returns the task to wake if this is the first since
    /// the lane last drained (the caller wakes it once the pass is queued).
    fn push(&self, reply: Held) -> Option<Waker> {
        let mut queue = self.lock();
        queue.replies.push(reply);
        queue.waker.take()
    }
}

/// The lane's task: sends the queued replies on the lane's thread.
struct Drain(Arc<ReplyLane>);

impl Future for Drain {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut replies = {
            let mut queue = self.0.lock();
            if !queue.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                queue.waker = Some(cx.waker().clone());
            }
            std::mem::take(&mut queue.replies)
        };
        for (tx, reply) in replies.drain(..) {
            tx.send(reply);
        }
        Poll::Pending
    }
}

impl Drop for Drain {
    fn drop(&mut self) {
        self.0.alive.store(false, Ordering::Release);
        // Replies left behind are dropped with their channels: their callers
        // (on this thread, whose runtime is going) hear the state is gone.
        let left = std::mem::take(&mut self.0.lock().replies);
        drop(left);
    }
}

/// Where the state actor sends the answer to one request: the caller's
/// channel, and the lane of the caller's thread when it is not the actor's.
pub(crate) struct ReplyTx {
    tx: Sender,
    lane: Option<Arc<ReplyLane>>,
}

impl ReplyTx {
    /// Answered on the channel directly.
    pub(crate) fn direct(tx: Sender) -> ReplyTx {
        ReplyTx { tx, lane: None }
    }

    /// Answered on `tx` through `lane`, if any.
    pub(crate) fn through(tx: ReplySender, lane: Option<Arc<ReplyLane>>) -> ReplyTx {
        ReplyTx { tx: Sender::Cell(tx), lane }
    }

    /// The channel alone (a reply that waits for a commit is sent directly).
    pub(crate) fn into_sender(self) -> Sender {
        self.tx
    }
}

/// Sends the replies of a pass, in order: each caller's on its own channel,
/// through its thread's lane (each lane woken once, after all are queued).
pub(crate) fn deliver(held: &mut Vec<(ReplyTx, Result<StateReply, Error>)>) {
    let mut wake: Vec<Waker> = Vec::new();
    for (ReplyTx { tx, lane }, reply) in held.drain(..) {
        match lane {
            Some(lane) => wake.extend(lane.push((tx, reply))),
            None => tx.send(reply),
        }
    }
    for waker in wake {
        waker.wake();
    }
}
