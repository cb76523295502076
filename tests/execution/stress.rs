//! Stress: a chain of controllers spread over arbiters, 20 % of whose
//! reconciles panic at random (seeded), ends in the same state as the run
//! without panics, and nothing hangs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::controllers::{int_to_str, str_to_sentence};
use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::execution::Placement;
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;
use serde::{Deserialize, Serialize};

/// The payload of the panics this test causes (kept off stderr).
const CHAOS: &str = "execution_stress: chaos";

/// The length of a string.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct LenSpec(usize);

impl Spec for LenSpec {
    const TYPE: &'static str = "Lens.test.cosi.dev";
}

/// Decides, from one seeded generator shared by every controller on every
/// arbiter, which reconciles panic, and where.
struct Chaos {
    rng: Mutex<fastrand::Rng>,
    rate: f64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Strike {
    None,
    Before,
    After,
}

impl Chaos {
    fn new(seed: u64, rate: f64) -> Arc<Chaos> {
        Arc::new(Chaos { rng: Mutex::new(fastrand::Rng::with_seed(seed)), rate })
    }

    fn roll(&self) -> Strike {
        let mut rng = self.rng.lock().unwrap();
        if rng.f64() >= self.rate {
            Strike::None
        } else if rng.bool() {
            Strike::Before
        } else {
            Strike::After
        }
    }
}

/// A controller that panics where chaos strikes: before its reconcile, or
/// after it wrote everything.
struct Chaotic<C> {
    inner: C,
    chaos: Arc<Chaos>,
}

impl<C: Controller> Controller for Chaotic<C> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn inputs(&self) -> Vec<Input> {
        self.inner.inputs()
    }
    fn outputs(&self) -> Vec<Output> {
        self.inner.outputs()
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let strike = self.chaos.roll();
        if strike == Strike::Before {
            std::panic::panic_any(CHAOS);
        }
        self.inner.reconcile(cx).await?;
        if strike == Strike::After {
            std::panic::panic_any(CHAOS);
        }
        Ok(())
    }
}

/// Each string's length, per key (a queue controller), with the same chaos.
struct Lengths {
    chaos: Arc<Chaos>,
}

impl QueueController for Lengths {
    fn name(&self) -> &str {
        "Lengths"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<StrSpec>(NS)],
            outputs: vec![Output::exclusive::<LenSpec>()],
            concurrency: 4,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let strike = self.chaos.roll();
        if strike == Strike::Before {
            std::panic::panic_any(CHAOS);
        }
        let out = Pointer::typed::<LenSpec>(NS, ptr.id());
        match cx.get_typed::<StrSpec>(ptr).await {
            Ok(s) if s.phase() == Phase::Running => {
                let len = s.spec().0.len();
                cx.modify(&out, move |l: &mut Resource<LenSpec>| l.spec_mut().0 = len).await?;
            }
            Ok(_) => {}
            Err(e) if e.is_not_found() => match cx.destroy(&out).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            },
            Err(e) => return Err(e.into()),
        }
        if strike == Strike::After {
            std::panic::panic_any(CHAOS);
        }
        Ok(Outcome::Done)
    }
}

/// Every resource of type `S`, with its spec, phase and finalizers.
async fn listed<S: Spec + std::fmt::Debug>(state: &State, out: &mut Vec<String>) {
    for r in state.list_typed::<S>(NS, &LabelQuery::all()).await.unwrap() {
        let finalizers: Vec<_> = r.metadata().finalizers().iter().collect();
        out.push(format!("{} {} {:?} {:?} {finalizers:?}", S::TYPE, r.id(), r.spec(), r.phase()));
    }
}

/// What the chain left.
async fn snapshot(state: &State) -> Vec<String> {
    let mut out = Vec::new();
    listed::<IntSpec>(state, &mut out).await;
    listed::<StrSpec>(state, &mut out).await;
    listed::<SentenceSpec>(state, &mut out).await;
    listed::<LenSpec>(state, &mut out).await;
    out
}

/// Runs the scenario on two arbiters with panics at `rate`, and returns what
/// it left.
async fn run(seed: u64, rate: f64) -> (Vec<String>, u64) {
    let backoff = Backoff {
        initial: Duration::from_millis(1),
        max: Duration::from_millis(20),
        ..Backoff::default()
    };
    let runtime =
        Runtime::builder().arbiters(2).placement(Placement::Spread).backoff(backoff).start();
    let chaos = Chaos::new(seed, rate);
    let (c1, c2, c3) = (chaos.clone(), chaos.clone(), chaos.clone());
    runtime.register(move || Chaotic { inner: int_to_str(), chaos: c1.clone() }).await.unwrap();
    runtime
        .register(move || Chaotic { inner: str_to_sentence(), chaos: c2.clone() })
        .await
        .unwrap();
    runtime.register(move || Lengths { chaos: c3.clone() }).on(Placement::Home).await.unwrap();
    let state = runtime.state();
    let bound = Duration::from_secs(120);

    for i in 0..100 {
        state.create(Resource::new(NS, format!("n{i}"), IntSpec(i)), None).await.unwrap();
    }
    runtime.idle(bound).await.expect("the chain settles after the creates");
    for i in (0..100).step_by(2) {
        state
            .modify(
                &Pointer::typed::<IntSpec>(NS, format!("n{i}")),
                move |r: &mut Resource<IntSpec>| r.spec_mut().0 = 1_000 + i,
                None,
            )
            .await
            .unwrap();
    }
    runtime.idle(bound).await.expect("the chain settles after the updates");
    for i in (0..100).step_by(5) {
        let ptr = Pointer::typed::<IntSpec>(NS, format!("n{i}"));
        tokio::time::timeout(bound, state.teardown_and_destroy(&ptr, None))
            .await
            .expect("a teardown completes")
            .unwrap();
    }
    runtime.idle(bound).await.expect("the chain settles after the teardowns");

    let panics = runtime.metrics().await.iter().map(|m| m.panics).sum();
    let left = snapshot(&state).await;
    runtime.stop().await;
    (left, panics)
}

/// Keeps the intentional panics off stderr; every other panic still prints.
fn quiet_chaos() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&CHAOS) {
            default(info);
        }
    }));
}

#[actix::test]
async fn a_chain_across_arbiters_with_a_fifth_of_its_reconciles_panicking_ends_as_without() {
    quiet_chaos();
    let (calm, calm_panics) = run(7, 0.0).await;
    let (chaotic, chaotic_panics) = run(7, 0.2).await;

    assert_eq!(calm_panics, 0);
    assert!(chaotic_panics >= 20, "chaos struck only {chaotic_panics} times");
    assert_eq!(calm.len(), 4 * 80, "80 integers and what each became");
    assert_eq!(chaotic, calm);
}
