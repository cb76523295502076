//! Namespaces as objects: the core group's cluster-scoped `Namespace`
//! kind, always served (`kubectl get ns`, `create ns`, `delete ns`).
//!
//! | what | how |
//! |---|---|
//! | a namespace | a `Namespaces` resource in the state namespace [`CLUSTER_NAMESPACE`], id its name |
//! | the declared ones | `default`, [`KubernetesApi::namespaces`](super::KubernetesApi::namespaces) and every [`Expose::namespaces`](super::Expose::namespaces): they always exist, served (listed, read) without an object of their own until one is written |
//! | a write into a namespace | `404 NotFound` (`namespaces "prod" not found`) unless it exists, or the builder [creates them on first use](super::KubernetesApi::create_namespaces) |
//! | `-A` | every declared namespace and every namespace object |
//! | `DELETE` | the namespace is torn down holding the finalizer `kubernetes` while every object of every exposed type in it is deleted (as the system: a controller's too), then goes |

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::registry::{Expose, Registry};
use super::shared::Shared;
use super::status::Status;
use crate::State;
use crate::resource::{AnyResource, Kind, LabelQuery, Phase, Pointer, Resource, Spec};

pub(crate) use super::registry::CLUSTER_NAMESPACE;

/// The finalizer a deleted namespace is held with while its objects go.
pub(crate) const NAMESPACE_FINALIZER: &str = "kubernetes";

/// A Namespace's body: its `spec` and `status`, the phase `Active` unless
/// said otherwise.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct NamespaceBody {
    #[serde(default)]
    spec: NamespaceSpec,
    #[serde(default)]
    status: NamespaceStatus,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct NamespaceSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    finalizers: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct NamespaceStatus {
    #[serde(default = "active")]
    phase: String,
}

fn active() -> String {
    "Active".to_owned()
}

impl Default for NamespaceStatus {
    fn default() -> Self {
        NamespaceStatus { phase: active() }
    }
}

impl Spec for NamespaceBody {
    const TYPE: &'static str = "Namespaces";
}

/// How the namespaces are exposed.
pub(crate) fn expose() -> Expose {
    Expose::of::<NamespaceBody>("v1")
        .core_group()
        .cluster_scoped(CLUSTER_NAMESPACE)
        .top_level_fields()
        .short_names(["ns"])
        .column("Status", ".status.phase")
}

/// Whether `resource_type` is the namespaces'.
pub(crate) fn is_namespaces(resource_type: &str) -> bool {
    resource_type == NamespaceBody::TYPE
}

/// The object of namespace `name`.
fn pointer(name: &str) -> Pointer {
    Kind::new(CLUSTER_NAMESPACE, NamespaceBody::TYPE).pointer(name)
}

/// The namespaces that always exist: `default`, the API's and the types'.
pub(crate) fn declared(
    shared_namespaces: &BTreeSet<String>,
    registry: &Registry,
) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = shared_namespaces.clone();
    names.insert("default".to_owned());
    for t in &registry.types {
        names.extend(t.namespaces.iter().cloned());
    }
    names
}

/// The object served for a declared namespace that has none of its own
/// (it is never stored: an object made for each would move the state's
/// revisions under the clients that count them).
pub(crate) fn implicit(name: &str) -> AnyResource {
    AnyResource::from(Resource::new(CLUSTER_NAMESPACE, name, NamespaceBody::default()))
}

impl Shared {
    /// The namespaces an all-namespace request on `exposed` reads:
    /// [`ALL_NAMESPACES`](crate::state::ALL_NAMESPACES) alone (the engine
    /// reads every namespace of the type, controllers' included) when one
    /// revision sequence covers them all, else every namespace the API
    /// knows (the declared ones and the objects), each read at its own
    /// revision.
    pub(crate) async fn across_namespaces(
        &self,
        exposed: &super::registry::Exposed,
        params: &super::params::ListParams,
    ) -> Result<Vec<String>, Status> {
        // A query nothing matches: the revision rule, not the objects.
        let none = LabelQuery::all().exists("kubernetes.cosi.dev/revision-probe");
        let (_, revision) =
            self.state.list_all_namespaces_with_revision(&exposed.resource_type, &none).await?;
        if revision.is_some() {
            return Ok(vec![crate::state::ALL_NAMESPACES.to_owned()]);
        }
        Ok(self
            .all_namespaces()
            .await?
            .into_iter()
            .filter(|ns| params.fields.admits_namespace(ns))
            .collect())
    }

    /// Every namespace: the declared ones and the objects.
    pub(crate) async fn all_namespaces(&self) -> Result<BTreeSet<String>, Status> {
        let mut names = declared(&self.namespaces, &self.registry());
        let kind = Kind::new(CLUSTER_NAMESPACE, NamespaceBody::TYPE);
        let listed = self.state.list(&kind, &LabelQuery::all()).await?;
        names.extend(listed.iter().map(|r| r.id().to_owned()));
        Ok(names)
    }

    /// `Ok` when objects may be created in `namespace`: it is declared, or
    /// its object exists and is not being deleted (else `403`, as the
    /// apiserver refuses a create in a terminating namespace); a missing one
    /// is made when the API [creates them on first use](super::KubernetesApi::create_namespaces),
    /// else `404 NotFound`.
    pub(crate) async fn admit_namespace(&self, namespace: &str) -> Result<(), Status> {
        if namespace == CLUSTER_NAMESPACE
            || self.namespaces.contains(namespace)
            || namespace == "default"
            || self.registry().types.iter().any(|t| t.namespaces.contains(namespace))
        {
            return Ok(());
        }
        match self.state.get(&pointer(namespace)).await {
            Ok(ns) if ns.phase() == Phase::TearingDown => Err(Status::forbidden(format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ))),
            Ok(_) => Ok(()),
            Err(e) if e.is_not_found() && self.create_namespaces => {
                let ns = Resource::new(CLUSTER_NAMESPACE, namespace, NamespaceBody::default());
                match self.state.create(AnyResource::from(ns), None).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_already_exists() => Ok(()),
                    Err(e) => Err(e.into()),
                }
            }
            Err(e) if e.is_not_found() => {
                Err(Status::object_not_found("", "namespaces", namespace))
            }
            Err(e) => Err(e.into()),
        }
    }
}

/// Deletes every object of every namespaced exposed type in `namespace`
/// (as the system: a controller's too, and waiting for each one's
/// finalizers), then releases the namespace's object.
pub(crate) async fn empty(state: &State, registry: &Registry, namespace: &str) {
    let types: BTreeSet<&str> = registry
        .types
        .iter()
        .filter(|t| t.cluster.is_none())
        .map(|t| t.resource_type.as_str())
        .collect();
    for ty in types {
        let listed = match state.list(&Kind::new(namespace, ty), &LabelQuery::all()).await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!("Kubernetes API: emptying namespace {namespace:?}: {e}");
                continue;
            }
        };
        let deletes = listed.iter().map(|r: &AnyResource| {
            let ptr = r.pointer().clone();
            let owner = r.owner().map(str::to_owned);
            async move {
                match state.teardown_and_destroy(&ptr, owner.as_deref()).await {
                    Ok(()) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) => tracing::warn!("Kubernetes API: deleting {ptr}: {e}"),
                }
            }
        });
        futures::future::join_all(deletes).await;
    }
    match state.remove_finalizer(&pointer(namespace), NAMESPACE_FINALIZER).await {
        Ok(()) => {}
        Err(e) if e.is_not_found() => {}
        Err(e) => tracing::warn!("Kubernetes API: releasing namespace {namespace:?}: {e}"),
    }
}
