//! The change feed: one prefix watch that brings every change of the shared
//! state, made by this process or any other, to the state actor in etcd's order.

use std::time::Duration;

use etcd_client::{Client, EventType, GetOptions, KeyValue, WatchOptions, WatchResponse};
use futures::StreamExt;
use futures::channel::mpsc::{UnboundedReceiver, UnboundedSender};

use super::keys::{Keys, decode};
use super::revision::rev_at;
use crate::resource::AnyResource;
use crate::state::backend::{FeedChange, FeedMessage};

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
fn events_of(keys: &Keys, resp: &WatchResponse) -> (Vec<FeedChange>, u64, u64) {
    let mut last = 0;
    let mut place = 0;
    let mut out = Vec::with_capacity(resp.events().len());
    for event in resp.events() {
        let Some(kv) = event.kv() else { continue };
        let main = kv.mod_revision() as u64;
        place = if main == last { place + 1 } else { 0 };
        last = last.max(main);
        let revision = rev_at(main, place);
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
    let end = range_end(keys.range());
    let mut from = keys.range().as_bytes().to_vec();
    let mut revision = 0;
    let mut out = Vec::new();
    loop {
        let mut options = GetOptions::new().with_range(end.clone()).with_limit(PAGE);
        if revision > 0 {
            options = options.with_revision(revision as i64);
        }
        let resp =
            match tokio::time::timeout(timeout, client.get(from.clone(), Some(options))).await {
                Ok(Ok(resp)) => resp,
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => return Err(format!("no answer within {timeout:?}")),
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
    mut next: u64,
    tx: UnboundedSender<FeedMessage>,
    mut progress: UnboundedReceiver<FeedCommand>,
    timeout: Duration,
) {
    let mut lost = false;
    let mut backoff = Duration::from_millis(50);
    loop {
        if tx.is_closed() {
            return;
        }
        let ended =
            watch_once(&mut client, &keys, &mut next, &tx, &mut progress, &mut lost, timeout).await;
        match ended {
            Ended::Stop => return,
            Ended::Restart => continue,
            Ended::Compacted => match list_all(&mut client, &keys, timeout).await {
                Ok((resources, revision)) => {
                    next = revision + 1;
                    let listed = rev_at(revision, 0);
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

async fn watch_once(
    client: &mut Client,
    keys: &Keys,
    next: &mut u64,
    tx: &UnboundedSender<FeedMessage>,
    progress: &mut UnboundedReceiver<FeedCommand>,
    lost: &mut bool,
    timeout: Duration,
) -> Ended {
    let options = WatchOptions::new().with_prefix().with_start_revision(*next as i64);
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
            asked = progress.next() => {
                match asked {
                    None => return Ended::Stop,
                    Some(FeedCommand::Reconnect) => {
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
            FeedMessage::Progress(rev_at(revision, 0))
        } else {
            let (events, last, last_revision) = events_of(keys, &resp);
            *next = last + 1;
            FeedMessage::Changes(events, last_revision)
        };
        if tx.unbounded_send(msg).is_err() {
            return Ended::Stop;
        }
    }
}
