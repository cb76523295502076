//! The operator itself: one CRD (`Greeting`, in `example.cosi.dev/v1`), its
//! objects mirrored from the cluster into the state, a queue controller that
//! writes each one's `status` back by server-side apply.
//!
//! In the easykube style: the controller reads a typed object, computes,
//! writes; the runtime brings the per-object queue (a key never reconciled
//! twice at once), retries with backoff, and supervision.

use cosi_runtime::Runtime;
use cosi_runtime::cluster::{LeaseFence, Mirror, MirrorHandle, Sink, Source};
use cosi_runtime::controller::{
    Input, Outcome, Output, QueueController, QueueSettings, ReconcileContext, ReconcileError,
};
use cosi_runtime::prelude::{Phase, Pointer, Spec};
use kube::api::{ApiResource, GroupVersionKind, ObjectMeta};
use serde::{Deserialize, Serialize};

/// The `Greeting` type as the Kubernetes API serves it: a status
/// subresource, and the schemas of its spec and status derived from
/// [`GreetingSpec`] and [`GreetingStatus`]. Its
/// [`crd`](cosi_runtime::kubernetes::Expose::crd) is `crd.yaml`.
#[cfg(feature = "kubernetes-api")]
pub fn exposed() -> cosi_runtime::kubernetes::Expose {
    cosi_runtime::kubernetes::Expose::resource_type(Greeting::TYPE, "v1")
        .status_subresource()
        .spec_schema::<GreetingSpec>()
        .status_schema::<GreetingStatus>()
}

/// The CRD's group, version and kind.
pub fn greetings() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"))
}

/// A `Greeting` as the cluster serves it (the shape a kube-rs
/// `#[derive(CustomResource)]` struct has), mirrored whole into the state.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Greetings.example.cosi.dev")]
pub struct Greeting {
    /// The object's metadata (its generation, for `observedGeneration`).
    pub metadata: ObjectMeta,
    /// What the user asks.
    pub spec: GreetingSpec,
    /// What the operator last wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<GreetingStatus>,
}

/// What the user asks: whom to greet, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GreetingSpec {
    /// Whom to greet.
    pub name: String,
    /// The word to greet with (`Hello` when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salutation: Option<String>,
}

/// What the operator answers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GreetingStatus {
    /// The greeting.
    pub reply: String,
    /// The generation the reply was made from.
    #[serde(default)]
    pub observed_generation: Option<i64>,
    /// Which replica answered, in which term of its Lease (the fencing
    /// token `holder@namespace/lease:transitions`), when replicas share
    /// the work through Leases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
}

/// The status a greeting's spec calls for.
pub fn reply(greeting: &Greeting) -> GreetingStatus {
    let salutation = greeting.spec.salutation.as_deref().unwrap_or("Hello");
    GreetingStatus {
        reply: format!("{salutation}, {}!", greeting.spec.name),
        observed_generation: greeting.metadata.generation,
        answered_by: None,
    }
}

/// The controller's name (and its field manager, and its Lease's).
pub const CONTROLLER: &str = "GreetingController";

/// The queue controller: one greeting per key, its status applied back as
/// the field manager `GreetingController`. It is the only writer of the
/// greetings' status: an exclusive output, which replicas on Leases claim
/// (one replica answers, the others stand by).
pub struct GreetingController {
    namespace: String,
    sink: Sink,
}

impl QueueController for GreetingController {
    fn name(&self) -> &str {
        CONTROLLER
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings::new(
            vec![Input::primary::<Greeting>(&self.namespace)],
            vec![Output::exclusive::<Greeting>()],
        )
        .with_concurrency(4)
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let greeting = match cx.get_typed::<Greeting>(ptr).await {
            Ok(g) if g.phase() == Phase::Running => g,
            // Deleted in the cluster: nothing to answer.
            Ok(_) => return Ok(Outcome::Done),
            Err(e) if e.is_not_found() => return Ok(Outcome::Done),
            Err(e) => return Err(e.into()),
        };
        let mut status = reply(greeting.spec());
        // Our own write, come back through the mirror: the reply stands. Only
        // the reply is compared, not `observedGeneration`: a server that moves
        // `generation` on status writes too (this crate's Kubernetes API did
        // once) would otherwise see it behind after every write, and the
        // operator would answer forever.
        if greeting.spec().status.as_ref().map(|s| &s.reply) == Some(&status.reply) {
            return Ok(Outcome::Done);
        }
        // With replicas on Leases: the term this replica answers in (its
        // sink refuses to write outside it).
        status.answered_by = self.sink.fencing_token().map(|t| t.to_string());
        let status = serde_json::to_value(status)?;
        // A 4xx that retrying cannot fix ends the key (a terminal error); a
        // conflict or an outage is retried with the controller's backoff.
        self.sink.apply_status(&greetings(), Some(ptr.namespace()), ptr.id(), status).await?;
        Ok(Outcome::Done)
    }
}

/// Starts the operator on `runtime` against the cluster `client` reaches,
/// for the greetings of `namespace`: the controller, then the mirror (its
/// handle says when the first list is in).
///
/// # Errors
/// When the controller cannot be registered.
pub async fn start(
    runtime: &Runtime,
    client: kube::Client,
    namespace: &str,
) -> Result<(Source, MirrorHandle), Box<dyn std::error::Error>> {
    start_fenced(runtime, client, namespace, None).await
}

/// [`start`], the sink fenced by the controller's Lease when `fence` is
/// given (a replica on [`LeaseClaims`](cosi_runtime::cluster::LeaseClaims)).
///
/// # Errors
/// When the controller cannot be registered.
pub async fn start_fenced(
    runtime: &Runtime,
    client: kube::Client,
    namespace: &str,
    fence: Option<LeaseFence>,
) -> Result<(Source, MirrorHandle), Box<dyn std::error::Error>> {
    let sink = Sink::new(client.clone(), CONTROLLER);
    let sink = match fence {
        Some(fence) => sink.fenced(fence),
        None => sink,
    };
    let ns = namespace.to_owned();
    runtime
        .register(move || GreetingController { namespace: ns.clone(), sink: sink.clone() })
        .await?;
    let source = Source::new(client, runtime.state());
    let handle = source.mirror(Mirror::of::<Greeting>(greetings()).namespace(namespace));
    Ok((source, handle))
}
