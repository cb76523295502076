//! [`Source`]: a cluster's objects mirrored into the state, one kube-runtime
//! `watcher` per [`Mirror`] however many controllers read it.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender, unbounded};
use kube::api::{Api, DynamicObject};
use kube::runtime::utils::Backoff;
use kube::runtime::watcher::{self, DefaultBackoff, watcher};
use tokio::sync::watch;

use super::mirror::Mirror;
use crate::Error;
use crate::resource::{AnyResource, Kind, LabelQuery, Phase, Pointer};
use crate::state::{Client, ExpectedPhase, State};

/// What a mirror has done so far, from its [`MirrorHandle`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MirrorStatus {
    /// Whether a whole list of the cluster has been mirrored (and what it
    /// did not show swept): readers see the cluster, not a part of it.
    pub synced: bool,
    /// Lists mirrored: 1 after the first, one more per relist (a watch the
    /// cluster expired, a restarted apiserver).
    pub lists: u64,
    /// Watch events applied to the state (created, changed or torn down).
    pub events: u64,
    /// Errors so far: the watch's (retried with backoff) and objects the
    /// state could not take.
    pub errors: u64,
    /// The last of those errors.
    pub last_error: Option<String>,
}

/// A handle on one running mirror: its owner and status.
#[derive(Clone, Debug)]
pub struct MirrorHandle {
    owner: Arc<str>,
    status: watch::Receiver<MirrorStatus>,
}

impl MirrorHandle {
    /// The owner of the mirrors (see [`Mirror::owner`]).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The status now.
    pub fn status(&self) -> MirrorStatus {
        self.status.borrow().clone()
    }

    /// Waits until the status satisfies `until`, and returns it.
    ///
    /// # Errors
    /// [`Error::Unavailable`] when the mirror stopped first (its [`Source`] dropped).
    pub async fn wait_until(
        &self,
        until: impl Fn(&MirrorStatus) -> bool,
    ) -> Result<MirrorStatus, Error> {
        let mut status = self.status.clone();
        let found = status.wait_for(|s| until(s)).await.map(|s| s.clone());
        found.map_err(|_| Error::Unavailable {
            resource: self.owner.to_string(),
            service: "the cluster source",
        })
    }

    /// Waits until a whole list has been mirrored ([`MirrorStatus::synced`]).
    ///
    /// # Errors
    /// As [`wait_until`](MirrorHandle::wait_until).
    pub async fn synced(&self) -> Result<MirrorStatus, Error> {
        self.wait_until(|s| s.synced).await
    }
}

/// One running mirror: its task and its status.
struct Running {
    handle: MirrorHandle,
    task: tokio::task::JoinHandle<()>,
}

/// The mirrors of one cluster, by owner. Dropping the last clone stops them.
struct Mirrors {
    client: kube::Client,
    state: State,
    running: Mutex<HashMap<String, Running>>,
}

impl Drop for Mirrors {
    fn drop(&mut self) {
        let running = self.running.get_mut().unwrap_or_else(|e| e.into_inner());
        for (_, r) in running.drain() {
            r.task.abort();
        }
    }
}

