//! The YAML fidelity layer: a document tree that remembers how every scalar
//! was written, and an emitter that writes it back the same way.
//!
//! Why not a serde YAML crate: `serde_yaml` is archived, `serde_yml` is unsound
//! (RUSTSEC-2025-0068), and every serde-based crate measured in the research
//! note changes scalars on a round trip (`0640` becomes `'0640'` or `640`,
//! a quoted `"on"` becomes a plain `on`, `1.10` becomes `1.1`). A function that
//! passes other people's objects through must not change them. So the parse
//! goes through [`saphyr-parser`](https://docs.rs/saphyr-parser) (pure Rust, no
//! transpiled C, YAML 1.2, spans with line numbers, MSRV 1.85, maintained by the
//! saphyr-rs organisation) at the event level, and this module keeps each
//! scalar's source text, style and tag in a [`Node`]. The emitter writes plain
//! scalars verbatim, re-escapes quoted ones, writes block scalars as literal
//! blocks, and quotes **new** strings ([`Style::Auto`]) that YAML 1.1 or 1.2
//! would read as a bool, null or number.
//!
//! Escapes in double-quoted scalars are normalised (`"\u00e9"` is written
//! `"é"`; the value and the quoting are the same); flow collections stay
//! flow (`[a, b]`, `{k: v}`), each on one line.
//!
//! Typed access goes through [`serde_json::Value`] ([`Node::to_json`],
//! [`Node::from_json`]). Anchors are not kept (aliases are expanded).
//!
//! # Comments
//! Comments are kept ([`Comments`], on the node they belong to) and written
//! back where they were: **head** comments (whole lines above a mapping
//! entry, a sequence item or a document), **line** comments (after a value on
//! its line, or after `key:` when the value is a block) and **foot** comments
//! (whole lines after a block collection's last entry, or at the end of a
//! document). saphyr-parser does not report comments, so they are found in
//! the source text by position. A file in kpt's style (block style, 2-space
//! indentation, comments aligned with what they describe, no blank lines)
//! reads back byte for byte. What is not kept, as with kpt: blank lines, the
//! spacing before a line comment (always one space), the indentation of a
//! comment that is not aligned (it takes its node's), and comments inside a
//! flow collection (`[a, # x` ...), which is written on one line; an empty
//! document's comments are all written as whole lines. Comments are never
//! part of a node's value: nodes that differ only in their comments are
//! equal.
//!
//! ```
//! use cosi_runtime::krm::yaml::{parse_documents, emit_documents};
//!
//! let text = "# why: the group reads it\nmode: 0640\nflag: \"on\" # quoted\nversion: '1.10'\n";
//! let docs = parse_documents(text)?;
//! assert_eq!(emit_documents(&docs), text);
//! # Ok::<(), cosi_runtime::krm::yaml::YamlError>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};

mod comments;

/// A YAML syntax error, with the (1-based) line and column where it was found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("YAML error at line {line}, column {column}: {message}")]
pub struct YamlError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// How a scalar is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    /// Plain (unquoted), written back verbatim.
    Plain,
    /// `'single quoted'`.
    SingleQuoted,
    /// `"double quoted"`.
    DoubleQuoted,
    /// A `|` literal block.
    Literal,
    /// A `>` folded block (written back as a literal block with the same value).
    Folded,
    /// A new string built in Rust: written plain when that reads back as the
    /// same string under YAML 1.1 and 1.2, double-quoted otherwise.
    Auto,
}

/// The comments attached to a node (see [the module docs](self#comments)).
///
/// Comments are not part of a node's value: two nodes that differ only in
/// their comments are equal (`==` always holds between two `Comments`, and
/// they hash to nothing), so a function that only moves a comment does not
/// change an object.
#[derive(Clone, Debug, Default)]
pub struct Comments {
    /// Whole-line comments above the node (above a mapping entry's key, a
    /// sequence item's `-`, or a document), one per line, each as written
    /// from its `#` (e.g. `# why this value`).
    pub head: Vec<String>,
    /// The comment at the end of the node's line (`key: value # this`), as
    /// written from its `#`. On a mapping key it is the comment after `key:`
    /// when the value is a block collection or a block scalar.
    pub line: Option<String>,
    /// Whole-line comments after a block collection's last entry (or, on a
    /// document's root, at the end of the document).
    pub foot: Vec<String>,
}

impl Comments {
    /// Whether there are no comments.
    pub fn is_empty(&self) -> bool {
        self.head.is_empty() && self.line.is_none() && self.foot.is_empty()
    }

    /// Fills each part that is empty here from `other` (kpt's rule when it
    /// copies comments from a function's input to its output).
    pub fn fill_from(&mut self, other: &Comments) {
        if self.head.is_empty() {
            self.head.clone_from(&other.head);
        }
        if self.line.is_none() {
            self.line.clone_from(&other.line);
        }
        if self.foot.is_empty() {
            self.foot.clone_from(&other.foot);
        }
    }
}

impl PartialEq for Comments {
    fn eq(&self, _: &Comments) -> bool {
        true
    }
}

impl Eq for Comments {}

impl std::hash::Hash for Comments {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

static NO_COMMENTS: Comments = Comments { head: Vec::new(), line: None, foot: Vec::new() };

/// A node's comments, boxed: most nodes have none, and a node stays small.
/// Never part of equality or hashing.
#[derive(Clone, Debug, Default)]
struct Attached(Option<Box<Comments>>);

impl Attached {
    fn get(&self) -> &Comments {
        self.0.as_deref().unwrap_or(&NO_COMMENTS)
    }

    fn get_mut(&mut self) -> &mut Comments {
        self.0.get_or_insert_default()
    }
}

impl PartialEq for Attached {
    fn eq(&self, _: &Attached) -> bool {
        true
    }
}

impl Eq for Attached {}

impl std::hash::Hash for Attached {
    fn hash<H: std::hash::Hasher>(&self, _: &mut H) {}
}

/// A scalar: its value (after unescaping), its style and its tag (and its
/// comments, which are not part of its value).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Scalar {
    value: String,
    style: Style,
    tag: Option<String>,
    comments: Attached,
}

impl Scalar {
    /// A scalar from its parts (`tag` in its written form, e.g. `!!str`).
    pub fn new(value: impl Into<String>, style: Style, tag: Option<String>) -> Self {
        Scalar { value: value.into(), style, tag, comments: Attached::default() }
    }

    /// Its comments (on a mapping key: the entry's).
    pub fn comments(&self) -> &Comments {
        self.comments.get()
    }

    /// Its comments, for changing.
    pub fn comments_mut(&mut self) -> &mut Comments {
        self.comments.get_mut()
    }

    /// The value, unescaped.
    pub fn value(&self) -> &str {
        &self.value
    }

    /// The style it is written in.
    pub fn style(&self) -> Style {
        self.style
    }

    /// The tag, as written (`!!str`, `!custom`), if any.
    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    /// Whether YAML reads this scalar as a string (quoted, block, `!!str`, or a
    /// plain scalar that is not a null, bool or number).
    pub fn is_string(&self) -> bool {
        matches!(self.to_json(), serde_json::Value::String(_))
    }

    /// The value this scalar denotes under the YAML 1.2 core schema.
    pub fn to_json(&self) -> serde_json::Value {
        use serde_json::Value;
        match self.tag.as_deref() {
            Some("!!str") => return Value::String(self.value.clone()),
            Some("!!null") => return Value::Null,
            _ => {}
        }
        if self.style != Style::Plain || self.tag.is_some() {
            return Value::String(self.value.clone());
        }
        resolve_plain(&self.value)
    }
}

fn resolve_plain(v: &str) -> serde_json::Value {
    use serde_json::Value;
    match v {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        _ => {}
    }
    let digits = v.strip_prefix(['-', '+']).unwrap_or(v);
    if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
        if let Ok(i) = v.parse::<i64>() {
            return Value::from(i);
        }
        if let Ok(u) = v.parse::<u64>() {
            return Value::from(u);
        }
        // Too large for JSON integers: keep the text.
        return Value::String(v.to_string());
    }
    if let Some(hex) = v.strip_prefix("0x")
        && let Ok(i) = i64::from_str_radix(hex, 16)
    {
        return Value::from(i);
    }
    if let Some(oct) = v.strip_prefix("0o")
        && let Ok(i) = i64::from_str_radix(oct, 8)
    {
        return Value::from(i);
    }
    let looks_float = digits.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && digits
            .bytes()
            .all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'-' | b'+'))
        && digits.bytes().any(|b| b.is_ascii_digit());
    if looks_float
        && let Ok(f) = v.parse::<f64>()
        && let Some(n) = serde_json::Number::from_f64(f)
    {
        return Value::Number(n);
    }
    Value::String(v.to_string())
}

