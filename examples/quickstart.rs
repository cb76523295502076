//! Quickstart: create, update, watch, tear down and destroy resources.
//!
//! ```text
//! cargo run --release --example quickstart
//! ```

use cosi_runtime::prelude::*;
use cosi_runtime::state::WatchOptions;
use futures::StreamExt;
use serde::{Deserialize, Serialize};

/// The spec of a network link: the payload the runtime never looks inside.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Links.net.cosi.dev")]
struct LinkSpec {
    mtu: u32,
    up: bool,
}

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
async fn main() -> Result<(), Error> {
    let state = State::start();
    let links = Kind::of::<LinkSpec>("network");

    // A watcher, printing every change it is told about.
    let mut events =
        state.watch_kind_stream(&links, LabelQuery::all(), &WatchOptions::bootstrap()).await?;
    let printer = actix::spawn(async move {
        while let Some(event) = events.next().await {
            println!("  watch: {}", describe(&event));
        }
    });

    println!("create eth0 and eth1");
    state.create(Resource::new("network", "eth0", LinkSpec { mtu: 1500, up: false }), None).await?;
    state.create(Resource::new("network", "eth1", LinkSpec { mtu: 1500, up: true }), None).await?;

    println!("bring eth0 up with modify (atomic read-modify-write)");
    let eth0 = Pointer::of::<LinkSpec>("network", "eth0");
    state.modify(&eth0, |l: &mut Resource<LinkSpec>| l.spec_mut().up = true, None).await?;

    println!("modify again with the same value: nothing is written, no event");
    let same =
        state.modify(&eth0, |l: &mut Resource<LinkSpec>| l.spec_mut().up = true, None).await?;
    println!("  eth0 is still at version {}", same.version());

    println!("update eth1 with a stale version: refused");
    let mut stale =
        state.get_typed::<LinkSpec>(&Pointer::of::<LinkSpec>("network", "eth1")).await?;
    stale.metadata_mut().set_version(Version::new(7));
    match state.update(stale, None).await {
        Err(e) => println!("  {e}"),
        Ok(_) => unreachable!("a stale version never updates"),
    }

    println!("a dependent holds eth0 with a finalizer; teardown_and_destroy waits for it");
    state.add_finalizer(&eth0, "address-controller").await?;
    let waiting = {
        let state = state.clone();
        let eth0 = eth0.clone();
        actix::spawn(async move { state.teardown_and_destroy(&eth0, None).await })
    };
    // Let the teardown land (the watcher shows it), then release the finalizer.
    let mut probe = state.watch_stream(&eth0).await?;
    while let Some(event) = probe.next().await {
        if event.resource().is_some_and(|r| r.phase() == Phase::TearingDown) {
            break;
        }
    }
    println!("the dependent releases eth0");
    state.remove_finalizer(&eth0, "address-controller").await?;
    waiting.await.expect("the teardown task ran")?;
    println!("eth0 destroyed: get says {}", state.get(&eth0).await.unwrap_err());

    println!("final contents:");
    for link in state.list_typed::<LinkSpec>("network", &LabelQuery::all()).await? {
        println!("  {} v{} {:?}", link.id(), link.version(), link.spec());
    }
    drop(state);
    printer.abort();
    Ok(())
}
