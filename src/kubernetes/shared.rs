//! [`Shared`]: what the Kubernetes API's handlers share.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::pages::Pages;
use super::registry::{Exposed, Registry};
use super::status::Status;
use crate::State;
use crate::http_stop::Closing;

/// What a path names: `/apis/{group}/{version}[/namespaces/{namespace}]/{plural}[/{name}]`,
/// or `/api/{version}/...` (the core group, `group` empty).
#[derive(Clone, Debug, serde::Deserialize)]
pub(crate) struct TypePath {
    #[serde(default)]
    pub(crate) group: String,
    pub(crate) version: String,
    #[serde(default)]
    pub(crate) namespace: Option<String>,
    pub(crate) plural: String,
    #[serde(default)]
    pub(crate) name: Option<String>,
}

impl TypePath {
    /// The name (empty for a collection path).
    pub(crate) fn name(&self) -> String {
        self.name.clone().unwrap_or_default()
    }
}

/// What the handlers share.
pub(crate) struct Shared {
    pub(crate) state: State,
    /// The exposed types: those the API was built with and those that
    /// CustomResourceDefinitions register (replaced whole on a change; a
    /// request works on the snapshot it took).
    pub(crate) types: std::sync::RwLock<Arc<Registry>>,
    /// The types the API was built with.
    pub(crate) built: Registry,
    pub(crate) server_version: (u32, u32),
    pub(crate) namespaces: BTreeSet<String>,
    pub(crate) bookmark_interval: Duration,
    pub(crate) watch_buffer: usize,
    pub(crate) max_request_body: usize,
    /// The server's stop, as its watches see it.
    pub(crate) closing: Arc<Closing>,
    /// The snapshots of the lists being read in pages.
    pub(crate) pages: Pages,
    /// The runtime whose exclusive outputs clients may not create.
    pub(crate) controllers: Option<crate::runtime::GraphSource>,
    /// Whether a write into a missing namespace makes it.
    pub(crate) create_namespaces: bool,
}

impl Shared {
    /// The exposed types now.
    pub(crate) fn registry(&self) -> Arc<Registry> {
        self.types.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// The type served at `/apis/{group}/{version}/.../{plural}`.
    pub(crate) fn exposed(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Arc<Exposed>, Status> {
        self.registry().find(group, version, plural).cloned().ok_or_else(|| {
            Status::not_found(format!(
                "the server could not find the requested resource ({plural}.{group}/{version} is not served)"
            ))
        })
    }

    /// The type a path names and the state namespace it addresses: `404`
    /// for a type not served or asked in the wrong scope (a namespace for a
    /// cluster-scoped type, none for a namespaced one), `400` for a bad
    /// namespace.
    pub(crate) fn scoped(&self, path: &TypePath) -> Result<(Arc<Exposed>, String), Status> {
        let exposed = self.exposed(&path.group, &path.version, &path.plural)?;
        if let Some(ns) = &path.namespace {
            crate::resource::validate::name("namespace", ns).map_err(Status::bad_request)?;
        }
        match exposed.state_namespace(path.namespace.as_deref()) {
            Some(ns) => {
                let ns = ns.to_owned();
                Ok((exposed, ns))
            }
            None => Err(Status::not_found(format!(
                "the server could not find the requested resource ({} is {})",
                exposed.qualified_plural(),
                if exposed.cluster.is_some() { "cluster-scoped" } else { "namespaced" }
            ))),
        }
    }

    /// The namespaces an all-namespace request reads: every namespace
    /// (see [`namespaces`](super::namespaces)).
    pub(crate) async fn namespaces_of(&self) -> Result<Vec<String>, Status> {
        Ok(self.all_namespaces().await?.into_iter().collect())
    }
}
