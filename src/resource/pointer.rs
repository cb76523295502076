//! Addresses of resources: [`Kind`] (namespace + type) and [`Pointer`] (kind + id).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Spec;

const KIND_CACHE_LIMIT: usize = 4096;

const RECENT_OF_LIMIT: usize = 8;

thread_local! {
    /// The kinds [`Kind::of`] returned last on this thread, with their spec type.
    static RECENT_OF: std::cell::RefCell<Vec<(std::any::TypeId, Kind)>> =
        const { std::cell::RefCell::new(Vec::new()) };

    /// Kinds made on this thread, by hash (see [`Kind::new`]).
    static KINDS: std::cell::RefCell<std::collections::HashMap<u64, Kind, KindHashing>> =
        std::cell::RefCell::new(std::collections::HashMap::default());
}

/// The (namespace, type) pair that a collection of resources shares.
///
/// A `Kind` is cheap to clone (one reference count): the state interns one
/// `Kind` per collection and every stored resource points at it.
///
/// ```
/// use cosi_runtime::resource::Kind;
///
/// let kind = Kind::new("network", "Links.net.cosi.dev");
/// assert_eq!(kind.namespace(), "network");
/// assert_eq!(kind.resource_type(), "Links.net.cosi.dev");
/// assert_eq!(kind.to_string(), "network/Links.net.cosi.dev");
/// ```
#[derive(Clone)]
pub struct Kind(Arc<KindInner>);

struct KindInner {
    /// Hash of (namespace, type), computed once: kinds are hashed on every
    /// state operation. Seeded per process ([`crate::hashing`]): a client
    /// can name kinds (the Kubernetes API's paths).
    hash: u64,
    namespace: Box<str>,
    resource_type: Box<str>,
    /// Whether namespace and type pass [`validate::kind`](super::validate::kind),
    /// found when the kind is made: every state operation validates its
    /// kind, and kinds are made far less often (they are interned).
    valid: bool,
}

impl KindInner {
    fn key(&self) -> (&str, &str) {
        (&self.namespace, &self.resource_type)
    }
}

impl Kind {
    /// A kind from a namespace and a resource type.
    ///
    /// Nothing is validated here; the state rejects bad names with
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    ///
    /// Kinds are interned per thread (a bounded cache), so making the same kind
    /// again costs a hash and a lookup, not three allocations, and equal kinds
    /// usually share one allocation.
    pub fn new(namespace: impl AsRef<str>, resource_type: impl AsRef<str>) -> Self {
        let (ns, ty) = (namespace.as_ref(), resource_type.as_ref());
        let hash = crate::hashing::kept(&(ns, ty));
        let make = || {
            Kind(Arc::new(KindInner {
                hash,
                namespace: ns.into(),
                resource_type: ty.into(),
                valid: super::names::kind_parts(ns, ty).is_ok(),
            }))
        };
        KINDS
            .try_with(|cache| {
                let mut cache = cache.borrow_mut();
                if let Some(k) = cache.get(&hash).filter(|k| k.0.key() == (ns, ty)) {
                    return k.clone();
                }
                let k = make();
                if cache.len() >= KIND_CACHE_LIMIT {
                    cache.clear();
                }
                cache.insert(hash, k.clone());
                k
            })
            .unwrap_or_else(|_| make())
    }

    /// The kind of spec type `S` in `namespace`.
    ///
    /// ```
    /// # use cosi_runtime::resource::{Kind, Spec};
    /// # #[derive(Clone, Debug, PartialEq, Default, serde::Serialize, serde::Deserialize)]
    /// # struct Hostname(String);
    /// # impl Spec for Hostname { const TYPE: &'static str = "Hostnames.net.cosi.dev"; }
    /// let kind = Kind::of::<Hostname>("network");
    /// assert_eq!(kind.resource_type(), Hostname::TYPE);
    /// ```
    pub fn of<S: Spec>(namespace: impl AsRef<str>) -> Self {
        let ns = namespace.as_ref();
        let id = std::any::TypeId::of::<S>();
        // The kinds of the spec types used last on this thread, found by
        // type and namespace without hashing either (a reconcile names the
        // kind of its output on every call).
        RECENT_OF
            .try_with(|recent| {
                let mut recent = recent.borrow_mut();
                if let Some((_, k)) = recent.iter().find(|(t, k)| *t == id && k.namespace() == ns) {
                    return k.clone();
                }
                let k = Kind::new(ns, S::TYPE);
                if recent.len() == RECENT_OF_LIMIT {
                    recent.remove(0);
                }
                recent.push((id, k.clone()));
                k
            })
            .unwrap_or_else(|_| Kind::new(ns, S::TYPE))
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.0.namespace
    }

