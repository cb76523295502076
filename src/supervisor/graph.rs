//! The dependency graph: controllers, resource types, and the edges between them,
//! exported to Graphviz DOT and Mermaid.

use std::collections::BTreeSet;
use std::fmt::{self, Write as _};

/// What an edge means.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    /// A weak input (resource type → controller).
    InputWeak,
    /// A strong input (resource type → controller).
    InputStrong,
    /// A destroy-ready input (resource type → controller).
    InputDestroyReady,
    /// A queue controller's primary input (resource type → controller).
    InputPrimary,
    /// A queue controller's mapped input (resource type → controller).
    InputMapped,
    /// An exclusive output (controller → resource type).
    OutputExclusive,
    /// A shared output (controller → resource type).
    OutputShared,
}

impl EdgeKind {
    /// The edge label: `weak`, `strong`, `destroy-ready`, `primary`, `mapped`,
    /// `exclusive`, `shared`.
    pub fn label(self) -> &'static str {
        match self {
            EdgeKind::InputWeak => "weak",
            EdgeKind::InputStrong => "strong",
            EdgeKind::InputDestroyReady => "destroy-ready",
            EdgeKind::InputPrimary => "primary",
            EdgeKind::InputMapped => "mapped",
            EdgeKind::OutputExclusive => "exclusive",
            EdgeKind::OutputShared => "shared",
        }
    }

    /// Whether the edge goes from a resource type to a controller.
    pub fn is_input(self) -> bool {
        !matches!(self, EdgeKind::OutputExclusive | EdgeKind::OutputShared)
    }
}

impl fmt::Display for EdgeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One edge between a controller and a resource type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Edge {
    /// The controller.
    pub controller: String,
    /// The resource type.
    pub resource_type: String,
    /// For inputs, the namespace read.
    pub namespace: Option<String>,
    /// For id-specific inputs, the id.
    pub id: Option<String>,
    /// The meaning.
    pub kind: EdgeKind,
}

impl Edge {
    fn label(&self) -> String {
        match (&self.namespace, &self.id) {
            (Some(ns), Some(id)) => format!("{} {ns}/{id}", self.kind),
            (Some(ns), None) => format!("{} {ns}", self.kind),
            _ => self.kind.label().to_owned(),
        }
    }
}

/// Controllers, resource types and labelled edges between them.
///
/// ```
/// use cosi_runtime::supervisor::{DependencyGraph, Edge, EdgeKind};
///
/// let graph = DependencyGraph::new(
///     vec!["IntToStr".into()],
///     vec![
///         Edge { controller: "IntToStr".into(), resource_type: "Ints".into(), namespace: Some("default".into()), id: None, kind: EdgeKind::InputStrong },
///         Edge { controller: "IntToStr".into(), resource_type: "Strs".into(), namespace: None, id: None, kind: EdgeKind::OutputExclusive },
///     ],
/// );
/// assert!(graph.to_dot().contains(r#""r:Ints" -> "c:IntToStr" [label="strong default""#));
/// assert!(graph.to_mermaid().contains("c0 -->|exclusive| r1"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DependencyGraph {
    controllers: Vec<String>,
    edges: Vec<Edge>,
}

fn dot_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn mermaid_text(s: &str) -> String {
    s.replace('"', "#quot;")
}

impl DependencyGraph {
    /// A graph from its parts (edges are sorted for stable output).
    pub fn new(controllers: Vec<String>, mut edges: Vec<Edge>) -> Self {
        edges.sort();
        DependencyGraph { controllers, edges }
    }

    /// The controllers, sorted by name.
    pub fn controllers(&self) -> &[String] {
        &self.controllers
    }

    /// The edges, sorted.
    pub fn edges(&self) -> &[Edge] {
        &self.edges
    }

    /// The resource types that appear, sorted.
    pub fn resource_types(&self) -> Vec<String> {
        let set: BTreeSet<&str> = self.edges.iter().map(|e| e.resource_type.as_str()).collect();
        set.into_iter().map(str::to_owned).collect()
    }

