//! A Kubernetes operator on cosi-runtime, in the easykube style: one CRD
//! (`Greeting`), a queue controller, its status written back.
//!
//! ```sh
//! # against the cluster of your kubeconfig ($KUBECONFIG or ~/.kube/config), until Ctrl-C:
//! cargo run --example greeting_operator --features kubernetes
//! # without a cluster: an apiserver of its own (this crate's Kubernetes API), in process:
//! cargo run --example greeting_operator --features kubernetes,kubernetes-api -- --demo
//! # two (or more) replicas: one answers, the others stand by on a Lease in the namespace:
//! cargo run --example greeting_operator --features kubernetes -- --leases
//! # the CRD its types make (what crd.yaml holds), to install on a cluster:
//! cargo run --example greeting_operator --features kubernetes,kubernetes-api -- --crd
//! ```
//!
//! Against a real cluster, install the CRD first (`kubectl apply -f
//! examples/greeting_operator/crd.yaml`), then `kubectl apply` a greeting:
//!
//! ```yaml
//! apiVersion: example.cosi.dev/v1
//! kind: Greeting
//! metadata: {name: world, namespace: default}
//! spec: {name: world}
//! ```
//!
//! and `kubectl get greeting world -o yaml` shows `status.reply: Hello, world!`.

mod operator;

use std::process::ExitCode;

use cosi_runtime::Runtime;
use cosi_runtime::cluster::{LeaseClaims, LeaseSettings};

#[actix::main]
async fn main() -> ExitCode {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let namespace = args
        .iter()
        .position(|a| a == "--namespace")
        .and_then(|i| args.get(i + 1))
        .map_or("default", String::as_str)
        .to_owned();
    let result = if args.iter().any(|a| a == "--demo") {
        demo(&namespace).await
    } else if args.iter().any(|a| a == "--crd") {
        print_crd()
    } else {
        follow(&namespace, args.iter().any(|a| a == "--leases")).await
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("greeting_operator: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Runs against the cluster of the kubeconfig until Ctrl-C; with `leases`,
/// as one replica of several, on a Lease in `namespace`.
async fn follow(namespace: &str, leases: bool) -> Result<(), Box<dyn std::error::Error>> {
    let client = kube::Client::try_default().await.map_err(|e| {
        format!(
            "no cluster to talk to ({e}); set KUBECONFIG or ~/.kube/config, \
             or run with --demo for an apiserver of its own"
        )
    })?;
    let (runtime, fence) = if leases {
        let claims = LeaseClaims::start(client.clone(), LeaseSettings::new(namespace))?;
        println!("replica {} on Leases in {namespace}", claims.identity());
        let runtime = Runtime::builder().claims(claims.service()).start();
        (runtime, Some(claims.fence(operator::CONTROLLER)))
    } else {
        (Runtime::start(), None)
    };
    let (_source, greetings) = operator::start_fenced(&runtime, client, namespace, fence).await?;
    println!("waiting for the first list of greetings in {namespace} (is the CRD installed?)");
    greetings.synced().await?;
    println!("following greetings in {namespace}; Ctrl-C stops");
    tokio::signal::ctrl_c().await?;
    // Releases the Lease: another replica takes over at once.
    runtime.stop().await;
    Ok(())
}

/// Prints the CustomResourceDefinition the types make (what `crd.yaml`
/// holds): `kubectl apply -f` it on a cluster before the operator runs.
#[cfg(feature = "kubernetes-api")]
fn print_crd() -> Result<(), Box<dyn std::error::Error>> {
    println!("{}", serde_json::to_string_pretty(&operator::exposed().crd()?)?);
    Ok(())
}

#[cfg(not(feature = "kubernetes-api"))]
fn print_crd() -> Result<(), Box<dyn std::error::Error>> {
    Err("--crd needs the Kubernetes API's schemas: build with --features kubernetes,kubernetes-api"
        .into())
}

#[cfg(not(feature = "kubernetes-api"))]
async fn demo(_: &str) -> Result<(), Box<dyn std::error::Error>> {
    Err("--demo serves the Kubernetes API itself: build with --features kubernetes,kubernetes-api"
        .into())
}

/// An apiserver of its own (the Kubernetes API over a state that plays the
/// cluster), two greetings created through it, their replies printed.
#[cfg(feature = "kubernetes-api")]
async fn demo(namespace: &str) -> Result<(), Box<dyn std::error::Error>> {
    use std::time::Duration;

    use cosi_runtime::State;
    use cosi_runtime::kubernetes::KubernetesApi;
    use kube::api::{Api, DynamicObject, PostParams};
    use kube::runtime::wait::await_condition;
    use serde_json::json;

    let cluster = State::start();
    let api = KubernetesApi::new(&cluster).expose(operator::exposed().namespaces([namespace]))?;
    let server = api.serve("127.0.0.1:0".parse()?).await?;
    println!("apiserver (cosi-runtime's Kubernetes API) on {}", server.url());

    let client = kube::Client::try_from(kube::Config::new(server.url().parse()?))?;
    let runtime = Runtime::start();
    let (_source, mirror) = operator::start(&runtime, client.clone(), namespace).await?;
    mirror.synced().await?;

    // A user creates two greetings (kubectl apply would send the same).
    let greetings: Api<DynamicObject> =
        Api::namespaced_with(client, namespace, &operator::greetings());
    for (name, spec) in [
        ("world", json!({"name": "world"})),
        ("team", json!({"name": "team", "salutation": "Good morning"})),
    ] {
        let object = DynamicObject::new(name, &operator::greetings()).data(json!({"spec": spec}));
        greetings.create(&PostParams::default(), &object).await?;
        let answered =
            |o: Option<&DynamicObject>| o.is_some_and(|o| o.data["status"]["reply"].is_string());
        let done = await_condition(greetings.clone(), name, answered);
        let done = tokio::time::timeout(Duration::from_secs(30), done)
            .await
            .map_err(|_| format!("greeting/{name} has no status.reply after 30 s"))??;
        let reply = done.as_ref().map(|o| o.data["status"]["reply"].clone());
        println!("greeting/{name}: status.reply = {}", reply.unwrap_or_default());
    }
    runtime.settled_within(Duration::from_secs(30)).await?;
    server.stop().await;
    Ok(())
}
