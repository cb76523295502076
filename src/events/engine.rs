//! [`Engine`]: the rules of recording, with the clock passed in: which
//! occurrence is written now, which waits to be counted into the next
//! write, which stored Event goes (the bound per namespace, the TTL).
//!
//! It keeps no Event bodies beyond those waiting, only what it wrote: per
//! namespace the ids and when each was last seen. The state is the record
//! of counts: a write adds its occurrences to what is stored ([`merge`]),
//! so nothing is lost between two writes of one Event.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use super::event::{Event, EventSeries};
use super::time::after;
use crate::resource::{Id, Pointer, Spec, Timestamp};

/// What the engine asks to be done to the state.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Action {
    /// Add occurrences to the Event at a pointer (create it if absent).
    Write(Box<Write>),
    /// Delete the Event at a pointer (past the bound or the TTL).
    Delete(Pointer),
}

/// Occurrences of one Event to add to what is stored.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Write {
    /// Where the Event is stored.
    pub(crate) pointer: Pointer,
    /// The latest occurrence (its note and fields are what the Event shows).
    pub(crate) latest: Event,
    /// How many occurrences this write adds.
    pub(crate) count: i32,
    /// When the first of them happened.
    pub(crate) first: Timestamp,
    /// When the last of them happened.
    pub(crate) last: Timestamp,
}

/// The bounds an [`Engine`] keeps.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bounds {
    pub(crate) interval: Duration,
    pub(crate) max_per_namespace: usize,
    pub(crate) ttl: Option<Duration>,
}

/// One Event the engine wrote: when, and what waits for its next write.
#[derive(Debug)]
struct Entry {
    written: Timestamp,
    /// When it was last seen (its place in its namespace's order).
    seen: Timestamp,
    waiting: Option<Waiting>,
}

/// Occurrences counted since the last write.
#[derive(Debug)]
struct Waiting {
    latest: Event,
    count: i32,
    first: Timestamp,
    last: Timestamp,
}

/// The Events of one namespace, by id and by when each was last seen.
#[derive(Debug, Default)]
struct Namespace {
    entries: HashMap<Id, Entry>,
    by_seen: BTreeSet<(Timestamp, Id)>,
}

/// The recording rules; see the [module](self).
#[derive(Debug)]
pub(crate) struct Engine {
    bounds: Bounds,
    namespaces: HashMap<String, Namespace>,
    /// The Events with occurrences waiting, by when they may be written.
    due: BTreeSet<(Timestamp, Pointer)>,
}

impl Engine {
    pub(crate) fn new(bounds: Bounds) -> Self {
        let bounds = Bounds {
            max_per_namespace: bounds.max_per_namespace.max(1),
            // A TTL shorter than the interval would delete what waits.
            ttl: bounds.ttl.map(|ttl| ttl.max(bounds.interval)),
            ..bounds
        };
        Engine { bounds, namespaces: HashMap::new(), due: BTreeSet::new() }
    }

    /// An occurrence of the Event at `pointer` (`event`: as written for a
    /// first occurrence), seen at `now`: written at once unless the same
    /// Event was written less than an interval ago, then counted and
    /// written when the interval ends ([`due`](Self::due)).
    pub(crate) fn record(&mut self, pointer: Pointer, event: Event, now: Timestamp) -> Vec<Action> {
        let mut actions = self.expire(now);
        let interval = self.bounds.interval;
        let ns = self.namespaces.entry(pointer.namespace().to_owned()).or_default();
        if let Some(entry) = ns.entries.get_mut(pointer.id()) {
            ns.by_seen.remove(&(entry.seen, pointer.id_shared().clone()));
            entry.seen = now;
            ns.by_seen.insert((now, pointer.id_shared().clone()));
            let may_write = after(entry.written, interval);
            if now < may_write {
                match &mut entry.waiting {
                    Some(w) => {
                        w.latest = event;
                        w.count = w.count.saturating_add(1);
                        w.last = now;
                    }
                    None => {
                        entry.waiting =
                            Some(Waiting { latest: event, count: 1, first: now, last: now });
                        self.due.insert((may_write, pointer));
                    }
                }
                return actions;
            }
            // Written long enough ago (a late flush may still wait: it joins).
            let (count, first) = match entry.waiting.take() {
                Some(w) => {
                    self.due.remove(&(may_write, pointer.clone()));
                    (w.count.saturating_add(1), w.first)
                }
                None => (1, now),
            };
            entry.written = now;
            actions.push(Action::Write(Box::new(Write {
                pointer,
                latest: event,
                count,
                first,
                last: now,
            })));
            return actions;
        }
        let id = pointer.id_shared().clone();
        ns.entries.insert(id.clone(), Entry { written: now, seen: now, waiting: None });
        ns.by_seen.insert((now, id.clone()));
        actions.push(Action::Write(Box::new(Write {
            pointer: pointer.clone(),
            latest: event,
            count: 1,
            first: now,
            last: now,
        })));
        // Past the bound: the Event seen least recently goes (never this one).
        if ns.entries.len() > self.bounds.max_per_namespace
            && let Some((seen, oldest)) = ns.by_seen.iter().find(|(_, i)| *i != id).cloned()
        {
            ns.by_seen.remove(&(seen, oldest.clone()));
            if let Some(entry) = ns.entries.remove(&oldest) {
                let gone = Pointer::from_parts(pointer.kind().clone(), oldest);
                if entry.waiting.is_some() {
                    self.due.remove(&(after(entry.written, interval), gone.clone()));
                }
                actions.push(Action::Delete(gone));
            }
        }
        actions
    }

