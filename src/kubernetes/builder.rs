//! [`KubernetesApi`], the builder of the Kubernetes API, and the
//! [`KubernetesServer`] it serves.

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix_web::body::BoxBody;
use actix_web::dev::{ServerHandle, ServiceRequest};
use actix_web::middleware::{Next, from_fn};
use actix_web::{App, HttpServer, guard, web};

use super::auth::{self, Tokens};
use super::params;
use super::registry::{Expose, ExposeError, Registry};
use super::routes::routes;
use super::shared::Shared;
use super::status::Status;
use super::tls::{self, TlsError};
use crate::State;
use crate::http_limits::{
    ClientLimits, DEFAULT_MAX_QUERY_BYTES, DEFAULT_MAX_WATCHES_PER_CLIENT, Refused,
};
use crate::http_stop::{Closing, STOP_PATIENCE};

/// Bookmarks' default period (`allowWatchBookmarks=true`).
pub const DEFAULT_BOOKMARK_INTERVAL: Duration = Duration::from_secs(60);

/// Events a watch client may have unread before the server ends its watch.
pub const DEFAULT_WATCH_BUFFER: usize = 1024;

/// The largest request body the API reads by default: 3 MiB, the
/// apiserver's own limit (`MaxRequestBodyBytes`), well above what one
/// object may weigh in etcd (1.5 MiB), so every manifest a real cluster
/// accepts is accepted here too.
pub const DEFAULT_MAX_REQUEST_BODY: usize = 3 * 1024 * 1024;

/// The Kubernetes API over one [`State`]: expose types, then
/// [`serve`](KubernetesApi::serve) it or mount it with
/// [`configure`](KubernetesApi::configure). See the [module](super) docs.
#[derive(Clone)]
pub struct KubernetesApi {
    state: State,
    registry: Registry,
    server_version: (u32, u32),
    namespaces: BTreeSet<String>,
    bookmark_interval: Duration,
    watch_buffer: usize,
    max_request_body: usize,
    max_watches_per_client: usize,
    max_query_bytes: usize,
    /// The runtime whose exclusive outputs a client may not create.
    controllers: Option<crate::runtime::GraphSource>,
    // ---- access and TLS (auth.rs, tls.rs) ----
    /// `None`: open (no tokens, no anonymous setting).
    access: Option<auth::Access>,
    tls: Option<Arc<rustls::ServerConfig>>,
    // ---- end access and TLS ----
    create_namespaces: bool,
    anonymous_writes: bool,
}

impl fmt::Debug for KubernetesApi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubernetesApi")
            .field(
                "types",
                &self.registry.types.iter().map(|t| &t.resource_type).collect::<Vec<_>>(),
            )
            .field("server_version", &self.server_version)
            .field("namespaces", &self.namespaces)
            .field("bookmark_interval", &self.bookmark_interval)
            .field("watch_buffer", &self.watch_buffer)
            .field("max_request_body", &self.max_request_body)
            .field("max_watches_per_client", &self.max_watches_per_client)
            .field("max_query_bytes", &self.max_query_bytes)
            .field("access", &self.access)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

/// The Events the runtime records (stored whole as their resource type
/// `Events.events.k8s.io`): `events.k8s.io/v1` as stored, and core `v1`
/// (`kubectl get events -A`, `kubectl describe`) through its view.
fn events() -> [Expose; 2] {
    use super::event_view::{CORE_SELECTABLE, SELECTABLE};
    let columns = |e: Expose, object: &str, message: &str, count: &str| {
        e.top_level_fields()
            .kind("Event")
            .column("Type", ".type")
            .column("Reason", ".reason")
            .column("Object", object)
            .column("Count", count)
            .column("Message", message)
    };
    [
        columns(
            Expose::resource_type("Events.events.k8s.io", "v1"),
            ".regarding.name",
            ".note",
            ".deprecatedCount",
        )
        .selectable_fields(SELECTABLE),
        columns(
            Expose::resource_type("Events.events.k8s.io", "v1").core_group(),
            ".involvedObject.name",
            ".message",
            ".count",
        )
        .view(super::registry::View::CoreEvent)
        .short_names(["ev"])
        .selectable_fields(CORE_SELECTABLE),
    ]
}

