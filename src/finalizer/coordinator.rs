//! The [`FinalizerCoordinator`] actor (see the [module docs](super) for the lifecycle).

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use futures::channel::oneshot;

use crate::Error;
use crate::resource::{AnyResource, Phase, Pointer};
use crate::state::request::TeardownAndDestroy;
use crate::state::request::WatchSink;
use crate::state::watch::WatchTarget;
use crate::state::{Event, State, WatchEvent, WatchId, WatchOptions};

/// Internal: a caller found the resource not ready and waits here.
#[derive(Message)]
#[rtype(result = "()")]
struct Park {
    pointer: Pointer,
    owner: Option<Arc<str>>,
    reply: oneshot::Sender<Result<(), Error>>,
}

struct Parked {
    owner: Option<Arc<str>>,
    watch: Option<WatchId>,
    waiters: Vec<oneshot::Sender<Result<(), Error>>>,
    destroying: bool,
}

/// The actor that serves [`TeardownAndDestroy`] requests.
pub struct FinalizerCoordinator {
    state: State,
    parked: HashMap<Pointer, Parked>,
}

impl std::fmt::Debug for FinalizerCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinalizerCoordinator").field("parked", &self.parked.len()).finish()
    }
}

fn unavailable(ptr: &Pointer) -> Error {
    Error::Unavailable { resource: ptr.to_string(), service: "the finalizer coordinator" }
}

impl FinalizerCoordinator {
    /// A coordinator that acts on `state`.
    pub fn new(state: State) -> Self {
        FinalizerCoordinator { state, parked: HashMap::new() }
    }

    fn resolve(&mut self, ptr: &Pointer, result: &Result<(), Error>) {
        let Some(parked) = self.parked.remove(ptr) else {
            return;
        };
        for waiter in parked.waiters {
            let _ = waiter.send(result.clone());
        }
        if let Some(id) = parked.watch {
            let state = self.state.clone();
            actix::spawn(async move {
                let _ = state.unwatch(id).await;
            });
        }
    }

    fn try_destroy(&mut self, ptr: &Pointer, ctx: &mut Context<Self>) {
        let Some(parked) = self.parked.get_mut(ptr) else {
            return;
        };
        if parked.destroying {
            return;
        }
        parked.destroying = true;
        let state = self.state.clone();
        let owner = parked.owner.clone();
        let busy = state.activity().guard();
        let target = ptr.clone();
        ctx.spawn(
            async move {
                let _busy = busy;
                state.destroy(&target, owner.as_deref()).await
            }
            .into_actor(self)
            .map({
                let ptr = ptr.clone();
                move |result, act, _| match result {
                    Ok(()) => act.resolve(&ptr, &Ok(())),
                    Err(e) if e.is_not_found() => act.resolve(&ptr, &Ok(())),
                    Err(e) if e.is_pending_finalizers() => {
                        if let Some(p) = act.parked.get_mut(&ptr) {
                            p.destroying = false;
                        }
                    }
                    Err(e) => act.resolve(&ptr, &Err(e)),
                }
            }),
        );
    }

    fn observe(&mut self, resource: &AnyResource, ctx: &mut Context<Self>) {
        if resource.phase() == Phase::Running {
            // Re-created under the same id: the resource we tore down is gone.
            self.resolve(resource.pointer(), &Ok(()));
        } else if resource.metadata().finalizers().is_empty() {
            self.try_destroy(resource.pointer(), ctx);
        }
    }
}

impl Actor for FinalizerCoordinator {
    type Context = Context<Self>;
}

impl Handler<TeardownAndDestroy> for FinalizerCoordinator {
    type Result = ResponseFuture<Result<(), Error>>;

    fn handle(&mut self, msg: TeardownAndDestroy, ctx: &mut Context<Self>) -> Self::Result {
        let state = self.state.clone();
        let me = ctx.address();
        Box::pin(async move {
            let TeardownAndDestroy { pointer, owner } = msg;
            if state.teardown(&pointer, owner.as_deref()).await? {
                match state.destroy(&pointer, owner.as_deref()).await {
                    Ok(()) => return Ok(()),
                    Err(e) if e.is_not_found() => return Ok(()),
                    Err(e) if e.is_pending_finalizers() => {}
                    Err(e) => return Err(e),
                }
            }
            let (reply, answer) = oneshot::channel();
            let park = Park { pointer: pointer.clone(), owner, reply };
            me.send(park).await.map_err(|_| unavailable(&pointer))?;
            answer.await.unwrap_or_else(|_| Err(unavailable(&pointer)))
        })
    }
}

impl Handler<Park> for FinalizerCoordinator {
    type Result = ();

    fn handle(&mut self, msg: Park, ctx: &mut Context<Self>) {
        if let Some(parked) = self.parked.get_mut(&msg.pointer) {
            parked.waiters.push(msg.reply);
            return;
        }
        self.parked.insert(
            msg.pointer.clone(),
            Parked { owner: msg.owner, watch: None, waiters: vec![msg.reply], destroying: false },
        );
        // The watch's first event is the current state, so a release that
        // happened before the watch started is not missed.
        let state = self.state.clone();
        let sink = WatchSink {
            sink: crate::state::delivery::Sink::Actor(ctx.address().recipient()),
            activity: Some(state.activity().clone()),
            shards: None,
        };
        let ptr = msg.pointer;
        ctx.spawn(
            {
                let ptr = ptr.clone();
                async move {
                    state
                        .watch_sink(WatchTarget::Resource(ptr), &WatchOptions::default(), sink)
                        .await
                }
            }
            .into_actor(self)
            .map(move |result, act, _| match result {
                Ok(id) => match act.parked.get_mut(&ptr) {
                    Some(p) => p.watch = Some(id),
                    None => {
                        let state = act.state.clone();
                        actix::spawn(async move {
                            let _ = state.unwatch(id).await;
                        });
                    }
                },
                Err(e) => act.resolve(&ptr, &Err(e)),
            }),
        );
    }
}

impl Handler<WatchEvent> for FinalizerCoordinator {
    type Result = ();

    fn handle(&mut self, msg: WatchEvent, ctx: &mut Context<Self>) {
        match msg.event() {
            Event::Destroyed(r) => self.resolve(r.pointer(), &Ok(())),
            Event::Created(r) | Event::Updated { new: r, .. } => self.observe(r, ctx),
            Event::Bootstrapped(_) => {}
        }
    }
}
