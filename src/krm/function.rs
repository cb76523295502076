//! [`Function`]: a KRM function, and how it runs: [`apply`] on a parsed list
//! (validate, then process a copy, all or nothing), [`run`] on bytes, and
//! [`run_stdio`], the whole `main` of an exec function for kpt.

use std::io::{Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};

use super::object::{
    Gvk, ID_ANNOTATION, INDEX_ANNOTATION, LEGACY_ID_ANNOTATION, LEGACY_INDEX_ANNOTATION,
    LEGACY_PATH_ANNOTATION, Object, PATH_ANNOTATION,
};
use super::resource_list::ResourceList;
use super::results::{FnResult, Severity};
use super::validate::validate_items;

/// What a function reads and writes, by GVK: how it is wired as a controller
/// when a package renders in process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Declaration {
    /// The parent GVK (a strong input).
    pub for_: Option<Gvk>,
    /// Child GVKs (outputs; read too, to find existing children).
    pub owns: Vec<Gvk>,
    /// Extra GVKs read (weak inputs).
    pub watches: Vec<Gvk>,
}

impl Declaration {
    /// Every GVK the function reads, the Kptfile included, without repeats.
    pub fn reads(&self) -> Vec<Gvk> {
        let mut all: Vec<Gvk> = Vec::new();
        let candidates = self.for_.iter().chain(&self.owns).chain(&self.watches).cloned();
        for gvk in candidates.chain(std::iter::once(Gvk::kptfile())) {
            if !all.contains(&gvk) {
                all.push(gvk);
            }
        }
        all
    }
}

/// A KRM function: reads a [`ResourceList`] and changes it.
///
/// Implement [`process`](Function::process) for a function of your own, or
/// use the fn-runtime builders: [`Upstream`](super::Upstream),
/// [`Downstream`](super::Downstream) and [`Wildcard`](super::Wildcard).
pub trait Function: Send + Sync {
    /// The function's name (used for controllers and messages).
    fn name(&self) -> &str;

    /// What it reads and writes.
    fn declaration(&self) -> Declaration;

    /// Whether a package without a Kptfile is an error (default: yes, as the
    /// condition choreography lives in the Kptfile).
    fn requires_kptfile(&self) -> bool {
        true
    }

    /// Changes the list (already validated); reports through `list.results`.
    /// Any `error` result makes the run fail and the input items come back
    /// unchanged.
    fn process(&self, list: &mut ResourceList);
}

/// Validates `list` and runs `function` on a copy. If validation or the
/// function produce any `error` result (or the function panics), the items
/// are returned unchanged with all results; otherwise the function's list.
pub fn apply(function: &dyn Function, mut list: ResourceList) -> ResourceList {
    if let Err(problems) = check(function, &list) {
        list.results.extend(problems);
        return list;
    }
    match run_checked(function, list.clone()) {
        Ok(mut work) => {
            restore_comments(&list.items, &mut work.items);
            work
        }
        Err(results) => {
            list.results.extend(results);
            list
        }
    }
}

/// [`apply`] without the copy it keeps to give the input back: the function's
/// list, or (when validation or the function fail) only the results to add to
/// the input's. For callers that drop the items of a failed run (the
/// in-process render), where a copy of every item would be a large part of
/// a run.
/// The caller restores the inputs' comments from its own copy of them
/// ([`restore_comments`]), as [`apply`] does.
pub(crate) fn apply_consuming(
    function: &dyn Function,
    list: ResourceList,
) -> Result<ResourceList, Vec<FnResult>> {
    check(function, &list)?;
    run_checked(function, list)
}

/// Validation, and the Kptfile a function may require.
fn check(function: &dyn Function, list: &ResourceList) -> Result<(), Vec<FnResult>> {
    let mut problems = validate_items(&list.items);
    if function.requires_kptfile() && list.kptfile().is_none() {
        problems.push(FnResult::error("mandatory Kptfile is missing from the package"));
    }
    if problems.is_empty() { Ok(()) } else { Err(problems) }
}

/// Runs the function on `work`: the list, or the results it added when it
/// panicked or reported an `error`.
fn run_checked(
    function: &dyn Function,
    mut work: ResourceList,
) -> Result<ResourceList, Vec<FnResult>> {
    let known = work.results.len();
    let outcome = catch_unwind(AssertUnwindSafe(|| function.process(&mut work)));
    if outcome.is_err() {
        return Err(vec![FnResult::error(format!("function {} panicked", function.name()))]);
    }
    if work.results[known..].iter().any(|r| r.severity == Severity::Error) {
        return Err(work.results.drain(known..).collect());
    }
    Ok(work)
}

