//! A read-only HTTP admin endpoint on actix-web (feature `admin`): metrics,
//! probes, resources and watches, controllers, and the dependency graph.
//!
//! Every route answers GET only and changes nothing. [`Admin::serve`] binds
//! `127.0.0.1:8081` by default, or a unix socket; [`Admin::configure`] mounts
//! the same routes into an application's own actix-web `App`, behind its own
//! authentication.
//!
//! | route | answer |
//! |---|---|
//! | `GET /metrics` | the runtime's metrics ([`prometheus`](crate::prometheus)), as `application/openmetrics-text` |
//! | `GET /healthz[/<check>]` | liveness: the supervisor and the state actor answer within a second |
//! | `GET /readyz[/<check>]` | readiness: the above, bootstrapped (the runtime settled once), every expected controller registered and none failed |
//! | `GET /api/v1/types` | the resource types the controllers read and write, with their namespaces (those read from; for a type only written, those of the other types that hold some of it) |
//! | `GET /api/v1/resources/{namespace}/{type}[?labels=SELECTOR]` | the matching resources, sorted by id, as a JSON array |
//! | `GET /api/v1/resources/{namespace}/{type}/{id}` | one resource as JSON |
//! | `GET /api/v1/watch/{namespace}/{type}[/{id}][?labels=SELECTOR]` | server-sent events: `created` for each existing resource, `bootstrapped`, then `created`, `updated`, `destroyed`, each change with its store revision as `id`; a client reconnecting with `Last-Event-ID` gets only the changes after it (or `reset`, then a fresh bootstrap, when the state no longer keeps them); when the server stops, a last `stopping` event with an empty `id` (an `EventSource` then reconnects from the start: no watch resumes across a restart) |
//! | `GET /api/v1/controllers` | each controller's status, counters, inputs and outputs |
//! | `GET /api/v1/graph[?format=json\|dot\|mermaid\|svg]` | the dependency graph |
//! | `GET /api/v1/shards` | each sharded controller of this process (etcd state; see [`shard`](crate::shard)): its `member` name, the ring's `members`, the `shards` count, its `primary` kinds, the shards it `owned` (each with its fencing `token`, its `keys` and whether it is `draining`), the `keys` of its owned shards in all, its `handoffs` (`acquired`, `released`, `lost`) and `takeover` times; `[]` without one. The keys are counted by listing the primary kinds at each request |
//!
//! The probes answer in the Kubernetes text format: `ok` when every check
//! passes; with `?verbose`, or when a check fails (503), one `[+]name ok` or
//! `[-]name failed: reason` line per check. `?exclude=name` skips a check.
//!
//! A type in a path is the full resource type or, when that is unambiguous,
//! its first segment in any case (`links` for `Links.net.cosi.dev`). Label
//! selectors use kubectl's syntax (see [`LabelQuery`](crate::resource::LabelQuery)'s
//! `FromStr`). Bad input gets a 4xx answer with a JSON body
//! `{"error": "...", "status": 400}` that says what was wrong.
//!
//! A watch has a bounded buffer per client ([`Admin::watch_buffer`]): a client
//! that reads too slowly (the buffer full, and its connection taking no
//! more) gets an `error` event once it catches up with the buffer, and is
//! disconnected. A bootstrap or a burst of changes larger than the buffer
//! reaches a client that reads: the buffer drains into the connection as it
//! fills. One client address holds at most
//! [`Admin::max_watches_per_client`] watches (429 past it), and a query string
//! is at most [`Admin::max_query_bytes`] long (414 past it). The state actor is never held back by a
//! client: each watch takes events from the state as they come.
//!
//! ```no_run
//! use cosi_runtime::admin::{Admin, Bind};
//! # actix::System::new().block_on(async {
//! let runtime = cosi_runtime::Runtime::start();
//! let server = Admin::new(&runtime).serve(Bind::default()).await?;
//! println!("admin endpoint on {}", server.url());
//! # server.stop().await;
//! # Ok::<(), std::io::Error>(())
//! # }).unwrap();
//! ```
//!
//! Mounted into an application's own server:
//!
//! ```no_run
//! use actix_web::{App, HttpServer, web};
//! # actix::System::new().block_on(async {
//! let runtime = cosi_runtime::Runtime::start();
//! let admin = cosi_runtime::admin::Admin::new(&runtime).configure();
//! HttpServer::new(move || App::new().service(web::scope("/admin").configure(admin.clone())))
//!     .bind(("127.0.0.1", 8080))?
//!     .run()
//!     .await
//! # }).unwrap();
//! ```

mod api;
mod error;
mod probes;
mod shards;
mod shared;
mod sse;
mod svg;

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpServer, web};
use prometheus_client::registry::Registry;

pub use error::ApiError;
use shared::Shared;

use crate::Runtime;
use crate::resource::Kind;

/// Where [`Admin::serve`] listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bind {
    /// A TCP address (port 0: any free port).
    Tcp(SocketAddr),
    /// A unix socket at this path.
    Unix(PathBuf),
}

