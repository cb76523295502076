//! A controller that reaches past its declarations is told at once, in
//! words: an access its inputs and outputs do not allow is a bug in the
//! program, so the controller fails for good (no retries that would hide it),
//! `settled()` returns, `settled_within` fails naming the controller, and
//! `health()` names the declaration to add. Time is tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::{
    ControllerStatus, Outcome, QueueController, QueueSettings, ReconcileError,
};
use cosi_runtime::prelude::*;

/// Reads a kind it never declared (`StrSpec`), with `?` as a new user would.
struct ReadsUndeclared {
    runs: Arc<AtomicUsize>,
}

impl Controller for ReadsUndeclared {
    fn name(&self) -> &str {
        "ReadsUndeclared"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<SentenceSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        cx.list(&Kind::of::<StrSpec>(NS), &LabelQuery::all()).await?;
        Ok(())
    }
}

/// Writes a type it never declared as an output, one key at a time.
struct WritesUndeclared {
    runs: Arc<AtomicUsize>,
}

impl QueueController for WritesUndeclared {
    fn name(&self) -> &str {
        "WritesUndeclared"
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
        self.runs.fetch_add(1, Ordering::SeqCst);
        let out = Pointer::typed::<StrSpec>(NS, ptr.id());
        cx.modify(&out, |s: &mut Resource<StrSpec>| s.spec_mut().0 = "x".into()).await?;
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn a_plain_controller_reading_an_undeclared_kind_fails_at_once_and_names_the_input_to_declare()
 {
    tokio::time::pause();
    let runtime = Runtime::start();
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    runtime.register(move || ReadsUndeclared { runs: r.clone() }).await.unwrap();

    // No retry keeps the runtime busy: it settles, even an hour later, and
    // settling says the controller failed, and why.
    let failed = runtime.settled_within(Duration::from_secs(10)).await.unwrap_err();
    assert!(failed.settled, "{failed}");
    let text = failed.to_string();
    assert!(
        text.starts_with("the runtime settled, but controller ReadsUndeclared failed"),
        "{text}"
    );
    assert!(text.contains("may not list default/Strs.test.cosi.dev"), "{text}");
    runtime.settled().await;
    runtime.idle(Duration::from_secs(3600)).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a declaration error is never retried");

    let health = runtime.health().await;
    assert!(!health.is_healthy());
    let c = &health.controllers[0];
    assert_eq!(c.status, ControllerStatus::Failed);
    let error = c.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("may not list default/Strs.test.cosi.dev"), "{error}");
    assert!(error.contains(r#"declare Input::weak::<S>("default") in inputs()"#), "{error}");
    let metrics = runtime.metrics().await;
    assert_eq!((metrics[0].retries, metrics[0].terminal_errors), (0, 1));
}

#[actix::test]
async fn a_queue_controller_writing_an_undeclared_type_stops_every_key_and_names_the_output_to_declare()
 {
    tokio::time::pause();
    let runtime = Runtime::start();
    let state = runtime.state();
    for id in ["a", "b", "c"] {
        state.create(Resource::new(NS, id, IntSpec(1)), None).await.unwrap();
    }
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    runtime.register(move || WritesUndeclared { runs: r.clone() }).await.unwrap();

    let failed = runtime.settled_within(Duration::from_secs(10)).await.unwrap_err();
    assert_eq!(failed.failed.len(), 1, "{failed}");
    let text = failed.to_string();
    assert!(text.contains("controller WritesUndeclared failed"), "{text}");
    assert!(text.contains("may not modify default/Strs.test.cosi.dev/a"), "{text}");
    // A change after the failure runs nothing either.
    state.create(Resource::new(NS, "d", IntSpec(1)), None).await.unwrap();
    runtime.idle(Duration::from_secs(3600)).await.unwrap();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "the first denial stops the controller");

    let health = runtime.health().await;
    let c = &health.controllers[0];
    assert_eq!(c.status, ControllerStatus::Failed, "{c}");
    let error = c.last_error.as_deref().unwrap_or_default();
    assert!(error.contains("may not modify default/Strs.test.cosi.dev/a"), "{error}");
    assert!(error.contains("declare Output::exclusive::<S>()"), "{error}");
    assert!(error.contains("in QueueSettings::outputs"), "{error}");
}

/// Writes its own watched output with a counter: each write triggers it again.
struct Looping;

impl Controller for Looping {
    fn name(&self) -> &str {
        "Looping"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS), Input::weak::<SentenceSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<SentenceSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let out = Pointer::typed::<SentenceSpec>(NS, "count");
        cx.modify(&out, |s: &mut Resource<SentenceSpec>| s.spec_mut().0.push('.')).await?;
        Ok(())
    }
}

/// Writes its own watched output once: a function of its input.
struct Converging;

impl Controller for Converging {
    fn name(&self) -> &str {
        "Converging"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS), Input::weak::<SentenceSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<SentenceSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let ints = cx.list_typed::<IntSpec>(NS, &LabelQuery::all()).await?;
        let text = format!("{} ints", ints.len());
        let out = Pointer::typed::<SentenceSpec>(NS, "count");
        cx.modify(&out, move |s: &mut Resource<SentenceSpec>| s.spec_mut().0 = text.clone())
            .await?;
        Ok(())
    }
}

#[actix::test]
async fn a_controller_that_keeps_re_triggering_itself_is_reported_in_health() {
    let runtime = Runtime::start();
    runtime.register(|| Looping).await.unwrap();
    // It never settles; health tells why. Each health() is a round trip
    // through the supervisor, while the loop goes on.
    let mut looping = None;
    for _ in 0..100_000 {
        let health = runtime.health().await;
        if let Some(c) = health.controllers.iter().find(|c| c.is_looping()) {
            looping = Some(c.clone());
            break;
        }
        tokio::task::yield_now().await;
    }
    let c = looping.expect("the loop was reported");
    assert!(c.self_triggered >= cosi_runtime::controller::SELF_TRIGGER_LIMIT);
    assert!(c.to_string().contains("re-triggers itself"), "{c}");
    let report = runtime.settled_within(Duration::from_millis(200)).await.unwrap_err();
    assert!(report.to_string().contains("Looping"), "{report}");
}

#[actix::test]
async fn a_controller_that_writes_its_own_input_once_per_change_is_not_a_loop() {
    tokio::time::pause();
    let runtime = Runtime::start();
    runtime.register(|| Converging).await.unwrap();
    let state = runtime.state();
    for i in 0..5 {
        state.create(Resource::new(NS, format!("i{i}"), IntSpec(i)), None).await.unwrap();
        runtime.settled_within(Duration::from_secs(10)).await.unwrap();
    }
    let health = runtime.health().await;
    assert!(health.is_healthy(), "{health}");
    assert!(health.controllers[0].self_triggered <= 1, "{health}");
}
