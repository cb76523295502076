//! Comments recovered from the source text.
//!
//! saphyr-parser 0.3 does not report comments in its events, so the parse
//! records where every node starts and ends ([`Recorder`]), a scanner finds
//! the `#` comments outside scalars in the text, and each comment is attached
//! to a node of the finished tree by position:
//!
//! - a comment after content on its line is the **line** comment of the last
//!   scalar or flow collection that ends on that line before it (the key's,
//!   after `key:` when the value is a block collection or a block scalar);
//!   else of a block scalar whose header (`|`, `>`) is on that line, or of an
//!   empty scalar the parser puts after it (`- # c`, an empty item);
//! - lines end at `\n`, `\r\n` or a lone `\r`, as the parser counts them;
//! - a whole-line comment indented no deeper than the next mapping entry or
//!   sequence item (of the same document) is a **head** comment of that
//!   entry (its key) or item (the item node); of the document's root when the
//!   root is a scalar or a flow collection;
//! - a whole-line comment indented deeper than what comes next is a **foot**
//!   comment of the deepest block collection that ended before it and is
//!   indented no deeper than the comment; one at the end of a document is the
//!   foot of the document's root.
//!
//! Comments inside flow collections are dropped (they are written on one line).

use super::{Map, Node};

/// One step of a path from a document's root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Step {
    /// The key of the mapping entry at this index.
    Key(usize),
    /// The value of the mapping entry at this index.
    Value(usize),
    /// The sequence item at this index.
    Item(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    /// A scalar or an alias.
    Leaf,
    /// A flow collection.
    Flow,
    /// A block collection.
    Block,
}

#[derive(Debug)]
struct Record {
    doc: usize,
    path: Vec<Step>,
    parent: Option<usize>,
    shape: Shape,
    /// Character index where the node starts.
    start: usize,
    /// Character index where it ends (a block collection: where its end event is).
    end: usize,
    /// The line it ends on; a block scalar's is its header's (`|` or `>`),
    /// where its line comment is.
    end_line: usize,
    /// Character index where a scalar's own text starts, where no `#`
    /// starts a comment: a block scalar's is the line after its header.
    text_start: usize,
    /// Whether it is a block scalar.
    block: bool,
    /// The column (0-based) that decides whether a comment is above it or
    /// inside it: a sequence item's is its `-`'s.
    col: usize,
    /// The column of a block collection's entries (a sequence's `-`s): a
    /// foot comment goes to a collection indented no deeper than itself.
    inner_col: usize,
}

#[derive(Debug)]
struct Comment {
    start: usize,
    line: usize,
    col: usize,
    text: String,
    whole_line: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Head,
    Line,
    Foot,
}

/// How a scalar is written, as far as finding comments goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Written {
    /// Plain, or an alias.
    Plain,
    /// Quoted with this quote.
    Quoted(char),
    /// A block scalar (`|`, `>`); `props`: with an anchor or a tag (the
    /// parser's span then starts at them, else at the content).
    Block {
        /// Whether it has an anchor or a tag.
        props: bool,
    },
}

/// Records node positions during a parse (see the module docs).
#[derive(Debug)]
pub(super) struct Recorder<'a> {
    text: &'a str,
    records: Vec<Record>,
    open: Vec<usize>,
    doc_ends: Vec<usize>,
    /// Byte offset of each line's start.
    line_starts: Vec<usize>,
    positions: &'a Positions,
}

/// Where a parser's marker is in the text. saphyr-parser 0.3.4 counts a
/// reserved directive's (`%NAME param`) characters in bytes, so after a
/// non-ASCII one its markers' character index runs ahead of the text for
/// the rest of it (found by fuzzing: a comment then moved, a flow collection
/// read as block). Its line and column are right again from the next line,
/// so in a text that is not ASCII a marker is placed by them.
#[derive(Debug, Default)]
pub(super) struct Positions {
    /// Byte offset of each character, when the text is not ASCII.
    offsets: Option<Vec<usize>>,
    /// Character index of each line's start, when the text is not ASCII.
    line_chars: Option<Vec<usize>>,
}

