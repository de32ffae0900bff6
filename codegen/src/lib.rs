//! ptec's code generator: turns a verified IR graph into native code with
//! Cranelift. Every node becomes a kernel function specialised to its shapes,
//! strides and element types (symbolic dimensions are read at run time);
//! the method's entry point calls them in order, computing the symbols
//! each needs where the schedule makes them known ([`symbols`]). The same generator serves
//! the JIT and object files through cranelift-module's `Module` trait. The
//! Vulkan back end (`spirv`) turns a planned graph into compute shaders
//! instead. [`support`] says which kinds of op each back end lowers.

mod aot;
mod chain_kernel;
mod define;
mod emit;
mod error;
mod half;
mod jit;
mod kernels;
mod listing;
mod method;
mod microkernel;
mod spirv;
mod symbols;
mod target;

pub use error::{Backend, CodegenError, support};

/// Code generation options, built once and passed in.
#[derive(Debug, Clone, Copy)]
pub struct CodegenOptions {
    /// Use hand-emitted microkernels (GEMM tiles, direct convolutions)
    /// where the target has the instructions; otherwise Cranelift generates
    /// every kernel.
    pub microkernels: bool,
    /// Let the microkernels use AVX-512 where the target has it; otherwise
    /// they use AVX2 (so tests run those forms on AVX-512 machines too).
    pub avx512: bool,
    /// Compute convolutions whose operands the graph proves to be small
    /// integers (the quantized programs' f32 ops on integer-valued floats)
    /// with the integer microkernels, where the target has them.
    pub integer: bool,
    /// Let the integer microkernels use the VNNI dot products (AVX512-VNNI,
    /// AVX-VNNI) where the target has them; otherwise AVX2's `vpmaddwd`
    /// (so tests run that form on VNNI machines too).
    pub vnni: bool,
    /// Mark the time after each kernel for `ptec_runtime::profile` (the
    /// JIT only; [`profiled_kernels`] names them).
    pub profile: bool,
    /// Vulkan: the limits of the device the shaders are for.
    pub vulkan: VulkanLimits,
}

impl Default for CodegenOptions {
    fn default() -> Self {
        CodegenOptions {
            microkernels: true,
            avx512: true,
            integer: true,
            vnni: true,
            profile: false,
            vulkan: VulkanLimits::DEFAULT,
        }
    }
}
pub use aot::{
    AotOptions, Linker, ObjectCode, c_header, compile_object, link_shared_object, write_pool_source,
};
pub use jit::{JitCode, JitMethod, JitSegments, compile_jit, compile_jit_segments};
pub use listing::Listing;
pub use method::{element_type, profiled_kernels};
pub use spirv::{
    BufferRange, CpuKernel, DispatchedKernel, Place, Shader, ShaderDispatch, VulkanLimits,
    VulkanMethod, VulkanSegment, compile_vulkan, vulkan_dispatches, vulkan_placement,
};
pub use target_lexicon::Triple;
