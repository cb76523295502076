//! A queue controller with a primary input on every namespace of a type
//! (DESIGN.md §18): it reconciles the resources of that type wherever they
//! are, in namespaces made after it started too, and may read any of them.

use crate::common::{IntSpec, StrSpec};
use cosi_runtime::controller::{
    InputKind, Outcome, QueueController, QueueSettings, ReconcileError,
};
use cosi_runtime::prelude::*;

/// Mirrors each integer, in whatever namespace, to a string beside it that
/// also counts the integers of every namespace.
struct Everywhere;

impl QueueController for Everywhere {
    fn name(&self) -> &str {
        "Everywhere"
    }

    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::all_namespaces::<IntSpec>(InputKind::Primary)],
            outputs: vec![Output::exclusive::<StrSpec>()],
            concurrency: 2,
        }
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let out = Pointer::typed::<StrSpec>(ptr.namespace(), ptr.id());
        match cx.get_typed::<IntSpec>(ptr).await {
            Ok(int) => {
                let everywhere = cx.list_all_namespaces(IntSpec::TYPE, &LabelQuery::all()).await?;
                let text = format!("{} of {}", int.spec().0, everywhere.len());
                cx.modify(&out, move |s: &mut Resource<StrSpec>| s.spec_mut().0 = text.clone())
                    .await?;
            }
            Err(e) if e.is_not_found() => match cx.destroy(&out).await {
                Err(e) if !e.is_not_found() => return Err(e.into()),
                _ => {}
            },
            Err(e) => return Err(e.into()),
        }
        Ok(Outcome::Done)
    }
}

async fn mirrored(state: &State, namespace: &str, id: &str) -> Option<String> {
    let ptr = Pointer::typed::<StrSpec>(namespace, id);
    state.get_typed::<StrSpec>(&ptr).await.ok().map(|s| s.into_spec().0)
}

#[actix::test]
async fn a_primary_input_on_every_namespace_reconciles_objects_in_two_namespaces() {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new("a", "x", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new("b", "y", IntSpec(2)), None).await.unwrap();
    runtime.register(|| Everywhere).await.unwrap();
    runtime.settled().await;
    assert_eq!(mirrored(&state, "a", "x").await.as_deref(), Some("1 of 2"));
    assert_eq!(mirrored(&state, "b", "y").await.as_deref(), Some("2 of 2"));
}

#[actix::test]
async fn a_primary_input_on_every_namespace_sees_namespaces_made_after_it_started() {
    let runtime = Runtime::start();
    let state = runtime.state();
    runtime.register(|| Everywhere).await.unwrap();
    runtime.settled().await;
    state.create(Resource::new("later", "z", IntSpec(7)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(mirrored(&state, "later", "z").await.as_deref(), Some("7 of 1"));
    state.destroy(&Pointer::typed::<IntSpec>("later", "z"), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(mirrored(&state, "later", "z").await, None, "its output went with it");
}

#[actix::test]
async fn an_input_on_every_namespace_with_an_id_is_refused_at_registration() {
    struct OneId;
    impl QueueController for OneId {
        fn name(&self) -> &str {
            "OneId"
        }
        fn settings(&self) -> QueueSettings {
            QueueSettings {
                inputs: vec![Input::all_namespaces::<IntSpec>(InputKind::Primary).with_id("x")],
                outputs: vec![],
                concurrency: 1,
            }
        }
        async fn reconcile(
            &self,
            _: &ReconcileContext,
            _: &Pointer,
        ) -> Result<Outcome, ReconcileError> {
            Ok(Outcome::Done)
        }
    }
    let runtime = Runtime::start();
    let err = runtime.register(|| OneId).await.unwrap_err();
    assert!(err.to_string().contains("every namespace"), "{err}");
}
