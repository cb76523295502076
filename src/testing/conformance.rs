//! The state contract as a public conformance suite: prove a backend with one call.
//!
//! Every rule of the state contract (DESIGN §3 and §9, the [`state`](crate::state)
//! docs) is one `check_*` function over a [`Target`]: something that opens an
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
//! The project's own suite (`tests/state_conformance.rs`) runs it on the
//! in-memory state, on redb, on redb reopened between the steps of a check,
//! and on routed states (one namespace durable, the rest in memory).

use std::collections::BTreeMap;
use std::path::PathBuf;

use futures::StreamExt;
use futures::future::{LocalBoxFuture, join_all};
use serde::{Deserialize, Serialize};

use crate::State;
use crate::prelude::*;
use crate::resource::{DynamicResource, Id};
#[cfg(feature = "redb")]
use crate::state::StateBuilder;
use crate::state::{Backend, Namespaces, WatchOptions};

/// The namespace the checks write to.
pub const NS: &str = "conformance";

/// A second namespace some checks write to beside [`NS`]: a target that
/// mixes stores routes it to another store than `NS`.
pub const NS_BESIDE: &str = "conformance-beside";

/// An integer spec the checks use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntSpec(pub i64);

impl Spec for IntSpec {
    const TYPE: &'static str = "Ints.conformance.cosi.dev";
}

/// A string spec the checks use.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StrSpec(pub String);

impl Spec for StrSpec {
    const TYPE: &'static str = "Strs.conformance.cosi.dev";
}

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

/// The in-memory state ([`State::start`]); reopening keeps the same state.
#[derive(Debug, Default)]
pub struct MemoryTarget;

impl Target for MemoryTarget {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(async { State::start() })
    }
}

/// A fresh directory under the system's temporary directory, removed on drop.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A new, empty directory.
    ///
    /// # Panics
    /// If it cannot be created (a test setup failure).
    pub fn new() -> Self {
        let name = format!("cosi-conformance-{}-{:016x}", std::process::id(), fastrand::u64(..));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        ScratchDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Default for ScratchDir {
    fn default() -> Self {
        ScratchDir::new()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Whether a target closes and opens its state again between the steps of
/// a check (what survives a restart must be what was acknowledged).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reopen {
    /// Keep one state for the whole check.
    Never,
    /// Close the state and open it again wherever a check calls [`Target::reopen`].
    BetweenSteps,
}

/// A state whose `durable` namespaces live in a redb file in a scratch
/// directory (the rest in memory). With `reopen`, [`Target::reopen`] closes
/// the state and opens the file again.
#[cfg(feature = "redb")]
#[derive(Debug)]
pub struct RedbTarget {
    dir: ScratchDir,
    durable: Namespaces,
    reopen: Reopen,
}

#[cfg(feature = "redb")]
impl RedbTarget {
    /// Everything durable; reopened between steps with [`Reopen::BetweenSteps`].
    pub fn new(reopen: Reopen) -> Self {
        RedbTarget { dir: ScratchDir::new(), durable: Namespaces::All, reopen }
    }

    /// Only `durable` in the file, the rest in memory; reopened between steps
    /// when `reopen` (only meaningful when the checks' namespace [`NS`] is durable:
    /// memory namespaces start empty after a reopen).
    pub fn routed(durable: impl Into<Namespaces>, reopen: Reopen) -> Self {
        RedbTarget { dir: ScratchDir::new(), durable: durable.into(), reopen }
    }

    fn builder(&self) -> StateBuilder {
        State::builder().durable(self.dir.path().join("state.redb"), self.durable.clone())
    }
}

#[cfg(feature = "redb")]
impl Target for RedbTarget {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(async { self.builder().open().await.expect("open the redb state") })
    }

    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(async move {
            if self.reopen == Reopen::Never {
                return state;
            }
            state.close().await.expect("close the redb state");
            self.builder().open().await.expect("reopen the redb state")
        })
    }
}

/// A state on a throwaway etcd ([`TestEtcd`](super::etcd::TestEtcd)), under
/// a prefix of its own; with `reopen`, [`Target::reopen`] closes the state
/// and opens the same prefix again (the data stays in etcd). Skipped, loudly,
/// without an `etcd` binary (failing instead when `CI` is set).
#[cfg(feature = "etcd")]
#[derive(Debug)]
pub struct EtcdTarget {
    etcd: Option<super::etcd::TestEtcd>,
    prefix: String,
    reopen: Reopen,
    on_etcd: Namespaces,
    /// Namespaces in a redb file beside etcd (a mix), and its directory.
    #[cfg(feature = "redb")]
    durable: Option<(ScratchDir, Namespaces)>,
}

#[cfg(feature = "etcd")]
impl EtcdTarget {
    /// Every namespace on a fresh etcd; reopened between steps with
    /// [`Reopen::BetweenSteps`].
    pub fn new(reopen: Reopen) -> Self {
        EtcdTarget::mixed(Namespaces::All, reopen)
    }

    /// A mix: `on_etcd` on a fresh etcd, every other namespace in memory.
    /// With [`Reopen::BetweenSteps`], put [`NS`] on etcd (memory starts
    /// empty after a reopen).
    pub fn mixed(on_etcd: impl Into<Namespaces>, reopen: Reopen) -> Self {
        EtcdTarget {
            etcd: super::etcd::TestEtcd::start(),
            prefix: format!("conformance-{:016x}", fastrand::u64(..)),
            reopen,
            on_etcd: on_etcd.into(),
            #[cfg(feature = "redb")]
            durable: None,
        }
    }

    /// A mix of three stores: `on_etcd` on a fresh etcd, `durable` in a
    /// redb file in a scratch directory, every other namespace in memory.
    #[cfg(feature = "redb")]
    pub fn with_durable(
        on_etcd: impl Into<Namespaces>,
        durable: impl Into<Namespaces>,
        reopen: Reopen,
    ) -> Self {
        let mut target = EtcdTarget::mixed(on_etcd, reopen);
        target.durable = Some((ScratchDir::new(), durable.into()));
        target
    }

