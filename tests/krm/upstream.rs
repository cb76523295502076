//! The upstream function (cluster-config): populate, diff, create, update,
//! delete-mark, not-ready garbage collection, conditions.

use crate::fns;
use crate::support::*;
use cosi_runtime::krm::{Gvk, Object, ResourceList, Severity, Status, Upstream, Watch};

const OWNER: &str = "fnruntime.nephio.org/owner";
const DELETE: &str = "fnruntime.nephio.org/delete";

fn upstream(docs: &[&str]) -> ResourceList {
    let (list, out) = run_on(&fns::cluster_config(), &list_of(docs));
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    list
}

fn again(list: &ResourceList) -> ResourceList {
    let (next, out) = run_on(&fns::cluster_config(), &list.to_yaml());
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    next
}

fn child(owner_cluster: &str, nodes: &str, extra_annotations: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {owner_cluster}-config\n  annotations:\n    {OWNER}: example.com/v1.Cluster.{owner_cluster}\n{extra_annotations}data:\n  cluster: {owner_cluster}\n  region: eu\n  nodes: \"{nodes}\"\n"
    )
}

#[test]
fn a_new_parent_gets_its_child_with_the_owner_annotation_and_a_false_condition() {
    let list = upstream(&[KPTFILE, &site("lab", "eu"), &cluster("edge-1", 3)]);
    let cm = find(&list, "ConfigMap", "edge-1-config").expect("child created");
    assert_eq!(cm.annotation(OWNER), Some("example.com/v1.Cluster.edge-1"));
    assert_eq!(cm.get_str(&["data", "cluster"]), Some("edge-1"));
    assert_eq!(cm.get_str(&["data", "region"]), Some("eu"));
    assert!(cm.node().path(&["data", "nodes"]).unwrap().to_json().is_string(), "nodes is a string");
    let c = condition(&list, "v1.ConfigMap.edge-1-config").expect("condition");
    assert_eq!((c.status, c.reason.as_str()), (Status::False, "example.com/v1.Cluster.edge-1"));
}

#[test]
fn an_equal_child_and_its_condition_are_left_alone() {
    let first = upstream(&[KPTFILE, &site("lab", "eu"), &cluster("edge-1", 3)]);
    let mut done = first.clone();
    let kpt = done.kptfile_index().unwrap();
    let cond = cosi_runtime::krm::Condition::new(
        "v1.ConfigMap.edge-1-config",
        Status::True,
        "example.com/v1.Cluster.edge-1",
        "actuated",
    );
    cosi_runtime::krm::conditions::set(&mut done.items[kpt], &cond);
    let second = again(&done);
    assert_eq!(second.to_yaml(), done.to_yaml(), "nothing changes");
}

#[test]
fn a_changed_parent_updates_its_child_and_its_condition_returns_to_false() {
    let kpt = format!(
        "{KPTFILE}status:\n  conditions:\n  - type: v1.ConfigMap.edge-1-config\n    status: \"True\"\n    reason: example.com/v1.Cluster.edge-1\n"
    );
    let list =
        upstream(&[&kpt, &site("lab", "eu"), &cluster("edge-1", 7), &child("edge-1", "3", "")]);
    assert_eq!(
        find(&list, "ConfigMap", "edge-1-config").unwrap().get_str(&["data", "nodes"]),
        Some("7")
    );
    assert_eq!(condition(&list, "v1.ConfigMap.edge-1-config").unwrap().status, Status::False);
    assert_eq!(list.items.len(), 4, "updated in place, nothing added");
}

#[test]
fn an_update_keeps_foreign_metadata_and_replaces_every_other_top_level_field() {
    let extra =
        "    example.com/actuated: \"true\"\n    internal.config.kubernetes.io/path: cms.yaml\n";
    let stale = format!("{}binaryData:\n  x: eA==\n", child("edge-1", "3", extra));
    let list = upstream(&[KPTFILE, &site("lab", "eu"), &cluster("edge-1", 4), &stale]);
    let cm = find(&list, "ConfigMap", "edge-1-config").unwrap();
    assert_eq!(cm.annotation("example.com/actuated"), Some("true"));
    assert_eq!(cm.annotation("internal.config.kubernetes.io/path"), Some("cms.yaml"));
    assert!(cm.node().get("binaryData").is_none(), "a field the child no longer wants is removed");
    assert_eq!(cm.get_str(&["data", "nodes"]), Some("4"));
}

#[test]
fn a_missing_condition_of_an_equal_child_is_recreated_false() {
    let list =
        upstream(&[KPTFILE, &site("lab", "eu"), &cluster("edge-1", 3), &child("edge-1", "3", "")]);
    let c = condition(&list, "v1.ConfigMap.edge-1-config").expect("recreated");
    assert_eq!(c.status, Status::False);
    assert_eq!(c.message, "create condition again as it was deleted");
}

