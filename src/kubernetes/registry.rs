//! Which resource types are served, and under which Kubernetes names.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::resource::Spec;

/// The state namespace that keeps the objects of cluster-scoped kinds the
/// API serves itself: the `Namespace` objects (the namespaces it serves),
/// the CustomResourceDefinitions, and those of
/// [`Expose::k8s`](Expose::k8s) types that are cluster-scoped.
pub const CLUSTER_NAMESPACE: &str = "cluster";

/// Decodes a spec as the exposed Rust type and answers its canonical JSON
/// (what the type serializes back to: unknown fields dropped), or why it
/// does not decode.
type DecodeFn = dyn Fn(&Value) -> Result<Value, DecodeError> + Send + Sync;

/// Why a value does not decode: the field at fault, as a path below the
/// decoded value (`mtu`, `addresses[1]`; empty for the value itself), and
/// what is wrong there, worded as the apiserver words a cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DecodeError {
    pub(crate) field: String,
    pub(crate) message: String,
}

impl DecodeError {
    fn of(value: &Value, e: &serde_path_to_error::Error<serde_json::Error>) -> DecodeError {
        use serde_path_to_error::Segment;
        let mut field = String::new();
        let mut at = Some(value);
        for segment in e.path() {
            match segment {
                Segment::Seq { index } => {
                    field.push_str(&format!("[{index}]"));
                    at = at.and_then(|v| v.get(index));
                }
                Segment::Map { key } | Segment::Enum { variant: key } => {
                    if !field.is_empty() {
                        field.push('.');
                    }
                    field.push_str(key);
                    at = at.and_then(|v| v.get(key));
                }
                Segment::Unknown => break,
            }
        }
        let inner = e.inner().to_string();
        let quoted = |rest: &str| rest.split('`').nth(1).map(str::to_owned);
        if let Some(missing) = inner.strip_prefix("missing field ").and_then(quoted) {
            let field = if field.is_empty() { missing } else { format!("{field}.{missing}") };
            return DecodeError { field, message: "Required value".into() };
        }
        if let Some(unknown) = inner.strip_prefix("unknown field ").and_then(quoted) {
            let field =
                if field.is_empty() { unknown.clone() } else { format!("{field}.{unknown}") };
            return DecodeError { field, message: format!("unknown field {unknown:?}") };
        }
        let message = match at {
            Some(v) => format!("Invalid value: {v}: {inner}"),
            None => inner,
        };
        DecodeError { field, message }
    }

    /// The field's full path below `prefix` (`spec` and `mtu`: `spec.mtu`).
    pub(crate) fn under(&self, prefix: &str) -> String {
        match (prefix.is_empty(), self.field.is_empty()) {
            (_, true) => prefix.to_owned(),
            (true, false) => self.field.clone(),
            (false, false) if self.field.starts_with('[') => format!("{prefix}{}", self.field),
            (false, false) => format!("{prefix}.{}", self.field),
        }
    }
}

/// The spec decoder captured by [`Expose::of`] (none for the dynamic form).
#[derive(Clone)]
pub(crate) struct Decoder(Arc<DecodeFn>);

impl Decoder {
    /// Decodes an object's body (no `apiVersion`, `kind` nor `metadata`)
    /// as the k8s-openapi type `K`, and answers its canonical body.
    #[cfg(feature = "kubernetes")]
    fn k8s<K>() -> Decoder
    where
        K: k8s_openapi::Resource + serde::Serialize + serde::de::DeserializeOwned,
    {
        Decoder(Arc::new(|value: &Value| {
            let mut doc = value.clone();
            if let Value::Object(fields) = &mut doc {
                fields.insert("apiVersion".into(), K::API_VERSION.into());
                fields.insert("kind".into(), K::KIND.into());
            }
            let object: K =
                serde_path_to_error::deserialize(doc).map_err(|e| DecodeError::of(value, &e))?;
            let mut body = serde_json::to_value(&object).map_err(|e| DecodeError {
                field: String::new(),
                message: format!("the object does not serialize: {e}"),
            })?;
            if let Value::Object(fields) = &mut body {
                for envelope in ["apiVersion", "kind", "metadata"] {
                    fields.remove(envelope);
                }
            }
            Ok(body)
        }))
    }

    /// Checks a body against a structural schema (`openAPIV3Schema`), and
    /// prunes what it does not know (see `structural.rs`).
    pub(crate) fn schema(schema: Value) -> Decoder {
        Decoder(Arc::new(move |value: &Value| {
            let mut body_schema = schema.clone();
            if let Some(Value::Object(properties)) = body_schema.get_mut("properties") {
                for envelope in ["apiVersion", "kind", "metadata"] {
                    properties.remove(envelope);
                }
            }
            super::structural::check(&body_schema, value, "")
                .map_err(|(field, message)| DecodeError { field, message })
        }))
    }

    /// A check of its own: `check` answers what is wrong with a body, if
    /// anything; the body is stored as written.
    pub(crate) fn checking(
        check: impl Fn(&Value) -> Option<DecodeError> + Send + Sync + 'static,
    ) -> Decoder {
        Decoder(Arc::new(move |value: &Value| match check(value) {
            Some(e) => Err(e),
            None => Ok(value.clone()),
        }))
    }

    fn of<S: Spec>() -> Decoder {
        Decoder(Arc::new(|value: &Value| {
            let spec: S = serde_path_to_error::deserialize(value.clone())
                .map_err(|e| DecodeError::of(value, &e))?;
            serde_json::to_value(&spec).map_err(|e| DecodeError {
                field: String::new(),
                message: format!("the spec does not serialize: {e}"),
            })
        }))
    }

    pub(crate) fn decode(&self, value: &Value) -> Result<Value, DecodeError> {
        (self.0)(value)
    }
}

impl fmt::Debug for Decoder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Decoder")
    }
}

