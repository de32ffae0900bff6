//! The entries of a directory a command reads (a run's step folders, the
//! bundled programs `ptec test` is given a directory of), in the lexical
//! order of their names, so runs go the same way on every file system.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// The entries of `dir` that `keep` keeps, sorted by name.
pub fn sorted_entries(dir: &Path, keep: impl Fn(&Path) -> bool) -> anyhow::Result<Vec<PathBuf>> {
    let cannot_read = || format!("cannot read {}", dir.display());
    let mut kept = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(cannot_read)? {
        let path = entry.with_context(cannot_read)?.path();
        if keep(&path) {
            kept.push(path);
        }
    }
    kept.sort();
    Ok(kept)
}
