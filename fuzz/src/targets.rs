//! The targets over parsers: YAML and ResourceList, selectors, manifests,
//! pointers and ids, patches.

use std::collections::HashMap;

use actix_web::web;
use cosi_runtime::admin::Bind;
use cosi_runtime::krm::yaml;
use cosi_runtime::krm::{Object, ResourceList, package};
use cosi_runtime::kubernetes::fuzzing;
use cosi_runtime::resource::{
    AnyResource, DynamicResource, Kind, LabelQuery, LabelTerm, Labels, Metadata, Pointer, Spec,
    Uid, validate,
};
use serde_json::Value;

/// A spec with a fixed shape, to decode manifests' specs into.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkConfig {
    /// The link's MTU.
    pub mtu: u32,
}

impl Spec for LinkConfig {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// The KRM YAML layer: `yaml::parse_documents` on any text; what parses
/// emits, and the emitted text reads back as the same values and emits the
/// same text again.
pub fn yaml(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let Ok(docs) = yaml::parse_documents(text) else { return };
    let values: Vec<Value> = docs.iter().map(yaml::Node::to_json).collect();
    let emitted = yaml::emit_documents(&docs);
    let back = yaml::parse_documents(&emitted)
        .unwrap_or_else(|e| panic!("emitted YAML does not parse back ({e}):\n{emitted}"));
    assert_eq!(back.len(), docs.len(), "documents emitted:\n{emitted}");
    for (value, doc) in values.iter().zip(&back) {
        assert_eq!(value, &doc.to_json(), "a value changed through:\n{emitted}");
    }
    assert_eq!(yaml::emit_documents(&back), emitted, "the emitted text is not stable");
}

/// `ResourceList::parse_bytes` on any bytes; a list that parses writes out
/// (`to_yaml`) and reads back with the same items, function config and
/// results, and its items group into files (`package::files_of`) without
/// a path escaping the package.
pub fn resource_list(data: &[u8]) {
    let list = match ResourceList::parse_bytes(data) {
        Ok(list) => list,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let _ = (list.exit_code(), list.kptfile(), list.kptfile_index());
    let out = list.to_yaml();
    let back = ResourceList::parse(&out)
        .unwrap_or_else(|e| panic!("a written ResourceList does not parse back ({e}):\n{out}"));
    let json = |items: &[Object]| items.iter().map(|o| o.node().to_json()).collect::<Vec<_>>();
    assert_eq!(json(&list.items), json(&back.items), "items changed through:\n{out}");
    assert_eq!(
        list.function_config.as_ref().map(|o| o.node().to_json()),
        back.function_config.as_ref().map(|o| o.node().to_json()),
        "the function config changed through:\n{out}"
    );
    assert_eq!(list.results, back.results, "results changed through:\n{out}");
    for item in &list.items {
        let _ = (item.identity(), item.reference(), item.gvk(), item.file());
    }
    if let Ok(files) = package::files_of(&list.items) {
        for path in files.keys() {
            let path = std::path::Path::new(path);
            assert!(
                path.components().all(|c| matches!(c, std::path::Component::Normal(_))),
                "{path:?} escapes the package"
            );
        }
    }
}

/// Label sets to match parsed selectors against.
fn label_sets(query: &LabelQuery) -> Vec<Labels> {
    let mut sets = vec![
        Labels::new(),
        [("tier", "edge"), ("state", "up")].into_iter().collect(),
        [("app", ""), ("net.cosi.dev/managed", "true")].into_iter().collect(),
    ];
    // The labels the query itself names, with the values it names.
    let mut own = Labels::new();
    for term in query.terms() {
        let value = match term {
            LabelTerm::Equal { value, .. } | LabelTerm::NotEqual { value, .. } => value.as_str(),
            LabelTerm::In { values, .. } | LabelTerm::NotIn { values, .. } => {
                values.first().map_or("", String::as_str)
            }
            _ => "",
        };
        own.insert(term.key(), value);
    }
    sets.push(own);
    sets
}

/// `LabelQuery::from_str` (kubectl's syntax) on any text: a parsed query
/// holds valid keys and non-empty sets, matches as its terms do, and
/// serializes and deserializes unchanged.
pub fn label_selector(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let query = match text.parse::<LabelQuery>() {
        Ok(query) => query,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    for term in query.terms() {
        assert!(validate::label_key(term.key()).is_ok(), "{term} has an invalid key");
        if let LabelTerm::In { values, .. } | LabelTerm::NotIn { values, .. } = term {
            assert!(!values.is_empty() && values.iter().all(|v| !v.is_empty()), "{term}");
        }
    }
    for labels in label_sets(&query) {
        let all = query.terms().iter().all(|t| t.matches(&labels));
        assert_eq!(query.matches(&labels), all);
    }
    let _ = query.to_string();
    let json = serde_json::to_string(&query).expect("a query serializes");
    let back: LabelQuery = serde_json::from_str(&json).expect("a serialized query deserializes");
    assert_eq!(back, query);
}

/// Resources to apply field selectors to.
fn field_resources() -> Vec<AnyResource> {
    [("config", "eth0"), ("status", "links"), ("a b", "x/y")]
        .into_iter()
        .map(|(ns, id)| {
            DynamicResource::new(Metadata::new(Pointer::new(ns, LinkConfig::TYPE, id)), Value::Null)
                .into_any()
        })
        .collect()
}

/// A list or watch request's query string, read as actix-web reads it and
/// then as the Kubernetes list and watch handlers do; the field selector
/// (also the raw text as one) applied to a few resources. Errors are `400`
/// Statuses; a selector that matches a resource admits its namespace.
pub fn field_selector(data: &[u8]) {
    let Some(text) = text(data) else { return };
    let mut selectors = vec![text.to_owned()];
    if let Ok(query) = web::Query::<HashMap<String, String>>::from_query(text) {
        if let Err(status) = fuzzing::list_params(&query) {
            assert_eq!(status.code(), 400, "{status:?}");
        }
        selectors.extend(query.get("fieldSelector").cloned());
    }
    for selector in selectors {
        for resource in field_resources() {
            match fuzzing::field_selector(&selector, &resource) {
                Ok((matches, admits)) => {
                    assert!(!matches || admits, "{selector:?} matches but does not admit")
                }
                Err(status) => assert_eq!(status.code(), 400, "{status:?}"),
            }
        }
    }
}

/// One manifest (a JSON value): decoded as a [`DynamicResource`], its
/// metadata checked, its spec decoded as a typed spec; a decoded manifest
/// serializes and decodes back equal.
fn manifest_value(value: Value) {
    let Ok(resource) = serde_json::from_value::<DynamicResource>(value) else { return };
    let _ = validate::metadata(resource.metadata());
    let _ = resource.metadata().pointer().to_string();
    let json = serde_json::to_value(&resource).expect("a manifest serializes");
    let back: DynamicResource = serde_json::from_value(json.clone())
        .unwrap_or_else(|e| panic!("a serialized manifest does not decode ({e}): {json}"));
    assert_eq!(back, resource);
    let any = resource.into_any();
    let _ = any.typed::<LinkConfig>();
    let dynamic = any.to_dynamic().expect("a dynamic resource is dynamic");
    assert_eq!(dynamic, back);
}

/// Manifests: JSON (one manifest or an array of them) and multi-document
/// YAML (each document a manifest, and a KRM object whose accessors are
/// read).
pub fn manifest(data: &[u8]) {
    if let Ok(value) = serde_json::from_slice::<Value>(data) {
        match value {
            Value::Array(items) => items.into_iter().for_each(manifest_value),
            one => manifest_value(one),
        }
    }
    let Some(text) = text(data) else { return };
    let Ok(docs) = yaml::parse_documents(text) else { return };
    for doc in docs {
        let value = doc.to_json();
        let object = Object::from_node(doc);
        let _ = (object.identity(), object.gvk(), object.file(), object.annotation("a"));
        manifest_value(value);
    }
}

/// Splits at the first two NUL or newline bytes: up to three parts.
fn parts(text: &str) -> Vec<&str> {
    text.splitn(3, ['\0', '\n']).collect()
}

/// Addresses and ids: `Pointer` and `Kind` parse what they display (any
/// valid pointer, whatever its characters, displays and parses back), `Uid`
/// the same, `validate::name` and `label_key` never panic, `Bind` parses.
pub fn pointer(data: &[u8]) {
    let Some(text) = text(data) else { return };
    if let Ok(p) = text.parse::<Pointer>() {
        assert!(validate::pointer(&p).is_ok(), "{p:?} parsed but is invalid");
        assert_eq!(p.to_string().parse::<Pointer>().ok(), Some(p.clone()));
    }
    if let Ok(k) = text.parse::<Kind>() {
        assert!(validate::kind(&k).is_ok(), "{k:?} parsed but is invalid");
        assert_eq!(k.to_string().parse::<Kind>().ok(), Some(k.clone()));
    }
    // Any valid pointer, built from parts, round-trips through its text.
    if let [ns, ty, id] = parts(text)[..] {
        let p = Pointer::new(ns, ty, id);
        if validate::pointer(&p).is_ok() {
            let shown = p.to_string();
            assert_eq!(shown.parse::<Pointer>().ok(), Some(p.clone()), "{shown}");
            let k = p.kind().clone();
            assert_eq!(k.to_string().parse::<Kind>().ok(), Some(k), "{shown}");
        }
    }
    if let Ok(uid) = text.parse::<Uid>() {
        assert_eq!(uid.to_string().parse::<Uid>().ok(), Some(uid));
    }
    let _ = validate::name("id", text);
    let _ = validate::label_key(text);
    if let Ok(bind) = text.parse::<Bind>() {
        assert_eq!(bind.to_string().parse::<Bind>().ok(), Some(bind));
    }
}

/// Patches, as the Kubernetes API applies them. The input is
/// `MODE\nDOCUMENT\nPATCH` (MODE `json` or `merge`, else both; a document
/// that is not JSON is `{}`). A JSON patch is all or nothing: on an error
/// (`400`, `413` or `422`) the document is unchanged. A merge patch is
/// idempotent. What a patch makes serializes.
pub fn patch(data: &[u8]) {
    let mut split = data.splitn(3, |b| *b == b'\n');
    let mode = split.next().unwrap_or_default();
    let doc: Value =
        serde_json::from_slice(split.next().unwrap_or_default()).unwrap_or(Value::Null);
    let doc = if doc.is_null() { serde_json::json!({}) } else { doc };
    let Ok(patch) = serde_json::from_slice::<Value>(split.next().unwrap_or_default()) else {
        return;
    };
    if mode != b"merge" {
        let mut patched = doc.clone();
        match fuzzing::json_patch(&mut patched, &patch) {
            Ok(()) => drop(serde_json::to_vec(&patched).expect("a patched document serializes")),
            Err(status) => {
                assert!(matches!(status.code(), 400 | 413 | 422), "{status:?}");
                assert_eq!(patched, doc, "a failed JSON patch changed the document");
            }
        }
    }
    if mode != b"json" {
        let mut once = doc.clone();
        fuzzing::merge_patch(&mut once, &patch);
        let mut twice = once.clone();
        fuzzing::merge_patch(&mut twice, &patch);
        assert_eq!(once, twice, "a merge patch is not idempotent");
    }
}

/// The durable state's write-ahead log, read as an open reads it (from the
/// beginning, and after the first 8 bytes' worth of a checkpoint mark): no
/// panic, and a log that reads gives the same records from the same bytes
/// again.
pub fn state_log(data: &[u8]) {
    use cosi_runtime::state::fuzzing::write_ahead_log;
    let first = write_ahead_log(data, 0);
    if first.is_ok() {
        assert_eq!(write_ahead_log(data, 0).ok(), first.ok(), "the same bytes read twice");
    }
    let logged = data.get(..8).map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    if let Ok((after, _)) = write_ahead_log(data, logged)
        && let Ok((all, _)) = write_ahead_log(data, 0)
    {
        assert!(after <= all, "a checkpoint mark ({logged}) cannot add records");
    }
}
