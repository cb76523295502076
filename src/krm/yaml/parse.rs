//! The parser: YAML text to [`Node`]s, through saphyr-parser's events, with
//! the limits that guard it ([`ALIAS_BUDGET`], [`MAX_DEPTH`]).

use std::collections::{HashMap, HashSet};

use saphyr_parser::{Event, Parser, ScalarStyle, Tag};

use super::YamlError;
use super::comments;
use super::model::{Attached, Map, Node, Scalar, Seq, Style};

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
