//! Shard ownership on etcd: the [`ShardService`](crate::state::ShardService)
//! of an etcd store.
//!
//! # Layout
//! Under `/<prefix>~shards/<controller>/` (outside the resource range, so
//! the change feed never sees them):
//! - `m/<member>`: one key per live member, on the process's shard lease;
//! - `s/<n>`: one key per owned shard, valued with its owner's member name,
//!   on the owner's lease. Its create revision is the shard's **fencing
//!   token**: every write of a reconcile of a key of that shard compares it.
//!
//! # Protocol
//! One lease per process for every sharded controller (TTL
//! [`EtcdConfig::lease_ttl`](super::EtcdConfig::lease_ttl), kept alive every
//! TTL/3, as the claims'). Each member puts its member key, watches the
//! range, and on every change (and every TTL/4 besides, in case a watch
//! missed one) reads it and computes the [`Ring`] of the live members:
//! - a shard it should own and whose key is absent: created if absent, on
//!   its lease (then the host resyncs the shard's keys);
//! - a shard it owns and should not: the host is asked to release it; once
//!   the host drained it (no reconcile of its keys starts or runs), the key
//!   is deleted if it is still the one created (same create revision);
//! - a shard it owns whose key is gone or another's: lost;
//! - a shard key on its lease that it neither owns nor should own (a
//!   delete etcd did not answer): released as an owned shard is.
//!
//! A read is acted on only if it is no older than the member's last write
//! or read of the range (etcd revisions): one served before an acquisition
//! answered would show the new key absent, so the shard lost, and its key,
//! left on the live lease, would block its next owner for good. A stale
//! read is read again.
//!
//! A shard held by another member is never taken: it moves when its owner
//! deleted the key, or when the owner's lease expired (etcd deletes its keys).
//!
//! # Status
//! Each group's [`ShardStatus`] is published to the service's board after
//! every read and hand-off (a metrics scrape reads it without a round
//! trip). A takeover is timed from the first read whose ring gives this
//! member a shard it does not own to the answer that its key was created;
//! a shard the ring gives to another meanwhile is timed afresh, unless this
//! member's acquire of it is already in flight (if that succeeds, the shard
//! was acquired, and is timed from the first read).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use etcd_client::{Client, Compare, CompareOp, GetOptions, PutOptions, Txn, TxnOp, WatchOptions};
use futures::channel::mpsc;

use super::EtcdConfig;
use super::claims::{LeaseLost, keep_alive};
use super::keys::Keys;
use crate::shard::{Ring, ShardId};
use crate::state::shards::{
    Drained, GetShards, JoinShards, Leave, ShardBoard, ShardEvent, ShardStatus, TakeoverTimes,
};

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Lease {
    #[default]
    None,
    Granting,
    Held(i64),
}

/// A shard key as read: its owner, create revision and lease.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Holder {
    member: String,
    token: i64,
    lease: i64,
}

/// One sharded controller of this process.
struct Group {
    controller: Arc<str>,
    shards: u32,
    member: String,
    notify: Recipient<ShardEvent>,
    /// `/<prefix>~shards/<controller>/`.
    range: String,
    /// The lease the member key was put on.
    registered: Option<i64>,
    members: Vec<String>,
    /// Owned shards: key and token.
    owned: BTreeMap<u32, (String, i64)>,
    draining: HashSet<u32>,
    acquiring: HashSet<u32>,
    /// Drained shards whose key's delete is on its way.
    releasing: HashSet<u32>,
    /// The etcd revision of this group's last write (member key, shard key
    /// created or deleted) or read: a read older than it is stale (it was
    /// served before a write of ours its answer would contradict) and is
    /// read again rather than acted on.
    known: i64,
    acquired: u64,
    released: u64,
    lost: u64,
    /// Shards the ring gives this member that it does not own yet, since
    /// the read that first gave them: a takeover's start.
    wanted_since: HashMap<u32, Instant>,
    takeover: TakeoverTimes,
}

impl Group {
    fn shard_key(&self, shard: u32) -> String {
        format!("{}s/{shard}", self.range)
    }

    fn member_key(&self) -> String {
        let mut key = format!("{}m/", self.range);
        let _ = crate::resource::pointer::escape_part(&self.member, &mut key);
        key
    }

