//! CustomResourceDefinitions through the API: a CRD applied with kubectl
//! or kube-rs registers its type at once (schema checked on writes, print
//! columns, subresources); deleting it removes the type and its objects.

use cosi_runtime::kubernetes::{Expose, KubernetesApi};
use cosi_runtime::prelude::*;
use cosi_runtime::resource::Spec;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use serde_json::json;

use crate::kubectl::{Kubectl, kubectl_available};
use crate::write::{get, post, send, serve};

const WIDGETS: &str = "/apis/demo.cosi.dev/v1/namespaces/config/widgets";

fn crd() -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.demo.cosi.dev"},
        "spec": {
            "group": "demo.cosi.dev",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "shortNames": ["wd"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"], "properties": {
                        "size": {"type": "integer", "minimum": 1, "description": "How big."},
                        "color": {"type": "string"},
                    }},
                    "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
                }}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}],
            }],
        },
    })
}

fn api(state: &State) -> KubernetesApi {
    KubernetesApi::new(state).namespaces(["config"])
}

#[actix::test]
async fn a_crd_registers_its_type_at_once_and_its_schema_checks_and_prunes_writes() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    assert_eq!(get(addr, WIDGETS).await.status, 404, "not served before the CRD");
    let created =
        post(addr, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd()).await;
    assert_eq!(created.status, 201, "{:?}", created.body);

    let widget =
        json!({"metadata": {"name": "w1"}, "spec": {"size": 3, "color": "red", "bogus": 1}});
    let stored = post(addr, WIDGETS, &widget).await;
    assert_eq!(stored.status, 201, "{:?}", stored.body);
    assert_eq!(stored.body["spec"], json!({"size": 3, "color": "red"}), "unknown fields pruned");
    let kept = state.get(&Kind::new("config", "Widgets.demo.cosi.dev").pointer("w1")).await;
    assert!(kept.is_ok(), "kept as Widgets.demo.cosi.dev, where a controller reads it");

    let small = json!({"metadata": {"name": "w2"}, "spec": {"size": 0}});
    let refused = post(addr, WIDGETS, &small).await;
    assert_eq!((refused.status, refused.reason()), (422, "Invalid"), "{:?}", refused.body);
    assert_eq!(refused.body["details"]["causes"][0]["field"], "spec.size");
    let missing = post(addr, WIDGETS, &json!({"metadata": {"name": "w3"}, "spec": {}})).await;
    assert_eq!(missing.body["details"]["causes"][0]["field"], "spec.size", "{:?}", missing.body);

    let status = crate::write::patch(
        addr,
        &format!("{WIDGETS}/w1/status"),
        "application/merge-patch+json",
        &json!({"status": {"ready": true}}),
    )
    .await;
    assert_eq!((status.status, status.body["status"]["ready"].as_bool()), (200, Some(true)));
    let resources = get(addr, "/apis/demo.cosi.dev/v1").await;
    let names: Vec<&str> = resources.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["widgets", "widgets/status"]);
    server.stop().await;
}

#[actix::test]
async fn deleting_a_crd_removes_its_type_and_its_objects() {
    let state = State::start();
    let (server, addr) = serve(api(&state)).await;
    post(addr, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", &crd()).await;
    let widget = json!({"metadata": {"name": "w1"}, "spec": {"size": 3}});
    assert_eq!(post(addr, WIDGETS, &widget).await.status, 201);
    let kind = Kind::new("config", "Widgets.demo.cosi.dev");
    let mut watch = state.watch_stream(&kind.pointer("w1")).await.unwrap();

    let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.demo.cosi.dev";
    let deleted = send(addr, "DELETE", path, "application/json", "").await;
    assert_eq!(deleted.status, 200, "{:?}", deleted.body);
    assert_eq!(get(addr, WIDGETS).await.status, 404, "no longer served");
    use futures::StreamExt;
    while let Some(event) = watch.next().await {
        if matches!(event, cosi_runtime::state::Event::Destroyed(_)) {
            break;
        }
    }
    assert!(state.list(&kind, &LabelQuery::all()).await.unwrap().is_empty());
    server.stop().await;
}

/// A type of the program's, whose generated CRD is applied by kube-rs.
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
struct Gadget {
    size: u32,
}

impl Spec for Gadget {
    const TYPE: &'static str = "Gadgets.demo.cosi.dev";
}

#[actix::test]
async fn kube_rs_applies_a_generated_crd_with_force_then_its_api_works() {
    let state = State::start();
    let (server, _) = serve(api(&state)).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let generated = Expose::with_schema::<Gadget>("v1").crd().unwrap();
    let definition: CustomResourceDefinition = serde_json::from_value(generated).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("gadget-operator").force();
    crds.patch("gadgets.demo.cosi.dev", &params, &Patch::Apply(&definition)).await.unwrap();

    let resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("demo.cosi.dev", "v1", "Gadget"),
        "gadgets",
    );
    let gadgets: Api<DynamicObject> = Api::namespaced_with(client, "config", &resource);
    let mut gadget = DynamicObject::new("g1", &resource);
    gadget.data = json!({"spec": {"size": 2}});
    gadgets.create(&PostParams::default(), &gadget).await.unwrap();
    let read = state.get(&Kind::new("config", Gadget::TYPE).pointer("g1")).await.unwrap();
    // Stored as `Expose::of::<Gadget>` stores it: the program reads it typed.
    assert_eq!(read.typed::<Gadget>().unwrap().spec(), &Gadget { size: 2 });
    let bad = gadgets
        .create(&PostParams::default(), &{
            let mut g = DynamicObject::new("g2", &resource);
            g.data = json!({"spec": {"size": "big"}});
            g
        })
        .await;
    assert!(matches!(bad, Err(kube::Error::Api(ref s)) if s.code == 422), "{bad:?}");
    server.stop().await;
}

