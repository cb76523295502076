//! The names this release replaced still compile and behave the same for
//! one release (hidden from the docs; CHANGELOG.md gives the new ones):
//! `QController`, `QSettings`, `register_queue`, `register_on`,
//! `Pointer::of` and `state::Outcome`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::controller::{Outcome, QController, QSettings, ReconcileError};
use cosi_runtime::execution::Placement;
use cosi_runtime::prelude::*;

struct Counting(Arc<AtomicUsize>);

impl QController for Counting {
    fn name(&self) -> &str {
        "Counting"
    }
    fn settings(&self) -> QSettings {
        QSettings { inputs: vec![Input::primary::<IntSpec>(NS)], outputs: vec![], concurrency: 1 }
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        _: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(Outcome::Done)
    }
}

#[actix::test]
async fn a_queue_controller_under_its_former_names_reconciles_each_key() {
    let runtime = Runtime::start();
    let seen = Arc::new(AtomicUsize::new(0));
    let s = seen.clone();
    let handle = runtime.register_queue(move || Counting(s.clone())).await.unwrap();
    assert_eq!(handle.name(), "Counting");
    runtime.state().create(Resource::new(NS, "a", IntSpec(1)), None).await.unwrap();
    runtime.state().create(Resource::new(NS, "b", IntSpec(2)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    runtime.stop().await;
}

#[actix::test]
async fn register_on_and_pointer_of_are_the_new_calls_under_old_names() {
    let runtime = Runtime::start();
    runtime.register_on(Placement::Home, crate::common::controllers::int_to_str).await.unwrap();
    runtime.state().create(Resource::new(NS, "x", IntSpec(7)), None).await.unwrap();
    runtime.settled().await;
    let old = Pointer::of::<StrSpec>(NS, "x");
    assert_eq!(old, Pointer::typed::<StrSpec>(NS, "x").erase());
    assert_eq!(runtime.state().get_typed::<StrSpec>(&old).await.unwrap().spec().0, "7");
    let committed: cosi_runtime::state::Outcome = cosi_runtime::state::CommitOutcome::Committed(3);
    assert!(matches!(committed, cosi_runtime::state::CommitOutcome::Committed(3)));
    runtime.stop().await;
}
