//! Kptfile conditions (`status.conditions`) and the fn-runtime annotation keys:
//! the signals functions pass to each other in the condition choreography.
//!
//! A child's condition has type `<apiVersion>.<Kind>.<name>` of the child
//! (core group: `v1.ConfigMap.x`), reason = the owner value
//! (`<apiVersion>.<Kind>.<name>` of the parent) and status `False` while a
//! downstream function still has work to do.

use std::collections::BTreeMap;
use std::fmt;

use crate::hashing::SeededMap;

use super::object::Object;
use super::yaml::{Map, Node, Seq};

/// The default annotation prefix (condkptsdk uses `specializer.nephio.org/`).
pub const DEFAULT_PREFIX: &str = "fnruntime.nephio.org/";

/// The owner and delete annotation keys under one prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keys {
    /// `<prefix>owner`.
    pub owner: String,
    /// `<prefix>delete`.
    pub delete: String,
}

impl Keys {
    /// The keys under `prefix` (e.g. `fnruntime.nephio.org/`).
    pub fn new(prefix: &str) -> Self {
        Keys { owner: format!("{prefix}owner"), delete: format!("{prefix}delete") }
    }

    /// The owner value of `object`, if it has a non-empty one.
    pub fn owner_of<'a>(&self, object: &'a Object) -> Option<&'a str> {
        object.annotation(&self.owner).filter(|o| !o.is_empty())
    }

    /// Whether `object` is delete-marked (`<prefix>delete: "true"`).
    pub fn is_delete_marked(&self, object: &Object) -> bool {
        object.annotation(&self.delete) == Some("true")
    }
}

impl Default for Keys {
    fn default() -> Self {
        Keys::new(DEFAULT_PREFIX)
    }
}

/// A condition's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Done.
    True,
    /// Work pending.
    False,
    /// Unknown (or unreadable).
    Unknown,
}

impl Status {
    /// The wire form.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }

    fn parse(s: Option<&str>) -> Status {
        match s {
            Some("True") => Status::True,
            Some("False") => Status::False,
            _ => Status::Unknown,
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One Kptfile condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// The type (for a child: `<apiVersion>.<Kind>.<name>` of the child).
    pub type_: String,
    /// The status.
    pub status: Status,
    /// The reason (for a child: the owner value).
    pub reason: String,
    /// A message.
    pub message: String,
}

impl Condition {
    /// A condition from its parts.
    pub fn new(
        type_: impl Into<String>,
        status: Status,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Condition { type_: type_.into(), status, reason: reason.into(), message: message.into() }
    }

    fn from_node(node: &Node) -> Option<Self> {
        let s = |k: &str| node.get(k).and_then(Node::as_str).unwrap_or_default().to_string();
        let type_ = node.get("type")?.as_str()?.to_string();
        Some(Condition {
            type_,
            status: Status::parse(node.get("status").and_then(Node::as_str)),
            reason: s("reason"),
            message: s("message"),
        })
    }

    fn to_node(&self) -> Node {
        let mut m = Map::new();
        m.insert("type", Node::string(self.type_.clone()));
        m.insert("status", Node::string(self.status.as_str()));
        if !self.reason.is_empty() {
            m.insert("reason", Node::string(self.reason.clone()));
        }
        if !self.message.is_empty() {
            m.insert("message", Node::string(self.message.clone()));
        }
        Node::Map(m)
    }
}

/// Every condition of a Kptfile, in order.
pub fn conditions(kptfile: &Object) -> Vec<Condition> {
    kptfile
        .node()
        .path(&["status", "conditions"])
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(Condition::from_node)
        .collect()
}

/// The condition of type `type_`.
pub fn find(kptfile: &Object, type_: &str) -> Option<Condition> {
    kptfile
        .node()
        .path(&["status", "conditions"])
        .and_then(Node::as_seq)?
        .iter()
        .find(|n| n.get("type").and_then(Node::as_str) == Some(type_))
        .and_then(Condition::from_node)
}

fn conditions_seq(kptfile: &mut Object) -> Option<&mut Vec<Node>> {
    let status = kptfile.node_mut().map_at(&["status"])?;
    if !matches!(status.get("conditions"), Some(Node::Seq(_))) {
        status.insert("conditions", Node::Seq(Seq::new()));
    }
    match status.get_mut("conditions") {
        Some(Node::Seq(s)) => Some(&mut **s),
        _ => None,
    }
}

/// Sets a condition: rewritten in place when its status, reason or message
/// differ, inserted in type order when new (so the result does not depend on
/// the order functions ran in). Returns whether anything changed.
pub fn set(kptfile: &mut Object, condition: &Condition) -> bool {
    if find(kptfile, &condition.type_).as_ref() == Some(condition) {
        return false;
    }
    let Some(seq) = conditions_seq(kptfile) else { return false };
    let existing =
        seq.iter().position(|n| n.get("type").and_then(Node::as_str) == Some(&condition.type_));
    match existing {
        Some(i) => seq[i] = condition.to_node(),
        None => {
            let at = seq
                .iter()
                .position(|n| {
                    n.get("type")
                        .and_then(Node::as_str)
                        .is_some_and(|t| t > condition.type_.as_str())
                })
                .unwrap_or(seq.len());
            seq.insert(at, condition.to_node());
        }
    }
    true
}

/// Removes the condition of type `type_`. Returns whether it was there.
pub fn remove(kptfile: &mut Object, type_: &str) -> bool {
    if find(kptfile, type_).is_none() {
        return false;
    }
    let Some(seq) = conditions_seq(kptfile) else { return false };
    seq.retain(|n| n.get("type").and_then(Node::as_str) != Some(type_));
    true
}

/// A batch of condition changes over a snapshot of a Kptfile's conditions:
/// reads see the changes, [`apply`](ConditionEdits::apply) writes them in one
/// pass (replaced in place, removed, new ones inserted in type order), so a
/// function touching thousands of conditions stays linear.
#[derive(Clone, Debug, Default)]
pub struct ConditionEdits {
    /// One entry per condition (a child's), looked up per child in every
    /// run; condition types come from the package: seeded ([`crate::hashing`]).
    current: SeededMap<String, Condition>,
    changes: BTreeMap<String, Option<Condition>>,
}

impl ConditionEdits {
    /// The conditions of `kptfile`, ready for edits.
    pub fn of(kptfile: &Object) -> Self {
        let current = conditions(kptfile).into_iter().map(|c| (c.type_.clone(), c)).collect();
        ConditionEdits { current, changes: BTreeMap::new() }
    }

    /// The condition of type `type_`, edits included.
    pub fn get(&self, type_: &str) -> Option<&Condition> {
        match self.changes.get(type_) {
            Some(change) => change.as_ref(),
            None => self.current.get(type_),
        }
    }

    /// Every condition type, edits included, in order.
    pub fn types(&self) -> Vec<String> {
        let mut types: Vec<String> =
            self.current.keys().filter(|t| !self.changes.contains_key(*t)).cloned().collect();
        types.extend(self.changes.iter().filter(|(_, c)| c.is_some()).map(|(t, _)| t.clone()));
        // The snapshot is hashed with a per-process seed: sorted, the list is
        // the same on every run.
        types.sort_unstable();
        types
    }

    /// Sets a condition (a no-op if it is already so).
    pub fn set(&mut self, condition: Condition) {
        if self.get(&condition.type_) == Some(&condition) {
            return;
        }
        if self.current.get(&condition.type_) == Some(&condition) {
            self.changes.remove(&condition.type_);
        } else {
            self.changes.insert(condition.type_.clone(), Some(condition));
        }
    }

    /// Removes the condition of type `type_`, if any.
    pub fn remove(&mut self, type_: &str) {
        if self.current.contains_key(type_) {
            self.changes.insert(type_.to_string(), None);
        } else {
            self.changes.remove(type_);
        }
    }

    /// Writes the edits into `kptfile`. Returns whether anything changed.
    pub fn apply(mut self, kptfile: &mut Object) -> bool {
        if self.changes.is_empty() {
            return false;
        }
        let Some(seq) = conditions_seq(kptfile) else { return false };
        let mut fresh: Vec<Condition> = Vec::new();
        for (type_, change) in std::mem::take(&mut self.changes) {
            if let Some(c) = change {
                if self.current.contains_key(&type_) {
                    self.changes.insert(type_, Some(c));
                } else {
                    fresh.push(c);
                }
            } else {
                self.changes.insert(type_, None);
            }
        }
        let mut pending = fresh.into_iter().peekable();
        let mut out = Vec::with_capacity(seq.len() + pending.len());
        for node in std::mem::take(seq) {
            // The type is borrowed from the node (no copy per condition).
            let change = match node.get("type").and_then(Node::as_str) {
                Some(t) => {
                    while pending.peek().is_some_and(|p| p.type_.as_str() < t) {
                        if let Some(p) = pending.next() {
                            out.push(p.to_node());
                        }
                    }
                    self.changes.remove(t)
                }
                None => None,
            };
            match change {
                Some(Some(c)) => out.push(c.to_node()),
                Some(None) => {}
                None => out.push(node),
            }
        }
        out.extend(pending.map(|p| p.to_node()));
        *seq = out;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krm::object::Gvk;

    fn kptfile(types: &[&str]) -> Object {
        let mut k = Object::new(&Gvk::kptfile(), "pkg");
        for t in types {
            set(&mut k, &Condition::new(*t, Status::True, "", ""));
        }
        k
    }

    #[test]
    fn types_lists_every_condition_once_in_order_edits_included() {
        let many: Vec<String> = (0..64).map(|i| format!("t{:02}", 63 - i)).collect();
        let names: Vec<&str> = many.iter().map(String::as_str).collect();
        let mut edits = ConditionEdits::of(&kptfile(&names));
        edits.remove("t10");
        edits.set(Condition::new("t99", Status::True, "r", "m"));
        edits.set(Condition::new("t05", Status::False, "r", "m"));
        let mut expected: Vec<String> = many.iter().filter(|t| *t != "t10").cloned().collect();
        expected.push("t99".into());
        expected.sort();
        assert_eq!(edits.types(), expected);
    }

    #[test]
    fn batched_edits_give_the_same_kptfile_as_one_by_one_edits() {
        let start = ["b", "d", "a"]; // deliberately unsorted: inserts go before the first greater type
        let mut one_by_one = kptfile(&start);
        let mut batched = one_by_one.clone();
        let mut edits = ConditionEdits::of(&batched);
        for (t, status) in
            [("c", Status::False), ("d", Status::False), ("e", Status::False), ("0", Status::True)]
        {
            let c = Condition::new(t, status, "r", "m");
            set(&mut one_by_one, &c);
            edits.set(c);
        }
        remove(&mut one_by_one, "a");
        edits.remove("a");
        assert!(edits.apply(&mut batched));
        assert_eq!(batched, one_by_one);
        let order: Vec<String> = conditions(&batched).into_iter().map(|c| c.type_).collect();
        assert_eq!(order, ["0", "b", "c", "d", "e"]);
    }

    #[test]
    fn edits_that_change_nothing_write_nothing() {
        let mut k = kptfile(&["a"]);
        let before = k.clone();
        let mut edits = ConditionEdits::of(&k);
        edits.set(Condition::new("a", Status::True, "", ""));
        edits.remove("missing");
        assert!(!edits.apply(&mut k));
        assert_eq!(k, before);
    }
}
