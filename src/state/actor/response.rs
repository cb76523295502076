//! The protocol of the state actor's answers: a reply now, or a slot that
//! the caller's channel is put in and answered once the write is committed.

use std::cell::Cell;
use std::fmt;
use std::rc::Rc;

use crate::Error;
use crate::state::lane::Sender;
use crate::state::request::StateReply;

/// Where a deferred reply goes: filled with the caller's channel right after
/// the request is dispatched (by actix for a message, by the pass for a
/// request from the inbox).
pub(crate) type ReplySlot = Rc<Cell<Option<Sender>>>;

pub(crate) fn answer(slot: &ReplySlot, reply: Result<StateReply, Error>) {
    if let Some(tx) = slot.take() {
        tx.send(reply);
    }
}

/// The answer of the state actor to one [`StateRequest`](crate::dev::StateRequest): now, or once the
/// batch that the request's write joined is committed.
#[derive(Debug)]
pub struct StateResponse(pub(crate) Response);

pub(crate) enum Response {
    Now(Result<StateReply, Error>),
    Later(ReplySlot),
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Response::Now(r) => f.debug_tuple("Now").field(r).finish(),
            Response::Later(_) => f.write_str("Later"),
        }
    }
}
