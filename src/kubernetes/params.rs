//! Query parameters of list and watch requests: selectors, booleans,
//! versions, timeouts.

use std::collections::HashMap;
use std::time::Duration;

use super::pages::Continue;
use super::status::Status;
use crate::resource::{AnyResource, LabelQuery};

/// A boolean as Go's `strconv.ParseBool` reads it (python sends `True`).
pub(crate) fn parse_bool(name: &str, value: &str) -> Result<bool, Status> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(Status::bad_request(format!("{name}={value:?} is not a boolean"))),
    }
}

/// One term of a field selector.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct FieldTerm {
    field: Field,
    value: String,
    equal: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Field {
    Name,
    Namespace,
    /// Another field (`involvedObject.name`), selectable where the type says
    /// so ([`Expose::selectable_fields`](super::Expose::selectable_fields)).
    Path(String),
}

/// A field selector (`=`, `==`, `!=`) on `metadata.name`,
/// `metadata.namespace`, and the fields a type makes selectable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FieldSelector(Vec<FieldTerm>);

impl FieldSelector {
    pub(crate) fn parse(text: &str) -> Result<Self, Status> {
        let mut terms = Vec::new();
        for term in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let (key, value, equal) = if let Some((k, v)) = term.split_once("!=") {
                (k, v, false)
            } else if let Some((k, v)) = term.split_once("==") {
                (k, v, true)
            } else if let Some((k, v)) = term.split_once('=') {
                (k, v, true)
            } else {
                return Err(Status::bad_request(format!(
                    "invalid field selector term {term:?}: expected field=value, field==value or field!=value"
                )));
            };
            let field = match key.trim() {
                "metadata.name" => Field::Name,
                "metadata.namespace" => Field::Namespace,
                other if super::registry::parse_path(&format!(".{other}")).is_some() => {
                    Field::Path(other.to_owned())
                }
                other => {
                    return Err(Status::bad_request(format!("field label not supported: {other}")));
                }
            };
            terms.push(FieldTerm { field, value: value.trim().to_owned(), equal });
        }
        Ok(FieldSelector(terms))
    }

    /// `400` for a term on a field `exposed` does not make selectable (as
    /// the apiserver answers: `field label not supported`).
    pub(crate) fn check(&self, exposed: &super::registry::Exposed) -> Result<(), Status> {
        for t in &self.0 {
            if let Field::Path(path) = &t.field
                && !exposed.selectable.iter().any(|s| s == path)
            {
                let supported = if exposed.selectable.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (besides metadata.name and metadata.namespace: {})",
                        exposed.selectable.join(", ")
                    )
                };
                return Err(Status::bad_request(format!(
                    "field label not supported: {path}{supported}"
                )));
            }
        }
        Ok(())
    }

    /// Whether `resource` matches (terms on other fields than its name and
    /// namespace never do here: see [`matches_object`](Self::matches_object)).
    pub(crate) fn matches(&self, resource: &AnyResource) -> bool {
        self.0.iter().all(|t| {
            let actual = match &t.field {
                Field::Name => resource.id(),
                Field::Namespace => resource.metadata().namespace(),
                Field::Path(_) => return false,
            };
            (actual == t.value) == t.equal
        })
    }

    /// Whether `resource`, served as an object of `exposed`, matches: a
    /// term on another field compares that field's value as text (a
    /// missing one as the empty text).
    pub(crate) fn matches_object(
        &self,
        exposed: &super::registry::Exposed,
        resource: &AnyResource,
    ) -> bool {
        let mut served: Option<serde_json::Value> = None;
        self.0.iter().all(|t| {
            let actual: std::borrow::Cow<'_, str> = match &t.field {
                Field::Name => resource.id().into(),
                Field::Namespace => resource.metadata().namespace().into(),
                Field::Path(path) => {
                    let object = served.get_or_insert_with(|| {
                        super::object::Object::new(
                            exposed,
                            resource,
                            resource.metadata().revision(),
                        )
                        .map(|o| o.to_value())
                        .unwrap_or_default()
                    });
                    let at = path.split('.').try_fold(&*object, |v, k| v.get(k));
                    match at {
                        None | Some(serde_json::Value::Null) => "".into(),
                        Some(serde_json::Value::String(s)) => s.clone().into(),
                        Some(other) => other.to_string().into(),
                    }
                }
            };
            (actual == t.value) == t.equal
        })
    }

    /// The one name an equality term on `metadata.name` admits, when it is
    /// a valid resource id (`kubectl wait`, an informer that follows one
    /// object): what a list or a watch may read as that one resource. (Any
    /// other name matches nothing the state holds; the selector says so.)
    pub(crate) fn name(&self) -> Option<&str> {
        self.0
            .iter()
            .find(|t| t.field == Field::Name && t.equal)
            .map(|t| t.value.as_str())
            .filter(|name| crate::resource::validate::name("id", name).is_ok())
    }

    /// Whether resources of `namespace` can match at all.
    pub(crate) fn admits_namespace(&self, namespace: &str) -> bool {
        self.0.iter().all(|t| t.field != Field::Namespace || (namespace == t.value) == t.equal)
    }
}

