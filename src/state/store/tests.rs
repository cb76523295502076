//! Unit tests of the [`Store`](super::Store): every rule of the contract, directly.

use super::*;
use crate::resource::test_specs::{Num, Text};
use crate::resource::{Resource, Uid, Version};

fn t(n: u64) -> Timestamp {
    Timestamp::from_unix_nanos(n)
}

fn num(id: &str, n: i64) -> AnyResource {
    Resource::new("ns", id, Num(n)).into_any()
}

fn ptr(id: &str) -> Pointer {
    Pointer::typed::<Num>("ns", id).erase()
}

fn set_num(n: i64) -> ModifyFn {
    Box::new(move |cur| {
        let mut r = match cur {
            Some(c) => c.typed::<Num>()?,
            None => Resource::new("ns", "m", Num(0)),
        };
        r.spec_mut().0 = n;
        Ok(r.into_any())
    })
}

#[test]
fn create_sets_version_owner_and_timestamps() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    r.metadata_mut().set_version(Version::new(99));
    let (stored, change) = s.create(r, Some("c"), t(5)).unwrap();
    assert_eq!(stored.version(), Version::INITIAL);
    assert_eq!(stored.owner(), Some("c"));
    assert_eq!(stored.metadata().created(), t(5));
    assert_eq!(stored.metadata().updated(), t(5));
    assert_eq!(change, Change::Created(stored.clone()));
    assert_eq!(s.get(&ptr("a")).unwrap(), stored);
}

#[test]
fn create_of_an_existing_id_is_already_exists() {
    let mut s = Store::new();
    s.create(num("a", 1), None, t(1)).unwrap();
    let e = s.create(num("a", 2), None, t(2)).unwrap_err();
    assert!(e.is_already_exists());
    assert_eq!(s.get(&ptr("a")).unwrap().typed::<Num>().unwrap().spec().0, 1);
}

#[test]
fn update_checks_not_found_owner_version_phase_in_that_order() {
    let mut s = Store::new();
    let e = s.update(num("a", 1), None, ExpectedPhase::Running, t(1)).unwrap_err();
    assert!(e.is_not_found());

    let (stored, _) = s.create(num("a", 1), Some("c"), t(1)).unwrap();
    s.teardown(&ptr("a"), Some("c"), t(2)).unwrap();
    // Wrong owner, wrong version and wrong phase at once: owner wins.
    let stale = stored.clone();
    let e = s.update(stale.clone(), Some("x"), ExpectedPhase::Running, t(3)).unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
    // Right owner, wrong version, wrong phase: version wins.
    let e = s.update(stale, Some("c"), ExpectedPhase::Running, t(3)).unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    // Right owner and version, wrong phase.
    let fresh = s.get(&ptr("a")).unwrap();
    let e = s.update(fresh.clone(), Some("c"), ExpectedPhase::Running, t(3)).unwrap_err();
    assert!(e.is_phase_conflict(), "{e}");
    // Expecting the phase it is in succeeds.
    let (updated, _) = s.update(fresh, Some("c"), ExpectedPhase::TearingDown, t(4)).unwrap();
    assert_eq!(updated.version(), Version::new(3));
}

#[test]
fn update_bumps_version_and_keeps_created() {
    let mut s = Store::new();
    let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
    let mut next = stored.typed::<Num>().unwrap();
    next.spec_mut().0 = 2;
    next.metadata_mut().set_version(Version::new(1));
    let (updated, change) = s.update(next.into_any(), None, ExpectedPhase::Running, t(9)).unwrap();
    assert_eq!(updated.version(), Version::new(2));
    assert_eq!(updated.metadata().created(), t(1));
    assert_eq!(updated.metadata().updated(), t(9));
    assert_eq!(change, Change::Updated { old: stored, new: updated });
}

