//! The dependency database (pure): which controller reads and writes what, and
//! the registration rules that keep output claims consistent.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::graph::{DependencyGraph, Edge, EdgeKind};
use crate::controller::{Input, InputKind, Output, OutputKind};
use crate::resource::validate;

/// Why a controller could not be registered (or change its inputs).
///
/// A failed registration leaves nothing behind: no claim, no subscription.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistrationError {
    /// Another controller already has this name.
    #[error("controller {name:?} is already registered")]
    DuplicateController {
        /// The name.
        name: String,
    },
    /// The type is already held exclusively (by another controller, or by this
    /// one declaring it twice).
    #[error("resource type {resource_type:?} is already managed in exclusive mode by {holder:?}")]
    ExclusiveConflict {
        /// The type.
        resource_type: String,
        /// The controller that holds it.
        holder: String,
    },
    /// An exclusive claim on a type that controllers share.
    #[error("resource type {resource_type:?} is already managed in shared mode by {holder:?}")]
    SharedConflict {
        /// The type.
        resource_type: String,
        /// The first controller that shares it.
        holder: String,
    },
    /// The same controller declared one type as a shared output twice.
    #[error("duplicate shared controller output: {resource_type:?} -> {controller:?}")]
    DuplicateSharedOutput {
        /// The type.
        resource_type: String,
        /// The controller.
        controller: String,
    },
    /// Two inputs of one controller have the same (namespace, type, id).
    #[error("duplicate controller input: {input} for controller {controller:?}")]
    DuplicateInput {
        /// The controller.
        controller: String,
        /// The second of the two inputs.
        input: String,
    },
    /// An input kind this kind of controller cannot use.
    #[error("invalid input kind for controller {controller:?}: {input} ({reason})")]
    InvalidInputKind {
        /// The controller.
        controller: String,
        /// The input.
        input: String,
        /// Why.
        reason: String,
    },
    /// A name, namespace or type breaks the input rules.
    #[error("invalid declaration for controller {controller:?}: {reason}")]
    Invalid {
        /// The controller (as far as known).
        controller: String,
        /// Which rule was broken.
        reason: String,
    },
    /// The factory, `name`, `inputs` or `outputs` panicked.
    #[error("controller {controller:?} panicked while registering: {message}")]
    Panicked {
        /// The controller (as far as known).
        controller: String,
        /// The panic message.
        message: String,
    },
    /// The runtime is stopped.
    #[error("the runtime is stopped; controller {controller:?} was not registered")]
    Stopped {
        /// The controller (as far as known).
        controller: String,
    },
}

impl RegistrationError {
    /// The controller the error is about.
    pub fn controller(&self) -> &str {
        match self {
            RegistrationError::DuplicateController { name: controller }
            | RegistrationError::DuplicateSharedOutput { controller, .. }
            | RegistrationError::DuplicateInput { controller, .. }
            | RegistrationError::InvalidInputKind { controller, .. }
            | RegistrationError::Invalid { controller, .. }
            | RegistrationError::Panicked { controller, .. }
            | RegistrationError::Stopped { controller } => controller,
            RegistrationError::ExclusiveConflict { holder, .. }
            | RegistrationError::SharedConflict { holder, .. } => holder,
        }
    }
}

/// One controller's declared claims.
#[derive(Clone, Debug)]
struct Claims {
    inputs: Vec<Input>,
    outputs: Vec<Output>,
    queue: bool,
}

/// The holders of one output type.
#[derive(Clone, Debug, Default)]
struct Holders {
    exclusive: Option<String>,
    shared: Vec<String>,
}

/// Every registered controller's inputs and outputs, kept consistent.
#[derive(Debug, Default)]
pub(crate) struct DependencyDb {
    controllers: BTreeMap<String, Claims>,
    outputs: HashMap<String, Holders>,
}

/// Checks one controller's inputs on their own: valid names, unique keys,
/// kinds that fit the controller flavour.
pub(crate) fn check_inputs(
    controller: &str,
    inputs: &[Input],
    queue: bool,
) -> Result<(), RegistrationError> {
    let mut keys = HashSet::new();
    for input in inputs {
        let invalid = |reason: String| RegistrationError::Invalid {
            controller: controller.to_owned(),
            reason: format!("input {input}: {reason}"),
        };
        if !input.is_all_namespaces() {
            validate::name("namespace", &input.namespace).map_err(invalid)?;
        } else if input.id.is_some() {
            return Err(invalid(
                "an input on every namespace covers a whole type, not one id".into(),
            ));
        }
        validate::name("type", &input.resource_type).map_err(invalid)?;
        if let Some(id) = &input.id {
            validate::name("id", id).map_err(invalid)?;
        }
        let fits = if queue {
            matches!(
                input.input_kind,
                InputKind::Primary | InputKind::Mapped | InputKind::DestroyReady
            )
        } else {
            matches!(
                input.input_kind,
                InputKind::Weak | InputKind::Strong | InputKind::DestroyReady
            )
        };
        if !fits {
            return Err(RegistrationError::InvalidInputKind {
                controller: controller.to_owned(),
                input: input.to_string(),
                reason: if queue {
                    "queue controllers take primary, mapped and destroy-ready inputs".into()
                } else {
                    "controllers take weak, strong and destroy-ready inputs".into()
                },
            });
        }
        if !keys.insert(input.key()) {
            return Err(RegistrationError::DuplicateInput {
                controller: controller.to_owned(),
                input: input.to_string(),
            });
        }
    }
    Ok(())
}

