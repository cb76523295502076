//! The document model: [`Node`], [`Scalar`], [`Map`], [`Seq`], their
//! [`Style`] and [`Comments`], and copying comments between trees.

use std::collections::HashMap;

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

/// The comments attached to a node (see [the module docs](super#comments)).
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
pub(super) struct Attached(Option<Box<Comments>>);

impl Attached {
    pub(super) fn get(&self) -> &Comments {
        self.0.as_deref().unwrap_or(&NO_COMMENTS)
    }

    pub(super) fn get_mut(&mut self) -> &mut Comments {
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
    pub(super) value: String,
    pub(super) style: Style,
    pub(super) tag: Option<String>,
    pub(super) comments: Attached,
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

pub(super) fn resolve_plain(v: &str) -> serde_json::Value {
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
    pub(super) entries: Vec<(Scalar, Node)>,
    pub(super) flow: bool,
    pub(super) comments: Attached,
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
    pub(super) items: Vec<Node>,
    pub(super) flow: bool,
    pub(super) comments: Attached,
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

    pub(super) fn depth(&self) -> usize {
        match self {
            Node::Scalar(_) => 0,
            Node::Seq(s) => 1 + s.iter().map(Node::depth).max().unwrap_or(0),
            Node::Map(m) => 1 + m.entries.iter().map(|(_, v)| v.depth()).max().unwrap_or(0),
        }
    }

    pub(super) fn size(&self) -> usize {
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
