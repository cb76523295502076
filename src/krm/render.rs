//! Rendering a package in one process, on the controller engine.
//!
//! Porch drives the condition choreography by rendering a package again and
//! again. Here one render converges: every item becomes a resource in a
//! [`State`] (namespace [`NAMESPACE`], type `<apiVersion>.<Kind>`, id
//! `[<namespace>/]<name>`, spec = the object's YAML text), every function
//! becomes a controller (For → strong input, Watch and the Kptfile → weak
//! inputs, Owns → shared outputs), and the render waits for
//! [`Runtime::settled`]. A reconcile runs the function on the objects it
//! declares and writes back what changed (a write of equal text is skipped, so
//! the loop ends). Functions hold one package lock while they read, run and
//! write, as kpt runs one function at a time on a package.
//!
//! A function is taken to be pure (its output a function of what it reads, as
//! kpt assumes too): a reconcile that finds every input at the version the
//! function's last run left it (its own writes included) does not run it
//! again. The first runs come in pipeline order (no function starts before all
//! are registered), so a function runs again only to confirm the changes of
//! those after it: on the example package, five runs in all (see
//! [`RenderReport::rounds`]).
//!
//! KRM objects are co-edited (a downstream function annotates the children an
//! upstream function created; every function writes the Kptfile), which the
//! engine's per-resource owner rule would refuse; so the controllers write
//! through the runtime's [`State`] handle as the package's user (owner none)
//! rather than through their reconcile context. Inputs and outputs are still
//! declared, so triggers and the dependency graph are the engine's.
//!
//! [`render_pipe`] is the reference: the functions applied once each, in
//! order, as `kpt fn render` or a shell pipe does.
//!
//! ```
//! use std::sync::Arc;
//! use cosi_runtime::krm::render::render;
//! use cosi_runtime::krm::{Function, Gvk, Object, Wildcard, conditions};
//!
//! // A wildcard that waits for other conditions: alone, it only reports NotReady.
//! let summary = Wildcard::new("summary", Gvk::new("example.com/v1", "Summary"), |_, _| {
//!     Ok(Object::new(&Gvk::new("example.com/v1", "Summary"), "x"))
//! });
//! let functions: Vec<Arc<dyn Function>> = vec![Arc::new(summary)];
//! # actix::System::new().block_on(async {
//! let report = render(vec![Object::new(&Gvk::kptfile(), "pkg")], functions).await?;
//! let kptfile = &report.items[0];
//! let own = conditions::find(kptfile, "example.com/v1.Summary.pkg").expect("its condition");
//! assert_eq!(own.reason, "NotReady");
//! assert!(report.rounds[0].rounds >= 1);
//! # Ok::<(), cosi_runtime::krm::KrmError>(())
//! # }).unwrap();
//! ```

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use super::error::KrmError;
use super::function::{Function, apply, apply_consuming, restore_comments};
use super::object::{Gvk, Object};
use super::package::{read_package, write_package};
use super::resource_list::ResourceList;
use super::results::{FnResult, exit_code};
use super::validate::validate_items;
use super::yaml;
use crate::controller::{
    Controller, Input, InputKind, Output, OutputKind, ReconcileContext, ReconcileResult,
};
use crate::hashing::{Seeded, SeededMap};
use crate::resource::{AnyResource, DynamicResource, Kind, LabelQuery, Metadata, Pointer};
use crate::{Runtime, State};

/// The state namespace items live in during a render.
pub const NAMESPACE: &str = "krm";

/// Reconciles after which a function that still changes the package is
/// stopped (a choreography that does not converge) with an `error` result.
pub const MAX_ROUNDS: usize = 64;

/// How often a function ran during an in-process render.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionRounds {
    /// The function.
    pub function: String,
    /// Reconciles (runs of the function).
    pub rounds: usize,
    /// Runs that changed the package.
    pub changes: usize,
}

/// What a render produced.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RenderReport {
    /// The package's items after the render.
    pub items: Vec<Object>,
    /// Results of validation and of each function's last run.
    pub results: Vec<FnResult>,
    /// Rounds per function, in registration order.
    pub rounds: Vec<FunctionRounds>,
}

