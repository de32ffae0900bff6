//! Helpers shared by the integration tests: where the shared corpus and the
//! project's fixtures are, and running the `ptec` binary.

#![allow(dead_code)] // Each test binary uses its own subset.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared corpus beside the repository, when it is there (CI has it).
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = repo_dir().join("../shared/corpus");
    dir.is_dir().then_some(dir)
}

/// The `.bpte` files of a folder, sorted.
pub fn bpte_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "bpte"))
        .collect();
    files.sort();
    files
}

/// The project's own fixtures (committed; always present).
pub fn fixture_files() -> Vec<PathBuf> {
    let files = bpte_files(&repo_dir().join("tests/fixtures"));
    assert!(!files.is_empty(), "tests/fixtures has no .bpte files");
    files
}

pub fn ptec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptec"))
        .args(args)
        .output()
        .expect("the ptec binary runs")
}
