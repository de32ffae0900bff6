//! From methods to code: import, verification, the optimizer, and code
//! generation for one target.

use std::path::Path;

use ptec_codegen::{
    AotOptions, CodegenError, CodegenOptions, JitMethod, JitSegments, Linker, ObjectCode,
    VulkanLimits, VulkanMethod, compile_jit, compile_jit_segments, compile_object, compile_vulkan,
    link_shared_object,
};
use ptec_frontend::Method;
use ptec_ir::{Graph, NodeId};
use ptec_passes::{Pass, PassOptions, PassReport, run_pipeline};

use crate::error::Error;

/// How to compile and run: the optimizer's switches, the code generator's
/// options, the limits on what a method may ask for and the threads a
/// loaded method runs on. Built once, passed in.
#[derive(Debug, Clone)]
pub struct Options {
    pub passes: PassOptions,
    pub codegen: CodegenOptions,
    pub limits: Limits,
    /// The threads a method loaded on the CPU (`jit`, `aot`) splits its
    /// kernels across; 1 runs it on the caller's thread alone. Results are
    /// the same bits whatever the count.
    pub threads: usize,
}

impl Options {
    /// These options for Vulkan shaders: without `fuse-epilogue`, whose
    /// epilogue steps the shaders' convolutions do not compute (a chain
    /// after a convolution is a shader of its own there).
    pub fn for_vulkan(&self) -> Options {
        let mut options = self.clone();
        options.passes.disabled.push("fuse-epilogue".to_string());
        options
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            passes: PassOptions::default(),
            codegen: CodegenOptions::default(),
            limits: Limits::default(),
            threads: 1,
        }
    }
}

/// The most a compiled method may ask of the machine, checked before
/// anything is allocated or mapped for it: a file's shapes decide these
/// sizes, and a file can claim anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The largest arena (planned memory: inputs, outputs, temporaries and
    /// state at their bounds) of one method, in bytes.
    pub max_memory: u64,
    /// The largest generated code (an object file, or a method's SPIR-V),
    /// in bytes.
    pub max_code: u64,
}

impl Limits {
    /// 16 GiB.
    pub const DEFAULT_MAX_MEMORY: u64 = 16 << 30;
    /// 1 GiB.
    pub const DEFAULT_MAX_CODE: u64 = 1 << 30;

    /// Checks the arena a planned graph needs.
    pub fn check_memory(&self, graph: &Graph<'_>) -> Result<(), Error> {
        check_limit(
            &graph.name,
            "planned memory (its arena)",
            graph.arena_size(),
            self.max_memory,
            "--max-memory",
        )
    }

    /// Checks the size of the code generated for `methods`.
    pub fn check_code(&self, methods: &str, bytes: usize) -> Result<(), Error> {
        match bytes as u64 > self.max_code {
            true => Err(code_limit(methods, bytes as u64, self.max_code)),
            false => Ok(()),
        }
    }
}

/// The error for code of `needed` bytes for `methods`, above `limit`.
fn code_limit(methods: &str, needed: u64, limit: u64) -> Error {
    Error::Limit {
        method: methods.to_string(),
        what: "compiled code",
        needed,
        limit,
        option: "--max-code",
    }
}

/// A code generator's error for `methods` on `target`; machine code over
/// the limit is the limit's error, which names the option that raises it.
fn codegen_error(methods: String, target: &'static str, source: CodegenError) -> Error {
    match source {
        CodegenError::CodeLimit { needed, limit, .. } => code_limit(&methods, needed, limit),
        source => Error::Codegen {
            method: methods,
            target,
            source,
        },
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_memory: Limits::DEFAULT_MAX_MEMORY,
            max_code: Limits::DEFAULT_MAX_CODE,
        }
    }
}

fn check_limit(
    method: &str,
    what: &'static str,
    needed: u64,
    limit: u64,
    option: &'static str,
) -> Result<(), Error> {
    if needed > limit {
        return Err(Error::Limit {
            method: method.to_string(),
            what,
            needed,
            limit,
            option,
        });
    }
    Ok(())
}

/// A method through import and the optimizer.
#[derive(Debug)]
pub struct Optimized<'a> {
    /// The graph after the pipeline, its memory planned.
    pub graph: Graph<'a>,
    /// What each pass did, in order.
    pub reports: Vec<PassReport>,
    /// The kernels the imported graph had, before any pass.
    pub imported_kernels: usize,
}

/// Imports, verifies and optimizes a method; `observe` sees the graph
/// after each pass that runs.
pub fn optimize<'a>(
    method: &Method<'a>,
    passes: &PassOptions,
    observe: impl FnMut(&Pass, &Graph<'_>),
) -> Result<Optimized<'a>, Error> {
    let mut graph = ptec_import::import_method(method)?;
    ptec_ir::verify_unplanned(&graph)?;
    let imported_kernels = graph.kernel_count();
    let reports = run_pipeline(&mut graph, passes, observe)?;
    Ok(Optimized {
        graph,
        reports,
        imported_kernels,
    })
}

/// [`optimize`], then the arena the plan needs checked against the limit,
/// before any code generator or runtime allocates for it.
pub fn optimize_within<'a>(
    method: &Method<'a>,
    options: &Options,
    observe: impl FnMut(&Pass, &Graph<'_>),
) -> Result<Optimized<'a>, Error> {
    let optimized = optimize(method, &options.passes, observe)?;
    options.limits.check_memory(&optimized.graph)?;
    Ok(optimized)
}