impl RenderReport {
    /// 1 if any result is an `error`, else 0.
    pub fn exit_code(&self) -> i32 {
        exit_code(&self.results)
    }
}

/// Applies the functions once each, in order (the pipe
/// `fn1 | fn2 | fn3`). Stops at the first function that fails.
pub fn render_pipe(items: Vec<Object>, functions: &[&dyn Function]) -> ResourceList {
    let mut list = ResourceList::new(items);
    for function in functions {
        list = apply(*function, list);
        if list.exit_code() != 0 {
            break;
        }
    }
    list
}

fn resource_type(gvk: &Gvk) -> String {
    gvk.reference()
}

/// The item's resource in the state. Built from borrowed parts (no `Gvk`,
/// no id copy when there is no namespace): it runs for every item a
/// function outputs, in every run.
fn pointer_of(object: &Object) -> Option<Pointer> {
    let (api_version, kind, name) = (object.api_version()?, object.kind()?, object.name()?);
    let ty = super::object::dotted(&[api_version, kind]);
    Some(match object.namespace() {
        Some(ns) => Pointer::new(NAMESPACE, ty, format!("{ns}/{name}")),
        None => Pointer::new(NAMESPACE, ty, name),
    })
}

fn text_of(object: &Object) -> String {
    let mut out = String::new();
    yaml::emit_document(object.node(), &mut out);
    out
}

fn parse_spec(resource: &AnyResource) -> Result<Object, crate::Error> {
    let dynamic = resource.to_dynamic()?;
    let text = dynamic.spec().as_str().unwrap_or_default();
    let node = yaml::parse_document(text).map_err(|e| crate::Error::InvalidInput {
        resource: resource.pointer().to_string(),
        reason: e.to_string(),
    })?;
    Ok(Object::from_node(node))
}

fn engine(object: impl Into<String>) -> impl FnOnce(crate::Error) -> KrmError {
    let object = object.into();
    move |source| KrmError::Engine { object, source }
}

#[derive(Debug, Default)]
struct Shared {
    rounds: HashMap<String, FunctionRounds>,
    results: HashMap<String, Vec<FnResult>>,
    types: BTreeSet<String>,
    /// Parsed objects by pointer and version: a reconcile parses only what changed.
    parsed: SeededMap<Pointer, (u64, Object)>,
}

struct FnController {
    function: Arc<dyn Function>,
    state: State,
    lock: Arc<tokio::sync::Mutex<()>>,
    shared: Arc<Mutex<Shared>>,
    /// The version of every input as this instance's last run left it (its own
    /// writes included). A reconcile that lists the same inputs at the same
    /// versions skips the function: a function is a pure function of what it
    /// reads, so it would give the same output, which is already written.
    /// Without it, the watch events of the function's own writes, delivered
    /// in batches while it runs, each re-ran it over the whole package.
    seen: Option<SeededMap<Pointer, u64>>,
    /// The last listing of the inputs found to match `seen`, in listing
    /// order (emptied when `seen` changes). A reconcile that lists the very
    /// same again (the common case: the watch events of one run's writes
    /// queue many reconciles) compares item by item instead of hashing every
    /// pointer, which a render would otherwise do on every reconcile.
    listed: Vec<(Pointer, u64)>,
}

impl std::fmt::Debug for FnController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FnController")
            .field("function", &self.function.name())
            .finish_non_exhaustive()
    }
}