impl PartialEq for Decoder {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Decoder {}

/// A bad registration: what [`KubernetesApi::expose`](super::KubernetesApi::expose) refuses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ExposeError {
    /// The resource type has no group: Kubernetes needs `Plural.group`
    /// (`LinkConfigs.net.cosi.dev`).
    #[error(
        "resource type {resource_type:?} has no group: expose types named Plural.group (e.g. LinkConfigs.net.cosi.dev)"
    )]
    NoGroup {
        /// The type as registered.
        resource_type: String,
    },
    /// A name derived from (or given for) the type is not valid in Kubernetes.
    #[error(
        "{what} {value:?} of resource type {resource_type:?} is not valid in Kubernetes: {reason}"
    )]
    BadName {
        /// The type as registered.
        resource_type: String,
        /// Which name (`group`, `plural`, `kind`, `short name`).
        what: &'static str,
        /// The name.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The version is not a Kubernetes API version (`v1`, `v1alpha1`, `v2beta3`).
    #[error(
        "version {version:?} of resource type {resource_type:?} is not a Kubernetes API version (v1, v1alpha1, v2beta3, ...)"
    )]
    BadVersion {
        /// The type as registered.
        resource_type: String,
        /// The version asked for.
        version: String,
    },
    /// Another registered type has the same plural in the same group (or one
    /// type registered twice).
    #[error("{plural}.{group} is exposed twice (resource types {first:?} and {second:?})")]
    DuplicatePlural {
        /// The group.
        group: String,
        /// The plural both would be served under.
        plural: String,
        /// The type registered first.
        first: String,
        /// The type registered second.
        second: String,
    },
    /// A short name already taken by another exposed type.
    #[error("short name {short_name:?} of {resource_type:?} is already taken by {taken_by:?}")]
    DuplicateShortName {
        /// The type as registered.
        resource_type: String,
        /// The short name.
        short_name: String,
        /// The type that has it.
        taken_by: String,
    },
    /// A path of the scale subresource ([`Expose::scale`]) is not in the
    /// supported JSONPath subset (`.spec.replicas`).
    #[error(
        "scale subresource of {resource_type:?}: the {what} path {path:?} is not of the form .a.b or .a[0] (a JSONPath subset)"
    )]
    BadScalePath {
        /// The type as registered.
        resource_type: String,
        /// Which path (`spec replicas`, `status replicas`, `label selector`).
        what: &'static str,
        /// The path.
        path: String,
    },
    /// A print column's path is not in the supported JSONPath subset
    /// (`.spec.a.b`, `.metadata.labels.x`, `.spec.list[0]`).
    #[error(
        "print column {column:?} of {resource_type:?}: path {path:?} is not of the form .a.b or .a[0] (a JSONPath subset)"
    )]
    BadColumn {
        /// The type as registered.
        resource_type: String,
        /// The column's name.
        column: String,
        /// Its path.
        path: String,
    },
}

/// One step of a print column's path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Field(String),
    Index(usize),
}

/// A print column: a name (shown upper-case by kubectl) and where its value is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Column {
    pub(crate) name: String,
    pub(crate) path: String,
    pub(crate) steps: Vec<Step>,
}

/// Parses `.a.b[0].c`.
pub(crate) fn parse_path(path: &str) -> Option<Vec<Step>> {
    let rest = path.trim().strip_prefix('.')?;
    let mut steps = Vec::new();
    for segment in rest.split('.') {
        let (field, mut indexes) = match segment.find('[') {
            Some(i) => (&segment[..i], &segment[i..]),
            None => (segment, ""),
        };
        if field.is_empty() || field.contains([']', '*', '@', '$', '?', ' ']) {
            return None;
        }
        steps.push(Step::Field(field.to_owned()));
        while !indexes.is_empty() {
            let close = indexes.find(']')?;
            let n: usize = indexes.get(1..close)?.parse().ok()?;
            steps.push(Step::Index(n));
            indexes = &indexes[close + 1..];
        }
    }
    Some(steps)
}

/// How to expose one resource type: its version, and optionally its kind,
/// short names, print columns and the namespaces that all-namespace
/// requests (`kubectl get -A`) read.
///
/// The group and the plural come from the resource type: `LinkConfigs.net.cosi.dev`
/// is plural `linkconfigs` in group `net.cosi.dev`; the kind is the type's
/// first segment without a trailing `s` (`LinkConfig`; override it with
/// [`kind`](Expose::kind) for `Policies` and the like), the singular name the
/// kind in lower case.
///
/// ```
/// use cosi_runtime::kubernetes::Expose;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct LinkConfig { mtu: u32 }
/// # impl cosi_runtime::resource::Spec for LinkConfig { const TYPE: &'static str = "LinkConfigs.net.cosi.dev"; }
/// let expose = Expose::of::<LinkConfig>("v1alpha1")
///     .short_names(["lc"])
///     .column("MTU", ".spec.mtu")
///     .namespaces(["config"]);
/// # let _ = expose;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expose {
    resource_type: String,
    version: String,
    kind: Option<String>,
    short_names: Vec<String>,
    categories: Vec<String>,
    columns: Vec<(String, String)>,
    namespaces: BTreeSet<String>,
    decoder: Option<Decoder>,
    /// The spec's JSON schema, serialized (a `Value` is not `Eq`).
    schema: Option<String>,
    /// The status's, likewise (with a status subresource).
    status_schema: Option<String>,
    /// A status subresource: the stored spec is `{spec, status}`.
    status: bool,
    /// Served in the core group (`/api/v1`).
    core: bool,
    /// Cluster-scoped: the state namespace its objects are kept in.
    cluster: Option<String>,
    /// The stored spec is every top-level field but the envelope.
    top_level: bool,
    /// The plural, when not the type's first segment.
    plural: Option<String>,
    /// Fields a field selector may name, besides the name and namespace.
    selectable: Vec<String>,
    /// The scale subresource's paths: spec replicas, status replicas,
    /// label selector.
    scale: Option<(String, String, Option<String>)>,
    /// How stored values are served (another version's shape).
    view: Option<View>,
}

/// How a type's stored values are served, when the exposure serves them in
/// another shape than they are stored in (one resource type served under two
/// groups, as the apiserver serves Events as `events.k8s.io/v1` and `v1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum View {
    /// `events.k8s.io/v1` Events served as core `v1` ones (see `event_view.rs`).
    CoreEvent,
}

