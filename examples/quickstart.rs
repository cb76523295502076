//! Quickstart: create, update, watch, tear down and destroy resources, and a
//! controller made from a closure.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use cosi_runtime::controller::from_fn;
use cosi_runtime::prelude::*;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// The spec of a network link: the payload the runtime never looks inside.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Links.net.cosi.dev")]
struct LinkSpec {
    mtu: u32,
    up: bool,
}

/// How many links are up: written by a controller made from a closure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "LinksUp.net.cosi.dev")]
struct LinksUp(usize);

fn describe(event: &Event) -> String {
    let link = |r: &AnyResource| match r.typed::<LinkSpec>() {
        Ok(l) => format!(
            "{} v{} mtu={} up={} phase={} finalizers={:?}",
            r.id(),
            r.version(),
            l.spec().mtu,
            l.spec().up,
            r.phase(),
            r.metadata().finalizers()
        ),
        Err(_) => format!("{} (gone)", r.id()),
    };
    match event {
        Event::Created(r) => format!("created    {}", link(r)),
        Event::Updated { old, new } => {
            format!("updated    {}  (was v{})", link(new), old.version())
        }
        Event::Destroyed(r) => format!("destroyed  {}", r.id()),
        Event::Bootstrapped(kind) => format!("bootstrapped: all existing {kind} delivered"),
    }
}

#[actix::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::start();
    let user = runtime.state().client(); // writes as the user: no owner on every call
    let links = Kind::of::<LinkSpec>("network");

    // A watcher, printing every change it is told about.
    let mut events = user.watch_kind(&links, LabelQuery::all(), true).await?;
    let printer = actix::spawn(async move {
        while let Some(event) = events.next().await {
            println!("  watch: {}", describe(&event));
        }
    });

    // A controller from a closure: counts the links that are up.
    runtime
        .register(|| {
            from_fn(
                "UpCounter",
                vec![Input::weak::<LinkSpec>("network")],
                vec![Output::exclusive::<LinksUp>()],
                async |cx| {
                    let links = cx.list_typed::<LinkSpec>("network", &LabelQuery::all()).await?;
                    let up = links.iter().filter(|l| l.spec().up).count();
                    let count = Pointer::typed::<LinksUp>("network", "count");
                    cx.modify(&count, move |c| c.spec_mut().0 = up).await?;
                    Ok(())
                },
            )
        })
        .await?;

    println!("create eth0 and eth1");
    user.create(Resource::new("network", "eth0", LinkSpec { mtu: 1500, up: false })).await?;
    user.create(Resource::new("network", "eth1", LinkSpec { mtu: 1500, up: true })).await?;

    println!("bring eth0 up with modify (atomic read-modify-write)");
    let eth0 = Pointer::typed::<LinkSpec>("network", "eth0");
    user.modify(&eth0, |l| l.spec_mut().up = true).await?;

    println!("modify again with the same value: nothing is written, no event");
    let same = user.modify(&eth0, |l| l.spec_mut().up = true).await?;
    println!("  eth0 is still at version {}", same.version());

    runtime.settled().await;
    let up = user.get(&Pointer::typed::<LinksUp>("network", "count")).await?;
    println!("the UpCounter controller says {} links are up", up.spec().0);

    println!("update eth1 with a stale version: refused");
    let mut stale = user.get(&Pointer::typed::<LinkSpec>("network", "eth1")).await?;
    stale.metadata_mut().set_version(Version::new(7));
    match user.update(stale).await {
        Err(e) => println!("  {e}"),
        Ok(_) => unreachable!("a stale version never updates"),
    }

    println!("a dependent holds eth0 with a finalizer; teardown_and_destroy waits for it");
    user.add_finalizer(&eth0, "address-controller").await?;
    let waiting = {
        let (user, eth0) = (user.clone(), eth0.clone());
        actix::spawn(async move { user.teardown_and_destroy(&eth0).await })
    };
    // Let the teardown land (the watcher shows it), then release the finalizer.
    let mut probe = user.watch(&eth0).await?;
    while let Some(event) = probe.next().await {
        if event.resource().is_some_and(|r| r.phase() == Phase::TearingDown) {
            break;
        }
    }
    println!("the dependent releases eth0");
    user.remove_finalizer(&eth0, "address-controller").await?;
    waiting.await.expect("the teardown task ran")?;
    println!("eth0 destroyed: get says {}", user.get(&eth0).await.unwrap_err());

    runtime.settled().await;
    println!("final contents:");
    for link in user.list_typed::<LinkSpec>("network", &LabelQuery::all()).await? {
        println!("  {} v{} {:?}", link.id(), link.version(), link.spec());
    }
    let up = user.get(&Pointer::typed::<LinksUp>("network", "count")).await?;
    println!("  links up: {}", up.spec().0);
    runtime.stop().await;
    printer.abort();
    Ok(())
}
