//! What a shared store's feed brings to the state actor: changes put in
//! the cache and published, the feed's progress (which completes writes),
//! and a re-list that replaces the lane's part of the cache after the feed
//! was lost ([`differences`]).

use std::collections::HashMap;

use actix::prelude::*;

use super::LaneFeed;
use crate::resource::{AnyResource, Pointer};
use crate::state::actor::StateActor;
use crate::state::backend::{FeedChange, FeedMessage, FeedScope};
use crate::state::subscriptions::Domain;

impl StateActor {
    /// Applies what a feed brought: the cache changes, watchers hear it,
    /// and the writes it completes are answered.
    pub(crate) fn apply_feed(&mut self, lane: usize, msg: FeedMessage, ctx: &mut Context<Self>) {
        tracing::trace!("shared store: feed {msg:?}");
        let domain: Domain = lane + 1;
        let backend = self.lanes[lane].backend;
        match msg {
            FeedMessage::Changes(changes, last) => {
                for change in changes {
                    let ptr = match &change {
                        FeedChange::Put(res) => res.pointer(),
                        FeedChange::Delete(ptr, _) => ptr,
                    };
                    // Another process may keep more of its namespaces on
                    // this store: only this state's namespaces of it apply.
                    if self.routes.route(ptr.namespace()) != Some(backend) {
                        continue;
                    }
                    match change {
                        FeedChange::Put(res) => {
                            let rev = res.metadata().revision();
                            let change = self.store.put_external(res);
                            self.watches.publish_in(&change, rev, domain);
                        }
                        FeedChange::Delete(ptr, rev) => {
                            if let Some(change) = self.store.remove_external(&ptr) {
                                self.watches.publish_in(&change, rev, domain);
                            }
                        }
                    }
                }
                self.caught_up(lane, last);
            }
            FeedMessage::Progress(rev) => self.caught_up(lane, rev),
            FeedMessage::Resync(resources, rev) => self.resync(lane, resources, rev, None),
            FeedMessage::Held(resources, rev, scope) => {
                self.resync(lane, resources, rev, Some(&scope));
            }
            FeedMessage::Dropped(scope) => self.forget(lane, &scope),
            FeedMessage::Lost(reason) => {
                let l = &mut self.lanes[lane];
                tracing::error!(
                    "state: {} is unreachable ({reason}); writes fail until it is back",
                    l.describe
                );
                l.available = false;
            }
            FeedMessage::Restored => {
                let l = &mut self.lanes[lane];
                tracing::info!("state: {} is reachable again", l.describe);
                l.available = true;
                if !l.retries.is_empty() {
                    let backend = l.backend;
                    self.backends[backend].ask_progress();
                }
            }
        }
        // Watchers hear the changes before the writers they complete.
        self.send_pending();
        self.settle_lane(lane, ctx);
    }

    fn caught_up(&mut self, lane: usize, rev: u64) {
        let l = &mut self.lanes[lane];
        l.feed_rev = l.feed_rev.max(rev);
    }

    /// Replaces the lane's part of the cache (within `scope`, if given)
    /// with `resources` (read at `rev`), publishing the differences.
    fn resync(
        &mut self,
        lane: usize,
        mut resources: Vec<AnyResource>,
        rev: u64,
        scope: Option<&FeedScope>,
    ) {
        let backend = self.lanes[lane].backend;
        let in_scope = |p: &Pointer| scope.is_none_or(|s| s.contains(p));
        resources.retain(|r| {
            self.routes.route(r.pointer().namespace()) == Some(backend) && in_scope(r.pointer())
        });
        let mine: Vec<AnyResource> = self
            .store
            .pointers()
            .into_iter()
            .filter(|p| self.routes.route(p.namespace()) == Some(backend) && in_scope(p))
            .filter_map(|p| self.store.get(&p).ok())
            .collect();
        let diffs = differences(mine, resources);
        let what = if scope.is_some() { "took more of a sharded kind" } else { "re-listed" };
        tracing::info!("shared store: {what} at revision {rev}: {} differences", diffs.len());
        for diff in diffs {
            let change = match diff {
                Diff::Put(res) => Some(self.store.put_external(res)),
                Diff::Remove(ptr) => self.store.remove_external(&ptr),
            };
            if let Some(change) = change {
                self.watches.publish_in(&change, rev, lane + 1);
            }
        }
        self.caught_up(lane, rev);
    }

