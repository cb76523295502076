//! The [`Controller`] trait and its declared [`Input`]s and [`Output`]s.

use std::fmt;

use super::ReconcileContext;
use crate::resource::{Kind, Spec};

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
///         let host = cx.get_typed::<Hostname>(&Pointer::of::<Hostname>("network", "hostname")).await?;
///         let text = format!("Welcome to {}", host.spec().0);
///         cx.modify(&Pointer::of::<Motd>("os", "motd"), move |m: &mut Resource<Motd>| m.spec_mut().0 = text.clone())
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

/// How a controller depends on an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InputKind {
    /// Any change triggers a reconcile.
    Weak,
    /// Any change triggers a reconcile, and the controller may put (and remove)
    /// its own finalizer on these resources to hold their destruction.
    Strong,
    /// Triggers only when a resource is tearing down with no finalizers left
    /// ("ready to destroy"). Used on a controller's own output type, so that
    /// its own writes do not trigger it again.
    ///
    /// In a queue controller it is mapped through
    /// [`map_resource`](super::QController::map_resource) like a
    /// [`Mapped`](InputKind::Mapped) input: every existing resource at start
    /// (which finds outputs left over from an earlier run), then each one that
    /// becomes ready to destroy or is destroyed.
    DestroyReady,
    /// Queue controllers only: each change queues a reconcile of that very
    /// resource; finalizers allowed.
    Primary,
    /// Queue controllers only: each change is mapped by `map_input` to the
    /// primary resources to reconcile; finalizers allowed.
    Mapped,
}

impl fmt::Display for InputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            InputKind::Weak => "weak",
            InputKind::Strong => "strong",
            InputKind::DestroyReady => "destroy-ready",
            InputKind::Primary => "primary",
            InputKind::Mapped => "mapped",
        })
    }
}

/// A declared input: resources of (namespace, type), optionally one id.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Input {
    /// The namespace.
    pub namespace: String,
    /// The resource type.
    pub resource_type: String,
    /// Only this id (reads are then limited to `get` of it).
    pub id: Option<String>,
    /// How the controller depends on it (named apart from [`Kind`], the
    /// namespace and type it is on).
    pub dependency: InputKind,
}

impl Input {
    /// An input on every resource of `kind`.
    pub fn new(kind: &Kind, input_kind: InputKind) -> Self {
        Input {
            namespace: kind.namespace().to_owned(),
            resource_type: kind.resource_type().to_owned(),
            id: None,
            dependency: input_kind,
        }
    }

    /// A weak input on spec type `S` in `namespace`.
    pub fn weak<S: Spec>(namespace: impl AsRef<str>) -> Self {
        Input::new(&Kind::of::<S>(namespace), InputKind::Weak)
    }

    /// A strong input on spec type `S` in `namespace`.
    pub fn strong<S: Spec>(namespace: impl AsRef<str>) -> Self {
        Input::new(&Kind::of::<S>(namespace), InputKind::Strong)
    }

    /// A destroy-ready input on spec type `S` in `namespace`.
    pub fn destroy_ready<S: Spec>(namespace: impl AsRef<str>) -> Self {
        Input::new(&Kind::of::<S>(namespace), InputKind::DestroyReady)
    }

    /// A primary input (queue controllers) on spec type `S` in `namespace`.
    pub fn primary<S: Spec>(namespace: impl AsRef<str>) -> Self {
        Input::new(&Kind::of::<S>(namespace), InputKind::Primary)
    }

    /// A mapped input (queue controllers) on spec type `S` in `namespace`.
    pub fn mapped<S: Spec>(namespace: impl AsRef<str>) -> Self {
        Input::new(&Kind::of::<S>(namespace), InputKind::Mapped)
    }

    /// Whether the controller may put its finalizer on resources of this input.
    pub fn allows_finalizers(&self) -> bool {
        matches!(self.dependency, InputKind::Strong | InputKind::Primary | InputKind::Mapped)
    }

    /// The same input restricted to one id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The (namespace, type) the input watches.
    pub fn watched_kind(&self) -> Kind {
        Kind::new(self.namespace.clone(), self.resource_type.clone())
    }

    /// The key that must be unique among one controller's inputs.
    pub fn key(&self) -> (&str, &str, Option<&str>) {
        (&self.namespace, &self.resource_type, self.id.as_deref())
    }

    /// Whether the input covers resource `id` of (`namespace`, `resource_type`).
    pub fn covers(&self, namespace: &str, resource_type: &str, id: &str) -> bool {
        self.namespace == namespace
            && self.resource_type == resource_type
            && self.id.as_deref().is_none_or(|i| i == id)
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.dependency, self.namespace, self.resource_type)?;
        if let Some(id) = &self.id {
            write!(f, "/{id}")?;
        }
        Ok(())
    }
}

/// How a controller holds an output type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutputKind {
    /// Only this controller writes the type.
    Exclusive,
    /// Several controllers write the type; each resource only by the one that
    /// created it (enforced by owner).
    Shared,
}

impl fmt::Display for OutputKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputKind::Exclusive => "exclusive",
            OutputKind::Shared => "shared",
        })
    }
}

/// A declared output: a resource type (in any namespace).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Output {
    /// The resource type.
    pub resource_type: String,
    /// Exclusive or shared.
    pub kind: OutputKind,
}

impl Output {
    /// An output on `resource_type`.
    pub fn new(resource_type: impl Into<String>, kind: OutputKind) -> Self {
        Output { resource_type: resource_type.into(), kind }
    }

    /// An exclusive output of spec type `S`.
    pub fn exclusive<S: Spec>() -> Self {
        Output::new(S::TYPE, OutputKind::Exclusive)
    }

    /// A shared output of spec type `S`.
    pub fn shared<S: Spec>() -> Self {
        Output::new(S::TYPE, OutputKind::Shared)
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind, self.resource_type)
    }
}
