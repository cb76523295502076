//! The live watches of a state actor, and the history that lets a watch resume.
//!
//! Watches are kept by kind, and within a kind apart by target: those of the
//! whole kind in a list (a change is offered to each, which checks its label
//! query), those of one resource by its id (a change reaches only the
//! watches of its own resource). A finalizer coordinator holding thousands
//! of teardowns, each waiting on a watch of its resource, so costs each
//! change one lookup, not a pass over every waiting watch.

use std::collections::VecDeque;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::delivery::Outbox;
use super::event::{Event, WatchId};
use super::store::Change;
use super::watch::WatchTarget;
use crate::Error;
use crate::resource::{Id, Kind, KindMap};
use crate::shard::ShardMask;

pub(crate) struct Subscription {
    pub(crate) id: WatchId,
    pub(crate) target: WatchTarget,
    pub(crate) outbox: Outbox,
    /// Only changes of keys in these shards are offered (a sharded
    /// controller's primary watch).
    pub(crate) shards: Option<Arc<ShardMask>>,
}

impl Subscription {
    /// Whether a change of the resource at `ptr` may be offered.
    #[inline]
    pub(crate) fn admits(&self, ptr: &crate::resource::Pointer) -> bool {
        self.shards.as_ref().is_none_or(|m| m.admits(ptr))
    }
}

/// A revision domain: 0 for the revisions the state assigns itself (memory
/// and exclusive backends), `1 + i` for shared backend `i`, which assigns its own.
pub(crate) type Domain = usize;

/// The watches of one kind (see the [module docs](self)).
#[derive(Default)]
struct KindWatches {
    /// Watches of the whole kind, in the order they came.
    all: Vec<Subscription>,
    /// Watches of one resource, by its id, each list in the order they came.
    /// (Ids are the clients': seeded, [`crate::hashing`].)
    one: crate::hashing::SeededMap<Id, Vec<Subscription>>,
    /// Watches of one resource added since `one` was last pruned whole.
    added: usize,
    /// How many watches of one resource it held after that prune.
    kept: usize,
}

impl KindWatches {
    fn is_empty(&self) -> bool {
        self.all.is_empty() && self.one.is_empty()
    }
}

/// Where a watch is kept: its kind, and the id of its resource for a watch
/// of one resource.
type Place = (Kind, Option<Id>);

/// Drops the closed subscriptions of `subs`, forgetting their places.
fn prune<P>(subs: &mut Vec<Subscription>, places: &mut FxHashMap<WatchId, P>) {
    subs.retain(|s| {
        let keep = !s.outbox.is_closed();
        if !keep {
            places.remove(&s.id);
        }
        keep
    });
}

/// Offers `change` to each of `subs` (closed ones skipped); returns whether
/// one was closed.
fn offer(
    subs: &mut [Subscription],
    change: &Change,
    revision: u64,
    pending: &mut Vec<WatchId>,
) -> bool {
    let mut closed = false;
    for sub in subs {
        if sub.outbox.is_closed() {
            closed = true;
            continue;
        }
        if !sub.admits(change.resource().pointer()) {
            continue;
        }
        if let Some(event) = sub.target.event_for(change) {
            let was_pending = sub.outbox.has_pending();
            sub.outbox.publish(event, revision);
            if !was_pending && sub.outbox.has_pending() {
                pending.push(sub.id);
            }
        }
    }
    closed
}

/// `domain`'s entry of a per-domain table, made (empty) if it is the
/// first of that domain: domains are few and numbered from 0.
fn of_domain<T: Default>(table: &mut Vec<T>, domain: Domain) -> &mut T {
    if table.len() <= domain {
        table.resize_with(domain + 1, T::default);
    }
    &mut table[domain]
}

