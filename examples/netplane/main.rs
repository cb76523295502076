//! The flagship example: a small network-configuration control plane.
//!
//! ```text
//! cargo run --release --example netplane               # files under a fresh temporary directory
//! cargo run --release --example netplane -- --dir out  # or under ./out
//! RUST_LOG=debug cargo run --release --example netplane
//! ```
//!
//! User configuration (links, addresses, routes, hostname) → four render
//! controllers derive the files they imply → a queue controller writes them
//! under a sandbox directory → a status controller reports. The run applies a
//! configuration, changes it (one controller panics and is restarted by the
//! supervisor), removes part of it (the teardown cascades and the files
//! disappear), prints the final resources and the per-controller metrics, and
//! writes the dependency graph (DOT, Mermaid) and Prometheus metrics beside
//! the files. See `plane.rs` for the controllers.

mod plane;

use std::path::PathBuf;
use std::process::ExitCode;

fn sandbox() -> Result<PathBuf, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => Ok(tempfile::Builder::new().prefix("cosi-netplane-").tempdir()?.keep()),
        ["--dir", dir] => {
            std::fs::create_dir_all(dir)?;
            Ok(PathBuf::from(dir))
        }
        ["-h" | "--help"] => {
            println!("usage: netplane [--dir PATH]   (default: a fresh temporary directory)");
            std::process::exit(0);
        }
        _ => Err(format!("unexpected arguments {args:?} (try --help)").into()),
    }
}

#[actix::main]
async fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    // The supervisor logs every reconcile panic (a warning naming the
    // controller); keep the default hook's second report out of the way.
    std::panic::set_hook(Box::new(|info| log::debug!("panic: {info}")));
    let dir = match sandbox() {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("netplane: {e}");
            return ExitCode::FAILURE;
        }
    };
    match plane::run(&dir, &mut std::io::stdout()).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netplane: {e}");
            ExitCode::FAILURE
        }
    }
}
