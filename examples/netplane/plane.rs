//! A small network-configuration control plane built on cosi-runtime: the
//! flagship example (`main.rs` runs it; `tests/example_netplane.rs` runs it
//! in-process and checks the result).
//!
//! ```text
//!  user config (ns "config")        derived (ns "files")       on disk / status
//!  LinkConfig ──▶ LinkController ─┐
//!  AddressConfig ─▶ AddressCtrl ──┤ FileSpec (shared) ─▶ ApplyController ─▶ <dir>/…files
//!  RouteConfig ──▶ RouteController┤   (one per object)   (queue, finalizers)  AppliedFile
//!  HostnameConfig ▶ HostnameCtrl ─┘                                              │
//!                                          StatusController ◀──────────────────┘
//!                                          NetworkStatus (ns "status")
//! ```
//!
//! - The four render controllers hold a finalizer on their config (strong
//!   input), share the `FileSpec` output type (each file owned by its
//!   renderer), and watch `FileSpec` as destroy-ready to finish a teardown.
//! - The apply controller is a queue controller: one file per reconcile,
//!   four at a time; it holds a finalizer on each `FileSpec` until the file
//!   is removed from disk.
//! - `HostnameController` has a deliberate stale-cache bug: it panics the
//!   first time it sees the hostname change. The supervisor drops that
//!   instance, builds a fresh one after a backoff, and the fresh one converges.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use cosi_runtime::controller::{
    ControllerMetrics, Outcome, QController, QSettings, ReconcileError, TerminalError,
};
use cosi_runtime::execution::Blocking;
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;
use serde::{Deserialize, Serialize};

/// Namespace of the user's configuration.
pub const CONFIG: &str = "config";
/// Namespace of the derived file specs.
pub const FILES: &str = "files";
/// Namespace of applied-file records and the overall status.
pub const STATUS: &str = "status";