/// Subscriptions grouped by kind.
pub(crate) struct Watches {
    by_kind: KindMap<KindWatches>,
    places: FxHashMap<WatchId, Place>,
    next_id: u64,
    /// The latest changes, oldest first, for watches that resume: each with
    /// its revision and the revision domain it belongs to (0: the state's
    /// own counter; one more per shared store, whose revisions are its own).
    history: VecDeque<(u64, Domain, Change)>,
    history_limit: usize,
    /// Per domain: every change up to this revision may be gone from the
    /// history (a state just opened from a backend, a shared store's feed
    /// that lost its place, or no history kept at all).
    compacted: Vec<u64>,
    /// Per domain, per kind: the newest of its changes that the history
    /// dropped to make room. A watch of a quiet kind resumes from its last
    /// event however many other kinds' changes came since: only its own
    /// kind's dropped changes could be missing. (Looked up by `&Kind` on
    /// every dropped change: no key is built, a new kind's aside.)
    dropped: Vec<KindMap<u64>>,
    /// Watches whose batched events wait for [`Watches::send_pending`].
    pending: Vec<WatchId>,
    /// Watches of a type in every namespace, by type, each list in the
    /// order they came. Empty unless someone watches across namespaces: a
    /// change then costs one `is_empty` check more, nothing else.
    across: FxHashMap<Box<str>, Vec<Subscription>>,
    /// The type of each watch in `across`.
    across_places: FxHashMap<WatchId, Box<str>>,
}

impl Default for Watches {
    fn default() -> Self {
        Watches::with_history(DEFAULT_HISTORY)
    }
}

/// How many changes a state keeps for watches that resume, by default.
pub const DEFAULT_HISTORY: usize = 1024;

impl Watches {
    pub(crate) fn with_history(history_limit: usize) -> Self {
        Watches {
            by_kind: KindMap::default(),
            places: FxHashMap::default(),
            next_id: 0,
            history: VecDeque::with_capacity(history_limit.min(1024)),
            history_limit,
            compacted: vec![0],
            dropped: Vec::new(),
            pending: Vec::new(),
            across: FxHashMap::default(),
            across_places: FxHashMap::default(),
        }
    }

    /// Marks every revision up to `revision` as no longer in the history
    /// (what a state that was just opened from a backend knows).
    pub(crate) fn compacted_up_to(&mut self, domain: Domain, revision: u64) {
        let compacted = of_domain(&mut self.compacted, domain);
        *compacted = (*compacted).max(revision);
    }

    /// Notes that the history dropped a change of `kind` at `revision`
    /// (dropped in revision order: the newest so far).
    fn dropped_one(&mut self, domain: Domain, kind: &Kind, revision: u64) {
        let marks = of_domain(&mut self.dropped, domain);
        match marks.get_mut(kind) {
            Some(mark) => *mark = revision,
            None => {
                marks.insert(kind.clone(), revision);
            }
        }
    }

    /// The events `target` missed after `revision`, each with its revision,
    /// if the history still holds every change since then. `current` is the
    /// revision of `domain` (the target's store) now.
    ///
    /// # Errors
    /// [`Error::Compacted`] when changes after `revision` were already dropped
    /// from the history (or `revision` is ahead of `current`).
    pub(crate) fn missed(
        &self,
        target: &WatchTarget,
        revision: u64,
        current: u64,
        domain: Domain,
    ) -> Result<Vec<(Event, u64)>, Error> {
        let compacted = |reason: String| Error::Compacted {
            resource: match target {
                WatchTarget::Resource(p) => p.to_string(),
                WatchTarget::Kind { kind, .. } => kind.to_string(),
                WatchTarget::AllNamespaces { kind, .. } => {
                    format!("{} in every namespace", kind.resource_type())
                }
            },
            revision,
            reason,
        };
        if revision > current {
            return Err(compacted(format!("the state is only at revision {current}")));
        }
        // Every change of the target's kind after `revision` must still be in
        // the history.
        // (Across namespaces: the newest dropped change of any kind of its type.)
        let dropped = self.dropped.get(domain).and_then(|d| match target {
            WatchTarget::AllNamespaces { kind, .. } => d
                .iter()
                .filter(|(k, _)| k.resource_type() == kind.resource_type())
                .map(|(_, r)| *r)
                .max(),
            _ => d.get(target.kind()).copied(),
        });
        let kept_after = self.compacted.get(domain).copied().unwrap_or(0).max(dropped.unwrap_or(0));
        if revision < kept_after {
            return Err(compacted(format!(
                "changes up to revision {kept_after} are no longer kept; bootstrap again"
            )));
        }
        Ok(self
            .history
            .iter()
            .filter(|(r, d, _)| *d == domain && *r > revision)
            // The history holds every kind's changes; a target's `event_for`
            // trusts that it sees only its own kind's (live ones are routed by kind).
            .filter(|(_, _, change)| target.covers(change.resource().pointer()))
            .filter_map(|(r, _, change)| target.event_for(change).map(|e| (e, *r)))
            .collect())
    }

    pub(crate) fn next_id(&mut self) -> WatchId {
        self.next_id += 1;
        WatchId(self.next_id)
    }

