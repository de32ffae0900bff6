//! Flatbuffer bindings for the five formats ptec reads: the ExecuTorch
//! program (`ET12`), the bundled program (`BP08`), the FlatTensor data file
//! (`FT01`, a program's weights kept apart), the XNNPACK delegate graph
//! (`XN00`/`XN01`) and the Vulkan delegate graph (`VK00`).
//!
//! The code under `generated/` is written by `flatc --rust` 24.3.25 from the
//! schemas in `fbs/` (`regenerate.sh`), committed, and checked for staleness
//! by this crate's tests. Nothing here checks that a buffer is well formed:
//! callers run the flatbuffers verifier on untrusted bytes before reading.

/// The program schema (`program.fbs`, which includes `scalar_type.fbs`).
#[allow(
    clippy::all,
    mismatched_lifetime_syntaxes,
    unused_imports,
    unused_qualifications,
    unsafe_op_in_unsafe_fn,
    missing_debug_implementations
)]
mod program_generated {
    include!("generated/program_generated.rs");
}

/// The bundled program schema (`bundled_program.fbs`, with its own copy of
/// the scalar types it includes).
#[allow(
    clippy::all,
    mismatched_lifetime_syntaxes,
    unused_imports,
    unused_qualifications,
    unsafe_op_in_unsafe_fn,
    missing_debug_implementations
)]
mod bundled_program_generated {
    include!("generated/bundled_program_generated.rs");
}

#[allow(
    clippy::all,
    mismatched_lifetime_syntaxes,
    unused_imports,
    unused_qualifications,
    unsafe_op_in_unsafe_fn,
    missing_debug_implementations
)]
mod xnnpack_generated {
    include!("generated/xnnpack_generated.rs");
}

#[allow(
    clippy::all,
    mismatched_lifetime_syntaxes,
    unused_imports,
    unused_qualifications,
    unsafe_op_in_unsafe_fn,
    missing_debug_implementations
)]
mod vulkan_generated {
    include!("generated/vulkan_generated.rs");
}

/// The FlatTensor data file schema (`flat_tensor.fbs`, with its own copy of
/// the scalar types it includes).
#[allow(
    clippy::all,
    mismatched_lifetime_syntaxes,
    unused_imports,
    unused_qualifications,
    unsafe_op_in_unsafe_fn,
    missing_debug_implementations
)]
mod flat_tensor_generated {
    include!("generated/flat_tensor_generated.rs");
}

pub use bundled_program_generated::bundled_program_flatbuffer as bundled;
/// The bundled schema's own copy of the scalar type enum (same values as
/// [`program::ScalarType`]).
pub use bundled_program_generated::executorch_flatbuffer::ScalarType as BundledScalarType;
/// The FlatTensor schema's own copy of the scalar type enum (same values as
/// [`program::ScalarType`]).
pub use flat_tensor_generated::executorch_flatbuffer::ScalarType as FlatTensorScalarType;
pub use flat_tensor_generated::flat_tensor_flatbuffer as flat_tensor;
pub use program_generated::executorch_flatbuffer as program;
pub use vulkan_generated::vkgraph as vulkan;
pub use xnnpack_generated::fb_xnnpack as xnnpack;
