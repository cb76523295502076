//! Holding inputs: an input that is gone or tearing down is a normal outcome of
//! `cx.add_finalizer` (it answers `false`), not an error for the controller to
//! retry; and a chain whose inputs churn keeps converging without errors.

use std::sync::{Arc, Mutex};

use crate::common::{IntSpec, NS, StrSpec, controllers};
use cosi_runtime::prelude::*;

type Answers = Arc<Mutex<Vec<(String, Result<bool, Error>)>>>;

/// On each reconcile, tries to hold every id in `ids` and records the answers.
struct Holder {
    ids: Vec<&'static str>,
    answers: Answers,
}

impl Controller for Holder {
    fn name(&self) -> &str {
        "Holder"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::strong::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<StrSpec>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for id in &self.ids {
            let answer = cx.add_finalizer(&Pointer::typed::<IntSpec>(NS, *id)).await;
            self.answers.lock().unwrap().push(((*id).to_owned(), answer));
        }
        Ok(())
    }
}

#[actix::test]
async fn holding_an_input_that_is_gone_or_tearing_down_answers_false_and_adds_nothing() {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new(NS, "running", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new(NS, "leaving", IntSpec(2)), None).await.unwrap();
    state.teardown(&Pointer::typed::<IntSpec>(NS, "leaving"), None).await.unwrap();
    let answers = Arc::new(Mutex::new(Vec::new()));
    let a = answers.clone();
    runtime
        .register(move || Holder { ids: vec!["running", "leaving", "gone"], answers: a.clone() })
        .await
        .unwrap();
    runtime.settled().await;
    let answers = answers.lock().unwrap().clone();
    let first: Vec<(String, Result<bool, Error>)> = answers.into_iter().take(3).collect();
    assert_eq!(
        first,
        [("running".into(), Ok(true)), ("leaving".into(), Ok(false)), ("gone".into(), Ok(false))]
    );
    let leaving = state.get(&Pointer::typed::<IntSpec>(NS, "leaving")).await.unwrap();
    assert!(leaving.metadata().finalizers().is_empty(), "nothing added to a tearing-down input");
    let running = state.get(&Pointer::typed::<IntSpec>(NS, "running")).await.unwrap();
    assert!(running.metadata().finalizers().contains("Holder"));
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[0].errors, 0, "no error to retry: {metrics:?}");
}

#[actix::test]
async fn a_chain_whose_inputs_are_created_and_destroyed_rapidly_converges_without_errors() {
    let runtime = Runtime::start();
    runtime.register(controllers::int_to_str).await.unwrap();
    runtime.register(controllers::str_to_sentence).await.unwrap();
    let state = runtime.state();
    // Create and destroy the same ids while the chain runs: a reconcile often
    // lists an input that is destroyed before it can hold it.
    for round in 0..50 {
        for i in 0..10 {
            let id = format!("n{i}");
            let ptr = Pointer::typed::<IntSpec>(NS, &id);
            if state.create(Resource::new(NS, id, IntSpec(round)), None).await.is_err() {
                continue; // still tearing down from an earlier round
            }
            if round % 2 == 0 {
                continue; // every other round, let it live a while
            }
            match state.destroy(&ptr, None).await {
                Err(e) if e.is_pending_finalizers() => {
                    let s = state.clone();
                    actix::spawn(async move {
                        let _ = s.teardown_and_destroy(&ptr, None).await;
                    });
                }
                _ => {}
            }
        }
        tokio::task::yield_now().await;
    }
    runtime.settled().await;
    let ints = state.list(&Kind::of::<IntSpec>(NS), &LabelQuery::all()).await.unwrap();
    let strs = state.list(&Kind::of::<StrSpec>(NS), &LabelQuery::all()).await.unwrap();
    let ids = |v: &[AnyResource]| v.iter().map(|r| r.id().to_owned()).collect::<Vec<_>>();
    assert_eq!(ids(&strs), ids(&ints), "every live input has its output, nothing else");
    for m in runtime.metrics().await {
        assert_eq!(m.errors, 0, "{}: churn is not an error: {m:?}", m.controller);
    }
}
