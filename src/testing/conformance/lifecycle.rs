//! Checks of the end of a resource's life: teardown, finalizers, destroy,
//! and teardown-and-destroy, alone and concurrently.

use futures::StreamExt;
use futures::future::join_all;

use super::Target;
use super::support::{IntSpec, int, ptr};
use crate::prelude::*;

/// Checks that destroy with finalizers is refused.
pub async fn check_destroy_with_finalizers_is_refused(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("f1");
    state.client_as("owner").create(r).await.unwrap();
    let state = t.reopen(state).await;
    let e = state.client_as("other").destroy(&ptr("a")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "owner is checked before finalizers: {e}");
    let e = state.client_as("owner").destroy(&ptr("a")).await.unwrap_err();
    assert!(e.is_pending_finalizers(), "{e}");
    assert!(e.to_string().contains("f1"), "{e}");
    state.remove_finalizer(&ptr("a"), "f1").await.unwrap();
    // No teardown needed.
    let state = t.reopen(state).await;
    state.client_as("owner").destroy(&ptr("a")).await.unwrap();
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
    assert!(state.client_as("owner").destroy(&ptr("a")).await.unwrap_err().is_not_found());
}

/// Checks that teardown is idempotent and reports readiness.
pub async fn check_teardown_is_idempotent_and_reports_readiness(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("f1");
    state.create(r, None).await.unwrap();
    assert!(!state.teardown(&ptr("a"), None).await.unwrap(), "held by f1");
    assert!(!state.teardown(&ptr("a"), None).await.unwrap(), "still held");
    let v = state.get(&ptr("a")).await.unwrap().version();
    assert_eq!(v, Version::new(2), "the second teardown wrote nothing");
    state.remove_finalizer(&ptr("a"), "f1").await.unwrap();
    assert!(state.teardown(&ptr("a"), None).await.unwrap(), "ready now");
    let e = state.client_as("x").teardown(&ptr("a")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    assert!(state.teardown(&ptr("zz"), None).await.unwrap_err().is_not_found());
}

/// Checks that phase conflict after teardown and expected phase override.
pub async fn check_phase_conflict_after_teardown_and_expected_phase_override(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    state.teardown(&ptr("a"), None).await.unwrap();
    let mut r = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    r.spec_mut().0 = 2;
    let e = state.update(r.clone(), None).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
    let updated =
        state.update_with_phase(r.clone(), None, ExpectedPhase::TearingDown).await.unwrap();
    assert_eq!(updated.phase(), Phase::TearingDown);
    let mut back = updated.typed::<IntSpec>().unwrap();
    back.metadata_mut().set_phase(Phase::Running);
    let e = state.update_with_phase(back, None, ExpectedPhase::Any).await.unwrap_err();
    assert!(e.is_invalid_input(), "never back to running: {e}");
}

/// Checks that finalizer operations ignore owner and phase.
pub async fn check_finalizer_operations_ignore_owner_and_phase(t: &mut dyn Target) {
    let state = t.open().await;
    state.client_as("owner").create(int("a", 1)).await.unwrap();
    state.client_as("owner").teardown(&ptr("a")).await.unwrap();
    state.add_finalizer(&ptr("a"), "anyone").await.unwrap();
    state.add_finalizer(&ptr("a"), "anyone").await.unwrap();
    let r = state.get(&ptr("a")).await.unwrap();
    assert_eq!(r.metadata().finalizers().to_vec(), ["anyone"]);
    assert_eq!(r.version(), Version::new(3), "the duplicate add wrote nothing");
    state.remove_finalizer(&ptr("a"), "anyone").await.unwrap();
    state.remove_finalizer(&ptr("a"), "never-there").await.unwrap();
    let r = state.get(&ptr("a")).await.unwrap();
    assert!(r.metadata().finalizers().is_empty());
    assert_eq!(r.owner(), Some("owner"), "finalizer edits keep the owner");
    let e = state.add_finalizer(&ptr("zz"), "f").await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

/// Checks that concurrent finalizer adds and removes converge.
pub async fn check_concurrent_finalizer_adds_and_removes_converge(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let adds = (0..8).map(|i| {
        let state = state.clone();
        async move { state.add_finalizer(&ptr("a"), &format!("f{i}")).await }
    });
    for r in join_all(adds).await {
        r.unwrap();
    }
    let removes = [1, 3, 6].map(|i| {
        let state = state.clone();
        async move { state.remove_finalizer(&ptr("a"), &format!("f{i}")).await }
    });
    for r in join_all(removes).await {
        r.unwrap();
    }
    let r = state.get(&ptr("a")).await.unwrap();
    assert_eq!(r.metadata().finalizers().to_vec(), ["f0", "f2", "f4", "f5", "f7"]);
}

/// Checks that parallel destroys one succeeds the rest not found.
pub async fn check_parallel_destroys_one_succeeds_the_rest_not_found(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let results = join_all((0..10).map(|_| {
        let state = state.clone();
        async move { state.destroy(&ptr("a"), None).await }
    }))
    .await;
    let ok = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(ok, 1);
    assert!(results.iter().filter_map(|r| r.as_ref().err()).all(Error::is_not_found));
}

/// Checks that teardown and destroy waits for finalizers.
pub async fn check_teardown_and_destroy_waits_for_finalizers(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    state.create(r, None).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();

    let waiting = {
        let state = state.clone();
        actix::spawn(async move { state.teardown_and_destroy(&ptr("a"), None).await })
    };
    // The teardown happens first; the call then waits for the holder.
    match events.next().await {
        Some(Event::Updated { new, .. }) => assert_eq!(new.phase(), Phase::TearingDown),
        other => panic!("expected the teardown, got {other:?}"),
    }
    assert!(!waiting.is_finished());
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    waiting.await.unwrap().unwrap();
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
}

/// Checks that concurrent teardown and destroy all finish.
pub async fn check_concurrent_teardown_and_destroy_all_finish(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    state.create(r, None).await.unwrap();
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let state = state.clone();
            actix::spawn(async move { state.teardown_and_destroy(&ptr("a"), None).await })
        })
        .collect();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    // Wait until the resource is tearing down, then release it.
    loop {
        match events.next().await {
            Some(Event::Created(r) | Event::Updated { new: r, .. })
                if r.phase() == Phase::TearingDown =>
            {
                break;
            }
            Some(_) => {}
            None => panic!("watch ended"),
        }
    }
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    for call in calls {
        let result = call.await.unwrap();
        assert!(result.is_ok() || result.as_ref().unwrap_err().is_not_found(), "{result:?}");
    }
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
    let e = state.teardown_and_destroy(&ptr("a"), None).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
}

/// Checks that teardown and destroy of a resource destroyed meanwhile succeeds.
pub async fn check_teardown_and_destroy_of_a_resource_destroyed_meanwhile_succeeds(
    t: &mut dyn Target,
) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    state.client_as("owner").create(r).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();
    let waiting = {
        let state = state.clone();
        actix::spawn(async move { state.client_as("owner").teardown_and_destroy(&ptr("a")).await })
    };
    events.next().await.unwrap(); // torn down
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    // Someone else may win the destroy; either way the waiter succeeds.
    let _ = state.client_as("owner").destroy(&ptr("a")).await;
    waiting.await.unwrap().unwrap();
    let e = state.teardown_and_destroy(&ptr("b"), None).await.unwrap_err();
    assert!(e.is_not_found());
}
