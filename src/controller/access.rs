//! The access rules a controller's context enforces (pure; unit-tested here).
//!
//! | operation | allowed when |
//! |---|---|
//! | `get` | the type is an output type, or an input covers the resource |
//! | `list` | the type is an output type, or an input without an id covers the kind |
//! | `create`, `update`, `modify`, `teardown`, `destroy` | the type is an output type |
//! | `add_finalizer`, `remove_finalizer` | a **strong** input (for queue controllers: a primary or mapped input) covers the resource |

use std::collections::BTreeSet;
use std::sync::Arc;

use super::{Input, InputKind, Output};
use crate::Error;
use crate::resource::{Kind, Pointer};

/// The inputs and outputs one controller declared, as access rules.
#[derive(Clone, Debug)]
pub(crate) struct AccessRules {
    controller: Arc<str>,
    inputs: Vec<Input>,
    /// The kind of each input, in order: checks compare kinds (usually one
    /// shared allocation, so a pointer comparison), not strings.
    kinds: Vec<Kind>,
    output_types: Vec<String>,
}

/// The kind of each input, in order.
fn kinds_of(inputs: &[Input]) -> Vec<Kind> {
    inputs.iter().map(|i| Kind::new(&i.namespace, &i.resource_type)).collect()
}

impl AccessRules {
    pub(crate) fn new(controller: Arc<str>, inputs: Vec<Input>, outputs: &[Output]) -> Self {
        let types: BTreeSet<String> = outputs.iter().map(|o| o.resource_type.clone()).collect();
        AccessRules {
            controller,
            kinds: kinds_of(&inputs),
            inputs,
            output_types: types.into_iter().collect(),
        }
    }

    /// Whether an input that `which` picks covers `ptr`.
    pub(crate) fn covered_by(&self, ptr: &Pointer, which: impl Fn(&Input) -> bool) -> bool {
        self.inputs.iter().zip(&self.kinds).any(|(input, kind)| {
            which(input)
                && (kind == ptr.kind()
                    || (input.is_all_namespaces() && kind.resource_type() == ptr.resource_type()))
                && input.id.as_deref().is_none_or(|id| id == ptr.id())
        })
    }

    pub(crate) fn controller(&self) -> &Arc<str> {
        &self.controller
    }

    pub(crate) fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    pub(crate) fn with_inputs(&self, inputs: Vec<Input>) -> Self {
        AccessRules { kinds: kinds_of(&inputs), inputs, ..self.clone() }
    }

    fn denied(&self, operation: &'static str, resource: String, reason: String) -> Error {
        Error::AccessDenied { controller: self.controller.to_string(), operation, resource, reason }
    }

    /// Whether these are a queue controller's rules (it has a primary input;
    /// registration makes sure every queue controller has one).
    fn is_queue(&self) -> bool {
        self.inputs.iter().any(|i| i.input_kind == InputKind::Primary)
    }

    /// The declaration that would allow reading `kind`, as code to paste.
    fn read_hint(&self, namespace: &str, resource_type: &str) -> String {
        let (input, place) = if self.is_queue() {
            ("Input::mapped", "QueueSettings::inputs")
        } else {
            ("Input::weak", "inputs()")
        };
        format!(
            "declare {input}::<S>({namespace:?}) in {place} (S: the spec type of {resource_type:?}), \
             or Output::exclusive::<S>() in {}",
            if self.is_queue() { "QueueSettings::outputs" } else { "outputs()" }
        )
    }

    /// The declaration that would allow writing `resource_type`.
    fn write_hint(&self, resource_type: &str) -> String {
        format!(
            "declare Output::exclusive::<S>() (or Output::shared::<S>()) in {} (S: the spec type of {resource_type:?})",
            if self.is_queue() { "QueueSettings::outputs" } else { "outputs()" }
        )
    }

    /// The declaration that would allow finalizers on `ptr`.
    fn finalizer_hint(&self, ptr: &Pointer) -> String {
        let (input, place) = if self.is_queue() {
            ("Input::primary (or Input::mapped)", "QueueSettings::inputs")
        } else {
            ("Input::strong", "inputs()")
        };
        format!(
            "declare {input}::<S>({:?}) in {place} (S: the spec type of {:?})",
            ptr.namespace(),
            ptr.resource_type()
        )
    }