    async fn start(&self) -> State {
        let etcd = self.etcd.as_ref().expect("an etcd (the suite skips without one)");
        #[allow(unused_mut)]
        let mut builder =
            State::builder().etcd_namespaces(etcd.config(&self.prefix), self.on_etcd.clone());
        #[cfg(feature = "redb")]
        if let Some((dir, namespaces)) = &self.durable {
            builder = builder.durable(dir.path().join("state.redb"), namespaces.clone());
        }
        builder.open().await.expect("open the etcd state")
    }
}

#[cfg(feature = "etcd")]
impl Target for EtcdTarget {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(self.start())
    }

    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(async move {
            if self.reopen == Reopen::Never {
                return state;
            }
            state.close().await.expect("close the etcd state");
            self.start().await
        })
    }

    fn skipped(&self) -> Option<String> {
        self.etcd.is_none().then(|| "no `etcd` binary: the etcd conformance checks".into())
    }
}

/// A state with every namespace on a backend made by a factory: how a
/// third-party backend runs the suite. Reopening builds a new backend from the
/// factory after closing the old one, so a backend over persistent storage
/// (the factory opens the same place each time) is checked across restarts.
pub struct BackendTarget<B> {
    factory: Box<dyn FnMut() -> B>,
}

impl<B: Backend> BackendTarget<B> {
    /// A target over the backends `factory` makes.
    pub fn new(factory: impl FnMut() -> B + 'static) -> Self {
        BackendTarget { factory: Box::new(factory) }
    }

    async fn start(&mut self) -> State {
        let backend = (self.factory)();
        State::builder().backend(Namespaces::All, backend).open().await.expect("open the state")
    }
}

impl<B> std::fmt::Debug for BackendTarget<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("BackendTarget")
    }
}

impl<B: Backend> Target for BackendTarget<B> {
    fn open(&mut self) -> LocalBoxFuture<'_, State> {
        Box::pin(self.start())
    }

    fn reopen(&mut self, state: State) -> LocalBoxFuture<'_, State> {
        Box::pin(async move {
            state.close().await.expect("close the state");
            self.start().await
        })
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

fn int(id: &str, n: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(n))
}

fn ptr(id: &str) -> Pointer {
    Pointer::of::<IntSpec>(NS, id)
}

fn kind() -> Kind {
    Kind::of::<IntSpec>(NS)
}

/// Checks that get returns the resource or not found.
pub async fn check_get_returns_the_resource_or_not_found(t: &mut dyn Target) {
    let state = t.open().await;
    let created = state.create(int("a", 1), None).await.unwrap();
    let got = state.get(&ptr("a")).await.unwrap();
    let state = t.reopen(state).await;
    assert_eq!(state.get(&ptr("a")).await.unwrap(), got, "a reopened state has it too");
    assert_eq!(got, created);
    assert_eq!(got.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
    let err = state.get(&ptr("missing")).await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert!(err.to_string().contains("missing"), "names the resource: {err}");
}

/// Checks that create of an existing id is already exists.
pub async fn check_create_of_an_existing_id_is_already_exists(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let err = state.create(int("a", 2), None).await.unwrap_err();
    assert!(err.is_already_exists(), "{err}");
    let state = t.reopen(state).await;
    assert!(state.create(int("a", 2), None).await.unwrap_err().is_already_exists());
    let stored = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    assert_eq!(stored.spec(), &IntSpec(1), "the first create stands");
}

/// Checks that create keeps phase finalizers and labels as given.
pub async fn check_create_keeps_phase_finalizers_and_labels_as_given(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("held");
    r.metadata_mut().labels_mut().insert("tier", "edge");
    r.metadata_mut().annotations_mut().insert("note", "hello");
    r.metadata_mut().set_phase(Phase::TearingDown);
    let created = state.create(r, Some("ctrl")).await.unwrap();
    let state = t.reopen(state).await;
    let reread = state.get(created.pointer()).await.unwrap();
    assert_eq!(reread, created, "metadata survives as stored");
    assert_eq!(reread.metadata().created(), created.metadata().created());
    let md = created.metadata();
    assert!(md.finalizers().contains("held"));
    assert_eq!(md.labels().get("tier"), Some("edge"));
    assert_eq!(md.annotations().get("note"), Some("hello"));
    assert_eq!(md.phase(), Phase::TearingDown);
    assert_eq!(md.owner(), Some("ctrl"));
}

/// Checks that versions are owned by the state.
pub async fn check_versions_are_owned_by_the_state(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().set_version(Version::new(42));
    let created = state.create(r, None).await.unwrap();
    assert_eq!(created.version(), Version::new(1), "create sets 1 whatever was sent");

    // An update must send the version it read: not the pre-create version,
    // not a bumped one, exactly the stored one.
    let mut unset = int("a", 2);
    unset.metadata_mut().set_version(Version::UNSET);
    assert!(state.update(unset, None).await.unwrap_err().is_version_conflict());
    let mut bumped = created.typed::<IntSpec>().unwrap();
    bumped.metadata_mut().set_version(Version::new(2));
    assert!(state.update(bumped, None).await.unwrap_err().is_version_conflict());

    let mut exact = created.typed::<IntSpec>().unwrap();
    exact.spec_mut().0 = 2;
    let updated = state.update(exact, None).await.unwrap();
    assert_eq!(updated.version(), Version::new(2));
    let state = t.reopen(state).await;
    let again = updated.typed::<IntSpec>().unwrap();
    assert_eq!(state.update(again, None).await.unwrap().version(), Version::new(3));
}

/// Checks that update keeps created and moves updated.
pub async fn check_update_keeps_created_and_moves_updated(t: &mut dyn Target) {
    let state = t.open().await;
    let created = state.create(int("a", 1), None).await.unwrap();
    let mut next = created.typed::<IntSpec>().unwrap();
    next.spec_mut().0 = 2;
    let updated = state.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().created(), created.metadata().created());
    assert!(updated.metadata().updated() >= created.metadata().updated());
}