macro_rules! spec {
    ($(#[$doc:meta])* $name:ident, $ty:literal { $($field:ident: $fty:ty),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
        pub struct $name { $(pub $field: $fty),* }
        impl Spec for $name {
            const TYPE: &'static str = $ty;
        }
    };
}

spec!(/// A network link the user wants.
    LinkConfig, "LinkConfigs.net.cosi.dev" { mtu: u32, up: bool });
spec!(/// An address on a link.
    AddressConfig, "AddressConfigs.net.cosi.dev" { link: String, cidr: String });
spec!(/// A route through a gateway on a link.
    RouteConfig, "RouteConfigs.net.cosi.dev" { destination: String, gateway: String, link: String });
spec!(/// The host's name.
    HostnameConfig, "HostnameConfigs.net.cosi.dev" { hostname: String, domain: String });
spec!(/// A file that should exist in the sandbox, with this content.
    FileSpec, "FileSpecs.net.cosi.dev" { path: String, content: String });
spec!(/// A file the apply controller wrote, and which FileSpec version it came from.
    AppliedFile, "AppliedFiles.net.cosi.dev" { path: String, bytes: u64, from_version: u64 });
spec!(/// What the status controller reports.
NetworkStatus, "NetworkStatuses.net.cosi.dev" {
    links_up: usize, addresses: usize, routes: usize, hostname: String,
    files_desired: usize, files_applied: usize, ready: bool,
});

/// The common part of the four render controllers: one `FileSpec` per config
/// object, kept while the config runs and released before the config is.
async fn sync_files<C: Spec>(
    cx: &ReconcileContext,
    configs: &[Resource<C>],
    render: impl Fn(&Resource<C>) -> Option<FileSpec>,
) -> Result<(), Error> {
    let mut wanted = Vec::new();
    for config in configs {
        // One file per object, named after the object's type and id.
        let kind = C::TYPE.split('.').next().unwrap_or_default().trim_end_matches("Configs");
        let id = format!("{}-{}", kind.to_lowercase(), config.id());
        let file = Pointer::of::<FileSpec>(FILES, &id);
        if config.phase() == Phase::TearingDown {
            if cx.release(&file).await? {
                cx.remove_finalizer(config.pointer()).await?;
            }
            continue;
        }
        if !config.metadata().finalizers().contains(cx.name())
            && !cx.add_finalizer(config.pointer()).await?
        {
            continue; // destroyed or tearing down since the list: nothing to render
        }
        match render(config) {
            Some(spec) => {
                wanted.push(id);
                match cx
                    .modify(&file, move |f: &mut Resource<FileSpec>| *f.spec_mut() = spec.clone())
                    .await
                {
                    Ok(_) => {}
                    // The previous file of that name is still being removed:
                    // the destroy-ready input wakes us when it is gone.
                    Err(e) if e.is_phase_conflict() => {}
                    Err(e) => return Err(e),
                }
            }
            None => {
                cx.release(&file).await?;
            }
        }
    }
    // Files of ours whose config is gone or no longer renders.
    for file in cx.list(&Kind::of::<FileSpec>(FILES), &LabelQuery::all()).await? {
        if file.owner() == Some(cx.name()) && !wanted.iter().any(|w| w == file.id()) {
            cx.release(file.pointer()).await?;
        }
    }
    Ok(())
}

fn render_inputs<C: Spec>(extra: Vec<Input>) -> Vec<Input> {
    let mut inputs = vec![Input::strong::<C>(CONFIG), Input::destroy_ready::<FileSpec>(FILES)];
    inputs.extend(extra);
    inputs
}

/// LinkConfig → `links/<name>.conf`.
pub struct LinkController;

impl Controller for LinkController {
    fn name(&self) -> &str {
        "LinkController"
    }
    fn inputs(&self) -> Vec<Input> {
        render_inputs::<LinkConfig>(vec![])
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::shared::<FileSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let links = cx.list_typed::<LinkConfig>(CONFIG, &LabelQuery::all()).await?;
        sync_files(cx, &links, |l| {
            let state = if l.spec().up { "up" } else { "down" };
            let content = format!("name={}\nmtu={}\nstate={state}\n", l.id(), l.spec().mtu);
            Some(FileSpec { path: format!("links/{}.conf", l.id()), content })
        })
        .await?;
        Ok(())
    }
}

/// The running links, by name.
async fn links(cx: &ReconcileContext) -> Result<BTreeMap<String, LinkConfig>, Error> {
    Ok(cx
        .list_typed::<LinkConfig>(CONFIG, &LabelQuery::all())
        .await?
        .into_iter()
        .filter(|l| l.phase() == Phase::Running)
        .map(|l| (l.id().to_owned(), l.into_spec()))
        .collect())
}

/// AddressConfig → `addresses/<id>.conf`, once its link exists.
pub struct AddressController;

impl Controller for AddressController {
    fn name(&self) -> &str {
        "AddressController"
    }
    fn inputs(&self) -> Vec<Input> {
        render_inputs::<AddressConfig>(vec![Input::weak::<LinkConfig>(CONFIG)])
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::shared::<FileSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let links = links(cx).await?;
        let addresses = cx.list_typed::<AddressConfig>(CONFIG, &LabelQuery::all()).await?;
        sync_files(cx, &addresses, |a| {
            let a_spec = a.spec();
            links.contains_key(&a_spec.link).then(|| {
                let content = format!("link={}\naddress={}\n", a_spec.link, a_spec.cidr);
                FileSpec { path: format!("addresses/{}.conf", a.id()), content }
            })
        })
        .await?;
        Ok(())
    }
}

/// RouteConfig → `routes/<id>.conf`, once its link exists.
pub struct RouteController;

impl Controller for RouteController {
    fn name(&self) -> &str {
        "RouteController"
    }
    fn inputs(&self) -> Vec<Input> {
        render_inputs::<RouteConfig>(vec![Input::weak::<LinkConfig>(CONFIG)])
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::shared::<FileSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let links = links(cx).await?;
        let routes = cx.list_typed::<RouteConfig>(CONFIG, &LabelQuery::all()).await?;
        sync_files(cx, &routes, |r| {
            let s = r.spec();
            links.contains_key(&s.link).then(|| {
                let content = format!("to={}\nvia={}\ndev={}\n", s.destination, s.gateway, s.link);
                FileSpec { path: format!("routes/{}.conf", r.id()), content }
            })
        })
        .await?;
        Ok(())
    }
}

/// HostnameConfig → `hostname`. Has a deliberate stale-cache bug: it panics
/// the first time it sees the hostname change; a fresh instance is fine.
#[derive(Default)]
pub struct HostnameController {
    cached: Option<String>,
}

impl Controller for HostnameController {
    fn name(&self) -> &str {
        "HostnameController"
    }
    fn inputs(&self) -> Vec<Input> {
        render_inputs::<HostnameConfig>(vec![])
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::shared::<FileSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let configs = cx.list_typed::<HostnameConfig>(CONFIG, &LabelQuery::all()).await?;
        for c in configs.iter().filter(|c| c.phase() == Phase::Running) {
            let fqdn = format!("{}.{}", c.spec().hostname, c.spec().domain);
            if let Some(cached) = self.cached.as_ref().filter(|cached| **cached != fqdn) {
                panic!("stale hostname cache: {cached} != {fqdn}");
            }
            self.cached = Some(fqdn);
        }
        sync_files(cx, &configs, |c| {
            let content = format!("{}.{}\n", c.spec().hostname, c.spec().domain);
            Some(FileSpec { path: "hostname".into(), content })
        })
        .await?;
        Ok(())
    }
}

/// Materializes each `FileSpec` as a file under `root` (a queue controller:
/// one file per reconcile, four at a time), and records an `AppliedFile`.
pub struct ApplyController {
    pub root: PathBuf,
}

impl ApplyController {
    fn path(&self, spec: &FileSpec) -> Result<PathBuf, ReconcileError> {
        let relative = Path::new(&spec.path);
        let safe = relative.components().all(|c| matches!(c, Component::Normal(_)));
        if !safe || spec.path.is_empty() {
            return Err(TerminalError::new(format!("unsafe path {:?}", spec.path)).into());
        }
        Ok(self.root.join(relative))
    }
}

impl QController for ApplyController {
    fn name(&self) -> &str {
        "ApplyController"
    }
    fn settings(&self) -> QSettings {
        QSettings {
            inputs: vec![Input::primary::<FileSpec>(FILES)],
            outputs: vec![Output::exclusive::<AppliedFile>()],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let record = Pointer::of::<AppliedFile>(STATUS, ptr.id());
        let file = match cx.get_typed::<FileSpec>(ptr).await {
            Ok(file) => file,
            Err(e) if e.is_not_found() => return Ok(Outcome::Done),
            Err(e) => return Err(e.into()),
        };
        let path = self.path(file.spec())?;
        if file.phase() == Phase::TearingDown {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                _ => log::info!("ApplyController: removed {}", file.spec().path),
            }
            match cx.destroy(&record).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            }
            cx.remove_finalizer(ptr).await?;
            return Ok(Outcome::Done);
        }
        if !file.metadata().finalizers().contains(cx.name()) && !cx.add_finalizer(ptr).await? {
            return Ok(Outcome::Done); // going away: its teardown wakes us again
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, &file.spec().content)?;
        let applied = AppliedFile {
            path: file.spec().path.clone(),
            bytes: file.spec().content.len() as u64,
            from_version: file.version().get(),
        };
        log::info!("ApplyController: wrote {} ({} bytes)", applied.path, applied.bytes);
        cx.modify(&record, move |r: &mut Resource<AppliedFile>| *r.spec_mut() = applied.clone())
            .await?;
        Ok(Outcome::Done)
    }
}

