//! [`Metadata`]: the strictly defined part of every resource.

use std::fmt;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Annotations, Finalizers, Kind, Labels, Phase, Pointer, Timestamp, Uid, Version};

/// The metadata of a resource.
///
/// The address ([`Pointer`]: namespace, type, id) is immutable. The state sets
/// [`version`](Metadata::version), [`uid`](Metadata::uid),
/// [`owner`](Metadata::owner), [`created`](Metadata::created) and
/// [`updated`](Metadata::updated) on every write, whatever the caller sent
/// (except that an update must carry the version it read, and the uid if it
/// has one). Phase, finalizers, labels and annotations are stored as given.
///
/// Equality ignores what the state assigns beyond the version — the
/// timestamps, the [`revision`](Metadata::revision) and the
/// [`uid`](Metadata::uid) — and compares finalizers as a set. So a resource
/// built from scratch equals the stored one when its content does (which is
/// what lets [`modify`](crate::State::modify) write nothing when nothing
/// changed), and two incarnations with the same content compare equal:
/// compare [`uid`](Metadata::uid)s to tell them apart. The state's update
/// check does.
///
/// ```
/// use cosi_runtime::resource::{Metadata, Phase, Pointer, Version};
///
/// let mut md = Metadata::new(Pointer::new("network", "Links.net.cosi.dev", "eth0"));
/// md.labels_mut().insert("kind", "physical");
/// md.finalizers_mut().add("AddressController");
/// assert_eq!(md.version(), Version::UNSET);
/// assert_eq!(md.phase(), Phase::Running);
/// assert_eq!(md.owner(), None);
/// ```
#[derive(Clone)]
pub struct Metadata {
    pointer: Pointer,
    version: Version,
    revision: u64,
    uid: Option<Uid>,
    phase: Phase,
    owner: Option<Arc<str>>,
    finalizers: Finalizers,
    labels: Labels,
    annotations: Annotations,
    created: Timestamp,
    updated: Timestamp,
}

impl Metadata {
    /// Fresh metadata for `pointer`: unset version, running, no owner, nothing else.
    pub fn new(pointer: Pointer) -> Self {
        Metadata {
            pointer,
            version: Version::UNSET,
            revision: 0,
            uid: None,
            phase: Phase::Running,
            owner: None,
            finalizers: Finalizers::new(),
            labels: Labels::new(),
            annotations: Annotations::new(),
            created: Timestamp::EPOCH,
            updated: Timestamp::EPOCH,
        }
    }

    /// The address of the resource.
    pub fn pointer(&self) -> &Pointer {
        &self.pointer
    }

    /// The kind (namespace and type).
    pub fn kind(&self) -> &Kind {
        self.pointer.kind()
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        self.pointer.namespace()
    }

    /// The resource type.
    pub fn resource_type(&self) -> &str {
        self.pointer.resource_type()
    }

    /// The id.
    pub fn id(&self) -> &str {
        self.pointer.id()
    }

    /// The version (set by the state).
    pub fn version(&self) -> Version {
        self.version
    }

    /// Sets the version an update will be checked against.
    ///
    /// Normally the version read from the state is simply kept; this exists for
    /// callers that build a resource from scratch and know its stored version.
    pub fn set_version(&mut self, version: Version) {
        self.version = version;
    }

