//! `ptec compile`: the library's `emit::compile_file`, writing text outputs
//! (asm, ir) to standard output when no output file is given.

use std::path::Path;

use ptec_compiler::emit::{EmitOptions, Emitted, compile_file};

use crate::instance::CompileArgs;

pub fn run(path: &Path, emit: &EmitOptions<'_>, passes: &CompileArgs) -> anyhow::Result<()> {
    match compile_file(path, emit, |reports| passes.report(reports))? {
        Emitted::Text(text) => print!("{text}"),
        Emitted::Written(_) => {}
    }
    Ok(())
}
