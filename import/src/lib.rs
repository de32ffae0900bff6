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
mod schema;
mod symbols;
mod vulkan;
mod xnnpack;

pub use error::{ImportError, InstructionId, Location, Problem, Unsupported};
pub use program::{dtype_of, import_method};

/// Where an operator key comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum OperatorSource {
    /// A program's KernelCall (`aten::add.out`).
    Program,
    /// A node type of an XNNPACK graph (`XNNAdd`).
    Xnnpack,
    /// An operator call of a Vulkan graph (`aten.add.Tensor`).
    Vulkan,
}

impl OperatorSource {
    pub fn name(self) -> &'static str {
        match self {
            OperatorSource::Program => "program",
            OperatorSource::Xnnpack => "xnnpack",
            OperatorSource::Vulkan => "vulkan",
        }
    }
}

/// An operator key the importers know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Operator {
    pub key: String,
    pub source: OperatorSource,
    /// The kinds of op it becomes, or why the importer refuses it.
    pub emits: Result<Vec<ptec_ir::OpKind>, String>,
}

/// Every operator key the importers know, by source then key.
pub fn operators() -> Vec<Operator> {
    let program = aten::operators().into_iter().map(|(key, emits)| Operator {
        key,
        source: OperatorSource::Program,
        emits: emits.map(<[_]>::to_vec).map_err(str::to_string),
    });
    let mut operators: Vec<Operator> = program
        .chain(xnnpack::node_types())
        .chain(vulkan::operators())
        .collect();
    operators.sort_by(|a, b| (a.source, &a.key).cmp(&(b.source, &b.key)));
    operators
}