    /// Keeps `sub`. Subscribers that went away without unwatching are
    /// pruned on the next change they would see; a quiet kind's are pruned
    /// here instead, so that watches opened and dropped on it never pile up:
    /// the watches of the whole kind and those of the new watch's resource
    /// at every new watch, every watch of one resource of the kind once as
    /// many new ones came as it holds (amortized: a constant per watch).
    pub(crate) fn add(&mut self, sub: Subscription) {
        let kind = sub.target.kind().clone();
        let id = match &sub.target {
            WatchTarget::Resource(ptr) => Some(Id::from(ptr.id())),
            WatchTarget::Kind { .. } => None,
            WatchTarget::AllNamespaces { .. } => return self.add_across(sub),
        };
        self.places.insert(sub.id, (kind.clone(), id.clone()));
        let watches = self.by_kind.entry(kind).or_default();
        prune(&mut watches.all, &mut self.places);
        match id {
            None => watches.all.push(sub),
            Some(id) => {
                watches.added += 1;
                if watches.added >= watches.kept.max(64) {
                    let places = &mut self.places;
                    watches.one.retain(|_, subs| {
                        prune(subs, places);
                        !subs.is_empty()
                    });
                    watches.added = 0;
                    watches.kept = watches.one.values().map(Vec::len).sum();
                }
                let subs = watches.one.entry(id).or_default();
                prune(subs, &mut self.places);
                subs.push(sub);
            }
        }
    }

    /// Keeps `sub`, a watch of a type in every namespace (pruning the
    /// closed watches of that type).
    fn add_across(&mut self, sub: Subscription) {
        let resource_type: Box<str> = sub.target.kind().resource_type().into();
        self.across_places.insert(sub.id, resource_type.clone());
        let subs = self.across.entry(resource_type).or_default();
        prune(subs, &mut self.across_places);
        subs.push(sub);
    }

    /// Offers `change` to the watches of its type in every namespace.
    fn publish_across(&mut self, change: &Change, revision: u64) {
        let resource_type = change.resource().pointer().resource_type();
        let Some(subs) = self.across.get_mut(resource_type) else {
            return;
        };
        if offer(subs, change, revision, &mut self.pending) {
            prune(subs, &mut self.across_places);
            if subs.is_empty() {
                self.across.remove(resource_type);
            }
        }
    }

    pub(crate) fn remove(&mut self, id: WatchId) -> bool {
        if let Some(resource_type) = self.across_places.remove(&id) {
            if let Some(subs) = self.across.get_mut(&resource_type) {
                subs.retain(|s| s.id != id);
                if subs.is_empty() {
                    self.across.remove(&resource_type);
                }
            }
            return true;
        }
        let Some((kind, resource)) = self.places.remove(&id) else {
            return false;
        };
        let Some(watches) = self.by_kind.get_mut(&kind) else {
            return true;
        };
        match resource {
            None => watches.all.retain(|s| s.id != id),
            Some(resource) => {
                if let Some(subs) = watches.one.get_mut(&resource) {
                    subs.retain(|s| s.id != id);
                    if subs.is_empty() {
                        watches.one.remove(&resource);
                    }
                }
            }
        }
        if watches.is_empty() {
            self.by_kind.remove(&kind);
        }
        true
    }

    pub(crate) fn get_mut(&mut self, id: WatchId) -> Option<&mut Subscription> {
        if !self.across_places.is_empty()
            && let Some(resource_type) = self.across_places.get(&id)
        {
            return self.across.get_mut(resource_type)?.iter_mut().find(|s| s.id == id);
        }
        let (kind, resource) = self.places.get(&id)?;
        let watches = self.by_kind.get_mut(kind)?;
        let subs = match resource {
            None => &mut watches.all,
            Some(resource) => watches.one.get_mut(resource)?,
        };
        subs.iter_mut().find(|s| s.id == id)
    }

    /// Delivers `change` (of store revision `revision`) to every subscription
    /// that sees it, pruning closed ones, and keeps it in the history.
    ///
    /// A destroy is a write of its own: its `Destroyed` event (and the
    /// history) carries the resource's last state with the destroy's
    /// revision, not the revision of the resource's last update, so that the
    /// revisions one watch sees never go backwards.
    pub(crate) fn publish(&mut self, change: &Change, revision: u64) {
        self.publish_in(change, revision, 0);
    }

