//! Change messages that arrive while a reconcile is pending or running collapse
//! into one further reconcile.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use crate::common::{IntSpec, NS};
use cosi_runtime::prelude::*;
use cosi_runtime::testing::Harness;
use tokio::sync::watch;

/// A controller whose reconcile blocks until the test opens its gate, and
/// that records the input value each reconcile saw.
struct Busy {
    gate: watch::Receiver<bool>,
    last_seen: Arc<AtomicI64>,
}

impl Controller for Busy {
    fn name(&self) -> &str {
        "Busy"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(NS)]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        self.gate.wait_for(|open| *open).await?;
        if let Ok(r) = cx.get_typed::<IntSpec>(&hot()).await {
            self.last_seen.store(r.spec().0, Ordering::SeqCst);
        }
        Ok(())
    }
}

fn hot() -> TypedPointer<IntSpec> {
    Pointer::typed(NS, "hot")
}

/// A harness running `Busy` (gate open), settled, with input "hot" = 0.
async fn busy() -> (Harness, watch::Sender<bool>, Arc<AtomicI64>) {
    let (open, gate) = watch::channel(true);
    let last_seen = Arc::new(AtomicI64::new(-1));
    let seen = last_seen.clone();
    let h = Harness::new(move || Busy { gate: gate.clone(), last_seen: seen.clone() }).await;
    h.create(Resource::new(NS, "hot", IntSpec(0))).await.unwrap();
    h.settle().await;
    (h, open, last_seen)
}

async fn set(h: &Harness, n: i64) {
    h.modify(&hot(), move |r| r.spec_mut().0 = n).await.unwrap();
}

#[actix::test]
async fn ten_thousand_updates_while_busy_cause_at_most_a_couple_of_reconciles() {
    let (h, open, last_seen) = busy().await;
    let before = h.metrics().await;

    // Make the controller busy: its next reconcile blocks on the gate while
    // 10,000 more updates land.
    open.send_replace(false);
    for n in 1..=10_001 {
        set(&h, n).await;
    }
    open.send_replace(true);
    h.settle().await;

    let after = h.metrics().await;
    let count = after.reconciles - before.reconciles;
    assert!(count <= 2, "10,000 updates during one reconcile caused {count} reconciles");
    assert_eq!(last_seen.load(Ordering::SeqCst), 10_001, "the last reconcile saw the last update");
    assert_eq!(after.wakeups - before.wakeups, 10_001, "every change was noticed");
}

#[actix::test]
async fn a_change_during_a_reconcile_is_never_lost() {
    let (h, open, last_seen) = busy().await;
    assert_eq!(last_seen.load(Ordering::SeqCst), 0);
    // Close the gate, trigger a reconcile, change the input while it waits.
    open.send_replace(false);
    set(&h, 1).await;
    set(&h, 2).await;
    open.send_replace(true);
    h.settle().await;
    assert_eq!(last_seen.load(Ordering::SeqCst), 2);
}