/// A mapping: entries in source order, keys are scalars. An entry's
/// comments live on its key ([`Scalar::comments`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Map {
    entries: Vec<(Scalar, Node)>,
    flow: bool,
    comments: Attached,
}

impl Map {
    /// An empty mapping.
    pub fn new() -> Self {
        Map::default()
    }

    /// Whether it is written in flow style (`{a: 1}`), as it was read.
    pub fn is_flow(&self) -> bool {
        self.flow
    }

    /// Chooses flow (`{a: 1}`) or block style.
    pub fn set_flow(&mut self, flow: bool) {
        self.flow = flow;
    }

    /// The entries in order.
    pub fn entries(&self) -> &[(Scalar, Node)] {
        &self.entries
    }

    /// The entries in order, for changing (keys too: their comments).
    pub fn entries_mut(&mut self) -> &mut [(Scalar, Node)] {
        &mut self.entries
    }

    /// The key of `key`'s entry (which holds the entry's comments), for changing.
    pub fn key_mut(&mut self, key: &str) -> Option<&mut Scalar> {
        self.entries.iter_mut().find(|(k, _)| k.value == key).map(|(k, _)| k)
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The value under `key`.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entries.iter().find(|(k, _)| k.value == key).map(|(_, v)| v)
    }

    /// The value under `key`, for changing.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        self.entries.iter_mut().find(|(k, _)| k.value == key).map(|(_, v)| v)
    }

    /// Sets `key` to `value`: in place (keeping the key as written) when it
    /// exists, appended otherwise.
    pub fn insert(&mut self, key: &str, value: Node) {
        match self.get_mut(key) {
            Some(slot) => *slot = value,
            None => self.entries.push((Scalar::new(key, Style::Auto, None), value)),
        }
    }

    /// Removes `key`, returning its value.
    pub fn remove(&mut self, key: &str) -> Option<Node> {
        let i = self.entries.iter().position(|(k, _)| k.value == key)?;
        Some(self.entries.remove(i).1)
    }

    /// Keeps only the entries for which `keep` returns true.
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &Node) -> bool) {
        self.entries.retain(|(k, v)| keep(&k.value, v));
    }
}

/// A sequence: its items, and whether it is written in flow style.
/// Dereferences to its `Vec` of items.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Seq {
    items: Vec<Node>,
    flow: bool,
    comments: Attached,
}

impl Seq {
    /// An empty block sequence.
    pub fn new() -> Self {
        Seq::default()
    }

    /// Whether it is written in flow style (`[a, b]`), as it was read.
    pub fn is_flow(&self) -> bool {
        self.flow
    }

    /// Chooses flow (`[a, b]`) or block style.
    pub fn set_flow(&mut self, flow: bool) {
        self.flow = flow;
    }
}

impl std::ops::Deref for Seq {
    type Target = Vec<Node>;

    fn deref(&self) -> &Vec<Node> {
        &self.items
    }
}

impl std::ops::DerefMut for Seq {
    fn deref_mut(&mut self) -> &mut Vec<Node> {
        &mut self.items
    }
}

impl From<Vec<Node>> for Seq {
    fn from(items: Vec<Node>) -> Self {
        Seq { items, flow: false, comments: Attached::default() }
    }
}

impl FromIterator<Node> for Seq {
    fn from_iter<I: IntoIterator<Item = Node>>(iter: I) -> Self {
        Seq { items: iter.into_iter().collect(), flow: false, comments: Attached::default() }
    }
}

impl IntoIterator for Seq {
    type Item = Node;
    type IntoIter = std::vec::IntoIter<Node>;

    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

/// A YAML node.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    /// A scalar.
    Scalar(Scalar),
    /// A sequence.
    Seq(Seq),
    /// A mapping.
    Map(Map),
}

impl Node {
    /// A new string, quoted on output if YAML would read it as something else.
    pub fn string(value: impl Into<String>) -> Node {
        Node::Scalar(Scalar::new(value, Style::Auto, None))
    }

    /// A plain scalar written exactly as `text` (a number, `true`, `null`...).
    pub fn plain(text: impl Into<String>) -> Node {
        Node::Scalar(Scalar::new(text, Style::Plain, None))
    }

    /// An empty mapping.
    pub fn map() -> Node {
        Node::Map(Map::new())
    }

    /// The mapping, if this is one.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The mapping, for changing, if this is one.
    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match self {
            Node::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The sequence, if this is one.
    pub fn as_seq(&self) -> Option<&[Node]> {
        match self {
            Node::Seq(s) => Some(s),
            _ => None,
        }
    }

    /// The scalar's value, if this is a scalar.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Node::Scalar(s) => Some(&s.value),
            _ => None,
        }
    }

    /// The node under `key` of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.get(key)
    }

    /// The node at a path of mapping keys.
    pub fn path(&self, keys: &[&str]) -> Option<&Node> {
        keys.iter().try_fold(self, |node, key| node.get(key))
    }

    /// The mapping at a path of keys, created (empty) where missing or null;
    /// `None` if something on the way is another scalar or a sequence.
    pub fn map_at(&mut self, keys: &[&str]) -> Option<&mut Map> {
        let mut node = self;
        for key in keys {
            let map = node.as_map_mut()?;
            let missing = match map.get(key) {
                None => true,
                Some(Node::Scalar(s)) => s.to_json().is_null(),
                Some(_) => false,
            };
            if missing {
                map.insert(key, Node::map());
            }
            node = map.get_mut(key)?;
        }
        node.as_map_mut()
    }

    /// The value this node denotes, as JSON (mapping keys by their value).
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            Node::Scalar(s) => s.to_json(),
            Node::Seq(items) => serde_json::Value::Array(items.iter().map(Node::to_json).collect()),
            Node::Map(m) => serde_json::Value::Object(
                m.entries.iter().map(|(k, v)| (k.value.clone(), v.to_json())).collect(),
            ),
        }
    }

    /// A node from a JSON value; strings become [`Style::Auto`] scalars.
    pub fn from_json(value: &serde_json::Value) -> Node {
        use serde_json::Value;
        match value {
            Value::Null => Node::plain("null"),
            Value::Bool(b) => Node::plain(b.to_string()),
            Value::Number(n) => Node::plain(n.to_string()),
            Value::String(s) => Node::string(s.clone()),
            Value::Array(items) => Node::Seq(items.iter().map(Node::from_json).collect()),
            Value::Object(o) => Node::Map(Map {
                entries: o
                    .iter()
                    .map(|(k, v)| (Scalar::new(k.clone(), Style::Auto, None), Node::from_json(v)))
                    .collect(),
                flow: false,
                comments: Attached::default(),
            }),
        }
    }

    /// The node's comments: a sequence item's or a document's head and line
    /// comments, a value's line comment, a block collection's foot.
    pub fn comments(&self) -> &Comments {
        match self {
            Node::Scalar(s) => s.comments.get(),
            Node::Seq(s) => s.comments.get(),
            Node::Map(m) => m.comments.get(),
        }
    }

    /// The node's comments, for changing.
    pub fn comments_mut(&mut self) -> &mut Comments {
        match self {
            Node::Scalar(s) => s.comments.get_mut(),
            Node::Seq(s) => s.comments.get_mut(),
            Node::Map(m) => m.comments.get_mut(),
        }
    }

    /// Whether two nodes denote the same value (style and key text ignored).
    pub fn same_value(&self, other: &Node) -> bool {
        // Equal nodes (same text, style and tags) convert to equal values:
        // no conversion (an allocation per node) for the usual unchanged field.
        self == other || self.to_json() == other.to_json()
    }

    fn depth(&self) -> usize {
        match self {
            Node::Scalar(_) => 0,
            Node::Seq(s) => 1 + s.iter().map(Node::depth).max().unwrap_or(0),
            Node::Map(m) => 1 + m.entries.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
        }
    }

    fn size(&self) -> usize {
        match self {
            Node::Scalar(_) => 1,
            Node::Seq(s) => 1 + s.iter().map(Node::size).sum::<usize>(),
            Node::Map(m) => 1 + m.entries.iter().map(|(_, v)| 1 + v.size()).sum::<usize>(),
        }
    }
}