    fn status(&self) -> ShardStatus {
        let mut draining: Vec<u32> = self.draining.iter().copied().collect();
        draining.sort_unstable();
        ShardStatus {
            controller: self.controller.to_string(),
            member: self.member.clone(),
            shards: self.shards,
            members: self.members.clone(),
            owned: self.owned.iter().map(|(s, (_, t))| (*s, *t)).collect(),
            draining,
            acquired: self.acquired,
            released: self.released,
            lost: self.lost,
            takeover: self.takeover.clone(),
        }
    }

    /// `shard` is owned now: its takeover, if the ring gave it, took from
    /// then until now.
    fn took_over(&mut self, shard: u32) {
        if let Some(since) = self.wanted_since.remove(&shard) {
            self.takeover.observe(since.elapsed());
        }
    }

    /// Every owned shard is lost (the lease lapsed).
    fn lose_all(&mut self) {
        for shard in std::mem::take(&mut self.owned).into_keys() {
            self.lost += 1;
            self.notify.do_send(ShardEvent::Lost { shard });
        }
        self.draining.clear();
        self.acquiring.clear();
        self.releasing.clear();
        // Takeovers are timed again from the first read under the next lease.
        self.wanted_since.clear();
        self.registered = None;
    }

    /// Notes the revision of a write or read of this group's range.
    fn saw(&mut self, revision: i64) {
        self.known = self.known.max(revision);
    }

    /// Reads the member and shard keys of one listing.
    fn read(&self, kvs: &[etcd_client::KeyValue]) -> (Vec<String>, HashMap<u32, Holder>) {
        let mut members = Vec::new();
        let mut holders = HashMap::new();
        for kv in kvs {
            let Some(rest) = kv.key_str().ok().and_then(|k| k.strip_prefix(&self.range)) else {
                continue;
            };
            let Ok(value) = kv.value_str() else { continue };
            if rest.starts_with("m/") {
                members.push(value.to_owned());
            } else if let Some(n) = rest.strip_prefix("s/").and_then(|n| n.parse::<u32>().ok()) {
                let holder = Holder {
                    member: value.to_owned(),
                    token: kv.create_revision(),
                    lease: kv.lease(),
                };
                holders.insert(n, holder);
            }
        }
        (members, holders)
    }
}

/// The member set or a shard key of some controller changed.
#[derive(Message)]
#[rtype(result = "()")]
struct Changed;

/// The shard service of an etcd store.
pub(crate) struct ShardsActor {
    client: Client,
    keys: Keys,
    config: EtcdConfig,
    lease: Lease,
    keepalive: Option<actix_rt::task::JoinHandle<()>>,
    watches: Vec<actix_rt::task::JoinHandle<()>>,
    groups: Vec<Group>,
    refreshing: bool,
    again: bool,
    resigned: bool,
    /// Where every group's status is published (see [`ShardBoard`]).
    board: ShardBoard,
}

impl ShardsActor {
    pub(crate) fn new(client: Client, keys: Keys, config: EtcdConfig, board: ShardBoard) -> Self {
        ShardsActor {
            client,
            keys,
            config,
            lease: Lease::None,
            keepalive: None,
            watches: Vec::new(),
            groups: Vec::new(),
            refreshing: false,
            again: false,
            resigned: false,
            board,
        }
    }

    /// Publishes every group's status (after each change of it).
    fn publish(&self) {
        self.board.publish(self.groups.iter().map(Group::status).collect());
    }

    fn ttl(&self) -> Duration {
        Duration::from_secs(self.config.lease_ttl.as_secs().max(1))
    }

    /// Grants the lease if none is held or on its way.
    fn ensure_lease(&mut self, ctx: &mut Context<Self>) {
        if self.lease != Lease::None || self.groups.is_empty() || self.resigned {
            return;
        }
        self.lease = Lease::Granting;
        let ttl = self.ttl();
        let mut client = self.client.clone();
        let timeout = self.config.request_timeout;
        let grant = async move {
            tokio::time::timeout(timeout, client.lease_grant(ttl.as_secs() as i64, None)).await
        };
        ctx.spawn(grant.into_actor(self).map(move |result, act, ctx| match result {
            Ok(Ok(resp)) => {
                let (tx, rx) = mpsc::unbounded();
                let task = actix_rt::spawn(keep_alive(act.client.clone(), resp.id(), ttl, tx));
                if let Some(old) = act.keepalive.replace(task) {
                    old.abort();
                }
                act.lease = Lease::Held(resp.id());
                ctx.add_stream(rx);
                act.refresh(ctx);
            }
            _ => {
                tracing::warn!("shards: no lease from etcd; trying again");
                act.lease = Lease::None; // the tick tries again
            }
        }));
    }