#[test]
fn the_generation_counts_spec_changes_and_leaves_metadata_only_writes() {
    let mut s = Store::new();
    let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
    assert_eq!(stored.metadata().generation(), 1);
    let mut labelled = stored.typed::<Num>().unwrap();
    labelled.metadata_mut().labels_mut().insert("tier", "edge");
    let (labelled, _) = s.update(labelled.into_any(), None, ExpectedPhase::Running, t(2)).unwrap();
    assert_eq!((labelled.version(), labelled.metadata().generation()), (Version::new(2), 1));
    s.add_finalizer(&ptr("a"), "holder", t(3)).unwrap();
    let held = s.get(&ptr("a")).unwrap();
    assert_eq!((held.version(), held.metadata().generation()), (Version::new(3), 1));
    let mut changed = held.typed::<Num>().unwrap();
    changed.spec_mut().0 = 2;
    let (changed, _) = s.update(changed.into_any(), None, ExpectedPhase::Running, t(4)).unwrap();
    assert_eq!((changed.version(), changed.metadata().generation()), (Version::new(4), 2));
}

#[test]
fn data_stored_before_the_generation_counts_it_from_its_version() {
    let mut s = Store::new();
    let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
    let mut legacy = stored.clone();
    legacy.metadata_mut().set_generation(0);
    legacy.metadata_mut().set_version(Version::new(7));
    let mut reopened = Store::new();
    reopened.load(vec![legacy], 10);
    let mut changed = reopened.get(&ptr("a")).unwrap().typed::<Num>().unwrap();
    changed.spec_mut().0 = 5;
    let update = changed.into_any();
    let (changed, _) = reopened.update(update, None, ExpectedPhase::Running, t(2)).unwrap();
    assert_eq!(changed.metadata().generation(), 8, "from version 7, one spec change");
}

#[test]
fn update_with_a_bumped_version_is_a_conflict() {
    let mut s = Store::new();
    let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
    let mut r = stored.clone();
    r.metadata_mut().set_version(stored.version().next());
    let e = s.update(r, None, ExpectedPhase::Running, t(2)).unwrap_err();
    assert!(e.is_version_conflict());
}

#[test]
fn no_op_modify_writes_nothing() {
    let mut s = Store::new();
    let (a, change) = s
        .modify(&Pointer::typed::<Num>("ns", "m"), &set_num(1), None, ExpectedPhase::Running, t(1))
        .unwrap();
    assert!(matches!(change, Some(Change::Created(_))));
    let (b, change) = s
        .modify(&Pointer::typed::<Num>("ns", "m"), &set_num(1), None, ExpectedPhase::Running, t(2))
        .unwrap();
    assert_eq!(change, None);
    assert_eq!(b.version(), a.version());
    assert_eq!(b.metadata().updated(), t(1));
    let (c, change) = s
        .modify(&Pointer::typed::<Num>("ns", "m"), &set_num(2), None, ExpectedPhase::Running, t(3))
        .unwrap();
    assert!(matches!(change, Some(Change::Updated { .. })));
    assert_eq!(c.version(), Version::new(2));
}

#[test]
fn modify_checks_owner_and_phase_even_for_no_op_changes() {
    let mut s = Store::new();
    let p = Pointer::typed::<Num>("ns", "m");
    s.modify(&p, &set_num(1), Some("c"), ExpectedPhase::Running, t(1)).unwrap();
    let e = s.modify(&p, &set_num(1), None, ExpectedPhase::Running, t(2)).unwrap_err();
    assert!(e.is_owner_conflict());
    s.teardown(&p, Some("c"), t(3)).unwrap();
    let e = s.modify(&p, &set_num(1), Some("c"), ExpectedPhase::Running, t(4)).unwrap_err();
    assert!(e.is_phase_conflict());
}

#[test]
fn modify_returning_another_address_is_invalid_input() {
    let mut s = Store::new();
    let f: ModifyFn = Box::new(|_| Ok(Resource::new("ns", "elsewhere", Num(1)).into_any()));
    let e = s.modify(&ptr("m"), &f, None, ExpectedPhase::Running, t(1)).unwrap_err();
    assert!(e.is_invalid_input());
    assert!(s.is_empty());
}

