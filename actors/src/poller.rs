//! [`Poller`]: mirrors an external list into resources on an interval.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use cosi_runtime::prelude::*;

/// The error a poll may fail with: logged, and the next poll tries again.
pub type PollError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What one poll returned: (id, spec) pairs.
pub type PollResult<S> = Result<Vec<(String, S)>, PollError>;

type PollFuture<S> = Pin<Box<dyn Future<Output = PollResult<S>>>>;

/// Calls a user function on an interval and mirrors the items it returns into
/// resources of spec type `S` in one namespace: it creates the new ones,
/// updates the changed ones (writing nothing when nothing changed) and tears
/// down and destroys the ones that vanished.
///
/// The poller is a controller (no inputs, a shared output on `S`), so it runs
/// **under supervision**: registered with the runtime, counted in its metrics
/// and health, restarted with a fresh instance when the poll function
/// panics, stopped with the runtime. It writes as owner `name`, so it only
/// ever touches the resources it created, and destroys respect finalizers: a
/// vanished resource held by a controller is torn down at once and destroyed
/// on a later poll, once released. Polls never overlap. A poll that returns
/// an error is logged (warn) and changes nothing; the next one comes after
/// the interval. A state error while mirroring is a reconcile error: retried
/// with the runtime's backoff.
///
/// ```no_run
/// use std::time::Duration;
/// use cosi_actors::Poller;
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Interface { up: bool }
/// # impl Spec for Interface { const TYPE: &'static str = "Interfaces.net.cosi.dev"; }
///
/// # async fn example(runtime: Runtime) -> Result<(), Box<dyn std::error::Error>> {
/// Poller::register(&runtime, "InterfacePoller", "network", Duration::from_secs(5), || async {
///     // Ask the OS, a cloud API, a file...
///     Ok(vec![("eth0".to_owned(), Interface { up: true })])
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub struct Poller<S: Spec> {
    name: String,
    namespace: String,
    interval: Duration,
    poll: Box<dyn FnMut() -> PollFuture<S>>,
    polls: u64,
    failures: u64,
    _spec: PhantomData<fn() -> S>,
}

impl<S: Spec> fmt::Debug for Poller<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Poller")
            .field("name", &self.name)
            .field("kind", &Kind::of::<S>(&self.namespace))
            .field("interval", &self.interval)
            .field("polls", &self.polls)
            .field("failed_polls", &self.failures)
            .finish()
    }
}

impl<S: Spec> Poller<S> {
    /// A poller named `name` (its controller name, and its owner name in the
    /// state) mirroring what `poll` returns into `namespace` every `interval`
    /// (the first poll runs at registration). Register it with
    /// [`Runtime::register`] (the factory builds a fresh one after a panic),
    /// or use [`Poller::register`].
    pub fn new<F, Fut>(
        name: impl Into<String>,
        namespace: impl Into<String>,
        interval: Duration,
        mut poll: F,
    ) -> Self
    where
        F: FnMut() -> Fut + 'static,
        Fut: Future<Output = PollResult<S>> + 'static,
    {
        Poller {
            name: name.into(),
            namespace: namespace.into(),
            interval,
            poll: Box::new(move || Box::pin(poll())),
            polls: 0,
            failures: 0,
            _spec: PhantomData,
        }
    }

    /// Registers a poller with `runtime`: the one-line form of
    /// `runtime.register(move || Poller::new(name, namespace, interval, poll.clone()))`.
    ///
    /// # Errors
    /// As [`Runtime::register`] (a controller of that name exists already, ...).
    pub async fn register<F, Fut>(
        runtime: &Runtime,
        name: impl Into<String>,
        namespace: impl Into<String>,
        interval: Duration,
        poll: F,
    ) -> Result<(), cosi_runtime::supervisor::RegistrationError>
    where
        F: FnMut() -> Fut + Clone + Send + 'static,
        Fut: Future<Output = PollResult<S>> + 'static,
    {
        let (name, namespace) = (name.into(), namespace.into());
        runtime
            .register(move || Poller::new(name.clone(), namespace.clone(), interval, poll.clone()))
            .await
    }
}

impl<S: Spec> Controller for Poller<S> {
    fn name(&self) -> &str {
        &self.name
    }

    fn inputs(&self) -> Vec<Input> {
        Vec::new()
    }

    fn outputs(&self) -> Vec<Output> {
        vec![Output::shared::<S>()]
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        cx.requeue_after(self.interval);
        self.polls += 1;
        let items = match (self.poll)().await {
            Ok(items) => items,
            Err(e) => {
                self.failures += 1;
                tracing::warn!(
                    "poller {}: poll failed: {e}; trying again in {:?}",
                    self.name,
                    self.interval
                );
                return Ok(());
            }
        };
        mirror::<S>(cx, &self.name, &self.namespace, items).await
    }
}

/// Brings the state in line with what one poll returned.
async fn mirror<S: Spec>(
    cx: &ReconcileContext,
    name: &str,
    namespace: &str,
    items: Vec<(String, S)>,
) -> ReconcileResult {
    let mut seen = HashSet::new();
    for (id, spec) in items {
        let ptr = Pointer::typed::<S>(namespace, &id);
        let (ns, new_id, initial) = (namespace.to_owned(), id.clone(), spec.clone());
        let written = cx
            .modify_with(
                &ptr,
                move || Resource::new(ns.clone(), new_id.clone(), initial.clone()),
                move |r: &mut Resource<S>| {
                    if r.spec() != &spec {
                        r.set_spec(spec.clone());
                    }
                },
                ExpectedPhase::Running,
            )
            .await;
        match written {
            Ok(_) => {}
            // Still being torn down after an earlier disappearance: it is
            // re-created by a later poll once it is gone.
            Err(e) if e.is_phase_conflict() => tracing::debug!("poller {name}: {e}"),
            // Someone else's resource under the same id: never touched.
            Err(e) if e.is_owner_conflict() => tracing::warn!("poller {name}: {e}"),
            Err(e) => return Err(e.into()),
        }
        seen.insert(id);
    }
    for r in cx.list(&Kind::of::<S>(namespace), &LabelQuery::all()).await? {
        if r.owner() != Some(name) || seen.contains(r.id()) {
            continue;
        }
        cx.release(r.pointer()).await?;
    }
    Ok(())
}
