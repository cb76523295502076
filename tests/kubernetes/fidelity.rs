//! Answers as the apiserver gives them: health endpoints, label selectors
//! with Kubernetes' negations, `generateName`, names the apiserver refuses,
//! `dryRun=All`, and 422s that name the kind and each field's full path;
//! then kubectl's `diff`, `--dry-run=server`, `create` with `generateName`
//! and `get -l` against them.

use cosi_runtime::kubernetes::{Expose, KubernetesApi};
use cosi_runtime::prelude::*;
use cosi_runtime::resource::Spec;
use serde_json::{Value, json};

use crate::http;
use crate::kubectl::{Kubectl, kubectl_available};
use crate::write::{
    LINKS, LinkConfig, api, get, link, patch, post, ptr, send, send_accepting, serve,
};

fn named(name: &str, mtu: Value) -> Value {
    json!({
        "apiVersion": "net.cosi.dev/v1alpha1",
        "kind": "LinkConfig",
        "metadata": {"name": name, "namespace": "config"},
        "spec": {"mtu": mtu},
    })
}

async fn stored_mtu(state: &State, id: &str) -> Option<u32> {
    match state.get(&ptr(id)).await {
        Ok(r) => Some(r.typed::<LinkConfig>().unwrap().spec().mtu),
        Err(e) if e.is_not_found() => None,
        Err(e) => panic!("{e}"),
    }
}

fn names(list: &Value) -> Vec<&str> {
    let mut names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    names
}

#[actix::test]
async fn health_endpoints_answer_ok_and_list_their_checks_when_verbose() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    for path in ["/healthz", "/livez", "/readyz", "/livez/ping", "/readyz/state"] {
        let answer = http::get(addr, path).await;
        assert_eq!((answer.status, answer.body.as_str()), (200, "ok"), "{path}");
    }
    let verbose = http::get(addr, "/readyz?verbose").await;
    assert_eq!(verbose.status, 200);
    assert_eq!(verbose.body, "[+]ping ok\n[+]state ok\n[+]shutdown ok\nreadyz check passed\n",);
    let excluded = http::get(addr, "/livez?verbose&exclude=state").await;
    assert!(excluded.body.contains("[+]state excluded: ok"), "{}", excluded.body);
    assert_eq!(http::get(addr, "/livez/nope").await.status, 404);
    server.stop().await;
}

#[actix::test]
async fn health_fails_with_the_check_named_once_the_state_is_closed() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    state.close().await.unwrap();
    let answer = http::get(addr, "/readyz?verbose").await;
    assert_eq!(answer.status, 500, "{}", answer.body);
    assert!(answer.body.contains("[-]state failed"), "{}", answer.body);
    assert!(answer.body.ends_with("readyz check failed\n"), "{}", answer.body);
    assert_eq!(http::get(addr, "/livez/state").await.status, 500);
    assert_eq!(http::get(addr, "/livez/ping").await.status, 200);
    server.stop().await;
}

#[actix::test]
async fn negated_label_selectors_also_select_objects_without_the_label() {
    let state = State::start();
    for (id, env) in [("eth0", Some("a")), ("eth1", Some("b")), ("eth2", None)] {
        let mut r = link(id, 1500);
        if let Some(env) = env {
            r.metadata_mut().labels_mut().insert("env", env);
        }
        state.create(r, None).await.unwrap();
    }
    let (server, addr) = serve(api(&state)).await;
    for (selector, expected) in [
        ("env!=a", vec!["eth1", "eth2"]),
        ("env%20notin%20(a,b)", vec!["eth2"]),
        ("env", vec!["eth0", "eth1"]),
        ("!env", vec!["eth2"]),
        ("env=a", vec!["eth0"]),
    ] {
        let list = get(addr, &format!("{LINKS}?labelSelector={selector}")).await;
        assert_eq!(list.status, 200, "{selector}: {:?}", list.body);
        assert_eq!(names(&list.body), expected, "{selector}");
    }
    server.stop().await;
}

