//! [`Object`]: one KRM object (a YAML mapping with `apiVersion`, `kind`,
//! `metadata`), and [`Gvk`], its group/version/kind.

use std::fmt;
use std::sync::Arc;

use super::yaml::{Map, Node};

/// The annotation kpt uses for an item's file, relative to the package.
pub const PATH_ANNOTATION: &str = "internal.config.kubernetes.io/path";
/// The annotation kpt uses for an item's position in its file.
pub const INDEX_ANNOTATION: &str = "internal.config.kubernetes.io/index";
/// The annotation kpt uses to restore comments and field order after a function.
pub const ID_ANNOTATION: &str = "internal.config.kubernetes.io/id";
/// Legacy form of [`PATH_ANNOTATION`].
pub const LEGACY_PATH_ANNOTATION: &str = "config.kubernetes.io/path";
/// Legacy form of [`INDEX_ANNOTATION`].
pub const LEGACY_INDEX_ANNOTATION: &str = "config.kubernetes.io/index";
/// Legacy form of [`ID_ANNOTATION`].
pub const LEGACY_ID_ANNOTATION: &str = "config.k8s.io/id";

/// Every annotation kpt uses to place an item in the package.
pub const FILE_ANNOTATIONS: [&str; 6] = [
    PATH_ANNOTATION,
    INDEX_ANNOTATION,
    ID_ANNOTATION,
    LEGACY_PATH_ANNOTATION,
    LEGACY_INDEX_ANNOTATION,
    LEGACY_ID_ANNOTATION,
];

/// An API version and kind, e.g. `example.com/v1` `Cluster`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvk {
    /// `group/version`, or just `version` for the core group (`v1`).
    pub api_version: String,
    /// The kind.
    pub kind: String,
}

impl Gvk {
    /// A GVK from its parts.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> Self {
        Gvk { api_version: api_version.into(), kind: kind.into() }
    }

    /// The `kpt.dev/v1` `Kptfile` GVK.
    pub fn kptfile() -> Self {
        Gvk::new("kpt.dev/v1", "Kptfile")
    }

    /// `<apiVersion>.<Kind>`: the prefix of owner values and condition types.
    pub fn reference(&self) -> String {
        dotted(&[&self.api_version, &self.kind])
    }

    /// `<apiVersion>.<Kind>.<name>`: an owner value or condition type.
    pub fn reference_to(&self, name: &str) -> String {
        dotted(&[&self.api_version, &self.kind, name])
    }

    /// The name in `reference` if it is `<apiVersion>.<Kind>.<name>` of this GVK.
    /// Names may contain dots: matching is by this GVK's prefix.
    pub fn name_in<'a>(&self, reference: &'a str) -> Option<&'a str> {
        let rest = reference.strip_prefix(&self.api_version)?.strip_prefix('.')?;
        let name = rest.strip_prefix(&self.kind)?.strip_prefix('.')?;
        (!name.is_empty()).then_some(name)
    }
}

/// The parts joined by dots, in one allocation: references are built for
/// every item in every function run, and `format!` goes through the
/// formatting machinery for each.
pub(crate) fn dotted(parts: &[&str]) -> String {
    let mut out = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            out.push('.');
        }
        out.push_str(part);
    }
    out
}

/// An object's identity, borrowed from it (see [`Object::identity`]).
pub(crate) type IdentityRef<'a> = (&'a str, &'a str, &'a str, &'a str);

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version, self.kind)
    }
}

/// One KRM object. Any YAML node can be wrapped; validation
/// ([`validate_items`](super::validate::validate_items)) checks the shape.
///
/// The node is shared, copied on the first change ([`node_mut`](Self::node_mut)):
/// a render hands every function copies of the package's objects and keeps
/// the originals to compare and to restore comments from, and most objects
/// a function reads it leaves alone, so deep copies and drops of untouched
/// objects would be a large part of an in-process render.
#[derive(Clone, Debug)]
pub struct Object {
    node: Arc<Node>,
}

impl PartialEq for Object {
    fn eq(&self, other: &Object) -> bool {
        // A node equals itself (no NaN-like values: scalars compare as text).
        Arc::ptr_eq(&self.node, &other.node) || *self.node == *other.node
    }
}

