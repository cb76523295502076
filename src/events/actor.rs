//! [`EventWriter`]: the actor that turns occurrences into Event resources,
//! a thin shell around the [`Engine`](super::engine::Engine).
//!
//! It resolves the regarded object's uid (one read), builds the Event and
//! its id, asks the engine what to do, and does it through the state as
//! the user (owner none). One timer, armed at the engine's next due time,
//! writes what waited and deletes what expired; it holds no activity, so
//! neither `settled()` nor `idle()` waits for it, and
//! [`Runtime::stop`](crate::Runtime::stop) flushes what waits.

use std::time::Duration;

use actix::prelude::*;
use futures::channel::oneshot;

use super::engine::{Action, Bounds, Engine, merge};
use super::event::{Event, ObjectReference, bounded_note};
use super::key::EventKey;
use super::recorder::{Occurrence, ToWriter};
use super::settings::EventSettings;
use super::time::after;
use crate::activity::ActivityGuard;
use crate::resource::{Pointer, Resource, Spec, Timestamp, TypedPointer, Uid};
use crate::state::{ExpectedPhase, State};

/// Wall-clock time that moves with tokio's clock (virtual under a paused
/// clock, so that tests see `lastObservedTime` move).
#[derive(Debug)]
struct WallClock {
    wall: Timestamp,
    at: tokio::time::Instant,
}

impl WallClock {
    fn start() -> Self {
        WallClock { wall: Timestamp::now(), at: tokio::time::Instant::now() }
    }

    fn now(&self) -> Timestamp {
        after(self.wall, self.at.elapsed())
    }
}

/// Writes a runtime's Events (one per runtime, on the home arbiter).
#[derive(Debug)]
pub(crate) struct EventWriter {
    /// The runtime's own state handle: not the one a test kit intercepts,
    /// so Events never show in a harness's log of the controller's writes.
    state: State,
    engine: Engine,
    settings: EventSettings,
    clock: WallClock,
    /// The armed timer, and when it fires.
    wake: Option<(Timestamp, SpawnHandle)>,
}

impl EventWriter {
    /// Starts a writer on the current arbiter.
    pub(crate) fn start(state: State, settings: EventSettings) -> Addr<Self> {
        let bounds = Bounds {
            interval: settings.interval,
            max_per_namespace: settings.max_per_namespace,
            ttl: settings.ttl,
        };
        EventWriter {
            state,
            engine: Engine::new(bounds),
            settings,
            clock: WallClock::start(),
            wake: None,
        }
        .start()
    }

    /// Where an occurrence is stored, and the Event it is on its own.
    fn event_of(&self, o: &Occurrence, uid: Option<Uid>, now: Timestamp) -> (Pointer, Event) {
        let reporting = format!("cosi-runtime/{}", o.controller);
        let (regarding, resource_type, namespace) = match &o.regarding {
            Some(p) => (
                ObjectReference::to(p, uid.map(|u| u.to_string())),
                p.resource_type(),
                p.namespace(),
            ),
            None => (
                ObjectReference::controller(&o.controller),
                "Controller",
                self.settings.namespace.as_str(),
            ),
        };
        let key =
            EventKey::of(&regarding, resource_type, &o.reason, o.event_type, &reporting, o.action);
        let pointer = Pointer::new(namespace, Event::TYPE, key.id());
        let event = Event {
            event_time: now.into(),
            series: None,
            reporting_controller: reporting,
            reporting_instance: self.settings.reporting_instance.clone(),
            action: o.action.to_owned(),
            reason: o.reason.clone(),
            regarding,
            related: None,
            note: bounded_note(o.note.clone()),
            event_type: o.event_type,
            deprecated_count: 1,
            deprecated_first_timestamp: now.into(),
            deprecated_last_timestamp: now.into(),
        };
        (pointer, event)
    }

    /// Does `actions` in order (the mailbox waits meanwhile), then drops
    /// `busy`, answers `done` and re-arms the timer.
    fn apply(
        &mut self,
        actions: Vec<Action>,
        busy: ActivityGuard,
        done: Option<oneshot::Sender<()>>,
        ctx: &mut Context<Self>,
    ) {
        let finish = move |act: &mut Self, ctx: &mut Context<Self>| {
            act.rearm(ctx);
            drop(busy);
            if let Some(done) = done {
                let _ = done.send(());
            }
        };
        if actions.is_empty() {
            finish(self, ctx);
            return;
        }
        let writes = write_all(self.state.clone(), actions);
        ctx.wait(writes.into_actor(self).map(move |(), act, ctx| finish(act, ctx)));
    }

    /// Keeps one timer armed for the engine's next due time.
    fn rearm(&mut self, ctx: &mut Context<Self>) {
        let next = self.engine.next_due();
        if self.wake.as_ref().map(|(at, _)| *at) == next {
            return;
        }
        if let Some((_, handle)) = self.wake.take() {
            ctx.cancel_future(handle);
        }
        let Some(at) = next else {
            return;
        };
        let delay = at.as_unix_nanos().saturating_sub(self.clock.now().as_unix_nanos());
        let handle = ctx.run_later(Duration::from_nanos(delay), |act, ctx| {
            act.wake = None;
            let actions = act.engine.due(act.clock.now());
            let busy = act.state.activity().guard();
            act.apply(actions, busy, None, ctx);
        });
        self.wake = Some((at, handle));
    }
}

/// Does each action through `state`, as the user. Events are best effort:
/// a write that fails is logged (at DEBUG) and the rest go on.
async fn write_all(state: State, actions: Vec<Action>) {
    for action in actions {
        match action {
            Action::Write(write) => {
                let ptr = TypedPointer::<Event>::new(write.pointer.namespace(), write.pointer.id());
                let at = write.pointer.clone();
                let fresh = Event { deprecated_count: 0, ..write.latest.clone() };
                let empty = move || Resource::at(at.clone(), fresh.clone());
                let about = write.pointer.clone();
                let add = move |r: &mut Resource<Event>| merge(r.spec_mut(), &write);
                if let Err(e) =
                    state.modify_with(&ptr, empty, add, None, ExpectedPhase::Running).await
                {
                    tracing::debug!("events: writing {about} failed: {e}");
                }
            }
            Action::Delete(ptr) => match state.destroy(&ptr, None).await {
                Err(e) if !e.is_not_found() => {
                    tracing::debug!("events: deleting {ptr} failed: {e}")
                }
                _ => {}
            },
        }
    }
}

impl Actor for EventWriter {
    type Context = Context<Self>;
}

impl Handler<ToWriter> for EventWriter {
    type Result = ();

    fn handle(&mut self, msg: ToWriter, ctx: &mut Context<Self>) {
        match msg {
            ToWriter::Record(occurrence, busy) => {
                let state = self.state.clone();
                let regarding = occurrence.regarding.clone();
                let uid = async move {
                    let ptr = regarding?;
                    state.get(&ptr).await.ok().and_then(|r| r.metadata().uid())
                };
                ctx.wait(uid.into_actor(self).map(move |uid, act, ctx| {
                    let now = act.clock.now();
                    let (pointer, event) = act.event_of(&occurrence, uid, now);
                    let actions = act.engine.record(pointer, event, now);
                    act.apply(actions, busy, None, ctx);
                }));
            }
            ToWriter::Flush(done) => {
                let actions = self.engine.flush_all(self.clock.now());
                let busy = self.state.activity().guard();
                self.apply(actions, busy, Some(done), ctx);
            }
        }
    }
}