    /// The resource type.
    pub fn resource_type(&self) -> &str {
        &self.0.resource_type
    }

    /// The pointer to resource `id` of this kind.
    pub fn pointer(&self, id: impl Into<Id>) -> Pointer {
        Pointer { kind: self.clone(), id: id.into() }
    }

    /// Whether namespace and type pass validation (checked when made).
    pub(crate) fn is_valid(&self) -> bool {
        self.0.valid
    }

    /// Whether both handles share one allocation (used by the state to intern kinds).
    pub(crate) fn same_allocation(&self, other: &Kind) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
            || (self.0.hash == other.0.hash && self.0.key() == other.0.key())
    }
}

impl Eq for Kind {}

impl Hash for Kind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_u64(self.0.hash);
    }
}

impl PartialOrd for Kind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key().cmp(&other.0.key())
    }
}

/// Writes one part of an address with `%` and `/` escaped (`%25`, `%2F`), so
/// that a displayed kind or pointer always splits back into its parts.
pub(crate) fn escape_part(part: &str, out: &mut impl fmt::Write) -> fmt::Result {
    if !part.contains(['%', '/']) {
        return out.write_str(part);
    }
    for c in part.chars() {
        match c {
            '%' => out.write_str("%25")?,
            '/' => out.write_str("%2F")?,
            c => out.write_char(c)?,
        }
    }
    Ok(())
}

/// The part [`escape_part`] wrote; `None` for an unknown escape.
pub(crate) fn unescape_part(part: &str) -> Option<String> {
    let mut out = String::with_capacity(part.len());
    let mut rest = part;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        match rest.get(at..at + 3)? {
            "%25" => out.push('%'),
            "%2F" => out.push('/'),
            _ => return None,
        }
        rest = &rest[at + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// `namespace/type`, each part escaped: parses back with [`str::parse`].
impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        escape_part(self.namespace(), f)?;
        f.write_str("/")?;
        escape_part(self.resource_type(), f)
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kind({self})")
    }
}

/// The id of a resource inside its [`Kind`]: an immutable, cheaply cloned string.
///
/// Ids of up to 23 bytes (almost all) are stored inline: cloning, hashing and
/// comparing them touch no other memory and no reference count (ids are
/// cloned, hashed and compared on every state operation). Longer ids are
/// shared (one reference count). Ordered like `str` (byte-wise).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(smol_str::SmolStr);

impl Id {
    /// An id from a string.
    pub fn new(id: impl Into<Id>) -> Self {
        id.into()
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Borrow<str> for Id {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Id {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id(smol_str::SmolStr::new(s))
    }
}

impl From<&String> for Id {
    fn from(s: &String) -> Self {
        Id(smol_str::SmolStr::new(s))
    }
}

impl From<&Id> for Id {
    fn from(id: &Id) -> Self {
        id.clone()
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id(smol_str::SmolStr::from(s))
    }
}

/// The address of one resource: namespace, type and id.
///
/// ```
/// use cosi_runtime::resource::Pointer;
///
/// let ptr = Pointer::new("network", "Links.net.cosi.dev", "eth0");
/// assert_eq!(ptr.id(), "eth0");
/// assert_eq!(ptr.to_string(), "network/Links.net.cosi.dev/eth0");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pointer {
    kind: Kind,
    id: Id,
}

impl Pointer {
    /// A pointer from its three parts.
    ///
    /// Nothing is validated here; the state rejects bad names with
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(
        namespace: impl AsRef<str>,
        resource_type: impl AsRef<str>,
        id: impl Into<Id>,
    ) -> Self {
        Kind::new(namespace, resource_type).pointer(id)
    }