#[actix::test]
async fn a_create_with_generate_name_gets_a_name_of_its_prefix_and_five_characters() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let mut body = named("", json!(1500));
    body["metadata"] = json!({"generateName": "uplink-", "namespace": "config"});
    let mut seen = Vec::new();
    for _ in 0..3 {
        let created = post(addr, LINKS, &body).await;
        assert_eq!(created.status, 201, "{:?}", created.body);
        let name = created.body["metadata"]["name"].as_str().unwrap().to_owned();
        assert!(name.starts_with("uplink-") && name.len() == "uplink-".len() + 5, "{name}");
        assert_eq!(stored_mtu(&state, &name).await, Some(1500));
        assert!(!seen.contains(&name), "{name} twice");
        seen.push(name);
    }
    let nameless = post(addr, LINKS, &json!({"metadata": {}, "spec": {"mtu": 1}})).await;
    assert_eq!(nameless.status, 422);
    assert_eq!(
        nameless.body["message"],
        "LinkConfig.net.cosi.dev \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    server.stop().await;
}

#[actix::test]
async fn names_the_apiserver_refuses_are_422_quoting_its_rule_and_nothing_is_stored() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    for name in ["Eth8", "eth_8", "-eth8", "eth8.", &"a".repeat(254)] {
        let answer = post(addr, LINKS, &named(name, json!(1500))).await;
        assert_eq!((answer.status, answer.reason()), (422, "Invalid"), "{name}: {:?}", answer.body);
        let cause = &answer.body["details"]["causes"][0];
        assert_eq!(cause["field"], "metadata.name", "{name}");
        let message = answer.body["message"].as_str().unwrap();
        assert!(
            message.contains("RFC 1123 subdomain") || message.contains("no more than 253"),
            "{message}"
        );
        assert_eq!(stored_mtu(&state, name).await, None);
    }
    assert_eq!(post(addr, LINKS, &named("eth8.vlan-10", json!(1500))).await.status, 201);
    server.stop().await;
}

#[actix::test]
async fn dry_runs_answer_what_would_be_stored_and_store_nothing() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let before = state.get(&ptr("eth0")).await.unwrap().metadata().revision();

    let created = post(addr, &format!("{LINKS}?dryRun=All"), &named("eth1", json!(9000))).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["spec"]["mtu"], 9000);
    assert_eq!(stored_mtu(&state, "eth1").await, None, "a dry create stores nothing");
    let taken = post(addr, &format!("{LINKS}?dryRun=All"), &named("eth0", json!(9000))).await;
    assert_eq!((taken.status, taken.reason()), (409, "AlreadyExists"));

    let merge = "application/merge-patch+json";
    let item = format!("{LINKS}/eth0?dryRun=All");
    let patched = patch(addr, &item, merge, &json!({"spec": {"mtu": 9100}})).await;
    assert_eq!((patched.status, &patched.body["spec"]["mtu"]), (200, &json!(9100)));
    let replaced =
        send(addr, "PUT", &item, "application/json", &named("eth0", json!(9200)).to_string()).await;
    assert_eq!((replaced.status, &replaced.body["spec"]["mtu"]), (200, &json!(9200)));
    let invalid = patch(addr, &item, merge, &json!({"spec": {"mtu": "big"}})).await;
    assert_eq!(invalid.status, 422, "every check runs: {:?}", invalid.body);
    let deleted = send(addr, "DELETE", &item, "application/json", "").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);

    let after = state.get(&ptr("eth0")).await.unwrap();
    assert_eq!(after.metadata().revision(), before, "nothing written");
    assert_eq!(stored_mtu(&state, "eth0").await, Some(1500));
    let bogus = post(addr, &format!("{LINKS}?dryRun=Some"), &named("eth2", json!(1))).await;
    assert_eq!((bogus.status, bogus.reason()), (400, "BadRequest"));
    server.stop().await;
}