/// Whether a server on `addr` refuses anonymous writes: no tokens, not a
/// loopback address, and no opt-in.
fn refuses_anonymous_writes(tokens: bool, addr: SocketAddr, allowed: bool) -> bool {
    !tokens && !addr.ip().is_loopback() && !allowed
}

/// Answers a write `401` when `refuse` (no tokens, served off loopback
/// without [`KubernetesApi::anonymous_writes`]); lets everything else through.
async fn anonymous_write(
    refuse: bool,
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<actix_web::dev::ServiceResponse<BoxBody>, actix_web::Error> {
    use actix_web::http::Method;
    let read = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS)
        || auth::is_review_path(req.path());
    if refuse && !read {
        use actix_web::ResponseError;
        let status = Status::unauthorized_because(
            "anonymous writes are refused on a server that is not on a loopback address and has no tokens",
        );
        return Ok(req.into_response(status.error_response()));
    }
    next.call(req).await
}

impl KubernetesApi {
    /// The API over `state`, with nothing exposed yet, answering `/version`
    /// as Kubernetes 1.33.
    pub fn new(state: &State) -> KubernetesApi {
        KubernetesApi {
            state: state.clone(),
            registry: Registry::default(),
            server_version: (1, 33),
            namespaces: BTreeSet::new(),
            bookmark_interval: DEFAULT_BOOKMARK_INTERVAL,
            watch_buffer: DEFAULT_WATCH_BUFFER,
            max_request_body: DEFAULT_MAX_REQUEST_BODY,
            max_watches_per_client: DEFAULT_MAX_WATCHES_PER_CLIENT,
            max_query_bytes: DEFAULT_MAX_QUERY_BYTES,
            controllers: None,
            access: None,
            tls: None,
            create_namespaces: false,
            anonymous_writes: false,
        }
        .expose(super::namespaces::expose())
        .and_then(|api| api.expose(super::crds::expose()))
        .unwrap_or_else(|e| unreachable!("the built-in exposures are valid: {e}"))
    }

    /// Serves the Events a runtime records ([`crate::events`]) as
    /// `events.k8s.io/v1` `events`, stored whole (kube-rs'
    /// `Api<k8s_openapi::api::events::v1::Event>` and `Recorder`), and as
    /// core `v1` `events` (short name `ev`), converted field by field as the
    /// apiserver converts them: `kubectl get events -A`, and `kubectl
    /// describe` shows an object's Events (they are selectable by
    /// `involvedObject.name`, `.namespace`, `.kind`, `.uid`, `reason`,
    /// `type`, ...).
    /// [`controllers`](Self::controllers) does it too. A type of that
    /// resource type already exposed is kept.
    #[must_use]
    pub fn events(mut self) -> Self {
        for expose in events() {
            if let Ok(exposed) = expose.resolve()
                && !self
                    .registry
                    .types
                    .iter()
                    .any(|t| t.resource_type == exposed.resource_type && t.group == exposed.group)
            {
                // Cannot clash: the groups are Kubernetes', checked just above.
                let _ = self.registry.add(exposed);
            }
        }
        self
    }

    /// Whether a write into a namespace that does not exist makes it
    /// (default `false`: as on the apiserver, `404 NotFound`, `namespaces
    /// "prod" not found`, until `kubectl create namespace prod`). The
    /// declared namespaces (`default`, [`namespaces`](Self::namespaces), each
    /// type's [`Expose::namespaces`]) always exist. See
    /// [`CLUSTER_NAMESPACE`](super::CLUSTER_NAMESPACE) for where namespaces are kept.
    #[must_use]
    pub fn create_namespaces(mut self, create: bool) -> Self {
        self.create_namespaces = create;
        self
    }

    /// Serves the resources of one type (see [`Expose`]).
    ///
    /// # Errors
    /// [`ExposeError`] when the type has no group, a name or the version is
    /// not valid in Kubernetes, a print column's path is not understood, or
    /// the plural or a short name is already served.
    pub fn expose(mut self, expose: Expose) -> Result<Self, ExposeError> {
        self.registry.add(expose.resolve()?)?;
        Ok(self)
    }

