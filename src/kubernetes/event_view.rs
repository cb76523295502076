//! Events served in both their versions: stored in the shape of
//! `events.k8s.io/v1` (what [`crate::events`] records, and kube-rs'
//! `Recorder` writes), served and written as core `v1` Events too (what
//! `kubectl describe` and `kubectl get events` read, and client-go's older
//! recorders write), field by field as the apiserver converts them:
//!
//! | `events.k8s.io/v1` | core `v1` |
//! |---|---|
//! | `regarding` | `involvedObject` |
//! | `note` | `message` |
//! | `reportingController` | `reportingComponent` |
//! | `deprecatedSource` | `source` |
//! | `deprecatedFirstTimestamp` | `firstTimestamp` |
//! | `deprecatedLastTimestamp` | `lastTimestamp` |
//! | `deprecatedCount` | `count` |
//! | `reason`, `type`, `action`, `related`, `eventTime`, `series`, `reportingInstance` | the same |

use serde_json::{Map, Value};

/// The renamed fields: (`events.k8s.io/v1`, core `v1`).
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(value: Value, to_core: bool) -> Value {
    let Value::Object(fields) = value else { return value };
    let mut out = Map::with_capacity(fields.len());
    for (key, field) in fields {
        let renamed = RENAMED.iter().find_map(|(new, core)| match to_core {
            true if key == *new => Some(*core),
            false if key == *core => Some(*new),
            _ => None,
        });
        out.insert(renamed.map_or(key, str::to_owned), field);
    }
    Value::Object(out)
}

/// A stored (`events.k8s.io/v1`) Event body as a core `v1` one.
pub(crate) fn to_core(stored: Value) -> Value {
    rename(stored, true)
}

/// A written core `v1` Event body as stored (`events.k8s.io/v1`).
pub(crate) fn from_core(written: Value) -> Value {
    rename(written, false)
}

/// The fields `kubectl describe` and `kubectl get events --field-selector`
/// select core Events by.
pub(crate) const CORE_SELECTABLE: [&str; 12] = [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "action",
];

/// The same, in `events.k8s.io/v1`'s names.
pub(crate) const SELECTABLE: [&str; 9] = [
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "reason",
    "reportingController",
    "type",
    "action",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn core_events_rename_the_fields_both_ways_and_keep_the_others() {
        let stored = json!({
            "regarding": {"kind": "LinkConfig", "name": "eth0"},
            "note": "mtu 99",
            "reason": "ReconcileError",
            "deprecatedCount": 3,
            "series": {"count": 3},
        });
        let core = to_core(stored.clone());
        assert_eq!(
            core,
            json!({
                "involvedObject": {"kind": "LinkConfig", "name": "eth0"},
                "message": "mtu 99",
                "reason": "ReconcileError",
                "count": 3,
                "series": {"count": 3},
            })
        );
        assert_eq!(from_core(core), stored);
    }
}