    /// [`publish`](Self::publish) of a change in revision domain `domain`.
    pub(crate) fn publish_in(&mut self, change: &Change, revision: u64, domain: Domain) {
        let stamped;
        let change = match change {
            Change::Destroyed(r) if r.metadata().revision() != revision => {
                let mut r = r.clone();
                r.metadata_mut().set_revision(revision);
                stamped = Change::Destroyed(r);
                &stamped
            }
            _ => change,
        };
        if self.history.len() >= self.history_limit
            && let Some((dropped, in_domain, old)) = self.history.pop_front()
        {
            self.dropped_one(in_domain, old.resource().pointer().kind(), dropped);
        }
        if self.history_limit > 0 {
            self.history.push_back((revision, domain, change.clone()));
        } else {
            self.compacted_up_to(domain, revision);
        }
        if !self.across.is_empty() {
            self.publish_across(change, revision);
        }
        let pointer = change.resource().pointer();
        let Some(watches) = self.by_kind.get_mut(pointer.kind()) else {
            return;
        };
        if offer(&mut watches.all, change, revision, &mut self.pending) {
            prune(&mut watches.all, &mut self.places);
        }
        // (Most kinds have no watch of one resource: no hash then.)
        if !watches.one.is_empty()
            && let Some(subs) = watches.one.get_mut(pointer.id())
            && offer(subs, change, revision, &mut self.pending)
        {
            prune(subs, &mut self.places);
            if subs.is_empty() {
                watches.one.remove(pointer.id());
            }
        }
        if watches.is_empty() {
            let kind = pointer.kind().clone();
            self.by_kind.remove(&kind);
        }
    }

    /// Sends every watch's batched events, one message per watch.
    pub(crate) fn send_pending(&mut self) {
        // Taken out for the loop and put back: the list keeps its capacity.
        let mut pending = std::mem::take(&mut self.pending);
        for id in pending.drain(..) {
            if let Some(sub) = self.get_mut(id) {
                sub.outbox.send_pending();
            }
        }
        self.pending = pending;
    }