impl FnController {
    fn with_shared<T>(&self, f: impl FnOnce(&mut Shared) -> T) -> T {
        let mut guard = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    /// Lists every input, in the order the function sees them.
    async fn inputs(&self) -> Result<Vec<AnyResource>, crate::Error> {
        let mut all = Vec::new();
        for gvk in self.function.declaration().reads() {
            let kind = Kind::new(NAMESPACE, resource_type(&gvk));
            all.extend(self.state.list(&kind, &LabelQuery::all()).await?);
        }
        Ok(all)
    }

    /// Whether `inputs` are exactly what the last run left.
    fn unchanged(&mut self, inputs: &[AnyResource]) -> bool {
        let Some(seen) = &self.seen else { return false };
        if seen.len() != inputs.len() {
            return false;
        }
        let same_listing = self.listed.len() == inputs.len()
            && inputs
                .iter()
                .zip(&self.listed)
                .all(|(r, (ptr, version))| r.version().get() == *version && r.pointer() == ptr);
        if same_listing {
            return true;
        }
        let same = inputs.iter().all(|r| seen.get(r.pointer()) == Some(&r.version().get()));
        if same {
            self.listed = inputs.iter().map(|r| (r.pointer().clone(), r.version().get())).collect();
        }
        same
    }

    /// Runs the function on `inputs` and writes back what changed. Returns
    /// whether anything changed, and the inputs' versions after the writes.
    async fn run_once(
        &self,
        inputs: Vec<AnyResource>,
    ) -> Result<(bool, SeededMap<Pointer, u64>), crate::Error> {
        let name = self.function.name().to_string();
        let mut seen = SeededMap::with_capacity_and_hasher(inputs.len(), Default::default());
        // In listing order, not hash order: the comments restored from the
        // inputs and the destroys below follow it, the same on every run.
        let mut before: indexmap::IndexMap<Pointer, AnyResource, Seeded> =
            indexmap::IndexMap::with_capacity_and_hasher(inputs.len(), Default::default());
        let mut items = Vec::new();
        {
            for resource in inputs {
                let ptr = resource.pointer().clone();
                let version = resource.version().get();
                let cached = self.with_shared(|s| {
                    s.parsed.get(&ptr).filter(|(v, _)| *v == version).map(|(_, o)| o.clone())
                });
                let object = match cached {
                    Some(object) => object,
                    None => {
                        let object = parse_spec(&resource)?;
                        self.with_shared(|s| {
                            s.parsed.insert(ptr.clone(), (version, object.clone()))
                        });
                        object
                    }
                };
                items.push(object);
                seen.insert(ptr.clone(), version);
                before.insert(ptr, resource);
            }
        }
        let mut out = match apply_consuming(self.function.as_ref(), ResourceList::new(items)) {
            Ok(out) => out,
            Err(results) => {
                self.with_shared(|s| s.results.insert(name, results));
                return Ok((false, seen));
            }
        };
        // The inputs' comments, as kpt restores them after each function: the
        // cache still holds the inputs as read (the package lock is held).
        self.with_shared(|s| {
            let inputs = before.keys().filter_map(|ptr| s.parsed.get(ptr).map(|(_, o)| o));
            restore_comments(inputs, &mut out.items);
        });
        self.with_shared(|s| s.results.insert(name.clone(), out.results.clone()));
        // Writes are sent together (pipelined): the state actor applies them in order.
        let mut writes: Vec<(Pointer, Object, AnyResource, bool)> = Vec::new();
        for object in out.items {
            let Some(ptr) = pointer_of(&object) else { continue };
            match before.swap_remove(&ptr) {
                Some(resource) => {
                    // The package lock is held: the cache still holds what was read.
                    // Equal objects may differ in comments (a function added one).
                    let version = resource.version().get();
                    let same = self.with_shared(|s| {
                        s.parsed.get(&ptr).is_some_and(|(v, old)| {
                            *v == version
                                && *old == object
                                && yaml::same_comments(old.node(), object.node())
                        })
                    });
                    if same {
                        continue;
                    }
                    let text = text_of(&object);
                    if resource.to_dynamic()?.spec().as_str() == Some(text.as_str()) {
                        continue;
                    }
                    let next = DynamicResource::new(
                        resource.metadata().clone(),
                        serde_json::Value::String(text),
                    );
                    writes.push((ptr, object, next.into_any(), true));
                }
                None => {
                    self.with_shared(|s| s.types.insert(ptr.resource_type().to_string()));
                    let text = text_of(&object);
                    let fresh = DynamicResource::new(
                        Metadata::new(ptr.clone()),
                        serde_json::Value::String(text),
                    );
                    writes.push((ptr, object, fresh.into_any(), false));
                }
            }
        }
        let mut changed = !writes.is_empty();
        let stored =
            futures::future::try_join_all(writes.iter().map(|(_, _, resource, update)| {
                let (state, resource, update) = (self.state.clone(), resource.clone(), *update);
                async move {
                    if update {
                        state.update(resource, None).await
                    } else {
                        state.create(resource, None).await
                    }
                }
            }))
            .await?;
        let read: BTreeSet<String> =
            self.function.declaration().reads().iter().map(resource_type).collect();
        for ((ptr, object, _, _), stored) in writes.into_iter().zip(stored) {
            let version = stored.version().get();
            if read.contains(ptr.resource_type()) {
                seen.insert(ptr.clone(), version);
            }
            self.with_shared(|s| s.parsed.insert(ptr, (version, object)));
        }
        for ptr in before.into_keys() {
            self.state.destroy(&ptr, None).await?;
            seen.remove(&ptr);
            changed = true;
        }
        Ok((changed, seen))
    }
}

impl Controller for FnController {
    fn name(&self) -> &str {
        self.function.name()
    }

