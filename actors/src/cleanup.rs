//! [`Cleanup`]: removes the resources that point at one that goes away.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;

use crate::destroy::{destroy_as_owner, destroy_if_free};

/// How often a cleanup waiting on dependents found by a mapping function
/// looks again (label dependents wake it up by themselves).
pub const MAPPED_RETRY: Duration = Duration::from_millis(250);

/// The ids of the dependents of the resource at a pointer.
type IdsFn = Box<dyn Fn(&Pointer) -> Vec<String>>;

/// How [`Cleanup`] finds the dependents of a resource.
enum Dependents {
    /// Resources of `kind` whose label `key` is the resource's id.
    Labelled { kind: Kind, key: String },
    /// Resources of `kind` with the ids a function gives for the resource.
    Mapped { kind: Kind, ids: IdsFn },
}

impl Dependents {
    fn kind(&self) -> &Kind {
        match self {
            Dependents::Labelled { kind, .. } | Dependents::Mapped { kind, .. } => kind,
        }
    }
}

impl fmt::Debug for Dependents {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dependents::Labelled { kind, key } => write!(f, "{kind} labelled {key}"),
            Dependents::Mapped { kind, .. } => write!(f, "{kind} by mapping"),
        }
    }
}

/// A generic controller that, when a resource of type `T` goes away (is
/// torn down or destroyed), tears down and destroys the resources of other
/// kinds that point at it: by a label whose value is its id, or by a
/// mapping function from its pointer to their ids.
///
/// ```
/// use cosi_actors::Cleanup;
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Link;
/// # impl Spec for Link { const TYPE: &'static str = "Links.net.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Address;
/// # impl Spec for Address { const TYPE: &'static str = "Addresses.net.cosi.dev"; }
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::start();
/// let state = runtime.state().client();
/// // Addresses carry the label `link` = the id of their link.
/// runtime
///     .register({
///         let state = runtime.state();
///         move || {
///             Cleanup::<Link>::new(state.clone(), "LinkCleanup", "network")
///                 .remove_labelled(Kind::of::<Address>("network"), "link")
///         }
///     })
///     .await?;
/// state.create(Resource::new("network", "eth0", Link)).await?;
/// let mut address = Resource::new("network", "eth0-v4", Address);
/// address.metadata_mut().labels_mut().insert("link", "eth0");
/// state.create(address).await?;
///
/// state.teardown_and_destroy(&Pointer::typed::<Link>("network", "eth0")).await?;
/// runtime.settled().await;
/// assert!(state.get(&Pointer::typed::<Address>("network", "eth0-v4")).await.unwrap_err().is_not_found());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Expected flow
/// 1. Each resource of `T` is queued at start and on each change; each
///    dependent too, mapped back (by its label) to the resource it points at.
/// 2. A running resource: nothing to do (with
///    [`with_finalizer`](Cleanup::with_finalizer), the cleanup holds its
///    finalizer on it).
/// 3. A resource tearing down or gone: each dependent is torn down, and
///    destroyed once free of finalizers; then the finalizer (if held) is
///    released, so the resource's `teardown_and_destroy` completes after its
///    dependents are gone.
///
/// # Guarantees
/// - Dependents of a resource destroyed while the cleanup was not running
///   are found at start (label dependents are watched from the beginning).
/// - A dependent held by a finalizer is destroyed once released: its change
///   wakes the cleanup (label dependents), or the cleanup looks again every
///   [`MAPPED_RETRY`] (mapped dependents).
///
/// # Caveats
/// - The cleanup acts as each dependent's **owner** (as the Go runtime's
///   cleanup controller does), so it takes a [`State`] handle: its reconcile
///   context would only let it write outputs it owns. Point it only at kinds
///   whose owners expect their resources to be removed from outside; an
///   owner that re-creates a removed resource will fight it.
/// - The dependent kinds are read as mapped inputs; they are not outputs.
/// - Labelled dependents are found by a list by label, which the state
///   indexes: each reconcile reads the dependents of its resource, not the
///   whole dependent kind.
///
/// # Errors
/// State errors fail that resource's reconcile, retried with backoff.
pub struct Cleanup<T: Spec> {
    name: String,
    namespace: String,
    state: State,
    dependents: Vec<Dependents>,
    finalizer: bool,
    _type: PhantomData<fn() -> T>,
}

impl<T: Spec> fmt::Debug for Cleanup<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cleanup")
            .field("name", &self.name)
            .field("kind", &Kind::of::<T>(&self.namespace))
            .field("dependents", &self.dependents)
            .field("finalizer", &self.finalizer)
            .finish()
    }
}

