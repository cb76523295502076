//! Watch targets: which watch sees which change, and as what event (pure).

use super::event::Event;
use super::store::Change;
use crate::resource::{Kind, LabelQuery, Pointer};

/// What a watch looks at.
#[derive(Clone, Debug, PartialEq)]
pub enum WatchTarget {
    /// One resource.
    Resource(Pointer),
    /// Every resource of a kind that matches a label query.
    Kind {
        /// The kind.
        kind: Kind,
        /// The label query (empty: everything).
        query: LabelQuery,
    },
}

impl WatchTarget {
    /// The kind the target belongs to.
    pub fn kind(&self) -> &Kind {
        match self {
            WatchTarget::Resource(p) => p.kind(),
            WatchTarget::Kind { kind, .. } => kind,
        }
    }

    /// The event this target sees for `change`, if any.
    ///
    /// A resource target sees every change of its resource. A kind target sees
    /// changes of matching resources, and rewrites an update that starts
    /// matching as `Created` and one that stops matching as `Destroyed`.
    pub fn event_for(&self, change: &Change) -> Option<Event> {
        match self {
            WatchTarget::Resource(ptr) => {
                (change.resource().pointer() == ptr).then(|| plain_event(change))
            }
            WatchTarget::Kind { query, .. } if query.is_all() => Some(plain_event(change)),
            WatchTarget::Kind { query, .. } => {
                let matches =
                    |r: &crate::resource::AnyResource| query.matches(r.metadata().labels());
                match change {
                    Change::Created(r) => matches(r).then(|| Event::Created(r.clone())),
                    Change::Destroyed(r) => matches(r).then(|| Event::Destroyed(r.clone())),
                    Change::Updated { old, new } => match (matches(old), matches(new)) {
                        (true, true) => Some(plain_event(change)),
                        (false, true) => Some(Event::Created(new.clone())),
                        (true, false) => Some(Event::Destroyed(new.clone())),
                        (false, false) => None,
                    },
                }
            }
        }
    }
}

fn plain_event(change: &Change) -> Event {
    match change {
        Change::Created(r) => Event::Created(r.clone()),
        Change::Updated { old, new } => Event::Updated { old: old.clone(), new: new.clone() },
        Change::Destroyed(r) => Event::Destroyed(r.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::test_specs::Num;
    use crate::resource::{AnyResource, Resource};

    fn labelled(id: &str, label: Option<&str>) -> AnyResource {
        let mut r = Resource::new("ns", id, Num(1)).into_any();
        if let Some(l) = label {
            r.metadata_mut().labels_mut().insert("app", l);
        }
        r
    }

    #[test]
    fn label_query_rewrites_updates_that_cross_the_match() {
        let target = WatchTarget::Kind {
            kind: Kind::of::<Num>("ns"),
            query: LabelQuery::all().equal("app", "web"),
        };
        let web = labelled("a", Some("web"));
        let db = labelled("a", Some("db"));
        let starts = Change::Updated { old: db.clone(), new: web.clone() };
        assert!(matches!(target.event_for(&starts), Some(Event::Created(r)) if r == web));
        let stops = Change::Updated { old: web.clone(), new: db.clone() };
        assert!(matches!(target.event_for(&stops), Some(Event::Destroyed(r)) if r == db));
        let stays = Change::Updated { old: web.clone(), new: web.clone() };
        assert!(matches!(target.event_for(&stays), Some(Event::Updated { .. })));
        let outside = Change::Updated { old: db.clone(), new: db.clone() };
        assert_eq!(target.event_for(&outside), None);
        assert_eq!(target.event_for(&Change::Created(db)), None);
    }

    #[test]
    fn resource_targets_see_only_their_resource() {
        let target = WatchTarget::Resource(Pointer::typed::<Num>("ns", "a").erase());
        assert!(target.event_for(&Change::Created(labelled("a", None))).is_some());
        assert!(target.event_for(&Change::Created(labelled("b", None))).is_none());
    }
}
