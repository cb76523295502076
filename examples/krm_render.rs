//! Renders a KRM package in one process, on the controller engine: the three
//! example functions become controllers and the package converges.
//!
//! ```text
//! cargo run --example krm_render -- examples/krm/package [--check]
//! ```
//!
//! With `--check` nothing is written; the exit code says whether the
//! package would change.

#[path = "krm/fns.rs"]
mod fns;

use std::path::PathBuf;
use std::process::ExitCode;

use cosi_runtime::krm::package::{files_of, read_package, write_package};
use cosi_runtime::krm::render::render;

#[actix::main]
async fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().unwrap_or_else(|| "examples/krm/package".into()));
    let check = args.any(|a| a == "--check");
    let items = match read_package(&dir) {
        Ok(items) => items,
        Err(e) => {
            eprintln!("krm_render: {e}");
            return ExitCode::FAILURE;
        }
    };
    let before = files_of(&items);
    let report = match render(items, fns::all()).await {
        Ok(report) => report,
        Err(e) => {
            eprintln!("krm_render: {e}");
            return ExitCode::FAILURE;
        }
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
    let after = files_of(&report.items);
    let changed = match (&before, &after) {
        (Ok(b), Ok(a)) => b != a,
        _ => true,
    };
    if check {
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
        Err(e) => {
            eprintln!("krm_render: {e}");
            ExitCode::FAILURE
        }
    }
}