/// Checks that update checks not found owner version phase in order.
pub async fn check_update_checks_not_found_owner_version_phase_in_order(t: &mut dyn Target) {
    let state = t.open().await;
    // Missing beats everything.
    let mut ghost = int("ghost", 1);
    ghost.metadata_mut().set_version(Version::new(9));
    let e = state.update(ghost, Some("other")).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");

    let created = state.create(int("a", 1), Some("owner")).await.unwrap();
    state.teardown(&ptr("a"), Some("owner")).await.unwrap();
    let state = t.reopen(state).await;

    // Wrong owner + stale version + wrong phase: owner first.
    let stale = created.typed::<IntSpec>().unwrap();
    let e = state.update(stale.clone(), Some("other")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // None matches only none.
    let e = state.update(stale.clone(), None).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // Right owner, stale version, wrong phase: version next.
    let e = state.update(stale, Some("owner")).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    // Right owner and version, wrong phase: phase last.
    let fresh = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    let e = state.update(fresh, Some("owner")).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
}

/// Checks that an update computed from an earlier incarnation of a resource
/// (read, then the resource was destroyed and created again) is a version
/// conflict even at the same version, and leaves the new incarnation as it is.
pub async fn check_an_update_from_another_incarnation_is_a_version_conflict(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), Some("owner")).await.unwrap();
    let read = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    let first = read.metadata().uid().expect("a stored resource has a uid");
    let state = t.reopen(state).await;
    state.destroy(&ptr("a"), Some("owner")).await.unwrap();
    let again = state.create(int("a", 2), Some("owner")).await.unwrap();
    let second = again.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(first, second, "another incarnation, another uid");
    assert_eq!(again.version(), read.version(), "both at version 1: only the uid tells");
    let state = t.reopen(state).await;

    let mut stale = read.clone();
    stale.spec_mut().0 = 99;
    let e = state.update(stale.clone(), Some("owner")).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    assert!(e.to_string().contains(&ptr("a").to_string()), "names the resource: {e}");
    // The same through a phase-expecting update.
    let e = state.update_with_phase(stale, Some("owner"), ExpectedPhase::Any).await.unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    let now = state.get_typed::<IntSpec>(&ptr("a")).await.unwrap();
    assert_eq!(now.spec(), &IntSpec(2), "the new incarnation is untouched");
    assert_eq!(now.version(), Version::new(1));
    assert_eq!(now.metadata().uid(), Some(second));
    assert_eq!(now.metadata().revision(), again.metadata().revision(), "nothing was written");

    // The new incarnation's own copy updates as usual.
    let mut fresh = now;
    fresh.spec_mut().0 = 3;
    let updated = state.update(fresh, Some("owner")).await.unwrap();
    assert_eq!(updated.version(), Version::new(2));
    assert_eq!(updated.metadata().uid(), Some(second));
}

/// Checks that the state gives every create a new uid (replacing one the
/// caller sent), that every later write keeps it (update, modify, teardown,
/// finalizer edits), that a reopened state has the same one, and that a
/// resource destroyed and created again has another.
pub async fn check_uids_are_the_states_and_differ_across_incarnations(t: &mut dyn Target) {
    let state = t.open().await;
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Destroyed(_))), "a tombstone first");
    let mut sent = int("a", 1);
    let elsewhere = state.create(int("elsewhere", 1), None).await.unwrap();
    sent.metadata_mut().set_uid(elsewhere.metadata().uid());
    let created = state.create(sent, None).await.unwrap();
    let uid = created.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(Some(uid), elsewhere.metadata().uid(), "a create replaces the caller's uid");
    match events.next().await {
        Some(Event::Created(r)) => assert_eq!(r.metadata().uid(), Some(uid), "watchers see it"),
        other => panic!("expected the create, got {other:?}"),
    }
    let state = t.reopen(state).await;
    let got = state.get(&ptr("a")).await.unwrap();
    assert_eq!(got.metadata().uid(), Some(uid), "the uid survives a reopen");

    let mut next = got.typed::<IntSpec>().unwrap();
    next.spec_mut().0 = 2;
    let updated = state.update(next, None).await.unwrap();
    assert_eq!(updated.metadata().uid(), Some(uid), "update keeps it");
    let modified = state
        .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 3, None)
        .await
        .unwrap();
    assert_eq!(modified.metadata().uid(), Some(uid), "modify keeps it");
    state.add_finalizer(&ptr("a"), "f").await.unwrap();
    state.teardown(&ptr("a"), None).await.unwrap();
    state.remove_finalizer(&ptr("a"), "f").await.unwrap();
    let state = t.reopen(state).await;
    let kept = state.get(&ptr("a")).await.unwrap();
    assert_eq!(kept.metadata().uid(), Some(uid), "finalizer edits and teardown keep it");
    assert_eq!(kept.version(), Version::new(6));

    state.destroy(&ptr("a"), None).await.unwrap();
    let again = state.create(int("a", 1), None).await.unwrap();
    let other = again.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(other, uid, "another incarnation, another uid");
    let state = t.reopen(state).await;
    let got = state.get(&ptr("a")).await.unwrap();
    assert_eq!(got.metadata().uid(), Some(other), "the new uid survives a reopen");
    assert_eq!(got, again, "equal as stored");
    let json = serde_json::to_value(got.metadata()).unwrap();
    assert_eq!(json["uid"], other.to_string(), "serialized as `uid`");
}

