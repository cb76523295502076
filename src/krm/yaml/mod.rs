//! The YAML fidelity layer: a document tree that remembers how every scalar
//! was written, and an emitter that writes it back the same way.
//!
//! Why not a serde YAML crate: `serde_yaml` is archived, `serde_yml` is unsound
//! (RUSTSEC-2025-0068), and every serde-based YAML crate available
//! changes scalars on a round trip (`0640` becomes `'0640'` or `640`,
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

mod comments;
mod emit;
mod model;
mod parse;
#[cfg(test)]
mod tests;

pub use emit::{ambiguous_as_string, emit_document, emit_documents, emit_entry, emit_seq_entry};
pub(crate) use model::same_comments;
pub use model::{Comments, Map, Node, Scalar, Seq, Style, copy_comments};
pub use parse::{ALIAS_BUDGET, MAX_DEPTH, parse_document, parse_documents};

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
