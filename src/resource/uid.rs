//! [`Uid`]: which incarnation of a resource a copy belongs to.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{Pointer, Timestamp};

/// The identity of one **incarnation** of a resource: the state gives every
/// create a new one (a random UUID, version 4), and every later write of that
/// resource keeps it, until the resource is destroyed. A resource destroyed and
/// created again at the same address is another incarnation with another uid,
/// even though its version starts at 1 again.
///
/// An update that carries a uid is checked against the stored one: a copy read
/// from an earlier incarnation is a [`VersionConflict`](crate::Error::VersionConflict),
/// whatever its version (see [`Metadata::uid`](super::Metadata::uid)).
///
/// Serialized as the UUID's hyphenated text (`"67e55044-10b1-426f-9247-bb680e5fe0c8"`),
/// the form Kubernetes serves as `metadata.uid`.
///
/// ```
/// use cosi_runtime::resource::Uid;
///
/// let uid: Uid = "67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap();
/// assert_eq!(uid.to_string(), "67e55044-10b1-426f-9247-bb680e5fe0c8");
/// assert_eq!(serde_json::to_string(&uid).unwrap(), "\"67e55044-10b1-426f-9247-bb680e5fe0c8\"");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Uid(Uuid);

impl Uid {
    /// A new random uid (UUID version 4): what the state gives a create.
    pub(crate) fn random() -> Uid {
        Uid(Uuid::new_v4())
    }

    /// The uid of a resource stored before uids existed (a redb file or an
    /// etcd value written by an older build, whose metadata has none): derived
    /// from its address and its `created` timestamp, so every process and every
    /// reopen gives the same incarnation the same uid, and two incarnations
    /// (created at different times) different ones. A UUID of version 8
    /// (custom), so it never equals a random one.
    pub(crate) fn of_legacy(pointer: &Pointer, created: Timestamp) -> Uid {
        // FNV-1a, 128 bits: stable across builds and platforms (std's hashers are not).
        const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
        const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
        let mut h = OFFSET;
        let mut feed = |bytes: &[u8]| {
            for b in bytes {
                h ^= u128::from(*b);
                h = h.wrapping_mul(PRIME);
            }
        };
        // Validation forbids control characters in the parts: NUL separates them.
        for part in [pointer.namespace(), pointer.resource_type(), pointer.id()] {
            feed(part.as_bytes());
            feed(&[0]);
        }
        feed(&created.as_unix_nanos().to_be_bytes());
        Uid(uuid::Builder::from_u128(h)
            .with_variant(uuid::Variant::RFC4122)
            .with_version(uuid::Version::Custom)
            .into_uuid())
    }

    /// A uid from a UUID.
    pub const fn from_uuid(uuid: Uuid) -> Uid {
        Uid(uuid)
    }

    /// The UUID.
    pub const fn as_uuid(&self) -> &Uuid {
        &self.0
    }
}

impl From<Uuid> for Uid {
    fn from(uuid: Uuid) -> Uid {
        Uid(uuid)
    }
}

impl From<Uid> for Uuid {
    fn from(uid: Uid) -> Uuid {
        uid.0
    }
}

impl FromStr for Uid {
    type Err = uuid::Error;

    /// Parses a UUID in any of the forms [`Uuid::parse_str`] accepts.
    fn from_str(s: &str) -> Result<Uid, uuid::Error> {
        Uuid::parse_str(s).map(Uid)
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0.hyphenated(), f)
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_uids_are_version_4_and_differ() {
        let (a, b) = (Uid::random(), Uid::random());
        assert_ne!(a, b);
        assert_eq!(a.as_uuid().get_version(), Some(uuid::Version::Random));
    }

    #[test]
    fn legacy_uids_are_stable_per_incarnation() {
        let p = Pointer::new("ns", "T", "a");
        let t = Timestamp::from_unix_nanos(1_700_000_000_000_000_000);
        let uid = Uid::of_legacy(&p, t);
        assert_eq!(uid, Uid::of_legacy(&p, t), "the same in every process");
        assert_eq!(uid.as_uuid().get_version(), Some(uuid::Version::Custom));
        assert_eq!(uid.as_uuid().get_variant(), uuid::Variant::RFC4122);
        let later = Timestamp::from_unix_nanos(t.as_unix_nanos() + 1);
        assert_ne!(uid, Uid::of_legacy(&p, later), "another incarnation");
        assert_ne!(uid, Uid::of_legacy(&Pointer::new("ns", "T", "b"), t));
        assert_ne!(
            Uid::of_legacy(&Pointer::new("n", "sT", "a"), t),
            Uid::of_legacy(&Pointer::new("ns", "T", "a"), t),
            "the parts are kept apart"
        );
    }

    #[test]
    fn uids_round_trip_as_text() {
        let uid = Uid::random();
        let json = serde_json::to_string(&uid).unwrap();
        assert_eq!(json, format!("\"{uid}\""));
        assert_eq!(serde_json::from_str::<Uid>(&json).unwrap(), uid);
        assert_eq!(uid.to_string().parse::<Uid>().unwrap(), uid);
        assert!("not a uuid".parse::<Uid>().is_err());
        assert_eq!(format!("{uid:?}"), uid.to_string());
    }
}
