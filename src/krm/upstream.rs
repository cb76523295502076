//! [`Upstream`]: a function that, For each parent object, populates the
//! children it Owns, diffs them against the existing children (found by the
//! owner annotation) and creates, updates or delete-marks them. It never
//! removes an item: the delete is always done downstream.

use std::fmt;
use std::hash::BuildHasher;

use hashbrown::HashTable;

use crate::hashing::{Seeded, SeededMap, SeededSet};

use super::conditions::{Condition, ConditionEdits, DEFAULT_PREFIX, Keys, Status};
use super::function::{Declaration, Function};
use super::object::{Gvk, IdentityRef, Object};
use super::resource_list::ResourceList;
use super::results::FnResult;

/// Checks the objects of a watched GVK; `Err(reason)` makes the run (or the
/// parent, for a per-parent watch) not ready.
pub type CheckFn = dyn Fn(&[&Object]) -> Result<(), String> + Send + Sync;

/// Maps a parent to its desired children (apiVersion, kind, name and content;
/// the owner annotation is stamped by the runtime).
pub type PopulateFn = dyn Fn(&Object, &Watched<'_>) -> Result<Vec<Object>, String> + Send + Sync;

/// Whose objects a watch sees.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchScope {
    /// Every object of the GVK.
    Global,
    /// Only objects whose owner annotation names the parent.
    PerParent,
}

/// A watched GVK.
pub struct Watch {
    gvk: Gvk,
    scope: WatchScope,
    check: Option<Box<CheckFn>>,
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("gvk", &self.gvk)
            .field("scope", &self.scope)
            .field("required", &self.check.is_some())
            .finish()
    }
}

impl Watch {
    /// A watch on every object of `gvk`.
    pub fn global(gvk: Gvk) -> Self {
        Watch { gvk, scope: WatchScope::Global, check: None }
    }

    /// A watch on the objects of `gvk` owned by each parent.
    pub fn per_parent(gvk: Gvk) -> Self {
        Watch { gvk, scope: WatchScope::PerParent, check: None }
    }

    /// Makes the watch required: the run is ready only if `check` accepts the
    /// watched objects.
    pub fn required(
        mut self,
        check: impl Fn(&[&Object]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.check = Some(Box::new(check));
        self
    }

    fn evaluate(&self, objects: &[&Object]) -> Result<(), String> {
        match &self.check {
            Some(check) => check(objects).map_err(|reason| format!("watch {}: {reason}", self.gvk)),
            None => Ok(()),
        }
    }
}

/// The watched objects a populate function sees.
///
/// It borrows the lists the run gathered once (the global watches' for
/// every parent, each per-parent watch's grouped by owner), so handing it
/// to each parent costs one slice per watch, whatever the package's size.
#[derive(Debug, Default)]
pub struct Watched<'a> {
    objects: Vec<(&'a Gvk, &'a [&'a Object])>,
}

impl<'a> Watched<'a> {
    /// The watched objects of `gvk` (empty if not watched).
    pub fn get(&self, gvk: &Gvk) -> &[&'a Object] {
        self.objects.iter().find(|(g, _)| *g == gvk).map(|(_, o)| *o).unwrap_or_default()
    }
}

/// An upstream function. See the [module docs](super) for the rules.
pub struct Upstream {
    name: String,
    keys: Keys,
    for_: Gvk,
    owns: Vec<Gvk>,
    watches: Vec<Watch>,
    populate: Box<PopulateFn>,
}

impl fmt::Debug for Upstream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Upstream")
            .field("name", &self.name)
            .field("for", &self.for_)
            .field("owns", &self.owns)
            .field("watches", &self.watches)
            .finish_non_exhaustive()
    }
}

impl Upstream {
    /// An upstream function named `name`, For `parent`, with a populate function.
    pub fn new(
        name: impl Into<String>,
        parent: Gvk,
        populate: impl Fn(&Object, &Watched<'_>) -> Result<Vec<Object>, String> + Send + Sync + 'static,
    ) -> Self {
        Upstream {
            name: name.into(),
            keys: Keys::new(DEFAULT_PREFIX),
            for_: parent,
            owns: Vec::new(),
            watches: Vec::new(),
            populate: Box::new(populate),
        }
    }

    /// Adds an owned child GVK.
    pub fn owns(mut self, child: Gvk) -> Self {
        self.owns.push(child);
        self
    }

    /// Adds a watch.
    pub fn watch(mut self, watch: Watch) -> Self {
        self.watches.push(watch);
        self
    }

    /// Uses another annotation prefix (default `fnruntime.nephio.org/`).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.keys = Keys::new(prefix);
        self
    }