/// Summarizes everything into one `NetworkStatus`.
pub struct StatusController;

impl Controller for StatusController {
    fn name(&self) -> &str {
        "StatusController"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![
            Input::weak::<LinkConfig>(CONFIG),
            Input::weak::<AddressConfig>(CONFIG),
            Input::weak::<RouteConfig>(CONFIG),
            Input::weak::<HostnameConfig>(CONFIG),
            Input::weak::<FileSpec>(FILES),
            Input::weak::<AppliedFile>(STATUS),
        ]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<NetworkStatus>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let all = LabelQuery::all();
        let running = |r: &AnyResource| r.phase() == Phase::Running;
        let links = cx.list_typed::<LinkConfig>(CONFIG, &all).await?;
        let files = cx.list_typed::<FileSpec>(FILES, &all).await?;
        let applied = cx.list_typed::<AppliedFile>(STATUS, &all).await?;
        let desired: Vec<_> = files.iter().filter(|f| f.phase() == Phase::Running).collect();
        let up_to_date = desired
            .iter()
            .filter(|f| {
                applied
                    .iter()
                    .any(|a| a.id() == f.id() && a.spec().from_version == f.version().get())
            })
            .count();
        let hostname = cx.list_typed::<HostnameConfig>(CONFIG, &all).await?;
        let status = NetworkStatus {
            links_up: links.iter().filter(|l| l.spec().up && l.phase() == Phase::Running).count(),
            addresses: cx
                .list(&Kind::of::<AddressConfig>(CONFIG), &all)
                .await?
                .iter()
                .filter(|r| running(r))
                .count(),
            routes: cx
                .list(&Kind::of::<RouteConfig>(CONFIG), &all)
                .await?
                .iter()
                .filter(|r| running(r))
                .count(),
            hostname: hostname
                .first()
                .map(|h| format!("{}.{}", h.spec().hostname, h.spec().domain))
                .unwrap_or_default(),
            files_desired: desired.len(),
            files_applied: up_to_date,
            ready: up_to_date == desired.len() && applied.len() == desired.len(),
        };
        let ptr = Pointer::of::<NetworkStatus>(STATUS, "network");
        cx.modify(&ptr, move |s: &mut Resource<NetworkStatus>| *s.spec_mut() = status.clone())
            .await?;
        Ok(())
    }
}

