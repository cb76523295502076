//! The change feed: one prefix watch that brings every change of the shared
//! state, made by this process or any other, to the state actor in etcd's order.

use std::time::Duration;

use etcd_client::{Client, EventType, GetOptions, KeyValue, WatchOptions, WatchResponse};
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};
use futures::{FutureExt, StreamExt};

use super::keys::{Keys, decode};
use super::revision::rev_at;
use crate::resource::{AnyResource, Pointer};
use crate::shard::shard_of;
use crate::state::backend::{FeedChange, FeedMessage, FeedScope};
use crate::state::shards::{Hold, Holds};

/// Decodes the resources of a range read; values that are not resources are
/// logged and skipped (someone else wrote under the prefix).
/// A listed resource takes the first state revision of its etcd mod revision
/// (a listing does not tell a write's place among those of its transaction).
pub(crate) fn decode_all(keys: &Keys, kvs: &[KeyValue]) -> Vec<AnyResource> {
    kvs.iter().filter_map(|kv| decode_kv(keys, kv, rev_at(kv.mod_revision() as u64, 0))).collect()
}

fn decode_kv(keys: &Keys, kv: &KeyValue, revision: u64) -> Option<AnyResource> {
    let Some(ptr) = keys.pointer(kv.key()) else {
        tracing::warn!(
            "etcd: {:?} is not a resource key; skipped",
            String::from_utf8_lossy(kv.key())
        );
        return None;
    };
    match decode(&ptr, kv.value(), revision) {
        Ok(res) => Some(res),
        Err(e) => {
            tracing::error!("etcd: skipped a value that is not a resource: {e}");
            None
        }
    }
}

/// The changes of a watch response, each with its state revision: its etcd
/// revision and its place among the changes of that revision (a batch of
/// writes is one etcd transaction, one etcd revision). etcd never splits a
/// revision's events over two responses, and every process sees them in the
/// same order, so every process gives a change the same state revision.
/// Also the last etcd revision the response covers, and the last change's
/// state revision.
fn events_of(keys: &Keys, resp: &WatchResponse, held: &Admitted) -> (Vec<FeedChange>, u64, u64) {
    let mut last = 0;
    let mut place = 0;
    let mut out = Vec::with_capacity(resp.events().len());
    for event in resp.events() {
        let Some(kv) = event.kv() else { continue };
        let main = kv.mod_revision() as u64;
        place = if main == last { place + 1 } else { 0 };
        last = last.max(main);
        let revision = rev_at(main, place);
        // A change of a key this process does not hold is not decoded.
        if !held.is_empty() && keys.pointer(kv.key()).is_some_and(|p| !held.passes(&p)) {
            continue;
        }
        match event.event_type() {
            EventType::Put => out.extend(decode_kv(keys, kv, revision).map(FeedChange::Put)),
            EventType::Delete => {
                if let Some(ptr) = keys.pointer(kv.key()) {
                    out.push(FeedChange::Delete(ptr, revision));
                }
            }
        }
    }
    (out, last, rev_at(last, place))
}

/// What the feed delivers of each kind held in part ([`Holds`]): for each
/// hold, the shards whose changes it delivers now. A hold's mask is what
/// the host wants; the feed follows it at a point of its stream (see
/// [`reshard`]), so that what it loads and what it delivers agree.
#[derive(Default)]
pub(crate) struct Admitted {
    holds: Vec<(Hold, Vec<u64>)>,
}

impl Admitted {
    fn is_empty(&self) -> bool {
        self.holds.is_empty()
    }

    /// Whether the feed delivers the changes of `ptr`: no hold covers its
    /// kind, or one that does delivers its shard.
    fn passes(&self, ptr: &Pointer) -> bool {
        let mut covered = false;
        for (hold, have) in &self.holds {
            if hold.covers(ptr) {
                covered = true;
                if has(have, shard_of(ptr, hold.mask.shards()).0) {
                    return true;
                }
            }
        }
        !covered
    }
}