impl View {
    /// A stored value as served.
    pub(crate) fn served(self, stored: Value) -> Value {
        match self {
            View::CoreEvent => super::event_view::to_core(stored),
        }
    }

    /// A written value as stored.
    pub(crate) fn stored(self, written: Value) -> Value {
        match self {
            View::CoreEvent => super::event_view::from_core(written),
        }
    }
}

impl Expose {
    /// Exposes the resources of spec type `S` at API version `version`.
    ///
    /// Written specs (POST, PUT, PATCH) must decode as `S`: one that does not
    /// is a `422 Invalid`, and under `fieldValidation=Strict` (kubectl's
    /// default) so is a field `S` does not know. What is stored is `S`'s own
    /// serialization of the decoded spec (unknown fields dropped, as the
    /// apiserver prunes them).
    pub fn of<S: Spec>(version: impl Into<String>) -> Expose {
        let mut expose = Expose::resource_type(S::TYPE, version);
        expose.decoder = Some(Decoder::of::<S>());
        expose
    }

    /// Exposes the resources of type `resource_type` (the dynamic form, for
    /// tools that know types by name only). Any JSON object is accepted as a
    /// written spec and stored as given.
    pub fn resource_type(resource_type: impl Into<String>, version: impl Into<String>) -> Expose {
        Expose {
            resource_type: resource_type.into(),
            version: version.into(),
            kind: None,
            short_names: Vec::new(),
            categories: Vec::new(),
            columns: Vec::new(),
            namespaces: BTreeSet::new(),
            decoder: None,
            schema: None,
            status_schema: None,
            status: false,
            core: false,
            cluster: None,
            top_level: false,
            selectable: Vec::new(),
            view: None,
            scale: None,
            plural: None,
        }
    }

    /// Exposes a k8s-openapi type as it is, with no wrapper: its group,
    /// version, kind, plural and scope are the type's own
    /// (`k8s_openapi::Resource`), its objects are stored whole (their
    /// [top-level fields](Expose::top_level_fields)) as resources of type
    /// [`k8s_resource_type::<K>()`](k8s_resource_type), and written ones
    /// must decode as `K` (`422` otherwise; unknown fields under
    /// `fieldValidation=Strict`). A cluster-scoped type is kept in
    /// [`CLUSTER_NAMESPACE`](super::CLUSTER_NAMESPACE). Feature
    /// `kubernetes` (k8s-openapi) with `kubernetes-api`.
    ///
    /// ```
    /// use cosi_runtime::cluster::k8s_openapi::api::core::v1::ConfigMap;
    /// use cosi_runtime::kubernetes::{Expose, KubernetesApi, k8s_resource_type};
    /// # actix::System::new().block_on(async {
    /// let state = cosi_runtime::State::start();
    /// // kube-rs' Api::<ConfigMap>::namespaced(client, "default") reads and writes them.
    /// let api = KubernetesApi::new(&state).expose(Expose::k8s::<ConfigMap>())?;
    /// assert_eq!(k8s_resource_type::<ConfigMap>(), "ConfigMaps");
    /// # drop(api);
    /// # Ok::<(), cosi_runtime::kubernetes::ExposeError>(())
    /// # }).unwrap();
    /// ```
    #[cfg(feature = "kubernetes")]
    pub fn k8s<K>() -> Expose
    where
        K: k8s_openapi::Resource + serde::Serialize + serde::de::DeserializeOwned,
        K::Scope: 'static,
    {
        let mut expose = Expose::resource_type(k8s_resource_type::<K>(), K::VERSION)
            .kind(K::KIND)
            .top_level_fields();
        expose.plural = Some(K::URL_PATH_SEGMENT.to_owned());
        expose.decoder = Some(Decoder::k8s::<K>());
        if K::GROUP.is_empty() {
            expose = expose.core_group();
        }
        let cluster = std::any::TypeId::of::<K::Scope>()
            == std::any::TypeId::of::<k8s_openapi::ClusterResourceScope>();
        if cluster {
            expose = expose.cluster_scoped(CLUSTER_NAMESPACE);
        }
        expose
    }

    /// Serves a `scale` subresource, as a CustomResourceDefinition's
    /// `subresources.scale` does: `GET`, `PUT` and `PATCH
    /// .../{plural}/{name}/scale` read and write an `autoscaling/v1` `Scale`
    /// whose `spec.replicas` is the object's field at `spec_replicas`
    /// (`.spec.replicas`), `status.replicas` its field at `status_replicas`
    /// (`.status.replicas`) and `status.selector` its field at
    /// `label_selector` (`.status.selector`), if any. `kubectl scale`,
    /// kube-rs' `get_scale`/`patch_scale`/`replace_scale` and autoscalers
    /// use it. A scale write changes the object's replicas field alone.
    ///
    /// ```
    /// use cosi_runtime::kubernetes::Expose;
    /// let pool = Expose::resource_type("Pools.demo.cosi.dev", "v1")
    ///     .status_subresource()
    ///     .scale(".spec.replicas", ".status.replicas", Some(".status.selector"));
    /// # let _ = pool;
    /// ```
    #[must_use]
    pub fn scale(
        mut self,
        spec_replicas: impl Into<String>,
        status_replicas: impl Into<String>,
        label_selector: Option<&str>,
    ) -> Self {
        self.scale =
            Some((spec_replicas.into(), status_replicas.into(), label_selector.map(str::to_owned)));
        self
    }

    /// Fields that field selectors may name besides `metadata.name` and
    /// `metadata.namespace` (`spec.color`, `involvedObject.name`), as a
    /// CustomResourceDefinition's `selectableFields` allow: `kubectl get
    /// --field-selector spec.color=red`. A term on any other field is a
    /// `400`, as on the apiserver. A field's value is compared as text (a
    /// number as its digits, a missing field as the empty text).
    #[must_use]
    pub fn selectable_fields<S: Into<String>>(
        mut self,
        fields: impl IntoIterator<Item = S>,
    ) -> Self {
        self.selectable
            .extend(fields.into_iter().map(|f| f.into().trim_start_matches('.').to_owned()));
        self
    }