impl<T: Spec> Cleanup<T> {
    /// A cleanup named `name` watching `T` in `namespace`, removing
    /// dependents through `state` (the runtime's: [`Runtime::state`]). Add
    /// the dependent kinds with [`remove_labelled`](Cleanup::remove_labelled)
    /// and [`remove_mapped`](Cleanup::remove_mapped).
    pub fn new(state: State, name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Cleanup {
            name: name.into(),
            namespace: namespace.into(),
            state,
            dependents: Vec::new(),
            finalizer: false,
            _type: PhantomData,
        }
    }

    /// Removes the resources of `kind` whose label `key` is the id of the
    /// resource that went away.
    pub fn remove_labelled(mut self, kind: Kind, key: impl Into<String>) -> Self {
        self.dependents.push(Dependents::Labelled { kind, key: key.into() });
        self
    }

    /// Removes the resources of `kind` with the ids `ids` gives for the
    /// pointer of the resource that went away.
    pub fn remove_mapped(
        mut self,
        kind: Kind,
        ids: impl Fn(&Pointer) -> Vec<String> + 'static,
    ) -> Self {
        self.dependents.push(Dependents::Mapped { kind, ids: Box::new(ids) });
        self
    }

    /// Holds a finalizer on each running resource, so its teardown waits
    /// until its dependents are destroyed.
    pub fn with_finalizer(mut self) -> Self {
        self.finalizer = true;
        self
    }

    /// The dependents of `ptr` that still exist.
    async fn dependents_of(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Vec<AnyResource>, Error> {
        let mut found = Vec::new();
        for dependents in &self.dependents {
            match dependents {
                Dependents::Labelled { kind, key } => {
                    let query = LabelQuery::all().equal(key.as_str(), ptr.id());
                    found.extend(cx.list(kind, &query).await?);
                }
                Dependents::Mapped { kind, ids } => {
                    for id in ids(ptr) {
                        match cx.get(&kind.pointer(id)).await {
                            Ok(dependent) => found.push(dependent),
                            Err(e) if e.is_not_found() => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
        }
        Ok(found)
    }

    /// Tears `dependent` down and destroys it once free; whether it is gone.
    async fn remove(&self, dependent: &AnyResource) -> Result<bool, Error> {
        if dependent.phase() == Phase::Running {
            // `teardown` says whether it is free of finalizers: no read needed.
            return match self.state.teardown(dependent.pointer(), dependent.owner()).await {
                Ok(true) => {
                    destroy_as_owner(&self.state, dependent.pointer(), dependent.owner()).await
                }
                Ok(false) => Ok(false),
                Err(e) if e.is_not_found() => Ok(true),
                Err(e) => Err(e),
            };
        }
        destroy_if_free(&self.state, dependent).await
    }
}

impl<T: Spec> QueueController for Cleanup<T> {
    fn name(&self) -> &str {
        &self.name
    }

    fn settings(&self) -> QueueSettings {
        let mut inputs = vec![Input::primary::<T>(&self.namespace)];
        for dependents in &self.dependents {
            let input = Input::new(dependents.kind(), InputKind::Mapped);
            if !inputs.contains(&input) {
                inputs.push(input);
            }
        }
        QueueSettings { inputs, outputs: vec![], concurrency: 4 }
    }

    fn map_resource(&self, changed: &AnyResource) -> Vec<Pointer> {
        self.dependents
            .iter()
            .filter_map(|d| match d {
                Dependents::Labelled { kind, key } if changed.pointer().kind() == kind => {
                    changed.metadata().labels().get(key)
                }
                _ => None,
            })
            .map(|id| Pointer::typed::<T>(&self.namespace, id).erase())
            .collect()
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let resource = match cx.get(ptr).await {
            Ok(resource) => Some(resource),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e.into()),
        };
        let held =
            resource.as_ref().is_some_and(|r| r.metadata().finalizers().contains(&self.name));
        if let Some(resource) = resource.as_ref().filter(|r| r.phase() == Phase::Running) {
            if self.finalizer && !held {
                cx.add_finalizer(resource.pointer()).await?;
            }
            return Ok(Outcome::Done);
        }
        let mut gone = true;
        for dependent in self.dependents_of(cx, ptr).await? {
            gone &= self.remove(&dependent).await?;
        }
        if !gone {
            let mapped = self.dependents.iter().any(|d| matches!(d, Dependents::Mapped { .. }));
            return Ok(if mapped { Outcome::RequeueAfter(MAPPED_RETRY) } else { Outcome::Done });
        }
        if held {
            cx.remove_finalizer(ptr).await?;
        }
        Ok(Outcome::Done)
    }
}
