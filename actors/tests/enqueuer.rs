//! The Enqueuer pushes keys into a queue controller from other event sources.

#[path = "../../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::{IntSpec, NS};
use cosi_actors::Enqueuer;
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use tokio::sync::mpsc;

/// Reports every key it reconciles.
struct Reporter(mpsc::UnboundedSender<String>, Arc<AtomicUsize>);

impl QueueController for Reporter {
    fn name(&self) -> &str {
        "Reporter"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![],
            concurrency: 1,
        }
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        self.1.fetch_add(1, Ordering::SeqCst);
        let _ = self.0.send(ptr.id().to_owned());
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn keys_pushed_from_a_thread_a_stream_and_async_code_are_reconciled() {
    let runtime = Runtime::start();
    let (tx, mut seen) = mpsc::unbounded_channel();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let handle = runtime.register(move || Reporter(tx.clone(), c.clone())).await.unwrap();
    runtime.settled().await;
    let enqueuer = Enqueuer::new(handle);
    assert_eq!(enqueuer.name(), "Reporter");

    enqueuer.enqueue(&Pointer::typed::<IntSpec>(NS, "async")).await.unwrap();
    assert_eq!(seen.recv().await.as_deref(), Some("async"));

    enqueuer.forward(futures::stream::iter(
        ["s1", "s2"].map(|id| Pointer::typed::<IntSpec>(NS, id).erase()),
    ));
    assert_eq!(seen.recv().await.as_deref(), Some("s1"));
    assert_eq!(seen.recv().await.as_deref(), Some("s2"));

    let sender = enqueuer.sender();
    std::thread::spawn(move || {
        sender.unbounded_send(Pointer::typed::<IntSpec>(NS, "from-thread").erase()).unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(seen.recv().await.as_deref(), Some("from-thread"));

    let refused = enqueuer.enqueue(&Pointer::new(NS, "Other.test.cosi.dev", "x")).await;
    assert!(refused.unwrap_err().is_invalid_input());
    runtime.settled().await;
    assert_eq!(count.load(Ordering::SeqCst), 4);
}
