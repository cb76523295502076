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
use crate::resource::{AnyResource, Kind, LabelQuery, Phase, Pointer, Timestamp, Uid, validate};

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

/// One change to the stored state, as the store reports it to watchers.
#[derive(Clone, Debug, PartialEq)]
pub enum Change {
    /// A resource was created.
    Created(AnyResource),
    /// A resource was written; `old` is what was stored before.
    Updated {
        /// The previous stored state.
        old: AnyResource,
        /// The new stored state.
        new: AnyResource,
    },
    /// A resource was destroyed; this is its last stored state.
    Destroyed(AnyResource),
}

impl Change {
    /// The resource as it is now (or was last, for `Destroyed`).
    pub fn resource(&self) -> &AnyResource {
        match self {
            Change::Created(r) | Change::Destroyed(r) => r,
            Change::Updated { new, .. } => new,
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

fn owner_conflict(ptr: &Pointer, stored: Option<&str>, caller: Option<&str>) -> Error {
    Error::OwnerConflict {
        resource: ptr.clone(),
        owner: stored.map(str::to_owned),
        caller: caller.map(str::to_owned),
    }
}

fn check_owner(res: &AnyResource, caller: Option<&str>) -> Result<(), Error> {
    if res.owner() == caller {
        Ok(())
    } else {
        Err(owner_conflict(res.pointer(), res.owner(), caller))
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
        let kind = self.backend.intern(res.pointer().kind());
        let owner = self.intern_owner(res.owner());
        let md = res.metadata_mut();
        md.intern_kind(&kind);
        md.set_owner(owner);
        give_legacy_uid(md);
        let rev = md.revision();
        self.backend.put(res);
        rev
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
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
    pub(crate) fn put_external(&mut self, mut res: AnyResource) -> Change {
        let kind = self.backend.intern(res.pointer().kind());
        let owner = self.intern_owner(res.owner());
        let md = res.metadata_mut();
        md.intern_kind(&kind);
        md.set_owner(owner);
        give_legacy_uid(md);
        let ptr = res.pointer().clone();
        self.backend.with_slot(&ptr, |current| {
            let change = match current {
                Some(old) => Change::Updated { old: old.clone(), new: res.clone() },
                None => Change::Created(res.clone()),
            };
            (SlotEdit::Put(res), change)
        })
    }

    /// Removes the resource at `ptr` as another writer did (a shared
    /// backend's change feed); `None` if it was not cached.
    #[cfg_attr(not(feature = "etcd"), allow(dead_code))]
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
        validate::pointer(ptr)?;
        // No slot here: the common outcomes (nothing changed, or a create)
        // take one lookup this way too, without interning on every call.
        let current = self.backend.get(ptr);
        if let Some(cur) = &current {
            check_owner(cur, owner)?;
            expected.check(ptr, cur.phase())?;
        }
        let mut desired = f(current.as_ref())?;
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
        let Some(cur) = current else {
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
        self.backend.put(stored.clone());
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

    /// Moves the resource at `ptr` to `TearingDown` (a no-op if it already is)
    /// and returns whether it is ready to destroy (no finalizers).
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::OwnerConflict`]; [`Error::InvalidInput`].
    pub fn teardown(
        &mut self,
        ptr: &Pointer,
        owner: Option<&str>,
        now: Timestamp,
    ) -> Result<(bool, Option<Change>), Error> {
        validate::pointer(ptr)?;
        let rev = self.next_revision();
        let result = self.backend.with_slot(ptr, |current| {
            let Some(current) = current else {
                return (SlotEdit::Keep, Err(Error::NotFound { resource: ptr.clone() }));
            };
            if let Err(e) = check_owner(current, owner) {
                return (SlotEdit::Keep, Err(e));
            }
            let ready = current.metadata().finalizers().is_empty();
            if current.phase() == Phase::TearingDown {
                return (SlotEdit::Keep, Ok((ready, None)));
            }
            let mut md = current.metadata().clone();
            md.set_phase(Phase::TearingDown);
            match stamp_update(current, current.with_metadata(md), now, rev) {
                Ok((stored, change)) => (SlotEdit::Put(stored), Ok((ready, Some(change)))),
                Err(e) => (SlotEdit::Keep, Err(e)),
            }
        });
        self.counted_if(result)
    }

    fn edit_finalizers(
        &mut self,
        ptr: &Pointer,
        finalizer: &str,
        now: Timestamp,
        add: bool,
        expected: ExpectedPhase,
    ) -> Result<Option<Change>, Error> {
        validate::pointer(ptr)?;
        validate::finalizer(ptr, finalizer)?;
        let rev = self.next_revision();
        let result = self.backend.with_slot(ptr, |current| {
            let Some(current) = current else {
                return (SlotEdit::Keep, Err(Error::NotFound { resource: ptr.clone() }));
            };
            if let Err(e) = expected.check(ptr, current.phase()) {
                return (SlotEdit::Keep, Err(e));
            }
            let mut md = current.metadata().clone();
            let changed = if add {
                md.finalizers_mut().add(finalizer)
            } else {
                md.finalizers_mut().remove(finalizer)
            };
            if !changed {
                return (SlotEdit::Keep, Ok(((), None)));
            }
            match stamp_update(current, current.with_metadata(md), now, rev) {
                Ok((stored, change)) => (SlotEdit::Put(stored), Ok(((), Some(change)))),
                Err(e) => (SlotEdit::Keep, Err(e)),
            }
        });
        self.counted_if(result).map(|((), change)| change)
    }

    /// Adds `finalizer` to the resource at `ptr`, whatever its owner and phase.
    /// Adding a finalizer that is already there writes nothing.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`].
    pub fn add_finalizer(
        &mut self,
        ptr: &Pointer,
        finalizer: &str,
        now: Timestamp,
    ) -> Result<Option<Change>, Error> {
        self.edit_finalizers(ptr, finalizer, now, true, ExpectedPhase::Any)
    }

    /// [`add_finalizer`](Store::add_finalizer) only if the resource is in the
    /// `expected` phase: how a controller holds an input only while it runs.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::PhaseConflict`]; [`Error::InvalidInput`].
    pub fn add_finalizer_expecting(
        &mut self,
        ptr: &Pointer,
        finalizer: &str,
        expected: ExpectedPhase,
        now: Timestamp,
    ) -> Result<Option<Change>, Error> {
        self.edit_finalizers(ptr, finalizer, now, true, expected)
    }

    /// Removes `finalizer` from the resource at `ptr`, whatever its owner and
    /// phase. Removing a finalizer that is not there writes nothing.
    ///
    /// # Errors
    /// [`Error::NotFound`]; [`Error::InvalidInput`].
    pub fn remove_finalizer(
        &mut self,
        ptr: &Pointer,
        finalizer: &str,
        now: Timestamp,
    ) -> Result<Option<Change>, Error> {
        self.edit_finalizers(ptr, finalizer, now, false, ExpectedPhase::Any)
    }
}

/// Whether `res` may be an update of `current`: it carries no uid (checked
/// by its version only), or the stored one.
fn same_incarnation(current: &AnyResource, res: &AnyResource) -> bool {
    match res.metadata().uid() {
        None => true,
        Some(sent) => current.metadata().uid() == Some(sent),
    }
}

/// Gives a resource loaded without a uid (stored before uids) its derived one.
fn give_legacy_uid(md: &mut crate::resource::Metadata) {
    if md.uid().is_none() {
        md.set_uid(Some(Uid::of_legacy(md.pointer(), md.created())));
    }
}

/// Stamps a new resource as the contract prescribes: the interned kind,
/// version 1, a new uid, the owner, `created` = `updated` = `now`.
fn stamp_new(
    mut res: AnyResource,
    kind: &Kind,
    owner: Option<Arc<str>>,
    now: Timestamp,
    revision: u64,
) -> AnyResource {
    let md = res.metadata_mut();
    md.intern_kind(kind);
    md.set_revision(revision);
    md.set_version(crate::resource::Version::INITIAL);
    md.set_uid(Some(Uid::random()));
    md.set_owner(owner);
    md.set_created(now);
    md.set_updated(now);
    res
}

/// Stamps `new` as the successor of `current` (checks already done): version
/// + 1, uid, owner, kind and `created` kept from the stored copy, `updated` = `now`.
fn stamp_update(
    current: &AnyResource,
    mut new: AnyResource,
    now: Timestamp,
    revision: u64,
) -> Result<(AnyResource, Change), Error> {
    if current.phase() == Phase::TearingDown && new.phase() == Phase::Running {
        return Err(Error::InvalidInput {
            resource: current.pointer().to_string(),
            reason: "a resource that is tearing down can never return to running".into(),
        });
    }
    let cur = current.metadata();
    let md = new.metadata_mut();
    md.intern_kind(cur.kind());
    md.set_version(cur.version().next());
    md.set_uid(cur.uid());
    md.set_revision(revision);
    md.set_owner(cur.owner_shared().cloned());
    md.set_created(cur.created());
    md.set_updated(now);
    Ok((new.clone(), Change::Updated { old: current.clone(), new }))
}

/// The slot update for a checked write: store the new resource, or keep the old.
fn replacing(
    result: Result<(AnyResource, Change), Error>,
) -> (SlotEdit, Result<(AnyResource, Change), Error>) {
    match result {
        Ok((stored, change)) => (SlotEdit::Put(stored.clone()), Ok((stored, change))),
        Err(e) => (SlotEdit::Keep, Err(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_specs::{Num, Text};
    use crate::resource::{Resource, Version};

    fn t(n: u64) -> Timestamp {
        Timestamp::from_unix_nanos(n)
    }

    fn num(id: &str, n: i64) -> AnyResource {
        Resource::new("ns", id, Num(n)).into_any()
    }

    fn ptr(id: &str) -> Pointer {
        Pointer::of::<Num>("ns", id)
    }

    fn set_num(n: i64) -> ModifyFn {
        Box::new(move |cur| {
            let mut r = match cur {
                Some(c) => c.typed::<Num>()?,
                None => Resource::new("ns", "m", Num(0)),
            };
            r.spec_mut().0 = n;
            Ok(r.into_any())
        })
    }

    #[test]
    fn create_sets_version_owner_and_timestamps() {
        let mut s = Store::new();
        let mut r = num("a", 1);
        r.metadata_mut().set_version(Version::new(99));
        let (stored, change) = s.create(r, Some("c"), t(5)).unwrap();
        assert_eq!(stored.version(), Version::INITIAL);
        assert_eq!(stored.owner(), Some("c"));
        assert_eq!(stored.metadata().created(), t(5));
        assert_eq!(stored.metadata().updated(), t(5));
        assert_eq!(change, Change::Created(stored.clone()));
        assert_eq!(s.get(&ptr("a")).unwrap(), stored);
    }

    #[test]
    fn create_of_an_existing_id_is_already_exists() {
        let mut s = Store::new();
        s.create(num("a", 1), None, t(1)).unwrap();
        let e = s.create(num("a", 2), None, t(2)).unwrap_err();
        assert!(e.is_already_exists());
        assert_eq!(s.get(&ptr("a")).unwrap().typed::<Num>().unwrap().spec().0, 1);
    }

    #[test]
    fn update_checks_not_found_owner_version_phase_in_that_order() {
        let mut s = Store::new();
        let e = s.update(num("a", 1), None, ExpectedPhase::Running, t(1)).unwrap_err();
        assert!(e.is_not_found());

        let (stored, _) = s.create(num("a", 1), Some("c"), t(1)).unwrap();
        s.teardown(&ptr("a"), Some("c"), t(2)).unwrap();
        // Wrong owner, wrong version and wrong phase at once: owner wins.
        let stale = stored.clone();
        let e = s.update(stale.clone(), Some("x"), ExpectedPhase::Running, t(3)).unwrap_err();
        assert!(e.is_owner_conflict(), "{e}");
        // Right owner, wrong version, wrong phase: version wins.
        let e = s.update(stale, Some("c"), ExpectedPhase::Running, t(3)).unwrap_err();
        assert!(e.is_version_conflict(), "{e}");
        // Right owner and version, wrong phase.
        let fresh = s.get(&ptr("a")).unwrap();
        let e = s.update(fresh.clone(), Some("c"), ExpectedPhase::Running, t(3)).unwrap_err();
        assert!(e.is_phase_conflict(), "{e}");
        // Expecting the phase it is in succeeds.
        let (updated, _) = s.update(fresh, Some("c"), ExpectedPhase::TearingDown, t(4)).unwrap();
        assert_eq!(updated.version(), Version::new(3));
    }

    #[test]
    fn update_bumps_version_and_keeps_created() {
        let mut s = Store::new();
        let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
        let mut next = stored.typed::<Num>().unwrap();
        next.spec_mut().0 = 2;
        next.metadata_mut().set_version(Version::new(1));
        let (updated, change) =
            s.update(next.into_any(), None, ExpectedPhase::Running, t(9)).unwrap();
        assert_eq!(updated.version(), Version::new(2));
        assert_eq!(updated.metadata().created(), t(1));
        assert_eq!(updated.metadata().updated(), t(9));
        assert_eq!(change, Change::Updated { old: stored, new: updated });
    }

    #[test]
    fn update_with_a_bumped_version_is_a_conflict() {
        let mut s = Store::new();
        let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
        let mut r = stored.clone();
        r.metadata_mut().set_version(stored.version().next());
        let e = s.update(r, None, ExpectedPhase::Running, t(2)).unwrap_err();
        assert!(e.is_version_conflict());
    }

    #[test]
    fn no_op_modify_writes_nothing() {
        let mut s = Store::new();
        let (a, change) = s
            .modify(&Pointer::of::<Num>("ns", "m"), &set_num(1), None, ExpectedPhase::Running, t(1))
            .unwrap();
        assert!(matches!(change, Some(Change::Created(_))));
        let (b, change) = s
            .modify(&Pointer::of::<Num>("ns", "m"), &set_num(1), None, ExpectedPhase::Running, t(2))
            .unwrap();
        assert_eq!(change, None);
        assert_eq!(b.version(), a.version());
        assert_eq!(b.metadata().updated(), t(1));
        let (c, change) = s
            .modify(&Pointer::of::<Num>("ns", "m"), &set_num(2), None, ExpectedPhase::Running, t(3))
            .unwrap();
        assert!(matches!(change, Some(Change::Updated { .. })));
        assert_eq!(c.version(), Version::new(2));
    }

    #[test]
    fn modify_checks_owner_and_phase_even_for_no_op_changes() {
        let mut s = Store::new();
        let p = Pointer::of::<Num>("ns", "m");
        s.modify(&p, &set_num(1), Some("c"), ExpectedPhase::Running, t(1)).unwrap();
        let e = s.modify(&p, &set_num(1), None, ExpectedPhase::Running, t(2)).unwrap_err();
        assert!(e.is_owner_conflict());
        s.teardown(&p, Some("c"), t(3)).unwrap();
        let e = s.modify(&p, &set_num(1), Some("c"), ExpectedPhase::Running, t(4)).unwrap_err();
        assert!(e.is_phase_conflict());
    }

    #[test]
    fn modify_returning_another_address_is_invalid_input() {
        let mut s = Store::new();
        let f: ModifyFn = Box::new(|_| Ok(Resource::new("ns", "elsewhere", Num(1)).into_any()));
        let e = s.modify(&ptr("m"), &f, None, ExpectedPhase::Running, t(1)).unwrap_err();
        assert!(e.is_invalid_input());
        assert!(s.is_empty());
    }

    #[test]
    fn destroy_requires_owner_and_no_finalizers_but_not_teardown() {
        let mut s = Store::new();
        let mut r = num("a", 1);
        r.metadata_mut().finalizers_mut().add("f");
        s.create(r, Some("c"), t(1)).unwrap();
        assert!(s.destroy(&ptr("a"), None).unwrap_err().is_owner_conflict());
        assert!(s.destroy(&ptr("a"), Some("c")).unwrap_err().is_pending_finalizers());
        s.remove_finalizer(&ptr("a"), "f", t(2)).unwrap();
        let change = s.destroy(&ptr("a"), Some("c")).unwrap();
        assert!(matches!(change, Change::Destroyed(r) if r.version() == Version::new(2)));
        assert!(s.destroy(&ptr("a"), Some("c")).unwrap_err().is_not_found());
    }

    #[test]
    fn teardown_is_idempotent_and_reports_readiness() {
        let mut s = Store::new();
        let mut r = num("a", 1);
        r.metadata_mut().finalizers_mut().add("f");
        s.create(r, None, t(1)).unwrap();
        let (ready, change) = s.teardown(&ptr("a"), None, t(2)).unwrap();
        assert!(!ready);
        assert!(change.is_some());
        let (ready, change) = s.teardown(&ptr("a"), None, t(3)).unwrap();
        assert!(!ready);
        assert!(change.is_none());
        s.remove_finalizer(&ptr("a"), "f", t(4)).unwrap();
        let (ready, change) = s.teardown(&ptr("a"), None, t(5)).unwrap();
        assert!(ready && change.is_none());
        assert_eq!(s.get(&ptr("a")).unwrap().version(), Version::new(3));
    }

    #[test]
    fn a_torn_down_resource_cannot_return_to_running() {
        let mut s = Store::new();
        s.create(num("a", 1), None, t(1)).unwrap();
        s.teardown(&ptr("a"), None, t(2)).unwrap();
        let mut r = s.get(&ptr("a")).unwrap();
        r.metadata_mut().set_phase(Phase::Running);
        let e = s.update(r, None, ExpectedPhase::Any, t(3)).unwrap_err();
        assert!(e.is_invalid_input(), "{e}");
    }

    #[test]
    fn finalizer_edits_ignore_owner_and_phase_and_skip_no_ops() {
        let mut s = Store::new();
        s.create(num("a", 1), Some("c"), t(1)).unwrap();
        s.teardown(&ptr("a"), Some("c"), t(2)).unwrap();
        assert!(s.add_finalizer(&ptr("a"), "f", t(3)).unwrap().is_some());
        assert!(s.add_finalizer(&ptr("a"), "f", t(4)).unwrap().is_none());
        assert!(s.remove_finalizer(&ptr("a"), "g", t(5)).unwrap().is_none());
        assert!(s.remove_finalizer(&ptr("a"), "f", t(6)).unwrap().is_some());
        assert_eq!(s.get(&ptr("a")).unwrap().version(), Version::new(4));
        assert!(s.add_finalizer(&ptr("zz"), "f", t(7)).unwrap_err().is_not_found());
    }

    #[test]
    fn list_is_sorted_by_id_and_filtered_by_labels() {
        let mut s = Store::new();
        for id in ["c", "a", "b"] {
            let mut r = num(id, 1);
            if id != "b" {
                r.metadata_mut().labels_mut().insert("keep", "yes");
            }
            s.create(r, None, t(1)).unwrap();
        }
        s.create(Resource::new("ns", "z", Text("x".into())).into_any(), None, t(1)).unwrap();
        let kind = Kind::of::<Num>("ns");
        let ids: Vec<String> =
            s.list(&kind, &LabelQuery::all()).unwrap().iter().map(|r| r.id().to_owned()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let kept = s.list(&kind, &LabelQuery::all().exists("keep")).unwrap();
        assert_eq!(kept.len(), 2);
        assert!(s.list(&Kind::of::<Num>("other"), &LabelQuery::all()).unwrap().is_empty());
    }

    #[test]
    fn invalid_input_stores_nothing() {
        let mut s = Store::new();
        let bad_id = Resource::new("ns", "", Num(1)).into_any();
        assert!(s.create(bad_id, None, t(1)).unwrap_err().is_invalid_input());
        let mut bad_label = num("a", 1);
        bad_label.metadata_mut().labels_mut().insert("no spaces allowed", "x");
        assert!(s.create(bad_label, None, t(1)).unwrap_err().is_invalid_input());
        let long_ns = Resource::new("n".repeat(300), "a", Num(1)).into_any();
        assert!(s.create(long_ns, None, t(1)).unwrap_err().is_invalid_input());
        assert!(s.is_empty());
        assert!(s.get(&Pointer::new("ns", "T\u{7}", "a")).unwrap_err().is_invalid_input());
    }

    #[test]
    fn every_write_takes_the_next_revision_and_no_ops_take_none() {
        let mut s = Store::new();
        let (a, _) = s.create(num("a", 1), None, t(1)).unwrap();
        assert_eq!((a.metadata().revision(), s.revision()), (1, 1));
        let (a2, _) = s.modify(&ptr("a"), &set_num(2), None, ExpectedPhase::Running, t(2)).unwrap();
        assert_eq!(a2.metadata().revision(), 2);
        s.modify(&ptr("a"), &set_num(2), None, ExpectedPhase::Running, t(3)).unwrap();
        assert_eq!(s.revision(), 2, "a no-op modify takes no revision");
        assert!(s.create(num("a", 9), None, t(4)).is_err());
        assert_eq!(s.revision(), 2, "a failed write takes no revision");
        s.add_finalizer(&ptr("a"), "f", t(5)).unwrap();
        s.add_finalizer(&ptr("a"), "f", t(6)).unwrap();
        assert_eq!(s.revision(), 3);
        s.remove_finalizer(&ptr("a"), "f", t(7)).unwrap();
        s.destroy(&ptr("a"), None).unwrap();
        assert_eq!(s.revision(), 5, "a destroy takes one too");
    }

    #[test]
    fn rollback_restores_what_the_changes_replaced() {
        let mut s = Store::new();
        let (kept, _) = s.create(num("kept", 1), None, t(1)).unwrap();
        let (gone, _) = s.create(num("gone", 1), None, t(1)).unwrap();
        let mut modify =
            |n| s.modify(&ptr("kept"), &set_num(n), None, ExpectedPhase::Running, t(2)).unwrap().1;
        let (five, six) = (modify(5).unwrap(), modify(6).unwrap());
        let new = s.create(num("new", 1), None, t(2)).unwrap().1;
        let changes = [five, six, new, s.destroy(&ptr("gone"), None).unwrap()];
        let revision = s.revision();
        s.rollback(changes.iter());
        assert_eq!(s.get(&ptr("kept")).unwrap(), kept);
        assert_eq!(s.get(&ptr("kept")).unwrap().metadata().revision(), kept.metadata().revision());
        assert_eq!(s.get(&ptr("gone")).unwrap(), gone);
        assert!(s.get(&ptr("new")).unwrap_err().is_not_found());
        assert_eq!(s.len(), 2);
        assert_eq!(s.revision(), revision, "revisions are never reused");
        let (next, _) = s.create(num("next", 1), None, t(3)).unwrap();
        assert_eq!(next.metadata().revision(), revision + 1);
    }

    #[test]
    fn load_keeps_what_was_stored_and_moves_the_revision_up() {
        let mut s = Store::new();
        let mut r = num("a", 1);
        r.metadata_mut().set_revision(41);
        r.metadata_mut().set_version(Version::new(7));
        s.load(vec![r], 40);
        let a = s.get(&ptr("a")).unwrap();
        assert_eq!((a.version(), a.metadata().revision(), s.revision()), (Version::new(7), 41, 41));
        s.load(Vec::new(), 50);
        assert_eq!(s.revision(), 50);
    }

    #[test]
    fn an_update_from_another_incarnation_is_a_version_conflict() {
        let mut s = Store::new();
        let (first, _) = s.create(num("a", 1), None, t(1)).unwrap();
        s.destroy(&ptr("a"), None).unwrap();
        let (second, _) = s.create(num("a", 2), None, t(2)).unwrap();
        assert_eq!(first.version(), second.version(), "both at version 1");
        assert_ne!(first.metadata().uid(), second.metadata().uid());
        let mut stale = first.typed::<Num>().unwrap();
        stale.spec_mut().0 = 99;
        let e = s.update(stale.into_any(), None, ExpectedPhase::Running, t(3)).unwrap_err();
        assert!(e.is_version_conflict(), "{e}");
        let now = s.get(&ptr("a")).unwrap();
        assert_eq!(now.typed::<Num>().unwrap().spec(), &Num(2), "the new incarnation untouched");
        assert_eq!(now.metadata().revision(), second.metadata().revision());
        // The owner is still checked first.
        s.destroy(&ptr("a"), None).unwrap();
        s.create(num("a", 3), Some("c"), t(4)).unwrap();
        let e = s.update(first, None, ExpectedPhase::Running, t(5)).unwrap_err();
        assert!(e.is_owner_conflict(), "{e}");
    }

    #[test]
    fn the_uid_is_the_states_set_at_create_and_kept_by_every_write() {
        let mut s = Store::new();
        let mut r = num("a", 1);
        let sent = Uid::random();
        r.metadata_mut().set_uid(Some(sent));
        let (created, _) = s.create(r, None, t(1)).unwrap();
        let uid = created.metadata().uid().expect("a stored resource has a uid");
        assert_ne!(uid, sent, "a create replaces the caller's uid");
        let (updated, _) = s.update(created, None, ExpectedPhase::Running, t(2)).unwrap();
        assert_eq!(updated.metadata().uid(), Some(uid));
        let (modified, _) =
            s.modify(&ptr("a"), &set_num(5), None, ExpectedPhase::Running, t(3)).unwrap();
        assert_eq!(modified.metadata().uid(), Some(uid));
        s.add_finalizer(&ptr("a"), "f", t(4)).unwrap();
        assert_eq!(s.get(&ptr("a")).unwrap().metadata().uid(), Some(uid));
        s.teardown(&ptr("a"), None, t(5)).unwrap();
        assert_eq!(s.get(&ptr("a")).unwrap().metadata().uid(), Some(uid));
        s.remove_finalizer(&ptr("a"), "f", t(6)).unwrap();
        let Change::Destroyed(gone) = s.destroy(&ptr("a"), None).unwrap() else { panic!() };
        assert_eq!(gone.metadata().uid(), Some(uid));
        let (again, _) = s.create(num("a", 1), None, t(7)).unwrap();
        assert_ne!(again.metadata().uid(), Some(uid), "another incarnation, another uid");
    }

    #[test]
    fn an_update_without_a_uid_checks_the_version_only() {
        let mut s = Store::new();
        let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
        let mut scratch = num("a", 2);
        scratch.metadata_mut().set_version(stored.version());
        let (updated, _) = s.update(scratch, None, ExpectedPhase::Running, t(2)).unwrap();
        assert_eq!(updated.metadata().uid(), stored.metadata().uid(), "the stored uid kept");
        assert_eq!(updated.version(), Version::new(2));
        let mut foreign = updated.clone();
        foreign.metadata_mut().set_uid(Some(Uid::random()));
        let e = s.update(foreign, None, ExpectedPhase::Running, t(3)).unwrap_err();
        assert!(e.is_version_conflict(), "a uid that is not the stored one: {e}");
    }

    #[test]
    fn a_modify_that_builds_from_scratch_is_still_a_no_op_when_nothing_changed() {
        let mut s = Store::new();
        let from_scratch: ModifyFn = Box::new(|_| Ok(Resource::new("ns", "m", Num(1)).into_any()));
        let p = Pointer::of::<Num>("ns", "m");
        let (a, change) = s.modify(&p, &from_scratch, None, ExpectedPhase::Running, t(1)).unwrap();
        assert!(matches!(change, Some(Change::Created(_))));
        let (b, change) = s.modify(&p, &from_scratch, None, ExpectedPhase::Running, t(2)).unwrap();
        assert_eq!(change, None, "no uid in the function's result is no change");
        assert_eq!(b.metadata().uid(), a.metadata().uid());
        assert_eq!(b.metadata().revision(), a.metadata().revision());
    }

    #[test]
    fn resources_loaded_without_a_uid_get_a_stable_one() {
        let old = || {
            let mut r = num("a", 1);
            r.metadata_mut().set_created(t(1_000));
            r.metadata_mut().set_version(Version::new(3));
            r.metadata_mut().set_revision(7);
            r
        };
        let mut s = Store::new();
        s.load(vec![old()], 7);
        let uid = s.get(&ptr("a")).unwrap().metadata().uid().expect("derived at load");
        let mut again = Store::new();
        again.load(vec![old()], 7);
        assert_eq!(again.get(&ptr("a")).unwrap().metadata().uid(), Some(uid), "after a reopen");
        // Stored with the next write; and a stale copy from before is refused.
        let (updated, _) = s.update(old(), None, ExpectedPhase::Running, t(2_000)).unwrap();
        assert_eq!(updated.metadata().uid(), Some(uid));
        let mut kept = num("b", 1);
        let given = Uid::random();
        kept.metadata_mut().set_uid(Some(given));
        s.load(vec![kept], 0);
        assert_eq!(s.get(&ptr("b")).unwrap().metadata().uid(), Some(given), "as stored");
        // A change fed by another writer gets the same.
        let mut fed = Store::new();
        let change = fed.put_external(old());
        assert_eq!(change.resource().metadata().uid(), Some(uid));
    }

    #[test]
    fn stored_resources_share_one_kind_allocation() {
        let mut s = Store::new();
        let (a, _) = s.create(num("a", 1), None, t(1)).unwrap();
        let (b, _) = s.create(num("b", 1), None, t(1)).unwrap();
        assert!(a.pointer().kind().same_allocation(b.pointer().kind()));
    }
}
