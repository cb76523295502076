//! Fixtures and helpers shared by the KRM tests.

use cosi_runtime::krm::yaml::parse_documents;
use cosi_runtime::krm::{Condition, Function, Object, Output, ResourceList, conditions, run};

pub const KPTFILE: &str = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\n";

pub fn site(name: &str, region: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Site\nmetadata:\n  name: {name}\nspec:\n  region: {region}\n"
    )
}

pub fn cluster(name: &str, nodes: u32) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Cluster\nmetadata:\n  name: {name}\nspec:\n  nodes: {nodes}\n"
    )
}

/// A ResourceList holding the documents of `docs` (joined by `---`).
pub fn list_of(docs: &[&str]) -> String {
    let text = docs.join("---\n");
    let items = parse_documents(&text)
        .expect("fixture parses")
        .into_iter()
        .map(Object::from_node)
        .collect();
    ResourceList::new(items).to_yaml()
}

/// Runs `function` on `input` and parses what it wrote.
pub fn run_on(function: &dyn Function, input: &str) -> (ResourceList, Output) {
    let out = run(function, input.as_bytes());
    let list = ResourceList::parse(&out.stdout).expect("the output is a ResourceList");
    (list, out)
}

pub fn find<'a>(list: &'a ResourceList, kind: &str, name: &str) -> Option<&'a Object> {
    list.items.iter().find(|o| o.kind() == Some(kind) && o.name() == Some(name))
}

pub fn condition(list: &ResourceList, type_: &str) -> Option<Condition> {
    conditions::find(list.kptfile().expect("a Kptfile"), type_)
}

/// The items of a list as YAML documents (for comparing whole packages).
pub fn items_text(list: &ResourceList) -> String {
    let nodes: Vec<_> = list.items.iter().map(|o| o.node().clone()).collect();
    cosi_runtime::krm::yaml::emit_documents(&nodes)
}