/// Starts the runtime with the six controllers; files go under `root`. With
/// `state`, the configuration namespace is kept durable in `state/state.redb`
/// (the derived files and status stay in memory: they are rebuilt from it).
pub async fn start(
    root: &Path,
    state: Option<&Path>,
) -> Result<Runtime, Box<dyn std::error::Error>> {
    let builder = Runtime::builder()
        .backoff(Backoff { initial: Duration::from_millis(20), ..Backoff::default() });
    let runtime = match state {
        Some(dir) => builder.open_durable(dir.join("state.redb"), [CONFIG]).await?,
        None => builder.start(),
    };
    runtime.register(|| LinkController).await?;
    runtime.register(|| AddressController).await?;
    runtime.register(|| RouteController).await?;
    runtime.register(HostnameController::default).await?;
    let root = root.to_path_buf();
    // It writes files with `std::fs`: its reconciles run on the blocking pool.
    runtime.register_queue(move || Blocking::new(ApplyController { root: root.clone() })).await?;
    runtime.register(|| StatusController).await?;
    Ok(runtime)
}

/// Every file under `root` (except the example's own outputs) with its content.
pub fn files(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(root, &path, out);
            } else if let Ok(content) = std::fs::read_to_string(&path) {
                let name = path.strip_prefix(root).unwrap_or(&path).to_string_lossy().into_owned();
                out.insert(name, content);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out.retain(|name, _| !name.starts_with("graph.") && !name.starts_with("metrics."));
    out
}

fn line(out: &mut dyn Write, text: impl AsRef<str>) {
    let _ = writeln!(out, "{}", text.as_ref());
}

/// Waits until nothing is in flight and reports how long the step took.
async fn settle(runtime: &Runtime, step: Instant, out: &mut dyn Write) {
    runtime.settled().await;
    let reconciles: u64 = runtime.metrics().await.iter().map(|m| m.reconciles).sum();
    line(
        out,
        format!(
            "  converged in {:.1} ms ({reconciles} reconciles so far)",
            step.elapsed().as_secs_f64() * 1e3
        ),
    );
}

async fn show_status(runtime: &Runtime, root: &Path, out: &mut dyn Write) {
    let files = files(root);
    line(out, format!("  files on disk ({}):", files.len()));
    for (name, content) in &files {
        line(out, format!("    {name:<28} {}", content.trim_end().replace('\n', "  ")));
    }
    if let Ok(s) = runtime
        .state()
        .get_typed::<NetworkStatus>(&Pointer::of::<NetworkStatus>(STATUS, "network"))
        .await
    {
        let s = s.spec();
        line(
            out,
            format!(
                "  status: {} links up, {} addresses, {} routes, hostname {:?}, {}/{} files applied, ready={}",
                s.links_up,
                s.addresses,
                s.routes,
                s.hostname,
                s.files_applied,
                s.files_desired,
                s.ready
            ),
        );
    }
}