impl Positions {
    /// The positions of `text` (nothing to keep when it is ASCII).
    pub(super) fn new(text: &str) -> Positions {
        if text.is_ascii() {
            return Positions::default();
        }
        let offsets: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let mut positions = Positions { offsets: Some(offsets), line_chars: None };
        let line_chars = std::iter::once(0).chain(break_ends(text).map(|b| positions.char_of(b)));
        positions.line_chars = Some(line_chars.collect());
        positions
    }

    /// The character index of a byte offset.
    pub(super) fn char_of(&self, byte: usize) -> usize {
        match &self.offsets {
            Some(offsets) => offsets.partition_point(|&o| o < byte),
            None => byte,
        }
    }

    /// The character index of `m`.
    pub(super) fn index(&self, m: saphyr_parser::Marker) -> usize {
        match &self.line_chars {
            Some(lines) => m
                .line()
                .checked_sub(1)
                .and_then(|l| lines.get(l))
                .map_or(m.index(), |start| start + m.col()),
            None => m.index(),
        }
    }

    /// The byte offset of character `char_index` (the text's length past its end).
    pub(super) fn byte_at(&self, char_index: usize, text: &str) -> usize {
        match &self.offsets {
            Some(offsets) => offsets.get(char_index).copied().unwrap_or(text.len()),
            None => char_index.min(text.len()),
        }
    }

    /// The byte offset of `m`.
    pub(super) fn byte(&self, m: saphyr_parser::Marker, text: &str) -> usize {
        self.byte_at(self.index(m), text)
    }
}

impl<'a> Recorder<'a> {
    /// A recorder, if `text` can hold a comment at all.
    pub(super) fn new(text: &'a str, positions: &'a Positions) -> Option<Self> {
        if !text.contains('#') {
            return None;
        }
        let line_starts = std::iter::once(0).chain(break_ends(text)).collect();
        Some(Recorder {
            text,
            records: Vec::new(),
            open: Vec::new(),
            doc_ends: Vec::new(),
            line_starts,
            positions,
        })
    }

    fn byte_at(&self, char_index: usize) -> usize {
        self.positions.byte_at(char_index, self.text)
    }

