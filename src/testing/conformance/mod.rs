//! The state contract as a public conformance suite: prove a backend with one call.
//!
//! Every rule of the state contract (the [`state`](crate::state) docs;
//! docs/ARCHITECTURE.md, 'State contract' and 'Backends and durability') is one `check_*` function over a [`Target`]: something that opens an
//! empty state and can reopen it (close it and open the same storage again).
//! [`state_conformance!`](crate::state_conformance) writes one `#[test]` per
//! check for a target, so a third-party backend proves itself like this:
//!
//! ```no_run
//! // tests/my_backend_conformance.rs
//! # mod my_backend { pub struct MyBackend; impl MyBackend { pub fn new() -> Self { MyBackend } } }
//! # use cosi_runtime::state::{Backend, Snapshot, Write, backend::CommitFuture};
//! # impl cosi_runtime::state::Backend for my_backend::MyBackend {
//! #     fn describe(&self) -> String { "mine".into() }
//! #     fn load(&mut self) -> Result<Snapshot, cosi_runtime::Error> { Ok(Snapshot::default()) }
//! #     fn commit(&mut self, _: Vec<Write>) -> CommitFuture { Box::pin(async { Ok(vec![]) }) }
//! # }
//! use cosi_runtime::testing::conformance::BackendTarget;
//!
//! cosi_runtime::state_conformance!(mine, BackendTarget::new(|| my_backend::MyBackend::new()));
//! ```
//!
//! The project's own suite (`tests/state/conformance.rs`) runs it on the
//! in-memory state, on redb, on redb reopened between the steps of a check,
//! and on routed states (one namespace durable, the rest in memory).

use futures::future::LocalBoxFuture;

use crate::State;

mod crud;
mod lifecycle;
mod revisions;
mod support;
mod targets;
mod validation;
mod watches;

pub use super::scratch::ScratchDir;
pub use crud::{
    check_an_update_from_another_incarnation_is_a_version_conflict,
    check_create_keeps_phase_finalizers_and_labels_as_given,
    check_create_of_an_existing_id_is_already_exists, check_get_returns_the_resource_or_not_found,
    check_label_queries_filter_lists, check_list_is_sorted_by_id,
    check_modify_creates_then_updates,
    check_modify_of_a_torn_down_resource_is_a_phase_conflict_unless_expected,
    check_no_op_modify_writes_nothing_and_emits_nothing,
    check_uids_are_the_states_and_differ_across_incarnations,
    check_update_checks_not_found_owner_version_phase_in_order,
    check_update_keeps_created_and_moves_updated, check_versions_are_owned_by_the_state,
};
pub use lifecycle::{
    check_concurrent_finalizer_adds_and_removes_converge,
    check_concurrent_teardown_and_destroy_all_finish, check_destroy_with_finalizers_is_refused,
    check_finalizer_operations_ignore_owner_and_phase,
    check_parallel_destroys_one_succeeds_the_rest_not_found,
    check_phase_conflict_after_teardown_and_expected_phase_override,
    check_teardown_and_destroy_of_a_resource_destroyed_meanwhile_succeeds,
    check_teardown_and_destroy_waits_for_finalizers,
    check_teardown_is_idempotent_and_reports_readiness,
};
pub use revisions::{
    check_a_coalesced_backlog_goes_out_in_ascending_revision,
    check_a_get_carries_the_revision_it_was_read_at,
    check_a_list_carries_the_revision_of_its_snapshot,
    check_destroyed_carries_the_destroys_revision,
    check_each_namespace_resumes_from_its_own_revisions,
    check_revisions_grow_per_write_and_watches_resume,
};
pub use support::{IntSpec, NS, NS_BESIDE, StrSpec};
#[cfg(feature = "etcd")]
pub use targets::EtcdTarget;
#[cfg(feature = "redb")]
pub use targets::RedbTarget;
pub use targets::{BackendTarget, MemoryTarget, Reopen};
pub use validation::{
    check_dynamic_resources_are_read_back_typed,
    check_invalid_input_is_rejected_and_nothing_stored, check_wrong_spec_type_is_a_type_mismatch,
};
pub use watches::{
    check_a_stalled_subscriber_stays_bounded_and_catches_up,
    check_label_query_watches_turn_updates_into_created_and_destroyed,
    check_recipient_watches_deliver_to_actors, check_updated_carries_the_old_resource,
    check_watch_kind_bootstrap_order_then_bootstrapped,
    check_watch_starts_with_created_or_a_tombstone,
};

