//! [`Transform`]: one input type → one output type (or many outputs per
//! input), per object.

use std::collections::HashSet;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;

use cosi_runtime::controller::{
    Outcome, QueueController, QueueSettings, ReconcileError, TerminalError,
};
use cosi_runtime::prelude::*;
use cosi_runtime::state::ExpectedPhase;

/// The label a [`Transform`] puts on each output: the id of the input it was
/// made from (outputs are also owned by the transform, so two transforms
/// writing one shared type never mix theirs up).
pub const INPUT_LABEL: &str = "transform.cosi.dev/input";

/// What a mapping makes of one input: an output id and spec, or nothing
/// (no output for this input; an earlier one is removed). A
/// [`TerminalError`] is not retried; any other error is, with backoff.
pub type Mapped<O> = Result<Option<(String, O)>, ReconcileError>;

/// What a [many-outputs](Transform::many) mapping makes of one input: every
/// output it implies, as (id, spec) pairs (empty: none; an output made
/// earlier and no longer listed is removed). Errors as for [`Mapped`].
pub type MappedMany<O> = Result<Vec<(String, O)>, ReconcileError>;

type MapFuture<'a, O> = Pin<Box<dyn Future<Output = MappedMany<O>> + 'a>>;

/// What a mapping returns, made a list of outputs: the single form is the
/// many form with zero or one output.
trait IntoOutputs<O> {
    fn into_outputs(self) -> Vec<(String, O)>;
}

impl<O> IntoOutputs<O> for Option<(String, O)> {
    fn into_outputs(self) -> Vec<(String, O)> {
        self.into_iter().collect()
    }
}

impl<O> IntoOutputs<O> for Vec<(String, O)> {
    fn into_outputs(self) -> Vec<(String, O)> {
        self
    }
}

/// A mapping, sync or async, one output or many, behind one call.
trait MapFn<I: Spec, O: Spec> {
    fn call<'a>(&'a self, cx: &'a ReconcileContext, input: &'a Resource<I>) -> MapFuture<'a, O>;
}

struct SyncMap<F, R>(F, PhantomData<fn() -> R>);

impl<I, O, R, F> MapFn<I, O> for SyncMap<F, R>
where
    I: Spec,
    O: Spec,
    R: IntoOutputs<O>,
    F: Fn(&Resource<I>) -> Result<R, ReconcileError>,
{
    fn call<'a>(&'a self, _: &'a ReconcileContext, input: &'a Resource<I>) -> MapFuture<'a, O> {
        Box::pin(std::future::ready((self.0)(input).map(IntoOutputs::into_outputs)))
    }
}

struct AsyncMap<F, R>(F, PhantomData<fn() -> R>);

impl<I, O, R, F> MapFn<I, O> for AsyncMap<F, R>
where
    I: Spec,
    O: Spec,
    R: IntoOutputs<O>,
    F: AsyncFn(&ReconcileContext, &Resource<I>) -> Result<R, ReconcileError>,
{
    fn call<'a>(&'a self, cx: &'a ReconcileContext, input: &'a Resource<I>) -> MapFuture<'a, O> {
        Box::pin(async move { (self.0)(cx, input).await.map(IntoOutputs::into_outputs) })
    }
}

