//! Structured results ([`FnResult`]) as the KRM Functions Specification
//! defines them: message, severity (default `error`), resource reference,
//! field, file and tags.

use std::collections::BTreeMap;
use std::fmt;

use super::object::Object;
use super::yaml::{Map, Node};

/// How bad a result is. The specification's default is `error`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    /// Information only.
    Info,
    /// Something to look at; the function still succeeds.
    Warning,
    /// The function failed (exit code 1).
    #[default]
    Error,
}

impl Severity {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The object a result is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRef {
    /// `apiVersion`.
    pub api_version: String,
    /// `kind`.
    pub kind: String,
    /// `name` (required by the specification).
    pub name: String,
    /// `namespace`, if any.
    pub namespace: Option<String>,
}

impl ResourceRef {
    /// The reference to `object`, with whatever of it is known.
    pub fn to(object: &Object) -> Self {
        ResourceRef {
            api_version: object.api_version().unwrap_or_default().to_string(),
            kind: object.kind().unwrap_or_default().to_string(),
            name: object.name().unwrap_or_default().to_string(),
            namespace: object.namespace().map(str::to_string),
        }
    }
}

/// The field a result is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Field {
    /// Dotted path, e.g. `spec.ports.0.port`.
    pub path: String,
    /// The current value, if relevant.
    pub current_value: Option<String>,
    /// The proposed value, if relevant.
    pub proposed_value: Option<String>,
}

/// The file a result is about.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileRef {
    /// Slash-delimited path relative to the package.
    pub path: String,
    /// Position of the object in a multi-document file.
    pub index: u64,
}

/// One structured result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FnResult {
    /// What happened.
    pub message: String,
    /// How bad it is.
    pub severity: Severity,
    /// The object it is about.
    pub resource_ref: Option<ResourceRef>,
    /// The field it is about.
    pub field: Option<Field>,
    /// The file it is about.
    pub file: Option<FileRef>,
    /// Free-form tags.
    pub tags: BTreeMap<String, String>,
}

impl FnResult {
    /// A result with a message and a severity.
    pub fn new(severity: Severity, message: impl Into<String>) -> Self {
        FnResult { message: message.into(), severity, ..FnResult::default() }
    }

    /// An `error` result.
    pub fn error(message: impl Into<String>) -> Self {
        FnResult::new(Severity::Error, message)
    }

    /// A `warning` result.
    pub fn warning(message: impl Into<String>) -> Self {
        FnResult::new(Severity::Warning, message)
    }

    /// An `info` result.
    pub fn info(message: impl Into<String>) -> Self {
        FnResult::new(Severity::Info, message)
    }

    /// Points the result at `object` (its reference and, if known, its file).
    pub fn about(mut self, object: &Object) -> Self {
        self.resource_ref = Some(ResourceRef::to(object));
        if let Some((path, index)) = object.file() {
            self.file = Some(FileRef { path, index });
        }
        self
    }

    /// The result as YAML.
    pub fn to_node(&self) -> Node {
        let mut m = Map::new();
        m.insert("message", Node::string(self.message.clone()));
        m.insert("severity", Node::string(self.severity.as_str()));
        if let Some(r) = &self.resource_ref {
            let mut rm = Map::new();
            rm.insert("apiVersion", Node::string(r.api_version.clone()));
            rm.insert("kind", Node::string(r.kind.clone()));
            rm.insert("name", Node::string(r.name.clone()));
            if let Some(ns) = &r.namespace {
                rm.insert("namespace", Node::string(ns.clone()));
            }
            m.insert("resourceRef", Node::Map(rm));
        }
        if let Some(f) = &self.field {
            let mut fm = Map::new();
            fm.insert("path", Node::string(f.path.clone()));
            if let Some(v) = &f.current_value {
                fm.insert("currentValue", Node::string(v.clone()));
            }
            if let Some(v) = &f.proposed_value {
                fm.insert("proposedValue", Node::string(v.clone()));
            }
            m.insert("field", Node::Map(fm));
        }
        if let Some(f) = &self.file {
            let mut fm = Map::new();
            fm.insert("path", Node::string(f.path.clone()));
            fm.insert("index", Node::plain(f.index.to_string()));
            m.insert("file", Node::Map(fm));
        }
        if !self.tags.is_empty() {
            let mut tm = Map::new();
            for (k, v) in &self.tags {
                tm.insert(k, Node::string(v.clone()));
            }
            m.insert("tags", Node::Map(tm));
        }
        Node::Map(m)
    }

    /// Reads a result leniently (unknown severities count as `error`; the
    /// legacy `resourceRef.metadata.name` is accepted).
    pub fn from_node(node: &Node) -> Self {
        let s = |n: Option<&Node>| n.and_then(Node::as_str).map(str::to_string);
        let severity = match node.get("severity").and_then(Node::as_str) {
            Some("info") => Severity::Info,
            Some("warning") => Severity::Warning,
            _ => Severity::Error,
        };
        let resource_ref = node.get("resourceRef").map(|r| ResourceRef {
            api_version: s(r.get("apiVersion")).unwrap_or_default(),
            kind: s(r.get("kind")).unwrap_or_default(),
            name: s(r.get("name")).or_else(|| s(r.path(&["metadata", "name"]))).unwrap_or_default(),
            namespace: s(r.get("namespace")),
        });
        let field = node.get("field").map(|f| Field {
            path: s(f.get("path")).unwrap_or_default(),
            current_value: s(f.get("currentValue")),
            proposed_value: s(f.get("proposedValue")),
        });
        let file = node.get("file").map(|f| FileRef {
            path: s(f.get("path")).unwrap_or_default(),
            index: f.get("index").and_then(Node::as_str).and_then(|i| i.parse().ok()).unwrap_or(0),
        });
        let tags = node
            .get("tags")
            .and_then(Node::as_map)
            .map(|t| {
                t.entries()
                    .iter()
                    .filter_map(|(k, v)| Some((k.value().to_string(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        FnResult {
            message: s(node.get("message")).unwrap_or_default(),
            severity,
            resource_ref,
            field,
            file,
            tags,
        }
    }
}

impl fmt::Display for FnResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.severity, self.message)?;
        if let Some(r) = &self.resource_ref {
            write!(f, " ({} {} {})", r.api_version, r.kind, r.name)?;
        }
        if let Some(file) = &self.file {
            write!(f, " in {} #{}", file.path, file.index)?;
        }
        Ok(())
    }
}

/// Exit code for a set of results: 1 if any is an `error`, else 0.
pub fn exit_code(results: &[FnResult]) -> i32 {
    i32::from(results.iter().any(|r| r.severity == Severity::Error))
}
