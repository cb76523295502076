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

/// Subscriptions grouped by kind.
pub(crate) struct Watches {
    by_kind: KindMap<Vec<Subscription>>,
    kind_of: HashMap<WatchId, Kind>,
    next_id: u64,
    /// The latest changes, oldest first, for watches that resume.
    history: VecDeque<(u64, Change)>,
    history_limit: usize,
    /// Every change up to this revision may be gone from the history.
    compacted: u64,
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
            compacted: 0,
            pending: Vec::new(),
        }
    }

    /// Marks every revision up to `revision` as no longer in the history
    /// (what a state that was just opened from a backend knows).
    pub(crate) fn compacted_up_to(&mut self, revision: u64) {
        self.compacted = self.compacted.max(revision);
    }

    /// The events `target` missed after `revision`, each with its revision,
    /// if the history still holds every change since then. `current` is the
    /// store revision now.
    ///
    /// # Errors
    /// [`Error::Compacted`] when changes after `revision` were already dropped
    /// from the history (or `revision` is ahead of `current`).
    pub(crate) fn missed(
        &self,
        target: &WatchTarget,
        revision: u64,
        current: u64,
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
        if revision < self.compacted {
            return Err(compacted(format!(
                "changes up to revision {} are no longer kept; bootstrap again",
                self.compacted
            )));
        }
        Ok(self
            .history
            .iter()
            .filter(|(r, _)| *r > revision)
            .filter_map(|(r, change)| target.event_for(change).map(|e| (e, *r)))
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
            && let Some((dropped, _)) = self.history.pop_front()
        {
            self.compacted = self.compacted.max(dropped);
        }
        if self.history_limit > 0 {
            self.history.push_back((revision, change.clone()));
        } else {
            self.compacted = self.compacted.max(revision);
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
            ids(w.missed(&kind_target(), 1, 3).unwrap()),
            [("b".into(), 2), ("c".into(), 3)]
        );
        assert!(w.missed(&kind_target(), 3, 3).unwrap().is_empty());
        let one = WatchTarget::Resource(Pointer::of::<Num>("ns", "c"));
        assert_eq!(ids(w.missed(&one, 0, 3).unwrap()), [("c".into(), 3)]);
        assert!(w.missed(&kind_target(), 4, 3).unwrap_err().is_compacted());
    }

    #[test]
    fn a_full_history_forgets_the_oldest_and_says_so() {
        let mut w = Watches::with_history(2);
        for rev in 1..=5 {
            w.publish(&created(&format!("r{rev}")), rev);
        }
        assert_eq!(w.missed(&kind_target(), 3, 5).unwrap().len(), 2);
        let err = w.missed(&kind_target(), 2, 5).unwrap_err();
        assert!(err.is_compacted() && err.to_string().contains("up to revision 3"), "{err}");
        let mut off = Watches::with_history(0);
        off.publish(&created("a"), 1);
        assert!(off.missed(&kind_target(), 0, 1).unwrap_err().is_compacted());
        assert!(off.missed(&kind_target(), 1, 1).unwrap().is_empty());
    }
}
