//! Label selectors as text, in kubectl's syntax: `LabelQuery::from_str`.

use std::str::FromStr;

use super::{LabelQuery, LabelTerm};

/// A label selector that could not be parsed: which term, and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("malformed label selector term {term:?}: {reason}")]
pub struct SelectorError {
    /// The term at fault, as written.
    pub term: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Splits at the commas outside parentheses.
fn split_terms(text: &str) -> Result<Vec<&str>, SelectorError> {
    let mut terms = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.checked_sub(1).ok_or_else(|| SelectorError {
                    term: text[start..=i].trim().to_owned(),
                    reason: "a ')' closes nothing".into(),
                })?;
            }
            ',' if depth == 0 => {
                terms.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth > 0 {
        return Err(SelectorError {
            term: text[start..].trim().to_owned(),
            reason: "a '(' is never closed".into(),
        });
    }
    terms.push(&text[start..]);
    Ok(terms)
}

fn key(term: &str, key: &str) -> Result<String, SelectorError> {
    let key = key.trim();
    super::validate::label_key(key)
        .map_err(|reason| SelectorError { term: term.to_owned(), reason })?;
    Ok(key.to_owned())
}

fn parse_term(term: &str) -> Result<LabelTerm, SelectorError> {
    let bad = |reason: &str| SelectorError { term: term.to_owned(), reason: reason.to_owned() };
    if term.is_empty() {
        return Err(bad("the term is empty"));
    }
    if let Some(rest) = term.strip_prefix('!') {
        return Ok(LabelTerm::NotExists { key: key(term, rest)? });
    }
    if let Some((k, v)) = term.split_once("!=") {
        return Ok(LabelTerm::NotEqual { key: key(term, k)?, value: v.trim().to_owned() });
    }
    if let Some((k, v)) = term.split_once('=') {
        let v = v.strip_prefix('=').unwrap_or(v);
        return Ok(LabelTerm::Equal { key: key(term, k)?, value: v.trim().to_owned() });
    }
    if let Some(open) = term.find('(') {
        let inside =
            term[open + 1..].strip_suffix(')').ok_or_else(|| bad("a set must end with ')'"))?;
        let mut head = term[..open].split_whitespace();
        let (Some(k), Some(op), None) = (head.next(), head.next(), head.next()) else {
            return Err(bad("a set term reads `key in (a,b)` or `key notin (a,b)`"));
        };
        let values: Vec<String> = inside.split(',').map(|v| v.trim().to_owned()).collect();
        if values.iter().any(String::is_empty) {
            return Err(bad("a set holds an empty value"));
        }
        return match op {
            "in" => Ok(LabelTerm::In { key: key(term, k)?, values }),
            "notin" => Ok(LabelTerm::NotIn { key: key(term, k)?, values }),
            other => Err(bad(&format!("unknown set operator {other:?} (in, notin)"))),
        };
    }
    if term.contains(char::is_whitespace) {
        return Err(bad("expected `key`, `!key`, `key=value`, `key!=value` or `key in (…)`"));
    }
    Ok(LabelTerm::Exists { key: key(term, term)? })
}

/// Parses kubectl's label selector syntax: comma-separated terms, all of
/// which must hold. `key` (exists), `!key` (absent), `key=value` or
/// `key==value`, `key!=value`, `key in (a,b)`, `key notin (a,b)`. The empty
/// string selects everything.
///
/// ```
/// use cosi_runtime::resource::LabelQuery;
///
/// let query: LabelQuery = "tier=edge, state notin (down), !legacy".parse()?;
/// assert_eq!(query, LabelQuery::all().equal("tier", "edge").not_in("state", ["down"]).not_exists("legacy"));
/// assert!("tier in (edge".parse::<LabelQuery>().is_err());
/// # Ok::<(), cosi_runtime::resource::SelectorError>(())
/// ```
impl FromStr for LabelQuery {
    type Err = SelectorError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.trim().is_empty() {
            return Ok(LabelQuery::all());
        }
        let terms = split_terms(text)?
            .into_iter()
            .map(|t| parse_term(t.trim()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LabelQuery::from_terms(terms))
    }
}

impl LabelQuery {
    /// Parses a Kubernetes label selector (the syntax of
    /// [`from_str`](LabelQuery::from_str)) with Kubernetes' meaning:
    /// `key!=value` and `key notin (a,b)` also select resources that have
    /// no label `key` ([`LabelTerm::AbsentOrNotEqual`],
    /// [`LabelTerm::AbsentOrNotIn`]), where the COSI reading does not.
    ///
    /// ```
    /// use cosi_runtime::resource::{LabelQuery, Labels};
    ///
    /// let unlabelled = Labels::default();
    /// let cosi: LabelQuery = "env!=prod".parse()?;
    /// let kubernetes = LabelQuery::parse_kubernetes("env!=prod")?;
    /// assert!(!cosi.matches(&unlabelled));
    /// assert!(kubernetes.matches(&unlabelled));
    /// # Ok::<(), cosi_runtime::resource::SelectorError>(())
    /// ```
    ///
    /// # Errors
    /// [`SelectorError`] naming the malformed term.
    pub fn parse_kubernetes(text: &str) -> Result<LabelQuery, SelectorError> {
        let cosi: LabelQuery = text.parse()?;
        Ok(LabelQuery::from_terms(cosi.terms().iter().cloned().map(|term| match term {
            LabelTerm::NotEqual { key, value } => LabelTerm::AbsentOrNotEqual { key, value },
            LabelTerm::NotIn { key, values } => LabelTerm::AbsentOrNotIn { key, values },
            other => other,
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<LabelQuery, SelectorError> {
        s.parse()
    }

    #[test]
    fn every_operator_parses() {
        let q = parse("a, !b, c=1, d==2, e!=3, f in (x, y), g notin (z)").unwrap();
        let want = LabelQuery::all()
            .exists("a")
            .not_exists("b")
            .equal("c", "1")
            .equal("d", "2")
            .not_equal("e", "3")
            .in_values("f", ["x", "y"])
            .not_in("g", ["z"]);
        assert_eq!(q, want);
        assert_eq!(parse("").unwrap(), LabelQuery::all());
        assert_eq!(parse("k=").unwrap(), LabelQuery::all().equal("k", ""));
        assert_eq!(
            parse("net.cosi.dev/role=edge").unwrap(),
            LabelQuery::all().equal("net.cosi.dev/role", "edge")
        );
    }

    #[test]
    fn malformed_selectors_say_which_term_and_why() {
        for (text, term) in [
            ("a,,b", ""),
            ("f in (x", "f in (x"),
            ("f in x)", "f in x)"),
            ("f on (x)", "f on (x)"),
            ("f in (x,)", "f in (x,)"),
            ("bad key=1", "bad key=1"),
            ("a b", "a b"),
            ("-x", "-x"),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.term, term, "{text}: {e}");
            assert!(!e.reason.is_empty());
        }
    }

    #[test]
    fn kubernetes_negations_select_resources_without_the_label() {
        let k = LabelQuery::parse_kubernetes("env!=a, tier notin (x,y), app=web").unwrap();
        let labels =
            |pairs: &[(&str, &str)]| pairs.iter().copied().collect::<super::super::Labels>();
        assert!(k.matches(&labels(&[("app", "web")])), "no env, no tier");
        assert!(k.matches(&labels(&[("app", "web"), ("env", "b"), ("tier", "z")])));
        assert!(!k.matches(&labels(&[("app", "web"), ("env", "a")])));
        assert!(!k.matches(&labels(&[("app", "web"), ("tier", "y")])));
        assert!(!k.matches(&labels(&[("env", "b")])), "app=web still needs its label");
        let cosi = parse("env!=a").unwrap();
        assert!(!cosi.matches(&labels(&[])), "the COSI reading is unchanged");
        assert!(LabelQuery::parse_kubernetes("a in (b").is_err());
    }
}
