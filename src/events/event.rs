//! [`Event`]: the body of a Kubernetes `events.k8s.io/v1` Event, as a
//! [`Spec`].

use std::fmt;

use serde::{Deserialize, Serialize};

use super::time::{MicroTime, Time};
use crate::resource::{Pointer, Spec};

/// Whether an [`Event`] is routine or calls for attention (its `type`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
pub enum EventType {
    /// Routine: a restart done, a step taken (the default, as Kubernetes
    /// reads an Event without a type).
    #[default]
    Normal,
    /// Something went wrong: a failed reconcile, a panic, a failed controller.
    Warning,
}

impl EventType {
    /// `Normal` or `Warning`, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Repeats of an Event after its first occurrence (absent for one
/// occurrence only).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSeries {
    /// Occurrences so far, the first included.
    pub count: i32,
    /// When the last one was seen.
    pub last_observed_time: MicroTime,
}

/// The object an Event is about (`regarding`), or another one it names
/// (`related`): Kubernetes' `ObjectReference`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The resource type's group (`net.cosi.dev` for `LinkConfigs.net.cosi.dev`);
    /// the runtime does not know the version a type is served at. None for a controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The kind: the type's first dot-segment, one trailing `s` removed
    /// (`LinkConfig`), or `Controller`.
    #[serde(default)]
    pub kind: String,
    /// The object's namespace (none for a controller).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The object's id, or the controller's name.
    #[serde(default)]
    pub name: String,
    /// The uid of the object's incarnation, when it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
}

impl ObjectReference {
    /// A reference to the resource at `ptr` (`uid`: its incarnation, if known).
    pub fn to(ptr: &Pointer, uid: Option<String>) -> Self {
        let (kind, group) = kind_and_group(ptr.resource_type());
        ObjectReference {
            api_version: (!group.is_empty()).then(|| group.to_owned()),
            kind,
            namespace: Some(ptr.namespace().to_owned()),
            name: ptr.id().to_owned(),
            uid,
        }
    }

    /// A reference to the controller `name` (kind `Controller`).
    pub fn controller(name: &str) -> Self {
        ObjectReference {
            api_version: None,
            kind: "Controller".to_owned(),
            namespace: None,
            name: name.to_owned(),
            uid: None,
        }
    }
}

/// The kind and group of a resource type: `LinkConfigs.net.cosi.dev` is
/// kind `LinkConfig` in group `net.cosi.dev` (one trailing `s` of the first
/// segment removed; a type without a dot has no group).
pub fn kind_and_group(resource_type: &str) -> (String, &str) {
    let (plural, group) = resource_type.split_once('.').unwrap_or((resource_type, ""));
    let kind = plural.strip_suffix('s').filter(|k| !k.is_empty()).unwrap_or(plural);
    (kind.to_owned(), group)
}

/// One Event: what happened to an object (or a controller), who saw it, how
/// often. Its JSON is the body of a Kubernetes `events.k8s.io/v1` Event
/// without `apiVersion`, `kind` and `metadata`, so the Kubernetes API serves
/// it as it is (and a `core/v1` view derives from the `deprecated*` fields,
/// kept equal to the series).
///
/// The runtime writes them (see [`events`](super)); a program reads them as
/// any resource: `state.list_typed::<Event>("default", &LabelQuery::all())`.
///
/// Every field but `eventTime` has a default when absent, so Events that
/// other clients write (kube-rs' `Recorder`, client-go) decode too.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// When it first happened.
    pub event_time: MicroTime,
    /// Its repeats (absent for a first occurrence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<EventSeries>,
    /// Who reports it: `cosi-runtime/<controller name>`.
    #[serde(default)]
    pub reporting_controller: String,
    /// Which instance of the reporter ([`EventSettings::reporting_instance`](super::EventSettings::reporting_instance)).
    #[serde(default)]
    pub reporting_instance: String,
    /// What was being done: `Reconcile`, `Restart`, `Supervise`.
    #[serde(default)]
    pub action: String,
    /// Why, in one UpperCamelCase word: `ReconcileError`, `Panic`, ...
    #[serde(default)]
    pub reason: String,
    /// The object it is about.
    #[serde(default)]
    pub regarding: ObjectReference,
    /// Another object it names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<ObjectReference>,
    /// What happened, for a human (the latest occurrence's; at most 1 kB).
    #[serde(default)]
    pub note: String,
    /// `Normal` or `Warning`.
    #[serde(default)]
    #[serde(rename = "type")]
    pub event_type: EventType,
    /// Occurrences so far (the series' count, 1 for a first occurrence).
    #[serde(default)]
    pub deprecated_count: i32,
    /// When it first happened (to the second).
    #[serde(default)]
    pub deprecated_first_timestamp: Time,
    /// When it last happened (to the second).
    #[serde(default)]
    pub deprecated_last_timestamp: Time,
}

