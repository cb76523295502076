//! [`DynamicResource`]: a resource whose spec is a serde value, for manifests and
//! generic tools that do not know the Rust spec types.

use serde::{Deserialize, Serialize};

use super::{AnyResource, Metadata, Resource, Spec};
use crate::Error;

/// Metadata plus a spec held as a [`serde_json::Value`].
///
/// Serializes as `{"metadata": {...}, "spec": ...}`, the manifest form. It can be
/// stored in the state like any resource ([`into_any`](DynamicResource::into_any));
/// typed readers then decode the spec on [`AnyResource::typed`].
///
/// ```
/// use cosi_runtime::resource::DynamicResource;
///
/// let manifest = r#"{
///     "metadata": {"namespace": "network", "type": "Hostnames.net.cosi.dev", "id": "hostname"},
///     "spec": {"hostname": "node-1"}
/// }"#;
/// let r: DynamicResource = serde_json::from_str(manifest).unwrap();
/// assert_eq!(r.metadata().id(), "hostname");
/// assert_eq!(r.spec()["hostname"], "node-1");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DynamicResource {
    metadata: Metadata,
    spec: serde_json::Value,
}

impl DynamicResource {
    /// A dynamic resource from its parts.
    pub fn new(metadata: Metadata, spec: serde_json::Value) -> Self {
        DynamicResource { metadata, spec }
    }

    /// The dynamic form of a typed resource.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if the spec does not serialize.
    pub fn from_typed<S: Spec>(resource: &Resource<S>) -> Result<Self, Error> {
        let spec = serde_json::to_value(resource.spec()).map_err(|e| Error::InvalidInput {
            resource: resource.pointer().to_string(),
            reason: format!("the spec does not serialize: {e}"),
        })?;
        Ok(DynamicResource::new(resource.metadata().clone(), spec))
    }

    /// The metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    /// The metadata, for changing.
    pub fn metadata_mut(&mut self) -> &mut Metadata {
        &mut self.metadata
    }

    /// The spec.
    pub fn spec(&self) -> &serde_json::Value {
        &self.spec
    }

    /// The spec, for changing.
    pub fn spec_mut(&mut self) -> &mut serde_json::Value {
        &mut self.spec
    }

    /// Decodes the spec as `S`.
    ///
    /// # Errors
    /// [`Error::TypeMismatch`] if the type is not `S::TYPE` or the spec does not decode.
    pub fn typed<S: Spec>(&self) -> Result<Resource<S>, Error> {
        self.clone().into_any().typed()
    }

    /// The type-erased form, ready to store.
    pub fn into_any(self) -> AnyResource {
        AnyResource::from_dynamic(self.metadata, self.spec)
    }
}

impl AnyResource {
    /// The dynamic form: metadata plus the spec as a serde value.
    ///
    /// # Errors
    /// [`Error::NotFound`] for a tombstone; [`Error::InvalidInput`] if the spec
    /// does not serialize.
    pub fn to_dynamic(&self) -> Result<DynamicResource, Error> {
        let md = self.metadata();
        let spec =
            self.0.spec().ok_or_else(|| Error::NotFound { resource: md.pointer().clone() })?;
        let value = spec.to_value().map_err(|e| Error::InvalidInput {
            resource: md.pointer().to_string(),
            reason: format!("the spec does not serialize: {e}"),
        })?;
        Ok(DynamicResource::new(md.clone(), value))
    }
}

impl From<DynamicResource> for AnyResource {
    fn from(r: DynamicResource) -> Self {
        r.into_any()
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::tests::{Num, Text};
    use super::*;

    #[test]
    fn typed_and_dynamic_forms_convert_both_ways() {
        let typed = Resource::new("ns", "a", Num(3));
        let dynamic = DynamicResource::from_typed(&typed).unwrap();
        assert_eq!(dynamic.spec(), &serde_json::json!(3));
        assert_eq!(dynamic.typed::<Num>().unwrap(), typed);
        assert!(dynamic.typed::<Text>().unwrap_err().is_type_mismatch());
        let via_any = typed.into_any().to_dynamic().unwrap();
        assert_eq!(via_any, dynamic);
    }
}
