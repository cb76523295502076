//! Field ownership (`metadata.managedFields`), as the apiserver's
//! server-side apply keeps it: per field manager and operation (`Apply`,
//! `Update`), the set of fields it last wrote, in the `FieldsV1` form
//! (`{"f:spec": {"f:mtu": {}}}`).
//!
//! # Expected flow
//! - A create or an update (PUT, merge or JSON patch) gives its manager the
//!   fields it changed; other managers lose them (an update never
//!   conflicts).
//! - An apply owns exactly the fields its patch names. A field another
//!   applier owns whose value the apply would change is a conflict: `409`
//!   naming each field and manager, unless `force=true`, which takes the
//!   field over. A field set to the value it has is shared.
//!
//! # Caveats
//! - A field an update (a create, PUT or non-apply patch) last set is taken
//!   over by an apply without a conflict, where the apiserver reports one:
//!   writers that mix updates and applies on one field (the usual path from
//!   `kubectl create` or client-side apply to server-side apply) keep working
//!   as they did before managers were tracked. Conflicts are between appliers.
//! - Fields left out of a later apply stay in the object (they are no
//!   longer owned by that manager, but not removed).
//! - A list is one field, not owned per item; status writes (`/status`)
//!   and writes through the [`State`](crate::State) are not tracked.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::kubernetes::object::reserved;

/// A field: its path from the object's root.
type Path = Vec<String>;

/// The fields of an object a manager can own: every leaf of its top-level
/// fields (`spec` and `status`, a ConfigMap's `data`), each label and annotation (those the server keeps for itself
/// aside), the finalizers and the owner references.
pub(crate) fn leaves(doc: &Value) -> BTreeSet<Path> {
    fn walk(value: &Value, at: &mut Path, out: &mut BTreeSet<Path>) {
        match value {
            Value::Object(map) if !map.is_empty() => {
                for (k, v) in map {
                    at.push(k.clone());
                    walk(v, at, out);
                    at.pop();
                }
            }
            _ => {
                out.insert(at.clone());
            }
        }
    }
    let mut out = BTreeSet::new();
    // Every top-level field but the envelope (`spec` and `status`, or a
    // ConfigMap's `data`).
    if let Value::Object(fields) = doc {
        for (part, value) in fields {
            if !matches!(part.as_str(), "apiVersion" | "kind" | "metadata") && !value.is_null() {
                walk(value, &mut vec![part.to_owned()], &mut out);
            }
        }
    }
    let md = &doc["metadata"];
    for map in ["labels", "annotations"] {
        if let Some(Value::Object(entries)) = md.get(map) {
            for key in entries.keys().filter(|k| map == "labels" || !reserved(k)) {
                out.insert(vec!["metadata".into(), map.into(), key.clone()]);
            }
        }
    }
    for list in ["finalizers", "ownerReferences"] {
        if md.get(list).is_some_and(|v| !v.is_null()) {
            out.insert(vec!["metadata".into(), list.into()]);
        }
    }
    out
}

fn value_at<'a>(doc: &'a Value, path: &Path) -> Option<&'a Value> {
    path.iter().try_fold(doc, |v, k| v.get(k)).filter(|v| !v.is_null())
}

/// `paths` in the `FieldsV1` form.
fn fields_v1(paths: &BTreeSet<Path>) -> Value {
    let mut root = Map::new();
    for path in paths {
        let mut node = &mut root;
        for key in path {
            let entry = node.entry(format!("f:{key}")).or_insert_with(|| json!({}));
            node = entry.as_object_mut().expect("every node is an object");
        }
    }
    Value::Object(root)
}

/// The paths of a `FieldsV1` value (its leaves).
fn paths_of(fields: &Value) -> BTreeSet<Path> {
    fn walk(node: &Map<String, Value>, at: &mut Path, out: &mut BTreeSet<Path>) {
        let children: Vec<(&str, &Value)> =
            node.iter().filter_map(|(k, v)| Some((k.strip_prefix("f:")?, v))).collect();
        if children.is_empty() {
            out.insert(at.clone());
            return;
        }
        for (key, child) in children {
            at.push(key.to_owned());
            match child {
                Value::Object(map) => walk(map, at, out),
                _ => drop(out.insert(at.clone())),
            }
            at.pop();
        }
    }
    let mut out = BTreeSet::new();
    if let Value::Object(map) = fields {
        walk(map, &mut Vec::new(), &mut out);
    }
    out.retain(|p| !p.is_empty());
    out
}

