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
//!
//! `cargo test --benches` runs a scaled-down smoke pass (N = 50).

#[path = "../examples/krm/fns.rs"]
mod fns;

use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use cosi_runtime::krm::render::{render, render_pipe};
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
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
}
