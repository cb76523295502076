//! What the commit pipeline holds: the writes a pass staged, and the
//! caller of a [`Close`](crate::state::request::Close) waiting for it.

use std::cell::Cell;
use std::rc::Rc;

use actix::dev::OneshotSender;

use super::response::ReplySlot;
use crate::Error;
use crate::state::request::{StateReply, Subject};
use crate::state::store::Change;

/// Writes staged in the cache, waiting for (or in) their commit.
#[derive(Default)]
pub(super) struct Batch {
    /// Each write: the change, its revision, its backend.
    pub(super) changes: Vec<(Change, u64, usize)>,
    /// Callers waiting for the batch: their resource and what to answer on success.
    pub(super) waiting: Vec<(ReplySlot, Subject, Result<StateReply, Error>)>,
}

pub(super) type ReplySlotClose = Rc<Cell<Option<OneshotSender<Result<(), Error>>>>>;
