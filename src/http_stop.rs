//! A server's stop as its open watches see it, shared by our HTTP servers
//! (the admin endpoint, the Kubernetes API): every watch ends with a last
//! event that tells its client not to resume, and the stop waits (bounded)
//! for those events to leave before it closes the connections.
//!
//! Why: no watch can resume across a restart. A state on disk comes back
//! with no history before its restart; one in memory comes back with its
//! revisions started again, where a client resuming from its last revision
//! would take the new state's revisions for the old one's and miss what
//! changed. And clients read a connection cut mid-watch as the end of the
//! watch and resume (kube-client does, a browser's `EventSource` does).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// How long a server's `stop` waits for its watches to send their last
/// event before it closes their connections.
pub const STOP_PATIENCE: Duration = Duration::from_secs(1);

/// Why a watch ends when its server stops; each server adds what its
/// clients should do.
pub(crate) const STOPPING: &str =
    "the server is stopping; a watch cannot resume across its restart";

/// One served API's stop: a flag every watch of it ends on, and how many
/// of its watch responses are still open.
#[derive(Debug)]
pub(crate) struct Closing {
    /// Set once the server stops.
    stopping: watch::Sender<bool>,
    /// Watch responses whose body has not been dropped.
    open: watch::Sender<usize>,
}

impl Closing {
    pub(crate) fn new() -> Arc<Closing> {
        Arc::new(Closing { stopping: watch::channel(false).0, open: watch::channel(0).0 })
    }

    /// What a watch's task selects on to end when the server stops.
    pub(crate) fn stopping(&self) -> StopSignal {
        StopSignal(self.stopping.subscribe())
    }

    /// Counts a watch response open until the guard (held by its body) is
    /// dropped.
    pub(crate) fn opened(self: &Arc<Self>) -> OpenWatch {
        self.open.send_modify(|n| *n += 1);
        OpenWatch(self.clone())
    }

    /// Whether the server was told to stop.
    pub(crate) fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    /// Tells every open watch to end, and waits (at most `patience`) until
    /// their bodies have been dropped: their last events written.
    pub(crate) async fn stop(&self, patience: Duration) {
        self.stopping.send_replace(true);
        let mut open = self.open.subscribe();
        let _ = tokio::time::timeout(patience, open.wait_for(|n| *n == 0)).await;
    }
}

/// A watch's view of its server's stop.
#[derive(Debug)]
pub(crate) struct StopSignal(watch::Receiver<bool>);

impl StopSignal {
    /// Resolves once the server stops (at once if it has); cancel-safe, so
    /// a task may select on it in every turn of its loop.
    pub(crate) async fn requested(&mut self) {
        if self.0.wait_for(|stopping| *stopping).await.is_err() {
            // The sender lives as long as the `Closing`, which the watch's
            // response holds: it never drops first, but never resolve if so.
            std::future::pending::<()>().await;
        }
    }
}

/// One open watch response, counted in its [`Closing`] until dropped.
#[derive(Debug)]
pub(crate) struct OpenWatch(Arc<Closing>);

impl Drop for OpenWatch {
    fn drop(&mut self) {
        self.0.open.send_modify(|n| *n -= 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix::test]
    async fn a_stop_waits_until_every_open_watch_has_ended() {
        let closing = Closing::new();
        let mut flag = closing.stopping();
        let open = closing.opened();
        let ended = {
            let closing = closing.clone();
            actix::spawn(async move {
                // The watch sees the stop, writes its last event, ends.
                flag.requested().await;
                drop(open);
                closing.open.borrow().to_owned()
            })
        };
        closing.stop(Duration::from_secs(3600)).await;
        assert_eq!(*closing.open.borrow(), 0);
        assert_eq!(ended.await.unwrap(), 0);
    }

    #[actix::test]
    async fn a_stop_gives_up_on_a_watch_that_never_ends_after_its_patience() {
        let stuck = Closing::new();
        let _held = stuck.opened();
        tokio::time::pause();
        stuck.stop(Duration::from_secs(1)).await;
        assert!(*stuck.stopping.borrow());
        assert_eq!(*stuck.open.borrow(), 1);
    }
}
