//! Patches over JSON objects: JSON merge patch (RFC 7386) and JSON patch
//! (RFC 6902, with JSON pointers per RFC 6901).

use serde_json::{Map, Value};

/// Applies a JSON merge patch (RFC 7386) to `target`: objects merge key by
/// key, `null` removes a key, anything else replaces.
pub(crate) fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else { unreachable!("made an object above") };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

/// The most operations one JSON patch may hold (the apiserver's
/// `maxJSONPatchOperations`): more is a `413`.
pub(crate) const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The most bytes (as JSON) one JSON patch may copy in all (the apiserver's
/// `JSONPatchMaxCopyBytes`, its request body limit): each `copy` of the
/// root can double the document, so without a bound a patch of a kilobyte
/// made gigabytes (found by fuzzing, fuzz/regressions/patch/).
pub(crate) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

/// The deepest document a JSON patch may make. A body parses at most 128
/// levels deep, but `add` at a deep path nests one value in another: past
/// this bound writing or dropping the result could exhaust the stack.
pub(crate) const MAX_JSON_PATCH_DEPTH: usize = 512;

/// The size of `value` written as JSON, or `None` once it passes `limit`
/// (the walk stops there: it costs at most `limit`).
fn json_size(value: &Value, limit: usize) -> Option<usize> {
    fn walk(value: &Value, left: &mut usize) -> Option<()> {
        let take = |left: &mut usize, n: usize| left.checked_sub(n).map(|l| *left = l);
        match value {
            Value::Null | Value::Bool(_) => take(left, 5),
            Value::Number(_) => take(left, 24),
            Value::String(s) => take(left, s.len() + 2),
            Value::Array(items) => {
                take(left, 2 + items.len())?;
                items.iter().try_for_each(|v| walk(v, left))
            }
            Value::Object(map) => {
                take(left, 2 + map.len())?;
                map.iter().try_for_each(|(k, v)| {
                    take(left, k.len() + 3)?;
                    walk(v, left)
                })
            }
        }
    }
    let mut left = limit;
    walk(value, &mut left).map(|()| limit - left)
}

/// Whether `value` nests deeper than `limit` (the walk stops there).
fn deeper_than(value: &Value, limit: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return false,
    };
    let mut children = children.peekable();
    if children.peek().is_none() {
        return false;
    }
    limit == 0 || children.any(|v| deeper_than(v, limit - 1))
}

/// Why a JSON patch failed, as the apiserver sorts it: what does not decode
/// as a list of operations is a bad request, what fails while applying
/// (an unknown `op`, a missing or malformed `path`, `from` or `value`, a
/// path to nothing, a failed `test`) makes the object invalid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PatchError {
    /// The patch document is not an array of objects (400).
    Malformed(String),
    /// More than [`MAX_JSON_PATCH_OPERATIONS`] operations (413).
    TooLarge(String),
    /// An operation could not be applied, or a `test` failed (422).
    Failed(String),
}

/// The reference tokens of a JSON pointer (`/a/b~1c` is `a`, `b/c`).
fn tokens(pointer: &str) -> Result<Vec<String>, PatchError> {
    if pointer.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(PatchError::Failed(format!(
            "JSON pointer {pointer:?} does not start with '/'"
        )));
    };
    // ~1 first, then ~0: "~01" is "~1", not "/".
    Ok(rest.split('/').map(|t| t.replace("~1", "/").replace("~0", "~")).collect())
}

/// An array index token: digits without leading zeros (not `-`).
fn index(token: &str, len: usize, pointer: &str) -> Result<usize, PatchError> {
    let ok = !token.is_empty()
        && token.bytes().all(|b| b.is_ascii_digit())
        && (token == "0" || !token.starts_with('0'));
    match token.parse::<usize>() {
        Ok(i) if ok && i < len => Ok(i),
        _ => Err(PatchError::Failed(format!("{pointer}: no array element {token:?}"))),
    }
}

fn resolve<'a>(doc: &'a Value, pointer: &str) -> Result<&'a Value, PatchError> {
    let mut at = doc;
    for token in tokens(pointer)? {
        at = match at {
            Value::Object(map) => map
                .get(&token)
                .ok_or_else(|| PatchError::Failed(format!("{pointer}: no field {token:?}")))?,
            Value::Array(items) => &items[index(&token, items.len(), pointer)?],
            _ => {
                return Err(PatchError::Failed(format!(
                    "{pointer}: {token:?} is not in a container"
                )));
            }
        };
    }
    Ok(at)
}

