//! `Table` output (`kubectl get`): NAME, the registered print columns, AGE.
//!
//! kubectl asks for it with `Accept: application/json;as=Table;g=meta.k8s.io;v=v1`
//! (and falls back to the plain object otherwise). Each row carries the
//! object's metadata as a `PartialObjectMetadata`: kubectl reads the
//! NAMESPACE column (`-A`) and `--show-labels` from it. AGE is rendered here,
//! as the apiserver does, in kubectl's short form (`45s`, `5m`, `2h`, `3d`).

use std::time::{Duration, SystemTime};

use serde::ser::{Error as _, Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Value, json};

use super::object::{Object, ObjectMeta, Partial};
use super::pages::ListMeta;
use super::registry::{Exposed, Step};
use crate::resource::AnyResource;

/// What form a list, get or watch answers in, by its `Accept` header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Form {
    /// The objects themselves.
    Full,
    /// A `meta.k8s.io/v1` Table (`kubectl get`).
    Table,
    /// `PartialObjectMetadata` (metadata-only clients: kube-rs
    /// `list_metadata` / `metadata_watcher`, client-go's metadata informers).
    Metadata,
}

/// The form the `Accept` header asks for: its first media range this server
/// serves (`application/json`, with `as=Table` or `as=PartialObjectMetadata`
/// / `as=PartialObjectMetadataList` of `g=meta.k8s.io`, `v=v1` or
/// `v=v1beta1`), [`Form::Full`] otherwise.
pub(crate) fn form(accept: Option<&str>) -> Form {
    let Some(accept) = accept else { return Form::Full };
    for range in accept.split(',') {
        let mut params = range.split(';').map(str::trim);
        let media = params.next().unwrap_or("");
        if !media.eq_ignore_ascii_case("application/json") {
            continue;
        }
        let (mut kind, mut group, mut version) = (None, false, None);
        for p in params {
            match p.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                Some(("as", v)) => kind = Some(v),
                Some(("g", "meta.k8s.io")) => group = true,
                Some(("v", v)) => version = Some(v),
                _ => {}
            }
        }
        match (kind, group, version) {
            (None, _, _) => return Form::Full,
            (Some("Table"), true, Some("v1")) => return Form::Table,
            (Some("PartialObjectMetadata" | "PartialObjectMetadataList"), true, Some(v))
                if v == "v1" || v == "v1beta1" =>
            {
                return Form::Metadata;
            }
            // A form we do not serve: the next range may be one.
            _ => {}
        }
    }
    Form::Full
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

/// The value at `steps` in the object (as [`cell`] finds it in the whole
/// object's value), looked up in its spec, status or metadata alone when the
/// path starts there.
fn cell_of(object: &Object<'_>, steps: &[Step]) -> Value {
    match steps.split_first() {
        Some((Step::Field(f), rest)) if f == "spec" && !object.exposed.top_level => {
            cell(&object.spec, rest)
        }
        Some((Step::Field(f), rest)) if f == "status" && object.status.is_some() => {
            object.status.as_ref().map_or(Value::Null, |status| cell(status, rest))
        }
        Some((Step::Field(f), rest)) if f == "metadata" => {
            let meta = ObjectMeta::of(object.exposed, object.resource, object.resource_version);
            cell(&serde_json::to_value(meta).unwrap_or(Value::Null), rest)
        }
        Some((Step::Field(f), rest)) if object.exposed.top_level => {
            object.spec.get(f).map_or(Value::Null, |field| cell(field, rest))
        }
        _ => cell(&object.to_value(), steps),
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

/// One row: its cells, computed from the whole object, and the resource's
/// metadata (a `PartialObjectMetadata`), serialized straight from the resource.
pub(crate) struct Row<'a> {
    cells: Vec<Value>,
    meta: ObjectMeta<'a>,
}

impl<'a> Row<'a> {
    /// The row of `object`, its AGE as of `now`.
    pub(crate) fn new(object: &Object<'a>, now: SystemTime) -> Row<'a> {
        let resource = object.resource;
        let columns = &object.exposed.columns;
        let mut cells = Vec::with_capacity(columns.len() + 2);
        cells.push(Value::String(resource.id().to_owned()));
        cells.extend(columns.iter().map(|c| cell_of(object, &c.steps)));
        let created = resource.metadata().created().to_system_time();
        cells.push(age(now.duration_since(created).unwrap_or_default()).into());
        Row { cells, meta: ObjectMeta::of(object.exposed, resource, object.resource_version) }
    }
}

impl Serialize for Row<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(2))?;
        out.serialize_entry("cells", &self.cells)?;
        out.serialize_entry("object", &Partial(self.meta))?;
        out.end()
    }
}

