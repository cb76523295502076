//! A Kubernetes cluster as a source: objects of a cluster mirrored into our
//! state, read by our controllers. The cluster is this crate's own
//! Kubernetes API server on loopback over a state of its own (the only
//! apiserver these machines have), written by kubectl, by kube-rs, or
//! directly through its state.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::kubectl::{Kubectl, kubectl_available};
use cosi_runtime::cluster::{LAST_APPLIED_ANNOTATION, Mirror, MirrorHandle, MirrorStatus, Source};
use cosi_runtime::controller::{
    Input, Outcome, QueueController, QueueSettings, ReconcileContext, ReconcileError, finalizer,
};
use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer};
use cosi_runtime::prelude::{LabelQuery, Phase, Pointer, Resource, Spec};
use cosi_runtime::{Runtime, State};
use kube::api::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

/// A greeting as the cluster stores it (its `spec`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Stored {
    message: String,
}

impl Spec for Stored {
    const TYPE: &'static str = "Greetings.example.cosi.dev";
}

/// A greeting as our controllers read its mirror: the whole object, typed as
/// a kube-rs `CustomResource` struct would be (fields not named are ignored).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Greeting {
    metadata: kube::api::ObjectMeta,
    spec: GreetingSpec,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct GreetingSpec {
    message: String,
}

impl Spec for Greeting {
    const TYPE: &'static str = "Greetings.mirror.cosi.dev";
}

fn greetings() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"))
}

const BOUND: Duration = Duration::from_secs(30);

/// An apiserver: our Kubernetes API over a state of its own.
struct Cluster {
    state: State,
    server: KubernetesServer,
}

impl Cluster {
    async fn start() -> Cluster {
        Cluster::serve(State::start(), "127.0.0.1:0").await
    }

    async fn serve(state: State, addr: &str) -> Cluster {
        let api = KubernetesApi::new(&state)
            .expose(Expose::of::<Stored>("v1").namespaces(["default", "edge"]))
            .unwrap();
        let server = api.serve(addr.parse().unwrap()).await.unwrap();
        Cluster { state, server }
    }

    fn client(&self) -> Client {
        Client::try_from(Config::new(self.server.url().parse().unwrap())).unwrap()
    }

    /// Creates or changes a greeting, as a user of the cluster would.
    async fn put(&self, ns: &str, name: &str, message: &str, labels: &[(&str, &str)]) {
        put(&self.state, ns, name, message, labels).await;
    }

    async fn delete(&self, ns: &str, name: &str) {
        delete(&self.state, ns, name).await;
    }
}

/// Creates or changes a greeting in a cluster's state.
async fn put(state: &State, ns: &str, name: &str, message: &str, labels: &[(&str, &str)]) {
    let message = message.to_owned();
    let labels: Vec<(String, String)> =
        labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let change = move |g: &mut Resource<Stored>| {
        g.spec_mut().message = message.clone();
        for (k, v) in &labels {
            g.metadata_mut().labels_mut().insert(k.as_str(), v.as_str());
        }
    };
    state.modify(&Pointer::typed::<Stored>(ns, name), change, None).await.unwrap();
}

/// Deletes a greeting from a cluster's state.
async fn delete(state: &State, ns: &str, name: &str) {
    state.destroy(&Pointer::new(ns, Stored::TYPE, name), None).await.unwrap();
}

/// The mirrors in `ns`: name → message.
async fn mirrored(state: &State, ns: &str) -> BTreeMap<String, String> {
    let list = state.list_typed::<Greeting>(ns, &LabelQuery::default()).await.unwrap();
    list.iter().map(|g| (g.id().to_owned(), g.spec().spec.message.clone())).collect()
}

