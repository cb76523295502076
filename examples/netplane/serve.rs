//! `--serve ADDR`: the admin endpoint on the running control plane. The story
//! waits for a line of input (Enter) before each change, so that
//! `cosictl get -w` in another terminal shows it land, and once settled the
//! control plane keeps running until it is told to stop.

use std::future::Future;
use std::io::Write;
use std::pin::Pin;

use cosi_runtime::admin::{Admin, AdminServer, Bind};
use futures::future::LocalBoxFuture;
use tokio::sync::{mpsc, watch};

use crate::plane::{Moment, Pauses};

/// The controllers `/readyz` waits for.
const CONTROLLERS: [&str; 6] = [
    "LinkController",
    "AddressController",
    "RouteController",
    "HostnameController",
    "ApplyController",
    "StatusController",
];

/// Serves the admin endpoint around the story.
pub struct Serve {
    bind: Bind,
    server: Option<AdminServer>,
    /// One item per line of input; closed at the end of input.
    next: mpsc::UnboundedReceiver<()>,
    /// Resolves when the control plane should stop.
    stop: Option<Pin<Box<dyn Future<Output = ()>>>>,
    /// The endpoint's URL once it listens.
    pub url: watch::Sender<Option<String>>,
    /// Why the endpoint could not start.
    pub error: Option<String>,
}

impl Serve {
    pub fn new(
        bind: Bind,
        next: mpsc::UnboundedReceiver<()>,
        stop: impl Future<Output = ()> + 'static,
    ) -> Serve {
        Serve {
            bind,
            server: None,
            next,
            stop: Some(Box::pin(stop)),
            url: watch::channel(None).0,
            error: None,
        }
    }

    async fn started(&mut self, runtime: &cosi_runtime::Runtime, out: &mut dyn Write) {
        let admin = Admin::new(runtime).expect_controllers(CONTROLLERS);
        match admin.serve(self.bind.clone()).await {
            Ok(server) => {
                let url = server.url();
                let _ = writeln!(
                    out,
                    "admin endpoint on {url}; in another terminal:\n  cosictl --endpoint {url} get linkconfigs -w"
                );
                self.url.send_replace(Some(url));
                self.server = Some(server);
            }
            Err(e) => self.error = Some(format!("cannot serve on {}: {e}", self.bind)),
        }
    }
}

impl Pauses for Serve {
    fn at<'a>(&'a mut self, moment: Moment<'a>, out: &'a mut dyn Write) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            match moment {
                Moment::Started(runtime) => self.started(runtime, out).await,
                Moment::Before(step) if self.server.is_some() => {
                    let _ = writeln!(out, "\n(press Enter for step {step})");
                    let _ = out.flush();
                    // The end of input runs the rest straight through.
                    let _ = self.next.recv().await;
                }
                Moment::Stopping => {
                    let Some(server) = self.server.take() else { return };
                    let _ = writeln!(
                        out,
                        "\nsettled; serving {} until Ctrl-C (or SIGTERM)",
                        server.url()
                    );
                    let _ = out.flush();
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
