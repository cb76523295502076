//! Prints the dependency graph of a small system as Graphviz DOT.
//!
//! ```text
//! cargo run --example graph | dot -Tsvg > graph.svg
//! cargo run --example graph -- --mermaid
//! ```

use cosi_runtime::prelude::*;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "LinkConfigs.net.cosi.dev")]
struct LinkConfig;
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "LinkSpecs.net.cosi.dev")]
struct LinkSpec;
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "AddressConfigs.net.cosi.dev")]
struct AddressConfig;
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "AddressSpecs.net.cosi.dev")]
struct AddressSpec;
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "LinkStatuses.net.cosi.dev")]
struct LinkStatus;

/// A controller that only declares its inputs and outputs.
struct Node {
    name: &'static str,
    inputs: fn() -> Vec<Input>,
    outputs: fn() -> Vec<Output>,
}

impl Controller for Node {
    fn name(&self) -> &str {
        self.name
    }
    fn inputs(&self) -> Vec<Input> {
        (self.inputs)()
    }
    fn outputs(&self) -> Vec<Output> {
        (self.outputs)()
    }
    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        Ok(())
    }
}

#[actix::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::start();
    runtime
        .register(|| Node {
            name: "LinkConfigController",
            inputs: || {
                vec![
                    Input::strong::<LinkConfig>("config"),
                    Input::destroy_ready::<LinkSpec>("network"),
                ]
            },
            outputs: || vec![Output::exclusive::<LinkSpec>()],
        })
        .await?;
    runtime
        .register(|| Node {
            name: "AddressConfigController",
            inputs: || {
                vec![Input::strong::<AddressConfig>("config"), Input::weak::<LinkSpec>("network")]
            },
            outputs: || vec![Output::shared::<AddressSpec>()],
        })
        .await?;
    runtime
        .register(|| Node {
            name: "LinkStatusController",
            inputs: || {
                vec![Input::weak::<LinkSpec>("network"), Input::weak::<AddressSpec>("network")]
            },
            outputs: || vec![Output::exclusive::<LinkStatus>()],
        })
        .await?;
    let graph = runtime.graph().await;
    if std::env::args().any(|a| a == "--mermaid") {
        print!("{}", graph.to_mermaid());
    } else {
        print!("{}", graph.to_dot());
    }
    Ok(())
}