fn map(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Waits (bounded) until the mirror's status satisfies `until`.
async fn until(handle: &MirrorHandle, until: impl Fn(&MirrorStatus) -> bool) -> MirrorStatus {
    tokio::time::timeout(BOUND, handle.wait_until(until))
        .await
        .unwrap_or_else(|_| panic!("mirror status after {BOUND:?}: {:?}", handle.status()))
        .unwrap()
}

/// Records what it last read of each greeting in `default` (gone: removed).
struct Greeter(watch::Sender<BTreeMap<String, String>>);

impl QueueController for Greeter {
    fn name(&self) -> &str {
        "Greeter"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(vec![Input::primary::<Greeting>("default")], vec![])
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let read = cx.get_typed::<Greeting>(ptr).await;
        self.0.send_modify(|seen| match read {
            Ok(g) if g.phase() == Phase::Running => {
                seen.insert(g.id().to_owned(), g.spec().spec.message.clone());
            }
            _ => {
                seen.remove(ptr.id());
            }
        });
        Ok(Outcome::Done)
    }
}

/// Waits (bounded) until what the greeter saw is `expected`.
async fn greeter_sees(
    seen: &mut watch::Receiver<BTreeMap<String, String>>,
    expected: &[(&str, &str)],
) {
    let expected = map(expected);
    let found = tokio::time::timeout(BOUND, seen.wait_for(|s| *s == expected)).await.is_ok();
    assert!(found, "the greeter saw {:?}, not {expected:?}", *seen.borrow());
}

#[actix::test]
async fn greetings_created_changed_and_deleted_with_kubectl_reach_a_queue_controller() {
    if !kubectl_available(33) {
        return;
    }
    let cluster = Cluster::start().await;
    let runtime = Runtime::start();
    let (tx, mut seen) = watch::channel(BTreeMap::new());
    runtime.register(move || Greeter(tx.clone())).await.unwrap();
    let source = Source::new(cluster.client(), runtime.state());
    let handle = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("default"));
    until(&handle, |s| s.synced).await;

    let kubectl = Kubectl::new(cluster.server.local_addr());
    let manifest = |message: &str| {
        format!(
            "apiVersion: example.cosi.dev/v1\nkind: Greeting\nmetadata:\n  name: hello\n  \
             namespace: default\nspec:\n  message: {message}\n"
        )
    };
    let file = kubectl.file("hello.yaml", &manifest("hi"));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    greeter_sees(&mut seen, &[("hello", "hi")]).await;
    // kubectl's client-side apply keeps its last applied object in an
    // annotation of the cluster's object: the mirror does without it.
    let object = cluster.state.get(&Pointer::new("default", Stored::TYPE, "hello")).await.unwrap();
    assert!(object.metadata().annotations().get(LAST_APPLIED_ANNOTATION).is_some());
    let mirror = runtime.state().get(&Pointer::typed::<Greeting>("default", "hello")).await;
    let mirror = mirror.unwrap();
    assert_eq!(mirror.owner(), Some(handle.owner()));
    assert!(mirror.spec().metadata.annotations.is_none(), "{:?}", mirror.spec().metadata);

    let file = kubectl.file("hello.yaml", &manifest("hey"));
    let (ok, out) = kubectl.run_joined(&["apply", "-f", &file]).await;
    assert!(ok, "{out}");
    greeter_sees(&mut seen, &[("hello", "hey")]).await;

    let (ok, out) = kubectl.run_joined(&["delete", "greeting", "hello", "-n", "default"]).await;
    assert!(ok, "{out}");
    greeter_sees(&mut seen, &[]).await;
    assert!(mirrored(&runtime.state(), "default").await.is_empty());
    cluster.server.stop().await;
}

#[actix::test]
async fn a_server_restarted_without_its_history_is_relisted_and_the_mirror_converges() {
    let cluster = Cluster::start().await;
    for (name, message) in [("a", "1"), ("b", "1"), ("c", "1")] {
        cluster.put("default", name, message, &[]).await;
    }
    let runtime = Runtime::start();
    let source = Source::new(cluster.client(), runtime.state());
    let handle = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("default"));
    until(&handle, |s| s.lists == 1).await;
    let state = runtime.state();
    assert_eq!(mirrored(&state, "default").await, map(&[("a", "1"), ("b", "1"), ("c", "1")]));
    // A change seen as a watch event: the watch is open when the apiserver
    // goes.
    cluster.put("default", "c", "0", &[]).await;
    until(&handle, |s| s.events == 1).await;

    // The apiserver stops and comes back at once on the same address, over
    // a fresh state: its revisions start again, and `a` is gone, `b`
    // changed, `d` new. Enough writes that the watcher's last version
    // exists again: resumed from it, the watch would miss all that. The
    // stopping server ended the watch with a 410, so the watcher lists.
    let fresh = State::start();
    for (name, message) in [("b", "2"), ("c", "1"), ("d", "1"), ("d", "2"), ("x", "0")] {
        put(&fresh, "default", name, message, &[]).await;
    }
    delete(&fresh, "default", "x").await;
    let addr = cluster.server.local_addr().to_string();
    cluster.server.stop().await;
    let again = Cluster::serve(fresh, &addr).await;
    until(&handle, |s| s.lists >= 2).await;
    runtime.settled_within(BOUND).await.unwrap();
    assert_eq!(mirrored(&state, "default").await, map(&[("b", "2"), ("c", "1"), ("d", "2")]));
    let status = handle.status();
    assert!(status.errors >= 1 && status.last_error.is_some(), "{status:?}");

    // And it follows the new server's changes.
    again.put("default", "e", "1", &[]).await;
    let events = status.events;
    until(&handle, |s| s.events > events).await;
    runtime.settled_within(BOUND).await.unwrap();
    assert_eq!(mirrored(&state, "default").await.get("e").map(String::as_str), Some("1"));
    again.server.stop().await;
}

