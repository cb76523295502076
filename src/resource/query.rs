//! Label queries: filters for [`list`](crate::State::list) and
//! [`watch_kind`](crate::State::watch_kind).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Labels;

/// One condition on the labels of a resource.
///
/// Negated comparisons follow the Go COSI runtime: when the key is missing,
/// [`NotEqual`](LabelTerm::NotEqual) and [`NotIn`](LabelTerm::NotIn) do **not**
/// match (a comparison with a missing label is "no match", negated or not).
/// Use [`NotExists`](LabelTerm::NotExists) to select resources without a label.
/// Kubernetes reads `!=` and `notin` the other way (a resource without the
/// label is selected): [`AbsentOrNotEqual`](LabelTerm::AbsentOrNotEqual) and
/// [`AbsentOrNotIn`](LabelTerm::AbsentOrNotIn), which
/// [`LabelQuery::parse_kubernetes`] gives.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "op")]
pub enum LabelTerm {
    /// The label is present.
    Exists {
        /// The label key.
        key: String,
    },
    /// The label is absent.
    NotExists {
        /// The label key.
        key: String,
    },
    /// The label is present and equal to `value`.
    Equal {
        /// The label key.
        key: String,
        /// The value it must have.
        value: String,
    },
    /// The label is present and not equal to `value`.
    NotEqual {
        /// The label key.
        key: String,
        /// The value it must not have.
        value: String,
    },
    /// The label is present and its value is one of `values`.
    In {
        /// The label key.
        key: String,
        /// The accepted values.
        values: Vec<String>,
    },
    /// The label is present and its value is none of `values`.
    NotIn {
        /// The label key.
        key: String,
        /// The rejected values.
        values: Vec<String>,
    },
    /// The label is absent, or present and not equal to `value`: a
    /// Kubernetes selector's `key!=value`.
    AbsentOrNotEqual {
        /// The label key.
        key: String,
        /// The value it must not have.
        value: String,
    },
    /// The label is absent, or present with none of `values`: a Kubernetes
    /// selector's `key notin (a,b)`.
    AbsentOrNotIn {
        /// The label key.
        key: String,
        /// The rejected values.
        values: Vec<String>,
    },
}

impl LabelTerm {
    /// The label key this term looks at.
    pub fn key(&self) -> &str {
        match self {
            LabelTerm::Exists { key }
            | LabelTerm::NotExists { key }
            | LabelTerm::Equal { key, .. }
            | LabelTerm::NotEqual { key, .. }
            | LabelTerm::In { key, .. }
            | LabelTerm::NotIn { key, .. }
            | LabelTerm::AbsentOrNotEqual { key, .. }
            | LabelTerm::AbsentOrNotIn { key, .. } => key,
        }
    }

    /// Whether `labels` satisfy this term.
    pub fn matches(&self, labels: &Labels) -> bool {
        let value = labels.get(self.key());
        match self {
            LabelTerm::Exists { .. } => value.is_some(),
            LabelTerm::NotExists { .. } => value.is_none(),
            LabelTerm::Equal { value: want, .. } => value == Some(want.as_str()),
            LabelTerm::NotEqual { value: want, .. } => value.is_some_and(|v| v != want),
            LabelTerm::In { values, .. } => value.is_some_and(|v| values.iter().any(|w| w == v)),
            LabelTerm::NotIn { values, .. } => value.is_some_and(|v| values.iter().all(|w| w != v)),
            LabelTerm::AbsentOrNotEqual { value: want, .. } => value.is_none_or(|v| v != want),
            LabelTerm::AbsentOrNotIn { values, .. } => {
                value.is_none_or(|v| values.iter().all(|w| w != v))
            }
        }
    }
}

impl fmt::Display for LabelTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LabelTerm::Exists { key } => write!(f, "{key}"),
            LabelTerm::NotExists { key } => write!(f, "!{key}"),
            LabelTerm::Equal { key, value } => write!(f, "{key}=={value}"),
            LabelTerm::NotEqual { key, value } => write!(f, "{key}!={value}"),
            LabelTerm::In { key, values } => write!(f, "{key} in ({})", values.join(",")),
            LabelTerm::NotIn { key, values } => write!(f, "{key} notin ({})", values.join(",")),
            LabelTerm::AbsentOrNotEqual { key, value } => write!(f, "{key}!={value} or !{key}"),
            LabelTerm::AbsentOrNotIn { key, values } => {
                write!(f, "{key} notin ({}) or !{key}", values.join(","))
            }
        }
    }
}

