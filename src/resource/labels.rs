//! Ordered string maps ([`Labels`], [`Annotations`]) and finalizer sets ([`Finalizers`]).
//!
//! All three are stored compactly: an empty collection takes one pointer and no
//! allocation, which is what most resources carry.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An ordered map of string keys to string values, used for labels and annotations.
///
/// Iteration is in key order. Keys are validated by the state (see
/// [`validate`](crate::resource::validate)); the map itself accepts any string.
///
/// ```
/// use cosi_runtime::resource::Labels;
///
/// let mut labels = Labels::new();
/// labels.insert("net.cosi.dev/managed", "true");
/// labels.insert("app", "dhcp");
/// assert_eq!(labels.get("app"), Some("dhcp"));
/// let keys: Vec<&str> = labels.iter().map(|(k, _)| k).collect();
/// assert_eq!(keys, ["app", "net.cosi.dev/managed"]);
/// ```
// An empty map is one null pointer (most resources carry none); a full one
// is its entries sorted by key in one boxed slice: a resource with one label
// costs ~60 bytes of heap, where a `BTreeMap` node costs ~560 whatever the
// number of entries (it allocates room for eleven). Maps are small and
// rarely written; lookups are a binary search.
// (The `Vec` is boxed so that the empty map stays one thin pointer.)
#[allow(clippy::box_collection)]
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StringMap(Option<Box<Vec<(String, String)>>>);

/// The labels of a resource: queried by [`LabelQuery`](crate::resource::LabelQuery).
pub type Labels = StringMap;

/// The annotations of a resource: free-form notes that queries never look at.
pub type Annotations = StringMap;

impl StringMap {
    /// An empty map.
    pub const fn new() -> Self {
        StringMap(None)
    }

    fn entries(&self) -> &[(String, String)] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }

    fn find(&self, key: &str) -> Result<usize, usize> {
        self.entries().binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.find(key).ok().map(|i| self.entries()[i].1.as_str())
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.find(key).is_ok()
    }

    /// Sets `key` to `value`, returning the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        let (key, value) = (key.into(), value.into());
        match self.find(&key) {
            Ok(i) => {
                let entries = self.0.as_mut().expect("found in a map that has entries");
                Some(std::mem::replace(&mut entries[i].1, value))
            }
            Err(i) => {
                let entries = self.0.get_or_insert_with(Default::default);
                // Exactly as many slots as entries: no room kept for more.
                entries.reserve_exact(1);
                entries.insert(i, (key, value));
                None
            }
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let i = self.find(key).ok()?;
        let entries = self.0.as_mut()?;
        let (_, old) = entries.remove(i);
        if entries.is_empty() {
            self.0 = None;
        } else {
            entries.shrink_to_fit();
        }
        Some(old)
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries().iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.iter().map(|(k, _)| k)
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for StringMap {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut map = StringMap::new();
        map.extend(iter);
        map
    }
}

impl<K: Into<String>, V: Into<String>> Extend<(K, V)> for StringMap {
    fn extend<I: IntoIterator<Item = (K, V)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl fmt::Debug for StringMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Serialize for StringMap {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.iter())
    }
}

impl<'de> Deserialize<'de> for StringMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Sorted and deduplicated (the last of a repeated key wins) by the
        // BTreeMap it is read into, then kept as a slice.
        let map = BTreeMap::<String, String>::deserialize(d)?;
        let entries: Vec<(String, String)> = map.into_iter().collect();
        Ok(StringMap(if entries.is_empty() { None } else { Some(Box::new(entries)) }))
    }
}

/// The finalizers of a resource: a set of strings that holds its destruction.
///
/// A resource with any finalizer cannot be destroyed
/// ([`PendingFinalizers`](crate::Error::PendingFinalizers)). Controllers put a
/// finalizer on their strong inputs and remove it once they have cleaned up.
/// Iteration is in sorted order; equality is set equality.
///
/// ```
/// use cosi_runtime::resource::Finalizers;
///
/// let mut f = Finalizers::new();
/// assert!(f.add("LinkController"));
/// assert!(!f.add("LinkController"));
/// assert!(f.contains("LinkController"));
/// assert!(f.remove("LinkController"));
/// assert!(f.is_empty());
/// ```
// Boxed so that an empty set is one null pointer (most resources carry none).
#[allow(clippy::box_collection)]
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Finalizers(Option<Box<Vec<Arc<str>>>>);

