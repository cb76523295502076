//! The flagship example's control plane, run in-process: final files and resources.

use std::collections::BTreeMap;

use crate::plane;
use cosi_runtime::controller::ControllerStatus;

#[actix::test]
async fn the_network_control_plane_converges_changes_and_tears_down() {
    let dir = tempfile::tempdir().unwrap();
    let mut out = Vec::new();
    let report = plane::run(dir.path(), &mut out).await.unwrap();
    let printed = String::from_utf8(out).unwrap();

    // Final files: eth1 and everything on it are gone, the rest reflects the changes.
    let expected: BTreeMap<String, String> = [
        ("addresses/eth0-lan.conf", "link=eth0\naddress=10.0.0.2/24\n"),
        ("hostname", "node-2.example.org\n"),
        ("links/eth0.conf", "name=eth0\nmtu=1500\nstate=up\n"),
        ("routes/default.conf", "to=0.0.0.0/0\nvia=10.0.0.1\ndev=eth0\n"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(report.files, expected);
    assert!(dir.path().join("graph.dot").exists());
    assert!(dir.path().join("graph.mmd").exists());
    let prom = std::fs::read_to_string(dir.path().join("metrics.prom")).unwrap();
    assert!(
        prom.contains("cosi_controller_panics_total{controller=\"HostnameController\"} 1"),
        "{prom}"
    );

    // Final resources: 4 configs, 4 file specs, 4 applied records, 1 status;
    // every config held by its renderer, every file spec by the applier.
    let ids: Vec<&str> = report.resources.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(
        ids,
        [
            "config/eth0",
            "config/eth0-lan",
            "config/default",
            "config/hostname",
            "files/address-eth0-lan",
            "files/hostname-hostname",
            "files/link-eth0",
            "files/route-default",
            "status/address-eth0-lan",
            "status/hostname-hostname",
            "status/link-eth0",
            "status/route-default",
            "status/network",
        ]
    );
    for row in &report.resources {
        assert_eq!(row[4], "running", "{row:?}");
        match row[0].as_str() {
            "FileSpecs" => assert_eq!(row[5], "ApplyController", "{row:?}"),
            t if t.ends_with("Configs") => assert!(row[5].ends_with("Controller"), "{row:?}"),
            _ => assert_eq!(row[5], "", "{row:?}"),
        }
    }

    // The deliberate panic happened once, and that config was retried once,
    // on a fresh instance from the factory.
    let hostname = report.metrics.iter().find(|m| m.controller == "HostnameController").unwrap();
    assert_eq!((hostname.panics, hostname.retries, hostname.restarts), (1, 1, 1));
    for m in &report.metrics {
        assert_eq!(m.status, ControllerStatus::Running, "{m:?}");
        if m.controller != "HostnameController" {
            assert_eq!(m.errors + m.panics, 0, "{m:?}");
        }
    }
    assert!(
        report.dot.contains(
            r#""c:ApplyController" -> "r:AppliedFiles.net.cosi.dev" [label="exclusive"]"#
        )
    );
    assert!(printed.contains("4/4 files applied, ready=true"), "{printed}");
}

#[actix::test]
async fn the_control_plane_keeps_its_configuration_and_resumes_from_it() {
    let dir = tempfile::tempdir().unwrap();
    let (files, state) = (dir.path().join("files"), dir.path().join("state"));
    let mut out = Vec::new();
    let first = plane::run_with_state(&files, Some(&state), &mut out).await.unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("none there yet"), "{printed}");
    assert!(!printed.contains("resumed"), "{printed}");

    // A new process would start from here: the files are gone too.
    std::fs::remove_dir_all(&files).unwrap();
    let mut out = Vec::new();
    let second = plane::run_with_state(&files, Some(&state), &mut out).await.unwrap();
    let printed = String::from_utf8(out).unwrap();
    assert!(printed.contains("resumed: 4 configuration resources found"), "{printed}");
    assert_eq!(second.files, first.files, "every file rebuilt from the stored configuration");
    let configs = |r: &plane::Report| -> Vec<[String; 6]> {
        r.resources.iter().filter(|row| row[1].starts_with("config/")).cloned().collect()
    };
    assert_eq!(configs(&second), configs(&first), "configuration as it was, versions included");
}
