//! Flow-controlled delivery of watch events to one subscriber.
//!
//! Each watch has a *window* of events that may be in flight (sent, not yet
//! dropped by the subscriber). While the window has room, events go straight
//! out with `do_send` (one send discipline per subscriber, so order is kept).
//! When it is full, events go to a [`Backlog`] that coalesces them to the
//! latest state per resource. Dropping a delivered message returns its slot;
//! when the in-flight count falls to half the window and a backlog exists, the
//! subscriber's side asks the state actor to flush.
//!
//! The result: a stalled subscriber costs at most `window` queued messages plus
//! one backlog entry per distinct resource, whatever the number of updates, and
//! it receives every resource's latest state once it catches up.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use std::fmt;

use actix::{Message, Recipient, WeakRecipient};
use futures::channel::mpsc::UnboundedSender;

use super::event::{Event, WatchId};
use crate::activity::Activity;
use crate::resource::{AnyResource, Id, Kind};

/// The actix message a watch delivers to its [`Recipient`](actix::Recipient).
///
/// Flow control: the state keeps at most a window of these in flight per
/// watch; dropping the message returns its slot. A subscriber that falls
/// behind has its backlog coalesced to the latest state per resource (see
/// [`state`](crate::state) for the exact rules), so its memory stays bounded
/// and it never stops the runtime.
///
/// ```
/// use actix::prelude::*;
/// use cosi_runtime::state::{Event, WatchEvent};
///
/// struct Printer;
/// impl Actor for Printer {
///     type Context = Context<Self>;
/// }
/// impl Handler<WatchEvent> for Printer {
///     type Result = ();
///     fn handle(&mut self, msg: WatchEvent, _: &mut Context<Self>) {
///         if let Event::Updated { old, new } = msg.event() {
///             println!("{} {} -> {}", new.pointer(), old.version(), new.version());
///         }
///     }
/// }
/// ```
pub struct WatchEvent {
    pub(crate) watch: WatchId,
    pub(crate) event: Event,
    pub(crate) revision: u64,
    pub(crate) _token: Option<DeliveryToken>,
}

impl WatchEvent {
    /// A message not tied to any watch's flow control (for tests and probes).
    pub fn detached(watch: WatchId, event: Event) -> Self {
        WatchEvent { watch, event, revision: 0, _token: None }
    }

    /// The store revision this watch is caught up to once this event is
    /// handled: every change up to it that the watch sees has been delivered.
    /// Resume a watch from here ([`WatchOptions::resume_from`](super::WatchOptions::resume_from))
    /// and it delivers exactly what came after. (While a slow subscriber's
    /// backlog drains, this stays at the revision before the backlog began,
    /// and jumps to the latest only with the backlog's last event.)
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Which watch delivered it.
    pub fn watch_id(&self) -> WatchId {
        self.watch
    }

    /// The event.
    pub fn event(&self) -> &Event {
        &self.event
    }

    /// The event by value (returns the flow-control slot).
    pub fn into_event(self) -> Event {
        self.event
    }
}

impl Message for WatchEvent {
    type Result = ();
}

impl fmt::Debug for WatchEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchEvent")
            .field("watch", &self.watch)
            .field("event", &self.event)
            .finish()
    }
}

/// The events of one watch that one pass of the state actor produced, in one
/// message: how the runtime's queue controllers subscribe.
///
/// A message per event costs an envelope, a mailbox push and a wake each; a
/// per-object controller hears one event per object it handles. The state
/// actor collects a batched watch's events during a pass and sends them
/// (before any reply to the writes that caused them) at the end of the pass.
/// The batch holds the flow-control slots of all its events.
pub(crate) struct WatchBatch {
    events: BatchEvents,
    /// The flow-control slots (and units of activity) of all its events,
    /// returned together when the batch is dropped.
    _token: DeliveryToken,
}

enum BatchEvents {
    /// A pass that made one change (a writer alone): no list to allocate.
    One(WatchEvent),
    /// Several, in the order they were made.
    Many(Vec<WatchEvent>),
}