    /// Where a quoted scalar starting at `start` (a character index, maybe at
    /// its tag or anchor) ends: after its closing quote. The parser's span
    /// of a quoted scalar runs on over a comment after it.
    fn quoted_end(&self, start: usize, quote: char) -> Option<usize> {
        // Past its properties: a tag may hold a quote (`!'`).
        let from = self.byte_at(start);
        let at = self.after_props(from);
        let start = start + self.text[from..at].chars().count();
        let rest = self.text[at..].strip_prefix(quote)?;
        let mut chars = rest.chars().enumerate().map(|(i, c)| (i + 1, c)).peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if quote == '"' => {
                    chars.next();
                }
                '\'' if quote == '\'' && chars.peek().is_some_and(|(_, c)| *c == '\'') => {
                    chars.next();
                }
                c if c == quote => return Some(start + i + 1),
                _ => {}
            }
        }
        None
    }

    /// The column of the `-` before a node starting at `line`/`col` (1-based
    /// line, 0-based column): the last thing before it on its line, outside
    /// a comment (`- #-`: the first `-`), and not part of `---`.
    fn dash_col(&self, line: usize, col: usize) -> Option<usize> {
        let start = *self.line_starts.get(line.checked_sub(1)?)?;
        let mut before: Vec<char> = self.text[start..].chars().take(col).collect();
        if let Some(hash) = (0..before.len())
            .find(|&i| before[i] == '#' && (i == 0 || matches!(before[i - 1], ' ' | '\t')))
        {
            before.truncate(hash);
        }
        let trimmed = before.iter().rposition(|c| *c != ' ' && *c != '\t')?;
        let alone = trimmed == 0 || matches!(before[trimmed - 1], ' ' | '\t');
        (before[trimmed] == '-' && alone).then_some(trimmed)
    }

    /// The column of the first thing on `line` before `col` if it is a `-`.
    fn first_dash(&self, line: usize, col: usize) -> Option<usize> {
        let start = *self.line_starts.get(line.checked_sub(1)?)?;
        let (i, c) = self.text[start..].chars().take(col).enumerate().find(|(_, c)| *c != ' ')?;
        (c == '-').then_some(i)
    }

    /// Whether a `-` comes between two character indices, outside comments.
    fn dash_between(&self, from: usize, to: usize) -> bool {
        let text = &self.text[self.byte_at(from)..self.byte_at(to.max(from))];
        let mut in_comment = false;
        for c in text.chars() {
            match c {
                '\n' | '\r' => in_comment = false,
                '#' => in_comment = true,
                '-' if !in_comment => return true,
                _ => {}
            }
        }
        false
    }

    /// Whether a `-` is at `line`/`col` (the parser may start a nested block
    /// sequence at its own `-`).
    fn dash_at(&self, line: usize, col: usize) -> bool {
        let Some(start) = line.checked_sub(1).and_then(|l| self.line_starts.get(l)) else {
            return false;
        };
        self.text[*start..].chars().nth(col) == Some('-')
    }

    fn col_of(&self, path: &[Step], in_block_seq: bool, start: saphyr_parser::Marker) -> usize {
        // An item of a block sequence: its `-`'s column, the sequence's
        // (the `-` may be on an earlier line: `- # head`).
        if in_block_seq
            && matches!(path.last(), Some(Step::Item(_)))
            && let Some(&seq) = self.open.last()
        {
            return self.records[seq].inner_col;
        }
        start.col()
    }

    /// A scalar or an alias at `path`; `quote`: a quoted scalar's quote.
    pub(super) fn leaf(
        &mut self,
        doc: usize,
        path: Vec<Step>,
        span: saphyr_parser::Span,
        written: Written,
        in_block_seq: bool,
    ) {
        let col = self.col_of(&path, in_block_seq, span.start);
        let start = self.positions.index(span.start);
        let mut end = self.positions.index(span.end).max(start);
        let mut end_line = span.end.line();
        let mut text_start = start;
        match written {
            Written::Quoted(quote) => {
                if let Some(quoted) = self.quoted_end(start, quote)
                    && quoted < end
                {
                    let skipped = &self.text[self.byte_at(quoted)..self.byte_at(end)];
                    end_line -= break_ends(skipped).count();
                    end = quoted;
                }
            }
            Written::Block { props } => {
                // The parser's span ends at the start of the line after the
                // content: the scalar's line is its header's, and its text
                // starts on the line after that (a comment after the header,
                // `| # c`, is outside it).
                let header = self.block_header(self.byte_at(start), props);
                end_line = self.line_of(header);
                let next = self.line_starts.get(end_line).copied().unwrap_or(self.text.len());
                text_start = self.char_of(next).max(start);
                end = end.max(text_start);
            }
            Written::Plain => {}
        }
        self.records.push(Record {
            doc,
            parent: self.open.last().copied(),
            shape: Shape::Leaf,
            start,
            end,
            end_line,
            text_start,
            block: matches!(written, Written::Block { .. }),
            col,
            inner_col: col,
            path,
        });
    }

    /// The byte offset of a block scalar's header (or of something on its
    /// line) from the parser's start of it (`from`): with properties, the
    /// `|` or `>` after them; without, the last thing before the content
    /// (the header, or its comment), since only blank lines come between.
    fn block_header(&self, from: usize, props: bool) -> usize {
        if props {
            self.after_props(from).min(self.text.len().saturating_sub(1))
        } else {
            self.text[..from].rfind(|c| !matches!(c, ' ' | '\t' | '\n' | '\r')).unwrap_or(from)
        }
    }

    /// The byte offset of the first thing after the properties (anchor,
    /// tag), blanks, line breaks and comments at byte offset `from`.
    fn after_props(&self, from: usize) -> usize {
        let mut chars = self.text[from..].char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                ' ' | '\t' | '\n' | '\r' => {}
                '#' => while chars.next_if(|(_, c)| !matches!(c, '\n' | '\r')).is_some() {},
                '!' if chars.peek().is_some_and(|(_, c)| *c == '<') => {
                    while chars.next_if(|(_, c)| *c != '>').is_some() {}
                    chars.next();
                }
                '!' | '&' => while chars.next_if(|(_, c)| !is_separator(*c)).is_some() {},
                _ => return from + i,
            }
        }
        self.text.len()
    }

    /// The (1-based) line of a byte offset.
    fn line_of(&self, byte: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= byte).max(1)
    }

    fn char_of(&self, byte: usize) -> usize {
        self.positions.char_of(byte)
    }

    /// A collection at `path` starts.
    pub(super) fn open(
        &mut self,
        doc: usize,
        path: Vec<Step>,
        span: saphyr_parser::Span,
        flow: bool,
        seq: bool,
        in_block_seq: bool,
    ) {
        let col = self.col_of(&path, in_block_seq, span.start);
        let (line, mut inner_col, mut start) =
            (span.start.line(), span.start.col(), self.positions.index(span.start));
        // A block sequence starts at its first `-`: the parser's start is
        // its first item's, or the end of the line when a comment follows
        // the `-` (`- # head`). Only an item of a block sequence always
        // starts at its own `-` when there is one: a mapping value's or a
        // document's starts at its first item's even when that is another
        // `-` (`key:` then `- - a` starts at the second `-`).
        let own_dash = self.dash_at(line, inner_col);
        if seq && !flow && (!own_dash || !in_block_seq) {
            let dash = if own_dash {
                self.dash_col(line, inner_col)
            } else {
                self.dash_col(line, inner_col).or_else(|| self.first_dash(line, inner_col))
            };
            if let Some(dash) = dash {
                start -= inner_col - dash;
                inner_col = dash;
            }
        }
        self.records.push(Record {
            doc,
            parent: self.open.last().copied(),
            shape: if flow { Shape::Flow } else { Shape::Block },
            start,
            end: usize::MAX,
            end_line: usize::MAX,
            text_start: start,
            block: false,
            col,
            inner_col,
            path,
        });
        self.open.push(self.records.len() - 1);
    }

    /// The innermost open collection ends (`span` is its end event's).
    pub(super) fn close(&mut self, span: saphyr_parser::Span) {
        let Some(i) = self.open.pop() else { return };
        let record = &mut self.records[i];
        // A flow collection ends after its `]`/`}` (the event's span may run on
        // over a comment); a block collection where its end event is.
        record.end = self.positions.index(span.start) + usize::from(record.shape == Shape::Flow);
        record.end_line = span.start.line();
    }

    /// A document ends at `at`.
    pub(super) fn doc_end(&mut self, at: saphyr_parser::Marker) {
        self.open.clear();
        self.doc_ends.push(self.positions.index(at));
    }

    /// Finds the comments and attaches them to `docs`.
    pub(super) fn attach(self, docs: &mut [Node]) {
        if docs.is_empty() {
            return;
        }
        let comments = self.scan();
        for comment in comments {
            let doc = self.doc_ends.partition_point(|&e| e <= comment.start).min(docs.len() - 1);
            if let Some((path, slot)) = self.place(doc, &comment) {
                attach_at(&mut docs[doc], &path, slot, comment.text);
            }
        }
    }

    /// The `#` comments outside scalars, in order.
    fn scan(&self) -> Vec<Comment> {
        let mut leaves = self
            .records
            .iter()
            .filter(|r| r.shape == Shape::Leaf && r.end > r.text_start)
            .map(|r| (r.text_start, r.end))
            .peekable();
        let mut out = Vec::new();
        let (mut line, mut col) = (1usize, 0usize);
        let mut prev: Option<char> = None;
        let mut whole_line = true;
        let mut chars = self.text.chars().enumerate().peekable();
        while let Some((i, c)) = chars.next() {
            while leaves.peek().is_some_and(|&(_, end)| end <= i) {
                leaves.next();
            }
            let inside = leaves.peek().is_some_and(|&(start, _)| start <= i);
            // A line break is `\n`, `\r\n` or a lone `\r` (YAML's, and the
            // parser's line count).
            if c == '\r' && chars.peek().is_some_and(|&(_, c)| c == '\n') {
                continue;
            }
            if c == '\n' || c == '\r' {
                line += 1;
                col = 0;
                prev = Some(c);
                whole_line = true;
                continue;
            }
            if c == '#'
                && !inside
                && prev.is_none_or(|p| matches!(p, ' ' | '\t' | '\n' | '\r' | '\u{feff}'))
            {
                // Up to the line break (or a NUL, where the parser stops).
                let mut text = String::from('#');
                while let Some(&(_, c)) = chars.peek() {
                    if matches!(c, '\n' | '\r' | '\0') {
                        break;
                    }
                    text.push(c);
                    chars.next();
                }
                out.push(Comment { start: i, line, col, text, whole_line });
                prev = Some('#');
                whole_line = false;
                continue;
            }
            if !matches!(c, ' ' | '\t' | '\u{feff}') {
                whole_line = false;
            }
            prev = Some(c);
            col += 1;
        }
        out
    }

    /// Where a comment goes: a path in its document and a slot there.
    fn place(&self, doc: usize, comment: &Comment) -> Option<(Vec<Step>, Slot)> {
        let first = self.records.partition_point(|r| r.doc < doc);
        let last = self.records.partition_point(|r| r.doc <= doc);
        let records = &self.records[first..last];
        // The last node that starts before the comment.
        let before = records.partition_point(|r| r.start < comment.start);
        let prev = before.checked_sub(1);
        if let Some(p) = prev {
            // Inside a flow collection: dropped.
            let mut at = Some(p + first);
            while let Some(i) = at {
                let r = &self.records[i];
                if r.shape == Shape::Flow && r.end > comment.start {
                    return None;
                }
                at = r.parent;
            }
        }
        if !comment.whole_line
            && let Some(p) = prev
        {
            let mut best: Option<&Record> = None;
            for r in records[..=p].iter().rev() {
                if r.shape == Shape::Block {
                    continue;
                }
                if r.end <= comment.start
                    && r.end_line == comment.line
                    && best.is_none_or(|b| r.end > b.end)
                {
                    best = Some(r);
                }
                if r.shape == Shape::Leaf && r.end_line < comment.line {
                    break;
                }
            }
            if let Some(r) = best {
                return Some((r.path.clone(), Slot::Line));
            }
        }
        // After a block scalar's header (`- | # c`; after `key: |`, the key's
        // above): its line comment, as the emitter writes it. The parser
        // starts it at its properties before the comment, or at its content
        // after it.
        if !comment.whole_line {
            let around = [before.checked_sub(1), Some(before)];
            for r in around.into_iter().flatten().filter_map(|i| records.get(i)) {
                if r.block && r.end_line == comment.line && r.text_start > comment.start {
                    return Some((r.path.clone(), Slot::Line));
                }
            }
        }
        // After a `-` (or `?`) with nothing else on the line (`- # c`, `- &a`
        // then a comment): the parser puts the empty scalar there after
        // the comment. The comment is its line comment, as the emitter
        // writes it (`- # c`).
        if !comment.whole_line
            && let Some(n) = records.get(before)
            && n.shape == Shape::Leaf
            && n.start == n.end
            && n.end_line == comment.line
        {
            return Some((n.path.clone(), Slot::Line));
        }
        // The entry or item that comes next in the document: the outermost
        // that starts there; for a comment after content on its line (`- #
        // head`, as kyaml writes a document's head comment in a list) the
        // innermost (the mapping's first key).
        // A block sequence starts at its `-`: what comes next is its first
        // item. Not when the sequence is itself an item (`- - a`): the `-`
        // is the outer item's, and so is a comment above it (the emitter
        // writes the inner first item's head there too).
        let mut at = before;
        if records.get(at).is_some_and(|r| {
            r.shape == Shape::Block && !matches!(r.path.last(), Some(Step::Item(_)))
        }) && records.get(at + 1).is_some_and(|c| {
            c.parent == Some(first + at) && matches!(c.path.last(), Some(Step::Item(_)))
        }) {
            at += 1;
        }
        let next = records.get(at).map(|n| {
            let same = || records[at..].iter().take_while(|r| r.start == n.start);
            let entry = |r: &&Record| matches!(r.path.last(), Some(Step::Key(_) | Step::Item(_)));
            // A whole-line comment: the innermost entry indented no deeper
            // (above a `-`: the item; indented to its content: its first key).
            let found = if comment.whole_line && self.dash_between(comment.start, n.start) {
                // The next item's `-` is below: the comment is above the item.
                same().find(entry)
            } else if comment.whole_line {
                same()
                    .filter(entry)
                    .filter(|r| r.col <= comment.col)
                    .last()
                    .or_else(|| same().find(entry))
            } else {
                same().filter(entry).last()
            };
            found.or_else(|| same().find(|r| r.path.is_empty())).unwrap_or(n)
        });
        if let Some(n) = next
            && comment.col <= n.col
        {
            return Some((n.path.clone(), Slot::Head));
        }
        // A foot comment: of the deepest block collection that ended before
        // it (does not hold what comes next) and is indented no deeper.
        let mut containing_next = Vec::new();
        if let Some(n) = next {
            let mut at = n.parent;
            while let Some(i) = at {
                containing_next.push(i);
                at = self.records[i].parent;
            }
        }
        let mut at = prev.map(|p| p + first);
        while let Some(i) = at {
            if containing_next.contains(&i) {
                break;
            }
            let r = &self.records[i];
            if r.shape == Shape::Block && r.inner_col <= comment.col {
                return Some((r.path.clone(), Slot::Foot));
            }
            at = r.parent;
        }
        match next {
            Some(n) => Some((n.path.clone(), Slot::Head)),
            None => Some((Vec::new(), Slot::Foot)),
        }
    }
}

