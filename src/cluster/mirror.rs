//! [`Mirror`]: which objects of a cluster a [`Source`](super::Source) mirrors,
//! and how one object becomes one resource.

use std::fmt;
use std::sync::Arc;

use kube::api::{ApiResource, DynamicObject};
use serde_json::Value;

use crate::Error;
use crate::resource::{AnyResource, Metadata, Pointer, Resource, Spec, validate};

/// The annotation `kubectl apply` keeps its last applied object in: dropped
/// from mirrors (it is a second copy of the object).
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The namespace of the state that cluster-scoped objects are mirrored into,
/// unless [`Mirror::cluster_scoped_into`] says otherwise.
pub const CLUSTER_SCOPED_NAMESPACE: &str = "cluster";

/// How a cleaned object becomes a spec of the mirror's type.
trait Decode: Send + Sync + 'static {
    /// The resource type mirrors are stored as.
    fn resource_type(&self) -> &str;
    /// `object` (the whole object, cleaned) as a resource with `metadata`.
    fn decode(&self, metadata: Metadata, object: Value) -> Result<AnyResource, Error>;
}

/// A typed spec: the object deserialized as `S`.
struct Typed<S>(std::marker::PhantomData<fn() -> S>);

impl<S: Spec> Decode for Typed<S> {
    fn resource_type(&self) -> &str {
        S::TYPE
    }

    fn decode(&self, metadata: Metadata, object: Value) -> Result<AnyResource, Error> {
        let pointer = metadata.pointer().clone();
        let spec: S = serde_json::from_value(object).map_err(|e| Error::TypeMismatch {
            resource: pointer,
            expected: S::TYPE.to_owned(),
            actual: format!("an object that does not decode: {e}"),
        })?;
        Ok(Resource::from_parts(metadata, spec)?.into_any())
    }
}

/// A dynamic spec: the object as a JSON value, under a type named at run time.
struct Dynamic(String);

impl Decode for Dynamic {
    fn resource_type(&self) -> &str {
        &self.0
    }

    fn decode(&self, metadata: Metadata, object: Value) -> Result<AnyResource, Error> {
        Ok(AnyResource::from_dynamic(metadata, object))
    }
}

/// A set of a cluster's objects to mirror into the state: a type
/// ([`ApiResource`]: group, version, kind, plural), a namespace or all of
/// them, a label selector; and the spec type the mirrors are stored as.
///
/// The spec of a mirror is **the whole object** as the cluster serves it
/// (`apiVersion`, `kind`, `metadata`, `spec`, `status`, or `data` for a
/// ConfigMap), less `metadata.managedFields` and the
/// [`LAST_APPLIED_ANNOTATION`]: the shape of a kube-rs `#[derive(CustomResource)]`
/// struct or a `k8s-openapi` type, so either deserializes it. Its metadata:
///
/// | mirror | from the object |
/// |---|---|
/// | namespace | `metadata.namespace` ([`CLUSTER_SCOPED_NAMESPACE`] for a cluster-scoped object) |
/// | id | `metadata.name` |
/// | labels | `metadata.labels` (so label queries of the state select them) |
/// | owner | the source's name for the set ([`Mirror::owner`]) |
///
/// ```
/// use cosi_runtime::cluster::Mirror;
/// use cosi_runtime::resource::Spec;
/// use kube::api::{ApiResource, GroupVersionKind};
///
/// /// A user's CRD, as its controllers read it.
/// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// #[spec(type = "Greetings.example.cosi.dev")]
/// struct Greeting {
///     spec: GreetingSpec,
/// }
/// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
/// struct GreetingSpec {
///     message: String,
/// }
///
/// let api = ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"));
/// let mirror = Mirror::of::<Greeting>(api).namespace("default").labels("tier=edge");
/// assert_eq!(mirror.owner(), "ClusterSource(greetings.example.cosi.dev/v1 in default, tier=edge)");
/// ```
#[derive(Clone)]
pub struct Mirror {
    pub(crate) api: ApiResource,
    pub(crate) namespace: Option<String>,
    pub(crate) selector: Option<String>,
    pub(crate) cluster_scoped_into: String,
    decode: Arc<dyn Decode>,
}

