//! Addresses of resources: [`Kind`] (namespace + type) and [`Pointer`] (kind + id).

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::Spec;

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

#[derive(PartialEq, Eq, Hash, PartialOrd, Ord)]
struct KindInner {
    namespace: Box<str>,
    resource_type: Box<str>,
}

impl Kind {
    /// A kind from a namespace and a resource type.
    ///
    /// Nothing is validated here; the state rejects bad names with
    /// [`Error::InvalidInput`](crate::Error::InvalidInput).
    pub fn new(namespace: impl Into<String>, resource_type: impl Into<String>) -> Self {
        Kind(Arc::new(KindInner {
            namespace: namespace.into().into_boxed_str(),
            resource_type: resource_type.into().into_boxed_str(),
        }))
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
    pub fn of<S: Spec>(namespace: impl Into<String>) -> Self {
        Kind::new(namespace, S::TYPE)
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
    pub fn pointer(&self, id: impl Into<String>) -> Pointer {
        Pointer { kind: self.clone(), id: Id::new(id) }
    }

    /// Whether both handles share one allocation (used by the state to intern kinds).
    pub(crate) fn same_allocation(&self, other: &Kind) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl PartialEq for Kind {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.0 == other.0
    }
}

impl Eq for Kind {}

impl Hash for Kind {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.hash(state);
    }
}

impl PartialOrd for Kind {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Kind {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.cmp(&other.0)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace(), self.resource_type())
    }
}

impl fmt::Debug for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kind({self})")
    }
}

/// The id of a resource inside its [`Kind`]: an immutable, cheaply cloned string.
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Id(Arc<str>);

impl Id {
    /// An id from a string.
    pub fn new(id: impl Into<String>) -> Self {
        Id(Arc::from(id.into()))
    }

    /// The id as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Id {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Id {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Self {
        Id(Arc::from(s))
    }
}

impl From<String> for Id {
    fn from(s: String) -> Self {
        Id(Arc::from(s))
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
        namespace: impl Into<String>,
        resource_type: impl Into<String>,
        id: impl Into<String>,
    ) -> Self {
        Kind::new(namespace, resource_type).pointer(id)
    }

    /// The pointer to resource `id` of spec type `S` in `namespace`.
    pub fn of<S: Spec>(namespace: impl Into<String>, id: impl Into<String>) -> Self {
        Kind::of::<S>(namespace).pointer(id)
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

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.kind, self.id)
    }
}

impl fmt::Debug for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pointer({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn kinds_compare_by_value_not_allocation() {
        let a = Kind::new("ns", "T");
        let b = Kind::new("ns", "T");
        assert_eq!(a, b);
        assert!(!a.same_allocation(&b));
        let set: HashSet<Kind> = [a.clone(), b].into_iter().collect();
        assert_eq!(set.len(), 1);
        assert_ne!(a, Kind::new("ns", "U"));
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
