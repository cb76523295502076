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
//!
//! A yield lets the other actors of the arbiter run, and at least one yield in
//! every few of a thread also waits for the executor's driver
//! ([`yield_future`]): the `System::block_on` future (a user's
//! `#[actix::main]` body, a test's body), timers and sockets make progress
//! whatever a controller does.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::task::Poll;

use actix::prelude::*;
use futures::future::Either;

/// Units of work (messages handled, reconciles finished) a controller actor
/// does before it yields to the executor.
///
/// So between two turns of any actor on an arbiter, each other controller on
/// that arbiter does at most this much work: a quiet controller next to a
/// hot one waits one round (`tests/execution/fairness.rs` checks that bound
/// by counting the hot reconciles between its trigger and its reconcile). A
/// yield costs one more pass of the executor, paid once per 64 units: small
/// beside the work of a round, and it keeps a hot key from starving the
/// ordinary keys of its own queue (`benches/execution.rs`).
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
        ctx.wait(actix::fut::wrap_future(yield_future()));
    }
}

/// Immediate yields a thread may make in a row before one that waits for
/// the executor's driver (see [`Requeue`]).
const IMMEDIATE_YIELDS: u32 = 3;

thread_local! {
    /// Immediate yields on this thread since a yield last waited for the
    /// driver.
    static IMMEDIATE: Cell<u32> = const { Cell::new(0) };
}

/// A yield that ends an actor's pass: immediate ([`Requeue`]) while this
/// thread has made fewer than [`IMMEDIATE_YIELDS`] in a row, otherwise
/// `tokio::task::yield_now`, which resumes the actor only after the runtime
/// has polled its IO driver, its timers and the `block_on` future.
///
/// Why both. An immediate yield puts the task at the back of the local run
/// queue, behind every task that is ready, and costs nothing; but tokio's
/// `LocalSet` runs up to 61 ready tasks before it returns to the `block_on`
/// future (a user's `#[actix::main]` body, a test's body) and to the driver
/// (timers, sockets, wake-ups from other threads). A key that requeues
/// itself at zero delay is always ready, so with immediate yields alone that
/// code waited 61 rounds of it for each step, and timers fired that rarely.
/// `yield_now` alone is fair but costs a system call (the driver's poll) on
/// every yield. One in [`IMMEDIATE_YIELDS`] + 1 pays it: the `block_on`
/// future and the driver get a turn at least every few rounds, and a light
/// controller that yields now and then rarely waits for the driver.
fn yield_future() -> impl Future<Output = ()> {
    let immediate = IMMEDIATE.with(|count| {
        let n = count.get();
        if n < IMMEDIATE_YIELDS {
            count.set(n + 1);
            true
        } else {
            false
        }
    });
    if immediate {
        Either::Left(Requeue { yielded: false })
    } else {
        Either::Right(async {
            tokio::task::yield_now().await;
            IMMEDIATE.with(|count| count.set(0));
        })
    }
}

/// Pending once, with the task woken at once: it goes to the back of the
/// executor's queue, behind every task that is ready, without a system call.
struct Requeue {
    yielded: bool,
}

impl Future for Requeue {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> Poll<()> {
        if std::mem::replace(&mut self.yielded, true) {
            return Poll::Ready(());
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}
