//! The other way round: a stock kube-runtime `Controller` (no change to it)
//! reconciles resources that live in our state, through our Kubernetes API
//! on loopback, including `.owns()` of a second type: it creates a child per
//! parent with an `ownerReference`, applies the parent's status, and when
//! the child is deleted or changed in our state, the owner reference leads
//! the controller back to the parent, which makes the child again; and its
//! `finalizer()` helper holds a deletion until its cleanup ran.

use std::sync::Arc;
use std::time::Duration;

use cosi_runtime::kubernetes::{Expose, KubernetesApi, KubernetesServer};
use cosi_runtime::prelude::{LabelQuery, Pointer, WatchOptions};
use cosi_runtime::resource::{AnyResource, DynamicResource, Kind, Metadata};
use cosi_runtime::{Runtime, State};
use futures::StreamExt;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use serde_json::{Value, json};
use tokio::sync::watch;

const NS: &str = "default";
const PARENT: &str = "Parents.example.cosi.dev";
const CHILD: &str = "Children.example.cosi.dev";
const BOUND: Duration = Duration::from_secs(30);

fn parents() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Parent"))
}

fn children() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.cosi.dev", "v1", "Child"),
        "children",
    )
}

struct Context {
    client: Client,
    /// Every reconcile, by parent name.
    reconciled: watch::Sender<Vec<String>>,
}

#[derive(Debug, thiserror::Error)]
#[error(transparent)]
struct Failed(#[from] kube::Error);

/// A kube-rs reconcile as any operator writes it: apply the child, apply the status.
async fn reconcile(parent: Arc<DynamicObject>, cx: Arc<Context>) -> Result<Action, Failed> {
    let name = parent.name_any();
    let value = parent.data["spec"]["value"].clone();
    let owner = json!({
        "apiVersion": "example.cosi.dev/v1", "kind": "Parent",
        "name": name, "uid": parent.uid().unwrap_or_default(), "controller": true,
    });
    let child = json!({
        "apiVersion": "example.cosi.dev/v1", "kind": "Child",
        "metadata": {"name": format!("{name}-child"), "namespace": NS, "ownerReferences": [owner]},
        "spec": {"from": value},
    });
    let params = PatchParams::apply("parent-controller").force();
    let api: Api<DynamicObject> = Api::namespaced_with(cx.client.clone(), NS, &children());
    api.patch(&format!("{name}-child"), &params, &Patch::Apply(child)).await?;
    let status = json!({
        "apiVersion": "example.cosi.dev/v1", "kind": "Parent",
        "status": {"children": 1, "value": value},
    });
    let api: Api<DynamicObject> = Api::namespaced_with(cx.client.clone(), NS, &parents());
    api.patch_status(&name, &params, &Patch::Apply(status)).await?;
    cx.reconciled.send_modify(|r| r.push(name));
    Ok(Action::await_change())
}

fn error_policy(_: Arc<DynamicObject>, error: &Failed, _: Arc<Context>) -> Action {
    eprintln!("reconcile failed: {error}");
    Action::requeue(Duration::from_millis(200))
}

/// Our state, served: parents (with a status) and children.
async fn serve(state: &State) -> KubernetesServer {
    let api = KubernetesApi::new(state)
        .expose(Expose::resource_type(PARENT, "v1").status_subresource())
        .unwrap()
        .expose(Expose::resource_type(CHILD, "v1").kind("Child"))
        .unwrap();
    api.serve("127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// Waits (bounded, on the state's watch) until `until` holds of the kind's resources.
async fn until(state: &State, resource_type: &str, until: impl Fn(&[AnyResource]) -> bool) {
    let kind = Kind::new(NS, resource_type);
    let mut events = state
        .watch_kind_stream(&kind, LabelQuery::default(), WatchOptions::default())
        .await
        .unwrap();
    let found = tokio::time::timeout(BOUND, async {
        loop {
            if until(&state.list(&kind, &LabelQuery::default()).await.unwrap()) {
                return;
            }
            events.next().await.expect("the watch goes on");
        }
    });
    let found = found.await.is_ok();
    let listed = state.list(&kind, &LabelQuery::default()).await.unwrap();
    assert!(found, "{resource_type} after {BOUND:?}: {listed:?}");
}

fn spec(r: &AnyResource) -> Value {
    r.to_dynamic().unwrap().spec().clone()
}

fn parent(name: &str, value: &str) -> AnyResource {
    let md = Metadata::new(Pointer::new(NS, PARENT, name));
    DynamicResource::new(md, json!({"spec": {"value": value}})).into_any()
}

#[actix::test]
async fn a_stock_kube_runtime_controller_reconciles_our_resources_and_owns_their_children() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let server = serve(&state).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    state.create(parent("p1", "a"), None).await.unwrap();

    let (reconciled, mut seen) = watch::channel(Vec::new());
    let cx = Arc::new(Context { client: client.clone(), reconciled });
    let controller = Controller::new_with(
        Api::<DynamicObject>::namespaced_with(client.clone(), NS, &parents()),
        watcher::Config::default(),
        parents(),
    )
    .owns_with(
        Api::<DynamicObject>::namespaced_with(client.clone(), NS, &children()),
        children(),
        watcher::Config::default(),
    )
    .run(reconcile, error_policy, cx)
    .for_each(|_| async {});
    let controller = actix_rt::spawn(controller);

    // The child is made, owned by the parent; the parent's status applied.
    until(&state, CHILD, |c| c.len() == 1 && spec(&c[0])["from"] == "a").await;
    until(&state, PARENT, |p| spec(&p[0])["status"]["value"] == "a").await;
    let children_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &children());
    let child = children_api.get("p1-child").await.unwrap();
    let parents_api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &parents());
    let served = parents_api.get("p1").await.unwrap();
    let owners = child.owner_references();
    assert_eq!(owners.len(), 1, "{child:?}");
    assert_eq!((owners[0].kind.as_str(), owners[0].name.as_str()), ("Parent", "p1"));
    assert_eq!(Some(owners[0].uid.clone()), served.uid());
    assert_eq!(served.data["status"]["children"], 1);

    // The child goes from our state: through its owner reference,
    // `.owns()` brings the controller back to p1, which makes it again.
    let first_uid = child.uid();
    let reconciles = seen.borrow().len();
    state.destroy(&Pointer::new(NS, CHILD, "p1-child"), None).await.unwrap();
    // (`is_ok` at once: the `Ref` that `wait_for` returns holds the channel.)
    let again = tokio::time::timeout(BOUND, seen.wait_for(|r| r.len() > reconciles)).await.is_ok();
    assert!(again, "no reconcile of p1 after its child was deleted");
    until(&state, CHILD, |c| c.len() == 1).await;
    let remade = children_api.get("p1-child").await.unwrap();
    assert_ne!(remade.uid(), first_uid, "a new child");

    // A change to the child (someone edits it) is put right the same way.
    let edit = json!({"spec": {"from": "tampered"}});
    children_api.patch("p1-child", &PatchParams::default(), &Patch::Merge(&edit)).await.unwrap();
    until(&state, CHILD, |c| spec(&c[0])["from"] == "a").await;

    // And the parent's own change flows to its child and status.
    let change = json!({"spec": {"value": "b"}});
    parents_api.patch("p1", &PatchParams::default(), &Patch::Merge(&change)).await.unwrap();
    until(&state, CHILD, |c| spec(&c[0])["from"] == "b").await;
    until(&state, PARENT, |p| spec(&p[0])["status"]["value"] == "b").await;
    controller.abort();
    server.stop().await;
}

