//! [`Shared`]: what the Kubernetes API's handlers share.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use super::pages::Pages;
use super::registry::{Exposed, Registry};
use super::status::Status;
use crate::State;
use crate::http_stop::Closing;

/// What the handlers share.
pub(crate) struct Shared {
    pub(crate) state: State,
    pub(crate) registry: Registry,
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
}

impl Shared {
    /// The type served at `/apis/{group}/{version}/.../{plural}`.
    pub(crate) fn exposed(
        &self,
        group: &str,
        version: &str,
        plural: &str,
    ) -> Result<Arc<Exposed>, Status> {
        self.registry.find(group, version, plural).cloned().ok_or_else(|| {
            Status::not_found(format!(
                "the server could not find the requested resource ({plural}.{group}/{version} is not served)"
            ))
        })
    }

    /// The namespaces an all-namespace request reads for `exposed`.
    pub(crate) fn namespaces_of(&self, exposed: &Exposed) -> Vec<String> {
        exposed.namespaces.union(&self.namespaces).cloned().collect()
    }
}
