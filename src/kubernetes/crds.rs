//! CustomResourceDefinitions through the API: `kubectl apply -f crd.yaml`
//! (`apiextensions.k8s.io/v1`) registers a type, served at once.
//!
//! | what | how |
//! |---|---|
//! | a CRD | an object of the built-in cluster-scoped kind `customresourcedefinitions.apiextensions.k8s.io`, kept in [`CLUSTER_NAMESPACE`] |
//! | its type | group, names (plural, kind, short names, categories), scope, the storage version (else the first served), `openAPIV3Schema`, the status and scale subresources, `additionalPrinterColumns`, `selectableFields` |
//! | its objects | resources of type `{Kind}s.{group}` (`Widgets.demo.cosi.dev`), stored as the program's own exposed types are: the spec (or `{spec, status}` with a status subresource) when the schema has no other top-level field, else every top-level field: a controller reads them there with the same Rust type |
//! | writes | checked against the schema and pruned, as the apiserver does (`422` naming the field) |
//! | a type already exposed by the program | kept as the program exposed it (the CRD it generates registers nothing new) |
//! | deleting the CRD | the type is no longer served and its objects are deleted |

use serde_json::Value;

use super::namespaces::CLUSTER_NAMESPACE;
use super::registry::{DecodeError, Decoder, Expose, Exposed};
use super::shared::Shared;
use crate::resource::{Kind, LabelQuery, Phase};

/// The resource type CRDs are kept as.
pub(crate) const CRD_TYPE: &str = "CustomResourceDefinitions.apiextensions.k8s.io";

/// How the CRDs themselves are exposed.
pub(crate) fn expose() -> Expose {
    Expose::resource_type(CRD_TYPE, "v1")
        .kind("CustomResourceDefinition")
        .cluster_scoped(CLUSTER_NAMESPACE)
        .top_level_fields()
        .short_names(["crd", "crds"])
        .categories(["api-extensions"])
        .decoder(Decoder::checking(|body| {
            let exposed = exposure(body).and_then(|e| e.resolve().map_err(|e| e.to_string()));
            exposed.err().map(|why| DecodeError { field: "spec".into(), message: why })
        }))
}

/// Whether `exposed` is the CRDs' kind.
pub(crate) fn is_crds(exposed: &Exposed) -> bool {
    exposed.resource_type == CRD_TYPE && exposed.group == "apiextensions.k8s.io"
}

/// The resource type of a CRD's objects: `{Kind}s.{group}` when that is its
/// plural, else the plural capitalized.
fn resource_type(kind: &str, plural: &str, group: &str) -> String {
    let kinds = format!("{kind}s");
    let first = if kinds.eq_ignore_ascii_case(plural) {
        kinds
    } else {
        let mut chars = plural.chars();
        chars
            .next()
            .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
            .unwrap_or_default()
    };
    format!("{first}.{group}")
}