/// A generic controller that turns each resource of input type `I` into (at
/// most) one resource of output type `O`, through a mapping you give it; or,
/// made with [`many`](Transform::many), into any number of them.
///
/// It is a queue controller: each input is reconciled on its own, so one
/// input whose mapping fails backs off alone while the others go on.
///
/// ```
/// use cosi_actors::Transform;
/// use cosi_runtime::prelude::*;
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct LinkConfig { mtu: u32 }
/// # impl Spec for LinkConfig { const TYPE: &'static str = "LinkConfigs.net.cosi.dev"; }
/// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
/// # struct LinkFile { content: String }
/// # impl Spec for LinkFile { const TYPE: &'static str = "LinkFiles.net.cosi.dev"; }
///
/// # actix::System::new().block_on(async {
/// let runtime = Runtime::start();
/// runtime
///     .register(|| {
///         Transform::new("LinkFiles", "config", "files", |link: &Resource<LinkConfig>| {
///             let content = format!("mtu={}\n", link.spec().mtu);
///             Ok(Some((format!("link-{}", link.id()), LinkFile { content })))
///         })
///         .with_input_finalizers()
///     })
///     .await?;
/// let state = runtime.state().client();
/// state.create(Resource::new("config", "eth0", LinkConfig { mtu: 9000 })).await?;
/// runtime.settled().await;
/// let file = state.get_typed::<LinkFile>(&Pointer::typed::<LinkFile>("files", "link-eth0")).await?;
/// assert_eq!(file.spec().content, "mtu=9000\n");
///
/// // Tearing the input down removes the output first, then lets the input go.
/// state.teardown_and_destroy(&Pointer::typed::<LinkConfig>("config", "eth0")).await?;
/// runtime.settled().await;
/// assert!(state.get(&Pointer::typed::<LinkFile>("files", "link-eth0")).await.unwrap_err().is_not_found());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// ```
///
/// # Expected flow
/// 1. An input is reconciled at start, and on each change of it (created,
///    updated, tearing down, destroyed). Its outputs wake it only when one is
///    **destroy-ready** (tearing down with no finalizers left) or destroyed;
///    their other changes (including the transform's own writes) do not.
/// 2. A running input is mapped: each `(id, spec)` creates or updates output
///    `id` in the output namespace (nothing is written when nothing changed),
///    labelled [`INPUT_LABEL`] = the input's id. An output the input made
///    earlier and the mapping no longer returns (`None`, an empty list,
///    another id) is removed: torn down, destroyed once destroy-ready.
/// 3. With [input finalizers](Transform::with_input_finalizers), the transform
///    holds its finalizer (its name) on each running input it has mapped
///    (putting it on is a change of the input: one more reconcile).
/// 4. An input tearing down: its outputs are torn down, destroyed once
///    destroy-ready (whoever holds them, such as a controller that applies
///    them, lets go first: that is the change that wakes the input again),
///    and only then is the input's finalizer removed, so
///    `teardown_and_destroy` of the input completes after its outputs are gone.
/// 5. An input that is gone (or never had a finalizer and was destroyed):
///    its outputs are removed the same way.
///
/// # Guarantees
/// - Each output belongs to one input; outputs whose input vanished are
///   removed, also those left from an earlier run: at start every existing
///   output of the transform is mapped back (by label) to its input, which
///   is reconciled, found gone, and its outputs removed.
/// - The transform never wakes itself by writing its outputs, so a mapping
///   that is not a pure function (a counter, a timestamp) still settles: a
///   handful of reconciles per input, not a loop.
/// - An output destroyed by someone else is made again (its destruction
///   wakes its input).
/// - One input is never reconciled twice at once; a failing input backs off
///   alone (per-key backoff of the [work queue](cosi_runtime::queue)).
/// - [Extra inputs](Transform::with_extra_input) the mapping reads: any
///   change to one requeues every input.
///
/// # Caveats
/// - The output type is claimed exclusively unless
///   [`shared_output`](Transform::shared_output) says otherwise.
/// - Finding an input's outputs lists the output kind by the input's label,
///   which the state indexes: a reconcile reads that input's outputs, not
///   the output kind, so reconciling every input once costs linear time in
///   the number of outputs, not quadratic.
/// - The mapping runs only when its input (or an extra input) changes: an
///   output changed behind the transform's back (by a writer acting as its
///   owner) is not put back until then, and a mapping that reads anything
///   else (the clock, a file) is not run again when that changes: read it
///   through an extra input, or requeue from outside with an
///   [`Enqueuer`](crate::Enqueuer).
/// - Two inputs mapped to one output id fight over it (the later write
///   wins, and relabels it): give each input ids of its own.
///
/// # Errors
/// Mapping errors and state errors fail the reconcile of that one input:
/// retried with backoff, or (terminal) not retried until the input changes.
/// A many-outputs mapping that returns one id twice is a terminal error
/// (nothing is written). The controller's health and metrics report them.
pub struct Transform<I: Spec, O: Spec> {
    name: String,
    input_namespace: String,
    output_namespace: String,
    map: Box<dyn MapFn<I, O>>,
    extra: Vec<Input>,
    input_finalizers: bool,
    output: OutputKind,
    concurrency: usize,
    _types: PhantomData<fn(I) -> O>,
}

