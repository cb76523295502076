//! The wildcard function (package-summary): ready when at least one other
//! condition exists and all others are True.

use crate::fns;
use crate::support::*;
use cosi_runtime::krm::{ResourceList, Status};

const OWN: &str = "example.com/v1.Summary.pkg";

fn kptfile_with(conditions: &[(&str, &str)]) -> String {
    let mut k = format!("{KPTFILE}status:\n  conditions:\n");
    for (t, status) in conditions {
        k.push_str(&format!("  - type: {t}\n    status: \"{status}\"\n"));
    }
    k
}

fn cm(name: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  annotations:\n    fnruntime.nephio.org/owner: example.com/v1.Cluster.x\n{extra}"
    )
}

const UNOWNED: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n";

fn summarize(docs: &[&str]) -> ResourceList {
    let (list, out) = run_on(&fns::package_summary(), &list_of(docs));
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
    list
}

fn names(list: &ResourceList) -> Vec<String> {
    let summary = find(list, "Summary", "pkg").expect("a Summary");
    summary
        .node()
        .path(&["spec", "configMaps"])
        .unwrap()
        .as_seq()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn with_no_other_condition_it_is_not_ready() {
    let list = summarize(&[KPTFILE, &cm("b", "")]);
    assert!(find(&list, "Summary", "pkg").is_none());
    let c = condition(&list, OWN).unwrap();
    assert_eq!((c.status, c.reason.as_str()), (Status::False, "NotReady"));
}

#[test]
fn when_all_others_are_true_it_upserts_the_summary_of_owned_live_config_maps() {
    let list = summarize(&[
        &kptfile_with(&[("v1.ConfigMap.b", "True"), ("v1.ConfigMap.a", "True")]),
        &cm("b", ""),
        &cm("a", ""),
        &cm("gone", "    fnruntime.nephio.org/delete: \"true\"\n"),
        UNOWNED,
    ]);
    assert_eq!(names(&list), ["a", "b"]);
    let c = condition(&list, OWN).unwrap();
    assert_eq!((c.status, c.reason.as_str()), (Status::True, "Ready"));
}

#[test]
fn a_pending_condition_removes_the_summary() {
    let summary = "apiVersion: example.com/v1\nkind: Summary\nmetadata:\n  name: pkg\nspec:\n  configMaps: [a]\n";
    let list = summarize(&[
        &kptfile_with(&[("v1.ConfigMap.a", "False"), (OWN, "True")]),
        &cm("a", ""),
        summary,
    ]);
    assert!(find(&list, "Summary", "pkg").is_none());
    assert_eq!(condition(&list, OWN).unwrap().status, Status::False);
}

#[test]
fn its_own_condition_does_not_count_toward_readiness() {
    let list = summarize(&[&kptfile_with(&[(OWN, "True")])]);
    assert_eq!(
        condition(&list, OWN).unwrap().status,
        Status::False,
        "only its own condition: not ready"
    );
}

#[test]
fn an_existing_summary_is_updated_in_place_keeping_its_metadata() {
    let summary = "apiVersion: example.com/v1\nkind: Summary\nmetadata:\n  name: pkg\n  annotations:\n    internal.config.kubernetes.io/path: summary.yaml\nspec:\n  configMaps: [old]\n";
    let list = summarize(&[&kptfile_with(&[("v1.ConfigMap.a", "True")]), &cm("a", ""), summary]);
    assert_eq!(names(&list), ["a"]);
    assert_eq!(
        find(&list, "Summary", "pkg").unwrap().annotation("internal.config.kubernetes.io/path"),
        Some("summary.yaml")
    );
}