/// Checks that modify creates then updates.
pub async fn check_modify_creates_then_updates(t: &mut dyn Target) {
    let state = t.open().await;
    let p = ptr("m");
    let created: Resource<IntSpec> =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 5, Some("c")).await.unwrap();
    assert_eq!(created.version(), Version::new(1));
    assert_eq!(created.metadata().owner(), Some("c"));
    let state = t.reopen(state).await;
    let updated =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, Some("c")).await.unwrap();
    assert_eq!(updated.spec(), &IntSpec(6));
    assert_eq!(updated.version(), Version::new(2));
    let e =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 += 1, None).await.unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
}

/// Checks that no op modify writes nothing and emits nothing.
pub async fn check_no_op_modify_writes_nothing_and_emits_nothing(t: &mut dyn Target) {
    let state = t.open().await;
    let p = ptr("m");
    state.create(int("m", 1), None).await.unwrap();
    let mut events = state.watch_stream(&p).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Created(_))));

    let same =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1, None).await.unwrap();
    assert_eq!(same.version(), Version::new(1), "no version bump");
    let unchanged = state
        .modify(
            &p,
            |r: &mut Resource<IntSpec>| {
                r.metadata_mut().labels_mut().insert("x", "1");
                r.metadata_mut().labels_mut().remove("x");
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(unchanged.version(), Version::new(1));

    // The next event is the real change: nothing was emitted in between.
    state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.version(), Version::new(1));
            assert_eq!(new.version(), Version::new(2));
        }
        other => panic!("expected the real update, got {other:?}"),
    }
}

/// Checks that modify of a torn down resource is a phase conflict unless expected.
pub async fn check_modify_of_a_torn_down_resource_is_a_phase_conflict_unless_expected(
    t: &mut dyn Target,
) {
    let state = t.open().await;
    let p = ptr("m");
    state.create(int("m", 1), None).await.unwrap();
    state.teardown(&p, None).await.unwrap();
    let e =
        state.modify(&p, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
    let r = state
        .modify_with(
            &p,
            || int("m", 0),
            |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2,
            None,
            ExpectedPhase::TearingDown,
        )
        .await
        .unwrap();
    assert_eq!(r.spec(), &IntSpec(2));
    assert_eq!(r.phase(), Phase::TearingDown);
}

/// Checks that destroy with finalizers is refused.
pub async fn check_destroy_with_finalizers_is_refused(t: &mut dyn Target) {
    let state = t.open().await;
    let mut r = int("a", 1);
    r.metadata_mut().finalizers_mut().add("f1");
    state.create(r, Some("owner")).await.unwrap();
    let state = t.reopen(state).await;
    let e = state.destroy(&ptr("a"), Some("other")).await.unwrap_err();
    assert!(e.is_owner_conflict(), "owner is checked before finalizers: {e}");
    let e = state.destroy(&ptr("a"), Some("owner")).await.unwrap_err();
    assert!(e.is_pending_finalizers(), "{e}");
    assert!(e.to_string().contains("f1"), "{e}");
    state.remove_finalizer(&ptr("a"), "f1").await.unwrap();
    // No teardown needed.
    let state = t.reopen(state).await;
    state.destroy(&ptr("a"), Some("owner")).await.unwrap();
    assert!(state.get(&ptr("a")).await.unwrap_err().is_not_found());
    assert!(state.destroy(&ptr("a"), Some("owner")).await.unwrap_err().is_not_found());
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
    let e = state.teardown(&ptr("a"), Some("x")).await.unwrap_err();
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
    state.create(int("a", 1), Some("owner")).await.unwrap();
    state.teardown(&ptr("a"), Some("owner")).await.unwrap();
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

/// Checks that list is sorted by id.
pub async fn check_list_is_sorted_by_id(t: &mut dyn Target) {
    let state = t.open().await;
    for id in ["delta", "alpha", "charlie", "bravo", "10", "9"] {
        state.create(int(id, 0), None).await.unwrap();
    }
    state.create(Resource::new(NS, "zulu", StrSpec("other type".into())), None).await.unwrap();
    state.create(Resource::new("elsewhere", "echo", IntSpec(0)), None).await.unwrap();
    let state = t.reopen(state).await;
    let ids: Vec<String> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| r.id().to_owned())
        .collect();
    assert_eq!(ids, ["10", "9", "alpha", "bravo", "charlie", "delta"]);
    assert!(
        state.list(&Kind::of::<IntSpec>("empty"), &LabelQuery::all()).await.unwrap().is_empty()
    );
}

/// Checks that label queries filter lists.
pub async fn check_label_queries_filter_lists(t: &mut dyn Target) {
    let state = t.open().await;
    let labelled = [
        ("a", vec![("app", "web"), ("tier", "edge")]),
        ("b", vec![("app", "db")]),
        ("c", vec![("app", "web")]),
        ("d", vec![]),
    ];
    for (id, labels) in labelled {
        let mut r = int(id, 0);
        r.metadata_mut().labels_mut().extend(labels);
        state.create(r, None).await.unwrap();
    }
    let ids = |q: LabelQuery| {
        let state = state.clone();
        async move {
            state
                .list(&kind(), &q)
                .await
                .unwrap()
                .iter()
                .map(|r| r.id().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(ids(LabelQuery::all().exists("app")).await, ["a", "b", "c"]);
    assert_eq!(ids(LabelQuery::all().not_exists("app")).await, ["d"]);
    assert_eq!(ids(LabelQuery::all().equal("app", "web")).await, ["a", "c"]);
    assert_eq!(ids(LabelQuery::all().not_equal("app", "web")).await, ["b"]);
    assert_eq!(ids(LabelQuery::all().in_values("app", ["db", "web"])).await, ["a", "b", "c"]);
    assert_eq!(ids(LabelQuery::all().not_in("app", ["db"])).await, ["a", "c"]);
    assert_eq!(ids(LabelQuery::all().equal("app", "web").exists("tier")).await, ["a"]);
}

/// Checks that watch starts with created or a tombstone.
pub async fn check_watch_starts_with_created_or_a_tombstone(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("here", 7), None).await.unwrap();
    let mut here = state.watch_stream(&ptr("here")).await.unwrap();
    match here.next().await {
        Some(Event::Created(r)) => assert_eq!(r.typed::<IntSpec>().unwrap().spec(), &IntSpec(7)),
        other => panic!("expected Created, got {other:?}"),
    }
    let mut gone = state.watch_stream(&ptr("gone")).await.unwrap();
    match gone.next().await {
        Some(Event::Destroyed(r)) => {
            assert!(r.is_tombstone());
            assert_eq!(r.pointer(), &ptr("gone"));
        }
        other => panic!("expected a tombstone, got {other:?}"),
    }
    // Then every change, in order.
    state.create(int("gone", 1), None).await.unwrap();
    state.destroy(&ptr("gone"), None).await.unwrap();
    assert!(matches!(gone.next().await, Some(Event::Created(_))));
    assert!(matches!(gone.next().await, Some(Event::Destroyed(r)) if !r.is_tombstone()));
}

/// Checks that watch kind bootstrap order then bootstrapped.
pub async fn check_watch_kind_bootstrap_order_then_bootstrapped(t: &mut dyn Target) {
    let state = t.open().await;
    for id in ["c", "a", "b"] {
        state.create(int(id, 0), None).await.unwrap();
    }
    let mut events = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    let mut seen = vec![];
    for _ in 0..3 {
        match events.next().await {
            Some(Event::Created(r)) => seen.push(r.id().to_owned()),
            other => panic!("expected Created, got {other:?}"),
        }
    }
    assert_eq!(seen, ["a", "b", "c"]);
    assert!(matches!(events.next().await, Some(Event::Bootstrapped(k)) if k == kind()));
    state.create(int("d", 0), None).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Created(r)) if r.id() == "d"));

    // Without bootstrap: live events only.
    let mut live = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::default())
        .await
        .unwrap();
    state.create(int("e", 0), None).await.unwrap();
    assert!(matches!(live.next().await, Some(Event::Created(r)) if r.id() == "e"));
}

