//! Kubernetes clusters as source and sink (feature `kubernetes`): controllers
//! of ours reconcile a cluster's objects.
//!
//! - A [`Source`] mirrors chosen sets of a cluster's objects ([`Mirror`]: a
//!   type, a namespace, a label selector) into the [`State`](crate::State)
//!   as resources it owns, one kube-runtime `watcher` per set however many
//!   controllers read it. Relists are mark-and-sweep; a delete in the cluster
//!   tears the mirror down and destroys it once our finalizers let go.
//! - An [`EventSink`] publishes the Events the runtime records
//!   ([`crate::events`]) to the cluster.
//! - A [`Sink`] writes back by server-side apply, one field manager per
//!   controller: the status of the object a controller reconciles, or whole
//!   objects it owns. Its errors retry with the controller's backoff, or end
//!   the key when retrying cannot help.
//!
//! The cluster is any apiserver a `kube::Client` reaches (from the
//! kubeconfig: `kube::Client::try_default()`), this crate's own
//! `kubernetes` server included (feature
//! `kubernetes-api`): that is how the tests run without a cluster.
//!
//! A mirror's spec is the whole object, so a kube-rs `CustomResource`
//! struct or a `k8s-openapi` type (in a `#[serde(transparent)]` newtype)
//! reads it:
//!
//! ```no_run
//! use cosi_runtime::cluster::{Mirror, Sink, Source};
//! use cosi_runtime::prelude::*;
//! use kube::api::{ApiResource, GroupVersionKind};
//! use k8s_openapi::api::core::v1::ConfigMap;
//!
//! #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
//! #[spec(type = "ConfigMaps.core.k8s.io")]
//! #[serde(transparent)]
//! struct ConfigMapMirror(ConfigMap);
//!
//! # async fn run(runtime: Runtime) -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?;
//! let source = Source::new(client.clone(), runtime.state());
//! let api = ApiResource::erase::<ConfigMap>(&());
//! source.mirror(Mirror::of::<ConfigMapMirror>(api).namespace("kube-system")).synced().await?;
//! let maps = runtime.state().list_typed::<ConfigMapMirror>("kube-system", &LabelQuery::default()).await?;
//! println!("{} config maps", maps.len());
//! let _sink = Sink::new(client, "ConfigMapController"); // for the controller's writes back
//! # Ok(()) }
//! ```
//!
//! The cluster is the one your kubeconfig names; `kube::Client::try_default()`
//! is **the line you change** to pick another:
//!
//! ```no_run
//! # async fn client() -> Result<kube::Client, Box<dyn std::error::Error>> {
//! let config = kube::Config::from_kubeconfig(&kube::config::KubeConfigOptions {
//!     context: Some("staging".into()),
//!     ..Default::default()
//! })
//! .await?;
//! let client = kube::Client::try_from(config)?;
//! # Ok(client) }
//! ```
//!
//! In a queue controller's reconcile, the [`Sink`] writes the status of the
//! object it reconciles, and its errors go up with `?` (retried with the
//! controller's backoff, or terminal):
//! `sink.apply_status(&api, Some(ptr.namespace()), ptr.id(), json!({"reply": reply})).await?`.
//!
//! # A whole operator
//! `examples/greeting_operator/` is an operator in the easykube style: one
//! CRD (`crd.yaml`), a queue controller, its status written back:
//!
//! ```sh
//! kubectl apply -f examples/greeting_operator/crd.yaml                  # on a real cluster
//! cargo run --example greeting_operator --features kubernetes            # follows the cluster of your kubeconfig
//! cargo run --example greeting_operator --features kubernetes,kubernetes-api -- --demo  # no cluster: an apiserver of its own
//! ```
//!
//! ```text
//! apiserver (cosi-runtime's Kubernetes API) on http://127.0.0.1:40127
//! greeting/world: status.reply = "Hello, world!"
//! greeting/team: status.reply = "Good morning, team!"
//! ```
//!
//! The other way round works too: a stock kube-runtime `Controller` (with
//! `.owns()` of a second type: `ownerReferences` are kept) reconciles
//! resources that live in our state, through the
//! [`kubernetes`](crate::kubernetes) API.
//!
//! # Tests and figures
//! Tested against this crate's own Kubernetes API server:
//! `tests/cluster/source.rs` (kubectl creates, changes and deletes reach a
//! queue controller; a server restarted without its history is relisted
//! and converges; our finalizer holds a deleted mirror; two mirrors of one
//! set and three readers share one watch; selectors, dynamic mirrors,
//! objects that do not decode), `tests/cluster/sink.rs`,
//! `tests/cluster/kube_runtime.rs` and `tests/cluster/example_greeting_operator.rs`.
//! A kube-rs user starts at [`coming_from_kube_rs`].
//! BENCHMARKS.md ("A cluster as a source") measures the memory: 100,000
//! objects mirrored once and read by 3 queue controllers, against 3
//! kube-runtime reflector stores of the same objects.

mod events;
mod leases;
mod mirror;
mod sink;
mod source;

#[doc = include_str!("../../docs/coming-from-kube-rs.md")]
pub mod coming_from_kube_rs {}

pub use events::{EVENT_FIELD_MANAGER, EventSink};
/// The `k8s-openapi` this crate is built on (its `latest` Kubernetes version).
pub use k8s_openapi;
/// The `kube` this crate is built on (5.x), for your own `Client` and
/// `ApiResource`s at the same version.
pub use kube;
pub use leases::{
    CLAIMS_ANNOTATION, FENCING_TOKEN_ANNOTATION, FencingToken, InvalidLeaseSettings, LeaseClaims,
    LeaseFence, LeaseSettings,
};
pub use mirror::{CLUSTER_SCOPED_NAMESPACE, LAST_APPLIED_ANNOTATION, Mirror};
pub use sink::{Sink, SinkError};
pub use source::{MirrorHandle, MirrorStatus, Source};
