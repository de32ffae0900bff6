//! The IR verifier: checks that a graph is well formed before passes and code
//! generators rely on it. Code generation accepts only verified graphs.
//!
//! The graph-wide rules are here (types are sound, values live inside the
//! arena, nothing is read before it is written, jumps land on labels); each
//! op's own rules come from its definition ([`crate::ops::OpDef::infer`]
//! and [`crate::ops::OpDef::check`]).

use std::collections::HashSet;
use std::fmt;

use crate::graph::{Graph, NodeId, ValueId, ValueKind};
use crate::ops::control::LabelId;
use crate::ops::{Expected, Identical, OpError, Outputs, show};
use crate::types::TensorType;

/// A verification failure: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{graph}: {location}: {problem}")]
pub struct VerifyError {
    pub graph: String,
    pub location: Location,
    pub problem: Problem,
}

/// Where a graph is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Value(ValueId),
    Node {
        node: NodeId,
        op: &'static str,
    },
    /// The method's output.
    Output(ValueId),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Value(value) => write!(f, "{value}"),
            Location::Node { node, op } => write!(f, "{node} ({op})"),
            Location::Output(value) => write!(f, "output {value}"),
        }
    }
}

/// What is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Problem {
    #[error("dim order {0:?} is not a permutation")]
    DimOrder(Vec<u8>),
    #[error("constant of type {ty} holds {bytes} bytes, not {expected}")]
    ConstantSize {
        ty: Box<TensorType>,
        bytes: usize,
        expected: u64,
    },
    #[error("a non-constant value has no memory")]
    Unplaced,
    #[error("bytes at offset {offset} of type {ty} lie outside the {arena}-byte arena")]
    OutsideArena {
        offset: u64,
        ty: Box<TensorType>,
        arena: u64,
    },
    #[error("{0} is read before anything writes it")]
    ReadBeforeWrite(ValueId),
    #[error("{0} is a constant or an input and cannot be written")]
    WritesReadOnly(ValueId),
    #[error("jump to {0}, which is not in the schedule")]
    MissingLabel(LabelId),
    #[error("writes {found} outputs, not {expected}")]
    OutputCount { expected: Outputs, found: usize },
    #[error("output {index} has shape {found} but the inputs imply {expected}")]
    OutputShape {
        index: usize,
        found: String,
        expected: String,
    },
    #[error(transparent)]
    Op(#[from] OpError),
    #[error("no node writes it")]
    NeverWritten,
}

/// Checks the whole graph, every value placed in memory; the first problem
/// found is the error.
pub fn verify(graph: &Graph<'_>) -> Result<(), VerifyError> {
    check(graph, Placement::Required)
}

/// Checks the whole graph, as [`verify`], except that values may still
/// wait for memory: for graphs before memory is planned.
pub fn verify_unplanned(graph: &Graph<'_>) -> Result<(), VerifyError> {
    check(graph, Placement::Pending)
}

/// Whether values must have memory yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Required,
    Pending,
}

fn check(graph: &Graph<'_>, placement: Placement) -> Result<(), VerifyError> {
    let fail = |location: Location, problem: Problem| VerifyError {
        graph: graph.name.clone(),
        location,
        problem,
    };
    let referenced = graph.referenced_values();
    for (id, _) in graph.values() {
        if referenced.contains(&id) {
            check_value(graph, id, placement)
                .map_err(|problem| fail(Location::Value(id), problem))?;
        }
    }

    let labels: HashSet<LabelId> = graph
        .schedule()
        .iter()
        .filter_map(|&node| match graph.op(node) {
            crate::Op::Label(label) => Some(label.label),
            _ => None,
        })
        .collect();
    let mut defined: HashSet<ValueId> = graph
        .values()
        .filter(|(_, value)| !matches!(value.kind, ValueKind::Computed))
        .map(|(id, _)| id)
        .collect();
    for &node_id in graph.schedule() {
        let node = graph.node(node_id);
        let location = Location::Node {
            node: node_id,
            op: node.op().name(),
        };
        let problem = (|| {
            if let Some(&input) = node.inputs().iter().find(|input| !defined.contains(input)) {
                return Err(Problem::ReadBeforeWrite(input));
            }
            for &output in node.outputs() {
                if let ValueKind::Constant(_) | ValueKind::Input(_) = graph.value(output).kind {
                    return Err(Problem::WritesReadOnly(output));
                }
                defined.insert(output);
            }
            match node.op() {
                crate::Op::Jump(jump) if !labels.contains(&jump.label) => {
                    Err(Problem::MissingLabel(jump.label))
                }
                crate::Op::JumpIfFalse(jump) if !labels.contains(&jump.label) => {
                    Err(Problem::MissingLabel(jump.label))
                }
                _ => check_node(graph, node_id),
            }
        })();
        problem.map_err(|problem| fail(location, problem))?;
    }
    for &output in graph.outputs() {
        if !defined.contains(&output) {
            return Err(fail(Location::Output(output), Problem::NeverWritten));
        }
    }
    Ok(())
}

/// A value's type is sound, a constant holds its bytes, and memory, when
/// placed, lies in the arena.
fn check_value(graph: &Graph<'_>, id: ValueId, placement: Placement) -> Result<(), Problem> {
    let value = graph.value(id);
    let ty = &value.ty;
    let mut seen = vec![false; ty.rank()];
    let permutation = ty.dim_order.len() == ty.rank()
        && ty
            .dim_order
            .iter()
            .all(|&d| (d as usize) < ty.rank() && !std::mem::replace(&mut seen[d as usize], true));
    if !permutation {
        return Err(Problem::DimOrder(ty.dim_order.clone()));
    }
    let bytes = ty.max_bytes(|symbol| graph.bound(symbol));
    match (&value.kind, value.offset) {
        (ValueKind::Constant(data), _) => {
            if data.len() as u64 != bytes || ty.fixed_shape().is_none() {
                return Err(Problem::ConstantSize {
                    ty: Box::new(ty.clone()),
                    bytes: data.len(),
                    expected: bytes,
                });
            }
        }
        (_, None) if placement == Placement::Pending => {}
        (_, None) => return Err(Problem::Unplaced),
        (_, Some(offset)) => {
            if offset
                .checked_add(bytes)
                .is_none_or(|end| end > graph.arena_size())
            {
                return Err(Problem::OutsideArena {
                    offset,
                    ty: Box::new(ty.clone()),
                    arena: graph.arena_size(),
                });
            }
        }
    }
    Ok(())
}

/// Checks a node's outputs against its op's rules.
fn check_node(graph: &Graph<'_>, id: NodeId) -> Result<(), Problem> {
    let node = graph.node(id);
    let def = node.op().def();
    let expected_count = def.outputs();
    if !expected_count.allows(node.outputs().len()) {
        return Err(Problem::OutputCount {
            expected: expected_count,
            found: node.outputs().len(),
        });
    }
    let ty = |value: ValueId| &graph.value(value).ty;
    let inputs: Vec<&TensorType> = node.inputs().into_iter().map(ty).collect();
    let outputs: Vec<&TensorType> = node.outputs().iter().map(|&output| ty(output)).collect();
    let expected = def.infer(&inputs, outputs.len(), &mut Identical)?;
    for (index, (output, expected)) in outputs.iter().zip(&expected).enumerate() {
        if let Expected::Shape(shape) = expected
            && *shape != output.shape
        {
            return Err(Problem::OutputShape {
                index,
                found: show(&output.shape),
                expected: show(shape),
            });
        }
    }
    def.check(&inputs, &outputs)?;
    Ok(())
}
