//! The live watches of a state actor, and the history that lets a watch resume.

use std::collections::{HashMap, VecDeque};

use super::delivery::Outbox;
use super::event::{Event, WatchId};
use super::store::Change;
use super::watch::WatchTarget;
use crate::Error;
use crate::resource::{Kind, KindMap};

pub(crate) struct Subscription {
    pub(crate) id: WatchId,
    pub(crate) target: WatchTarget,
    pub(crate) outbox: Outbox,
}

/// A revision domain: 0 for the revisions the state assigns itself (memory
/// and exclusive backends), `1 + i` for shared backend `i`, which assigns its own.
pub(crate) type Domain = usize;

/// Subscriptions grouped by kind.
pub(crate) struct Watches {
    by_kind: KindMap<Vec<Subscription>>,
    kind_of: HashMap<WatchId, Kind>,
    next_id: u64,
    /// The latest changes, oldest first, for watches that resume: each with
    /// its revision and the revision domain it belongs to (0: the state's
    /// own counter; one more per shared store, whose revisions are its own).
    history: VecDeque<(u64, Domain, Change)>,
    history_limit: usize,
    /// Per domain: every change up to this revision may be gone from the history.
    compacted: Vec<u64>,
    /// Watches whose batched events wait for [`Watches::send_pending`].
    pending: Vec<WatchId>,
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
            kind_of: HashMap::new(),
            next_id: 0,
            history: VecDeque::with_capacity(history_limit.min(1024)),
            history_limit,
            compacted: vec![0],
            pending: Vec::new(),
        }
    }

    /// Marks every revision up to `revision` as no longer in the history
    /// (what a state that was just opened from a backend knows).
    pub(crate) fn compacted_up_to(&mut self, domain: Domain, revision: u64) {
        let compacted = self.compacted_mut(domain);
        *compacted = (*compacted).max(revision);
    }

    fn compacted_mut(&mut self, domain: Domain) -> &mut u64 {
        if self.compacted.len() <= domain {
            self.compacted.resize(domain + 1, 0);
        }
        &mut self.compacted[domain]
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
            },
            revision,
            reason,
        };
        if revision > current {
            return Err(compacted(format!("the state is only at revision {current}")));
        }
        // Every change after `revision` must still be in the history.
        let kept_after = self.compacted.get(domain).copied().unwrap_or(0);
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
            .filter(|(_, _, change)| change.resource().pointer().kind() == target.kind())
            .filter_map(|(r, _, change)| target.event_for(change).map(|e| (e, *r)))
            .collect())
    }

    pub(crate) fn next_id(&mut self) -> WatchId {
        self.next_id += 1;
        WatchId(self.next_id)
    }

    pub(crate) fn add(&mut self, sub: Subscription) {
        let kind = sub.target.kind().clone();
        // Subscribers that went away without unwatching are pruned on the next
        // change of their kind; a quiet kind gets pruned here instead, so
        // watches opened and dropped on it never pile up.
        self.prune_kind(&kind);
        self.kind_of.insert(sub.id, kind.clone());
        self.by_kind.entry(kind).or_default().push(sub);
    }

    pub(crate) fn remove(&mut self, id: WatchId) -> bool {
        let Some(kind) = self.kind_of.remove(&id) else {
            return false;
        };
        if let Some(subs) = self.by_kind.get_mut(&kind) {
            subs.retain(|s| s.id != id);
            if subs.is_empty() {
                self.by_kind.remove(&kind);
            }
        }
        true
    }

    pub(crate) fn get_mut(&mut self, id: WatchId) -> Option<&mut Subscription> {
        let kind = self.kind_of.get(&id)?;
        self.by_kind.get_mut(kind)?.iter_mut().find(|s| s.id == id)
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
            && let Some((dropped, in_domain, _)) = self.history.pop_front()
        {
            self.compacted_up_to(in_domain, dropped);
        }
        if self.history_limit > 0 {
            self.history.push_back((revision, domain, change.clone()));
        } else {
            self.compacted_up_to(domain, revision);
        }
        let kind = change.resource().pointer().kind();
        let Some(subs) = self.by_kind.get_mut(kind) else {
            return;
        };
        let mut closed = false;
        for sub in subs.iter_mut() {
            if sub.outbox.is_closed() {
                closed = true;
                continue;
            }
            if let Some(event) = sub.target.event_for(change) {
                let was_pending = sub.outbox.has_pending();
                sub.outbox.publish(event, revision);
                if !was_pending && sub.outbox.has_pending() {
                    self.pending.push(sub.id);
                }
            }
        }
        if closed {
            let kind = kind.clone();
            self.prune_kind(&kind);
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

    fn prune_kind(&mut self, kind: &Kind) {
        let Some(subs) = self.by_kind.get_mut(kind) else {
            return;
        };
        let kind_of = &mut self.kind_of;
        subs.retain(|s| {
            let keep = !s.outbox.is_closed();
            if !keep {
                kind_of.remove(&s.id);
            }
            keep
        });
        if subs.is_empty() {
            self.by_kind.remove(kind);
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.kind_of.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_specs::Num;
    use crate::resource::{LabelQuery, Pointer, Resource};

    fn created(id: &str) -> Change {
        Change::Created(Resource::new("ns", id, Num(1)).into_any())
    }

    fn kind_target() -> WatchTarget {
        WatchTarget::Kind { kind: Kind::of::<Num>("ns"), query: LabelQuery::all() }
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
        let one = WatchTarget::Resource(Pointer::of::<Num>("ns", "c"));
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