/// The longest `timeoutSeconds` honoured (a year); a longer one is cut to it.
/// A watch's deadline is `now + timeout`: an unbounded one would overflow
/// the clock (`timeoutSeconds=18446744073709551615` would panic the handler).
pub(crate) const MAX_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// A watch that names no `timeoutSeconds` ends after a time drawn between
/// this and twice this (30 to 60 minutes), as the apiserver does with its
/// `--min-request-timeout`: clients watch again (informers, `kubectl get
/// -w` reports the end), and a watch whose client went away quietly (the
/// server only notices at its next write) cannot linger for ever.
pub(crate) const MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);

/// [`MIN_WATCH_TIMEOUT`] plus a random part of it, spreading relists.
fn default_watch_timeout() -> Duration {
    let spread = uuid::Uuid::new_v4().as_u128() % u128::from(MIN_WATCH_TIMEOUT.as_secs());
    MIN_WATCH_TIMEOUT + Duration::from_secs(spread as u64)
}

/// Where a list or watch starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Start {
    /// No version, or "0": the current state first.
    Now,
    /// After this revision.
    After(u64),
}

/// The parameters of a list or watch request.
#[derive(Clone, Debug)]
pub(crate) struct ListParams {
    pub(crate) labels: LabelQuery,
    pub(crate) fields: FieldSelector,
    pub(crate) watch: bool,
    pub(crate) start: Start,
    pub(crate) timeout: Option<Duration>,
    pub(crate) bookmarks: bool,
    pub(crate) send_initial_events: bool,
    /// `limit`: at most this many objects per page (none: no pages).
    pub(crate) limit: Option<usize>,
    /// `continue`: the page after the one this token ended.
    pub(crate) continue_from: Option<Continue>,
}