#[actix::test]
async fn a_spec_that_does_not_decode_is_one_cause_per_field_with_its_full_path() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let wrong = post(addr, LINKS, &named("eth9", json!("big"))).await;
    assert_eq!((wrong.status, wrong.reason()), (422, "Invalid"));
    assert_eq!(
        wrong.body["message"],
        "LinkConfig.net.cosi.dev \"eth9\" is invalid: spec.mtu: Invalid value: \"big\": invalid type: string \"big\", expected u32"
    );
    assert_eq!(wrong.body["details"]["kind"], "LinkConfig");
    let causes = wrong.body["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "one cause, the message not split at its comma: {causes:?}");
    assert_eq!(causes[0]["field"], "spec.mtu");

    let mut missing = named("eth9", json!(1));
    missing["spec"] = json!({"bond": "bond0"});
    let missing = post(addr, LINKS, &missing).await;
    assert_eq!(missing.status, 422);
    let cause = &missing.body["details"]["causes"][0];
    assert_eq!(
        (&cause["field"], &cause["message"], &cause["reason"]),
        (&json!("spec.mtu"), &json!("Required value"), &json!("FieldValueRequired"))
    );
    assert_eq!(stored_mtu(&state, "eth9").await, None);
    server.stop().await;
}

#[actix::test]
async fn generation_moves_on_spec_changes_only_whoever_writes() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    assert_eq!(post(addr, LINKS, &named("eth0", json!(1500))).await.status, 201);
    let generation = || async {
        get(addr, &format!("{LINKS}/eth0")).await.body["metadata"]["generation"].clone()
    };
    // A controller's finalizer and label writes, through the state.
    state.add_finalizer(&ptr("eth0"), "LinkController").await.unwrap();
    state
        .modify(
            &ptr("eth0"),
            |r: &mut Resource<LinkConfig>| {
                r.metadata_mut().labels_mut().insert("seen", "yes");
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(generation().await, json!(1), "metadata writes leave it");
    state
        .modify(&ptr("eth0"), |r: &mut Resource<LinkConfig>| r.spec_mut().mtu = 9000, None)
        .await
        .unwrap();
    assert_eq!(generation().await, json!(2), "a spec write moves it");
    server.stop().await;
}

#[actix::test]
async fn a_write_to_a_type_not_served_is_404_whatever_the_path_and_405_to_a_served_one() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    let unknown = post(addr, "/apis/nope.cosi.dev/v1/things", &json!({})).await;
    assert_eq!((unknown.status, unknown.reason()), (404, "NotFound"), "{:?}", unknown.body);
    let served = post(addr, "/apis/net.cosi.dev/v1alpha1/linkconfigs", &json!({})).await;
    assert_eq!((served.status, served.reason()), (405, "MethodNotAllowed"));
    server.stop().await;
}

#[actix::test]
async fn a_collection_delete_deletes_what_its_selector_selects_and_answers_them() {
    let state = State::start();
    for (id, tier) in [("eth0", "edge"), ("eth1", "edge"), ("eth2", "core")] {
        let mut r = link(id, 1500);
        r.metadata_mut().labels_mut().insert("tier", tier);
        state.create(r, None).await.unwrap();
    }
    let (server, addr) = serve(api(&state)).await;
    let dry = send(
        addr,
        "DELETE",
        &format!("{LINKS}?labelSelector=tier=edge&dryRun=All"),
        "application/json",
        "",
    )
    .await;
    assert_eq!((dry.status, names(&dry.body)), (200, vec!["eth0", "eth1"]));
    assert_eq!(stored_mtu(&state, "eth0").await, Some(1500), "a dry run deletes nothing");
    let deleted =
        send(addr, "DELETE", &format!("{LINKS}?labelSelector=tier=edge"), "application/json", "")
            .await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(deleted.body["kind"], "LinkConfigList");
    assert_eq!(names(&deleted.body), vec!["eth0", "eth1"]);
    assert_eq!((stored_mtu(&state, "eth0").await, stored_mtu(&state, "eth1").await), (None, None));
    assert_eq!(stored_mtu(&state, "eth2").await, Some(1500), "not selected");
    server.stop().await;
}