/// The final table of every resource in the state.
pub async fn resource_table(state: &State) -> Result<Vec<[String; 6]>, Error> {
    let kinds = [
        Kind::of::<LinkConfig>(CONFIG),
        Kind::of::<AddressConfig>(CONFIG),
        Kind::of::<RouteConfig>(CONFIG),
        Kind::of::<HostnameConfig>(CONFIG),
        Kind::of::<FileSpec>(FILES),
        Kind::of::<AppliedFile>(STATUS),
        Kind::of::<NetworkStatus>(STATUS),
    ];
    let mut rows = Vec::new();
    for kind in &kinds {
        for r in state.list(kind, &LabelQuery::all()).await? {
            rows.push([
                kind.resource_type().split('.').next().unwrap_or_default().to_owned(),
                format!("{}/{}", r.metadata().namespace(), r.id()),
                r.version().to_string(),
                r.owner().unwrap_or("-").to_owned(),
                r.phase().to_string(),
                r.metadata().finalizers().to_vec().join(","),
            ]);
        }
    }
    Ok(rows)
}

fn table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.len());
        }
    }
    let render = |cells: &[String]| {
        let mut s = String::from("  ");
        for (cell, w) in cells.iter().zip(&widths) {
            let _ = write!(s, "{cell:<w$}  ");
        }
        s.trim_end().to_owned()
    };
    line(out, render(&header.iter().map(|h| (*h).to_owned()).collect::<Vec<_>>()));
    for row in rows {
        line(out, render(row));
    }
}

/// What a run leaves behind, for the caller to check.
#[derive(Debug)]
pub struct Report {
    /// Files on disk at the end (relative path → content).
    pub files: BTreeMap<String, String>,
    /// Every resource at the end: type, namespace/id, version, owner, phase, finalizers.
    pub resources: Vec<[String; 6]>,
    /// Per-controller counters at the end.
    pub metrics: Vec<ControllerMetrics>,
    /// The dependency graph in DOT.
    pub dot: String,
}

fn link(id: &str, mtu: u32) -> Resource<LinkConfig> {
    Resource::new(CONFIG, id, LinkConfig { mtu, up: true })
}

fn address(id: &str, link: &str, cidr: &str) -> Resource<AddressConfig> {
    Resource::new(CONFIG, id, AddressConfig { link: link.into(), cidr: cidr.into() })
}

fn route(id: &str, destination: &str, gateway: &str, link: &str) -> Resource<RouteConfig> {
    Resource::new(
        CONFIG,
        id,
        RouteConfig { destination: destination.into(), gateway: gateway.into(), link: link.into() },
    )
}

/// Runs the whole story: apply, change, remove; prints progress to `out`.
pub async fn run(root: &Path, out: &mut dyn Write) -> Result<Report, Box<dyn std::error::Error>> {
    run_with_state(root, None, out).await
}

/// How many configuration resources the state holds.
async fn stored_config(state: &State) -> Result<usize, Error> {
    let mut n = 0;
    for kind in [
        Kind::of::<LinkConfig>(CONFIG),
        Kind::of::<AddressConfig>(CONFIG),
        Kind::of::<RouteConfig>(CONFIG),
        Kind::of::<HostnameConfig>(CONFIG),
    ] {
        n += state.list(&kind, &LabelQuery::all()).await?.len();
    }
    Ok(n)
}