impl fmt::Debug for Mirror {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mirror")
            .field("api", &self.api)
            .field("namespace", &self.namespace)
            .field("selector", &self.selector)
            .field("resource_type", &self.decode.resource_type())
            .finish()
    }
}

impl Mirror {
    /// Objects of `api`, mirrored as resources of spec type `S` (a user's CRD
    /// struct, or a newtype over a `k8s-openapi` type with
    /// `#[serde(transparent)]`). An object that does not deserialize as `S`
    /// is not mirrored: the source logs it and reports it in
    /// [`MirrorStatus::last_error`](super::MirrorStatus::last_error).
    pub fn of<S: Spec>(api: ApiResource) -> Mirror {
        Mirror::new(api, Arc::new(Typed::<S>(std::marker::PhantomData)))
    }

    /// Objects of `api`, mirrored with their object as a JSON value (a
    /// [`DynamicResource`](crate::resource::DynamicResource)'s spec) under
    /// `resource_type`, for tools that know no Rust type.
    pub fn dynamic(api: ApiResource, resource_type: impl Into<String>) -> Mirror {
        Mirror::new(api, Arc::new(Dynamic(resource_type.into())))
    }

    fn new(api: ApiResource, decode: Arc<dyn Decode>) -> Mirror {
        Mirror {
            api,
            namespace: None,
            selector: None,
            cluster_scoped_into: CLUSTER_SCOPED_NAMESPACE.to_owned(),
            decode,
        }
    }

    /// Only the objects of this Kubernetes namespace (default: every namespace).
    pub fn namespace(mut self, namespace: impl Into<String>) -> Mirror {
        self.namespace = Some(namespace.into());
        self
    }

    /// Only the objects matching this label selector (Kubernetes syntax:
    /// `app=web,tier!=cache`; the cluster applies it).
    pub fn labels(mut self, selector: impl Into<String>) -> Mirror {
        self.selector = Some(selector.into()).filter(|s: &String| !s.is_empty());
        self
    }

    /// The state namespace cluster-scoped objects go to (default
    /// [`CLUSTER_SCOPED_NAMESPACE`]).
    pub fn cluster_scoped_into(mut self, namespace: impl Into<String>) -> Mirror {
        self.cluster_scoped_into = namespace.into();
        self
    }

    /// The resource type the mirrors are stored as.
    pub fn resource_type(&self) -> &str {
        self.decode.resource_type()
    }

    /// The owner of this set's mirrors, which names it: type, namespace and
    /// selector. Two [`Source::mirror`](super::Source::mirror) calls with the
    /// same owner share one watch.
    pub fn owner(&self) -> String {
        let api = &self.api;
        let group = if api.group.is_empty() { String::new() } else { format!(".{}", api.group) };
        let within =
            self.namespace.as_deref().map_or("all namespaces".into(), |ns| format!("in {ns}"));
        let selector = self.selector.as_deref().map(|s| format!(", {s}")).unwrap_or_default();
        format!("ClusterSource({}{group}/{} {within}{selector})", api.plural, api.version)
    }

    /// The mirror of `object`: its pointer and the resource to store. The
    /// object is cleaned first (`managedFields`, [`LAST_APPLIED_ANNOTATION`]).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a name, namespace or label the state
    /// refuses; [`Error::TypeMismatch`] when the object does not decode.
    pub(crate) fn resource(&self, object: DynamicObject) -> Result<AnyResource, Error> {
        let pointer = self.pointer(&object)?;
        let mut metadata = Metadata::new(pointer);
        for (k, v) in object.metadata.labels.iter().flatten() {
            metadata.labels_mut().insert(k.as_str(), v.as_str());
        }
        validate::metadata(&metadata)?;
        self.decode.decode(metadata, clean(object))
    }

    /// Where the mirror of `object` lives.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when the name or namespace is not one the state takes.
    pub(crate) fn pointer(&self, object: &DynamicObject) -> Result<Pointer, Error> {
        let name = object.metadata.name.as_deref().unwrap_or_default();
        let namespace =
            object.metadata.namespace.as_deref().unwrap_or(self.cluster_scoped_into.as_str());
        let pointer = Pointer::new(namespace, self.decode.resource_type(), name);
        validate::pointer(&pointer)?;
        Ok(pointer)
    }
}