/// Copies comments from `from` to `to`, field by field by path, where `to`
/// has none (kpt's rule after a function ran: an object it rebuilt or a
/// value it replaced gets the input's comments back). Mapping entries match
/// by key; sequence items by their `name` when both are mappings with one,
/// otherwise by index (scalars only when their values are equal). A field
/// `to` no longer has takes its comments with it.
pub fn copy_comments(from: &Node, to: &mut Node) {
    to.comments_mut_if(from.comments());
    match (from, to) {
        (Node::Map(from), Node::Map(to)) => {
            // `from`'s keys are unique (the parser refuses duplicates): the
            // entry at the same place when the order was kept, else a scan
            // of a small map or a lookup in an index of a large one (a scan
            // per key of a large map was quadratic).
            let mut index: Option<HashMap<&str, usize>> = None;
            for (i, (key, value)) in to.entries.iter_mut().enumerate() {
                let at = match from.entries.get(i) {
                    Some((k, _)) if k.value == key.value => Some(i),
                    _ if from.entries.len() <= SCAN => {
                        from.entries.iter().position(|(k, _)| k.value == key.value)
                    }
                    _ => index
                        .get_or_insert_with(|| {
                            first_positions(&from.entries, |(k, _)| Some(k.value.as_str()))
                        })
                        .get(key.value.as_str())
                        .copied(),
                };
                let Some((from_key, from_value)) = at.map(|at| &from.entries[at]) else {
                    continue;
                };
                if !from_key.comments().is_empty() {
                    key.comments_mut().fill_from(from_key.comments());
                }
                copy_comments(from_value, value);
            }
        }
        (Node::Seq(from), Node::Seq(to)) => {
            fn name(n: &Node) -> Option<&str> {
                n.get("name").and_then(Node::as_str)
            }
            // The first item of each name, indexed once for a long sequence.
            let mut index: Option<HashMap<&str, usize>> = None;
            for (i, item) in to.items.iter_mut().enumerate() {
                let source = match name(item) {
                    Some(want) if from.items.len() <= SCAN => {
                        from.items.iter().find(|f| name(f) == Some(want))
                    }
                    Some(want) => index
                        .get_or_insert_with(|| first_positions(&from.items, name))
                        .get(want)
                        .map(|&at| &from.items[at]),
                    None => from.items.get(i),
                };
                match (source, &*item) {
                    (Some(Node::Scalar(a)), Node::Scalar(b)) if a.value != b.value => {}
                    (Some(source), _) => copy_comments(source, item),
                    (None, _) => {}
                }
            }
        }
        _ => {}
    }
}

/// Up to how many entries [`copy_comments`] scans a mapping or sequence for
/// a match; past it, it indexes them.
const SCAN: usize = 16;

/// The position of the first of `items` with each key (`None`: no key).
fn first_positions<'a, T>(
    items: &'a [T],
    key: impl Fn(&'a T) -> Option<&'a str>,
) -> HashMap<&'a str, usize> {
    let mut positions = HashMap::with_capacity(items.len());
    for (at, item) in items.iter().enumerate() {
        if let Some(k) = key(item) {
            positions.entry(k).or_insert(at);
        }
    }
    positions
}

/// Whether two nodes of the same shape (equal, `==`) carry the same comments.
pub(crate) fn same_comments(a: &Node, b: &Node) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    let same =
        |x: &Comments, y: &Comments| x.head == y.head && x.line == y.line && x.foot == y.foot;
    if !same(a.comments(), b.comments()) {
        return false;
    }
    match (a, b) {
        (Node::Map(a), Node::Map(b)) => {
            a.entries.len() == b.entries.len()
                && a.entries.iter().zip(&b.entries).all(|((ka, va), (kb, vb))| {
                    same(ka.comments(), kb.comments()) && same_comments(va, vb)
                })
        }
        (Node::Seq(a), Node::Seq(b)) => {
            a.items.len() == b.items.len()
                && a.items.iter().zip(&b.items).all(|(x, y)| same_comments(x, y))
        }
        _ => true,
    }
}

impl Node {
    /// Fills this node's empty comment parts from `from` (allocating only
    /// when there is something to copy).
    fn comments_mut_if(&mut self, from: &Comments) {
        if !from.is_empty() {
            self.comments_mut().fill_from(from);
        }
    }
}

/// Most nodes aliases may expand to in one stream (guards against alias bombs).
pub const ALIAS_BUDGET: usize = 1_000_000;

/// Deepest nesting of sequences and mappings accepted (guards the recursion
/// of the emitter and of [`Node::to_json`]).
pub const MAX_DEPTH: usize = 256;

/// Entries of a mapping past which its keys also go in a set: below, the
/// entries are scanned (most mappings are small, and a set per mapping, with
/// a copy of every key, cost more than the scan); above, duplicates are
/// still found in linear time.
const SEEN_AFTER: usize = 16;

/// Whether `key` is new in `map` (whose keys, past [`SEEN_AFTER`] entries,
/// are also in `seen`); records it in `seen` when there is one.
fn first_key(map: &Map, seen: &mut Option<HashSet<String>>, key: &str) -> bool {
    if seen.is_none() && map.entries.len() < SEEN_AFTER {
        return !map.entries.iter().any(|(k, _)| k.value == key);
    }
    let seen =
        seen.get_or_insert_with(|| map.entries.iter().map(|(k, _)| k.value.clone()).collect());
    seen.insert(key.to_string())
}

enum Frame {
    Seq {
        items: Vec<Node>,
        anchor: usize,
        flow: bool,
    },
    /// `seen`: the keys so far, once the mapping has [`SEEN_AFTER`] entries.
    Map {
        map: Map,
        key: Option<Scalar>,
        seen: Option<HashSet<String>>,
        anchor: usize,
        line: usize,
    },
}

/// A tag as written. The parser hands the tag decoded (`!%3E` is `>`), so
/// every character a tag may not hold as it is goes back percent-encoded:
/// YAML's `ns-tag-char` in a shorthand (`!x`, `!!x`), `ns-uri-char` in a
/// verbatim tag (`!<x>`). Otherwise `!%3Ee` would be written `!>e`, which
/// does not parse.
fn tag_text(tag: &Tag) -> String {
    if tag.handle == "tag:yaml.org,2002:" {
        format!("!!{}", tag_encode(&tag.suffix, false))
    } else if tag.handle == "!" {
        format!("!{}", tag_encode(&tag.suffix, false))
    } else {
        format!("!<{}>", tag_encode(&format!("{}{}", tag.handle, tag.suffix), true))
    }
}