#[actix::test]
async fn kubectl_applies_a_crd_then_its_objects_and_shows_the_print_columns() {
    for minor in [27, 33] {
        if !kubectl_available(minor) {
            continue;
        }
        let state = State::start();
        let (server, addr) = serve(api(&state).server_version(1, minor)).await;
        let kubectl = Kubectl::new(addr);
        let crd_file = kubectl.file("crd.json", &crd().to_string());
        let (ok, out, err) = kubectl.run(&["apply", "-f", &crd_file]).await;
        assert!(ok, "1.{minor}: {out}{err}");
        let widget = kubectl.file(
            "w.yaml",
            "apiVersion: demo.cosi.dev/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: config\nspec:\n  size: 7\n",
        );
        let (ok, out, err) = kubectl.run(&["apply", "-f", &widget]).await;
        assert!(ok && out.contains("widget.demo.cosi.dev/w1 created"), "1.{minor}: {out}{err}");
        let (ok, out, err) = kubectl.run(&["get", "wd", "-n", "config"]).await;
        assert!(ok && out.contains("SIZE") && out.contains('7'), "1.{minor}: {out}{err}");
        let broken = kubectl.file(
            "bad.yaml",
            "apiVersion: demo.cosi.dev/v1\nkind: Widget\nmetadata:\n  name: w2\n  namespace: config\nspec:\n  size: 0\n",
        );
        let (ok, _, err) = kubectl.run(&["apply", "-f", &broken]).await;
        assert!(!ok && err.contains("spec.size"), "1.{minor}: {err}");
        let (ok, out, err) = kubectl.run(&["explain", "widgets.spec"]).await;
        assert!(ok && out.contains("size") && out.contains("How big."), "1.{minor}: {out}{err}");
        let (ok, out, err) = kubectl.run(&["get", "crd"]).await;
        assert!(ok && out.contains("widgets.demo.cosi.dev"), "1.{minor}: {out}{err}");
        server.stop().await;
    }
}

/// A kube-rs custom resource, as an operator written with kube-rs derives it.
#[derive(
    kube::CustomResource,
    Clone,
    Debug,
    PartialEq,
    serde::Serialize,
    serde::Deserialize,
    cosi_runtime::kubernetes::schemars::JsonSchema,
)]
#[kube(group = "demo.cosi.dev", version = "v1", kind = "Doohickey", namespaced)]
#[kube(crates(schemars = "cosi_runtime::kubernetes::schemars"))]
#[schemars(crate = "cosi_runtime::kubernetes::schemars")]
struct DoohickeySpec {
    size: u32,
}

#[actix::test]
async fn kube_rs_custom_resource_ext_crd_registers_the_type_for_its_api() {
    use kube::CustomResourceExt;

    let state = State::start();
    let (server, _) = serve(api(&state)).await;
    let client = Client::try_from(Config::new(server.url().parse().unwrap())).unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply("doohickey-operator").force();
    crds.patch("doohickeys.demo.cosi.dev", &params, &Patch::Apply(Doohickey::crd())).await.unwrap();

    let doohickeys: Api<Doohickey> = Api::namespaced(client, "config");
    let created = doohickeys
        .create(&PostParams::default(), &Doohickey::new("d1", DoohickeySpec { size: 4 }))
        .await
        .unwrap();
    assert_eq!(created.spec, DoohickeySpec { size: 4 });
    assert_eq!(doohickeys.get("d1").await.unwrap().spec.size, 4);
    let stored = state.get(&Kind::new("config", "Doohickeys.demo.cosi.dev").pointer("d1")).await;
    assert_eq!(stored.unwrap().to_dynamic().unwrap().spec(), &json!({"size": 4}));
    server.stop().await;
}