    /// What is due at `now`: the waiting occurrences whose interval ended,
    /// and the deletions of Events past their TTL.
    pub(crate) fn due(&mut self, now: Timestamp) -> Vec<Action> {
        let mut actions = self.expire(now);
        while let Some((at, _)) = self.due.first() {
            if *at > now {
                break;
            }
            let Some((_, pointer)) = self.due.pop_first() else { break };
            actions.extend(self.flush(pointer, now));
        }
        actions
    }

    /// Every waiting occurrence, written now (the runtime stops).
    pub(crate) fn flush_all(&mut self, now: Timestamp) -> Vec<Action> {
        std::mem::take(&mut self.due).into_iter().filter_map(|(_, p)| self.flush(p, now)).collect()
    }

    /// The write of what waits for the Event at `pointer`, if anything does.
    fn flush(&mut self, pointer: Pointer, now: Timestamp) -> Option<Action> {
        let entry = self.namespaces.get_mut(pointer.namespace())?.entries.get_mut(pointer.id())?;
        let w = entry.waiting.take()?;
        entry.written = now;
        Some(Action::Write(Box::new(Write {
            pointer,
            latest: w.latest,
            count: w.count,
            first: w.first,
            last: w.last,
        })))
    }

    /// The deletions of the Events last seen a TTL ago or more.
    fn expire(&mut self, now: Timestamp) -> Vec<Action> {
        let Some(ttl) = self.bounds.ttl else {
            return Vec::new();
        };
        let mut actions = Vec::new();
        let interval = self.bounds.interval;
        for (name, ns) in &mut self.namespaces {
            while let Some((seen, _)) = ns.by_seen.first() {
                if after(*seen, ttl) > now {
                    break;
                }
                let Some((_, id)) = ns.by_seen.pop_first() else { break };
                let Some(entry) = ns.entries.remove(&id) else { continue };
                let gone = Pointer::new(name, Event::TYPE, id);
                if entry.waiting.is_some() {
                    self.due.remove(&(after(entry.written, interval), gone.clone()));
                }
                actions.push(Action::Delete(gone));
            }
        }
        self.namespaces.retain(|_, ns| !ns.entries.is_empty());
        actions
    }

    /// When something next comes due: a waiting occurrence's write, or an
    /// Event's TTL.
    pub(crate) fn next_due(&self) -> Option<Timestamp> {
        let flush = self.due.first().map(|(at, _)| *at);
        let expiry = self.bounds.ttl.and_then(|ttl| {
            self.namespaces
                .values()
                .filter_map(|ns| ns.by_seen.first())
                .map(|(seen, _)| after(*seen, ttl))
                .min()
        });
        flush.into_iter().chain(expiry).min()
    }

    /// How many Events the engine keeps track of in `namespace`.
    #[cfg(test)]
    fn kept(&self, namespace: &str) -> usize {
        self.namespaces.get(namespace).map_or(0, |ns| ns.entries.len())
    }
}

