//! Summing controllers: weak inputs into a shared output type.

use crate::common::IntSpec;
use crate::common::controllers::Sum;
use cosi_runtime::prelude::*;

fn sum(name: &str, source: &str) -> Sum {
    Sum {
        name: name.to_owned(),
        source: source.to_owned(),
        target: Pointer::typed::<IntSpec>("sums", name).erase(),
    }
}

async fn total(state: &State, name: &str) -> i64 {
    state.get_typed::<IntSpec>(&Pointer::typed::<IntSpec>("sums", name)).await.unwrap().spec().0
}

#[actix::test]
async fn a_controller_sums_its_weak_inputs() {
    let runtime = Runtime::start();
    let state = runtime.state();
    runtime.register(|| sum("total", "numbers")).await.unwrap();
    for (id, n) in [("a", 1), ("b", 2), ("c", 3)] {
        state.create(Resource::new("numbers", id, IntSpec(n)), None).await.unwrap();
    }
    runtime.settled().await;
    assert_eq!(total(&state, "total").await, 6);
    state.destroy(&Pointer::typed::<IntSpec>("numbers", "b"), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(total(&state, "total").await, 4);
}

#[actix::test]
async fn several_summing_controllers_share_one_output_type_registered_after_start() {
    let runtime = Runtime::start();
    let state = runtime.state();
    state.create(Resource::new("odd", "one", IntSpec(1)), None).await.unwrap();
    state.create(Resource::new("odd", "three", IntSpec(3)), None).await.unwrap();
    state.create(Resource::new("even", "two", IntSpec(2)), None).await.unwrap();
    runtime.settled().await;

    runtime.register(|| sum("odds", "odd")).await.unwrap();
    runtime.settled().await;
    runtime.register(|| sum("evens", "even")).await.unwrap();
    runtime.settled().await;
    assert_eq!(total(&state, "odds").await, 4);
    assert_eq!(total(&state, "evens").await, 2);

    // Each resource of the shared type belongs to the controller that made it.
    let sums = state.list(&Kind::of::<IntSpec>("sums"), &LabelQuery::all()).await.unwrap();
    let owners: Vec<_> =
        sums.iter().map(|r| (r.id().to_owned(), r.owner().map(str::to_owned))).collect();
    assert_eq!(
        owners,
        [
            ("evens".to_owned(), Some("evens".to_owned())),
            ("odds".to_owned(), Some("odds".to_owned()))
        ]
    );

    state.create(Resource::new("even", "four", IntSpec(4)), None).await.unwrap();
    runtime.settled().await;
    assert_eq!(total(&state, "evens").await, 6);
    assert_eq!(total(&state, "odds").await, 4);
}

#[actix::test]
async fn a_shared_output_of_one_controller_is_not_writable_by_another() {
    struct Thief;
    impl Controller for Thief {
        fn name(&self) -> &str {
            "Thief"
        }
        fn inputs(&self) -> Vec<Input> {
            vec![]
        }
        fn outputs(&self) -> Vec<Output> {
            vec![Output::shared::<IntSpec>()]
        }
        async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
            let stolen = cx
                .modify(&Pointer::typed::<IntSpec>("sums", "odds"), |r: &mut Resource<IntSpec>| {
                    r.spec_mut().0 = -1
                })
                .await;
            match stolen {
                Err(e) if e.is_owner_conflict() => Ok(()),
                other => Err(format!("expected an owner conflict, got {other:?}").into()),
            }
        }
    }
    let runtime = Runtime::start();
    runtime.state().create(Resource::new("odd", "one", IntSpec(1)), None).await.unwrap();
    runtime.register(|| sum("odds", "odd")).await.unwrap();
    runtime.settled().await;
    runtime.register(|| Thief).await.unwrap();
    runtime.settled().await;
    let thief = &runtime.metrics().await[1];
    assert_eq!((thief.reconciles, thief.errors), (1, 0));
    assert_eq!(total(&runtime.state(), "odds").await, 1);
}
