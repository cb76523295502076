//! Spec types and helpers shared by the integration tests.
#![allow(dead_code)]

use cosi_runtime::resource::Spec;
use serde::{Deserialize, Serialize};

/// An integer resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct IntSpec(pub i64);

impl Spec for IntSpec {
    const TYPE: &'static str = "Ints.test.cosi.dev";
}

/// A string resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StrSpec(pub String);

impl Spec for StrSpec {
    const TYPE: &'static str = "Strs.test.cosi.dev";
}

/// A sentence resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SentenceSpec(pub String);

impl Spec for SentenceSpec {
    const TYPE: &'static str = "Sentences.test.cosi.dev";
}

pub const NS: &str = "default";

pub mod controllers;
