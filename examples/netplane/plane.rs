//! A small network-configuration control plane built on cosi-runtime: the
//! flagship example (`main.rs` runs it; `tests/examples/netplane.rs` runs it
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
//! - The four render controllers are `cosi_actors::Transform`s (generic
//!   controllers): each maps one config object to one `FileSpec`, holds a
//!   finalizer on its config until that file is gone, and shares the
//!   `FileSpec` output type with the others (each file owned by its renderer).
//!   Addresses and routes render only once their link exists.
//! - The apply controller is a queue controller: one file per reconcile,
//!   four at a time; it holds a finalizer on each `FileSpec` until the file
//!   is removed from disk.
//! - `HostnameController` has a deliberate stale-cache bug: it panics the
//!   first time it sees the hostname change. The panic is caught, that one
//!   config is retried after a backoff, and the retry converges.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use cosi_actors::Transform;
use cosi_runtime::controller::{
    ControllerMetrics, Outcome, QueueController, QueueSettings, ReconcileError, TerminalError,
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

/// A network link the user wants.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[cfg_attr(feature = "kubernetes-api", derive(cosi_runtime::kubernetes::schemars::JsonSchema))]
#[cfg_attr(feature = "kubernetes-api", schemars(crate = "cosi_runtime::kubernetes::schemars"))]
#[spec(type = "LinkConfigs.net.cosi.dev")]
pub struct LinkConfig {
    /// The largest packet the link carries, in bytes.
    pub mtu: u32,
    /// Whether the link is up.
    pub up: bool,
}

/// An address on a link.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[cfg_attr(feature = "kubernetes-api", derive(cosi_runtime::kubernetes::schemars::JsonSchema))]
#[cfg_attr(feature = "kubernetes-api", schemars(crate = "cosi_runtime::kubernetes::schemars"))]
#[spec(type = "AddressConfigs.net.cosi.dev")]
pub struct AddressConfig {
    /// The link it is on.
    pub link: String,
    /// The address and prefix length (`10.0.0.1/24`).
    pub cidr: String,
}

/// A route through a gateway on a link.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[cfg_attr(feature = "kubernetes-api", derive(cosi_runtime::kubernetes::schemars::JsonSchema))]
#[cfg_attr(feature = "kubernetes-api", schemars(crate = "cosi_runtime::kubernetes::schemars"))]
#[spec(type = "RouteConfigs.net.cosi.dev")]
pub struct RouteConfig {
    /// The network reached (`0.0.0.0/0`).
    pub destination: String,
    /// The next hop.
    pub gateway: String,
    /// The link it leaves by.
    pub link: String,
}

/// The host's name.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[cfg_attr(feature = "kubernetes-api", derive(cosi_runtime::kubernetes::schemars::JsonSchema))]
#[cfg_attr(feature = "kubernetes-api", schemars(crate = "cosi_runtime::kubernetes::schemars"))]
#[spec(type = "HostnameConfigs.net.cosi.dev")]
pub struct HostnameConfig {
    /// The host's own name.
    pub hostname: String,
    /// Its domain.
    pub domain: String,
}

/// A file that should exist in the sandbox, with this content.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "FileSpecs.net.cosi.dev")]
pub struct FileSpec {
    pub path: String,
    pub content: String,
}

/// A file the apply controller wrote, and which FileSpec version it came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "AppliedFiles.net.cosi.dev")]
pub struct AppliedFile {
    pub path: String,
    pub bytes: u64,
    pub from_version: u64,
}

/// What the status controller reports.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "NetworkStatuses.net.cosi.dev")]
pub struct NetworkStatus {
    pub links_up: usize,
    pub addresses: usize,
    pub routes: usize,
    pub hostname: String,
    pub files_desired: usize,
    pub files_applied: usize,
    pub ready: bool,
}

/// A render controller: a [`Transform`] from one config type to the
/// `FileSpec`s it implies (one file per config object, named after the
/// object's type and id). It holds a finalizer on each config while it runs,
/// so a config's teardown waits until its file is gone from disk; the four
/// renderers share the `FileSpec` type (each file owned by its renderer).
fn renderer<C: Spec>(
    name: &str,
    render: impl Fn(&Resource<C>) -> Option<FileSpec> + 'static,
) -> Transform<C, FileSpec> {
    Transform::new(name, CONFIG, FILES, move |config: &Resource<C>| {
        Ok(render(config).map(|file| (file_id::<C>(config.id()), file)))
    })
    .with_input_finalizers()
    .shared_output()
}

/// `link-eth0` for `LinkConfig` `eth0`.
fn file_id<C: Spec>(id: &str) -> String {
    let kind = C::TYPE.split('.').next().unwrap_or_default().trim_end_matches("Configs");
    format!("{}-{id}", kind.to_lowercase())
}

/// A renderer whose config names a link: rendered only while that link runs
/// (the link type is an extra input, so a new link renders what waited for it).
fn on_link<C: Spec>(
    name: &str,
    link_of: fn(&C) -> &str,
    render: fn(&Resource<C>) -> FileSpec,
) -> Transform<C, FileSpec> {
    Transform::new_async(
        name,
        CONFIG,
        FILES,
        async move |cx: &ReconcileContext, config: &Resource<C>| {
            let link = Pointer::typed::<LinkConfig>(CONFIG, link_of(config.spec()));
            match cx.get(&link).await {
                Ok(link) if link.phase() == Phase::Running => {
                    Ok(Some((file_id::<C>(config.id()), render(config))))
                }
                Ok(_) => Ok(None),
                Err(e) if e.is_not_found() => Ok(None),
                Err(e) => Err(e.into()),
            }
        },
    )
    .with_extra_input(Input::weak::<LinkConfig>(CONFIG))
    .with_input_finalizers()
    .shared_output()
}

/// LinkConfig → `links/<name>.conf`.
pub fn link_controller() -> Transform<LinkConfig, FileSpec> {
    renderer("LinkController", |l: &Resource<LinkConfig>| {
        let state = if l.spec().up { "up" } else { "down" };
        let content = format!("name={}\nmtu={}\nstate={state}\n", l.id(), l.spec().mtu);
        Some(FileSpec { path: format!("links/{}.conf", l.id()), content })
    })
}

/// AddressConfig → `addresses/<id>.conf`, once its link exists.
pub fn address_controller() -> Transform<AddressConfig, FileSpec> {
    on_link(
        "AddressController",
        |a| &a.link,
        |a| {
            let content = format!("link={}\naddress={}\n", a.spec().link, a.spec().cidr);
            FileSpec { path: format!("addresses/{}.conf", a.id()), content }
        },
    )
}

/// RouteConfig → `routes/<id>.conf`, once its link exists.
pub fn route_controller() -> Transform<RouteConfig, FileSpec> {
    on_link(
        "RouteController",
        |r| &r.link,
        |r| {
            let s = r.spec();
            let content = format!("to={}\nvia={}\ndev={}\n", s.destination, s.gateway, s.link);
            FileSpec { path: format!("routes/{}.conf", r.id()), content }
        },
    )
}

/// HostnameConfig → `hostname`. Has a deliberate stale-cache bug: it panics
/// the first time it sees the hostname change (after updating its cache).
/// The queue catches the panic and retries that config after a backoff, on
/// a fresh instance from this factory (whose cache is empty): it converges.
pub fn hostname_controller() -> Transform<HostnameConfig, FileSpec> {
    let cached = std::cell::RefCell::new(None::<String>);
    renderer("HostnameController", move |c: &Resource<HostnameConfig>| {
        let fqdn = format!("{}.{}", c.spec().hostname, c.spec().domain);
        if let Some(stale) = cached.replace(Some(fqdn.clone())).filter(|old| *old != fqdn) {
            panic!("stale hostname cache: {stale} != {fqdn}");
        }
        Some(FileSpec { path: "hostname".into(), content: format!("{fqdn}\n") })
    })
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

impl QueueController for ApplyController {
    fn name(&self) -> &str {
        "ApplyController"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
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
        let record = Pointer::typed::<AppliedFile>(STATUS, ptr.id());
        // Holds a finalizer on the FileSpec: its teardown waits until the
        // file is gone from disk and its record destroyed.
        finalizer(
            cx,
            ptr,
            async |file: Resource<FileSpec>| {
                let path = self.path(file.spec())?;
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
                cx.modify(&record, move |r| *r.spec_mut() = applied.clone()).await?;
                Ok(Outcome::Done)
            },
            async |file| {
                match std::fs::remove_file(self.path(file.spec())?) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e.into()),
                    _ => log::info!("ApplyController: removed {}", file.spec().path),
                }
                Ok(cx.release(&record).await?)
            },
        )
        .await
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
        let ptr = Pointer::typed::<NetworkStatus>(STATUS, "network");
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
    runtime.register(link_controller).await?;
    runtime.register(address_controller).await?;
    runtime.register(route_controller).await?;
    runtime.register(hostname_controller).await?;
    let root = root.to_path_buf();
    // It writes files with `std::fs`: its reconciles run on the blocking pool.
    runtime.register(move || Blocking::new(ApplyController { root: root.clone() })).await?;
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
        .get_typed::<NetworkStatus>(&Pointer::typed::<NetworkStatus>(STATUS, "network"))
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

/// Where the story can stop for something else (`--serve` starts the admin
/// endpoint, waits between steps and keeps serving before the end).
pub enum Moment<'a> {
    /// The runtime is up; nothing is configured yet.
    Started(&'a Runtime),
    /// Before step 2 or 3.
    Before(u32),
    /// Settled for the last time; the runtime stops next.
    Stopping,
}

/// Called at each [`Moment`] of the story.
pub trait Pauses {
    /// What to do at `moment`.
    fn at<'a>(
        &'a mut self,
        moment: Moment<'a>,
        out: &'a mut dyn Write,
    ) -> futures::future::LocalBoxFuture<'a, ()>;
}

/// The story straight through.
struct NoPauses;

impl Pauses for NoPauses {
    fn at<'a>(
        &'a mut self,
        _: Moment<'a>,
        _: &'a mut dyn Write,
    ) -> futures::future::LocalBoxFuture<'a, ()> {
        Box::pin(async {})
    }
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
    run_story(root, state_dir, &mut NoPauses, out).await
}

