//! [`Backlog`]: the events of a subscriber that is behind, coalesced to the
//! latest state per resource and delivered in ascending revision.

use std::collections::{BTreeMap, HashMap};

use crate::resource::{AnyResource, Kind, Pointer};
use crate::state::event::Event;

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
    Resource(Pointer),
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
    /// (By address, not id alone: a watch across namespaces sees one id
    /// in several.)
    entries: HashMap<Pointer, (u64, Backlogged)>,
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
                (r.pointer().clone(), r.clone())
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

#[cfg(test)]
mod tests {
    use super::super::r;
    use super::*;

    #[test]
    fn one_id_in_two_namespaces_is_two_resources() {
        let mut b = Backlog::default();
        let in_ns = |ns: &str| {
            crate::resource::Resource::new(ns, "same", crate::resource::test_specs::Num(1))
                .into_any()
        };
        b.push(Event::Created(in_ns("a")));
        b.push(Event::Created(in_ns("b")));
        assert_eq!(b.len(), 2, "a watch across namespaces keeps both");
        assert_eq!(drain(&mut b), ["C same@undefined", "C same@undefined"], "unstamped");
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
}
