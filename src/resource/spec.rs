//! The [`Spec`] trait: what a resource's payload implements.

use std::fmt;

use serde::Serialize;
use serde::de::DeserializeOwned;

/// The opaque payload of a resource of one type.
///
/// The runtime never looks inside a spec: it stores, compares (to skip writes
/// that change nothing) and, for generic tools, serializes it. `TYPE` names the
/// resource type; by convention `PluralName.suffix.domain`.
///
/// Derive it, naming the type once:
///
/// ```
/// use cosi_runtime::resource::{Resource, Spec};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
/// #[spec(type = "Hostnames.net.cosi.dev")]
/// struct HostnameSpec {
///     hostname: String,
/// }
///
/// let r = Resource::new("network", "hostname", HostnameSpec { hostname: "node-1".into() });
/// assert_eq!(r.metadata().resource_type(), "Hostnames.net.cosi.dev");
/// ```
///
/// or write the impl by hand (the same thing):
///
/// ```
/// # use cosi_runtime::resource::Spec;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct HostnameSpec { hostname: String }
/// impl Spec for HostnameSpec {
///     const TYPE: &'static str = "Hostnames.net.cosi.dev";
/// }
/// ```
///
/// The derive refuses a missing, repeated, empty or over-long type at
/// compile time:
///
/// ```compile_fail
/// use cosi_runtime::resource::Spec;
/// #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// struct NoType;
/// ```
pub trait Spec:
    Clone + PartialEq + fmt::Debug + Send + Sync + Serialize + DeserializeOwned + 'static
{
    /// The resource type of every resource with this spec.
    const TYPE: &'static str;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct Num(pub i64);
    impl Spec for Num {
        const TYPE: &'static str = "Nums.test.cosi.dev";
    }

    #[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
    pub(crate) struct Text(pub String);
    impl Spec for Text {
        const TYPE: &'static str = "Texts.test.cosi.dev";
    }
}