    fn is_output(&self, resource_type: &str) -> bool {
        self.output_types.iter().any(|t| t == resource_type)
    }

    pub(crate) fn check_get(&self, ptr: &Pointer) -> Result<(), Error> {
        if self.covered_by(ptr, |_| true) || self.is_output(ptr.resource_type()) {
            Ok(())
        } else {
            Err(self.denied(
                "get",
                ptr.to_string(),
                format!(
                    "it is neither an input nor an output of the controller; {}",
                    self.read_hint(ptr.namespace(), ptr.resource_type())
                ),
            ))
        }
    }

    pub(crate) fn check_list(&self, kind: &Kind) -> Result<(), Error> {
        let covered = self.inputs.iter().any(|i| {
            i.id.is_none()
                && (i.namespace == kind.namespace() || i.is_all_namespaces())
                && i.resource_type == kind.resource_type()
        });
        if covered || self.is_output(kind.resource_type()) {
            return Ok(());
        }
        let id_only = self
            .inputs
            .iter()
            .any(|i| i.namespace == kind.namespace() && i.resource_type == kind.resource_type());
        let hint = self.read_hint(kind.namespace(), kind.resource_type());
        let reason = if id_only {
            format!(
                "the controller's input on this kind is for one id only, which allows get, \
                 not list; to list, {hint} without an id"
            )
        } else {
            format!("it is neither an input nor an output of the controller; {hint}")
        };
        Err(self.denied("list", kind.to_string(), reason))
    }

    /// A list of `resource_type` across every namespace: allowed by an
    /// input on every namespace of the type (without an id) or an output type.
    pub(crate) fn check_list_all_namespaces(&self, resource_type: &str) -> Result<(), Error> {
        let covered = self
            .inputs
            .iter()
            .any(|i| i.id.is_none() && i.is_all_namespaces() && i.resource_type == resource_type);
        if covered || self.is_output(resource_type) {
            return Ok(());
        }
        Err(self.denied(
            "list_all_namespaces",
            format!("{resource_type} in every namespace"),
            format!(
                "no input covers every namespace of it and it is not an output; declare \
                 Input::all_namespaces::<S>(..) (S: the spec type of {resource_type:?})"
            ),
        ))
    }

    pub(crate) fn check_write(&self, operation: &'static str, ptr: &Pointer) -> Result<(), Error> {
        if self.is_output(ptr.resource_type()) {
            Ok(())
        } else {
            Err(self.denied(
                operation,
                ptr.to_string(),
                format!(
                    "type {:?} is not an output of the controller; {}",
                    ptr.resource_type(),
                    self.write_hint(ptr.resource_type())
                ),
            ))
        }
    }