impl<I: Spec, O: Spec> fmt::Debug for Transform<I, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transform")
            .field("name", &self.name)
            .field("input", &Kind::of::<I>(&self.input_namespace))
            .field("output", &Kind::of::<O>(&self.output_namespace))
            .field("extra", &self.extra)
            .field("input_finalizers", &self.input_finalizers)
            .field("output_kind", &self.output)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

impl<I: Spec, O: Spec> Transform<I, O> {
    /// A transform named `name` (its controller name, owner of its outputs,
    /// and its finalizer) from inputs `I` in `input_namespace` to outputs `O`
    /// in `output_namespace`, through a plain mapping function.
    pub fn new(
        name: impl Into<String>,
        input_namespace: impl Into<String>,
        output_namespace: impl Into<String>,
        map: impl Fn(&Resource<I>) -> Mapped<O> + 'static,
    ) -> Self {
        let map = SyncMap(map, PhantomData);
        Self::with_map(name, input_namespace, output_namespace, Box::new(map))
    }

    /// As [`new`](Transform::new), with an async mapping that may read
    /// through the reconcile context (the [extra inputs](Transform::with_extra_input)
    /// it declared, and its own input and output types).
    ///
    /// ```
    /// # use cosi_actors::Transform;
    /// # use cosi_runtime::prelude::*;
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Address { link: String }
    /// # impl Spec for Address { const TYPE: &'static str = "Addresses.net.cosi.dev"; }
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Link;
    /// # impl Spec for Link { const TYPE: &'static str = "Links.net.cosi.dev"; }
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Line(String);
    /// # impl Spec for Line { const TYPE: &'static str = "Lines.net.cosi.dev"; }
    /// // An address is rendered only once its link exists.
    /// let addresses = Transform::new_async(
    ///     "AddressLines",
    ///     "config",
    ///     "lines",
    ///     async |cx: &ReconcileContext, address: &Resource<Address>| {
    ///         let link = Pointer::typed::<Link>("config", &address.spec().link);
    ///         match cx.get(&link).await {
    ///             Ok(_) => Ok(Some((address.id().to_owned(), Line(address.spec().link.clone())))),
    ///             Err(e) if e.is_not_found() => Ok(None),
    ///             Err(e) => Err(e.into()),
    ///         }
    ///     },
    /// )
    /// .with_extra_input(Input::weak::<Link>("config"));
    /// ```
    pub fn new_async(
        name: impl Into<String>,
        input_namespace: impl Into<String>,
        output_namespace: impl Into<String>,
        map: impl AsyncFn(&ReconcileContext, &Resource<I>) -> Mapped<O> + 'static,
    ) -> Self {
        let map = AsyncMap(map, PhantomData);
        Self::with_map(name, input_namespace, output_namespace, Box::new(map))
    }

