//! Events: the runtime records failures, panics, restarts and failed
//! controllers, controllers record their own; a repeat counts into one
//! Event; the bound and the TTL hold; off means none. Time is tokio's paused
//! clock (`Harness::advance`), never a sleep.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::events::{DEFAULT_EVENT_INTERVAL, Event, EventSettings, EventType};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::Harness;

/// Every Event in `namespace`.
async fn events(state: &State, namespace: &str) -> Vec<Event> {
    let listed = state.list_typed::<Event>(namespace, &LabelQuery::all()).await.unwrap();
    listed.into_iter().map(|r| r.spec().clone()).collect()
}

/// The Events in `namespace` by reason.
async fn by_reason(state: &State, namespace: &str) -> HashMap<String, Event> {
    events(state, namespace).await.into_iter().map(|e| (e.reason.clone(), e)).collect()
}

/// Fails the first `failures` reconciles of each key, then writes a sentence.
struct FailsAtFirst {
    failures: usize,
    attempts: Arc<Mutex<HashMap<String, usize>>>,
}

impl QueueController for FailsAtFirst {
    fn name(&self) -> &str {
        "FailsAtFirst"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![Output::exclusive::<SentenceSpec>()],
            concurrency: 1,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let attempt = {
            let mut attempts = self.attempts.lock().unwrap();
            let n = attempts.entry(ptr.id().to_owned()).or_default();
            *n += 1;
            *n
        };
        if attempt <= self.failures {
            return Err(format!("attempt {attempt} of {} failed", ptr.id()).into());
        }
        let out = Pointer::typed::<SentenceSpec>(NS, ptr.id());
        cx.modify(&out, |s: &mut Resource<SentenceSpec>| s.spec_mut().0 = "done".into()).await?;
        Ok(Outcome::Done)
    }
}

fn fails_at_first(failures: usize) -> impl Fn() -> FailsAtFirst + Send + 'static {
    let attempts = Arc::new(Mutex::new(HashMap::new()));
    move || FailsAtFirst { failures, attempts: attempts.clone() }
}

#[actix::test]
async fn a_failing_queue_controller_records_one_event_per_object_and_its_count_grows_over_retries()
{
    tokio::time::pause();
    let h = Harness::queue(fails_at_first(3)).await;
    let a = h.create(Resource::new(NS, "a", IntSpec(1))).await.unwrap();
    h.create(Resource::new(NS, "b", IntSpec(2))).await.unwrap();
    h.settle().await;

    // The first failure of each object is written at once; its repeats
    // (10 ms and 20 ms later) wait for the interval.
    let written = events(&h.state(), NS).await;
    assert_eq!(written.len(), 2, "one Event per object: {written:#?}");
    let first = written.iter().find(|e| e.regarding.name == "a").expect("an Event about a");
    assert_eq!(first.count(), 1);
    assert!(first.series.is_none(), "a first occurrence has no series");
    assert_eq!(first.reason, "ReconcileError");
    assert_eq!(first.event_type, EventType::Warning);
    assert_eq!(first.note, "attempt 1 of a failed");
    assert_eq!(first.action, "Reconcile");
    assert_eq!(first.reporting_controller, "cosi-runtime/FailsAtFirst");
    assert_eq!(first.regarding.kind, "Int");
    assert_eq!(first.regarding.api_version.as_deref(), Some("test.cosi.dev"));
    assert_eq!(first.regarding.namespace.as_deref(), Some(NS));
    let uid = a.metadata().uid().expect("a stored resource has a uid").to_string();
    assert_eq!(first.regarding.uid.as_deref(), Some(uid.as_str()));

    // Past the interval, the repeats are written with their count.
    h.advance(DEFAULT_EVENT_INTERVAL).await;
    let written = events(&h.state(), NS).await;
    assert_eq!(written.len(), 2, "a repeat updates the same Event: {written:#?}");
    for e in &written {
        let series = e.series.as_ref().expect("repeats make a series");
        assert_eq!((series.count, e.deprecated_count), (3, 3), "{e:#?}");
        assert!(series.last_observed_time > e.event_time, "{e:#?}");
        assert_eq!(e.note, format!("attempt 3 of {} failed", e.regarding.name));
        assert!(e.deprecated_last_timestamp >= e.deprecated_first_timestamp);
    }
    // Events are not the controller's writes.
    assert_eq!(
        h.write_log(),
        ["modify default/Sentences.test.cosi.dev/a", "modify default/Sentences.test.cosi.dev/b"]
    );
}