#[actix::test]
async fn a_collection_delete_that_meets_a_controllers_object_is_403_and_deletes_nothing() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    state.create(link("eth1", 1500), Some("LinkController")).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let refused = send(addr, "DELETE", LINKS, "application/json", "").await;
    assert_eq!((refused.status, refused.reason()), (403, "Forbidden"), "{:?}", refused.body);
    assert!(refused.body["message"].as_str().unwrap().contains("LinkController"));
    assert_eq!(stored_mtu(&state, "eth0").await, Some(1500));
    assert_eq!(stored_mtu(&state, "eth1").await, Some(1500));
    server.stop().await;
}

#[actix::test]
async fn discovery_names_the_categories_a_type_joins() {
    let state = State::start();
    let api = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1alpha1").categories(["all", "net"]))
        .unwrap();
    let (server, addr) = serve(api).await;
    let resources = get(addr, "/apis/net.cosi.dev/v1alpha1").await;
    assert_eq!(resources.body["resources"][0]["categories"], json!(["all", "net"]));
    server.stop().await;
    let bad = KubernetesApi::new(&state)
        .expose(Expose::of::<LinkConfig>("v1").categories(["Not A Label"]));
    assert!(bad.is_err());
}

#[actix::test]
async fn a_list_with_a_limit_comes_in_pages_of_one_snapshot() {
    let state = State::start();
    for i in 0..25 {
        state.create(link(&format!("eth{i:02}"), 1500), None).await.unwrap();
    }
    let (server, addr) = serve(api(&state)).await;
    let first = get(addr, &format!("{LINKS}?limit=10")).await;
    assert_eq!(first.status, 200, "{:?}", first.body);
    let meta = &first.body["metadata"];
    assert_eq!((names(&first.body).len(), &meta["remainingItemCount"]), (10, &json!(15)));
    let revision = meta["resourceVersion"].clone();
    // Written between the pages: not in this list.
    state.create(link("eth99", 1500), None).await.unwrap();
    state.destroy(&ptr("eth24"), None).await.unwrap();
    let mut seen: Vec<String> = names(&first.body).iter().map(|n| n.to_string()).collect();
    let mut token = meta["continue"].as_str().unwrap().to_owned();
    loop {
        let page = get(addr, &format!("{LINKS}?limit=10&continue={token}")).await;
        assert_eq!(page.status, 200, "{:?}", page.body);
        assert_eq!(page.body["metadata"]["resourceVersion"], revision, "one snapshot");
        seen.extend(names(&page.body).iter().map(|n| n.to_string()));
        match page.body["metadata"]["continue"].as_str() {
            Some(next) => token = next.to_owned(),
            None => break,
        }
    }
    let expected: Vec<String> = (0..25).map(|i| format!("eth{i:02}")).collect();
    assert_eq!(seen, expected, "every object of the snapshot once, in order");
    let again = get(addr, &format!("{LINKS}?limit=10&continue={token}")).await;
    assert_eq!((again.status, again.reason()), (410, "Expired"), "a finished list's token");
    let other = get(addr, &format!("{LINKS}?limit=10")).await;
    let token = other.body["metadata"]["continue"].as_str().unwrap();
    let mismatch = get(addr, &format!("{LINKS}?limit=10&labelSelector=x&continue={token}")).await;
    assert_eq!(mismatch.status, 400, "{:?}", mismatch.body);
    assert_eq!(get(addr, &format!("{LINKS}?continue=garbage")).await.status, 400);
    assert_eq!(names(&get(addr, LINKS).await.body).len(), 25, "no limit, no pages");
    server.stop().await;
}

/// Creates `name` through the API, owned by each of `owners` (names of
/// links in `config`); its uid.
async fn owned(addr: std::net::SocketAddr, name: &str, owners: &[&str]) -> String {
    let mut references = Vec::new();
    for owner in owners {
        let uid = get(addr, &format!("{LINKS}/{owner}")).await.body["metadata"]["uid"].clone();
        references.push(json!({
            "apiVersion": "net.cosi.dev/v1alpha1", "kind": "LinkConfig", "name": owner, "uid": uid,
        }));
    }
    let mut body = named(name, json!(1500));
    body["metadata"]["ownerReferences"] = Value::Array(references);
    let created = post(addr, LINKS, &body).await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    created.body["metadata"]["uid"].as_str().unwrap().to_owned()
}