    pub(crate) fn len(&self) -> usize {
        self.places.len() + self.across_places.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_specs::Num;
    use crate::resource::{LabelQuery, Pointer, Resource, Spec};

    fn created(id: &str) -> Change {
        Change::Created(Resource::new("ns", id, Num(1)).into_any())
    }

    fn kind_target() -> WatchTarget {
        WatchTarget::Kind { kind: Kind::of::<Num>("ns"), query: LabelQuery::all() }
    }

    type Received = futures::channel::mpsc::UnboundedReceiver<crate::state::WatchEvent>;

    /// A watch of `target` into a channel, kept by `w`.
    fn watch(w: &mut Watches, target: WatchTarget) -> (WatchId, Received) {
        let (tx, rx) = futures::channel::mpsc::unbounded();
        let id = w.next_id();
        let outbox = Outbox::new(id, super::super::delivery::Sink::Channel(tx), 1024, None, None);
        w.add(Subscription { id, target, outbox, shards: None });
        (id, rx)
    }

    fn one(id: &str) -> WatchTarget {
        WatchTarget::Resource(Pointer::typed::<Num>("ns", id).erase())
    }

    /// The ids of the events waiting in `rx`.
    fn received(rx: &mut Received) -> Vec<String> {
        std::iter::from_fn(|| rx.try_recv().ok())
            .map(|e| e.event().pointer().unwrap().id().to_owned())
            .collect()
    }

    #[test]
    fn a_change_reaches_the_kinds_watches_and_only_its_own_resources() {
        let mut w = Watches::with_history(0);
        let (_, mut all) = watch(&mut w, kind_target());
        let (_, mut a) = watch(&mut w, one("a"));
        let (_, mut a_again) = watch(&mut w, one("a"));
        let (_, mut b) = watch(&mut w, one("b"));
        let (_, mut elsewhere) =
            watch(&mut w, WatchTarget::Resource(Pointer::typed::<Num>("other", "a").erase()));
        for (rev, id) in [(1, "a"), (2, "b"), (3, "c"), (4, "a")] {
            w.publish(&created(id), rev);
        }
        assert_eq!(received(&mut all), ["a", "b", "c", "a"]);
        assert_eq!(received(&mut a), ["a", "a"]);
        assert_eq!(received(&mut a_again), ["a", "a"]);
        assert_eq!(received(&mut b), ["b"]);
        assert!(received(&mut elsewhere).is_empty(), "another namespace's resource");
        assert_eq!(w.len(), 5);
    }

    fn across() -> WatchTarget {
        WatchTarget::all_namespaces(Num::TYPE, LabelQuery::all())
    }

    fn in_ns(ns: &str, id: &str) -> Change {
        Change::Created(Resource::new(ns, id, Num(1)).into_any())
    }

    #[test]
    fn a_watch_across_namespaces_sees_its_type_in_every_namespace_only() {
        let mut w = Watches::with_history(0);
        let (id, mut all) = watch(&mut w, across());
        let (_, mut kind) = watch(&mut w, kind_target());
        w.publish(&in_ns("ns", "a"), 1);
        w.publish(&in_ns("later", "b"), 2);
        let other = Resource::new("ns", "c", crate::resource::test_specs::Text("x".into()));
        w.publish(&Change::Created(other.into_any()), 3);
        assert_eq!(received(&mut all), ["a", "b"]);
        assert_eq!(received(&mut kind), ["a"]);
        assert_eq!(w.len(), 2);
        assert!(w.get_mut(id).is_some());
        assert!(w.remove(id));
        assert!(!w.remove(id));
        assert_eq!(w.len(), 1);
        assert!(w.across.is_empty(), "the type's list went with its last watch");
    }

    #[test]
    fn a_closed_watch_across_namespaces_is_pruned_by_its_next_change() {
        let mut w = Watches::with_history(0);
        let (_, rx) = watch(&mut w, across());
        drop(rx);
        w.publish(&in_ns("ns", "a"), 1);
        assert_eq!(w.len(), 0);
        assert!(w.across.is_empty());
    }

    #[test]
    fn a_watch_across_namespaces_resumes_from_every_namespaces_history() {
        let mut w = Watches::with_history(3);
        w.publish(&in_ns("x", "a"), 1);
        w.publish(&in_ns("y", "b"), 2);
        w.publish(&in_ns("z", "c"), 3);
        let missed = w.missed(&across(), 1, 3, 0).unwrap();
        assert_eq!(missed.iter().map(|(_, r)| *r).collect::<Vec<_>>(), [2, 3]);
        w.publish(&in_ns("w", "d"), 4);
        // Revision 1 (namespace x) was dropped: a resume from before it fails,
        // though no kind of namespace w lost anything.
        assert!(w.missed(&across(), 0, 4, 0).unwrap_err().is_compacted());
        assert_eq!(w.missed(&across(), 1, 4, 0).unwrap().len(), 3);
    }

    #[test]
    fn removed_and_closed_watches_of_one_resource_are_forgotten() {
        let mut w = Watches::with_history(0);
        let (a, _a) = watch(&mut w, one("a"));
        let (_, b) = watch(&mut w, one("b"));
        let (_, mut kind) = watch(&mut w, kind_target());
        assert!(w.remove(a));
        assert!(!w.remove(a), "already gone");
        assert!(w.get_mut(a).is_none());
        drop(b);
        assert_eq!(w.len(), 2, "closed but not yet seen");
        w.publish(&created("b"), 1);
        assert_eq!(w.len(), 1, "pruned by the change it would have seen");
        assert_eq!(received(&mut kind), ["b"]);
        assert!(w.by_kind.values().all(|k| k.one.is_empty()));
    }

    #[test]
    fn watches_of_quiet_resources_that_closed_never_pile_up() {
        let mut w = Watches::with_history(0);
        let (_, _kept) = watch(&mut w, one("kept"));
        for k in 0..1_000 {
            // Opened and dropped without unwatching; their resources never change.
            drop(watch(&mut w, one(&format!("r{k}"))));
            assert!(w.len() <= 2 * 64 + 1, "{} watches held after {k}", w.len());
        }
        let (id, _) = watch(&mut w, one("last"));
        assert!(w.get_mut(id).is_some());
    }

    #[test]
    fn missed_replays_what_came_after_a_revision() {
        let mut w = Watches::with_history(10);
        for (rev, id) in [(1, "a"), (2, "b"), (3, "c")] {
            w.publish(&created(id), rev);
        }
        let ids = |events: Vec<(Event, u64)>| -> Vec<(String, u64)> {
            events.iter().map(|(e, r)| (e.pointer().unwrap().id().to_owned(), *r)).collect()
        };
        assert_eq!(
            ids(w.missed(&kind_target(), 1, 3, 0).unwrap()),
            [("b".into(), 2), ("c".into(), 3)]
        );
        assert!(w.missed(&kind_target(), 3, 3, 0).unwrap().is_empty());
        let one = WatchTarget::Resource(Pointer::typed::<Num>("ns", "c").erase());
        assert_eq!(ids(w.missed(&one, 0, 3, 0).unwrap()), [("c".into(), 3)]);
        assert!(w.missed(&kind_target(), 4, 3, 0).unwrap_err().is_compacted());
    }

    #[test]
    fn a_full_history_forgets_the_oldest_and_says_so() {
        let mut w = Watches::with_history(2);
        for rev in 1..=5 {
            w.publish(&created(&format!("r{rev}")), rev);
        }
        assert_eq!(w.missed(&kind_target(), 3, 5, 0).unwrap().len(), 2);
        let err = w.missed(&kind_target(), 2, 5, 0).unwrap_err();
        assert!(err.is_compacted() && err.to_string().contains("up to revision 3"), "{err}");
        let mut off = Watches::with_history(0);
        off.publish(&created("a"), 1);
        assert!(off.missed(&kind_target(), 0, 1, 0).unwrap_err().is_compacted());
        assert!(off.missed(&kind_target(), 1, 1, 0).unwrap().is_empty());
    }

    #[test]
    fn a_quiet_kind_resumes_after_other_kinds_overflowed_the_history() {
        let mut w = Watches::with_history(4);
        w.publish(&created("a"), 1);
        for rev in 2..=100 {
            let other = Resource::new("elsewhere", format!("x{rev}"), Num(1)).into_any();
            w.publish(&Change::Created(other), rev);
        }
        w.publish(&created("b"), 101);
        // Revision 1 was dropped long ago, but it was this kind's only
        // change before `b`: a watch that saw `a` misses nothing but `b`.
        let missed = w.missed(&kind_target(), 1, 101, 0).unwrap();
        assert_eq!(missed.len(), 1);
        assert_eq!(missed[0].1, 101);
        // Before `a`, it would miss `a` itself: gone.
        let err = w.missed(&kind_target(), 0, 101, 0).unwrap_err();
        assert!(err.is_compacted() && err.to_string().contains("up to revision 1"), "{err}");
        let elsewhere =
            WatchTarget::Kind { kind: Kind::of::<Num>("elsewhere"), query: LabelQuery::all() };
        assert!(w.missed(&elsewhere, 50, 101, 0).unwrap_err().is_compacted());
        assert_eq!(w.missed(&elsewhere, 97, 101, 0).unwrap().len(), 3);
    }

    #[test]
    fn a_resumed_watch_replays_only_its_own_kind() {
        let mut w = Watches::with_history(10);
        w.publish(&created("a"), 1);
        w.publish(&Change::Created(Resource::new("elsewhere", "x", Num(1)).into_any()), 2);
        w.publish(&created("b"), 3);
        let missed = w.missed(&kind_target(), 0, 3, 0).unwrap();
        let ids: Vec<_> =
            missed.iter().map(|(e, _)| e.pointer().unwrap().id().to_owned()).collect();
        assert_eq!(ids, ["a", "b"], "another namespace's change is not replayed");
    }

    #[test]
    fn each_revision_domain_keeps_its_own_history_and_compaction() {
        let mut w = Watches::with_history(2);
        // The state's own counter (domain 0) and a shared store's (domain 1)
        // run independently; one history holds both.
        w.publish_in(&created("local"), 3, 0);
        w.publish_in(&created("far-1"), 1_000, 1);
        w.publish_in(&created("far-2"), 1_001, 1);
        let err = w.missed(&kind_target(), 0, 3, 0).unwrap_err();
        assert!(err.to_string().contains("up to revision 3"), "{err}");
        let far = w.missed(&kind_target(), 1_000, 1_001, 1).unwrap();
        assert_eq!(far.len(), 1, "domain 1 kept what came after 1,000");
        assert!(w.missed(&kind_target(), 2, 3, 0).is_err(), "domain 0 lost revision 3");
        assert!(w.missed(&kind_target(), 3, 3, 0).unwrap().is_empty());
        assert_eq!(w.missed(&kind_target(), 999, 1_001, 1).unwrap().len(), 2);
        w.publish_in(&created("far-3"), 1_002, 1);
        assert!(w.missed(&kind_target(), 999, 1_002, 1).unwrap_err().is_compacted());
    }
}
