//! Fuses chains of elementwise ops into one kernel ([`Op::Fused`]): a
//! producer whose result only one elementwise consumer reads, of the same
//! shape and float type, joins that consumer, so the chain runs as one loop
//! with its intermediates in registers instead of one pass over memory per
//! op. Nothing that runs between the two may write what the producer reads
//! or move control; unless memory is planned afresh afterwards, the two must
//! also run back to back and the result must not share memory with the
//! producer's inputs.

use ptec_ir::{FusedStep, Graph, NodeId, Op, StepInput, ValueId};

use crate::Context;
use crate::schedule::{overlaps_inputs, unchanged_between};

pub(crate) fn run(graph: &mut Graph<'_>, context: &Context) -> bool {
    let mut changed = false;
    let nodes: Vec<NodeId> = graph.schedule().to_vec();
    for consumer in nodes {
        while let Some(producer) = producer_to_fuse(graph, consumer, context) {
            merge(graph, consumer, producer);
            changed = true;
        }
    }
    if changed {
        graph.rebuild_edges();
    }
    changed
}

fn fusable(op: &Op) -> bool {
    op.is_fusable_elementwise() || matches!(op, Op::Fused { .. })
}

/// Whether a node computes in the type of its one output, which is a float,
/// reading only inputs of that type.
fn uniformly_float(graph: &Graph<'_>, id: NodeId) -> bool {
    let node = graph.node(id);
    let [output] = node.outputs[..] else {
        return false;
    };
    let dtype = graph.value(output).ty.dtype;
    dtype.is_float()
        && node
            .inputs
            .iter()
            .all(|&input| graph.value(input).ty.dtype == dtype)
}

/// An elementwise node writing an input of `consumer` that can join it.
fn producer_to_fuse(graph: &Graph<'_>, consumer: NodeId, context: &Context) -> Option<NodeId> {
    let node = graph.node(consumer);
    if !fusable(&node.op) || !uniformly_float(graph, consumer) {
        return None;
    }
    let output = &graph.value(node.outputs[0]).ty;
    node.inputs.iter().find_map(|&value| {
        let [producer] = graph.writers(value)[..] else {
            return None;
        };
        let joins = fusable(&graph.node(producer).op)
            && uniformly_float(graph, producer)
            && graph.readers(value) == [consumer]
            && !graph.is_live_out(value)
            && graph.value(value).ty.shape == output.shape
            && graph.value(value).ty.dtype == output.dtype
            && nothing_between(graph, producer, consumer, context);
        joins.then_some(producer)
    })
}

/// Whether the producer's computation can move to the consumer's place.
fn nothing_between(
    graph: &Graph<'_>,
    producer: NodeId,
    consumer: NodeId,
    context: &Context,
) -> bool {
    if !context.replan {
        let schedule = graph.schedule();
        let adjacent = schedule.windows(2).any(|pair| pair == [producer, consumer]);
        let result = graph.node(consumer).outputs[0];
        return adjacent && !overlaps_inputs(graph, producer, result);
    }
    unchanged_between(graph, &graph.node(producer).inputs, producer, consumer)
}

/// A node's computation as steps over its inputs.
fn steps_of(op: &Op, inputs: usize) -> Vec<FusedStep> {
    match op {
        Op::Fused { steps } => steps.clone(),
        op => vec![FusedStep {
            op: op.clone(),
            inputs: (0..inputs).map(StepInput::Input).collect(),
        }],
    }
}

/// Moves `producer`'s steps in front of `consumer`'s and removes it.
fn merge(graph: &mut Graph<'_>, consumer: NodeId, producer: NodeId) {
    let (producer_node, consumer_node) = (graph.node(producer), graph.node(consumer));
    let fused_value = producer_node.outputs[0];
    let producer_steps = steps_of(&producer_node.op, producer_node.inputs.len());
    let consumer_steps = steps_of(&consumer_node.op, consumer_node.inputs.len());
    let (producer_inputs, consumer_inputs) =
        (producer_node.inputs.clone(), consumer_node.inputs.clone());
    let mut inputs: Vec<ValueId> = Vec::new();
    let mut index_of = |value: ValueId| match inputs.iter().position(|&known| known == value) {
        Some(index) => index,
        None => {
            inputs.push(value);
            inputs.len() - 1
        }
    };
    let mut steps = Vec::with_capacity(producer_steps.len() + consumer_steps.len());
    for step in producer_steps {
        let remapped = step
            .inputs
            .iter()
            .map(|&input| match input {
                StepInput::Input(k) => StepInput::Input(index_of(producer_inputs[k])),
                step => step,
            })
            .collect();
        steps.push(FusedStep {
            op: step.op,
            inputs: remapped,
        });
    }
    let offset = steps.len();
    for step in consumer_steps {
        let remapped = step
            .inputs
            .iter()
            .map(|&input| match input {
                StepInput::Input(k) if consumer_inputs[k] == fused_value => {
                    StepInput::Step(offset - 1)
                }
                StepInput::Input(k) => StepInput::Input(index_of(consumer_inputs[k])),
                StepInput::Step(j) => StepInput::Step(j + offset),
            })
            .collect();
        steps.push(FusedStep {
            op: step.op,
            inputs: remapped,
        });
    }
    let node = graph.node_mut(consumer);
    node.op = Op::Fused { steps };
    node.inputs = inputs;
    graph.remove_node(producer);
}