/// Waits (bounded: 10 s) until every one of `ids` is destroyed.
async fn gone(state: &State, ids: &[&str]) {
    use futures::StreamExt;
    let kind = Kind::of::<LinkConfig>("config");
    let mut watch =
        state.watch_kind_stream(&kind, LabelQuery::all(), &Default::default()).await.unwrap();
    let mut left: Vec<String> = Vec::new();
    for id in ids {
        if stored_mtu(state, id).await.is_some() {
            left.push((*id).to_owned());
        }
    }
    let wait = async {
        while !left.is_empty() {
            if let Some(Event::Destroyed(r)) = watch.next().await {
                left.retain(|id| id.as_str() != r.id());
            }
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), wait)
        .await
        .expect("destroyed in time");
}

fn delete_options(policy: &str) -> String {
    json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy}).to_string()
}

#[actix::test]
async fn a_background_delete_collects_the_dependents_and_theirs() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    assert_eq!(post(addr, LINKS, &named("bond0", json!(9000))).await.status, 201);
    assert_eq!(post(addr, LINKS, &named("other", json!(9000))).await.status, 201);
    owned(addr, "eth0", &["bond0"]).await;
    owned(addr, "eth1", &["bond0", "other"]).await;
    owned(addr, "vlan10", &["eth0"]).await;
    owned(addr, "eth2", &["other"]).await;
    let deleted = send(addr, "DELETE", &format!("{LINKS}/bond0"), "application/json", "").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    gone(&state, &["bond0", "eth0", "eth1", "vlan10"]).await;
    assert_eq!(stored_mtu(&state, "other").await, Some(9000), "not a dependent");
    assert_eq!(stored_mtu(&state, "eth2").await, Some(1500), "another owner's");
    server.stop().await;
}

#[actix::test]
async fn a_foreground_delete_holds_the_owner_until_its_dependents_are_gone() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    assert_eq!(post(addr, LINKS, &named("bond0", json!(9000))).await.status, 201);
    owned(addr, "eth0", &["bond0"]).await;
    let item = format!("{LINKS}/bond0");
    let deleted =
        send(addr, "DELETE", &item, "application/json", &delete_options("Foreground")).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert!(deleted.body["metadata"]["deletionTimestamp"].is_string(), "{:?}", deleted.body);
    assert_eq!(deleted.body["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    gone(&state, &["eth0", "bond0"]).await;
    server.stop().await;
}

#[actix::test]
async fn an_orphan_delete_keeps_the_dependents_without_their_reference() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    assert_eq!(post(addr, LINKS, &named("bond0", json!(9000))).await.status, 201);
    assert_eq!(post(addr, LINKS, &named("other", json!(9000))).await.status, 201);
    owned(addr, "eth0", &["bond0", "other"]).await;
    let item = format!("{LINKS}/bond0");
    let deleted = send(addr, "DELETE", &item, "application/json", &delete_options("Orphan")).await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    gone(&state, &["bond0"]).await;
    let eth0 = get(addr, &format!("{LINKS}/eth0")).await;
    let owners: Vec<&str> = eth0.body["metadata"]["ownerReferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(owners, ["other"], "the deleted owner's reference is gone, the other's kept");
    let bogus = send(
        addr,
        "DELETE",
        &format!("{LINKS}/eth0"),
        "application/json",
        &delete_options("Later"),
    )
    .await;
    assert_eq!(bogus.status, 400);
    server.stop().await;
}

#[actix::test]
async fn a_write_answers_in_the_form_its_accept_asks_for() {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state)).await;
    let item = format!("{LINKS}/eth0");
    let merge = "application/merge-patch+json";
    let metadata = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
    let patch_mtu = |mtu: u32| json!({"spec": {"mtu": mtu}}).to_string();
    let partial = send_accepting(addr, "PATCH", &item, merge, metadata, &patch_mtu(9000)).await;
    assert_eq!(partial.status, 200, "{:?}", partial.body);
    assert_eq!(partial.body["kind"], "PartialObjectMetadata");
    assert_eq!(partial.body["metadata"]["name"], "eth0");
    assert!(partial.body.get("spec").is_none(), "{:?}", partial.body);
    let table = "application/json;as=Table;g=meta.k8s.io;v=v1";
    let row = send_accepting(addr, "PATCH", &item, merge, table, &patch_mtu(9100)).await;
    assert_eq!((row.status, &row.body["kind"]), (200, &json!("Table")), "{:?}", row.body);
    assert_eq!(row.body["rows"][0]["cells"][0], "eth0");
    let deleted = send_accepting(addr, "DELETE", &item, "application/json", metadata, "").await;
    assert_eq!(deleted.body["kind"], "PartialObjectMetadata", "{:?}", deleted.body);
    assert_eq!(stored_mtu(&state, "eth0").await, None);
    server.stop().await;
}