/// Checks that label query watches turn updates into created and destroyed.
pub async fn check_label_query_watches_turn_updates_into_created_and_destroyed(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 0), None).await.unwrap();
    let query = LabelQuery::all().equal("app", "web");
    let mut events =
        state.watch_kind_stream(&kind(), query, &WatchOptions::bootstrap()).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Bootstrapped(_))), "nothing matches yet");

    let set_label = |v: Option<&'static str>| {
        let state = state.clone();
        async move {
            state
                .modify(
                    &ptr("a"),
                    move |r: &mut Resource<IntSpec>| {
                        let labels = r.metadata_mut().labels_mut();
                        match v {
                            Some(v) => labels.insert("app", v),
                            None => labels.remove("app"),
                        };
                    },
                    None,
                )
                .await
                .unwrap()
        }
    };
    set_label(Some("web")).await;
    assert!(matches!(events.next().await, Some(Event::Created(r)) if r.id() == "a"));
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1, None).await.unwrap();
    assert!(matches!(events.next().await, Some(Event::Updated { .. })));
    set_label(Some("db")).await;
    assert!(
        matches!(events.next().await, Some(Event::Destroyed(r)) if r.metadata().labels().get("app") == Some("db"))
    );
    set_label(None).await; // Still not matching: no event.
    set_label(Some("web")).await;
    assert!(matches!(events.next().await, Some(Event::Created(_))));
}

/// Checks that updated carries the old resource.
pub async fn check_updated_carries_the_old_resource(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.typed::<IntSpec>().unwrap().spec(), &IntSpec(1));
            assert_eq!(new.typed::<IntSpec>().unwrap().spec(), &IntSpec(2));
            assert_eq!(old.version().next(), new.version());
        }
        other => panic!("expected Updated, got {other:?}"),
    }
    state.teardown(&ptr("a"), None).await.unwrap();
    match events.next().await {
        Some(Event::Updated { old, new }) => {
            assert_eq!(old.phase(), Phase::Running);
            assert_eq!(new.phase(), Phase::TearingDown);
        }
        other => panic!("expected Updated, got {other:?}"),
    }
}

