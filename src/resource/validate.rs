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

use super::{Kind, Metadata, Pointer};
use crate::Error;

/// The longest namespace, type, id or finalizer accepted, in bytes.
pub const MAX_NAME_LEN: usize = 256;

/// Checks a namespace, type, id or finalizer: the reason it is bad, if it is.
pub fn name(what: &str, value: &str) -> Result<(), String> {
    if value.is_empty() {
        return Err(format!("{what} is empty"));
    }
    if value.len() > MAX_NAME_LEN {
        return Err(format!("{what} is {} bytes long, more than {MAX_NAME_LEN}", value.len()));
    }
    // Fast path, one pass: printable ASCII (almost every name).
    let printable = value.bytes().all(|b| (0x20..0x7f).contains(&b));
    if !printable && let Some(c) = value.chars().find(|c| c.is_control()) {
        return Err(format!("{what} {value:?} contains the control character {c:?}"));
    }
    Ok(())
}

/// Checks a label or annotation key: the reason it is bad, if it is.
///
/// ```
/// use cosi_runtime::resource::validate;
///
/// assert!(validate::label_key("net.cosi.dev/managed").is_ok());
/// assert!(validate::label_key("tier").is_ok());
/// assert!(validate::label_key("").is_err());
/// assert!(validate::label_key("has space").is_err());
/// assert!(validate::label_key("a/b/c").is_err());
/// ```
pub fn label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        dns_subdomain(p).map_err(|why| format!("label key {key:?}: prefix {why}"))?;
    }
    let bad = |why: &str| Err(format!("label key {key:?}: name {why}"));
    if name.is_empty() {
        return bad("is empty");
    }
    if name.len() > 63 {
        return bad("is longer than 63 characters");
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
        return bad("may only contain A-Z, a-z, 0-9, '-', '_' and '.'");
    }
    let edge_ok = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !edge_ok(name.chars().next()) || !edge_ok(name.chars().last()) {
        return bad("must start and end with a letter or digit");
    }
    Ok(())
}

fn dns_subdomain(p: &str) -> Result<(), &'static str> {
    if p.is_empty() {
        return Err("is empty");
    }
    if p.len() > 253 {
        return Err("is longer than 253 characters");
    }
    for part in p.split('.') {
        let ok = !part.is_empty()
            && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
            && !part.starts_with('-')
            && !part.ends_with('-');
        if !ok {
            return Err("must be a DNS subdomain (lowercase letters, digits, '-' and '.')");
        }
    }
    Ok(())
}

fn invalid(resource: impl ToString, reason: String) -> Error {
    Error::InvalidInput { resource: resource.to_string(), reason }
}

/// The reason a namespace and type are bad, if they are.
pub(crate) fn kind_parts(namespace: &str, resource_type: &str) -> Result<(), String> {
    name("namespace", namespace).and_then(|()| name("type", resource_type))
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
    fn names_reject_empty_long_and_control_characters() {
        assert!(name("id", "eth0").is_ok());
        assert!(name("id", "").unwrap_err().contains("empty"));
        assert!(name("id", &"x".repeat(257)).unwrap_err().contains("257"));
        assert!(name("id", &"x".repeat(256)).is_ok());
        assert!(name("id", "a\nb").unwrap_err().contains("control"));
        assert!(name("id", "ünïcode ok").is_ok());
    }

    #[test]
    fn label_keys_follow_prefix_slash_name() {
        for ok in ["a", "A-b_c.d", "x.io/a", "sub.x-y.io/a1", "0"] {
            assert!(label_key(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-a", "a-", "a b", "/a", "a/", "X.io/a", "a..b/c", "a/b/c", &"n".repeat(64)]
        {
            assert!(label_key(bad).is_err(), "{bad}");
        }
    }

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