fn has(bits: &[u64], shard: u32) -> bool {
    bits.get((shard / 64) as usize).is_some_and(|w| w & (1 << (shard % 64)) != 0)
}

/// Brings `admitted` to what `holds` want where the feed is (`place`:
/// everything before `place.next` is delivered): a new hold starts with
/// every shard (the cache has all of its kind), shards no longer wanted are
/// dropped from the cache, shards newly wanted are read at the last
/// delivered etcd revision and loaded, published at the last delivered
/// state revision.
async fn reshard(
    client: &mut Client,
    keys: &Keys,
    holds: &Holds,
    admitted: &mut Admitted,
    place: &Place,
    tx: &UnboundedSender<FeedMessage>,
    timeout: Duration,
) -> Result<(), Ended> {
    let (at, published) = (place.next - 1, place.published);
    for hold in holds.list().into_iter().skip(admitted.holds.len()) {
        let all = hold.mask.shards();
        let bits = (0..all.div_ceil(64))
            .map(|w| {
                let left = all - w * 64;
                if left >= 64 { u64::MAX } else { (1u64 << left) - 1 }
            })
            .collect();
        admitted.holds.push((hold, bits));
    }
    for i in 0..admitted.holds.len() {
        let (hold, have) = &admitted.holds[i];
        let count = hold.mask.shards();
        let wanted: Vec<u32> = (0..count).filter(|s| hold.mask.contains(*s)).collect();
        let dropped: Vec<u32> =
            (0..count).filter(|s| has(have, *s) && !hold.mask.contains(*s)).collect();
        let added: Vec<u32> = wanted.iter().copied().filter(|s| !has(have, *s)).collect();
        if !dropped.is_empty() {
            let hold = hold.clone();
            for s in &dropped {
                admitted.holds[i].1[(*s / 64) as usize] &= !(1 << (s % 64));
            }
            let after = Admitted { holds: admitted.holds.clone() };
            let gone: std::collections::HashSet<u32> = dropped.into_iter().collect();
            let scope = FeedScope::new(move |p: &Pointer| {
                hold.covers(p) && gone.contains(&shard_of(p, count).0) && !after.passes(p)
            });
            if tx.unbounded_send(FeedMessage::Dropped(scope)).is_err() {
                return Err(Ended::Stop);
            }
        }
        if !added.is_empty() {
            let hold = admitted.holds[i].0.clone();
            let range = match &hold.namespace {
                Some(ns) => keys.kind_range(ns, &hold.resource_type),
                None => keys.range().to_owned(),
            };
            let fresh: std::collections::HashSet<u32> = added.iter().copied().collect();
            let in_scope = {
                let hold = hold.clone();
                let fresh = fresh.clone();
                move |p: &Pointer| hold.covers(p) && fresh.contains(&shard_of(p, count).0)
            };
            let read = match list_range(client, keys, &range, Some(at), timeout).await {
                Ok((resources, _)) => resources,
                Err(ListError::Compacted) => return Err(Ended::Compacted),
                Err(ListError::Failed(reason)) => return Err(Ended::Lost(reason)),
            };
            let resources: Vec<AnyResource> =
                read.into_iter().filter(|r| in_scope(r.pointer())).collect();
            for s in &added {
                admitted.holds[i].1[(*s / 64) as usize] |= 1 << (s % 64);
            }
            let msg = FeedMessage::Held(resources, published, FeedScope::new(in_scope));
            if tx.unbounded_send(msg).is_err() {
                return Err(Ended::Stop);
            }
        }
    }
    Ok(())
}

/// How many keys one page of a listing reads (a page must stay well under
/// the client's 4 MiB message limit, and resources are small).
const PAGE: i64 = 500;

/// The end of the range of keys that start with `prefix`.
fn range_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    // The prefix ends with '/', never with 0xff: incrementing its last byte is enough.
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

