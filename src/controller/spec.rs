//! The [`Controller`] trait and what its reconcile returns.
//!
//! What it declares ([`Input`], [`Output`]) is in
//! [`declarations`](super::declarations), below the
//! [`ReconcileContext`] its reconcile is given.

use super::{Input, Output, ReconcileContext};

/// What a reconcile returns on failure: any error. It is logged, counted, and
/// the reconcile is retried with backoff.
pub type ReconcileError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// The result of one reconcile.
pub type ReconcileResult = Result<(), ReconcileError>;

/// A controller: reads its inputs, writes its outputs, one reconcile at a time.
///
/// See the [module documentation](super) for the lifecycle. Register it with
/// [`Runtime::register`](crate::Runtime::register), which takes a *factory* so
/// that a restart after a panic can build a fresh instance.
///
/// ```
/// use cosi_runtime::controller::{Controller, Input, Output, ReconcileContext, ReconcileResult};
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Hostname(String);
/// # impl Spec for Hostname { const TYPE: &'static str = "Hostnames.net.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Motd(String);
/// # impl Spec for Motd { const TYPE: &'static str = "Motds.os.cosi.dev"; }
///
/// /// Writes the message of the day from the hostname.
/// struct MotdController;
///
/// impl Controller for MotdController {
///     fn name(&self) -> &str {
///         "MotdController"
///     }
///     fn inputs(&self) -> Vec<Input> {
///         vec![Input::weak::<Hostname>("network")]
///     }
///     fn outputs(&self) -> Vec<Output> {
///         vec![Output::exclusive::<Motd>()]
///     }
///     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
///         let host = cx.get_typed::<Hostname>(&Pointer::typed::<Hostname>("network", "hostname")).await?;
///         let text = format!("Welcome to {}", host.spec().0);
///         cx.modify(&Pointer::typed::<Motd>("os", "motd"), move |m: &mut Resource<Motd>| m.spec_mut().0 = text.clone())
///             .await?;
///         Ok(())
///     }
/// }
/// ```
// Reconcile futures run on the controller's own actor and are never sent
// across threads, so they need not be `Send`.
#[allow(async_fn_in_trait)]
pub trait Controller: 'static {
    /// The controller's name: unique in a runtime, the owner of what it writes,
    /// and the finalizer it puts on its strong inputs.
    fn name(&self) -> &str;

    /// The inputs it starts with (it may change them with
    /// [`ReconcileContext::update_inputs`]).
    fn inputs(&self) -> Vec<Input>;

    /// The outputs, fixed at registration.
    fn outputs(&self) -> Vec<Output>;

    /// Brings the outputs in line with the inputs. Runs at registration, after
    /// every restart, after input changes, and when requeued.
    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult;
}