    fn owned(&self, object: &Object) -> bool {
        self.owns.iter().any(|g| object.is(g))
    }

    /// The desired children, by identity, with their owner value; `None` when
    /// the run is not ready.
    fn desired(
        &self,
        list: &ResourceList,
        results: &mut Vec<FnResult>,
    ) -> Option<Vec<(String, Object)>> {
        let of = |gvk: &Gvk| list.items.iter().filter(|o| o.is(gvk)).collect::<Vec<_>>();
        let mut global = Vec::new();
        for watch in self.watches.iter().filter(|w| w.scope == WatchScope::Global) {
            let objects = of(&watch.gvk);
            if let Err(reason) = watch.evaluate(&objects) {
                results.push(FnResult::warning(format!("{}: not ready: {reason}", self.name)));
                return None;
            }
            global.push((watch, objects));
        }
        // Each per-parent watch's objects grouped by owner, in one pass over
        // the items: looked up per parent, not filtered from every item for
        // each (that would be quadratic in the package's size).
        let per_parent: Vec<(&Watch, SeededMap<&str, Vec<&Object>>)> = self
            .watches
            .iter()
            .filter(|w| w.scope == WatchScope::PerParent)
            .map(|watch| {
                let mut by_owner: SeededMap<&str, Vec<&Object>> = SeededMap::default();
                for object in of(&watch.gvk) {
                    if let Some(owner) = self.keys.owner_of(object) {
                        by_owner.entry(owner).or_default().push(object);
                    }
                }
                (watch, by_owner)
            })
            .collect();
        let mut parents: Vec<&Object> = of(&self.for_);
        parents.sort_by_cached_key(|p| p.identity_ref());
        let mut desired: Vec<(String, Object)> = Vec::new();
        // The identities populated so far, as indices into `desired`: no
        // copy of each child's identity (four strings) to key a set by.
        let mut seen: HashTable<usize> = HashTable::new();
        let seed = Seeded::default();
        let hash = |id: IdentityRef<'_>| seed.hash_one(id);
        for parent in parents {
            let Some(owner) = parent.reference() else { continue };
            let mut watched = Watched {
                objects: global.iter().map(|(w, objects)| (&w.gvk, objects.as_slice())).collect(),
            };
            let mut ready = true;
            for (watch, by_owner) in &per_parent {
                let objects = by_owner.get(owner.as_str()).map_or(&[][..], Vec::as_slice);
                if let Err(reason) = watch.evaluate(objects) {
                    results.push(
                        FnResult::warning(format!("{}: {owner} not ready: {reason}", self.name))
                            .about(parent),
                    );
                    ready = false;
                }
                watched.objects.push((&watch.gvk, objects));
            }
            if !ready {
                continue;
            }
            let children = match (self.populate)(parent, &watched) {
                Ok(children) => children,
                Err(reason) => {
                    results.push(
                        FnResult::error(format!(
                            "{}: cannot populate children of {owner}: {reason}",
                            self.name
                        ))
                        .about(parent),
                    );
                    continue;
                }
            };
            for mut child in children {
                let valid = self.owned(&child) && child.name().is_some_and(|n| !n.is_empty());
                let Some(id) = child.identity_ref().filter(|_| valid) else {
                    results.push(FnResult::error(format!(
                        "{}: {owner} populated a child that is not an owned kind with a name: {:?} {:?} {:?}",
                        self.name,
                        child.api_version(),
                        child.kind(),
                        child.name()
                    )));
                    continue;
                };
                let id_hash = hash(id);
                let same = |&d: &usize| desired[d].1.identity_ref() == Some(id);
                if seen.find(id_hash, same).is_some() {
                    results.push(FnResult::error(format!(
                        "{}: child {:?} is populated twice",
                        self.name,
                        child.reference()
                    )));
                    continue;
                }
                child.set_annotation(&self.keys.owner, &owner);
                // Every entry of `desired` has an identity (checked above).
                let rehash = |&d: &usize| desired[d].1.identity_ref().map_or(0, hash);
                seen.insert_unique(id_hash, desired.len(), rehash);
                desired.push((owner.clone(), child));
            }
        }
        Some(desired)
    }
}

