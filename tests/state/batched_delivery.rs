//! Batched change delivery: the state sends queue controllers the changes of
//! one pass as one message, and answers the writes of that pass only after
//! it (plain controllers get one message per change, as before). These scenarios check what a user sees: nothing is lost,
//! `settled()` still waits for every reconcile a write caused, and writers on
//! other threads are answered whether or not more requests follow.

use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::common::controllers::{int_to_str, str_to_sentence};
use crate::common::{IntSpec, NS, SentenceSpec, StrSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::execution::Placement;
use cosi_runtime::prelude::*;
use futures::StreamExt;

/// Per object: reads the input, writes the output with the same id, counts.
struct PerObject<I, O> {
    name: &'static str,
    map: fn(&I) -> O,
    reconciles: Arc<AtomicUsize>,
    _types: PhantomData<fn() -> (I, O)>,
}

impl<I: Spec, O: Spec + Default> QueueController for PerObject<I, O> {
    fn name(&self) -> &str {
        self.name
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<I>(NS)],
            outputs: vec![Output::exclusive::<O>()],
            concurrency: 16,
        }
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        self.reconciles.fetch_add(1, Ordering::SeqCst);
        let input = cx.get_typed::<I>(ptr).await?;
        let value = (self.map)(input.spec());
        let output = Pointer::typed::<O>(NS, ptr.id());
        cx.modify(&output, move |o: &mut Resource<O>| *o.spec_mut() = value.clone()).await?;
        Ok(Outcome::Done)
    }
}

async fn per_object_chain(runtime: &Runtime, placement: Placement) -> Arc<AtomicUsize> {
    let reconciles = Arc::new(AtomicUsize::new(0));
    let (a, b) = (reconciles.clone(), reconciles.clone());
    runtime
        .register(move || PerObject {
            name: "IntToStr",
            map: |i: &IntSpec| StrSpec(i.0.to_string()),
            reconciles: a.clone(),
            _types: PhantomData,
        })
        .on(placement)
        .await
        .unwrap();
    runtime
        .register(move || PerObject {
            name: "StrToSentence",
            map: |s: &StrSpec| SentenceSpec(format!("{} sentence", s.0)),
            reconciles: b.clone(),
            _types: PhantomData,
        })
        .on(placement)
        .await
        .unwrap();
    reconciles
}

/// Creates integers `n0`..`n{n-1}`, all in flight at once.
async fn create_all_at_once(state: &State, n: i64) {
    let creates =
        (0..n).map(|k| state.create(Resource::new(NS, format!("n{k}"), IntSpec(k)), None));
    for created in futures::future::join_all(creates).await {
        created.unwrap();
    }
}

async fn assert_sentences(state: &State, n: usize) {
    let sentences = state.list_typed::<SentenceSpec>(NS, &LabelQuery::all()).await.unwrap();
    assert_eq!(sentences.len(), n, "every integer reached a sentence");
    for s in &sentences {
        assert_eq!(s.spec().0, format!("{} sentence", &s.id()[1..]));
    }
}

#[actix::test]
async fn a_burst_of_concurrent_creates_reaches_every_per_object_reconcile() {
    let runtime = Runtime::start();
    let state = runtime.state();
    let reconciles = per_object_chain(&runtime, Placement::Home).await;
    runtime.settled().await;
    // 2,000 creates in flight at once: the state handles many per pass, and
    // each pass's changes reach a controller as one message.
    create_all_at_once(&state, 2_000).await;
    runtime.settled().await;
    assert_sentences(&state, 2_000).await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 4_000, "one reconcile per object and stage");
    runtime.stop().await;
}

#[actix::test]
async fn settled_right_after_a_create_waits_for_the_reconciles_it_caused() {
    let runtime = Runtime::start();
    let state = runtime.state();
    per_object_chain(&runtime, Placement::Home).await;
    runtime.settled().await;
    for k in 0..200 {
        let id = format!("n{k}");
        state.create(Resource::new(NS, id.as_str(), IntSpec(k)), None).await.unwrap();
        // The change was on its way to the controller before the reply came.
        runtime.settled().await;
        let sentence = state.get(&Pointer::typed::<SentenceSpec>(NS, id.as_str())).await.unwrap();
        assert_eq!(sentence.spec().0, format!("{k} sentence"));
    }
    runtime.stop().await;
}

#[actix::test]
async fn writers_on_other_threads_are_answered_while_controllers_run_on_others() {
    let runtime = Runtime::builder().arbiters(2).start();
    let state = runtime.state();
    let reconciles = per_object_chain(&runtime, Placement::Spread).await;
    runtime.settled().await;
    // Four writers on two other threads, each with 64 creates in flight.
    let arbiters: Vec<_> = (0..2).map(|_| actix::Arbiter::new()).collect();
    let (done_tx, done_rx) = futures::channel::mpsc::unbounded();
    for w in 0..4_i64 {
        let state = state.clone();
        let done = done_tx.clone();
        arbiters[w as usize % 2].spawn(async move {
            let creates =
                (0..500).map(|k| {
                    let state = state.clone();
                    let n = w * 500 + k;
                    async move {
                        state.create(Resource::new(NS, format!("n{n}"), IntSpec(n)), None).await
                    }
                });
            let results = futures::stream::iter(creates).buffer_unordered(64);
            let results: Vec<_> = results.collect().await;
            let failed = results.into_iter().filter(Result::is_err).count();
            done.unbounded_send(failed).unwrap();
        });
    }
    drop(done_tx);
    let failures: Vec<usize> = done_rx.collect().await;
    assert_eq!(failures, [0, 0, 0, 0], "every writer was answered, without an error");
    runtime.settled().await;
    assert_sentences(&state, 2_000).await;
    assert_eq!(reconciles.load(Ordering::SeqCst), 4_000);
    runtime.stop().await;
    for arbiter in arbiters {
        arbiter.stop();
    }
}

#[actix::test]
async fn plain_controllers_count_every_change_of_a_burst_and_coalesce_them() {
    let runtime = Runtime::start();
    let state = runtime.state();
    runtime.register(int_to_str).await.unwrap();
    runtime.register(str_to_sentence).await.unwrap();
    runtime.settled().await;
    create_all_at_once(&state, 500).await;
    runtime.settled().await;
    assert_sentences(&state, 500).await;
    let metrics = runtime.metrics().await;
    let first = metrics.iter().find(|m| m.controller == "IntToStr").unwrap();
    // 1,000 changes, each counted, yet far fewer reconciles: changes that
    // arrive while one is pending or running collapse into one more.
    // Each integer changes twice: created, then its finalizer added.
    assert_eq!(first.wakeups, 1_000, "every change was noticed");
    assert!(first.reconciles < 100, "{} reconciles for 500 creates", first.reconciles);
    runtime.stop().await;
}