/// A conjunction of [`LabelTerm`]s: a resource matches when every term holds.
///
/// The empty query ([`LabelQuery::all`]) matches everything.
///
/// ```
/// use cosi_runtime::resource::{LabelQuery, Labels};
///
/// let query = LabelQuery::all().equal("tier", "edge").not_in("state", ["down"]);
/// let labels: Labels = [("tier", "edge"), ("state", "up")].into_iter().collect();
/// assert!(query.matches(&labels));
/// assert_eq!(query.to_string(), "tier==edge, state notin (down)");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct LabelQuery {
    terms: Vec<LabelTerm>,
}

impl LabelQuery {
    /// The query that matches every resource.
    pub const fn all() -> Self {
        LabelQuery { terms: Vec::new() }
    }

    /// A query from a list of terms (ANDed).
    pub fn from_terms(terms: impl IntoIterator<Item = LabelTerm>) -> Self {
        LabelQuery { terms: terms.into_iter().collect() }
    }

    /// Adds a term.
    #[must_use]
    pub fn and(mut self, term: LabelTerm) -> Self {
        self.terms.push(term);
        self
    }

    /// Requires label `key` to be present.
    #[must_use]
    pub fn exists(self, key: impl Into<String>) -> Self {
        self.and(LabelTerm::Exists { key: key.into() })
    }

    /// Requires label `key` to be absent.
    #[must_use]
    pub fn not_exists(self, key: impl Into<String>) -> Self {
        self.and(LabelTerm::NotExists { key: key.into() })
    }

    /// Requires label `key` to equal `value`.
    #[must_use]
    pub fn equal(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.and(LabelTerm::Equal { key: key.into(), value: value.into() })
    }

    /// Requires label `key` to be present with a value other than `value`.
    #[must_use]
    pub fn not_equal(self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.and(LabelTerm::NotEqual { key: key.into(), value: value.into() })
    }

    /// Requires label `key` to have one of `values`.
    #[must_use]
    pub fn in_values<V: Into<String>>(
        self,
        key: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.and(LabelTerm::In {
            key: key.into(),
            values: values.into_iter().map(Into::into).collect(),
        })
    }

    /// Requires label `key` to be present with none of `values`.
    #[must_use]
    pub fn not_in<V: Into<String>>(
        self,
        key: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        self.and(LabelTerm::NotIn {
            key: key.into(),
            values: values.into_iter().map(Into::into).collect(),
        })
    }

    /// The terms.
    pub fn terms(&self) -> &[LabelTerm] {
        &self.terms
    }

    /// Whether the query has no terms (matches everything).
    pub fn is_all(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether `labels` satisfy every term.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.terms.iter().all(|t| t.matches(labels))
    }
}

impl fmt::Display for LabelQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.terms.is_empty() {
            return f.write_str("<all>");
        }
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{t}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().copied().collect()
    }

    #[test]
    fn each_operator_and_its_negation() {
        let l = labels(&[("a", "1"), ("b", "2")]);
        assert!(LabelQuery::all().exists("a").matches(&l));
        assert!(!LabelQuery::all().exists("z").matches(&l));
        assert!(LabelQuery::all().not_exists("z").matches(&l));
        assert!(!LabelQuery::all().not_exists("a").matches(&l));
        assert!(LabelQuery::all().equal("a", "1").matches(&l));
        assert!(!LabelQuery::all().equal("a", "2").matches(&l));
        assert!(LabelQuery::all().not_equal("a", "2").matches(&l));
        assert!(!LabelQuery::all().not_equal("a", "1").matches(&l));
        assert!(LabelQuery::all().in_values("b", ["1", "2"]).matches(&l));
        assert!(!LabelQuery::all().in_values("b", ["3"]).matches(&l));
        assert!(LabelQuery::all().not_in("b", ["3"]).matches(&l));
        assert!(!LabelQuery::all().not_in("b", ["2", "3"]).matches(&l));
    }

    #[test]
    fn negated_comparisons_do_not_match_a_missing_key() {
        let l = labels(&[("a", "1")]);
        assert!(!LabelQuery::all().not_equal("z", "1").matches(&l));
        assert!(!LabelQuery::all().not_in("z", ["1"]).matches(&l));
    }

    #[test]
    fn terms_are_anded_and_empty_matches_all() {
        let l = labels(&[("a", "1"), ("b", "2")]);
        assert!(LabelQuery::all().matches(&Labels::new()));
        assert!(LabelQuery::all().equal("a", "1").equal("b", "2").matches(&l));
        assert!(!LabelQuery::all().equal("a", "1").equal("b", "3").matches(&l));
    }

    #[test]
    fn queries_serialize_as_term_lists() {
        let q = LabelQuery::all().exists("a").in_values("b", ["x"]);
        let json = serde_json::to_string(&q).unwrap();
        assert_eq!(json, r#"[{"op":"exists","key":"a"},{"op":"in","key":"b","values":["x"]}]"#);
        assert_eq!(serde_json::from_str::<LabelQuery>(&json).unwrap(), q);
    }
}
