//! Storage backends: where the [`Store`](super::Store) keeps resources.
//!
//! A backend only stores and retrieves; every rule (versions, owners, phases,
//! finalizers) lives in the `Store` above it, so all backends behave alike and
//! one conformance suite (`tests/state_conformance.rs`) checks them all.

use std::collections::{BTreeMap, HashMap};

use crate::Error;
use crate::resource::{AnyResource, Id, Kind, Pointer};

/// The minimal storage interface under the [`Store`](super::Store).
///
/// Implementations keep, per [`Kind`], a map from id to resource and list it in
/// id order. Writes may fail (a durable backend's disk); reads may not.
pub trait Backend: Unpin + 'static {
    /// The resource at `ptr`, if stored.
    fn get(&self, ptr: &Pointer) -> Option<&AnyResource>;

    /// Every resource of `kind`, sorted by id.
    fn list<'a>(&'a self, kind: &Kind) -> Box<dyn Iterator<Item = &'a AnyResource> + 'a>;

    /// Stores `resource`, replacing any resource at its address.
    ///
    /// # Errors
    /// A backend-specific failure, reported as [`Error::Unavailable`].
    fn put(&mut self, resource: AnyResource) -> Result<(), Error>;

    /// Removes and returns the resource at `ptr`.
    ///
    /// # Errors
    /// A backend-specific failure, reported as [`Error::Unavailable`].
    fn remove(&mut self, ptr: &Pointer) -> Result<Option<AnyResource>, Error>;

    /// The canonical [`Kind`] handle equal to `kind`, so that stored resources
    /// share one allocation per collection.
    fn intern(&mut self, kind: &Kind) -> Kind;

    /// How many resources are stored in all.
    fn len(&self) -> usize;

    /// Whether nothing is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The default backend: everything in memory, a sorted map per kind.
#[derive(Default)]
pub struct MemoryBackend {
    collections: HashMap<Kind, BTreeMap<Id, AnyResource>>,
    len: usize,
}

impl MemoryBackend {
    /// An empty in-memory backend.
    pub fn new() -> Self {
        MemoryBackend::default()
    }
}

impl std::fmt::Debug for MemoryBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBackend")
            .field("kinds", &self.collections.len())
            .field("resources", &self.len)
            .finish()
    }
}

impl Backend for MemoryBackend {
    fn get(&self, ptr: &Pointer) -> Option<&AnyResource> {
        self.collections.get(ptr.kind())?.get(ptr.id())
    }

    fn list<'a>(&'a self, kind: &Kind) -> Box<dyn Iterator<Item = &'a AnyResource> + 'a> {
        match self.collections.get(kind) {
            Some(c) => Box::new(c.values()),
            None => Box::new(std::iter::empty()),
        }
    }

    fn put(&mut self, resource: AnyResource) -> Result<(), Error> {
        let ptr = resource.pointer();
        let collection = match self.collections.get_mut(ptr.kind()) {
            Some(c) => c,
            None => self.collections.entry(ptr.kind().clone()).or_default(),
        };
        if collection.insert(ptr.id_shared().clone(), resource).is_none() {
            self.len += 1;
        }
        Ok(())
    }

    fn remove(&mut self, ptr: &Pointer) -> Result<Option<AnyResource>, Error> {
        let Some(collection) = self.collections.get_mut(ptr.kind()) else {
            return Ok(None);
        };
        let removed = collection.remove(ptr.id());
        if removed.is_some() {
            self.len -= 1;
        }
        Ok(removed)
    }

    fn intern(&mut self, kind: &Kind) -> Kind {
        match self.collections.get_key_value(kind) {
            Some((k, _)) => k.clone(),
            None => {
                self.collections.insert(kind.clone(), BTreeMap::new());
                kind.clone()
            }
        }
    }

    fn len(&self) -> usize {
        self.len
    }
}
