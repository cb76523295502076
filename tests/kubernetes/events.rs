//! Events through the API: what the runtime records about a failing
//! controller is served as `events.k8s.io/v1` and core `v1`; `kubectl get
//! events` lists it and `kubectl describe` shows it under the object, with
//! a count that grows instead of one Event per retry.

use std::time::Duration;

use cosi_runtime::controller::{Outcome, QueueController, QueueSettings, ReconcileError};
use cosi_runtime::events::{Event, EventSettings};
use cosi_runtime::kubernetes::{Expose, KubernetesApi};
use cosi_runtime::prelude::*;
use cosi_runtime::resource::Spec;
use futures::StreamExt;

use crate::kubectl::{Kubectl, kubectl_available};
use crate::write::{LinkConfig, get, serve};

/// What a link's MTU becomes.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct LinkMtu(u32);

impl Spec for LinkMtu {
    const TYPE: &'static str = "LinkMtus.net.cosi.dev";
}

/// Refuses an MTU under 576, for ever.
struct MtuCheck;

impl QueueController for MtuCheck {
    fn name(&self) -> &str {
        "MtuCheck"
    }
    fn settings(&self) -> QueueSettings {
        QueueSettings {
            inputs: vec![Input::primary::<LinkConfig>("config")],
            outputs: vec![Output::exclusive::<LinkMtu>()],
            concurrency: 1,
        }
    }
    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let link = cx.get_typed::<LinkConfig>(ptr).await?;
        let mtu = link.spec().mtu;
        if mtu < 576 {
            return Err(format!("mtu {mtu} is below 576").into());
        }
        let out = Pointer::typed::<LinkMtu>("config", ptr.id());
        cx.modify(&out, move |r: &mut Resource<LinkMtu>| r.spec_mut().0 = mtu).await?;
        Ok(Outcome::Done)
    }
}

/// Waits until the Event about `id` has been written with a count of at
/// least `count`, and answers it.
async fn event_counted(state: &State, id: &str, count: i32) -> Event {
    let kind = Kind::new("config", Event::TYPE);
    let mut watch = state
        .watch_kind_stream(&kind, LabelQuery::all(), cosi_runtime::state::WatchOptions::default())
        .await
        .unwrap();
    loop {
        for r in state.list_typed::<Event>("config", &LabelQuery::all()).await.unwrap() {
            if r.spec().regarding.name == id && r.spec().count() >= count {
                return r.spec().clone();
            }
        }
        watch.next().await.expect("the watch goes on");
    }
}

#[actix::test]
async fn kubectl_gets_and_describes_a_failing_controllers_events_with_a_growing_count() {
    let settings = EventSettings { interval: Duration::from_millis(100), ..Default::default() };
    let runtime = Runtime::builder().events(settings).start();
    runtime.register(|| MtuCheck).await.unwrap();
    let state = runtime.state();
    state
        .client()
        .create(Resource::new("config", "eth9", LinkConfig { mtu: 99, bond: None }))
        .await
        .unwrap();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").short_names(["lc"]).namespaces(["config"]))
        .unwrap()
        .controllers(&runtime);
    let (server, addr) = serve(api).await;

    let event = event_counted(&state, "eth9", 3).await;
    assert_eq!(event.reason, "ReconcileError");
    assert!(event.note.contains("mtu 99 is below 576"), "{}", event.note);

    // Both versions, from one stored Event.
    let new = get(addr, "/apis/events.k8s.io/v1/namespaces/config/events").await;
    assert_eq!(new.body["items"][0]["regarding"]["name"], "eth9", "{:?}", new.body);
    let core = get(
        addr,
        "/api/v1/namespaces/config/events?fieldSelector=involvedObject.name%3Deth9,involvedObject.kind%3DLinkConfig",
    )
    .await;
    let item = &core.body["items"][0];
    assert_eq!(
        (item["involvedObject"]["name"].as_str(), item["reason"].as_str()),
        (Some("eth9"), Some("ReconcileError"))
    );
    assert!(item["count"].as_i64().unwrap() >= 3, "{item}");
    let none =
        get(addr, "/api/v1/namespaces/config/events?fieldSelector=involvedObject.name%3Deth0")
            .await;
    assert_eq!(none.body["items"].as_array().unwrap().len(), 0);
    let unsupported = get(addr, "/api/v1/namespaces/config/events?fieldSelector=note%3Dx").await;
    assert_eq!(unsupported.status, 400);

    for minor in [27, 33] {
        if !kubectl_available(minor) {
            continue;
        }
        let kubectl = Kubectl::new(addr);
        let (ok, out, err) = kubectl.run(&["get", "events", "-A"]).await;
        assert!(
            ok && out.contains("ReconcileError") && out.contains("eth9"),
            "1.{minor}: {out}{err}"
        );
        let (ok, out, err) = kubectl.run(&["describe", "lc", "eth9", "-n", "config"]).await;
        assert!(ok, "1.{minor}: {err}");
        let events = out.split("Events:").nth(1).unwrap_or_default();
        assert!(
            events.contains("ReconcileError") && events.contains("mtu 99 is below 576"),
            "1.{minor}: {out}"
        );
        assert!(events.contains("(x"), "1.{minor}: a count, not one line per retry: {out}");
    }
    server.stop().await;
    runtime.stop().await;
}

#[actix::test]
async fn kube_rs_recorder_publishes_through_the_api_and_its_repeat_counts_into_one_event() {
    use k8s_openapi::api::core::v1::ObjectReference;
    use kube::runtime::events::{Event as Published, EventType, Recorder, Reporter};

    let state = State::start();
    let api = KubernetesApi::new(&state).namespaces(["config"]).events();
    let (server, addr) = serve(api).await;
    let client = kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap();
    let reporter = Reporter { controller: "netplane".into(), instance: Some("node-1".into()) };
    let recorder = Recorder::new(client, reporter);
    let reference = ObjectReference {
        api_version: Some("net.cosi.dev/v1alpha1".into()),
        kind: Some("LinkConfig".into()),
        name: Some("eth0".into()),
        namespace: Some("config".into()),
        ..Default::default()
    };
    let event = Published {
        type_: EventType::Normal,
        reason: "Configured".into(),
        note: Some("mtu 1500".into()),
        action: "Reconcile".into(),
        secondary: None,
    };
    recorder.publish(&event, &reference).await.unwrap();
    recorder.publish(&event, &reference).await.unwrap();

    let stored = state.list_typed::<Event>("config", &LabelQuery::all()).await.unwrap();
    assert_eq!(stored.len(), 1, "the repeat is a patch of the same Event");
    let e = stored[0].spec();
    assert_eq!((e.reason.as_str(), e.note.as_str()), ("Configured", "mtu 1500"));
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(2));
    assert_eq!(e.reporting_controller, "netplane");
    let core = get(addr, "/api/v1/namespaces/config/events").await;
    assert_eq!(core.body["items"][0]["involvedObject"]["name"], "eth0");
    server.stop().await;
}
