//! The ResourceList wire format: versions, empty input, results, exit codes.

use crate::support::*;
use cosi_runtime::krm::{
    Declaration, Field, FileRef, FnResult, Function, ResourceList, ResourceRef, Severity, run,
};

struct Noop;
impl Function for Noop {
    fn name(&self) -> &str {
        "noop"
    }
    fn declaration(&self) -> Declaration {
        Declaration::default()
    }
    fn requires_kptfile(&self) -> bool {
        false
    }
    fn process(&self, _: &mut ResourceList) {}
}

struct Reports(Severity);
impl Function for Reports {
    fn name(&self) -> &str {
        "reports"
    }
    fn declaration(&self) -> Declaration {
        Declaration::default()
    }
    fn requires_kptfile(&self) -> bool {
        false
    }
    fn process(&self, list: &mut ResourceList) {
        list.results.push(FnResult::new(self.0, "reported"));
    }
}

#[test]
fn empty_stdin_is_an_empty_list() {
    for input in ["", "\n", "# only a comment\n"] {
        let list = ResourceList::parse(input).unwrap();
        assert!(list.items.is_empty() && list.function_config.is_none() && list.results.is_empty());
        assert_eq!(run(&Noop, input.as_bytes()).exit_code, 0);
    }
}

#[test]
fn v1beta1_is_accepted_and_written_back_as_read() {
    let input = "apiVersion: config.kubernetes.io/v1beta1\nkind: ResourceList\nitems: []\n";
    let list = ResourceList::parse(input).unwrap();
    assert_eq!(list.api_version, "config.kubernetes.io/v1beta1");
    assert!(
        run(&Noop, input.as_bytes())
            .stdout
            .starts_with("apiVersion: config.kubernetes.io/v1beta1\n")
    );
}

#[test]
fn function_config_is_optional_and_kept() {
    let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: fn-config\n  data:\n    mode: 0640\n";
    let list = ResourceList::parse(input).unwrap();
    assert_eq!(list.function_config.as_ref().and_then(|c| c.name()), Some("fn-config"));
    assert!(run(&Noop, input.as_bytes()).stdout.contains("functionConfig:\n  apiVersion: v1\n"));
    assert!(run(&Noop, input.as_bytes()).stdout.contains("mode: 0640\n"));
}

#[test]
fn severity_defaults_to_error() {
    let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n- message: no severity given\n";
    let list = ResourceList::parse(input).unwrap();
    assert_eq!(list.results[0].severity, Severity::Error);
    assert_eq!(list.exit_code(), 1);
}

#[test]
fn results_round_trip_with_every_field() {
    let mut r = FnResult::warning("replicas too high");
    r.resource_ref = Some(ResourceRef {
        api_version: "apps/v1".into(),
        kind: "Deployment".into(),
        name: "web".into(),
        namespace: Some("prod".into()),
    });
    r.field = Some(Field {
        path: "spec.replicas".into(),
        current_value: Some("10".into()),
        proposed_value: Some("3".into()),
    });
    r.file = Some(FileRef { path: "deploy.yaml".into(), index: 2 });
    r.tags.insert("team".into(), "on".into());
    let mut list = ResourceList::default();
    list.results.push(r.clone());
    let text = list.to_yaml();
    assert!(text.contains("currentValue: \"10\""), "{text}");
    assert!(text.contains("team: \"on\""), "{text}");
    assert_eq!(ResourceList::parse(&text).unwrap().results, vec![r]);
}

#[test]
fn exit_code_is_one_exactly_when_an_error_result_is_present() {
    let input = list_of(&[&cluster("a", 1)]);
    assert_eq!(run(&Reports(Severity::Info), input.as_bytes()).exit_code, 0);
    assert_eq!(run(&Reports(Severity::Warning), input.as_bytes()).exit_code, 0);
    assert_eq!(run(&Reports(Severity::Error), input.as_bytes()).exit_code, 1);
}

#[test]
fn the_legacy_results_wrapper_and_resource_ref_metadata_name_are_read() {
    let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nresults:\n  items:\n  - message: old\n    severity: info\n    resourceRef:\n      metadata:\n        name: x\n";
    let list = ResourceList::parse(input).unwrap();
    assert_eq!(list.results[0].severity, Severity::Info);
    assert_eq!(list.results[0].resource_ref.as_ref().unwrap().name, "x");
}

/// kpt sends a document's foot comment as the end of its item; written with
/// another key after the items, kyaml reads it as another node's and kpt
/// writes it twice. So the items come last, each comment where it was.
#[test]
fn items_come_last_and_their_comments_come_back_where_kpt_put_them() {
    let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- # head of a\n  apiVersion: v1\n  kind: ConfigMap # kind\n  metadata:\n    name: a\n  data:\n    x: y\n  # foot of a\n";
    let out = run(&Reports(Severity::Warning), input.as_bytes());
    assert_eq!(out.exit_code, 0);
    let items = out.stdout.find("\nitems:\n").expect("items");
    assert!(out.stdout.find("\nresults:\n").is_some_and(|r| r < items), "{}", out.stdout);
    assert!(out.stdout.ends_with(&input[input.find("items:\n").unwrap()..]), "{}", out.stdout);
}
