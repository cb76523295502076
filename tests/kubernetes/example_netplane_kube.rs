//! The flagship with `--kube`: once the story has settled, kubectl drives the
//! control plane through the Kubernetes API. `kubectl apply -f` of a new link
//! renders and writes its file, `kubectl get` shows it, and `kubectl delete`
//! returns once the link's file is gone from disk (the teardown waits for
//! the controllers' finalizers). Skipped, loudly, where kubectl is missing.

use std::process::Command;
use std::time::Duration;

use crate::kube;
use crate::plane;
use tokio::sync::oneshot;

/// Runs kubectl against `url` with an empty kubeconfig, on a blocking
/// thread, bounded.
async fn kubectl(home: &std::path::Path, url: &str, args: &[&str]) -> (bool, String) {
    let mut cmd = Command::new("kubectl");
    cmd.env("KUBECONFIG", home.join("config"))
        .env("HOME", home)
        .args(["--server", url, "--cache-dir"])
        .arg(home.join("cache"))
        .arg("--request-timeout=30s")
        .args(args)
        .stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(
        Duration::from_secs(90),
        tokio::task::spawn_blocking(move || cmd.output().expect("kubectl runs")),
    )
    .await
    .unwrap_or_else(|_| panic!("kubectl {args:?} still runs after 90 s"))
    .unwrap();
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

#[actix::test]
async fn kubectl_applies_gets_and_deletes_links_of_the_running_control_plane() {
    if Command::new("kubectl").arg("version").arg("--client").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI machines have kubectl");
        eprintln!("SKIPPED: no kubectl on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config"), "").unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    let mut kube = kube::Kube::new("127.0.0.1:0".parse().unwrap(), async { drop(stopped.await) });
    let (mut url, mut runtime, mut following) =
        (kube.url.subscribe(), kube.runtime.subscribe(), kube.following.subscribe());
    let root = dir.path().to_path_buf();
    let story = actix::spawn(async move {
        let mut out = Vec::new();
        let report = plane::run_story(&root, None, &mut kube, &mut out).await.unwrap();
        (report, kube.error, String::from_utf8(out).unwrap())
    });
    let url = url.wait_for(Option::is_some).await.unwrap().clone().unwrap();
    let runtime = runtime.wait_for(Option::is_some).await.unwrap().clone().unwrap();
    following.wait_for(|f| *f).await.unwrap();

    let (ok, listed) = kubectl(home.path(), &url, &["get", "linkconfigs", "-n", "config"]).await;
    assert!(ok && listed.contains("eth0") && !listed.contains("eth1"), "{listed}");
    let (ok, listed) = kubectl(home.path(), &url, &["get", "linkconfigs", "-A"]).await;
    assert!(ok && listed.contains("config") && listed.contains("eth0"), "-A: {listed}");
    let (ok, explained) = kubectl(home.path(), &url, &["explain", "linkconfigs.spec"]).await;
    assert!(ok && explained.contains("mtu") && explained.contains("<integer>"), "{explained}");

    let manifest = home.path().join("eth5.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: net.cosi.dev/v1alpha1\nkind: LinkConfig\nmetadata:\n  name: eth5\n  \
         namespace: config\nspec:\n  mtu: 1400\n  up: true\n",
    )
    .unwrap();
    let (ok, applied) =
        kubectl(home.path(), &url, &["apply", "-f", manifest.to_str().unwrap()]).await;
    assert!(ok && applied.contains("linkconfig.net.cosi.dev/eth5 created"), "{applied}");
    runtime.settled_within(Duration::from_secs(30)).await.unwrap();
    let file = dir.path().join("links/eth5.conf");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "name=eth5\nmtu=1400\nstate=up\n");

    let (ok, table) = kubectl(home.path(), &url, &["get", "lc", "-n", "config"]).await;
    assert!(ok && table.contains("MTU") && table.contains("eth5"), "{table}");
    // The managers of what kubectl applied, and the Events the runtime serves.
    let (ok, yaml) = kubectl(
        home.path(),
        &url,
        &["get", "lc", "eth5", "-n", "config", "-o", "yaml", "--show-managed-fields"],
    )
    .await;
    assert!(ok && yaml.contains("managedFields") && yaml.contains("kubectl"), "{yaml}");
    let (ok, events) = kubectl(home.path(), &url, &["get", "events", "-A"]).await;
    assert!(ok, "kubectl get events -A answers: {events}");

    let (ok, deleted) =
        kubectl(home.path(), &url, &["delete", "linkconfig", "eth5", "-n", "config"]).await;
    assert!(ok && deleted.contains("\"eth5\" deleted"), "{deleted}");
    // kubectl returned once the link was destroyed: its finalizers (the
    // renderer's, held until its file was gone from disk) were released.
    assert!(!file.exists(), "the rendered file is removed before the link goes");

    stop.send(()).unwrap();
    let (_, error, out) = story.await.unwrap();
    assert_eq!(error, None);
    assert!(out.contains("Kubernetes API on http://127.0.0.1:"), "{out}");
}
