//! Without a tracing subscriber, `log` users (env_logger) still get every
//! line: warnings name the controller and the resource.

use std::sync::Mutex;
use std::time::Duration;

use cosi_runtime::controller::{Controller, Input, Output, ReconcileContext, ReconcileResult};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;

static LINES: Mutex<Vec<(log::Level, String, String)>> = Mutex::new(Vec::new());

struct Capture;

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        let line = (record.level(), record.target().to_owned(), record.args().to_string());
        LINES.lock().unwrap().push(line);
    }
    fn flush(&self) {}
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Int(i64);
impl Spec for Int {
    const TYPE: &'static str = "Ints.test.cosi.dev";
}

/// Fails its first reconcile.
struct FailsOnce(bool);

impl Controller for FailsOnce {
    fn name(&self) -> &str {
        "FailsOnce"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<Int>("default")]
    }
    fn outputs(&self) -> Vec<Output> {
        Vec::new()
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        if !self.0 {
            self.0 = true;
            return Err("not yet".into());
        }
        Ok(())
    }
}

#[actix::test]
async fn log_users_keep_the_warning_and_the_per_reconcile_line() {
    log::set_logger(&Capture).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    tokio::time::pause();
    let runtime = Runtime::builder()
        .backoff(Backoff { initial: Duration::from_millis(10), jitter: 0.0, ..Backoff::default() })
        .start();
    runtime.register(|| FailsOnce(false)).await.unwrap();
    runtime.settled().await;
    let lines = LINES.lock().unwrap().clone();
    let warning = lines
        .iter()
        .find(|(level, _, text)| *level == log::Level::Warn && text.contains("reconcile failed"))
        .unwrap_or_else(|| panic!("no warning in {lines:#?}"));
    assert!(warning.2.contains("FailsOnce") && warning.2.contains("not yet"), "{warning:?}");
    // The reconcile span is an INFO line of its own target (and one more
    // with its result), which RUST_LOG=info,cosi_runtime::reconcile=warn turns off.
    assert!(
        lines.iter().any(|(level, target, text)| *level == log::Level::Info
            && target == "cosi_runtime::reconcile"
            && text.contains("FailsOnce")),
        "{lines:#?}"
    );
    // Every line of the reconcile target names the controller and the object.
    for (_, target, text) in lines.iter().filter(|(_, t, _)| t == "cosi_runtime::reconcile") {
        assert!(text.contains("FailsOnce") && text.contains("object.ref"), "{target}: {text}");
    }
    assert!(
        lines.iter().any(|(_, target, text)| target == "cosi_runtime::reconcile"
            && text.contains("result=success")),
        "{lines:#?}"
    );
    runtime.stop().await;
}
