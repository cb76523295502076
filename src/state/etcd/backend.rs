//! [`EtcdBackend`]: the etcd store behind the [`Backend`] contract.

use std::time::Duration;

use actix::prelude::*;
use etcd_client::{Client, Compare, CompareOp, KvClient, Txn, TxnOp, TxnOpResponse, TxnResponse};
use futures::channel::mpsc;
use futures::{FutureExt, StreamExt};

use super::claims::{ClaimsActor, Fence, Fences};
use super::feed::{self, FeedCommand};
use super::keys::{self, Keys};
use super::revision::{etcd_rev, rev_at};
use super::shards::ShardsActor;
use super::{EtcdConfig, unavailable};
use crate::Error;
use crate::resource::Pointer;
use crate::state::backend::{
    Backend, CloseFuture, CommitFuture, CommitOutcome, Feed, Precondition, Snapshot, Write, WriteOp,
};
use crate::state::claims::ClaimService;
use crate::state::shards::{Hold, Holds, ShardBoard, ShardService, Writers};

/// At most this many writes go in one transaction (etcd refuses more than
/// `--max-txn-ops`, 128 by default, in one request).
const WRITES_PER_TXN: usize = 64;

/// At most this many bytes of values go in one transaction (etcd refuses a
/// request over `--max-request-bytes`, 1.5 MiB by default).
const BYTES_PER_TXN: usize = 1 << 20;

/// gRPC's `InvalidArgument`, `FailedPrecondition` and `OutOfRange`: etcd
/// refused the request itself (too large, too many operations), so sending
/// it again cannot help.
const REFUSED_CODES: [i32; 3] = [3, 9, 11];

/// A state's namespaces on etcd, shared with every process on the same
/// prefix: see [`state::etcd`](super) for the guarantees, and
/// [`StateBuilder::etcd`](crate::state::StateBuilder::etcd) for the usual
/// way to open one. It is a [`Backend`] with a feed: the state actor treats
/// it as every shared store (see [`backend`](crate::state::backend#shared-stores)).
///
/// # Group commit
/// The writes of one pass of the state actor go to etcd as one transaction
/// (up to 64 writes, 1 MiB of values; more make more transactions, sent
/// together). Each write is a transaction nested in it with its own
/// compare (its key's mod revision, and its controller's fence), so a
/// write whose compare fails is reported alone ([`CommitOutcome::Conflict`]) and
/// re-run alone, while the others commit.
pub struct EtcdBackend {
    client: Client,
    kv: KvClient,
    keys: Keys,
    config: EtcdConfig,
    snapshot: Option<Snapshot>,
    /// The etcd revision the snapshot was read at.
    listed_at: u64,
    /// The feed's command channel, once the feed was taken.
    commands: Option<mpsc::UnboundedSender<FeedCommand>>,
    fences: Fences,
    writers: Writers,
    /// The sharded kinds this process holds only part of.
    holds: Holds,
    claims: ClaimService,
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.config.describe())
    }
}

impl EtcdBackend {
    /// Connects to etcd, reads everything under the prefix, and starts the
    /// store's [`ClaimService`] on the current arbiter (call it inside a
    /// running actix `System`).
    ///
    /// # Errors
    /// [`StorageFailure::Unavailable`](crate::StorageFailure::Unavailable) if
    /// etcd does not answer within [`EtcdConfig::connect_timeout`];
    /// [`Error::InvalidInput`] for a bad prefix or no endpoint.
    pub async fn connect(config: EtcdConfig) -> Result<EtcdBackend, Error> {
        let (client, keys, resources, listed_at) = super::connect(&config).await?;
        let fences = Fences::default();
        let actor =
            ClaimsActor::new(client.clone(), keys.clone(), config.clone(), fences.clone()).start();
        let writers = Writers::default();
        let holds = Holds::default();
        let board = ShardBoard::default();
        let shards =
            ShardsActor::new(client.clone(), keys.clone(), config.clone(), board.clone()).start();
        let service = ShardService::of(&shards, writers.clone(), holds.clone(), board);
        let claims = ClaimService::of(&actor).with_shards(service);
        Ok(EtcdBackend {
            kv: client.kv_client(),
            client,
            keys,
            config,
            snapshot: Some(Snapshot { revision: rev_at(listed_at, 0), resources }),
            listed_at,
            commands: None,
            fences,
            writers,
            holds,
            claims,
        })
    }