/// A Kubernetes cluster as a source of resources: chosen sets of its objects
/// ([`Mirror`]s) mirrored into a [`State`], where controllers read them like
/// any resource.
///
/// # Expected flow
///
/// 1. Make a `kube::Client` (from the kubeconfig: `kube::Client::try_default()`)
///    and a `Source` over it and the runtime's state.
/// 2. [`mirror`](Source::mirror) each set your controllers read; wait on
///    [`MirrorHandle::synced`] if they must see the whole set at once.
/// 3. Controllers declare the mirror's spec type as an input (typically the
///    primary input of a [`QueueController`](crate::controller::QueueController)) and
///    write back through a [`Sink`](super::Sink).
///
/// # Guarantees
///
/// - **One watch per set**, however many controllers read it: a second
///   `mirror` of the same type, namespace and selector returns the running
///   one's handle. The mirrors live once, in the state, shared by every
///   reader (a kube-runtime reflector per controller holds a copy each).
/// - A created or changed object is created or updated in the state, owned
///   by [`Mirror::owner`]; an update that changes nothing writes nothing.
/// - **A relist is mark-and-sweep**: after every whole list (the first one,
///   and each one after the cluster expired the watch or the apiserver
///   restarted), the mirrors of the set that the list did not show are torn
///   down and destroyed. Nothing is duplicated, nothing stale is kept.
/// - **A delete honours our finalizers**: the mirror is torn down at once
///   and destroyed when no finalizer holds it
///   ([`State::teardown_and_destroy`]). An object created again under the
///   same name meanwhile is mirrored afresh once the old one is gone.
/// - Watch errors are retried with kube-runtime's default backoff (800 ms
///   doubling to 30 s, jittered), for ever; each is logged (WARN) and
///   counted in [`MirrorStatus`]. After a connection failed (not after a
///   watch the server ended, nor an in-stream error, which kube-runtime's
///   watcher handles), the set is listed again from scratch: an apiserver
///   may come back without its history and take the watch's last
///   `resourceVersion` for one of its own. This differs from client-go and
///   kube-runtime, which resume from that version; it costs one list per
///   outage.
///
/// # Assumptions
///
/// - Sets of one type do not overlap: an object in two sets is owned by the
///   first to write it, and the second reports an owner conflict.
/// - The state namespace of a mirror is its Kubernetes namespace. For a set
///   over all namespaces, the sweep looks in the namespaces this source has
///   mirrored into since it started (a state kept on disk from an earlier
///   run is swept in the namespaces the new list shows).
///
/// # Caveats
///
/// - Runs on the actix system it is created in (`Source::new` must be
///   called inside one); dropping the last clone of the `Source` stops every
///   watch (the mirrors stay in the state).
/// - A mirror's resources are the source's: a controller that declares them
///   as an exclusive output cannot write them.
/// - The relist after an outage needs the watcher to see one. An
///   apiserver that stops cleanly and says so (this crate's
///   `KubernetesServer::stop`, feature `kubernetes-api`, ends every watch
///   with a 410) is listed again, and so is one that is
///   down for as long as one attempt to watch again. But kube-client takes
///   a connection cut in the middle of a watch for the watch's end and
///   watches again from its last `resourceVersion`: an apiserver that
///   crashed and is back without its history by then is taken at its word,
///   as client-go and kube-runtime take it, and the watch misses what
///   changed.
///
/// ```no_run
/// use cosi_runtime::cluster::{Mirror, Source};
/// use kube::api::{ApiResource, GroupVersionKind};
///
/// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, cosi_runtime::resource::Spec)]
/// # #[spec(type = "Greetings.example.cosi.dev")]
/// # struct Greeting { spec: serde_json::Value }
/// # async fn run(runtime: cosi_runtime::Runtime) -> Result<(), Box<dyn std::error::Error>> {
/// let client = kube::Client::try_default().await?; // $KUBECONFIG, ~/.kube/config or in-cluster
/// let source = Source::new(client, runtime.state());
/// let api = ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"));
/// let greetings = source.mirror(Mirror::of::<Greeting>(api).namespace("default"));
/// greetings.synced().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Source(Arc<Mirrors>);

impl fmt::Debug for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Source").field("watches", &self.watches()).finish()
    }
}

impl Source {
    /// A source over the cluster `client` talks to, writing into `state`.
    pub fn new(client: kube::Client, state: State) -> Source {
        Source(Arc::new(Mirrors { client, state, running: Mutex::new(HashMap::new()) }))
    }

    /// Starts mirroring `mirror` (or joins the running mirror of the same
    /// type, namespace and selector), on the current actix system. A mirror
    /// whose task ended (its `Source` clones all dropped, or a bug) is
    /// started again.
    ///
    /// # Panics
    /// Outside an actix system (its task is spawned there, as an actor's would be).
    pub fn mirror(&self, mirror: Mirror) -> MirrorHandle {
        let owner = mirror.owner();
        let mut running = self.0.running.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(r) = running.get(&owner).filter(|r| !r.task.is_finished()) {
            return r.handle.clone();
        }
        let (tx, rx) = watch::channel(MirrorStatus::default());
        let owner_arc: Arc<str> = Arc::from(owner.as_str());
        let (writer, destroyed) = Writer::new(mirror, self.0.state.clone(), owner_arc.clone(), tx);
        let task = actix_rt::spawn(writer.run(self.0.client.clone(), destroyed));
        let handle = MirrorHandle { owner: owner_arc, status: rx };
        running.insert(owner, Running { handle: handle.clone(), task });
        handle
    }

    /// The watches running: one per distinct mirror.
    pub fn watches(&self) -> usize {
        let running = self.0.running.lock().unwrap_or_else(|e| e.into_inner());
        running.values().filter(|r| !r.task.is_finished()).count()
    }
}

/// What the mirror loop waits on: the watch, or a destroy it started.
// One at a time, moved from the stream into the loop: boxing the large
// variant would cost an allocation per event for nothing.
#[allow(clippy::large_enum_variant)]
enum Step {
    Watch(Result<watcher::Event<DynamicObject>, watcher::Error>),
    Destroyed(Pointer),
}