    pub(crate) fn check_finalizer(
        &self,
        operation: &'static str,
        ptr: &Pointer,
    ) -> Result<(), Error> {
        if self.covered_by(ptr, Input::allows_finalizers) {
            Ok(())
        } else {
            Err(self.denied(
                operation,
                ptr.to_string(),
                format!(
                    "finalizers may only be changed on strong (or primary and mapped) inputs; {}",
                    self.finalizer_hint(ptr)
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controller::OutputKind;

    fn rules() -> AccessRules {
        AccessRules::new(
            Arc::from("C"),
            vec![
                Input {
                    namespace: "ns".into(),
                    resource_type: "In".into(),
                    id: None,
                    input_kind: InputKind::Weak,
                },
                Input {
                    namespace: "ns".into(),
                    resource_type: "Strong".into(),
                    id: None,
                    input_kind: InputKind::Strong,
                },
                Input {
                    namespace: "ns".into(),
                    resource_type: "One".into(),
                    id: Some("only".into()),
                    input_kind: InputKind::Strong,
                },
            ],
            &[Output::new("Out", OutputKind::Exclusive)],
        )
    }

    #[test]
    fn reads_need_an_input_or_an_output() {
        let r = rules();
        assert!(r.check_get(&Pointer::new("ns", "In", "x")).is_ok());
        assert!(r.check_get(&Pointer::new("any-ns", "Out", "x")).is_ok());
        assert!(r.check_get(&Pointer::new("other", "In", "x")).is_err());
        let e = r.check_get(&Pointer::new("ns", "Secret", "x")).unwrap_err();
        assert!(e.is_access_denied());
        assert!(e.to_string().contains("ns/Secret/x"), "{e}");
    }

    #[test]
    fn a_denial_names_the_declaration_that_would_allow_it() {
        let r = rules();
        let read = r.check_get(&Pointer::new("ns", "Secret", "x")).unwrap_err().to_string();
        assert!(read.contains(r#"declare Input::weak::<S>("ns") in inputs()"#), "{read}");
        let write =
            r.check_write("modify", &Pointer::new("ns", "In", "x")).unwrap_err().to_string();
        assert!(write.contains("declare Output::exclusive::<S>()"), "{write}");
        let fin = r.check_finalizer("add_finalizer", &Pointer::new("ns", "In", "x")).unwrap_err();
        assert!(fin.to_string().contains(r#"declare Input::strong::<S>("ns")"#), "{fin}");

        let mut primary = Input::new(&Kind::new("ns", "Queued"), InputKind::Primary);
        primary.id = None;
        let queue = AccessRules::new(Arc::from("Q"), vec![primary], &[]);
        let read = queue.check_list(&Kind::new("ns", "Other")).unwrap_err().to_string();
        assert!(
            read.contains(r#"declare Input::mapped::<S>("ns") in QueueSettings::inputs"#),
            "{read}"
        );
    }

    #[test]
    fn an_id_input_allows_get_of_that_id_but_not_list() {
        let r = rules();
        assert!(r.check_get(&Pointer::new("ns", "One", "only")).is_ok());
        assert!(r.check_get(&Pointer::new("ns", "One", "other")).is_err());
        let e = r.check_list(&Kind::new("ns", "One")).unwrap_err();
        assert!(e.to_string().contains("one id only"), "{e}");
        assert!(r.check_list(&Kind::new("ns", "In")).is_ok());
        assert!(r.check_list(&Kind::new("elsewhere", "Out")).is_ok());
    }

    #[test]
    fn writes_need_an_output_type() {
        let r = rules();
        assert!(r.check_write("create", &Pointer::new("any", "Out", "x")).is_ok());
        let e = r.check_write("update", &Pointer::new("ns", "In", "x")).unwrap_err();
        assert!(matches!(e, Error::AccessDenied { operation: "update", .. }));
    }

    #[test]
    fn finalizers_need_a_strong_input() {
        let r = rules();
        assert!(r.check_finalizer("add_finalizer", &Pointer::new("ns", "Strong", "x")).is_ok());
        assert!(r.check_finalizer("add_finalizer", &Pointer::new("ns", "One", "only")).is_ok());
        assert!(r.check_finalizer("add_finalizer", &Pointer::new("ns", "One", "x")).is_err());
        assert!(r.check_finalizer("remove_finalizer", &Pointer::new("ns", "In", "x")).is_err());
        assert!(r.check_finalizer("add_finalizer", &Pointer::new("ns", "Out", "x")).is_err());
    }

    #[test]
    fn an_input_on_every_namespace_allows_reads_and_finalizers_in_any_namespace_of_its_type() {
        let everywhere = Input {
            namespace: crate::controller::ALL_NAMESPACES.into(),
            resource_type: "Every".into(),
            id: None,
            input_kind: InputKind::Primary,
        };
        let rules = AccessRules::new(Arc::from("C"), vec![everywhere], &[]);
        for ns in ["a", "made-later"] {
            let ptr = Pointer::new(ns, "Every", "x");
            assert!(rules.check_get(&ptr).is_ok());
            assert!(rules.check_list(ptr.kind()).is_ok());
            assert!(rules.covered_by(&ptr, |i| i.allows_finalizers()));
        }
        assert!(rules.check_list_all_namespaces("Every").is_ok());
        assert!(rules.check_get(&Pointer::new("a", "Other", "x")).is_err());
        let err = rules.check_list_all_namespaces("Other").unwrap_err();
        assert!(err.to_string().contains("Input::all_namespaces"), "{err}");
        assert!(rules.check_write("create", &Pointer::new("a", "Every", "x")).is_err());
        // A namespaced input does not allow a list across namespaces.
        assert!(super::tests::rules().check_list_all_namespaces("In").is_err());
    }
}
