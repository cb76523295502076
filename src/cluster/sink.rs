//! [`Sink`]: our outputs written back to a cluster by server-side apply.

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Map, Value};

use super::leases::{FENCING_TOKEN_ANNOTATION, FencingToken, LeaseFence};

/// Writes to a cluster by server-side apply, as one field manager (one per
/// controller: the cluster then knows which controller set which field, and
/// two controllers that claim one field conflict instead of fighting).
///
/// # Errors
///
/// Every call returns a [`SinkError`]. Returned from a reconcile with `?`,
/// it is retried with the controller's backoff, or, when retrying cannot fix
/// it ([`SinkError::is_terminal`]: a 4xx other than 408 Request Timeout,
/// 409 Conflict and 429 Too Many Requests), it is a terminal error that a
/// queue controller does not retry until the key changes again (as a
/// [`TerminalError`](crate::controller::TerminalError)).
///
/// ```no_run
/// use cosi_runtime::cluster::Sink;
/// use kube::api::{ApiResource, GroupVersionKind};
/// use serde_json::json;
///
/// # async fn run(client: kube::Client) -> Result<(), cosi_runtime::cluster::SinkError> {
/// let sink = Sink::new(client, "GreetingController");
/// let api = ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"));
/// sink.apply_status(&api, Some("default"), "hello", json!({"reply": "hi there"})).await?;
/// # Ok(()) }
/// ```
///
/// Made [`fenced`](Sink::fenced) by the [`LeaseFence`] of its controller
/// (replicas of an operator on [`LeaseClaims`](super::LeaseClaims)), it
/// writes only while this replica holds the controller's Lease: see
/// [`Sink::fenced`].
#[derive(Clone)]
pub struct Sink {
    client: kube::Client,
    manager: String,
    force: bool,
    fence: Option<LeaseFence>,
}

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sink")
            .field("field_manager", &self.manager)
            .field("force", &self.force)
            .field("fenced", &self.fence.is_some())
            .finish()
    }
}

/// Why a write to the cluster failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SinkError {
    /// The cluster answered with an error `Status`.
    #[error("{verb} {what}: the cluster answered {code} {reason}: {message}")]
    Api {
        /// What was written: `plural/namespace/name` (`/status` for a status).
        what: String,
        /// `apply`, `apply status` or `delete`.
        verb: &'static str,
        /// The HTTP status code.
        code: u16,
        /// The `Status` reason (`Conflict`, `Invalid`, `Forbidden`, ...).
        reason: String,
        /// The cluster's message.
        message: String,
    },
    /// The request did not get an answer (connection, TLS, a body that did not parse).
    #[error("{verb} {what}: {source}")]
    Transport {
        /// As in [`SinkError::Api`].
        what: String,
        /// As in [`SinkError::Api`].
        verb: &'static str,
        /// kube's error.
        #[source]
        source: kube::Error,
    },
    /// The object given cannot be written (no name, not an object).
    #[error("apply {what}: {reason}")]
    InvalidObject {
        /// As in [`SinkError::Api`].
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// A [`fenced`](Sink::fenced) sink did not write: this replica does not
    /// hold its controller's Lease (another replica does, or the last
    /// renewal is older than the renew deadline). Not terminal: the
    /// controller stands by, and retries once it holds the Lease again.
    #[error(
        "{verb} {what}: not sent, this replica does not hold the Lease of controller {controller}"
    )]
    Fenced {
        /// As in [`SinkError::Api`].
        what: String,
        /// As in [`SinkError::Api`].
        verb: &'static str,
        /// The controller whose Lease is not held.
        controller: String,
    },
}

impl SinkError {
    /// Whether retrying cannot fix it: a malformed object, or a 4xx answer
    /// other than 408, 409 and 429.
    pub fn is_terminal(&self) -> bool {
        match self {
            SinkError::Api { code, .. } => {
                (400..500).contains(code) && !matches!(code, 408 | 409 | 429)
            }
            SinkError::Transport { .. } | SinkError::Fenced { .. } => false,
            SinkError::InvalidObject { .. } => true,
        }
    }

    /// The HTTP status code, when the cluster answered.
    pub fn code(&self) -> Option<u16> {
        match self {
            SinkError::Api { code, .. } => Some(*code),
            _ => None,
        }
    }

