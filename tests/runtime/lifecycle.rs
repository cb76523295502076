//! Trigger rules, dynamic inputs, stop, metrics and the dependency graph.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::controllers::{Declared, int_to_str, str_to_sentence};
use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::controller::ControllerStatus;
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::EdgeKind;
use tokio::sync::watch;

/// Counts reconciles; its inputs are given.
struct Counting {
    inputs: Vec<Input>,
    reconciles: Arc<AtomicUsize>,
}

impl Controller for Counting {
    fn name(&self) -> &str {
        "Counting"
    }
    fn inputs(&self) -> Vec<Input> {
        self.inputs.clone()
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

async fn counting(runtime: &Runtime, inputs: Vec<Input>) -> Arc<AtomicUsize> {
    let reconciles = Arc::new(AtomicUsize::new(0));
    let r = reconciles.clone();
    runtime
        .register(move || Counting { inputs: inputs.clone(), reconciles: r.clone() })
        .await
        .unwrap();
    runtime.settled().await;
    reconciles
}

#[actix::test]
async fn a_destroy_ready_input_triggers_only_when_torn_down_with_no_finalizers() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let reconciles = counting(&runtime, vec![Input::destroy_ready::<IntSpec>(NS)]).await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 1, "the initial reconcile");

    let mut r = Resource::new(NS, "a", IntSpec(1));
    r.metadata_mut().finalizers_mut().add("held");
    state.create(r, None).await.unwrap();
    let p = Pointer::typed::<IntSpec>(NS, "a");
    state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    state.teardown(&p, None).await.unwrap();
    runtime.settled().await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 1, "running or held: no trigger");

    state.remove_finalizer(&p, "held").await.unwrap();
    runtime.settled().await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 2, "tearing down with no finalizers");
}

#[actix::test]
async fn an_id_specific_input_triggers_only_for_that_id() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let reconciles = counting(&runtime, vec![Input::weak::<IntSpec>(NS).with_id("watched")]).await;
    state.create(Resource::new(NS, "other", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 1);
    state.create(Resource::new(NS, "watched", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 2);
}

#[actix::test]
async fn update_inputs_changes_what_triggers_and_what_may_be_read() {
    /// Starts with no inputs; its first reconcile asks for the integers.
    struct Grows {
        reconciles: Arc<AtomicUsize>,
    }
    impl Controller for Grows {
        fn name(&self) -> &str {
            "Grows"
        }
        fn inputs(&self) -> Vec<Input> {
            vec![]
        }
        fn outputs(&self) -> Vec<Output> {
            vec![]
        }
        async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
            let n = self.reconciles.fetch_add(1, Ordering::SeqCst);
            let ints = Kind::of::<IntSpec>(NS);
            if n == 0 {
                assert!(cx.list(&ints, &LabelQuery::all()).await.unwrap_err().is_access_denied());
                let twice = vec![Input::weak::<IntSpec>(NS), Input::strong::<IntSpec>(NS)];
                assert!(cx.update_inputs(twice).is_err(), "duplicate inputs are refused");
                cx.update_inputs(vec![Input::weak::<IntSpec>(NS)])?;
                // Allowed at once.
                cx.list(&ints, &LabelQuery::all()).await?;
            }
            Ok(())
        }
    }
    let runtime = Runtime::start();
    let reconciles = Arc::new(AtomicUsize::new(0));
    let r = reconciles.clone();
    runtime.register(move || Grows { reconciles: r.clone() }).await.unwrap();
    runtime.settled().await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 2, "one more reconcile after new inputs");
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 3, "the new input triggers");
    let graph = runtime.graph().await;
    assert!(graph.edges().iter().any(|e| e.controller == "Grows" && e.kind == EdgeKind::InputWeak));
}

#[actix::test]
async fn stop_lets_a_running_reconcile_finish_then_stops_the_controller() {
    struct Gated(watch::Receiver<bool>, Arc<AtomicUsize>);
    impl Controller for Gated {
        fn name(&self) -> &str {
            "Gated"
        }
        fn inputs(&self) -> Vec<Input> {
            vec![Input::weak::<IntSpec>(NS)]
        }
        fn outputs(&self) -> Vec<Output> {
            vec![]
        }
        async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
            self.0.wait_for(|open| *open).await?;
            self.1.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }
    let runtime = Runtime::start();
    let (open, gate) = watch::channel(false);
    let done = Arc::new(AtomicUsize::new(0));
    let d = done.clone();
    runtime.register(move || Gated(gate.clone(), d.clone())).await.unwrap();
    let stopping = {
        let runtime = runtime.clone();
        actix::spawn(async move { runtime.stop().await })
    };
    open.send_replace(true);
    stopping.await.unwrap();
    assert_eq!(done.load(Ordering::SeqCst), 1, "the running reconcile finished");
    assert_eq!(runtime.metrics().await[0].status, ControllerStatus::Stopped);
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(done.load(Ordering::SeqCst), 1, "a stopped controller does not reconcile");
    assert_eq!(runtime.stopped().await, cosi_runtime::supervisor::StopReason::Requested);
}