    /// Decodes written bodies with `decoder`.
    #[must_use]
    pub(crate) fn decoder(mut self, decoder: Decoder) -> Self {
        self.decoder = Some(decoder);
        self
    }

    /// The plural, when it is not the type's first segment.
    #[must_use]
    pub(crate) fn plural(mut self, plural: impl Into<String>) -> Self {
        self.plural = Some(plural.into());
        self
    }

    /// Serves the stored values through `view`.
    #[must_use]
    pub(crate) fn view(mut self, view: View) -> Self {
        self.view = Some(view);
        self
    }

    /// Serves a status subresource, as a CustomResourceDefinition with
    /// `subresources: {status: {}}` does: what is stored (the resource's
    /// spec in the state) is the object's `spec` and `status` together,
    /// `{"spec": …, "status": …}` (no `status` when there is none), the shape
    /// of a kube-rs `#[derive(CustomResource)]` struct without its metadata.
    /// With [`of::<S>`](Expose::of), `S` is that pair:
    ///
    /// ```
    /// use cosi_runtime::kubernetes::Expose;
    /// # use serde::{Deserialize, Serialize};
    /// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    /// struct GreetingSpec { text: String }
    /// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    /// struct GreetingStatus { shown: u32 }
    /// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    /// struct Greeting {
    ///     spec: GreetingSpec,
    ///     #[serde(default, skip_serializing_if = "Option::is_none")]
    ///     status: Option<GreetingStatus>,
    /// }
    /// impl cosi_runtime::resource::Spec for Greeting {
    ///     const TYPE: &'static str = "Greetings.demo.cosi.dev";
    /// }
    /// let expose = Expose::of::<Greeting>("v1").status_subresource().column("SHOWN", ".status.shown");
    /// # let _ = expose;
    /// ```
    ///
    /// The object is then served as `{apiVersion, kind, metadata, spec,
    /// status}` (`status` left out when absent or `null`), and:
    ///
    /// - writes to the object (POST, PUT, every PATCH, apply) take its
    ///   `spec` (and metadata) and keep the stored `status`; a create stores
    ///   none;
    /// - `GET .../{plural}/{name}/status` reads the object, `PUT` and `PATCH`
    ///   (merge, JSON, apply with `fieldManager`) there write its `status`
    ///   only: spec, labels, annotations, finalizers and owner references are
    ///   kept as stored, and a `metadata.resourceVersion` (or `uid`) sent is
    ///   still a precondition (409). A status write to a missing object is a
    ///   404; one to a resource owned by a controller is a 403, like every
    ///   write (its status is the controller's as much as its spec). An
    ///   apply's field manager is not recorded there;
    /// - discovery lists `{plural}/status` (verbs `get`, `patch`, `update`),
    ///   and the OpenAPI schema has a free-form `status` object.
    ///
    /// `metadata.generation` moves on spec changes only, as on the apiserver:
    /// a status write leaves it (see
    /// [`GENERATION_OFFSET_ANNOTATION`](super::GENERATION_OFFSET_ANNOTATION)),
    /// so kube-runtime's `predicates::generation` filters a controller's own
    /// status writes out, and an operator comparing `observedGeneration`
    /// with it settles.
    ///
    /// [`schema`](Expose::schema) stays the schema of the object's `spec`;
    /// print [`column`](Expose::column)s reach the status as `.status.…`.
    /// Without it (the default), `status` in written objects is ignored,
    /// the spec is the whole stored value, and `.../status` is a 404.
    #[must_use]
    pub fn status_subresource(mut self) -> Self {
        self.status = true;
        self
    }

    /// Stores and serves the object's top-level fields as they are, as
    /// Kubernetes' own kinds have them (a ConfigMap's `data` and
    /// `binaryData`, a Secret's `data` and `type`, an Event's `reason`,
    /// `note` and `regarding`): what is stored (the resource's spec in the
    /// state) is the whole object but `apiVersion`, `kind` and `metadata`,
    /// and with [`of::<S>`](Expose::of) `S` is that body.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// use cosi_runtime::kubernetes::Expose;
    /// # use serde::{Deserialize, Serialize};
    /// /// A ConfigMap's body.
    /// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    /// #[serde(rename_all = "camelCase")]
    /// struct ConfigMap {
    ///     #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    ///     data: BTreeMap<String, String>,
    ///     #[serde(default, skip_serializing_if = "Option::is_none")]
    ///     immutable: Option<bool>,
    /// }
    /// impl cosi_runtime::resource::Spec for ConfigMap {
    ///     const TYPE: &'static str = "ConfigMaps";
    /// }
    /// // Served as `/api/v1/namespaces/{ns}/configmaps`, `{"data": {...}}`.
    /// let expose = Expose::of::<ConfigMap>("v1").core_group().top_level_fields();
    /// # let _ = expose;
    /// ```
    ///
    /// Then writes take every top-level field (with a
    /// [status subresource](Expose::status_subresource), every one but
    /// `status`, kept as stored and written through `.../status`), the
    /// schema given by [`schema`](Expose::schema) is the body's, print
    /// [`column`](Expose::column)s reach any field (`.data.mode`), and
    /// `metadata.generation` moves when anything but `status` changes.
    #[must_use]
    pub fn top_level_fields(mut self) -> Self {
        self.top_level = true;
        self
    }

    /// Serves the type in the core group, at `/api/v1/...` as ConfigMaps
    /// and Events are (`apiVersion: v1`), where kube-rs' `Api<ConfigMap>`
    /// and client-go's typed clients look for those kinds. The plural is
    /// the resource type's first segment (`ConfigMaps` or
    /// `ConfigMaps.core` is `configmaps`); the rest of the name is ignored.
    /// The version is usually `v1`, the core group's only one. No
    /// CustomResourceDefinition can declare a core type: [`crd`](Expose::crd)
    /// refuses it.
    #[must_use]
    pub fn core_group(mut self) -> Self {
        self.core = true;
        self
    }