/// The byte offset after each line break of `text` (`\n`, `\r\n`, or a lone
/// `\r`: YAML's line breaks, as the parser counts lines).
fn break_ends(text: &str) -> impl Iterator<Item = usize> + '_ {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().filter_map(move |(i, &b)| match b {
        b'\n' => Some(i + 1),
        b'\r' if bytes.get(i + 1) != Some(&b'\n') => Some(i + 1),
        _ => None,
    })
}

/// Whether `c` ends an anchor or a tag (a blank, a line break, or a flow
/// indicator).
pub(super) fn is_separator(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | ',' | '[' | ']' | '{' | '}')
}

fn attach_at(root: &mut Node, path: &[Step], slot: Slot, text: String) {
    let mut node = root;
    for (i, step) in path.iter().enumerate() {
        match (step, node) {
            (Step::Key(k), Node::Map(Map { entries, .. })) => {
                let Some((key, _)) = entries.get_mut(*k) else { return };
                if i + 1 == path.len() {
                    add(key.comments_mut(), slot, text);
                }
                return;
            }
            (Step::Value(k), Node::Map(Map { entries, .. })) => {
                let Some((_, value)) = entries.get_mut(*k) else { return };
                node = value;
            }
            (Step::Item(k), Node::Seq(seq)) => {
                let Some(item) = seq.items.get_mut(*k) else { return };
                node = item;
            }
            _ => return,
        }
    }
    add(node.comments_mut(), slot, text);
}