impl ListParams {
    pub(crate) fn parse(query: &HashMap<String, String>) -> Result<Self, Status> {
        let flag = |name: &str| query.get(name).map_or(Ok(false), |v| parse_bool(name, v));
        let labels = match query.get("labelSelector") {
            Some(s) => LabelQuery::parse_kubernetes(s).map_err(|e| {
                Status::bad_request(format!("unable to parse labelSelector {s:?}: {e}"))
            })?,
            None => LabelQuery::all(),
        };
        let fields = match query.get("fieldSelector") {
            Some(s) => FieldSelector::parse(s)?,
            None => FieldSelector::default(),
        };
        let start = match query.get("resourceVersion").map(String::as_str) {
            None | Some("" | "0") => Start::Now,
            Some(v) => Start::After(v.parse().map_err(|_| {
                Status::bad_request(format!(
                    "resourceVersion {v:?} is not a revision of this server"
                ))
            })?),
        };
        let timeout = match query.get("timeoutSeconds") {
            Some(v) => Some(
                Duration::from_secs(v.parse().map_err(|_| {
                    Status::bad_request(format!("timeoutSeconds {v:?} is not a number of seconds"))
                })?)
                .min(MAX_TIMEOUT),
            ),
            None => None,
        };
        let watch = flag("watch")?;
        // `timeoutSeconds=0` means none given, as on the apiserver (which
        // treats a zero timeout as unset): a watch of 0 seconds would end
        // before its first event.
        let timeout = match timeout.filter(|t| !t.is_zero()) {
            None if watch => Some(default_watch_timeout()),
            given => given,
        };
        Ok(ListParams {
            labels,
            fields,
            watch,
            start,
            timeout,
            bookmarks: flag("allowWatchBookmarks")?,
            send_initial_events: flag("sendInitialEvents")?,
            limit: match query.get("limit").map(String::as_str) {
                None | Some("" | "0") => None,
                Some(v) => Some(v.parse::<usize>().map_err(|_| {
                    Status::bad_request(format!("limit {v:?} is not a number of objects"))
                })?),
            },
            continue_from: match query.get("continue").map(String::as_str) {
                None | Some("") => None,
                Some(token) => Some(Continue::parse(token)?),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{Metadata, Pointer};

    fn resource(ns: &str, id: &str) -> AnyResource {
        AnyResource::from_dynamic(
            Metadata::new(Pointer::new(ns, "As.x.dev", id)),
            serde_json::Value::Null,
        )
    }

    #[test]
    fn booleans_parse_like_gos() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert!(parse_bool("watch", t).unwrap(), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert!(!parse_bool("watch", f).unwrap(), "{f}");
        }
        assert_eq!(parse_bool("watch", "yes").unwrap_err().code(), 400);
    }

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn a_watch_without_a_timeout_gets_one_between_30_and_60_minutes() {
        for _ in 0..100 {
            let watch = ListParams::parse(&query(&[("watch", "true")])).unwrap();
            let timeout = watch.timeout.unwrap();
            assert!((MIN_WATCH_TIMEOUT..MIN_WATCH_TIMEOUT * 2).contains(&timeout), "{timeout:?}");
        }
        assert_eq!(ListParams::parse(&query(&[])).unwrap().timeout, None, "a list has none");
        let given = ListParams::parse(&query(&[("watch", "1"), ("timeoutSeconds", "5")])).unwrap();
        assert_eq!(given.timeout, Some(Duration::from_secs(5)));
        // Zero is none given: the watch gets the default, not an instant end.
        let zero = ListParams::parse(&query(&[("watch", "1"), ("timeoutSeconds", "0")])).unwrap();
        let timeout = zero.timeout.unwrap();
        assert!((MIN_WATCH_TIMEOUT..MIN_WATCH_TIMEOUT * 2).contains(&timeout), "{timeout:?}");
        assert_eq!(ListParams::parse(&query(&[("timeoutSeconds", "0")])).unwrap().timeout, None);
    }

    #[test]
    fn a_huge_timeout_is_cut_to_the_longest_and_a_negative_one_is_a_400() {
        let huge = ListParams::parse(&query(&[("timeoutSeconds", "18446744073709551615")]));
        let timeout = huge.unwrap().timeout.unwrap();
        assert_eq!(timeout, MAX_TIMEOUT);
        // The watch's deadline, as watch.rs computes it, does not overflow.
        assert!(tokio::time::Instant::now().checked_add(timeout).is_some());
        let short = ListParams::parse(&query(&[("timeoutSeconds", "30")])).unwrap();
        assert_eq!(short.timeout, Some(Duration::from_secs(30)));
        for bad in ["-1", "1.5", "ten", ""] {
            let e = ListParams::parse(&query(&[("timeoutSeconds", bad)])).unwrap_err();
            assert_eq!(e.code(), 400, "{bad:?}");
        }
    }

    #[test]
    fn field_selectors_on_name_and_namespace() {
        let s = FieldSelector::parse("metadata.name=a,metadata.namespace!=b").unwrap();
        assert!(s.matches(&resource("c", "a")));
        assert!(!s.matches(&resource("b", "a")));
        assert!(!s.matches(&resource("c", "x")));
        assert!(FieldSelector::parse("metadata.name==a").unwrap().matches(&resource("n", "a")));
        assert!(!s.admits_namespace("b"));
        // Parsed, then refused for a type that does not make it selectable.
        let other = FieldSelector::parse("spec.mtu=1").unwrap();
        let exposed =
            crate::kubernetes::Expose::resource_type("Links.x.dev", "v1").resolve().unwrap();
        assert_eq!(other.check(&exposed).unwrap_err().code(), 400);
        assert_eq!(FieldSelector::parse("spec..mtu=1").unwrap_err().code(), 400);
        assert_eq!(FieldSelector::parse("metadata.name").unwrap_err().code(), 400);
    }
}
