//! `--kube ADDR`: the Kubernetes API on the running control plane. The
//! configuration types are exposed (`kubectl get linkconfigs`, `lc` for
//! short); the story runs straight through, and once settled the control
//! plane keeps running, driven by `kubectl apply` and `kubectl delete`,
//! until it is told to stop.

use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::pin::Pin;

use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer};
use futures::future::LocalBoxFuture;
use tokio::sync::watch;

use crate::plane::{
    AddressConfig, CONFIG, HostnameConfig, LinkConfig, Moment, Pauses, RouteConfig,
};

/// Serves the Kubernetes API around the story.
pub struct Kube {
    addr: SocketAddr,
    server: Option<KubernetesServer>,
    /// Resolves when the control plane should stop.
    stop: Option<Pin<Box<dyn Future<Output = ()>>>>,
    /// The API's URL once it listens.
    pub url: watch::Sender<Option<String>>,
    /// The runtime, once started (for tests to wait on it).
    pub runtime: watch::Sender<Option<cosi_runtime::Runtime>>,
    /// The story is over and the control plane follows kubectl alone.
    pub following: watch::Sender<bool>,
    /// Why the API could not start.
    pub error: Option<String>,
}

impl Kube {
    pub fn new(addr: SocketAddr, stop: impl Future<Output = ()> + 'static) -> Kube {
        Kube {
            addr,
            server: None,
            stop: Some(Box::pin(stop)),
            url: watch::channel(None).0,
            runtime: watch::channel(None).0,
            following: watch::channel(false).0,
            error: None,
        }
    }

    /// The user's configuration, as kubectl sees it: plain http, no tokens
    /// (fine on loopback; see `KubernetesApi::tokens` and `tls` otherwise).
    fn api(runtime: &cosi_runtime::Runtime) -> Result<KubernetesApi, String> {
        let version = "v1alpha1";
        KubernetesApi::new(&runtime.state())
            // What `kubectl get -A` reads: the user's configuration.
            .namespaces([CONFIG])
            // A client cannot create what a controller outputs exclusively.
            .controllers(runtime)
            .expose(
                Expose::with_schema::<LinkConfig>(version)
                    .short_names(["lc"])
                    .column("MTU", ".spec.mtu")
                    .column("UP", ".spec.up"),
            )
            .and_then(|api| {
                api.expose(
                    Expose::with_schema::<AddressConfig>(version).column("LINK", ".spec.link"),
                )
            })
            .and_then(|api| api.expose(Expose::with_schema::<RouteConfig>(version)))
            .and_then(|api| api.expose(Expose::with_schema::<HostnameConfig>(version)))
            .map_err(|e| e.to_string())
    }

    async fn started(&mut self, runtime: &cosi_runtime::Runtime, out: &mut dyn Write) {
        self.runtime.send_replace(Some(runtime.clone()));
        let api = match Self::api(runtime) {
            Ok(api) => api,
            Err(e) => return self.error = Some(e),
        };
        match api.serve(self.addr).await {
            Ok(server) => {
                let url = server.url();
                let _ = writeln!(
                    out,
                    "Kubernetes API on {url}; in another terminal:\n  kubectl --server {url} get linkconfigs -n config -w"
                );
                self.url.send_replace(Some(url));
                self.server = Some(server);
            }
            Err(e) => self.error = Some(format!("cannot serve on {}: {e}", self.addr)),
        }
    }
}

impl Pauses for Kube {
    fn at<'a>(&'a mut self, moment: Moment<'a>, out: &'a mut dyn Write) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            match moment {
                Moment::Started(runtime) => self.started(runtime, out).await,
                Moment::Stopping => {
                    let Some(server) = self.server.take() else { return };
                    let url = server.url();
                    let _ = writeln!(
                        out,
                        "\nsettled; the control plane follows kubectl until Ctrl-C (or SIGTERM):\n  \
                         kubectl --server {url} apply -f link.yaml\n  \
                         kubectl --server {url} delete linkconfig eth0 -n config"
                    );
                    let _ = out.flush();
                    self.following.send_replace(true);
                    if let Some(stop) = self.stop.take() {
                        stop.await;
                    }
                    server.stop().await;
                }
                Moment::Before(_) => {}
            }
        })
    }
}