impl DependencyDb {
    /// Validates and records a controller, all or nothing.
    pub(crate) fn register(
        &mut self,
        name: &str,
        inputs: &[Input],
        outputs: &[Output],
        queue: bool,
    ) -> Result<(), RegistrationError> {
        validate::name("controller name", name)
            .map_err(|reason| RegistrationError::Invalid { controller: name.to_owned(), reason })?;
        if self.controllers.contains_key(name) {
            return Err(RegistrationError::DuplicateController { name: name.to_owned() });
        }
        check_inputs(name, inputs, queue)?;
        self.check_outputs(name, outputs)?;
        // Everything checked: commit.
        for output in outputs {
            let holders = self.outputs.entry(output.resource_type.clone()).or_default();
            match output.kind {
                OutputKind::Exclusive => holders.exclusive = Some(name.to_owned()),
                OutputKind::Shared => holders.shared.push(name.to_owned()),
            }
        }
        self.controllers.insert(
            name.to_owned(),
            Claims { inputs: inputs.to_vec(), outputs: outputs.to_vec(), queue },
        );
        Ok(())
    }

    fn check_outputs(&self, name: &str, outputs: &[Output]) -> Result<(), RegistrationError> {
        // Claims made earlier in this same declaration count too.
        let mut pending: HashMap<&str, Holders> = HashMap::new();
        for output in outputs {
            validate::name("output type", &output.resource_type).map_err(|reason| {
                RegistrationError::Invalid { controller: name.to_owned(), reason }
            })?;
            let stored = self.outputs.get(&output.resource_type);
            let mine = pending.entry(&output.resource_type).or_default();
            let exclusive =
                stored.and_then(|h| h.exclusive.as_deref()).or(mine.exclusive.as_deref());
            if let Some(holder) = exclusive {
                return Err(RegistrationError::ExclusiveConflict {
                    resource_type: output.resource_type.clone(),
                    holder: holder.to_owned(),
                });
            }
            let shared_by = stored.and_then(|h| h.shared.first()).or(mine.shared.first()).cloned();
            match output.kind {
                OutputKind::Exclusive => {
                    if let Some(holder) = shared_by {
                        return Err(RegistrationError::SharedConflict {
                            resource_type: output.resource_type.clone(),
                            holder,
                        });
                    }
                    mine.exclusive = Some(name.to_owned());
                }
                OutputKind::Shared => {
                    if !mine.shared.is_empty() {
                        return Err(RegistrationError::DuplicateSharedOutput {
                            resource_type: output.resource_type.clone(),
                            controller: name.to_owned(),
                        });
                    }
                    mine.shared.push(name.to_owned());
                }
            }
        }
        Ok(())
    }

    /// Forgets a controller and releases its output claims (its host never
    /// started).
    pub(crate) fn unregister(&mut self, name: &str) {
        let Some(claims) = self.controllers.remove(name) else {
            return;
        };
        for output in claims.outputs {
            if let Some(holders) = self.outputs.get_mut(&output.resource_type) {
                if holders.exclusive.as_deref() == Some(name) {
                    holders.exclusive = None;
                }
                holders.shared.retain(|h| h != name);
                if holders.exclusive.is_none() && holders.shared.is_empty() {
                    self.outputs.remove(&output.resource_type);
                }
            }
        }
    }

    /// Replaces a controller's inputs (outputs are fixed).
    pub(crate) fn update_inputs(
        &mut self,
        name: &str,
        inputs: Vec<Input>,
    ) -> Result<(), RegistrationError> {
        let Some(claims) = self.controllers.get(name) else {
            return Err(RegistrationError::Invalid {
                controller: name.to_owned(),
                reason: "no such controller".into(),
            });
        };
        check_inputs(name, &inputs, claims.queue)?;
        if let Some(claims) = self.controllers.get_mut(name) {
            claims.inputs = inputs;
        }
        Ok(())
    }

