//! The rules on names and keys, as plain checks on strings: the reason a
//! value is bad, if it is. [`validate`](super::validate) applies them to
//! resources (as [`Error::InvalidInput`](crate::Error::InvalidInput)); kinds
//! check theirs when they are made.

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

/// Whether `p` is a DNS subdomain (RFC 1123: lowercase letters, digits,
/// `-` and `.`, labels that start and end alphanumeric, at most 253), or why not.
pub(crate) fn dns_subdomain(p: &str) -> Result<(), &'static str> {
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

/// The reason a namespace and type are bad, if they are.
pub(crate) fn kind_parts(namespace: &str, resource_type: &str) -> Result<(), String> {
    name("namespace", namespace).and_then(|()| name("type", resource_type))
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
}
