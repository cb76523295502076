//! Spec types and helpers shared by the integration tests.
#![allow(dead_code)]

use cosi_runtime::resource::Spec;
use serde::{Deserialize, Serialize};

/// An integer resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Ints.test.cosi.dev")]
pub struct IntSpec(pub i64);

/// A string resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Strs.test.cosi.dev")]
pub struct StrSpec(pub String);

/// A sentence resource.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Sentences.test.cosi.dev")]
pub struct SentenceSpec(pub String);

pub const NS: &str = "default";

pub mod controllers;
