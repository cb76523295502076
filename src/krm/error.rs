//! [`KrmError`]: what can go wrong before a function runs, or while a package
//! is read, written or rendered.

use super::yaml::YamlError;

/// Errors of the KRM layer. Each names the input, file or object it is about.
#[derive(Debug, thiserror::Error)]
pub enum KrmError {
    /// The input is not UTF-8.
    #[error("the input is not UTF-8 (invalid byte at offset {offset})")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The input is not valid YAML (the error names the line).
    #[error("the input is not valid YAML: {0}")]
    Yaml(#[from] YamlError),
    /// The input is YAML but not a `ResourceList`.
    #[error("the input is not a config.kubernetes.io/v1 ResourceList: {reason}")]
    NotResourceList {
        /// What is wrong.
        reason: String,
    },
    /// A package file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The IO error.
        source: std::io::Error,
    },
    /// A package file is not valid YAML.
    #[error("{path}: {source}")]
    File {
        /// The file, relative to the package.
        path: String,
        /// The YAML error (names the line).
        source: YamlError,
    },
    /// A package could not be loaded into the state or rendered there.
    #[error("rendering {object}: {source}")]
    Engine {
        /// The object (or step) concerned.
        object: String,
        /// The engine's error.
        source: crate::Error,
    },
    /// A function could not be registered as a controller.
    #[error("registering function {function}: {reason}")]
    Registration {
        /// The function.
        function: String,
        /// Why.
        reason: String,
    },
}
