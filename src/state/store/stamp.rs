//! The stamping rules of the [`Store`](super::Store): what the state sets on
//! every write (version, uid, owner, revision, timestamps), and the checks
//! that decide whether a write may replace what is stored.

use std::sync::Arc;

use super::Change;
use crate::Error;
use crate::resource::{AnyResource, Finalizers, Kind, Phase, Pointer, Timestamp, Uid};
use crate::state::cache::SlotEdit;

fn owner_conflict(ptr: &Pointer, stored: Option<&str>, caller: Option<&str>) -> Error {
    Error::OwnerConflict {
        resource: ptr.clone(),
        owner: stored.map(str::to_owned),
        caller: caller.map(str::to_owned),
    }
}

pub(super) fn check_owner(res: &AnyResource, caller: Option<&str>) -> Result<(), Error> {
    if res.owner() == caller {
        Ok(())
    } else {
        Err(owner_conflict(res.pointer(), res.owner(), caller))
    }
}

/// Whether `res` may be an update of `current`: it carries no uid (checked
/// by its version only), or the stored one.
pub(super) fn same_incarnation(current: &AnyResource, res: &AnyResource) -> bool {
    match res.metadata().uid() {
        None => true,
        Some(sent) => current.metadata().uid() == Some(sent),
    }
}

/// Gives a resource loaded without a uid (stored before uids) its derived one.
pub(super) fn give_legacy_uid(md: &mut crate::resource::Metadata) {
    if md.uid().is_none() {
        md.set_uid(Some(Uid::of_legacy(md.pointer(), md.created())));
    }
}

/// Stamps a new resource as the contract prescribes: the interned kind,
/// version 1, a new uid, the owner, `created` = `updated` = `now`.
pub(super) fn stamp_new(
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
    md.set_generation(1);
    md.set_uid(Some(Uid::random()));
    md.set_owner(owner);
    md.set_created(now);
    md.set_updated(now);
    res
}

/// Stamps `new` as the successor of `current` (checks already done): the
/// next version, the generation moved by one when the spec changed, uid,
/// owner, kind and `created` kept from the stored copy, `updated` = `now`.
pub(super) fn stamp_update(
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
    let spec_changed = !new.spec_eq(current);
    let md = new.metadata_mut();
    md.intern_kind(cur.kind());
    md.set_version(cur.version().next());
    // Data stored before the count existed starts it at its version.
    let generation = match cur.generation() {
        0 => cur.version().get(),
        g => g,
    };
    md.set_generation(generation + u64::from(spec_changed));
    md.set_uid(cur.uid());
    md.set_revision(revision);
    md.set_owner(cur.owner_shared().cloned());
    md.set_created(cur.created());
    md.set_updated(now);
    Ok((new.clone(), Change::Updated { old: current.clone(), new }))
}

/// The slot update for a checked write: store the new resource, or keep the old.
pub(super) fn replacing(
    result: Result<(AnyResource, Change), Error>,
) -> (SlotEdit, Result<(AnyResource, Change), Error>) {
    match result {
        Ok((stored, change)) => (SlotEdit::Put(stored.clone()), Ok((stored, change))),
        Err(e) => (SlotEdit::Keep, Err(e)),
    }
}

/// A controller's write (create, update or modify through its context) must
/// leave the finalizers as they were (`before`; none for a new resource):
/// a controller changes finalizers only with `add_finalizer` and
/// `remove_finalizer`, on its strong inputs (docs/ARCHITECTURE.md, 'State
/// contract'). Finalizers on an output
/// are other parties' holds on it, and a write that rebuilt the resource
/// from scratch would otherwise drop them without a word.
///
/// # Errors
/// [`Error::AccessDenied`] naming the controller, the operation and the
/// resource, with both sets.
pub(crate) fn keep_finalizers(
    controller: &str,
    operation: &'static str,
    before: &Finalizers,
    after: &AnyResource,
) -> Result<(), Error> {
    let now = after.metadata().finalizers();
    if now == before {
        return Ok(());
    }
    Err(Error::AccessDenied {
        controller: controller.to_owned(),
        operation,
        resource: after.pointer().to_string(),
        reason: format!(
            "the write would change its finalizers from {before:?} to {now:?}; a controller \
             changes finalizers only with add_finalizer and remove_finalizer, on its strong \
             inputs (leave `finalizers` as read)"
        ),
    })
}
