//! [`Store`]: the pure engine that applies the state contract.
//!
//! No actors, no IO beyond the [`Backend`]: every method takes the current time
//! as an argument and returns the [`Change`] to publish, so the rules are unit
//! tested directly. The [`StateActor`](crate::dev::StateActor) owns one `Store` and
//! serializes every call to it.

use std::fmt;
use std::sync::Arc;

use super::cache::{Cache, CacheView, SlotEdit};
use crate::Error;
use crate::resource::{
    AnyResource, Finalizers, Kind, LabelQuery, Phase, Pointer, Timestamp, validate,
};
use stamp::{check_owner, give_legacy_uid, replacing, same_incarnation, stamp_new, stamp_update};

mod change;
pub use change::Change;
mod finalizers;
mod stamp;
pub(crate) use stamp::keep_finalizers;
#[cfg(test)]
mod tests;

/// Which phase an update or modify requires the stored resource to be in.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ExpectedPhase {
    /// Only running resources (the default: a torn-down resource's desired
    /// state must not change while it is being destroyed).
    #[default]
    Running,
    /// Only resources that are tearing down.
    TearingDown,
    /// Any phase.
    Any,
}

impl ExpectedPhase {
    fn check(self, ptr: &Pointer, actual: Phase) -> Result<(), Error> {
        let expected = match self {
            ExpectedPhase::Running => Phase::Running,
            ExpectedPhase::TearingDown => Phase::TearingDown,
            ExpectedPhase::Any => return Ok(()),
        };
        if expected == actual {
            Ok(())
        } else {
            Err(Error::PhaseConflict { resource: ptr.clone(), expected, actual })
        }
    }
}

/// The function a [`modify`](Store::modify) applies: given the current
/// resource (`None` if missing), the desired one.
///
/// It is `Fn`, not `FnOnce`: a backend that finds the stored resource changed
/// under it (another process wrote it) has the rules re-run on fresh data, so
/// the function may run more than once for one call. Keep it a pure function
/// of its argument.
pub type ModifyFn =
    Box<dyn Fn(Option<&AnyResource>) -> Result<AnyResource, Error> + Send + 'static>;

/// The state contract over the cached view (the rules; a
/// [`Backend`](super::Backend) only stores what they produce).
///
/// ```
/// use cosi_runtime::resource::{Resource, Spec, Timestamp, Version};
/// use cosi_runtime::dev::Store;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Mtu(u32);
/// # impl Spec for Mtu { const TYPE: &'static str = "Mtus.net.cosi.dev"; }
///
/// let mut store = Store::new();
/// let (created, _change) = store
///     .create(Resource::new("net", "eth0", Mtu(1500)).into(), None, Timestamp::now())
///     .unwrap();
/// assert_eq!(created.version(), Version::INITIAL);
/// assert!(store.create(created.clone(), None, Timestamp::now()).unwrap_err().is_already_exists());
/// ```
pub struct Store {
    backend: Cache,
    owners: rustc_hash::FxHashSet<Arc<str>>,
    /// The owner interned last: a controller's writes come in runs.
    last_owner: Option<Arc<str>>,
    revision: u64,
}

impl Default for Store {
    fn default() -> Self {
        Store::new()
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// An empty store, at revision 0.
    pub fn new() -> Self {
        Store {
            backend: Cache::default(),
            owners: Default::default(),
            last_owner: None,
            revision: 0,
        }
    }

    /// The store revision: how many writes were applied since the store
    /// began (each create, update and destroy takes the next one).
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The revision the next write takes.
    fn next_revision(&self) -> u64 {
        self.revision + 1
    }

    /// Fills the store with what a backend held at open: resources as stored
    /// (versions, uids, owners and mod revisions kept), and the store revision
    /// moves up to `revision` if it is ahead. A resource stored without a uid
    /// (by a build before uids) gets its derived one ([`Uid`], stable across
    /// processes and reopens).
    pub(crate) fn load(&mut self, resources: Vec<AnyResource>, revision: u64) {
        for res in resources {
            let rev = self.load_one(res);
            self.revision = self.revision.max(rev);
        }
        self.revision = self.revision.max(revision);
    }

    /// Loads what a shared store holds: its revisions are its own, so the
    /// store revision does not move.
    pub(crate) fn load_shared(&mut self, resources: Vec<AnyResource>) {
        for res in resources {
            self.load_one(res);
        }
    }

    /// Stores a loaded resource; its mod revision.
    fn load_one(&mut self, mut res: AnyResource) -> u64 {
        self.adopt(&mut res);
        let rev = res.metadata().revision();
        self.backend.put(res);
        rev
    }

    /// Makes a resource that was stored elsewhere one of this store's: its
    /// kind and owner interned, a missing uid derived from its address and
    /// creation time (stable across reopens and processes).
    fn adopt(&mut self, res: &mut AnyResource) {
        let kind = self.backend.intern(res.pointer().kind());
        let owner = self.intern_owner(res.owner());
        let md = res.metadata_mut();
        md.intern_kind(&kind);
        md.set_owner(owner);
        give_legacy_uid(md);
    }

    /// Undoes `changes` (the latest last): what a failed commit does to the cache.
    ///
    /// The revisions the changes took are not reused (other writes may have
    /// taken later ones meanwhile): revisions stay strictly increasing, with a gap.
    pub(crate) fn rollback<'a>(&mut self, changes: impl DoubleEndedIterator<Item = &'a Change>) {
        for change in changes.rev() {
            match change {
                Change::Created(r) => {
                    self.backend.remove(r.pointer());
                }
                Change::Updated { old, .. } => self.backend.put(old.clone()),
                Change::Destroyed(r) => self.backend.put(r.clone()),
            }
        }
    }

