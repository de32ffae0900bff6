//! From a frontend method to a runnable instance: import, verify, compile
//! (JIT) and load.

use std::time::Instant;

use anyhow::Context as _;
use ptec_frontend::Method;
use std::sync::{Arc, OnceLock};

use ptec_runtime::library::{Library, LibraryInstance};
use ptec_runtime::vulkan::{VulkanDevice, VulkanInstance};
use ptec_runtime::{HostTensor, Instance, RuntimeError, TensorRef};

use crate::compile::{compile_methods, write_shared_object};

/// The back ends `ptec run`, `test` and `bench` can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// Compile in-process with Cranelift and run the code directly.
    Jit,
    /// Compile to a shared object, load it and call it through its C ABI,
    /// as a C program would.
    Aot,
    /// Generate Vulkan compute shaders (SPIR-V, with naga) and run them on
    /// a Vulkan device (`PTEC_VULKAN_DEVICE` picks one).
    Vulkan,
}

/// A loaded method, from either back end.
#[derive(Debug)]
pub enum Runner<'a> {
    Jit(Box<Instance<'a>>),
    Aot {
        instance: LibraryInstance,
        method: usize,
    },
    Vulkan(Box<VulkanInstance>),
}

impl Runner<'_> {
    pub fn run(&mut self, inputs: &[TensorRef<'_>]) -> Result<Vec<HostTensor>, RuntimeError> {
        match self {
            Runner::Jit(instance) => instance.run(inputs),
            Runner::Aot { instance, method } => instance.run(*method, inputs),
            Runner::Vulkan(instance) => instance.run(inputs),
        }
    }
}

/// An instance and how long it took to compile.
pub struct Loaded<'a> {
    pub instance: Runner<'a>,
    pub compile_ms: f64,
}

/// The compiler switches every compiling command takes.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CompileArgs {
    /// Generate every kernel with Cranelift alone, without the AVX2
    /// microkernels (for comparison).
    #[arg(long)]
    pub no_microkernels: bool,
    /// Switch a pass off (repeatable); `ptec passes` lists them.
    #[arg(long = "disable-pass", value_name = "NAME")]
    pub disabled: Vec<String>,
    /// Run the pipeline up to and including this pass.
    #[arg(long, value_name = "NAME")]
    pub stop_after: Option<String>,
    /// Run the IR verifier after every pass (always on in debug builds).
    #[arg(long)]
    pub verify: bool,
    /// Print how long each pass took, on stderr.
    #[arg(long)]
    pub time_passes: bool,
}

impl CompileArgs {
    pub fn options(&self) -> ptec_passes::PassOptions {
        ptec_passes::PassOptions {
            disabled: self.disabled.clone(),
            stop_after: self.stop_after.clone(),
            verify: self.verify,
        }
    }
}

/// Imports, verifies and optimizes a method.
pub fn optimized_graph<'a>(
    method: &Method<'a>,
    passes: &CompileArgs,
    after: impl FnMut(&ptec_passes::Pass, &ptec_ir::Graph<'_>),
) -> anyhow::Result<ptec_ir::Graph<'a>> {
    let mut graph = ptec_ir::import_method(method)?;
    ptec_ir::verify(&graph)?;
    let reports = ptec_passes::run_pipeline(&mut graph, &passes.options(), after)?;
    if passes.time_passes {
        for report in &reports {
            let changed = if report.changed {
                "changed"
            } else {
                "no change"
            };
            eprintln!(
                "pass {:<21} {:>9.3} ms  {changed}",
                report.name,
                report.time.as_secs_f64() * 1e3
            );
        }
    }
    Ok(graph)
}

pub fn load<'a>(
    method: &Method<'a>,
    backend: Backend,
    passes: &CompileArgs,
) -> anyhow::Result<Loaded<'a>> {
    let start = Instant::now();
    let graph = optimized_graph(method, passes, |_, _| {})?;
    let instance = match backend {
        Backend::Jit => {
            let options = ptec_codegen::CodegenOptions {
                microkernels: !passes.no_microkernels,
            };
            let jit = ptec_codegen::compile_jit(&graph, &options)
                .with_context(|| format!("compiling method {}", method.name))?;
            let ptec_codegen::JitMethod {
                code,
                entry,
                abi,
                constants,
            } = jit;
            // SAFETY: `entry` was generated for `abi` and reads its constants
            // from this table; the boxed code keeps it alive.
            Runner::Jit(Box::new(unsafe {
                Instance::new(abi, entry, constants, Box::new(code))?
            }))
        }
        Backend::Aot => load_shared_object(method, passes)?,
        Backend::Vulkan => {
            let compiled = ptec_codegen::compile_vulkan(&graph)
                .with_context(|| format!("compiling method {} for Vulkan", method.name))?;
            let program = compiled.device_program();
            let instance = VulkanInstance::new(vulkan_device()?, compiled.abi, &program)
                .with_context(|| {
                    format!("loading method {} onto the Vulkan device", method.name)
                })?;
            Runner::Vulkan(Box::new(instance))
        }
    };
    Ok(Loaded {
        instance,
        compile_ms: start.elapsed().as_secs_f64() * 1e3,
    })
}

/// The Vulkan device, opened once per process.
fn vulkan_device() -> anyhow::Result<Arc<VulkanDevice>> {
    static DEVICE: OnceLock<Arc<VulkanDevice>> = OnceLock::new();
    if let Some(device) = DEVICE.get() {
        return Ok(device.clone());
    }
    let device = Arc::new(VulkanDevice::open().context("opening a Vulkan device")?);
    Ok(DEVICE.get_or_init(|| device).clone())
}

/// Compiles `method` into a shared object for this machine, links it in a
/// temporary directory, loads it and creates an instance.
fn load_shared_object<'a>(method: &Method<'_>, passes: &CompileArgs) -> anyhow::Result<Runner<'a>> {
    const PREFIX: &str = "ptec";
    let options = ptec_codegen::AotOptions {
        target: None,
        prefix: PREFIX.to_string(),
        codegen: ptec_codegen::CodegenOptions {
            microkernels: !passes.no_microkernels,
        },
        listing: false,
    };
    let object = compile_methods(&[method], passes, &options)
        .with_context(|| format!("compiling method {}", method.name))?;
    let directory = tempfile::tempdir().context("creating a temporary directory")?;
    let path = directory.path().join("model.so");
    write_shared_object(&object, &ptec_codegen::Linker::for_target(None), &path)?;
    // SAFETY: ptec just wrote this library with this prefix.
    let library = unsafe { Library::open(&path, PREFIX)? };
    let instance = LibraryInstance::new(Arc::new(library))?;
    Ok(Runner::Aot {
        instance,
        method: 0,
    })
}

/// Borrowed views of host tensors, for `Instance::run`.
pub fn refs(tensors: &[HostTensor]) -> Vec<TensorRef<'_>> {
    tensors
        .iter()
        .map(|tensor| TensorRef {
            element: tensor.element,
            sizes: &tensor.sizes,
            data: &tensor.data,
        })
        .collect()
}
