//! Kubernetes clusters as source and sink (feature `kubernetes`): controllers
//! of ours reconcile a cluster's objects.
//!
//! - A [`Source`] mirrors chosen sets of a cluster's objects ([`Mirror`]: a
//!   type, a namespace, a label selector) into the [`State`](crate::State)
//!   as resources it owns, one kube-runtime `watcher` per set however many
//!   controllers read it. Relists are mark-and-sweep; a delete in the cluster
//!   tears the mirror down and destroys it once our finalizers let go.
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
//! See `examples/greeting_operator.rs` for a whole operator (one CRD, a
//! queue controller, status written back), and the README's "Running
//! against a cluster".

mod mirror;
mod sink;
mod source;

pub use mirror::{CLUSTER_SCOPED_NAMESPACE, LAST_APPLIED_ANNOTATION, Mirror};
pub use sink::{Sink, SinkError};
pub use source::{MirrorHandle, MirrorStatus, Source};