/// What the suite runs against: opens an empty state, and reopens it.
pub trait Target {
    /// A fresh, empty state.
    fn open(&mut self) -> LocalBoxFuture<'_, State>;

    /// The same storage after a restart: close `state` and open it again. A
    /// state that keeps nothing across a restart returns `state` itself.
    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(std::future::ready(state))
    }

    /// Why the checks cannot run here (a server binary is missing): the
    /// suite prints it and passes. `None` (the default) runs them.
    fn skipped(&self) -> Option<String> {
        None
    }
}

/// Runs one check against the target `make` builds, in a fresh actix `System`.
pub fn run<T: Target>(
    make: impl FnOnce() -> T,
    check: impl for<'a> FnOnce(&'a mut dyn Target) -> LocalBoxFuture<'a, ()>,
) {
    actix::System::new().block_on(async move {
        let mut target = make();
        if let Some(why) = target.skipped() {
            eprintln!("SKIPPED: {why}");
            return;
        }
        check(&mut target).await;
    });
}

/// Writes one `#[test]` per conformance check, in a module named `$name`,
/// against the [`Target`](crate::testing::conformance::Target) that `$make`
/// builds (an expression evaluated once per test).
#[macro_export]
macro_rules! state_conformance {
    ($name:ident, $make:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            $crate::state_conformance!(@tests $make; check_get_returns_the_resource_or_not_found,
                check_create_of_an_existing_id_is_already_exists,
                check_create_keeps_phase_finalizers_and_labels_as_given,
                check_versions_are_owned_by_the_state,
                check_update_keeps_created_and_moves_updated,
                check_update_checks_not_found_owner_version_phase_in_order,
                check_an_update_from_another_incarnation_is_a_version_conflict,
                check_uids_are_the_states_and_differ_across_incarnations,
                check_modify_creates_then_updates,
                check_no_op_modify_writes_nothing_and_emits_nothing,
                check_modify_of_a_torn_down_resource_is_a_phase_conflict_unless_expected,
                check_destroy_with_finalizers_is_refused,
                check_teardown_is_idempotent_and_reports_readiness,
                check_phase_conflict_after_teardown_and_expected_phase_override,
                check_finalizer_operations_ignore_owner_and_phase,
                check_concurrent_finalizer_adds_and_removes_converge,
                check_parallel_destroys_one_succeeds_the_rest_not_found,
                check_list_is_sorted_by_id,
                check_label_queries_filter_lists,
                check_watch_starts_with_created_or_a_tombstone,
                check_watch_kind_bootstrap_order_then_bootstrapped,
                check_label_query_watches_turn_updates_into_created_and_destroyed,
                check_updated_carries_the_old_resource,
                check_invalid_input_is_rejected_and_nothing_stored,
                check_wrong_spec_type_is_a_type_mismatch,
                check_dynamic_resources_are_read_back_typed,
                check_teardown_and_destroy_waits_for_finalizers,
                check_concurrent_teardown_and_destroy_all_finish,
                check_teardown_and_destroy_of_a_resource_destroyed_meanwhile_succeeds,
                check_a_stalled_subscriber_stays_bounded_and_catches_up,
                check_recipient_watches_deliver_to_actors,
                check_revisions_grow_per_write_and_watches_resume,
                check_a_list_carries_the_revision_of_its_snapshot,
                check_a_get_carries_the_revision_it_was_read_at,
                check_each_namespace_resumes_from_its_own_revisions,
                check_destroyed_carries_the_destroys_revision,
                check_a_coalesced_backlog_goes_out_in_ascending_revision);
        }
    };
    (@tests $make:expr; $($check:ident),* $(,)?) => {
        $(
            #[test]
            fn $check() {
                $crate::testing::conformance::run(
                    || $make,
                    |t| ::std::boxed::Box::pin($crate::testing::conformance::$check(t)),
                );
            }
        )*
    };
}
