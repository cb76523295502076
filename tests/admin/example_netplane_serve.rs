//! The flagship with `--serve`: the admin endpoint answers while the story
//! waits between steps, a watch sees each change land, and the control plane
//! keeps serving once settled until it is told to stop.

use std::net::SocketAddr;

use crate::http::{get, open};
use crate::plane;
use crate::serve;
use tokio::sync::{mpsc, oneshot};

#[actix::test]
async fn the_admin_endpoint_serves_the_story_step_by_step_and_after() {
    let dir = tempfile::tempdir().unwrap();
    let (enter, next) = mpsc::unbounded_channel();
    let (stop, stopped) = oneshot::channel::<()>();
    let mut serve =
        serve::Serve::new("127.0.0.1:0".parse().unwrap(), next, async { drop(stopped.await) });
    let mut url = serve.url.subscribe();
    let root = dir.path().to_path_buf();
    let story = actix::spawn(async move {
        let mut out = Vec::new();
        let report = plane::run_story(&root, None, &mut serve, &mut out).await.unwrap();
        (report, serve.error, String::from_utf8(out).unwrap())
    });

    let url = url.wait_for(Option::is_some).await.unwrap().clone().unwrap();
    let addr: SocketAddr = url.trim_start_matches("http://").parse().unwrap();
    // Step 1 applied; the story waits for Enter before step 2.
    let mut watch = open(addr, "/api/v1/watch/config/linkconfigs").await;
    for id in ["eth0", "eth1"] {
        let event = watch.event().await.unwrap();
        assert_eq!((event.event.as_str(), event.resource_id()), ("created", id));
    }
    assert_eq!(watch.event().await.unwrap().event, "bootstrapped");
    let links = get(addr, "/api/v1/resources/config/linkconfigs").await.json();
    assert_eq!(links.as_array().unwrap().len(), 2);

    enter.send(()).unwrap();
    // Step 2: jumbo frames on eth1.
    loop {
        let event = watch.event().await.unwrap();
        if event.event == "updated" && event.data["spec"]["mtu"] == 9000 {
            assert_eq!(event.resource_id(), "eth1");
            break;
        }
    }
    enter.send(()).unwrap();
    // Step 3: eth1 is torn down and destroyed.
    loop {
        let event = watch.event().await.unwrap();
        if event.event == "destroyed" {
            assert_eq!(event.resource_id(), "eth1");
            break;
        }
    }
    // Settled, still serving: ready, every controller registered.
    let ready = get(addr, "/readyz?verbose").await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert!(ready.body.contains("[+]controllers ok"));
    let metrics = get(addr, "/metrics").await.body;
    assert!(
        metrics.contains(
            "controller_runtime_reconcile_panics_total{controller=\"HostnameController\"} 1"
        ),
        "{metrics}"
    );

    stop.send(()).unwrap();
    let (report, error, printed) = story.await.unwrap();
    assert_eq!(error, None);
    assert!(printed.contains("(press Enter for step 2)"), "{printed}");
    assert!(printed.contains("serving http://127.0.0.1:"), "{printed}");
    assert_eq!(report.files.len(), 4, "the same end as without --serve: {:?}", report.files);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err(), "the endpoint stopped");
}