/// The value a `test` operation compares: the one at `pointer`, or `null`
/// when the object that would hold it exists and lacks the field (as the
/// apiserver's JSON patch does: kube-runtime's finalizer helper tests
/// `/metadata/finalizers` against `null` on an object that has none). A
/// missing parent is still an error.
fn test_value<'a>(doc: &'a Value, pointer: &str) -> Result<&'a Value, PatchError> {
    static NULL: Value = Value::Null;
    match resolve(doc, pointer) {
        Ok(found) => Ok(found),
        Err(e) => {
            let Some((holder, _)) = pointer.rsplit_once('/') else {
                return Err(e);
            };
            match resolve(doc, holder)? {
                Value::Object(_) => Ok(&NULL),
                _ => Err(e),
            }
        }
    }
}

/// The container holding `pointer`'s last token, and that token.
fn parent<'a>(doc: &'a mut Value, pointer: &str) -> Result<(&'a mut Value, String), PatchError> {
    let mut tokens = tokens(pointer)?;
    let Some(last) = tokens.pop() else {
        return Err(PatchError::Failed("the root has no parent".into()));
    };
    let mut at = doc;
    for token in tokens {
        at = match at {
            Value::Object(map) => map
                .get_mut(&token)
                .ok_or_else(|| PatchError::Failed(format!("{pointer}: no field {token:?}")))?,
            Value::Array(items) => {
                let i = index(&token, items.len(), pointer)?;
                &mut items[i]
            }
            _ => {
                return Err(PatchError::Failed(format!(
                    "{pointer}: {token:?} is not in a container"
                )));
            }
        };
    }
    Ok((at, last))
}

fn add(doc: &mut Value, pointer: &str, value: Value) -> Result<(), PatchError> {
    if pointer.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (container, last) = parent(doc, pointer)?;
    match container {
        Value::Object(map) => {
            map.insert(last, value);
        }
        Value::Array(items) => {
            let i = if last == "-" { items.len() } else { index(&last, items.len() + 1, pointer)? };
            items.insert(i, value);
        }
        _ => return Err(PatchError::Failed(format!("{pointer}: the parent is not a container"))),
    }
    Ok(())
}

fn remove(doc: &mut Value, pointer: &str) -> Result<Value, PatchError> {
    let (container, last) = parent(doc, pointer)?;
    match container {
        Value::Object(map) => map
            .remove(&last)
            .ok_or_else(|| PatchError::Failed(format!("{pointer}: no field {last:?} to remove"))),
        Value::Array(items) => {
            let i = index(&last, items.len(), pointer)?;
            Ok(items.remove(i))
        }
        _ => Err(PatchError::Failed(format!("{pointer}: the parent is not a container"))),
    }
}

