//! [`MicroTime`] and [`Time`]: an Event's timestamps as Kubernetes writes
//! them (`metav1.MicroTime`, RFC 3339 with microseconds; `metav1.Time`, with
//! seconds).
//!
//! Each keeps only the precision it serializes, from the moment it is made:
//! what is written reads back equal.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::resource::Timestamp;

/// Truncates `t` to a multiple of `unit` nanoseconds.
fn truncated(t: Timestamp, unit: u64) -> Timestamp {
    let nanos = t.as_unix_nanos();
    Timestamp::from_unix_nanos(nanos - nanos % unit)
}

/// Parses RFC 3339 text into a timestamp.
fn parse<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_rfc3339_weak(&text)
        .map(Timestamp::from_system_time)
        .map_err(serde::de::Error::custom)
}

/// A wall-clock time with microseconds: `2026-11-28T15:00:00.000000Z`
/// (an Event's `eventTime`, `series.lastObservedTime`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct MicroTime(Timestamp);

impl MicroTime {
    /// `t`, truncated to the microsecond.
    pub fn new(t: Timestamp) -> Self {
        MicroTime(truncated(t, 1_000))
    }

    /// The timestamp.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl From<Timestamp> for MicroTime {
    fn from(t: Timestamp) -> Self {
        MicroTime::new(t)
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&humantime::format_rfc3339_micros(self.0.to_system_time()), f)
    }
}

impl fmt::Debug for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse(d).map(MicroTime::new)
    }
}

/// A wall-clock time with seconds: `2026-11-28T15:00:00Z` (an Event's
/// `deprecatedFirstTimestamp`, `deprecatedLastTimestamp`).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Time(Timestamp);

impl Time {
    /// `t`, truncated to the second.
    pub fn new(t: Timestamp) -> Self {
        Time(truncated(t, 1_000_000_000))
    }

    /// The timestamp.
    pub fn timestamp(self) -> Timestamp {
        self.0
    }
}

impl From<Timestamp> for Time {
    fn from(t: Timestamp) -> Self {
        Time::new(t)
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&humantime::format_rfc3339_seconds(self.0.to_system_time()), f)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        parse(d).map(Time::new)
    }
}

/// `t` plus `d` (saturating at the largest timestamp).
pub(crate) fn after(t: Timestamp, d: Duration) -> Timestamp {
    let d = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    Timestamp::from_unix_nanos(t.as_unix_nanos().saturating_add(d))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_time_keeps_the_precision_it_writes() {
        let t = Timestamp::from_unix_nanos(1_795_878_000_123_456_789);
        let micro = MicroTime::new(t);
        assert_eq!(micro.to_string(), "2026-11-28T15:00:00.123456Z");
        assert_eq!(Time::new(t).to_string(), "2026-11-28T15:00:00Z");
        let back: MicroTime =
            serde_json::from_str(&serde_json::to_string(&micro).unwrap()).unwrap();
        assert_eq!(back, micro);
        assert_eq!(
            after(t, Duration::from_secs(1)).as_unix_nanos(),
            t.as_unix_nanos() + 1_000_000_000
        );
    }
}
