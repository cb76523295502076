//! What the checks share: the namespaces they write to, their spec types,
//! and short constructors for their resources, pointers and kind.

use serde::{Deserialize, Serialize};

use crate::prelude::*;

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

pub(super) fn int(id: &str, n: i64) -> Resource<IntSpec> {
    Resource::new(NS, id, IntSpec(n))
}

pub(super) fn ptr(id: &str) -> Pointer {
    Pointer::typed::<IntSpec>(NS, id).erase()
}

pub(super) fn kind() -> Kind {
    Kind::of::<IntSpec>(NS)
}