/// Applies a JSON patch (RFC 6902: `add`, `remove`, `replace`, `move`,
/// `copy`, `test`) to `doc`, all or nothing: on an error `doc` is unchanged.
pub(crate) fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::Malformed("a JSON patch is an array of operations".into()));
    };
    if let Some(op) = ops.iter().find(|op| !op.is_object()) {
        return Err(PatchError::Malformed(format!(
            "a JSON patch is an array of operations (objects), not {op}"
        )));
    }
    if ops.len() > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut work = doc.clone();
    let mut copy_budget = MAX_JSON_PATCH_COPY_BYTES;
    for op in ops {
        let field = |name: &str| -> Result<&str, PatchError> {
            op.get(name)
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::Failed(format!("operation {op} has no string {name:?}")))
        };
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError::Failed(format!("operation {op} has no \"value\"")))
        };
        let path = field("path")?;
        match field("op")? {
            "add" => add(&mut work, path, value()?)?,
            "remove" => {
                remove(&mut work, path)?;
            }
            "replace" => {
                let value = value()?;
                if path.is_empty() {
                    work = value;
                } else {
                    remove(&mut work, path)?;
                    add(&mut work, path, value)?;
                }
            }
            "move" => {
                let from = field("from")?;
                if path != from && path.starts_with(&format!("{from}/")) {
                    return Err(PatchError::Failed(format!(
                        "cannot move {from} into its own child {path}"
                    )));
                }
                let moved = remove(&mut work, from)?;
                add(&mut work, path, moved)?;
            }
            "copy" => {
                let from = resolve(&work, field("from")?)?;
                let size = json_size(from, copy_budget).ok_or_else(|| {
                    PatchError::Failed(format!(
                        "the copies of a JSON patch add up to more than {MAX_JSON_PATCH_COPY_BYTES} bytes"
                    ))
                })?;
                copy_budget -= size;
                let copied = from.clone();
                add(&mut work, path, copied)?;
            }
            "test" => {
                let expected = value()?;
                let actual = test_value(&work, path)?;
                if *actual != expected {
                    return Err(PatchError::Failed(format!(
                        "test failed: {path} is {actual}, not {expected}"
                    )));
                }
            }
            other => {
                return Err(PatchError::Failed(format!("unknown JSON patch operation {other:?}")));
            }
        }
    }
    if deeper_than(&work, MAX_JSON_PATCH_DEPTH) {
        return Err(PatchError::Failed(format!(
            "the patched document nests deeper than {MAX_JSON_PATCH_DEPTH} levels"
        )));
    }
    *doc = work;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        // RFC 7386 appendix A, a few of its cases.
        for (target, patch, result) in [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "b"}), json!({"b": "c"}), json!({"a": "b", "b": "c"})),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (json!({"a": [{"b": "c"}]}), json!({"a": [1]}), json!({"a": [1]})),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (json!({"e": null}), json!({"a": 1}), json!({"e": null, "a": 1})),
            (json!([1, 2]), json!({"a": "b", "c": null}), json!({"a": "b"})),
            (json!({}), json!({"a": {"bb": {"ccc": null}}}), json!({"a": {"bb": {}}})),
        ] {
            let mut doc = target.clone();
            merge_patch(&mut doc, &patch);
            assert_eq!(doc, result, "{target} + {patch}");
        }
    }

    #[test]
    fn json_patch_applies_every_operation() {
        let mut doc = json!({"spec": {"mtu": 1500, "list": [1, 2]}, "a/b": 1, "m~n": 2});
        let patch = json!([
            {"op": "test", "path": "/spec/mtu", "value": 1500},
            {"op": "replace", "path": "/spec/mtu", "value": 9000},
            {"op": "add", "path": "/spec/list/1", "value": 5},
            {"op": "add", "path": "/spec/list/-", "value": 9},
            {"op": "remove", "path": "/spec/list/0"},
            {"op": "copy", "from": "/spec/mtu", "path": "/spec/copy"},
            {"op": "move", "from": "/a~1b", "path": "/moved"},
            {"op": "test", "path": "/m~0n", "value": 2},
            {"op": "add", "path": "/spec/new", "value": {"x": 1}}
        ]);
        json_patch(&mut doc, &patch).unwrap();
        assert_eq!(
            doc,
            json!({"spec": {"mtu": 9000, "list": [5, 2, 9], "copy": 9000, "new": {"x": 1}},
                   "moved": 1, "m~n": 2})
        );
    }

    /// kube-runtime's `finalizer()` helper adds the first finalizer with
    /// `test /metadata/finalizers == null` then `add`, on an object that has
    /// no such field: the apiserver counts a missing field as `null`.
    #[test]
    fn a_test_of_a_missing_field_against_null_passes() {
        let mut doc = json!({"metadata": {"name": "a"}});
        let patch = json!([
            {"op": "test", "path": "/metadata/finalizers", "value": null},
            {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}
        ]);
        json_patch(&mut doc, &patch).unwrap();
        assert_eq!(doc, json!({"metadata": {"name": "a", "finalizers": ["x"]}}));
        // Missing is null, not anything else; and the holder must exist.
        for patch in [
            json!([{"op": "test", "path": "/metadata/labels", "value": {}}]),
            json!([{"op": "test", "path": "/status/phase", "value": null}]),
            json!([{"op": "test", "path": "/metadata/name/x", "value": null}]),
        ] {
            let before = doc.clone();
            let e = json_patch(&mut doc, &patch).unwrap_err();
            assert!(matches!(e, PatchError::Failed(_)), "{patch}: {e:?}");
            assert_eq!(doc, before);
        }
    }

    #[test]
    fn a_failed_json_patch_changes_nothing() {
        let original = json!({"spec": {"mtu": 1500}});
        for (patch, malformed) in [
            (
                json!([{"op": "replace", "path": "/spec/mtu", "value": 1}, {"op": "test", "path": "/spec/mtu", "value": 2}]),
                false,
            ),
            (json!([{"op": "remove", "path": "/spec/nope"}]), false),
            (json!([{"op": "replace", "path": "/spec/nope", "value": 1}]), false),
            (json!([{"op": "add", "path": "/nope/x", "value": 1}]), false),
            (json!([{"op": "move", "from": "/spec", "path": "/spec/x"}]), false),
            // As the apiserver sorts them: an operation that cannot be
            // applied (unknown, a path that is no JSON pointer, no value)
            // is a failure (422), only a document that is no array of
            // objects is malformed (400).
            (json!([{"op": "add", "path": "spec", "value": 1}]), false),
            (json!([{"op": "frob", "path": "/spec"}]), false),
            (json!([{"op": "add", "path": "/spec/x"}]), false),
            (json!([{"op": "add", "value": 1}]), false),
            (json!([{"op": 5, "path": "/spec"}]), false),
            (json!({"op": "add"}), true),
            (json!([{"op": "test", "path": "/spec", "value": {"mtu": 1500}}, 1]), true),
            (json!("add"), true),
        ] {
            let mut doc = original.clone();
            let e = json_patch(&mut doc, &patch).unwrap_err();
            assert_eq!(matches!(e, PatchError::Malformed(_)), malformed, "{patch}: {e:?}");
            assert_eq!(doc, original, "{patch}");
        }
    }

    #[test]
    fn a_json_patch_of_too_many_operations_is_too_large() {
        let op = json!({"op": "test", "path": "/spec/mtu", "value": 1500});
        let mut doc = json!({"spec": {"mtu": 1500}});
        let at_most = Value::Array(vec![op.clone(); MAX_JSON_PATCH_OPERATIONS]);
        assert_eq!(json_patch(&mut doc, &at_most), Ok(()));
        let over = Value::Array(vec![op; MAX_JSON_PATCH_OPERATIONS + 1]);
        assert!(matches!(json_patch(&mut doc, &over), Err(PatchError::TooLarge(_))));
    }

    /// Found by fuzzing (fuzz/regressions/patch/): 26 copies of the root,
    /// 1 KB of patch, made a document of gigabytes.
    #[test]
    fn copies_are_bounded_in_bytes_and_documents_in_depth() {
        let original = json!({"x": [1, 2, 3, 4, 5, 6, 7, 8]});
        let bomb: Vec<Value> =
            (0..26).map(|i| json!({"op": "copy", "from": "", "path": format!("/a{i}")})).collect();
        let mut doc = original.clone();
        let e = json_patch(&mut doc, &Value::Array(bomb)).unwrap_err();
        assert!(matches!(&e, PatchError::Failed(m) if m.contains("copies")), "{e:?}");
        assert_eq!(doc, original);
        // A few copies stay well within the budget.
        let few: Vec<Value> =
            (0..3).map(|i| json!({"op": "copy", "from": "", "path": format!("/a{i}")})).collect();
        json_patch(&mut doc, &Value::Array(few)).unwrap();
        assert_eq!(doc["a2"]["a1"]["a0"], original);

        // Adds at ever deeper paths: past MAX_JSON_PATCH_DEPTH, refused.
        let nested = |depth: usize| (0..depth).fold(json!(1), |v, _| json!({"n": v}));
        let mut deep = json!({});
        let mut path = String::new();
        let mut ops = Vec::new();
        for _ in 0..6 {
            path.push_str("/n");
            ops.push(json!({"op": "add", "path": path.clone(), "value": nested(100)}));
            path.push_str(&"/n".repeat(99));
        }
        let e = json_patch(&mut deep, &Value::Array(ops.clone())).unwrap_err();
        assert!(matches!(&e, PatchError::Failed(m) if m.contains("deeper")), "{e:?}");
        assert_eq!(deep, json!({}));
        ops.truncate(5);
        json_patch(&mut deep, &Value::Array(ops)).unwrap();
        // The root and 500 maps: 501 levels.
        assert!(deeper_than(&deep, 500) && !deeper_than(&deep, 501));
        assert_eq!(json_size(&json!({"a": [1, "bc"]}), 100), Some(2 + 1 + 4 + 2 + 2 + 24 + 4));
        assert_eq!(json_size(&json!({"a": [1, "bc"]}), 10), None);
    }

    #[test]
    fn pointers_unescape_tilde_one_before_tilde_zero() {
        assert_eq!(tokens("/a~1b/c~0d/~01").unwrap(), ["a/b", "c~d", "~1"]);
        assert_eq!(tokens("").unwrap(), Vec::<String>::new());
        assert_eq!(tokens("/").unwrap(), [""]);
        let doc = json!({"arr": [0, 1]});
        assert!(resolve(&doc, "/arr/01").is_err(), "no leading zeros");
        assert_eq!(resolve(&doc, "/arr/1").unwrap(), &json!(1));
    }
}
