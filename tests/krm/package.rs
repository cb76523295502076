//! Package directories: reading files into annotated items, writing them
//! back file by file, and the errors on the way.

use cosi_runtime::krm::package::{default_path, files_of, read_package, write_package};
use cosi_runtime::krm::{Gvk, KrmError, Object, PATH_ANNOTATION};

#[test]
fn every_document_gets_its_path_and_index_and_hidden_files_are_skipped() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/two.yaml"), "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n").unwrap();
    std::fs::write(
        dir.path().join(".hidden.yaml"),
        "apiVersion: v1\nkind: C\nmetadata:\n  name: c\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not yaml").unwrap();
    let items = read_package(dir.path()).unwrap();
    let files: Vec<_> = items.iter().map(|o| o.file().unwrap()).collect();
    assert_eq!(files, [("sub/two.yaml".to_string(), 0), ("sub/two.yaml".to_string(), 1)]);
    assert_eq!(
        items[1].annotation("config.kubernetes.io/index"),
        Some("1"),
        "legacy keys too, as kpt"
    );
}

#[test]
fn a_malformed_file_is_an_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.yaml"), "apiVersion: v1\nkind: [\n").unwrap();
    match read_package(dir.path()) {
        Err(KrmError::File { path, source }) => {
            assert_eq!(path, "bad.yaml");
            assert!(source.line >= 2, "{source}");
        }
        other => panic!("expected a file error, got {other:?}"),
    }
}

#[test]
fn writing_back_restores_the_files_without_the_placement_annotations() {
    let dir = tempfile::tempdir().unwrap();
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  mode: 0640\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  annotations:\n    keep: \"yes\"\n";
    std::fs::write(dir.path().join("cms.yaml"), text).unwrap();
    let items = read_package(dir.path()).unwrap();
    let files = files_of(&items).unwrap();
    assert_eq!(files["cms.yaml"], text);
}

#[test]
fn documents_are_written_in_index_order_whatever_the_item_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = "apiVersion: v1\nkind: A\nmetadata:\n  name: first\n---\napiVersion: v1\nkind: A\nmetadata:\n  name: second\n";
    std::fs::write(dir.path().join("a.yaml"), text).unwrap();
    let mut items = read_package(dir.path()).unwrap();
    items.reverse();
    assert_eq!(files_of(&items).unwrap()["a.yaml"], text);
}

#[test]
fn a_new_item_goes_to_kpts_default_path() {
    let mut namespaced = Object::new(&Gvk::new("v1", "ConfigMap"), "x");
    namespaced
        .node_mut()
        .map_at(&["metadata"])
        .unwrap()
        .insert("namespace", cosi_runtime::krm::yaml::Node::string("prod"));
    assert_eq!(default_path(&namespaced), "prod/configmap_x.yaml");
    assert_eq!(
        default_path(&Object::new(&Gvk::new("example.com/v1", "Summary"), "s")),
        "summary_s.yaml"
    );
}

#[test]
fn a_path_escaping_the_package_is_refused_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let mut evil = Object::new(&Gvk::new("v1", "ConfigMap"), "x");
    evil.set_annotation(PATH_ANNOTATION, "../outside.yaml");
    assert!(matches!(write_package(dir.path(), &[evil]), Err(KrmError::Io { .. })));
    assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
}

#[test]
fn a_file_left_without_items_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gone.yaml"), "apiVersion: v1\nkind: A\nmetadata:\n  name: a\n")
        .unwrap();
    std::fs::write(dir.path().join("kept.yaml"), "apiVersion: v1\nkind: B\nmetadata:\n  name: b\n")
        .unwrap();
    let items: Vec<Object> =
        read_package(dir.path()).unwrap().into_iter().filter(|o| o.kind() == Some("B")).collect();
    assert_eq!(write_package(dir.path(), &items).unwrap(), ["kept.yaml"]);
    assert!(!dir.path().join("gone.yaml").exists());
}
