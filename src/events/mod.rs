//! Events: what happened to an object or a controller, recorded in the
//! state as Kubernetes `events.k8s.io/v1` Events.
//!
//! # Map
//! - [`Event`] (`event.rs`): the [`Spec`](crate::resource::Spec) of type
//!   `Events.events.k8s.io`, whose JSON is the body of a Kubernetes Event
//!   ([`EventType`], [`EventSeries`], [`ObjectReference`]);
//!   [`MicroTime`] and [`Time`] (`time.rs`) are its timestamps.
//! - [`Recorder`] (`recorder.rs`): what a controller records with
//!   (`cx.event(..)`, `cx.recorder()`); the runtime records through the same.
//! - [`EventSettings`] (`settings.rs`): the namespace of controller Events,
//!   the interval, the bound per namespace, the TTL.
//! - `key.rs`: an Event's id, the same for every repeat.
//! - `engine.rs`: the pure rules (de-duplication, coalescing, bounds, TTL),
//!   the clock passed in, tested on their own.
//! - `actor.rs`: the writer actor, a thin shell that does what the engine says.
//!
//! # What the runtime records
//! | reason | type | about | when |
//! |---|---|---|---|
//! | `ReconcileError` | Warning | the object (queue controller) or the controller | a reconcile returned an error |
//! | `TerminalError` | Warning | the object or the controller | a reconcile returned a [`TerminalError`](crate::controller::TerminalError) |
//! | `Panic` | Warning | the object or the controller | a reconcile (or the factory) panicked |
//! | `Restarted` | Normal | the controller | a fresh instance replaced one that panicked |
//! | `AccessDenied` | Warning | the object or the controller | a reconcile touched an undeclared input or output |
//! | `Failed` | Warning | the controller | the controller is marked failed for good |
//!
//! Controllers record their own with their context:
//!
//! ```
//! use cosi_runtime::prelude::*;
//! use cosi_runtime::events::{Event, EventType};
//! # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
//! # #[spec(type = "Links.net.cosi.dev")]
//! # struct Link;
//! struct Linker;
//! impl QueueController for Linker {
//!     fn name(&self) -> &str { "Linker" }
//!     fn settings(&self) -> QueueSettings {
//!         QueueSettings { inputs: vec![Input::primary::<Link>("net")], outputs: vec![], concurrency: 1 }
//!     }
//!     async fn reconcile(&self, cx: &ReconcileContext, ptr: &Pointer) -> Result<Outcome, ReconcileError> {
//!         cx.event(EventType::Normal, "Configured", format!("{} is up", ptr.id()), ptr);
//!         Ok(Outcome::Done)
//!     }
//! }
//!
//! # actix::System::new().block_on(async {
//! let runtime = Runtime::start();
//! runtime.register(|| Linker).await?;
//! let user = runtime.state().client();
//! user.create(Resource::new("net", "eth0", Link)).await?;
//! runtime.settled().await;
//! let events = user.list_typed::<Event>("net", &LabelQuery::all()).await?;
//! assert_eq!(events[0].spec().reason, "Configured");
//! assert_eq!(events[0].spec().regarding.kind, "Link");
//! assert_eq!(events[0].spec().reporting_controller, "cosi-runtime/Linker");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # }).unwrap();
//! ```
//!
//! # Where Events go
//! - An Event about an object is stored in the object's namespace; one
//!   about a controller in [`EventSettings::namespace`] (`default`), with
//!   `regarding` `{kind: Controller, name: <controller>}`. Each is an
//!   ordinary resource of type `Events.events.k8s.io`, owned by no
//!   controller (a user resource: anyone may delete it).
//! - Its id is the regarded name, a dot and 16 hex digits of a stable hash
//!   of the regarded object (namespace, type, name, uid), the reason, the
//!   type, the reporting controller and the action. A repeat updates the
//!   same Event, as client-go's recorder aggregates: `series.count` and
//!   `deprecatedCount` grow, `series.lastObservedTime` and
//!   `deprecatedLastTimestamp` move, `note` becomes the latest message.
//!
//! # Guarantees
//! - Rate limited, nothing lost in the count: the first occurrence of an
//!   Event is written at once; repeats within [`EventSettings::interval`]
//!   are counted in memory and written together when it ends (or when the
//!   runtime [stops](crate::Runtime::stop)).
//! - Bounded: at most [`EventSettings::max_per_namespace`] Events per
//!   namespace (the one seen least recently is deleted), each kept for
//!   [`EventSettings::ttl`] after it was last seen.
//! - [`Runtime::settled`](crate::Runtime::settled) waits until each
//!   occurrence is counted, and a first occurrence written. A repeat that
//!   waits for its interval holds neither `settled()` nor `idle()`: under a
//!   paused clock, [`Harness::advance`](crate::testing::Harness::advance)
//!   past the interval writes it.
//! - Events never show in a [`Harness`](crate::testing::Harness)'s log of
//!   the controller's writes, and are not access-checked: a controller may
//!   record about any object.
//!
//! # Caveats
//! - The bound and the TTL apply to the Events this process wrote since it
//!   started: Events left by an earlier run (in a durable namespace) or by
//!   another process are counted into when they repeat, but not deleted.
//! - Recording is on by default; [`RuntimeBuilder::events`](crate::RuntimeBuilder::events)
//!   configures it and [`RuntimeBuilder::without_events`](crate::RuntimeBuilder::without_events)
//!   turns it off.
//!
//! See docs/ARCHITECTURE.md, 'Events'.

// From the bottom up: the Event and its times, its key, the pure engine,
// the settings; the recorder handle; the writer actor.
pub(crate) mod actor;
pub(crate) mod engine;
mod event;
mod key;
mod recorder;
mod settings;
mod time;

pub use event::{Event, EventSeries, EventType, ObjectReference, kind_and_group};
pub use recorder::Recorder;
pub(crate) use recorder::{EventSink, ToWriter};
pub use settings::{
    DEFAULT_EVENT_INTERVAL, DEFAULT_EVENT_TTL, DEFAULT_MAX_EVENTS_PER_NAMESPACE, EventSettings,
};
pub use time::{MicroTime, Time};