/// A controller that outputs links exclusively (and writes none here).
struct LinkController;

impl Controller for LinkController {
    fn name(&self) -> &str {
        "LinkController"
    }
    fn inputs(&self) -> Vec<Input> {
        Vec::new()
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<LinkConfig>()]
    }
    async fn reconcile(&mut self, _cx: &mut ReconcileContext) -> ReconcileResult {
        Ok(())
    }
}

#[actix::test]
async fn a_create_in_a_controllers_exclusive_output_is_refused_naming_it() {
    let runtime = Runtime::start();
    runtime.register(|| LinkController).await.unwrap();
    let (server, addr) = serve(api(&runtime.state()).controllers(&runtime)).await;
    let refused = post(addr, LINKS, &named("eth0", json!(1500))).await;
    assert_eq!((refused.status, refused.reason()), (403, "Forbidden"), "{:?}", refused.body);
    let message = refused.body["message"].as_str().unwrap();
    assert!(message.contains("\"LinkController\""), "{message}");
    let apply = "application/apply-patch+yaml";
    let applied =
        patch(addr, &format!("{LINKS}/eth1?fieldManager=me"), apply, &named("eth1", json!(1)))
            .await;
    assert_eq!(applied.status, 403, "an apply that would create: {:?}", applied.body);
    assert_eq!(stored_mtu(&runtime.state(), "eth0").await, None);
    server.stop().await;
    // Without the runtime, the API cannot know: the create is stored.
    let (server, addr) = serve(api(&runtime.state())).await;
    assert_eq!(post(addr, LINKS, &named("eth0", json!(1500))).await.status, 201);
    server.stop().await;
    runtime.stop().await;
}

/// A link, described for `kubectl explain`.
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    cosi_runtime::kubernetes::schemars::JsonSchema,
)]
#[schemars(crate = "cosi_runtime::kubernetes::schemars")]
struct Explained {
    /// The link's MTU, in bytes.
    mtu: u32,
    /// The bond it joins, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    bond: Option<String>,
}

impl Spec for Explained {
    const TYPE: &'static str = "LinkConfigs.net.cosi.dev";
}

fn explained_api(state: &State) -> KubernetesApi {
    KubernetesApi::new(state)
        .expose(Expose::with_schema::<Explained>("v1alpha1").namespaces(["config"]))
        .unwrap()
}

#[actix::test]
async fn a_derived_schema_is_served_and_makes_the_crd() {
    let state = State::start();
    let (server, addr) = serve(explained_api(&state)).await;
    let doc = get(addr, "/openapi/v3/apis/net.cosi.dev/v1alpha1").await;
    let schema = &doc.body["components"]["schemas"]["dev.cosi.net.v1alpha1.LinkConfig"];
    let spec = &schema["properties"]["spec"];
    assert_eq!(spec["properties"]["mtu"]["type"], "integer", "{spec}");
    assert_eq!(spec["properties"]["mtu"]["description"], "The link's MTU, in bytes.");
    assert_eq!(spec["required"], json!(["mtu"]));
    server.stop().await;
    let crd = Expose::with_schema::<Explained>("v1alpha1")
        .short_names(["lc"])
        .column("MTU", ".spec.mtu")
        .crd()
        .unwrap();
    assert_eq!(crd["metadata"]["name"], "linkconfigs.net.cosi.dev");
    assert_eq!(crd["spec"]["names"]["kind"], "LinkConfig");
    assert_eq!(crd["spec"]["names"]["shortNames"], json!(["lc"]));
    let version = &crd["spec"]["versions"][0];
    assert_eq!(version["name"], "v1alpha1");
    assert_eq!(version["schema"]["openAPIV3Schema"]["properties"]["spec"], *spec);
    assert_eq!(version["additionalPrinterColumns"][0]["jsonPath"], ".spec.mtu");
}

