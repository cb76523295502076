//! KRM function benchmarks on a generated package of the example's shape:
//! a Kptfile, one Site and N Clusters; after the render N ConfigMaps, N
//! Kptfile conditions and a Summary join them (10,000 items for N = 5,000).
//!
//! - `krm/<function>`: one function call on the bytes kpt would pipe to it
//!   (parse, validate, process, emit), for each of the three functions in
//!   pipeline order. Throughput is per item of the input list.
//! - `krm/pipe_in_memory`: the three calls in a row (the pipe, without
//!   process start-up).
//! - `krm/render_in_process`: the whole package converging on the controller
//!   engine (items loaded into a `State`, functions as controllers, `settled()`).
//! - `krm/exec_pipe`: the three example binaries piped, when they are built
//!   (`cargo build --release --examples`); skipped otherwise.
//! - `kpt` (outside criterion, written to `target/bench-report/krm.json`): the
//!   same package as files (comments in them) rendered by real `kpt fn render
//!   --allow-exec` with the three binaries in its Kptfile pipeline, and by
//!   [`render_dir`] in process, each on a fresh copy, median of 3; and whether
//!   the two rendered packages are byte-identical, file by file. Skipped
//!   (and reported so) without kpt on PATH or the binaries.
//!
//! `cargo test --benches` runs a scaled-down smoke pass (N = 50).

#[path = "../examples/krm/fns.rs"]
mod fns;
// The report writer only: this bench keeps the system allocator (no counting).
mod common;

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cosi_runtime::krm::package::package_files;
use cosi_runtime::krm::render::{render, render_dir, render_pipe};
use cosi_runtime::krm::{Function, Object, ResourceList, run};
use criterion::{Criterion, Throughput};

fn package(clusters: usize) -> Vec<Object> {
    let mut text = String::from(
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\n---\n\
         apiVersion: example.com/v1\nkind: Site\nmetadata:\n  name: lab\nspec:\n  region: eu-west-1\n",
    );
    for i in 0..clusters {
        text.push_str(&format!(
            "---\napiVersion: example.com/v1\nkind: Cluster\nmetadata:\n  name: edge-{i:05}\n  annotations:\n    internal.config.kubernetes.io/path: clusters.yaml\n    internal.config.kubernetes.io/index: '{i}'\nspec:\n  nodes: {}\n",
            i % 7 + 1
        ));
    }
    match cosi_runtime::krm::yaml::parse_documents(&text) {
        Ok(docs) => docs.into_iter().map(Object::from_node).collect(),
        Err(e) => panic!("the generated package parses: {e}"),
    }
}

/// The package of [`package`] as kpt reads it: a Kptfile whose pipeline runs
/// the three exec binaries of `bin`, the Site and the Clusters in files of
/// their own, with comments (which kpt keeps) in each.
fn write_package_dir(dir: &Path, clusters: usize, bin: &Path) {
    let mut kptfile = String::from(
        "# The benchmark's package.\napiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: bench\npipeline:\n  mutators:\n",
    );
    for name in ["krm_cluster_config", "krm_configmap_actuator", "krm_package_summary"] {
        kptfile.push_str(&format!("  - exec: {}\n", bin.join(name).display()));
    }
    let site = "apiVersion: example.com/v1\nkind: Site\nmetadata:\n  name: lab\nspec:\n  # Where every cluster runs.\n  region: eu-west-1 # one region\n";
    let mut text = String::from("# The fleet.\n");
    for i in 0..clusters {
        if i > 0 {
            text.push_str("---\n");
        }
        text.push_str(&format!(
            "apiVersion: example.com/v1\nkind: Cluster\nmetadata:\n  name: edge-{i:05}\nspec:\n  nodes: {} # sized by hand\n",
            i % 7 + 1
        ));
    }
    let write = |name: &str, text: &str| {
        if let Err(e) = std::fs::write(dir.join(name), text) {
            panic!("write {name}: {e}");
        }
    };
    write("Kptfile", &kptfile);
    write("site.yaml", site);
    write("clusters.yaml", &text);
}

/// A fresh copy of the package in a new temporary directory.
fn package_copy(clusters: usize, bin: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    write_package_dir(dir.path(), clusters, bin);
    dir
}

fn kpt_available() -> bool {
    Command::new("kpt").arg("version").output().is_ok_and(|o| o.status.success())
}

