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

    /// The RFC 3339 text with nanoseconds (`2023-11-14T22:13:20.123456789Z`),
    /// byte for byte what `humantime::format_rfc3339_nanos` displays (the
    /// serialized form, pinned by a test against it), without the formatting
    /// machinery, which would make the timestamps alone a large part of a
    /// durable write's metadata encoding. Always 30 ASCII bytes: the largest
    /// timestamp (u64 nanoseconds) is in the year 2554.
    pub(crate) fn rfc3339_bytes(self) -> [u8; 30] {
        let secs = self.0 / 1_000_000_000;
        let nanos = (self.0 % 1_000_000_000) as u32;
        let (year, month, day) = civil_from_days(secs / 86_400);
        let sod = (secs % 86_400) as u32;
        let mut buf = *b"0000-00-00T00:00:00.000000000Z";
        let two = |buf: &mut [u8; 30], at: usize, n: u32| {
            buf[at] = b'0' + (n / 10) as u8;
            buf[at + 1] = b'0' + (n % 10) as u8;
        };
        two(&mut buf, 0, year / 100);
        two(&mut buf, 2, year % 100);
        two(&mut buf, 5, month);
        two(&mut buf, 8, day);
        two(&mut buf, 11, sod / 3600);
        two(&mut buf, 14, sod / 60 % 60);
        two(&mut buf, 17, sod % 60);
        let mut n = nanos;
        for at in (20..29).rev() {
            buf[at] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        buf
    }
}

/// The proleptic Gregorian (year, month, day) of a day count since
/// 1970-01-01 (Howard Hinnant's `civil_from_days`, unsigned: no timestamp is
/// before the epoch).
fn civil_from_days(days: u64) -> (u32, u32, u32) {
    // Shifted to 0000-03-01 so that the leap day ends each 400-year era.
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400 + u64::from(month <= 2)) as u32;
    (year, month, day)
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
        let buf = self.rfc3339_bytes();
        // ASCII digits and punctuation only.
        s.serialize_str(std::str::from_utf8(&buf).map_err(serde::ser::Error::custom)?)
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
    fn the_rfc3339_text_is_humantimes_byte_for_byte() {
        let mut rng = fastrand::Rng::with_seed(31);
        let edges = [
            0,
            1,
            999_999_999,
            1_000_000_000,
            // 2000-02-29, 2000-03-01, 2100-02-28/03-01 (no leap day), 2400-02-29.
            951_782_400_000_000_000,
            951_868_800_000_000_000,
            4_107_456_000_000_000_000,
            4_107_542_400_000_000_000,
            13_574_563_200_000_000_000,
            1_700_000_000_123_456_789,
            u64::MAX,
        ];
        let random = (0..20_000).map(|_| rng.u64(..));
        for n in edges.into_iter().chain(random) {
            let t = Timestamp::from_unix_nanos(n);
            let ours = t.rfc3339_bytes();
            assert_eq!(std::str::from_utf8(&ours).unwrap(), t.to_string(), "{n} ns");
            assert_eq!(serde_json::to_string(&t).unwrap(), format!("\"{t}\""));
        }
    }

    #[test]
    fn phase_serializes_like_the_go_original() {
        assert_eq!(serde_json::to_string(&Phase::TearingDown).unwrap(), "\"tearingDown\"");
        assert_eq!(Phase::default(), Phase::Running);
    }
}