#[test]
fn destroy_requires_owner_and_no_finalizers_but_not_teardown() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    r.metadata_mut().finalizers_mut().add("f");
    s.create(r, Some("c"), t(1)).unwrap();
    assert!(s.destroy(&ptr("a"), None).unwrap_err().is_owner_conflict());
    assert!(s.destroy(&ptr("a"), Some("c")).unwrap_err().is_pending_finalizers());
    s.remove_finalizer(&ptr("a"), "f", t(2)).unwrap();
    let change = s.destroy(&ptr("a"), Some("c")).unwrap();
    assert!(matches!(change, Change::Destroyed(r) if r.version() == Version::new(2)));
    assert!(s.destroy(&ptr("a"), Some("c")).unwrap_err().is_not_found());
}

#[test]
fn teardown_is_idempotent_and_reports_readiness() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    r.metadata_mut().finalizers_mut().add("f");
    s.create(r, None, t(1)).unwrap();
    let (ready, change) = s.teardown(&ptr("a"), None, t(2)).unwrap();
    assert!(!ready);
    assert!(change.is_some());
    let (ready, change) = s.teardown(&ptr("a"), None, t(3)).unwrap();
    assert!(!ready);
    assert!(change.is_none());
    s.remove_finalizer(&ptr("a"), "f", t(4)).unwrap();
    let (ready, change) = s.teardown(&ptr("a"), None, t(5)).unwrap();
    assert!(ready && change.is_none());
    assert_eq!(s.get(&ptr("a")).unwrap().version(), Version::new(3));
}

#[test]
fn a_torn_down_resource_cannot_return_to_running() {
    let mut s = Store::new();
    s.create(num("a", 1), None, t(1)).unwrap();
    s.teardown(&ptr("a"), None, t(2)).unwrap();
    let mut r = s.get(&ptr("a")).unwrap();
    r.metadata_mut().set_phase(Phase::Running);
    let e = s.update(r, None, ExpectedPhase::Any, t(3)).unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
}

#[test]
fn finalizer_edits_ignore_owner_and_phase_and_skip_no_ops() {
    let mut s = Store::new();
    s.create(num("a", 1), Some("c"), t(1)).unwrap();
    s.teardown(&ptr("a"), Some("c"), t(2)).unwrap();
    assert!(s.add_finalizer(&ptr("a"), "f", t(3)).unwrap().is_some());
    assert!(s.add_finalizer(&ptr("a"), "f", t(4)).unwrap().is_none());
    assert!(s.remove_finalizer(&ptr("a"), "g", t(5)).unwrap().is_none());
    assert!(s.remove_finalizer(&ptr("a"), "f", t(6)).unwrap().is_some());
    assert_eq!(s.get(&ptr("a")).unwrap().version(), Version::new(4));
    assert!(s.add_finalizer(&ptr("zz"), "f", t(7)).unwrap_err().is_not_found());
}