/// Everything under the prefix, and the revision it was read at: in pages,
/// all at the revision of the first, so a state of any size is read whole
/// and consistent.
pub(crate) async fn list_all(
    client: &mut Client,
    keys: &Keys,
    timeout: Duration,
) -> Result<(Vec<AnyResource>, u64), String> {
    list_range(client, keys, keys.range(), None, timeout).await.map_err(|e| match e {
        ListError::Compacted => "the revision was compacted".to_owned(),
        ListError::Failed(reason) => reason,
    })
}

/// Why a listing failed.
enum ListError {
    /// The revision asked for is compacted.
    Compacted,
    /// Any other failure, said.
    Failed(String),
}

/// Everything under `prefix`, at etcd revision `at` (`None`: the latest),
/// and the revision it was read at, in pages (see [`list_all`]).
async fn list_range(
    client: &mut Client,
    keys: &Keys,
    prefix: &str,
    at: Option<u64>,
    timeout: Duration,
) -> Result<(Vec<AnyResource>, u64), ListError> {
    let end = range_end(prefix);
    let mut from = prefix.as_bytes().to_vec();
    let mut revision = at.unwrap_or(0);
    let mut out = Vec::new();
    loop {
        let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if revision > 0 {
            options = options.with_revision(revision as i64);
        }
        let resp =
            match tokio::time::timeout(timeout, client.get(from.clone(), Some(options))).await {
                Ok(Ok(resp)) => resp,
                Ok(Err(e)) if e.to_string().contains("compacted") => {
                    return Err(ListError::Compacted);
                }
                Ok(Err(e)) => return Err(ListError::Failed(e.to_string())),
                Err(_) => return Err(ListError::Failed(format!("no answer within {timeout:?}"))),
            };
        if revision == 0 {
            revision = resp.header().map_or(0, |h| h.revision() as u64);
        }
        out.extend(decode_all(keys, resp.kvs()));
        match resp.kvs().last() {
            Some(last) if resp.more() => {
                from = last.key().to_vec();
                from.push(0);
            }
            _ => return Ok((out, revision)),
        }
    }
}

/// What the state actor asks of the feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FeedCommand {
    /// Report progress (the revision everything is delivered up to).
    Progress,
    /// The feed looks stalled: drop the watch and start another.
    Reconnect,
}

/// How the feed ended one watch.
enum Ended {
    /// The state actor went away: stop.
    Stop,
    /// Asked to: watch again at once, from where it was.
    Restart,
    /// The connection failed: report it, back off, watch again.
    Lost(String),
    /// The watch was compacted away: re-list, then watch again.
    Compacted,
}

/// Runs the feed from `next` (the revision after the bootstrap read) until the
/// state actor drops its end. Progress requests arrive on `progress`.
pub(crate) async fn run(
    mut client: Client,
    keys: Keys,
    next: u64,
    tx: UnboundedSender<FeedMessage>,
    mut progress: UnboundedReceiver<FeedCommand>,
    timeout: Duration,
    holds: Holds,
) {
    let mut lost = false;
    let mut backoff = Duration::from_millis(50);
    let mut at = Place { next, published: rev_at(next.saturating_sub(1), 0) };
    let mut admitted = Admitted::default();
    loop {
        if tx.is_closed() {
            return;
        }
        let mut feed = FeedEnds { tx: &tx, progress: &mut progress, holds: &holds };
        let ended =
            watch_once(&mut client, &keys, &mut at, &mut feed, &mut admitted, &mut lost, timeout)
                .await;
        match ended {
            Ended::Stop => return,
            Ended::Restart => continue,
            Ended::Compacted => match list_all(&mut client, &keys, timeout).await {
                Ok((mut resources, revision)) => {
                    resources.retain(|r| admitted.passes(r.pointer()));
                    at.next = revision + 1;
                    let listed = rev_at(revision, 0);
                    at.published = at.published.max(listed);
                    if tx.unbounded_send(FeedMessage::Resync(resources, listed)).is_err() {
                        return;
                    }
                    continue;
                }
                Err(reason) => report_lost(&tx, &mut lost, reason),
            },
            Ended::Lost(reason) => report_lost(&tx, &mut lost, reason),
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(Duration::from_secs(1));
        if !lost {
            backoff = Duration::from_millis(50);
        }
    }
}

fn report_lost(tx: &UnboundedSender<FeedMessage>, lost: &mut bool, reason: String) {
    if !*lost {
        *lost = true;
        let _ = tx.unbounded_send(FeedMessage::Lost(reason));
    }
}

/// Where the feed is: the etcd revision it watches from (everything before
/// it delivered), and the last state revision it delivered.
struct Place {
    next: u64,
    published: u64,
}

/// The feed's ends: its messages out, the actor's commands and the holds in.
struct FeedEnds<'a> {
    tx: &'a UnboundedSender<FeedMessage>,
    progress: &'a mut UnboundedReceiver<FeedCommand>,
    holds: &'a Holds,
}

