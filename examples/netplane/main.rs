//! The flagship example: a small network-configuration control plane.
//!
//! ```text
//! cargo run --release --example netplane               # files under a fresh temporary directory
//! cargo run --release --example netplane -- --dir out  # or under ./out
//! cargo run --release --example netplane -- --state st # configuration kept in st/ (run it twice)
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

const USAGE: &str = "usage: netplane [--dir PATH] [--state DIR]
  --dir PATH    where the rendered files go (default: a fresh temporary
                directory, or DIR/files with --state)
  --state DIR   keep the configuration durable in DIR/state.redb: a second
                run finds it and resumes from it";

/// Where the files go, and where the durable state is (if any).
fn options() -> Result<(PathBuf, Option<PathBuf>), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut dir, mut state) = (None, None);
    let mut rest = args.iter().map(String::as_str);
    while let Some(arg) = rest.next() {
        match (arg, rest.next()) {
            ("-h" | "--help", _) => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            ("--dir", Some(d)) => dir = Some(PathBuf::from(d)),
            ("--state", Some(s)) => state = Some(PathBuf::from(s)),
            _ => return Err(format!("unexpected arguments {args:?}\n{USAGE}").into()),
        }
    }
    let dir = match (dir, &state) {
        (Some(d), _) => d,
        (None, Some(s)) => s.join("files"),
        (None, None) => tempfile::Builder::new().prefix("cosi-netplane-").tempdir()?.keep(),
    };
    std::fs::create_dir_all(&dir)?;
    Ok((dir, state))
}

#[actix::main]
async fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn"))
        .format_timestamp(None)
        .init();
    // Every panic is one warning line with its location (the supervisor adds
    // another naming the controller and what it does next), instead of the
    // default hook's multi-line report: never hidden at debug level.
    std::panic::set_hook(Box::new(|info| log::warn!("panic: {info}")));
    let (dir, state) = match options() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("netplane: {e}");
            return ExitCode::FAILURE;
        }
    };
    match plane::run_with_state(&dir, state.as_deref(), &mut std::io::stdout()).await {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netplane: {e}");
            ExitCode::FAILURE
        }
    }
}
