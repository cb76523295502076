//! Where resources live in etcd: keys and values.
//!
//! A resource is stored at `/<prefix>/<namespace>/<type>/<id>` in plain text,
//! so one namespace, one kind or the whole state is one key range and ranges
//! come back sorted. Each part is escaped (`%` and `/` as `%25` and `%2F`), so
//! no namespace, type or id can reach into another's range. Claims of
//! exclusive outputs live beside the resources, at `/<prefix>~owners/<type>`:
//! outside the resource range, so the change feed never sees them.
//!
//! The value is the resource as JSON (metadata and spec, the same shape as a
//! [`DynamicResource`]); its mod revision is etcd's, not stored in the value.
//! The metadata carries the incarnation's [`uid`](crate::resource::Metadata::uid);
//! a value written by a build before uids has none and is decoded as such:
//! the state gives it the uid derived from its address and creation time
//! (the same in every process) when it loads or is fed the value.

use crate::Error;
use crate::StorageFailure;
use crate::resource::pointer::{escape_part, unescape_part as unescape};
use crate::resource::{AnyResource, DynamicResource, Kind, Pointer};

/// The keys of one state (one prefix).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Keys {
    /// `/<prefix>/`: every resource key starts with it.
    root: String,
    /// `/<prefix>~owners/`: every claim key starts with it.
    owners: String,
    /// `/<prefix>~shards/`: every member and shard key starts with it.
    shards: String,
}

/// Escapes one key part as a pointer's display does (`%` and `/` only:
/// validation already refuses control characters), so keys stay readable in
/// `etcdctl get --prefix`.
fn escape(part: &str, out: &mut String) {
    // Writing to a String cannot fail.
    let _ = escape_part(part, out);
}

impl Keys {
    /// The keys under `prefix` (leading and trailing slashes ignored).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty prefix or one with `~`.
    pub(crate) fn new(prefix: &str) -> Result<Keys, Error> {
        let trimmed = prefix.trim_matches('/');
        if trimmed.is_empty() || trimmed.contains('~') || trimmed.chars().any(char::is_control) {
            return Err(Error::InvalidInput {
                resource: format!("etcd prefix {prefix:?}"),
                reason: "a prefix is a non-empty path without `~` or control characters".into(),
            });
        }
        Ok(Keys {
            root: format!("/{trimmed}/"),
            owners: format!("/{trimmed}~owners/"),
            shards: format!("/{trimmed}~shards/"),
        })
    }

    /// The range of every resource: a prefix.
    pub(crate) fn range(&self) -> &str {
        &self.root
    }

    /// The range of the resources of `resource_type` in `namespace`: a prefix.
    pub(crate) fn kind_range(&self, namespace: &str, resource_type: &str) -> String {
        let mut key = self.root.clone();
        escape(namespace, &mut key);
        key.push('/');
        escape(resource_type, &mut key);
        key.push('/');
        key
    }

    /// The key of the resource at `ptr`.
    pub(crate) fn resource(&self, ptr: &Pointer) -> String {
        let mut key = String::with_capacity(
            self.root.len()
                + ptr.namespace().len()
                + ptr.resource_type().len()
                + ptr.id().len()
                + 2,
        );
        key.push_str(&self.root);
        escape(ptr.namespace(), &mut key);
        key.push('/');
        escape(ptr.resource_type(), &mut key);
        key.push('/');
        escape(ptr.id(), &mut key);
        key
    }

    /// The address a resource key names, `None` for a key that is not one.
    pub(crate) fn pointer(&self, key: &[u8]) -> Option<Pointer> {
        let key = std::str::from_utf8(key).ok()?.strip_prefix(&self.root)?;
        let mut parts = key.split('/');
        let (ns, ty, id) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() {
            return None;
        }
        let kind = Kind::new(unescape(ns)?, unescape(ty)?);
        Some(Pointer::from_parts(kind, unescape(id)?.into()))
    }

