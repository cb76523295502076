//! Writes checked against a structural OpenAPI v3 schema (a
//! CustomResourceDefinition's `openAPIV3Schema`), as the apiserver checks
//! and prunes custom resources: types, `required`, `enum`, bounds, and
//! unknown fields dropped unless `x-kubernetes-preserve-unknown-fields`.
//!
//! The apiserver's structural-schema semantics (pruning, `nullable`,
//! `x-kubernetes-int-or-string`, `x-kubernetes-preserve-unknown-fields`)
//! are not JSON Schema's, which is why this is not a JSON Schema crate.
//! `pattern` and `format` are not checked.

use serde_json::{Map, Value};

/// What is wrong: the field's path and the message, as a `422` cause.
type DecodeError = (String, String);

fn at(path: &str, key: &str) -> String {
    if path.is_empty() { key.to_owned() } else { format!("{path}.{key}") }
}

fn invalid(path: &str, value: &Value, why: &str) -> DecodeError {
    (path.to_owned(), format!("Invalid value: {value}: {why}"))
}

/// `value` checked against `schema` at `path`: the value as stored (unknown
/// fields pruned), or the first field at fault.
pub(crate) fn check(schema: &Value, value: &Value, path: &str) -> Result<Value, DecodeError> {
    let flag = |name: &str| schema.get(name).and_then(Value::as_bool).unwrap_or(false);
    if value.is_null() {
        return if flag("nullable") || schema.get("type").is_none() {
            Ok(Value::Null)
        } else {
            Err(invalid(path, value, "must not be null"))
        };
    }
    if let Some(Value::Array(allowed)) = schema.get("enum")
        && !allowed.contains(value)
    {
        let listed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err((
            path.to_owned(),
            format!("Unsupported value: {value}: supported values: {}", listed.join(", ")),
        ));
    }
    if flag("x-kubernetes-int-or-string") {
        return match value {
            Value::String(_) => Ok(value.clone()),
            Value::Number(n) if n.is_i64() || n.is_u64() => Ok(value.clone()),
            _ => Err(invalid(path, value, "must be an integer or a string")),
        };
    }
    let number = |n: f64| -> Result<(), DecodeError> {
        if let Some(min) = schema.get("minimum").and_then(Value::as_f64)
            && n < min
        {
            return Err(invalid(path, value, &format!("should be greater than or equal to {min}")));
        }
        if let Some(max) = schema.get("maximum").and_then(Value::as_f64)
            && n > max
        {
            return Err(invalid(path, value, &format!("should be less than or equal to {max}")));
        }
        Ok(())
    };
    match (schema.get("type").and_then(Value::as_str), value) {
        (Some("object") | None, Value::Object(fields)) => object(schema, fields, path, flag),
        (None, other) => Ok(other.clone()),
        (Some("array"), Value::Array(items)) => {
            let item_schema = schema.get("items").cloned().unwrap_or(Value::Null);
            let checked: Result<Vec<Value>, _> = items
                .iter()
                .enumerate()
                .map(|(i, item)| match &item_schema {
                    Value::Null => Ok(item.clone()),
                    s => check(s, item, &format!("{path}[{i}]")),
                })
                .collect();
            Ok(Value::Array(checked?))
        }
        (Some("string"), Value::String(s)) => {
            let len = s.chars().count() as u64;
            if let Some(min) = schema.get("minLength").and_then(Value::as_u64)
                && len < min
            {
                return Err(invalid(path, value, &format!("should be at least {min} chars long")));
            }
            if let Some(max) = schema.get("maxLength").and_then(Value::as_u64)
                && len > max
            {
                return Err(invalid(path, value, &format!("may not be longer than {max}")));
            }
            Ok(value.clone())
        }
        (Some("integer"), Value::Number(n)) if n.is_i64() || n.is_u64() => {
            number(n.as_f64().unwrap_or_default())?;
            Ok(value.clone())
        }
        (Some("number"), Value::Number(n)) => {
            number(n.as_f64().unwrap_or_default())?;
            Ok(value.clone())
        }
        (Some("boolean"), Value::Bool(_)) => Ok(value.clone()),
        (Some(ty), _) => Err(invalid(
            path,
            value,
            &format!(
                "{} in body must be of type {ty}",
                if path.is_empty() { "the object" } else { path }
            ),
        )),
    }
}

fn object(
    schema: &Value,
    fields: &Map<String, Value>,
    path: &str,
    flag: impl Fn(&str) -> bool,
) -> Result<Value, DecodeError> {
    let properties = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties").filter(|a| a.is_object());
    let preserve = flag("x-kubernetes-preserve-unknown-fields");
    let mut out = Map::new();
    for (key, field) in fields {
        let here = at(path, key);
        match (properties.and_then(|p| p.get(key)), additional) {
            (Some(s), _) | (None, Some(s)) => {
                out.insert(key.clone(), check(s, field, &here)?);
            }
            (None, None) if preserve || (properties.is_none() && schema.get("type").is_none()) => {
                out.insert(key.clone(), field.clone());
            }
            // Pruned, as the apiserver drops unknown fields.
            (None, None) => {}
        }
    }
    if let Some(Value::Array(required)) = schema.get("required") {
        for name in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(name) {
                return Err((at(path, name), "Required value".into()));
            }
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["text"],
                    "properties": {
                        "text": {"type": "string", "minLength": 1},
                        "replicas": {"type": "integer", "minimum": 0},
                        "mode": {"type": "string", "enum": ["fast", "safe"]},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "port": {"x-kubernetes-int-or-string": true},
                        "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                    },
                },
            },
        })
    }

    #[test]
    fn a_valid_object_is_kept_and_unknown_fields_are_pruned() {
        let written = json!({"spec": {"text": "hi", "replicas": 2, "bogus": 1, "port": "http",
            "extra": {"any": [1]}, "labels": {"a": "b"}, "tags": ["x"]}});
        let stored = check(&schema(), &written, "").unwrap();
        assert_eq!(
            stored,
            json!({"spec": {"text": "hi", "replicas": 2, "port": "http", "extra": {"any": [1]},
                "labels": {"a": "b"}, "tags": ["x"]}})
        );
    }

    #[test]
    fn each_rule_names_the_field_at_fault() {
        let fails = |spec: Value| check(&schema(), &json!({"spec": spec}), "").unwrap_err();
        assert_eq!(fails(json!({})).0, "spec.text");
        assert_eq!(fails(json!({})).1, "Required value");
        assert_eq!(fails(json!({"text": "a", "replicas": "big"})).0, "spec.replicas");
        assert_eq!(fails(json!({"text": "a", "replicas": -1})).0, "spec.replicas");
        assert_eq!(fails(json!({"text": "a", "replicas": 1.5})).0, "spec.replicas");
        assert!(fails(json!({"text": "a", "mode": "slow"})).1.starts_with("Unsupported value"));
        assert_eq!(fails(json!({"text": "a", "tags": [1]})).0, "spec.tags[0]");
        assert_eq!(fails(json!({"text": ""})).0, "spec.text");
        assert_eq!(fails(json!({"text": "a", "port": true})).0, "spec.port");
        assert_eq!(fails(json!({"text": "a", "labels": {"k": 1}})).0, "spec.labels.k");
    }
}
