//! Import: ExecuTorch methods, read by the frontend, become ptec IR graphs.
//!
//! Kernel calls become ops through the operator table (`aten.rs`, ATen's
//! out-variant convention: `out` arguments become outputs); calls of
//! XNNPACK delegates become the ops of their graphs' nodes (`xnnpack.rs`),
//! calls of Vulkan delegates the ops of their operator calls (`vulkan.rs`,
//! through the same table); moves become copies; jumps become labels and
//! jumps; frees are dropped. The file's aliasing (views, state) becomes
//! explicit in the graph, which carries no memory placement
//! (`program.rs`).

mod aten;
mod call;
mod error;
mod program;
mod symbols;
mod vulkan;
mod xnnpack;

pub use aten::operators as aten_operators;
pub use error::{ImportError, InstructionId, Location, Problem};
pub use program::{dtype_of, import_method};