fn add(comments: &mut super::Comments, slot: Slot, text: String) {
    match slot {
        Slot::Head => comments.head.push(text),
        Slot::Line => {
            if comments.line.is_none() {
                comments.line = Some(text);
            }
        }
        Slot::Foot => comments.foot.push(text),
    }
}

#[cfg(test)]
mod tests {
    use super::super::{emit_documents, parse_documents};

    /// Found by fuzzing (fuzz/regressions/yaml/cr-*): a lone `\r` is a line
    /// break to the parser, but the scanner counted lines by `\n` only, so a
    /// comment ran on over the `\r` and the next line's content (written
    /// back, that content was a comment), and comments after a `\r` were
    /// placed by the wrong line.
    #[test]
    fn a_lone_carriage_return_ends_a_comment_and_a_line() {
        let docs = parse_documents("#\ra # c\r").unwrap();
        assert_eq!(docs[0].to_json(), "a");
        assert_eq!(docs[0].comments().head, ["#"]);
        assert_eq!(docs[0].comments().line.as_deref(), Some("# c"));
        assert_eq!(emit_documents(&docs), "#\na # c\n");
        // Comments land where they do with `\n` for every break.
        for text in ["\r-\n- # two\r", "a:\r  # b\r\n  b: 1 # one\r# foot\r"] {
            let unix = text.replace("\r\n", "\n").replace('\r', "\n");
            let emit = |t: &str| emit_documents(&parse_documents(t).unwrap());
            assert_eq!(emit(text), emit(&unix), "{text:?}");
        }
        for text in
            ["#\ra", "#\r:", "#\r[]", "#\r? ", "#\r. #", "-\r #", "#\r\u{13}", "a: 1\r\n# c\r\n"]
        {
            let docs = parse_documents(text).unwrap();
            let emitted = emit_documents(&docs);
            let back = parse_documents(&emitted).unwrap_or_else(|e| panic!("{text:?}: {e}"));
            assert_eq!(back[0].to_json(), docs[0].to_json(), "{text:?} -> {emitted:?}");
            assert_eq!(emit_documents(&back), emitted, "{text:?}");
        }
    }