    /// The store revision of the write that produced this copy (its *mod
    /// revision*; 0 until stored). Set by the state: every committed write
    /// takes the next store-wide revision (see [`state`](crate::state)), so
    /// a destroyed and re-created resource never passes for the old one even
    /// though its version starts at 1 again. Ignored by equality, like the
    /// timestamps.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    pub(crate) fn set_revision(&mut self, revision: u64) {
        self.revision = revision;
    }

    /// The uid of the incarnation this copy belongs to (see [`Uid`]); `None`
    /// for a resource that was never stored.
    ///
    /// Set by the state: every create stores a new random uid (one the caller
    /// sent is replaced), and every later write keeps the stored one
    /// (update, modify, teardown, finalizer edits), whatever the caller sent.
    ///
    /// An update is checked against it where the version is checked: a uid
    /// that differs from the stored one is a
    /// [`VersionConflict`](crate::Error::VersionConflict) even at the same
    /// version (the resource was destroyed and created again since the copy
    /// was read). An update that carries **no** uid (built from scratch with
    /// [`set_version`](Metadata::set_version)) is checked by its version only.
    ///
    /// A resource stored before uids existed (a redb file or an etcd value
    /// written by an older build) gets one when it is loaded, derived from its
    /// address and its [`created`](Metadata::created) time: the same in every
    /// process and after every reopen, and stored with the next write.
    ///
    /// Serialized as `uid` (omitted when `None`). Ignored by equality.
    pub fn uid(&self) -> Option<Uid> {
        self.uid
    }

    /// Sets the uid an update will be checked against (`None`: the version
    /// only). Normally the uid read from the state is simply kept; this exists
    /// for callers that build a resource from scratch and know which
    /// incarnation they mean. A create replaces it.
    pub fn set_uid(&mut self, uid: Option<Uid>) {
        self.uid = uid;
    }

    /// The phase.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// Sets the phase. The state refuses to move a `TearingDown` resource back to
    /// `Running`; [`teardown`](crate::State::teardown) is the usual way in.
    pub fn set_phase(&mut self, phase: Phase) {
        self.phase = phase;
    }

    /// The owner: the name of the controller that created the resource, or
    /// `None` for resources created by users.
    pub fn owner(&self) -> Option<&str> {
        self.owner.as_deref()
    }

    /// The finalizers.
    pub fn finalizers(&self) -> &Finalizers {
        &self.finalizers
    }

    /// The finalizers, for changing.
    pub fn finalizers_mut(&mut self) -> &mut Finalizers {
        &mut self.finalizers
    }

    /// The labels.
    pub fn labels(&self) -> &Labels {
        &self.labels
    }

    /// The labels, for changing.
    pub fn labels_mut(&mut self) -> &mut Labels {
        &mut self.labels
    }

    /// The annotations.
    pub fn annotations(&self) -> &Annotations {
        &self.annotations
    }

    /// The annotations, for changing.
    pub fn annotations_mut(&mut self) -> &mut Annotations {
        &mut self.annotations
    }

    /// When the resource was created (set by the state).
    pub fn created(&self) -> Timestamp {
        self.created
    }

    /// When the resource was last written (set by the state).
    pub fn updated(&self) -> Timestamp {
        self.updated
    }

    pub(crate) fn set_owner(&mut self, owner: Option<Arc<str>>) {
        self.owner = owner;
    }

    pub(crate) fn owner_shared(&self) -> Option<&Arc<str>> {
        self.owner.as_ref()
    }

    pub(crate) fn set_created(&mut self, t: Timestamp) {
        self.created = t;
    }

    pub(crate) fn set_updated(&mut self, t: Timestamp) {
        self.updated = t;
    }

    pub(crate) fn intern_kind(&mut self, kind: &Kind) {
        if !self.pointer.kind().same_allocation(kind) {
            self.pointer.set_kind(kind.clone());
        }
    }
}

impl PartialEq for Metadata {
    fn eq(&self, other: &Self) -> bool {
        self.pointer == other.pointer
            && self.version == other.version
            && self.phase == other.phase
            && self.owner == other.owner
            && self.finalizers == other.finalizers
            && self.labels == other.labels
            && self.annotations == other.annotations
    }
}

impl Eq for Metadata {}

impl fmt::Debug for Metadata {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Metadata");
        d.field("pointer", &format_args!("{}", self.pointer))
            .field("version", &self.version)
            .field("phase", &self.phase)
            .field("owner", &self.owner);
        if let Some(uid) = &self.uid {
            d.field("uid", uid);
        }
        if !self.finalizers.is_empty() {
            d.field("finalizers", &self.finalizers);
        }
        if !self.labels.is_empty() {
            d.field("labels", &self.labels);
        }
        if !self.annotations.is_empty() {
            d.field("annotations", &self.annotations);
        }
        d.finish()
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The serialized shape, in the field order of the Go original.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    namespace: std::borrow::Cow<'a, str>,
    #[serde(rename = "type")]
    resource_type: std::borrow::Cow<'a, str>,
    id: std::borrow::Cow<'a, str>,
    /// Absent in data written before uids existed (see [`Metadata::uid`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uid: Option<Uid>,
    #[serde(default)]
    version: Version,
    #[serde(default, skip_serializing_if = "is_zero")]
    revision: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    owner: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    phase: Phase,
    #[serde(default)]
    created: Timestamp,
    #[serde(default)]
    updated: Timestamp,
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    labels: Labels,
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    annotations: Annotations,
    #[serde(default, skip_serializing_if = "Finalizers::is_empty")]
    finalizers: Finalizers,
}

impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            namespace: self.namespace().into(),
            resource_type: self.resource_type().into(),
            id: self.id().into(),
            uid: self.uid,
            version: self.version,
            revision: self.revision,
            owner: self.owner().map(Into::into),
            phase: self.phase,
            created: self.created,
            updated: self.updated,
            labels: self.labels.clone(),
            annotations: self.annotations.clone(),
            finalizers: self.finalizers.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Metadata {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let w = Wire::deserialize(d)?;
        if w.namespace.is_empty() || w.resource_type.is_empty() || w.id.is_empty() {
            return Err(D::Error::custom("metadata needs a non-empty namespace, type and id"));
        }
        Ok(Metadata {
            pointer: Pointer::new(w.namespace, w.resource_type, &*w.id),
            version: w.version,
            revision: w.revision,
            uid: w.uid,
            phase: w.phase,
            owner: w.owner.map(|o| Arc::from(o.as_ref())),
            finalizers: w.finalizers,
            labels: w.labels,
            annotations: w.annotations,
            created: w.created,
            updated: w.updated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md() -> Metadata {
        Metadata::new(Pointer::new("ns", "T", "a"))
    }

    #[test]
    fn equality_ignores_timestamps() {
        let a = md();
        let mut b = md();
        b.set_created(Timestamp::now());
        b.set_updated(Timestamp::now());
        assert_eq!(a, b);
        b.set_version(Version::new(2));
        assert_ne!(a, b);
    }

    #[test]
    fn equality_ignores_the_uid_and_debug_shows_it() {
        let a = md();
        let mut b = md();
        b.set_uid(Some(Uid::random()));
        assert_eq!(a, b, "state-assigned, like the timestamps");
        let mut c = b.clone();
        c.set_uid(Some(Uid::random()));
        assert_eq!(b, c);
        assert_ne!(b.uid(), c.uid());
        let uid = b.uid().unwrap();
        assert!(format!("{b:?}").contains(&uid.to_string()), "{b:?}");
        assert!(!format!("{a:?}").contains("uid"), "{a:?}");
    }

    #[test]
    fn the_uid_is_serialized_as_uid_and_optional() {
        let mut a = md();
        let json = serde_json::to_value(&a).unwrap();
        assert!(json.get("uid").is_none(), "omitted when none: {json}");
        let uid = Uid::random();
        a.set_uid(Some(uid));
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["uid"], uid.to_string());
        let back: Metadata = serde_json::from_value(json).unwrap();
        assert_eq!(back.uid(), Some(uid));
        // Written before uids existed: none.
        let old: Metadata =
            serde_json::from_str(r#"{"namespace":"ns","type":"T","id":"a","version":3}"#).unwrap();
        assert_eq!(old.uid(), None);
        let bad = r#"{"namespace":"ns","type":"T","id":"a","uid":"nope"}"#;
        assert!(serde_json::from_str::<Metadata>(bad).is_err());
    }

    #[test]
    fn equality_compares_finalizers_as_a_set() {
        let mut a = md();
        let mut b = md();
        a.finalizers_mut().add("x");
        a.finalizers_mut().add("y");
        b.finalizers_mut().add("y");
        b.finalizers_mut().add("x");
        assert_eq!(a, b);
    }

    #[test]
    fn metadata_round_trips_through_json() {
        let mut a = md();
        a.set_version(Version::new(3));
        a.set_owner(Some(Arc::from("ctrl")));
        a.labels_mut().insert("k", "v");
        a.finalizers_mut().add("f");
        a.set_phase(Phase::TearingDown);
        let json = serde_json::to_value(&a).unwrap();
        assert_eq!(json["type"], "T");
        assert_eq!(json["phase"], "tearingDown");
        let back: Metadata = serde_json::from_value(json).unwrap();
        assert_eq!(back, a);
    }

    #[test]
    fn deserializing_metadata_without_an_address_fails() {
        let err = serde_json::from_str::<Metadata>(r#"{"namespace":"","type":"T","id":"x"}"#);
        assert!(err.is_err());
    }
}
