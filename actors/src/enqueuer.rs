//! [`Enqueuer`]: push keys into a queue controller from any event source.

use std::time::Duration;

use cosi_runtime::Error;
use cosi_runtime::controller::QueueHandle;
use cosi_runtime::resource::Pointer;
use futures::channel::mpsc;
use futures::{Stream, StreamExt};

/// Pushes keys into a queue controller from any event source: async code,
/// a stream of events, or plain threads (netlink listeners, inotify, signal
/// handlers) through a thread-safe [`sender`](Enqueuer::sender).
///
/// Keys are deduplicated by the queue like any other trigger.
///
/// ```no_run
/// # use cosi_actors::Enqueuer;
/// # use cosi_runtime::resource::Pointer;
/// # async fn example(handle: cosi_runtime::controller::QueueHandle) {
/// let enqueuer = Enqueuer::new(handle);
/// let tx = enqueuer.sender();
/// std::thread::spawn(move || {
///     // e.g. a blocking netlink listener
///     let _ = tx.unbounded_send(Pointer::new("network", "Links.net.cosi.dev", "eth0"));
/// });
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Enqueuer {
    queue: QueueHandle,
}

impl Enqueuer {
    /// An enqueuer for the queue controller behind `queue`.
    pub fn new(queue: QueueHandle) -> Self {
        Enqueuer { queue }
    }

    /// The queue controller's name.
    pub fn name(&self) -> &str {
        self.queue.name()
    }

    /// Queues `ptr` now.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] if `ptr` is not a primary input of the queue
    /// controller; [`Error::Unavailable`] if it is stopped.
    pub async fn enqueue(&self, ptr: &Pointer) -> Result<(), Error> {
        self.queue.enqueue(ptr).await
    }

    /// Queues `ptr` after `delay`.
    ///
    /// # Errors
    /// As [`enqueue`](Enqueuer::enqueue).
    pub async fn enqueue_after(&self, ptr: &Pointer, delay: Duration) -> Result<(), Error> {
        self.queue.enqueue_after(ptr, delay).await
    }

    /// Forwards every key of `events` into the queue until the stream ends.
    /// Runs on the current arbiter; keys that are refused are logged.
    pub fn forward<St>(&self, events: St) -> tokio::task::JoinHandle<()>
    where
        St: Stream<Item = Pointer> + 'static,
    {
        let queue = self.queue.clone();
        actix::spawn(async move {
            let mut events = std::pin::pin!(events);
            while let Some(ptr) = events.next().await {
                if let Err(e) = queue.enqueue(&ptr).await {
                    tracing::warn!("enqueuer for {}: {e}", queue.name());
                }
            }
        })
    }

    /// A sender any thread can push keys into (`unbounded_send` is
    /// synchronous); they are forwarded to the queue in order. The forwarding
    /// ends when every clone of the sender is dropped.
    pub fn sender(&self) -> mpsc::UnboundedSender<Pointer> {
        let (tx, rx) = mpsc::unbounded();
        self.forward(rx);
        tx
    }
}