/// Checks that invalid input is rejected and nothing stored.
pub async fn check_invalid_input_is_rejected_and_nothing_stored(t: &mut dyn Target) {
    let state = t.open().await;
    let long = "x".repeat(257);
    let bad: Vec<(&str, Resource<IntSpec>)> = vec![
        ("empty id", Resource::new(NS, "", IntSpec(0))),
        ("empty namespace", Resource::new("", "a", IntSpec(0))),
        ("long id", Resource::new(NS, long.clone(), IntSpec(0))),
        ("control character", Resource::new(NS, "a\tb", IntSpec(0))),
        ("bad label key", {
            let mut r = int("a", 0);
            r.metadata_mut().labels_mut().insert("not a key", "v");
            r
        }),
        ("bad finalizer", {
            let mut r = int("a", 0);
            r.metadata_mut().finalizers_mut().add("");
            r
        }),
    ];
    for (what, r) in bad {
        let e = state.create(r, None).await.unwrap_err();
        assert!(e.is_invalid_input(), "{what}: {e}");
    }
    assert!(state.list(&kind(), &LabelQuery::all()).await.unwrap().is_empty());
    let bad_kind = Kind::new(NS, "");
    assert!(state.list(&bad_kind, &LabelQuery::all()).await.unwrap_err().is_invalid_input());
    let e = state.get(&Pointer::new(NS, long, "a")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    state.create(int("ok", 0), None).await.unwrap();
    let e = state.add_finalizer(&ptr("ok"), "bad\nfinalizer").await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    let e = state.watch_stream(&Pointer::new(NS, "T", "")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
}

/// Checks that wrong spec type is a type mismatch.
pub async fn check_wrong_spec_type_is_a_type_mismatch(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let e = state.get_typed::<StrSpec>(&ptr("a")).await.unwrap_err();
    assert!(e.is_type_mismatch(), "{e}");
    let e = state
        .modify(&ptr("a"), |r: &mut Resource<StrSpec>| r.spec_mut().0.push('!'), None)
        .await
        .unwrap_err();
    assert!(e.is_type_mismatch(), "{e}");
}

/// Checks that dynamic resources are read back typed.
pub async fn check_dynamic_resources_are_read_back_typed(t: &mut dyn Target) {
    let state = t.open().await;
    let manifest = serde_json::json!({
        "metadata": {"namespace": NS, "type": IntSpec::TYPE, "id": "from-yaml"},
        "spec": 12,
    });
    let dynamic: DynamicResource = serde_json::from_value(manifest).unwrap();
    state.create(dynamic, None).await.unwrap();
    let typed = state.get_typed::<IntSpec>(&ptr("from-yaml")).await.unwrap();
    assert_eq!(typed.spec(), &IntSpec(12));
    let back = state.get(&ptr("from-yaml")).await.unwrap().to_dynamic().unwrap();
    assert_eq!(back.spec(), &serde_json::json!(12));
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
    state.create(r, Some("owner")).await.unwrap();
    let mut events = state.watch_stream(&ptr("a")).await.unwrap();
    events.next().await.unwrap();
    let waiting = {
        let state = state.clone();
        actix::spawn(async move { state.teardown_and_destroy(&ptr("a"), Some("owner")).await })
    };
    events.next().await.unwrap(); // torn down
    state.remove_finalizer(&ptr("a"), "holder").await.unwrap();
    // Someone else may win the destroy; either way the waiter succeeds.
    let _ = state.destroy(&ptr("a"), Some("owner")).await;
    waiting.await.unwrap().unwrap();
    let e = state.teardown_and_destroy(&ptr("b"), None).await.unwrap_err();
    assert!(e.is_not_found());
}

/// Checks that a stalled subscriber stays bounded and catches up.
pub async fn check_a_stalled_subscriber_stays_bounded_and_catches_up(t: &mut dyn Target) {
    let state = t.open().await;
    const UPDATES: i64 = 10_000;
    const RESOURCES: usize = 10;
    for i in 0..RESOURCES {
        state.create(int(&format!("r{i}"), 0), None).await.unwrap();
    }
    let options = WatchOptions::default().with_window(64);
    // Never polled while the updates run: stalled.
    let mut stalled = state.watch_kind_stream(&kind(), LabelQuery::all(), &options).await.unwrap();
    let id = stalled.id();
    let mut max_seen = (0, 0);
    for n in 1..=UPDATES {
        let p = ptr(&format!("r{}", n as usize % RESOURCES));
        state.modify(&p, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None).await.unwrap();
        if n % 1_000 == 0 {
            let stats = state.watch_stats(id).await.unwrap();
            max_seen = (max_seen.0.max(stats.in_flight), max_seen.1.max(stats.backlog));
        }
    }
    assert!(max_seen.0 <= 64, "in flight bounded by the window: {max_seen:?}");
    assert!(max_seen.1 <= RESOURCES, "backlog bounded by resources: {max_seen:?}");

    // A healthy neighbour kept working throughout.
    assert_eq!(state.list(&kind(), &LabelQuery::all()).await.unwrap().len(), RESOURCES);

    // Catching up yields every resource's latest state, nothing lost.
    let mut latest: BTreeMap<Id, i64> = BTreeMap::new();
    let expected: BTreeMap<Id, i64> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| (Id::from(r.id()), r.typed::<IntSpec>().unwrap().spec().0))
        .collect();
    while latest != expected {
        match stalled.next().await {
            Some(Event::Updated { new, .. } | Event::Created(new)) => {
                latest.insert(Id::from(new.id()), new.typed::<IntSpec>().unwrap().spec().0);
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let stats = state.watch_stats(id).await.unwrap();
    assert_eq!(stats.backlog, 0);
}

/// Checks that recipient watches deliver to actors.
pub async fn check_recipient_watches_deliver_to_actors(t: &mut dyn Target) {
    let state = t.open().await;
    use actix::prelude::*;
    use futures::channel::mpsc;

    struct Forward(mpsc::UnboundedSender<Event>);
    impl Actor for Forward {
        type Context = Context<Self>;
    }
    impl Handler<WatchEvent> for Forward {
        type Result = ();
        fn handle(&mut self, msg: WatchEvent, _: &mut Context<Self>) {
            let _ = self.0.unbounded_send(msg.into_event());
        }
    }

    let (tx, mut rx) = mpsc::unbounded();
    let actor = Forward(tx).start();
    state.create(int("a", 1), None).await.unwrap();
    let id = state
        .watch_kind(&kind(), LabelQuery::all(), true, actor.clone().recipient())
        .await
        .unwrap();
    assert!(matches!(rx.next().await, Some(Event::Created(r)) if r.id() == "a"));
    assert!(matches!(rx.next().await, Some(Event::Bootstrapped(_))));
    state.destroy(&ptr("a"), None).await.unwrap();
    assert!(matches!(rx.next().await, Some(Event::Destroyed(_))));
    state.unwatch(id).await.unwrap();
    assert!(state.watch_stats(id).await.unwrap_err().is_invalid_input());
    let single = state.watch(&ptr("a"), actor.recipient()).await.unwrap();
    assert!(matches!(rx.next().await, Some(Event::Destroyed(r)) if r.is_tombstone()));
    state.unwatch(single).await.unwrap();
}

/// Checks that revisions grow per write and watches resume.
pub async fn check_revisions_grow_per_write_and_watches_resume(t: &mut dyn Target) {
    let state = t.open().await;
    let a = state.create(int("a", 1), None).await.unwrap();
    let b = state.create(int("b", 1), None).await.unwrap();
    assert!(b.metadata().revision() > a.metadata().revision(), "one revision per write");
    let mut watch = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    while !matches!(watch.next().await, Some(Event::Bootstrapped(_))) {}
    let seen = watch.revision();
    assert!(seen >= b.metadata().revision(), "caught up after bootstrap");
    drop(watch);
    // Missed while away: an update, a destroy, a create.
    let a2 = state
        .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    assert!(a2.metadata().revision() > b.metadata().revision());
    state.destroy(&ptr("b"), None).await.unwrap();
    state.create(int("c", 3), None).await.unwrap();
    let mut resumed = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(seen))
        .await
        .unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Updated { new, .. }) if new.id() == "a"));
    assert!(matches!(resumed.next().await, Some(Event::Destroyed(r)) if r.id() == "b"));
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "c"));
    // Nothing more was missed: the next event is a live one.
    state.create(int("d", 4), None).await.unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "d"));
    // A revision ahead of the state is refused, and so is one no longer kept
    // after a reopen (a memory state keeps everything it saw).
    let ahead = WatchOptions::resume_from(resumed.revision() + 1_000);
    let err = state.watch_kind_stream(&kind(), LabelQuery::all(), &ahead).await.unwrap_err();
    assert!(err.is_compacted(), "{err}");
    let both = WatchOptions { resume_from: Some(seen), ..WatchOptions::bootstrap() };
    let err = state.watch_kind_stream(&kind(), LabelQuery::all(), &both).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

