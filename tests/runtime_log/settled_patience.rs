//! `runtime.settled()` has no bound, but it is not silent: once its patience
//! passes with no reconcile ending, it logs once, at WARN, what is still
//! busy, and waits on. Time is tokio's paused clock.

use std::sync::Mutex;
use std::time::Duration;

use cosi_runtime::controller::{Controller, Input, Output, ReconcileContext, ReconcileResult};
use cosi_runtime::prelude::*;

static LINES: Mutex<Vec<(log::Level, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        LINES.lock().unwrap().push((record.level(), record.args().to_string()));
    }
    fn flush(&self) {}
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Int(i64);
impl Spec for Int {
    const TYPE: &'static str = "Ints.test.cosi.dev";
}

/// Its reconcile never ends (it waits on something that never comes).
struct Stuck;

impl Controller for Stuck {
    fn name(&self) -> &str {
        "Stuck"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<Int>("default")]
    }
    fn outputs(&self) -> Vec<Output> {
        Vec::new()
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        std::future::pending::<()>().await;
        Ok(())
    }
}

fn warnings() -> Vec<String> {
    let lines = LINES.lock().unwrap();
    lines
        .iter()
        .filter(|(level, text)| *level == log::Level::Warn && text.contains("runtime.settled()"))
        .map(|(_, text)| text.clone())
        .collect()
}

#[actix::test]
async fn an_unbounded_settle_with_no_progress_says_once_what_is_busy_and_waits_on() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Warn);
    tokio::time::pause();
    let runtime = Runtime::builder().settled_patience(Duration::from_secs(5)).start();
    runtime.register(|| Stuck).await.unwrap();

    let waited = tokio::time::timeout(Duration::from_secs(60), runtime.settled()).await;
    assert!(waited.is_err(), "a reconcile that never ends never settles");
    let warned = warnings();
    assert_eq!(warned.len(), 1, "said once, not every patience: {warned:#?}");
    assert!(warned[0].contains("no reconcile ended in the last 5s"), "{}", warned[0]);
    assert!(warned[0].contains("units of work in progress"), "{}", warned[0]);
    assert!(warned[0].contains("Stuck: running, 0 queued, 1 reconciling now"), "{}", warned[0]);
}
