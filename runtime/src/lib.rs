//! ptec's runtime: the thin layer between a caller and generated code. It
//! owns a method's memory (one zeroed arena holding activations, inputs,
//! outputs and state that persists across calls), checks inputs against the
//! method's types (element type, rank, fixed sizes, symbolic sizes within
//! their bounds), binds symbolic dimensions, calls the entry point and
//! returns outputs. It does not depend on the code generator: an
//! [`abi::MethodAbi`] and an [`abi::EntryFn`] are all it needs.
//!
//! [`c_abi`] defines the C interface of compiled shared objects, and
//! [`library`] runs such a shared object through that interface, as a C
//! program would. [`pool`] is the thread pool kernels split their work
//! on, [`profile`] records the time of each kernel of profiled code.
//! [`vulkan`] runs SPIR-V compute programs on a Vulkan device, with
//! generated CPU code between their segments. [`Code`] holds generated
//! entry points with their constants.

pub mod abi;
pub mod c_abi;
mod code;
mod instance;
mod layout;
pub mod library;
pub mod pool;
pub mod profile;
pub mod vulkan;

pub use abi::{DimSpec, ElementType, EntryFn, MethodAbi, StateSlot, TensorSlot};
pub use code::Code;
pub use instance::{HostTensor, Instance, RuntimeError, TensorRef};
