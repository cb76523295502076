//! Change messages that arrive while a reconcile is pending or running collapse
//! into one further reconcile.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};

use common::{IntSpec, NS};
use cosi_runtime::prelude::*;
use tokio::sync::watch;

/// A controller whose reconcile blocks until the test opens its gate, and
/// that records the input value each reconcile saw.
struct Busy {
    gate: watch::Receiver<bool>,
    reconciles: Arc<AtomicUsize>,
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
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        if let Ok(r) = cx
            .get_typed::<IntSpec>(&Pointer::of::<IntSpec>(NS, "hot"))
            .await
        {
            self.last_seen.store(r.spec().0, Ordering::SeqCst);
        }
        Ok(())
    }
}

/// A runtime running one `Busy` controller (gate open), settled, with input
/// "hot" = 0.
async fn busy_runtime() -> (
    Runtime,
    Pointer,
    watch::Sender<bool>,
    Arc<AtomicUsize>,
    Arc<AtomicI64>,
) {
    let runtime = Runtime::start();
    let state = runtime.state();
    let hot = Pointer::of::<IntSpec>(NS, "hot");
    state
        .create(Resource::new(NS, "hot", IntSpec(0)), None)
        .await
        .unwrap();

    let (open, gate) = watch::channel(true);
    let reconciles = Arc::new(AtomicUsize::new(0));
    let last_seen = Arc::new(AtomicI64::new(-1));
    let (r, l) = (reconciles.clone(), last_seen.clone());
    runtime
        .register(move || Busy {
            gate: gate.clone(),
            reconciles: r.clone(),
            last_seen: l.clone(),
        })
        .await
        .unwrap();
    runtime.settled().await;
    (runtime, hot, open, reconciles, last_seen)
}

#[actix::test]
async fn ten_thousand_updates_while_busy_cause_at_most_a_couple_of_reconciles() {
    let (runtime, hot, open, reconciles, last_seen) = busy_runtime().await;
    let state = runtime.state();
    let before = runtime.metrics().await[0].clone();

    // Make the controller busy: its next reconcile blocks on the gate while
    // 10,000 more updates land.
    open.send_replace(false);
    for n in 1..=10_001 {
        state
            .modify(
                &hot,
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = n,
                None,
            )
            .await
            .unwrap();
    }
    open.send_replace(true);
    runtime.settled().await;

    let after = runtime.metrics().await[0].clone();
    let count = after.reconciles - before.reconciles;
    assert!(
        count <= 2,
        "10,000 updates during one reconcile caused {count} reconciles"
    );
    assert_eq!(
        last_seen.load(Ordering::SeqCst),
        10_001,
        "the last reconcile saw the last update"
    );
    assert_eq!(
        after.wakeups - before.wakeups,
        10_001,
        "every change was noticed"
    );
    assert_eq!(reconciles.load(Ordering::SeqCst) as u64, after.reconciles);
}

#[actix::test]
async fn a_change_during_a_reconcile_is_never_lost() {
    let (runtime, hot, open, _, last_seen) = busy_runtime().await;
    let state = runtime.state();
    assert_eq!(last_seen.load(Ordering::SeqCst), 0);

    // Close the gate, trigger a reconcile, change the input while it waits.
    open.send_replace(false);
    state
        .modify(&hot, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1, None)
        .await
        .unwrap();
    state
        .modify(&hot, |r: &mut Resource<IntSpec>| r.spec_mut().0 = 2, None)
        .await
        .unwrap();
    open.send_replace(true);
    runtime.settled().await;
    assert_eq!(last_seen.load(Ordering::SeqCst), 2);
}
