//! The per-object work queue behind queue controllers (pure; the clock is
//! injected: every method takes `now`).
//!
//! # The contract
//! - A key queued twice is handed out once (dedup).
//! - A key is **never handed out again before it is done**: never processed
//!   concurrently, whatever the concurrency.
//! - A key re-added while it is processing runs **exactly once more** after it
//!   is done (coalesced: any number of re-adds, one more run).
//! - Delayed adds collapse to the **earliest** time; an immediate add makes a
//!   delayed key ready now.
//! - A failed key is retried after a per-key exponential backoff with jitter,
//!   reset by a success. Triggers that arrive during the backoff are absorbed
//!   into the retry: they neither cut it short nor inflate the next delay (the
//!   failure count grows once per actual failure). controller-runtime's count
//!   grows with every spurious trigger; easykube resets it on any event.
//! - A terminal failure is never retried (unless the key is added again).
//! - No per-key state remains once a key is done and nothing is pending for it.
//! - [`shutdown`](WorkQueue::shutdown) stops handing out keys; work in flight
//!   finishes ([`is_drained`](WorkQueue::is_drained)).
//!
//! Ready keys are handed out in FIFO order of becoming ready; a key that is
//! processing never blocks the keys behind it.

mod work_queue;

pub use crate::backoff::Backoff;
pub use work_queue::{Completion, QueueStats, Taken, WorkQueue};