/// Checks that a list carries the store revision of its snapshot: a watch
/// resumed from it delivers exactly what the list did not show.
pub async fn check_a_list_carries_the_revision_of_its_snapshot(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let b = state.create(int("b", 1), None).await.unwrap();
    let (items, revision) = state.list_with_revision(&kind(), &LabelQuery::all()).await.unwrap();
    assert_eq!(items.iter().map(|r| r.id().to_string()).collect::<Vec<_>>(), ["a", "b"]);
    assert!(revision >= b.metadata().revision(), "the snapshot holds b: {revision}");
    assert!(items.iter().all(|r| r.metadata().revision() <= revision));
    // The same snapshot, as a plain list sees it.
    assert_eq!(items, state.list(&kind(), &LabelQuery::all()).await.unwrap());
    // After the list: an update and a create.
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    state.create(int("c", 3), None).await.unwrap();
    let mut resumed = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(revision))
        .await
        .unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Updated { new, .. }) if new.id() == "a"));
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "c"));
    // Nothing the list showed comes again, nothing after is missed.
    state.create(int("d", 4), None).await.unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Created(r)) if r.id() == "d"));
    // Another namespace's kind, empty: a revision all the same, from which
    // a watch of it resumes. (Not compared with `revision`: in a state over
    // several stores, another namespace may count revisions of its own.)
    let other = Kind::of::<IntSpec>(NS_BESIDE);
    let (none, at) = state.list_with_revision(&other, &LabelQuery::all()).await.unwrap();
    assert!(none.is_empty());
    let mut beside = state
        .watch_kind_stream(&other, LabelQuery::all(), &WatchOptions::resume_from(at))
        .await
        .unwrap();
    let e = state.create(Resource::new(NS_BESIDE, "e", IntSpec(5)), None).await.unwrap();
    assert!(matches!(beside.next().await, Some(Event::Created(r)) if r.id() == "e"));
    assert!(e.metadata().revision() > at, "{} <= {at}", e.metadata().revision());
    let bad = Kind::new(NS, "");
    let err = state.list_with_revision(&bad, &LabelQuery::all()).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

/// Checks that a get with its revision reads the resource (or none) at a
/// store revision that holds every earlier write: a watch resumed from it
/// delivers what came after.
pub async fn check_a_get_carries_the_revision_it_was_read_at(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let b = state.create(int("b", 1), None).await.unwrap();
    let (found, revision) = state.get_with_revision(&ptr("a")).await.unwrap();
    assert_eq!(found, Some(state.get(&ptr("a")).await.unwrap()));
    assert!(revision >= b.metadata().revision(), "the read came after b: {revision}");
    let (none, at) = state.get_with_revision(&ptr("nope")).await.unwrap();
    assert_eq!((none, at), (None, revision), "nothing was written between the reads");
    state.modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None).await.unwrap();
    let mut after = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(revision))
        .await
        .unwrap();
    assert!(matches!(after.next().await, Some(Event::Updated { new, .. }) if new.id() == "a"));
    let bad = Pointer::of::<IntSpec>(NS, "");
    let err = state.get_with_revision(&bad).await.unwrap_err();
    assert!(err.is_invalid_input(), "{err}");
}