/// Holds a finalizer on every greeting mirror in `default`, and lets go of a
/// torn-down one once `release` says so.
struct Holder(watch::Receiver<bool>);

impl QueueController for Holder {
    fn name(&self) -> &str {
        "Holder"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings::new(vec![Input::primary::<Greeting>("default")], vec![])
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let release = *self.0.borrow();
        let outcome = finalizer(
            cx,
            ptr,
            async |_: Resource<Greeting>| Ok(Outcome::Done),
            async |_| Ok(release),
        );
        let outcome = outcome.await?;
        // Asked again when `release` changes (the test requeues the key).
        Ok(outcome)
    }
}

#[actix::test]
async fn a_delete_in_the_cluster_tears_the_mirror_down_and_our_finalizer_holds_it() {
    let cluster = Cluster::start().await;
    cluster.put("default", "held", "x", &[]).await;
    let runtime = Runtime::start();
    let (release, released) = watch::channel(false);
    let holder = runtime.register(move || Holder(released.clone())).await.unwrap();
    let source = Source::new(cluster.client(), runtime.state());
    let handle = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("default"));
    until(&handle, |s| s.synced).await;
    runtime.settled_within(BOUND).await.unwrap();
    let ptr = Pointer::typed::<Greeting>("default", "held");
    let state = runtime.state();
    assert_eq!(state.get(&ptr).await.unwrap().metadata().finalizers().len(), 1);

    cluster.delete("default", "held").await;
    until(&handle, |s| s.events >= 1).await;
    runtime.settled_within(BOUND).await.unwrap();
    let torn = state.get(&ptr).await.unwrap();
    assert_eq!(torn.phase(), Phase::TearingDown, "held by the finalizer");

    // Created again in the cluster while ours is held: mirrored once the old one goes.
    cluster.put("default", "held", "again", &[]).await;
    until(&handle, |s| s.events >= 2).await;
    runtime.settled_within(BOUND).await.unwrap();
    assert_eq!(state.get(&ptr).await.unwrap().phase(), Phase::TearingDown);

    release.send(true).unwrap();
    holder.enqueue(&ptr).await.unwrap();
    let mut events = state.watch_stream(&ptr).await.unwrap();
    let back = tokio::time::timeout(BOUND, async {
        use futures::StreamExt;
        while let Some(event) = events.next().await {
            let Some(r) = event.resource().cloned() else { continue };
            let again = r.typed::<Greeting>().is_ok_and(|g| g.spec().spec.message == "again");
            if r.phase() == Phase::Running && again {
                return r;
            }
        }
        panic!("the watch ended");
    });
    let back = back.await.expect("the new greeting is mirrored once the old one is gone");
    assert_ne!(back.metadata().uid(), torn.metadata().uid(), "a new incarnation");
    cluster.server.stop().await;
}

#[actix::test]
async fn two_mirrors_of_one_set_and_three_readers_share_one_watch_of_the_cluster() {
    let cluster = Cluster::start().await;
    for i in 0..5 {
        cluster.put("default", &format!("g{i}"), "hi", &[]).await;
    }
    let runtime = Runtime::start();
    let mut readers = Vec::new();
    for name in ["One", "Two", "Three"] {
        let (tx, rx) = watch::channel(BTreeMap::new());
        readers.push(rx);
        runtime.register(move || Named(name, Greeter(tx.clone()))).await.unwrap();
    }
    let watches_before = cluster.state.watch_count().await.unwrap();
    let source = Source::new(cluster.client(), runtime.state());
    let first = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("default"));
    let second = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("default"));
    assert_eq!(first.owner(), second.owner());
    until(&second, |s| s.synced).await;
    runtime.settled_within(BOUND).await.unwrap();
    let all: Vec<(String, &str)> = (0..5).map(|i| (format!("g{i}"), "hi")).collect();
    let all: Vec<(&str, &str)> = all.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    for seen in &mut readers {
        greeter_sees(seen, &all).await;
    }
    assert_eq!(source.watches(), 1);
    // A change reaches all three through the watch, which is open by then...
    cluster.put("default", "g0", "hey", &[]).await;
    let mut changed = all.clone();
    changed[0].1 = "hey";
    for seen in &mut readers {
        greeter_sees(seen, &changed).await;
    }
    // ...and the cluster serves one watch for all of them.
    assert_eq!(cluster.state.watch_count().await.unwrap(), watches_before + 1);

    // Another selector is another set, and another watch.
    let edge = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("edge"));
    until(&edge, |s| s.synced).await;
    assert_eq!(source.watches(), 2);
    drop(source);
    cluster.server.stop().await;
}