    /// Serves the type cluster-scoped, as Namespaces, Nodes and
    /// ClusterRoles are: its objects have no `metadata.namespace` and live
    /// at `/apis/{g}/{v}/{plural}/{name}` (`/api/v1/{plural}/{name}` in the
    /// core group). The state keeps them in `namespace` (controllers read
    /// them there); requests naming a namespace are `404` for this type.
    #[must_use]
    pub fn cluster_scoped(mut self, namespace: impl Into<String>) -> Self {
        self.cluster = Some(namespace.into());
        self
    }

    /// The spec's OpenAPI v3 schema, served in `/openapi/v3/apis/{g}/{v}`
    /// (default: `{"type": "object", "x-kubernetes-preserve-unknown-fields": true}`).
    /// Only clients read it (`kubectl explain`); the server validates
    /// written specs by decoding them (see [`of`](Expose::of)).
    #[must_use]
    pub fn schema(mut self, schema: Value) -> Self {
        self.schema = Some(schema.to_string());
        self
    }

    /// Exposes `S` as [`of`](Expose::of) does, with the OpenAPI v3 schema
    /// of its spec derived from its `JsonSchema` (schemars, the derive
    /// kube-rs uses): `kubectl explain TYPE.spec` shows its fields, their
    /// types and doc comments, and [`crd`](Expose::crd) carries it.
    ///
    /// ```
    /// use cosi_runtime::kubernetes::Expose;
    /// use cosi_runtime::kubernetes::schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// /// A network link.
    /// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
    /// #[schemars(crate = "cosi_runtime::kubernetes::schemars")]
    /// struct LinkConfig {
    ///     /// Its MTU.
    ///     mtu: u32,
    /// }
    /// # impl cosi_runtime::resource::Spec for LinkConfig { const TYPE: &'static str = "LinkConfigs.net.cosi.dev"; }
    /// let crd = Expose::with_schema::<LinkConfig>("v1alpha1").crd()?;
    /// let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    /// assert_eq!(spec["properties"]["mtu"]["description"], "Its MTU.");
    /// # Ok::<(), cosi_runtime::kubernetes::ExposeError>(())
    /// ```
    pub fn with_schema<S: Spec + schemars::JsonSchema>(version: impl Into<String>) -> Expose {
        Expose::of::<S>(version).spec_schema::<S>()
    }

    /// The schema of the objects' `spec`, derived from `T`'s `JsonSchema`
    /// (for [`Expose::resource_type`], or a spec type other than the
    /// stored one).
    #[must_use]
    pub fn spec_schema<T: schemars::JsonSchema>(self) -> Self {
        self.schema(super::schema::structural::<T>())
    }

    /// The schema of the objects' `status` (with a
    /// [status subresource](Expose::status_subresource)), derived from
    /// `T`'s `JsonSchema` (default: a free-form object).
    #[must_use]
    pub fn status_schema<T: schemars::JsonSchema>(mut self) -> Self {
        self.status_schema = Some(super::schema::structural::<T>().to_string());
        self
    }

    /// The status's schema as a value (a CRD's `properties.status`).
    #[must_use]
    pub(crate) fn status_schema_value(mut self, schema: Value) -> Self {
        self.status_schema = Some(schema.to_string());
        self
    }

    /// The CustomResourceDefinition (`apiextensions.k8s.io/v1`) of this
    /// type, for a real cluster: its group, names (kind, plural, singular,
    /// short names, categories), namespaced scope, this version served and
    /// stored with its schema (the spec's, and the status's with a status
    /// subresource), the status subresource, and the print columns as
    /// `additionalPrinterColumns`. What `kubectl apply -f` takes before an
    /// operator runs against a cluster.
    ///
    /// # Errors
    /// [`ExposeError`], as [`KubernetesApi::expose`](super::KubernetesApi::expose).
    /// A [core-group](Expose::core_group) type has none: [`ExposeError::NoGroup`].
    pub fn crd(&self) -> Result<Value, ExposeError> {
        if self.core {
            return Err(ExposeError::NoGroup { resource_type: self.resource_type.clone() });
        }
        Ok(self.clone().resolve()?.crd())
    }

