//! Validation before any mutation: every item is a KRM object
//! (`apiVersion`, `kind`, `metadata.name`), and no two items share
//! (apiVersion, kind, namespace, name).

use crate::hashing::SeededMap as HashMap;

use super::object::Object;
use super::results::{FileRef, FnResult, ResourceRef};
use super::yaml::Node;

fn non_empty(node: Option<&Node>) -> bool {
    node.and_then(Node::as_str).is_some_and(|s| !s.is_empty())
}

/// `error` results for every item that is not a KRM object and for every
/// duplicate identity. Each result names the item's file and index (from its
/// path/index annotations) and its position in `items`.
pub fn validate_items(items: &[Object]) -> Vec<FnResult> {
    let mut results = Vec::new();
    // Identities borrow from the items: a valid package allocates nothing here.
    let mut seen: HashMap<(&str, &str, &str, &str), usize> =
        HashMap::with_capacity_and_hasher(items.len(), Default::default());
    for (i, item) in items.iter().enumerate() {
        let locate = |mut r: FnResult| {
            r.tags.insert("item".into(), i.to_string());
            if let Some((path, index)) = item.file() {
                r.file = Some(FileRef { path, index });
            }
            r
        };
        // Only a problem is described, so only then is the text built.
        let where_ = || match item.file() {
            Some((path, index)) => format!("items[{i}] ({path}, index {index})"),
            None => format!("items[{i}]"),
        };
        let node = item.node();
        if node.as_map().is_none() {
            results.push(locate(FnResult::error(format!("{} is not a mapping", where_()))));
            continue;
        }
        let mut missing = Vec::new();
        if !non_empty(node.get("apiVersion")) {
            missing.push("apiVersion");
        }
        if !non_empty(node.get("kind")) {
            missing.push("kind");
        }
        if !non_empty(node.path(&["metadata", "name"])) {
            missing.push("metadata.name");
        }
        if !missing.is_empty() {
            let mut r = locate(FnResult::error(format!(
                "{} is not a KRM object: missing {}",
                where_(),
                missing.join(", ")
            )));
            r.resource_ref = Some(ResourceRef::to(item));
            results.push(r);
            continue;
        }
        let id = (|| {
            Some((
                item.api_version()?,
                item.kind()?,
                item.namespace().unwrap_or_default(),
                item.name()?,
            ))
        })();
        if let Some(id) = id {
            if let Some(first) = seen.get(&id) {
                let (v, k, ns, n) = id;
                results.push(
                    locate(FnResult::error(format!(
                        "{} duplicates items[{first}]: resource (apiVersion {v}, kind {k}, namespace {ns:?}, name {n})",
                        where_()
                    )))
                    .about(item),
                );
            } else {
                seen.insert(id, i);
            }
        }
    }
    results
}