    /// Reads every group's range and acts on it.
    fn refresh(&mut self, ctx: &mut Context<Self>) {
        let Lease::Held(lease) = self.lease else {
            self.ensure_lease(ctx);
            return;
        };
        if self.refreshing {
            self.again = true;
            return;
        }
        self.refreshing = true;
        let timeout = self.config.request_timeout;
        let reads: Vec<_> = self
            .groups
            .iter()
            .map(|g| {
                let mut client = self.client.clone();
                let range = g.range.clone();
                async move {
                    let get = client.get(range, Some(GetOptions::new().with_prefix()));
                    tokio::time::timeout(timeout, get).await
                }
            })
            .collect();
        let all = futures::future::join_all(reads);
        ctx.spawn(all.into_actor(self).map(move |results, act, ctx| {
            act.refreshing = false;
            for (i, result) in results.into_iter().enumerate() {
                match result {
                    Ok(Ok(resp)) => {
                        let revision = resp.header().map_or(0, |h| h.revision());
                        let Some(group) = act.groups.get_mut(i) else { continue };
                        if revision < group.known {
                            // Served before a write of ours answered: it may
                            // not show a shard just created (which would then
                            // look lost) or show one just deleted. Read again.
                            tracing::debug!(
                                "shards: {} read at {revision}, older than {}; reading again",
                                group.controller,
                                group.known
                            );
                            act.again = true;
                            continue;
                        }
                        group.saw(revision);
                        act.apply(i, resp.kvs(), lease, ctx);
                    }
                    Ok(Err(e)) => tracing::debug!("shards: cannot read the members: {e}"),
                    Err(_) => tracing::debug!("shards: etcd did not answer a read"),
                }
            }
            act.publish();
            if std::mem::take(&mut act.again) {
                act.refresh(ctx);
            }
        }));
    }

