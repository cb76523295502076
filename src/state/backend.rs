//! Storage backends: where the [`Store`](super::Store) keeps resources.
//!
//! A backend only stores and retrieves; every rule (versions, owners, phases,
//! finalizers) lives in the `Store` above it, so all backends behave alike and
//! one conformance suite (`tests/state_conformance.rs`) checks them all.

use std::collections::BTreeMap;

use crate::Error;
use crate::resource::{AnyResource, Id, Kind, KindMap, Pointer};

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

    /// Looks up the resource at `ptr` once, lets `f` decide what the slot
    /// holds next ([`Slot`]), and applies that. The read-check-write of every
    /// update goes through here, so it costs one lookup. The default does a
    /// `get` and then a `put` or `remove`.
    ///
    /// # Errors
    /// As [`put`](Backend::put) and [`remove`](Backend::remove).
    fn with_slot<R>(
        &mut self,
        ptr: &Pointer,
        f: impl FnOnce(Option<&AnyResource>) -> (Slot, R),
    ) -> Result<R, Error>
    where
        Self: Sized,
    {
        let (slot, result) = f(self.get(ptr));
        match slot {
            Slot::Keep => {}
            Slot::Put(resource) => self.put(resource)?,
            Slot::Remove => {
                self.remove(ptr)?;
            }
        }
        Ok(result)
    }

    /// Stores `resource` only if nothing is stored at its address; returns
    /// whether it was stored. (Override to do it in one lookup.)
    ///
    /// # Errors
    /// As [`put`](Backend::put).
    fn insert_new(&mut self, resource: AnyResource) -> Result<bool, Error> {
        if self.get(resource.pointer()).is_some() {
            return Ok(false);
        }
        self.put(resource).map(|()| true)
    }

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

/// What [`Backend::with_slot`] does with a resource's slot.
#[derive(Debug)]
pub enum Slot {
    /// Leave it as it is.
    Keep,
    /// Store this resource there.
    Put(AnyResource),
    /// Remove what is there.
    Remove,
}

/// The default backend: everything in memory, a sorted map per kind.
#[derive(Default)]
pub struct MemoryBackend {
    collections: KindMap<BTreeMap<Id, AnyResource>>,
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
        self.collections.get(ptr.kind())?.get(ptr.id_shared())
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

    fn with_slot<R>(
        &mut self,
        ptr: &Pointer,
        f: impl FnOnce(Option<&AnyResource>) -> (Slot, R),
    ) -> Result<R, Error> {
        use std::collections::btree_map::Entry;
        let Some(collection) = self.collections.get_mut(ptr.kind()) else {
            let (slot, result) = f(None);
            if let Slot::Put(resource) = slot {
                self.put(resource)?;
            }
            return Ok(result);
        };
        match collection.entry(ptr.id_shared().clone()) {
            Entry::Occupied(mut stored) => {
                let (slot, result) = f(Some(stored.get()));
                match slot {
                    Slot::Keep => {}
                    Slot::Put(resource) => *stored.get_mut() = resource,
                    Slot::Remove => {
                        stored.remove();
                        self.len -= 1;
                    }
                }
                Ok(result)
            }
            Entry::Vacant(empty) => {
                let (slot, result) = f(None);
                if let Slot::Put(resource) = slot {
                    empty.insert(resource);
                    self.len += 1;
                }
                Ok(result)
            }
        }
    }

    fn insert_new(&mut self, resource: AnyResource) -> Result<bool, Error> {
        let ptr = resource.pointer();
        let collection = match self.collections.get_mut(ptr.kind()) {
            Some(c) => c,
            None => self.collections.entry(ptr.kind().clone()).or_default(),
        };
        match collection.entry(ptr.id_shared().clone()) {
            std::collections::btree_map::Entry::Occupied(_) => Ok(false),
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(resource);
                self.len += 1;
                Ok(true)
            }
        }
    }

    fn remove(&mut self, ptr: &Pointer) -> Result<Option<AnyResource>, Error> {
        let Some(collection) = self.collections.get_mut(ptr.kind()) else {
            return Ok(None);
        };
        let removed = collection.remove(ptr.id_shared());
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