impl Object {
    /// A new object with `apiVersion`, `kind` and `metadata.name`.
    pub fn new(gvk: &Gvk, name: &str) -> Self {
        let mut metadata = Map::new();
        metadata.insert("name", Node::string(name));
        let mut map = Map::new();
        map.insert("apiVersion", Node::string(gvk.api_version.clone()));
        map.insert("kind", Node::string(gvk.kind.clone()));
        map.insert("metadata", Node::Map(metadata));
        Object::from_node(Node::Map(map))
    }

    /// Wraps a node.
    pub fn from_node(node: Node) -> Self {
        Object { node: Arc::new(node) }
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The node, for changing (copied first if another object shares it).
    pub fn node_mut(&mut self) -> &mut Node {
        Arc::make_mut(&mut self.node)
    }

    /// Unwraps the node (copied if another object shares it).
    pub fn into_node(self) -> Node {
        Arc::unwrap_or_clone(self.node)
    }

    /// Whether both objects share one node (then they are equal, comments
    /// included), which a render checks before comparing field by field.
    pub(crate) fn shares_node(&self, other: &Object) -> bool {
        Arc::ptr_eq(&self.node, &other.node)
    }

    /// A top-level string field.
    fn field(&self, key: &str) -> Option<&str> {
        self.node.get(key)?.as_str()
    }

    /// `apiVersion`.
    pub fn api_version(&self) -> Option<&str> {
        self.field("apiVersion")
    }

    /// `kind`.
    pub fn kind(&self) -> Option<&str> {
        self.field("kind")
    }

    /// `metadata.name`.
    pub fn name(&self) -> Option<&str> {
        self.node.path(&["metadata", "name"])?.as_str()
    }

    /// `metadata.namespace`, if set and non-empty.
    pub fn namespace(&self) -> Option<&str> {
        self.node.path(&["metadata", "namespace"])?.as_str().filter(|n| !n.is_empty())
    }

    /// The GVK, if `apiVersion` and `kind` are set.
    pub fn gvk(&self) -> Option<Gvk> {
        Some(Gvk::new(self.api_version()?, self.kind()?))
    }

    /// Whether this object is of `gvk`.
    pub fn is(&self, gvk: &Gvk) -> bool {
        self.api_version() == Some(gvk.api_version.as_str())
            && self.kind() == Some(gvk.kind.as_str())
    }

    /// `<apiVersion>.<Kind>.<name>`.
    pub fn reference(&self) -> Option<String> {
        Some(dotted(&[self.api_version()?, self.kind()?, self.name()?]))
    }

    /// The identity used for duplicates: (apiVersion, kind, namespace, name).
    pub fn identity(&self) -> Option<(String, String, String, String)> {
        Some((
            self.api_version()?.to_string(),
            self.kind()?.to_string(),
            self.namespace().unwrap_or_default().to_string(),
            self.name()?.to_string(),
        ))
    }

    /// [`identity`](Self::identity) without copying: for the maps a function
    /// run keys by identity (one entry per item, every run).
    pub(crate) fn identity_ref(&self) -> Option<IdentityRef<'_>> {
        Some((
            self.api_version()?,
            self.kind()?,
            self.namespace().unwrap_or_default(),
            self.name()?,
        ))
    }

    /// The value at a path of mapping keys, as a string scalar.
    pub fn get_str(&self, path: &[&str]) -> Option<&str> {
        self.node.path(path)?.as_str()
    }