/// `text` with every character outside YAML's URI characters (`verbatim`)
/// or tag characters (a shorthand: no `!` and no flow indicators) as `%XX`.
///
/// A character beyond ASCII is written as the big-endian bytes of its code
/// point, not as its UTF-8: saphyr-parser 0.3 decodes a tag's `%XX` run by
/// concatenating the bytes (`%C7%BE` reads as U+C7BE, not U+01FE), so this
/// is what reads back as the same character. Every such character in a
/// parsed tag came from that decoding, so its bytes always form a run the
/// parser accepts.
fn tag_encode(text: &str, verbatim: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if let Ok(b) = u8::try_from(c) {
            let uri = b.is_ascii_alphanumeric() || b"-#;/?:@&=+$,_.!~*'()[]".contains(&b);
            let shorthand_only = matches!(b, b'!' | b',' | b'[' | b']' | b'{' | b'}');
            if uri && (verbatim || !shorthand_only) {
                out.push(c);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
            continue;
        }
        let code = u32::from(c).to_be_bytes();
        let first = code.iter().position(|&b| b != 0).unwrap_or(3);
        for b in &code[first..] {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn style_of(style: ScalarStyle) -> Style {
    match style {
        ScalarStyle::Plain => Style::Plain,
        ScalarStyle::SingleQuoted => Style::SingleQuoted,
        ScalarStyle::DoubleQuoted => Style::DoubleQuoted,
        ScalarStyle::Literal => Style::Literal,
        ScalarStyle::Folded => Style::Folded,
    }
}

/// Parses a stream of YAML documents. Empty documents (`---` with nothing
/// after it) are kept as a null scalar; a stream of only comments and blanks
/// has no documents.
///
/// # Errors
/// [`YamlError`] naming the line: malformed YAML, duplicate mapping keys,
/// non-scalar mapping keys, unknown aliases, aliases that expand too far.
pub fn parse_documents(text: &str) -> Result<Vec<Node>, YamlError> {
    let mut docs = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut anchors: HashMap<usize, Node> = HashMap::new();
    let mut budget = ALIAS_BUDGET;
    let mut root: Option<Node> = None;
    // Whether a collection's start event is `open` (a flow collection starts
    // there); markers count characters, so non-ASCII text needs byte offsets.
    let positions = comments::Positions::new(text);
    let byte = |m: saphyr_parser::Marker| positions.byte(m, text);
    let opens = |span: saphyr_parser::Span, open: char| {
        text.get(byte(span.start)..byte(span.end)).is_some_and(|s| flow_start(s, open))
    };
    let err = |line: usize, column: usize, message: String| YamlError { line, column, message };
    let mut recorder = comments::Recorder::new(text, &positions);
    for event in Parser::new_from_str(text) {
        let (event, span) = event
            .map_err(|e| err(e.marker().line(), e.marker().col() + 1, e.info().to_string()))?;
        let (line, column) = (span.start.line(), span.start.col() + 1);
        if let Some(recorder) = &mut recorder {
            let in_block_seq = matches!(stack.last(), Some(Frame::Seq { flow: false, .. }));
            let doc = docs.len();
            match &event {
                Event::Scalar(..) | Event::Alias(_) => {
                    let written = match &event {
                        Event::Scalar(_, ScalarStyle::SingleQuoted, ..) => {
                            comments::Written::Quoted('\'')
                        }
                        Event::Scalar(_, ScalarStyle::DoubleQuoted, ..) => {
                            comments::Written::Quoted('"')
                        }
                        Event::Scalar(
                            _,
                            ScalarStyle::Literal | ScalarStyle::Folded,
                            anchor,
                            tag,
                        ) => comments::Written::Block { props: *anchor != 0 || tag.is_some() },
                        _ => comments::Written::Plain,
                    };
                    recorder.leaf(doc, path_of(&stack), span, written, in_block_seq);
                }
                Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() < MAX_DEPTH => {
                    let seq = matches!(event, Event::SequenceStart(..));
                    let flow = opens(span, if seq { '[' } else { '{' });
                    recorder.open(doc, path_of(&stack), span, flow, seq, in_block_seq);
                }
                Event::SequenceEnd | Event::MappingEnd => recorder.close(span),
                Event::DocumentEnd => recorder.doc_end(span.start),
                _ => {}
            }
        }
        let (node, anchor) = match event {
            Event::DocumentStart(_) => {
                root = None;
                continue;
            }
            Event::DocumentEnd => {
                docs.push(root.take().unwrap_or_else(|| Node::plain("")));
                continue;
            }
            Event::SequenceStart(..) | Event::MappingStart(..) if stack.len() >= MAX_DEPTH => {
                return Err(err(line, column, format!("nesting deeper than {MAX_DEPTH} levels")));
            }
            Event::SequenceStart(anchor, _) => {
                stack.push(Frame::Seq { items: Vec::new(), anchor, flow: opens(span, '[') });
                continue;
            }
            Event::MappingStart(anchor, _) => {
                let mut map = Map::new();
                map.flow = opens(span, '{');
                stack.push(Frame::Map { map, key: None, seen: None, anchor, line });
                continue;
            }
            Event::SequenceEnd => match stack.pop() {
                Some(Frame::Seq { items, anchor, flow }) => {
                    (Node::Seq(Seq { items, flow, comments: Attached::default() }), anchor)
                }
                _ => return Err(err(line, column, "unbalanced sequence end".into())),
            },
            Event::MappingEnd => match stack.pop() {
                Some(Frame::Map { map, key: None, anchor, .. }) => (Node::Map(map), anchor),
                Some(Frame::Map { line, .. }) => {
                    return Err(err(line, 1, "mapping key without a value".into()));
                }
                _ => return Err(err(line, column, "unbalanced mapping end".into())),
            },
            Event::Scalar(value, style, anchor, tag) => (
                Node::Scalar(Scalar::new(
                    value.into_owned(),
                    style_of(style),
                    tag.map(|t| tag_text(&t)),
                )),
                anchor,
            ),
            Event::Alias(id) => {
                let Some(node) = anchors.get(&id) else {
                    return Err(err(line, column, format!("unknown alias {id}")));
                };
                if stack.len() + node.depth() > 2 * MAX_DEPTH {
                    return Err(err(
                        line,
                        column,
                        format!("an alias nests deeper than {} levels", 2 * MAX_DEPTH),
                    ));
                }
                let size = node.size();
                if size > budget {
                    return Err(err(line, column, "aliases expand beyond the budget".into()));
                }
                budget -= size;
                (node.clone(), 0)
            }
            Event::StreamStart | Event::StreamEnd | Event::Nothing => continue,
        };
        if anchor != 0 {
            anchors.insert(anchor, node.clone());
        }
        match stack.last_mut() {
            None => root = Some(node),
            Some(Frame::Seq { items, .. }) => items.push(node),
            Some(Frame::Map { map, key, seen, .. }) => match key.take() {
                Some(k) => map.entries.push((k, node)),
                None => match node {
                    Node::Scalar(s) => {
                        if !first_key(map, seen, &s.value) {
                            return Err(err(
                                line,
                                column,
                                format!("duplicated mapping key {:?}", s.value),
                            ));
                        }
                        *key = Some(s);
                    }
                    _ => {
                        return Err(err(line, column, "mapping keys must be scalars".into()));
                    }
                },
            },
        }
    }
    if let Some(recorder) = recorder {
        recorder.attach(&mut docs);
    }
    Ok(docs)
}

/// Whether the text of a collection's start event (`span`) opens a flow
/// collection with `open`: after its properties (anchor, tag), blanks, line
/// breaks and comments, the first thing in it is `open`. The span runs on
/// over what follows the indicator (`[ a` starts with `[ `), and a block
/// collection's holds only its properties.
fn flow_start(span: &str, open: char) -> bool {
    let mut chars = span.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' | '\r' | '\u{feff}' => {}
            '#' => while chars.next_if(|c| !matches!(c, '\n' | '\r')).is_some() {},
            // A verbatim tag (`!<...>`) may hold flow indicators.
            '!' if chars.peek() == Some(&'<') => {
                while chars.next_if(|c| *c != '>').is_some() {}
                chars.next();
            }
            // An anchor or a tag ends at a flow indicator too (`&a[]`).
            '!' | '&' => while chars.next_if(|c| !comments::is_separator(*c)).is_some() {},
            c => return c == open,
        }
    }
    false
}

/// Where the node of the next event goes, from the document's root.
fn path_of(stack: &[Frame]) -> Vec<comments::Step> {
    stack
        .iter()
        .map(|frame| match frame {
            Frame::Seq { items, .. } => comments::Step::Item(items.len()),
            Frame::Map { map, key: Some(_), .. } => comments::Step::Value(map.entries.len()),
            Frame::Map { map, key: None, .. } => comments::Step::Key(map.entries.len()),
        })
        .collect()
}

/// Parses exactly one document (an empty text is a null scalar).
///
/// # Errors
/// [`YamlError`] as [`parse_documents`], or when the text holds several documents.
pub fn parse_document(text: &str) -> Result<Node, YamlError> {
    let mut docs = parse_documents(text)?;
    match docs.len() {
        0 => Ok(Node::plain("")),
        1 => Ok(docs.remove(0)),
        n => Err(YamlError {
            line: 1,
            column: 1,
            message: format!("expected one document, found {n}"),
        }),
    }
}

/// Writes documents separated by `---`, with their comments.
pub fn emit_documents(docs: &[Node]) -> String {
    let mut out = String::new();
    for (i, doc) in docs.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        emit_document(doc, &mut out);
        // A first document that writes as blank lines and comments (an empty
        // scalar) needs its `---`: such a text holds no document at all.
        if i == 0 && out.lines().all(|l| l.trim().is_empty() || l.trim_start().starts_with('#')) {
            out.insert_str(0, "---\n");
        }
    }
    out
}

