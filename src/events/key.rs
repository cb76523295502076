//! The id of an Event: what makes two occurrences "the same event".
//!
//! `<regarding name>.<16 hex digits>`, the digits a stable hash (FNV-1a,
//! 64 bits: the same in every process and release, unlike the seeded
//! hashes of `hashing.rs`) of the regarded object (namespace, type, name,
//! uid), the reason, the type, the reporting controller and the action, as
//! client-go's recorder aggregates. A repeat hashes to the same id, so it
//! updates the same object.

use super::event::{EventType, ObjectReference};

/// The longest id the state accepts, in bytes (`resource::validate`).
const MAX_ID: usize = 256;

/// What identifies an Event, apart from when and how often it happened.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventKey<'a> {
    /// The regarded object's namespace (empty for a controller).
    pub(crate) namespace: &'a str,
    /// The regarded object's resource type (`Controller` for a controller).
    pub(crate) resource_type: &'a str,
    /// Its name (id), or the controller's.
    pub(crate) name: &'a str,
    /// The uid of its incarnation (empty when unknown).
    pub(crate) uid: &'a str,
    pub(crate) reason: &'a str,
    pub(crate) event_type: EventType,
    pub(crate) reporting_controller: &'a str,
    pub(crate) action: &'a str,
}

impl<'a> EventKey<'a> {
    /// The key of an Event about `regarding`, of resource type `resource_type`.
    pub(crate) fn of(
        regarding: &'a ObjectReference,
        resource_type: &'a str,
        reason: &'a str,
        event_type: EventType,
        reporting_controller: &'a str,
        action: &'a str,
    ) -> Self {
        EventKey {
            namespace: regarding.namespace.as_deref().unwrap_or(""),
            resource_type,
            name: &regarding.name,
            uid: regarding.uid.as_deref().unwrap_or(""),
            reason,
            event_type,
            reporting_controller,
            action,
        }
    }

    /// The stable 64-bit hash of the key.
    pub(crate) fn hash(&self) -> u64 {
        const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
        const PRIME: u64 = 0x0000_0100_0000_01b3;
        let mut h = OFFSET;
        let parts = [
            self.namespace,
            self.resource_type,
            self.name,
            self.uid,
            self.reason,
            self.event_type.as_str(),
            self.reporting_controller,
            self.action,
        ];
        for part in parts {
            // NUL ends each part: ("ab", "c") and ("a", "bc") differ.
            for &b in part.as_bytes().iter().chain(&[0]) {
                h ^= u64::from(b);
                h = h.wrapping_mul(PRIME);
            }
        }
        h
    }

    /// The Event's id: the name (cut so that the id fits in 256 bytes),
    /// a dot, and the hash in 16 hex digits.
    pub(crate) fn id(&self) -> String {
        let mut end = self.name.len().min(MAX_ID - 17);
        while !self.name.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}.{:016x}", &self.name[..end], self.hash())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Pointer;

    fn key<'a>(r: &'a ObjectReference, reason: &'a str, t: EventType) -> EventKey<'a> {
        EventKey::of(r, "LinkConfigs.net.cosi.dev", reason, t, "cosi-runtime/C", "Reconcile")
    }

    #[test]
    fn the_same_occurrence_has_the_same_id_and_any_part_changes_it() {
        let eth0 = ObjectReference::to(
            &Pointer::new("net", "LinkConfigs.net.cosi.dev", "eth0"),
            Some("u1".into()),
        );
        let id = key(&eth0, "ReconcileError", EventType::Warning).id();
        assert_eq!(id, key(&eth0, "ReconcileError", EventType::Warning).id());
        assert!(id.starts_with("eth0.") && id.len() == "eth0.".len() + 16, "{id}");
        // Pinned: the hash is the same in every process and every release.
        assert_eq!(id, "eth0.7d302cf3cf89f1e3");
        let others = [
            key(&eth0, "Panic", EventType::Warning).id(),
            key(&eth0, "ReconcileError", EventType::Normal).id(),
            key(
                &ObjectReference { uid: Some("u2".into()), ..eth0.clone() },
                "ReconcileError",
                EventType::Warning,
            )
            .id(),
            key(
                &ObjectReference { namespace: Some("other".into()), ..eth0.clone() },
                "ReconcileError",
                EventType::Warning,
            )
            .id(),
            EventKey { action: "Restart", ..key(&eth0, "ReconcileError", EventType::Warning) }.id(),
            EventKey {
                reporting_controller: "cosi-runtime/D",
                ..key(&eth0, "ReconcileError", EventType::Warning)
            }
            .id(),
        ];
        for other in others {
            assert_ne!(other, id);
        }
    }

    #[test]
    fn a_long_name_is_cut_so_the_id_stays_valid() {
        let name = "é".repeat(200);
        let r = ObjectReference::controller(&name);
        let id =
            EventKey::of(&r, "Controller", "Failed", EventType::Warning, "c", "Supervise").id();
        assert!(id.len() <= MAX_ID, "{}", id.len());
        assert!(id.ends_with(&format!(
            "{:016x}",
            EventKey::of(&r, "Controller", "Failed", EventType::Warning, "c", "Supervise").hash()
        )));
    }
}