/// What to generate code for.
#[derive(Debug, Clone)]
pub enum Target {
    /// This machine, in-process.
    Jit,
    /// A relocatable object with a C ABI, for this machine or another.
    Object(AotOptions),
    /// Vulkan compute shaders.
    Vulkan,
}

/// Methods compiled for a [`Target`].
#[derive(Debug)]
pub enum Compiled<'a> {
    /// Each method in its own executable memory.
    Jit(Vec<JitMethod<'a>>),
    /// Every method in one object.
    Object(ObjectCode),
    Vulkan(Vec<VulkanMethod>),
}

/// Optimizes `methods` and generates code for them.
pub fn compile<'a>(
    methods: &[&Method<'a>],
    target: &Target,
    options: &Options,
) -> Result<Compiled<'a>, Error> {
    if methods.is_empty() {
        return Err(Error::NoMethods);
    }
    let vulkan;
    let options = match target {
        Target::Vulkan => {
            vulkan = options.for_vulkan();
            &vulkan
        }
        _ => options,
    };
    let graphs = methods
        .iter()
        .map(|method| optimize_within(method, options, |_, _| {}).map(|done| done.graph))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match target {
        Target::Jit => Compiled::Jit(
            graphs
                .iter()
                .map(|graph| jit(graph, options))
                .collect::<Result<_, _>>()?,
        ),
        Target::Object(aot) => {
            let object = object(&graphs, aot)?;
            options
                .limits
                .check_code(&method_names(&graphs), object.bytes.len())?;
            Compiled::Object(object)
        }
        Target::Vulkan => Compiled::Vulkan(
            graphs
                .iter()
                .map(|graph| vulkan_within(graph, &options.limits, &options.codegen.vulkan))
                .collect::<Result<_, _>>()?,
        ),
    })
}

/// An optimized graph compiled for this machine, in-process.
pub fn jit<'a>(graph: &Graph<'a>, options: &Options) -> Result<JitMethod<'a>, Error> {
    compile_jit(graph, &options.codegen, options.limits.max_code)
        .map_err(|source| codegen_error(graph.name.clone(), "the CPU", source))
}

/// The CPU segments of an optimized graph a Vulkan device runs the rest of
/// (`VulkanMethod::cpu_segments`), compiled for this machine, in-process.
pub fn jit_segments<'a>(
    graph: &Graph<'a>,
    segments: &[Vec<NodeId>],
    options: &Options,
) -> Result<JitSegments<'a>, Error> {
    compile_jit_segments(graph, segments, &options.codegen, options.limits.max_code)
        .map_err(|source| codegen_error(graph.name.clone(), "the CPU", source))
}

/// Optimized graphs compiled into one relocatable object.
pub fn object(graphs: &[Graph<'_>], aot: &AotOptions) -> Result<ObjectCode, Error> {
    compile_object(graphs, aot)
        .map_err(|source| codegen_error(method_names(graphs), "an object file", source))
}

/// The names of the graphs' methods, for messages.
pub(crate) fn method_names(graphs: &[Graph<'_>]) -> String {
    graphs
        .iter()
        .map(|graph| graph.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// [`vulkan`], its shaders' SPIR-V checked against the code limit.
pub fn vulkan_within(
    graph: &Graph<'_>,
    limits: &Limits,
    device: &VulkanLimits,
) -> Result<VulkanMethod, Error> {
    let compiled = vulkan(graph, device)?;
    let words: usize = compiled
        .shaders
        .iter()
        .map(|shader| shader.spirv.len())
        .sum();
    limits.check_code(&graph.name, words * 4)?;
    Ok(compiled)
}

/// An optimized graph compiled to Vulkan compute shaders, for a device of
/// `limits` ([`VulkanLimits::DEFAULT`] where no device is at hand).
pub fn vulkan(graph: &Graph<'_>, limits: &VulkanLimits) -> Result<VulkanMethod, Error> {
    compile_vulkan(graph, limits).map_err(|source| Error::Codegen {
        method: graph.name.clone(),
        target: "Vulkan",
        source,
    })
}

/// Writes `object` as a shared object at `output`, linked by `linker`
/// (through an object file in a temporary directory).
pub fn write_shared_object(
    object: &ObjectCode,
    linker: &Linker,
    output: &Path,
) -> Result<(), Error> {
    let io = |what: String| move |source| Error::Io { what, source };
    let directory = tempfile::tempdir().map_err(io("creating a temporary directory".into()))?;
    let object_path = directory.path().join("model.o");
    std::fs::write(&object_path, &object.bytes)
        .map_err(io(format!("writing {}", object_path.display())))?;
    link_shared_object(linker, &object_path, output).map_err(Error::Link)
}

impl Options {
    /// What `compile` needs for an object for `target` (this machine when
    /// `None`), its symbols prefixed with `prefix`, with a listing of the
    /// machine code when asked.
    pub fn aot(
        &self,
        target: Option<ptec_codegen::Triple>,
        prefix: &str,
        listing: bool,
    ) -> AotOptions {
        AotOptions {
            target,
            prefix: prefix.to_string(),
            codegen: self.codegen,
            max_code: self.limits.max_code,
            listing,
        }
    }
}
