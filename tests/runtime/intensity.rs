//! The restart-intensity limit and its two policies.

use std::time::Duration;

use crate::common::controllers::int_to_str;
use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::{ControllerStatus, TerminalError};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::{Backoff, Intensity, OnExceeded, RegistrationError, StopReason};

struct AlwaysFails;

impl Controller for AlwaysFails {
    fn name(&self) -> &str {
        "AlwaysFails"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<SentenceSpec>()]
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        Err("the disk is gone".into())
    }
}

fn runtime(on_exceeded: OnExceeded) -> Runtime {
    Runtime::builder()
        .backoff(Backoff { initial: Duration::from_secs(1), jitter: 0.0, ..Backoff::default() })
        .restart_intensity(
            Intensity { max_restarts: 2, within: Duration::from_secs(60) },
            on_exceeded,
        )
        .start()
}

#[actix::test]
async fn past_the_limit_the_controller_is_marked_failed_and_the_rest_goes_on() {
    tokio::time::pause();
    let runtime = runtime(OnExceeded::MarkFailed);
    runtime.register(|| AlwaysFails).await.unwrap();
    runtime.register(int_to_str).await.unwrap();
    runtime.settled().await;

    let metrics = runtime.metrics().await;
    let failed = &metrics[0];
    assert_eq!(failed.status, ControllerStatus::Failed);
    assert_eq!(
        (failed.errors, failed.retries, failed.restarts),
        (3, 2, 0),
        "two retries allowed, the third failure gives up"
    );

    // Nobody else noticed.
    runtime.state().create(Resource::new(NS, "a", IntSpec(5)), None).await.unwrap();
    runtime.settled().await;
    let s =
        runtime.state().get_typed::<StrSpec>(&Pointer::typed::<StrSpec>(NS, "a")).await.unwrap();
    assert_eq!(s.spec().0, "5");
    assert_eq!(runtime.stop_reason(), None);
    assert_eq!(runtime.metrics().await[0].errors, 3, "a failed controller is not retried");
}

#[actix::test]
async fn past_the_limit_the_runtime_stops_under_the_stop_policy() {
    tokio::time::pause();
    let runtime = runtime(OnExceeded::StopRuntime);
    runtime.register(int_to_str).await.unwrap();
    runtime.register(|| AlwaysFails).await.unwrap();
    let reason = runtime.stopped().await;
    assert_eq!(
        reason,
        StopReason::ControllerFailed {
            controller: "AlwaysFails".into(),
            error: "the disk is gone".into()
        }
    );
    runtime.settled().await;
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[0].status, ControllerStatus::Stopped);
    assert_eq!(metrics[1].status, ControllerStatus::Failed);
    let e = runtime.register(|| AlwaysFails).await.unwrap_err();
    assert!(matches!(e, RegistrationError::Stopped { .. }));
}

/// A terminal error ends one controller, whatever the policy: the stop
/// policy is for a controller past its restart intensity, not for one that
/// said no retry can help.
#[actix::test]
async fn a_terminal_error_marks_its_controller_failed_even_under_the_stop_policy() {
    struct Terminal;
    impl Controller for Terminal {
        fn name(&self) -> &str {
            "Terminal"
        }
        fn inputs(&self) -> Vec<Input> {
            vec![]
        }
        fn outputs(&self) -> Vec<Output> {
            vec![Output::exclusive::<SentenceSpec>()]
        }
        async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
            Err(TerminalError::new("the config asks for the impossible").into())
        }
    }
    tokio::time::pause();
    let runtime = runtime(OnExceeded::StopRuntime);
    runtime.register(int_to_str).await.unwrap();
    runtime.register(|| Terminal).await.unwrap();
    runtime.settled().await;
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[1].status, ControllerStatus::Failed);
    assert_eq!(runtime.stop_reason(), None, "the runtime goes on");
    runtime.state().create(Resource::new(NS, "a", IntSpec(7)), None).await.unwrap();
    runtime.settled().await;
    let s =
        runtime.state().get_typed::<StrSpec>(&Pointer::typed::<StrSpec>(NS, "a")).await.unwrap();
    assert_eq!(s.spec().0, "7", "the other controller still works");
}

#[actix::test]
async fn restarts_outside_the_window_do_not_count() {
    struct FailsEveryOther(bool);
    impl Controller for FailsEveryOther {
        fn name(&self) -> &str {
            "FailsEveryOther"
        }
        fn inputs(&self) -> Vec<Input> {
            vec![Input::weak::<IntSpec>(NS)]
        }
        fn outputs(&self) -> Vec<Output> {
            vec![]
        }
        async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
            self.0 = !self.0;
            if self.0 { Err("odd".into()) } else { Ok(()) }
        }
    }
    tokio::time::pause();
    let runtime = runtime(OnExceeded::MarkFailed);
    runtime.register(|| FailsEveryOther(false)).await.unwrap();
    for n in 0..6 {
        runtime.settled().await;
        tokio::time::advance(Duration::from_secs(61)).await;
        runtime
            .state()
            .modify(
                &Pointer::typed::<IntSpec>(NS, "x"),
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n,
                None,
            )
            .await
            .unwrap();
    }
    runtime.settled().await;
    let m = &runtime.metrics().await[0];
    assert_eq!(m.status, ControllerStatus::Running);
    assert!(m.errors >= 3, "{m:?}");
}
