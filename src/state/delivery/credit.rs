//! Flow control shared between the state actor and delivered messages: the
//! [`Credit`] of one watch, the [`DeliveryToken`] each delivered message
//! carries, and the [`Flush`] request a returned slot may send.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use actix::{Message, WeakRecipient};

use crate::activity::Activity;
use crate::state::event::WatchId;

/// Asks the state actor to flush a watch's backlog.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Flush(pub(crate) WatchId);

/// Flow-control state shared between the state actor and delivered messages.
pub(crate) struct Credit {
    pub(super) watch: WatchId,
    pub(super) in_flight: AtomicUsize,
    pub(super) backlogged: AtomicBool,
    pub(super) flush_requested: AtomicBool,
    pub(super) low_water: usize,
    pub(super) flush: Option<WeakRecipient<Flush>>,
    pub(super) activity: Option<Activity>,
}

/// Rides inside each delivered [`WatchEvent`](super::WatchEvent) (or
/// [`WatchBatch`](super::WatchBatch), for all of its events); returns its
/// slots on drop.
pub(crate) struct DeliveryToken(Arc<Credit>, usize);

impl DeliveryToken {
    /// Takes `n` flow-control slots of `credit` (and as many units of its
    /// activity), returned when the token drops.
    pub(super) fn take(credit: &Arc<Credit>, n: usize) -> Self {
        credit.in_flight.fetch_add(n, Ordering::SeqCst);
        if let Some(a) = &credit.activity {
            a.enter_many(n);
        }
        DeliveryToken(credit.clone(), n)
    }
}

impl Drop for DeliveryToken {
    fn drop(&mut self) {
        let (c, n) = (&self.0, self.1);
        let now = c.in_flight.fetch_sub(n, Ordering::SeqCst) - n;
        if now <= c.low_water
            && c.backlogged.load(Ordering::SeqCst)
            && !c.flush_requested.swap(true, Ordering::SeqCst)
        {
            match c.flush.as_ref().and_then(WeakRecipient::upgrade) {
                Some(state) => state.do_send(Flush(c.watch)),
                None => c.flush_requested.store(false, Ordering::SeqCst),
            }
        }
        if let Some(a) = &c.activity {
            a.exit_many(n);
        }
    }
}