    /// Found by fuzzing (fuzz/regressions/yaml/empty-item-*): the line
    /// comment of an empty item (`- &a # c`) is written `- # c`, where the
    /// parser puts the empty scalar after the comment; it read back as the
    /// item's head comment, written above the `-`.
    #[test]
    fn a_comment_after_a_dash_with_nothing_else_is_the_empty_items_line_comment() {
        for text in ["- &a # c\n", "- # c\n- b\n", "- - # c\n", "a:\n- # c\n"] {
            let docs = parse_documents(text).unwrap();
            let mut item = &docs[0];
            while let Some(node) = item.as_seq().map(|s| &s[0]).or_else(|| item.get("a")) {
                item = node;
            }
            assert_eq!(item.comments().line.as_deref(), Some("# c"), "{text:?}");
            let emitted = emit_documents(&docs);
            assert_eq!(emit_documents(&parse_documents(&emitted).unwrap()), emitted, "{text:?}");
        }
    }

    /// Found by fuzzing (fuzz/regressions/yaml/nested-sequence-foot): a
    /// comment above a `- -` indented to the inner `-` was the inner first
    /// item's head (written above the outer `-`, at its column), so the foot
    /// of a nested sequence just before (`- -`, then `  # c`) read back as
    /// the next item's head and moved.
    #[test]
    fn a_comment_above_a_compact_nested_sequence_is_the_outer_items() {
        let docs = parse_documents("- -\n  # c\n- -\n").unwrap();
        let items = docs[0].as_seq().unwrap();
        assert_eq!(items[0].comments().foot, ["# c"]);
        assert_eq!(emit_documents(&docs), "- -\n  # c\n- -\n");
        for text in ["- -\n- #\n -", ":\n - -\n - #", "- x\n  # c\n- - a\n"] {
            let docs = parse_documents(text).unwrap();
            let emitted = emit_documents(&docs);
            assert_eq!(emit_documents(&parse_documents(&emitted).unwrap()), emitted, "{text:?}");
        }
    }

