//! What a controller declares: the [`Input`]s it reads and the [`Output`]s
//! it writes, with their kinds.
//!
//! Plain data, below everything else in the controller module: the access
//! rules, the [`ReconcileContext`](super::ReconcileContext), the controller
//! traits and the supervisor's dependency database all build on it, and it
//! names none of them.

use std::fmt;

use crate::resource::{Kind, Spec};

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
    /// [`map_resource`](super::QueueController::map_resource) like a
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

pub use crate::state::watch::ALL_NAMESPACES;

/// A declared input: resources of (namespace, type), optionally one id.
/// An input whose namespace is [`ALL_NAMESPACES`] covers the type in every
/// namespace, those made later included.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Input {
    /// The namespace.
    pub namespace: String,
    /// The resource type.
    pub resource_type: String,
    /// Only this id (reads are then limited to `get` of it).
    pub id: Option<String>,
    /// How the controller depends on it: weak, strong, destroy-ready,
    /// primary or mapped (the namespace and type it is on are its [`Kind`]).
    pub input_kind: InputKind,
}

impl Input {
    /// An input on every resource of `kind`.
    pub fn new(kind: &Kind, input_kind: InputKind) -> Self {
        Input {
            namespace: kind.namespace().to_owned(),
            resource_type: kind.resource_type().to_owned(),
            id: None,
            input_kind,
        }
    }

    /// An input on spec type `S` in every namespace (those made later
    /// too): a controller with an all-namespace [`Primary`](InputKind::Primary)
    /// input reconciles the resources of `S` wherever they are, and may
    /// read (get, list) any namespace of `S`.
    ///
    /// ```
    /// # use cosi_runtime::controller::{Input, InputKind};
    /// # use cosi_runtime::resource::Spec;
    /// # #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    /// # struct Motd(String);
    /// # impl Spec for Motd { const TYPE: &'static str = "Motds.example.dev"; }
    /// let input = Input::all_namespaces::<Motd>(InputKind::Primary);
    /// assert!(input.is_all_namespaces());
    /// assert!(input.covers("anywhere", Motd::TYPE, "x"));
    /// assert_eq!(input.to_string(), "primary */Motds.example.dev");
    /// ```
    pub fn all_namespaces<S: Spec>(input_kind: InputKind) -> Self {
        Input {
            namespace: ALL_NAMESPACES.to_owned(),
            resource_type: S::TYPE.to_owned(),
            id: None,
            input_kind,
        }
    }

    /// Whether the input covers every namespace of its type (see
    /// [`all_namespaces`](Input::all_namespaces)).
    pub fn is_all_namespaces(&self) -> bool {
        self.namespace == ALL_NAMESPACES
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
        matches!(self.input_kind, InputKind::Strong | InputKind::Primary | InputKind::Mapped)
    }

    /// The same input restricted to one id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The (namespace, type) the input watches; for an input on every
    /// namespace, the type in [`ALL_NAMESPACES`] (`*`),
    /// which the runtime watches across namespaces.
    pub fn watched_kind(&self) -> Kind {
        Kind::new(self.namespace.clone(), self.resource_type.clone())
    }

    /// The key that must be unique among one controller's inputs.
    pub fn key(&self) -> (&str, &str, Option<&str>) {
        (&self.namespace, &self.resource_type, self.id.as_deref())
    }

    /// Whether the input covers resource `id` of (`namespace`, `resource_type`).
    pub fn covers(&self, namespace: &str, resource_type: &str, id: &str) -> bool {
        (self.namespace == namespace || self.is_all_namespaces())
            && self.resource_type == resource_type
            && self.id.as_deref().is_none_or(|i| i == id)
    }
}

impl fmt::Display for Input {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.input_kind, self.namespace, self.resource_type)?;
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