#[test]
fn a_child_whose_parent_is_gone_is_delete_marked_never_removed() {
    let list = upstream(&[KPTFILE, &site("lab", "eu"), &child("gone", "3", "")]);
    let cm = find(&list, "ConfigMap", "gone-config").expect("kept: the delete is downstream's");
    assert_eq!(cm.annotation(DELETE), Some("true"));
    let c = condition(&list, "v1.ConfigMap.gone-config").unwrap();
    assert_eq!((c.status, c.reason.as_str()), (Status::False, "example.com/v1.Cluster.gone"));
}

#[test]
fn without_a_site_every_child_is_delete_marked_with_a_warning_naming_the_site_kind() {
    let list = upstream(&[KPTFILE, &cluster("edge-1", 3), &child("edge-1", "3", "")]);
    assert_eq!(find(&list, "ConfigMap", "edge-1-config").unwrap().annotation(DELETE), Some("true"));
    let warning = list.results.iter().find(|r| r.severity == Severity::Warning).expect("a warning");
    assert!(warning.message.contains("example.com/v1 Site"), "{}", warning.message);
}

#[test]
fn two_sites_or_a_site_without_region_make_the_run_not_ready() {
    for sites in [vec![site("a", "eu"), site("b", "us")], vec![site("a", "\"\"")]] {
        let mut docs = vec![KPTFILE.to_string(), cluster("edge-1", 3), child("edge-1", "3", "")];
        docs.extend(sites);
        let refs: Vec<&str> = docs.iter().map(String::as_str).collect();
        let list = upstream(&refs);
        assert_eq!(
            find(&list, "ConfigMap", "edge-1-config").unwrap().annotation(DELETE),
            Some("true")
        );
        assert!(find(&list, "ConfigMap", "edge-2-config").is_none());
    }
}

#[test]
fn a_child_desired_again_loses_its_delete_mark() {
    let marked = child("edge-1", "3", &format!("    {DELETE}: \"true\"\n"));
    let list = upstream(&[KPTFILE, &site("lab", "eu"), &cluster("edge-1", 3), &marked]);
    let cm = find(&list, "ConfigMap", "edge-1-config").unwrap();
    assert_eq!(cm.annotation(DELETE), None);
    assert_eq!(condition(&list, "v1.ConfigMap.edge-1-config").unwrap().status, Status::False);
}

#[test]
fn an_unowned_object_with_the_childs_name_is_not_taken_over() {
    let unowned = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: edge-1-config\n";
    let (list, out) = run_on(
        &fns::cluster_config(),
        &list_of(&[KPTFILE, &site("lab", "eu"), &cluster("edge-1", 3), unowned]),
    );
    assert_eq!(out.exit_code, 1);
    assert!(list.results.iter().any(|r| r.message.contains("is not one of its children")));
}

#[test]
fn names_with_dots_and_the_core_group_give_exact_condition_types() {
    let list = upstream(&[KPTFILE, &site("lab", "eu"), &cluster("edge.1", 3)]);
    let c = condition(&list, "v1.ConfigMap.edge.1-config").expect("core group type");
    assert_eq!(c.reason, "example.com/v1.Cluster.edge.1");
    // A second run recognises the dotted names as its own: nothing changes.
    assert_eq!(again(&list).to_yaml(), list.to_yaml());
}

#[test]
fn a_stale_condition_without_object_or_desire_is_removed() {
    let kpt = format!(
        "{KPTFILE}status:\n  conditions:\n  - type: v1.ConfigMap.old-config\n    status: \"True\"\n    reason: example.com/v1.Cluster.old\n  - type: v1.ConfigMap.other\n    status: \"True\"\n    reason: someone.else/v1.Thing.x\n"
    );
    let list = upstream(&[&kpt, &site("lab", "eu")]);
    assert!(condition(&list, "v1.ConfigMap.old-config").is_none());
    assert!(condition(&list, "v1.ConfigMap.other").is_some(), "other owners' conditions are kept");
}

#[test]
fn the_annotation_prefix_is_configurable() {
    let f = Upstream::new("custom", Gvk::new("example.com/v1", "Cluster"), |c, _| {
        Ok(vec![Object::new(
            &Gvk::new("v1", "ConfigMap"),
            &format!("{}-x", c.name().unwrap_or_default()),
        )])
    })
    .owns(Gvk::new("v1", "ConfigMap"))
    .prefix("specializer.nephio.org/");
    let (list, _) = run_on(&f, &list_of(&[KPTFILE, &cluster("a", 1)]));
    let cm = find(&list, "ConfigMap", "a-x").unwrap();
    assert_eq!(cm.annotation("specializer.nephio.org/owner"), Some("example.com/v1.Cluster.a"));
    assert_eq!(cm.annotation(OWNER), None);
}