    /// Acts on group `i`'s members and shard keys as read under `lease`.
    fn apply(
        &mut self,
        i: usize,
        kvs: &[etcd_client::KeyValue],
        lease: i64,
        ctx: &mut Context<Self>,
    ) {
        if self.lease != Lease::Held(lease) {
            return;
        }
        let group = &mut self.groups[i];
        let (members, holders) = group.read(kvs);
        group.members = members;
        if group.registered != Some(lease) || !group.members.contains(&group.member) {
            group.registered = Some(lease);
            let key = group.member_key();
            let value = group.member.clone();
            let mut client = self.client.clone();
            let put = async move {
                client.put(key, value, Some(PutOptions::new().with_lease(lease))).await
            };
            ctx.spawn(put.into_actor(self).map(move |result, act, ctx| {
                match result {
                    Ok(resp) => {
                        if let (Some(g), Some(h)) = (act.groups.get_mut(i), resp.header()) {
                            g.saw(h.revision());
                        }
                    }
                    Err(e) => {
                        tracing::warn!("shards: cannot register as a member: {e}");
                        if let Some(g) = act.groups.get_mut(i) {
                            g.registered = None;
                        }
                    }
                }
                act.refresh(ctx);
            }));
            return;
        }
        let group = &mut self.groups[i];
        let ring = Ring::new(group.shards, group.members.iter().cloned());
        // Owned shards whose key is gone or another's are lost.
        let lost: Vec<u32> = group
            .owned
            .iter()
            .filter(|(s, (_, token))| holders.get(s).is_none_or(|h| h.token != *token))
            .map(|(s, _)| *s)
            .collect();
        for shard in lost {
            group.owned.remove(&shard);
            group.draining.remove(&shard);
            group.lost += 1;
            tracing::warn!("shards: {} lost shard {shard}", group.controller);
            group.notify.do_send(ShardEvent::Lost { shard });
        }
        let mut acquire = Vec::new();
        let now = Instant::now();
        for shard in 0..group.shards {
            let want = ring.owner(ShardId(shard)) == Some(group.member.as_str());
            if !want {
                // An acquire in flight keeps its start: if it succeeds, the
                // shard was acquired and its takeover is timed all the same.
                if !group.acquiring.contains(&shard) {
                    group.wanted_since.remove(&shard);
                }
            } else if !group.owned.contains_key(&shard) {
                group.wanted_since.entry(shard).or_insert(now);
            }
            if group.owned.contains_key(&shard) {
                if !want && group.draining.insert(shard) {
                    group.notify.do_send(ShardEvent::Release { shard });
                }
                continue;
            }
            if group.acquiring.contains(&shard) || group.releasing.contains(&shard) {
                continue;
            }
            match holders.get(&shard) {
                None if want => acquire.push(shard),
                None => {}
                // Created by this process, its answer lost: adopt it.
                Some(h) if h.lease == lease && h.member == group.member && want => {
                    let key = group.shard_key(shard);
                    group.owned.insert(shard, (key.clone(), h.token));
                    group.acquired += 1;
                    group.took_over(shard);
                    group.notify.do_send(ShardEvent::Acquired { shard, key, token: h.token });
                }
                // On this process's lease, not owned, not wanted (its delete
                // went unanswered, say): nobody else may take it while the
                // lease lives, so it is released as an owned shard is.
                Some(h) if h.lease == lease && h.member == group.member => {
                    tracing::debug!("shards: {} releases stray shard {shard}", group.controller);
                    group.owned.insert(shard, (group.shard_key(shard), h.token));
                    group.draining.insert(shard);
                    group.notify.do_send(ShardEvent::Release { shard });
                }
                Some(_) => {} // its owner drains it, or its lease expires
            }
        }
        if acquire.is_empty() {
            return;
        }
        group.acquiring.extend(acquire.iter().copied());
        let timeout = self.config.request_timeout;
        let txns: Vec<_> = acquire
            .into_iter()
            .map(|shard| {
                let key = group.shard_key(shard);
                let txn = Txn::new()
                    .when([Compare::create_revision(key.clone(), CompareOp::Equal, 0)])
                    .and_then([TxnOp::put(
                        key.clone(),
                        group.member.clone(),
                        Some(PutOptions::new().with_lease(lease)),
                    )]);
                let mut client = self.client.clone();
                async move { (shard, key, tokio::time::timeout(timeout, client.txn(txn)).await) }
            })
            .collect();
        let all = futures::future::join_all(txns);
        ctx.spawn(all.into_actor(self).map(move |results, act, _| {
            let held = act.lease == Lease::Held(lease);
            let Some(group) = act.groups.get_mut(i) else { return };
            for (shard, key, result) in results {
                group.acquiring.remove(&shard);
                if let Ok(Ok(resp)) = &result
                    && let Some(h) = resp.header()
                {
                    group.saw(h.revision());
                }
                match result {
                    Ok(Ok(resp)) if resp.succeeded() && held => {
                        let token = resp.header().map_or(0, |h| h.revision());
                        group.owned.insert(shard, (key.clone(), token));
                        group.acquired += 1;
                        group.took_over(shard);
                        group.notify.do_send(ShardEvent::Acquired { shard, key, token });
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => tracing::debug!("shards: cannot acquire shard {shard}: {e}"),
                    Err(_) => tracing::debug!("shards: acquiring shard {shard}: no answer"),
                }
            }
            act.publish();
        }));
    }

    /// Watches group `i`'s range; every change (and every new watch) asks for a refresh.
    fn watch(&mut self, range: String, ctx: &mut Context<Self>) {
        let addr = ctx.address();
        let mut client = self.client.clone();
        let pause = self.tick();
        let task = actix_rt::spawn(async move {
            loop {
                let options = WatchOptions::new().with_prefix();
                if let Ok(mut stream) = client.watch(range.clone(), Some(options)).await {
                    addr.do_send(Changed);
                    while let Ok(Some(resp)) = stream.message().await {
                        if resp.canceled() {
                            break;
                        }
                        if !resp.events().is_empty() {
                            addr.do_send(Changed);
                        }
                    }
                }
                if !addr.connected() {
                    return;
                }
                tokio::time::sleep(pause).await;
            }
        });
        self.watches.push(task);
    }

    /// How often members read their range besides the watch: TTL/4, 100 ms to 2 s.
    fn tick(&self) -> Duration {
        (self.config.lease_ttl / 4).clamp(Duration::from_millis(100), Duration::from_secs(2))
    }
}

impl Actor for ShardsActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.tick(), |act, ctx| {
            if !act.groups.is_empty() && !act.resigned {
                act.refresh(ctx);
            }
        });
    }

    fn stopped(&mut self, _: &mut Context<Self>) {
        for task in self.watches.drain(..) {
            task.abort();
        }
        if let Some(task) = self.keepalive.take() {
            task.abort();
        }
    }
}

