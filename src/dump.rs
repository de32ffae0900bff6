//! `ptec dump`: a method's IR, as text or as Graphviz DOT.

use std::path::Path;

use anyhow::Context as _;
use clap::ValueEnum;
use ptec_frontend::{ExecutorchFile, FileBytes};

use crate::method::select_method;

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DumpFormat {
    Text,
    Dot,
}

pub fn run(path: &Path, method: Option<&str>, format: DumpFormat) -> anyhow::Result<()> {
    let bytes = FileBytes::open(path)?;
    let file = ExecutorchFile::read(bytes.bytes()).with_context(|| path.display().to_string())?;
    let method = select_method(file.program(), method)?;
    let graph = ptec_ir::import_method(method)?;
    ptec_ir::verify(&graph)?;
    match format {
        DumpFormat::Text => print!("{}", ptec_ir::to_text(&graph)),
        DumpFormat::Dot => print!("{}", ptec_ir::to_dot(&graph)),
    }
    Ok(())
}
