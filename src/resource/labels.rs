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
// Boxed so that an empty map is one null pointer (most resources carry none).
#[allow(clippy::box_collection)]
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct StringMap(Option<Box<BTreeMap<String, String>>>);

/// The labels of a resource: queried by [`LabelQuery`](crate::resource::LabelQuery).
pub type Labels = StringMap;

/// The annotations of a resource: free-form notes that queries never look at.
pub type Annotations = StringMap;

impl StringMap {
    /// An empty map.
    pub const fn new() -> Self {
        StringMap(None)
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.as_ref()?.get(key).map(String::as_str)
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.0.as_ref().is_some_and(|m| m.contains_key(key))
    }

    /// Sets `key` to `value`, returning the previous value.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Into<String>) -> Option<String> {
        self.0.get_or_insert_with(Default::default).insert(key.into(), value.into())
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<String> {
        let map = self.0.as_mut()?;
        let old = map.remove(key);
        if map.is_empty() {
            self.0 = None;
        }
        old
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |m| m.len())
    }

    /// Whether the map is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().flat_map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str())))
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
        let map = BTreeMap::<String, String>::deserialize(d)?;
        Ok(StringMap(if map.is_empty() { None } else { Some(Box::new(map)) }))
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