    /// A pointer from a kind and an id.
    pub fn from_parts(kind: Kind, id: Id) -> Self {
        Pointer { kind, id }
    }

    /// The kind (namespace and type).
    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        self.kind.namespace()
    }

    /// The resource type.
    pub fn resource_type(&self) -> &str {
        self.kind.resource_type()
    }

    /// The id.
    pub fn id(&self) -> &str {
        self.id.as_str()
    }

    /// The id as a shared [`Id`].
    pub fn id_shared(&self) -> &Id {
        &self.id
    }

    pub(crate) fn set_kind(&mut self, kind: Kind) {
        debug_assert!(kind == self.kind);
        self.kind = kind;
    }
}

/// `namespace/type/id`, each part escaped (`%` and `/` as `%25` and `%2F`),
/// so that any pointer displays unambiguously and parses back with
/// [`str::parse`]:
///
/// ```
/// use cosi_runtime::resource::Pointer;
///
/// let odd = Pointer::new("net", "Routes.net.cosi.dev", "10.0.0.0/8");
/// assert_eq!(odd.to_string(), "net/Routes.net.cosi.dev/10.0.0.0%2F8");
/// assert_eq!(odd.to_string().parse::<Pointer>().unwrap(), odd);
/// ```
impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/", self.kind)?;
        escape_part(self.id(), f)
    }
}

impl fmt::Debug for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pointer({self})")
    }
}

/// A [`BuildHasher`](std::hash::BuildHasher) for maps keyed by [`Kind`]: a
/// kind's hash is computed once, so the map only passes it through.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct KindHashing;

/// The hasher of [`KindHashing`].
#[derive(Default)]
pub(crate) struct PassThrough(u64);

impl Hasher for PassThrough {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // Only reached for keys other than `Kind`; fold them in anyway.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 ^= n;
    }
}

impl std::hash::BuildHasher for KindHashing {
    type Hasher = PassThrough;

    fn build_hasher(&self) -> PassThrough {
        PassThrough(0)
    }
}

/// A map keyed by [`Kind`] that hashes each kind once, at its creation.
pub(crate) type KindMap<V> = hashbrown::HashMap<Kind, V, KindHashing>;

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn kinds_compare_by_value_not_allocation() {
        let a = Kind::new("ns", "T");
        let b = Kind(Arc::new(KindInner {
            hash: a.0.hash,
            namespace: "ns".into(),
            resource_type: "T".into(),
            valid: true,
        }));
        assert_eq!(a, b);
        assert!(!a.same_allocation(&b));
        assert!(a.same_allocation(&Kind::new(String::from("ns"), "T")), "interned");
        let set: HashSet<Kind> = [a.clone(), b].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_ne!(a, Kind::new("ns", "U"));
        let mut map = KindMap::default();
        map.insert(Kind::new("ns", "T"), 1);
        assert_eq!(map.get(&Kind::new("ns", "T")), Some(&1));
        assert_eq!(map.get(&Kind::new("ns", "U")), None);
    }

    #[test]
    fn id_order_is_str_order() {
        let ids = [
            "",
            "a",
            "ab",
            "abcdefgh",
            "abcdefghi",
            "abcdefgi",
            "b",
            "r0000010",
            "r0000009",
            "é",
            "z\u{0}",
        ];
        for x in ids {
            for y in ids {
                assert_eq!(Id::from(x).cmp(&Id::from(y)), x.cmp(y), "{x:?} vs {y:?}");
            }
        }
    }

    #[test]
    fn pointers_order_by_kind_then_id() {
        let mut v = [
            Pointer::new("b", "T", "1"),
            Pointer::new("a", "T", "2"),
            Pointer::new("a", "T", "10"),
        ];
        v.sort();
        let ids: Vec<String> = v.iter().map(ToString::to_string).collect();
        assert_eq!(ids, ["a/T/10", "a/T/2", "b/T/1"]);
    }
}