    /// Found by fuzzing (fuzz/regressions/yaml/empty-item-comment-with-dash):
    /// the `-` in a comment (`- #-`) was taken for the item's `-`, so the
    /// empty item's line comment read back as its head.
    #[test]
    fn a_dash_inside_a_comment_is_not_an_items_dash() {
        let docs = parse_documents("a:\n- #-\n").unwrap();
        let item = &docs[0].get("a").unwrap().as_seq().unwrap()[0];
        assert_eq!(item.comments().line.as_deref(), Some("#-"));
        assert_eq!(emit_documents(&docs), "a:\n- #-\n");
    }

    /// Found by fuzzing (fuzz/regressions/yaml/nested-sequence-in-map-foot*):
    /// the parser starts a mapping value's block sequence at its first item,
    /// which for `- - a` is the inner `-`; the outer sequence was taken to
    /// start there, so the foot of its first item (written at the inner
    /// column) read back as the next item's head.
    #[test]
    fn a_mapping_values_nested_sequence_starts_at_the_outer_dash() {
        for text in ["x:\n- -\n  # c\n- a\n", "x:\n- - - a\n    # c\n  # d\n- b\n"] {
            let docs = parse_documents(text).unwrap();
            assert_eq!(emit_documents(&docs), text);
        }
        let docs = parse_documents("x:\n- -\n  # c\n- a\n").unwrap();
        assert_eq!(docs[0].get("x").unwrap().as_seq().unwrap()[0].comments().foot, ["# c"]);
    }