/// [`run_with_state`], stopping at each [`Moment`] for `pauses`.
pub async fn run_story(
    root: &Path,
    state_dir: Option<&Path>,
    pauses: &mut dyn Pauses,
    out: &mut dyn Write,
) -> Result<Report, Box<dyn std::error::Error>> {
    let runtime = start(root, state_dir).await?;
    pauses.at(Moment::Started(&runtime), out).await;
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
            return finish(runtime, root, pauses, out).await;
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
    let user = state.client(); // the user's writes: no owner
    user.create(link("eth0", 1500)).await?;
    user.create(link("eth1", 1500)).await?;
    user.create(address("eth0-lan", "eth0", "10.0.0.2/24")).await?;
    user.create(address("eth1-storage", "eth1", "192.168.10.2/24")).await?;
    user.create(route("default", "0.0.0.0/0", "10.0.0.1", "eth0")).await?;
    let host = HostnameConfig { hostname: "node-1".into(), domain: "example.org".into() };
    user.create(Resource::new(CONFIG, "hostname", host)).await?;
    settle(&runtime, step, out).await;
    show_status(&runtime, root, out).await;

    pauses.at(Moment::Before(2), out).await;
    line(out, "\n▶ 2. change it: jumbo frames on eth1, a storage route, hostname node-2");
    line(out, "     (HostnameController's stale cache makes it panic; it is caught and retried)");
    let step = Instant::now();
    let eth1 = Pointer::typed::<LinkConfig>(CONFIG, "eth1");
    user.modify(&eth1, |l| l.spec_mut().mtu = 9000).await?;
    user.create(route("storage", "192.168.20.0/24", "192.168.10.1", "eth1")).await?;
    let hostname = Pointer::typed::<HostnameConfig>(CONFIG, "hostname");
    user.modify(&hostname, |h| h.spec_mut().hostname = "node-2".into()).await?;
    settle(&runtime, step, out).await;
    let m = runtime.metrics().await;
    if let Some(h) = m.iter().find(|m| m.controller == "HostnameController") {
        line(
            out,
            format!(
                "  HostnameController: {} panic(s), {} retry(ies), status {}",
                h.panics, h.retries, h.status
            ),
        );
    }
    show_status(&runtime, root, out).await;

    pauses.at(Moment::Before(3), out).await;
    line(out, "\n▶ 3. remove eth1: its link, address and route configs (teardown cascades)");
    let step = Instant::now();
    for ptr in [
        Pointer::typed::<RouteConfig>(CONFIG, "storage").erase(),
        Pointer::typed::<AddressConfig>(CONFIG, "eth1-storage").erase(),
        eth1.erase(),
    ] {
        let started = Instant::now();
        user.teardown_and_destroy(&ptr).await?;
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
    finish(runtime, root, pauses, out).await
}

/// Prints the final resources and metrics, writes the graph and metrics
/// files, stops the runtime and closes its state.
async fn finish(
    runtime: Runtime,
    root: &Path,
    pauses: &mut dyn Pauses,
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
    pauses.at(Moment::Stopping, out).await;
    runtime.stop().await;
    state.close().await?;
    Ok(Report { files: files(root), resources, metrics, dot })
}
