//! ptec as a library: the one way from an ExecuTorch method to running code,
//! shared by the command line, the tests, the benchmarks and bindings.
//!
//! [`optimize`] imports a method (`ptec-import`), verifies it and runs the
//! optimizer (`ptec-passes`); [`compile`] then generates code for a
//! [`Target`] (`ptec-codegen`: in-process with the JIT, an object file with
//! a C ABI, or Vulkan compute shaders); [`load`] does all of it for one
//! [`Backend`] and returns a [`Runner`] that runs the method (`ptec-runtime`).
//! [`operators`] lists every operator key ptec imports and what each back
//! end makes of it.
//!
//! What the command line and the Python package both do is here too:
//! [`inspect`] reports what a file holds, [`bundled`] runs a bundled
//! program's test cases, [`emit`] compiles a file ahead of time into files,
//! and [`file`] holds programs and loaded methods that own their bytes.

pub mod bundled;
pub mod emit;
mod error;
pub mod file;
pub mod inspect;
mod load;
mod operators;
mod pipeline;
mod spirv_dir;
pub mod tensors;

pub use error::{Error, full_message};
pub use load::{Backend, Loaded, Runner, element_type_of, instantiate, load};
pub use operators::{OperatorSource, OperatorSupport, operators};
pub use pipeline::{
    Compiled, Limits, Optimized, Options, Target, compile, jit, object, optimize, optimize_within,
    vulkan, vulkan_within, write_shared_object,
};