    fn new(verb: &'static str, what: String, error: kube::Error) -> SinkError {
        match error {
            kube::Error::Api(status) => SinkError::Api {
                what,
                verb,
                code: status.code,
                reason: status.reason,
                message: status.message,
            },
            source => SinkError::Transport { what, verb, source },
        }
    }
}

impl Sink {
    /// A sink writing through `client` as `field_manager` (name it after the
    /// controller that writes).
    pub fn new(client: kube::Client, field_manager: impl Into<String>) -> Sink {
        Sink { client, manager: field_manager.into(), force: true, fence: None }
    }

    /// Writes only while `fence` says this replica holds its controller's
    /// Lease ([`LeaseClaims::fence`](super::LeaseClaims::fence)).
    ///
    /// # Guarantees
    /// The fence is checked immediately before each request is sent, on
    /// this replica's clock: no request leaves after the renew deadline of
    /// the last renewal, which is before any other replica can take the
    /// Lease (see [`LeaseClaims`](super::LeaseClaims)). A whole object
    /// [`apply`](Sink::apply)d carries the term's [`FencingToken`] in its
    /// [`FENCING_TOKEN_ANNOTATION`](super::FENCING_TOKEN_ANNOTATION).
    ///
    /// # Caveats
    /// A [`apply_status`](Sink::apply_status) cannot carry it (the
    /// apiserver keeps metadata as stored on `/status` writes): put
    /// [`fencing_token`](Sink::fencing_token) in the status if observers
    /// must tell which term wrote it. A request already sent when the Lease
    /// is lost can still land: the margin is the lease duration minus the
    /// renew deadline.
    ///
    /// # Errors
    /// Every write refused by the fence is a [`SinkError::Fenced`].
    pub fn fenced(mut self, fence: LeaseFence) -> Sink {
        self.fence = Some(fence);
        self
    }

    /// The token of the Lease this sink writes under, while this replica
    /// holds it; `None` when it does not, or for a sink not
    /// [`fenced`](Sink::fenced).
    pub fn fencing_token(&self) -> Option<FencingToken> {
        self.fence.as_ref().and_then(LeaseFence::token)
    }

    /// The fence's verdict on a write: its token (`None`: not fenced).
    fn check(&self, verb: &'static str, what: &str) -> Result<Option<FencingToken>, SinkError> {
        let Some(fence) = &self.fence else { return Ok(None) };
        match fence.token() {
            Some(token) => Ok(Some(token)),
            None => Err(SinkError::Fenced {
                what: what.to_owned(),
                verb,
                controller: fence.controller().to_owned(),
            }),
        }
    }

    /// Whether applies take fields over from other managers (default `true`,
    /// what the Kubernetes documentation asks of controllers: a controller's
    /// outputs are its own). With `false`, such an apply is a 409 Conflict,
    /// retried.
    pub fn force(mut self, force: bool) -> Sink {
        self.force = force;
        self
    }

    /// The field manager this sink writes as.
    pub fn field_manager(&self) -> &str {
        &self.manager
    }

    fn params(&self) -> PatchParams {
        let params = PatchParams::apply(&self.manager);
        if self.force { params.force() } else { params }
    }

    fn api(&self, api: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
        match namespace {
            Some(ns) => Api::namespaced_with(self.client.clone(), ns, api),
            None => Api::all_with(self.client.clone(), api),
        }
    }

    /// Applies a whole object (`metadata.name`, and `metadata.namespace` for
    /// a namespaced type, are required; `apiVersion` and `kind` are filled
    /// in from `api` when missing). Returns the object as the cluster stored it.
    ///
    /// # Errors
    /// [`SinkError`]: the object's fields this manager applied before and
    /// leaves out now are removed by the cluster, as with any server-side apply.
    pub async fn apply(
        &self,
        api: &ApiResource,
        object: Value,
    ) -> Result<DynamicObject, SinkError> {
        let Value::Object(mut object) = object else {
            let what = api.plural.clone();
            return Err(SinkError::InvalidObject { what, reason: "not a JSON object".into() });
        };
        let metadata = object.get("metadata").and_then(Value::as_object);
        let name = metadata.and_then(|m| m.get("name")).and_then(Value::as_str).map(str::to_owned);
        let namespace =
            metadata.and_then(|m| m.get("namespace")).and_then(Value::as_str).map(str::to_owned);
        let what = what(api, namespace.as_deref(), name.as_deref().unwrap_or("?"), "");
        let Some(name) = name else {
            return Err(SinkError::InvalidObject {
                what,
                reason: "metadata.name is missing".into(),
            });
        };
        types(&mut object, api);
        if let Some(token) = self.check("apply", &what)? {
            annotate(&mut object, &token);
        }
        let patch = Patch::Apply(Value::Object(object));
        let applied =
            self.api(api, namespace.as_deref()).patch(&name, &self.params(), &patch).await;
        applied.map_err(|e| SinkError::new("apply", what, e))
    }

