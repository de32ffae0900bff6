//! `ptec inspect`: the library's report of what a file holds, as text for a
//! person or as JSON for a program.

use std::path::{Path, PathBuf};

use ptec_compiler::inspect::Report;

pub fn run(path: &Path, data: &[PathBuf], json: bool) -> anyhow::Result<()> {
    let report = Report::read(path, data)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.to_text());
    }
    Ok(())
}