/// An upstream For clusters that watches each one's claims (required: a
/// cluster without one is not ready) and populates a ConfigMap named
/// `<cluster>-<its claim count>`, after `check(cluster, claims)`.
fn counting_claims(check: fn(&Object, &[&Object])) -> Upstream {
    Upstream::new("per-parent", fns::cluster(), move |c, watched| {
        let claims = watched.get(&Gvk::new("example.com/v1", "Claim"));
        check(c, claims);
        let name = format!("{}-{}", c.name().unwrap_or_default(), claims.len());
        Ok(vec![Object::new(&fns::config_map(), &name)])
    })
    .owns(fns::config_map())
    .watch(
        Watch::per_parent(Gvk::new("example.com/v1", "Claim"))
            .required(|c| if c.is_empty() { Err("no claim".into()) } else { Ok(()) }),
    )
}

#[test]
fn per_parent_watches_see_only_objects_owned_by_that_parent() {
    let claim = |owner: &str, name: &str| {
        format!(
            "apiVersion: example.com/v1\nkind: Claim\nmetadata:\n  name: {name}\n  annotations:\n    {OWNER}: example.com/v1.Cluster.{owner}\n"
        )
    };
    let f = counting_claims(|_, _| {});
    let (list, out) = run_on(
        &f,
        &list_of(&[
            KPTFILE,
            &cluster("a", 1),
            &cluster("b", 1),
            &claim("a", "c1"),
            &claim("a", "c2"),
        ]),
    );
    assert_eq!(out.exit_code, 0);
    assert!(find(&list, "ConfigMap", "a-2").is_some());
    assert!(list.items.iter().all(|o| o.name() != Some("b-0")), "b has no claim: not ready");
    assert!(list.results.iter().any(|r| r.message.contains("example.com/v1.Cluster.b not ready")));
}

#[test]
fn per_parent_watches_give_each_of_many_parents_exactly_its_own_objects() {
    // 120 parents with 0 to 3 claims each (parent i has i % 4), listed
    // interleaved with the other parents' claims: the count each child
    // carries is its own parent's; a parent without a claim is not ready.
    let claim = |owner: usize, k: usize| {
        format!(
            "apiVersion: example.com/v1\nkind: Claim\nmetadata:\n  name: c{owner}-{k}\n  annotations:\n    {OWNER}: example.com/v1.Cluster.p{owner}\n"
        )
    };
    let mut docs = vec![KPTFILE.to_string()];
    for i in 0..120 {
        docs.push(cluster(&format!("p{i}"), 1));
    }
    for k in 0..3 {
        for i in (0..120).filter(|i| i % 4 > k) {
            docs.push(claim(i, k));
        }
    }
    let f = counting_claims(|cluster, claims| {
        let owner = format!("example.com/v1.Cluster.{}", cluster.name().unwrap_or_default());
        assert!(claims.iter().all(|o| o.annotation(OWNER) == Some(owner.as_str())), "{owner}");
    });
    let docs: Vec<&str> = docs.iter().map(String::as_str).collect();
    let (list, out) = run_on(&f, &list_of(&docs));
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    for i in 0..120 {
        let claims = i % 4;
        let made = find(&list, "ConfigMap", &format!("p{i}-{claims}")).is_some();
        assert_eq!(made, claims > 0, "parent p{i} with {claims} claims");
    }
    let not_ready = list.results.iter().filter(|r| r.message.contains("not ready")).count();
    assert_eq!(not_ready, 30, "the 30 parents without a claim");
}

#[test]
fn a_child_populated_twice_is_an_error_but_the_same_name_in_another_namespace_is_not() {
    let twice = Upstream::new("twice", fns::cluster(), |c, _| {
        let name = format!("{}-x", c.name().unwrap_or_default());
        Ok(vec![Object::new(&fns::config_map(), &name), Object::new(&fns::config_map(), &name)])
    })
    .owns(fns::config_map());
    let (list, out) = run_on(&twice, &list_of(&[KPTFILE, &cluster("a", 1)]));
    assert_eq!(out.exit_code, 1);
    assert!(list.results.iter().any(|r| r.message.contains("is populated twice")), "{list:?}");

    let namespaced = Upstream::new("namespaced", fns::cluster(), |c, _| {
        let name = format!("{}-x", c.name().unwrap_or_default());
        let mut other = Object::new(&fns::config_map(), &name);
        if let Some(metadata) = other.node_mut().map_at(&["metadata"]) {
            metadata.insert("namespace", cosi_runtime::krm::yaml::Node::string("other"));
        }
        Ok(vec![Object::new(&fns::config_map(), &name), other])
    })
    .owns(fns::config_map());
    let (list, out) = run_on(&namespaced, &list_of(&[KPTFILE, &cluster("a", 1)]));
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    let namespaces: Vec<Option<&str>> =
        list.items.iter().filter(|o| o.name() == Some("a-x")).map(|o| o.namespace()).collect();
    assert_eq!(namespaces, vec![None, Some("other")]);
}