    /// Forgets the lane's cached resources within `scope`, publishing
    /// nothing: the store no longer tells this process their changes.
    fn forget(&mut self, lane: usize, scope: &FeedScope) {
        let backend = self.lanes[lane].backend;
        let gone: Vec<Pointer> = self
            .store
            .pointers()
            .into_iter()
            .filter(|p| self.routes.route(p.namespace()) == Some(backend) && scope.contains(p))
            .collect();
        tracing::debug!("shared store: gave up {} resources of a sharded kind", gone.len());
        let mut kinds = Vec::new();
        for ptr in gone {
            self.store.remove_external(&ptr);
            if !kinds.contains(ptr.kind()) {
                kinds.push(ptr.kind().clone());
            }
        }
        for kind in kinds {
            self.store.compact(&kind);
        }
    }
}

/// One step from the cached view to a fresh listing.
#[derive(Debug, PartialEq)]
enum Diff {
    /// Store this (created or changed since).
    Put(AnyResource),
    /// Gone since.
    Remove(Pointer),
}

/// What turns `cached` into `fresh`: resources whose incarnation or version
/// moved are put, missing ones removed, new ones put (sorted by address, so
/// watchers see a stable order). Versions, not revisions, tell a change: a
/// store may give a listed resource another form of the same revision than
/// its feed did (see the etcd store's revisions).
fn differences(cached: Vec<AnyResource>, fresh: Vec<AnyResource>) -> Vec<Diff> {
    let mut fresh: HashMap<Pointer, AnyResource> =
        fresh.into_iter().map(|r| (r.pointer().clone(), r)).collect();
    let mut out = Vec::new();
    for cur in cached {
        match fresh.remove(cur.pointer()) {
            Some(res)
                if res.version() == cur.version()
                    && res.metadata().uid() == cur.metadata().uid() => {}
            Some(res) => out.push(Diff::Put(res)),
            None => out.push(Diff::Remove(cur.pointer().clone())),
        }
    }
    let mut created: Vec<_> = fresh.into_values().collect();
    created.sort_by(|a, b| a.pointer().cmp(b.pointer()));
    out.extend(created.into_iter().map(Diff::Put));
    out
}

impl StreamHandler<LaneFeed> for StateActor {
    fn handle(&mut self, LaneFeed(lane, msg): LaneFeed, ctx: &mut Context<Self>) {
        self.apply_feed(lane, msg, ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {
        // A feed ends only when the state closes; the actor decides when to stop.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resource::Resource;
    use crate::resource::Version;
    use crate::resource::test_specs::Num;

    fn at(id: &str, n: i64, version: u64) -> AnyResource {
        let mut r = Resource::new("ns", id, Num(n)).into_any();
        r.metadata_mut().set_version(Version::new(version));
        r
    }

    #[test]
    fn a_relist_yields_exactly_what_changed() {
        let cached = vec![at("same", 1, 5), at("changed", 1, 6), at("gone", 1, 7)];
        let fresh =
            vec![at("same", 1, 5), at("changed", 2, 9), at("new-b", 3, 10), at("new-a", 4, 11)];
        let diffs = differences(cached, fresh);
        assert_eq!(
            diffs,
            vec![
                Diff::Put(at("changed", 2, 9)),
                Diff::Remove(at("gone", 1, 7).pointer().clone()),
                Diff::Put(at("new-a", 4, 11)),
                Diff::Put(at("new-b", 3, 10)),
            ]
        );
    }

    #[test]
    fn a_relist_of_the_same_state_yields_nothing() {
        let both = || vec![at("a", 1, 2), at("b", 2, 3)];
        assert!(differences(both(), both()).is_empty());
    }

    #[test]
    fn a_relisted_resource_with_another_revision_form_is_no_change() {
        let mut listed = at("a", 1, 2);
        listed.metadata_mut().set_revision(40 << 12);
        let mut fed = at("a", 1, 2);
        fed.metadata_mut().set_revision((40 << 12) | 3);
        assert!(differences(vec![fed], vec![listed]).is_empty());
    }
}
