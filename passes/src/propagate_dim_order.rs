//! Dim-order propagation: stores the results of convolutions, and of the
//! elementwise ops that follow them, channels-last (NHWC), which is the
//! order the code generator's convolutions compute fastest (a pixel's
//! channels contiguous: GEMMs over pixels, depthwise filters vectorized
//! over channels).
//!
//! A value becomes channels-last only where nothing observes its layout:
//! an f32 4-D value of fixed shape, computed by one node (a convolution
//! whose filter is a constant, an elementwise op reading a channels-last
//! value of its own shape, a concatenation of a channels-last value, or a
//! max pooling of a channels-last input whose indices nothing reads), that
//! is no output or state of the method, and whose every reader reads any
//! dim order: elementwise maps and copies, concatenations, reductions,
//! convolutions (as their input, or as the residual of a channels-last
//! result; a residual is read in the result's layout), and max pooling
//! into a channels-last result. Any other reader (a reshape, which
//! reinterprets bytes; average pooling) keeps the value as it is, and that
//! may in turn keep the values it comes from. So no conversion is ever
//! inserted: at each
//! boundary the kernel on one side converts as it reads or writes (a
//! convolution reads an NCHW input and writes NHWC, an elementwise op reads
//! NHWC and writes NCHW), which costs no extra kernel.
//!
//! The filters of channels-last convolutions are stored HWIO, converted
//! here once: those of the results this pass chooses, and those of
//! convolutions the program itself stores channels-last (a model exported
//! in channels-last memory format), from whatever dim order their constant
//! has. How each op reads and writes dim orders is its
//! [`LayoutRule`]; only convolutions ([`LayoutRule::Convolution`]) write a
//! layout other than their type's, and this pass knows their filter.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use ptec_ir::ops::LayoutRule;
use ptec_ir::ops::conv::Convolution;
use ptec_ir::tensor_data::relayout;
use ptec_ir::{
    CHANNELS_LAST, DType, FILTER_HWIO, Graph, NodeId, Op, TensorType, ValueData, ValueId, ValueKind,
};

/// What the pass decided: the values to store channels-last, and the HWIO
/// form of the filter of each convolution that proposed its result.
struct Choice {
    chosen: HashSet<ValueId>,
    filters: HashMap<ValueId, (TensorType, Vec<u8>)>,
}

pub(crate) fn run(graph: &mut Graph<'_>) -> bool {
    let Choice {
        chosen,
        mut filters,
    } = choose(graph);
    let mut changed = false;
    // Each filter becomes one HWIO constant, however many convolutions
    // read it.
    let mut packed: HashMap<ValueId, ValueId> = HashMap::new();
    for id in graph.schedule().to_vec() {
        let Op::Convolution(conv) = graph.op(id) else {
            continue;
        };
        // Results chosen here, and those the program stores channels-last
        // itself (a model exported in channels-last memory format).
        let channels_last = graph.node(id).outputs().iter().all(|output| {
            chosen.contains(output) || graph.value(*output).ty.dim_order == CHANNELS_LAST
        });
        if !channels_last
            || conv.as_2d().is_none()
            || graph.value(conv.weight).ty.dim_order == FILTER_HWIO
        {
            continue;
        }
        let mut conv = conv.clone();
        let hwio = match packed.get(&conv.weight) {
            Some(&hwio) => hwio,
            // A convolution proposes its result only once its filter is
            // converted, so a chosen one always finds it; a filter that is
            // no constant stays as it is (and the code generator says so).
            None => {
                let converted = filters
                    .remove(&conv.weight)
                    .or_else(|| hwio(graph, conv.weight));
                let Some((ty, bytes)) = converted else {
                    continue;
                };
                let hwio = graph.add_value(ValueData::constant(ty, Cow::Owned(bytes)));
                packed.insert(conv.weight, hwio);
                hwio
            }
        };
        conv.weight = hwio;
        graph.set_op(id, Op::Convolution(conv));
        changed = true;
    }
    for value in chosen {
        graph.value_mut(value).ty.dim_order = CHANNELS_LAST.to_vec();
        changed = true;
    }
    changed
}

