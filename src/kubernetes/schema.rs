//! OpenAPI v3 structural schemas derived from Rust types (schemars'
//! `JsonSchema`, the derive kube-rs uses), as Kubernetes takes them in a
//! CustomResourceDefinition and serves them to `kubectl explain`: every
//! subschema inline (no `$ref`), `nullable` for an `Option`, doc comments
//! as `description`s.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

/// The structural schema of `T`.
pub(crate) fn structural<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::openapi3().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut value = settings.into_generator().into_root_schema_for::<T>().to_value();
    if let Value::Object(root) = &mut value {
        // The root's name and the definitions no inline schema refers to.
        for key in ["$schema", "title", "definitions", "$defs", "components"] {
            root.remove(key);
        }
    }
    drop_null_defaults(&mut value);
    value
}

/// Removes every `"default": null` (what `#[serde(default)]` on an
/// `Option` gives): a default that sets nothing, which Kubernetes' own types
/// drop, so that a CRD reads back as it was written.
fn drop_null_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("default").is_some_and(Value::is_null) {
                map.remove("default");
            }
            map.values_mut().for_each(drop_null_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_null_defaults),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A link.
    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Link {
        /// The MTU.
        mtu: u32,
        /// Where it is bonded.
        bond: Option<String>,
        addresses: Vec<Address>,
    }

    #[derive(JsonSchema)]
    #[allow(dead_code)]
    struct Address {
        cidr: String,
    }

    #[test]
    fn the_schema_is_inline_with_its_fields_types_and_descriptions() {
        let schema = structural::<Link>();
        assert!(!schema.to_string().contains("$ref"), "{schema}");
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["description"], "A link.");
        let properties = &schema["properties"];
        assert_eq!(properties["mtu"]["type"], "integer");
        assert_eq!(properties["mtu"]["description"], "The MTU.");
        assert_eq!(properties["bond"]["nullable"], true);
        assert_eq!(properties["addresses"]["items"]["properties"]["cidr"]["type"], "string");
        assert_eq!(schema["required"], json!(["mtu", "addresses"]));
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
    }
}