#[test]
fn list_is_sorted_by_id_and_filtered_by_labels() {
    let mut s = Store::new();
    for id in ["c", "a", "b"] {
        let mut r = num(id, 1);
        if id != "b" {
            r.metadata_mut().labels_mut().insert("keep", "yes");
        }
        s.create(r, None, t(1)).unwrap();
    }
    s.create(Resource::new("ns", "z", Text("x".into())).into_any(), None, t(1)).unwrap();
    let kind = Kind::of::<Num>("ns");
    let ids: Vec<String> =
        s.list(&kind, &LabelQuery::all()).unwrap().iter().map(|r| r.id().to_owned()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
    let kept = s.list(&kind, &LabelQuery::all().exists("keep")).unwrap();
    assert_eq!(kept.len(), 2);
    assert!(s.list(&Kind::of::<Num>("other"), &LabelQuery::all()).unwrap().is_empty());
}

#[test]
fn invalid_input_stores_nothing() {
    let mut s = Store::new();
    let bad_id = Resource::new("ns", "", Num(1)).into_any();
    assert!(s.create(bad_id, None, t(1)).unwrap_err().is_invalid_input());
    let mut bad_label = num("a", 1);
    bad_label.metadata_mut().labels_mut().insert("no spaces allowed", "x");
    assert!(s.create(bad_label, None, t(1)).unwrap_err().is_invalid_input());
    let long_ns = Resource::new("n".repeat(300), "a", Num(1)).into_any();
    assert!(s.create(long_ns, None, t(1)).unwrap_err().is_invalid_input());
    assert!(s.is_empty());
    assert!(s.get(&Pointer::new("ns", "T\u{7}", "a")).unwrap_err().is_invalid_input());
}

#[test]
fn every_write_takes_the_next_revision_and_no_ops_take_none() {
    let mut s = Store::new();
    let (a, _) = s.create(num("a", 1), None, t(1)).unwrap();
    assert_eq!((a.metadata().revision(), s.revision()), (1, 1));
    let (a2, _) = s.modify(&ptr("a"), &set_num(2), None, ExpectedPhase::Running, t(2)).unwrap();
    assert_eq!(a2.metadata().revision(), 2);
    s.modify(&ptr("a"), &set_num(2), None, ExpectedPhase::Running, t(3)).unwrap();
    assert_eq!(s.revision(), 2, "a no-op modify takes no revision");
    assert!(s.create(num("a", 9), None, t(4)).is_err());
    assert_eq!(s.revision(), 2, "a failed write takes no revision");
    s.add_finalizer(&ptr("a"), "f", t(5)).unwrap();
    s.add_finalizer(&ptr("a"), "f", t(6)).unwrap();
    assert_eq!(s.revision(), 3);
    s.remove_finalizer(&ptr("a"), "f", t(7)).unwrap();
    s.destroy(&ptr("a"), None).unwrap();
    assert_eq!(s.revision(), 5, "a destroy takes one too");
}

#[test]
fn rollback_restores_what_the_changes_replaced() {
    let mut s = Store::new();
    let (kept, _) = s.create(num("kept", 1), None, t(1)).unwrap();
    let (gone, _) = s.create(num("gone", 1), None, t(1)).unwrap();
    let mut modify =
        |n| s.modify(&ptr("kept"), &set_num(n), None, ExpectedPhase::Running, t(2)).unwrap().1;
    let (five, six) = (modify(5).unwrap(), modify(6).unwrap());
    let new = s.create(num("new", 1), None, t(2)).unwrap().1;
    let changes = [five, six, new, s.destroy(&ptr("gone"), None).unwrap()];
    let revision = s.revision();
    s.rollback(changes.iter());
    assert_eq!(s.get(&ptr("kept")).unwrap(), kept);
    assert_eq!(s.get(&ptr("kept")).unwrap().metadata().revision(), kept.metadata().revision());
    assert_eq!(s.get(&ptr("gone")).unwrap(), gone);
    assert!(s.get(&ptr("new")).unwrap_err().is_not_found());
    assert_eq!(s.len(), 2);
    assert_eq!(s.revision(), revision, "revisions are never reused");
    let (next, _) = s.create(num("next", 1), None, t(3)).unwrap();
    assert_eq!(next.metadata().revision(), revision + 1);
}

#[test]
fn load_keeps_what_was_stored_and_moves_the_revision_up() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    r.metadata_mut().set_revision(41);
    r.metadata_mut().set_version(Version::new(7));
    s.load(vec![r], 40);
    let a = s.get(&ptr("a")).unwrap();
    assert_eq!((a.version(), a.metadata().revision(), s.revision()), (Version::new(7), 41, 41));
    s.load(Vec::new(), 50);
    assert_eq!(s.revision(), 50);
}

#[test]
fn an_update_from_another_incarnation_is_a_version_conflict() {
    let mut s = Store::new();
    let (first, _) = s.create(num("a", 1), None, t(1)).unwrap();
    s.destroy(&ptr("a"), None).unwrap();
    let (second, _) = s.create(num("a", 2), None, t(2)).unwrap();
    assert_eq!(first.version(), second.version(), "both at version 1");
    assert_ne!(first.metadata().uid(), second.metadata().uid());
    let mut stale = first.typed::<Num>().unwrap();
    stale.spec_mut().0 = 99;
    let e = s.update(stale.into_any(), None, ExpectedPhase::Running, t(3)).unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    let now = s.get(&ptr("a")).unwrap();
    assert_eq!(now.typed::<Num>().unwrap().spec(), &Num(2), "the new incarnation untouched");
    assert_eq!(now.metadata().revision(), second.metadata().revision());
    // The owner is still checked first.
    s.destroy(&ptr("a"), None).unwrap();
    s.create(num("a", 3), Some("c"), t(4)).unwrap();
    let e = s.update(first, None, ExpectedPhase::Running, t(5)).unwrap_err();
    assert!(e.is_owner_conflict(), "{e}");
}

