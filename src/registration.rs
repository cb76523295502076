//! [`Runtime::register`](crate::Runtime::register)'s one entry point: a factory of a
//! [`Controller`] or of a [`QueueController`], registered as it is, with
//! options chained before the `.await`.
//!
//! ```
//! use cosi_runtime::Runtime;
//! use cosi_runtime::execution::Placement;
//! # use cosi_runtime::controller::{Controller, Input, Output, ReconcileContext, ReconcileResult};
//! # struct Hasher;
//! # impl Controller for Hasher {
//! #     fn name(&self) -> &str { "Hasher" }
//! #     fn inputs(&self) -> Vec<Input> { vec![] }
//! #     fn outputs(&self) -> Vec<Output> { vec![] }
//! #     async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult { Ok(()) }
//! # }
//!
//! # actix::System::new().block_on(async {
//! let runtime = Runtime::builder().arbiters(2).start();
//! // A controller that computes a lot: on a thread of its own.
//! runtime.register(|| Hasher).on(Placement::Spread).await?;
//! runtime.settled().await;
//! # Ok::<(), cosi_runtime::supervisor::RegistrationError>(())
//! # }).unwrap();
//! ```

use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;

use crate::controller::{Controller, QueueController, QueueHandle};
use crate::execution::Placement;
use crate::shard::Sharding;
use crate::supervisor::{
    ControllerRegistration, QueueRegistration, Register, Registered, Registration,
    RegistrationError, Supervisor,
};

/// What [`Runtime::register`](crate::Runtime::register) takes: a factory (`|| MyController::new(..)`,
/// called again for a fresh instance after a panic) of a [`Controller`] or
/// of a [`QueueController`]. `M` is [`Plain`] or [`Queue`], inferred from
/// what the factory builds. Sealed: implemented for those factories only.
pub trait Factory<M>: sealed::Sealed<M> + Send + 'static {
    /// What a registration returns: `()` for a controller, a
    /// [`QueueHandle`] (to push keys from other event sources) for a queue
    /// controller.
    type Handle;

    /// The type-erased registration the supervisor takes.
    #[doc(hidden)]
    fn registration(self) -> sealed::Boxed;

    /// The handle of what the supervisor registered.
    #[doc(hidden)]
    fn handle(registered: sealed::Made) -> Result<Self::Handle, RegistrationError>;
}

/// [`Factory`]'s marker for a [`Controller`].
#[derive(Debug)]
pub enum Plain {}

/// [`Factory`]'s marker for a [`QueueController`].
#[derive(Debug)]
pub enum Queue {}

mod sealed {
    use super::{Registered, Registration};

    /// Only this crate implements [`Factory`](super::Factory).
    pub trait Sealed<M> {}

    /// A type-erased registration, as the supervisor takes it.
    #[allow(missing_debug_implementations)]
    pub struct Boxed(pub(crate) Box<dyn Registration>);

    /// What the supervisor made of a registration.
    #[allow(missing_debug_implementations)]
    pub struct Made(pub(crate) Registered);
}

impl<C, F> sealed::Sealed<Plain> for F
where
    C: Controller,
    F: Fn() -> C + Send + 'static,
{
}

impl<C, F> Factory<Plain> for F
where
    C: Controller,
    F: Fn() -> C + Send + 'static,
{
    type Handle = ();

    fn registration(self) -> sealed::Boxed {
        sealed::Boxed(Box::new(ControllerRegistration::new(self)))
    }

    fn handle(_: sealed::Made) -> Result<(), RegistrationError> {
        Ok(())
    }
}

impl<Q, F> sealed::Sealed<Queue> for F
where
    Q: QueueController,
    F: Fn() -> Q + Send + 'static,
{
}

impl<Q, F> Factory<Queue> for F
where
    Q: QueueController,
    F: Fn() -> Q + Send + 'static,
{
    type Handle = QueueHandle;

    fn registration(self) -> sealed::Boxed {
        sealed::Boxed(Box::new(QueueRegistration::new(self)))
    }

    fn handle(sealed::Made(registered): sealed::Made) -> Result<QueueHandle, RegistrationError> {
        match registered {
            Registered::Queue(handle) => Ok(handle),
            Registered::Controller => Err(RegistrationError::Invalid {
                controller: "<unknown>".into(),
                reason: "registered as a plain controller".into(),
            }),
        }
    }
}

/// A registration on its way: chain options, then `.await` it (see
/// [`Runtime::register`](crate::Runtime::register)).
#[must_use = "a registration does nothing until it is awaited"]
pub struct Registering<'r, M, F> {
    supervisor: &'r actix::Addr<Supervisor>,
    factory: F,
    placement: Placement,
    sharding: Option<Sharding>,
    _kind: PhantomData<fn() -> M>,
}

