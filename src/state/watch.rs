//! Watch targets: which watch sees which change, and as what event (pure).

use super::event::Event;
use super::store::Change;
use crate::resource::{Kind, LabelQuery, Pointer};

/// The namespace that stands for every namespace of a type: in the kind of
/// a [`WatchTarget::AllNamespaces`] (and of its `Bootstrapped` event) and in
/// a controller's input on every namespace
/// ([`Input::all_namespaces`](crate::controller::Input::all_namespaces)).
/// Kubernetes allows no `*` in a namespace name.
pub const ALL_NAMESPACES: &str = "*";

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
    /// Every resource of one type, in every namespace (those that appear
    /// later too), that matches a label query. Made by
    /// [`WatchTarget::all_namespaces`].
    AllNamespaces {
        /// The type, as a kind whose namespace is [`ALL_NAMESPACES`].
        kind: Kind,
        /// The label query (empty: everything).
        query: LabelQuery,
    },
}

impl WatchTarget {
    /// A target of every resource of `resource_type` matching `query`, in
    /// every namespace.
    pub fn all_namespaces(resource_type: &str, query: LabelQuery) -> Self {
        WatchTarget::AllNamespaces { kind: Kind::new(ALL_NAMESPACES, resource_type), query }
    }

    /// The kind the target belongs to (for
    /// [`AllNamespaces`](WatchTarget::AllNamespaces), its type in
    /// [`ALL_NAMESPACES`]).
    pub fn kind(&self) -> &Kind {
        match self {
            WatchTarget::Resource(p) => p.kind(),
            WatchTarget::Kind { kind, .. } | WatchTarget::AllNamespaces { kind, .. } => kind,
        }
    }

    /// Whether a change of the resource at `ptr` is one this target is
    /// about (before its label query): its resource, its kind, or its type.
    pub fn covers(&self, ptr: &Pointer) -> bool {
        match self {
            WatchTarget::Resource(p) => p == ptr,
            WatchTarget::Kind { kind, .. } => ptr.kind() == kind,
            WatchTarget::AllNamespaces { kind, .. } => ptr.resource_type() == kind.resource_type(),
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
            WatchTarget::Kind { query, .. } | WatchTarget::AllNamespaces { query, .. }
                if query.is_all() =>
            {
                Some(plain_event(change))
            }
            WatchTarget::Kind { query, .. } | WatchTarget::AllNamespaces { query, .. } => {
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
    use crate::resource::{AnyResource, Resource, Spec};

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
    fn an_all_namespace_target_covers_its_type_in_every_namespace_and_filters_by_label() {
        let target = WatchTarget::all_namespaces(Num::TYPE, LabelQuery::all().equal("app", "web"));
        let elsewhere = Pointer::typed::<Num>("elsewhere", "a").erase();
        assert!(target.covers(&elsewhere));
        assert!(!target.covers(&Pointer::new("ns", "Other.test", "a")));
        assert_eq!(target.kind().resource_type(), Num::TYPE);
        let web = labelled("a", Some("web"));
        assert!(matches!(target.event_for(&Change::Created(web)), Some(Event::Created(_))));
        assert_eq!(target.event_for(&Change::Created(labelled("a", Some("db")))), None);
    }

    #[test]
    fn resource_targets_see_only_their_resource() {
        let target = WatchTarget::Resource(Pointer::typed::<Num>("ns", "a").erase());
        assert!(target.event_for(&Change::Created(labelled("a", None))).is_some());
        assert!(target.event_for(&Change::Created(labelled("b", None))).is_none());
    }
}
