//! Every registration rule, one test each.

use crate::common::controllers::Declared;
use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::RegistrationError;

async fn register(runtime: &Runtime, c: Declared) -> Result<(), RegistrationError> {
    runtime.register(move || c.clone()).await
}

#[actix::test]
async fn a_duplicate_controller_name_is_refused() {
    let runtime = Runtime::start();
    register(&runtime, Declared::new("A")).await.unwrap();
    let e = register(&runtime, Declared::new("A")).await.unwrap_err();
    assert!(matches!(e, RegistrationError::DuplicateController { ref name } if name == "A"), "{e}");
}

#[actix::test]
async fn a_second_exclusive_claim_is_refused() {
    let runtime = Runtime::start();
    register(&runtime, Declared::new("A").output(Output::exclusive::<StrSpec>())).await.unwrap();
    let e = register(&runtime, Declared::new("B").output(Output::exclusive::<StrSpec>()))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"resource type "Strs.test.cosi.dev" is already managed in exclusive mode by "A""#
    );
}

#[actix::test]
async fn a_shared_claim_on_an_exclusive_type_is_refused() {
    let runtime = Runtime::start();
    register(&runtime, Declared::new("A").output(Output::exclusive::<StrSpec>())).await.unwrap();
    let e = register(&runtime, Declared::new("B").output(Output::shared::<StrSpec>()))
        .await
        .unwrap_err();
    assert!(
        matches!(e, RegistrationError::ExclusiveConflict { ref holder, .. } if holder == "A"),
        "{e}"
    );
}

#[actix::test]
async fn an_exclusive_claim_on_a_shared_type_is_refused() {
    let runtime = Runtime::start();
    register(&runtime, Declared::new("A").output(Output::shared::<StrSpec>())).await.unwrap();
    register(&runtime, Declared::new("B").output(Output::shared::<StrSpec>())).await.unwrap();
    let e = register(&runtime, Declared::new("C").output(Output::exclusive::<StrSpec>()))
        .await
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"resource type "Strs.test.cosi.dev" is already managed in shared mode by "A""#
    );
}

#[actix::test]
async fn one_controller_sharing_a_type_twice_is_refused() {
    let runtime = Runtime::start();
    let twice =
        Declared::new("A").output(Output::shared::<StrSpec>()).output(Output::shared::<StrSpec>());
    let e = register(&runtime, twice).await.unwrap_err();
    assert!(matches!(e, RegistrationError::DuplicateSharedOutput { .. }), "{e}");
}

#[actix::test]
async fn two_inputs_with_the_same_key_are_refused() {
    let runtime = Runtime::start();
    let twice =
        Declared::new("A").input(Input::weak::<IntSpec>(NS)).input(Input::strong::<IntSpec>(NS));
    let e = register(&runtime, twice).await.unwrap_err();
    assert!(matches!(e, RegistrationError::DuplicateInput { .. }), "{e}");
}

#[actix::test]
async fn a_queue_input_kind_on_a_plain_controller_is_refused() {
    let runtime = Runtime::start();
    let e = register(&runtime, Declared::new("A").input(Input::primary::<IntSpec>(NS)))
        .await
        .unwrap_err();
    assert!(matches!(e, RegistrationError::InvalidInputKind { .. }), "{e}");
}

#[actix::test]
async fn an_invalid_name_or_namespace_is_refused() {
    let runtime = Runtime::start();
    let e = register(&runtime, Declared::new("")).await.unwrap_err();
    assert!(matches!(e, RegistrationError::Invalid { .. }), "{e}");
    let e =
        register(&runtime, Declared::new("A").input(Input::weak::<IntSpec>(""))).await.unwrap_err();
    assert!(matches!(e, RegistrationError::Invalid { .. }), "{e}");
}

#[actix::test]
async fn a_panicking_factory_is_refused_cleanly() {
    let runtime = Runtime::start();
    let e = runtime.register(|| -> Declared { panic!("no config") }).await.unwrap_err();
    assert!(
        matches!(e, RegistrationError::Panicked { ref message, .. } if message == "no config"),
        "{e}"
    );
    register(&runtime, Declared::new("A")).await.unwrap();
}

#[actix::test]
async fn a_failed_registration_leaves_nothing_behind() {
    let runtime = Runtime::start();
    register(&runtime, Declared::new("Holder").output(Output::exclusive::<IntSpec>()))
        .await
        .unwrap();
    // Its first output is free, its second conflicts: neither may stay claimed.
    let bad = Declared::new("Bad")
        .input(Input::weak::<IntSpec>(NS))
        .output(Output::exclusive::<StrSpec>())
        .output(Output::shared::<IntSpec>());
    assert!(register(&runtime, bad).await.is_err());
    // The name and the free output are both still available.
    register(&runtime, Declared::new("Bad").output(Output::exclusive::<StrSpec>())).await.unwrap();
    let graph = runtime.graph().await;
    assert_eq!(graph.controllers(), ["Bad", "Holder"]);
    assert!(graph.edges().iter().all(|e| e.kind.label() != "weak"), "no input of the failed one");
    assert_eq!(runtime.metrics().await.len(), 2);
}

#[actix::test]
async fn controllers_can_register_after_the_runtime_started_running() {
    let runtime = Runtime::start();
    register(&runtime, Declared::new("First").input(Input::weak::<IntSpec>(NS))).await.unwrap();
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.settled().await;
    register(&runtime, Declared::new("Later").input(Input::weak::<IntSpec>(NS))).await.unwrap();
    runtime.settled().await;
    let metrics = runtime.metrics().await;
    assert_eq!(metrics[1].controller, "Later");
    assert_eq!(metrics[1].reconciles, 1, "the initial reconcile ran");
}

#[actix::test]
async fn registration_after_stop_is_refused() {
    let runtime = Runtime::start();
    runtime.stop().await;
    let e = register(&runtime, Declared::new("A")).await.unwrap_err();
    assert!(matches!(e, RegistrationError::Stopped { .. }), "{e}");
}
