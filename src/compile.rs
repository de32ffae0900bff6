//! `ptec compile`: a program's methods as a shared object or object file
//! with a C ABI (and its header), or as the listing of the generated machine
//! code, or as optimized IR.

use std::path::{Path, PathBuf};
use std::str::FromStr as _;

use anyhow::{Context as _, bail};
use clap::ValueEnum;
use ptec_codegen::{Linker, Triple};
use ptec_frontend::{ExecutorchFile, FileBytes, Method};

use crate::instance::CompileArgs;
use crate::method::select_method;

/// What `ptec compile` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Emit {
    /// A shared object needing only libc and libm.
    So,
    /// A relocatable object, for static linking.
    Obj,
    /// The generated machine code, disassembled per function.
    Asm,
    /// The optimized IR of each method.
    Ir,
    /// Vulkan compute shaders: a directory of SPIR-V modules (and their
    /// WGSL), the constants and a manifest of the dispatches.
    Spirv,
}

impl Emit {
    fn extension(self) -> &'static str {
        match self {
            Emit::So => "so",
            Emit::Obj => "o",
            Emit::Asm => "s",
            Emit::Ir => "ir",
            Emit::Spirv => "spirv",
        }
    }
}

pub struct CompileOptions<'o> {
    /// Where to write; by default `<file stem>.<so|o>` for libraries and
    /// standard output for text.
    pub output: Option<&'o Path>,
    pub emit: Emit,
    pub target: Option<&'o str>,
    /// Compile only this method.
    pub method: Option<&'o str>,
    pub header: Option<&'o Path>,
    pub prefix: &'o str,
    pub linker: Option<&'o str>,
    pub passes: &'o CompileArgs,
}

/// Parses a target-lexicon triple such as `aarch64-unknown-linux-gnu`.
pub fn parse_target(target: &str) -> anyhow::Result<Triple> {
    Triple::from_str(target).map_err(|error| anyhow::anyhow!("target {target:?}: {error}"))
}

/// Imports and optimizes `methods`.
fn optimized_graphs<'a>(
    methods: &[&Method<'a>],
    passes: &CompileArgs,
) -> anyhow::Result<Vec<ptec_ir::Graph<'a>>> {
    let options = passes.options();
    methods
        .iter()
        .map(|method| {
            let optimized = ptec_compiler::optimize(method, &options.passes, |_, _| {})
                .with_context(|| format!("optimizing method {}", method.name))?;
            passes.report(&optimized.reports);
            Ok(optimized.graph)
        })
        .collect()
}

pub fn run(path: &Path, options: CompileOptions<'_>) -> anyhow::Result<()> {
    let bytes = FileBytes::open(path)?;
    let file = ExecutorchFile::read(bytes.bytes()).with_context(|| path.display().to_string())?;
    let program = file.program();
    let methods: Vec<&Method<'_>> = match options.method {
        Some(name) => vec![select_method(program, Some(name))?],
        None => program.methods.iter().collect(),
    };
    if methods.is_empty() {
        bail!("the program has no methods");
    }
    let target = options.target.map(parse_target).transpose()?;
    let default_output = || {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let stem = stem.split('.').next().unwrap_or("model").to_string();
        PathBuf::from(format!("{stem}.{}", options.emit.extension()))
    };
    if options.emit == Emit::Ir {
        let graphs = optimized_graphs(&methods, options.passes)?;
        let text: String = graphs.iter().map(ptec_ir::to_text).collect();
        return write_text(options.output, &text);
    }
    if options.emit == Emit::Spirv {
        let graphs = optimized_graphs(&methods, options.passes)?;
        let compiled = graphs
            .iter()
            .map(ptec_compiler::vulkan)
            .collect::<Result<Vec<_>, _>>()?;
        let output = options
            .output
            .map_or_else(default_output, Path::to_path_buf);
        return crate::spirv::write_directory(&output, &compiled);
    }
    let aot =
        options
            .passes
            .options()
            .aot(target.clone(), options.prefix, options.emit == Emit::Asm);
    let graphs = optimized_graphs(&methods, options.passes)?;
    let object = ptec_compiler::object(&graphs, &aot)?;
    if let Some(header) = options.header {
        let source = path.file_name().unwrap_or_default().to_string_lossy();
        let text = ptec_codegen::c_header(options.prefix, &source, &object.methods);
        std::fs::write(header, text).with_context(|| format!("writing {}", header.display()))?;
    }
    if options.emit == Emit::Asm {
        let listing = object.listing.as_ref().map(ptec_codegen::Listing::render);
        return write_text(options.output, &listing.unwrap_or_default());
    }
    let output = options
        .output
        .map_or_else(default_output, Path::to_path_buf);
    if options.emit == Emit::Obj {
        return std::fs::write(&output, &object.bytes)
            .with_context(|| format!("writing {}", output.display()));
    }
    let linker = match options.linker {
        Some(command) => Linker {
            command: command.to_string(),
        },
        None => Linker::for_target(target.as_ref()),
    };
    Ok(ptec_compiler::write_shared_object(
        &object, &linker, &output,
    )?)
}

/// Writes `text` to `output`, or to standard output.
fn write_text(output: Option<&Path>, text: &str) -> anyhow::Result<()> {
    match output {
        Some(output) => {
            std::fs::write(output, text).with_context(|| format!("writing {}", output.display()))
        }
        None => {
            print!("{text}");
            Ok(())
        }
    }
}
