//! Lists in pages (`limit`, `continue`), consistent as the apiserver's are:
//! every page of one list comes from the snapshot its first page read.
//!
//! # Expected flow
//! A list with `limit=N` reads its snapshot as any list does, answers the
//! first N objects and, when more remain, keeps the snapshot (the objects
//! themselves are shared with the state's cache: what is kept is one
//! pointer per object) under a `continue` token, with `remainingItemCount`.
//! A request with that token answers the next N from the same snapshot, at
//! the same `resourceVersion`, whatever was written meanwhile.
//!
//! # Guarantees
//! - The pages of one list together hold each object of its snapshot
//!   exactly once, in the order of an unpaged list.
//! - A token names its query (type, namespaces, selectors): a token used
//!   with another query is a `400`.
//!
//! # Caveats
//! - A snapshot is kept for [`KEEP`] after its last page was read, and at
//!   most [`SNAPSHOTS`] at once (the oldest go first). A token past either
//!   is a `410 Expired`, as the apiserver answers a token past its
//!   compaction: clients list again from the start (client-go's pager and
//!   kube-runtime's watcher do).
//! - The body of a page is bounded by the page; the snapshot costs 8 bytes
//!   per object of the whole list while it is kept.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::status::Status;
use crate::resource::AnyResource;

/// How long a snapshot is kept after its last page was read.
pub(crate) const KEEP: Duration = Duration::from_secs(300);
/// The most snapshots kept at once.
pub(crate) const SNAPSHOTS: usize = 256;

/// One list's snapshot, kept for its next pages.
struct Snapshot {
    query: String,
    items: Arc<[AnyResource]>,
    revision: u64,
    used: Instant,
}

/// The snapshots of the lists being paged.
#[derive(Default)]
pub(crate) struct Pages {
    snapshots: Mutex<(u64, HashMap<u64, Snapshot>)>,
}

/// Where a page starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Continue {
    id: u64,
    offset: usize,
}

/// A page: its objects, the list's revision, and what comes after it.
pub(crate) struct Page {
    pub(crate) items: Arc<[AnyResource]>,
    pub(crate) range: std::ops::Range<usize>,
    pub(crate) revision: u64,
    /// The token of the next page, when there is one.
    pub(crate) next: Option<String>,
    /// How many objects follow this page.
    pub(crate) remaining: usize,
}

/// A list's `metadata`: its `resourceVersion`, and when more pages
/// follow, `continue` and `remainingItemCount`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ListMeta {
    pub(crate) revision: u64,
    pub(crate) next: Option<String>,
    pub(crate) remaining: usize,
}

impl ListMeta {
    /// An unpaged list's, at `revision`.
    pub(crate) fn at(revision: u64) -> ListMeta {
        ListMeta { revision, next: None, remaining: 0 }
    }
}

impl serde::Serialize for ListMeta {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut out = s.serialize_map(None)?;
        out.serialize_entry("resourceVersion", &self.revision.to_string())?;
        if let Some(next) = &self.next {
            out.serialize_entry("continue", next)?;
            out.serialize_entry("remainingItemCount", &self.remaining)?;
        }
        out.end()
    }
}

impl Page {
    /// The page's list `metadata`.
    pub(crate) fn meta(&self) -> ListMeta {
        ListMeta { revision: self.revision, next: self.next.clone(), remaining: self.remaining }
    }
}

impl Continue {
    /// Reads a `continue` token.
    pub(crate) fn parse(token: &str) -> Result<Continue, Status> {
        let bad = || Status::bad_request(format!("continue key is not valid: {token:?}"));
        let (id, offset) =
            token.strip_prefix("c1-").and_then(|t| t.split_once('-')).ok_or_else(bad)?;
        Ok(Continue {
            id: id.parse().map_err(|_| bad())?,
            offset: offset.parse().map_err(|_| bad())?,
        })
    }
}

fn expired() -> Status {
    Status::expired(
        "The provided continue parameter is too old to display a consistent list result. \
         You can start a new list without the continue parameter.",
    )
}

impl Pages {
    /// The first page of `limit` objects of `items` (read at `revision` for
    /// `query`); the rest is kept for the next pages when there is any.
    pub(crate) fn first(
        &self,
        query: String,
        items: Vec<AnyResource>,
        revision: u64,
        limit: usize,
    ) -> Page {
        let items: Arc<[AnyResource]> = items.into();
        if items.len() <= limit {
            let range = 0..items.len();
            return Page { items, range, revision, next: None, remaining: 0 };
        }
        let now = Instant::now();
        let mut guard = self.snapshots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (next_id, snapshots) = &mut *guard;
        snapshots.retain(|_, s| now.duration_since(s.used) < KEEP);
        if snapshots.len() >= SNAPSHOTS
            && let Some(oldest) = snapshots.iter().min_by_key(|(_, s)| s.used).map(|(id, _)| *id)
        {
            snapshots.remove(&oldest);
        }
        *next_id += 1;
        let id = *next_id;
        snapshots.insert(id, Snapshot { query, items: items.clone(), revision, used: now });
        drop(guard);
        let remaining = items.len() - limit;
        Page { items, range: 0..limit, revision, next: Some(format!("c1-{id}-{limit}")), remaining }
    }

