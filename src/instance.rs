//! The compiler switches every compiling command takes, and running
//! methods on host tensors; the work itself is the compiler library's
//! (`ptec-compiler`).

use ptec_codegen::VulkanLimits;
use ptec_compiler::{Limits, Loaded, Options};
use ptec_frontend::Method;
use ptec_passes::PassReport;

pub use ptec_compiler::Backend;

/// The compiler switches every compiling command takes.
#[derive(Debug, Clone, clap::Args)]
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
    /// The most planned memory (arena) a method may need, in bytes; a
    /// method that needs more is refused before anything is allocated.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT_MAX_MEMORY)]
    pub max_memory: u64,
    /// The most generated code (an object file, a method's SPIR-V) may
    /// take, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = Limits::DEFAULT_MAX_CODE)]
    pub max_code: u64,
    /// The threads a method's kernels are split across (run, test and
    /// bench on the CPU; 1: one thread, no pool). Default: the number of
    /// physical cores this process may use.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Vulkan: the most texels of 16 bytes a texel buffer view holds on the
    /// device the shaders are for (its maxTexelBufferElements); shaders read
    /// a buffer with more through storage. A device runs them with its own
    /// limit if lower.
    #[arg(long, value_name = "N", default_value_t = VulkanLimits::DEFAULT.texel_buffer_elements)]
    pub texel_buffer_elements: u64,
    /// Vulkan: the most bytes one binding of a buffer shows a shader on
    /// the device the shaders are for (its maxStorageBufferRange). Where
    /// the constants or the arena are larger, each dispatch binds the part
    /// it reads and writes, and a kernel that touches more runs on the CPU.
    /// Default: the device's own when one runs the program, 134217728 (what
    /// lavapipe and many mobile GPUs offer) for `compile --emit spirv`; a
    /// device runs them with its own limit if lower.
    #[arg(long, value_name = "BYTES")]
    pub storage_buffer_range: Option<u64>,
}

impl CompileArgs {
    pub fn options(&self) -> Options {
        Options {
            passes: ptec_passes::PassOptions {
                disabled: self.disabled.clone(),
                stop_after: self.stop_after.clone(),
                verify: self.verify,
            },
            codegen: ptec_codegen::CodegenOptions {
                microkernels: !self.no_microkernels,
                vulkan: VulkanLimits {
                    texel_buffer_elements: self.texel_buffer_elements,
                    storage_buffer_range: self.storage_buffer_range,
                },
                ..ptec_codegen::CodegenOptions::default()
            },
            threads: self
                .threads
                .map_or_else(ptec_runtime::pool::physical_cores, |n| n as usize),
            limits: Limits {
                max_memory: self.max_memory,
                max_code: self.max_code,
            },
        }
    }

    /// Prints how long each pass took, when asked to.
    pub fn report(&self, reports: &[PassReport]) {
        if !self.time_passes {
            return;
        }
        let width = ptec_passes::PIPELINE
            .iter()
            .map(|pass| pass.name.len())
            .max()
            .unwrap_or_default();
        for report in reports {
            let changed = if report.changed {
                "changed"
            } else {
                "no change"
            };
            eprintln!(
                "pass {:<width$} {:>9.3} ms  {changed}",
                report.name,
                report.time.as_secs_f64() * 1e3
            );
        }
    }
}

/// Compiles `method` for `backend` and makes an instance of it.
pub fn load<'a>(
    method: &Method<'a>,
    backend: Backend,
    passes: &CompileArgs,
) -> anyhow::Result<Loaded<'a>> {
    load_with(method, backend, passes, &passes.options())
}

/// [`load`] with `options` the command's own flags changed from
/// `passes.options()` (`bench --profile`).
pub fn load_with<'a>(
    method: &Method<'a>,
    backend: Backend,
    passes: &CompileArgs,
    options: &Options,
) -> anyhow::Result<Loaded<'a>> {
    let loaded = ptec_compiler::load(method, backend, options)?;
    passes.report(&loaded.passes);
    Ok(loaded)
}