/// kube-runtime's `finalizer()` helper as operators use it, against our API:
/// it adds its finalizer with a JSON patch that tests `/metadata/finalizers`
/// against `null` on an object that has none (the apiserver counts a
/// missing field as `null`), and on deletion runs the cleanup, then
/// removes its finalizer, after which the resource is gone.
#[actix::test]
async fn kube_runtimes_finalizer_helper_holds_and_releases_a_deletion() {
    use kube::runtime::finalizer::{Event as Finalize, finalizer};
    const CLEANUP: &str = "example.cosi.dev/cleanup";
    let state = State::start();
    let server = serve(&state).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let api: Api<DynamicObject> = Api::namespaced_with(client, NS, &parents());
    state.create(parent("p2", "a"), None).await.unwrap();
    let cleaned = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let step = |api: Api<DynamicObject>, cleaned: Arc<std::sync::atomic::AtomicBool>| async move {
        let obj = Arc::new(api.get("p2").await.unwrap());
        finalizer(&api, CLEANUP, obj, |event| async move {
            if let Finalize::Cleanup(_) = event {
                cleaned.store(true, std::sync::atomic::Ordering::SeqCst);
            }
            Ok::<_, Failed>(Action::await_change())
        })
        .await
    };
    // First run: the finalizer goes on.
    step(api.clone(), cleaned.clone()).await.expect("the finalizer is added");
    let held = state.get(&Pointer::new(NS, PARENT, "p2")).await.unwrap();
    assert_eq!(held.metadata().finalizers().to_vec(), [CLEANUP]);
    // Then the apply runs; a delete waits for the cleanup.
    step(api.clone(), cleaned.clone()).await.expect("apply");
    api.delete("p2", &Default::default()).await.unwrap();
    assert!(api.get("p2").await.unwrap().metadata.deletion_timestamp.is_some());
    step(api.clone(), cleaned.clone()).await.expect("the cleanup, then the finalizer off");
    assert!(cleaned.load(std::sync::atomic::Ordering::SeqCst));
    until(&state, PARENT, <[AnyResource]>::is_empty).await;
    server.stop().await;
}
