//! Dim-order propagation: stores the results of convolutions, and of the
//! elementwise ops that follow them, channels-last (NHWC), which is the
//! order the code generator's convolutions compute fastest (a pixel's
//! channels contiguous: GEMMs over pixels, depthwise filters vectorized
//! over channels).
//!
//! A value becomes channels-last only where nothing observes its layout:
//! an f32 4-D value of fixed shape, computed by one node (a convolution
//! whose filter is a constant, or an elementwise op reading a channels-last
//! value of its own shape), that is no output or state of the method, and
//! whose every reader reads any dim order: elementwise maps and copies,
//! reductions, and convolutions (as their input, or as the residual of a
//! channels-last result; a residual is read in the result's layout). Any
//! other reader (a reshape, which reinterprets bytes; pooling; a
//! concatenation) keeps the value as it is, and that may in turn keep the
//! values it comes from. So no conversion is ever inserted: at each
//! boundary the kernel on one side converts as it reads or writes (a
//! convolution reads an NCHW input and writes NHWC, an elementwise op reads
//! NHWC and writes NCHW), which costs no extra kernel.
//!
//! The filters of channels-last convolutions are stored HWIO, converted
//! here once. The pass needs memory planned afresh (the file's plan may
//! place a result over its input, which must then share its layout).

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use ptec_ir::{
    CHANNELS_LAST, DType, FILTER_HWIO, Graph, NodeId, Op, TensorType, ValueData, ValueId, ValueKind,
};

use crate::Context;
use crate::tensor_data::{constant_bytes, relayout};

pub(crate) fn run(graph: &mut Graph<'_>, context: &Context) -> bool {
    if !context.replan {
        return false;
    }
    let chosen = choose(graph);
    if chosen.is_empty() {
        return false;
    }
    let mut filters: HashMap<ValueId, ValueId> = HashMap::new();
    for id in graph.schedule().to_vec() {
        let node = graph.node(id);
        if !matches!(node.op, Op::Convolution { .. }) || !chosen.contains(&node.outputs[0]) {
            continue;
        }
        let filter = node.inputs[1];
        let packed = match filters.get(&filter) {
            Some(&packed) => packed,
            None => {
                let packed = hwio(graph, filter);
                filters.insert(filter, packed);
                packed
            }
        };
        graph.node_mut(id).inputs[1] = packed;
    }
    for value in chosen {
        graph.value_mut(value).ty.dim_order = CHANNELS_LAST.to_vec();
    }
    true
}

/// The values to store channels-last: the largest set where every value
/// satisfies the rules of the module's comment given the others.
fn choose(graph: &Graph<'_>) -> HashSet<ValueId> {
    let mut writer: HashMap<ValueId, NodeId> = HashMap::new();
    let mut chosen: HashSet<ValueId> = HashSet::new();
    for &id in graph.schedule() {
        let node = graph.node(id);
        let proposes = match node.op {
            Op::Convolution { .. } => is_nchw_constant(graph, node.inputs[1]),
            ref op => is_map(op),
        };
        for &output in &node.outputs {
            if proposes && is_candidate(graph, output) {
                writer.insert(output, id);
                chosen.insert(output);
            }
        }
    }
    // Drop values that break a rule until none does.
    loop {
        let broken: Vec<ValueId> = chosen
            .iter()
            .copied()
            .filter(|&value| {
                !computed_channels_last(graph, writer[&value], value, &chosen)
                    || !graph
                        .readers(value)
                        .into_iter()
                        .all(|reader| reads_channels_last(graph, reader, value, &chosen))
            })
            .collect();
        if broken.is_empty() {
            return chosen;
        }
        for value in broken {
            chosen.remove(&value);
        }
    }
}

/// An f32 4-D NCHW value of fixed shape that one node computes and that
/// does not leave the method.
fn is_candidate(graph: &Graph<'_>, value: ValueId) -> bool {
    let data = graph.value(value);
    matches!(data.kind, ValueKind::Computed)
        && is_fixed_nchw_f32(&data.ty)
        && !graph.is_live_out(value)
        && graph.writers(value).len() == 1
}

fn is_fixed_nchw_f32(ty: &TensorType) -> bool {
    ty.rank() == 4 && ty.dtype == DType::F32 && ty.is_contiguous() && ty.fixed_shape().is_some()
}

/// A constant filter this pass can store HWIO.
fn is_nchw_constant(graph: &Graph<'_>, value: ValueId) -> bool {
    let data = graph.value(value);
    matches!(data.kind, ValueKind::Constant(_)) && is_fixed_nchw_f32(&data.ty)
}

/// Elementwise ops: strided maps over the output's shape that read and
/// write any dim order.
fn is_map(op: &Op) -> bool {
    matches!(
        op,
        Op::Unary(_)
            | Op::Binary { .. }
            | Op::BinaryScalar { .. }
            | Op::Clamp { .. }
            | Op::LeakyRelu { .. }
            | Op::Elu { .. }
            | Op::Where
            | Op::Fused { .. }
    )
}

/// Whether `writer` may compute `value` channels-last given the values
/// chosen: a convolution whose residual (if any) is chosen too, or an
/// elementwise op with a chosen input of the same shape.
fn computed_channels_last(
    graph: &Graph<'_>,
    writer: NodeId,
    value: ValueId,
    chosen: &HashSet<ValueId>,
) -> bool {
    let node = graph.node(writer);
    match node.op {
        Op::Convolution { residual, bias, .. } => {
            !residual || chosen.contains(&node.inputs[2 + usize::from(bias)])
        }
        _ => node.inputs.iter().any(|input| {
            chosen.contains(input) && graph.value(*input).ty.shape == graph.value(value).ty.shape
        }),
    }
}

/// Whether `reader` reads `value` correctly when it is channels-last, given
/// the values chosen.
fn reads_channels_last(
    graph: &Graph<'_>,
    reader: NodeId,
    value: ValueId,
    chosen: &HashSet<ValueId>,
) -> bool {
    let node = graph.node(reader);
    match node.op {
        Op::Convolution { residual, bias, .. } => {
            let residual_slot = residual.then_some(2 + usize::from(bias));
            node.inputs
                .iter()
                .enumerate()
                .filter(|&(_, &input)| input == value)
                .all(|(slot, _)| {
                    slot == 0 || (Some(slot) == residual_slot && chosen.contains(&node.outputs[0]))
                })
        }
        Op::Copy | Op::Reduce { .. } => true,
        ref op => is_map(op),
    }
}

/// A new constant holding `filter` (a constant, as chosen) stored HWIO.
fn hwio(graph: &mut Graph<'_>, filter: ValueId) -> ValueId {
    let from = graph.value(filter).ty.clone();
    let to = TensorType {
        dim_order: FILTER_HWIO.to_vec(),
        ..from.clone()
    };
    let Some(bytes) = constant_bytes(graph, filter) else {
        return filter;
    };
    let bytes = relayout(bytes, &from, &to, &[0, 1, 2, 3]);
    graph.add_value(ValueData {
        ty: to,
        kind: ValueKind::Constant(Cow::Owned(bytes)),
        offset: None,
    })
}
