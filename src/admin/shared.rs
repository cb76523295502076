//! [`Shared`]: what the admin endpoint's handlers share.

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use prometheus_client::registry::Registry;

use crate::Runtime;
use crate::resource::Kind;

/// What the handlers share.
pub(crate) struct Shared {
    pub(crate) runtime: Runtime,
    pub(crate) registry: Arc<Registry>,
    pub(crate) bootstrapped: Arc<AtomicBool>,
    pub(crate) expected: Vec<String>,
    pub(crate) kinds: Vec<Kind>,
    pub(crate) watch_buffer: usize,
    pub(crate) limits: Arc<crate::http_limits::ClientLimits>,
    /// The server's stop, as its watches see it.
    pub(crate) closing: Arc<crate::http_stop::Closing>,
}
