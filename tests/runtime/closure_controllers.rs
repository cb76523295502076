//! Controllers made from closures (`controller::from_fn`) are supervised and
//! access-checked like any other; typed pointers carry their spec type.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::{IntSpec, NS, StrSpec};
use cosi_runtime::controller::from_fn;
use cosi_runtime::prelude::*;

fn fast() -> Runtime {
    Runtime::builder()
        .backoff(Backoff { initial: Duration::from_millis(1), ..Backoff::default() })
        .start()
}

#[actix::test]
async fn a_closure_controller_reconciles_with_typed_pointers() {
    let runtime = fast();
    runtime
        .register(|| {
            from_fn(
                "Doubler",
                vec![Input::weak::<IntSpec>(NS)],
                vec![Output::exclusive::<StrSpec>()],
                async |cx| {
                    for int in cx.list_typed::<IntSpec>(NS, &LabelQuery::all()).await? {
                        let out = Pointer::typed::<StrSpec>(NS, int.id());
                        let text = (int.spec().0 * 2).to_string();
                        cx.modify(&out, move |s| s.spec_mut().0 = text.clone()).await?;
                    }
                    Ok(())
                },
            )
        })
        .await
        .unwrap();
    let user = runtime.state().client();
    user.create(Resource::new(NS, "a", IntSpec(21))).await.unwrap();
    runtime.settled().await;
    let out: Resource<StrSpec> = user.get(&Pointer::typed::<StrSpec>(NS, "a")).await.unwrap();
    assert_eq!(out.spec().0, "42");
    assert_eq!(out.owner(), Some("Doubler"));
}

#[actix::test]
async fn a_panicking_closure_controller_is_rebuilt_by_its_factory() {
    let runtime = fast();
    let built = Arc::new(AtomicU32::new(0));
    let counter = built.clone();
    runtime
        .register(move || {
            let instance = counter.fetch_add(1, Ordering::SeqCst);
            let mut runs = 0;
            from_fn("Flaky", vec![Input::weak::<IntSpec>(NS)], vec![], async move |_cx| {
                runs += 1;
                assert!(instance > 0 || runs > 1, "the first instance panics on its first run");
                Ok(())
            })
        })
        .await
        .unwrap();
    runtime.settled().await;
    let m = runtime.metrics().await;
    let flaky = m.iter().find(|m| m.controller == "Flaky").unwrap();
    assert_eq!(flaky.panics, 1);
    assert_eq!(built.load(Ordering::SeqCst), 2, "the first instance, then a fresh one");
}

#[actix::test]
async fn a_closure_controller_writing_an_undeclared_type_is_denied() {
    let runtime = fast();
    runtime
        .register(|| {
            from_fn("Sneaky", vec![], vec![], async |cx| {
                let err = cx
                    .modify(&Pointer::typed::<StrSpec>(NS, "x"), |s| s.spec_mut().0 = "x".into())
                    .await
                    .unwrap_err();
                assert!(err.is_access_denied(), "{err}");
                Ok(())
            })
        })
        .await
        .unwrap();
    runtime.settled().await;
    let m = runtime.metrics().await;
    assert_eq!((m[0].reconciles, m[0].panics), (1, 0));
}
