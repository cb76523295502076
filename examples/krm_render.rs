//! Renders a KRM package in one process, on the controller engine: the three
//! example functions become controllers and the package converges.
//!
//! ```text
//! cargo run --example krm_render -- examples/krm/package            # render in place
//! cargo run --example krm_render -- examples/krm/package --check    # exit 1 if it would change
//! cargo run --example krm_render -- examples/krm/package --source   # print it as a ResourceList
//! ... | cargo run --example krm_render -- DIR --sink                # write a ResourceList into DIR
//! ```
//!
//! `--source` and `--sink` let you pipe the exec binaries without kpt:
//! `krm_render PKG --source | krm_cluster_config | krm_configmap_actuator |
//! krm_package_summary | krm_render PKG --sink`.

#[path = "krm/fns.rs"]
mod fns;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use cosi_runtime::krm::ResourceList;
use cosi_runtime::krm::package::{files_of, read_package, write_package};
use cosi_runtime::krm::render::render;

fn fail(message: impl std::fmt::Display) -> ExitCode {
    eprintln!("krm_render: {message}");
    ExitCode::FAILURE
}

fn source(dir: &Path) -> ExitCode {
    match read_package(dir) {
        Ok(items) => {
            print!("{}", ResourceList::new(items).to_yaml());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

fn sink(dir: &Path) -> ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        return fail(format!("reading stdin: {e}"));
    }
    let list = match ResourceList::parse_bytes(&input) {
        Ok(list) => list,
        Err(e) => return fail(e),
    };
    for r in &list.results {
        eprintln!("krm_render: {r}");
    }
    if list.exit_code() != 0 {
        return fail("the list carries error results: nothing written");
    }
    match write_package(dir, &list.items) {
        Ok(files) => {
            println!("wrote {} file(s) to {}", files.len(), dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}

#[actix::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.iter()
            .find(|a| !a.starts_with("--"))
            .cloned()
            .unwrap_or_else(|| "examples/krm/package".into()),
    );
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--source") {
        return source(&dir);
    }
    if has("--sink") {
        return sink(&dir);
    }
    let items = match read_package(&dir) {
        Ok(items) => items,
        Err(e) => return fail(e),
    };
    let before = files_of(&items);
    let report = match render(items, fns::all()).await {
        Ok(report) => report,
        Err(e) => return fail(e),
    };
    for r in &report.results {
        eprintln!("krm_render: {r}");
    }
    for f in &report.rounds {
        println!("{:<20} {} round(s), {} changed the package", f.function, f.rounds, f.changes);
    }
    if report.exit_code() != 0 {
        return ExitCode::FAILURE;
    }
    let changed = match (&before, &files_of(&report.items)) {
        (Ok(b), Ok(a)) => b != a,
        _ => true,
    };
    if has("--check") {
        println!(
            "{}",
            if changed { "the package would change" } else { "the package is rendered" }
        );
        return if changed { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    }
    match write_package(&dir, &report.items) {
        Ok(files) => {
            println!("wrote {} file(s) to {}", files.len(), dir.display());
            ExitCode::SUCCESS
        }
        Err(e) => fail(e),
    }
}
