//! `Table` output (`kubectl get`): NAME, the registered print columns, AGE.
//!
//! kubectl asks for it with `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`
//! (and falls back to the plain object otherwise). Each row carries the
//! object's metadata as a `PartialObjectMetadata`: kubectl reads the
//! NAMESPACE column (`-A`) and `--show-labels` from it. AGE is rendered here,
//! as the apiserver does, in kubectl's short form (`45s`, `5m`, `2h`, `3d`).

use std::time::{Duration, SystemTime};

use serde_json::{Value, json};

use super::object::partial;
use super::registry::{Exposed, Step};
use crate::resource::AnyResource;

/// Whether the `Accept` header asks for a `meta.k8s.io/v1` Table.
pub(crate) fn wants_table(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return false };
    accept.split(',').any(|range| {
        let mut params = range.split(';').map(str::trim);
        let media = params.next().unwrap_or("");
        if !media.eq_ignore_ascii_case("application/json") {
            return false;
        }
        let (mut table, mut group, mut version) = (false, false, false);
        for p in params {
            match p.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("as", "Table")) => table = true,
                Some(("g", "meta.k8s.io")) => group = true,
                Some(("v", "v1")) => version = true,
                _ => {}
            }
        }
        table && group && version
    })
}

/// A duration as kubectl shows ages: coarser as it grows.
pub(crate) fn age(d: Duration) -> String {
    let s = d.as_secs();
    let (m, h, days) = (s / 60, s / 3600, s / 86400);
    if s < 120 {
        format!("{s}s")
    } else if m < 10 {
        match s % 60 {
            0 => format!("{m}m"),
            rest => format!("{m}m{rest}s"),
        }
    } else if m < 180 {
        format!("{m}m")
    } else if h < 8 {
        match m % 60 {
            0 => format!("{h}h"),
            rest => format!("{h}h{rest}m"),
        }
    } else if h < 48 {
        format!("{h}h")
    } else if h < 192 {
        match h % 24 {
            0 => format!("{days}d"),
            rest => format!("{days}d{rest}h"),
        }
    } else if days < 365 * 2 {
        format!("{days}d")
    } else if days < 365 * 8 {
        match days % 365 {
            0 => format!("{}y", days / 365),
            rest => format!("{}y{rest}d", days / 365),
        }
    } else {
        format!("{}y", days / 365)
    }
}

/// The value at `steps` in `object` (`null` when absent), as a cell.
fn cell(object: &Value, steps: &[Step]) -> Value {
    let mut at = object;
    for step in steps {
        at = match (step, at) {
            (Step::Field(f), Value::Object(map)) => map.get(f).unwrap_or(&Value::Null),
            (Step::Index(i), Value::Array(items)) => items.get(*i).unwrap_or(&Value::Null),
            _ => &Value::Null,
        };
    }
    match at {
        Value::Object(_) | Value::Array(_) => Value::String(at.to_string()),
        other => other.clone(),
    }
}

fn column_definitions(exposed: &Exposed) -> Vec<Value> {
    let mut columns = vec![json!({
        "name": "Name", "type": "string", "format": "name", "priority": 0,
        "description": "The resource's id.",
    })];
    for c in &exposed.columns {
        columns.push(json!({
            "name": c.name, "type": "string", "format": "", "priority": 0,
            "description": format!("{} of the object.", c.path),
        }));
    }
    columns.push(json!({
        "name": "Age", "type": "string", "format": "", "priority": 0,
        "description": "Time since the resource was created.",
    }));
    columns
}

/// One row: its cells, computed from the whole `object`, and the resource's metadata.
pub(crate) fn row(
    exposed: &Exposed,
    resource: &AnyResource,
    object: &Value,
    resource_version: u64,
    now: SystemTime,
) -> Value {
    let mut cells = vec![Value::String(resource.id().to_owned())];
    cells.extend(exposed.columns.iter().map(|c| cell(object, &c.steps)));
    let created = resource.metadata().created().to_system_time();
    cells.push(age(now.duration_since(created).unwrap_or_default()).into());
    json!({ "cells": cells, "object": partial(resource, resource_version) })
}

/// A Table of `rows`, at `resource_version`.
pub(crate) fn table(exposed: &Exposed, rows: Vec<Value>, resource_version: u64) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": { "resourceVersion": resource_version.to_string() },
        "columnDefinitions": column_definitions(exposed),
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_asks_for_a_table_with_fallbacks() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert!(wants_table(Some(kubectl)));
        assert!(wants_table(Some("application/json; as=Table; g=meta.k8s.io; v=v1")));
        assert!(!wants_table(Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io")));
        assert!(!wants_table(Some("application/json")));
        assert!(!wants_table(None));
    }

    #[test]
    fn ages_read_like_kubectls() {
        let cases = [
            (5, "5s"),
            (119, "119s"),
            (120, "2m"),
            (150, "2m30s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 300, "3h5m"),
            (20 * 3600, "20h"),
            (3 * 86400, "3d"),
            (3 * 86400 + 7200, "3d2h"),
            (30 * 86400, "30d"),
            (3 * 365 * 86400, "3y"),
        ];
        for (secs, shown) in cases {
            assert_eq!(age(Duration::from_secs(secs)), shown, "{secs} s");
        }
    }

    #[test]
    fn cells_follow_their_paths() {
        let object = json!({"spec": {"mtu": 1500, "addrs": ["a", "b"], "nested": {"x": 1}}});
        let f = |s: &str| Step::Field(s.into());
        assert_eq!(cell(&object, &[f("spec"), f("mtu")]), 1500);
        assert_eq!(cell(&object, &[f("spec"), f("addrs"), Step::Index(1)]), "b");
        assert_eq!(cell(&object, &[f("spec"), f("nested")]), "{\"x\":1}");
        assert_eq!(cell(&object, &[f("spec"), f("missing")]), Value::Null);
    }
}