impl WatchBatch {
    /// The events, in order.
    pub(crate) fn events(&self) -> &[WatchEvent] {
        match &self.events {
            BatchEvents::One(event) => std::slice::from_ref(event),
            BatchEvents::Many(events) => events,
        }
    }
}

impl Message for WatchBatch {
    type Result = ();
}

/// Asks the state actor to flush a watch's backlog.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Flush(pub(crate) WatchId);

/// Flow-control state shared between the state actor and delivered messages.
pub(crate) struct Credit {
    watch: WatchId,
    in_flight: AtomicUsize,
    backlogged: AtomicBool,
    flush_requested: AtomicBool,
    low_water: usize,
    flush: Option<WeakRecipient<Flush>>,
    activity: Option<Activity>,
}

/// Rides inside each delivered [`WatchEvent`] (or [`WatchBatch`], for all of
/// its events); returns its slots on drop.
pub(crate) struct DeliveryToken(Arc<Credit>, usize);

impl DeliveryToken {
    /// Takes `n` flow-control slots of `credit` (and as many units of its
    /// activity), returned when the token drops.
    fn take(credit: &Arc<Credit>, n: usize) -> Self {
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

/// Where a watch's events go.
pub(crate) enum Sink {
    /// An actor.
    Actor(Recipient<WatchEvent>),
    /// An actor of the runtime, in [`WatchBatch`]es.
    Batch(Recipient<WatchBatch>),
    /// A [`WatchStream`](super::WatchStream).
    Channel(UnboundedSender<WatchEvent>),
}

impl Sink {
    fn is_closed(&self) -> bool {
        match self {
            Sink::Actor(r) => !r.connected(),
            Sink::Batch(r) => !r.connected(),
            Sink::Channel(c) => c.is_closed(),
        }
    }
}

/// Pending changes of one resource while its subscriber is behind.
#[derive(Debug)]
struct Backlogged {
    /// What the subscriber last saw: `Some` if it believes the resource exists.
    seen: Option<AnyResource>,
    /// The latest state, `None` if the resource is gone now.
    latest: Option<AnyResource>,
    /// The state at the last destroy inside the backlog.
    destroyed: Option<AnyResource>,
}

/// One place in a backlog's delivery order.
#[derive(Debug)]
enum Turn {
    /// The resource's coalesced entry (in [`Backlog::entries`]).
    Resource(Id),
    Bootstrapped(Kind),
    /// A resource's events fixed before a marker that came after them.
    Ready(Vec<Event>),
}

/// Events coalesced to the latest state per resource, delivered in ascending
/// revision.
///
/// Per resource, whatever happened while the subscriber was behind reduces to:
///
/// | it saw | it is now | delivered |
/// |---|---|---|
/// | absent | present | `Created(latest)` |
/// | absent | absent | nothing |
/// | present | absent | `Destroyed(last state)` |
/// | present | present, never destroyed in between | `Updated { old: what it saw, new: latest }` |
/// | present | present, destroyed and re-created | `Destroyed(last state)`, `Created(latest)` |
///
/// Order: a resource's turn moves to the back each time it changes, so the
/// backlog goes out in the order of each resource's last change, which is
/// ascending revision (events are pushed in revision order). A destroy
/// followed by a re-creation goes out as `Destroyed` at the destroy's place
/// and `Created` at the latest change's (so at most two slots per resource
/// whatever the number of cycles). A `Bootstrapped`
/// marker keeps its place, and no change crosses it: what a resource did
/// before the marker goes out before it (part of the snapshot the marker
/// ends), and what it did after, coalesced on its own, after it.
#[derive(Debug, Default)]
pub(crate) struct Backlog {
    order: BTreeMap<u64, Turn>,
    /// Each resource's open entry and its place in `order`.
    entries: HashMap<Id, (u64, Backlogged)>,
    /// The place the next turn takes.
    next: u64,
    /// The place of the last marker: entries before it are fixed.
    barrier: Option<u64>,
}

impl Backlog {
    pub(crate) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Slots pending (distinct resources plus markers).
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    fn take_place(&mut self) -> u64 {
        self.next += 1;
        self.next - 1
    }

    pub(crate) fn push(&mut self, event: Event) {
        let (id, resource) = match &event {
            Event::Bootstrapped(kind) => {
                let place = self.take_place();
                self.order.insert(place, Turn::Bootstrapped(kind.clone()));
                self.barrier = Some(place);
                return;
            }
            Event::Created(r) | Event::Destroyed(r) | Event::Updated { new: r, .. } => {
                (r.pointer().id_shared().clone(), r.clone())
            }
        };
        let recreated = matches!(event, Event::Created(_));
        let mut entry = match self.entries.remove(&id) {
            // A marker came after it, or it is created again after a destroy
            // the subscriber must be told of: its events so far keep their
            // place (before the marker; at the destroy's revision), and the
            // subscriber will have seen their outcome.
            Some((place, open))
                if self.barrier.is_some_and(|b| b > place)
                    || (recreated && open.seen.is_some() && open.destroyed.is_some()) =>
            {
                let seen = open.latest.clone();
                let events = open.events();
                if events.is_empty() {
                    self.order.remove(&place);
                } else {
                    self.order.insert(place, Turn::Ready(events));
                }
                Backlogged { seen, latest: None, destroyed: None }
            }
            Some((place, open)) => {
                self.order.remove(&place);
                open
            }
            None => Backlogged {
                seen: match &event {
                    Event::Updated { old, .. } => Some(old.clone()),
                    Event::Destroyed(r) => Some(r.clone()),
                    _ => None,
                },
                latest: None,
                destroyed: None,
            },
        };
        match event {
            Event::Destroyed(_) => {
                entry.latest = None;
                entry.destroyed = Some(resource);
            }
            _ => entry.latest = Some(resource),
        }
        let place = self.take_place();
        self.order.insert(place, Turn::Resource(id.clone()));
        self.entries.insert(id, (place, entry));
    }

    /// The events of the oldest slot (zero, one or two).
    pub(crate) fn pop(&mut self) -> Option<Vec<Event>> {
        let (_, turn) = self.order.pop_first()?;
        let events = match turn {
            Turn::Bootstrapped(kind) => vec![Event::Bootstrapped(kind)],
            Turn::Ready(events) => events,
            Turn::Resource(id) => self.entries.remove(&id)?.1.events(),
        };
        // A subscriber that once fell 100,000 resources behind (a
        // controller registered over a full state) would keep that table's
        // capacity for ever: give it back once it has caught up.
        if self.entries.is_empty() && self.entries.capacity() > 1024 {
            self.entries.shrink_to(1024);
        }
        Some(events)
    }
}

impl Backlogged {
    /// What the subscriber is told (zero, one or two events).
    fn events(self) -> Vec<Event> {
        match (self.seen, self.latest, self.destroyed) {
            (None, Some(new), _) => vec![Event::Created(new)],
            (None, None, _) => vec![],
            (Some(seen), None, destroyed) => vec![Event::Destroyed(destroyed.unwrap_or(seen))],
            (Some(old), Some(new), None) => vec![Event::Updated { old, new }],
            (Some(_), Some(new), Some(gone)) => vec![Event::Destroyed(gone), Event::Created(new)],
        }
    }
}

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
    use super::*;
    use crate::resource::test_specs::Num;
    use crate::resource::{Resource, Version};

    fn r(id: &str, v: u64) -> AnyResource {
        let mut r = Resource::new("ns", id, Num(v as i64)).into_any();
        r.metadata_mut().set_version(Version::new(v));
        r
    }

    fn drain(b: &mut Backlog) -> Vec<String> {
        let mut out = vec![];
        while let Some(events) = b.pop() {
            for e in events {
                out.push(match e {
                    Event::Created(r) => format!("C {}@{}", r.id(), r.version()),
                    Event::Updated { old, new } => {
                        format!("U {}@{}->{}", new.id(), old.version(), new.version())
                    }
                    Event::Destroyed(r) => format!("D {}@{}", r.id(), r.version()),
                    Event::Bootstrapped(_) => "B".into(),
                });
            }
        }
        out
    }

    #[test]
    fn a_backlog_gives_its_memory_back_once_drained() {
        let mut b = Backlog::default();
        for i in 0..5_000 {
            b.push(Event::Created(r(&format!("r{i}"), 1)));
        }
        assert!(b.entries.capacity() >= 5_000);
        assert_eq!(drain(&mut b).len(), 5_000);
        assert!(b.entries.capacity() <= 2048, "{}", b.entries.capacity());
    }

    #[test]
    fn updates_coalesce_to_one_updated_from_the_seen_state() {
        let mut b = Backlog::default();
        for v in 2..=100 {
            b.push(Event::Updated { old: r("a", v - 1), new: r("a", v) });
        }
        assert_eq!(b.len(), 1);
        assert_eq!(drain(&mut b), ["U a@1->100"]);
    }

    #[test]
    fn created_then_updated_is_created_with_the_latest_state() {
        let mut b = Backlog::default();
        b.push(Event::Created(r("a", 1)));
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        assert_eq!(drain(&mut b), ["C a@2"]);
    }

    #[test]
    fn created_then_destroyed_is_nothing() {
        let mut b = Backlog::default();
        b.push(Event::Created(r("a", 1)));
        b.push(Event::Destroyed(r("a", 1)));
        assert!(drain(&mut b).is_empty());
    }

    #[test]
    fn updated_then_destroyed_is_destroyed_with_the_last_state() {
        let mut b = Backlog::default();
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        b.push(Event::Destroyed(r("a", 2)));
        assert_eq!(drain(&mut b), ["D a@2"]);
    }

    #[test]
    fn destroyed_and_recreated_is_both_events() {
        let mut b = Backlog::default();
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        b.push(Event::Destroyed(r("a", 2)));
        b.push(Event::Created(r("a", 1)));
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        assert_eq!(drain(&mut b), ["D a@2", "C a@2"]);
    }

    #[test]
    fn order_is_by_last_change_so_revisions_ascend() {
        let mut b = Backlog::default();
        b.push(Event::Created(r("b", 1)));
        b.push(Event::Created(r("a", 1)));
        b.push(Event::Updated { old: r("b", 1), new: r("b", 2) });
        b.push(Event::Created(r("c", 1)));
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        assert_eq!(b.len(), 3);
        assert_eq!(drain(&mut b), ["C b@2", "C c@1", "C a@2"]);
    }

    #[test]
    fn markers_keep_their_place_and_no_change_crosses_one() {
        let mut b = Backlog::default();
        b.push(Event::Created(r("b", 1)));
        b.push(Event::Created(r("a", 1)));
        b.push(Event::Bootstrapped(Kind::new("ns", "T")));
        b.push(Event::Updated { old: r("b", 1), new: r("b", 2) });
        b.push(Event::Created(r("c", 1)));
        b.push(Event::Updated { old: r("b", 2), new: r("b", 3) });
        assert_eq!(drain(&mut b), ["C b@1", "C a@1", "B", "C c@1", "U b@1->3"]);
    }

    #[test]
    fn a_resource_destroyed_after_a_marker_is_destroyed_after_it() {
        let mut b = Backlog::default();
        b.push(Event::Created(r("a", 1)));
        b.push(Event::Bootstrapped(Kind::new("ns", "T")));
        b.push(Event::Destroyed(r("a", 1)));
        assert_eq!(drain(&mut b), ["C a@1", "B", "D a@1"]);
        assert!(b.entries.is_empty());
    }

    #[test]
    fn destroy_and_recreate_cycles_take_two_slots_at_most() {
        let mut b = Backlog::default();
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        for _ in 0..1000 {
            b.push(Event::Destroyed(r("a", 2)));
            b.push(Event::Created(r("a", 1)));
        }
        b.push(Event::Created(r("b", 1)));
        b.push(Event::Updated { old: r("a", 1), new: r("a", 2) });
        assert_eq!(b.len(), 3);
        assert_eq!(drain(&mut b), ["D a@2", "C b@1", "C a@2"]);
    }

    /// A backlog against the reference: every event applied one by one.
    mod model {
        use super::*;
        use proptest::prelude::*;
        use std::collections::BTreeMap;

        #[derive(Clone, Debug)]
        enum Op {
            Write(u8),
            Destroy(u8),
            Marker,
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                4 => (0u8..4).prop_map(Op::Write),
                2 => (0u8..4).prop_map(Op::Destroy),
                1 => Just(Op::Marker),
            ]
        }

        fn at(id: &str, version: u64, revision: u64) -> AnyResource {
            let mut r = r(id, version);
            r.metadata_mut().set_revision(revision);
            r
        }

        type View = BTreeMap<String, (u64, u64)>;

        fn apply(view: &mut View, event: &Event) {
            match event {
                Event::Created(r) | Event::Updated { new: r, .. } => {
                    view.insert(r.id().to_string(), (r.version().get(), r.metadata().revision()));
                }
                Event::Destroyed(r) => {
                    view.remove(&*r.id().to_string());
                }
                Event::Bootstrapped(_) => {}
            }
        }

        proptest! {
            #[test]
            fn delivers_the_latest_state_in_ascending_revision(ops in prop::collection::vec(op(), 0..60)) {
                let mut backlog = Backlog::default();
                let mut model: BTreeMap<String, AnyResource> = BTreeMap::new();
                let mut at_markers: Vec<View> = vec![];
                let mut revision = 0;
                for op in ops {
                    let event = match op {
                        Op::Marker => {
                            at_markers.push(model.iter().map(|(k, r)| {
                                (k.clone(), (r.version().get(), r.metadata().revision()))
                            }).collect());
                            Event::Bootstrapped(Kind::new("ns", "T"))
                        }
                        Op::Write(n) => {
                            revision += 1;
                            let id = format!("r{n}");
                            match model.get(&id) {
                                Some(old) => {
                                    let new = at(&id, old.version().get() + 1, revision);
                                    Event::Updated { old: old.clone(), new }
                                }
                                None => Event::Created(at(&id, 1, revision)),
                            }
                        }
                        Op::Destroy(n) => {
                            let Some(old) = model.get(&format!("r{n}")) else { continue };
                            revision += 1;
                            // The destroy's revision, as the state publishes it.
                            let mut gone = old.clone();
                            gone.metadata_mut().set_revision(revision);
                            Event::Destroyed(gone)
                        }
                    };
                    match &event {
                        Event::Created(r) | Event::Updated { new: r, .. } => {
                            model.insert(r.id().to_string(), r.clone());
                        }
                        Event::Destroyed(r) => {
                            model.remove(&*r.id().to_string());
                        }
                        Event::Bootstrapped(_) => {}
                    }
                    backlog.push(event);
                }
                let mut view = View::new();
                let mut last = 0;
                let mut markers = at_markers.into_iter();
                while let Some(events) = backlog.pop() {
                    for event in events {
                        if let Some(r) = event.resource() {
                            let rev = r.metadata().revision();
                            prop_assert!(rev >= last, "revision {} after {}", rev, last);
                            last = rev;
                        }
                        if let Event::Updated { old, .. } = &event {
                            // The old state is what the subscriber last saw.
                            prop_assert_eq!(
                                view.get(&*old.id().to_string()),
                                Some(&(old.version().get(), old.metadata().revision()))
                            );
                        }
                        apply(&mut view, &event);
                        if matches!(event, Event::Bootstrapped(_)) {
                            let expected = markers.next();
                            prop_assert_eq!(Some(&view), expected.as_ref());
                        }
                    }
                }
                prop_assert!(markers.next().is_none(), "every marker delivered");
                let expected: View = model.iter().map(|(k, r)| {
                    (k.clone(), (r.version().get(), r.metadata().revision()))
                }).collect();
                prop_assert_eq!(view, expected);
                prop_assert!(backlog.entries.is_empty());
            }
        }
    }

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