/// Which input an output item is: kpt's id annotation, or its file and index.
fn origin(object: &Object) -> Option<(&str, &str)> {
    let get = |a: &str, b: &str| object.annotation(a).or_else(|| object.annotation(b));
    if let Some(id) = get(ID_ANNOTATION, LEGACY_ID_ANNOTATION) {
        return Some((id, ""));
    }
    let path = get(PATH_ANNOTATION, LEGACY_PATH_ANNOTATION)?;
    let index = get(INDEX_ANNOTATION, LEGACY_INDEX_ANNOTATION).unwrap_or("0");
    Some((path, index))
}

/// Gives each output item the comments of the input item it came from
/// ([`origin`]), field by field, where the function left it none: what kpt
/// does after each function, so a comment survives a function that rebuilds
/// the object or replaces a value.
pub(crate) fn restore_comments<'a>(
    inputs: impl IntoIterator<Item = &'a Object>,
    outputs: &mut [Object],
) {
    let by_origin: crate::hashing::SeededMap<(&str, &str), &Object> =
        inputs.into_iter().filter_map(|o| Some((origin(o)?, o))).collect();
    if by_origin.is_empty() {
        return;
    }
    for output in outputs {
        let input = origin(output).and_then(|key| by_origin.get(&key).copied());
        // An output still sharing its input's node has its comments already
        // (and copying would copy the node for nothing).
        if let Some(input) = input.filter(|input| !input.shares_node(output)) {
            super::yaml::copy_comments(input.node(), output.node_mut());
        }
    }
}

/// What a run produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Output {
    /// The output `ResourceList` (YAML).
    pub stdout: String,
    /// Human-readable messages (one result per line).
    pub stderr: String,
    /// 0 on success, 1 if any `error` result is present.
    pub exit_code: i32,
}

/// Runs `function` on the bytes of a `ResourceList`. Never panics: input that
/// is not a ResourceList gives an empty list with an `error` result.
pub fn run(function: &dyn Function, input: &[u8]) -> Output {
    let list = match ResourceList::parse_bytes(input) {
        Ok(list) => apply(function, list),
        Err(e) => {
            let mut list = ResourceList::default();
            list.results.push(FnResult::error(e.to_string()));
            list
        }
    };
    let stderr: String =
        list.results.iter().map(|r| format!("{}: {r}\n", function.name())).collect();
    Output { stdout: list.to_yaml(), stderr, exit_code: list.exit_code() }
}

/// The whole binary for `kpt fn eval --exec ./my-fn` (or `kpt fn render`):
/// reads stdin, writes the list to stdout and messages to stderr.
///
/// ```no_run
/// # struct MyFn;
/// # impl cosi_runtime::krm::Function for MyFn {
/// #     fn name(&self) -> &str { "my-fn" }
/// #     fn declaration(&self) -> cosi_runtime::krm::Declaration { Default::default() }
/// #     fn process(&self, _: &mut cosi_runtime::krm::ResourceList) {}
/// # }
/// fn main() -> std::process::ExitCode {
///     cosi_runtime::krm::run_stdio(&MyFn)
/// }
/// ```
pub fn run_stdio(function: &dyn Function) -> std::process::ExitCode {
    let mut input = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        let _ = writeln!(std::io::stderr(), "{}: reading stdin: {e}", function.name());
        return std::process::ExitCode::FAILURE;
    }
    let out = run(function, &input);
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_all(out.stdout.as_bytes()).and_then(|()| stdout.flush()) {
        let _ = writeln!(std::io::stderr(), "{}: writing stdout: {e}", function.name());
        return std::process::ExitCode::FAILURE;
    }
    let _ = std::io::stderr().write_all(out.stderr.as_bytes());
    if out.exit_code == 0 {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krm::yaml::{self, Node};

    fn item(text: &str) -> Object {
        Object::from_node(yaml::parse_document(text).unwrap())
    }

    #[test]
    fn an_output_item_gets_the_comments_of_its_input_by_id_or_by_path_and_index() {
        let annotated =
            |extra: &str| format!("kind: A # kind\nmetadata:\n  name: x\n  annotations:\n{extra}");
        let by_path = "    internal.config.kubernetes.io/path: a.yaml\n    internal.config.kubernetes.io/index: '1'\n";
        let by_id = "    internal.config.kubernetes.io/id: '7'\n";
        for (input, output, kept) in [
            (by_path, by_path, true),
            (by_id, by_id, true),
            (
                by_path,
                "    internal.config.kubernetes.io/path: a.yaml\n    internal.config.kubernetes.io/index: '0'\n",
                false,
            ),
            (by_id, "", false),
        ] {
            let inputs = [item(&annotated(input))];
            let rebuilt = Node::from_json(&item(&annotated(output)).node().to_json());
            let mut outputs = [Object::from_node(rebuilt)];
            restore_comments(&inputs, &mut outputs);
            let comment = outputs[0].node().get("kind").unwrap().comments().line.clone();
            assert_eq!(comment.is_some(), kept, "{input} -> {output}");
        }
    }
}
