//! [`Poller`]: mirrors an external list into resources on an interval.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use actix::prelude::*;
use cosi_runtime::prelude::*;
use cosi_runtime::state::BusyGuard;

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
/// The poller writes as owner `name`, so it only ever touches the resources it
/// created, and destroys respect finalizers: a vanished resource held by a
/// controller is torn down at once and destroyed on a later poll, once
/// released. Polls never overlap; a failed poll is logged and changes nothing.
///
/// ```no_run
/// use std::time::Duration;
/// use actix::Actor;
/// use cosi_actors::Poller;
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Interface { up: bool }
/// # impl Spec for Interface { const TYPE: &'static str = "Interfaces.net.cosi.dev"; }
///
/// # async fn example(runtime: Runtime) {
/// let poller = Poller::new(runtime.state(), "InterfacePoller", "network", Duration::from_secs(5), || async {
///     // Ask the OS, a cloud API, a file...
///     Ok(vec![("eth0".to_owned(), Interface { up: true })])
/// })
/// .start();
/// # }
/// ```
pub struct Poller<S: Spec> {
    state: State,
    name: String,
    namespace: String,
    interval: Duration,
    poll: Box<dyn FnMut() -> PollFuture<S>>,
    polling: bool,
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
            .finish()
    }
}

impl<S: Spec> Poller<S> {
    /// A poller named `name` (its owner name in the state) mirroring what
    /// `poll` returns into `namespace` every `interval` (the first poll runs at start).
    pub fn new<F, Fut>(
        state: State,
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
            state,
            name: name.into(),
            namespace: namespace.into(),
            interval,
            poll: Box::new(move || Box::pin(poll())),
            polling: false,
            polls: 0,
            failures: 0,
            _spec: PhantomData,
        }
    }

    fn tick(&mut self, ctx: &mut Context<Self>) {
        if self.polling {
            return;
        }
        self.polling = true;
        // Hold the runtime unsettled from the moment the poll is due.
        let busy = self.state.busy();
        let fetch = (self.poll)();
        let state = self.state.clone();
        let (name, namespace) = (self.name.clone(), self.namespace.clone());
        let work = async move { mirror::<S>(state, name, namespace, fetch, busy).await };
        ctx.spawn(work.into_actor(self).map(|result, act, _| {
            act.polling = false;
            act.polls += 1;
            if let Err(e) = result {
                act.failures += 1;
                log::warn!("poller {}: {e}", act.name);
            }
        }));
    }
}

/// One poll: fetch, then bring the state in line with what was fetched.
async fn mirror<S: Spec>(
    state: State,
    name: String,
    namespace: String,
    fetch: PollFuture<S>,
    _busy: BusyGuard,
) -> Result<(), PollError> {
    let items = fetch.await.map_err(|e| format!("poll failed: {e}"))?;
    let owner = Some(name.as_str());
    let mut seen = HashSet::new();
    for (id, spec) in items {
        let ptr = Pointer::of::<S>(&namespace, &id);
        let (ns, new_id, initial) = (namespace.clone(), id.clone(), spec.clone());
        let written = state
            .modify_with(
                &ptr,
                move || Resource::new(ns.clone(), new_id.clone(), initial.clone()),
                move |r: &mut Resource<S>| {
                    if r.spec() != &spec {
                        r.set_spec(spec.clone());
                    }
                },
                owner,
                ExpectedPhase::Running,
            )
            .await;
        match written {
            Ok(_) => {}
            // Still being torn down after an earlier disappearance: it is
            // re-created by a later poll once it is gone.
            Err(e) if e.is_phase_conflict() => log::debug!("poller {name}: {e}"),
            // Someone else's resource under the same id: never touched.
            Err(e) if e.is_owner_conflict() => log::warn!("poller {name}: {e}"),
            Err(e) => return Err(e.into()),
        }
        seen.insert(id);
    }
    let existing = state.list(&Kind::of::<S>(&namespace), &LabelQuery::all()).await?;
    for r in existing {
        if r.owner() != owner || seen.contains(r.id()) {
            continue;
        }
        if state.teardown(r.pointer(), owner).await? {
            match state.destroy(r.pointer(), owner).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() || e.is_pending_finalizers() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

impl<S: Spec> Actor for Poller<S> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        self.tick(ctx);
        ctx.run_interval(self.interval, |act, ctx| act.tick(ctx));
    }
}
