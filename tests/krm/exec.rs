//! The example functions as exec binaries, as kpt runs them: piped one into
//! the next, they give the same package as the in-memory pipe. The binaries
//! are the examples `cargo test` builds (`target/<profile>/examples/`); when
//! they are absent (a lone `cargo test --test krm exec::`) the test says so and
//! checks nothing.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::fns;
use cosi_runtime::krm::package::{files_of, read_package};
use cosi_runtime::krm::render::render_pipe;
use cosi_runtime::krm::{Function, ResourceList};

fn examples_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?.parent()?.join("examples");
    dir.join(format!("krm_cluster_config{}", std::env::consts::EXE_SUFFIX)).exists().then_some(dir)
}

fn exec(dir: &Path, name: &str, input: &[u8]) -> (Vec<u8>, i32) {
    let mut child = Command::new(dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input).unwrap();
    let out = child.wait_with_output().unwrap();
    (out.stdout, out.status.code().unwrap_or(-1))
}

#[test]
fn the_three_binaries_piped_give_the_same_package_as_the_in_memory_pipe() {
    let Some(dir) = examples_dir() else {
        eprintln!(
            "SKIPPED: example binaries not built (run `cargo test --workspace` or `cargo build --examples`)"
        );
        return;
    };
    let items =
        read_package(&Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/krm/package")).unwrap();
    let mut data = ResourceList::new(items.clone()).to_yaml().into_bytes();
    for name in ["krm_cluster_config", "krm_configmap_actuator", "krm_package_summary"] {
        let (out, code) = exec(&dir, name, &data);
        assert_eq!(code, 0, "{name}");
        data = out;
    }
    let piped = ResourceList::parse_bytes(&data).unwrap();
    let functions = fns::all();
    let refs: Vec<&dyn Function> = functions.iter().map(|f| f.as_ref()).collect();
    let expected = render_pipe(items, &refs);
    assert_eq!(files_of(&piped.items).unwrap(), files_of(&expected.items).unwrap());
}

#[test]
fn a_binary_exits_1_on_bad_input_and_still_writes_a_resource_list() {
    let Some(dir) = examples_dir() else {
        eprintln!("SKIPPED: example binaries not built");
        return;
    };
    let (out, code) = exec(&dir, "krm_configmap_actuator", b"items: [\n");
    assert_eq!(code, 1);
    let list = ResourceList::parse_bytes(&out).unwrap();
    assert!(list.results[0].message.contains("line"), "{:?}", list.results);
}
