//! Each reconcile runs in a `reconcile` span with kube-runtime's field names
//! and records its result; warn and error events carry the controller and
//! the object in fields of their own.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::{self, IntSpec, NS, SentenceSpec};
use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::prelude::*;
use cosi_runtime::supervisor::Backoff;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

type Fields = BTreeMap<String, String>;
/// A span: name, target, fields.
type SpanRecord = (String, String, Fields);

struct Visitor<'a>(&'a mut Fields);

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// Remembers every span (name, target, fields) and every warn/error event.
#[derive(Clone, Default)]
struct Recorder {
    next: Arc<AtomicU64>,
    spans: Arc<Mutex<BTreeMap<u64, SpanRecord>>>,
    events: Arc<Mutex<Vec<(tracing::Level, Fields)>>>,
}

impl Subscriber for Recorder {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &Attributes<'_>) -> Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let mut fields = Fields::new();
        attrs.record(&mut Visitor(&mut fields));
        let md = attrs.metadata();
        self.spans.lock().unwrap().insert(id, (md.name().into(), md.target().into(), fields));
        Id::from_u64(id)
    }
    fn record(&self, span: &Id, values: &Record<'_>) {
        if let Some((_, _, fields)) = self.spans.lock().unwrap().get_mut(&span.into_u64()) {
            values.record(&mut Visitor(fields));
        }
    }
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        if *event.metadata().level() <= tracing::Level::WARN {
            let mut fields = Fields::new();
            event.record(&mut Visitor(&mut fields));
            self.events.lock().unwrap().push((*event.metadata().level(), fields));
        }
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

impl Recorder {
    fn reconciles(&self) -> Vec<Fields> {
        self.spans
            .lock()
            .unwrap()
            .values()
            .filter(|(name, target, _)| name == "reconcile" && target == "cosi_runtime::reconcile")
            .map(|(_, _, fields)| fields.clone())
            .collect()
    }
}

/// Fails the first reconcile of `fail`, panics on the first of `panic`.
struct Keys(Arc<Mutex<BTreeMap<String, u32>>>);

impl QueueController for Keys {
    fn name(&self) -> &str {
        "Keys"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<IntSpec>(NS)],
            outputs: vec![Output::shared::<SentenceSpec>()],
            ..Default::default()
        }
    }
    async fn reconcile(
        &self,
        _: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let attempt = {
            let mut seen = self.0.lock().unwrap();
            let n = seen.entry(ptr.id().to_owned()).or_default();
            *n += 1;
            *n
        };
        match (ptr.id(), attempt) {
            ("fail", 1) => Err("not yet".into()),
            ("panic", 1) => panic!("boom"),
            _ => Ok(Outcome::Done),
        }
    }
}

#[actix::test]
async fn reconciles_run_in_spans_with_reference_reason_and_result() {
    let recorder = Recorder::default();
    let _guard = tracing::subscriber::set_default(recorder.clone());
    tokio::time::pause();
    let runtime = Runtime::builder()
        .backoff(Backoff { initial: Duration::from_millis(10), jitter: 0.0, ..Backoff::default() })
        .start();
    for id in ["ok", "fail", "panic"] {
        runtime.state().create(Resource::new(NS, id, IntSpec(1)), None).await.unwrap();
    }
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    runtime.register(move || Keys(seen.clone())).await.unwrap();
    runtime.register(common::controllers::int_to_str).await.unwrap();
    runtime.settled().await;

    let spans = recorder.reconciles();
    let find = |object: &str, reason: &str, result: &str| {
        spans.iter().any(|f| {
            f.get("object.ref").map(String::as_str) == Some(object)
                && f.get("object.reason").map(String::as_str) == Some(reason)
                && f.get("result").map(String::as_str) == Some(result)
        })
    };
    let ptr = |id: &str| Pointer::typed::<IntSpec>(NS, id).to_string();
    assert!(find(&ptr("ok"), "queued", "success"), "{spans:#?}");
    assert!(find(&ptr("fail"), "queued", "error"), "{spans:#?}");
    assert!(find(&ptr("fail"), "retry after failure", "success"), "{spans:#?}");
    assert!(find(&ptr("panic"), "queued", "panic"), "{spans:#?}");
    assert!(find("*", "registered", "success"), "a plain controller's first reconcile: {spans:#?}");
    assert!(spans.iter().all(|f| f.contains_key("controller") && f.contains_key("result")));

    // The warnings name controller and object in fields of their own.
    let events = recorder.events.lock().unwrap().clone();
    let failed = events
        .iter()
        .find(|(_, f)| f.get("message").is_some_and(|m| m.contains("reconcile failed")))
        .expect("a warning for the failure");
    assert_eq!(failed.0, tracing::Level::WARN);
    assert_eq!(failed.1.get("controller").map(String::as_str), Some("Keys"));
    assert_eq!(failed.1.get("object.ref"), Some(&ptr("fail")));
    runtime.stop().await;
}
