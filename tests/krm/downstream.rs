//! The specific downstream function (configmap-actuator): removes
//! delete-marked children and their conditions, actuates the others.

use crate::fns;
use crate::support::*;
use cosi_runtime::krm::{ResourceList, Status};

fn kptfile_with(conditions: &[(&str, &str)]) -> String {
    let mut k = format!("{KPTFILE}status:\n  conditions:\n");
    for (cm, status) in conditions {
        k.push_str(&format!("  - type: v1.ConfigMap.{cm}\n    status: \"{status}\"\n    reason: example.com/v1.Cluster.{cm}\n"));
    }
    k
}

fn owned(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    fnruntime.nephio.org/owner: example.com/v1.Cluster.{name}\n{extra}"
    )
}

fn actuate(docs: &[&str]) -> ResourceList {
    let (list, out) = run_on(&fns::configmap_actuator(), &list_of(docs));
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    list
}

#[test]
fn a_pending_child_is_actuated_and_its_condition_set_true() {
    let list = actuate(&[&kptfile_with(&[("a", "False")]), &owned("a", "")]);
    assert_eq!(
        find(&list, "ConfigMap", "a").unwrap().annotation("example.com/actuated"),
        Some("true")
    );
    let c = condition(&list, "v1.ConfigMap.a").unwrap();
    assert_eq!((c.status, c.reason.as_str()), (Status::True, "example.com/v1.Cluster.a"));
}

#[test]
fn a_delete_marked_child_and_its_condition_are_removed() {
    let list = actuate(&[
        &kptfile_with(&[("a", "False"), ("b", "True")]),
        &owned("a", "    fnruntime.nephio.org/delete: \"true\"\n"),
        &owned("b", ""),
    ]);
    assert!(find(&list, "ConfigMap", "a").is_none());
    assert!(condition(&list, "v1.ConfigMap.a").is_none());
    assert!(find(&list, "ConfigMap", "b").is_some());
    assert!(condition(&list, "v1.ConfigMap.b").is_some());
}

#[test]
fn delete_marked_children_among_kept_ones_all_go_and_the_rest_keep_their_order() {
    let marked = "    fnruntime.nephio.org/delete: \"true\"\n";
    let names = ["a", "b", "c", "d", "e", "f"];
    let conditions: Vec<(&str, &str)> = names.iter().map(|n| (*n, "True")).collect();
    let kptfile = kptfile_with(&conditions);
    // a, c, d and f are delete-marked: the first, two in a row and the last.
    let children: Vec<String> = names
        .iter()
        .map(|n| owned(n, if matches!(*n, "a" | "c" | "d" | "f") { marked } else { "" }))
        .collect();
    let mut docs = vec![kptfile.as_str()];
    docs.extend(children.iter().map(String::as_str));
    let list = actuate(&docs);
    let left: Vec<&str> = list
        .items
        .iter()
        .filter(|o| o.kind() == Some("ConfigMap"))
        .filter_map(|o| o.name())
        .collect();
    assert_eq!(left, ["b", "e"]);
    for gone in ["a", "c", "d", "f"] {
        assert!(condition(&list, &format!("v1.ConfigMap.{gone}")).is_none(), "{gone}");
    }
    assert_eq!(list.items.len(), 3, "the Kptfile and the two kept children");
}

#[test]
fn a_done_child_is_not_actuated_again() {
    let docs = [kptfile_with(&[("a", "True")]), owned("a", "")];
    let input = list_of(&[&docs[0], &docs[1]]);
    let list = actuate(&[&docs[0], &docs[1]]);
    assert_eq!(items_text(&list), items_text(&ResourceList::parse(&input).unwrap()));
}

#[test]
fn unowned_config_maps_are_ignored_entirely() {
    let unowned = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    fnruntime.nephio.org/delete: \"true\"\n";
    let input = list_of(&[&kptfile_with(&[("a", "False")]), unowned]);
    let list = actuate(&[&kptfile_with(&[("a", "False")]), unowned]);
    assert_eq!(items_text(&list), items_text(&ResourceList::parse(&input).unwrap()));
}

#[test]
fn a_child_without_a_condition_waits_for_upstream() {
    let list = actuate(&[KPTFILE, &owned("a", "")]);
    assert_eq!(find(&list, "ConfigMap", "a").unwrap().annotation("example.com/actuated"), None);
}