impl Finalizers {
    /// An empty set.
    pub const fn new() -> Self {
        Finalizers(None)
    }

    /// Adds a finalizer; returns whether the set changed.
    pub fn add(&mut self, finalizer: &str) -> bool {
        let set = self.0.get_or_insert_with(Default::default);
        match set.binary_search_by(|f| (**f).cmp(finalizer)) {
            Ok(_) => false,
            Err(at) => {
                set.insert(at, Arc::from(finalizer));
                true
            }
        }
    }

    /// Removes a finalizer; returns whether the set changed.
    pub fn remove(&mut self, finalizer: &str) -> bool {
        let Some(set) = self.0.as_mut() else {
            return false;
        };
        match set.binary_search_by(|f| (**f).cmp(finalizer)) {
            Ok(at) => {
                set.remove(at);
                if set.is_empty() {
                    self.0 = None;
                }
                true
            }
            Err(_) => false,
        }
    }

    /// Whether `finalizer` is in the set.
    pub fn contains(&self, finalizer: &str) -> bool {
        self.0.as_ref().is_some_and(|s| s.binary_search_by(|f| (**f).cmp(finalizer)).is_ok())
    }

    /// Whether the set is empty (the resource may be destroyed).
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The number of finalizers.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |s| s.len())
    }

    /// The finalizers in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().flat_map(|s| s.iter().map(|f| &**f))
    }

    /// The finalizers as owned strings, in sorted order.
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }
}

impl<S: AsRef<str>> FromIterator<S> for Finalizers {
    fn from_iter<I: IntoIterator<Item = S>>(iter: I) -> Self {
        let mut set = Finalizers::new();
        for f in iter {
            set.add(f.as_ref());
        }
        set
    }
}

impl fmt::Debug for Finalizers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for Finalizers {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for Finalizers {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<String>::deserialize(d)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_keep_keys_sorted_and_unique_and_replace_values() {
        let mut m = StringMap::new();
        for (k, v) in [("b", "1"), ("a", "2"), ("c", "3"), ("b", "4")] {
            m.insert(k, v);
        }
        assert_eq!(m.iter().collect::<Vec<_>>(), [("a", "2"), ("b", "4"), ("c", "3")]);
        assert_eq!(m.insert("a", "5").as_deref(), Some("2"));
        assert_eq!(m.remove("b").as_deref(), Some("4"));
        assert_eq!(m.remove("b"), None);
        assert!(!m.contains_key("b") && m.contains_key("c"));
        assert_eq!(m.len(), 2);
        let same: StringMap = [("c", "3"), ("a", "5")].into_iter().collect();
        assert_eq!(m, same, "equal whatever the order of insertion");
        let read: StringMap = serde_json::from_str(r#"{"z": "1", "y": "2", "z": "3"}"#).unwrap();
        assert_eq!(read.iter().collect::<Vec<_>>(), [("y", "2"), ("z", "3")]);
    }

    #[test]
    fn empty_collections_do_not_allocate() {
        assert_eq!(std::mem::size_of::<StringMap>(), 8);
        assert_eq!(std::mem::size_of::<Finalizers>(), 8);
        let mut m = StringMap::new();
        m.insert("a", "1");
        assert_eq!(m.remove("a").as_deref(), Some("1"));
        assert!(m.is_empty());
        assert_eq!(m, StringMap::new());
    }

    #[test]
    fn finalizers_compare_as_sets() {
        let a: Finalizers = ["x", "y", "z"].into_iter().collect();
        let b: Finalizers = ["z", "x", "y", "x"].into_iter().collect();
        assert_eq!(a, b);
        assert_eq!(b.len(), 3);
        assert_eq!(a.to_vec(), ["x", "y", "z"]);
    }

    #[test]
    fn finalizer_remove_of_absent_entry_changes_nothing() {
        let mut f = Finalizers::new();
        assert!(!f.remove("nope"));
        f.add("a");
        assert!(!f.remove("b"));
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn maps_serialize_as_plain_json_objects() {
        let m: StringMap = [("b", "2"), ("a", "1")].into_iter().collect();
        assert_eq!(serde_json::to_string(&m).unwrap(), r#"{"a":"1","b":"2"}"#);
        let back: StringMap = serde_json::from_str(r#"{"a":"1","b":"2"}"#).unwrap();
        assert_eq!(back, m);
        let empty: StringMap = serde_json::from_str("{}").unwrap();
        assert!(empty.is_empty());
    }
}
