//! [`Error`]: what a state operation (direct, or through a controller's context)
//! can fail with.

use std::fmt;

use crate::resource::{Phase, Pointer, Version};

/// The error of a state operation. Every variant names the resource it is about.
///
/// Match on the variant, or use the `is_*` helpers:
///
/// ```
/// use cosi_runtime::{Error, resource::Pointer};
///
/// let err = Error::NotFound { resource: Pointer::new("network", "Links.net.cosi.dev", "eth9") };
/// assert!(err.is_not_found());
/// assert_eq!(err.to_string(), "resource network/Links.net.cosi.dev/eth9 doesn't exist");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The resource does not exist.
    #[error("resource {resource} doesn't exist")]
    NotFound {
        /// The resource asked for.
        resource: Pointer,
    },

    /// A create found a resource with the same address.
    #[error("resource {resource} already exists")]
    AlreadyExists {
        /// The resource that exists.
        resource: Pointer,
    },

    /// An update carried another version than the stored one, or was
    /// computed from another incarnation of the resource (its
    /// [`uid`](crate::resource::Metadata::uid) differs from the stored one:
    /// the resource was destroyed and created again since it was read).
    #[error("{}", version_conflict(resource, *sent, *stored))]
    VersionConflict {
        /// The resource.
        resource: Pointer,
        /// The version the caller sent (the one it read).
        sent: Version,
        /// The version stored.
        stored: Version,
    },

    /// The caller is not the owner of the resource.
    #[error("resource {resource} is owned by {}, not by {}", OwnerName(owner), OwnerName(caller))]
    OwnerConflict {
        /// The resource.
        resource: Pointer,
        /// Its owner (`None`: a user resource).
        owner: Option<String>,
        /// The owner the caller acted as.
        caller: Option<String>,
    },

    /// The resource is not in the phase the operation expects.
    #[error("resource {resource} is in phase {actual}, the operation expects {expected}")]
    PhaseConflict {
        /// The resource.
        resource: Pointer,
        /// The phase the operation expected.
        expected: Phase,
        /// The phase stored.
        actual: Phase,
    },

    /// A destroy found finalizers on the resource.
    #[error("resource {resource} has pending finalizers {finalizers:?}")]
    PendingFinalizers {
        /// The resource.
        resource: Pointer,
        /// The finalizers still holding it.
        finalizers: Vec<String>,
    },

    /// The request breaks an input rule (see [`resource::validate`](crate::resource::validate)).
    #[error("invalid input for resource {resource}: {reason}")]
    InvalidInput {
        /// The resource as given (its address may itself be the bad part).
        resource: String,
        /// Which rule was broken.
        reason: String,
    },

    /// The resource was read as a spec type it does not have.
    #[error("resource {resource} is of type {actual}, not {expected}")]
    TypeMismatch {
        /// The resource.
        resource: Pointer,
        /// The type asked for.
        expected: String,
        /// The type stored (with detail when a spec did not decode).
        actual: String,
    },

    /// A controller tried an operation its declared inputs and outputs do not allow.
    #[error("controller {controller:?} may not {operation} {resource}: {reason}")]
    AccessDenied {
        /// The controller.
        controller: String,
        /// The operation tried (`get`, `list`, `create`, `update`, `modify`,
        /// `teardown`, `destroy`, `add_finalizer`, `remove_finalizer`, `watch`).
        operation: &'static str,
        /// The resource, or the kind for a list.
        resource: String,
        /// Which rule denied it.
        reason: String,
    },

    /// The state (or the finalizer coordinator) is not running, so the request
    /// was not served.
    #[error("{service} is not running; the request about {resource} was not served")]
    Unavailable {
        /// The resource (or kind) the request was about.
        resource: String,
        /// Which actor was unreachable.
        service: &'static str,
    },

    /// The storage under the state failed: a commit that did not reach the
    /// disk (nothing of that batch was applied or published), or a state file
    /// that cannot be opened (the file is left untouched).
    #[error("storage failed for {resource} ({failure}): {reason}")]
    Storage {
        /// The resource whose write failed, or the state file that did not open.
        resource: String,
        /// What kind of failure.
        failure: StorageFailure,
        /// The storage engine's own words.
        reason: String,
    },

    /// A watch asked to resume from a revision the state no longer keeps the
    /// changes since (or has not reached): bootstrap again instead.
    #[error("cannot resume the watch of {resource} from revision {revision}: {reason}")]
    Compacted {
        /// The kind (or resource) watched.
        resource: String,
        /// The revision asked for.
        revision: u64,
        /// Why (the oldest revision kept, or the current one).
        reason: String,
    },
}

/// What kind of [`Error::Storage`] failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StorageFailure {
    /// Another process (or another state in this one) holds the file.
    Locked,
    /// The file is not a state file, or it is damaged.
    Corrupt,
    /// The file was written by a newer or unknown format version.
    UnsupportedFormat,
    /// The file or its directory cannot be written.
    ReadOnly,
    /// Any other IO or engine failure (a failed fsync, a broken device, ...).
    Io,
    /// The disk (or the quota) is full: nothing of the batch was written,
    /// what was acknowledged before is kept, reads go on, and writes succeed
    /// again once space is freed.
    Full,
    /// The backend is closed or its writer thread is gone.
    Closed,
    /// A write's precondition did not hold in the store (another writer, or
    /// the cache and the store disagree); nothing of the batch applied.
    Conflict,
    /// The store cannot be reached (etcd down or partitioned away). The write
    /// was not acknowledged; retry later.
    Unavailable,
    /// This process no longer holds the claim on the exclusive output type
    /// the write is for (its lease lapsed and another process may own it):
    /// the write was refused by the store, not applied.
    Fenced,
}