/// One manager's entry, as served.
#[derive(Clone, Debug, PartialEq)]
struct Entry {
    manager: String,
    operation: String,
    api_version: String,
    time: String,
    fields: BTreeSet<Path>,
}

impl Entry {
    fn to_json(&self) -> Value {
        json!({
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(&self.fields),
        })
    }

    fn from_json(value: &Value) -> Option<Entry> {
        Some(Entry {
            manager: value["manager"].as_str()?.to_owned(),
            operation: value["operation"].as_str()?.to_owned(),
            api_version: value["apiVersion"].as_str().unwrap_or_default().to_owned(),
            time: value["time"].as_str().unwrap_or_default().to_owned(),
            fields: paths_of(&value["fieldsV1"]),
        })
    }
}

/// The managed fields kept in an object's annotation (none without it).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managed(Vec<Entry>);

/// A field another manager owns, which an apply would change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Conflict {
    /// `.spec.mtu`.
    pub(crate) field: String,
    pub(crate) manager: String,
}

impl Managed {
    /// What the annotation `text` holds.
    pub(crate) fn parse(text: Option<&str>) -> Managed {
        let entries = text
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .and_then(|v| v.as_array().map(|a| a.iter().filter_map(Entry::from_json).collect()));
        Managed(entries.unwrap_or_default())
    }

    /// The entries as served (`metadata.managedFields`).
    pub(crate) fn to_json(&self) -> Value {
        Value::Array(self.0.iter().map(Entry::to_json).collect())
    }

    /// The annotation's text: `None` when nobody manages anything.
    pub(crate) fn annotation(&self) -> Option<String> {
        (!self.0.is_empty()).then(|| self.to_json().to_string())
    }

    fn entry(&mut self, manager: &str, operation: &str, api_version: &str) -> &mut Entry {
        let found = self.0.iter().position(|e| e.manager == manager && e.operation == operation);
        let index = found.unwrap_or_else(|| {
            self.0.push(Entry {
                manager: manager.to_owned(),
                operation: operation.to_owned(),
                api_version: api_version.to_owned(),
                time: String::new(),
                fields: BTreeSet::new(),
            });
            self.0.len() - 1
        });
        &mut self.0[index]
    }

    /// An update by `manager` from `before` (`Null` for a create) to
    /// `after`: it owns the fields it changed, the others lose them.
    pub(crate) fn update(
        &mut self,
        manager: &str,
        api_version: &str,
        before: &Value,
        after: &Value,
        now: &str,
    ) {
        let (old, new) = (leaves(before), leaves(after));
        let changed: BTreeSet<Path> = new
            .iter()
            .filter(|p| value_at(before, p) != value_at(after, p))
            .chain(old.difference(&new))
            .cloned()
            .collect();
        if changed.is_empty() {
            return;
        }
        for e in &mut self.0 {
            e.fields.retain(|p| !changed.iter().any(|c| overlaps(c, p)));
        }
        let entry = self.entry(manager, "Update", api_version);
        entry.fields.extend(changed.into_iter().filter(|p| new.contains(p)));
        entry.time = now.to_owned();
        self.0.retain(|e| !e.fields.is_empty());
    }