    fn tell_feed(&self, command: FeedCommand) {
        if let Some(c) = &self.commands {
            let _ = c.unbounded_send(command);
        }
    }
}

/// The error for a write to a key of a sharded kind whose shard this
/// process does not hold, that found the key written (its cache does not
/// have the key's data, so the write cannot be run again on fresh data).
fn not_held(ptr: &Pointer, hold: &Hold) -> Error {
    let shard = crate::shard::shard_of(ptr, hold.mask.shards());
    Error::InvalidInput {
        resource: ptr.to_string(),
        reason: format!(
            "this process holds only its own shards of {} (the primary kind of a sharded \
             controller), and shard {shard} is another member's: write it from a process \
             that holds it",
            hold.resource_type
        ),
    }
}

/// One write's nested transaction and its fence, or its outcome now (a
/// lost fence, a value that does not encode).
fn plan(
    keys: &Keys,
    fences: &Fences,
    writers: &Writers,
    write: &Write,
) -> Result<(TxnOp, usize, Option<Fence>), CommitOutcome> {
    let fence = write.owner.as_ref().and_then(|owner| {
        fences.fence(owner, write.pointer.resource_type()).or_else(|| {
            // A sharded reconcile's write: its shard's fence.
            writers.fence(owner).map(|f| Fence {
                key: f.key,
                token: f.token,
                controller: owner.clone(),
                lost: false,
            })
        })
    });
    if let Some(fence) = &fence {
        fence.check(&write.pointer).map_err(CommitOutcome::Refused)?;
    }
    let key = keys.resource(&write.pointer);
    let mut when = vec![match write.precondition {
        Precondition::Absent => Compare::create_revision(key.clone(), CompareOp::Equal, 0),
        Precondition::Revision(r) => {
            Compare::mod_revision(key.clone(), CompareOp::Equal, etcd_rev(r))
        }
    }];
    let (op, size) = match &write.op {
        WriteOp::Put(res) => {
            let value = keys::encode(res).map_err(CommitOutcome::Refused)?;
            let size = value.len() + key.len();
            (TxnOp::put(key, value, None), size)
        }
        WriteOp::Delete => {
            let size = key.len();
            (TxnOp::delete(key, None), size)
        }
    };
    let mut otherwise = Vec::new();
    if let Some(fence) = &fence {
        when.push(Compare::create_revision(fence.key.clone(), CompareOp::Equal, fence.token));
        otherwise.push(TxnOp::get(fence.key.clone(), None));
    }
    let txn = Txn::new().when(when).and_then(vec![op]).or_else(otherwise);
    Ok((TxnOp::txn(txn), size, fence))
}

/// A write of a batch on its way: its place in the batch, the write (planned
/// again, alone, if etcd refuses its transaction whole), its fence.
struct Sent {
    index: usize,
    write: Write,
    fence: Option<Fence>,
}

/// The typed error of a failed etcd request about `ptr`.
fn request_error(ptr: &Pointer, store: &str, e: &etcd_client::Error) -> Error {
    if is_refused(e) {
        let message = match e {
            etcd_client::Error::GRpcStatus(status) => status.message().to_owned(),
            other => other.to_string(),
        };
        return Error::InvalidInput {
            resource: ptr.to_string(),
            reason: format!("{store} refused the write: {message}"),
        };
    }
    unavailable(ptr.to_string(), format!("{store}: {e}"))
}

fn is_refused(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(status) if REFUSED_CODES.contains(&i32::from(status.code())))
}

