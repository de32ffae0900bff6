//! From methods to code: import, verification, the optimizer, and code
//! generation for one target.

use std::path::Path;

use ptec_codegen::{
    AotOptions, CodegenOptions, JitMethod, Linker, ObjectCode, VulkanMethod, compile_jit,
    compile_object, compile_vulkan, link_shared_object,
};
use ptec_frontend::Method;
use ptec_ir::Graph;
use ptec_passes::{Pass, PassOptions, PassReport, run_pipeline};

use crate::error::Error;

/// How to compile: the optimizer's switches and the code generator's
/// options. Built once, passed in.
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub passes: PassOptions,
    pub codegen: CodegenOptions,
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
    let graphs = methods
        .iter()
        .map(|method| optimize(method, &options.passes, |_, _| {}).map(|done| done.graph))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match target {
        Target::Jit => Compiled::Jit(
            graphs
                .iter()
                .map(|graph| jit(graph, options))
                .collect::<Result<_, _>>()?,
        ),
        Target::Object(aot) => Compiled::Object(object(&graphs, aot)?),
        Target::Vulkan => Compiled::Vulkan(graphs.iter().map(vulkan).collect::<Result<_, _>>()?),
    })
}

/// An optimized graph compiled for this machine, in-process.
pub fn jit<'a>(graph: &Graph<'a>, options: &Options) -> Result<JitMethod<'a>, Error> {
    compile_jit(graph, &options.codegen).map_err(|source| Error::Codegen {
        method: graph.name.clone(),
        target: "the CPU",
        source,
    })
}

/// Optimized graphs compiled into one relocatable object.
pub fn object(graphs: &[Graph<'_>], aot: &AotOptions) -> Result<ObjectCode, Error> {
    compile_object(graphs, aot).map_err(|source| Error::Codegen {
        method: graphs
            .iter()
            .map(|graph| graph.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        target: "an object file",
        source,
    })
}

/// An optimized graph compiled to Vulkan compute shaders.
pub fn vulkan(graph: &Graph<'_>) -> Result<VulkanMethod, Error> {
    compile_vulkan(graph).map_err(|source| Error::Codegen {
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
            listing,
        }
    }
}