    /// The kind (default: the type's first segment without a trailing `s`).
    #[must_use]
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// Short names (`kubectl get lc`).
    #[must_use]
    pub fn short_names<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.short_names.extend(names.into_iter().map(Into::into));
        self
    }

    /// The categories the type joins: `kubectl get all` lists the types
    /// of category `all`, `kubectl get CATEGORY` those of any other. A
    /// CustomResourceDefinition joins none unless it says so; neither does
    /// an exposed type.
    #[must_use]
    pub fn categories<S: Into<String>>(mut self, categories: impl IntoIterator<Item = S>) -> Self {
        self.categories.extend(categories.into_iter().map(Into::into));
        self
    }

    /// A print column between NAME and AGE in `kubectl get`: `path` is a
    /// JSONPath subset over the object (`.spec.mtu`, `.metadata.labels.tier`,
    /// `.spec.addresses[0]`).
    #[must_use]
    pub fn column(mut self, name: impl Into<String>, path: impl Into<String>) -> Self {
        self.columns.push((name.into(), path.into()));
        self
    }

    /// Namespaces declared for this type, besides those given to
    /// [`KubernetesApi::namespaces`](super::KubernetesApi::namespaces): they
    /// always exist (clients write into them without creating them first)
    /// and all-namespace requests (`kubectl get -A`) read them, with every
    /// namespace created through the API.
    #[must_use]
    pub fn namespaces<S: Into<String>>(mut self, namespaces: impl IntoIterator<Item = S>) -> Self {
        self.namespaces.extend(namespaces.into_iter().map(Into::into));
        self
    }

    /// Checks the names and derives the rest.
    pub(crate) fn resolve(self) -> Result<Exposed, ExposeError> {
        let ty = self.resource_type.clone();
        let bad = |what, value: &str, reason| ExposeError::BadName {
            resource_type: ty.clone(),
            what,
            value: value.to_owned(),
            reason,
        };
        let (first, group) = match self.resource_type.split_once('.') {
            _ if self.core => {
                (self.resource_type.split('.').next().unwrap_or_default(), String::new())
            }
            Some((first, group)) if !group.is_empty() => (first, group.to_ascii_lowercase()),
            _ => return Err(ExposeError::NoGroup { resource_type: ty.clone() }),
        };
        if !self.core && (group.len() > 253 || !group.split('.').all(is_dns_label)) {
            return Err(bad("group", &group, "a DNS subdomain of lower-case labels"));
        }
        if let Some(ns) = &self.cluster {
            crate::resource::validate::name("namespace", ns)
                .map_err(|_| bad("namespace", ns, "a namespace the state accepts"))?;
        }
        let plural = self.plural.clone().unwrap_or_else(|| first.to_ascii_lowercase());
        if !is_dns_label(&plural) {
            return Err(bad("plural", &plural, "a DNS label: a-z, 0-9 and '-', at most 63"));
        }
        if !is_version(&self.version) {
            return Err(ExposeError::BadVersion {
                resource_type: ty.clone(),
                version: self.version.clone(),
            });
        }
        let kind = match self.kind {
            Some(kind) => kind,
            None => first.strip_suffix('s').unwrap_or(first).to_owned(),
        };
        if kind.is_empty()
            || !kind.starts_with(|c: char| c.is_ascii_alphabetic())
            || !kind.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(bad("kind", &kind, "letters and digits, starting with a letter"));
        }
        let singular = kind.to_ascii_lowercase();
        for short in &self.short_names {
            if !is_dns_label(short) {
                return Err(bad("short name", short, "a DNS label: a-z, 0-9 and '-', at most 63"));
            }
        }
        for category in &self.categories {
            if !is_dns_label(category) {
                return Err(bad("category", category, "a DNS label: a-z, 0-9 and '-', at most 63"));
            }
        }
        let scale = match self.scale {
            None => None,
            Some((spec, status, selector)) => {
                let parse = |what, path: &str| {
                    parse_path(path).ok_or_else(|| ExposeError::BadScalePath {
                        resource_type: ty.clone(),
                        what,
                        path: path.to_owned(),
                    })
                };
                Some(ScalePaths {
                    spec: parse("spec replicas", &spec)?,
                    status: parse("status replicas", &status)?,
                    selector: selector
                        .as_deref()
                        .map(|s| parse("label selector", s))
                        .transpose()?,
                    raw: (spec, status, selector),
                })
            }
        };
        let mut columns = Vec::new();
        for (name, path) in self.columns {
            let Some(steps) = parse_path(&path) else {
                return Err(ExposeError::BadColumn { resource_type: ty, column: name, path });
            };
            columns.push(Column { name, path, steps });
        }
        Ok(Exposed {
            resource_type: self.resource_type,
            group,
            version: self.version,
            plural,
            singular,
            kind,
            short_names: self.short_names,
            categories: self.categories,
            columns,
            namespaces: self.namespaces,
            decoder: self.decoder,
            schema: self.schema.and_then(|s| serde_json::from_str(&s).ok()),
            status_schema: self.status_schema.and_then(|s| serde_json::from_str(&s).ok()),
            status: self.status,
            cluster: self.cluster,
            top_level: self.top_level,
            selectable: self.selectable,
            view: self.view,
            scale,
        })
    }
}

/// The resource type [`Expose::k8s::<K>()`](Expose::k8s) keeps `K`'s
/// objects as: the kind's plural (`ConfigMaps`, or the URL segment
/// capitalized where the plural is not the kind and an `s`), then `.` and
/// the group unless it is the core group (`Events.events.k8s.io`).
#[cfg(feature = "kubernetes")]
pub fn k8s_resource_type<K: k8s_openapi::Resource>() -> String {
    let kinds = format!("{}s", K::KIND);
    let plural = if kinds.eq_ignore_ascii_case(K::URL_PATH_SEGMENT) {
        kinds
    } else {
        let mut chars = K::URL_PATH_SEGMENT.chars();
        chars
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
            .unwrap_or_default()
    };
    if K::GROUP.is_empty() { plural } else { format!("{plural}.{}", K::GROUP) }
}

/// `a-z0-9-`, starting and ending alphanumeric, at most 63.
pub(crate) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// `v<N>` optionally followed by `alpha<N>` or `beta<N>`.
fn is_version(v: &str) -> bool {
    let Some(rest) = v.strip_prefix('v') else { return false };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || rest.starts_with('0') {
        return false;
    }
    let tail = &rest[digits..];
    if tail.is_empty() {
        return true;
    }
    let Some(n) = tail.strip_prefix("alpha").or_else(|| tail.strip_prefix("beta")) else {
        return false;
    };
    !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit())
}

/// A type as served: every name resolved.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Exposed {
    pub(crate) resource_type: String,
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) plural: String,
    pub(crate) singular: String,
    pub(crate) kind: String,
    pub(crate) short_names: Vec<String>,
    pub(crate) categories: Vec<String>,
    pub(crate) columns: Vec<Column>,
    pub(crate) namespaces: BTreeSet<String>,
    pub(crate) decoder: Option<Decoder>,
    pub(crate) schema: Option<Value>,
    pub(crate) status_schema: Option<Value>,
    /// A status subresource ([`Expose::status_subresource`]).
    pub(crate) status: bool,
    /// Cluster-scoped ([`Expose::cluster_scoped`]): the state namespace.
    pub(crate) cluster: Option<String>,
    /// [`Expose::top_level_fields`].
    pub(crate) top_level: bool,
    /// [`Expose::selectable_fields`].
    pub(crate) selectable: Vec<String>,
    /// How stored values are served, if not as stored.
    pub(crate) view: Option<View>,
    /// [`Expose::scale`].
    pub(crate) scale: Option<ScalePaths>,
}

/// The paths of a scale subresource, parsed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ScalePaths {
    pub(crate) spec: Vec<Step>,
    pub(crate) status: Vec<Step>,
    pub(crate) selector: Option<Vec<Step>>,
    /// As given, for the CRD.
    pub(crate) raw: (String, String, Option<String>),
}

impl Exposed {
    /// The schema served for the objects' `spec`.
    pub(crate) fn spec_schema(&self) -> Value {
        self.schema.clone().unwrap_or_else(
            || serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        )
    }

