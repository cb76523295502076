//! The README's quickstart, as rustfmt lays it out: a first controller, run to
//! completion (`cargo run --example first_controller`).
use cosi_runtime::{controller::from_fn, prelude::*};

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
#[spec(type = "Hostnames.os.cosi.dev")]
struct Hostname(String);
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
#[spec(type = "Motds.os.cosi.dev")]
struct Motd(String);

#[actix::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::start(); // the state actor, the supervisor, the finalizer coordinator
    let (reads, writes) = (Input::weak::<Hostname>("os"), Output::exclusive::<Motd>()); // declarations
    runtime
        .register(move || {
            from_fn("MotdController", vec![reads.clone()], vec![writes.clone()], async |cx| {
                let host = cx.get(&Pointer::typed::<Hostname>("os", "hostname")).await?;
                let welcome = move |m: &mut Resource<Motd>| {
                    m.spec_mut().0 = format!("Welcome to {}!", host.spec().0)
                };
                cx.modify(&Pointer::typed::<Motd>("os", "motd"), welcome).await?;
                Ok(())
            })
        })
        .await?;
    let user = runtime.state().client(); // writes as the user: no owner
    user.create(Resource::new("os", "hostname", Hostname("node-1".into()))).await?;
    runtime.settled_within(std::time::Duration::from_secs(5)).await?; // or says what is busy
    println!("{}", user.get(&Pointer::typed::<Motd>("os", "motd")).await?.spec().0); // Welcome to node-1!
    Ok(())
}