fn kpt_render(dir: &Path) {
    let out = match Command::new("kpt").args(["fn", "render", "--allow-exec"]).arg(dir).output() {
        Ok(out) => out,
        Err(e) => panic!("kpt starts: {e}"),
    };
    assert!(out.status.success(), "kpt fn render: {}", String::from_utf8_lossy(&out.stderr));
}

/// Files of `a` whose bytes differ in `b` (or that only one has).
fn differing_files(a: &Path, b: &Path) -> (usize, Vec<String>) {
    let (fa, fb) = match (package_files(a), package_files(b)) {
        (Ok(fa), Ok(fb)) => (fa, fb),
        (a, b) => panic!("list the rendered packages: {a:?} {b:?}"),
    };
    let mut names: Vec<String> = fa.iter().chain(&fb).cloned().collect();
    names.sort();
    names.dedup();
    let differ = names
        .iter()
        .filter(|rel| std::fs::read(a.join(rel)).ok() != std::fs::read(b.join(rel)).ok())
        .cloned()
        .collect();
    (names.len(), differ)
}

/// kpt fn render and render_dir on the same package: times and byte identity.
fn kpt_beside_render_dir(mode: &common::Mode, clusters: usize) {
    if !mode.wants("krm/kpt") {
        return;
    }
    let Some(bin) = exec_dir() else {
        eprintln!("kpt comparison skipped: build the examples first");
        return;
    };
    if !kpt_available() {
        eprintln!("kpt comparison skipped: kpt is not on PATH");
        common::write_report(mode, "krm", &serde_json::json!({ "kpt": null }));
        return;
    }
    let runs = if mode.full { 3 } else { 1 };
    let (mut kpt_times, mut ours_times) = (Vec::new(), Vec::new());
    let (mut kpt_dir, mut ours_dir) = (None, None);
    for _ in 0..runs {
        let dir = package_copy(clusters, &bin);
        let started = std::time::Instant::now();
        kpt_render(dir.path());
        kpt_times.push(started.elapsed());
        kpt_dir = Some(dir);
        let dir = package_copy(clusters, &bin);
        let started = std::time::Instant::now();
        let report = actix::System::new().block_on(render_dir(dir.path(), fns::all()));
        ours_times.push(started.elapsed());
        match report {
            Ok(report) => assert_eq!(report.exit_code(), 0, "{:?}", report.results),
            Err(e) => panic!("render_dir: {e}"),
        }
        ours_dir = Some(dir);
    }
    let (Some(kpt_dir), Some(ours_dir)) = (kpt_dir, ours_dir) else { return };
    let (files, differ) = differing_files(kpt_dir.path(), ours_dir.path());
    if !differ.is_empty() {
        eprintln!(
            "kpt and render_dir differ in {} of {files} files, e.g. {}",
            differ.len(),
            differ[0]
        );
    }
    common::write_report(
        mode,
        "krm",
        &serde_json::json!({
            "kpt": {
                "version": Command::new("kpt").arg("version").output().ok()
                    .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string()),
                "items": 2 * clusters + 3,
                "runs": runs,
                "kpt_fn_render_ns": common::ns(common::median(kpt_times)),
                "render_dir_ns": common::ns(common::median(ours_times)),
                "files": files,
                "files_differing": differ.len(),
                "first_differing": differ.first(),
                "identical": differ.is_empty(),
            }
        }),
    );
}

fn exec_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let target = exe.parent()?.parent()?.parent()?;
    ["release", "debug"]
        .iter()
        .map(|p| target.join(p).join("examples"))
        .find(|d| d.join("krm_cluster_config").exists())
}

fn exec_pipe(dir: &Path, input: &[u8]) -> Vec<u8> {
    let mut data = input.to_vec();
    for name in ["krm_cluster_config", "krm_configmap_actuator", "krm_package_summary"] {
        let mut child = match Command::new(dir.join(name))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => child,
            Err(e) => panic!("{name} starts: {e}"),
        };
        if let Some(mut stdin) = child.stdin.take() {
            let _ = stdin.write_all(&data);
        }
        data = match child.wait_with_output() {
            Ok(out) => out.stdout,
            Err(e) => panic!("{name} runs: {e}"),
        };
    }
    data
}