impl StreamHandler<LeaseLost> for ShardsActor {
    fn handle(&mut self, lost: LeaseLost, ctx: &mut Context<Self>) {
        if self.lease != Lease::Held(lost.id) {
            return;
        }
        tracing::warn!("shards: the lease is lost ({}); every shard with it", lost.reason);
        self.lease = Lease::None;
        for group in &mut self.groups {
            group.lose_all();
        }
        self.publish();
        self.ensure_lease(ctx);
    }

    fn finished(&mut self, _: &mut Context<Self>) {}
}

impl Handler<Changed> for ShardsActor {
    type Result = ();

    fn handle(&mut self, _: Changed, ctx: &mut Context<Self>) {
        if !self.resigned {
            self.refresh(ctx);
        }
    }
}

impl Handler<JoinShards> for ShardsActor {
    type Result = ();

    fn handle(&mut self, msg: JoinShards, ctx: &mut Context<Self>) {
        let JoinShards { controller, shards, member, notify } = msg;
        let range = self.keys.shard_range(&controller);
        tracing::info!("shards: {controller} joins as {member} ({shards} shards)");
        self.groups.push(Group {
            controller,
            shards: shards.max(1),
            member,
            notify,
            range: range.clone(),
            registered: None,
            members: Vec::new(),
            owned: BTreeMap::new(),
            draining: HashSet::new(),
            acquiring: HashSet::new(),
            releasing: HashSet::new(),
            known: 0,
            acquired: 0,
            released: 0,
            lost: 0,
            wanted_since: HashMap::new(),
            takeover: TakeoverTimes::default(),
        });
        self.publish();
        self.watch(range, ctx);
        self.refresh(ctx);
    }
}

impl Handler<Drained> for ShardsActor {
    type Result = ();

    fn handle(&mut self, msg: Drained, ctx: &mut Context<Self>) {
        let Some(group) = self.groups.iter_mut().find(|g| g.controller == msg.controller) else {
            return;
        };
        if !group.draining.remove(&msg.shard) {
            return;
        }
        let Some((key, token)) = group.owned.remove(&msg.shard) else { return };
        group.released += 1;
        group.releasing.insert(msg.shard);
        tracing::debug!(
            "shards: {} releases shard {} (token {token})",
            group.controller,
            msg.shard
        );
        let txn = Txn::new()
            .when([Compare::create_revision(key.clone(), CompareOp::Equal, token)])
            .and_then([TxnOp::delete(key, None)]);
        let mut client = self.client.clone();
        let timeout = self.config.request_timeout;
        let release = async move { tokio::time::timeout(timeout, client.txn(txn)).await };
        let (controller, shard) = (msg.controller, msg.shard);
        // A release etcd did not answer leaves the key on this process's
        // lease: the next read finds it stray and releases it again.
        ctx.spawn(release.into_actor(self).map(move |result, act, ctx| {
            if let Some(group) = act.groups.iter_mut().find(|g| g.controller == controller) {
                group.releasing.remove(&shard);
                if let Ok(Ok(resp)) = &result
                    && let Some(h) = resp.header()
                {
                    group.saw(h.revision());
                }
            }
            act.refresh(ctx);
        }));
        self.publish();
    }
}

impl Handler<GetShards> for ShardsActor {
    type Result = MessageResult<GetShards>;

    fn handle(&mut self, _: GetShards, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.groups.iter().map(Group::status).collect())
    }
}

impl Handler<Leave> for ShardsActor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: Leave, _: &mut Context<Self>) -> Self::Result {
        self.resigned = true;
        for task in self.watches.drain(..) {
            task.abort();
        }
        if let Some(task) = self.keepalive.take() {
            task.abort();
        }
        let lease = std::mem::take(&mut self.lease);
        let mut client = self.client.clone();
        let timeout = self.config.request_timeout;
        Box::pin(async move {
            if let Lease::Held(id) = lease {
                let _ = tokio::time::timeout(timeout, client.lease_revoke(id)).await;
            }
        })
    }
}
