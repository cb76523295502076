//! Every committed input goes through its target again: the seed corpus
//! (`corpus/<target>/`) and every input that once crashed one
//! (`regressions/<target>/`). What CI runs of the fuzzing without AFL++.

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).filter(|p| p.is_file()).collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

fn replay(target: &str, dir: &Path) -> usize {
    let run = cosi_fuzz::target(target).expect("a target");
    let inputs = files(dir);
    for file in &inputs {
        let data = std::fs::read(file).unwrap();
        let outcome = std::panic::catch_unwind(|| run(&data));
        assert!(outcome.is_ok(), "{target}: {} crashes it", file.display());
    }
    inputs.len()
}

#[test]
fn every_target_has_a_seed_corpus_and_replays_it_and_its_regressions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut total = 0;
    for (target, _) in cosi_fuzz::TARGETS {
        let seeds = replay(target, &root.join("corpus").join(target));
        assert!(seeds > 0, "{target} has no seed corpus in corpus/{target}/");
        let regressions = replay(target, &root.join("regressions").join(target));
        eprintln!("{target}: {seeds} seeds, {regressions} regressions");
        total += seeds + regressions;
    }
    eprintln!("{total} inputs replayed");
}

#[test]
fn every_corpus_directory_names_a_target() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["corpus", "regressions"] {
        for entry in std::fs::read_dir(root.join(dir)).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            assert!(cosi_fuzz::target(&name).is_some(), "{dir}/{name} is no target");
        }
    }
}

/// The write-ahead log's seeds are logs of the state's format (the fuzzer
/// starts past the checksums): records and writes as built.
#[test]
fn the_state_log_seeds_read_as_logs() {
    use cosi_runtime::state::fuzzing::write_ahead_log;
    let seed = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/state_log").join(name);
        std::fs::read(path).unwrap()
    };
    assert_eq!(write_ahead_log(&seed("two_batches"), 0).unwrap(), (2, 3));
    assert_eq!(write_ahead_log(&seed("two_batches"), 1).unwrap(), (1, 2), "after a checkpoint");
    assert_eq!(write_ahead_log(&seed("torn_tail"), 0).unwrap(), (1, 1));
    assert_eq!(write_ahead_log(&seed("stale_after_restart"), 0).unwrap(), (1, 1));
    let bad = write_ahead_log(&seed("unknown_operation"), 0).unwrap_err();
    assert_eq!(bad.kind(), std::io::ErrorKind::InvalidData);
}
