//! [`Outbox`]: the delivery state of one watch, owned by the state actor.
//! It sends while the window has room, backlogs past it, and flushes the
//! backlog as slots come back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use actix::WeakRecipient;

use super::backlog::Backlog;
use super::credit::{Credit, DeliveryToken, Flush};
use super::sink::{BatchEvents, Sink, WatchBatch};
use super::watch_event::WatchEvent;
use crate::activity::Activity;
use crate::state::event::{Event, WatchId};

/// Delivery state of one watch, owned by the state actor.
pub(crate) struct Outbox {
    sink: Sink,
    credit: Arc<Credit>,
    window: usize,
    backlog: Backlog,
    /// The revision delivered with nothing pending before it.
    caught_up: u64,
    /// The latest revision published into this outbox.
    latest: u64,
    /// Events for a [`Sink::Batch`], sent by [`Outbox::send_pending`].
    pending: Vec<WatchEvent>,
}

impl Outbox {
    pub(crate) fn new(
        watch: WatchId,
        sink: Sink,
        window: usize,
        flush: Option<WeakRecipient<Flush>>,
        activity: Option<Activity>,
    ) -> Self {
        let window = window.max(1);
        Outbox {
            sink,
            credit: Arc::new(Credit {
                watch,
                in_flight: AtomicUsize::new(0),
                backlogged: AtomicBool::new(false),
                flush_requested: AtomicBool::new(false),
                low_water: window / 2,
                flush,
                activity,
            }),
            window,
            backlog: Backlog::default(),
            caught_up: 0,
            latest: 0,
            pending: Vec::new(),
        }
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.sink.is_closed()
    }

    /// Events in flight, counting those waiting for the end of the pass.
    fn in_flight(&self) -> usize {
        self.credit.in_flight.load(Ordering::SeqCst) + self.pending.len()
    }

    fn send_now(&mut self, event: Event, revision: u64) {
        let mut msg = WatchEvent { watch: self.credit.watch, event, revision, _token: None };
        match &self.sink {
            // Counted in the window (`in_flight` adds the pending ones) from
            // now; in flight and in activity when the batch goes out, before
            // the replies of this pass (whose requests hold activity until
            // then: `settled()` never sees a gap).
            Sink::Batch(_) => self.pending.push(msg),
            Sink::Actor(r) => {
                msg._token = Some(DeliveryToken::take(&self.credit, 1));
                r.do_send(msg);
            }
            Sink::Channel(c) => {
                msg._token = Some(DeliveryToken::take(&self.credit, 1));
                // A closed stream drops the message (and so its token); the
                // subscription is pruned on the next publish.
                let _ = c.unbounded_send(msg);
            }
        }
    }

    /// Whether events wait for [`send_pending`](Self::send_pending).
    pub(crate) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Sends the pending events of a batched sink as one message, their
    /// slots and units of activity taken (and returned) together.
    pub(crate) fn send_pending(&mut self) {
        // Only a batched sink has pending events.
        let (Sink::Batch(r), n @ 1..) = (&self.sink, self.pending.len()) else {
            return;
        };
        let token = DeliveryToken::take(&self.credit, n);
        let events = if n == 1 {
            BatchEvents::One(self.pending.remove(0))
        } else {
            // A list of its exact size; `pending` keeps its capacity.
            let mut batch = Vec::with_capacity(n);
            batch.append(&mut self.pending);
            BatchEvents::Many(batch)
        };
        r.do_send(WatchBatch { events, _token: token });
    }

    /// Sends `event` (of store revision `revision`) now if the window has
    /// room and nothing is backlogged; otherwise coalesces it into the backlog.
    pub(crate) fn publish(&mut self, event: Event, revision: u64) {
        self.latest = self.latest.max(revision);
        if self.backlog.is_empty() {
            if self.in_flight() < self.window {
                self.caught_up = self.latest;
                self.send_now(event, self.latest);
                return;
            }
            self.credit.backlogged.store(true, Ordering::SeqCst);
            if let Some(a) = &self.credit.activity {
                a.enter();
            }
            self.backlog.push(event);
            // The subscriber may have drained between the check and the flag.
            if self.in_flight() <= self.credit.low_water {
                self.flush();
            }
        } else {
            self.backlog.push(event);
        }
    }

