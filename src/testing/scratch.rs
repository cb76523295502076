//! A scratch directory for tests, removed on drop: used by the conformance
//! suite's targets and by the throwaway etcd, and re-exported as
//! [`conformance::ScratchDir`](super::conformance::ScratchDir).

use std::path::PathBuf;

/// A fresh directory under the system's temporary directory, removed on drop.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A new, empty directory.
    ///
    /// # Panics
    /// If it cannot be created (a test setup failure).
    pub fn new() -> Self {
        let name = format!("cosi-conformance-{}-{:016x}", std::process::id(), fastrand::u64(..));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&dir).expect("create a scratch directory");
        ScratchDir(dir)
    }

    /// Its path.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Default for ScratchDir {
    fn default() -> Self {
        ScratchDir::new()
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