/// Panics at its first reconcile.
struct PanicsOnce {
    runs: Arc<AtomicUsize>,
}

impl Controller for PanicsOnce {
    fn name(&self) -> &str {
        "PanicsOnce"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        if self.runs.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("PanicsOnce panics on purpose");
        }
        Ok(())
    }
}

#[actix::test]
async fn a_panic_records_panic_and_then_restarted_about_the_controller() {
    tokio::time::pause();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let h = Harness::builder()
        .allow_panics()
        .start(move || PanicsOnce { runs: r.clone() })
        .await
        .unwrap();
    h.settle().await;
    assert_eq!(runs.load(Ordering::SeqCst), 2);
    let recorded = by_reason(&h.state(), "default").await;
    let panic = &recorded["Panic"];
    assert_eq!(panic.event_type, EventType::Warning);
    assert_eq!(panic.note, "PanicsOnce panics on purpose");
    assert_eq!(
        (panic.regarding.kind.as_str(), panic.regarding.name.as_str()),
        ("Controller", "PanicsOnce")
    );
    let restarted = &recorded["Restarted"];
    assert_eq!((restarted.event_type, restarted.action.as_str()), (EventType::Normal, "Restart"));
    assert_eq!(restarted.regarding.name, "PanicsOnce");
    assert_eq!(recorded.len(), 2, "{recorded:#?}");
}

/// Records an Event about each input, and one about itself.
struct Greeter;

impl Controller for Greeter {
    fn name(&self) -> &str {
        "Greeter"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>("inputs")]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for int in cx.list_typed::<IntSpec>("inputs", &LabelQuery::all()).await? {
            let note = format!("hello {}", int.spec().0);
            cx.event(EventType::Normal, "Greeted", note, int.pointer());
        }
        assert!(cx.recorder().is_enabled());
        cx.recorder().controller_event(EventType::Normal, "Swept", "every input greeted");
        Ok(())
    }
}

#[actix::test]
async fn a_controller_records_its_own_events_and_a_repeat_counts_into_the_same_one() {
    tokio::time::pause();
    let h = Harness::new(|| Greeter).await;
    let x = Pointer::typed::<IntSpec>("inputs", "x");
    h.create(Resource::new("inputs", "x", IntSpec(1))).await.unwrap();
    h.settle().await;
    let greeted = &by_reason(&h.state(), "inputs").await["Greeted"];
    assert_eq!((greeted.note.as_str(), greeted.count()), ("hello 1", 1));
    assert_eq!(greeted.reporting_controller, "cosi-runtime/Greeter");
    assert_eq!(greeted.regarding.name, "x");
    let swept = &by_reason(&h.state(), "default").await["Swept"];
    assert_eq!(swept.regarding.kind, "Controller");

    // Another reconcile within the interval: counted, written when it ends.
    h.modify(&x, |i| i.spec_mut().0 = 2).await.unwrap();
    h.settle().await;
    assert_eq!(by_reason(&h.state(), "inputs").await["Greeted"].count(), 1);
    h.advance(DEFAULT_EVENT_INTERVAL).await;
    let greeted = &by_reason(&h.state(), "inputs").await["Greeted"];
    assert_eq!((greeted.note.as_str(), greeted.count()), ("hello 2", 2));
    assert_eq!(events(&h.state(), "inputs").await.len(), 1, "one Event, counted twice");
    assert!(h.write_log().is_empty(), "{:?}", h.write_log());
}

