//! The rules applied: a [`StateRequest`] against the [`Store`], giving its
//! reply and the change to publish (pure; the actor and the shared-store
//! path both run it), and the backend write that makes a change durable.

use std::panic::AssertUnwindSafe;

use super::backend::{Precondition, Write, WriteOp};
use super::request::{StateReply, StateRequest};
use super::store::{Change, Store};
use crate::Error;
use crate::resource::{AnyResource, Timestamp};

/// The backend write that makes `change` durable.
pub(crate) fn write_of(change: &Change, revision: u64) -> Write {
    let (pointer, precondition, op) = match change {
        Change::Created(r) => (r.pointer(), Precondition::Absent, WriteOp::Put(r.clone())),
        Change::Updated { old, new } => (
            new.pointer(),
            Precondition::Revision(old.metadata().revision()),
            WriteOp::Put(new.clone()),
        ),
        Change::Destroyed(r) => {
            (r.pointer(), Precondition::Revision(r.metadata().revision()), WriteOp::Delete)
        }
    };
    Write { pointer: pointer.clone(), precondition, op, revision, owner: None }
}

/// What a store request produced: the reply, and the change to publish.
pub(crate) type Applied = (Result<StateReply, Error>, Option<Change>);

fn written(r: Result<(AnyResource, Change), Error>) -> Applied {
    match r {
        Ok((resource, change)) => (Ok(StateReply::Resource(resource)), Some(change)),
        Err(e) => (Err(e), None),
    }
}

fn finalizers(r: Result<Option<Change>, Error>) -> Applied {
    match r {
        Ok(Some(change)) => (Ok(StateReply::Done), Some(change)),
        Ok(None) => (Ok(StateReply::Unchanged(None)), None),
        Err(e) => (Err(e), None),
    }
}

/// Applies a store request (anything but the watch requests) to `store`.
/// Watch requests are handed back: watches belong to whoever runs the store.
///
/// A panic in a modify function is caught (nothing was changed) and becomes
/// [`StateReply::ModifyPanicked`], for the caller to re-raise.
pub(crate) fn apply(
    store: &mut Store,
    req: StateRequest,
    now: Timestamp,
) -> Result<Applied, StateRequest> {
    // Moved, not cloned: stamping a resource nobody else holds is in place.
    Ok(match req {
        StateRequest::Create { resource, owner } => {
            written(store.create(resource, owner.as_deref(), now))
        }
        StateRequest::Update { resource, owner, expected_phase, keep_finalizers } => {
            let owner = owner.as_deref();
            written(store.update_keeping(resource, owner, expected_phase, keep_finalizers, now))
        }
        other => match apply_ref(store, &other, now) {
            Some(applied) => applied,
            None => return Err(other),
        },
    })
}

/// [`apply`] without consuming the request, so that it can run again (a
/// shared backend's conflict re-runs the rules on fresh data); `None` for the
/// watch requests.
pub(crate) fn apply_ref(store: &mut Store, req: &StateRequest, now: Timestamp) -> Option<Applied> {
    Some(match req {
        StateRequest::Get { pointer } => (store.get(pointer).map(StateReply::Resource), None),
        StateRequest::List { kind, query } => {
            (store.list(kind, query).map(StateReply::Resources), None)
        }
        StateRequest::ListWithRevision { kind, query } => {
            let revision = store.revision();
            let listed = store.list(kind, query);
            (listed.map(|resources| StateReply::Listed { resources, revision }), None)
        }
        StateRequest::GetWithRevision { pointer } => {
            let revision = store.revision();
            let found = match store.get(pointer) {
                Ok(r) => Ok(vec![r]),
                Err(e) if e.is_not_found() => Ok(Vec::new()),
                Err(e) => Err(e),
            };
            (found.map(|resources| StateReply::Listed { resources, revision }), None)
        }
        StateRequest::Create { resource, owner } => {
            written(store.create(resource.clone(), owner.as_deref(), now))
        }
        StateRequest::Update { resource, owner, expected_phase, keep_finalizers } => {
            let (res, owner) = (resource.clone(), owner.as_deref());
            written(store.update_keeping(res, owner, *expected_phase, *keep_finalizers, now))
        }
        StateRequest::Modify { pointer, owner, expected_phase, modify, keep_finalizers } => {
            let (owner, keep) = (owner.as_deref(), *keep_finalizers);
            match std::panic::catch_unwind(AssertUnwindSafe(|| {
                store.modify_keeping(pointer, modify, owner, *expected_phase, keep, now)
            })) {
                Ok(Ok((r, None))) => (Ok(StateReply::Unchanged(Some(r))), None),
                Ok(Ok((r, change))) => (Ok(StateReply::Resource(r)), change),
                Ok(Err(e)) => (Err(e), None),
                Err(panic) => (Ok(StateReply::ModifyPanicked(panic)), None),
            }
        }
        StateRequest::Destroy { pointer, owner } => {
            match store.destroy(pointer, owner.as_deref()) {
                Ok(change) => (Ok(StateReply::Done), Some(change)),
                Err(e) => (Err(e), None),
            }
        }
        StateRequest::Teardown { pointer, owner } => {
            match store.teardown(pointer, owner.as_deref(), now) {
                Ok((ready, change)) => (Ok(StateReply::Ready(ready)), change),
                Err(e) => (Err(e), None),
            }
        }
        StateRequest::AddFinalizer { pointer, finalizer, expected_phase } => {
            finalizers(store.add_finalizer_expecting(pointer, finalizer, *expected_phase, now))
        }
        StateRequest::RemoveFinalizer { pointer, finalizer } => {
            finalizers(store.remove_finalizer(pointer, finalizer, now))
        }
        // Answered by whoever runs the store: its revision depends on the routes.
        StateRequest::ListAllNamespaces { .. }
        | StateRequest::Watch { .. }
        | StateRequest::Unwatch { .. }
        | StateRequest::WatchStats { .. }
        | StateRequest::CountWatches => return None,
    })
}