async fn watch_once(
    client: &mut Client,
    keys: &Keys,
    at: &mut Place,
    feed: &mut FeedEnds<'_>,
    admitted: &mut Admitted,
    lost: &mut bool,
    timeout: Duration,
) -> Ended {
    let FeedEnds { tx, progress, holds } = feed;
    let (tx, holds) = (*tx, *holds);
    // What the holds want now, before watching from where the feed is.
    if let Err(ended) = reshard(client, keys, holds, admitted, at, tx, timeout).await {
        return ended;
    }
    let options = WatchOptions::new().with_prefix().with_start_revision(at.next as i64);
    let stream =
        match tokio::time::timeout(timeout, client.watch(keys.range(), Some(options))).await {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => return Ended::Lost(e.to_string()),
            Err(_) => return Ended::Lost(format!("no answer within {timeout:?}")),
        };
    let (mut requests, responses) = stream.split();
    let mut responses = responses.fuse();
    loop {
        let resp = futures::select! {
            resp = responses.next() => resp,
            () = holds.wait().fuse() => {
                // Between two responses: everything before `next` is
                // delivered, so what is read at `next - 1` joins the stream.
                if let Err(ended) = reshard(client, keys, holds, admitted, at, tx, timeout).await
                {
                    return ended;
                }
                continue;
            }
            asked = progress.next() => {
                match asked {
                    None => return Ended::Stop,
                    Some(FeedCommand::Reconnect) => {
                        let next = at.next;
                        tracing::warn!("etcd: the change feed stalled; watching again from revision {next}");
                        return Ended::Restart;
                    }
                    Some(FeedCommand::Progress) => {}
                }
                if let Err(e) = requests.request_progress().await {
                    return Ended::Lost(e.to_string());
                }
                continue;
            }
        };
        let resp = match resp {
            Some(Ok(resp)) => resp,
            Some(Err(e)) => return Ended::Lost(e.to_string()),
            None => return Ended::Lost("etcd closed the watch".into()),
        };
        if *lost {
            *lost = false;
            if tx.unbounded_send(FeedMessage::Restored).is_err() {
                return Ended::Stop;
            }
        }
        if resp.canceled() {
            if resp.compact_revision() > 0 {
                tracing::warn!(
                    "etcd: the feed fell behind a compaction at revision {}; listing again",
                    resp.compact_revision()
                );
                return Ended::Compacted;
            }
            return Ended::Lost(format!("etcd cancelled the watch: {}", resp.cancel_reason()));
        }
        if resp.created() {
            continue;
        }
        let msg = if resp.events().is_empty() {
            let revision = resp.header().map_or(0, |h| h.revision() as u64);
            if revision == 0 {
                continue;
            }
            // Every change up to this etcd revision was delivered: the
            // state is at its first place (or at a later place of it, if a
            // change of it came: the state actor keeps the larger).
            at.published = at.published.max(rev_at(revision, 0));
            FeedMessage::Progress(rev_at(revision, 0))
        } else {
            let (events, last, last_revision) = events_of(keys, &resp, admitted);
            at.next = last + 1;
            at.published = at.published.max(last_revision);
            FeedMessage::Changes(events, last_revision)
        };
        if tx.unbounded_send(msg).is_err() {
            return Ended::Stop;
        }
    }
}