/// The loop of one mirror: applies the watch's events to the state.
struct Writer {
    mirror: Mirror,
    state: State,
    client: Client,
    owner: Arc<str>,
    status: watch::Sender<MirrorStatus>,
    /// Mirrors being torn down, each with the object to create once it is
    /// gone (the cluster made one again under its name meanwhile).
    tearing: HashMap<Pointer, Option<AnyResource>>,
    /// During a list: what it has shown so far.
    listed: Option<HashSet<Pointer>>,
    /// The state namespaces mirrored into (where a sweep looks).
    namespaces: BTreeSet<String>,
    /// Where a destroy the writer started reports that it is done.
    destroyed: UnboundedSender<Pointer>,
}

impl Writer {
    fn new(
        mirror: Mirror,
        state: State,
        owner: Arc<str>,
        status: watch::Sender<MirrorStatus>,
    ) -> (Writer, UnboundedReceiver<Pointer>) {
        let (destroyed, destroyed_rx) = unbounded();
        let mut namespaces = BTreeSet::new();
        namespaces.extend(mirror.namespace.clone());
        let writer = Writer {
            client: state.client_as(owner.to_string()),
            mirror,
            state,
            owner,
            status,
            tearing: HashMap::new(),
            listed: None,
            namespaces,
            destroyed,
        };
        (writer, destroyed_rx)
    }

    async fn run(mut self, client: kube::Client, destroyed: UnboundedReceiver<Pointer>) {
        let api: Api<DynamicObject> = match &self.mirror.namespace {
            Some(ns) => Api::namespaced_with(client, ns, &self.mirror.api),
            None => Api::all_with(client, &self.mirror.api),
        };
        let mut config = watcher::Config::default();
        if let Some(selector) = &self.mirror.selector {
            config = config.labels(selector);
        }
        let events = relisting_watch(api, config).map(Step::Watch).boxed();
        let mut steps = futures::stream::select(events, destroyed.map(Step::Destroyed));
        while let Some(step) = steps.next().await {
            // `settled()` waits while an event is being applied, not between them.
            let _busy = self.state.busy();
            match step {
                Step::Watch(Ok(event)) => self.apply(event).await,
                Step::Watch(Err(e)) => {
                    self.failed(format!("watching {}: {e}", self.mirror.api.plural))
                }
                Step::Destroyed(pointer) => {
                    if let Some(Some(again)) = self.tearing.remove(&pointer) {
                        self.write(again).await;
                    }
                }
            }
        }
    }

    async fn apply(&mut self, event: watcher::Event<DynamicObject>) {
        match event {
            watcher::Event::Init => self.listed = Some(HashSet::new()),
            watcher::Event::InitApply(object) => self.upsert(object).await,
            watcher::Event::InitDone => self.sweep().await,
            watcher::Event::Apply(object) => {
                self.upsert(object).await;
                self.status.send_modify(|s| s.events += 1);
            }
            watcher::Event::Delete(object) => {
                match self.mirror.pointer(&object) {
                    Ok(pointer) => self.remove(pointer),
                    Err(e) => self.failed(e.to_string()),
                }
                self.status.send_modify(|s| s.events += 1);
            }
        }
    }

    /// Creates or updates the mirror of `object`.
    async fn upsert(&mut self, object: DynamicObject) {
        let resource = match self.mirror.resource(object) {
            Ok(resource) => resource,
            Err(e) => {
                // Not swept either: a mirror made from an earlier object is kept.
                if let (Some(listed), Error::TypeMismatch { resource, .. }) = (&mut self.listed, &e)
                {
                    listed.insert(resource.clone());
                }
                return self.failed(e.to_string());
            }
        };
        let pointer = resource.pointer().clone();
        if !self.namespaces.contains(pointer.namespace()) {
            self.namespaces.insert(pointer.namespace().to_owned());
        }
        if let Some(listed) = &mut self.listed {
            listed.insert(pointer.clone());
        }
        match self.tearing.get_mut(&pointer) {
            Some(again) => *again = Some(resource),
            None => self.write(resource).await,
        }
    }