    /// The schema served for the objects' `status`.
    pub(crate) fn status_schema(&self) -> Value {
        self.status_schema.clone().unwrap_or_else(
            || serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        )
    }

    /// See [`Expose::crd`].
    fn crd(&self) -> Value {
        use serde_json::json;
        let mut properties = self.body_properties();
        if self.status {
            properties["status"] = self.status_schema();
        }
        let mut version = json!({
            "name": self.version,
            "served": true,
            "storage": true,
            "schema": { "openAPIV3Schema": { "type": "object", "properties": properties } },
        });
        if self.status {
            version["subresources"] = json!({ "status": {} });
        }
        if let Some(scale) = &self.scale {
            let (spec, status, selector) = &scale.raw;
            let mut paths = json!({ "specReplicasPath": spec, "statusReplicasPath": status });
            if let Some(selector) = selector {
                paths["labelSelectorPath"] = json!(selector);
            }
            version["subresources"]["scale"] = paths;
        }
        if !self.columns.is_empty() {
            version["additionalPrinterColumns"] = self
                .columns
                .iter()
                .map(|c| json!({ "name": c.name, "type": "string", "jsonPath": c.path }))
                .collect();
        }
        let mut names = json!({
            "kind": self.kind,
            "listKind": format!("{}List", self.kind),
            "plural": self.plural,
            "singular": self.singular,
        });
        if !self.short_names.is_empty() {
            names["shortNames"] = json!(self.short_names);
        }
        if !self.categories.is_empty() {
            names["categories"] = json!(self.categories);
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": { "name": format!("{}.{}", self.plural, self.group) },
            "spec": {
                "group": self.group,
                "names": names,
                "scope": if self.cluster.is_some() { "Cluster" } else { "Namespaced" },
                "versions": [version],
            },
        })
    }

    /// The schema's `properties` of what the object holds beside its
    /// metadata (but a status subresource's `status`): `spec`, or with
    /// [top-level fields](Expose::top_level_fields) the body schema's own.
    pub(crate) fn body_properties(&self) -> Value {
        if !self.top_level {
            return serde_json::json!({ "spec": self.spec_schema() });
        }
        match self.schema.as_ref().and_then(|s| s.get("properties")) {
            Some(Value::Object(p)) => Value::Object(p.clone()),
            _ => Value::Object(Default::default()),
        }
    }

    /// `group/version` (`version` alone in the core group).
    pub(crate) fn api_version(&self) -> String {
        if self.group.is_empty() {
            return self.version.clone();
        }
        format!("{}/{}", self.group, self.version)
    }

    /// `apis/{group}/{version}`, or `api/{version}` in the core group.
    pub(crate) fn group_version_path(&self) -> String {
        if self.group.is_empty() {
            return format!("api/{}", self.version);
        }
        format!("apis/{}/{}", self.group, self.version)
    }

    /// The path of the objects' collection, `{namespace}` left as a
    /// placeholder (none for a cluster-scoped type).
    pub(crate) fn collection_path(&self) -> String {
        match self.cluster {
            Some(_) => format!("/{}/{}", self.group_version_path(), self.plural),
            None => {
                format!("/{}/namespaces/{{namespace}}/{}", self.group_version_path(), self.plural)
            }
        }
    }

    /// `plural.group` (`plural` alone in the core group): how the
    /// apiserver names the type in its messages.
    pub(crate) fn qualified_plural(&self) -> String {
        if self.group.is_empty() {
            return self.plural.clone();
        }
        format!("{}.{}", self.plural, self.group)
    }

    /// The served `spec` and `status` of a stored value: the value and no
    /// status without a status subresource; with one, its `spec` (`{}` when
    /// it has none) and its `status` (none when absent or `null`). With
    /// [top-level fields](Expose::top_level_fields), the first is the
    /// object's body (every field but `status` with a status subresource,
    /// an object).
    pub(crate) fn split(&self, stored: Value) -> (Value, Option<Value>) {
        if self.top_level {
            let mut body = match stored {
                Value::Object(body) => body,
                _ => Map::new(),
            };
            let status = if self.status { body.remove("status") } else { None };
            return (Value::Object(body), status.filter(|s| !s.is_null()));
        }
        if !self.status {
            return (stored, None);
        }
        match stored {
            Value::Object(mut parts) => {
                let spec =
                    parts.remove("spec").unwrap_or_else(|| Value::Object(Default::default()));
                (spec, parts.remove("status").filter(|s| !s.is_null()))
            }
            other => (other, None),
        }
    }

    /// The namespace in the state of an object requested in `namespace`
    /// (none for a cluster-scoped type): `None` when the request names the
    /// wrong scope (a namespace for a cluster-scoped type, or none for a
    /// namespaced one), which is a `404`.
    pub(crate) fn state_namespace<'a>(&'a self, namespace: Option<&'a str>) -> Option<&'a str> {
        match (&self.cluster, namespace) {
            (Some(ns), None) => Some(ns),
            (None, Some(ns)) => Some(ns),
            _ => None,
        }
    }
}

/// Every exposed type.
#[derive(Clone, Debug, Default)]
pub(crate) struct Registry {
    /// Shared with each request that serves one (no copy per request).
    pub(crate) types: Vec<Arc<Exposed>>,
}

impl Registry {
    pub(crate) fn add(&mut self, exposed: Exposed) -> Result<(), ExposeError> {
        for other in &self.types {
            if other.group == exposed.group && other.plural == exposed.plural {
                return Err(ExposeError::DuplicatePlural {
                    group: exposed.group,
                    plural: exposed.plural,
                    first: other.resource_type.clone(),
                    second: exposed.resource_type,
                });
            }
            if let Some(short) = exposed
                .short_names
                .iter()
                .find(|s| other.short_names.contains(s) || **s == other.plural)
            {
                return Err(ExposeError::DuplicateShortName {
                    resource_type: exposed.resource_type.clone(),
                    short_name: short.clone(),
                    taken_by: other.resource_type.clone(),
                });
            }
        }
        self.types.push(Arc::new(exposed));
        Ok(())
    }