impl Spec for Event {
    const TYPE: &'static str = "Events.events.k8s.io";
}

impl Event {
    /// Occurrences so far: the series' count, or 1.
    pub fn count(&self) -> i32 {
        self.series.as_ref().map_or(self.deprecated_count, |s| s.count)
    }
}

/// The longest note Kubernetes accepts, in bytes.
pub(crate) const MAX_NOTE: usize = 1024;

/// `note` cut to [`MAX_NOTE`] bytes at a character boundary.
pub(crate) fn bounded_note(mut note: String) -> String {
    if note.len() > MAX_NOTE {
        let mut end = MAX_NOTE;
        while !note.is_char_boundary(end) {
            end -= 1;
        }
        note.truncate(end);
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Timestamp;

    fn at(secs: u64, micros: u64) -> Timestamp {
        Timestamp::from_unix_nanos(secs * 1_000_000_000 + micros * 1_000)
    }

    fn event() -> Event {
        Event {
            event_time: at(1_795_878_000, 0).into(),
            series: Some(EventSeries { count: 3, last_observed_time: at(1_795_878_002, 5).into() }),
            reporting_controller: "cosi-runtime/LinkController".into(),
            reporting_instance: "cosi-runtime".into(),
            action: "Reconcile".into(),
            reason: "ReconcileError".into(),
            regarding: ObjectReference {
                api_version: Some("net.cosi.dev".into()),
                kind: "LinkConfig".into(),
                namespace: Some("network".into()),
                name: "eth0".into(),
                uid: Some("6f1c1c32-3b5e-4b8e-9a55-2d1f7e0c9d11".into()),
            },
            related: Some(ObjectReference::controller("LinkController")),
            note: "no such device".into(),
            event_type: EventType::Warning,
            deprecated_count: 3,
            deprecated_first_timestamp: at(1_795_878_000, 0).into(),
            deprecated_last_timestamp: at(1_795_878_002, 0).into(),
        }
    }

    #[test]
    fn an_event_serializes_as_the_body_of_an_events_k8s_io_v1_event() {
        let json = serde_json::to_value(event()).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "eventTime": "2026-11-28T15:00:00.000000Z",
                "series": {"count": 3, "lastObservedTime": "2026-11-28T15:00:02.000005Z"},
                "reportingController": "cosi-runtime/LinkController",
                "reportingInstance": "cosi-runtime",
                "action": "Reconcile",
                "reason": "ReconcileError",
                "regarding": {
                    "apiVersion": "net.cosi.dev",
                    "kind": "LinkConfig",
                    "namespace": "network",
                    "name": "eth0",
                    "uid": "6f1c1c32-3b5e-4b8e-9a55-2d1f7e0c9d11"
                },
                "related": {"kind": "Controller", "name": "LinkController"},
                "note": "no such device",
                "type": "Warning",
                "deprecatedCount": 3,
                "deprecatedFirstTimestamp": "2026-11-28T15:00:00Z",
                "deprecatedLastTimestamp": "2026-11-28T15:00:02Z"
            })
        );
        assert_eq!(Event::TYPE, "Events.events.k8s.io");
    }

    #[test]
    fn every_field_round_trips_and_absent_options_stay_absent() {
        let full = event();
        let back: Event = serde_json::from_str(&serde_json::to_string(&full).unwrap()).unwrap();
        assert_eq!(back, full);
        let first = Event { series: None, related: None, deprecated_count: 1, ..event() };
        let json = serde_json::to_value(&first).unwrap();
        assert!(json.get("series").is_none() && json.get("related").is_none(), "{json}");
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, first);
        assert_eq!(back.count(), 1);
    }

    #[test]
    fn kinds_are_the_first_segment_less_one_s_and_groups_the_rest() {
        assert_eq!(
            kind_and_group("LinkConfigs.net.cosi.dev"),
            ("LinkConfig".into(), "net.cosi.dev")
        );
        assert_eq!(kind_and_group("Addresses.net.cosi.dev"), ("Addresse".into(), "net.cosi.dev"));
        assert_eq!(kind_and_group("Motd.os"), ("Motd".into(), "os"));
        assert_eq!(kind_and_group("s.x"), ("s".into(), "x"));
        assert_eq!(kind_and_group("Plain"), ("Plain".into(), ""));
        let r = ObjectReference::to(&Pointer::new("ns", "Plains", "a"), None);
        assert_eq!((r.api_version, r.kind.as_str()), (None, "Plain"));
    }

    #[test]
    fn notes_are_cut_at_a_character_boundary() {
        let long = "é".repeat(MAX_NOTE);
        let cut = bounded_note(long);
        assert!(cut.len() <= MAX_NOTE && cut.chars().all(|c| c == 'é'));
        assert_eq!(bounded_note("short".into()), "short");
    }
}