/// `kubectl explain TYPE.spec` lists the fields of a derived schema.
async fn kubectl_explains_a_derived_schema(minor: u32) {
    let state = State::start();
    let (server, addr) = serve(explained_api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    let (ok, out) = kubectl.run_joined(&["explain", "linkconfigs.spec"]).await;
    assert!(ok, "{out}");
    assert!(out.contains("mtu") && out.contains("<integer>"), "{out}");
    assert!(out.contains("The link's MTU, in bytes."), "{out}");
    assert!(out.contains("bond") && out.contains("<string>"), "{out}");
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_27_explains_a_derived_schema() {
    if kubectl_available(27) {
        kubectl_explains_a_derived_schema(27).await;
    }
}

#[actix::test]
async fn kubectl_1_33_explains_a_derived_schema() {
    if kubectl_available(33) {
        kubectl_explains_a_derived_schema(33).await;
    }
}

const APPLIED: &str = "apiVersion: net.cosi.dev/v1alpha1
kind: LinkConfig
metadata:
  name: eth0
  namespace: config
spec:
  mtu: MTU
";

/// `kubectl diff` shows a change and stores nothing, `apply
/// --dry-run=server` neither, `create` names by `generateName`, `get -l`
/// with a negation lists an object without the label.
async fn kubectl_dry_runs_generate_names_and_selects(minor: u32) {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    let before = state.get(&ptr("eth0")).await.unwrap().metadata().revision();

    let changed = kubectl.file("changed.yaml", &APPLIED.replace("MTU", "9000"));
    let (ok, out, err) = kubectl.run(&["diff", "-f", &changed]).await;
    // kubectl diff exits 1 when it found a difference.
    assert!(!ok && out.contains("-  mtu: 1500") && out.contains("+  mtu: 9000"), "{out}{err}");
    let (ok, out) = kubectl.run_joined(&["apply", "--dry-run=server", "-f", &changed]).await;
    assert!(ok && out.contains("(server dry run)"), "{out}");
    let same = kubectl.file("same.yaml", &APPLIED.replace("MTU", "1500"));
    let (_, out, err) = kubectl.run(&["diff", "-f", &same]).await;
    // (The last-applied annotation kubectl's patch adds may differ.)
    assert!(!out.contains("mtu") && !err.contains("error"), "no change of mtu: {out}{err}");
    assert_eq!(state.get(&ptr("eth0")).await.unwrap().metadata().revision(), before);

    let applied =
        kubectl.file("applied.yaml", &APPLIED.replace("eth0", "eth9").replace("MTU", "1400"));
    let (ok, out) = kubectl.run_joined(&["apply", "--server-side", "-f", &applied]).await;
    assert!(ok, "{out}");
    let args = ["get", "linkconfig", "eth9", "-n", "config", "-o", "yaml", "--show-managed-fields"];
    let (ok, out) = kubectl.run_joined(&args).await;
    assert!(ok && out.contains("managedFields:") && out.contains("manager: kubectl"), "{out}");
    assert!(out.contains("operation: Apply") && out.contains("f:mtu: {}"), "{out}");
    let generated = kubectl.file(
        "generated.yaml",
        &APPLIED.replace("  name: eth0", "  generateName: vlan-").replace("MTU", "1400"),
    );
    let (ok, out) = kubectl.run_joined(&["create", "-f", &generated]).await;
    assert!(ok && out.contains("linkconfig.net.cosi.dev/vlan-"), "{out}");
    let (ok, out) = kubectl
        .run_joined(&["get", "linkconfigs", "-n", "config", "-l", "env!=a", "-o", "name"])
        .await;
    assert!(ok && out.contains("/eth0") && out.contains("/vlan-"), "{out}");
    server.stop().await;
}

/// `kubectl get all` lists the types of category `all`; `kubectl delete
/// --all` deletes every object of a type.
async fn kubectl_gets_all_and_deletes_all(minor: u32) {
    let state = State::start();
    state.create(link("eth0", 1500), None).await.unwrap();
    state.create(link("eth1", 1500), None).await.unwrap();
    let api = KubernetesApi::new(&state)
        .server_version(1, minor)
        .expose(Expose::of::<LinkConfig>("v1alpha1").categories(["all"]).namespaces(["config"]))
        .unwrap();
    let (server, addr) = serve(api).await;
    let kubectl = Kubectl::new(addr);
    let (ok, out) = kubectl.run_joined(&["get", "ns"]).await;
    assert!(ok && out.contains("config") && out.contains("Active"), "{out}");
    let (ok, out) = kubectl.run_joined(&["get", "all", "-n", "config", "-o", "name"]).await;
    assert!(ok && out.contains("linkconfig.net.cosi.dev/eth0"), "{out}");
    let (ok, out) = kubectl
        .run_joined(&["get", "linkconfigs", "-n", "config", "--chunk-size=1", "-o", "name"])
        .await;
    assert!(ok && out.contains("/eth0") && out.contains("/eth1"), "pages of one: {out}");
    let (ok, out) = kubectl.run_joined(&["delete", "linkconfigs", "--all", "-n", "config"]).await;
    assert!(ok && out.contains("eth0") && out.contains("eth1"), "{out}");
    assert_eq!((stored_mtu(&state, "eth0").await, stored_mtu(&state, "eth1").await), (None, None));
    server.stop().await;
}

/// `kubectl delete --cascade=background|foreground|orphan`.
async fn kubectl_deletes_with_each_cascade(minor: u32) {
    let state = State::start();
    let (server, addr) = serve(api(&state).server_version(1, minor)).await;
    let kubectl = Kubectl::new(addr);
    for (cascade, keeps_child) in [("background", false), ("foreground", false), ("orphan", true)] {
        let parent = format!("bond-{cascade}");
        let child = format!("eth-{cascade}");
        assert_eq!(post(addr, LINKS, &named(&parent, json!(9000))).await.status, 201);
        owned(addr, &child, &[&parent]).await;
        let args =
            ["delete", "linkconfig", &parent, "-n", "config", &format!("--cascade={cascade}")];
        let (ok, out) = kubectl.run_joined(&args).await;
        assert!(ok && out.contains("deleted"), "{cascade}: {out}");
        gone(&state, &[&parent]).await;
        if keeps_child {
            assert_eq!(stored_mtu(&state, &child).await, Some(1500), "{cascade}");
        } else {
            gone(&state, &[&child]).await;
        }
    }
    server.stop().await;
}

#[actix::test]
async fn kubectl_1_27_deletes_with_each_cascade() {
    if kubectl_available(27) {
        kubectl_deletes_with_each_cascade(27).await;
    }
}

#[actix::test]
async fn kubectl_1_33_deletes_with_each_cascade() {
    if kubectl_available(33) {
        kubectl_deletes_with_each_cascade(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_gets_all_and_deletes_all() {
    if kubectl_available(27) {
        kubectl_gets_all_and_deletes_all(27).await;
    }
}

#[actix::test]
async fn kubectl_1_33_gets_all_and_deletes_all() {
    if kubectl_available(33) {
        kubectl_gets_all_and_deletes_all(33).await;
    }
}

#[actix::test]
async fn kubectl_1_27_dry_runs_generate_names_and_selects() {
    if kubectl_available(27) {
        kubectl_dry_runs_generate_names_and_selects(27).await;
    }
}

#[actix::test]
async fn kubectl_1_33_dry_runs_generate_names_and_selects() {
    if kubectl_available(33) {
        kubectl_dry_runs_generate_names_and_selects(33).await;
    }
}