#[test]
fn the_uid_is_the_states_set_at_create_and_kept_by_every_write() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    let sent = Uid::random();
    r.metadata_mut().set_uid(Some(sent));
    let (created, _) = s.create(r, None, t(1)).unwrap();
    let uid = created.metadata().uid().expect("a stored resource has a uid");
    assert_ne!(uid, sent, "a create replaces the caller's uid");
    let (updated, _) = s.update(created, None, ExpectedPhase::Running, t(2)).unwrap();
    assert_eq!(updated.metadata().uid(), Some(uid));
    let (modified, _) =
        s.modify(&ptr("a"), &set_num(5), None, ExpectedPhase::Running, t(3)).unwrap();
    assert_eq!(modified.metadata().uid(), Some(uid));
    s.add_finalizer(&ptr("a"), "f", t(4)).unwrap();
    assert_eq!(s.get(&ptr("a")).unwrap().metadata().uid(), Some(uid));
    s.teardown(&ptr("a"), None, t(5)).unwrap();
    assert_eq!(s.get(&ptr("a")).unwrap().metadata().uid(), Some(uid));
    s.remove_finalizer(&ptr("a"), "f", t(6)).unwrap();
    let Change::Destroyed(gone) = s.destroy(&ptr("a"), None).unwrap() else { panic!() };
    assert_eq!(gone.metadata().uid(), Some(uid));
    let (again, _) = s.create(num("a", 1), None, t(7)).unwrap();
    assert_ne!(again.metadata().uid(), Some(uid), "another incarnation, another uid");
}

#[test]
fn an_update_without_a_uid_checks_the_version_only() {
    let mut s = Store::new();
    let (stored, _) = s.create(num("a", 1), None, t(1)).unwrap();
    let mut scratch = num("a", 2);
    scratch.metadata_mut().set_version(stored.version());
    let (updated, _) = s.update(scratch, None, ExpectedPhase::Running, t(2)).unwrap();
    assert_eq!(updated.metadata().uid(), stored.metadata().uid(), "the stored uid kept");
    assert_eq!(updated.version(), Version::new(2));
    let mut foreign = updated.clone();
    foreign.metadata_mut().set_uid(Some(Uid::random()));
    let e = s.update(foreign, None, ExpectedPhase::Running, t(3)).unwrap_err();
    assert!(e.is_version_conflict(), "a uid that is not the stored one: {e}");
}

#[test]
fn a_modify_that_builds_from_scratch_is_still_a_no_op_when_nothing_changed() {
    let mut s = Store::new();
    let from_scratch: ModifyFn = Box::new(|_| Ok(Resource::new("ns", "m", Num(1)).into_any()));
    let p = Pointer::typed::<Num>("ns", "m");
    let (a, change) = s.modify(&p, &from_scratch, None, ExpectedPhase::Running, t(1)).unwrap();
    assert!(matches!(change, Some(Change::Created(_))));
    let (b, change) = s.modify(&p, &from_scratch, None, ExpectedPhase::Running, t(2)).unwrap();
    assert_eq!(change, None, "no uid in the function's result is no change");
    assert_eq!(b.metadata().uid(), a.metadata().uid());
    assert_eq!(b.metadata().revision(), a.metadata().revision());
}