/// Checks that each namespace resumes from its own revisions, whichever
/// store holds it: writes to [`NS`] and [`NS_BESIDE`] interleaved, a list
/// of each with its revision, more interleaved writes, then a watch of each
/// resumed from its own list's revision gets exactly its namespace's
/// changes since, and then its live ones.
pub async fn check_each_namespace_resumes_from_its_own_revisions(t: &mut dyn Target) {
    let state = t.open().await;
    let beside = |id: &str, n: i64| Resource::new(NS_BESIDE, id, IntSpec(n));
    let kinds = [kind(), Kind::of::<IntSpec>(NS_BESIDE)];
    for i in 0..3 {
        state.create(int(&format!("a{i}"), i), None).await.unwrap();
        state.create(beside(&format!("x{i}"), i), None).await.unwrap();
    }
    let mut revisions = Vec::new();
    for k in &kinds {
        let (items, revision) = state.list_with_revision(k, &LabelQuery::all()).await.unwrap();
        assert_eq!(items.len(), 3, "{k}");
        assert!(items.iter().all(|r| r.metadata().revision() <= revision), "{k}");
        revisions.push(revision);
    }
    // Missed by both watches: interleaved writes to both namespaces.
    for i in 0..3 {
        let n = 10 + i;
        state
            .modify(
                &ptr(&format!("a{i}")),
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n,
                None,
            )
            .await
            .unwrap();
        let x = Pointer::of::<IntSpec>(NS_BESIDE, format!("x{i}"));
        state.destroy(&x, None).await.unwrap();
    }
    state.create(int("b", 7), None).await.unwrap();
    state.create(beside("y", 8), None).await.unwrap();
    let mut watches = Vec::new();
    for (k, revision) in kinds.iter().zip(&revisions) {
        let options = WatchOptions::resume_from(*revision);
        watches.push(state.watch_kind_stream(k, LabelQuery::all(), &options).await.unwrap());
    }
    let [mut mine, mut theirs] = <[_; 2]>::try_from(watches).expect("two watches");
    for i in 0..3 {
        let id = format!("a{i}");
        let got = mine.next().await;
        assert!(matches!(&got, Some(Event::Updated { new, .. }) if new.id() == id), "{got:?}");
    }
    assert!(matches!(mine.next().await, Some(Event::Created(r)) if r.id() == "b"));
    for i in 0..3 {
        let id = format!("x{i}");
        assert!(matches!(theirs.next().await, Some(Event::Destroyed(r)) if r.id() == id));
    }
    assert!(matches!(theirs.next().await, Some(Event::Created(r)) if r.id() == "y"));
    // Nothing else was missed: the next event of each is a live one.
    state.create(beside("z", 9), None).await.unwrap();
    state.create(int("c", 9), None).await.unwrap();
    assert!(matches!(theirs.next().await, Some(Event::Created(r)) if r.id() == "z"));
    assert!(matches!(mine.next().await, Some(Event::Created(r)) if r.id() == "c"));
    // Each watch's revisions grew from its own list's.
    assert!(mine.revision() > revisions[0] && theirs.revision() > revisions[1]);
}

/// Checks that `Destroyed` carries the destroy's own revision (above the
/// resource's last write), live and resumed.
pub async fn check_destroyed_carries_the_destroys_revision(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let mut live = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::bootstrap())
        .await
        .unwrap();
    while !matches!(live.next().await, Some(Event::Bootstrapped(_))) {}
    let before = live.revision();
    let a = state
        .modify(&ptr("a"), |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    state.destroy(&ptr("a"), None).await.unwrap();
    assert!(matches!(live.next().await, Some(Event::Updated { .. })));
    let Some(Event::Destroyed(gone)) = live.next().await else { panic!("a destroy") };
    let destroyed_at = gone.metadata().revision();
    assert!(destroyed_at > a.metadata().revision(), "{destroyed_at} after the last write");
    assert_eq!(destroyed_at, live.revision(), "the watch reached the destroy's revision");
    assert_eq!((gone.version(), gone.typed::<IntSpec>().unwrap().spec().0), (a.version(), 2));
    let again = state.create(int("a", 3), None).await.unwrap();
    assert!(again.metadata().revision() > destroyed_at);
    let mut resumed = state
        .watch_kind_stream(&kind(), LabelQuery::all(), &WatchOptions::resume_from(before))
        .await
        .unwrap();
    assert!(matches!(resumed.next().await, Some(Event::Updated { .. })));
    let Some(Event::Destroyed(gone)) = resumed.next().await else { panic!("a destroy") };
    assert_eq!(gone.metadata().revision(), destroyed_at, "history keeps the destroy's revision");
}

/// Checks that a subscriber that fell behind gets its coalesced backlog in
/// ascending revision (a resource's turn is that of its last change).
pub async fn check_a_coalesced_backlog_goes_out_in_ascending_revision(t: &mut dyn Target) {
    let state = t.open().await;
    const RESOURCES: usize = 10;
    for i in 0..RESOURCES {
        state.create(int(&format!("r{i}"), 0), None).await.unwrap();
    }
    // Never polled while the writes run: its window fills, the rest coalesces.
    let options = WatchOptions::default().with_window(4);
    let mut stalled = state.watch_kind_stream(&kind(), LabelQuery::all(), &options).await.unwrap();
    for n in 1..=200_i64 {
        // Touch the resources out of id order, and destroy and re-create one.
        let id = format!("r{}", (n as usize * 7) % RESOURCES);
        if n % 50 == 0 {
            state.destroy(&ptr(&id), None).await.unwrap();
            state.create(int(&id, n), None).await.unwrap();
        } else {
            let p = ptr(&id);
            state
                .modify(&p, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n, None)
                .await
                .unwrap();
        }
    }
    assert!(state.watch_stats(stalled.id()).await.unwrap().backlog > 0, "it fell behind");
    let expected: BTreeMap<String, i64> = state
        .list(&kind(), &LabelQuery::all())
        .await
        .unwrap()
        .iter()
        .map(|r| (r.id().to_string(), r.typed::<IntSpec>().unwrap().spec().0))
        .collect();
    let mut latest = BTreeMap::new();
    let mut last = 0;
    while latest != expected {
        let event = stalled.next().await.expect("the watch goes on");
        let resource = event.resource().expect("a resource event");
        let revision = resource.metadata().revision();
        assert!(revision >= last, "revision {revision} delivered after {last}: {event:?}");
        last = revision;
        match event {
            Event::Created(r) | Event::Updated { new: r, .. } => {
                latest.insert(r.id().to_string(), r.typed::<IntSpec>().unwrap().spec().0);
            }
            Event::Destroyed(r) => {
                latest.remove(r.id());
            }
            Event::Bootstrapped(_) => unreachable!("no bootstrap"),
        }
    }
}