/// Writes one document (no `---`) onto `out`, with its comments.
pub fn emit_document(doc: &Node, out: &mut String) {
    let comments = doc.comments();
    comment_lines(&comments.head, 0, out);
    let line = comments.line.as_deref();
    match doc {
        Node::Map(m) if m.flow && !m.is_empty() => {
            emit_flow(doc, out);
            line_comment(line, out);
            out.push('\n');
        }
        Node::Seq(s) if s.flow && !s.is_empty() => {
            emit_flow(doc, out);
            line_comment(line, out);
            out.push('\n');
        }
        Node::Map(m) if !m.is_empty() => emit_map(m, 0, false, false, out),
        Node::Seq(s) if !s.is_empty() => emit_seq(s.iter(), &s.comments.get().foot, 0, false, out),
        Node::Map(m) => {
            out.push_str("{}");
            line_comment(line, out);
            out.push('\n');
            comment_lines(&m.comments.get().foot, 0, out);
        }
        Node::Seq(s) => {
            out.push_str("[]");
            line_comment(line, out);
            out.push('\n');
            comment_lines(&s.comments.get().foot, 0, out);
        }
        Node::Scalar(s) if s.style == Style::Plain && s.value.is_empty() && s.tag.is_none() => {
            // An empty document (a null written as nothing): its comments,
            // all of them whole lines (a line comment too: on a line of its
            // own, `#` after blanks is a whole-line comment), else a blank
            // line. Read back, they may come back as head or foot comments;
            // either way they are written the same.
            let foot = &s.comments.get().foot;
            if comments.head.is_empty() && line.is_none() && foot.is_empty() {
                out.push('\n');
            }
            if let Some(line) = line {
                out.push_str(line);
                out.push('\n');
            }
            comment_lines(foot, 0, out);
        }
        Node::Scalar(s) => {
            // A block scalar's lines go indented: at column 0, a line `---`
            // or `...` would end the document.
            emit_scalar(s, 2, line, out);
            out.push('\n');
            comment_lines(&s.comments.get().foot, 0, out);
        }
    }
}

/// Writes a top-level `key: value` entry of a document onto `out`.
pub fn emit_entry(key: &str, value: &Node, out: &mut String) {
    emit_key(&Scalar::new(key, Style::Auto, None), out);
    out.push(':');
    emit_value(value, 0, true, None, out);
}

/// Writes a top-level `key:` whose value is a sequence of `items`, without
/// building the sequence (used for a ResourceList's many items).
pub fn emit_seq_entry<'a>(
    key: &str,
    items: impl ExactSizeIterator<Item = &'a Node>,
    out: &mut String,
) {
    emit_key(&Scalar::new(key, Style::Auto, None), out);
    if items.len() == 0 {
        out.push_str(": []\n");
    } else {
        out.push_str(":\n");
        emit_seq(items, &[], 0, false, out);
    }
}

fn indent(out: &mut String, n: usize) {
    // Whole runs of blanks, not one char at a time (every line of the
    // output is indented).
    const BLANKS: &str = "                                                                ";
    let mut n = n;
    while n > 0 {
        let run = n.min(BLANKS.len());
        out.push_str(&BLANKS[..run]);
        n -= run;
    }
}

/// Whole-line comments, each on its line at `level`.
fn comment_lines(lines: &[String], level: usize, out: &mut String) {
    for line in lines {
        indent(out, level);
        out.push_str(line);
        out.push('\n');
    }
}

/// ` # comment` at the end of a line.
fn line_comment(comment: Option<&str>, out: &mut String) {
    if let Some(comment) = comment {
        out.push(' ');
        out.push_str(comment);
    }
}

/// The head comments written above a sequence item's `-`: the item's, then
/// (a block sequence) those of its first item. A block mapping's first key's
/// go after the `-` ([`emit_seq`]).
fn item_head(item: &Node, out: &mut Vec<String>) {
    out.extend(item.comments().head.iter().cloned());
    if let Node::Seq(s) = item
        && !s.flow
        && let Some(first) = s.items.first()
    {
        item_head(first, out);
    }
}

/// `inline`: the first entry goes on the current line (after `- `);
/// `first_head_written`: the first key's head comments are already written.
fn emit_map(map: &Map, level: usize, inline: bool, first_head_written: bool, out: &mut String) {
    for (i, (key, value)) in map.entries.iter().enumerate() {
        if i > 0 || !inline {
            if i > 0 || !first_head_written {
                comment_lines(&key.comments.get().head, level, out);
            }
            indent(out, level);
        }
        emit_key(key, out);
        out.push(':');
        emit_value(value, level, true, key.comments.get().line.as_deref(), out);
    }
    comment_lines(&map.comments.get().foot, level, out);
}

fn emit_seq<'a>(
    items: impl IntoIterator<Item = &'a Node>,
    foot: &[String],
    level: usize,
    inline: bool,
    out: &mut String,
) {
    let mut head = Vec::new();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 || !inline {
            head.clear();
            item_head(item, &mut head);
            comment_lines(&head, level, out);
            indent(out, level);
        }
        out.push('-');
        let line = item.comments().line.as_deref();
        match item {
            Node::Map(m) if m.flow && !m.is_empty() => {
                out.push(' ');
                emit_flow(item, out);
                line_comment(line, out);
                out.push('\n');
            }
            Node::Seq(s) if s.flow && !s.is_empty() => {
                out.push(' ');
                emit_flow(item, out);
                line_comment(line, out);
                out.push('\n');
            }
            Node::Map(m) if !m.is_empty() => {
                out.push(' ');
                // The first key's head comments go after the `-`, as kyaml
                // writes a document's head comments in a ResourceList's items
                // (`- # head` and the key on the next line).
                match m.entries[0].0.comments().head.split_first() {
                    None => emit_map(m, level + 2, true, false, out),
                    Some((first, rest)) => {
                        out.push_str(first);
                        out.push('\n');
                        comment_lines(rest, level + 2, out);
                        emit_map(m, level + 2, false, true, out);
                    }
                }
            }
            Node::Seq(s) if !s.is_empty() => {
                out.push(' ');
                emit_seq(s.iter(), &s.comments.get().foot, level + 2, true, out);
            }
            other => emit_value(other, level, false, None, out),
        }
    }
    comment_lines(foot, level, out);
}

/// Writes ` value\n` (or a nested block) after a `key:` or `-`, with the
/// value's line comment (or `key_line`, the key's).
fn emit_value(value: &Node, level: usize, in_map: bool, key_line: Option<&str>, out: &mut String) {
    let line = value.comments().line.as_deref().or(key_line);
    match value {
        Node::Map(m) if m.flow && !m.is_empty() => {
            out.push(' ');
            emit_flow(value, out);
            line_comment(line, out);
            out.push('\n');
        }
        Node::Seq(s) if s.flow && !s.is_empty() => {
            out.push(' ');
            emit_flow(value, out);
            line_comment(line, out);
            out.push('\n');
        }
        Node::Scalar(s) if s.style == Style::Plain && s.value.is_empty() && s.tag.is_none() => {
            line_comment(line, out);
            out.push('\n');
        }
        Node::Map(m) if !m.is_empty() => {
            line_comment(line, out);
            out.push('\n');
            emit_map(m, level + 2, false, false, out);
        }
        Node::Seq(s) if !s.is_empty() => {
            line_comment(line, out);
            out.push('\n');
            // Sequences in a mapping are written at the key's indentation (kyaml's
            // compact style); nested sequences one level deeper.
            let at = if in_map { level } else { level + 2 };
            emit_seq(s.iter(), &s.comments.get().foot, at, false, out);
        }
        Node::Map(m) => {
            out.push_str(" {}");
            line_comment(line, out);
            out.push('\n');
            comment_lines(&m.comments.get().foot, level + 2, out);
        }
        Node::Seq(s) => {
            out.push_str(" []");
            line_comment(line, out);
            out.push('\n');
            comment_lines(&s.comments.get().foot, level + 2, out);
        }
        Node::Scalar(s) => {
            out.push(' ');
            emit_scalar(s, level + 2, line, out);
            out.push('\n');
        }
    }
}