/// A [`Greeter`] under another name.
struct Named(&'static str, Greeter);

impl QueueController for Named {
    fn name(&self) -> &str {
        self.0
    }
    fn settings(&self) -> QueueSettings {
        self.1.settings()
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        self.1.reconcile(cx, ptr).await
    }
}

#[actix::test]
async fn a_label_selector_and_all_namespaces_mirror_what_they_select_dynamically() {
    let cluster = Cluster::start().await;
    cluster.put("default", "a", "1", &[("tier", "edge")]).await;
    cluster.put("default", "b", "1", &[("tier", "core")]).await;
    cluster.put("edge", "c", "1", &[("tier", "edge")]).await;
    let runtime = Runtime::start();
    let source = Source::new(cluster.client(), runtime.state());
    let mirror = Mirror::dynamic(greetings(), "Greetings.dynamic.cosi.dev").labels("tier=edge");
    let handle = source.mirror(mirror);
    until(&handle, |s| s.synced).await;
    let state = runtime.state();
    let ids = |list: Vec<cosi_runtime::resource::AnyResource>| {
        list.iter().map(|r| r.id().to_owned()).collect::<Vec<_>>()
    };
    let kind = |ns: &str| cosi_runtime::resource::Kind::new(ns, "Greetings.dynamic.cosi.dev");
    let default = state.list(&kind("default"), &LabelQuery::default()).await.unwrap();
    assert_eq!(ids(default.clone()), ["a"]);
    let spec = default[0].to_dynamic().unwrap().spec().clone();
    assert_eq!(spec["spec"]["message"], "1");
    assert_eq!(spec["metadata"]["labels"]["tier"], "edge");
    assert_eq!(default[0].metadata().labels().get("tier"), Some("edge"), "labels copied");
    let edge = state.list(&kind("edge"), &LabelQuery::default()).await.unwrap();
    assert_eq!(ids(edge), ["c"]);
    cluster.server.stop().await;
}

/// A greeting whose spec is not what `Greeting` expects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Odd {
    message: Vec<u32>,
}

impl Spec for Odd {
    const TYPE: &'static str = "Greetings.example.cosi.dev";
}

#[actix::test]
async fn an_object_that_does_not_decode_is_reported_and_the_others_are_mirrored() {
    let cluster = Cluster::start().await;
    cluster.put("default", "good", "hi", &[]).await;
    let odd = Resource::new("default", "odd", Odd { message: vec![1, 2] });
    cluster.state.create(odd, None).await.unwrap();
    let runtime = Runtime::start();
    let source = Source::new(cluster.client(), runtime.state());
    let handle = source.mirror(Mirror::of::<Greeting>(greetings()).namespace("default"));
    let status = until(&handle, |s| s.synced).await;
    assert_eq!(mirrored(&runtime.state(), "default").await, map(&[("good", "hi")]));
    assert_eq!(status.errors, 1, "{status:?}");
    let error = status.last_error.unwrap();
    assert!(error.contains("default/Greetings.mirror.cosi.dev/odd"), "{error}");
    assert!(error.contains("does not decode"), "{error}");
    cluster.server.stop().await;
}

/// A `k8s-openapi` type, mirrored through a newtype that names its resource type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Deployments.mirror.cosi.dev")]
#[serde(transparent)]
struct DeploymentMirror(k8s_openapi::api::apps::v1::Deployment);

#[actix::test]
async fn a_k8s_openapi_type_reads_its_mirror_whole() {
    use k8s_openapi::api::apps::v1::Deployment;
    // The cluster serves `deployments` in group `apps`, as an apiserver does.
    let state = State::start();
    let api = KubernetesApi::new(&state)
        .expose(Expose::resource_type("Deployments.apps", "v1").namespaces(["default"]))
        .unwrap();
    let server = api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let spec = serde_json::json!({
        "replicas": 2,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}}},
    });
    let md =
        cosi_runtime::resource::Metadata::new(Pointer::new("default", "Deployments.apps", "web"));
    let web = cosi_runtime::resource::DynamicResource::new(md, spec);
    state.create(web.into_any(), None).await.unwrap();

    let runtime = Runtime::start();
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let source = Source::new(client, runtime.state());
    let deployments = ApiResource::erase::<Deployment>(&());
    let handle = source.mirror(Mirror::of::<DeploymentMirror>(deployments).namespace("default"));
    let status = until(&handle, |s| s.synced).await;
    assert_eq!(status.errors, 0, "{status:?}");
    let ptr = Pointer::typed::<DeploymentMirror>("default", "web");
    let mirror = runtime.state().get(&ptr).await.unwrap();
    let deployment = &mirror.spec().0;
    assert_eq!(deployment.metadata.name.as_deref(), Some("web"));
    let spec = &deployment.spec;
    assert_eq!(spec.replicas, Some(2));
    assert_eq!(spec.selector.match_labels.as_ref().unwrap()["app"], "web");
    server.stop().await;
}