impl<M, F> std::fmt::Debug for Registering<'_, M, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registering").field("placement", &self.placement).finish_non_exhaustive()
    }
}

impl<'r, M, F: Factory<M>> Registering<'r, M, F> {
    pub(crate) fn new(
        supervisor: &'r actix::Addr<Supervisor>,
        factory: F,
        placement: Placement,
    ) -> Self {
        Registering { supervisor, factory, placement, sharding: None, _kind: PhantomData }
    }

    /// Runs the controller on the arbiter `placement` picks (see
    /// [`execution`](crate::execution)), instead of the runtime's default
    /// placement: the factory is sent there, and the controller is built and
    /// runs there. A queue controller's reconciles all run on that arbiter
    /// (wrap it in [`Blocking`](crate::execution::Blocking) to spread them
    /// over the blocking pool instead).
    pub fn on(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }
}

impl<F: Factory<Queue>> Registering<'_, Queue, F> {
    /// Registers the queue controller **sharded**: every process that shares
    /// this runtime's etcd store and registers it reconciles only the keys of
    /// the virtual shards it owns (see [`shard`](crate::shard)).
    ///
    /// # Expected flow
    /// The process joins the controller's members (a key on its lease);
    /// every member computes the same [`Ring`](crate::shard::Ring) of the
    /// live members and acquires the shards it should own. Changes to keys
    /// of other shards never reach the queue; when a shard is acquired,
    /// every primary resource of it is queued; when the ring moves a shard
    /// away, its reconciles stop starting, those running finish, and only
    /// then is the shard given up.
    ///
    /// **Each process holds only its share.** This process's state neither
    /// decodes, caches nor delivers the other members' keys of the
    /// controller's primary kinds (those it does not also map): its etcd
    /// feed filters them out at the source, loads a shard's keys when the
    /// shard is acquired and forgets them when it is given up. Reads of
    /// those kinds in this process see only its shards; a write to an
    /// existing key of another member's shard is refused (a new key goes to
    /// the store, for the member that holds its shard).
    /// [`Sharding::keep_every_key`] keeps them all instead.
    ///
    /// # Guarantees
    /// - A key is never reconciled by two processes at once: a shard moves
    ///   only once its owner drained and released it, or its lease expired.
    /// - Every write of a reconcile of a key carries the fencing token of its
    ///   shard (the shard key's create revision): etcd refuses it, in the
    ///   write's own transaction, once this process no longer holds that key
    ///   ([`StorageFailure::Fenced`](crate::StorageFailure::Fenced)).
    /// - A dead process's shards are owned again within about 1.25 × the
    ///   lease TTL ([`EtcdConfig::lease_ttl`](crate::state::EtcdConfig::lease_ttl)).
    /// - A process paused past its lease (`SIGSTOP`, a long GC, a frozen VM)
    ///   loses its shards to the others; the writes its reconciles make when
    ///   it wakes are refused.
    ///
    /// # Caveats
    /// - Only on an etcd state; on any other state (or with
    ///   `RuntimeBuilder::claims`) the controller owns every shard and
    ///   runs unsharded (logged once).
    /// - Exclusive outputs of a sharded controller are not claimed across
    ///   processes (each process writes its own share): the shard fences
    ///   take the claim's place.
    /// - Mapped inputs are filtered by the shard of the primary keys they
    ///   map to; [`QueueHandle::enqueue`](crate::controller::QueueHandle::enqueue)
    ///   of a key of another process's shard is dropped.
    /// - Holding only a share, another controller of this process that reads
    ///   the sharded kinds sees only this process's shards of them: keep
    ///   every key ([`Sharding::keep_every_key`]) for such a process.
    /// - A shard's keys reach this process's state shortly after the shard
    ///   is acquired (one etcd range read); they are queued as they arrive.
    ///
    /// # Errors
    /// As [`Runtime::register`](crate::Runtime::register). A write from this
    /// process to an existing key of a sharded kind in another member's
    /// shard: [`Error::InvalidInput`](crate::Error::InvalidInput) naming the
    /// shard.
    pub fn sharded(mut self, sharding: Sharding) -> Self {
        self.sharding = Some(sharding);
        self
    }
}

impl<'r, M: 'r, F: Factory<M>> IntoFuture for Registering<'r, M, F> {
    type Output = Result<F::Handle, RegistrationError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + 'r>>;

    fn into_future(self) -> Self::IntoFuture {
        let Registering { supervisor, factory, placement, sharding, .. } = self;
        let sealed::Boxed(mut registration) = factory.registration();
        if let Some(sharding) = sharding {
            registration.shard(sharding);
        }
        Box::pin(async move {
            let registered =
                supervisor.send(Register(registration, placement)).await.unwrap_or_else(|_| {
                    Err(RegistrationError::Stopped { controller: "<unknown>".into() })
                })?;
            F::handle(sealed::Made(registered))
        })
    }
}
