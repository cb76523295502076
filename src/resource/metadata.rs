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
    generation: u64,
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
            generation: 0,
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

    /// How many times the spec was written to a new value, counting the
    /// create as the first (0 until stored, and in data stored before the
    /// count existed). Set by the state: a write that changes only
    /// metadata (labels, annotations, finalizers, the phase) leaves it,
    /// where it moves the [`version`](Self::version). What the Kubernetes
    /// API serves as `metadata.generation`. Ignored by equality.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub(crate) fn set_generation(&mut self, generation: u64) {
        self.generation = generation;
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
            .field("generation", &self.generation)
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

/// The serialized shape, in the field order of the Go original: what
/// [`Metadata`]'s `Deserialize` reads. Its `Serialize` (and
/// [`Metadata::write_json`]) writes the same fields in the same order from
/// borrowed parts; a test pins the bytes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire<'a> {
    namespace: std::borrow::Cow<'a, str>,
    #[serde(rename = "type")]
    resource_type: std::borrow::Cow<'a, str>,
    id: std::borrow::Cow<'a, str>,
    /// Absent in data written before uids existed (see [`Metadata::uid`]).
    #[serde(default)]
    uid: Option<Uid>,
    #[serde(default)]
    version: Version,
    /// Absent in data written before the count existed, and until stored.
    #[serde(default)]
    generation: u64,
    #[serde(default)]
    revision: u64,
    #[serde(default)]
    owner: Option<std::borrow::Cow<'a, str>>,
    #[serde(default)]
    phase: Phase,
    #[serde(default)]
    created: Timestamp,
    #[serde(default)]
    updated: Timestamp,
    #[serde(default)]
    labels: Labels,
    #[serde(default)]
    annotations: Annotations,
    #[serde(default)]
    finalizers: Finalizers,
}

/// Serialized from borrowed parts (no copy of the labels, annotations or
/// finalizers): it runs for every record a durable backend writes.
impl Serialize for Metadata {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let optional = usize::from(self.uid.is_some())
            + usize::from(self.generation != 0)
            + usize::from(self.revision != 0)
            + usize::from(self.owner.is_some())
            + usize::from(!self.labels.is_empty())
            + usize::from(!self.annotations.is_empty())
            + usize::from(!self.finalizers.is_empty());
        let mut st = s.serialize_struct("Metadata", 7 + optional)?;
        st.serialize_field("namespace", self.namespace())?;
        st.serialize_field("type", self.resource_type())?;
        st.serialize_field("id", self.id())?;
        match &self.uid {
            Some(uid) => st.serialize_field("uid", uid)?,
            None => st.skip_field("uid")?,
        }
        st.serialize_field("version", &self.version)?;
        if self.generation != 0 {
            st.serialize_field("generation", &self.generation)?;
        } else {
            st.skip_field("generation")?;
        }
        if self.revision != 0 {
            st.serialize_field("revision", &self.revision)?;
        } else {
            st.skip_field("revision")?;
        }
        match self.owner() {
            Some(owner) => st.serialize_field("owner", owner)?,
            None => st.skip_field("owner")?,
        }
        st.serialize_field("phase", &self.phase)?;
        st.serialize_field("created", &self.created)?;
        st.serialize_field("updated", &self.updated)?;
        if self.labels.is_empty() {
            st.skip_field("labels")?;
        } else {
            st.serialize_field("labels", &self.labels)?;
        }
        if self.annotations.is_empty() {
            st.skip_field("annotations")?;
        } else {
            st.serialize_field("annotations", &self.annotations)?;
        }
        if self.finalizers.is_empty() {
            st.skip_field("finalizers")?;
        } else {
            st.serialize_field("finalizers", &self.finalizers)?;
        }
        st.end()
    }
}