    /// Sends backlogged events while the window has room.
    pub(crate) fn flush(&mut self) {
        self.credit.flush_requested.store(false, Ordering::SeqCst);
        while self.in_flight() < self.window {
            let Some(events) = self.backlog.pop() else {
                break;
            };
            if self.backlog.is_empty() {
                self.caught_up = self.latest;
            }
            for e in events {
                self.send_now(e, self.caught_up);
            }
        }
        if self.backlog.is_empty() {
            self.settle_backlog();
        }
    }

    /// Clears the backlogged flag and releases the backlog's activity unit.
    fn settle_backlog(&self) {
        if self.credit.backlogged.swap(false, Ordering::SeqCst)
            && let Some(a) = &self.credit.activity
        {
            a.exit();
        }
    }

    /// (in flight, backlog slots): for tests and diagnostics.
    pub(crate) fn stats(&self) -> (usize, usize) {
        (self.in_flight(), self.backlog.len())
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        self.settle_backlog();
    }
}

#[cfg(test)]
mod tests {
    use super::super::r;
    use super::*;

    /// Keeps the size of every batch it receives.
    struct Batches(Arc<std::sync::Mutex<Vec<usize>>>);

    impl actix::Actor for Batches {
        type Context = actix::Context<Self>;
    }

    impl actix::Handler<WatchBatch> for Batches {
        type Result = ();
        fn handle(&mut self, batch: WatchBatch, _: &mut actix::Context<Self>) {
            self.0.lock().unwrap().push(batch.events().len());
        }
    }

    /// An outbox of window `window` batching to a [`Batches`] actor.
    fn batched_outbox(
        window: usize,
    ) -> (Arc<std::sync::Mutex<Vec<usize>>>, actix::Addr<Batches>, Outbox) {
        use actix::Actor;
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let addr = Batches(seen.clone()).start();
        let sink = Sink::Batch(addr.clone().recipient());
        (seen, addr, Outbox::new(WatchId(1), sink, window, None, None))
    }

    #[actix::test]
    async fn a_batched_sink_holds_events_in_flight_until_they_go_as_one_message() {
        let (seen, addr, mut out) = batched_outbox(8);
        for v in 1..=5 {
            out.publish(Event::Updated { old: r("a", v), new: r("a", v + 1) }, v);
        }
        assert!(out.has_pending());
        assert_eq!(out.stats(), (5, 0), "pending events count against the window");
        out.send_pending();
        assert!(!out.has_pending());
        // A message sent after the batch is handled after it.
        addr.send(Probe).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), [5]);
        assert_eq!(out.stats(), (0, 0), "the handled batch returned its slots");
    }

    #[actix::test]
    async fn a_batched_sink_past_its_window_backlogs_like_any_other() {
        let (seen, addr, mut out) = batched_outbox(2);
        for v in 1..=10 {
            out.publish(Event::Updated { old: r("a", v), new: r("a", v + 1) }, v);
        }
        assert_eq!(out.stats(), (2, 1), "two in the pending batch, the rest coalesced");
        out.send_pending();
        addr.send(Probe).await.unwrap();
        out.flush();
        out.send_pending();
        addr.send(Probe).await.unwrap();
        assert_eq!(*seen.lock().unwrap(), [2, 1]);
    }

    #[derive(actix::Message)]
    #[rtype(result = "()")]
    struct Probe;

    impl actix::Handler<Probe> for Batches {
        type Result = ();
        fn handle(&mut self, _: Probe, _: &mut actix::Context<Self>) {}
    }

    #[test]
    fn a_full_window_backlogs_and_dropping_tokens_frees_room() {
        let (tx, mut rx) = futures::channel::mpsc::unbounded();
        let mut out = Outbox::new(WatchId(1), Sink::Channel(tx), 2, None, None);
        for v in 1..=10 {
            out.publish(Event::Updated { old: r("a", v), new: r("a", v + 1) }, v);
        }
        assert_eq!(out.stats(), (2, 1));
        let first = rx.try_recv().unwrap();
        let second = rx.try_recv().unwrap();
        assert!(rx.try_recv().is_err(), "nothing beyond the window was sent");
        drop((first, second));
        assert_eq!(out.stats(), (0, 1));
        out.flush();
        let last = rx.try_recv().unwrap();
        match last.event() {
            Event::Updated { old, new } => {
                assert_eq!((old.version().get(), new.version().get()), (3, 11));
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(out.stats(), (1, 0));
    }
}
