//! The JIT: compiles a method into executable memory in this process, or
//! the CPU segments of a method the Vulkan back end runs.

use std::borrow::Cow;

use cranelift_jit::{JITBuilder, JITModule};
use ptec_ir::{Graph, NodeId};
use ptec_runtime::{EntryFn, MethodAbi};

use crate::CodegenOptions;
use crate::define::Definer;
use crate::error::CodegenError;
use crate::method::{Entries, compile_method};
use crate::target::{CodeModel, host_isa};

/// Owns JIT-compiled code and frees it when dropped.
#[allow(missing_debug_implementations)] // JITModule has no Debug.
pub struct JitCode {
    module: Option<JITModule>,
}

// SAFETY: the module owns executable memory and the declarations that
// describe it, and nothing in it is tied to the thread that compiled it; the
// code is only called through the instance that owns this, by one thread at
// a time.
unsafe impl Send for JitCode {}

impl Drop for JitCode {
    fn drop(&mut self) {
        if let Some(module) = self.module.take() {
            // SAFETY: whoever called into this code held the `JitCode` (the
            // runtime keeps it inside the instance), so no call is running
            // or can start once it is dropped.
            unsafe { module.free_memory() };
        }
    }
}

/// A method compiled in-process: its code, its entry point and what the
/// runtime needs to call it.
pub struct JitMethod<'a> {
    /// Owns the executable memory `entry` points into.
    pub code: JitCode,
    pub entry: EntryFn,
    pub abi: MethodAbi,
    /// The constant table: borrowed from the program, or owned when a pass
    /// computed it.
    pub constants: Vec<Cow<'a, [u8]>>,
}

impl std::fmt::Debug for JitMethod<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitMethod")
            .field("abi", &self.abi)
            .finish_non_exhaustive()
    }
}

/// Compiles `graph` for this machine (with every instruction-set extension
/// the CPU reports) and makes it executable; machine code of more than
/// `max_code` bytes is refused ([`CodegenError::CodeLimit`]) before any
/// memory is mapped for it.
pub fn compile_jit<'a>(
    graph: &Graph<'a>,
    options: &CodegenOptions,
    max_code: u64,
) -> Result<JitMethod<'a>, CodegenError> {
    let mut jit = compile_entries(graph, options, max_code, Entries::Method)?;
    Ok(JitMethod {
        entry: jit.entries.remove(0),
        code: jit.code,
        abi: jit.abi,
        constants: jit.constants,
    })
}

/// The CPU segments of a method a Vulkan device runs the rest of, compiled
/// in-process: an entry point per segment, calling its kernels only.
pub struct JitSegments<'a> {
    /// Owns the executable memory the entries point into.
    pub code: JitCode,
    /// Entry `k` runs `segments[k]` of [`compile_jit_segments`].
    pub entries: Vec<EntryFn>,
    /// The method's arena (with the kernels' scratch after the plan's
    /// memory) and the errors the kernels report.
    pub abi: MethodAbi,
    /// The constant table the entries read.
    pub constants: Vec<Cow<'a, [u8]>>,
}

impl std::fmt::Debug for JitSegments<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitSegments")
            .field("entries", &self.entries.len())
            .field("abi", &self.abi)
            .finish_non_exhaustive()
    }
}

/// Compiles the kernels of `segments` (runs of `graph`'s schedule) as the
/// JIT does, with an entry point per segment; as [`compile_jit`] otherwise.
pub fn compile_jit_segments<'a>(
    graph: &Graph<'a>,
    segments: &[Vec<NodeId>],
    options: &CodegenOptions,
    max_code: u64,
) -> Result<JitSegments<'a>, CodegenError> {
    compile_entries(graph, options, max_code, Entries::Segments(segments))
}

fn compile_entries<'a>(
    graph: &Graph<'a>,
    options: &CodegenOptions,
    max_code: u64,
    entries: Entries<'_>,
) -> Result<JitSegments<'a>, CodegenError> {
    let isa = host_isa(CodeModel::Static)?;
    let mut builder = JITBuilder::with_isa(isa, cranelift_module::default_libcall_names());
    // The pool is compiled into the runtime, which this process links.
    builder.symbol(
        ptec_runtime::pool::PARALLEL_FOR_SYMBOL,
        ptec_runtime::pool::PARALLEL_FOR as *const u8,
    );
    builder.symbol(
        ptec_runtime::profile::PROFILE_MARK_SYMBOL,
        ptec_runtime::profile::PROFILE_MARK as *const u8,
    );
    let mut module = JITModule::new(builder);
    let compiled = compile_method(
        &mut module,
        graph,
        &format!("ptec_{}", graph.name),
        options,
        &mut Definer::new(max_code, None),
        entries,
    )?;
    module.finalize_definitions()?;
    let entries = compiled
        .entries
        .iter()
        .map(|&entry| {
            let address = module.get_finalized_function(entry);
            // SAFETY: every entry point was declared with the `(ptr, ptr,
            // ptr, ptr) -> i32` signature of `EntryFn`, in the host's
            // default calling convention.
            unsafe { std::mem::transmute::<*const u8, EntryFn>(address) }
        })
        .collect();
    Ok(JitSegments {
        code: JitCode {
            module: Some(module),
        },
        entries,
        abi: compiled.abi,
        constants: compiled.constants,
    })
}
