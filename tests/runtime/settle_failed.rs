//! Settling with a failed controller is an error that names it: a
//! controller that failed for good holds no work, so the runtime settles,
//! and `settled_within` (and a harness's `settle`) says what failed and why
//! instead of passing. `settled()` resolves as before.

use std::time::Duration;

use crate::common::{IntSpec, NS};
use cosi_runtime::controller::{ControllerStatus, TerminalError};
use cosi_runtime::events::{Event, EventType};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::Harness;

/// Refuses its input for good: a terminal error.
struct Parser;

impl Controller for Parser {
    fn name(&self) -> &str {
        "Parser"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        Err(TerminalError::new("the config asks for an MTU of 12").into())
    }
}

#[actix::test]
async fn settled_within_fails_naming_a_failed_controller_and_its_last_error() {
    tokio::time::pause();
    let runtime = Runtime::builder().arbiters(1).start();
    runtime.register(|| Parser).await.unwrap();

    let failed = runtime.settled_within(Duration::from_secs(10)).await.unwrap_err();
    assert!(failed.settled, "it settled: {failed}");
    assert_eq!(failed.units, 0);
    assert_eq!(failed.failed.len(), 1);
    assert_eq!(failed.failed[0].status, ControllerStatus::Failed);
    assert_eq!(
        failed.to_string(),
        "the runtime settled, but controller Parser failed:\n  Parser: failed, 1 failures in a row, \
         last error: terminal: the config asks for an MTU of 12"
    );
    // `settled()` returns nothing and resolves as before.
    runtime.settled().await;

    // The failure is recorded as Events about the controller too.
    let events = runtime.state().list_typed::<Event>("default", &LabelQuery::all()).await.unwrap();
    let mut reasons: Vec<(&str, EventType)> =
        events.iter().map(|e| (e.spec().reason.as_str(), e.spec().event_type)).collect();
    reasons.sort();
    assert_eq!(reasons, [("Failed", EventType::Warning), ("TerminalError", EventType::Warning)]);
}

#[actix::test]
#[should_panic(
    expected = "harness: the runtime settled, but controller Parser failed:\n  Parser: failed, 1 failures in a row, last error: terminal: the config asks for an MTU of 12"
)]
async fn a_harness_settle_fails_the_test_when_the_controller_failed() {
    tokio::time::pause();
    let h = Harness::new(|| Parser).await;
    h.settle().await;
}
