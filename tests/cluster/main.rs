//! Kubernetes clusters as source and sink (`--features kubernetes`), and a
//! stock kube-runtime `Controller` against our state (`kube_runtime`, which
//! needs `kubernetes-api` only). The cluster is this crate's own Kubernetes
//! API server on loopback.

#[cfg(feature = "kubernetes")]
#[path = "../common/kubectl.rs"]
mod kubectl;

#[cfg(feature = "kubernetes")]
#[path = "../../examples/greeting_operator/operator.rs"]
mod operator;

#[cfg(feature = "kubernetes")]
#[cfg(feature = "kubernetes")]
mod events;
mod example_greeting_operator;
mod kube_runtime;
#[cfg(feature = "kubernetes")]
mod leases;
#[cfg(feature = "kubernetes")]
mod sink;
#[cfg(feature = "kubernetes")]
mod source;
