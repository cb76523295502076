//! The per-round work budget of a controller actor.
//!
//! actix polls an actor's context in a loop until nothing in it makes
//! progress: the mailbox is drained completely, and a future spawned while
//! another finishes is polled in the same pass. A queue controller whose
//! reconciles finish at once (a hot key requeued at zero delay, a burst of
//! 100,000 ready keys) therefore never returns to the executor, and every
//! other actor on its arbiter (the state itself, in single-arbiter mode)
//! freezes until the queue is empty.
//!
//! A host spends one unit of its budget per message handled and per reconcile
//! finished; when [`ROUND_BUDGET`] units are spent it parks its context on a
//! yield, which ends the pass: the executor runs every other ready task
//! before this actor goes on.
//!
//! A plain controller that asks for a reconcile at zero delay yields at once
//! ([`RoundBudget::yield_now`]): it reconciles everything each time, so the
//! other tasks of its arbiter get a turn between two of its reconciles, and a
//! reconcile that blocks its thread does not hold the arbiter 64 times over.

use actix::prelude::*;

/// Units of work (messages handled, reconciles finished) a controller actor
/// does before it yields to the executor.
///
/// So between two turns of any actor on an arbiter, each other controller on
/// that arbiter does at most this much work: a quiet controller next to a
/// hot one waits one round (`tests/execution_fairness.rs` measures exactly
/// 64 hot reconciles between its trigger and its reconcile). A yield costs
/// one more pass of the executor, paid once per 64 units: with a hot key
/// requeueing itself at zero delay in the same queue, 1,000 ordinary keys
/// drained in 6.6 ms, against 7.6 ms without it (`benches/execution.rs`).
pub const ROUND_BUDGET: u32 = 64;

/// Counts units of work and yields when the budget is spent.
#[derive(Debug, Default)]
pub(crate) struct RoundBudget {
    spent: u32,
}

impl RoundBudget {
    /// Spends one unit; with the budget gone, parks `ctx` until the executor
    /// has run the other ready tasks (the mailbox and spawned futures wait).
    pub(crate) fn spend<A>(&mut self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>>,
    {
        self.spent += 1;
        if self.spent >= ROUND_BUDGET {
            self.yield_now(ctx);
        }
    }

    /// Yields now, whatever is left of the budget: parks `ctx` until the
    /// executor has run the other ready tasks, and starts a new round.
    pub(crate) fn yield_now<A>(&mut self, ctx: &mut Context<A>)
    where
        A: Actor<Context = Context<A>>,
    {
        self.spent = 0;
        ctx.wait(actix::fut::wrap_future(Requeue { yielded: false }));
    }
}

/// Pending once, with the task woken at once: it goes to the back of the
/// executor's queue, behind every task that is ready.
///
/// Not `tokio::task::yield_now`, which holds its wake-up until the runtime
/// has polled its IO driver: a system call on each yield. A light
/// controller that yields every 32 objects paid it on every 32nd (its
/// single-object latency's p99 was that yield: 5.3 µs against a p50 of
/// 2.6 µs). The driver is still polled every few dozen tasks, as tokio does
/// anyway.
struct Requeue {
    yielded: bool,
}

impl std::future::Future for Requeue {
    type Output = ();

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if std::mem::replace(&mut self.yielded, true) {
            return std::task::Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        std::task::Poll::Pending
    }
}
