//! [`StateProbe`]: the lower level. A controller's actor wired to a probe in
//! place of the state actor; the test sends change messages straight into its
//! mailbox and reads back the exact requests it made.

use std::fmt;
use std::sync::Arc;

use actix::prelude::*;

use super::panics;
use super::record::{Fault, Faults, Log, Recorded};
use crate::Error;
use crate::controller::host::HostEnv;
use crate::controller::metrics::{ControllerMetrics, Counters, QueueCounters};
use crate::controller::plain::plain_host;
use crate::controller::pool::WorkerPool;
use crate::controller::queue_host::queue_host;
use crate::controller::{AccessRules, Controller, QueueController};
use crate::resource::{AnyResource, Timestamp};
use crate::state::apply::apply;
use crate::state::request::{StateReply, StateRequest};
use crate::state::store::Store;
use crate::state::{Event, State, WatchEvent, WatchId};
use crate::supervisor::{
    Backoff, DependencyDb, HostReport, RegistrationError, RestartPolicy, check_queue_settings,
    describe,
};

/// The probe actor: answers from a plain in-memory [`Store`](crate::dev::Store), records every
/// request, and never delivers watch events (the test does).
struct ProbeActor {
    store: Store,
    log: Log,
    faults: Faults,
    reports: Log,
    next_watch: u64,
}

impl ProbeActor {
    fn serve(&mut self, req: StateRequest) -> Result<StateReply, Error> {
        // The same rules as the state actor; changes are not published (the
        // test delivers whatever change messages it wants).
        match apply(&mut self.store, req, Timestamp::now()) {
            Ok((reply, _change)) => reply,
            Err(StateRequest::Watch { .. }) => {
                self.next_watch += 1;
                Ok(StateReply::Watching(WatchId(self.next_watch)))
            }
            Err(StateRequest::ListAllNamespaces { resource_type, query }) => {
                let revision = Some(self.store.revision());
                let resources = self.store.list_all_namespaces(&resource_type, &query)?;
                Ok(StateReply::ListedAllNamespaces { resources, revision })
            }
            Err(StateRequest::WatchStats { id }) => Err(Error::InvalidInput {
                resource: id.to_string(),
                reason: "a probe delivers no watch events".into(),
            }),
            Err(_) => Ok(StateReply::Done),
        }
    }
}

impl Actor for ProbeActor {
    type Context = Context<Self>;
}

impl Handler<StateRequest> for ProbeActor {
    type Result = Result<StateReply, Error>;

    fn handle(&mut self, req: StateRequest, _: &mut Context<Self>) -> Self::Result {
        let record = Recorded::of(&req);
        let reply = match self.faults.fire(&req) {
            Some(error) => Err(error),
            None => self.serve(req),
        };
        self.log.push(record.answered(&reply));
        reply
    }
}

impl Handler<HostReport> for ProbeActor {
    type Result = ();

    fn handle(&mut self, report: HostReport, _: &mut Context<Self>) {
        let (operation, subject) = match &report {
            HostReport::GaveUp { controller, .. } => ("gave_up", controller.clone()),
            HostReport::InputsChanged { controller, .. } => ("inputs_changed", controller.clone()),
        };
        self.reports.push(Recorded {
            operation,
            subject,
            owner: None,
            finalizer: None,
            resource: None,
            error: None,
        });
    }
}

/// Stands in for the state actor, so a test can run one controller's actor
/// alone, send change messages straight into its mailbox, and assert the exact
/// requests it sends back.
///
/// Requests are answered from a plain in-memory store (the same rules as the
/// real state), and recorded. Watch requests are recorded and acknowledged
/// but deliver nothing: the test delivers events with [`HostProbe::deliver`].
///
/// ```
/// use cosi_runtime::prelude::*;
/// use cosi_runtime::testing::StateProbe;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct Int(i64);
/// # impl Spec for Int { const TYPE: &'static str = "Ints.test.cosi.dev"; }
/// # struct Counter;
/// # impl Controller for Counter {
/// #     fn name(&self) -> &str { "Counter" }
/// #     fn inputs(&self) -> Vec<Input> { vec![Input::weak::<Int>("default")] }
/// #     fn outputs(&self) -> Vec<Output> { vec![] }
/// #     async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
/// #         cx.list(&Kind::of::<Int>("default"), &LabelQuery::all()).await?;
/// #         Ok(())
/// #     }
/// # }
///
/// # actix::System::new().block_on(async {
/// let probe = StateProbe::start();
/// let host = probe.host(|| Counter).await.unwrap();
/// probe.settled().await;
/// assert_eq!(probe.request_log(), ["watch default/Ints.test.cosi.dev", "list default/Ints.test.cosi.dev"]);
///
/// probe.take_requests();
/// host.deliver(Event::Created(Resource::new("default", "a", Int(1)).into())).await;
/// probe.settled().await;
/// assert_eq!(probe.request_log(), ["list default/Ints.test.cosi.dev"]);
/// # });
/// ```
pub struct StateProbe {
    addr: Addr<ProbeActor>,
    state: State,
    log: Log,
    faults: Faults,
    reports: Log,
    panic_mark: usize,
}

impl fmt::Debug for StateProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateProbe").finish_non_exhaustive()
    }
}

