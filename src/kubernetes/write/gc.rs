//! Garbage collection of `ownerReferences` dependents when their owner is
//! deleted through the API, as the apiserver's garbage collector does, by
//! the delete's `propagationPolicy`:
//!
//! - `Background` (the default): the owner goes at once; its dependents are
//!   deleted after it, in the background, and theirs after them.
//! - `Foreground`: the owner is torn down holding the `foregroundDeletion`
//!   finalizer (it shows `deletionTimestamp`); its dependents are deleted,
//!   and once they are gone the finalizer is removed and the owner goes.
//! - `Orphan` (or the older `orphanDependents: true`): the dependents lose
//!   their reference to the owner and stay; the owner goes.
//!
//! A dependent is an object of any exposed type in the owner's namespace
//! whose `ownerReferences` name the owner's uid. The collector deletes as
//! the system does: a dependent a controller owns is deleted too (as its
//! owner, through the state), which a client's own DELETE of it is not.
//!
//! # Caveats
//! - Only deletes through the API collect: an owner destroyed through the
//!   [`State`](crate::State) leaves its dependents be.
//! - `blockOwnerDeletion` blocks nothing: a Foreground delete waits for
//!   every dependent.

use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::State;
use crate::kubernetes::object::OWNER_REFERENCES_ANNOTATION;
use crate::kubernetes::registry::Registry;
use crate::kubernetes::status::Status;
use crate::resource::{AnyResource, Kind, LabelQuery, Phase};
use crate::state::ExpectedPhase;

/// The finalizer a Foreground delete holds its owner with.
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// What becomes of an owner's dependents.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Propagation {
    Background,
    Foreground,
    Orphan,
}

impl Propagation {
    /// From a delete's options (its body) and query: `propagationPolicy`,
    /// else `orphanDependents`; `Background` when neither says.
    pub(crate) fn of(options: &Value, query: Option<&str>) -> Result<Propagation, Status> {
        let policy = options["propagationPolicy"].as_str().or(query);
        match policy {
            Some("Background") => Ok(Propagation::Background),
            Some("Foreground") => Ok(Propagation::Foreground),
            Some("Orphan") => Ok(Propagation::Orphan),
            Some(other) => Err(Status::bad_request(format!(
                "propagationPolicy {other:?}: expected Background, Foreground or Orphan"
            ))),
            None if options["orphanDependents"] == Value::Bool(true) => Ok(Propagation::Orphan),
            None => Ok(Propagation::Background),
        }
    }
}

/// The references kept on `resource`, as a list.
fn references(resource: &AnyResource) -> Vec<Value> {
    resource
        .metadata()
        .annotations()
        .get(OWNER_REFERENCES_ANNOTATION)
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default()
}

/// Whether `resource` names `uid` among its owners.
fn depends_on(resource: &AnyResource, uid: &str) -> bool {
    references(resource).iter().any(|r| r["uid"] == uid)
}

/// The objects of every exposed type in `namespace` that `uid` owns.
pub(crate) async fn dependents(
    state: &State,
    registry: &Registry,
    namespace: &str,
    uid: &str,
) -> Result<Vec<AnyResource>, crate::Error> {
    let mut found = Vec::new();
    let mut types: Vec<&str> = registry.types.iter().map(|t| t.resource_type.as_str()).collect();
    types.sort_unstable();
    types.dedup();
    for ty in types {
        let listed = state.list(&Kind::new(namespace, ty), &LabelQuery::all()).await?;
        found.extend(listed.into_iter().filter(|r| depends_on(r, uid)));
    }
    Ok(found)
}

/// Takes `uid` out of each dependent's references (an Orphan delete).
pub(crate) async fn orphan(
    state: &State,
    registry: &Registry,
    namespace: &str,
    uid: &str,
) -> Result<(), crate::Error> {
    for dependent in dependents(state, registry, namespace, uid).await? {
        let ptr = dependent.pointer().clone();
        let owner = dependent.owner().map(str::to_owned);
        let mut current = dependent;
        // Read, edit, update at the version read; again if another write won.
        for _ in 0..ATTEMPTS {
            let kept: Vec<Value> =
                references(&current).into_iter().filter(|r| r["uid"] != uid).collect();
            let mut edited = current.clone();
            let annotations = edited.metadata_mut().annotations_mut();
            if kept.is_empty() {
                annotations.remove(OWNER_REFERENCES_ANNOTATION);
            } else {
                annotations.insert(OWNER_REFERENCES_ANNOTATION, Value::Array(kept).to_string());
            }
            let phase = match current.phase() {
                Phase::Running => ExpectedPhase::Running,
                Phase::TearingDown => ExpectedPhase::TearingDown,
            };
            match state.update_with_phase(edited, owner.as_deref(), phase).await {
                Ok(_) => break,
                Err(e) if e.is_not_found() => break,
                Err(crate::Error::VersionConflict { .. } | crate::Error::PhaseConflict { .. }) => {
                    match state.get(&ptr).await {
                        Ok(again) => current = again,
                        Err(e) if e.is_not_found() => break,
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

/// How often an orphaning edit reads again after losing a race.
const ATTEMPTS: usize = 5;

/// Deletes every dependent of `uid`, each with its own dependents after it
/// (Background), and waits until they are gone.
pub(crate) fn collect<'a>(
    state: &'a State,
    registry: &'a Registry,
    namespace: &'a str,
    uid: String,
) -> Pin<Box<dyn Future<Output = Result<(), crate::Error>> + 'a>> {
    Box::pin(async move {
        for dependent in dependents(state, registry, namespace, &uid).await? {
            let ptr = dependent.pointer().clone();
            let owner = dependent.owner().map(str::to_owned);
            match state.teardown_and_destroy(&ptr, owner.as_deref()).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
            if let Some(theirs) = dependent.metadata().uid() {
                collect(state, registry, namespace, theirs.to_string()).await?;
            }
        }
        Ok(())
    })
}