impl Default for Bind {
    /// `127.0.0.1:8081`: loopback only.
    fn default() -> Self {
        Bind::Tcp(SocketAddr::from(([127, 0, 0, 1], 8081)))
    }
}

impl FromStr for Bind {
    type Err = String;

    /// `unix:PATH`, or `HOST:PORT`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if let Some(path) = s.strip_prefix("unix:") {
            if path.is_empty() {
                return Err("unix: needs a socket path".into());
            }
            return Ok(Bind::Unix(path.into()));
        }
        s.parse()
            .map(Bind::Tcp)
            .map_err(|e| format!("{s:?} is neither HOST:PORT nor unix:PATH ({e})"))
    }
}

impl fmt::Display for Bind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Bind::Tcp(addr) => write!(f, "{addr}"),
            Bind::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// The admin endpoint of one [`Runtime`]: configure it, then
/// [`serve`](Admin::serve) it or mount it with [`configure`](Admin::configure).
#[derive(Clone)]
pub struct Admin {
    runtime: Runtime,
    registry: Option<Arc<Registry>>,
    bootstrapped: Arc<AtomicBool>,
    expected: Vec<String>,
    kinds: Vec<Kind>,
    watch_buffer: usize,
    max_watches_per_client: usize,
    max_query_bytes: usize,
}

impl fmt::Debug for Admin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admin")
            .field("expected", &self.expected)
            .field("kinds", &self.kinds)
            .field("watch_buffer", &self.watch_buffer)
            .field("max_watches_per_client", &self.max_watches_per_client)
            .field("max_query_bytes", &self.max_query_bytes)
            .finish_non_exhaustive()
    }
}

/// Events a watch client may have buffered before it is disconnected.
pub const DEFAULT_WATCH_BUFFER: usize = 1024;

pub use crate::http_limits::{DEFAULT_MAX_QUERY_BYTES, DEFAULT_MAX_WATCHES_PER_CLIENT};
pub use crate::http_stop::STOP_PATIENCE;

impl Admin {
    /// The admin endpoint of `runtime`. Call it inside the actix `System`
    /// that runs the runtime: it starts waiting for the runtime to settle
    /// (the `bootstrapped` readiness check).
    pub fn new(runtime: &Runtime) -> Admin {
        let bootstrapped = Arc::new(AtomicBool::new(false));
        let (flag, settling) = (bootstrapped.clone(), runtime.clone());
        actix::spawn(async move {
            settling.settled().await;
            flag.store(true, Ordering::Release);
        });
        Admin {
            runtime: runtime.clone(),
            registry: None,
            bootstrapped,
            expected: Vec::new(),
            kinds: Vec::new(),
            watch_buffer: DEFAULT_WATCH_BUFFER,
            max_watches_per_client: DEFAULT_MAX_WATCHES_PER_CLIENT,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
        }
    }

    /// Controllers that must be registered before `/readyz` passes.
    #[must_use]
    pub fn expect_controllers<S: Into<String>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Self {
        self.expected.extend(names.into_iter().map(Into::into));
        self
    }

    /// Resource kinds to serve besides those the controllers read and write
    /// (user-only types no controller declares).
    #[must_use]
    pub fn kinds(mut self, kinds: impl IntoIterator<Item = Kind>) -> Self {
        self.kinds.extend(kinds);
        self
    }

    /// Serve `/metrics` from this registry instead of one holding only the
    /// runtime's metrics (register them into it with
    /// [`Runtime::register_metrics`]).
    #[must_use]
    pub fn registry(mut self, registry: Arc<Registry>) -> Self {
        self.registry = Some(registry);
        self
    }

