//! The test kit: test one controller the way you test a function.
//!
//! Two levels:
//!
//! - [`Harness`] runs one controller (or queue controller) against a real
//!   state actor and nothing else. Create, change, tear down and destroy its
//!   inputs as a user would, with the same calls as a
//!   [`Client`](crate::state::Client) (the [`Access`](crate::state::Access)
//!   surface), [`settle`](Harness::settle), then look at its
//!   outputs, finalizers, the log of the writes it made, and its reconcile
//!   count. [`Fault`]s make chosen state calls fail, to exercise error paths.
//! - [`StateProbe`] runs the controller's actor against a probe instead of
//!   the state actor: the test sends change messages straight into its
//!   mailbox ([`HostProbe::deliver`]) and asserts the exact requests it sends
//!   back ([`StateProbe::request_log`]).
//!
//! Both work under tokio's paused clock (`tokio::time::pause()`): backoffs and
//! requeues run in virtual time, and [`Harness::wait_for`] is driven by watch
//! events, never by polling or sleeping. **A panic anywhere in the system fails
//! the test** (plain `#[actix::test]` passes when an actor panics: actix#494),
//! unless the harness was built with [`HarnessBuilder::allow_panics`].
//!
//! ```
//! use cosi_runtime::prelude::*;
//! use cosi_runtime::testing::{Fault, Harness};
//! # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
//! # struct Hostname(String);
//! # impl Spec for Hostname { const TYPE: &'static str = "Hostnames.net.cosi.dev"; }
//! # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
//! # struct Motd(String);
//! # impl Spec for Motd { const TYPE: &'static str = "Motds.os.cosi.dev"; }
//! # struct MotdController;
//! # impl Controller for MotdController {
//! #     fn name(&self) -> &str { "MotdController" }
//! #     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Hostname>("network")] }
//! #     fn outputs(&self) -> Vec<Output> { vec![Output::exclusive::<Motd>()] }
//! #     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
//! #         for h in cx.list_typed::<Hostname>("network", &LabelQuery::all()).await? {
//! #             let text = format!("Welcome to {}!", h.spec().0);
//! #             cx.modify(&Pointer::typed::<Motd>("os", "motd"), move |m| m.spec_mut().0 = text.clone()).await?;
//! #         }
//! #         Ok(())
//! #     }
//! # }
//!
//! # actix::System::new().block_on(async {
//! tokio::time::pause();
//! let h = Harness::new(|| MotdController).await;
//! let motd = Pointer::typed::<Motd>("os", "motd");
//! h.inject(Fault::on("modify").at(&motd)); // the first write fails: retried with backoff
//! h.create(Resource::new("network", "hostname", Hostname("node-1".into()))).await?;
//! h.settle().await;
//! assert_eq!(h.get(&motd).await?.spec().0, "Welcome to node-1!");
//! assert_eq!(h.write_log(), ["modify os/Motds.os.cosi.dev/motd (failed)", "modify os/Motds.os.cosi.dev/motd"]);
//! # Ok::<(), cosi_runtime::Error>(())
//! # }).unwrap();
//! ```
//!
//! The controller is the one of the [`controller`](crate::controller) module's
//! complete program; in a test file the same lines go in an `#[actix::test]
//! async fn` (`tests/testing/readme.rs` is that test, with
//! `assert_eq!(h.metrics().await.errors, 1)` too).
//!
//! # Time, and a controller that never succeeds
//! Time is tokio's paused clock: [`h.advance(d)`](Harness::advance) moves it
//! past a `requeue_after` or a backoff and settles. A controller that never
//! succeeds does not hang the test: [`h.settle()`](Harness::settle) gives up
//! after the harness timeout (10 s of virtual time) naming the controller,
//! its attempt count and its last error, and one that failed for good (a
//! terminal error, an undeclared access) fails it at once, naming its last
//! error. Outside tests,
//! [`Runtime::health`](crate::Runtime::health) says the same about every
//! controller (for a queue controller, a key that keeps failing stays in its
//! failure count and last error while other keys succeed), and
//! [`Runtime::settled_within`](crate::Runtime::settled_within) is `settled()`
//! with that diagnosis.
//!
//! Tests stay deterministic on one arbiter, the default here;
//! [`HarnessBuilder::own_arbiter`] runs the controller under test on an
//! arbiter of its own (see [`execution`](crate::execution)), where a panic, or
//! one in a blocking reconcile on the pool, fails the test as one on the
//! test's thread does.
//!
//! # Beyond one controller
//! - [`conformance`]: the state contract as a test suite, for your own
//!   [`Backend`](crate::state::Backend): one line in a test file,
//!   `cosi_runtime::state_conformance!(mine, BackendTarget::new(|| MyBackend::new()));`.
//! - `LimitedDisk` (feature `redb`): a disk that fails with ENOSPC past a
//!   size, to test a full disk.
//! - `etcd::TestEtcd` (feature `etcd`): an etcd of its own on free loopback
//!   ports for a test; without an `etcd` binary the test says so and skips
//!   (`CI=1` makes that a failure).

pub mod conformance;
#[cfg(feature = "redb")]
mod disk;
#[cfg(feature = "etcd")]
pub mod etcd;
mod harness;
pub(crate) mod panics;
mod probe;
mod record;
mod scratch;

#[cfg(feature = "redb")]
pub use disk::LimitedDisk;
pub use harness::{Harness, HarnessBuilder};
pub use probe::{HostProbe, StateProbe};
pub use record::{Fault, Recorded};
