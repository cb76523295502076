//! Reading a package directory into items and writing items back, file by
//! file, as kpt does: each item carries its file (`internal.config.kubernetes.io/path`)
//! and its position in a multi-document file (`.../index`).
//!
//! Comments are kept (see [`yaml`](super::yaml#comments)): reading a package
//! and writing it back unchanged gives the same bytes for files in kpt's
//! style, comments included.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};

use super::error::KrmError;
use super::object::{
    FILE_ANNOTATIONS, INDEX_ANNOTATION, LEGACY_INDEX_ANNOTATION, LEGACY_PATH_ANNOTATION, Object,
    PATH_ANNOTATION,
};
use super::yaml::{self, Node};

fn io(path: &Path, source: std::io::Error) -> KrmError {
    KrmError::Io { path: path.display().to_string(), source }
}

/// Every `*.yaml`/`*.yml` file and `Kptfile` under `dir` (hidden entries skipped), as
/// slash-delimited paths relative to `dir`, sorted.
pub fn package_files(dir: &Path) -> Result<Vec<String>, KrmError> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), KrmError> {
        let entries = std::fs::read_dir(dir).map_err(|e| io(dir, e))?;
        for entry in entries {
            let entry = entry.map_err(|e| io(dir, e))?;
            let name = entry.file_name().to_string_lossy().to_string();
            if name.starts_with('.') {
                continue;
            }
            let path = entry.path();
            let kind = entry.file_type().map_err(|e| io(&path, e))?;
            if kind.is_dir() {
                walk(root, &path, out)?;
            } else if name.ends_with(".yaml") || name.ends_with(".yml") || name == "Kptfile" {
                let rel = path.strip_prefix(root).unwrap_or(&path);
                let parts: Vec<String> =
                    rel.components().map(|c| c.as_os_str().to_string_lossy().to_string()).collect();
                out.push(parts.join("/"));
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out)?;
    out.sort();
    Ok(out)
}

/// Reads every YAML file of a package; each document becomes an item
/// annotated with its path and index (internal and legacy keys, as kpt does).
/// Empty documents are skipped.
///
/// # Errors
/// [`KrmError::Io`] when a file cannot be read, [`KrmError::File`] (naming
/// the file and line) when one is not valid YAML.
pub fn read_package(dir: &Path) -> Result<Vec<Object>, KrmError> {
    let mut items = Vec::new();
    for rel in package_files(dir)? {
        let path = dir.join(&rel);
        let text = std::fs::read_to_string(&path).map_err(|e| io(&path, e))?;
        let docs = yaml::parse_documents(&text)
            .map_err(|source| KrmError::File { path: rel.clone(), source })?;
        let docs =
            docs.into_iter().filter(|d| !matches!(d, Node::Scalar(s) if s.to_json().is_null()));
        for (index, doc) in docs.enumerate() {
            let mut object = Object::from_node(doc);
            let index = index.to_string();
            object.set_annotation(PATH_ANNOTATION, &rel);
            object.set_annotation(INDEX_ANNOTATION, &index);
            object.set_annotation(LEGACY_PATH_ANNOTATION, &rel);
            object.set_annotation(LEGACY_INDEX_ANNOTATION, &index);
            items.push(object);
        }
    }
    Ok(items)
}

/// The file kpt gives a new item without a path:
/// `<namespace>/<kind-lowercase>_<name>.yaml` (no directory without a namespace).
pub fn default_path(object: &Object) -> String {
    let kind = object.kind().unwrap_or("object").to_lowercase();
    let name = object.name().unwrap_or("unnamed");
    match object.namespace() {
        Some(ns) => format!("{ns}/{kind}_{name}.yaml"),
        None => format!("{kind}_{name}.yaml"),
    }
}

fn safe(rel: &str) -> Option<PathBuf> {
    let path = Path::new(rel);
    let ok = !rel.is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)));
    ok.then(|| path.to_path_buf())
}

/// Groups items into files: path → documents in index order, with the
/// path/index/id annotations removed (items without a path go to
/// [`default_path`]).
///
/// # Errors
/// [`KrmError::Io`] (kind `InvalidInput`) for a path that escapes the package.
pub fn files_of(items: &[Object]) -> Result<BTreeMap<String, String>, KrmError> {
    let mut files: BTreeMap<String, Vec<(u64, usize, Node)>> = BTreeMap::new();
    for (seq, item) in items.iter().enumerate() {
        let (path, index) = item.file().unwrap_or_else(|| (default_path(item), 0));
        if safe(&path).is_none() {
            let reason = std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "the path escapes the package",
            );
            return Err(KrmError::Io { path, source: reason });
        }
        let mut clean = item.clone();
        for key in FILE_ANNOTATIONS {
            clean.remove_annotation(key);
        }
        files.entry(path).or_default().push((index, seq, clean.into_node()));
    }
    Ok(files
        .into_iter()
        .map(|(path, mut docs)| {
            docs.sort_by_key(|(index, seq, _)| (*index, *seq));
            let nodes: Vec<Node> = docs.into_iter().map(|(_, _, n)| n).collect();
            (path, yaml::emit_documents(&nodes))
        })
        .collect())
}

/// Writes items back into `dir`, file by file, and removes the package's YAML
/// files that no item lives in any more. Returns the files written.
///
/// # Errors
/// As [`files_of`], and [`KrmError::Io`] when a file cannot be written or removed.
pub fn write_package(dir: &Path, items: &[Object]) -> Result<Vec<String>, KrmError> {
    let files = files_of(items)?;
    let before: BTreeSet<String> =
        if dir.exists() { package_files(dir)?.into_iter().collect() } else { BTreeSet::new() };
    for (rel, text) in &files {
        let Some(rel_path) = safe(rel) else { continue };
        let path = dir.join(rel_path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
        }
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            std::fs::write(&path, text).map_err(|e| io(&path, e))?;
        }
    }
    for rel in before.iter().filter(|rel| !files.contains_key(*rel)) {
        let path = dir.join(rel);
        std::fs::remove_file(&path).map_err(|e| io(&path, e))?;
    }
    Ok(files.into_keys().collect())
}