#[test]
fn resources_loaded_without_a_uid_get_a_stable_one() {
    let old = || {
        let mut r = num("a", 1);
        r.metadata_mut().set_created(t(1_000));
        r.metadata_mut().set_version(Version::new(3));
        r.metadata_mut().set_revision(7);
        r
    };
    let mut s = Store::new();
    s.load(vec![old()], 7);
    let uid = s.get(&ptr("a")).unwrap().metadata().uid().expect("derived at load");
    let mut again = Store::new();
    again.load(vec![old()], 7);
    assert_eq!(again.get(&ptr("a")).unwrap().metadata().uid(), Some(uid), "after a reopen");
    // Stored with the next write; and a stale copy from before is refused.
    let (updated, _) = s.update(old(), None, ExpectedPhase::Running, t(2_000)).unwrap();
    assert_eq!(updated.metadata().uid(), Some(uid));
    let mut kept = num("b", 1);
    let given = Uid::random();
    kept.metadata_mut().set_uid(Some(given));
    s.load(vec![kept], 0);
    assert_eq!(s.get(&ptr("b")).unwrap().metadata().uid(), Some(given), "as stored");
    // A change fed by another writer gets the same.
    let mut fed = Store::new();
    let change = fed.put_external(old());
    assert_eq!(change.resource().metadata().uid(), Some(uid));
}

#[test]
fn stored_resources_share_one_kind_allocation() {
    let mut s = Store::new();
    let (a, _) = s.create(num("a", 1), None, t(1)).unwrap();
    let (b, _) = s.create(num("b", 1), None, t(1)).unwrap();
    assert!(a.pointer().kind().same_allocation(b.pointer().kind()));
}

#[test]
fn an_update_keeping_finalizers_refuses_a_change_after_the_other_checks() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    let (stored, _) = s.create(r, Some("c"), t(1)).unwrap();
    let mut dropped = stored.clone();
    dropped.metadata_mut().finalizers_mut().remove("holder");
    // A stale version is a conflict first, as for any update.
    let mut stale = dropped.clone();
    stale.metadata_mut().set_version(Version::new(7));
    let e = s.update_keeping(stale, Some("c"), ExpectedPhase::Running, true, t(2)).unwrap_err();
    assert!(e.is_version_conflict(), "{e}");
    // The phase comes before the finalizers too.
    let e = s.update_keeping(dropped.clone(), Some("c"), ExpectedPhase::TearingDown, true, t(2));
    assert!(e.unwrap_err().is_phase_conflict());
    // Then the finalizers: refused, naming the controller; nothing written.
    let e = s.update_keeping(dropped.clone(), Some("c"), ExpectedPhase::Running, true, t(2));
    match e.unwrap_err() {
        Error::AccessDenied { controller, operation, resource, .. } => {
            assert_eq!((controller.as_str(), operation), ("c", "update"));
            assert_eq!(resource, ptr("a").to_string());
        }
        other => panic!("expected AccessDenied, got {other:?}"),
    }
    assert_eq!(s.get(&ptr("a")).unwrap().version(), Version::INITIAL);
    // Without the rule (a user's update) the same write goes through.
    let (updated, _) = s.update(dropped, Some("c"), ExpectedPhase::Running, t(3)).unwrap();
    assert!(updated.metadata().finalizers().is_empty());
}

#[test]
fn a_modify_keeping_finalizers_without_an_owner_names_the_writer_as_such() {
    let mut s = Store::new();
    let mut r = num("a", 1);
    r.metadata_mut().finalizers_mut().add("holder");
    s.create(r, None, t(1)).unwrap();
    let drop_holder: ModifyFn = Box::new(|cur| {
        let mut r = cur.expect("stored").clone();
        r.metadata_mut().finalizers_mut().remove("holder");
        Ok(r)
    });
    let e = s.modify_keeping(&ptr("a"), &drop_holder, None, ExpectedPhase::Running, true, t(2));
    match e.unwrap_err() {
        Error::AccessDenied { controller, operation, .. } => {
            assert_eq!((controller.as_str(), operation), (NO_OWNER, "modify"));
            assert!(!controller.is_empty());
        }
        other => panic!("expected AccessDenied, got {other:?}"),
    }
    assert_eq!(s.get(&ptr("a")).unwrap().metadata().finalizers().len(), 1, "nothing written");
}