/// [`run`], with the configuration kept durable under `state_dir`. A first run
/// applies the scenario; a later run finds the configuration it left, resumes
/// from it (the controllers rebuild every file) and reports.
pub async fn run_with_state(
    root: &Path,
    state_dir: Option<&Path>,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn std::error::Error>> {
    let runtime = start(root, state_dir).await?;
    let state = runtime.state();
    line(out, format!("network control plane: 6 controllers, files under {}", root.display()));
    if let Some(dir) = state_dir {
        let found = stored_config(&state).await?;
        if found > 0 {
            line(
                out,
                format!(
                    "\n▶ resumed: {found} configuration resources found in {}",
                    dir.join("state.redb").display()
                ),
            );
            let step = Instant::now();
            settle(&runtime, step, out).await;
            show_status(&runtime, root, out).await;
            return finish(runtime, root, out).await;
        }
        line(
            out,
            format!(
                "  configuration kept in {} (none there yet)",
                dir.join("state.redb").display()
            ),
        );
    }

    line(out, "\n▶ 1. apply a configuration: 2 links, 2 addresses, 1 route, a hostname");
    let step = Instant::now();
    state.create(link("eth0", 1500), None).await?;
    state.create(link("eth1", 1500), None).await?;
    state.create(address("eth0-lan", "eth0", "10.0.0.2/24"), None).await?;
    state.create(address("eth1-storage", "eth1", "192.168.10.2/24"), None).await?;
    state.create(route("default", "0.0.0.0/0", "10.0.0.1", "eth0"), None).await?;
    let host = HostnameConfig { hostname: "node-1".into(), domain: "example.org".into() };
    state.create(Resource::new(CONFIG, "hostname", host), None).await?;
    settle(&runtime, step, out).await;
    show_status(&runtime, root, out).await;

    line(out, "\n▶ 2. change it: jumbo frames on eth1, a storage route, hostname node-2");
    line(out, "     (HostnameController's stale cache makes it panic; the supervisor restarts it)");
    let step = Instant::now();
    let eth1 = Pointer::of::<LinkConfig>(CONFIG, "eth1");
    state.modify(&eth1, |l: &mut Resource<LinkConfig>| l.spec_mut().mtu = 9000, None).await?;
    state.create(route("storage", "192.168.20.0/24", "192.168.10.1", "eth1"), None).await?;
    let hostname = Pointer::of::<HostnameConfig>(CONFIG, "hostname");
    state
        .modify(
            &hostname,
            |h: &mut Resource<HostnameConfig>| h.spec_mut().hostname = "node-2".into(),
            None,
        )
        .await?;
    settle(&runtime, step, out).await;
    let m = runtime.metrics().await;
    if let Some(h) = m.iter().find(|m| m.controller == "HostnameController") {
        line(
            out,
            format!(
                "  HostnameController: {} panic(s), {} restart(s), status {}",
                h.panics, h.restarts, h.status
            ),
        );
    }
    show_status(&runtime, root, out).await;

    line(out, "\n▶ 3. remove eth1: its link, address and route configs (teardown cascades)");
    let step = Instant::now();
    for ptr in [
        Pointer::of::<RouteConfig>(CONFIG, "storage"),
        Pointer::of::<AddressConfig>(CONFIG, "eth1-storage"),
        eth1.clone(),
    ] {
        let started = Instant::now();
        state.teardown_and_destroy(&ptr, None).await?;
        line(
            out,
            format!(
                "  {ptr} released by its controllers and destroyed in {:.1} ms",
                started.elapsed().as_secs_f64() * 1e3
            ),
        );
    }
    settle(&runtime, step, out).await;
    show_status(&runtime, root, out).await;
    finish(runtime, root, out).await
}

/// Prints the final resources and metrics, writes the graph and metrics
/// files, stops the runtime and closes its state.
async fn finish(
    runtime: Runtime,
    root: &Path,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn std::error::Error>> {
    let state = runtime.state();
    let resources = resource_table(&state).await?;
    line(out, format!("\nfinal resources ({}):", resources.len()));
    let rows: Vec<Vec<String>> = resources.iter().map(|r| r.to_vec()).collect();
    table(out, &["TYPE", "ID", "VERSION", "OWNER", "PHASE", "FINALIZERS"], &rows);

    let metrics = runtime.metrics().await;
    line(out, "\ncontrollers:");
    let rows: Vec<Vec<String>> = metrics
        .iter()
        .map(|m| {
            vec![
                m.controller.clone(),
                m.status.to_string(),
                m.wakeups.to_string(),
                m.reconciles.to_string(),
                m.errors.to_string(),
                m.panics.to_string(),
                m.restarts.to_string(),
                m.reads.to_string(),
                m.writes.to_string(),
            ]
        })
        .collect();
    table(
        out,
        &[
            "CONTROLLER",
            "STATUS",
            "WAKEUPS",
            "RECONCILES",
            "ERRORS",
            "PANICS",
            "RESTARTS",
            "READS",
            "WRITES",
        ],
        &rows,
    );

    let graph = runtime.graph().await;
    let dot = graph.to_dot();
    std::fs::write(root.join("graph.dot"), &dot)?;
    std::fs::write(root.join("graph.mmd"), graph.to_mermaid())?;
    std::fs::write(root.join("metrics.prom"), runtime.metrics_text().await)?;
    line(out, format!("\nwrote {0}/graph.dot, {0}/graph.mmd and {0}/metrics.prom", root.display()));
    runtime.stop().await;
    state.close().await?;
    Ok(Report { files: files(root), resources, metrics, dot })
}