    /// The range of a sharded controller's members and shard keys:
    /// `/<prefix>~shards/<controller>/`; members under `m/`, shards under `s/`.
    pub(crate) fn shard_range(&self, controller: &str) -> String {
        let mut key = self.shards.clone();
        escape(controller, &mut key);
        key.push('/');
        key
    }

    /// The claim key of an exclusive output type.
    pub(crate) fn claim(&self, resource_type: &str) -> String {
        let mut key = self.owners.clone();
        escape(resource_type, &mut key);
        key
    }
}

/// The value stored for `res`.
pub(crate) fn encode(res: &AnyResource) -> Result<Vec<u8>, Error> {
    let mut value = Vec::with_capacity(256);
    res.write_json(&mut value)?;
    Ok(value)
}

/// The resource stored at `ptr` as `value`, at etcd mod revision `revision`.
///
/// # Errors
/// [`Error::Storage`] ([`StorageFailure::Corrupt`]) if the value is not a
/// resource, or a resource at another address.
pub(crate) fn decode(ptr: &Pointer, value: &[u8], revision: u64) -> Result<AnyResource, Error> {
    let corrupt = |why: String| Error::Storage {
        resource: ptr.to_string(),
        failure: StorageFailure::Corrupt,
        reason: why,
    };
    let dynamic: DynamicResource =
        serde_json::from_slice(value).map_err(|e| corrupt(format!("not a resource: {e}")))?;
    let mut res = dynamic.into_any();
    if res.pointer() != ptr {
        return Err(corrupt(format!("the value holds {}", res.pointer())));
    }
    res.metadata_mut().set_revision(revision);
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Resource;
    use crate::resource::test_specs::Num;

    #[test]
    fn keys_are_plain_text_under_the_prefix() {
        let keys = Keys::new("/cosi/").unwrap();
        let ptr = Pointer::new("net", "Links.net", "eth0");
        assert_eq!(keys.resource(&ptr), "/cosi/net/Links.net/eth0");
        assert_eq!(keys.pointer(keys.resource(&ptr).as_bytes()), Some(ptr));
        assert_eq!(keys.claim("Links.net"), "/cosi~owners/Links.net");
        assert!(!keys.claim("x").starts_with(keys.range()), "claims are outside the feed");
    }

    #[test]
    fn no_part_reaches_into_another_range() {
        let keys = Keys::new("cosi").unwrap();
        let sneaky = Pointer::new("a/b", "T", "x/y%2F");
        let key = keys.resource(&sneaky);
        assert_eq!(key, "/cosi/a%2Fb/T/x%2Fy%252F");
        assert!(!key.starts_with("/cosi/a/"));
        assert_eq!(keys.pointer(key.as_bytes()), Some(sneaky));
    }

    #[test]
    fn foreign_keys_are_not_resources() {
        let keys = Keys::new("cosi").unwrap();
        assert_eq!(keys.pointer(b"/cosi/a/b"), None);
        assert_eq!(keys.pointer(b"/cosi/a/b/c/d"), None);
        assert_eq!(keys.pointer(b"/other/a/b/c"), None);
        assert_eq!(keys.pointer(b"/cosi/a/b/%zz"), None);
        assert_eq!(keys.pointer(&[0xff, 0xfe]), None);
    }

    #[test]
    fn bad_prefixes_are_refused() {
        for bad in ["", "/", "a~b", "a\nb"] {
            assert!(Keys::new(bad).unwrap_err().is_invalid_input(), "{bad:?}");
        }
    }

    #[test]
    fn values_round_trip_and_take_the_revision() {
        let res = Resource::new("ns", "a", Num(7)).into_any();
        let ptr = res.pointer().clone();
        let back = decode(&ptr, &encode(&res).unwrap(), 42).unwrap();
        assert_eq!(back.metadata().revision(), 42);
        assert_eq!(back.typed::<Num>().unwrap().spec(), &Num(7));
        let other = Pointer::new("ns", ptr.resource_type(), "b");
        assert!(decode(&other, &encode(&res).unwrap(), 1).unwrap_err().is_storage());
        assert!(decode(&ptr, b"garbage", 1).unwrap_err().is_storage());
    }
}
