//! Controllers used by several runtime tests.

use std::marker::PhantomData;

use cosi_runtime::prelude::*;

use super::{IntSpec, NS, SentenceSpec, StrSpec};

/// Turns every input `I` into an output `O` with the same id, holding a
/// finalizer on each input while its output exists: the canonical teardown
/// flow (strong input, destroy-ready input on the own output type).
pub struct Transform<I, O> {
    name: &'static str,
    namespace: String,
    map: fn(&I) -> O,
    _types: PhantomData<fn() -> (I, O)>,
}

impl<I: Spec, O: Spec + Default> Transform<I, O> {
    pub fn new(name: &'static str, namespace: &str, map: fn(&I) -> O) -> Self {
        Transform { name, namespace: namespace.to_owned(), map, _types: PhantomData }
    }
}

impl<I: Spec, O: Spec + Default> Controller for Transform<I, O> {
    fn name(&self) -> &str {
        self.name
    }

    fn inputs(&self) -> Vec<Input> {
        vec![Input::strong::<I>(&self.namespace), Input::destroy_ready::<O>(&self.namespace)]
    }

    fn outputs(&self) -> Vec<Output> {
        vec![Output::exclusive::<O>()]
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let inputs = cx.list_typed::<I>(&self.namespace, &LabelQuery::all()).await?;
        for input in &inputs {
            let out = Pointer::typed::<O>(&self.namespace, input.id());
            if input.phase() == Phase::Running {
                if !input.metadata().finalizers().contains(self.name)
                    && !cx.add_finalizer(input.pointer()).await?
                {
                    continue; // destroyed or tearing down since the list
                }
                let value = (self.map)(input.spec());
                cx.modify(&out, move |o: &mut Resource<O>| *o.spec_mut() = value.clone()).await?;
            } else if cx.release(&out).await? {
                cx.remove_finalizer(input.pointer()).await?;
            }
        }
        // Outputs whose input is gone are torn down too.
        for output in cx.list(&Kind::of::<O>(&self.namespace), &LabelQuery::all()).await? {
            if !inputs.iter().any(|i| i.id() == output.id()) {
                cx.release(output.pointer()).await?;
            }
        }
        Ok(())
    }
}

/// Integer → its decimal string.
pub fn int_to_str() -> Transform<IntSpec, StrSpec> {
    Transform::new("IntToStr", NS, |i: &IntSpec| StrSpec(i.0.to_string()))
}

/// String → "<string> sentence".
pub fn str_to_sentence() -> Transform<StrSpec, SentenceSpec> {
    Transform::new("StrToSentence", NS, |s: &StrSpec| SentenceSpec(format!("{} sentence", s.0)))
}

/// Sums every integer in `source` into the integer `target` (a shared output).
pub struct Sum {
    pub name: String,
    pub source: String,
    pub target: Pointer,
}

impl Controller for Sum {
    fn name(&self) -> &str {
        &self.name
    }

    fn inputs(&self) -> Vec<Input> {
        vec![Input::weak::<IntSpec>(&self.source)]
    }

    fn outputs(&self) -> Vec<Output> {
        vec![Output::shared::<IntSpec>()]
    }

    async fn reconcile(&mut self, cx: &mut ReconcileContext) -> ReconcileResult {
        let total: i64 = cx
            .list_typed::<IntSpec>(&self.source, &LabelQuery::all())
            .await?
            .iter()
            .map(|r| r.spec().0)
            .sum();
        cx.modify(&self.target, move |r: &mut Resource<IntSpec>| r.spec_mut().0 = total).await?;
        Ok(())
    }
}

/// A controller that only declares: for registration tests.
#[derive(Clone)]
pub struct Declared {
    pub name: &'static str,
    pub inputs: Vec<Input>,
    pub outputs: Vec<Output>,
}

impl Declared {
    pub fn new(name: &'static str) -> Self {
        Declared { name, inputs: vec![], outputs: vec![] }
    }

    pub fn input(mut self, input: Input) -> Self {
        self.inputs.push(input);
        self
    }

    pub fn output(mut self, output: Output) -> Self {
        self.outputs.push(output);
        self
    }
}

impl Controller for Declared {
    fn name(&self) -> &str {
        self.name
    }

    fn inputs(&self) -> Vec<Input> {
        self.inputs.clone()
    }

    fn outputs(&self) -> Vec<Output> {
        self.outputs.clone()
    }

    async fn reconcile(&mut self, _: &mut ReconcileContext) -> ReconcileResult {
        Ok(())
    }
}