    /// An apply by `manager` of `applied` onto `current` (the object as
    /// stored; `Null` for a create): its conflicts unless `force`, else the
    /// fields it names become its own.
    pub(crate) fn apply(
        &mut self,
        manager: &str,
        api_version: &str,
        current: &Value,
        applied: &Value,
        force: bool,
        now: &str,
    ) -> Result<(), Vec<Conflict>> {
        let named = leaves(applied);
        let mut conflicts = Vec::new();
        // Only appliers conflict: a field an update set is taken over (see
        // the module's caveats).
        for e in self.0.iter().filter(|e| e.manager != manager && e.operation == "Apply") {
            for p in e.fields.iter().filter(|p| named.iter().any(|n| overlaps(n, p))) {
                let differs = named
                    .iter()
                    .filter(|n| overlaps(n, p))
                    .any(|n| value_at(current, n) != value_at(applied, n));
                if differs {
                    conflicts.push(Conflict {
                        field: format!(".{}", p.join(".")),
                        manager: e.manager.clone(),
                    });
                }
            }
        }
        if !conflicts.is_empty() && !force {
            return Err(conflicts);
        }
        for e in self.0.iter_mut().filter(|e| e.manager != manager) {
            e.fields.retain(|p| {
                !named
                    .iter()
                    .any(|n| overlaps(n, p) && value_at(current, n) != value_at(applied, n))
            });
        }
        let entry = self.entry(manager, "Apply", api_version);
        if entry.fields != named {
            entry.fields = named;
            entry.time = now.to_owned();
        }
        self.0.retain(|e| !e.fields.is_empty());
        Ok(())
    }
}

/// Whether one path is the other or lies below it.
fn overlaps(a: &Path, b: &Path) -> bool {
    a.starts_with(b) || b.starts_with(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(mtu: u64, label: Option<&str>) -> Value {
        let mut d = json!({"metadata": {"name": "eth0"}, "spec": {"mtu": mtu, "up": true}});
        if let Some(l) = label {
            d["metadata"]["labels"] = json!({"tier": l});
        }
        d
    }

    #[test]
    fn fields_v1_round_trips() {
        let paths = leaves(&doc(1500, Some("edge")));
        let v1 = fields_v1(&paths);
        assert_eq!(
            v1,
            json!({"f:metadata": {"f:labels": {"f:tier": {}}}, "f:spec": {"f:mtu": {}, "f:up": {}}})
        );
        assert_eq!(paths_of(&v1), paths);
    }

    #[test]
    fn an_apply_of_another_appliers_field_conflicts_unless_forced_and_equal_values_share() {
        let mut m = Managed::default();
        let theirs = json!({"spec": {"mtu": 1500, "up": true}});
        m.apply("kubectl-edit", "v1", &Value::Null, &theirs, false, "t0").unwrap();
        let mine = json!({"spec": {"mtu": 9000}});
        let conflicts = m.apply("ops", "v1", &doc(1500, None), &mine, false, "t1").unwrap_err();
        assert_eq!(
            conflicts,
            [Conflict { field: ".spec.mtu".into(), manager: "kubectl-edit".into() }]
        );
        let same = json!({"spec": {"mtu": 1500}});
        m.apply("ops", "v1", &doc(1500, None), &same, false, "t1").unwrap();
        let managers: Vec<&str> = m.0.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(managers, ["kubectl-edit", "ops"], "an equal value is shared");
        m.apply("ops", "v1", &doc(1500, None), &mine, true, "t2").unwrap();
        let edit = &m.0[0];
        assert!(!edit.fields.contains(&vec!["spec".to_owned(), "mtu".to_owned()]), "taken over");
        assert!(edit.fields.contains(&vec!["spec".to_owned(), "up".to_owned()]));
    }

    #[test]
    fn an_update_takes_the_fields_it_changes_from_everyone() {
        let mut m = Managed::default();
        m.apply("ops", "v1", &Value::Null, &json!({"spec": {"mtu": 1500}}), false, "t0").unwrap();
        m.update("kubectl-edit", "v1", &doc(1500, None), &doc(9000, None), "t1");
        assert_eq!(m.0.len(), 1, "ops owned nothing else: {:?}", m.0);
        assert_eq!(m.0[0].manager, "kubectl-edit");
        let text = m.annotation().unwrap();
        assert_eq!(Managed::parse(Some(&text)), m);
    }

    #[test]
    fn an_apply_takes_over_what_an_update_set_without_a_conflict() {
        let mut m = Managed::default();
        m.update("kubectl-create", "v1", &Value::Null, &doc(1500, None), "t0");
        let mine = json!({"spec": {"mtu": 9000}});
        m.apply("ops", "v1", &doc(1500, None), &mine, false, "t1").unwrap();
        assert_eq!(m.0.len(), 2);
        assert!(!m.0[0].fields.contains(&vec!["spec".to_owned(), "mtu".to_owned()]));
    }
}
