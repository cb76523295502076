//! `cosi-fuzz TARGET [FILE...]`.
//!
//! Built by `cargo afl build` (`--cfg fuzzing`): runs TARGET under AFL++ in
//! persistent mode (`scripts/fuzz.sh TARGET SECS` starts it). Built plainly:
//! replays each FILE (or each file of each directory) through TARGET, e.g. to
//! reproduce a crash AFL++ saved.

use std::path::PathBuf;
use std::process::ExitCode;

fn usage() -> ExitCode {
    let names: Vec<&str> = cosi_fuzz::TARGETS.iter().map(|(n, _)| *n).collect();
    eprintln!("usage: cosi-fuzz TARGET [FILE...]   (targets: {})", names.join(", "));
    ExitCode::from(2)
}

#[cfg(fuzzing)]
fn run(target: cosi_fuzz::Target, _files: &[PathBuf]) -> ExitCode {
    afl::fuzz!(|data: &[u8]| target(data));
    ExitCode::SUCCESS
}

#[cfg(not(fuzzing))]
fn run(target: cosi_fuzz::Target, files: &[PathBuf]) -> ExitCode {
    fn each(path: &std::path::Path, out: &mut Vec<PathBuf>) {
        match std::fs::read_dir(path) {
            Ok(dir) => {
                let mut entries: Vec<PathBuf> = dir.flatten().map(|e| e.path()).collect();
                entries.sort();
                entries.iter().for_each(|p| each(p, out));
            }
            Err(_) => out.push(path.to_owned()),
        }
    }
    let mut all = Vec::new();
    files.iter().for_each(|f| each(f, &mut all));
    for file in &all {
        let data = match std::fs::read(file) {
            Ok(data) => data,
            Err(e) => {
                eprintln!("{}: {e}", file.display());
                return ExitCode::FAILURE;
            }
        };
        eprintln!("{}", file.display());
        target(&data);
    }
    eprintln!("{} inputs, no crash", all.len());
    ExitCode::SUCCESS
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else { return usage() };
    let Some(target) = cosi_fuzz::target(name) else { return usage() };
    let files: Vec<PathBuf> = args[1..].iter().map(PathBuf::from).collect();
    run(target, &files)
}
