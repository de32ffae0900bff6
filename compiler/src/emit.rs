//! Compiling a program's file ahead of time into files: a shared object or
//! object file with a C ABI (and its C header), the listing of the generated
//! machine code, the optimized IR, or a directory of Vulkan compute shaders.
//! `ptec compile` and the Python package's `ptec.compile` share it.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ptec_codegen::{Linker, Triple};
use ptec_frontend::Method;
use ptec_ir::Graph;
use ptec_passes::PassReport;

use crate::error::Error;
use crate::file::ProgramFile;
use crate::pipeline::{
    Options, method_names, object, optimize_within, vulkan_within, write_shared_object,
};

/// What to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    pub const ALL: [Emit; 5] = [Emit::So, Emit::Obj, Emit::Asm, Emit::Ir, Emit::Spirv];

    pub fn name(self) -> &'static str {
        match self {
            Emit::So => "so",
            Emit::Obj => "obj",
            Emit::Asm => "asm",
            Emit::Ir => "ir",
            Emit::Spirv => "spirv",
        }
    }

    /// The extension of the default output's name.
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

impl fmt::Display for Emit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Emit {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Emit::ALL
            .into_iter()
            .find(|emit| emit.name() == name)
            .ok_or_else(|| format!("{name:?} is not an output kind (so, obj, asm, ir or spirv)"))
    }
}

/// How to compile a file.
#[derive(Debug, Clone)]
pub struct EmitOptions<'o> {
    /// Where to write; by default `<file stem>.<so|o|spirv>` in the current
    /// directory for libraries and shaders, and the caller for text.
    pub output: Option<&'o Path>,
    pub emit: Emit,
    /// A target-lexicon triple (default: this machine, with every extension
    /// its CPU has).
    pub target: Option<&'o str>,
    /// Compile only this method (default: all).
    pub method: Option<&'o str>,
    /// Also write the C header of the library here.
    pub header: Option<&'o Path>,
    /// The prefix of the exported functions.
    pub prefix: &'o str,
    /// The C compiler driver that links shared objects (default: `cc`, or
    /// `<arch>-linux-gnu-gcc` for another architecture).
    pub linker: Option<&'o str>,
    pub options: &'o Options,
    /// The program's data files (`.ptd`): what they hold is embedded in the
    /// library like the program's own constants, so the library is one
    /// self-contained artifact.
    pub data: &'o [PathBuf],
}

/// What compiling wrote.
#[derive(Debug)]
pub enum Emitted {
    /// A file or directory, at this path.
    Written(PathBuf),
    /// Text (asm, ir) for the caller, when no output path was given.
    Text(String),
}

/// Parses a target-lexicon triple such as `aarch64-unknown-linux-gnu`.
pub fn parse_target(target: &str) -> Result<Triple, Error> {
    Triple::from_str(target).map_err(|error| Error::Target {
        target: target.to_string(),
        problem: error.to_string(),
    })
}

/// Compiles the program at `path` as `options` say; `report` sees what the
/// passes did for each method.
pub fn compile_file(
    path: &Path,
    options: &EmitOptions<'_>,
    mut report: impl FnMut(&[PassReport]),
) -> Result<Emitted, Error> {
    let program = ProgramFile::open(path, options.data)?;
    let methods: Vec<&Method<'_>> = match options.method {
        Some(name) => vec![program.method(name)?],
        None => program.program().methods.iter().collect(),
    };
    if methods.is_empty() {
        return Err(Error::NoMethods);
    }
    let target = options.target.map(parse_target).transpose()?;
    let vulkan = options.options.for_vulkan();
    let passes = match options.emit {
        Emit::Spirv => &vulkan,
        _ => options.options,
    };
    let graphs = methods
        .iter()
        .map(|method| {
            let optimized = optimize_within(method, passes, |_, _| {})?;
            report(&optimized.reports);
            Ok(optimized.graph)
        })
        .collect::<Result<Vec<Graph<'_>>, Error>>()?;
    let output = options.output.map(Path::to_path_buf).unwrap_or_else(|| {
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        let stem = stem.split('.').next().unwrap_or("model").to_string();
        PathBuf::from(format!("{stem}.{}", options.emit.extension()))
    });
    let text = |text: String| match options.output {
        Some(output) => write(output, text.as_bytes()).map(|()| Emitted::Written(output.into())),
        None => Ok(Emitted::Text(text)),
    };
    match options.emit {
        Emit::Ir => return text(graphs.iter().map(ptec_ir::to_text).collect()),
        Emit::Spirv => {
            let (limits, device) = (&options.options.limits, &options.options.codegen.vulkan);
            let compiled = graphs
                .iter()
                .map(|graph| vulkan_within(graph, limits, device))
                .collect::<Result<Vec<_>, _>>()?;
            crate::spirv_dir::write_directory(&output, &compiled)?;
            return Ok(Emitted::Written(output));
        }
        Emit::So | Emit::Obj | Emit::Asm => {}
    }
    let aot = options
        .options
        .aot(target.clone(), options.prefix, options.emit == Emit::Asm);
    let object = object(&graphs, &aot)?;
    options
        .options
        .limits
        .check_code(&method_names(&graphs), object.bytes.len())?;
    if let Some(header) = options.header {
        let source = path.file_name().unwrap_or_default().to_string_lossy();
        let text = ptec_codegen::c_header(options.prefix, &source, &object.methods);
        write(header, text.as_bytes())?;
    }
    if options.emit == Emit::Asm {
        let listing = object.listing.as_ref().map(ptec_codegen::Listing::render);
        return text(listing.unwrap_or_default());
    }
    if options.emit == Emit::Obj {
        // The object calls the thread pool, whose source goes beside it.
        write(&output, &object.bytes)?;
        ptec_codegen::write_pool_source(&output).map_err(|source| Error::Io {
            what: format!(
                "writing the thread pool's source beside {}",
                output.display()
            ),
            source,
        })?;
        return Ok(Emitted::Written(output));
    }
    let linker = match options.linker {
        Some(command) => Linker {
            command: command.to_string(),
        },
        None => Linker::for_target(target.as_ref()),
    };
    write_shared_object(&object, &linker, &output)?;
    Ok(Emitted::Written(output))
}

/// Writes `bytes` to `path`.
pub(crate) fn write(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    std::fs::write(path, bytes).map_err(|source| Error::Io {
        what: format!("writing {}", path.display()),
        source,
    })
}
