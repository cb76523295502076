//! Claims of exclusive output types across processes, and their fences.

use std::collections::HashMap;
use std::sync::Arc;

use crate::resource::Pointer;
use crate::{Error, StorageFailure};

/// A held claim's fencing token: the create revision of the claim key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Fence {
    /// The claim key.
    pub(crate) key: String,
    /// Its create revision when this process created it.
    pub(crate) token: i64,
    /// The controller that holds it.
    pub(crate) controller: Arc<str>,
    /// The lease lapsed or another process holds the claim now.
    pub(crate) lost: bool,
}

impl Fence {
    /// Refuses a write at once when the claim is known to be lost.
    pub(crate) fn check(&self, ptr: &Pointer) -> Result<(), Error> {
        if self.lost { Err(self.refused(ptr)) } else { Ok(()) }
    }

    /// The error of a write the fence refused.
    pub(crate) fn refused(&self, ptr: &Pointer) -> Error {
        Error::Storage {
            resource: ptr.to_string(),
            failure: StorageFailure::Fenced,
            reason: format!(
                "controller {} no longer holds the claim {} (fencing token {})",
                self.controller, self.key, self.token
            ),
        }
    }
}

/// The claims this process holds, by resource type.
#[derive(Debug, Default)]
pub(crate) struct Claims {
    held: HashMap<String, Fence>,
}

impl Claims {
    /// The fence a write of `owner` to `resource_type` must pass, if this
    /// process claimed that type for that controller.
    pub(crate) fn fence(&self, owner: &str, resource_type: &str) -> Option<&Fence> {
        self.held.get(resource_type).filter(|f| &*f.controller == owner)
    }

    /// Records a claim won.
    #[allow(dead_code)] // the campaigns arrive in the next commit
    pub(crate) fn won(&mut self, resource_type: &str, fence: Fence) {
        self.held.insert(resource_type.to_owned(), fence);
    }

    /// Marks the claim behind `fence` lost (a write found another token).
    pub(crate) fn lost_fence(&mut self, fence: &Fence) {
        for held in self.held.values_mut() {
            if held.key == fence.key && held.token == fence.token {
                held.lost = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fence(controller: &str) -> Fence {
        Fence {
            key: "/c~owners/T".into(),
            token: 7,
            controller: Arc::from(controller),
            lost: false,
        }
    }

    #[test]
    fn only_the_claiming_controller_is_fenced() {
        let mut claims = Claims::default();
        claims.won("T", fence("c"));
        assert!(claims.fence("c", "T").is_some());
        assert!(claims.fence("other", "T").is_none(), "finalizer edits of readers pass");
        assert!(claims.fence("c", "U").is_none());
    }

    #[test]
    fn a_lost_fence_refuses_at_once_with_a_typed_error() {
        let mut claims = Claims::default();
        claims.won("T", fence("c"));
        claims.lost_fence(&fence("c"));
        let ptr = Pointer::new("ns", "T", "a");
        let e = claims.fence("c", "T").unwrap().check(&ptr).unwrap_err();
        assert_eq!(e.storage_failure(), Some(StorageFailure::Fenced));
        assert!(e.to_string().contains("ns"), "{e}");
    }
}