    /// Events a watch client may have buffered, beyond what its connection
    /// holds, before it is disconnected (default [`DEFAULT_WATCH_BUFFER`], at
    /// least 1).
    #[must_use]
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }

    /// Watches one client address may hold open at once (default
    /// [`DEFAULT_MAX_WATCHES_PER_CLIENT`], at least 1); one more is answered
    /// 429 until one of them ends. Every client of a unix socket counts as
    /// one.
    ///
    /// ```
    /// # actix::System::new().block_on(async {
    /// let runtime = cosi_runtime::Runtime::start();
    /// let admin = cosi_runtime::admin::Admin::new(&runtime).max_watches_per_client(8);
    /// assert!(format!("{admin:?}").contains("max_watches_per_client: 8"));
    /// # });
    /// ```
    #[must_use]
    pub fn max_watches_per_client(mut self, watches: usize) -> Self {
        self.max_watches_per_client = watches.max(1);
        self
    }

    /// The longest query string accepted, in bytes (default
    /// [`DEFAULT_MAX_QUERY_BYTES`]); a longer one is answered 414. actix-web
    /// bounds the whole request head at 128 KiB and 96 headers (431 past it)
    /// in any case.
    #[must_use]
    pub fn max_query_bytes(mut self, bytes: usize) -> Self {
        self.max_query_bytes = bytes;
        self
    }

    fn shared(&self, closing: Arc<crate::http_stop::Closing>) -> Arc<Shared> {
        let registry = self.registry.clone().unwrap_or_else(|| {
            let mut registry = Registry::default();
            self.runtime.register_metrics(&mut registry);
            Arc::new(registry)
        });
        Arc::new(Shared {
            runtime: self.runtime.clone(),
            registry,
            bootstrapped: self.bootstrapped.clone(),
            expected: self.expected.clone(),
            kinds: self.kinds.clone(),
            watch_buffer: self.watch_buffer,
            limits: crate::http_limits::ClientLimits::new(
                self.max_watches_per_client,
                self.max_query_bytes,
            ),
            closing,
        })
    }

    /// The routes, to mount into an actix-web `App` (or a `web::scope`) with
    /// `.configure(..)`. Clone it into each worker's `App`.
    pub fn configure(&self) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
        // Mounted in an application's own server: nothing stops its
        // watches but that server.
        self.configure_with(crate::http_stop::Closing::new())
    }

    /// [`configure`](Self::configure), with the watches ending on `closing`.
    fn configure_with(
        &self,
        closing: Arc<crate::http_stop::Closing>,
    ) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
        let shared = web::Data::from(self.shared(closing));
        move |cfg: &mut web::ServiceConfig| {
            cfg.app_data(shared.clone());
            probes::routes(cfg);
            api::routes(cfg);
        }
    }

    /// Serves the routes on `bind` from one worker thread of its own, until
    /// [`AdminServer::stop`] or the end of the actix `System`.
    ///
    /// # Errors
    /// The IO error when `bind` cannot be bound.
    pub async fn serve(self, bind: Bind) -> std::io::Result<AdminServer> {
        let closing = crate::http_stop::Closing::new();
        let configure = self.configure_with(closing.clone());
        let server = HttpServer::new(move || App::new().configure(configure.clone()))
            .workers(1)
            .disable_signals()
            .shutdown_timeout(1);
        let (server, local) = match &bind {
            Bind::Tcp(addr) => {
                if !addr.ip().is_loopback() {
                    tracing::warn!(
                        "admin endpoint on {addr}: not a loopback address, reachable from other hosts"
                    );
                }
                let server = server.bind(addr)?;
                let local = server.addrs().first().copied().map_or(bind.clone(), Bind::Tcp);
                (server, local)
            }
            #[cfg(unix)]
            Bind::Unix(path) => {
                check_socket_path(path)?;
                (server.bind_uds(path)?, bind.clone())
            }
            #[cfg(not(unix))]
            Bind::Unix(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::Unsupported,
                    "unix sockets need a unix system",
                ));
            }
        };
        let server = server.run();
        let handle = server.handle();
        actix::spawn(async move {
            if let Err(e) = server.await {
                tracing::error!("admin endpoint: {e}");
            }
        });
        tracing::info!("admin endpoint on {local}");
        Ok(AdminServer { handle, bind: local, closing })
    }
}

/// A running admin endpoint.
#[derive(Debug)]
pub struct AdminServer {
    handle: ServerHandle,
    bind: Bind,
    closing: Arc<crate::http_stop::Closing>,
}

impl AdminServer {
    /// Where it listens (with the port chosen when port 0 was asked for).
    pub fn bind(&self) -> &Bind {
        &self.bind
    }

    /// Its base URL: `http://ADDR` or `unix:PATH` (what `cosictl --endpoint` takes).
    pub fn url(&self) -> String {
        match &self.bind {
            Bind::Tcp(addr) => format!("http://{addr}"),
            Bind::Unix(path) => format!("unix:{}", path.display()),
        }
    }

    /// Stops it: every open watch ends with a last `stopping` event that
    /// clears the client's last event id (an `EventSource` reconnects
    /// without `Last-Event-ID`, so from the start: no watch can resume
    /// across a restart), then open connections are closed and a unix
    /// socket file is removed. Waits at most [`STOP_PATIENCE`] for those
    /// last events to leave.
    pub async fn stop(self) {
        self.closing.stop(STOP_PATIENCE).await;
        self.handle.stop(false).await;
        if let Bind::Unix(path) = &self.bind {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A unix socket path may be taken over only when nothing is there, or a
/// socket nobody listens on (left behind by a process that ended): actix
/// removes whatever is at the path before it binds.
#[cfg(unix)]
fn check_socket_path(path: &std::path::Path) -> std::io::Result<()> {
    use std::io::{Error, ErrorKind};
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    if !meta.file_type().is_socket() {
        return Err(Error::new(
            ErrorKind::AlreadyExists,
            format!("{} exists and is not a socket", path.display()),
        ));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(Error::new(
            ErrorKind::AddrInUse,
            format!("{} is a socket something listens on", path.display()),
        ));
    }
    Ok(())
}