    /// What `/version` answers (default 1.33). kubectl's dispatcher runs the
    /// client of the same minor version (`kubectl.1.27` ... `kubectl.1.33`).
    #[must_use]
    pub fn server_version(mut self, major: u32, minor: u32) -> Self {
        self.server_version = (major, minor);
        self
    }

    /// Admission by `runtime`'s controllers: a client's create of an object
    /// of a type one of them outputs exclusively (which that controller
    /// would then fail on for ever, the object being no controller's) is a
    /// `403 Forbidden` naming the controller, as an admission webhook would
    /// refuse it. Without it, such a create is stored.
    ///
    /// It also serves the Events the runtime records ([`events`](Self::events)).
    ///
    /// ```
    /// use cosi_runtime::kubernetes::KubernetesApi;
    /// # actix::System::new().block_on(async {
    /// let runtime = cosi_runtime::Runtime::start();
    /// let api = KubernetesApi::new(&runtime.state()).controllers(&runtime);
    /// # drop(api);
    /// # });
    /// ```
    #[must_use]
    pub fn controllers(mut self, runtime: &crate::Runtime) -> Self {
        self.controllers = Some(runtime.graph_source());
        self.events()
    }

    /// Namespaces every exposed type is served from in all-namespace requests
    /// (`kubectl get -A`), besides each type's own [`Expose::namespaces`].
    #[must_use]
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        self.namespaces.extend(namespaces.into_iter().map(Into::into));
        self
    }

    /// How often a watch with `allowWatchBookmarks=true` gets a `BOOKMARK`
    /// (default [`DEFAULT_BOOKMARK_INTERVAL`]; at least 10 ms).
    #[must_use]
    pub fn bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval.max(Duration::from_millis(10));
        self
    }

    /// Watches one client address may hold open at once (default
    /// [`DEFAULT_MAX_WATCHES_PER_CLIENT`], at least 1); one more is answered
    /// `429 TooManyRequests` until one of them ends (the apiserver bounds
    /// requests in flight instead, server-wide). An informer holds one per
    /// type.
    ///
    /// ```
    /// # actix::System::new().block_on(async {
    /// let state = cosi_runtime::State::start();
    /// let api = cosi_runtime::kubernetes::KubernetesApi::new(&state).max_watches_per_client(8);
    /// assert!(format!("{api:?}").contains("max_watches_per_client: 8"));
    /// # });
    /// ```
    #[must_use]
    pub fn max_watches_per_client(mut self, watches: usize) -> Self {
        self.max_watches_per_client = watches.max(1);
        self
    }

    /// The longest query string accepted, in bytes (default
    /// [`DEFAULT_MAX_QUERY_BYTES`]); a longer one is answered `414
    /// RequestURITooLong`. actix-web bounds the whole request head (request
    /// line and headers) at 128 KiB and 96 headers in any case, and answers
    /// 431 past it.
    #[must_use]
    pub fn max_query_bytes(mut self, bytes: usize) -> Self {
        self.max_query_bytes = bytes;
        self
    }

    /// Events a watch client may leave unread, beyond what its connection
    /// holds, before the server ends its watch (default
    /// [`DEFAULT_WATCH_BUFFER`], at least 1). A burst of changes, or the
    /// initial events of a watch without a version, larger than the buffer
    /// reaches a client that reads: the buffer drains into the connection
    /// as it fills.
    #[must_use]
    pub fn watch_buffer(mut self, events: usize) -> Self {
        self.watch_buffer = events.max(1);
        self
    }

    /// The largest request body (POST, PUT, PATCH, DELETE options) the API
    /// reads, in bytes (default [`DEFAULT_MAX_REQUEST_BODY`], 3 MiB like the
    /// apiserver; at least 1 KiB). A larger body is answered `413
    /// RequestEntityTooLarge` as a `Status` and changes nothing: at once when
    /// its `Content-Length` says so, else as soon as that many bytes have
    /// come in (the rest is not read, and the connection is closed). A
    /// client can cost the server no more memory than this per request.
    ///
    /// The limit is the API's own, whatever the actix-web `PayloadConfig` of
    /// an application it is mounted into says.
    ///
    /// ```
    /// use cosi_runtime::kubernetes::{DEFAULT_MAX_REQUEST_BODY, KubernetesApi};
    ///
    /// # actix::System::new().block_on(async {
    /// let state = cosi_runtime::State::start();
    /// // Small objects only: a 64 KiB manifest is plenty here.
    /// let api = KubernetesApi::new(&state).max_request_body(64 * 1024);
    /// assert!(format!("{api:?}").contains("max_request_body: 65536"));
    /// assert_eq!(DEFAULT_MAX_REQUEST_BODY, 3 * 1024 * 1024);
    /// # });
    /// ```
    #[must_use]
    pub fn max_request_body(mut self, bytes: usize) -> Self {
        self.max_request_body = bytes.max(1024);
        self
    }

    // ---- access and TLS (auth.rs, tls.rs) ----

    /// Requires a bearer token (`Authorization: Bearer <token>`, kubectl
    /// `--token`) from `tokens` on every request, and authorizes it by the
    /// token's [`User`](super::User)'s rights (see [Authentication](super#authentication)).
    /// Without `tokens` nor [`anonymous_read`](Self::anonymous_read) the API
    /// is open to anyone who reaches it.
    #[must_use]
    pub fn tokens(mut self, tokens: Tokens) -> Self {
        self.access.get_or_insert_default().tokens = tokens;
        self
    }

    /// Lets requests without a token read (get, list, watch) every exposed
    /// type as [`ANONYMOUS`](super::ANONYMOUS), and write nothing (default: off, such requests
    /// are `401 Unauthorized`). Enables the checks like [`tokens`](Self::tokens).
    #[must_use]
    pub fn anonymous_read(mut self, allow: bool) -> Self {
        self.access.get_or_insert_default().anonymous_read = allow;
        self
    }

    /// Lets a server [served](Self::serve) on an address that is not
    /// loopback, with no [`tokens`](Self::tokens), take writes from anyone
    /// (default: off). Without it such a server answers every write (any
    /// method but GET, HEAD and OPTIONS, the self reviews aside) `401
    /// Unauthorized` and says so when it starts; reads stay open. On a
    /// loopback address anonymous writes are always taken (local
    /// development), and with tokens the tokens decide. An API
    /// [mounted](Self::configure) into an application's server is the
    /// application's to guard.
    #[must_use]
    pub fn anonymous_writes(mut self, allow: bool) -> Self {
        self.anonymous_writes = allow;
        self
    }

    /// Serves over TLS (rustls): `cert_chain_pem` is the server's certificate
    /// (then any intermediates) in PEM, `key_pem` its private key (PKCS#8,
    /// PKCS#1 or SEC1 PEM). Used by [`serve`](Self::serve); an application
    /// mounting [`configure`](Self::configure) sets up TLS on its own server.
    ///
    /// # Errors
    /// [`TlsError`] when either does not parse, or the key does not fit the certificate.
    pub fn tls(
        self,
        cert_chain_pem: impl AsRef<[u8]>,
        key_pem: impl AsRef<[u8]>,
    ) -> Result<Self, TlsError> {
        let config = tls::server_config(cert_chain_pem.as_ref(), key_pem.as_ref())?;
        Ok(self.tls_config(config))
    }

    /// Serves over TLS with a rustls configuration of your own (client
    /// certificates, other providers). actix-web adds the `http/1.1` ALPN
    /// protocol to it.
    #[must_use]
    pub fn tls_config(mut self, config: Arc<rustls::ServerConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    // ---- end access and TLS ----

    fn shared(&self, closing: Arc<Closing>) -> Shared {
        Shared {
            closing,
            state: self.state.clone(),
            types: std::sync::RwLock::new(Arc::new(self.registry.clone())),
            built: self.registry.clone(),
            server_version: self.server_version,
            namespaces: self.namespaces.clone(),
            bookmark_interval: self.bookmark_interval,
            watch_buffer: self.watch_buffer,
            max_request_body: self.max_request_body,
            pages: Default::default(),
            controllers: self.controllers.clone(),
            create_namespaces: self.create_namespaces,
        }
    }

    /// The routes, to mount at the root of an actix-web `App` with
    /// `.configure(..)` (kubectl expects `/version`, `/api` and `/apis` at the
    /// root of `--server`). Clone it into each worker's `App`.
    pub fn configure(&self) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
        // Mounted in an application's own server: nothing stops its
        // watches but that server.
        self.configure_with(Closing::new(), false)
    }

    /// [`configure`](Self::configure), with the watches ending on `closing`.
    /// `refuse_writes`: without tokens, every write is a `401` (served off
    /// loopback without [`anonymous_writes`](Self::anonymous_writes)).
    fn configure_with(
        &self,
        closing: Arc<Closing>,
        refuse_writes: bool,
    ) -> impl Fn(&mut web::ServiceConfig) + Clone + Send + 'static {
        let shared = web::Data::new(self.shared(closing));
        // The types the CustomResourceDefinitions already in the state register.
        if actix::System::try_current().is_some() {
            let shared = shared.clone();
            actix::spawn(async move { shared.sync_crds().await });
        }
        // ---- access (auth.rs): the routes behind the token check when configured ----
        let access = self.access.clone().map(Arc::new);
        // ---- limits (http_limits.rs): query length, watches per client ----
        let limits = ClientLimits::new(self.max_watches_per_client, self.max_query_bytes);
        move |cfg: &mut web::ServiceConfig| {
            cfg.app_data(shared.clone());
            let (access, limits) = (access.clone(), limits.clone());
            // The API's paths only: an application's routes beside them are
            // left alone.
            let scope = web::scope("")
                .guard(guard::fn_guard(|ctx| auth::is_api_path(ctx.head().uri.path())))
                .wrap(from_fn(move |req: ServiceRequest, next: Next<BoxBody>| {
                    limits.clone().check(req, next, is_watch, refuse)
                }))
                .wrap(from_fn(move |req: ServiceRequest, next: Next<BoxBody>| {
                    anonymous_write(refuse_writes, req, next)
                }))
                .configure(move |cfg| match &access {
                    Some(access) => access.clone().mount(cfg, routes),
                    None => routes(cfg),
                });
            cfg.service(scope);
        }
    }

    /// Serves the API on `addr` (port 0: any free port) from one worker
    /// thread of its own, until [`KubernetesServer::stop`] or the end of the
    /// actix `System`.
    ///
    /// # Errors
    /// The IO error when `addr` cannot be bound.
    pub async fn serve(self, addr: SocketAddr) -> std::io::Result<KubernetesServer> {
        let closing = Closing::new();
        // Anonymous writes from other hosts only when asked for.
        let refuse_writes =
            refuses_anonymous_writes(self.access.is_some(), addr, self.anonymous_writes);
        let configure = self.configure_with(closing.clone(), refuse_writes);
        let server = HttpServer::new(move || App::new().configure(configure.clone()))
            .workers(1)
            .disable_signals()
            .shutdown_timeout(1);
        // ---- TLS (tls.rs) and the warnings of access (auth.rs) ----
        let tls = self.tls.is_some();
        let server = match &self.tls {
            Some(config) => server.bind_rustls_0_23(addr, config.as_ref().clone())?,
            None => server.bind(addr)?,
        };
        let local = server.addrs().first().copied().unwrap_or(addr);
        if !local.ip().is_loopback() {
            if self.access.is_none() && refuse_writes {
                tracing::warn!(
                    "Kubernetes API on {local}: not a loopback address and no tokens configured: reads are open to other hosts, writes are refused (401); configure tokens, or allow anonymous writes with KubernetesApi::anonymous_writes(true)"
                );
            } else if self.access.is_none() {
                tracing::warn!(
                    "Kubernetes API on {local}: not a loopback address, reachable from other hosts without authentication (no tokens configured, anonymous writes allowed)"
                );
            } else if !tls {
                tracing::warn!(
                    "Kubernetes API on {local}: not a loopback address, bearer tokens over plain HTTP (no TLS configured)"
                );
            }
        }
        // ---- end TLS ----
        let server = server.run();
        let handle = server.handle();
        actix::spawn(async move {
            if let Err(e) = server.await {
                tracing::error!("Kubernetes API: {e}");
            }
        });
        let scheme = if tls { "https" } else { "http" };
        tracing::info!("Kubernetes API on {scheme}://{local}");
        Ok(KubernetesServer { handle, local, tls, closing })
    }
}

