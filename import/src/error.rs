//! Why a method cannot be imported, and where.

use std::collections::BTreeMap;
use std::fmt;

use ptec_ir::ops::OpError;

/// An instruction of the method: `chain.index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct InstructionId {
    pub chain: usize,
    pub index: usize,
}

impl fmt::Display for InstructionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.chain, self.index)
    }
}

/// Where in a method import found a problem.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// The method's inputs.
    Inputs,
    /// The method's outputs.
    Outputs,
    Instruction(InstructionId),
    /// A KernelCall, with the operator it calls.
    KernelCall {
        instruction: InstructionId,
        operator: String,
    },
    /// A node of the XNNPACK graph a DelegateCall runs.
    XnnpackNode {
        instruction: InstructionId,
        node: usize,
        kind: &'static str,
        debug_handle: u32,
    },
    /// The outputs of an XNNPACK graph.
    XnnpackOutputs(InstructionId),
    /// An operator call of the Vulkan graph a DelegateCall runs.
    VulkanCall {
        instruction: InstructionId,
        node: usize,
        name: String,
    },
    /// The outputs of a Vulkan graph.
    VulkanOutputs(InstructionId),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Inputs => f.write_str("the inputs"),
            Location::Outputs => f.write_str("the outputs"),
            Location::Instruction(at) => write!(f, "instruction {at}"),
            Location::KernelCall {
                instruction,
                operator,
            } => write!(f, "instruction {instruction} ({operator})"),
            Location::XnnpackNode {
                instruction,
                node,
                kind,
                debug_handle,
            } => write!(
                f,
                "instruction {instruction}, XNNPACK node {node} ({kind}, debug handle {debug_handle})"
            ),
            Location::XnnpackOutputs(at) => write!(f, "instruction {at}, XNNPACK outputs"),
            Location::VulkanCall {
                instruction,
                node,
                name,
            } => write!(
                f,
                "instruction {instruction}, Vulkan chain[{node}] ({name})"
            ),
            Location::VulkanOutputs(at) => write!(f, "instruction {at}, Vulkan outputs"),
        }
    }
}

/// What is wrong with a method.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Problem {
    /// A call with more or fewer arguments than its operator's schema.
    #[error("{operator} takes {expected} arguments, the call gives {given}")]
    ArgumentCount {
        operator: &'static str,
        expected: usize,
        given: usize,
    },
    /// An argument of another kind than its schema's type.
    #[error("argument `{name}` (position {position}) must be {expected}, not {found}")]
    ArgumentKind {
        name: &'static str,
        position: usize,
        expected: String,
        found: &'static str,
    },
    /// An argument whose value the operator does not accept.
    #[error("argument `{name}`: {why}")]
    Argument { name: &'static str, why: String },
    /// A KernelCall whose result value is not the tensors it writes.
    #[error("the result of {operator} must be its out arguments, not another {found}")]
    Result {
        operator: &'static str,
        found: &'static str,
    },
    /// An op's rule rejects its operands.
    #[error("{op}: {error}")]
    Rule { op: &'static str, error: OpError },
    /// What an op computes disagrees with what the file declares.
    #[error("{op}: output {output}: the op implies {inferred} but the file declares {declared}")]
    DeclaredShape {
        op: &'static str,
        output: usize,
        inferred: String,
        declared: String,
    },
    /// Anything else the file contradicts itself in.
    #[error("{0}")]
    Invalid(String),
}

/// Why a method cannot be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// Operators ptec does not implement, each with every instruction that
    /// calls it.
    #[error("unsupported operators in method {method}: {}", list_unsupported(.operators))]
    UnsupportedOperators {
        method: String,
        operators: BTreeMap<String, Unsupported>,
    },
    /// An XNNPACK node ptec cannot compile: its node type, or a value,
    /// attribute or flag it uses.
    #[error(
        "method {method}, instruction {at}: XNNPACK node {node} ({kind}, debug handle {debug_handle}): {what} is not supported"
    )]
    UnsupportedXnnpack {
        method: String,
        at: InstructionId,
        /// The node's index in the delegate's graph.
        node: usize,
        /// The node type, e.g. `XNNConvTranspose2d`.
        kind: &'static str,
        debug_handle: u32,
        what: String,
    },
    /// An operator call of a Vulkan delegate ptec cannot compile: the
    /// operator, or a value it uses.
    #[error(
        "method {method}, instruction {at}: Vulkan operator call {node} ({name}): {what} is not supported"
    )]
    UnsupportedVulkan {
        method: String,
        at: InstructionId,
        /// The call's position in the delegate graph's chain.
        node: usize,
        /// The operator, e.g. `aten.add.Tensor`.
        name: String,
        what: String,
    },
    #[error("method {method}, {location}: {problem}")]
    Invalid {
        method: String,
        location: Location,
        /// Boxed: the problems are many and rarely built.
        problem: Box<Problem>,
    },
}

/// The calls of one operator ptec cannot import.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unsupported {
    pub instructions: Vec<InstructionId>,
    /// Why, when ptec knows the operator but refuses it.
    pub why: Option<&'static str>,
}

fn list_unsupported(operators: &BTreeMap<String, Unsupported>) -> String {
    operators
        .iter()
        .map(|(name, calls)| {
            let places: Vec<String> = calls.instructions.iter().map(ToString::to_string).collect();
            let why = calls.why.map(|why| format!(": {why}")).unwrap_or_default();
            format!("{name} (instructions {}){why}", places.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}
