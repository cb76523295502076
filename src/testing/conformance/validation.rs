//! Checks of input validation and typing: invalid input stores nothing, a
//! wrong spec type is a type mismatch, dynamic resources read back typed.

use super::Target;
use super::support::{IntSpec, NS, StrSpec, int, kind, ptr};
use crate::prelude::*;
use crate::resource::DynamicResource;

/// Checks that invalid input is rejected and nothing stored.
pub async fn check_invalid_input_is_rejected_and_nothing_stored(t: &mut dyn Target) {
    let state = t.open().await;
    let long = "x".repeat(257);
    let bad: Vec<(&str, Resource<IntSpec>)> = vec![
        ("empty id", Resource::new(NS, "", IntSpec(0))),
        ("empty namespace", Resource::new("", "a", IntSpec(0))),
        ("long id", Resource::new(NS, long.clone(), IntSpec(0))),
        ("control character", Resource::new(NS, "a\tb", IntSpec(0))),
        ("bad label key", {
            let mut r = int("a", 0);
            r.metadata_mut().labels_mut().insert("not a key", "v");
            r
        }),
        ("bad finalizer", {
            let mut r = int("a", 0);
            r.metadata_mut().finalizers_mut().add("");
            r
        }),
    ];
    for (what, r) in bad {
        let e = state.create(r, None).await.unwrap_err();
        assert!(e.is_invalid_input(), "{what}: {e}");
    }
    assert!(state.list(&kind(), &LabelQuery::all()).await.unwrap().is_empty());
    let bad_kind = Kind::new(NS, "");
    assert!(state.list(&bad_kind, &LabelQuery::all()).await.unwrap_err().is_invalid_input());
    let e = state.get(&Pointer::new(NS, long, "a")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    state.create(int("ok", 0), None).await.unwrap();
    let e = state.add_finalizer(&ptr("ok"), "bad\nfinalizer").await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
    let e = state.watch_stream(&Pointer::new(NS, "T", "")).await.unwrap_err();
    assert!(e.is_invalid_input(), "{e}");
}

/// Checks that wrong spec type is a type mismatch.
pub async fn check_wrong_spec_type_is_a_type_mismatch(t: &mut dyn Target) {
    let state = t.open().await;
    state.create(int("a", 1), None).await.unwrap();
    let e = state.get_typed::<StrSpec>(&ptr("a")).await.unwrap_err();
    assert!(e.is_type_mismatch(), "{e}");
    let e = state
        .modify(&ptr("a"), |r: &mut Resource<StrSpec>| r.spec_mut().0.push('!'), None)
        .await
        .unwrap_err();
    assert!(e.is_type_mismatch(), "{e}");
}

/// Checks that dynamic resources are read back typed.
pub async fn check_dynamic_resources_are_read_back_typed(t: &mut dyn Target) {
    let state = t.open().await;
    let manifest = serde_json::json!({
        "metadata": {"namespace": NS, "type": IntSpec::TYPE, "id": "from-yaml"},
        "spec": 12,
    });
    let dynamic: DynamicResource = serde_json::from_value(manifest).unwrap();
    state.create(dynamic, None).await.unwrap();
    let typed = state.get_typed::<IntSpec>(&ptr("from-yaml")).await.unwrap();
    assert_eq!(typed.spec(), &IntSpec(12));
    let back = state.get(&ptr("from-yaml")).await.unwrap().to_dynamic().unwrap();
    assert_eq!(back.spec(), &serde_json::json!(12));
}
