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
    value
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