impl Function for Upstream {
    fn name(&self) -> &str {
        &self.name
    }

    fn declaration(&self) -> Declaration {
        Declaration {
            for_: Some(self.for_.clone()),
            owns: self.owns.clone(),
            watches: self.watches.iter().map(|w| w.gvk.clone()).collect(),
        }
    }

    fn process(&self, list: &mut ResourceList) {
        let Some(kpt) = list.kptfile_index() else { return };
        let mut results = Vec::new();
        let desired = self.desired(list, &mut results);
        let ready = desired.is_some();
        let desired = desired.unwrap_or_default();
        // Maps keyed by borrowed identities: they run over every item, twice
        // per render, and copying the identities would dominate this function.
        let by_id: SeededMap<_, usize> = desired
            .iter()
            .enumerate()
            .filter_map(|(i, (_, o))| Some((o.identity_ref()?, i)))
            .collect();
        let mut used = vec![false; desired.len()];
        let mut edits = ConditionEdits::of(&list.items[kpt]);
        let family = format!("{}.", self.for_.reference());
        let mut live_conditions = SeededSet::default();

        for (i, item) in list.items.iter_mut().enumerate() {
            if i == kpt || !self.owned(item) {
                continue;
            }
            let Some(owner) = self.keys.owner_of(item).map(str::to_string) else { continue };
            if !owner.starts_with(&family) {
                continue;
            }
            let Some(found) = item.identity_ref().map(|id| by_id.get(&id).copied()) else {
                continue;
            };
            let Some(type_) = item.reference() else { continue };
            live_conditions.insert(type_.clone());
            if let Some(d) = found {
                used[d] = true;
                let (want_owner, want) = &desired[d];
                let marked = item.annotation(&self.keys.delete).is_some();
                let changed = item.update_from(want);
                if marked {
                    item.remove_annotation(&self.keys.delete);
                }
                if changed || marked {
                    let message =
                        if marked { "create resource again" } else { "update existing resource" };
                    edits.set(Condition::new(&type_, Status::False, want_owner, message));
                } else if edits.get(&type_).is_none() {
                    let message = "create condition again as it was deleted";
                    edits.set(Condition::new(&type_, Status::False, want_owner, message));
                }
            } else {
                if !self.keys.is_delete_marked(item) {
                    item.set_annotation(&self.keys.delete, "true");
                }
                let message = if ready { "delete existing resource" } else { "not ready" };
                let stale = edits
                    .get(&type_)
                    .is_none_or(|c| c.status != Status::False || c.reason != owner);
                if stale {
                    edits.set(Condition::new(&type_, Status::False, &owner, message));
                }
            }
        }

        drop(by_id);
        // The item each child to create clashes with, found before any is
        // added (the items are not indexed when every child exists).
        let mut clashes = vec![None; desired.len()];
        if used.iter().any(|u| !u) {
            let taken: SeededMap<_, usize> = list
                .items
                .iter()
                .enumerate()
                .filter_map(|(i, o)| Some((o.identity_ref()?, i)))
                .collect();
            for (d, (_, child)) in desired.iter().enumerate() {
                if !used[d] {
                    clashes[d] = child.identity_ref().and_then(|id| taken.get(&id).copied());
                }
            }
        }
        for (d, (owner, child)) in desired.into_iter().enumerate() {
            if used[d] {
                continue;
            }
            if let Some(clash) = clashes[d].map(|i| &list.items[i]) {
                results.push(
                    FnResult::error(format!(
                        "{}: {owner} wants to create {:?}, which exists and is not one of its children (no owner annotation of {})",
                        self.name,
                        child.reference(),
                        self.for_
                    ))
                    .about(clash),
                );
                continue;
            }
            let Some(type_) = child.reference() else { continue };
            live_conditions.insert(type_.clone());
            edits.set(Condition::new(&type_, Status::False, &owner, "create new resource"));
            list.items.push(child);
        }

        // Conditions of children that neither exist nor are desired.
        for type_ in edits.types() {
            let ours = self.owns.iter().any(|g| g.name_in(&type_).is_some())
                && edits.get(&type_).is_some_and(|c| c.reason.starts_with(&family));
            if ours && !live_conditions.contains(&type_) {
                edits.remove(&type_);
            }
        }
        edits.apply(&mut list.items[kpt]);
        list.results.extend(results);
    }
}
