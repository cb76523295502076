//! The emitter's choice for a string built in Rust (`Style::Auto`): written
//! plain only when it reads back as the same string. Checked against the
//! straightforward definition it was optimized from, and by round trips.

use cosi_runtime::krm::yaml::{self, Map, Node, Scalar, Style, ambiguous_as_string};
use proptest::prelude::*;

/// `ambiguous_as_string` as first written: every check on every string.
fn reference(v: &str) -> bool {
    const WORDS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false",
        "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF", "~", "null", "Null", "NULL", "=",
        "<<",
    ];
    if v.is_empty() || WORDS.contains(&v) {
        return true;
    }
    let body = v.strip_prefix(['-', '+']).unwrap_or(v);
    let lower = body.to_ascii_lowercase();
    if lower == ".inf" || lower == ".nan" {
        return true;
    }
    if !Scalar::new(v, Style::Plain, None).is_string() {
        return true;
    }
    body.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && body.chars().all(|c| c.is_ascii_hexdigit() || "xXoObB._:+-".contains(c))
}

/// Strings near the edges: numbers of every notation, words, signs, specials.
fn scalar_text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[-+]?[0-9._:xXoObBeE+-]{0,12}",
        "[-+]?\\.?(inf|nan|Inf|NaN|INF|NAN)",
        "(y|n|yes|no|on|off|true|false|null|~|=|<<|Yes|NO|Off|TRUE|Null)",
        "[ -~]{0,16}",
        "\\PC{0,8}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4096))]

    #[test]
    fn ambiguous_as_string_agrees_with_its_definition(v in scalar_text()) {
        prop_assert_eq!(ambiguous_as_string(&v), reference(&v), "{:?}", v);
    }

    #[test]
    fn a_new_string_reads_back_as_the_same_string(key in scalar_text(), v in scalar_text()) {
        let mut map = Map::new();
        map.insert(key.as_str(), Node::string(&v));
        let mut text = String::new();
        yaml::emit_document(&Node::Map(map), &mut text);
        let back = yaml::parse_document(&text).map_err(|e| TestCaseError::fail(format!("{text:?}: {e}")))?;
        let entry = back.as_map().and_then(|m| m.entries().first().cloned());
        let Some((k, value)) = entry else {
            return Err(TestCaseError::fail(format!("{text:?} lost its entry")));
        };
        prop_assert_eq!(k.value(), key.as_str(), "{:?}", text);
        prop_assert!(k.is_string(), "{:?}", text);
        prop_assert_eq!(value.as_str(), Some(v.as_str()), "{:?}", text);
    }
}