    /// The page of `limit` objects (all the rest with `None`) at `at`, from
    /// the snapshot its token names, for `query`.
    pub(crate) fn next(
        &self,
        query: &str,
        at: &Continue,
        limit: Option<usize>,
    ) -> Result<Page, Status> {
        let now = Instant::now();
        let mut guard = self.snapshots.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (_, snapshots) = &mut *guard;
        let snapshot = snapshots.get_mut(&at.id).filter(|s| now.duration_since(s.used) < KEEP);
        let Some(snapshot) = snapshot else {
            snapshots.remove(&at.id);
            return Err(expired());
        };
        if snapshot.query != query {
            return Err(Status::bad_request(
                "continue key does not match this request (another type, namespace or selector)",
            ));
        }
        let total = snapshot.items.len();
        let start = at.offset.min(total);
        let end = limit.map_or(total, |l| start.saturating_add(l).min(total));
        snapshot.used = now;
        let (items, revision) = (snapshot.items.clone(), snapshot.revision);
        let next = (end < total).then(|| format!("c1-{}-{end}", at.id));
        if next.is_none() {
            snapshots.remove(&at.id);
        }
        Ok(Page { items, range: start..end, revision, next, remaining: total - end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::{Metadata, Pointer};

    fn items(n: usize) -> Vec<AnyResource> {
        (0..n)
            .map(|i| {
                AnyResource::from_dynamic(
                    Metadata::new(Pointer::new("ns", "As.x.dev", format!("a{i:03}"))),
                    serde_json::Value::Null,
                )
            })
            .collect()
    }

    fn ids(page: &Page) -> Vec<String> {
        page.items[page.range.clone()].iter().map(|r| r.id().to_string()).collect()
    }

    #[test]
    fn pages_hold_every_object_once_in_order() {
        let pages = Pages::default();
        let mut page = pages.first("q".into(), items(10), 7, 4);
        let mut seen = ids(&page);
        assert_eq!((page.remaining, page.revision), (6, 7));
        while let Some(token) = page.next.clone() {
            page = pages.next("q", &Continue::parse(&token).unwrap(), Some(4)).unwrap();
            assert_eq!(page.revision, 7, "every page at the first page's revision");
            seen.extend(ids(&page));
        }
        assert_eq!(seen, (0..10).map(|i| format!("a{i:03}")).collect::<Vec<_>>());
        assert_eq!(page.remaining, 0);
        assert!(pages.snapshots.lock().unwrap().1.is_empty(), "the last page lets the snapshot go");
    }

    #[test]
    fn a_list_that_fits_keeps_no_snapshot() {
        let pages = Pages::default();
        let page = pages.first("q".into(), items(3), 1, 3);
        assert_eq!((page.next.clone(), ids(&page).len()), (None, 3));
        assert!(pages.snapshots.lock().unwrap().1.is_empty());
    }

    #[test]
    fn a_token_of_another_query_is_400_and_an_unknown_one_410() {
        let pages = Pages::default();
        let page = pages.first("q".into(), items(5), 1, 2);
        let token = Continue::parse(page.next.as_deref().unwrap()).unwrap();
        assert_eq!(pages.next("other", &token, Some(2)).err().unwrap().code(), 400);
        let unknown = Continue::parse("c1-999-2").unwrap();
        assert_eq!(pages.next("q", &unknown, Some(2)).err().unwrap().code(), 410);
        for bad in ["", "x", "c1-", "c1-a-1", "c1-1-b"] {
            assert_eq!(Continue::parse(bad).err().unwrap().code(), 400, "{bad:?}");
        }
    }

    #[test]
    fn the_oldest_snapshot_goes_first_past_the_bound() {
        let pages = Pages::default();
        let first = pages.first("q".into(), items(3), 1, 1).next.unwrap();
        for _ in 0..SNAPSHOTS {
            pages.first("q".into(), items(3), 1, 1);
        }
        let token = Continue::parse(&first).unwrap();
        assert_eq!(pages.next("q", &token, Some(1)).err().unwrap().code(), 410);
    }
}
