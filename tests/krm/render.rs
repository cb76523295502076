//! The example package rendered two ways — the functions piped once each, and
//! converging in one process on the controller engine — gives the same
//! package; a second pass changes nothing; deleting a Cluster removes its
//! ConfigMap and updates the Summary.

use std::collections::BTreeMap;
use std::path::Path;

use crate::fns;
use cosi_runtime::krm::package::{files_of, read_package, write_package};
use cosi_runtime::krm::render::{render, render_dir, render_pipe};
use cosi_runtime::krm::{Function, Object, Status, conditions};

fn example() -> Vec<Object> {
    read_package(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/krm/package")).unwrap()
}

fn pipe(items: Vec<Object>) -> Vec<Object> {
    let functions = fns::all();
    let refs: Vec<&dyn Function> = functions.iter().map(|f| f.as_ref()).collect();
    let list = render_pipe(items, &refs);
    assert_eq!(list.exit_code(), 0, "{:?}", list.results);
    list.items
}

async fn in_process(items: Vec<Object>) -> (Vec<Object>, Vec<(String, usize, usize)>) {
    let report = render(items, fns::all()).await.unwrap();
    assert_eq!(report.exit_code(), 0, "{:?}", report.results);
    let rounds = report.rounds.iter().map(|r| (r.function.clone(), r.rounds, r.changes)).collect();
    (report.items, rounds)
}

fn files(items: &[Object]) -> BTreeMap<String, String> {
    files_of(items).unwrap()
}

fn without_cluster(items: &[Object], name: &str) -> Vec<Object> {
    items
        .iter()
        .filter(|o| !(o.kind() == Some("Cluster") && o.name() == Some(name)))
        .cloned()
        .collect()
}

fn summary_names(items: &[Object]) -> Vec<String> {
    let summary = items.iter().find(|o| o.kind() == Some("Summary")).expect("a Summary");
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
fn the_pipe_renders_the_example_package_to_its_expected_shape() {
    let out = pipe(example());
    let f = files(&out);
    assert_eq!(
        f.keys().cloned().collect::<Vec<_>>(),
        [
            "Kptfile",
            "clusters.yaml",
            "configmap_edge-1-config.yaml",
            "configmap_edge-2-config.yaml",
            "settings.yaml",
            "site.yaml",
            "summary_edge-fleet.yaml",
        ]
    );
    assert_eq!(summary_names(&out), ["edge-1-config", "edge-2-config"]);
    let kpt = out.iter().find(|o| o.kind() == Some("Kptfile")).unwrap();
    let all = conditions::conditions(kpt);
    assert_eq!(all.len(), 3);
    assert!(all.iter().all(|c| c.status == Status::True), "{all:?}");
    let original = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/krm/package/settings.yaml"),
    )
    .unwrap();
    assert_eq!(f["settings.yaml"], original, "untouched files come back byte for byte");
}

#[actix::test]
async fn the_in_process_render_gives_the_same_package_as_the_pipe() {
    let piped = files(&pipe(example()));
    let (items, rounds) = in_process(example()).await;
    assert_eq!(files(&items), piped);
    for (function, runs, changes) in rounds {
        assert!(runs >= 1 && changes >= 1, "{function} ran {runs} time(s), changed {changes}");
    }
}

#[test]
fn a_second_pipe_pass_changes_nothing() {
    let once = pipe(example());
    let twice = pipe(once.clone());
    assert_eq!(files(&twice), files(&once));
}

#[actix::test]
async fn a_second_in_process_render_changes_nothing_and_each_function_runs_once() {
    let (once, _) = in_process(example()).await;
    let (twice, rounds) = in_process(once.clone()).await;
    assert_eq!(files(&twice), files(&once));
    for (function, runs, changes) in rounds {
        assert_eq!((runs, changes), (1, 0), "{function}");
    }
}

#[actix::test]
async fn deleting_a_cluster_removes_its_config_map_and_updates_the_summary_both_ways() {
    let rendered = pipe(example());
    let input = without_cluster(&rendered, "edge-2");
    let piped = pipe(input.clone());
    assert!(piped.iter().all(|o| o.name() != Some("edge-2-config")), "the ConfigMap is gone");
    assert_eq!(summary_names(&piped), ["edge-1-config"]);
    let kpt = piped.iter().find(|o| o.kind() == Some("Kptfile")).unwrap();
    assert!(conditions::find(kpt, "v1.ConfigMap.edge-2-config").is_none());
    let (converged, _) = in_process(input).await;
    assert_eq!(files(&converged), files(&piped));
}

#[actix::test]
async fn deleting_every_cluster_removes_the_summary_and_marks_it_not_ready() {
    let rendered = pipe(example());
    let input = without_cluster(&without_cluster(&rendered, "edge-1"), "edge-2");
    let piped = pipe(input.clone());
    assert!(piped.iter().all(|o| o.kind() != Some("Summary") && o.name() != Some("edge-1-config")));
    let kpt = piped.iter().find(|o| o.kind() == Some("Kptfile")).unwrap();
    assert_eq!(
        conditions::find(kpt, "example.com/v1.Summary.edge-fleet").unwrap().status,
        Status::False
    );
    let (converged, _) = in_process(input).await;
    assert_eq!(files(&converged), files(&piped));
}

#[actix::test]
async fn an_invalid_package_is_not_rendered_and_comes_back_unchanged() {
    let items: Vec<Object> =
        example().into_iter().filter(|o| o.kind() != Some("Kptfile")).collect();
    let report = render(items.clone(), fns::all()).await.unwrap();
    assert_eq!(report.exit_code(), 1);
    assert!(report.results[0].message.contains("Kptfile"));
    assert_eq!(files(&report.items), files(&items));
    assert!(report.rounds.is_empty());
}

#[actix::test]
async fn render_dir_writes_the_package_back_file_by_file_and_removes_emptied_files() {
    let dir = tempfile::tempdir().unwrap();
    write_package(dir.path(), &example()).unwrap();
    render_dir(dir.path(), fns::all()).await.unwrap();
    assert!(dir.path().join("configmap_edge-2-config.yaml").exists());
    let clusters =
        "apiVersion: example.com/v1\nkind: Cluster\nmetadata:\n  name: edge-1\nspec:\n  nodes: 3\n";
    std::fs::write(dir.path().join("clusters.yaml"), clusters).unwrap();
    let report = render_dir(dir.path(), fns::all()).await.unwrap();
    assert_eq!(report.exit_code(), 0);
    assert!(!dir.path().join("configmap_edge-2-config.yaml").exists());
    let summary = std::fs::read_to_string(dir.path().join("summary_edge-fleet.yaml")).unwrap();
    assert!(summary.contains("- edge-1-config\n") && !summary.contains("edge-2"), "{summary}");
    assert_eq!(std::fs::read_to_string(dir.path().join("clusters.yaml")).unwrap(), clusters);
}

struct Fighter(&'static str);

impl Function for Fighter {
    fn name(&self) -> &str {
        self.0
    }
    fn declaration(&self) -> cosi_runtime::krm::Declaration {
        cosi_runtime::krm::Declaration::default()
    }
    fn process(&self, list: &mut cosi_runtime::krm::ResourceList) {
        if let Some(i) = list.kptfile_index() {
            list.items[i].set_annotation("example.com/winner", self.0);
        }
    }
}

#[actix::test]
async fn functions_that_never_agree_are_stopped_with_an_error_instead_of_looping() {
    let functions: Vec<std::sync::Arc<dyn Function>> =
        vec![std::sync::Arc::new(Fighter("one")), std::sync::Arc::new(Fighter("two"))];
    let report = render(example(), functions).await.unwrap();
    assert_eq!(report.exit_code(), 1);
    assert!(
        report.results.iter().any(|r| r.message.contains("did not converge")),
        "{:?}",
        report.results
    );
    assert!(report.rounds.iter().any(|r| r.rounds > cosi_runtime::krm::render::MAX_ROUNDS));
}

#[actix::test]
async fn a_failing_function_reports_its_error_and_the_render_still_settles() {
    let failing = cosi_runtime::krm::Downstream::new("failing", fns::config_map(), |_| {
        Err("device offline".into())
    });
    let functions: Vec<std::sync::Arc<dyn Function>> =
        vec![std::sync::Arc::new(fns::cluster_config()), std::sync::Arc::new(failing)];
    let report = render(example(), functions).await.unwrap();
    assert_eq!(report.exit_code(), 1);
    assert!(report.results.iter().any(|r| r.message.contains("device offline")));
    assert!(
        report.items.iter().any(|o| o.name() == Some("edge-1-config")),
        "the upstream's work stands"
    );
}

/// A package of the example's shape with `clusters` Clusters.
fn many_clusters(clusters: usize) -> Vec<Object> {
    let mut text = String::from(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: many\n---\n\
         apiVersion: example.com/v1\nkind: Site\nmetadata:\n  name: lab\nspec:\n  region: eu-west-1\n",
    );
    for i in 0..clusters {
        text.push_str(&format!(
            "---\napiVersion: example.com/v1\nkind: Cluster\nmetadata:\n  name: edge-{i:04}\n  annotations:\n    internal.config.kubernetes.io/path: clusters.yaml\n    internal.config.kubernetes.io/index: '{i}'\nspec:\n  nodes: {}\n",
            i % 7 + 1
        ));
    }
    let docs = cosi_runtime::krm::yaml::parse_documents(&text).unwrap();
    docs.into_iter().map(Object::from_node).collect()
}

#[actix::test]
async fn a_function_runs_again_only_when_what_it_reads_changed() {
    // The actuator updates every ConfigMap it reads; the watch events of its
    // own writes come back in batches while it runs. Each batch used to run it
    // once more over the whole package (41 runs for 5,000 ConfigMaps).
    let items = many_clusters(600);
    let piped = files(&pipe(items.clone()));
    let (rendered, rounds) = in_process(items).await;
    assert_eq!(files(&rendered), piped, "the same package as the pipe");
    for (function, runs, changes) in rounds {
        // Its first run changes the package; at most one more confirms the
        // changes of the functions after it in the pipeline.
        assert_eq!(changes, 1, "{function}");
        assert!(runs <= 2, "{function} ran {runs} times");
    }
}
