//! [`EventSettings`]: where controller-level Events go, how often one
//! Event is written, how many are kept and for how long.

use std::time::Duration;

/// How a runtime records Events (see [`events`](super)); given to
/// [`RuntimeBuilder::events`](crate::RuntimeBuilder::events).
///
/// ```
/// use std::time::Duration;
/// use cosi_runtime::events::EventSettings;
///
/// let settings = EventSettings {
///     namespace: "cosi-system".into(),
///     max_per_namespace: 100,
///     ..EventSettings::default()
/// };
/// assert_eq!(settings.interval, Duration::from_secs(10));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSettings {
    /// The namespace of Events about a controller rather than an object
    /// (default `"default"`).
    pub namespace: String,
    /// The shortest time between two writes of one Event: a repeat within
    /// it is counted in memory and written, with its count, when it ends
    /// (default 10 s). The first occurrence is written at once.
    pub interval: Duration,
    /// The most Events kept per namespace: past it, the one seen least
    /// recently is deleted (default 1,000).
    pub max_per_namespace: usize,
    /// How long an Event is kept after it was last seen (default one hour,
    /// as the apiserver's `--event-ttl`); `None`: until the bound deletes it.
    pub ttl: Option<Duration>,
    /// The Events' `reportingInstance` (default `"cosi-runtime"`): name the
    /// process here when several share a state.
    pub reporting_instance: String,
}

/// The default [`EventSettings::interval`].
pub const DEFAULT_EVENT_INTERVAL: Duration = Duration::from_secs(10);
/// The default [`EventSettings::max_per_namespace`].
pub const DEFAULT_MAX_EVENTS_PER_NAMESPACE: usize = 1_000;
/// The default [`EventSettings::ttl`], the apiserver's `--event-ttl`.
pub const DEFAULT_EVENT_TTL: Duration = Duration::from_secs(3600);

impl Default for EventSettings {
    fn default() -> Self {
        EventSettings {
            namespace: "default".to_owned(),
            interval: DEFAULT_EVENT_INTERVAL,
            max_per_namespace: DEFAULT_MAX_EVENTS_PER_NAMESPACE,
            ttl: Some(DEFAULT_EVENT_TTL),
            reporting_instance: "cosi-runtime".to_owned(),
        }
    }
}