    /// Graphviz DOT: controllers as boxes, resource types as ellipses, inputs
    /// drawn type → controller, outputs controller → type.
    pub fn to_dot(&self) -> String {
        let mut out = String::from(
            "digraph cosi {\n  rankdir=LR;\n  node [fontname=\"Helvetica\", fontsize=11];\n  edge [fontname=\"Helvetica\", fontsize=9];\n",
        );
        for c in &self.controllers {
            let _ = writeln!(
                out,
                "  {} [shape=box, style=\"rounded,filled\", fillcolor=\"#dbe9f6\", label={}];",
                dot_quote(&format!("c:{c}")),
                dot_quote(c)
            );
        }
        for t in self.resource_types() {
            let _ = writeln!(
                out,
                "  {} [shape=ellipse, style=filled, fillcolor=\"#f4f1de\", label={}];",
                dot_quote(&format!("r:{t}")),
                dot_quote(&t)
            );
        }
        for e in &self.edges {
            let (c, r) = (
                dot_quote(&format!("c:{}", e.controller)),
                dot_quote(&format!("r:{}", e.resource_type)),
            );
            let style = match e.kind {
                EdgeKind::InputStrong | EdgeKind::InputPrimary => ", style=bold",
                EdgeKind::InputDestroyReady | EdgeKind::InputMapped => ", style=dashed",
                EdgeKind::OutputShared => ", style=dotted",
                _ => "",
            };
            let label = dot_quote(&e.label());
            if e.kind.is_input() {
                let _ = writeln!(out, "  {r} -> {c} [label={label}{style}];");
            } else {
                let _ = writeln!(out, "  {c} -> {r} [label={label}{style}];");
            }
        }
        out.push_str("}\n");
        out
    }

    /// A Mermaid flowchart with the same content as [`to_dot`](DependencyGraph::to_dot).
    pub fn to_mermaid(&self) -> String {
        let types = self.resource_types();
        let cid = |name: &str| {
            self.controllers
                .iter()
                .position(|c| c == name)
                .map_or_else(|| "c_unknown".to_owned(), |i| format!("c{i}"))
        };
        let rid = |name: &str| {
            types
                .iter()
                .position(|t| t == name)
                .map_or_else(|| "r_unknown".to_owned(), |i| format!("r{i}"))
        };
        let mut out = String::from("flowchart LR\n");
        for (i, c) in self.controllers.iter().enumerate() {
            let _ = writeln!(out, "  c{i}[\"{}\"]", mermaid_text(c));
        }
        for (i, t) in types.iter().enumerate() {
            let _ = writeln!(out, "  r{i}([\"{}\"])", mermaid_text(t));
        }
        for e in &self.edges {
            let arrow = match e.kind {
                EdgeKind::InputStrong | EdgeKind::InputPrimary => "==>",
                EdgeKind::InputDestroyReady | EdgeKind::InputMapped | EdgeKind::OutputShared => {
                    "-.->"
                }
                _ => "-->",
            };
            let label = mermaid_text(&e.label());
            let (c, r) = (cid(&e.controller), rid(&e.resource_type));
            if e.kind.is_input() {
                let _ = writeln!(out, "  {r} {arrow}|{label}| {c}");
            } else {
                let _ = writeln!(out, "  {c} {arrow}|{label}| {r}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge(c: &str, t: &str, kind: EdgeKind) -> Edge {
        Edge {
            controller: c.into(),
            resource_type: t.into(),
            namespace: kind.is_input().then(|| "ns".to_owned()),
            id: None,
            kind,
        }
    }

    #[test]
    fn dot_has_every_node_and_labelled_edge() {
        let g = DependencyGraph::new(
            vec!["A".into(), "B".into()],
            vec![
                edge("A", "In", EdgeKind::InputWeak),
                edge("A", "Mid", EdgeKind::OutputExclusive),
                edge("B", "Mid", EdgeKind::InputStrong),
                edge("B", "Out", EdgeKind::OutputShared),
                edge("B", "Out", EdgeKind::InputDestroyReady),
            ],
        );
        let dot = g.to_dot();
        assert!(dot.starts_with("digraph cosi {"));
        for needle in [
            r#""c:A" [shape=box"#,
            r#""r:Mid" [shape=ellipse"#,
            r#""r:In" -> "c:A" [label="weak ns"]"#,
            r#""c:A" -> "r:Mid" [label="exclusive"]"#,
            r#""r:Mid" -> "c:B" [label="strong ns", style=bold]"#,
            r#""c:B" -> "r:Out" [label="shared", style=dotted]"#,
            r#""r:Out" -> "c:B" [label="destroy-ready ns", style=dashed]"#,
        ] {
            assert!(dot.contains(needle), "missing {needle} in\n{dot}");
        }
        let mermaid = g.to_mermaid();
        assert!(mermaid.starts_with("flowchart LR\n"));
        assert!(mermaid.contains("r0 -->|weak ns| c0"), "{mermaid}");
        assert!(mermaid.contains("c1 -.->|shared| r2"), "{mermaid}");
    }

    #[test]
    fn names_with_quotes_are_escaped() {
        let g = DependencyGraph::new(
            vec!["a\"b".into()],
            vec![edge("a\"b", "T", EdgeKind::OutputExclusive)],
        );
        assert!(g.to_dot().contains(r#""c:a\"b""#));
        assert!(g.to_mermaid().contains("a#quot;b"));
    }
}
