//! The IR verifier: checks that a graph is well formed before passes and code
//! generators rely on it. Code generation accepts only verified graphs.

use std::collections::HashSet;

use crate::graph::{Graph, NodeId, ValueId, ValueKind};
use crate::op::{FusedStep, Op, StepInput};
use crate::shape::{self, Expected, Identical};
use crate::types::{DType, Dim};

/// A verification failure: which node (or value) and what is wrong.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{graph}: {at}: {problem}")]
pub struct VerifyError {
    pub graph: String,
    pub at: String,
    pub problem: String,
}

/// Checks the whole graph, every value placed in memory; the first problem
/// found is the error.
pub fn verify(graph: &Graph<'_>) -> Result<(), VerifyError> {
    check(graph, Placement::Required)
}

/// Checks the whole graph, as [`verify`], except that computed values may
/// still wait for memory: for the passes that run before memory is planned
/// afresh.
pub fn verify_unplanned(graph: &Graph<'_>) -> Result<(), VerifyError> {
    check(graph, Placement::Pending)
}

/// Whether computed values must have memory yet.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Placement {
    Required,
    Pending,
}

fn check(graph: &Graph<'_>, placement: Placement) -> Result<(), VerifyError> {
    let fail = |at: String, problem: String| VerifyError {
        graph: graph.name.clone(),
        at,
        problem,
    };
    let referenced = graph.referenced_values();
    for (id, value) in graph.values() {
        if !referenced.contains(&id) {
            continue;
        }
        let ty = &value.ty;
        let mut seen = vec![false; ty.rank()];
        let permutation = ty.dim_order.len() == ty.rank()
            && ty.dim_order.iter().all(|&d| {
                (d as usize) < ty.rank() && !std::mem::replace(&mut seen[d as usize], true)
            });
        if !permutation {
            return Err(fail(
                id.to_string(),
                format!("dim order {:?} is not a permutation", ty.dim_order),
            ));
        }
        match (&value.kind, value.offset) {
            (ValueKind::Constant(bytes), _) => {
                let expected = ty.max_bytes(|symbol| graph.bound(symbol));
                if bytes.len() as u64 != expected || ty.fixed_shape().is_none() {
                    return Err(fail(
                        id.to_string(),
                        format!(
                            "constant of type {ty} holds {} bytes, not {expected}",
                            bytes.len()
                        ),
                    ));
                }
            }
            (ValueKind::Computed, None) if placement == Placement::Pending => {}
            (_, None) => {
                return Err(fail(
                    id.to_string(),
                    "a non-constant value has no memory".into(),
                ));
            }
            (_, Some(offset)) => {
                let end = offset.checked_add(ty.max_bytes(|symbol| graph.bound(symbol)));
                if end.is_none_or(|end| end > graph.arena_size()) {
                    return Err(fail(
                        id.to_string(),
                        format!(
                            "bytes at offset {offset} of type {ty} lie outside the {}-byte arena",
                            graph.arena_size()
                        ),
                    ));
                }
            }
        }
    }

    let labels: HashSet<_> = graph
        .schedule()
        .iter()
        .filter_map(|&node| match graph.node(node).op {
            Op::Label(label) => Some(label),
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
        let at = || format!("{node_id} ({})", node.op.name());
        for &input in &node.inputs {
            if input.index() >= graph.value_count() {
                return Err(fail(at(), format!("input {input} does not exist")));
            }
            if !defined.contains(&input) {
                return Err(fail(
                    at(),
                    format!("{input} is read before anything writes it"),
                ));
            }
        }
        for &output in &node.outputs {
            if output.index() >= graph.value_count() {
                return Err(fail(at(), format!("output {output} does not exist")));
            }
            if let ValueKind::Constant(_) | ValueKind::Input(_) = graph.value(output).kind {
                return Err(fail(
                    at(),
                    format!("{output} is a constant or an input and cannot be written"),
                ));
            }
            defined.insert(output);
        }
        if let Op::JumpIfFalse(label) | Op::Jump(label) = node.op
            && !labels.contains(&label)
        {
            return Err(fail(
                at(),
                format!("jump to {label}, which is not in the schedule"),
            ));
        }
        check_node(graph, node_id).map_err(|problem| fail(at(), problem))?;
    }
    for &output in graph.outputs() {
        if !defined.contains(&output) {
            return Err(fail(format!("output {output}"), "no node writes it".into()));
        }
    }
    Ok(())
}

/// Checks a node's arity and its shapes against its op's rules.
fn check_node(graph: &Graph<'_>, id: NodeId) -> Result<(), String> {
    let node = graph.node(id);
    let ty = |value: ValueId| &graph.value(value).ty;
    let (inputs, outputs) = arity(&node.op);
    let arity_ok = |want: Option<usize>, got: usize| want.is_none_or(|want| want == got);
    if !arity_ok(inputs, node.inputs.len()) || !arity_ok(outputs, node.outputs.len()) {
        return Err(format!(
            "takes {} inputs and {} outputs, not {} and {}",
            inputs.map_or("any number of".to_string(), |n| n.to_string()),
            outputs.map_or("any number of".to_string(), |n| n.to_string()),
            node.inputs.len(),
            node.outputs.len()
        ));
    }
    let input_shapes: Vec<&[Dim]> = node
        .inputs
        .iter()
        .map(|&input| ty(input).shape.as_slice())
        .collect();
    let expected =
        shape::expected_shapes(&node.op, &input_shapes, node.outputs.len(), &mut Identical)?;
    for (index, (&output, expected)) in node.outputs.iter().zip(&expected).enumerate() {
        match expected {
            Expected::Shape(shape) if *shape != ty(output).shape => {
                return Err(format!(
                    "output {index} has shape {} but the inputs imply {}",
                    shape::show(&ty(output).shape),
                    shape::show(shape)
                ));
            }
            _ => {}
        }
    }
    check_given(graph, id)
}

/// Ops whose output shape is not implied by their inputs still constrain it.
fn check_given(graph: &Graph<'_>, id: NodeId) -> Result<(), String> {
    let node = graph.node(id);
    let ty = |value: ValueId| &graph.value(value).ty;
    match &node.op {
        Op::Copy => {
            let (from, to) = (&ty(node.inputs[0]).shape, &ty(node.outputs[0]).shape);
            if !shape::broadcasts_to(from, to) {
                return Err(format!(
                    "cannot copy {} into {}",
                    shape::show(from),
                    shape::show(to)
                ));
            }
        }
        Op::Reshape => {
            let (from, to) = (ty(node.inputs[0]), ty(node.outputs[0]));
            let same_count = match (from.fixed_shape(), to.fixed_shape()) {
                (Some(a), Some(b)) => a.iter().product::<u64>() == b.iter().product::<u64>(),
                _ => {
                    let symbolic = |shape: &[Dim]| {
                        let mut dims: Vec<Dim> = shape
                            .iter()
                            .copied()
                            .filter(|&d| d != Dim::Fixed(1))
                            .collect();
                        dims.sort_by_key(|d| format!("{d}"));
                        dims
                    };
                    symbolic(&from.shape) == symbolic(&to.shape)
                }
            };
            if !same_count || from.dtype != to.dtype || !from.is_contiguous() || !to.is_contiguous()
            {
                return Err(format!("cannot view {from} as {to}"));
            }
        }
        Op::Slice { dim, start, step } => {
            let (from, to) = (&ty(node.inputs[0]).shape, &ty(node.outputs[0]).shape);
            let valid = from.len() == to.len()
                && *dim < from.len()
                && *step > 0
                && from
                    .iter()
                    .zip(to)
                    .enumerate()
                    .all(|(axis, (a, b))| axis == *dim || a == b)
                && match (from[*dim].fixed(), to[*dim].fixed()) {
                    (Some(size), Some(0)) => *start <= size,
                    (Some(size), Some(len)) => start + step * (len - 1) < size,
                    _ => false,
                };
            if !valid {
                return Err(format!(
                    "slice [{start}::{step}] of dim {dim} of {} cannot give {}",
                    shape::show(from),
                    shape::show(to)
                ));
            }
        }
        Op::Fused { steps } => {
            let output = ty(node.outputs[0]).dtype;
            if !output.is_float() {
                return Err(format!(
                    "fused elementwise kernels compute floats, not {output}"
                ));
            }
            if let Some(input) = node.inputs.iter().find(|&&input| ty(input).dtype != output) {
                return Err(format!(
                    "a fused input is {}, the output {output}",
                    ty(*input).dtype
                ));
            }
            check_steps(steps, node.inputs.len())?;
        }
        Op::JumpIfFalse(_) => {
            let condition = ty(node.inputs[0]);
            if condition.dtype != DType::Bool
                || condition
                    .fixed_shape()
                    .is_none_or(|s| s.iter().product::<u64>() != 1)
            {
                return Err(format!("the condition must be one bool, not {condition}"));
            }
        }
        Op::Embedding if !matches!(ty(node.inputs[1]).dtype, DType::I64 | DType::I32) => {
            return Err(format!(
                "embedding indices must be integers, not {}",
                ty(node.inputs[1]).dtype
            ));
        }
        _ => {}
    }
    Ok(())
}

/// The steps of a fused kernel: at least one, each a fusable op with its
/// number of operands, reading only inputs that exist and earlier steps.
fn check_steps(steps: &[FusedStep], inputs: usize) -> Result<(), String> {
    if steps.is_empty() {
        return Err("a fused kernel needs at least one step".to_string());
    }
    for (index, step) in steps.iter().enumerate() {
        if !step.op.is_fusable_elementwise() {
            return Err(format!("step {index} ({}) cannot be fused", step.op.name()));
        }
        let (want, _) = arity(&step.op);
        if want != Some(step.inputs.len()) {
            return Err(format!(
                "step {index} ({}) has {} operands",
                step.op.name(),
                step.inputs.len()
            ));
        }
        for input in &step.inputs {
            let valid = match *input {
                StepInput::Input(k) => k < inputs,
                StepInput::Step(k) => k < index,
            };
            if !valid {
                return Err(format!("step {index} reads {input}, which does not exist"));
            }
        }
    }
    Ok(())
}

/// How many inputs and outputs an op takes (`None`: any number).
fn arity(op: &Op) -> (Option<usize>, Option<usize>) {
    match op {
        Op::Unary(_) | Op::BinaryScalar { .. } | Op::Clamp { .. } | Op::Copy | Op::Reshape => {
            (Some(1), Some(1))
        }
        Op::Permute { .. } | Op::Select { .. } | Op::Slice { .. } => (Some(1), Some(1)),
        Op::LeakyRelu { .. } | Op::Elu { .. } | Op::Pad { .. } | Op::Repeat { .. } => {
            (Some(1), Some(1))
        }
        Op::ArgMin { .. } => (Some(1), Some(1)),
        Op::IndexSelect { .. } => (Some(2), Some(1)),
        Op::Reduce { .. } | Op::ArgMax { .. } | Op::CumSum { .. } | Op::Softmax { .. } => {
            (Some(1), Some(1))
        }
        Op::Binary { .. } | Op::MatMul { .. } | Op::Embedding => (Some(2), Some(1)),
        Op::Where | Op::Addmm { .. } => (Some(3), Some(1)),
        Op::Cat { .. } | Op::Fused { .. } => (None, Some(1)),
        Op::LayerNorm { weight, bias, .. } => {
            (Some(1 + usize::from(*weight) + usize::from(*bias)), Some(3))
        }
        Op::BatchNorm { weight, bias, .. } => {
            (Some(3 + usize::from(*weight) + usize::from(*bias)), None)
        }
        Op::Convolution { bias, residual, .. } => (
            Some(2 + usize::from(*bias) + usize::from(*residual)),
            Some(1),
        ),
        Op::MaxPool2d { .. } => (Some(1), Some(2)),
        Op::AvgPool2d { .. } => (Some(1), Some(1)),
        Op::Full { .. } | Op::Arange { .. } => (Some(0), Some(1)),
        Op::Label(_) | Op::Jump(_) => (Some(0), Some(0)),
        Op::JumpIfFalse(_) => (Some(1), Some(0)),
    }
}
