use std::collections::HashMap;

use serde_json::Value;

use super::Status;
use super::params::{FieldSelector, ListParams};
use super::patch::{PatchError, json_patch as apply_json_patch};
use crate::resource::AnyResource;

/// Reads a list or watch request's query parameters as the list and
/// watch handlers do (`labelSelector`, `fieldSelector`, `watch`,
/// `resourceVersion`, `timeoutSeconds`, ...).
///
/// # Errors
/// The `400` [`Status`] the handler answers.
pub fn list_params(query: &HashMap<String, String>) -> Result<(), Status> {
    ListParams::parse(query).map(drop)
}

/// Parses a field selector and applies it to `resource`: whether it
/// matches, and whether it admits the resource's namespace at all.
///
/// # Errors
/// The `400` [`Status`] the handler answers.
pub fn field_selector(text: &str, resource: &AnyResource) -> Result<(bool, bool), Status> {
    let selector = FieldSelector::parse(text)?;
    Ok((selector.matches(resource), selector.admits_namespace(resource.metadata().namespace())))
}

/// Applies a JSON patch (RFC 6902) to `doc`, all or nothing.
///
/// # Errors
/// The [`Status`] code the PATCH handler answers: `400` for a document
/// that is no array of operations, `413` for too many operations, `422`
/// for an operation that fails.
pub fn json_patch(doc: &mut Value, patch: &Value) -> Result<(), Status> {
    apply_json_patch(doc, patch).map_err(|e| match e {
        PatchError::Malformed(m) => Status::bad_request(m),
        PatchError::TooLarge(m) => Status::request_entity_too_large(m),
        PatchError::Failed(m) => Status::invalid("", "", "", &m),
    })
}

/// Applies a JSON merge patch (RFC 7386) to `target`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    super::patch::merge_patch(target, patch);
}