impl fmt::Display for StorageFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StorageFailure::Locked => {
                "locked: another process has it open, or a state of this process still has \
                 (call state.close(), or runtime.stop() on the runtime that opened it)"
            }
            StorageFailure::Corrupt => "corrupt",
            StorageFailure::UnsupportedFormat => "unsupported format",
            StorageFailure::ReadOnly => "read-only",
            StorageFailure::Io => "io",
            StorageFailure::Full => "full: no space left on the device (free some: writes resume)",
            StorageFailure::Closed => "closed",
            StorageFailure::Conflict => "conflict",
            StorageFailure::Unavailable => "unavailable",
            StorageFailure::Fenced => "fenced: the claim on the output type was lost",
        })
    }
}

/// The text of a version conflict: an equal version means another incarnation.
fn version_conflict(resource: &Pointer, sent: Version, stored: Version) -> String {
    if sent == stored {
        format!(
            "resource {resource} was destroyed and created again since the update's copy was \
             read: version {stored} of another incarnation (another uid)"
        )
    } else {
        format!(
            "resource {resource} is at version {stored}, the update was based on version {sent}"
        )
    }
}

struct OwnerName<'a>(&'a Option<String>);

impl fmt::Display for OwnerName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(o) => write!(f, "{o:?}"),
            None => f.write_str("no controller (a user resource)"),
        }
    }
}

impl Error {
    /// [`Error::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }

    /// [`Error::AlreadyExists`].
    pub fn is_already_exists(&self) -> bool {
        matches!(self, Error::AlreadyExists { .. })
    }

    /// [`Error::VersionConflict`].
    pub fn is_version_conflict(&self) -> bool {
        matches!(self, Error::VersionConflict { .. })
    }

    /// [`Error::OwnerConflict`].
    pub fn is_owner_conflict(&self) -> bool {
        matches!(self, Error::OwnerConflict { .. })
    }

    /// [`Error::PhaseConflict`].
    pub fn is_phase_conflict(&self) -> bool {
        matches!(self, Error::PhaseConflict { .. })
    }

    /// [`Error::PendingFinalizers`].
    pub fn is_pending_finalizers(&self) -> bool {
        matches!(self, Error::PendingFinalizers { .. })
    }

    /// [`Error::InvalidInput`].
    pub fn is_invalid_input(&self) -> bool {
        matches!(self, Error::InvalidInput { .. })
    }

    /// [`Error::TypeMismatch`].
    pub fn is_type_mismatch(&self) -> bool {
        matches!(self, Error::TypeMismatch { .. })
    }

    /// [`Error::AccessDenied`].
    pub fn is_access_denied(&self) -> bool {
        matches!(self, Error::AccessDenied { .. })
    }

    /// [`Error::Unavailable`].
    pub fn is_unavailable(&self) -> bool {
        matches!(self, Error::Unavailable { .. })
    }

    /// [`Error::Storage`].
    pub fn is_storage(&self) -> bool {
        matches!(self, Error::Storage { .. })
    }

    /// What kind of storage failure this is, for [`Error::Storage`].
    pub fn storage_failure(&self) -> Option<StorageFailure> {
        match self {
            Error::Storage { failure, .. } => Some(*failure),
            _ => None,
        }
    }

    /// [`Error::Compacted`]: bootstrap the watch again.
    pub fn is_compacted(&self) -> bool {
        matches!(self, Error::Compacted { .. })
    }

    /// Any conflict with the stored state: already exists, version, owner,
    /// phase or pending finalizers.
    pub fn is_conflict(&self) -> bool {
        matches!(
            self,
            Error::AlreadyExists { .. }
                | Error::VersionConflict { .. }
                | Error::OwnerConflict { .. }
                | Error::PhaseConflict { .. }
                | Error::PendingFinalizers { .. }
        )
    }

    /// The resource (or kind) the error is about, as text.
    pub fn resource(&self) -> String {
        match self {
            Error::NotFound { resource }
            | Error::AlreadyExists { resource }
            | Error::VersionConflict { resource, .. }
            | Error::OwnerConflict { resource, .. }
            | Error::PhaseConflict { resource, .. }
            | Error::PendingFinalizers { resource, .. }
            | Error::TypeMismatch { resource, .. } => resource.to_string(),
            Error::InvalidInput { resource, .. }
            | Error::AccessDenied { resource, .. }
            | Error::Unavailable { resource, .. }
            | Error::Storage { resource, .. }
            | Error::Compacted { resource, .. } => resource.clone(),
        }
    }
}

/// Shorthand for `Result<T, cosi_runtime::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_conflict_names_both_owners() {
        let e = Error::OwnerConflict {
            resource: Pointer::new("ns", "T", "a"),
            owner: Some("ctrl".into()),
            caller: None,
        };
        assert_eq!(
            e.to_string(),
            "resource ns/T/a is owned by \"ctrl\", not by no controller (a user resource)"
        );
        assert!(e.is_conflict() && e.is_owner_conflict());
        assert_eq!(e.resource(), "ns/T/a");
    }
}
