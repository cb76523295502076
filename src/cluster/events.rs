//! [`EventSink`]: the Events a runtime records, published to a cluster.

use futures::StreamExt;
use kube::api::ApiResource;
use serde_json::{Value, json};

use super::sink::Sink;
use crate::State;
use crate::events::Event;
use crate::resource::{AnyResource, Kind, LabelQuery, Spec};
use crate::state::{Event as Change, WatchOptions};

/// The field manager the Events are applied as.
pub const EVENT_FIELD_MANAGER: &str = "cosi-runtime-events";

/// Publishes the Events a runtime records ([`crate::events`]) in chosen
/// namespaces of its [`State`] to a cluster, as `events.k8s.io/v1` Events
/// applied server-side (field manager [`EVENT_FIELD_MANAGER`]): `kubectl
/// describe` on the cluster shows a controller's failures there.
///
/// # Expected flow
/// [`start`](EventSink::start) watches each namespace's Events (those
/// already there first), and applies each new or changed one to the
/// cluster under its own name, in the namespace of the same name; a repeat
/// (a higher count) is an apply of the same Event. Dropping the sink (or
/// [`stop`](EventSink::stop)) ends the watches.
///
/// # Guarantees
/// - Every version of an Event the watch delivers is applied in order, per
///   namespace; a failed apply is logged and the next change applies the
///   whole Event again (applies are idempotent).
/// - With [`mirrors_of`](EventSink::mirrors_of), an Event about a resource
///   that mirrors a cluster object (a [`Source`](super::Source) mirror, whose
///   spec is the whole object) names that object (its `apiVersion`, `kind`
///   and `uid`), so the cluster attaches it to the object itself.
///
/// # Caveats
/// - Events deleted in the state (past their bound or TTL) are left to the
///   cluster's own `--event-ttl`.
/// - Without a mirror, `regarding` names the state's object: its
///   `apiVersion` is the group alone and its `uid` the state's.
///
/// ```no_run
/// use cosi_runtime::cluster::EventSink;
/// # async fn run(runtime: cosi_runtime::Runtime) -> Result<(), Box<dyn std::error::Error>> {
/// let client = kube::Client::try_default().await?;
/// let sink = EventSink::start(client, &runtime.state(), ["default", "config"]).await?;
/// # drop(sink);
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct EventSink {
    watches: Vec<futures::future::AbortHandle>,
}

/// Resource types whose resources mirror cluster objects (their spec is
/// the whole object).
#[derive(Clone, Default)]
struct Mirrors(Vec<String>);

impl EventSink {
    /// Publishes the Events of `namespaces` to the cluster `client` reaches.
    ///
    /// # Errors
    /// [`crate::Error`] when a namespace's watch cannot start (an invalid
    /// namespace, a state that is gone).
    pub async fn start<S: Into<String>>(
        client: kube::Client,
        state: &State,
        namespaces: impl IntoIterator<Item = S>,
    ) -> Result<EventSink, crate::Error> {
        EventSink::with_mirrors(client, state, namespaces, Vec::<String>::new()).await
    }

    /// [`start`](EventSink::start), naming the resource types (as
    /// [`Mirror`](super::Mirror)s keep them) whose resources mirror cluster
    /// objects: an Event about one of them names the cluster object.
    ///
    /// # Errors
    /// As [`start`](EventSink::start).
    pub async fn mirrors_of<S: Into<String>, T: Into<String>>(
        client: kube::Client,
        state: &State,
        namespaces: impl IntoIterator<Item = S>,
        mirror_types: impl IntoIterator<Item = T>,
    ) -> Result<EventSink, crate::Error> {
        EventSink::with_mirrors(client, state, namespaces, mirror_types).await
    }

    async fn with_mirrors<S: Into<String>, T: Into<String>>(
        client: kube::Client,
        state: &State,
        namespaces: impl IntoIterator<Item = S>,
        mirror_types: impl IntoIterator<Item = T>,
    ) -> Result<EventSink, crate::Error> {
        let mirrors = Mirrors(mirror_types.into_iter().map(Into::into).collect());
        let sink = Sink::new(client, EVENT_FIELD_MANAGER).force(true);
        let api = ApiResource::erase::<k8s_openapi::api::events::v1::Event>(&());
        let mut watches = Vec::new();
        for namespace in namespaces {
            let namespace: String = namespace.into();
            let kind = Kind::new(&namespace, Event::TYPE);
            let stream =
                state.watch_kind_stream(&kind, LabelQuery::all(), WatchOptions::default()).await?;
            let (stream, abort) = futures::stream::abortable(stream);
            watches.push(abort);
            let (state, sink, api, mirrors) =
                (state.clone(), sink.clone(), api.clone(), mirrors.clone());
            actix::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while let Some(change) = stream.next().await {
                    let event = match change {
                        Change::Created(r) => r,
                        Change::Updated { new, .. } => new,
                        Change::Destroyed(_) | Change::Bootstrapped(_) => continue,
                    };
                    let Some(object) = cluster_event(&state, &mirrors, &event).await else {
                        continue;
                    };
                    if let Err(e) = sink.apply(&api, object).await {
                        tracing::warn!("publishing Event {} to the cluster: {e}", event.pointer());
                    }
                }
            });
        }
        Ok(EventSink { watches })
    }

    /// Stops publishing.
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for EventSink {
    fn drop(&mut self) {
        for watch in &self.watches {
            watch.abort();
        }
    }
}

/// The cluster's Event for `event` (`None`: not an Event).
async fn cluster_event(state: &State, mirrors: &Mirrors, event: &AnyResource) -> Option<Value> {
    let mut body = event.to_dynamic().ok()?.spec().clone();
    let regarding = body.get("regarding").cloned().unwrap_or(Value::Null);
    if let (Some(ns), Some(name)) = (regarding["namespace"].as_str(), regarding["name"].as_str()) {
        for ty in &mirrors.0 {
            let Ok(mirror) = state.get(&Kind::new(ns, ty).pointer(name)).await else { continue };
            let Ok(spec) = mirror.to_dynamic() else { continue };
            let object = spec.spec();
            if object["metadata"]["uid"].is_string() {
                body["regarding"] = json!({
                    "apiVersion": object["apiVersion"],
                    "kind": object["kind"],
                    "namespace": ns,
                    "name": name,
                    "uid": object["metadata"]["uid"],
                });
                break;
            }
        }
    }
    let fields = body.as_object_mut()?;
    fields.insert(
        "metadata".into(),
        json!({ "name": event.id(), "namespace": event.metadata().namespace() }),
    );
    fields.insert("apiVersion".into(), "events.k8s.io/v1".into());
    fields.insert("kind".into(), "Event".into());
    Some(body)
}