    fn inputs(&self) -> Vec<Input> {
        let declaration = self.function.declaration();
        let mut inputs: Vec<Input> = Vec::new();
        let mut add = |gvk: &Gvk, kind: InputKind| {
            let ty = resource_type(gvk);
            if !inputs.iter().any(|i| i.resource_type == ty) {
                inputs.push(Input::new(&Kind::new(NAMESPACE, ty), kind));
            }
        };
        if let Some(parent) = &declaration.for_ {
            add(parent, InputKind::Strong);
        }
        for gvk in declaration.watches.iter().chain(std::iter::once(&Gvk::kptfile())) {
            add(gvk, InputKind::Weak);
        }
        inputs
    }

    fn outputs(&self) -> Vec<Output> {
        let declaration = self.function.declaration();
        let mut types: Vec<String> = Vec::new();
        for gvk in declaration.owns.iter().chain(std::iter::once(&Gvk::kptfile())) {
            let ty = resource_type(gvk);
            if !types.contains(&ty) {
                types.push(ty);
            }
        }
        types.into_iter().map(|t| Output::new(t, OutputKind::Shared)).collect()
    }

    async fn reconcile(&mut self, _cx: &mut ReconcileContext) -> ReconcileResult {
        // The lock handle is cloned: the guard must not borrow `self`, which
        // `unchanged` updates.
        let lock = self.lock.clone();
        let _package = lock.lock().await;
        let inputs = self.inputs().await?;
        if self.unchanged(&inputs) {
            return Ok(());
        }
        let name = self.function.name().to_string();
        let rounds = self.with_shared(|s| {
            let entry = s.rounds.entry(name.clone()).or_default();
            entry.function = name.clone();
            entry.rounds += 1;
            entry.rounds
        });
        if rounds > MAX_ROUNDS {
            let message = format!("{name}: the package did not converge after {MAX_ROUNDS} rounds");
            self.with_shared(|s| s.results.insert(name.clone(), vec![FnResult::error(message)]));
            return Ok(());
        }
        let (changed, seen) = self.run_once(inputs).await?;
        self.seen = Some(seen);
        self.listed.clear();
        if changed {
            self.with_shared(|s| s.rounds.entry(name).or_default().changes += 1);
        }
        Ok(())
    }
}

/// Renders items in process: loads them into a fresh [`Runtime`]'s state,
/// registers each function as a controller, waits for
/// [`settled`](Runtime::settled) and reads the package back. Must run inside
/// an actix system. Invalid input (see [`validate_items`]) is returned
/// unchanged with `error` results, without starting anything.
///
/// # Errors
/// [`KrmError::Engine`] if the state refuses an item,
/// [`KrmError::Registration`] if a function cannot be registered.
pub async fn render(
    items: Vec<Object>,
    functions: Vec<Arc<dyn Function>>,
) -> Result<RenderReport, KrmError> {
    let mut problems = validate_items(&items);
    let list = ResourceList::new(items);
    let has_kptfile = list.kptfile().is_some();
    let items = list.items;
    if !has_kptfile && functions.iter().any(|f| f.requires_kptfile()) {
        problems.push(FnResult::error("mandatory Kptfile is missing from the package"));
    }
    if !problems.is_empty() {
        return Ok(RenderReport { items, results: problems, rounds: Vec::new() });
    }
    let runtime = Runtime::start();
    let state = runtime.state();
    let shared = Arc::new(Mutex::new(Shared::default()));
    let mut loads = Vec::with_capacity(items.len());
    for object in items {
        let Some(ptr) = pointer_of(&object) else { continue };
        shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .types
            .insert(ptr.resource_type().to_string());
        let resource = DynamicResource::new(
            Metadata::new(ptr.clone()),
            serde_json::Value::String(text_of(&object)),
        );
        let (state, shared) = (state.clone(), shared.clone());
        loads.push(async move {
            let stored =
                state.create(resource.into_any(), None).await.map_err(engine(ptr.to_string()))?;
            // The first run of every function reads the objects as given, unparsed.
            let version = stored.version().get();
            shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .parsed
                .insert(ptr, (version, object));
            Ok::<_, KrmError>(())
        });
    }
    futures::future::try_join_all(loads).await?;
    let lock = Arc::new(tokio::sync::Mutex::new(()));
    // No function runs before all are registered: their first runs then queue
    // on the package lock in pipeline order (each sees what the ones before it
    // wrote), as kpt runs them, instead of the first function re-running for
    // each one registered after it.
    let registering = lock.clone().lock_owned().await;
    for function in &functions {
        let (function, state, lock, shared) =
            (function.clone(), state.clone(), lock.clone(), shared.clone());
        let name = function.name().to_string();
        let factory = move || FnController {
            function: function.clone(),
            state: state.clone(),
            lock: lock.clone(),
            shared: shared.clone(),
            seen: None,
            listed: Vec::new(),
        };
        runtime
            .register(factory)
            .await
            .map_err(|e| KrmError::Registration { function: name, reason: e.to_string() })?;
    }
    drop(registering);
    runtime.settled().await;
    let types = shared.lock().unwrap_or_else(PoisonError::into_inner).types.clone();
    let mut out = Vec::new();
    for ty in types {
        let kind = Kind::new(NAMESPACE, &ty);
        for resource in state.list(&kind, &LabelQuery::all()).await.map_err(engine(ty.clone()))? {
            let version = resource.version().get();
            let cached = shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .parsed
                .remove(resource.pointer())
                .filter(|(v, _)| *v == version);
            let object = match cached {
                Some((_, object)) => object,
                None => parse_spec(&resource).map_err(engine(resource.pointer().to_string()))?,
            };
            out.push(object);
        }
    }
    runtime.stop().await;
    let mut shared = std::mem::take(&mut *shared.lock().unwrap_or_else(PoisonError::into_inner));
    let mut rounds = Vec::new();
    let mut results = Vec::new();
    for function in &functions {
        let name = function.name();
        rounds.push(shared.rounds.remove(name).unwrap_or_else(|| FunctionRounds {
            function: name.to_string(),
            ..FunctionRounds::default()
        }));
        results.extend(shared.results.remove(name).unwrap_or_default());
    }
    Ok(RenderReport { items: out, results, rounds })
}

/// Renders a package directory in process ([`render`]) and writes it back
/// file by file, unless an `error` result is present (then nothing is written).
///
/// # Errors
/// As [`read_package`], [`render`] and [`write_package`].
pub async fn render_dir(
    dir: &Path,
    functions: Vec<Arc<dyn Function>>,
) -> Result<RenderReport, KrmError> {
    let items = read_package(dir)?;
    let report = render(items, functions).await?;
    if report.exit_code() == 0 {
        write_package(dir, &report.items)?;
    }
    Ok(report)
}
