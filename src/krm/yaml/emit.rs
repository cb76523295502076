//! The emitter: [`Node`]s back to YAML text, with their comments, and the
//! quoting rules that keep every scalar reading back the same.

use std::fmt::Write as _;

use super::model::{Map, Node, Scalar, Style, resolve_plain};

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