impl StateProbe {
    /// Starts a probe on the current arbiter (inside an actix `System`).
    pub fn start() -> StateProbe {
        panics::capture();
        let (log, faults, reports) = (Log::default(), Faults::default(), Log::default());
        let addr = ProbeActor {
            store: Store::new(),
            log: log.clone(),
            faults: faults.clone(),
            reports: reports.clone(),
            next_watch: 0,
        }
        .start();
        StateProbe {
            state: State::from_recipient(addr.clone().recipient()),
            addr,
            log,
            faults,
            reports,
            panic_mark: panics::mark(),
        }
    }

    /// A state handle talking to the probe (its requests are recorded too).
    pub fn state(&self) -> State {
        self.state.clone()
    }

    /// Puts a resource in the probe's store as a user would, then forgets the request.
    pub async fn seed(&self, resource: impl Into<AnyResource>) -> AnyResource {
        let r = self
            .state
            .create(resource, None)
            .await
            .unwrap_or_else(|e| panic!("probe: seed failed: {e}"));
        self.log.take();
        r
    }

    /// Every request recorded so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.all()
    }

    /// The requests as `"operation subject"` lines, for exact assertions.
    pub fn request_log(&self) -> Vec<String> {
        self.log.all().iter().map(ToString::to_string).collect()
    }

    /// The requests so far, clearing the record.
    pub fn take_requests(&self) -> Vec<Recorded> {
        self.log.take()
    }

    /// Reports the controller's actor sent its supervisor (`gave_up`, `inputs_changed`).
    pub fn reports(&self) -> Vec<Recorded> {
        self.reports.all()
    }

    /// Makes a request fail (see [`Fault`]).
    pub fn inject(&self, fault: Fault) {
        self.faults.push(fault);
    }

    /// Resolves when the controller has nothing pending (no reconcile running
    /// or queued, no retry waiting), then fails the test if anything panicked.
    pub async fn settled(&self) {
        let settled = std::pin::pin!(self.state.activity().settled());
        let panicked = std::pin::pin!(panics::after(self.panic_mark));
        futures::future::select(settled, panicked).await;
        let panics = panics::since(self.panic_mark);
        assert!(panics.is_empty(), "probe: the system panicked: {panics:#?}");
    }

    fn env(&self, backoff: Backoff) -> HostEnv {
        HostEnv {
            state: self.state.clone(),
            supervisor: self.addr.clone().recipient(),
            policy: RestartPolicy { backoff, ..RestartPolicy::default() },
            // The probe asserts the exact requests: no Events among them.
            events: None,
        }
    }

    /// Starts the controller built by `factory` against this probe.
    ///
    /// # Errors
    /// The registration error if its declarations are invalid.
    pub async fn host<C, F>(&self, factory: F) -> Result<HostProbe, RegistrationError>
    where
        C: Controller,
        F: Fn() -> C + Send + 'static,
    {
        let (instance, (name, inputs, outputs)) =
            describe(&factory, |c: &C| (c.name().to_owned(), c.inputs(), c.outputs()))?;
        DependencyDb::default().register(&name, &inputs, &outputs, false)?;
        let counters = Arc::new(Counters::default());
        let env = self.env(Backoff::default());
        let busy = env.state.activity().guard();
        let rules = AccessRules::new(Arc::from(name.as_str()), inputs, &outputs);
        let addr = plain_host(instance, factory, rules, env, counters.clone(), busy).start();
        Ok(HostProbe { name, mailbox: addr.recipient(), counters, queue: None })
    }

    /// Starts the queue controller built by `factory` against this probe.
    ///
    /// # Errors
    /// The registration error if its settings are invalid.
    pub async fn queue_host<Q, F>(&self, factory: F) -> Result<HostProbe, RegistrationError>
    where
        Q: QueueController,
        F: Fn() -> Q + Send + 'static,
    {
        let (instance, (name, settings)) =
            describe(&factory, |q: &Q| (q.name().to_owned(), q.settings()))?;
        check_queue_settings(&name, &settings)?;
        DependencyDb::default().register(&name, &settings.inputs, &settings.outputs, true)?;
        let counters = Arc::new(Counters::default());
        let queue = Arc::new(QueueCounters::default());
        let env = self.env(Backoff::default());
        let busy = env.state.activity().guard();
        let rules = AccessRules::new(Arc::from(name.as_str()), settings.inputs, &settings.outputs);
        let addr = queue_host(
            instance,
            Box::new(factory),
            rules,
            settings.concurrency,
            env,
            WorkerPool::new(settings.concurrency),
            counters.clone(),
            queue.clone(),
            busy,
        )
        .start();
        Ok(HostProbe { name, mailbox: addr.recipient(), counters, queue: Some(queue) })
    }
}

/// A controller's actor running against a [`StateProbe`].
pub struct HostProbe {
    name: String,
    mailbox: Recipient<WatchEvent>,
    counters: Arc<Counters>,
    queue: Option<Arc<QueueCounters>>,
}

impl fmt::Debug for HostProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostProbe").field("name", &self.name).finish()
    }
}

impl HostProbe {
    /// Sends a change message straight into the controller's mailbox; returns
    /// once it was handled (a reconcile it triggers may still be running).
    pub async fn deliver(&self, event: Event) {
        self.mailbox
            .send(WatchEvent::detached(WatchId(0), event))
            .await
            .unwrap_or_else(|_| panic!("probe: controller {} is not running", self.name));
    }

    /// The controller's counters.
    pub fn metrics(&self) -> ControllerMetrics {
        self.counters.snapshot(&self.name, self.queue.as_deref())
    }
}