    /// Found by fuzzing (fuzz/regressions/yaml/block-scalar-*): the
    /// parser's span of a block scalar ends on the line after its content,
    /// so a comment there (`- >` ... then `- # c`) was taken for the block
    /// scalar's line comment; one after its header (`- | # c`, as the
    /// emitter writes it) read back as a head comment; and with an anchor or
    /// a tag the span starts before the header, so `!t | # c` was taken for
    /// text of the scalar and dropped.
    #[test]
    fn a_block_scalars_line_comment_is_the_one_after_its_header() {
        for text in ["- | # c\n  x\n", "- &a > # c\n  x\n", "a: !t | # c\n  x\n", "| # c\n  x\n"] {
            let docs = parse_documents(text).unwrap();
            assert_eq!(emit_documents(&docs), text.replace("&a ", "").replace('>', "|"));
        }
        let docs = parse_documents("- >\n  -\n- # c\n").unwrap();
        let items = docs[0].as_seq().unwrap();
        assert!(items[0].comments().line.is_none());
        assert_eq!(items[1].comments().line.as_deref(), Some("# c"));
    }

    /// Found by fuzzing (fuzz/regressions/yaml/quote-in-tag-*): a quoted
    /// scalar's end was found from the first quote after its start, which
    /// may be in its tag (`!'` is the tag `'`), so a comment after it was
    /// taken for text of the scalar, or text of it for a comment.
    #[test]
    fn a_quote_in_a_tag_does_not_start_the_quoted_scalar() {
        let docs = parse_documents("!' ' #' # c\n").unwrap();
        assert_eq!(docs[0].to_json(), " #");
        assert_eq!(docs[0].comments().line.as_deref(), Some("# c"));
        for text in ["!' ' #'", "!' #' #\n''"] {
            let docs = parse_documents(text).unwrap();
            let emitted = emit_documents(&docs);
            assert_eq!(emit_documents(&parse_documents(&emitted).unwrap()), emitted, "{text:?}");
        }
    }
}