    /// An annotation.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.node.path(&["metadata", "annotations", key])?.as_str()
    }

    /// Sets an annotation (a string, quoted when needed). Does nothing if
    /// `metadata` is not a mapping.
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        if self.annotation(key) == Some(value) {
            return;
        }
        if let Some(annotations) = self.node_mut().map_at(&["metadata", "annotations"]) {
            annotations.insert(key, Node::string(value));
        }
    }

    /// Removes an annotation; drops an `annotations` mapping left empty.
    /// Returns whether it was there.
    pub fn remove_annotation(&mut self, key: &str) -> bool {
        // Nothing to do (no such key, no empty mapping to drop): the shared
        // node is not copied.
        let annotations = self.node.get("metadata").and_then(|m| m.get("annotations"));
        match annotations.map(|a| a.as_map().map(|a| (a.get(key).is_some(), a.is_empty()))) {
            None | Some(None) | Some(Some((false, false))) => return false,
            Some(Some(_)) => {}
        }
        let Some(metadata) = self.node_mut().get_mut_map("metadata") else { return false };
        let Some(annotations) = metadata.get_mut("annotations").and_then(Node::as_map_mut) else {
            return false;
        };
        let removed = annotations.remove(key).is_some();
        if annotations.is_empty() {
            metadata.remove("annotations");
        }
        removed
    }

    /// The file this object came from: path and index, from the internal
    /// annotations or, failing those, the legacy ones.
    pub fn file(&self) -> Option<(String, u64)> {
        let path =
            self.annotation(PATH_ANNOTATION).or_else(|| self.annotation(LEGACY_PATH_ANNOTATION))?;
        let index = self
            .annotation(INDEX_ANNOTATION)
            .or_else(|| self.annotation(LEGACY_INDEX_ANNOTATION))
            .and_then(|i| i.parse().ok())
            .unwrap_or(0);
        Some((path.to_string(), index))
    }
}

impl Object {
    /// Updates this object from `desired`: every top-level field but
    /// `apiVersion`, `kind`, `metadata` and `status` becomes desired's (fields
    /// with the same value keep their text; fields desired lacks are removed),
    /// and desired's labels and annotations are set, keeping every other piece
    /// of metadata (foreign annotations, kpt's path/index/id). Returns whether
    /// anything changed.
    pub fn update_from(&mut self, desired: &Object) -> bool {
        const KEEP: [&str; 4] = ["apiVersion", "kind", "metadata", "status"];
        // Every change is looked for on the shared node first: an object
        // already as desired (a function's second run) is not copied.
        let Some(want) = desired.node().as_map() else { return false };
        if self.node.as_map().is_none() {
            return false;
        }
        let mut changed = false;
        for (key, value) in want.entries() {
            let key = key.value();
            if KEEP.contains(&key) {
                continue;
            }
            if !self.node.get(key).is_some_and(|v| v.same_value(value)) {
                if let Some(have) = self.node_mut().as_map_mut() {
                    have.insert(key, value.clone());
                }
                changed = true;
            }
        }
        let kept = |k: &str| KEEP.contains(&k) || want.get(k).is_some();
        let stale = self
            .node
            .as_map()
            .is_some_and(|have| have.entries().iter().any(|(k, _)| !kept(k.value())));
        if stale && let Some(have) = self.node_mut().as_map_mut() {
            have.retain(|k, _| kept(k));
            changed = true;
        }
        for section in ["labels", "annotations"] {
            let Some(entries) = desired.node().path(&["metadata", section]).and_then(Node::as_map)
            else {
                continue;
            };
            for (key, value) in entries.entries() {
                let current = self.node.path(&["metadata", section, key.value()]);
                if current.is_some_and(|c| c.same_value(value)) {
                    continue;
                }
                if let Some(target) = self.node_mut().map_at(&["metadata", section]) {
                    target.insert(key.value(), value.clone());
                    changed = true;
                }
            }
        }
        changed
    }
}

impl Node {
    /// The mapping under `key` of a mapping, for changing.
    pub fn get_mut_map(&mut self, key: &str) -> Option<&mut Map> {
        self.as_map_mut()?.get_mut(key)?.as_map_mut()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_match_by_gvk_prefix_so_names_may_hold_dots() {
        let cm = Gvk::new("v1", "ConfigMap");
        assert_eq!(cm.reference_to("a.b"), "v1.ConfigMap.a.b");
        assert_eq!(cm.name_in("v1.ConfigMap.a.b"), Some("a.b"));
        assert_eq!(cm.name_in("v1.ConfigMapX.a"), None);
        let c = Gvk::new("example.com/v1", "Cluster");
        assert_eq!(c.name_in("example.com/v1.Cluster.edge.1"), Some("edge.1"));
        assert_eq!(c.name_in("example.com/v1.Cluster."), None);
    }

    #[test]
    fn annotations_are_set_and_removed() {
        let mut o = Object::new(&Gvk::new("v1", "ConfigMap"), "x");
        o.set_annotation("a", "on");
        assert_eq!(o.annotation("a"), Some("on"));
        assert!(o.remove_annotation("a"));
        assert!(o.node().path(&["metadata", "annotations"]).is_none());
    }
}
