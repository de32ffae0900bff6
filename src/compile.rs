//! `ptec compile`: the library's `emit::compile_file`, writing text outputs
//! (asm, ir) to standard output when no output file is given, or `-o -`.

use std::path::Path;

use ptec_compiler::emit::{Emit, EmitOptions, Emitted, compile_file};

use crate::instance::CompileArgs;

pub fn run(path: &Path, emit: &EmitOptions<'_>, passes: &CompileArgs) -> anyhow::Result<()> {
    let mut emit = emit.clone();
    if emit.output == Some(Path::new("-")) {
        if !matches!(emit.emit, Emit::Asm | Emit::Ir) {
            anyhow::bail!(
                "-o - (standard output) takes --emit asm or ir, not {}",
                emit.emit
            );
        }
        emit.output = None;
    }
    match compile_file(path, &emit, |reports| passes.report(reports))? {
        Emitted::Text(text) => print!("{text}"),
        Emitted::Written(_) => {}
    }
    Ok(())
}