    /// Writes `resource` over its mirror (labels and spec; a write that
    /// changes nothing is no write).
    async fn write(&mut self, resource: AnyResource) {
        let pointer = resource.pointer().clone();
        let modify = Box::new(move |current: Option<&AnyResource>| {
            Ok(match current {
                None => resource.clone(),
                Some(current) => {
                    let mut metadata = current.metadata().clone();
                    *metadata.labels_mut() = resource.metadata().labels().clone();
                    resource.with_metadata(metadata)
                }
            })
        });
        let owner = Some(self.owner.clone());
        let written = self.state.modify_erased(&pointer, owner, ExpectedPhase::Running, modify);
        if let Err(e) = written.await {
            self.failed(e.to_string());
        }
    }

    /// Tears the mirror at `pointer` down and destroys it once no finalizer
    /// holds it, in a task of its own (the watch goes on meanwhile).
    fn remove(&mut self, pointer: Pointer) {
        if let Some(again) = self.tearing.get_mut(&pointer) {
            *again = None;
            return;
        }
        self.tearing.insert(pointer.clone(), None);
        let (client, done) = (self.client.clone(), self.destroyed.clone());
        actix_rt::spawn(async move {
            if let Err(e) = release(&client, &pointer).await {
                log::warn!(
                    "cluster source {}: removing {pointer}: {e}",
                    client.owner().unwrap_or("")
                );
            }
            let _ = done.unbounded_send(pointer);
        });
    }

    /// The end of a list: what it did not show goes.
    async fn sweep(&mut self) {
        let listed = self.listed.take().unwrap_or_default();
        for namespace in self.namespaces.clone() {
            let kind = Kind::new(&namespace, self.mirror.resource_type());
            let mirrors = match self.state.list(&kind, &LabelQuery::default()).await {
                Ok(mirrors) => mirrors,
                Err(e) => {
                    self.failed(format!("listing {kind} to sweep: {e}"));
                    continue;
                }
            };
            let stale: Vec<Pointer> = mirrors
                .iter()
                .filter(|r| {
                    r.owner() == Some(&*self.owner)
                        && r.phase() == Phase::Running
                        && !listed.contains(r.pointer())
                        && !self.tearing.contains_key(r.pointer())
                })
                .map(|r| r.pointer().clone())
                .collect();
            for pointer in stale {
                self.remove(pointer);
            }
        }
        self.status.send_modify(|s| {
            s.synced = true;
            s.lists += 1;
        });
    }

    fn failed(&mut self, error: String) {
        log::warn!("cluster source {}: {error}", self.owner);
        self.status.send_modify(|s| {
            s.errors += 1;
            s.last_error = Some(error);
        });
    }
}

/// A kube-runtime `watcher` that starts over, with a whole list, after a
/// connection failed, and waits kube-runtime's default backoff after every
/// error (800 ms doubling to 30 s, jittered; reset by an event).
///
/// Why start over: the watcher alone resumes from its last
/// `resourceVersion` after a broken connection, and relists only on a 410.
/// An apiserver that came back without its history (ours on a memory state,
/// a cluster restored from a backup) may take that version for one of its
/// own and answer a watch that silently misses what changed. A list after
/// each outage costs one list, and converges whatever answers.
fn relisting_watch(
    api: Api<DynamicObject>,
    config: watcher::Config,
) -> impl futures::Stream<Item = Result<watcher::Event<DynamicObject>, watcher::Error>> {
    type Events =
        futures::stream::BoxStream<'static, Result<watcher::Event<DynamicObject>, watcher::Error>>;
    let start = move || -> Events { watcher(api.clone(), config.clone()).boxed() };
    let first: (Option<Events>, DefaultBackoff) = (None, DefaultBackoff::default());
    futures::stream::unfold(first, move |(mut events, mut backoff)| {
        let start = start.clone();
        async move {
            loop {
                let stream = events.get_or_insert_with(&start);
                match stream.next().await {
                    Some(Ok(event)) => {
                        backoff.reset();
                        return Some((Ok(event), (events, backoff)));
                    }
                    Some(Err(error)) => {
                        if !matches!(error, watcher::Error::WatchError(_)) {
                            events = None;
                        }
                        if let Some(delay) = backoff.next() {
                            tokio::time::sleep(delay).await;
                        }
                        return Some((Err(error), (events, backoff)));
                    }
                    None => events = None,
                }
            }
        }
    })
}

/// Teardown and destroy through the finalizer coordinator; without one (a
/// bare [`State`]), teardown, and destroy when nothing holds it.
async fn release(client: &Client, pointer: &Pointer) -> Result<(), Error> {
    match client.teardown_and_destroy(pointer).await {
        Ok(()) | Err(Error::NotFound { .. }) => Ok(()),
        Err(Error::Unavailable { .. }) => match client.release(pointer).await {
            Ok(_) | Err(Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}
