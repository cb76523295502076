//! The flagship example: a small network-configuration control plane.
//!
//! ```text
//! cargo run --release -p netplane               # files under a fresh temporary directory
//! cargo run --release -p netplane -- --dir out  # or under ./out
//! cargo run --release -p netplane -- --state st # configuration kept in st/ (run it twice)
//! RUST_LOG=debug cargo run --release -p netplane
//! cargo run --release -p netplane --features admin -- --serve 127.0.0.1:8081
//! ```
//!
//! User configuration (links, addresses, routes, hostname) → four render
//! controllers derive the files they imply → a queue controller writes them
//! under a sandbox directory → a status controller reports. The run applies a
//! configuration, changes it (one controller panics; the panic is caught and
//! that configuration retried), removes part of it (the teardown cascades and the files
//! disappear), prints the final resources and the per-controller metrics, and
//! writes the dependency graph (DOT, Mermaid) and Prometheus metrics beside
//! the files. See `plane.rs` for the controllers.
//!
//! With `--kube ADDR` (feature `kubernetes-api`) the Kubernetes API serves
//! the configuration types on ADDR: `kubectl get`, `apply -f` and `delete`
//! drive the control plane, which keeps running once settled until Ctrl-C.
//! See `kube.rs`.
//!
//! With `--serve ADDR` (feature `admin`) the admin endpoint listens on ADDR
//! (`HOST:PORT` or `unix:PATH`) while the story runs: it waits for Enter
//! before each change, and keeps the control plane running once settled,
//! until Ctrl-C. See `serve.rs`. A temporary directory it creates is removed
//! at the end.
//!
//! `README.md` in this directory walks through a run, a kubectl session and
//! a `cosictl` session.

#[cfg(feature = "kubernetes-api")]
mod kube;
mod plane;
#[cfg(feature = "admin")]
mod serve;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: netplane [--dir PATH] [--state DIR] [--serve ADDR | --kube ADDR]
  --dir PATH    where the rendered files go (default: a fresh temporary
                directory, removed at the end, or DIR/files with --state)
  --state DIR   keep the configuration durable in DIR/state.redb: a second
                run finds it and resumes from it
  --serve ADDR  serve the admin endpoint on ADDR (HOST:PORT or unix:PATH;
                feature admin), wait for Enter before each change, and keep
                running once settled until Ctrl-C
  --kube ADDR   serve the Kubernetes API on ADDR (HOST:PORT; feature
                kubernetes-api): kubectl gets, watches, applies and deletes
                the configuration; once settled the control plane keeps
                following it until Ctrl-C";

/// What the command line asked for.
struct Options {
    /// Where the files go.
    dir: PathBuf,
    /// The temporary directory holding `dir`, removed when dropped.
    temporary: Option<tempfile::TempDir>,
    /// Where the durable state is, if any.
    state: Option<PathBuf>,
    /// Where to serve the admin endpoint, if anywhere.
    serve: Option<String>,
    /// Where to serve the Kubernetes API, if anywhere.
    kube: Option<String>,
}

fn options() -> Result<Options, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mut dir, mut state, mut serve, mut kube) = (None, None, None, None);
    let mut rest = args.iter().map(String::as_str);
    while let Some(arg) = rest.next() {
        match (arg, rest.next()) {
            ("-h" | "--help", _) => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            ("--dir", Some(d)) => dir = Some(PathBuf::from(d)),
            ("--state", Some(s)) => state = Some(PathBuf::from(s)),
            ("--serve", Some(a)) => serve = Some(a.to_owned()),
            ("--kube", Some(a)) => kube = Some(a.to_owned()),
            _ => return Err(format!("unexpected arguments {args:?}\n{USAGE}").into()),
        }
    }
    let mut temporary = None;
    let dir = match (dir, &state) {
        (Some(d), _) => d,
        (None, Some(s)) => s.join("files"),
        (None, None) => {
            let tmp = tempfile::Builder::new().prefix("cosi-netplane-").tempdir()?;
            let dir = tmp.path().to_path_buf();
            temporary = Some(tmp);
            dir
        }
    };
    std::fs::create_dir_all(&dir)?;
    if serve.is_some() && kube.is_some() {
        return Err(format!("--serve and --kube are one or the other\n{USAGE}").into());
    }
    Ok(Options { dir, temporary, state, serve, kube })
}

/// Runs the story, serving the admin endpoint around it.
#[cfg(feature = "admin")]
async fn serving(options: &Options, addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    use std::io::BufRead;
    let bind: cosi_runtime::admin::Bind = addr.parse()?;
    // Lines of input, read on a thread of their own (never on the arbiter).
    let (tx, next) = tokio::sync::mpsc::unbounded_channel();
    std::thread::spawn(move || {
        for _ in std::io::stdin().lock().lines().map_while(Result::ok) {
            if tx.send(()).is_err() {
                break;
            }
        }
    });
    let mut serve = serve::Serve::new(bind, next, interrupted());
    let stdout = &mut std::io::stdout();
    plane::run_story(&options.dir, options.state.as_deref(), &mut serve, stdout).await?;
    match serve.error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Resolves on Ctrl-C (or SIGTERM).
#[cfg(any(feature = "admin", feature = "kubernetes-api"))]
async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                let ctrl_c = std::pin::pin!(tokio::signal::ctrl_c());
                let term = std::pin::pin!(term.recv());
                let _ = futures::future::select(ctrl_c, term).await;
            }
            Err(_) => drop(tokio::signal::ctrl_c().await),
        }
    }
    #[cfg(not(unix))]
    drop(tokio::signal::ctrl_c().await);
}

/// Runs the story, serving the Kubernetes API around it.
#[cfg(feature = "kubernetes-api")]
async fn kubing(options: &Options, addr: &str) -> Result<(), Box<dyn std::error::Error>> {
    let mut kube = kube::Kube::new(addr.parse()?, interrupted());
    let stdout = &mut std::io::stdout();
    plane::run_story(&options.dir, options.state.as_deref(), &mut kube, stdout).await?;
    match kube.error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

#[cfg(not(feature = "kubernetes-api"))]
async fn kubing(_: &Options, _: &str) -> Result<(), Box<dyn std::error::Error>> {
    Err("--kube needs the Kubernetes API: run with --features kubernetes-api".into())
}

#[cfg(not(feature = "admin"))]
async fn serving(_: &Options, _: &str) -> Result<(), Box<dyn std::error::Error>> {
    Err("--serve needs the admin endpoint: run with --features admin".into())
}

async fn run(options: &Options) -> Result<(), Box<dyn std::error::Error>> {
    match (&options.serve, &options.kube) {
        (Some(addr), _) => serving(options, addr).await,
        (None, Some(addr)) => kubing(options, addr).await,
        (None, None) => {
            let stdout = &mut std::io::stdout();
            plane::run_with_state(&options.dir, options.state.as_deref(), stdout).await.map(drop)
        }
    }
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
    let options = match options() {
        Ok(options) => options,
        Err(e) => {
            eprintln!("netplane: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = run(&options).await;
    if let Some(tmp) = options.temporary {
        println!("removing {} (pass --dir PATH to keep the files)", tmp.path().display());
        if let Err(e) = tmp.close() {
            eprintln!("netplane: cannot remove the temporary directory: {e}");
        }
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("netplane: {e}");
            ExitCode::FAILURE
        }
    }
}
