//! [`from_fn`]: a controller from a name, its declarations and an async closure.

use std::fmt;

use super::{Controller, Input, Output, ReconcileContext, ReconcileResult};

/// A [`Controller`] made of a name, inputs, outputs and an async closure
/// (see [`from_fn`]).
pub struct FnController<F> {
    name: String,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    reconcile: F,
}

impl<F> fmt::Debug for FnController<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnController")
            .field("name", &self.name)
            .field("inputs", &self.inputs)
            .field("outputs", &self.outputs)
            .finish_non_exhaustive()
    }
}

/// A controller without a type of its own: `reconcile` runs as its
/// reconcile, with everything a [`Controller`] gets (supervision, access
/// checks, coalescing). Register it through a factory like any other, so a
/// restart after a panic builds a fresh closure.
///
/// ```
/// use cosi_runtime::controller::from_fn;
/// use cosi_runtime::prelude::*;
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// #[spec(type = "Hostnames.net.cosi.dev")]
/// struct Hostname(String);
///
/// #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize, Spec)]
/// #[spec(type = "Motds.os.cosi.dev")]
/// struct Motd(String);
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::start();
/// runtime
///     .register(|| {
///         from_fn(
///             "MotdController",
///             vec![Input::weak::<Hostname>("os")],
///             vec![Output::exclusive::<Motd>()],
///             async |cx| {
///                 let host = cx.get(&Pointer::typed::<Hostname>("os", "hostname")).await?;
///                 let text = format!("Welcome to {}", host.spec().0);
///                 let motd = Pointer::typed::<Motd>("os", "motd");
///                 cx.modify(&motd, move |m| m.spec_mut().0 = text.clone()).await?;
///                 Ok(())
///             },
///         )
///     })
///     .await?;
/// let user = runtime.state().client();
/// user.create(Resource::new("os", "hostname", Hostname("node-1".into()))).await?;
/// runtime.settled().await;
/// let motd = user.get(&Pointer::typed::<Motd>("os", "motd")).await?;
/// assert_eq!(motd.spec().0, "Welcome to node-1");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
pub fn from_fn<F>(
    name: impl Into<String>,
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    reconcile: F,
) -> FnController<F>
where
    F: AsyncFnMut(&mut ReconcileContext) -> ReconcileResult + 'static,
{
    FnController { name: name.into(), inputs, outputs, reconcile }
}

impl<F> Controller for FnController<F>
where
    F: AsyncFnMut(&mut ReconcileContext) -> ReconcileResult + 'static,
{
    fn name(&self) -> &str {
        &self.name
    }

    fn inputs(&self) -> Vec<Input> {
        self.inputs.clone()
    }

    fn outputs(&self) -> Vec<Output> {
        self.outputs.clone()
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        (self.reconcile)(cx).await
    }
}
