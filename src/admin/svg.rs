//! The dependency graph as SVG, laid out in pure Rust by `layout-rs`.
//!
//! `layout-rs` reads a subset of DOT: boxes and ellipses, fill colours,
//! labels, dashed edges, edge colour and width. The DOT fed to it is written
//! for that subset (plain node ids, labels without quotes or backslashes):
//! strong and primary inputs are drawn thick and dark, destroy-ready and
//! mapped inputs dashed, shared outputs dashed and grey.

use std::fmt::Write as _;

use super::error::ApiError;
use crate::supervisor::{DependencyGraph, EdgeKind};

/// A label layout-rs reads back as written.
fn label(text: &str) -> String {
    text.chars().map(|c| if c == '"' || c == '\\' || c.is_control() { '\'' } else { c }).collect()
}

/// Whether an edge kind is drawn bold in the SVG (strong and primary inputs).
fn is_strong(kind: EdgeKind) -> bool {
    matches!(kind, EdgeKind::InputStrong | EdgeKind::InputPrimary)
}

/// The DOT that [`render`] lays out.
pub(super) fn dot(graph: &DependencyGraph) -> String {
    let types = graph.resource_types();
    let mut out = String::from("digraph cosi {\n  rankdir=LR;\n");
    for (i, c) in graph.controllers().iter().enumerate() {
        let _ = writeln!(
            out,
            "  c{i} [shape=box, style=filled, fillcolor=\"#dbe9f6\", label=\"{}\"];",
            label(c)
        );
    }
    for (i, t) in types.iter().enumerate() {
        let _ =
            writeln!(out, "  r{i} [style=filled, fillcolor=\"#f4f1de\", label=\"{}\"];", label(t));
    }
    for e in graph.edges() {
        let (Some(c), Some(r)) = (
            graph.controllers().iter().position(|c| *c == e.controller),
            types.iter().position(|t| *t == e.resource_type),
        ) else {
            continue;
        };
        let style = match e.kind {
            k if is_strong(k) => ", color=\"#1f3b57\", penwidth=3",
            EdgeKind::InputDestroyReady | EdgeKind::InputMapped => ", style=dashed",
            EdgeKind::OutputShared => ", style=dashed, color=\"#777777\"",
            _ => "",
        };
        let text = match (&e.namespace, &e.id) {
            (Some(ns), Some(id)) => format!("{} {ns}/{id}", e.kind),
            (Some(ns), None) => format!("{} {ns}", e.kind),
            _ => e.kind.label().to_owned(),
        };
        let (from, to) = if e.kind.is_input() {
            (format!("r{r}"), format!("c{c}"))
        } else {
            (format!("c{c}"), format!("r{r}"))
        };
        let _ = writeln!(out, "  {from} -> {to} [label=\"{}\"{style}];", label(&text));
    }
    out.push_str("}\n");
    out
}

/// Lays the graph out and draws it as an SVG document.
///
/// # Errors
/// [`ApiError`] (500) if layout-rs cannot read the DOT written for it.
pub(super) fn render(graph: &DependencyGraph) -> Result<String, ApiError> {
    if graph.controllers().is_empty() {
        // layout-rs cannot sort an empty graph.
        return Ok(EMPTY.to_owned());
    }
    let dot = dot(graph);
    let mut parser = layout::gv::DotParser::new(&dot);
    let ast = parser.process().map_err(|e| ApiError::internal(format!("graph layout: {e}")))?;
    // layout-rs asserts its own invariants with panics: one must not reach the caller.
    std::panic::catch_unwind(move || {
        let mut builder = layout::gv::GraphBuilder::new();
        builder.visit_graph(&ast);
        let mut visual = builder.get();
        let mut svg = layout::backends::svg::SVGWriter::new();
        visual.do_it(false, false, false, &mut svg);
        svg.finalize()
    })
    .map_err(|_| ApiError::internal("graph layout: layout-rs panicked on this graph"))
}

/// The drawing of a runtime with no controller.
const EMPTY: &str = concat!(
    r#"<?xml version="1.0" encoding="UTF-8" standalone="no"?>"#,
    r#"<svg width="240" height="40" viewBox="0 0 240 40" xmlns="http://www.w3.org/2000/svg">"#,
    r#"<text x="10" y="25" font-family="sans-serif" font-size="14">no controllers registered</text></svg>"#,
    "\n"
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supervisor::Edge;

    fn edge(
        controller: &str,
        resource_type: &str,
        namespace: Option<&str>,
        kind: EdgeKind,
    ) -> Edge {
        Edge {
            controller: controller.into(),
            resource_type: resource_type.into(),
            namespace: namespace.map(Into::into),
            id: None,
            kind,
        }
    }

    #[test]
    fn every_controller_type_and_edge_label_is_drawn() {
        let graph = DependencyGraph::new(
            vec!["Render \"quoted\"".into(), "Apply".into()],
            vec![
                edge("Render \"quoted\"", "Configs", Some("config"), EdgeKind::InputStrong),
                edge("Render \"quoted\"", "Files", None, EdgeKind::OutputExclusive),
                edge("Apply", "Files", Some("files"), EdgeKind::InputWeak),
                edge("Apply", "Status", None, EdgeKind::OutputShared),
            ],
        );
        let svg = render(&graph).unwrap();
        assert!(svg.contains("<svg"), "{svg}");
        for text in [
            "Render &apos;quoted&apos;",
            "Apply",
            "Configs",
            "Files",
            "Status",
            "strong config",
            "exclusive",
            "shared",
        ] {
            assert!(svg.contains(text), "{text} missing from\n{svg}");
        }
    }

    #[test]
    fn an_empty_graph_is_an_empty_drawing() {
        let svg = render(&DependencyGraph::default()).unwrap();
        assert!(svg.contains("<svg") && svg.contains("no controllers"), "{svg}");
    }
}
