//! [`ResourceList`]: the wire format between kpt and a function.

use super::error::KrmError;
use super::object::Object;
use super::results::{FnResult, exit_code};
use super::yaml::{self, Node};

/// The current `ResourceList` API version.
pub const API_VERSION: &str = "config.kubernetes.io/v1";
/// The older API version, still accepted on input.
pub const API_VERSION_V1BETA1: &str = "config.kubernetes.io/v1beta1";

/// A `ResourceList`: items, an optional function config and results.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceList {
    /// The API version read (written back as is); [`API_VERSION`] for new lists.
    pub api_version: String,
    /// The KRM objects.
    pub items: Vec<Object>,
    /// The function's configuration, if any.
    pub function_config: Option<Object>,
    /// Results: those read from the input, then those added.
    pub results: Vec<FnResult>,
}

impl Default for ResourceList {
    fn default() -> Self {
        ResourceList::new(Vec::new())
    }
}

impl ResourceList {
    /// A `config.kubernetes.io/v1` list of `items`.
    pub fn new(items: Vec<Object>) -> Self {
        ResourceList {
            api_version: API_VERSION.into(),
            items,
            function_config: None,
            results: Vec::new(),
        }
    }

    /// Parses a `ResourceList` from bytes. Empty input (or only comments and
    /// blanks) is an empty list.
    ///
    /// # Errors
    /// [`KrmError::NotUtf8`], [`KrmError::Yaml`] (names the line),
    /// [`KrmError::NotResourceList`] for anything else than one ResourceList
    /// document of an accepted version whose `items` is a sequence.
    pub fn parse_bytes(input: &[u8]) -> Result<Self, KrmError> {
        let text = std::str::from_utf8(input)
            .map_err(|e| KrmError::NotUtf8 { offset: e.valid_up_to() })?;
        ResourceList::parse(text)
    }

    /// Parses a `ResourceList` from text; see [`parse_bytes`](Self::parse_bytes).
    ///
    /// # Errors
    /// As [`parse_bytes`](Self::parse_bytes).
    pub fn parse(text: &str) -> Result<Self, KrmError> {
        let mut docs = yaml::parse_documents(text)?;
        let not = |reason: &str| KrmError::NotResourceList { reason: reason.to_string() };
        let root = match docs.len() {
            0 => return Ok(ResourceList::default()),
            1 => docs.remove(0),
            n => return Err(not(&format!("expected one document, found {n}"))),
        };
        if matches!(&root, Node::Scalar(s) if s.value().is_empty()) {
            return Ok(ResourceList::default());
        }
        let Node::Map(mut map) = root else { return Err(not("the document is not a mapping")) };
        match map.get("kind").and_then(Node::as_str) {
            Some("ResourceList") => {}
            Some(other) => return Err(not(&format!("kind is {other:?}"))),
            None => return Err(not("kind is missing")),
        }
        let api_version = match map.get("apiVersion").and_then(Node::as_str) {
            Some(v @ (API_VERSION | API_VERSION_V1BETA1)) => v.to_string(),
            Some(other) => return Err(not(&format!("apiVersion {other:?} is not {API_VERSION}"))),
            None => return Err(not("apiVersion is missing")),
        };
        let items = match map.remove("items") {
            None => Vec::new(),
            Some(Node::Seq(items)) => items.into_iter().map(Object::from_node).collect(),
            Some(Node::Scalar(s)) if s.to_json().is_null() => Vec::new(),
            Some(_) => return Err(not("items is not a sequence")),
        };
        let function_config = match map.remove("functionConfig") {
            None => None,
            Some(Node::Scalar(s)) if s.to_json().is_null() => None,
            Some(node @ Node::Map(_)) => Some(Object::from_node(node)),
            Some(_) => return Err(not("functionConfig is not a mapping")),
        };
        let results = match map.remove("results") {
            Some(Node::Seq(rs)) => rs.iter().map(FnResult::from_node).collect(),
            // The legacy `results: {items: [...]}` wrapper.
            Some(Node::Map(m)) => m
                .get("items")
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .map(FnResult::from_node)
                .collect(),
            _ => Vec::new(),
        };
        Ok(ResourceList { api_version, items, function_config, results })
    }

    /// The list as one YAML document. `items` comes last: a comment at the
    /// end of the last item's document is then at the end of the text, where
    /// kpt puts it in the list it sends; followed by another key, kyaml would
    /// read it as another node's and kpt, restoring the input's comments,
    /// would write it twice.
    pub fn to_yaml(&self) -> String {
        let mut out = String::new();
        yaml::emit_entry("apiVersion", &Node::string(self.api_version.clone()), &mut out);
        out.push_str("kind: ResourceList\n");
        if let Some(fc) = &self.function_config {
            yaml::emit_entry("functionConfig", fc.node(), &mut out);
        }
        if !self.results.is_empty() {
            let results = Node::Seq(self.results.iter().map(FnResult::to_node).collect());
            yaml::emit_entry("results", &results, &mut out);
        }
        yaml::emit_seq_entry("items", self.items.iter().map(Object::node), &mut out);
        out
    }

    /// 1 if any result is an `error`, else 0.
    pub fn exit_code(&self) -> i32 {
        exit_code(&self.results)
    }

    /// The Kptfile, if the package has one.
    pub fn kptfile(&self) -> Option<&Object> {
        self.items.iter().find(|o| {
            o.kind() == Some("Kptfile")
                && o.api_version().is_some_and(|v| v.starts_with("kpt.dev/"))
        })
    }

    /// Position of the Kptfile in `items`.
    pub fn kptfile_index(&self) -> Option<usize> {
        self.items.iter().position(|o| {
            o.kind() == Some("Kptfile")
                && o.api_version().is_some_and(|v| v.starts_with("kpt.dev/"))
        })
    }
}