    /// The graph of every controller and the resource types it touches.
    pub(crate) fn graph(&self) -> DependencyGraph {
        let mut edges = Vec::new();
        for (name, claims) in &self.controllers {
            for input in &claims.inputs {
                edges.push(Edge {
                    controller: name.clone(),
                    resource_type: input.resource_type.clone(),
                    namespace: Some(input.namespace.clone()),
                    id: input.id.clone(),
                    kind: match input.input_kind {
                        InputKind::Weak => EdgeKind::InputWeak,
                        InputKind::Strong => EdgeKind::InputStrong,
                        InputKind::DestroyReady => EdgeKind::InputDestroyReady,
                        InputKind::Primary => EdgeKind::InputPrimary,
                        InputKind::Mapped => EdgeKind::InputMapped,
                    },
                });
            }
            for output in &claims.outputs {
                edges.push(Edge {
                    controller: name.clone(),
                    resource_type: output.resource_type.clone(),
                    namespace: None,
                    id: None,
                    kind: match output.kind {
                        OutputKind::Exclusive => EdgeKind::OutputExclusive,
                        OutputKind::Shared => EdgeKind::OutputShared,
                    },
                });
            }
        }
        DependencyGraph::new(self.controllers.keys().cloned().collect(), edges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weak(ty: &str) -> Input {
        Input {
            namespace: "ns".into(),
            resource_type: ty.into(),
            id: None,
            input_kind: InputKind::Weak,
        }
    }

    fn out(ty: &str, kind: OutputKind) -> Output {
        Output::new(ty, kind)
    }

    #[test]
    fn a_second_exclusive_claim_is_refused() {
        let mut db = DependencyDb::default();
        db.register("A", &[], &[out("T", OutputKind::Exclusive)], false).unwrap();
        let e = db.register("B", &[], &[out("T", OutputKind::Exclusive)], false).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"resource type "T" is already managed in exclusive mode by "A""#
        );
    }

    #[test]
    fn shared_on_exclusive_and_exclusive_on_shared_are_refused() {
        let mut db = DependencyDb::default();
        db.register("A", &[], &[out("X", OutputKind::Exclusive)], false).unwrap();
        db.register("B", &[], &[out("S", OutputKind::Shared)], false).unwrap();
        let e = db.register("C", &[], &[out("X", OutputKind::Shared)], false).unwrap_err();
        assert!(
            matches!(e, RegistrationError::ExclusiveConflict { ref holder, .. } if holder == "A")
        );
        let e = db.register("C", &[], &[out("S", OutputKind::Exclusive)], false).unwrap_err();
        assert!(matches!(e, RegistrationError::SharedConflict { ref holder, .. } if holder == "B"));
        db.register("C", &[], &[out("S", OutputKind::Shared)], false).unwrap();
    }

    #[test]
    fn sharing_one_type_twice_in_one_controller_is_refused() {
        let mut db = DependencyDb::default();
        let e = db
            .register(
                "A",
                &[],
                &[out("S", OutputKind::Shared), out("S", OutputKind::Shared)],
                false,
            )
            .unwrap_err();
        assert!(matches!(e, RegistrationError::DuplicateSharedOutput { .. }));
        let e = db
            .register(
                "A",
                &[],
                &[out("S", OutputKind::Exclusive), out("S", OutputKind::Exclusive)],
                false,
            )
            .unwrap_err();
        assert!(matches!(e, RegistrationError::ExclusiveConflict { .. }));
    }

    #[test]
    fn duplicate_names_and_inputs_are_refused() {
        let mut db = DependencyDb::default();
        db.register("A", &[weak("I")], &[], false).unwrap();
        let e = db.register("A", &[], &[], false).unwrap_err();
        assert!(matches!(e, RegistrationError::DuplicateController { .. }));
        let mut strong = weak("I");
        strong.input_kind = InputKind::Strong;
        let e = db.register("B", &[weak("I"), strong], &[], false).unwrap_err();
        assert!(matches!(e, RegistrationError::DuplicateInput { .. }));
        // Same type with different ids is fine.
        db.register(
            "C",
            &[weak("I").clone(), {
                let mut i = weak("I");
                i.id = Some("one".into());
                i
            }],
            &[],
            false,
        )
        .unwrap();
    }

    #[test]
    fn a_failed_registration_leaves_nothing_behind() {
        let mut db = DependencyDb::default();
        db.register("A", &[], &[out("T", OutputKind::Exclusive)], false).unwrap();
        // B's first output would be fine, its second conflicts: nothing of B stays.
        let e = db
            .register(
                "B",
                &[],
                &[out("U", OutputKind::Exclusive), out("T", OutputKind::Shared)],
                false,
            )
            .unwrap_err();
        assert!(matches!(e, RegistrationError::ExclusiveConflict { .. }));
        db.register("C", &[], &[out("U", OutputKind::Exclusive)], false).unwrap();
        db.register("B", &[], &[], false).unwrap();
        // And a bad input after good outputs rolls back the outputs too.
        let bad = Input { namespace: String::new(), ..weak("I") };
        assert!(db.register("D", &[bad], &[out("V", OutputKind::Exclusive)], false).is_err());
        db.register("E", &[], &[out("V", OutputKind::Exclusive)], false).unwrap();
    }

    #[test]
    fn queue_and_plain_input_kinds_do_not_mix() {
        let mut db = DependencyDb::default();
        let mut primary = weak("I");
        primary.input_kind = InputKind::Primary;
        let e = db.register("A", &[primary], &[], false).unwrap_err();
        assert!(matches!(e, RegistrationError::InvalidInputKind { .. }));
        let e = db.register("Q", &[weak("I")], &[], true).unwrap_err();
        assert!(matches!(e, RegistrationError::InvalidInputKind { .. }));
    }
}
