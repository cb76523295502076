//! The one-shot channel a request's answer comes back on, its cell reused
//! by the calling thread.
//!
//! Every request sent through a [`State`](super::State) handle waits for one
//! answer. A fresh channel per request (tokio's oneshot, say) is an
//! allocation and a free per request, and with a thousand requests in
//! flight the allocator's per-thread cache overflows, so each costs a trip
//! into its arenas. Here a cell whose
//! answer was taken, and that nobody else holds any more, goes back to a
//! per-thread pool (up to `POOLED` cells) when its receiver is dropped, and
//! the next request from that thread takes it from there.
//!
//! The cell is a mutex over the answer, the receiver's waker, and whether the
//! sender is gone: each side holds it for a few moves, never while anything
//! else runs.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};

use super::request::StateReply;
use crate::Error;

/// What a request is answered with.
pub(crate) type Answer = Result<StateReply, Error>;

/// The most cells a thread keeps for its next requests: as many as it had
/// in flight at once, up to a `join_all` of 1,024 creates (a cell is 136
/// bytes with its count, so at most 136 KiB per thread that sends
/// requests; a thread that never had more than 16 in flight keeps 16).
/// A pool smaller than a thread's bursts sends the rest of each burst back
/// to the allocator, so the bound is set by the largest bursts expected (a
/// bulk create), not by a typical one.
const POOLED: usize = 1024;

thread_local! {
    static POOL: RefCell<Vec<Arc<Cell>>> = const { RefCell::new(Vec::new()) };
}

#[derive(Default)]
struct Cell(Mutex<Slot>);

#[derive(Default)]
struct Slot {
    answer: Option<Answer>,
    waker: Option<Waker>,
    /// The sender sent its answer, or was dropped without one.
    closed: bool,
}

impl Cell {
    // Held for a few moves only; nothing that can panic runs under it.
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A channel for one answer: a pooled cell of this thread's, or a new one.
pub(crate) fn channel() -> (ReplySender, ReplyReceiver) {
    let cell = POOL
        .try_with(|pool| pool.try_borrow_mut().ok().and_then(|mut pool| pool.pop()))
        .ok()
        .flatten()
        .unwrap_or_default();
    (ReplySender(Some(cell.clone())), ReplyReceiver(Some(cell)))
}

/// The sending half: answers once ([`send`](Self::send)); dropped unsent,
/// its receiver hears that no answer will come.
pub(crate) struct ReplySender(Option<Arc<Cell>>);

impl ReplySender {
    /// Answers, and wakes the receiver. An answer nobody waits for any more
    /// is dropped with the cell.
    pub(crate) fn send(mut self, answer: Answer) {
        if let Some(cell) = self.0.take() {
            close(&cell, Some(answer));
        }
    }
}

impl Drop for ReplySender {
    fn drop(&mut self) {
        if let Some(cell) = self.0.take() {
            close(&cell, None);
        }
    }
}

fn close(cell: &Cell, answer: Option<Answer>) {
    let waker = {
        let mut slot = cell.lock();
        // `None` from a sender dropped unsent: the slot holds none yet.
        slot.answer = answer;
        slot.closed = true;
        slot.waker.take()
    };
    // Woken outside the lock: the receiver may run on this very thread.
    if let Some(waker) = waker {
        waker.wake();
    }
}

/// The receiving half: a future of the answer, `None` if the sender was
/// dropped without one.
pub(crate) struct ReplyReceiver(Option<Arc<Cell>>);

impl Future for ReplyReceiver {
    type Output = Option<Answer>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Answer>> {
        let Some(cell) = self.0.as_ref() else {
            return Poll::Ready(None);
        };
        let mut slot = cell.lock();
        if slot.closed {
            return Poll::Ready(slot.answer.take());
        }
        if !slot.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            slot.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }
}

impl Drop for ReplyReceiver {
    fn drop(&mut self) {
        let Some(mut cell) = self.0.take() else {
            return;
        };
        // Only a cell nobody else holds is reused: its sender is gone, so
        // nothing can write to it any more.
        let Some(cell_mut) = Arc::get_mut(&mut cell) else {
            return;
        };
        let slot = cell_mut.0.get_mut().unwrap_or_else(PoisonError::into_inner);
        if !slot.closed {
            return;
        }
        *slot = Slot::default();
        // A thread being torn down (its pool gone) frees the cell instead.
        let _ = POOL.try_with(|pool| {
            if let Ok(mut pool) = pool.try_borrow_mut()
                && pool.len() < POOLED
            {
                pool.push(cell);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::FutureExt;

    fn pooled() -> usize {
        POOL.with(|pool| pool.borrow().len())
    }

    fn done() -> Answer {
        Ok(StateReply::Done)
    }

    #[test]
    fn an_answer_sent_before_the_poll_is_received() {
        let (tx, rx) = channel();
        tx.send(done());
        assert!(matches!(rx.now_or_never(), Some(Some(Ok(StateReply::Done)))));
    }

    #[test]
    fn a_sender_dropped_unsent_ends_the_wait_with_nothing() {
        let (tx, rx) = channel();
        drop(tx);
        assert!(matches!(rx.now_or_never(), Some(None)));
    }

    #[test]
    fn a_pending_receiver_is_woken_by_the_answer() {
        let (tx, mut rx) = channel();
        let waker = futures::task::noop_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(Pin::new(&mut rx).poll(&mut cx).is_pending());
        tx.send(done());
        assert!(matches!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(Some(Ok(_)))));
    }

    #[test]
    fn the_answer_crosses_threads() {
        let (tx, rx) = channel();
        let sender = std::thread::spawn(move || tx.send(done()));
        assert!(matches!(futures::executor::block_on(rx), Some(Ok(StateReply::Done))));
        sender.join().unwrap();
    }

    #[test]
    fn a_cell_whose_answer_was_taken_is_reused_clean_by_its_thread() {
        // On a thread of its own: the pool is per thread.
        std::thread::spawn(|| {
            let (tx, rx) = channel();
            tx.send(done());
            assert!(matches!(rx.now_or_never(), Some(Some(Ok(_)))));
            assert_eq!(pooled(), 1, "the cell went back to the pool");
            let (tx, mut rx) = channel();
            assert_eq!(pooled(), 0, "and was taken again");
            let waker = futures::task::noop_waker();
            let mut cx = Context::from_waker(&waker);
            assert!(Pin::new(&mut rx).poll(&mut cx).is_pending(), "without the old answer");
            drop(tx);
            assert!(matches!(Pin::new(&mut rx).poll(&mut cx), Poll::Ready(None)));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_cell_still_held_by_its_sender_is_not_reused() {
        std::thread::spawn(|| {
            let (tx, rx) = channel();
            drop(rx);
            assert_eq!(pooled(), 0, "the sender still holds it");
            tx.send(done());
            assert_eq!(pooled(), 0, "freed with the sender, not pooled");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_cells() {
        std::thread::spawn(|| {
            let pairs: Vec<_> = (0..POOLED + 10).map(|_| channel()).collect();
            for (tx, rx) in pairs {
                tx.send(done());
                drop(rx);
            }
            assert_eq!(pooled(), POOLED);
        })
        .join()
        .unwrap();
    }
}