    /// Stores `res` as another writer made it (a shared backend's change
    /// feed): kind and owner interned, a missing uid derived as at
    /// [`load`](Self::load), nothing checked, the change returned.
    pub(crate) fn put_external(&mut self, mut res: AnyResource) -> Change {
        self.adopt(&mut res);
        let ptr = res.pointer().clone();
        self.backend.with_slot(&ptr, |current| {
            let change = match current {
                Some(old) => Change::Updated { old: old.clone(), new: res.clone() },
                None => Change::Created(res.clone()),
            };
            (SlotEdit::Put(res), change)
        })
    }

    /// Shrinks the cached collection of `kind` if most of it was removed.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn compact(&mut self, kind: &Kind) {
        self.backend.compact(kind);
    }

    /// Removes the resource at `ptr` as another writer did (a shared
    /// backend's change feed); `None` if it was not cached.
    pub(crate) fn remove_external(&mut self, ptr: &Pointer) -> Option<Change> {
        self.backend.remove(ptr).map(Change::Destroyed)
    }

    /// Every cached address.
    pub(crate) fn pointers(&self) -> Vec<Pointer> {
        self.backend.pointers()
    }

    /// Sets the store revision (undoing a write sent to a shared store).
    pub(crate) fn set_revision(&mut self, revision: u64) {
        self.revision = revision;
    }

    /// A reader's handle on the cache (see [`CacheView`]).
    pub(crate) fn view(&self) -> CacheView {
        self.backend.view()
    }

    /// Lets [`CacheView`] readers read (`true`), or sends them to the actor.
    pub(crate) fn set_readable(&self, readable: bool) {
        self.backend.set_readable(readable);
    }

    /// How many resources are stored.
    pub fn len(&self) -> usize {
        self.backend.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.backend.len() == 0
    }

    fn intern_owner(&mut self, owner: Option<&str>) -> Option<Arc<str>> {
        let owner = owner?;
        if let Some(last) = &self.last_owner
            && **last == *owner
        {
            return Some(last.clone());
        }
        let o = match self.owners.get(owner) {
            Some(o) => o.clone(),
            None => {
                let o: Arc<str> = Arc::from(owner);
                self.owners.insert(o.clone());
                o
            }
        };
        self.last_owner = Some(o.clone());
        Some(o)
    }

    /// The resource at `ptr`.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`] for a bad pointer.
    pub fn get(&self, ptr: &Pointer) -> Result<AnyResource, Error> {
        validate::pointer(ptr)?;
        self.backend.get(ptr).ok_or_else(|| Error::NotFound { resource: ptr.clone() })
    }

    /// The resources of `kind` matching `query`, sorted by id.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad kind.
    pub fn list(&self, kind: &Kind, query: &LabelQuery) -> Result<Vec<AnyResource>, Error> {
        validate::kind(kind)?;
        Ok(self.backend.list(kind, query))
    }

    /// The resources of type `resource_type` matching `query` in every
    /// namespace, sorted by (namespace, id).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a bad type.
    pub fn list_all_namespaces(
        &self,
        resource_type: &str,
        query: &LabelQuery,
    ) -> Result<Vec<AnyResource>, Error> {
        validate::resource_type(resource_type)?;
        let mut out = Vec::new();
        self.backend.for_each_match_all_namespaces(resource_type, query, |r| out.push(r.clone()));
        Ok(out)
    }

    /// Visits every resource of type `resource_type` matching `query` in
    /// every namespace, in (namespace, id) order, without copying.
    pub(crate) fn for_each_match_all_namespaces(
        &self,
        resource_type: &str,
        query: &LabelQuery,
        f: impl FnMut(&AnyResource),
    ) {
        self.backend.for_each_match_all_namespaces(resource_type, query, f);
    }

    /// Visits every resource of `kind` matching `query`, in id order, without copying.
    pub(crate) fn for_each_match(
        &self,
        kind: &Kind,
        query: &LabelQuery,
        f: impl FnMut(&AnyResource),
    ) {
        self.backend.for_each_match(kind, query, f);
    }

    /// Creates `res` owned by `owner`: version 1, a new random
    /// [`uid`](crate::resource::Metadata::uid) (one `res` carries is replaced),
    /// `created` = `updated` = `now`; phase, finalizers, labels and
    /// annotations as given.
    ///
    /// # Errors
    /// [`Error::AlreadyExists`]; [`Error::InvalidInput`].
    pub fn create(
        &mut self,
        res: AnyResource,
        owner: Option<&str>,
        now: Timestamp,
    ) -> Result<(AnyResource, Change), Error> {
        validate::metadata(res.metadata())?;
        self.create_valid(res, owner, now)
    }

    /// [`create`](Self::create) of metadata already validated.
    fn create_valid(
        &mut self,
        res: AnyResource,
        owner: Option<&str>,
        now: Timestamp,
    ) -> Result<(AnyResource, Change), Error> {
        let owner = self.intern_owner(owner);
        let revision = self.next_revision();
        let stored = self
            .backend
            .insert_new_with(res, |res, kind| stamp_new(res, kind, owner, now, revision))
            .map_err(|res| Error::AlreadyExists { resource: res.pointer().clone() })?;
        self.revision += 1;
        Ok((stored.clone(), Change::Created(stored)))
    }

    /// Updates the stored resource with `res`.
    ///
    /// Checks, in this order: missing → [`Error::NotFound`]; stored owner ≠
    /// `owner` → [`Error::OwnerConflict`]; `res.version()` ≠ stored version,
    /// or `res` carries a [`uid`](crate::resource::Metadata::uid) other than
    /// the stored one (it was read from an earlier incarnation: the resource
    /// was destroyed and created again since) → [`Error::VersionConflict`];
    /// stored phase not `expected` → [`Error::PhaseConflict`]. A `res` without
    /// a uid is checked by its version only. A write that would move a
    /// tearing-down resource back to running is [`Error::InvalidInput`].
    ///
    /// The stored uid is kept, whatever `res` carries.
    ///
    /// # Errors
    /// As above, and [`Error::InvalidInput`] for bad metadata.
    pub fn update(
        &mut self,
        res: AnyResource,
        owner: Option<&str>,
        expected: ExpectedPhase,
        now: Timestamp,
    ) -> Result<(AnyResource, Change), Error> {
        self.update_keeping(res, owner, expected, false, now)
    }

    /// [`update`](Self::update), and with `keep_finalizers` (a controller's
    /// update, see [`StateRequest::Update`](crate::state::StateRequest::Update))
    /// the stored finalizers must stay as they are: checked last, after the
    /// phase ([`Error::AccessDenied`]).
    pub(crate) fn update_keeping(
        &mut self,
        res: AnyResource,
        owner: Option<&str>,
        expected: ExpectedPhase,
        keep_finalizers: bool,
        now: Timestamp,
    ) -> Result<(AnyResource, Change), Error> {
        validate::metadata(res.metadata())?;
        let ptr = res.pointer().clone();
        let rev = self.next_revision();
        let result = self.backend.with_slot(&ptr, |current| {
            let result = (|| {
                let current = current.ok_or_else(|| Error::NotFound { resource: ptr.clone() })?;
                check_owner(current, owner)?;
                if current.version() != res.version() || !same_incarnation(current, &res) {
                    return Err(Error::VersionConflict {
                        resource: ptr.clone(),
                        sent: res.version(),
                        stored: current.version(),
                    });
                }
                expected.check(&ptr, current.phase())?;
                if keep_finalizers {
                    kept_by(owner, "update", current.metadata().finalizers(), &res)?;
                }
                stamp_update(current, res, now, rev)
            })();
            replacing(result)
        });
        self.counted(result)
    }

    /// Moves the revision on past a write that happened.
    fn counted<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if result.is_ok() {
            self.revision += 1;
        }
        result
    }

    /// As [`counted`](Self::counted), for operations that may change nothing.
    fn counted_if<T>(
        &mut self,
        result: Result<(T, Option<Change>), Error>,
    ) -> Result<(T, Option<Change>), Error> {
        if matches!(result, Ok((_, Some(_)))) {
            self.revision += 1;
        }
        result
    }

    /// Applies `f` to the resource at `ptr` (or to `None` if it is missing) and
    /// stores the result: a create if it was missing, an update otherwise.
    ///
    /// When the result equals the stored resource (metadata, ignoring
    /// timestamps, and spec), **nothing is written and no change is reported**:
    /// this is what keeps reconcile loops from feeding themselves. The owner and
    /// the expected phase are checked before `f` runs, even when nothing changes.
    ///
    /// # Errors
    /// [`Error::OwnerConflict`], [`Error::PhaseConflict`], [`Error::InvalidInput`]
    /// (including `f` returning a resource at another address), and whatever `f` returns.
    pub fn modify(
        &mut self,
        ptr: &Pointer,
        f: &ModifyFn,
        owner: Option<&str>,
        expected: ExpectedPhase,
        now: Timestamp,
    ) -> Result<(AnyResource, Option<Change>), Error> {
        self.modify_keeping(ptr, f, owner, expected, false, now)
    }

    /// [`modify`](Self::modify), and with `keep_finalizers` (a controller's
    /// modify, see [`StateRequest::Modify`](crate::state::StateRequest::Modify))
    /// the result must carry the finalizers it was computed from (none for
    /// a new resource): checked once `f` ran ([`Error::AccessDenied`]).
    pub(crate) fn modify_keeping(
        &mut self,
        ptr: &Pointer,
        f: &ModifyFn,
        owner: Option<&str>,
        expected: ExpectedPhase,
        keep_finalizers: bool,
        now: Timestamp,
    ) -> Result<(AnyResource, Option<Change>), Error> {
        validate::pointer(ptr)?;
        // Not under `with_slot`: `f` is user code, which never runs under the
        // cache's lock. The slot found here spares the write a second lookup.
        let found = self.backend.get_at(ptr);
        let current = found.as_ref().map(|(_, cur)| cur);
        if let Some(cur) = current {
            check_owner(cur, owner)?;
            expected.check(ptr, cur.phase())?;
        }
        let mut desired = f(current)?;
        if desired.pointer() != ptr {
            return Err(Error::InvalidInput {
                resource: ptr.to_string(),
                reason: format!(
                    "the modify function returned a resource at another address ({})",
                    desired.pointer()
                ),
            });
        }
        validate::metadata_beyond_address(desired.metadata())?;
        if keep_finalizers {
            let none = Finalizers::new();
            let before = current.map_or(&none, |c| c.metadata().finalizers());
            kept_by(owner, "modify", before, &desired)?;
        }
        let Some((slot, cur)) = found else {
            // Its address is `ptr`, validated above, and the rest just now.
            let (stored, change) = self.create_valid(desired, owner, now)?;
            return Ok((stored, Some(change)));
        };
        // The function starts from the stored copy, so only its own edits can
        // differ; version, uid and owner are the state's.
        if desired.version() != cur.version()
            || desired.owner() != cur.owner()
            || desired.metadata().uid() != cur.metadata().uid()
        {
            let md = desired.metadata_mut();
            md.set_version(cur.version());
            md.set_uid(cur.metadata().uid());
            md.set_owner(cur.metadata().owner_shared().cloned());
        }
        if desired == cur {
            return Ok((cur, None));
        }
        let (stored, change) = stamp_update(&cur, desired, now, self.next_revision())?;
        self.backend.put_at(slot, &cur, stored.clone());
        self.revision += 1;
        Ok((stored, Some(change)))
    }

    /// Destroys the resource at `ptr`.
    ///
    /// Checks: missing → [`Error::NotFound`]; owner → [`Error::OwnerConflict`];
    /// finalizers → [`Error::PendingFinalizers`]. The resource need not be tearing down.
    ///
    /// # Errors
    /// As above; [`Error::InvalidInput`] for a bad pointer.
    pub fn destroy(&mut self, ptr: &Pointer, owner: Option<&str>) -> Result<Change, Error> {
        validate::pointer(ptr)?;
        let result = self.backend.with_slot(ptr, |current| {
            let Some(current) = current else {
                return (SlotEdit::Keep, Err(Error::NotFound { resource: ptr.clone() }));
            };
            if let Err(e) = check_owner(current, owner) {
                return (SlotEdit::Keep, Err(e));
            }
            if !current.metadata().finalizers().is_empty() {
                let finalizers = current.metadata().finalizers().to_vec();
                return (
                    SlotEdit::Keep,
                    Err(Error::PendingFinalizers { resource: ptr.clone(), finalizers }),
                );
            }
            (SlotEdit::Remove, Ok(Change::Destroyed(current.clone())))
        });
        self.counted(result)
    }
}

/// [`keep_finalizers`] for a request's `keep_finalizers`, naming
/// its owner. A request that asks for it without an owner (built by hand:
/// the runtime always sends its controller's name) is named as such, not
/// as an empty controller name.
fn kept_by(
    owner: Option<&str>,
    operation: &'static str,
    before: &Finalizers,
    after: &AnyResource,
) -> Result<(), Error> {
    keep_finalizers(owner.unwrap_or(NO_OWNER), operation, before, after)
}

/// The writer an [`Error::AccessDenied`] names for a request without an owner.
const NO_OWNER: &str = "(a writer without an owner)";