impl Metadata {
    /// Appends the JSON of [`Serialize`] to `out`, byte for byte (a test
    /// compares them), written directly: serde_json escapes every field
    /// name and goes through a map serializer per field, a sizeable share of
    /// a durable write's cost for text that is known in advance.
    #[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
    pub(crate) fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(br#"{"namespace":"#);
        json_str(out, self.namespace());
        out.extend_from_slice(br#","type":"#);
        json_str(out, self.resource_type());
        out.extend_from_slice(br#","id":"#);
        json_str(out, self.id());
        if let Some(uid) = &self.uid {
            out.extend_from_slice(br#","uid":""#);
            let mut buf = uuid::Uuid::encode_buffer();
            out.extend_from_slice(uid.as_uuid().hyphenated().encode_lower(&mut buf).as_bytes());
            out.push(b'"');
        }
        out.extend_from_slice(br#","version":"#);
        json_u64(out, self.version.get());
        if self.generation != 0 {
            out.extend_from_slice(br#","generation":"#);
            json_u64(out, self.generation);
        }
        if self.revision != 0 {
            out.extend_from_slice(br#","revision":"#);
            json_u64(out, self.revision);
        }
        if let Some(owner) = self.owner() {
            out.extend_from_slice(br#","owner":"#);
            json_str(out, owner);
        }
        out.extend_from_slice(match self.phase {
            Phase::Running => br#","phase":"running""#.as_slice(),
            Phase::TearingDown => br#","phase":"tearingDown""#.as_slice(),
        });
        out.extend_from_slice(br#","created":""#);
        out.extend_from_slice(&self.created.rfc3339_bytes());
        out.extend_from_slice(br#"","updated":""#);
        out.extend_from_slice(&self.updated.rfc3339_bytes());
        out.push(b'"');
        for (name, map) in
            [(&br#","labels":{"#[..], &self.labels), (br#","annotations":{"#, &self.annotations)]
        {
            if map.is_empty() {
                continue;
            }
            out.extend_from_slice(name);
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(out, k);
                out.push(b':');
                json_str(out, v);
            }
            out.push(b'}');
        }
        if !self.finalizers.is_empty() {
            out.extend_from_slice(br#","finalizers":["#);
            for (i, f) in self.finalizers.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_str(out, f);
            }
            out.push(b']');
        }
        out.push(b'}');
    }
}

/// `s` as a JSON string, escaped exactly as serde_json escapes (it is used
/// when anything needs escaping: control characters, `"` and `\`).
#[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
fn json_str(out: &mut Vec<u8>, s: &str) {
    if !needs_escape(s.as_bytes()) {
        out.reserve(s.len() + 2);
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Writing a string to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Whether any byte of `s` is one JSON escapes (below 0x20, `"`, `\\`).
/// Eight bytes at a time (a byte-wise check costs several instructions per
/// byte, and every string of every durable write goes through here): each
/// test below is nonzero exactly when some byte of the word is
/// below 0x20, or zero after the XOR (that is, equal to the character).
#[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
fn needs_escape(s: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let below = |w: u64, n: u8| w.wrapping_sub(ONES * u64::from(n)) & !w & HIGH;
    let mut words = s.chunks_exact(8);
    for chunk in &mut words {
        let w = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        if below(w, 0x20)
            | below(w ^ (ONES * u64::from(b'"')), 1)
            | below(w ^ (ONES * u64::from(b'\\')), 1)
            != 0
        {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\')
}

/// `n` in decimal.
#[cfg_attr(not(any(feature = "redb", feature = "etcd")), allow(dead_code))]
fn json_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[at..]);
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
            generation: w.generation,
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

    /// The derived encoding this crate wrote before `Serialize` was written
    /// by hand: what every existing state file holds.
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct FormerWire {
        namespace: String,
        #[serde(rename = "type")]
        resource_type: String,
        id: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        uid: Option<Uid>,
        version: Version,
        #[serde(skip_serializing_if = "is_zero")]
        revision: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        owner: Option<String>,
        phase: Phase,
        #[serde(serialize_with = "former_timestamp")]
        created: Timestamp,
        #[serde(serialize_with = "former_timestamp")]
        updated: Timestamp,
        #[serde(skip_serializing_if = "Labels::is_empty")]
        labels: Labels,
        #[serde(skip_serializing_if = "Annotations::is_empty")]
        annotations: Annotations,
        #[serde(skip_serializing_if = "Finalizers::is_empty")]
        finalizers: Finalizers,
    }

    fn is_zero(n: &u64) -> bool {
        *n == 0
    }

    /// The former `Timestamp` serialization (humantime through `collect_str`).
    fn former_timestamp<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&humantime::format_rfc3339_nanos(t.to_system_time()))
    }

    fn former(md: &Metadata) -> String {
        serde_json::to_string(&FormerWire {
            namespace: md.namespace().into(),
            resource_type: md.resource_type().into(),
            id: md.id().into(),
            uid: md.uid(),
            version: md.version(),
            revision: md.revision(),
            owner: md.owner().map(Into::into),
            phase: md.phase(),
            created: md.created(),
            updated: md.updated(),
            labels: md.labels().clone(),
            annotations: md.annotations().clone(),
            finalizers: md.finalizers().clone(),
        })
        .unwrap()
    }

    fn full() -> Metadata {
        let mut a = Metadata::new(Pointer::new("ns", "Links.net.cosi.dev", "eth0"));
        a.set_uid(Some("67e55044-10b1-426f-9247-bb680e5fe0c8".parse().unwrap()));
        a.set_version(Version::new(12));
        a.set_revision(345);
        a.set_owner(Some(Arc::from("LinkController")));
        a.set_phase(Phase::TearingDown);
        a.set_created(Timestamp::from_unix_nanos(1_700_000_000_123_456_789));
        a.set_updated(Timestamp::from_unix_nanos(1_700_000_100_000_000_001));
        a.labels_mut().insert("kind", "physical");
        a.labels_mut().insert("app", "net");
        a.annotations_mut().insert("note", "two\nlines, a \"quote\", a \\ and é");
        a.finalizers_mut().add("AddressController");
        a.finalizers_mut().add("RouteController");
        a
    }

    /// Existing files must still load and new ones read the same: the
    /// encoding of a full metadata is pinned, equals the former derived one,
    /// and `write_json` (the durable backends' path) writes the same bytes.
    #[test]
    fn the_encoding_of_a_full_metadata_is_pinned_and_round_trips() {
        let a = full();
        let pinned = concat!(
            r#"{"namespace":"ns","type":"Links.net.cosi.dev","id":"eth0","#,
            r#""uid":"67e55044-10b1-426f-9247-bb680e5fe0c8","version":12,"revision":345,"#,
            r#""owner":"LinkController","phase":"tearingDown","#,
            r#""created":"2023-11-14T22:13:20.123456789Z","#,
            r#""updated":"2023-11-14T22:15:00.000000001Z","#,
            r#""labels":{"app":"net","kind":"physical"},"#,
            r#""annotations":{"note":"two\nlines, a \"quote\", a \\ and é"},"#,
            r#""finalizers":["AddressController","RouteController"]}"#,
        );
        assert_eq!(serde_json::to_string(&a).unwrap(), pinned);
        assert_eq!(former(&a), pinned);
        let mut out = Vec::new();
        a.write_json(&mut out);
        assert_eq!(std::str::from_utf8(&out).unwrap(), pinned);
        let back: Metadata = serde_json::from_str(pinned).unwrap();
        assert_eq!(back, a);
        assert_eq!(
            (back.uid(), back.revision(), back.created(), back.updated()),
            (a.uid(), a.revision(), a.created(), a.updated())
        );
    }

    /// Every optional part present or absent, strings that need escaping
    /// (control characters, quotes, backslashes, DEL, non-ASCII): the three
    /// encodings agree.
    #[test]
    fn serialize_and_write_json_match_the_former_encoding() {
        let odd =
            ["plain", "q\"uote", "back\\slash", "ctl\u{1}\u{1f}\t\r\n", "del\u{7f}", "ünï ✓", ""];
        for mask in 0u32..64 {
            let mut a = md();
            let on = |bit: u32| mask & (1 << bit) != 0;
            if on(0) {
                a.set_uid(Some(Uid::random()));
            }
            if on(1) {
                a.set_revision(u64::MAX);
            }
            if on(2) {
                a.set_owner(Some(Arc::from(odd[mask as usize % odd.len()])));
            }
            if on(3) {
                for (i, v) in odd.iter().enumerate() {
                    a.labels_mut().insert(format!("k{i}"), *v);
                }
            }
            if on(4) {
                a.annotations_mut().insert(odd[(mask as usize + 1) % odd.len()], "x");
            }
            if on(5) {
                for f in &odd[1..] {
                    a.finalizers_mut().add(f);
                }
            }
            a.set_version(Version::new(u64::from(mask)));
            a.set_created(Timestamp::from_unix_nanos(u64::from(mask) * 999_999_937));
            let expected = former(&a);
            assert_eq!(serde_json::to_string(&a).unwrap(), expected, "mask {mask}");
            let mut out = Vec::new();
            a.write_json(&mut out);
            assert_eq!(std::str::from_utf8(&out).unwrap(), expected, "mask {mask}");
            assert_eq!(serde_json::from_slice::<Metadata>(&out).unwrap(), a, "mask {mask}");
        }
    }

    /// The word-at-a-time check against the byte-wise definition: every
    /// byte value at every position of strings of 0 to 24 bytes.
    #[test]
    fn needs_escape_finds_every_escaped_byte_at_every_position() {
        let bytewise = |s: &[u8]| s.iter().any(|&b| b < 0x20 || b == b'"' || b == b'\\');
        for len in 0..=24usize {
            for at in 0..len.max(1) {
                for b in 0..=255u8 {
                    let mut s = vec![b'a'; len];
                    if len > 0 {
                        s[at] = b;
                    }
                    assert_eq!(needs_escape(&s), bytewise(&s), "{b:#x} at {at} of {len}");
                    // A neighbour that is the character's successor or
                    // predecessor (the borrow of a subtraction).
                    if len > 1 {
                        s[(at + 1) % len] = b.wrapping_add(1);
                        assert_eq!(needs_escape(&s), bytewise(&s), "{b:#x} at {at} of {len} (+1)");
                        s[(at + 1) % len] = b.wrapping_sub(1);
                        assert_eq!(needs_escape(&s), bytewise(&s), "{b:#x} at {at} of {len} (-1)");
                    }
                }
            }
        }
    }

    #[test]
    fn deserializing_metadata_without_an_address_fails() {
        let err = serde_json::from_str::<Metadata>(r#"{"namespace":"","type":"T","id":"x"}"#);
        assert!(err.is_err());
    }
}