/// The exposure a CRD's body asks for.
pub(crate) fn exposure(body: &Value) -> Result<Expose, String> {
    let spec = &body["spec"];
    let text = |v: &Value, what: &str| {
        v.as_str()
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("{what}: Required value"))
    };
    let group = text(&spec["group"], "spec.group")?;
    let names = &spec["names"];
    let plural = text(&names["plural"], "spec.names.plural")?;
    let kind = text(&names["kind"], "spec.names.kind")?;
    let versions = spec["versions"].as_array().ok_or("spec.versions: Required value")?;
    let version = versions
        .iter()
        .find(|v| v["storage"] == true)
        .or_else(|| versions.iter().find(|v| v["served"] == true))
        .ok_or("spec.versions: no version is served")?;
    let name = text(&version["name"], "spec.versions[].name")?;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let mut expose = Expose::resource_type(resource_type(&kind, &plural, &group), name)
        .kind(kind)
        .plural(plural)
        .short_names(strings(&names["shortNames"]))
        .categories(strings(&names["categories"]));
    if spec["scope"] == "Cluster" {
        expose = expose.cluster_scoped(CLUSTER_NAMESPACE);
    }
    let subresources = &version["subresources"];
    let status = subresources.get("status").is_some();
    if status {
        expose = expose.status_subresource();
    }
    let schema = &version["schema"]["openAPIV3Schema"];
    let properties = schema["properties"].as_object();
    // Objects of `spec` (and `status`) alone are stored as the program's own
    // types are (`Expose::of`: the spec, or `{spec, status}`), so that a
    // controller reads them with the same Rust type; others whole.
    let spec_shaped = properties.is_none_or(|p| {
        p.keys()
            .all(|k| matches!(k.as_str(), "spec" | "status" | "apiVersion" | "kind" | "metadata"))
    });
    if !spec_shaped {
        expose = expose.top_level_fields();
    }
    if schema.is_object() {
        let spec_schema = schema["properties"].get("spec").cloned().unwrap_or_else(
            || serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        expose = match (spec_shaped, status) {
            (true, false) => {
                expose.schema(spec_schema.clone()).decoder(Decoder::schema(spec_schema))
            }
            (true, true) => expose.schema(spec_schema).decoder(Decoder::schema(schema.clone())),
            (false, _) => expose.schema(schema.clone()).decoder(Decoder::schema(schema.clone())),
        };
        if let Some(status) = schema["properties"].get("status") {
            expose = expose.status_schema_value(status.clone());
        }
    }
    if let Some(scale) = subresources.get("scale") {
        let spec_path = text(&scale["specReplicasPath"], "scale.specReplicasPath")?;
        let status_path = text(&scale["statusReplicasPath"], "scale.statusReplicasPath")?;
        expose = expose.scale(spec_path, status_path, scale["labelSelectorPath"].as_str());
    }
    for column in version["additionalPrinterColumns"].as_array().into_iter().flatten() {
        let column_name = text(&column["name"], "additionalPrinterColumns[].name")?;
        expose = expose
            .column(column_name, text(&column["jsonPath"], "additionalPrinterColumns[].jsonPath")?);
    }
    let selectable: Vec<String> = version["selectableFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f["jsonPath"].as_str().map(str::to_owned))
        .collect();
    Ok(expose.selectable_fields(selectable))
}

impl Shared {
    /// Serves the types the CRDs now in the state register, beside those the
    /// API was built with (which a CRD of the same group and plural does not
    /// replace).
    pub(crate) async fn sync_crds(&self) {
        let kind = Kind::new(CLUSTER_NAMESPACE, CRD_TYPE);
        let crds = match self.state.list(&kind, &LabelQuery::all()).await {
            Ok(crds) => crds,
            Err(e) => {
                tracing::warn!("Kubernetes API: reading the CustomResourceDefinitions: {e}");
                return;
            }
        };
        let mut registry = self.built.clone();
        for crd in crds.iter().filter(|c| c.phase() == Phase::Running) {
            let Ok(body) = super::object::spec_value(crd) else { continue };
            let exposed = match exposure(&body).and_then(|e| e.resolve().map_err(|e| e.to_string()))
            {
                Ok(exposed) => exposed,
                Err(e) => {
                    tracing::warn!("Kubernetes API: CustomResourceDefinition {}: {e}", crd.id());
                    continue;
                }
            };
            if registry.find_plural(&exposed.group, &exposed.plural).is_none() {
                // Short names taken by another type are the only refusal left.
                if let Err(e) = registry.add(exposed) {
                    tracing::warn!("Kubernetes API: CustomResourceDefinition {}: {e}", crd.id());
                }
            }
        }
        *self.types.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
            std::sync::Arc::new(registry);
    }

    /// Deletes every object of the type a deleted CRD (`body`) registered,
    /// unless the program exposes that type itself.
    pub(crate) async fn delete_crd_objects(&self, body: &Value) {
        let Ok(exposed) = exposure(body).and_then(|e| e.resolve().map_err(|e| e.to_string()))
        else {
            return;
        };
        if self.built.find_plural(&exposed.group, &exposed.plural).is_some() {
            return;
        }
        let namespaces = match &exposed.cluster {
            Some(ns) => vec![ns.clone()],
            None => self.namespaces_of().await.unwrap_or_default(),
        };
        for namespace in namespaces {
            let kind = Kind::new(&namespace, &exposed.resource_type);
            for r in self.state.list(&kind, &LabelQuery::all()).await.unwrap_or_default() {
                let owner = r.owner().map(str::to_owned);
                if let Err(e) = self.state.teardown_and_destroy(r.pointer(), owner.as_deref()).await
                    && !e.is_not_found()
                {
                    tracing::warn!("Kubernetes API: deleting {}: {e}", r.pointer());
                }
            }
        }
    }
}