#[actix::test]
async fn metrics_count_wakeups_reconciles_reads_and_writes() {
    let runtime = Runtime::start();
    runtime.register(int_to_str).await.unwrap();
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    let m = &runtime.metrics().await[0];
    assert_eq!(m.controller, "IntToStr");
    assert_eq!(m.status, ControllerStatus::Running);
    assert!(m.reconciles >= 2, "{m:?}");
    assert!(m.wakeups >= 1, "{m:?}");
    assert!(m.reads >= 2, "{m:?}");
    assert!(m.writes >= 2, "finalizer + modify: {m:?}");
    assert_eq!((m.errors, m.panics, m.restarts), (0, 0, 0));
}

#[actix::test]
async fn the_dependency_graph_exports_to_dot_and_mermaid() {
    let runtime = Runtime::start();
    runtime.register(int_to_str).await.unwrap();
    runtime.register(str_to_sentence).await.unwrap();
    runtime
        .register(|| {
            Declared::new("Sharer")
                .input(Input::weak::<StrSpec>(NS))
                .output(Output::shared::<IntSpec>())
        })
        .await
        .unwrap();
    let graph = runtime.graph().await;
    assert_eq!(graph.controllers(), ["IntToStr", "Sharer", "StrToSentence"]);
    let dot = graph.to_dot();
    for needle in [
        r#""r:Ints.test.cosi.dev" -> "c:IntToStr" [label="strong default", style=bold]"#,
        r#""c:IntToStr" -> "r:Strs.test.cosi.dev" [label="exclusive"]"#,
        r#""r:Strs.test.cosi.dev" -> "c:IntToStr" [label="destroy-ready default", style=dashed]"#,
        r#""r:Strs.test.cosi.dev" -> "c:Sharer" [label="weak default"]"#,
        r#""c:Sharer" -> "r:Ints.test.cosi.dev" [label="shared", style=dotted]"#,
    ] {
        assert!(dot.contains(needle), "missing {needle} in\n{dot}");
    }
    let mermaid = graph.to_mermaid();
    assert!(mermaid.contains(r#"c0["IntToStr"]"#), "{mermaid}");
    assert!(mermaid.contains("==>|strong default|"), "{mermaid}");
    assert!(mermaid.contains("-.->|shared|"), "{mermaid}");
}

#[test]
fn starting_outside_an_actix_system_says_what_to_write_instead() {
    // What #[tokio::main] gives: a tokio runtime, but no actix System.
    let tokio = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let panic = std::panic::catch_unwind(|| {
        tokio.block_on(async {
            let _ = cosi_runtime::Runtime::start();
        })
    })
    .unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_default();
    assert!(message.contains("inside a running actix System"), "{message}");
    assert!(message.contains("#[actix::main]"), "{message}");
    assert!(message.contains("instead of #[tokio::main]"), "{message}");
}

#[actix::test]
async fn a_stopped_runtime_releases_the_state_file_it_opened_so_this_process_can_reopen_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.redb");
    let first = Runtime::builder().open_durable(&path, ["config"]).await.unwrap();
    let user = first.state().client();
    user.create(Resource::new("config", "a", IntSpec(7))).await.unwrap();
    first.stop().await;
    // Closing again (as programs written before did) is harmless.
    first.state().close().await.unwrap();

    let second = Runtime::builder().open_durable(&path, ["config"]).await.unwrap();
    let a = second.state().client().get(&Pointer::typed::<IntSpec>("config", "a")).await.unwrap();
    assert_eq!(a.spec().0, 7, "the write of the first runtime was kept");
    second.stop().await;
}

#[actix::test]
async fn a_file_still_open_in_this_process_is_refused_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.redb");
    let open = State::builder().durable(&path, ["config"]).open().await.unwrap();
    let err = State::builder().durable(&path, ["config"]).open().await.unwrap_err();
    let message = err.to_string();
    assert!(message.contains("locked"), "{message}");
    assert!(message.contains("call state.close()"), "{message}");
    open.close().await.unwrap();
}