/// Whether a request starts a watch: `?watch=` with any value the handler
/// reads as true (Go's booleans: `true`, `True`, `1`, `t`, …; the python
/// client sends `watch=True`), so every watch counts against the limit.
fn is_watch(req: &ServiceRequest) -> bool {
    req.query_string().split('&').any(|pair| {
        pair.strip_prefix("watch=")
            .is_some_and(|v| matches!(params::parse_bool("watch", v), Ok(true)))
    })
}

/// A request the limits refuse, as a `Status`.
fn refuse(refused: &Refused) -> actix_web::HttpResponse {
    use actix_web::ResponseError;
    let status = match refused {
        Refused::QueryTooLong { .. } => Status::uri_too_long(refused.to_string()),
        Refused::TooManyWatches { .. } => Status::too_many_requests(refused.to_string()),
    };
    status.error_response()
}

/// A running Kubernetes API server ([`KubernetesApi::serve`]).
#[derive(Debug)]
pub struct KubernetesServer {
    handle: ServerHandle,
    local: SocketAddr,
    tls: bool,
    closing: Arc<Closing>,
}

impl KubernetesServer {
    /// Where it listens (with the port chosen when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Its base URL, `http://ADDR`, or `https://ADDR` with TLS (what `kubectl --server` takes).
    pub fn url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.local)
    }

    /// Stops it: every open watch ends with an in-stream `410 Expired`
    /// (its clients list again, whatever server comes back on the
    /// address: see the [module](super) docs), then open connections are
    /// closed. Waits at most [`STOP_PATIENCE`] for the watches' last lines
    /// to leave (a client that does not read gets its connection cut).
    pub async fn stop(self) {
        self.closing.stop(STOP_PATIENCE).await;
        self.handle.stop(false).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::{TestRequest, call_service, init_service};

    #[test]
    fn anonymous_writes_are_refused_off_loopback_without_tokens_unless_allowed() {
        let lan: SocketAddr = "192.0.2.7:6443".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:6443".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:6443".parse().unwrap();
        let local6: SocketAddr = "[::1]:6443".parse().unwrap();
        assert!(refuses_anonymous_writes(false, lan, false));
        assert!(refuses_anonymous_writes(false, any, false));
        assert!(!refuses_anonymous_writes(false, local, false));
        assert!(!refuses_anonymous_writes(false, local6, false));
        assert!(!refuses_anonymous_writes(true, lan, false), "tokens decide");
        assert!(!refuses_anonymous_writes(false, lan, true), "opted in");
    }

    #[actix::test]
    async fn a_server_refusing_anonymous_writes_answers_them_401_and_reads_200() {
        let state = State::start();
        let api = KubernetesApi::new(&state)
            .expose(Expose::resource_type("Notes.misc.cosi.dev", "v1"))
            .unwrap()
            .namespaces(["config"]);
        let notes = "/apis/misc.cosi.dev/v1/namespaces/config/notes";
        let note = serde_json::json!({"metadata": {"name": "n"}, "spec": {}});
        for (refuse, expected) in [(true, 401), (false, 201)] {
            let app =
                init_service(App::new().configure(api.configure_with(Closing::new(), refuse)))
                    .await;
            let write = TestRequest::post().uri(notes).set_json(&note).to_request();
            assert_eq!(call_service(&app, write).await.status().as_u16(), expected);
            let read = TestRequest::get().uri(notes).to_request();
            assert_eq!(call_service(&app, read).await.status().as_u16(), 200);
            let review = TestRequest::post()
                .uri("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews")
                .set_json(serde_json::json!({"spec": {"resourceAttributes": {"verb": "get", "resource": "notes"}}}))
                .to_request();
            assert_eq!(
                call_service(&app, review).await.status().as_u16(),
                201,
                "a review is a read"
            );
        }
    }
}
