//! Fidelity: objects a function does not change come back with every
//! scalar's text, type and quoting intact, and kpt's annotations kept.

use crate::fns;
use crate::support::*;
use cosi_runtime::krm::yaml::{Map, Node, Scalar, Seq, Style, emit_documents, parse_documents};
use proptest::prelude::*;

const TRICKY: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
  annotations:
    internal.config.kubernetes.io/path: pods/web.yaml
    internal.config.kubernetes.io/index: '2'
    internal.config.kubernetes.io/id: '7'
    config.kubernetes.io/path: pods/web.yaml
    config.kubernetes.io/index: '2'
    config.k8s.io/id: '7'
    quoted-on: \"on\"
    single-no: 'no'
spec:
  volumes:
  - name: config
    configMap:
      defaultMode: 0640
      items: []
    labels: {app: web, tier: \"on\"}
  containers:
  - name: web
    image: nginx:1.27
    args: [\"--flag\", 'it''s', plain]
    env:
    - name: VERSION
      value: \"1.10\"
    - name: HEX
      value: 0x1F
    - name: BIG
      value: 123456789012345678901234567890
    - name: NOTHING
      value: ~
    - name: TAGGED
      value: !!str 12
    - name: ESCAPED
      value: \"tab\\there \\\"quoted\\\" é\"
    command:
    - sh
    - -c
    - |
      echo start
      exec nginx
";

#[test]
fn an_untouched_object_comes_back_byte_for_byte_through_every_function() {
    let input = list_of(&[KPTFILE, TRICKY]);
    for f in fns::all() {
        let (list, out) = run_on(f.as_ref(), &input);
        assert_eq!(out.exit_code, 0, "{}", out.stderr);
        let pod = find(&list, "Pod", "web").expect("the Pod is kept");
        assert_eq!(emit_documents(&[pod.node().clone()]), TRICKY, "through {}", f.name());
    }
}

#[test]
fn kpt_annotations_are_never_dropped_from_changed_objects() {
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a-config\n  annotations:\n    fnruntime.nephio.org/owner: example.com/v1.Cluster.a\n    internal.config.kubernetes.io/path: a.yaml\n    internal.config.kubernetes.io/index: '0'\n    internal.config.kubernetes.io/id: '3'\n    config.kubernetes.io/path: a.yaml\n    config.kubernetes.io/index: '0'\n    config.k8s.io/id: '3'\n    team.example.com/keep: me\ndata:\n  old: value\n";
    let input = list_of(&[KPTFILE, &site("lab", "eu"), &cluster("a", 2), cm]);
    let (list, _) = run_on(&fns::cluster_config(), &input);
    let cm = find(&list, "ConfigMap", "a-config").unwrap();
    for key in cosi_runtime::krm::FILE_ANNOTATIONS {
        assert!(cm.annotation(key).is_some(), "{key} kept");
    }
    assert_eq!(cm.annotation("team.example.com/keep"), Some("me"));
    assert_eq!(cm.get_str(&["data", "nodes"]), Some("2"), "but the content is updated");
    assert!(cm.node().path(&["data", "old"]).is_none());
}

#[test]
fn new_strings_that_yaml_1_1_reads_otherwise_are_quoted() {
    let mut data = Map::new();
    for v in [
        "yes", "no", "on", "off", "y", "n", "true", "null", "~", "0640", "1.10", "0x1F", "12:30",
        "1e3", "",
    ] {
        data.insert(&format!("k{}", data.len()), Node::string(v));
    }
    let text = emit_documents(&[Node::Map(data.clone())]);
    for line in text.lines() {
        assert!(line.contains(": \""), "quoted: {line}");
    }
    let back = parse_documents(&text).unwrap();
    assert_eq!(back[0].to_json(), Node::Map(data).to_json());
}

#[test]
fn plain_strings_that_need_no_quotes_stay_plain() {
    let mut data = Map::new();
    data.insert("a", Node::string("eu-west-1"));
    data.insert("b", Node::string("nginx:1.27"));
    assert_eq!(emit_documents(&[Node::Map(data)]), "a: eu-west-1\nb: nginx:1.27\n");
}

fn plain_value() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "0640",
            "on",
            "no",
            "1.10",
            "0x1F",
            "~",
            "null",
            "true",
            "12:30",
            "1e3",
            "-1",
            "eu-west-1",
            "a b"
        ])
        .prop_map(str::to_string),
        "[a-z][a-z0-9._/-]{0,10}",
    ]
}

fn any_text() -> impl Strategy<Value = String> {
    prop_oneof!["[ -~]{0,12}", "\\PC{0,8}", ".{0,8}", "[a-z \n]{1,20}"]
}

fn scalar() -> impl Strategy<Value = Node> {
    prop_oneof![
        plain_value().prop_map(|v| Node::Scalar(Scalar::new(v, Style::Plain, None))),
        any_text().prop_map(|v| Node::Scalar(Scalar::new(v, Style::SingleQuoted, None))),
        any_text().prop_map(|v| Node::Scalar(Scalar::new(v, Style::DoubleQuoted, None))),
        any_text().prop_map(|v| Node::Scalar(Scalar::new(v, Style::Literal, None))),
        any_text().prop_map(Node::string),
        plain_value().prop_map(|v| Node::Scalar(Scalar::new(
            v,
            Style::Plain,
            Some("!!str".into())
        ))),
    ]
}

fn node() -> impl Strategy<Value = Node> {
    scalar().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            (prop::collection::vec(inner.clone(), 0..5), any::<bool>()).prop_map(|(v, flow)| {
                let mut s = Seq::from(v);
                s.set_flow(flow);
                Node::Seq(s)
            }),
            (prop::collection::vec((any_text(), inner), 0..5), any::<bool>()).prop_map(
                |(entries, flow)| {
                    let mut m = Map::new();
                    m.set_flow(flow);
                    for (k, v) in entries {
                        m.insert(&k, v);
                    }
                    Node::Map(m)
                }
            ),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn emitted_documents_read_back_as_the_same_values_and_text(docs in prop::collection::vec(node(), 1..3)) {
        let text = emit_documents(&docs);
        let back = parse_documents(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert_eq!(back.len(), docs.len(), "{}", text);
        for (a, b) in docs.iter().zip(&back) {
            prop_assert_eq!(a.to_json(), b.to_json(), "{}", text);
        }
        prop_assert_eq!(emit_documents(&back), text);
    }
}

#[test]
fn a_null_annotations_field_still_receives_kpt_annotations() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  annotations:\n",
    )
    .unwrap();
    let items = cosi_runtime::krm::package::read_package(dir.path()).unwrap();
    assert_eq!(items[0].file(), Some(("cm.yaml".to_string(), 0)));
}
