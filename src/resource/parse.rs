//! Kinds and pointers parsed back from their display ([`str::parse`]):
//! `namespace/type` and `namespace/type/id`, each part escaped.

use super::pointer::unescape_part;
use super::{Kind, Pointer};

fn bad_address(text: &str, expected: &str) -> crate::Error {
    crate::Error::InvalidInput {
        resource: text.to_owned(),
        reason: format!(
            "not {expected} (parts separated by '/', with '%' and '/' inside a part written %25 and %2F)"
        ),
    }
}

fn parts<const N: usize>(text: &str, expected: &str) -> Result<[String; N], crate::Error> {
    let split: Vec<&str> = text.split('/').collect();
    if split.len() != N {
        return Err(bad_address(text, expected));
    }
    let mut out: [String; N] = std::array::from_fn(|_| String::new());
    for (slot, part) in out.iter_mut().zip(split) {
        *slot = unescape_part(part).ok_or_else(|| bad_address(text, expected))?;
    }
    Ok(out)
}

/// Parses what [`Display`](std::fmt::Display) wrote: `namespace/type`.
impl std::str::FromStr for Kind {
    type Err = crate::Error;

    fn from_str(text: &str) -> Result<Kind, crate::Error> {
        let [namespace, resource_type] = parts::<2>(text, "a kind (namespace/type)")?;
        let kind = Kind::new(namespace, resource_type);
        super::validate::kind(&kind)?;
        Ok(kind)
    }
}

/// Parses what [`Display`](std::fmt::Display) wrote: `namespace/type/id`.
impl std::str::FromStr for Pointer {
    type Err = crate::Error;

    fn from_str(text: &str) -> Result<Pointer, crate::Error> {
        let [namespace, resource_type, id] = parts::<3>(text, "a pointer (namespace/type/id)")?;
        let ptr = Pointer::new(namespace, resource_type, id);
        super::validate::pointer(&ptr)?;
        Ok(ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn displays_parse_back_and_bad_text_is_refused() {
        let p = Pointer::new("a/b", "T%", "x/y%2F");
        assert_eq!(p.to_string(), "a%2Fb/T%25/x%2Fy%252F");
        assert_eq!(p.to_string().parse::<Pointer>().unwrap(), p);
        assert_eq!(p.kind().to_string().parse::<Kind>().unwrap(), *p.kind());
        for bad in ["a/b", "a/b/c/d", "a/b/%zz", "a//c", "a/b/c\n"] {
            let e = bad.parse::<Pointer>().unwrap_err();
            assert!(e.is_invalid_input(), "{bad}: {e}");
        }
        assert!("only-one".parse::<Kind>().unwrap_err().is_invalid_input());
    }

    proptest! {
        #[test]
        fn any_valid_pointer_round_trips_through_its_display(
            ns in "[^\\p{Cc}]{1,20}",
            ty in "[^\\p{Cc}]{1,20}",
            id in "[^\\p{Cc}]{1,40}",
        ) {
            let p = Pointer::new(&ns, &ty, id.as_str());
            prop_assert_eq!(p.to_string().parse::<Pointer>().unwrap(), p);
        }
    }
}