/// Whether a failed write failed on its fence (the claim is gone or belongs
/// to another process now).
fn fence_lost(resp: &TxnResponse, fence: Option<&Fence>) -> bool {
    let Some(fence) = fence else {
        return false;
    };
    match resp.op_responses().first() {
        Some(TxnOpResponse::Get(get)) => {
            get.kvs().first().is_none_or(|kv| kv.create_revision() != fence.token)
        }
        _ => true,
    }
}

/// Everything a commit's transactions need, cloned out of the backend.
#[derive(Clone)]
struct Sender {
    kv: KvClient,
    keys: Keys,
    timeout: Duration,
    store: String,
    fences: Fences,
    writers: Writers,
    holds: Holds,
}

impl Sender {
    /// Sends one transaction of `ops`; the outcome of each of `sent`. A
    /// request that failed fails each of its writes alone (earlier
    /// transactions of the batch may have committed).
    async fn send(&self, ops: Vec<TxnOp>, sent: &[Sent]) -> Vec<(usize, CommitOutcome)> {
        let mut kv = self.kv.clone();
        let txn = kv.txn(Txn::new().and_then(ops));
        let failed = |error: &dyn Fn(&Pointer) -> Error| -> Vec<(usize, CommitOutcome)> {
            sent.iter()
                .map(|s| (s.index, CommitOutcome::Refused(error(&s.write.pointer))))
                .collect()
        };
        match tokio::time::timeout(self.timeout, txn).await {
            Ok(Ok(resp)) => self.outcomes(&resp, sent),
            Ok(Err(e)) => failed(&|ptr| request_error(ptr, &self.store, &e)),
            Err(_) => {
                let reason = format!("{}: no answer within {:?}", self.store, self.timeout);
                failed(&|ptr| unavailable(ptr.to_string(), &reason))
            }
        }
    }

    fn outcomes(&self, resp: &TxnResponse, sent: &[Sent]) -> Vec<(usize, CommitOutcome)> {
        let revision = resp.header().map_or(0, |h| h.revision() as u64);
        let inner = resp.op_responses();
        sent.iter()
            .enumerate()
            .map(|(k, s)| {
                let outcome = match inner.get(k) {
                    Some(TxnOpResponse::Txn(r)) if r.succeeded() => {
                        CommitOutcome::Committed(rev_at(revision, 0))
                    }
                    Some(TxnOpResponse::Txn(r)) if fence_lost(r, s.fence.as_ref()) => {
                        let fence = s.fence.as_ref().expect("a fenced write");
                        self.fences.lost_fence(fence);
                        CommitOutcome::Refused(fence.refused(&s.write.pointer))
                    }
                    Some(TxnOpResponse::Txn(_)) => match self.holds.refusing(&s.write.pointer) {
                        // The cache cannot have fresher data to retry on.
                        Some(hold) => CommitOutcome::Refused(not_held(&s.write.pointer, &hold)),
                        None => CommitOutcome::Conflict { seen: rev_at(revision, 0) },
                    },
                    _ => CommitOutcome::Refused(unavailable(
                        s.write.pointer.to_string(),
                        format!("{}: an answer without the write's outcome", self.store),
                    )),
                };
                (s.index, outcome)
            })
            .collect()
    }

    /// Sends one transaction; if etcd refuses it whole (too large) and it
    /// holds several writes, sends each alone, so only the culprit fails.
    async fn send_or_split(&self, ops: Vec<TxnOp>, sent: Vec<Sent>) -> Vec<(usize, CommitOutcome)> {
        let several = sent.len() > 1;
        let outcomes = self.send(ops, &sent).await;
        let refused_whole = several
            && outcomes
                .iter()
                .all(|(_, o)| matches!(o, CommitOutcome::Refused(Error::InvalidInput { .. })));
        if !refused_whole {
            return outcomes;
        }
        // Rare: the values are encoded again rather than kept for it.
        let alone = sent.into_iter().map(|s| async move {
            match plan(&self.keys, &self.fences, &self.writers, &s.write) {
                Err(now) => vec![(s.index, now)],
                Ok((op, _, fence)) => self.send(vec![op], &[Sent { fence, ..s }]).await,
            }
        });
        futures::future::join_all(alone).await.into_iter().flatten().collect()
    }
}

