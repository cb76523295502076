//! What the kit records of state requests, and the faults it can inject.

use std::fmt;
use std::sync::{Arc, Mutex};

use crate::Error;
use crate::resource::{AnyResource, Pointer};
use crate::state::request::{StateReply, StateRequest};

/// One state request as a test sees it: `"modify default/Strs.test.cosi.dev/a"`.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// `get`, `list`, `create`, `update`, `modify`, `destroy`, `teardown`,
    /// `add_finalizer`, `remove_finalizer`, `watch`, `unwatch`.
    pub operation: &'static str,
    /// The resource (or kind) it was about.
    pub subject: String,
    /// The owner it acted as (the controller's name for its writes).
    pub owner: Option<String>,
    /// The finalizer, for finalizer edits.
    pub finalizer: Option<String>,
    /// The resource the state answered with (create, update, modify, get).
    pub resource: Option<AnyResource>,
    /// The error, if the request failed (injected faults included).
    pub error: Option<Error>,
}

impl Recorded {
    pub(crate) fn of(req: &StateRequest) -> Self {
        let (owner, finalizer) = match req {
            StateRequest::Create { owner, .. }
            | StateRequest::Update { owner, .. }
            | StateRequest::Modify { owner, .. }
            | StateRequest::Destroy { owner, .. }
            | StateRequest::Teardown { owner, .. } => (owner.as_deref().map(str::to_owned), None),
            StateRequest::AddFinalizer { finalizer, .. }
            | StateRequest::RemoveFinalizer { finalizer, .. } => (None, Some(finalizer.clone())),
            _ => (None, None),
        };
        Recorded {
            operation: req.operation(),
            subject: req.subject(),
            owner,
            finalizer,
            resource: None,
            error: None,
        }
    }

    pub(crate) fn answered(mut self, reply: &Result<StateReply, Error>) -> Self {
        match reply {
            Ok(StateReply::Resource(r) | StateReply::Unchanged(Some(r))) => {
                self.resource = Some(r.clone());
            }
            Err(e) => self.error = Some(e.clone()),
            Ok(_) => {}
        }
        self
    }

    /// Whether the request succeeded.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }
}

impl fmt::Display for Recorded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.operation, self.subject)?;
        // An answer the caller expects (a release that finds its output
        // gone, or still held) is not a failure: it says what it found.
        match &self.error {
            None => {}
            Some(e) if e.is_not_found() => f.write_str(" (not found)")?,
            Some(e) if e.is_pending_finalizers() => f.write_str(" (pending finalizers)")?,
            Some(_) => f.write_str(" (failed)")?,
        }
        Ok(())
    }
}

/// A state request that will fail on purpose, to exercise error paths.
///
/// ```
/// use cosi_runtime::resource::Pointer;
/// use cosi_runtime::testing::Fault;
///
/// // The next two modifies of this resource fail with `Unavailable`.
/// let fault = Fault::on("modify").at(&Pointer::new("default", "Strs.test.cosi.dev", "a")).times(2);
/// # let _ = fault;
/// ```
#[derive(Clone, Debug)]
pub struct Fault {
    operation: Option<&'static str>,
    subject: Option<String>,
    remaining: usize,
    error: Option<Error>,
}

impl Fault {
    /// Fails the next request of `operation` (`get`, `list`, `create`,
    /// `update`, `modify`, `destroy`, `teardown`, `add_finalizer`, `remove_finalizer`).
    pub fn on(operation: &'static str) -> Self {
        Fault { operation: Some(operation), subject: None, remaining: 1, error: None }
    }

    /// Fails the next request of any kind.
    pub fn any() -> Self {
        Fault { operation: None, ..Fault::on("") }
    }

    /// Only requests about `ptr`.
    #[must_use]
    pub fn at(mut self, ptr: &Pointer) -> Self {
        self.subject = Some(ptr.to_string());
        self
    }

    /// Fails `n` matching requests instead of one.
    #[must_use]
    pub fn times(mut self, n: usize) -> Self {
        self.remaining = n;
        self
    }

    /// Fails with `error` (default: [`Error::Unavailable`]).
    #[must_use]
    pub fn error(mut self, error: Error) -> Self {
        self.error = Some(error);
        self
    }

    fn matches(&self, req: &StateRequest) -> bool {
        self.remaining > 0
            && !matches!(req, StateRequest::Watch { .. } | StateRequest::Unwatch { .. })
            && self.operation.is_none_or(|op| op == req.operation())
            && self.subject.as_ref().is_none_or(|s| *s == req.subject())
    }

    fn error_for(&self, req: &StateRequest) -> Error {
        self.error.clone().unwrap_or_else(|| Error::Unavailable {
            resource: req.subject(),
            service: "the state (an injected fault)",
        })
    }
}

/// Faults waiting to fire, shared by a test and the actor that applies them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Faults(Arc<Mutex<Vec<Fault>>>);

impl Faults {
    pub(crate) fn push(&self, fault: Fault) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(fault);
    }

    /// The error of the first fault matching `req`, consuming one of its shots.
    pub(crate) fn fire(&self, req: &StateRequest) -> Option<Error> {
        let mut faults = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let fault = faults.iter_mut().find(|f| f.matches(req))?;
        fault.remaining -= 1;
        Some(fault.error_for(req))
    }
}

/// A shared, append-only log of recorded requests.
#[derive(Clone, Debug, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<Recorded>>>);

impl Log {
    pub(crate) fn push(&self, r: Recorded) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push(r);
    }

    pub(crate) fn all(&self) -> Vec<Recorded> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn take(&self) -> Vec<Recorded> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn teardown_answered(answer: Result<StateReply, Error>) -> String {
        let ptr = Pointer::new("ns", "Files.test.cosi.dev", "a");
        let req = StateRequest::Teardown { pointer: ptr, owner: Some("C".into()) };
        Recorded::of(&req).answered(&answer).to_string()
    }

    #[test]
    fn the_write_log_says_what_a_request_found_and_failed_only_for_failures() {
        let ptr = Pointer::new("ns", "Files.test.cosi.dev", "a");
        assert_eq!(
            teardown_answered(Err(Error::NotFound { resource: ptr.clone() })),
            "teardown ns/Files.test.cosi.dev/a (not found)",
            "a release of an output already gone is no failure"
        );
        let held = Error::PendingFinalizers { resource: ptr.clone(), finalizers: vec!["X".into()] };
        assert_eq!(
            teardown_answered(Err(held)),
            "teardown ns/Files.test.cosi.dev/a (pending finalizers)"
        );
        let denied = Error::OwnerConflict {
            resource: ptr,
            owner: Some("D".into()),
            caller: Some("C".into()),
        };
        assert_eq!(teardown_answered(Err(denied)), "teardown ns/Files.test.cosi.dev/a (failed)");
    }
}