/// The values to store channels-last: the largest set where every value
/// satisfies the rules of the module's comment given the others.
fn choose(graph: &Graph<'_>) -> Choice {
    let mut writer: HashMap<ValueId, NodeId> = HashMap::new();
    let mut chosen: HashSet<ValueId> = HashSet::new();
    let mut filters = HashMap::new();
    for &id in graph.schedule() {
        let node = graph.node(id);
        let candidates: Vec<ValueId> = node
            .outputs()
            .iter()
            .copied()
            .filter(|&output| is_candidate(graph, output))
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let proposes = match (node.op().def().layout(), node.op()) {
            (LayoutRule::Elementwise | LayoutRule::Copy, _) => true,
            (LayoutRule::Pooling, _) => others_unread(graph, id),
            // Only an ordinary 2-D convolution has a channels-last kernel.
            (LayoutRule::Convolution, Op::Convolution(conv)) if conv.as_2d().is_some() => {
                let filter = conv.weight;
                if !filters.contains_key(&filter)
                    && let Some(hwio) = hwio(graph, filter)
                {
                    filters.insert(filter, hwio);
                }
                filters.contains_key(&filter)
            }
            _ => false,
        };
        if proposes {
            for output in candidates {
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
            return Choice { chosen, filters };
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

/// The type and bytes of `filter` stored HWIO, when it is a constant this
/// pass can convert: an f32 4-D tensor of fixed shape, in any dim order.
fn hwio(graph: &Graph<'_>, filter: ValueId) -> Option<(TensorType, Vec<u8>)> {
    let data = graph.value(filter);
    let ty = &data.ty;
    if ty.rank() != 4 || ty.dtype != DType::F32 || ty.fixed_shape().is_none() {
        return None;
    }
    let to = TensorType {
        dim_order: FILTER_HWIO.to_vec(),
        ..data.ty.clone()
    };
    let bytes = relayout(data.constant_bytes()?, &data.ty, &to, &[0, 1, 2, 3])?;
    Some((to, bytes))
}

/// Whether nothing reads the results of `node` but its first (a max
/// pooling's indices).
fn others_unread(graph: &Graph<'_>, node: NodeId) -> bool {
    graph.node(node).outputs()[1..]
        .iter()
        .all(|&other| graph.readers(other).is_empty() && !graph.is_live_out(other))
}

/// Whether `writer` may compute `value` channels-last given the values
/// chosen: a convolution whose residual (if any) is chosen too, a pooling
/// of a chosen input, a concatenation of a chosen operand, or an
/// elementwise op with a chosen operand of the same shape.
fn computed_channels_last(
    graph: &Graph<'_>,
    writer: NodeId,
    value: ValueId,
    chosen: &HashSet<ValueId>,
) -> bool {
    match graph.op(writer) {
        Op::Convolution(conv) => conv
            .residual
            .is_none_or(|residual| chosen.contains(&residual)),
        op if op.def().layout() == LayoutRule::Pooling => {
            op.inputs().iter().all(|input| chosen.contains(input))
        }
        op if op.def().layout() == LayoutRule::Copy => {
            op.inputs().iter().any(|input| chosen.contains(input))
        }
        op => op.inputs().iter().any(|input| {
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
    match (node.op().def().layout(), node.op()) {
        (LayoutRule::Elementwise | LayoutRule::ReadsAny | LayoutRule::Copy, _) => true,
        // Into a result in the same layout.
        (LayoutRule::Pooling, _) => {
            others_unread(graph, reader) && chosen.contains(&node.outputs()[0])
        }
        // As the input, or as the residual of a channels-last result.
        (LayoutRule::Convolution, Op::Convolution(conv)) => {
            let Convolution {
                weight,
                bias,
                residual,
                ..
            } = conv;
            *weight != value
                && *bias != Some(value)
                && (*residual != Some(value)
                    || node.outputs().iter().all(|out| chosen.contains(out)))
        }
        _ => false,
    }
}