/// Writes a collection (and everything in it) in flow style, on one line.
fn emit_flow(node: &Node, out: &mut String) {
    match node {
        Node::Scalar(s) => emit_flow_scalar(s, out),
        Node::Seq(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                emit_flow(item, out);
            }
            out.push(']');
        }
        Node::Map(m) => {
            out.push('{');
            for (i, (key, value)) in m.entries.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                if key.value.is_empty() && key.tag.is_none() {
                    // An empty key (`{: v}`) stays the empty string; `~`
                    // would read back as the key "~".
                    out.push_str("\"\"");
                } else {
                    emit_flow_scalar(key, out);
                }
                out.push_str(": ");
                emit_flow(value, out);
            }
            out.push('}');
        }
    }
}

fn flow_plain_is_safe(v: &str) -> bool {
    plain_is_safe(v)
        && !v.contains([',', '[', ']', '{', '}', ':', '#'])
        // `a -` before `]` or `,`: the parser takes the `-` for the start of
        // another scalar (found by fuzzing).
        && !v.split_whitespace().last().is_some_and(|w| w == "-" || w == "?")
}

fn emit_flow_scalar(s: &Scalar, out: &mut String) {
    if let Some(tag) = &s.tag {
        out.push_str(tag);
        out.push(' ');
    }
    match s.style {
        Style::Plain if flow_plain_is_safe(&s.value) => out.push_str(&s.value),
        Style::Plain if s.value.is_empty() && s.tag.is_none() => out.push('~'),
        Style::Auto if flow_plain_is_safe(&s.value) && !ambiguous_as_string(&s.value) => {
            out.push_str(&s.value)
        }
        Style::SingleQuoted if single_is_safe(&s.value) => single_quoted(&s.value, out),
        _ => double_quoted(&s.value, out),
    }
}

fn emit_key(key: &Scalar, out: &mut String) {
    if let Some(tag) = &key.tag {
        out.push_str(tag);
        out.push(' ');
    }
    match key.style {
        Style::Plain if plain_is_safe(&key.value) => out.push_str(&key.value),
        Style::SingleQuoted if single_is_safe(&key.value) => single_quoted(&key.value, out),
        Style::Auto | Style::Plain
            if plain_is_safe(&key.value) && !ambiguous_as_string(&key.value) =>
        {
            out.push_str(&key.value)
        }
        _ => double_quoted(&key.value, out),
    }
}

/// `content_indent`: where a block scalar's lines go; `comment`: the line
/// comment, after the scalar or after a block scalar's header.
fn emit_scalar(s: &Scalar, content_indent: usize, comment: Option<&str>, out: &mut String) {
    if let Some(tag) = &s.tag {
        out.push_str(tag);
        out.push(' ');
    }
    match s.style {
        Style::Plain if plain_is_safe(&s.value) => out.push_str(&s.value),
        Style::Plain if s.value.is_empty() => {}
        Style::Auto if plain_is_safe(&s.value) && !ambiguous_as_string(&s.value) => {
            out.push_str(&s.value)
        }
        Style::SingleQuoted if single_is_safe(&s.value) => single_quoted(&s.value, out),
        Style::Literal | Style::Folded if literal_is_safe(&s.value) => {
            return literal(&s.value, content_indent, comment, out);
        }
        _ => double_quoted(&s.value, out),
    }
    line_comment(comment, out);
}

fn printable(c: char) -> bool {
    matches!(c, '\u{20}'..='\u{7e}' | '\u{a0}'..='\u{d7ff}' | '\u{e000}'..='\u{fefe}' | '\u{ff00}'..='\u{fffd}' | '\u{10000}'..)
        && c != '\u{2028}'
        && c != '\u{2029}'
}

/// Whether `v` written plain in block context reads back as the same text.
fn plain_is_safe(v: &str) -> bool {
    let bytes = v.as_bytes();
    let Some(&first) = bytes.first() else { return false };
    // Every special character is ASCII: comparing bytes is comparing chars
    // (a multi-byte char has no ASCII byte in it).
    if first == b' ' || v.ends_with(' ') || v.ends_with(':') {
        return false;
    }
    if matches!(
        first,
        b'[' | b']'
            | b'{'
            | b'}'
            | b','
            | b'#'
            | b'&'
            | b'*'
            | b'!'
            | b'|'
            | b'>'
            | b'\''
            | b'"'
            | b'%'
            | b'@'
            | b'`'
    ) {
        return false;
    }
    if matches!(first, b'-' | b'?' | b':') && bytes.get(1).is_none_or(|&c| c == b' ') {
        return false;
    }
    if v.starts_with("---") || v.starts_with("...") {
        return false;
    }
    // `: ` and ` #` need a blank, which most scalars lack; byte pairs, not
    // `str::contains`: its searcher costs more to set up than a short scalar
    // takes to scan. (The emitter calls this for every key and value.)
    all_printable(v)
        && (!bytes.contains(&b' ') || !bytes.windows(2).any(|w| w == b": " || w == b" #"))
}

/// `v.chars().all(printable)`, without decoding chars when `v` is ASCII.
fn all_printable(v: &str) -> bool {
    if v.is_ascii() {
        // A fold with no early exit, which compiles to a wide loop.
        v.bytes().fold(true, |ok, b| ok & (0x20..=0x7e).contains(&b))
    } else {
        v.chars().all(printable)
    }
}

/// Whether a new string written plain could be read (by YAML 1.1 or 1.2) as
/// something other than that string.
pub fn ambiguous_as_string(v: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL", "=",
        "<<",
    ];
    // Text longer than every word (most keys and values) is not compared
    // with each.
    const LONGEST: usize = {
        let (mut i, mut n) = (0, 0);
        while i < WORDS.len() {
            if WORDS[i].len() > n {
                n = WORDS[i].len();
            }
            i += 1;
        }
        n
    };
    if v.is_empty() || (v.len() <= LONGEST && WORDS.contains(&v)) {
        return true;
    }
    let body = v.strip_prefix(['-', '+']).unwrap_or(v);
    if body.eq_ignore_ascii_case(".inf") || body.eq_ignore_ascii_case(".nan") {
        return true;
    }
    // Past the words above, only text that starts like a number can resolve
    // to something else, or look like one: the rest needs no resolving (which
    // allocates), and most keys and values are such text.
    if !body.starts_with(|c: char| c.is_ascii_digit() || c == '.') {
        return false;
    }
    if !resolve_plain(v).is_string() {
        return true;
    }
    // Anything that starts like a number and only holds number-ish characters
    // (decimal, octal `0640`, hex `0x1F`, base 60 `12:30`, `1e3`, `1_000`, `1.10`).
    body.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && body.chars().all(|c| c.is_ascii_hexdigit() || "xXoObB._:+-".contains(c))
}

fn single_is_safe(v: &str) -> bool {
    all_printable(v)
}

fn single_quoted(v: &str, out: &mut String) {
    out.push('\'');
    out.push_str(&v.replace('\'', "''"));
    out.push('\'');
}

fn double_quoted(v: &str, out: &mut String) {
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if printable(c) => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02X}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08X}", c as u32);
            }
        }
    }
    out.push('"');
}

fn literal_is_safe(v: &str) -> bool {
    let body = v.trim_end_matches('\n');
    !body.is_empty()
        && body.chars().all(|c| c == '\n' || printable(c))
        && !body.starts_with([' ', '\n'])
        && body.split('\n').all(|line| !line.is_empty() && !line.ends_with(' '))
}