    /// The type served in `group` as `plural`, whatever its version.
    pub(crate) fn find_plural(&self, group: &str, plural: &str) -> Option<&Arc<Exposed>> {
        self.types.iter().find(|t| t.group == group && t.plural == plural)
    }

    /// The type served at `/apis/{group}/{version}/.../{plural}`.
    pub(crate) fn find(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<Exposed>> {
        self.types.iter().find(|t| t.group == group && t.version == version && t.plural == plural)
    }

    /// The versions served in `group`, in Kubernetes priority order.
    pub(crate) fn versions_of(&self, group: &str) -> Vec<String> {
        let versions: BTreeSet<&str> =
            self.types.iter().filter(|t| t.group == group).map(|t| t.version.as_str()).collect();
        sort_versions(versions.into_iter())
    }

    /// The groups, each with its versions, sorted: the program's, then
    /// Kubernetes' own.
    pub(crate) fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut groups: std::collections::BTreeMap<&str, BTreeSet<&str>> = Default::default();
        for t in &self.types {
            groups.entry(&t.group).or_default().insert(&t.version);
        }
        let mut groups: Vec<(String, Vec<String>)> = groups
            .into_iter()
            .map(|(g, vs)| (g.to_owned(), sort_versions(vs.into_iter())))
            .collect();
        // The program's groups first, Kubernetes' own (`*.k8s.io`: the
        // built-in CRDs and Events) after them.
        groups.sort_by_key(|(g, _)| g.ends_with(".k8s.io"));
        groups
    }
}

/// Versions in Kubernetes priority order: GA before beta before alpha,
/// higher first.
fn sort_versions<'a>(versions: impl Iterator<Item = &'a str>) -> Vec<String> {
    fn key(v: &str) -> (u8, u64, u64) {
        let rest = v.trim_start_matches('v');
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let major = rest[..digits].parse().unwrap_or(0);
        let tail = &rest[digits..];
        let (level, n) = if let Some(n) = tail.strip_prefix("beta") {
            (1, n)
        } else if let Some(n) = tail.strip_prefix("alpha") {
            (0, n)
        } else {
            (2, "0")
        };
        (level, major, n.parse().unwrap_or(0))
    }
    let mut versions: Vec<String> = versions.map(str::to_owned).collect();
    versions.sort_by_key(|v| std::cmp::Reverse(key(v)));
    versions
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_resource_type() {
        let t = Expose::resource_type("LinkConfigs.net.cosi.dev", "v1alpha1").resolve().unwrap();
        assert_eq!(
            (t.group.as_str(), t.plural.as_str(), t.kind.as_str(), t.singular.as_str()),
            ("net.cosi.dev", "linkconfigs", "LinkConfig", "linkconfig")
        );
        let p = Expose::resource_type("Policies.x.dev", "v1").kind("Policy").resolve().unwrap();
        assert_eq!((p.kind.as_str(), p.singular.as_str()), ("Policy", "policy"));
    }

    #[test]
    fn bad_registrations_are_typed_errors() {
        let no_group = Expose::resource_type("Links", "v1").resolve().unwrap_err();
        assert!(matches!(no_group, ExposeError::NoGroup { .. }), "{no_group}");
        for version in ["1", "v0", "V1", "v1gamma1", "v1alpha", "v1beta01", ""] {
            let e = Expose::resource_type("Links.x.dev", version).resolve().unwrap_err();
            assert!(matches!(e, ExposeError::BadVersion { .. }), "{version}: {e}");
        }
        let e = Expose::resource_type("Links.x.dev", "v1").column("A", "spec.a").resolve();
        assert!(matches!(e, Err(ExposeError::BadColumn { .. })));
        let e = Expose::resource_type("Links.x.dev", "v1").short_names(["L"]).resolve();
        assert!(matches!(e, Err(ExposeError::BadName { what: "short name", .. })));
        let e = Expose::resource_type("Link_s.x.dev", "v1").resolve();
        assert!(matches!(e, Err(ExposeError::BadName { what: "plural", .. })));

        let mut registry = Registry::default();
        registry.add(Expose::resource_type("Links.x.dev", "v1").resolve().unwrap()).unwrap();
        let again = Expose::resource_type("links.x.dev", "v2").resolve().unwrap();
        assert!(matches!(registry.add(again), Err(ExposeError::DuplicatePlural { .. })));
    }

    #[test]
    fn versions_accepted_and_sorted_like_kubernetes() {
        for v in ["v1", "v1alpha1", "v2beta3", "v10"] {
            assert!(is_version(v), "{v}");
        }
        let sorted = sort_versions(["v1alpha1", "v1", "v2beta1", "v1beta2"].into_iter());
        assert_eq!(sorted, ["v1", "v2beta1", "v1beta2", "v1alpha1"]);
    }

    #[test]
    fn column_paths_are_a_jsonpath_subset() {
        assert_eq!(
            parse_path(".spec.a[2].b"),
            Some(vec![
                Step::Field("spec".into()),
                Step::Field("a".into()),
                Step::Index(2),
                Step::Field("b".into())
            ])
        );
        for bad in ["spec", ".", ".a..b", ".a[x]", ".a[*]", "{.a}"] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_status_subresource_splits_the_stored_value_into_spec_and_status() {
        use serde_json::json;
        let plain = Expose::resource_type("Links.x.dev", "v1").resolve().unwrap();
        let both = json!({"spec": {"a": 1}, "status": {"b": 2}});
        assert_eq!(plain.split(both.clone()), (both.clone(), None), "the whole value is the spec");
        let with =
            Expose::resource_type("Links.x.dev", "v1").status_subresource().resolve().unwrap();
        assert!(with.status && !plain.status);
        assert_eq!(with.split(both), (json!({"a": 1}), Some(json!({"b": 2}))));
        assert_eq!(with.split(json!({"spec": {"a": 1}, "status": null})), (json!({"a": 1}), None));
        assert_eq!(with.split(json!({"status": {"b": 2}})), (json!({}), Some(json!({"b": 2}))));
        assert_eq!(with.split(json!(3)), (json!(3), None));
    }
}