/// `COSI_BENCH_PROFILE=<scenario>:<clusters>` (see `common::profile_request`):
/// `render` renders the package of `clusters` clusters in process once,
/// `pipe_in_memory` applies the three functions to it in a row once (`render_pipe`).
fn profile(scenario: &str, clusters: usize) {
    let items = package(clusters);
    let started = std::time::Instant::now();
    let rendered = match scenario {
        "render" => match actix::System::new().block_on(render(items, fns::all())) {
            Ok(report) => {
                assert_eq!(report.exit_code(), 0, "{:?}", report.results);
                report.items.len()
            }
            Err(e) => panic!("the render failed: {e}"),
        },
        "pipe_in_memory" => {
            let functions = fns::all();
            let refs: Vec<&dyn Function> = functions.iter().map(|f| f.as_ref()).collect();
            render_pipe(items, &refs).items.len()
        }
        other => panic!("COSI_BENCH_PROFILE: no KRM scenario {other:?} (render, pipe_in_memory)"),
    };
    assert_eq!(rendered, 2 * clusters + 3, "clusters, their ConfigMaps, Kptfile, Site, Summary");
    println!("{scenario} of {clusters} clusters: {:?}", started.elapsed());
}

fn main() {
    if let Some((scenario, clusters)) = common::profile_request() {
        profile(&scenario, clusters as usize);
        return;
    }
    let mode = common::Mode::from_args();
    let full = mode.full;
    let clusters = if full { 5_000 } else { 50 };
    let mut c = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(10)
        .without_plots()
        .configure_from_args();

    let items = package(clusters);
    let functions = fns::all();
    // The input each function sees in the pipe.
    let mut stages: Vec<(String, Vec<u8>, usize)> = Vec::new();
    let mut list = ResourceList::new(items.clone());
    for f in &functions {
        stages.push((f.name().to_string(), list.to_yaml().into_bytes(), list.items.len()));
        list = cosi_runtime::krm::apply(f.as_ref(), list);
    }
    let rendered = list.items.len();
    assert_eq!(list.exit_code(), 0, "the generated package renders");
    assert_eq!(rendered, 2 * clusters + 3, "clusters, their ConfigMaps, Kptfile, Site, Summary");

    // One render outside criterion, to report the rounds each function ran.
    let started = std::time::Instant::now();
    match actix::System::new().block_on(render(items.clone(), fns::all())) {
        Ok(report) => {
            assert_eq!(report.exit_code(), 0, "{:?}", report.results);
            assert_eq!(
                report.items.len(),
                rendered,
                "the in-process render gives as many items as the pipe"
            );
            let rounds: Vec<String> = report
                .rounds
                .iter()
                .map(|r| format!("{} {} round(s) ({} changed)", r.function, r.rounds, r.changes))
                .collect();
            eprintln!(
                "krm/render_in_process: {} items in {:?}: {}",
                rendered,
                started.elapsed(),
                rounds.join(", ")
            );
        }
        Err(e) => panic!("render: {e}"),
    }

    let mut g = c.benchmark_group("krm");
    for ((name, input, n), f) in stages.iter().zip(&functions) {
        g.throughput(Throughput::Elements(*n as u64));
        g.bench_function(name.as_str(), |b| b.iter(|| black_box(run(f.as_ref(), input))));
    }
    g.throughput(Throughput::Elements(rendered as u64));
    let refs: Vec<&dyn Function> = functions.iter().map(|f| f.as_ref()).collect();
    g.bench_function("pipe_in_memory", |b| b.iter(|| black_box(render_pipe(items.clone(), &refs))));
    g.bench_function("render_in_process", |b| {
        b.iter(|| {
            let report = actix::System::new().block_on(render(items.clone(), fns::all()));
            match report {
                Ok(report) => black_box(report.items.len()),
                Err(e) => panic!("render: {e}"),
            }
        })
    });
    match exec_dir() {
        Some(dir) => {
            let input = stages[0].1.clone();
            let out = exec_pipe(&dir, &input);
            assert!(!out.is_empty(), "the exec pipe writes a list");
            g.bench_function("exec_pipe", |b| b.iter(|| black_box(exec_pipe(&dir, &input))));
        }
        None => eprintln!(
            "krm/exec_pipe skipped: build the examples first (cargo build --release --examples)"
        ),
    }
    g.finish();
    c.final_summary();
    kpt_beside_render_dir(&mode, clusters);
}
