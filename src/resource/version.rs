//! [`Version`], [`Phase`] and [`Timestamp`]: the scalar parts of metadata.

use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The version of a stored resource.
///
/// The state owns versions: a create stores version 1, every update stores the
/// previous version + 1. A resource that was never stored has
/// [`Version::UNSET`]. An update must carry the version it read; any other
/// version is a [`VersionConflict`](crate::Error::VersionConflict). A version
/// alone does not tell incarnations apart (a resource destroyed and created
/// again starts at 1 again): the [`Uid`](super::Uid) does.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Version(u64);

impl Version {
    /// The version of a resource that was never stored.
    pub const UNSET: Version = Version(0);
    /// The version the state gives a newly created resource.
    pub const INITIAL: Version = Version(1);

    /// A version from its number.
    pub const fn new(n: u64) -> Self {
        Version(n)
    }

    /// The version number (0 when unset).
    pub const fn get(self) -> u64 {
        self.0
    }

    /// Whether the resource was never stored.
    pub const fn is_unset(self) -> bool {
        self.0 == 0
    }

    /// The version after this one.
    pub const fn next(self) -> Version {
        Version(self.0.saturating_add(1))
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_unset() { f.write_str("undefined") } else { write!(f, "{}", self.0) }
    }
}

impl fmt::Debug for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Version({self})")
    }
}

/// The lifecycle phase of a resource.
///
/// Every resource starts `Running`. [`teardown`](crate::State::teardown) moves it
/// to `TearingDown`, from which it never returns: it can only be destroyed.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    /// The resource is live (the default).
    #[default]
    Running,
    /// The resource is being torn down: its dependents are releasing it.
    TearingDown,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Running => "running",
            Phase::TearingDown => "tearingDown",
        })
    }
}

impl fmt::Debug for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// A wall-clock instant with nanosecond precision, stored in 8 bytes.
///
/// Serialized as an RFC 3339 string.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Timestamp(u64);

impl Timestamp {
    /// The Unix epoch (also the timestamp of a resource that was never stored).
    pub const EPOCH: Timestamp = Timestamp(0);

    /// The current wall-clock time.
    pub fn now() -> Self {
        Timestamp::from_system_time(SystemTime::now())
    }

    /// A timestamp from a [`SystemTime`] (clamped to the range 1970..2554).
    pub fn from_system_time(t: SystemTime) -> Self {
        let nanos = t.duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
        Timestamp(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// The timestamp as a [`SystemTime`].
    pub fn to_system_time(self) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.0)
    }

    /// Nanoseconds since the Unix epoch.
    pub const fn as_unix_nanos(self) -> u64 {
        self.0
    }

    /// A timestamp from nanoseconds since the Unix epoch.
    pub const fn from_unix_nanos(nanos: u64) -> Self {
        Timestamp(nanos)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", humantime::format_rfc3339_nanos(self.to_system_time()))
    }
}

impl fmt::Debug for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        humantime::parse_rfc3339_weak(&text)
            .map(Timestamp::from_system_time)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_display_and_next() {
        assert_eq!(Version::UNSET.to_string(), "undefined");
        assert_eq!(Version::UNSET.next(), Version::INITIAL);
        assert_eq!(Version::new(41).next().get(), 42);
        assert_eq!(Version::new(u64::MAX).next().get(), u64::MAX);
    }

    #[test]
    fn timestamp_round_trips_through_rfc3339() {
        let t = Timestamp::from_unix_nanos(1_700_000_000_123_456_789);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2023-11-14T22:13:20.123456789Z\"");
        let back: Timestamp = serde_json::from_str(&json).unwrap();
        assert_eq!(back, t);
        assert!(serde_json::from_str::<Timestamp>("\"yesterday\"").is_err());
    }

    #[test]
    fn phase_serializes_like_the_go_original() {
        assert_eq!(serde_json::to_string(&Phase::TearingDown).unwrap(), "\"tearingDown\"");
        assert_eq!(Phase::default(), Phase::Running);
    }
}
