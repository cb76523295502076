//! A file that looks like a state file but is not one (it starts with redb's
//! magic and then goes wrong) is [`StorageFailure::Corrupt`] at open, never
//! an IO error, and stays exactly as it was.

use cosi_runtime::prelude::*;
use cosi_runtime::state::RedbBackend;
use cosi_runtime::testing::conformance::ScratchDir;
use cosi_runtime::{State, StorageFailure};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Spec)]
#[spec(type = "Blobs.test.cosi.dev")]
struct Blob(String);

fn failure(err: &Error) -> Option<StorageFailure> {
    match err {
        Error::Storage { failure, .. } => Some(*failure),
        _ => None,
    }
}

/// Opens `file` both ways (the backend alone and a state on it) and checks
/// that each is refused as corrupt, naming the file, with the bytes unchanged.
async fn assert_refused_as_corrupt(file: &std::path::Path, what: &str) {
    let before = std::fs::read(file).unwrap();
    let err = RedbBackend::open(file).unwrap_err();
    assert_eq!(failure(&err), Some(StorageFailure::Corrupt), "{what}: {err}");
    assert!(err.to_string().contains("state.redb"), "{what}: names the file: {err}");
    assert!(std::fs::read(file).unwrap() == before, "{what}: the file is untouched");
    let err = State::open_durable(file, ["config"]).await.unwrap_err();
    assert_eq!(failure(&err), Some(StorageFailure::Corrupt), "{what}: {err}");
    assert!(std::fs::read(file).unwrap() == before, "{what}: the file is untouched");
}

#[actix::test]
async fn garbage_after_the_redb_magic_is_corrupt_and_left_untouched() {
    let dir = ScratchDir::new();
    let file = dir.path().join("state.redb");
    for (what, bytes) in [
        ("the magic alone", b"redb".to_vec()),
        ("the magic and a little garbage", b"redb, but only by name".to_vec()),
        ("the magic and a lot of garbage", {
            let mut b = b"redb".to_vec();
            b.extend(b"definitely not a b-tree\n".repeat(400));
            b
        }),
        ("the full magic and zeros", {
            let mut b = b"redb\x1A\x0A\xA9\x0D\x0A".to_vec();
            b.extend(vec![0u8; 8192]);
            b
        }),
    ] {
        std::fs::write(&file, &bytes).unwrap();
        assert_refused_as_corrupt(&file, what).await;
    }
}

/// A real state file with a few resources, closed; its length.
async fn write_a_state_file(file: &std::path::Path) -> usize {
    let state = State::open_durable(file, ["config"]).await.unwrap();
    for i in 0..50 {
        let r = Resource::new("config", format!("r{i}"), Blob("x".repeat(200)));
        state.create(r, None).await.unwrap();
    }
    state.close().await.unwrap();
    std::fs::metadata(file).unwrap().len() as usize
}

#[actix::test]
async fn a_truncated_state_file_is_corrupt_and_left_untouched() {
    let dir = ScratchDir::new();
    let original = dir.path().join("original.redb");
    let len = write_a_state_file(&original).await;
    let bytes = std::fs::read(&original).unwrap();
    let file = dir.path().join("state.redb");
    // Cut inside the header, just after it, and in the middle of the data.
    for cut in [5, 16, 64, 200, 512, 4096, len / 2, len - 1] {
        if cut >= len {
            continue;
        }
        std::fs::write(&file, &bytes[..cut]).unwrap();
        assert_refused_as_corrupt(&file, &format!("cut at {cut} of {len} bytes")).await;
    }
}
