//! The state served through the Kubernetes API (`--features kubernetes-api`):
//! reads, watches, writes, status, authentication over TLS, bad requests;
//! kubectl, kube-rs and python's `kubernetes` as clients; the flagship with
//! `--kube`.

// The admin tests' HTTP client; these tests read no headers and no
// server-sent events.
#[allow(dead_code)]
#[path = "../common/http.rs"]
mod http;
#[path = "../common/kubectl.rs"]
mod kubectl;

#[path = "../../examples/netplane/kube.rs"]
mod kube;
#[path = "../../examples/netplane/plane.rs"]
mod plane;

mod auth;
mod bad_requests;
mod crds;
mod events;
mod example_netplane_kube;
mod fidelity;
mod kinds;
mod kube_rs;
mod python;
mod read;
mod status;
mod write;