    /// A transform that makes any number of outputs of each input: the
    /// mapping lists them all, as `(id, spec)` pairs. Outputs it made earlier
    /// and no longer lists are removed; every output is labelled
    /// [`INPUT_LABEL`] and removed with its input, as for [`new`](Transform::new)
    /// (which is this form with zero or one output).
    ///
    /// ```
    /// use cosi_actors::Transform;
    /// use cosi_runtime::prelude::*;
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct TimeConfig { servers: Vec<String> }
    /// # impl Spec for TimeConfig { const TYPE: &'static str = "TimeConfigs.net.cosi.dev"; }
    /// # #[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct TimeServer { address: String }
    /// # impl Spec for TimeServer { const TYPE: &'static str = "TimeServers.net.cosi.dev"; }
    ///
    /// # actix::System::new().block_on(async {
    /// let runtime = Runtime::start();
    /// // One config listing servers: one resource per server.
    /// runtime
    ///     .register(|| {
    ///         Transform::many("TimeServers", "config", "network", |config: &Resource<TimeConfig>| {
    ///             let servers = config.spec().servers.iter();
    ///             Ok(servers.map(|s| (s.clone(), TimeServer { address: s.clone() })).collect())
    ///         })
    ///         .with_input_finalizers()
    ///     })
    ///     .await?;
    /// let state = runtime.state().client();
    /// let servers = vec!["ntp1".to_owned(), "ntp2".to_owned()];
    /// state.create(Resource::new("config", "time", TimeConfig { servers })).await?;
    /// runtime.settled().await;
    /// let made = state.list_typed::<TimeServer>("network", &LabelQuery::all()).await?;
    /// assert_eq!(made.iter().map(|s| s.id()).collect::<Vec<_>>(), ["ntp1", "ntp2"]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn many(
        name: impl Into<String>,
        input_namespace: impl Into<String>,
        output_namespace: impl Into<String>,
        map: impl Fn(&Resource<I>) -> MappedMany<O> + 'static,
    ) -> Self {
        let map = SyncMap(map, PhantomData);
        Self::with_map(name, input_namespace, output_namespace, Box::new(map))
    }

    /// As [`many`](Transform::many), with an async mapping that may read
    /// through the reconcile context (as [`new_async`](Transform::new_async)).
    pub fn many_async(
        name: impl Into<String>,
        input_namespace: impl Into<String>,
        output_namespace: impl Into<String>,
        map: impl AsyncFn(&ReconcileContext, &Resource<I>) -> MappedMany<O> + 'static,
    ) -> Self {
        let map = AsyncMap(map, PhantomData);
        Self::with_map(name, input_namespace, output_namespace, Box::new(map))
    }

    fn with_map(
        name: impl Into<String>,
        input_namespace: impl Into<String>,
        output_namespace: impl Into<String>,
        map: Box<dyn MapFn<I, O>>,
    ) -> Self {
        Transform {
            name: name.into(),
            input_namespace: input_namespace.into(),
            output_namespace: output_namespace.into(),
            map,
            extra: Vec::new(),
            input_finalizers: false,
            output: OutputKind::Exclusive,
            concurrency: 4,
            _types: PhantomData,
        }
    }

    /// Holds a finalizer on each running input, so that an input's teardown
    /// waits until the outputs made from it are destroyed.
    pub fn with_input_finalizers(mut self) -> Self {
        self.input_finalizers = true;
        self
    }

    /// Another kind the mapping reads (its namespace, type and optional id
    /// are taken; it is watched as a mapped input). Any change to it
    /// requeues every input.
    pub fn with_extra_input(mut self, input: Input) -> Self {
        self.extra.push(Input { input_kind: InputKind::Mapped, ..input });
        self
    }

    /// Shares the output type with other controllers (each output is still
    /// written only by its owner); by default it is claimed exclusively.
    pub fn shared_output(mut self) -> Self {
        self.output = OutputKind::Shared;
        self
    }

    /// How many inputs may be reconciled at once (default 4; at least 1).
    pub fn concurrency(mut self, concurrency: usize) -> Self {
        self.concurrency = concurrency.max(1);
        self
    }

    fn output_kind(&self) -> Kind {
        Kind::of::<O>(&self.output_namespace)
    }

    /// The outputs this transform made from input `id`.
    async fn made_from(&self, cx: &ReconcileContext, id: &str) -> Result<Vec<Pointer>, Error> {
        let query = LabelQuery::all().equal(INPUT_LABEL, id);
        let outputs = cx.list(&self.output_kind(), &query).await?;
        Ok(outputs
            .iter()
            .filter(|o| o.owner() == Some(self.name.as_str()))
            .map(|o| o.pointer().clone())
            .collect())
    }

    /// Removes outputs (tear down, destroy once destroy-ready); whether all are gone.
    async fn release_all(&self, cx: &ReconcileContext, outputs: &[Pointer]) -> Result<bool, Error> {
        let mut gone = true;
        for output in outputs {
            gone &= cx.release(output).await?;
        }
        Ok(gone)
    }

    /// Writes output `id` made from `input`. An output of that id still
    /// tearing down (removed earlier, or by someone else) is released first
    /// and made again once gone; `false` while something still holds it
    /// (its destroy-ready change requeues the input).
    async fn write(
        &self,
        cx: &ReconcileContext,
        input: &Resource<I>,
        id: String,
        spec: O,
    ) -> Result<bool, Error> {
        let ptr = self.output_kind().pointer(id);
        let from = input.id().to_owned();
        let (ns, id) = (self.output_namespace.clone(), ptr.id().to_owned());
        let wanted = spec.clone();
        let empty = move || Resource::new(&ns, id.clone(), spec.clone());
        let set = move |out: &mut Resource<O>| {
            if *out.spec() != wanted {
                *out.spec_mut() = wanted.clone();
            }
            if out.metadata().labels().get(INPUT_LABEL) != Some(from.as_str()) {
                out.metadata_mut().labels_mut().insert(INPUT_LABEL, from.clone());
            }
        };
        for _ in 0..2 {
            match cx.modify_with(&ptr, empty.clone(), set.clone(), ExpectedPhase::Running).await {
                Ok(_) => return Ok(true),
                Err(e) if e.is_phase_conflict() => {
                    if !cx.release(&ptr).await? {
                        return Ok(false);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(false) // torn down again meanwhile: its destruction requeues the input
    }
}

impl<I: Spec, O: Spec> QueueController for Transform<I, O> {
    fn name(&self) -> &str {
        &self.name
    }

    fn settings(&self) -> QueueSettings {
        let mut inputs = vec![
            Input::primary::<I>(&self.input_namespace),
            Input::destroy_ready::<O>(&self.output_namespace),
        ];
        inputs.extend(self.extra.iter().cloned());
        let output = Output::new(O::TYPE, self.output);
        QueueSettings { inputs, outputs: vec![output], concurrency: self.concurrency }
    }

    fn map_resource(&self, changed: &AnyResource) -> Vec<Pointer> {
        if changed.pointer().kind() != &self.output_kind()
            || changed.owner() != Some(self.name.as_str())
        {
            return Vec::new();
        }
        match changed.metadata().labels().get(INPUT_LABEL) {
            Some(id) => vec![Pointer::typed::<I>(&self.input_namespace, id).erase()],
            None => Vec::new(),
        }
    }

    fn requeues_all(&self, changed: &AnyResource) -> bool {
        let ptr = changed.pointer();
        self.extra.iter().any(|i| i.covers(ptr.namespace(), ptr.resource_type(), ptr.id()))
    }

    async fn reconcile(
        &self,
        cx: &ReconcileContext,
        ptr: &Pointer,
    ) -> Result<Outcome, ReconcileError> {
        let made = self.made_from(cx, ptr.id()).await?;
        let input = match cx.get_typed::<I>(ptr).await {
            Ok(input) => input,
            Err(e) if e.is_not_found() => {
                self.release_all(cx, &made).await?;
                return Ok(Outcome::Done);
            }
            Err(e) => return Err(e.into()),
        };
        let held = input.metadata().finalizers().contains(&self.name);
        if input.phase() == Phase::TearingDown {
            if self.release_all(cx, &made).await? && held {
                cx.remove_finalizer(ptr).await?;
            }
            return Ok(Outcome::Done);
        }
        if self.input_finalizers && !held && !cx.add_finalizer(ptr).await? {
            return Ok(Outcome::Done); // going away: its teardown requeues it
        }
        let outputs = self.map.call(cx, &input).await?;
        let mut keep = HashSet::with_capacity(outputs.len());
        for (id, _) in &outputs {
            if !keep.insert(self.output_kind().pointer(id.as_str())) {
                let why = format!("the mapping of {ptr} returned output id {id:?} twice");
                return Err(TerminalError::new(why).into());
            }
        }
        for (id, spec) in outputs {
            self.write(cx, &input, id, spec).await?;
        }
        let stale: Vec<Pointer> = made.into_iter().filter(|m| !keep.contains(m)).collect();
        self.release_all(cx, &stale).await?;
        Ok(Outcome::Done)
    }
}
