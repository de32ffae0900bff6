//! Fuses chains of elementwise ops into one kernel ([`Op::Fused`]): a
//! producer whose result only one elementwise consumer reads, of the same
//! shape and float type, joins that consumer, so the chain runs as one loop
//! with its intermediates in registers instead of one pass over memory per
//! op. The producer's computation moves to the consumer's place, so nothing
//! that runs between the two may write what the producer reads or move
//! control.

use ptec_ir::ops::fused::{Fused, FusedStep, StepInput};
use ptec_ir::{Graph, NodeId, Op, ValueId};

use crate::schedule::unchanged_between;

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let mut changed = false;
    let nodes: Vec<NodeId> = graph.schedule().to_vec();
    for consumer in nodes {
        while let Some(producer) = producer_to_fuse(graph, consumer) {
            if merge(graph, consumer, producer).is_none() {
                break;
            }
            changed = true;
        }
    }
    changed
}

/// Whether a node computes in the type of its one output, which is a float,
/// reading only operands of that type.
fn uniformly_float(graph: &Graph<'_>, id: NodeId) -> bool {
    let node = graph.node(id);
    let &[output] = node.outputs() else {
        return false;
    };
    let dtype = graph.value(output).ty.dtype;
    dtype.is_float()
        && node
            .inputs()
            .iter()
            .all(|&input| graph.value(input).ty.dtype == dtype)
}

/// An elementwise node writing an operand of `consumer` that can join it.
fn producer_to_fuse(graph: &Graph<'_>, consumer: NodeId) -> Option<NodeId> {
    let node = graph.node(consumer);
    if !node.op().is_fusable_elementwise() || !uniformly_float(graph, consumer) {
        return None;
    }
    let output = &graph.value(*node.outputs().first()?).ty;
    node.inputs().into_iter().find_map(|value| {
        let [producer] = graph.writers(value)[..] else {
            return None;
        };
        let joins = graph.op(producer).is_fusable_elementwise()
            && uniformly_float(graph, producer)
            && graph.readers(value) == [consumer]
            && !graph.is_live_out(value)
            && graph.value(value).ty.shape == output.shape
            && graph.value(value).ty.dtype == output.dtype
            && unchanged_between(graph, &graph.node(producer).inputs(), producer, consumer);
        joins.then_some(producer)
    })
}

/// A fusable elementwise op as a fused kernel of its own: its steps, over
/// its operands.
pub(crate) fn as_fused(op: &Op) -> Option<Fused> {
    match op {
        Op::Fused(fused) => Some(fused.clone()),
        Op::Elementwise(elementwise) if op.is_fusable_elementwise() => Some(Fused {
            steps: vec![FusedStep {
                func: elementwise.func.clone(),
                inputs: (0..elementwise.inputs.len())
                    .map(StepInput::Input)
                    .collect(),
            }],
            inputs: elementwise.inputs.clone(),
        }),
        _ => None,
    }
}

/// Moves `producer`'s steps in front of `consumer`'s and removes it.
fn merge(graph: &mut Graph<'_>, consumer: NodeId, producer: NodeId) -> Option<()> {
    let fused_value = *graph.node(producer).outputs().first()?;
    let first = as_fused(graph.op(producer))?;
    let second = as_fused(graph.op(consumer))?;
    // The consumer reads the producer's result from its last step.
    let producer_result = StepInput::Step(first.steps.len().checked_sub(1)?);
    let mut inputs: Vec<ValueId> = Vec::new();
    let mut operand = |value: ValueId| {
        if value == fused_value {
            return producer_result;
        }
        let index = inputs.iter().position(|&known| known == value);
        StepInput::Input(index.unwrap_or_else(|| {
            inputs.push(value);
            inputs.len() - 1
        }))
    };
    let mut steps: Vec<FusedStep> = Vec::with_capacity(first.steps.len() + second.steps.len());
    for kernel in [first, second] {
        let offset = steps.len();
        for step in kernel.steps {
            let remapped = step
                .inputs
                .iter()
                .map(|&input| match input {
                    StepInput::Input(k) => operand(kernel.inputs[k]),
                    StepInput::Step(j) => StepInput::Step(j + offset),
                })
                .collect();
            steps.push(FusedStep {
                func: step.func,
                inputs: remapped,
            });
        }
    }
    graph.remove_node(producer);
    graph.set_op(consumer, Op::Fused(Fused { steps, inputs }));
    Some(())
}
