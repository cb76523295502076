//! The README's "Testing a controller" example, compiled and run.

use cosi_runtime::prelude::*;
use cosi_runtime::testing::{Fault, Harness};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Hostnames.net.cosi.dev")]
struct Hostname(String);

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Motds.os.cosi.dev")]
struct Motd(String);

/// The README's controller.
struct MotdController;

impl Controller for MotdController {
    fn name(&self) -> &str {
        "MotdController"
    }
    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<Hostname>("network")]
    }
    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<Motd>()]
    }
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        for host in cx.list_typed::<Hostname>("network", &LabelQuery::all()).await? {
            let text = format!("Welcome to {}!", host.spec().0);
            let motd = Pointer::typed::<Motd>("os", "motd");
            cx.modify(&motd, move |m| m.spec_mut().0 = text.clone()).await?;
        }
        Ok(())
    }
}

// --- README example starts here ---
#[actix::test]
async fn motd_follows_the_hostname_and_survives_a_failed_write() {
    tokio::time::pause(); // backoffs run in virtual time
    let h = Harness::new(|| MotdController).await;
    let motd = Pointer::typed::<Motd>("os", "motd");
    h.inject(Fault::on("modify").at(&motd)); // the first write fails

    h.create(Resource::new("network", "hostname", Hostname("node-1".into()))).await.unwrap();
    h.settle().await; // no sleeps: returns when nothing is in flight

    assert_eq!(h.get(&motd).await.unwrap().spec().0, "Welcome to node-1!");
    let failed_then_ok =
        ["modify os/Motds.os.cosi.dev/motd (failed)", "modify os/Motds.os.cosi.dev/motd"];
    assert_eq!(h.write_log(), failed_then_ok);
    assert_eq!(h.metrics().await.errors, 1);
}
// --- README example ends here ---
