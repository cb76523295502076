//! [`Recorder`]: what a controller (and the runtime, on its behalf) records
//! Events with; a cheap handle to the runtime's [`EventWriter`](super::actor::EventWriter).

use std::fmt;
use std::sync::Arc;

use actix::prelude::*;
use futures::channel::oneshot;

use super::event::EventType;
use crate::activity::{Activity, ActivityGuard};
use crate::resource::{Address, Pointer};

/// One occurrence, as a recorder hands it to the writer.
#[derive(Debug)]
pub(crate) struct Occurrence {
    /// The object it is about; `None`: the controller itself.
    pub(crate) regarding: Option<Pointer>,
    /// The controller that reports it.
    pub(crate) controller: Arc<str>,
    pub(crate) action: &'static str,
    pub(crate) reason: String,
    pub(crate) event_type: EventType,
    pub(crate) note: String,
}

/// What the [`EventWriter`](super::actor::EventWriter) is sent (always with
/// `do_send`: one way of sending to one recipient).
#[derive(Message, Debug)]
#[rtype(result = "()")]
pub(crate) enum ToWriter {
    /// Record an occurrence; the unit of activity holds `settled()` until
    /// it is counted, and written if it is written at once.
    Record(Box<Occurrence>, ActivityGuard),
    /// Write everything that waits, then answer (the runtime stops).
    Flush(oneshot::Sender<()>),
}

/// Where a runtime's recorders send occurrences (`None`: Events are off).
pub(crate) type EventSink = Option<Recipient<ToWriter>>;

struct Inner {
    to: Recipient<ToWriter>,
    activity: Activity,
    controller: Arc<str>,
}

/// Records Events on behalf of one controller: its `reportingController`
/// is `cosi-runtime/<controller name>`.
///
/// Recording never waits and never fails: the occurrence goes to the
/// runtime's writer, which de-duplicates, rate-limits and bounds them (see
/// [`events`](super)), and [`Runtime::settled`](crate::Runtime::settled)
/// waits until it is counted. With Events turned off
/// ([`RuntimeBuilder::without_events`](crate::RuntimeBuilder::without_events))
/// every call does nothing.
///
/// A reconcile gets one from its context ([`ReconcileContext::recorder`](crate::controller::ReconcileContext::recorder));
/// [`ReconcileContext::event`](crate::controller::ReconcileContext::event)
/// is the short form of [`event`](Self::event).
#[derive(Clone, Default)]
pub struct Recorder(Option<Arc<Inner>>);

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Some(inner) => write!(f, "Recorder({})", inner.controller),
            None => f.write_str("Recorder(off)"),
        }
    }
}

impl Recorder {
    /// The recorder of `controller` (off without a sink).
    pub(crate) fn new(sink: &EventSink, controller: Arc<str>, activity: &Activity) -> Self {
        Recorder(
            sink.as_ref().map(|to| {
                Arc::new(Inner { to: to.clone(), activity: activity.clone(), controller })
            }),
        )
    }

    /// Whether Events are recorded (off: every call does nothing).
    pub fn is_enabled(&self) -> bool {
        self.0.is_some()
    }

    /// Records an Event about the resource at `regarding`, in its namespace
    /// (action `Reconcile`). `reason` is one UpperCamelCase word; `note`
    /// says what happened (cut to 1 kB). A repeat (same object, reason,
    /// type) counts into the same Event.
    pub fn event<P: Address + ?Sized>(
        &self,
        event_type: EventType,
        reason: impl Into<String>,
        note: impl Into<String>,
        regarding: &P,
    ) {
        self.send(event_type, reason.into(), "Reconcile", note.into(), Some(regarding.pointer()));
    }

    /// Records an Event about the controller itself, in the namespace of
    /// controller Events ([`EventSettings::namespace`](super::EventSettings::namespace)).
    pub fn controller_event(
        &self,
        event_type: EventType,
        reason: impl Into<String>,
        note: impl Into<String>,
    ) {
        self.send(event_type, reason.into(), "Reconcile", note.into(), None);
    }

    /// What the runtime records for the controller: a `Warning` or a
    /// `Normal` with its own action.
    pub(crate) fn runtime(
        &self,
        event_type: EventType,
        reason: &'static str,
        action: &'static str,
        note: String,
        regarding: Option<&Pointer>,
    ) {
        self.send(event_type, reason.to_owned(), action, note, regarding);
    }

    fn send(
        &self,
        event_type: EventType,
        reason: String,
        action: &'static str,
        note: String,
        regarding: Option<&Pointer>,
    ) {
        let Some(inner) = &self.0 else {
            return;
        };
        let occurrence = Occurrence {
            regarding: regarding.cloned(),
            controller: inner.controller.clone(),
            action,
            reason,
            event_type,
            note,
        };
        inner.to.do_send(ToWriter::Record(Box::new(occurrence), inner.activity.guard()));
    }
}
