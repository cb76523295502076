//! Teardown and finalizers: the lifecycle half of the [`Store`] contract.
//! Finalizer edits ignore the owner (and, unless told, the phase), so that
//! concurrent edits converge.

use super::stamp::{check_owner, stamp_update};
use super::{Change, ExpectedPhase, Store};
use crate::Error;
use crate::resource::{Phase, Pointer, Timestamp, validate};
use crate::state::cache::SlotEdit;

impl Store {
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
