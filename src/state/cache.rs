//! The cached view of the state: what reads are served from.

use std::collections::BTreeMap;

use crate::resource::{AnyResource, Id, Kind, KindMap, Pointer};

/// What [`Cache::with_slot`] does with a resource's slot.
#[derive(Debug)]
pub(crate) enum SlotEdit {
    /// Leave it as it is.
    Keep,
    /// Store this resource there.
    Put(AnyResource),
    /// Remove what is there.
    Remove,
}

/// The cached view the state actor owns: every resource in memory, a sorted
/// map per kind. Reads are served from here, synchronously and borrowed; a
/// durable [`Backend`](super::Backend) only receives the committed writes.
#[derive(Default)]
pub(crate) struct Cache {
    collections: KindMap<BTreeMap<Id, AnyResource>>,
    len: usize,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cache")
            .field("kinds", &self.collections.len())
            .field("resources", &self.len)
            .finish()
    }
}

impl Cache {
    pub(crate) fn get(&self, ptr: &Pointer) -> Option<&AnyResource> {
        self.collections.get(ptr.kind())?.get(ptr.id_shared())
    }

    pub(crate) fn list<'a>(
        &'a self,
        kind: &Kind,
    ) -> Box<dyn Iterator<Item = &'a AnyResource> + 'a> {
        match self.collections.get(kind) {
            Some(c) => Box::new(c.values()),
            None => Box::new(std::iter::empty()),
        }
    }

    pub(crate) fn put(&mut self, resource: AnyResource) {
        let ptr = resource.pointer();
        let collection = match self.collections.get_mut(ptr.kind()) {
            Some(c) => c,
            None => self.collections.entry(ptr.kind().clone()).or_default(),
        };
        if collection.insert(ptr.id_shared().clone(), resource).is_none() {
            self.len += 1;
        }
    }

    pub(crate) fn with_slot<R>(
        &mut self,
        ptr: &Pointer,
        f: impl FnOnce(Option<&AnyResource>) -> (SlotEdit, R),
    ) -> R {
        use std::collections::btree_map::Entry;
        let Some(collection) = self.collections.get_mut(ptr.kind()) else {
            let (slot, result) = f(None);
            if let SlotEdit::Put(resource) = slot {
                self.put(resource);
            }
            return result;
        };
        match collection.entry(ptr.id_shared().clone()) {
            Entry::Occupied(mut stored) => {
                let (slot, result) = f(Some(stored.get()));
                match slot {
                    SlotEdit::Keep => {}
                    SlotEdit::Put(resource) => *stored.get_mut() = resource,
                    SlotEdit::Remove => {
                        stored.remove();
                        self.len -= 1;
                    }
                }
                result
            }
            Entry::Vacant(empty) => {
                let (slot, result) = f(None);
                if let SlotEdit::Put(resource) = slot {
                    empty.insert(resource);
                    self.len += 1;
                }
                result
            }
        }
    }

    pub(crate) fn insert_new(&mut self, resource: AnyResource) -> bool {
        let ptr = resource.pointer();
        let collection = match self.collections.get_mut(ptr.kind()) {
            Some(c) => c,
            None => self.collections.entry(ptr.kind().clone()).or_default(),
        };
        match collection.entry(ptr.id_shared().clone()) {
            std::collections::btree_map::Entry::Occupied(_) => false,
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(resource);
                self.len += 1;
                true
            }
        }
    }

    pub(crate) fn remove(&mut self, ptr: &Pointer) -> Option<AnyResource> {
        let collection = self.collections.get_mut(ptr.kind())?;
        let removed = collection.remove(ptr.id_shared());
        if removed.is_some() {
            self.len -= 1;
        }
        removed
    }

    pub(crate) fn intern(&mut self, kind: &Kind) -> Kind {
        match self.collections.get_key_value(kind) {
            Some((k, _)) => k.clone(),
            None => {
                self.collections.insert(kind.clone(), BTreeMap::new());
                kind.clone()
            }
        }
    }

    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn pointers(&self) -> Vec<Pointer> {
        let mut out = Vec::with_capacity(self.len);
        for collection in self.collections.values() {
            out.extend(collection.values().map(|r| r.pointer().clone()));
        }
        out
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}
