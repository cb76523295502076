//! Validation before any mutation, all or nothing: bad input gives `error`
//! results, the items back unchanged and exit code 1.

use crate::fns;
use crate::support::*;
use cosi_runtime::krm::{ResourceList, Severity};

fn errors(list: &ResourceList) -> Vec<String> {
    list.results
        .iter()
        .filter(|r| r.severity == Severity::Error)
        .map(|r| r.message.clone())
        .collect()
}

#[test]
fn a_document_that_is_not_a_resource_list_is_an_error() {
    let (list, out) = run_on(&fns::configmap_actuator(), &cluster("a", 1));
    assert_eq!(out.exit_code, 1);
    assert!(list.items.is_empty());
    assert!(
        errors(&list)[0].contains("not a config.kubernetes.io/v1 ResourceList"),
        "{:?}",
        errors(&list)
    );
}

#[test]
fn an_unknown_resource_list_version_is_an_error() {
    let input = "apiVersion: config.kubernetes.io/v2\nkind: ResourceList\nitems: []\n";
    let (list, out) = run_on(&fns::configmap_actuator(), input);
    assert_eq!(out.exit_code, 1);
    assert!(errors(&list)[0].contains("v2"));
}

#[test]
fn malformed_yaml_is_an_error_naming_the_line() {
    let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- a: [1, 2\n";
    let (list, out) = run_on(&fns::configmap_actuator(), input);
    assert_eq!(out.exit_code, 1);
    assert!(errors(&list)[0].contains("line "), "{:?}", errors(&list));
    assert!(out.stderr.contains("line "));
}

#[test]
fn a_duplicate_mapping_key_is_an_error_naming_its_line() {
    let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nitems: []\n";
    let (list, _) = run_on(&fns::configmap_actuator(), input);
    assert!(errors(&list)[0].contains("line 4"), "{:?}", errors(&list));
}

#[test]
fn input_that_is_not_utf8_is_an_error() {
    let out = cosi_runtime::krm::run(&fns::configmap_actuator(), b"kind: \xff\xfe\n");
    assert_eq!(out.exit_code, 1);
    assert!(out.stdout.contains("not UTF-8"));
}

#[test]
fn an_item_without_api_version_kind_or_name_is_reported_with_file_and_index() {
    let bad = "kind: ConfigMap\nmetadata:\n  annotations:\n    internal.config.kubernetes.io/path: cms.yaml\n    internal.config.kubernetes.io/index: '1'\n";
    let input = list_of(&[KPTFILE, bad]);
    let (list, out) = run_on(&fns::configmap_actuator(), &input);
    assert_eq!(out.exit_code, 1);
    let r = list.results.iter().find(|r| r.severity == Severity::Error).unwrap();
    assert!(
        r.message.contains("apiVersion") && r.message.contains("metadata.name"),
        "{}",
        r.message
    );
    assert!(!r.message.contains("kind,"), "kind is present: {}", r.message);
    let file = r.file.as_ref().unwrap();
    assert_eq!((file.path.as_str(), file.index), ("cms.yaml", 1));
    assert!(r.message.contains("items[1]"));
}

#[test]
fn an_item_that_is_not_a_mapping_is_an_error() {
    let input =
        "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- just a string\n";
    let (list, out) = run_on(&fns::configmap_actuator(), input);
    assert_eq!(out.exit_code, 1);
    assert!(errors(&list).iter().any(|m| m.contains("items[0] is not a mapping")));
}

#[test]
fn duplicate_items_are_an_error_and_nothing_is_changed() {
    let input = list_of(&[KPTFILE, &site("lab", "eu"), &cluster("a", 1), &cluster("a", 2)]);
    let (list, out) = run_on(&fns::cluster_config(), &input);
    assert_eq!(out.exit_code, 1);
    assert!(
        errors(&list).iter().any(|m| m.contains("duplicates items[2]") && m.contains("name a"))
    );
    assert_eq!(items_text(&list), items_text(&ResourceList::parse(&input).unwrap()));
}

#[test]
fn same_name_in_different_namespaces_is_not_a_duplicate() {
    let a = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: one\n";
    let b = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: two\n";
    let (_, out) = run_on(&fns::configmap_actuator(), &list_of(&[KPTFILE, a, b]));
    assert_eq!(out.exit_code, 0, "{}", out.stderr);
}

#[test]
fn a_missing_kptfile_is_an_error_and_nothing_is_changed() {
    let input = list_of(&[&site("lab", "eu"), &cluster("a", 1)]);
    let (list, out) = run_on(&fns::cluster_config(), &input);
    assert_eq!(out.exit_code, 1);
    assert!(errors(&list)[0].contains("Kptfile is missing"));
    assert_eq!(list.items.len(), 2, "no ConfigMap created");
}

#[test]
fn an_error_from_the_function_returns_the_items_unchanged() {
    let failing = cosi_runtime::krm::Downstream::new("failing", fns::config_map(), |_| {
        Err("device offline".into())
    });
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-config\n  annotations:\n    fnruntime.nephio.org/owner: example.com/v1.Cluster.a\n";
    let kpt = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\nstatus:\n  conditions:\n  - type: v1.ConfigMap.a-config\n    status: \"False\"\n    reason: example.com/v1.Cluster.a\n";
    let input = list_of(&[kpt, cm]);
    let (list, out) = run_on(&failing, &input);
    assert_eq!(out.exit_code, 1);
    assert!(errors(&list)[0].contains("device offline"));
    assert_eq!(items_text(&list), items_text(&ResourceList::parse(&input).unwrap()));
}

#[test]
fn a_duplicate_key_is_found_in_small_and_large_mappings() {
    // Small mappings are scanned, large ones (past 16 keys) also keep a set:
    // a duplicate is found on either side of that bound, and a large
    // mapping without one parses.
    let mapping = |keys: &[String]| -> String {
        keys.iter().map(|k| format!("{k}: x\n")).collect::<String>()
    };
    let distinct: Vec<String> = (0..40).map(|i| format!("k{i}")).collect();
    assert!(cosi_runtime::krm::yaml::parse_document(&mapping(&distinct)).is_ok());
    for (at, copy_of) in [(3, 1), (16, 2), (17, 16), (39, 0), (39, 38)] {
        let mut keys = distinct.clone();
        keys[at] = keys[copy_of].clone();
        let err = cosi_runtime::krm::yaml::parse_document(&mapping(&keys))
            .expect_err("a duplicated key is an error");
        assert!(err.to_string().contains("duplicated mapping key"), "{err}");
        assert!(err.to_string().contains(&format!("line {}", at + 1)), "{err}");
    }
}