/// The object as a value, without `managedFields` and the last-applied
/// annotation (the bulk of a small object, and of no use to a reader).
fn clean(mut object: DynamicObject) -> Value {
    object.metadata.managed_fields = None;
    if let Some(annotations) = &mut object.metadata.annotations {
        annotations.remove(LAST_APPLIED_ANNOTATION);
        if annotations.is_empty() {
            object.metadata.annotations = None;
        }
    }
    // Infallible: a DynamicObject is plain JSON with string keys.
    serde_json::to_value(object).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use kube::api::GroupVersionKind;
    use serde_json::json;

    use super::*;

    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Greeting {
        spec: GreetingSpec,
    }
    #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct GreetingSpec {
        message: String,
    }
    impl Spec for Greeting {
        const TYPE: &'static str = "Greetings.example.cosi.dev";
    }

    fn api() -> ApiResource {
        ApiResource::from_gvk(&GroupVersionKind::gvk("example.cosi.dev", "v1", "Greeting"))
    }

    fn object(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn objects_are_cleaned_and_decoded_whole() {
        let o = object(json!({
            "apiVersion": "example.cosi.dev/v1", "kind": "Greeting",
            "metadata": {
                "name": "hello", "namespace": "default", "labels": {"tier": "edge"},
                "annotations": {LAST_APPLIED_ANNOTATION: "{…}"},
                "managedFields": [{"manager": "kubectl", "operation": "Apply"}],
            },
            "spec": {"message": "hi"},
        }));
        let r = Mirror::of::<Greeting>(api()).resource(o.clone()).unwrap();
        assert_eq!(r.pointer(), &Pointer::new("default", Greeting::TYPE, "hello"));
        assert_eq!(r.metadata().labels().get("tier"), Some("edge"));
        assert_eq!(r.typed::<Greeting>().unwrap().spec().spec.message, "hi");

        let d = Mirror::dynamic(api(), "Greetings.example.cosi.dev").resource(o).unwrap();
        let spec = d.to_dynamic().unwrap().spec().clone();
        assert_eq!(spec["spec"]["message"], "hi");
        assert_eq!(spec["metadata"]["name"], "hello");
        assert!(spec["metadata"].get("managedFields").is_none(), "{spec}");
        assert!(spec["metadata"].get("annotations").is_none(), "{spec}");
    }

    #[test]
    fn what_the_state_cannot_hold_is_an_error_naming_the_object() {
        let mirror = Mirror::of::<Greeting>(api());
        let undecodable = object(json!({"metadata": {"name": "x", "namespace": "default"}}));
        let err = mirror.resource(undecodable).unwrap_err();
        assert!(err.is_type_mismatch(), "{err}");
        assert!(err.to_string().contains("default/Greetings.example.cosi.dev/x"), "{err}");

        let no_name =
            object(json!({"metadata": {"namespace": "default"}, "spec": {"message": ""}}));
        assert!(matches!(mirror.resource(no_name), Err(Error::InvalidInput { .. })));
    }

    #[test]
    fn cluster_scoped_objects_go_to_their_own_namespace() {
        let o = object(json!({"metadata": {"name": "node-1"}, "spec": {"message": ""}}));
        let mirror = Mirror::of::<Greeting>(api());
        assert_eq!(mirror.pointer(&o).unwrap().namespace(), CLUSTER_SCOPED_NAMESPACE);
        let mirror = mirror.cluster_scoped_into("nodes");
        assert_eq!(mirror.pointer(&o).unwrap().namespace(), "nodes");
    }

    #[test]
    fn the_owner_names_type_namespace_and_selector() {
        assert_eq!(
            Mirror::of::<Greeting>(api()).owner(),
            "ClusterSource(greetings.example.cosi.dev/v1 all namespaces)"
        );
        let core = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "ConfigMap"));
        assert_eq!(
            Mirror::dynamic(core, "ConfigMaps.core.k8s.io").namespace("kube-system").owner(),
            "ClusterSource(configmaps/v1 in kube-system)"
        );
    }
}
