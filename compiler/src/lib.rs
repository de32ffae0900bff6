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

mod error;
mod load;
mod operators;
mod pipeline;

pub use error::Error;
pub use load::{Backend, Loaded, Runner, element_type_of, load};
pub use operators::{OperatorSource, OperatorSupport, operators};
pub use pipeline::{
    Compiled, Optimized, Options, Target, compile, jit, object, optimize, vulkan,
    write_shared_object,
};