/// The rows of `items` at their own revisions, each built as it is written.
pub(crate) struct Rows<'a> {
    pub(crate) exposed: &'a Exposed,
    pub(crate) items: &'a [&'a AnyResource],
    pub(crate) now: SystemTime,
}

impl Serialize for Rows<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for r in self.items {
            let object = Object::new(self.exposed, r, r.metadata().revision())
                .map_err(|status| S::Error::custom(status.message()))?;
            seq.serialize_element(&Row::new(&object, self.now))?;
        }
        seq.end()
    }
}

/// A Table of `rows` (one [`Row`], or [`Rows`]) at `resource_version`.
pub(crate) struct Table<'a, R> {
    pub(crate) exposed: &'a Exposed,
    pub(crate) rows: R,
    pub(crate) meta: ListMeta,
}

impl<R: Serialize> Serialize for Table<'_, R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(5))?;
        out.serialize_entry("kind", "Table")?;
        out.serialize_entry("apiVersion", "meta.k8s.io/v1")?;
        out.serialize_entry("metadata", &self.meta)?;
        out.serialize_entry("columnDefinitions", &column_definitions(self.exposed))?;
        out.serialize_entry("rows", &self.rows)?;
        out.end()
    }
}

/// One row, as a watch sends it in a one-row Table.
pub(crate) struct OneRow<'a>(pub(crate) Row<'a>);

impl Serialize for OneRow<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(std::iter::once(&self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kubernetes::object::metadata;

    #[test]
    fn kubectl_asks_for_a_table_with_fallbacks() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(form(Some(kubectl)), Form::Table);
        assert_eq!(form(Some("application/json; as=Table; g=meta.k8s.io; v=v1")), Form::Table);
        assert_ne!(form(Some("application/json;as=Table;v=v1beta1;g=meta.k8s.io")), Form::Table);
        assert_ne!(form(Some("application/json")), Form::Table);
        assert_ne!(form(None), Form::Table);
        let kube_rs = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(form(Some(kube_rs)), Form::Metadata);
        let client_go =
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/json";
        assert_eq!(form(Some(client_go)), Form::Metadata);
        assert_eq!(form(Some("application/json;as=Other;g=x;v=v1,application/json")), Form::Full);
        assert_eq!(form(Some("application/json;as=Table;g=meta.k8s.io;v=v1beta1")), Form::Full);
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

    #[test]
    fn rows_read_their_cells_from_spec_metadata_or_the_whole_object() {
        use crate::kubernetes::Expose;
        use crate::resource::{Metadata, Pointer};

        let exposed = Expose::resource_type("LinkConfigs.net.cosi.dev", "v1")
            .column("MTU", ".spec.mtu")
            .column("Tier", ".metadata.labels.tier")
            .column("Kind", ".kind")
            .column("Addrs", ".spec.addrs")
            .resolve()
            .unwrap();
        let mut md = Metadata::new(Pointer::new("config", "LinkConfigs.net.cosi.dev", "eth0"));
        md.labels_mut().insert("tier", "edge");
        let r = AnyResource::from_dynamic(md, json!({"mtu": 1500, "addrs": ["a", "b"]}));
        let object = Object::new(&exposed, &r, 3).unwrap();
        let created = r.metadata().created().to_system_time();
        let row = Row::new(&object, created + Duration::from_secs(150));
        let table = Table { exposed: &exposed, rows: OneRow(row), meta: ListMeta::at(3) };
        let table = serde_json::to_value(&table).unwrap();
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["metadata"]["resourceVersion"], "3");
        let names: Vec<&str> = table["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["Name", "MTU", "Tier", "Kind", "Addrs", "Age"]);
        let row = &table["rows"][0];
        assert_eq!(
            row["cells"],
            json!(["eth0", 1500, "edge", "LinkConfig", "[\"a\",\"b\"]", "2m30s"])
        );
        assert_eq!(row["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(row["object"]["metadata"], metadata(&r, 3));
    }
}