    /// Applies `status` as the object's status (its `/status` subresource):
    /// the fields this manager owns there become `status`, the others are kept.
    ///
    /// # Errors
    /// [`SinkError`]; a missing object is a terminal 404.
    pub async fn apply_status(
        &self,
        api: &ApiResource,
        namespace: Option<&str>,
        name: &str,
        status: Value,
    ) -> Result<DynamicObject, SinkError> {
        let mut object = Map::new();
        types(&mut object, api);
        object.insert("status".into(), status);
        let what = what(api, namespace, name, "/status");
        self.check("apply status", &what)?;
        let patch = Patch::Apply(Value::Object(object));
        let applied = self.api(api, namespace).patch_status(name, &self.params(), &patch).await;
        applied.map_err(|e| SinkError::new("apply status", what, e))
    }

    /// Deletes an object; one already gone counts as deleted.
    ///
    /// # Errors
    /// [`SinkError`].
    pub async fn delete(
        &self,
        api: &ApiResource,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<(), SinkError> {
        self.check("delete", &what(api, namespace, name, ""))?;
        match self.api(api, namespace).delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok(()),
            Err(kube::Error::Api(status)) if status.code == 404 => Ok(()),
            Err(e) => Err(SinkError::new("delete", what(api, namespace, name, ""), e)),
        }
    }
}

/// `plural/namespace/name` and a suffix, as errors name the object.
fn what(api: &ApiResource, namespace: Option<&str>, name: &str, suffix: &str) -> String {
    match namespace {
        Some(ns) => format!("{}/{ns}/{name}{suffix}", api.plural),
        None => format!("{}/{name}{suffix}", api.plural),
    }
}

/// Puts `token` in the object's [`FENCING_TOKEN_ANNOTATION`].
fn annotate(object: &mut Map<String, Value>, token: &FencingToken) {
    let metadata = object.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(metadata) = metadata {
        let annotations =
            metadata.entry("annotations").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(annotations) = annotations {
            annotations.insert(FENCING_TOKEN_ANNOTATION.into(), token.to_string().into());
        }
    }
}

/// Fills in `apiVersion` and `kind` (an apply needs both).
fn types(object: &mut Map<String, Value>, api: &ApiResource) {
    object.entry("apiVersion").or_insert_with(|| api.api_version.clone().into());
    object.entry("kind").or_insert_with(|| api.kind.clone().into());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16) -> SinkError {
        let what = "greetings/default/hello".to_owned();
        let (reason, message) = ("Reason".to_owned(), "message".to_owned());
        SinkError::Api { what, verb: "apply", code, reason, message }
    }

    #[test]
    fn four_hundreds_are_terminal_but_conflicts_throttles_and_timeouts() {
        for code in [400, 403, 404, 422] {
            assert!(api_error(code).is_terminal(), "{code}");
        }
        for code in [408, 409, 429, 500, 503] {
            assert!(!api_error(code).is_terminal(), "{code}");
        }
        let invalid = SinkError::InvalidObject { what: "x".into(), reason: "y".into() };
        assert!(invalid.is_terminal());
    }

    #[test]
    fn errors_name_the_object_and_the_answer() {
        let e = api_error(409);
        assert_eq!(
            e.to_string(),
            "apply greetings/default/hello: the cluster answered 409 Reason: message"
        );
        assert_eq!(e.code(), Some(409));
    }

    #[test]
    fn applies_carry_their_types() {
        let api = ApiResource::from_gvk(&kube::api::GroupVersionKind::gvk("g.dev", "v1", "Thing"));
        let mut object = Map::new();
        types(&mut object, &api);
        assert_eq!(
            Value::Object(object),
            serde_json::json!({"apiVersion": "g.dev/v1", "kind": "Thing"})
        );
        assert_eq!(what(&api, None, "a", "/status"), "things/a/status");
    }
}