/// Records one Event about each key.
struct Announcer;

impl QueueController for Announcer {
    fn name(&self) -> &str {
        "Announcer"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![],
            concurrency: 1,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        cx.event(EventType::Normal, "Seen", format!("saw {}", ptr.id()), ptr);
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn at_most_the_bound_is_kept_per_namespace_and_none_past_the_ttl() {
    tokio::time::pause();
    let settings = EventSettings {
        max_per_namespace: 3,
        ttl: Some(Duration::from_secs(120)),
        ..EventSettings::default()
    };
    let runtime = Runtime::builder().arbiters(1).events(settings).start();
    runtime.register(|| Announcer).await.unwrap();
    let state = runtime.state();
    for (i, id) in ["a", "b", "c", "d", "e"].into_iter().enumerate() {
        state.create(Resource::new(NS, id, IntSpec(i as i64)), None).await.unwrap();
        runtime.settled_within(Duration::from_secs(10)).await.unwrap();
        tokio::time::sleep(Duration::from_secs(1)).await; // each is seen later than the one before
    }
    let mut kept: Vec<String> =
        events(&state, NS).await.into_iter().map(|e| e.regarding.name).collect();
    kept.sort();
    assert_eq!(kept, ["c", "d", "e"], "the Events seen least recently went");

    // Past the TTL, nothing is left.
    tokio::time::sleep(Duration::from_secs(121)).await;
    runtime.settled_within(Duration::from_secs(10)).await.unwrap();
    assert!(events(&state, NS).await.is_empty(), "{:#?}", events(&state, NS).await);
}

#[actix::test]
async fn a_runtime_without_events_records_none() {
    tokio::time::pause();
    let runtime = Runtime::builder().arbiters(1).without_events().start();
    runtime.register(fails_at_first(2)).await.unwrap();
    runtime.register(|| Announcer).await.unwrap(); // records its own: nothing either
    let state = runtime.state();
    state.create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled_within(Duration::from_secs(10)).await.unwrap();
    tokio::time::sleep(DEFAULT_EVENT_INTERVAL * 2).await;
    runtime.settled_within(Duration::from_secs(10)).await.unwrap();
    let metrics = runtime.metrics().await;
    assert_eq!(
        (metrics[0].errors, metrics[1].reconciles),
        (2, 1),
        "it failed twice, and announced"
    );
    assert!(events(&state, NS).await.is_empty());
    assert!(events(&state, "default").await.is_empty());
}

/// Writes a type it never declared.
struct WritesUndeclared;

impl QueueController for WritesUndeclared {
    fn name(&self) -> &str {
        "WritesUndeclared"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![],
            concurrency: 1,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let out = Pointer::typed::<StrSpec>(NS, ptr.id());
        cx.modify(&out, |s: &mut Resource<StrSpec>| s.spec_mut().0 = "x".into()).await?;
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn an_access_error_records_access_denied_about_the_object_and_failed_about_the_controller() {
    tokio::time::pause();
    let runtime = Runtime::builder().arbiters(1).start();
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.register(|| WritesUndeclared).await.unwrap();
    let failed = runtime.settled_within(Duration::from_secs(10)).await.unwrap_err();
    assert!(failed.to_string().contains("controller WritesUndeclared failed"), "{failed}");
    let recorded = by_reason(&runtime.state(), NS).await;
    let denied = &recorded["AccessDenied"];
    assert_eq!((denied.regarding.kind.as_str(), denied.regarding.name.as_str()), ("Int", "a"));
    assert!(denied.note.contains("may not modify default/Strs.test.cosi.dev/a"), "{}", denied.note);
    let gave_up = &recorded["Failed"];
    assert_eq!(
        (gave_up.regarding.kind.as_str(), gave_up.action.as_str()),
        ("Controller", "Supervise")
    );
    assert!(gave_up.note.contains("a bug in the program"), "{}", gave_up.note);
}
