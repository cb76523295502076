//! The input rules the state enforces before it stores anything.
//!
//! | what | rule |
//! |---|---|
//! | namespace, type, id | 1 to [`MAX_NAME_LEN`] bytes, no control characters |
//! | finalizer | 1 to [`MAX_NAME_LEN`] bytes, no control characters |
//! | label and annotation keys | `[prefix/]name`: `name` is 1 to 63 characters of `A-Z a-z 0-9 - _ .`, starting and ending with a letter or digit; the optional `prefix` is a DNS subdomain (lowercase letters, digits, `-`, `.`; at most 253 characters) |
//! | label and annotation values | anything |
//!
//! A violation is [`Error::InvalidInput`], naming the resource and the rule,
//! and nothing is stored.

#[cfg(feature = "kubernetes-api")]
pub(crate) use super::names::dns_subdomain;
use super::names::kind_parts;
pub use super::names::{MAX_NAME_LEN, label_key, name};
use super::{Kind, Metadata, Pointer};
use crate::Error;

fn invalid(resource: impl ToString, reason: String) -> Error {
    Error::InvalidInput { resource: resource.to_string(), reason }
}

/// Checks the namespace and type of a kind.
pub fn kind(kind: &Kind) -> Result<(), Error> {
    // Checked once, when the kind was made: every state operation checks
    // its kind, and kinds are interned.
    if kind.is_valid() {
        return Ok(());
    }
    kind_parts(kind.namespace(), kind.resource_type()).map_err(|r| invalid(kind, r))
}

/// Checks a resource type on its own (a read across every namespace of it).
pub(crate) fn resource_type(resource_type: &str) -> Result<(), Error> {
    super::names::name("type", resource_type).map_err(|r| invalid(resource_type, r))
}

/// Checks the three parts of a pointer.
pub fn pointer(ptr: &Pointer) -> Result<(), Error> {
    if !ptr.kind().is_valid() {
        kind_parts(ptr.namespace(), ptr.resource_type()).map_err(|r| invalid(ptr, r))?;
    }
    name("id", ptr.id()).map_err(|r| invalid(ptr, r))
}

/// Checks a finalizer name on `ptr`.
pub fn finalizer(ptr: &Pointer, finalizer: &str) -> Result<(), Error> {
    name("finalizer", finalizer).map_err(|r| invalid(ptr, r))
}

/// Checks everything the state will store: address, finalizers, label and annotation keys.
pub fn metadata(md: &Metadata) -> Result<(), Error> {
    pointer(md.pointer())?;
    metadata_beyond_address(md)
}

/// [`metadata`] without the address (already checked by the caller).
pub(crate) fn metadata_beyond_address(md: &Metadata) -> Result<(), Error> {
    if md.finalizers().is_empty() && md.labels().is_empty() && md.annotations().is_empty() {
        return Ok(());
    }
    let ptr = md.pointer();
    for f in md.finalizers().iter() {
        finalizer(ptr, f)?;
    }
    for k in md.labels().keys().chain(md.annotations().keys()) {
        label_key(k).map_err(|r| invalid(ptr, r))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_checks_every_part() {
        let mut md = Metadata::new(Pointer::new("ns", "T", "id"));
        assert!(metadata(&md).is_ok());
        md.labels_mut().insert("bad key", "v");
        let err = metadata(&md).unwrap_err();
        assert!(err.is_invalid_input());
        assert!(err.to_string().contains("ns/T/id"), "{err}");
        let md = Metadata::new(Pointer::new("", "T", "id"));
        assert!(metadata(&md).unwrap_err().to_string().contains("namespace"));
    }
}