fn literal(v: &str, content_indent: usize, comment: Option<&str>, out: &mut String) {
    let body = v.trim_end_matches('\n');
    let trailing = v.len() - body.len();
    out.push('|');
    match trailing {
        0 => out.push('-'),
        1 => {}
        _ => out.push('+'),
    }
    line_comment(comment, out);
    for line in body.split('\n') {
        out.push('\n');
        indent(out, content_indent);
        out.push_str(line);
    }
    for _ in 1..trailing {
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(text: &str) -> String {
        emit_documents(&parse_documents(text).unwrap())
    }

    /// Found by fuzzing (fuzz/regressions/yaml/): an empty first document
    /// was written as a blank text, which reads back as no document.
    /// Found by fuzzing (fuzz/regressions/yaml/): a top-level block scalar
    /// holding a line `---` was written at column 0, where it ends the
    /// document; an empty flow key was written `~`, which reads back as "~";
    /// a flow scalar ending in ` -` was written plain, and the parser takes
    /// that `-` before `]` for another scalar.
    #[test]
    fn block_scalar_documents_and_empty_flow_keys_read_back_the_same() {
        for text in [
            "\n>-\n ---\n",
            "|\n  a\n  ...\n  b\n",
            "a: [: b]\n",
            "a: [x, {: [g]}]\n",
            "- [(   -      ]\n",
            "- [( \n-\n ? -\n ]\n",
        ] {
            let docs = parse_documents(text).unwrap();
            let emitted = emit_documents(&docs);
            let back = parse_documents(&emitted).unwrap();
            assert_eq!(back.len(), docs.len(), "{text:?} -> {emitted:?}");
            for (a, b) in docs.iter().zip(&back) {
                assert_eq!(a.to_json(), b.to_json(), "{text:?} -> {emitted:?}");
            }
            assert_eq!(emit_documents(&back), emitted, "{text:?}");
        }
    }

    #[test]
    fn an_empty_first_document_reads_back_as_one() {
        for text in ["---\n", "&a\n", "--- ''\n", "---\n---\na: 1\n"] {
            let docs = parse_documents(text).unwrap();
            let emitted = emit_documents(&docs);
            let back = parse_documents(&emitted).unwrap();
            assert_eq!(back.len(), docs.len(), "{text:?} -> {emitted:?}");
            assert_eq!(emit_documents(&back), emitted, "{text:?}");
        }
    }

    #[test]
    fn scalars_keep_their_text_and_quoting() {
        let text = "a: 0640\nb: \"on\"\nc: '1.10'\nd: no\ne: 0x1F\nf: 123456789012345678901234567890\ng: !!str 12\n";
        assert_eq!(round(text), text);
    }

    #[test]
    fn new_strings_that_look_like_other_types_are_quoted() {
        for v in ["on", "no", "y", "1.10", "0640", "0x1F", "12:30", "1e3", "", "null", "~", ".inf"]
        {
            let mut m = Map::new();
            m.insert("k", Node::string(v));
            let text = emit_documents(&[Node::Map(m)]);
            let back = parse_document(&text).unwrap();
            assert_eq!(
                back.get("k").unwrap().to_json(),
                serde_json::Value::String(v.into()),
                "{v}: {text}"
            );
            assert!(text.contains('"'), "{v} not quoted: {text}");
        }
    }

    #[test]
    fn nulls_and_flow_collections_keep_their_form() {
        let text = "a:\nb: [x, 'y', \"z\", {k: v}]\nc: {k: [1, 2]}\nd:\n- [1]\n- {}\n";
        assert_eq!(round(text), text);
    }

    #[test]
    fn quotes_are_re_escaped() {
        let text = "a: 'it''s'\nb: \"tab\\there \\\"q\\\"\"\n";
        assert_eq!(round(text), text);
    }

    #[test]
    fn literal_blocks_survive() {
        let text = "script: |\n  echo 1\n  echo 2\nkeep: |+\n  x\n\nstrip: |-\n  y\nitems:\n- a\n- b: 1\n  c: []\n";
        assert_eq!(round(text), text);
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_documents("a: 1\nb: [\n").unwrap_err();
        assert!(e.line >= 2, "{e}");
        let e = parse_documents("a: 1\na: 2\n").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowing_the_stack() {
        let text = "- ".repeat(100_000) + "x\n";
        let e = parse_documents(&text).unwrap_err();
        assert!(e.message.contains("nesting"), "{e}");
    }

    /// Found by fuzzing: a percent-encoded tag was written decoded (`!%3Ee`
    /// as `!>e`), which does not parse back.
    #[test]
    fn tags_are_written_percent_encoded_where_they_must_be() {
        for (text, written) in [
            ("!%3ee\n", "!%3Ee \n"),
            ("a: !%7Cx y\n", "a: !%7Cx y\n"),
            ("a: !local%21 y\n", "a: !local%21 y\n"),
            ("a: !!str 1\n", "a: !!str 1\n"),
            // A two-byte run reads as U+C7BE (see tag_encode), written back as it came.
            ("a: !7%c7%bee y\n", "a: !7%C7%BEe y\n"),
            ("a: !<tag:example.com,2000:a%3Eb> y\n", "a: !<tag:example.com,2000:a%3Eb> y\n"),
        ] {
            let docs = parse_documents(text).unwrap();
            let emitted = emit_documents(&docs);
            assert_eq!(emitted, written, "{text:?}");
            let back = parse_documents(&emitted).unwrap();
            assert_eq!(back[0].to_json(), docs[0].to_json(), "{text:?}");
            assert_eq!(emit_documents(&back), emitted, "stable: {text:?}");
        }
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for i in 1..12 {
            let p = i - 1;
            let _ = writeln!(
                text,
                "a{i}: &a{i} [*a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}, *a{p}]"
            );
        }
        assert!(parse_documents(&text).is_err());
    }
}

#[cfg(test)]
mod comment_tests {
    use super::*;

    fn round(text: &str) -> String {
        emit_documents(&parse_documents(text).unwrap())
    }

    /// Emitting what was emitted gives the same text (what the fuzz target checks).
    fn stable(text: &str) -> String {
        let once = round(text);
        let docs = parse_documents(text).unwrap();
        let back = parse_documents(&once).unwrap_or_else(|e| panic!("{text:?} -> {once:?}: {e}"));
        assert_eq!(back.len(), docs.len(), "{text:?} -> {once:?}");
        for (a, b) in docs.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json(), "{text:?} -> {once:?}");
        }
        assert_eq!(round(&once), once, "not stable: {text:?}");
        once
    }

    #[test]
    fn kpt_style_comments_read_back_byte_identical() {
        for text in [
            "# file head\n# second line\napiVersion: v1\nkind: ConfigMap # kind line\nmetadata:\n  name: a\n  # above labels\n  labels:\n    x: y # x line\n    # above z\n    z: w\n    # foot of labels\ndata:\n  k: v\n  list:\n  # above item\n  - a # item line\n  - name: b\n    # inside item\n    v: 1\n  # foot of list\n  s: | # header\n    body\n    # not a comment\n  q: \"a # b\"\n  p: a#b\n  flow: [a, b] # flow line\n# foot of doc\n---\n# doc 2 head\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n# end\n",
            "a: 1\n# between documents\n---\nb: 2\n",
            "a: # after key\n  b: 1\n",
            "a: # after key\n- 1\n- 2 # two\n",
            "spec:\n  containers:\n  # the web server\n  - name: web # its name\n    image: nginx # pinned\n    ports:\n    - 80 # http\n    # foot of ports\n  # foot of containers\n",
            "a: '1' # quoted\nb: \"x\" # double\nc: {k: v} # flow map\nd: [] # empty\ne: # nothing\n",
            "- # head of nothing?\n  a: 1\n",
            "# only a head\nplain\n",
            "x # line of a root scalar\n",
            "[a, b] # root flow\n",
            // kyaml's form of a document's head comment in a ResourceList's items.
            "items:\n- # doc head\n  # second line\n  apiVersion: v1\n  kind: A\n- kind: B\n",
            // And of a document's foot comment, before the next item's head.
            "items:\n- a: 1\n  # foot of a\n- # head of b\n  b: 2\n",
        ] {
            let once = stable(text);
            if !text.starts_with("- #") {
                assert_eq!(once, text);
            }
        }
    }

    #[test]
    fn comments_attach_to_their_nodes() {
        let doc = parse_document(
            "# head\napiVersion: v1 # line\nspec:\n  # above a\n  a: 1\n  # foot of spec\n",
        )
        .unwrap();
        let map = doc.as_map().unwrap();
        let (api, value) = &map.entries()[0];
        assert_eq!(api.comments().head, ["# head"]);
        assert_eq!(value.comments().line.as_deref(), Some("# line"));
        let spec = doc.get("spec").unwrap();
        assert_eq!(spec.as_map().unwrap().entries()[0].0.comments().head, ["# above a"]);
        assert_eq!(spec.comments().foot, ["# foot of spec"]);
        let list = parse_document("items:\n# above\n- # doc head\n  a: 1\n").unwrap();
        let item = &list.get("items").unwrap().as_seq().unwrap()[0];
        assert_eq!(item.comments().head, ["# above"]);
        assert_eq!(item.as_map().unwrap().entries()[0].0.comments().head, ["# doc head"]);
    }

    #[test]
    fn copied_comments_follow_their_field_and_fill_only_what_is_empty() {
        let from = parse_document(
            "# head\nkind: A # kind\nspec:\n  # above n\n  n: 1 # one\n  gone: x # gone\n  items:\n  - name: b # b\n  - name: a # a\n  - s # scalar\n",
        )
        .unwrap();
        // Rebuilt from its value (no comments), fields reordered, one deleted,
        // one added, list items reordered, one comment of its own.
        let mut to = parse_document(
            "spec:\n  items:\n  - name: a\n  - name: b # mine\n  - t\n  added: 1\n  n: 2\nkind: A\n",
        )
        .unwrap();
        copy_comments(&from, &mut to);
        assert_eq!(
            emit_documents(&[to]),
            "spec:\n  items:\n  - name: a # a\n  - name: b # mine\n  - t\n  added: 1\n  # above n\n  n: 2 # one\n# head\nkind: A # kind\n"
        );
    }

    #[test]
    fn copied_comments_find_their_field_in_large_maps_and_named_lists_too() {
        // 40 keys and 40 named items (past the scan limit: indexed), each
        // with its own comment; the output has them reversed, and one name
        // twice in the input (the first one's comment wins, as in a scan).
        let doc = |order: &[usize], commented: bool| {
            let note = |what: &str, k: usize| {
                if commented { format!(" # {what} {k}") } else { String::new() }
            };
            let mut text = String::from("spec:\n");
            for &k in order {
                text.push_str(&format!("  k{k}: {k}{}\n", note("key", k)));
            }
            text.push_str("list:\n");
            for &k in order {
                text.push_str(&format!("- name: n{k}{}\n", note("item", k)));
            }
            text
        };
        let forward: Vec<usize> = (0..40).collect();
        let reversed: Vec<usize> = (0..40).rev().collect();
        let from = parse_document(&(doc(&forward, true) + "- name: n7 # second n7\n")).unwrap();
        let mut to = parse_document(&doc(&reversed, false)).unwrap();
        copy_comments(&from, &mut to);
        let want = doc(&reversed, true);
        assert_eq!(emit_documents(&[to]), want);
    }

    #[test]
    fn comments_do_not_make_nodes_unequal() {
        let a = parse_document("a: 1 # one\n").unwrap();
        let b = parse_document("a: 1\n").unwrap();
        assert_eq!(a, b);
        assert_ne!(emit_documents(&[a]), emit_documents(&[b]));
    }

    #[test]
    fn hashes_inside_scalars_are_not_comments() {
        let text = "a: \"x # y\"\nb: 'x # y'\nc: x#y\nd: |\n  # z\n  w\ne: >-\n  # folded\n";
        let docs = parse_documents(text).unwrap();
        let json = docs[0].to_json();
        assert_eq!(json["a"], "x # y");
        assert_eq!(json["b"], "x # y");
        assert_eq!(json["c"], "x#y");
        assert_eq!(json["d"], "# z\nw\n");
        assert_eq!(json["e"], "# folded");
        let text = emit_documents(&docs);
        assert!(!text.contains(" # y #"), "{text}");
        let back = parse_documents(&text).unwrap();
        assert_eq!(back[0].to_json(), json);
    }

    /// Found by fuzzing (fuzz/regressions/yaml/empty-document-*): an empty
    /// document's line comment (`&a # c`) was written ` # c` on a line of
    /// its own, which reads back as a whole-line comment, and its head and
    /// foot comments were written differently (a blank line after a head),
    /// so the text changed when written again.
    #[test]
    fn an_empty_documents_comments_are_written_as_whole_lines() {
        for (text, written) in [
            ("&a # c\n", "---\n# c\n"),
            ("&a\n# c\n", "---\n# c\n"),
            ("---\n# c\n", "---\n# c\n"),
            ("# h\n--- # l\n# f\n", "---\n# h\n# l\n# f\n"),
            ("a: 1\n--- &x # c\n", "a: 1\n---\n# c\n"),
            ("---\n", "---\n\n"),
        ] {
            assert_eq!(stable(text), written, "{text:?}");
        }
    }

    /// Found by fuzzing (fuzz/regressions/yaml/spaced-flow-*): a flow
    /// collection written with a space after its bracket (`[ a ]`) was
    /// taken for a block one (the start event's span runs on over the
    /// space), so it was written in block style and a comment after it
    /// (`- [ ] # c`) became a foot comment, written on a line of its own.
    #[test]
    fn spaced_flow_collections_stay_flow_and_keep_their_line_comment() {
        for (text, written) in [
            ("- [ ] # c\n", "- [] # c\n"),
            ("a: [ x, y ] # c\n", "a: [x, y] # c\n"),
            ("a: &x { k: v }\n", "a: {k: v}\n"),
            ("a: !!seq\n  [ 1 ]\n", "a: [1]\n"),
            ("a: &x\n- 1\n", "a:\n- 1\n"),
            // An anchor or a tag ends at the bracket (`&a[]`).
            ("- &a[] # c\n", "- [] # c\n"),
            ("&a[!{}] # c\n", "[{}] # c\n"),
            ("a: !<!x> [ 1 ]\n", "a: [1]\n"),
        ] {
            assert_eq!(stable(text), written, "{text:?}");
        }
    }

    /// Found by fuzzing: saphyr-parser counts a reserved directive's
    /// characters in bytes, so after `%é` its markers ran one character
    /// ahead; the line comment after `[]` was then taken for a foot comment
    /// (and a flow collection after such a directive could be read as block).
    #[test]
    fn a_non_ascii_directive_moves_no_comment_and_no_flow_collection() {
        for (text, written) in [
            ("%\u{e9}\n---\n- [] # c\n", "- [] # c\n"),
            ("%\u{1f600} x\u{e9}\n---\n- [] #\n", "- [] #\n"),
            ("%\u{e9}\n---\na: [1] # c\nb: {k: v}\n", "a: [1] # c\nb: {k: v}\n"),
            ("%\u{e9}\n---\n\u{e9}: [x]\n", "\u{e9}: [x]\n"),
        ] {
            assert_eq!(stable(text), written, "{text:?}");
        }
    }

    #[test]
    fn odd_comment_places_are_stable() {
        for text in [
            "---\n# c\n",
            "--- # c\na: 1\n",
            "# c\n---\na: 1\n",
            "a: 1\n...\n# c\n---\nb: 2\n",
            "a: [x, # inside\n  y]\n",
            "a: {k: # inside\n  v} # after\n",
            "a:\n  # before a value\n  b\n",
            "a: |+\n  x\n\n# c\nb: 1\n",
            "- - a # x\n  # c\n- b\n",
            "? a # k\n: b # v\n",
            "a: &x 1 # anchored\nb: *x # alias\n",
            "a: !!str # tagged empty\n",
            "#c\n-\n",
            "a:\n    b: 1\n  # under-indented\n",
            "\u{feff}# bom\na: 1\n",
            "a: 1\r\n# crlf\r\n",
            "- a\n# c\n",
            "#\n",
            "---\n---\n# c\n",
            // Found by the property below: a nested sequence starts at its own `-`.
            "   - - - \n# \n",
        ] {
            stable(text);
        }
    }
}

#[cfg(test)]
mod comment_props {
    use proptest::prelude::*;

    use super::*;

    /// The fuzz target's check (fuzz/src/targets.rs `yaml`), on text full of comments.
    fn check(text: &str) {
        let Ok(docs) = parse_documents(text) else { return };
        let emitted = emit_documents(&docs);
        let back = parse_documents(&emitted)
            .unwrap_or_else(|e| panic!("{text:?} -> {emitted:?} does not parse back: {e}"));
        assert_eq!(back.len(), docs.len(), "{text:?} -> {emitted:?}");
        for (a, b) in docs.iter().zip(&back) {
            assert_eq!(a.to_json(), b.to_json(), "{text:?} -> {emitted:?}");
        }
        assert_eq!(emit_documents(&back), emitted, "not stable: {text:?}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        #[test]
        fn text_with_comments_round_trips_stably(
            text in "([ ]{0,4}([a-c]{1,2}: ?|- |# [a-c]{0,2}|'[a#]'|\"[a#]\"|\\||>|\\[|\\]|\\{|\\}|, |#|x #y|---|\\.\\.\\.){0,6}\n){0,8}"
        ) {
            check(&text);
        }
    }
}