impl Backend for EtcdBackend {
    fn describe(&self) -> String {
        self.config.describe()
    }

    fn load(&mut self) -> Result<Snapshot, Error> {
        Ok(self.snapshot.take().unwrap_or_default())
    }

    fn commit(&mut self, batch: Vec<Write>) -> CommitFuture {
        // Each write's outcome, or its address until it has one.
        let mut outcomes: Vec<Result<CommitOutcome, Pointer>> =
            batch.iter().map(|w| Err(w.pointer.clone())).collect();
        let mut chunks: Vec<(Vec<TxnOp>, Vec<Sent>)> = Vec::new();
        let mut bytes = 0;
        for (index, write) in batch.into_iter().enumerate() {
            match plan(&self.keys, &self.fences, &self.writers, &write) {
                Err(now) => outcomes[index] = Ok(now),
                Ok((op, size, fence)) => {
                    let full = chunks.last().is_none_or(|(ops, _)| {
                        ops.len() >= WRITES_PER_TXN || bytes + size > BYTES_PER_TXN
                    });
                    if full {
                        chunks.push((Vec::new(), Vec::new()));
                        bytes = 0;
                    }
                    bytes += size;
                    let (ops, sent) = chunks.last_mut().expect("pushed above");
                    ops.push(op);
                    sent.push(Sent { index, write, fence });
                }
            }
        }
        let sender = Sender {
            kv: self.kv.clone(),
            keys: self.keys.clone(),
            timeout: self.config.request_timeout,
            store: self.config.describe(),
            fences: self.fences.clone(),
            writers: self.writers.clone(),
            holds: self.holds.clone(),
        };
        Box::pin(async move {
            let txns = chunks.into_iter().map(|(ops, sent)| {
                let sender = sender.clone();
                async move { sender.send_or_split(ops, sent).await }
            });
            for (index, outcome) in futures::future::join_all(txns).await.into_iter().flatten() {
                outcomes[index] = Ok(outcome);
            }
            // Every write sent gets an outcome; a miss would be a bug here.
            let missing = |ptr: Pointer| {
                let reason = format!("{}: no outcome was recorded", sender.store);
                CommitOutcome::Refused(unavailable(ptr.to_string(), reason))
            };
            Ok(outcomes.into_iter().map(|o| o.unwrap_or_else(missing)).collect())
        })
    }

    fn close(&mut self) -> CloseFuture {
        self.commands = None;
        let claims = self.claims.clone();
        Box::pin(async move { claims.resign().await })
    }

    fn feed(&mut self) -> Option<Feed> {
        let (tx, rx) = mpsc::unbounded();
        let (commands, command_rx) = mpsc::unbounded();
        self.commands = Some(commands);
        let run = feed::run(
            self.client.clone(),
            self.keys.clone(),
            self.listed_at + 1,
            tx,
            command_rx,
            self.config.request_timeout,
            self.holds.clone(),
        );
        // The watch runs as part of the stream: polled by the state actor
        // once it started, dropped with it.
        let driver = run.into_stream().filter_map(|()| std::future::ready(None));
        let messages = futures::stream::select(driver, rx);
        Some(Feed { messages: Box::pin(messages), patience: self.config.request_timeout })
    }

    fn ask_progress(&mut self) {
        self.tell_feed(FeedCommand::Progress);
    }

    fn rewatch(&mut self) {
        self.tell_feed(FeedCommand::Reconnect);
    }

    fn claims(&self) -> Option<ClaimService> {
        Some(self.claims.clone())
    }
}