/// What the Event becomes with `write` added to `stored`: a stored count
/// of 0 is an Event not written yet (its first write sets it whole).
pub(crate) fn merge(stored: &mut Event, write: &Write) {
    let count = if stored.deprecated_count <= 0 {
        *stored = write.latest.clone();
        stored.event_time = write.first.into();
        stored.deprecated_first_timestamp = write.first.into();
        write.count
    } else {
        let Write { latest, .. } = write;
        stored.note.clone_from(&latest.note);
        stored.related.clone_from(&latest.related);
        stored.reporting_instance.clone_from(&latest.reporting_instance);
        stored.count().saturating_add(write.count)
    };
    stored.deprecated_count = count;
    stored.deprecated_last_timestamp = write.last.into();
    stored.series =
        (count > 1).then(|| EventSeries { count, last_observed_time: write.last.into() });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::event::{EventType, ObjectReference};

    const NS: &str = "net";

    fn t(secs: u64) -> Timestamp {
        Timestamp::from_unix_nanos(1_795_878_000_000_000_000 + secs * 1_000_000_000)
    }

    fn bounds(max: usize, ttl: Option<u64>) -> Bounds {
        Bounds {
            interval: Duration::from_secs(10),
            max_per_namespace: max,
            ttl: ttl.map(Duration::from_secs),
        }
    }

    fn ptr(id: &str) -> Pointer {
        Pointer::new(NS, Event::TYPE, id)
    }

    fn event(note: &str, at: Timestamp) -> Event {
        Event {
            event_time: at.into(),
            series: None,
            reporting_controller: "cosi-runtime/C".into(),
            reporting_instance: "cosi-runtime".into(),
            action: "Reconcile".into(),
            reason: "ReconcileError".into(),
            regarding: ObjectReference::controller("C"),
            related: None,
            note: note.into(),
            event_type: EventType::Warning,
            deprecated_count: 1,
            deprecated_first_timestamp: at.into(),
            deprecated_last_timestamp: at.into(),
        }
    }

    /// Applies `actions` to a model of the stored Events.
    fn apply(stored: &mut HashMap<Pointer, Event>, actions: Vec<Action>) {
        for action in actions {
            match action {
                Action::Write(w) => {
                    let e = stored
                        .entry(w.pointer.clone())
                        .or_insert_with(|| Event { deprecated_count: 0, ..w.latest.clone() });
                    merge(e, &w);
                }
                Action::Delete(p) => {
                    stored.remove(&p);
                }
            }
        }
    }

    fn writes(actions: &[Action]) -> Vec<(String, i32)> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::Write(w) => Some((w.pointer.id().to_owned(), w.count)),
                Action::Delete(_) => None,
            })
            .collect()
    }

    #[test]
    fn the_first_occurrence_is_written_at_once_and_repeats_within_the_interval_wait() {
        let mut e = Engine::new(bounds(10, None));
        let mut stored = HashMap::new();
        let first = e.record(ptr("a"), event("one", t(0)), t(0));
        assert_eq!(writes(&first), [("a".to_owned(), 1)]);
        apply(&mut stored, first);
        for (i, s) in [1, 2, 3].into_iter().enumerate() {
            let later = e.record(ptr("a"), event(&format!("repeat {i}"), t(s)), t(s));
            assert!(later.is_empty(), "a repeat within the interval waits");
        }
        assert_eq!(e.next_due(), Some(t(10)));
        assert!(e.due(t(9)).is_empty());
        let flushed = e.due(t(10));
        assert_eq!(writes(&flushed), [("a".to_owned(), 3)]);
        apply(&mut stored, flushed);
        let a = &stored[&ptr("a")];
        assert_eq!((a.count(), a.deprecated_count, a.note.as_str()), (4, 4, "repeat 2"));
        let series = a.series.as_ref().expect("a repeat makes a series");
        assert_eq!(series.last_observed_time, t(3).into());
        assert_eq!(a.deprecated_last_timestamp, t(3).into());
        assert_eq!((a.event_time, a.deprecated_first_timestamp), (t(0).into(), t(0).into()));
        assert_eq!(e.next_due(), None, "nothing waits, no TTL");
    }

    #[test]
    fn a_repeat_after_the_interval_is_written_at_once_with_what_waited() {
        let mut e = Engine::new(bounds(10, None));
        let mut stored = HashMap::new();
        apply(&mut stored, e.record(ptr("a"), event("one", t(0)), t(0)));
        assert_eq!(writes(&e.record(ptr("a"), event("two", t(15)), t(15))), [("a".to_owned(), 1)]);
        // Nothing waits: a second repeat past the interval joins nothing.
        assert!(e.record(ptr("a"), event("three", t(16)), t(16)).is_empty());
        // A flush that came late: the next occurrence takes what waited along.
        let late = e.record(ptr("a"), event("four", t(40)), t(40));
        assert_eq!(writes(&late), [("a".to_owned(), 2)]);
        assert!(e.due(t(100)).is_empty(), "what waited was written with it");
    }

    #[test]
    fn distinct_events_do_not_wait_for_each_other() {
        let mut e = Engine::new(bounds(10, None));
        assert_eq!(writes(&e.record(ptr("a"), event("a", t(0)), t(0))), [("a".to_owned(), 1)]);
        assert_eq!(writes(&e.record(ptr("b"), event("b", t(1)), t(1))), [("b".to_owned(), 1)]);
    }

    #[test]
    fn past_the_bound_the_event_seen_least_recently_is_deleted() {
        let mut e = Engine::new(bounds(2, None));
        let mut stored = HashMap::new();
        apply(&mut stored, e.record(ptr("a"), event("a", t(0)), t(0)));
        apply(&mut stored, e.record(ptr("b"), event("b", t(1)), t(1)));
        // `a` is seen again: `b` is now the one seen least recently.
        apply(&mut stored, e.record(ptr("a"), event("a", t(2)), t(2)));
        let third = e.record(ptr("c"), event("c", t(3)), t(3));
        assert!(third.contains(&Action::Delete(ptr("b"))), "{third:?}");
        apply(&mut stored, third);
        let mut ids: Vec<_> = stored.keys().map(|p| p.id().to_owned()).collect();
        ids.sort();
        assert_eq!(ids, ["a", "c"]);
        assert_eq!(e.kept(NS), 2);
        // What waited for `a` is still written: it was not the one deleted.
        assert_eq!(writes(&e.due(t(10))), [("a".to_owned(), 1)]);
    }

    #[test]
    fn the_bound_is_per_namespace() {
        let mut e = Engine::new(bounds(1, None));
        e.record(ptr("a"), event("a", t(0)), t(0));
        let other = e.record(Pointer::new("other", Event::TYPE, "b"), event("b", t(1)), t(1));
        assert!(other.iter().all(|a| matches!(a, Action::Write(_))), "{other:?}");
        assert_eq!((e.kept(NS), e.kept("other")), (1, 1));
    }

    #[test]
    fn events_last_seen_a_ttl_ago_are_deleted() {
        let mut e = Engine::new(bounds(10, Some(60)));
        e.record(ptr("a"), event("a", t(0)), t(0));
        e.record(ptr("b"), event("b", t(30)), t(30));
        assert_eq!(e.next_due(), Some(t(60)));
        assert!(e.due(t(59)).is_empty());
        assert_eq!(e.due(t(60)), [Action::Delete(ptr("a"))]);
        assert_eq!(e.next_due(), Some(t(90)));
        // A repeat keeps an Event: it is seen again.
        e.record(ptr("b"), event("b", t(80)), t(80));
        assert!(e.due(t(100)).into_iter().all(|a| matches!(a, Action::Write(_))));
        assert_eq!(e.due(t(140)), [Action::Delete(ptr("b"))]);
        assert_eq!(e.next_due(), None);
        assert_eq!(e.kept(NS), 0, "nothing is kept of deleted Events");
    }

    #[test]
    fn flush_all_writes_everything_that_waits() {
        let mut e = Engine::new(bounds(10, None));
        e.record(ptr("a"), event("a", t(0)), t(0));
        e.record(ptr("a"), event("a", t(1)), t(1));
        e.record(ptr("b"), event("b", t(0)), t(0));
        e.record(ptr("b"), event("b", t(2)), t(2));
        e.record(ptr("b"), event("b", t(3)), t(3));
        let mut all = writes(&e.flush_all(t(4)));
        all.sort();
        assert_eq!(all, [("a".to_owned(), 1), ("b".to_owned(), 2)]);
        assert!(e.due(t(100)).is_empty());
    }

    #[test]
    fn a_merge_into_an_event_written_elsewhere_adds_to_its_count() {
        let mut stored = Event { deprecated_count: 5, ..event("old", t(0)) };
        let w = Write {
            pointer: ptr("a"),
            latest: event("new", t(20)),
            count: 2,
            first: t(10),
            last: t(20),
        };
        merge(&mut stored, &w);
        assert_eq!((stored.count(), stored.note.as_str()), (7, "new"));
        assert_eq!(stored.event_time, t(0).into(), "the first occurrence stays");
    }
}
