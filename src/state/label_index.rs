//! [`LabelIndex`]: the slots of a [`Collection`](super::collection::Collection)
//! by label, so that a list by label reads what matches instead of the kind.
//!
//! A generic controller finds what it made from one input by a label
//! (`cosi-actors`' `Transform` and `Cleanup` list their outputs by the
//! input's id on every reconcile); a Kubernetes client lists by a label
//! selector. Without an index each such list reads every resource of the
//! kind, and a controller that reconciles each of N inputs lists N outputs
//! N times: quadratic at a restart, when everything is reconciled once.
//!
//! The index keeps, per label key and value, the set of slots whose resource
//! carries that label. A query's equality (`key == value`) and set
//! (`key in (a, b)`) terms can each name their candidates; the smallest such
//! set is read, and every candidate is still checked against the whole query.
//!
//! Cost: a write that leaves the labels as they were costs one comparison of
//! the two maps (an empty map is a null pointer); a resource's labels cost a
//! set entry each, and a distinct label value its own copy of the strings.

use rustc_hash::FxHashSet;

use crate::hashing::SeededMap;
use crate::resource::{LabelQuery, LabelTerm, Labels};

/// Slots by label key, then value (see the [module docs](self)).
#[derive(Debug, Default)]
pub(crate) struct LabelIndex {
    /// Keys and values are the clients' (seeded, [`crate::hashing`]); slots
    /// are the collection's own numbers.
    by_key: SeededMap<String, SeededMap<String, FxHashSet<u32>>>,
}

impl LabelIndex {
    /// Indexes the labels of the resource stored in `slot`.
    pub(crate) fn insert(&mut self, slot: u32, labels: &Labels) {
        for (key, value) in labels.iter() {
            let values = match self.by_key.get_mut(key) {
                Some(values) => values,
                None => self.by_key.entry(key.to_owned()).or_default(),
            };
            let slots = match values.get_mut(value) {
                Some(slots) => slots,
                None => values.entry(value.to_owned()).or_default(),
            };
            slots.insert(slot);
        }
    }

    /// Forgets the labels of the resource that was in `slot`; a value (and
    /// a key) no resource carries any more is dropped with its set.
    pub(crate) fn remove(&mut self, slot: u32, labels: &Labels) {
        for (key, value) in labels.iter() {
            let Some(values) = self.by_key.get_mut(key) else { continue };
            if let Some(slots) = values.get_mut(value) {
                slots.remove(&slot);
                if slots.is_empty() {
                    values.remove(value);
                }
            }
            if values.is_empty() {
                self.by_key.remove(key);
            }
        }
    }

    /// The resource in `slot` had `old` labels and now has `new` ones.
    pub(crate) fn replace(&mut self, slot: u32, old: &Labels, new: &Labels) {
        // Most writes change the spec or the status, not the labels.
        if old == new {
            return;
        }
        self.remove(slot, old);
        self.insert(slot, new);
    }

    /// The slots that can match `query`, when one of its terms narrows them
    /// down: the smallest set any `Equal` or `In` term names (every match is
    /// in it; not every slot in it matches). `None` when no term can.
    pub(crate) fn candidates(&self, query: &LabelQuery) -> Option<Vec<u32>> {
        let mut best: Option<Vec<&FxHashSet<u32>>> = None;
        let size = |sets: &Vec<&FxHashSet<u32>>| sets.iter().map(|s| s.len()).sum::<usize>();
        for term in query.terms() {
            let sets = match term {
                LabelTerm::Equal { key, value } => self.sets(key, std::slice::from_ref(value)),
                LabelTerm::In { key, values } => self.sets(key, values),
                _ => continue,
            };
            if best.as_ref().is_none_or(|b| size(&sets) < size(b)) {
                best = Some(sets);
            }
        }
        // The values of one key are distinct, so their sets are disjoint
        // (an `In` that names a value twice is read once).
        best.map(|sets| sets.into_iter().flatten().copied().collect())
    }

    /// The sets of `key` with one of `values`, each value once.
    fn sets(&self, key: &str, values: &[String]) -> Vec<&FxHashSet<u32>> {
        let Some(by_value) = self.by_key.get(key) else { return Vec::new() };
        let mut sets: Vec<&FxHashSet<u32>> = Vec::new();
        for value in values {
            if let Some(set) = by_value.get(value.as_str())
                && !sets.iter().any(|s| std::ptr::eq(*s, set))
            {
                sets.push(set);
            }
        }
        sets
    }

    /// How many (key, value) pairs are indexed.
    #[cfg(test)]
    fn pairs(&self) -> usize {
        self.by_key.values().map(SeededMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().copied().collect()
    }

    fn sorted(slots: Option<Vec<u32>>) -> Option<Vec<u32>> {
        slots.map(|mut s| {
            s.sort_unstable();
            s
        })
    }

    #[test]
    fn equality_and_set_terms_name_their_slots_and_the_smallest_wins() {
        let mut index = LabelIndex::default();
        index.insert(0, &labels(&[("app", "dns"), ("tier", "edge")]));
        index.insert(1, &labels(&[("app", "dns"), ("tier", "core")]));
        index.insert(2, &labels(&[("app", "ntp"), ("tier", "edge")]));
        index.insert(3, &labels(&[("app", "dns"), ("tier", "edge")]));

        let q = LabelQuery::all().equal("app", "dns");
        assert_eq!(sorted(index.candidates(&q)), Some(vec![0, 1, 3]));
        let q = LabelQuery::all().equal("app", "dns").equal("tier", "core");
        assert_eq!(sorted(index.candidates(&q)), Some(vec![1]), "the smaller set");
        let q = LabelQuery::all().in_values("app", ["ntp", "dhcp", "ntp"]);
        assert_eq!(sorted(index.candidates(&q)), Some(vec![2]), "absent values add nothing");
        let q = LabelQuery::all().equal("app", "none");
        assert_eq!(index.candidates(&q), Some(vec![]), "nothing can match");
        let q = LabelQuery::all().exists("app").not_equal("tier", "edge");
        assert_eq!(index.candidates(&q), None, "no term narrows it");
        assert_eq!(index.candidates(&LabelQuery::all()), None);
    }

    #[test]
    fn changed_and_removed_labels_leave_no_trace() {
        let mut index = LabelIndex::default();
        let (a, b) = (labels(&[("input", "x")]), labels(&[("input", "y"), ("k", "v")]));
        index.insert(7, &a);
        index.replace(7, &a, &a);
        index.replace(7, &a, &b);
        assert_eq!(index.candidates(&LabelQuery::all().equal("input", "x")), Some(vec![]));
        assert_eq!(index.candidates(&LabelQuery::all().equal("input", "y")), Some(vec![7]));
        index.remove(7, &b);
        assert_eq!(index.pairs(), 0);
        assert!(index.by_key.is_empty(), "an unused key is dropped");
    }
}
