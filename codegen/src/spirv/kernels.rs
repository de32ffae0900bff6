//! One compute shader body per IR node, from one match over every op: the
//! kinds of op no shader expresses are refused with [`support`]'s reason.
//! Most ops compute each output element from its coordinates
//! (`per_element`; elementwise functions as the IR's expressions lowered by
//! `expr.rs`); softmax, layer norm and cumulative sums walk whole rows
//! (`per_row`). Shapes, strides and offsets are baked into the code as
//! literals.

use std::cmp::Reverse;
use std::fmt::Write as _;

use ptec_ir::ops::conv::{AvgPool2d, Convolution, MaxPool2d};
use ptec_ir::ops::elementwise::Undefined;
use ptec_ir::ops::expr::Expr;
use ptec_ir::ops::fused::StepInput;
use ptec_ir::ops::layout::{PadMode, Piece, Source};
use ptec_ir::ops::linalg::ClampRange;
use ptec_ir::ops::norm::LayerNorm;
use ptec_ir::ops::promotion::Operand;
use ptec_ir::ops::reduce::{ReduceOp, Softmax};
use ptec_ir::{Graph, Node, Op, OpKind, Scalar, ValueId, ValueKind};

use super::expr::{self, at_least, at_most};
use super::wgsl::{
    Refusal, Tensor, Ty, base, constant_term, convert, dim_index, float, index, int, refuse, scalar,
};
use super::{Layout, support};

/// The body of a shader's `main` (after the invocation index `t` is known
/// to be below `invocations`).
pub(super) struct Kernel {
    pub body: String,
    pub invocations: u64,
}

/// What an element computation adds to the body: statements, then the
/// element's value (of the output's compute type).
struct Element {
    code: String,
    value: String,
}

impl Element {
    fn value(value: String) -> Element {
        Element {
            code: String::new(),
            value,
        }
    }
}

/// Whether nothing reads `value` after its writer and it is not a result.
fn unused(graph: &Graph<'_>, value: ValueId) -> bool {
    graph.readers(value).is_empty() && !graph.is_live_out(value)
}

/// A kernel computing each element of `out` from its coordinates `c0..`
/// (and memory position `p`); `extra` stores more results of the same
/// element. Outputs of one-byte elements are written a word (four elements)
/// per invocation, keeping bytes past the end of the tensor.
fn per_element(
    out: &Tensor,
    extra: impl FnOnce(&[String]) -> Result<String, Refusal>,
    compute: impl FnOnce(&[String]) -> Result<Element, Refusal>,
) -> Result<Kernel, Refusal> {
    let (coordinates, coords) = out.coordinates("p", "c");
    let element = compute(&coords)?;
    let extra = extra(&coords)?;
    let elements = out.elements();
    let mut body = String::new();
    if out.dtype.size() == 4 {
        let _ = write!(
            body,
            "    let p = t;\n{coordinates}{}    arena[{} + p] = bitcast<u32>({});\n{extra}",
            element.code,
            base(out.byte_offset / 4),
            element.value
        );
        return Ok(Kernel {
            body,
            invocations: elements,
        });
    }
    if !out.byte_offset.is_multiple_of(4) || !extra.is_empty() {
        return Err(refuse(format!(
            "a one-byte tensor at byte offset {}",
            out.byte_offset
        )));
    }
    let byte = match out.ty {
        Ty::Bool => format!("select(0u, 1u, {})", element.value),
        _ => format!("(bitcast<u32>({}) & 255u)", element.value),
    };
    let word = base(out.byte_offset / 4);
    let _ = write!(
        body,
        "    var word = 0u;
    for (var k = 0u; k < 4u; k = k + 1u) {{
        let p = t * 4u + k;
        if (p < {elements}u) {{
{coordinates}{}            word = word | ({byte} << (8u * k));
        }} else {{
            word = word | (arena[{word} + t] & (255u << (8u * k)));
        }}
    }}
    arena[{word} + t] = word;
",
        element.code,
    );
    Ok(Kernel {
        body,
        invocations: elements.div_ceil(4),
    })
}

fn no_extra(_: &[String]) -> Result<String, Refusal> {
    Ok(String::new())
}

/// The most outputs one invocation of a blocked kernel computes along the
/// blocked dimension.
const BLOCK: u64 = 8;

/// The most output channels one invocation of a direct convolution
/// computes when its filter's output channels are contiguous (read a quad
/// at a time).
const WIDE_BLOCK: u64 = 32;

/// How many neighbouring positions along one of the lanes' dimensions an
/// invocation of a blocked kernel computes: a convolution's along its last
/// spatial dimension (each filter tap loaded once for all of them), a
/// matrix product's columns (each element of the left operand).
const SPAN: u64 = 4;

/// The columns one invocation of a matrix product computes where the right
/// operand's rows read in quads: each quad of the left operand serves four
/// quads of the right's (lavapipe loads storage buffers lane by lane, and
/// the encoder's products took half the time at 8 by 16 as at 8 by 4, with
/// 128 sums, some spilled).
const WIDE_SPAN: u64 = 16;

/// The most output channels and the positions one invocation of a
/// pointwise convolution computes: each input quad it loads serves this
/// many channels, each quad of filter taps this many positions (wider than
/// other blocked kernels: lavapipe's loads cost far more than the spilled
/// sums, which measured fastest at 16 by 8 on mobilenet_v2).
const POINTWISE_BLOCK: u64 = 16;
const POINTWISE_SPAN: u64 = 8;

/// The output channels and the positions one invocation of a direct
/// convolution computes where it reads the input's rows as quads (an image
/// in NCHW: the first convolution of image networks, whose filter quads,
/// each element used for one position per input channel and tap, are most
/// of what it loads): each filter quad serves twice the positions of
/// [`SPAN`], each row quad half the channels of [`WIDE_BLOCK`], about a
/// third fewer loads for as many sums (on lavapipe mobilenet_v2's first
/// convolution 2.3 -> 2.0 ms, resnet18's 3.2 -> 2.6 ms).
const ROW_BLOCK: u64 = 16;
const ROW_SPAN: u64 = 8;

/// The positions along the last spatial dimension a depthwise kernel's
/// invocation computes: each input column it loads serves up to as many
/// positions as the filter has taps there.
const DEPTHWISE_SPAN: u64 = 8;

/// A kernel computing `block` consecutive elements of `out` along `dim` per
/// invocation (times `span` along another dimension, if any), or `None`
/// when `out`'s elements are not 32-bit. The invocations are numbered
/// block by block (`u`, the run of `dim` starting at `c{dim} = u *
/// block`), lane by lane within a block (`l`: a position along the other
/// dimensions, in memory order, so that neighbouring invocations write
/// neighbouring elements where they can; `span`'s dimension stepping by its
/// count): neighbouring invocations share what depends only on the block
/// (a convolution's filter, a matrix product's left rows). Where `dim` is
/// innermost in memory, they are numbered the other way round, lane by
/// lane and block by block within a lane (`u` fastest). `compute` is
/// given the coordinates of the block's first element and returns
/// statements, then the value of each element: the block's run along `dim`
/// for each position of the span in turn. Four elements neighbouring in
/// memory (along `dim` or along the span) are stored as one quad where
/// `out` allows ([`Tensor::quads_along`]): a driver may assume that the
/// quads' binding does not alias the words', which is safe as the blocked
/// kernels (convolutions, matrix products) never write in place of what
/// they read (the memory planner puts elementwise nodes alone in place).
fn blocked(
    out: &Tensor,
    dim: usize,
    block: u64,
    span: Option<(usize, u64)>,
    compute: impl FnOnce(&[String]) -> Result<(String, Vec<String>), Refusal>,
) -> Result<Option<Kernel>, Refusal> {
    if out.dtype.size() != 4 {
        return Ok(None);
    }
    let size = out.sizes[dim];
    // How many lanes each dimension other than `dim` has.
    let steps = |d: usize| match span {
        Some((along, count)) if along == d => out.sizes[d].div_ceil(count),
        _ => out.sizes[d],
    };
    let others: Vec<usize> = out.order.iter().copied().filter(|&d| d != dim).collect();
    let lanes: u64 = others.iter().map(|&d| steps(d)).product();
    let names: Vec<String> = (0..out.rank()).map(|d| format!("c{d}")).collect();
    let blocks = size.div_ceil(block);
    // Where `dim` is innermost in memory (channels-last), neighbouring
    // invocations take neighbouring blocks of one position, so that they
    // read and write neighbouring memory: numbered block by block, a
    // depthwise convolution would bring each cache line of its input in
    // once per block of channels (3-5% less CPU time for mobilenet_v2 on
    // lavapipe).
    let mut code = match out.order.last() == Some(&dim) {
        true => format!("    let u = t % {blocks}u;\n    let l = t / {blocks}u;\n"),
        false => format!("    let u = t / {lanes}u;\n    let l = t % {lanes}u;\n"),
    };
    let mut rest = "l".to_string();
    for (step, &d) in others.iter().rev().enumerate() {
        let scaled = |index: &str| match span {
            Some((along, count)) if along == d => format!("({index}) * {count}u"),
            _ => index.to_string(),
        };
        if step + 1 == others.len() {
            let _ = writeln!(code, "    let c{d} = {};", scaled(&rest));
        } else {
            let index = format!("{rest} % {}u", steps(d));
            let _ = writeln!(code, "    let c{d} = {};", scaled(&index));
            let _ = writeln!(code, "    let cr{step} = {rest} / {}u;", steps(d));
            rest = format!("cr{step}");
        }
    }
    let _ = writeln!(code, "    let c{dim} = u * {block}u;");
    let (statements, values) = compute(&names)?;
    code.push_str(&statements);
    let count = span.map_or(1, |(_, count)| count as usize);
    // The elements stored together: a quad along `dim`, along the span, or
    // each alone.
    let groups: Vec<Vec<usize>> = match span {
        _ if block_quads(out, dim, block) => (0..values.len())
            .step_by(4)
            .map(|k| (k..k + 4).collect())
            .collect(),
        Some((along, count)) if count.is_multiple_of(4) && out.quads_along(along) => {
            let block = block as usize;
            (0..count as usize)
                .step_by(4)
                .flat_map(|q| (0..block).map(move |j| (q..q + 4).map(|q| q * block + j).collect()))
                .collect()
        }
        _ => (0..values.len()).map(|k| vec![k]).collect(),
    };
    debug_assert_eq!(values.len(), block as usize * count);
    for group in groups {
        let k = group[0];
        let (j, q) = (k % block as usize, k / block as usize);
        let mut at = in_block(&names, dim, j);
        let mut inside = Vec::new();
        if !size.is_multiple_of(block) {
            inside.push(format!("c{dim} + {j}u < {size}u"));
        }
        if let Some((along, count)) = span {
            at = in_block(&at, along, q);
            if !out.sizes[along].is_multiple_of(count) {
                inside.push(format!("c{along} + {q}u < {}u", out.sizes[along]));
            }
        }
        let store = match group.as_slice() {
            [k] => format!(
                "arena[{} + {}] = bitcast<u32>({});",
                base(out.byte_offset / 4),
                out.offset_at(&at),
                values[*k]
            ),
            _ => {
                let elements: Vec<&str> = group.iter().map(|&k| values[k].as_str()).collect();
                out.store_quad(&out.offset_at(&at), &elements)
            }
        };
        if inside.is_empty() {
            let _ = writeln!(code, "    {store}");
        } else {
            let _ = writeln!(code, "    if ({}) {{ {store} }}", inside.join(" && "));
        }
    }
    Ok(Some(Kernel {
        body: code,
        invocations: lanes * blocks,
    }))
}

/// Whether [`blocked`] stores `out`'s blocks of `block` elements along
/// `dim` a quad at a time (rather than along the span, if at all).
fn block_quads(out: &Tensor, dim: usize, block: u64) -> bool {
    out.quads_along(dim) && block.is_multiple_of(4)
}

/// The coordinates of a block's element `j` along `dim`, from those of its
/// first element.
fn in_block(coords: &[String], dim: usize, j: usize) -> Vec<String> {
    let mut at = coords.to_vec();
    if j > 0 {
        at[dim] = format!("({} + {j}u)", coords[dim]);
    }
    at
}

/// The kernel of `node`, or `None` when it needs no code (a view in place);
/// a refusal says why no shader expresses it.
pub(super) fn kernel(
    graph: &Graph<'_>,
    layout: &Layout<'_>,
    node: &Node,
    in_place_view: bool,
) -> Result<Option<Kernel>, Refusal> {
    if in_place_view {
        return Ok(None);
    }
    lower(graph, layout, node.op(), node.outputs()).map(Some)
}

/// About how much work `node`'s kernel does, in elements moved and
/// multiply-adds: every element it reads and writes, or a product's
/// multiply-adds where they are more (each output element's sum is as long
/// as a matrix product's depth, or as a convolution's filter per output
/// channel; per input element for a transposed one).
pub(super) fn work(graph: &Graph<'_>, node: &Node) -> u64 {
    let elements = |value: ValueId| -> u64 {
        graph.value(value).ty.fixed_shape().map_or(0, |shape| {
            shape.iter().fold(1, |n, &size| n.saturating_mul(size))
        })
    };
    let sizes = |value: ValueId| graph.value(value).ty.fixed_shape().unwrap_or_default();
    let moved: u64 = node
        .inputs()
        .into_iter()
        .chain(node.outputs().iter().copied())
        .map(elements)
        .fold(0, u64::saturating_add);
    let out = node.outputs().first().map_or(0, |&value| elements(value));
    let sums_over = |a: ValueId| out.saturating_mul(sizes(a).last().copied().unwrap_or(0));
    let products = match node.op() {
        Op::MatMul(op) => sums_over(op.a),
        Op::Addmm(op) => sums_over(op.a),
        Op::Convolution(op) => {
            let filter =
                elements(op.weight) / sizes(op.weight).first().copied().unwrap_or(1).max(1);
            match op.transposed {
                None => out.saturating_mul(filter),
                Some(_) => elements(op.input).saturating_mul(filter),
            }
        }
        _ => 0,
    };
    moved.max(products)
}

/// The least bytes of a vector product's weights [`preferred_order`]
/// stores with the depth contiguous: smaller ones stay in a CPU core's
/// caches, where the order of the reads matters little (deep_autoencoder's
/// layers of 64-320 KB took 4% longer on lavapipe so), and are read as a
/// GPU's neighbouring lanes read together, a quad of columns each.
const STREAMED_WEIGHTS: u64 = 1 << 20;

/// The dim order `node`'s kernel reads the constant `value` fastest in,
/// where that is not the order it has: a matrix product of fewer rows
/// than a block (a classifier's vector, a decoder's token) walks its right
/// operand (`[.., depth, columns]`) down the whole depth, each invocation
/// its own quad of columns. With the columns contiguous, as exported
/// weights are, lavapipe's eight lanes then read 128 bytes of each row and
/// step a whole row on (mobilenet_v2's classifier: 5 MB at about 2.5 GB/s,
/// 2.0 ms, a stride no prefetcher follows); stored with the depth
/// contiguous, each invocation reads its columns' quads one after another
/// (0.65 ms), as many of them per product as before, each sum's products
/// in the same order. Only for weights of [`STREAMED_WEIGHTS`] or more.
pub(super) fn preferred_order(graph: &Graph<'_>, node: &Node, value: ValueId) -> Option<Vec<u8>> {
    let (a, b) = match node.op() {
        Op::MatMul(op) => (op.a, op.b),
        Op::Addmm(op) => (op.a, op.b),
        _ => return None,
    };
    let ValueKind::Constant(data) = &graph.value(value).kind else {
        return None;
    };
    let ty = &graph.value(value).ty;
    let sizes = ty.fixed_shape()?;
    let rows = graph.value(node.outputs()[0]).ty.fixed_shape()?;
    let rank = sizes.len();
    let down_the_depth = b == value
        && a != value
        && rank >= 2
        && rows.len() >= 2
        && rows[rows.len() - 2] < BLOCK
        && ty.dtype.size() == 4
        && data.len() as u64 >= STREAMED_WEIGHTS
        && ty.is_contiguous()
        && sizes[rank - 2].is_multiple_of(4)
        && sizes[rank - 1] > 1;
    down_the_depth.then(|| {
        let mut order: Vec<u8> = (0..rank as u8).collect();
        order.swap(rank - 2, rank - 1);
        order
    })
}

/// The refusal of a kind of op no shader expresses, with the reason
/// [`support`] gives, so that the dispatch and the table cannot disagree.
fn refused(kind: OpKind) -> Refusal {
    match support(kind) {
        Err(why) => refuse(why),
        // A dispatch that refuses what the table accepts is a bug, which the
        // dispatch tests catch; the node is still refused.
        Ok(()) => refuse("no shader, although the table of supported ops lists one"),
    }
}

/// The shader of one node: a match over every op, so that a new op does not
/// compile until shaders express it or refuse it.
fn lower(
    graph: &Graph<'_>,
    layout: &Layout<'_>,
    op: &Op,
    outputs: &[ValueId],
) -> Result<Kernel, Refusal> {
    let tensor = |value: ValueId| Tensor::of(graph, layout, value);
    let tensors = |values: &[ValueId]| -> Result<Vec<Tensor>, Refusal> {
        values.iter().map(|&value| tensor(value)).collect()
    };
    let optional = |value: Option<ValueId>| value.map(tensor).transpose();
    let out = || tensor(outputs[0]);
    match op {
        Op::Label(_)
        | Op::Jump(_)
        | Op::JumpIfFalse(_)
        | Op::Index(_)
        | Op::Gather(_)
        | Op::Scatter(_)
        | Op::IndexPut(_)
        | Op::MaskedScatter(_)
        | Op::RepeatInterleave(_)
        | Op::ArgReduce(_)
        | Op::TopK(_) => Err(refused(op.kind())),
        Op::Elementwise(op) => {
            let (inputs, out) = (tensors(&op.inputs)?, out()?);
            let operands: Vec<Operand> = inputs
                .iter()
                .map(|input| Operand {
                    dtype: input.dtype,
                    zero_dim: input.rank() == 0,
                })
                .collect();
            let (compute, result) = op.func.types(&operands).map_err(undefined)?;
            let expr = op.func.expr(compute).map_err(undefined)?;
            let reads = (0..inputs.len()).map(StepInput::Input).collect();
            let step = Step { expr, reads };
            pointwise(&inputs, &out, [Ty::of(compute)?, Ty::of(result)?], &[step])
        }
        Op::Fused(op) => {
            let (inputs, out) = (tensors(&op.inputs)?, out()?);
            // Every operand and step is of the output's type (the verifier
            // checks), which each step computes in.
            let steps = op
                .steps
                .iter()
                .map(|step| {
                    let operands = vec![Operand::tensor(out.dtype); step.inputs.len()];
                    let (compute, _) = step.func.types(&operands).map_err(undefined)?;
                    let expr = step.func.expr(compute).map_err(undefined)?;
                    Ok(Step {
                        expr,
                        reads: step.inputs.clone(),
                    })
                })
                .collect::<Result<Vec<_>, Refusal>>()?;
            let ty = Ty::of(out.dtype)?;
            pointwise(&inputs, &out, [ty, ty], &steps)
        }
        Op::Copy(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            per_quad(&out, &[&x], |c| {
                Ok(Element::value(convert(&x.load_broadcast(c), x.ty, out.ty)))
            })
        }
        // A reshape reinterprets bytes: the element at memory position p.
        Op::Reshape(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            per_element(&out, no_extra, |_| Ok(Element::value(x.load("p"))))
        }
        Op::Permute(op) => permute(&tensor(op.input)?, &out()?, &op.dims),
        Op::Select(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            per_quad(&out, &[&x], |c| {
                let mut source = c.to_vec();
                source.insert(op.dim, dim_index(op.index)?);
                Ok(Element::value(moved(&x, &source, out.ty)))
            })
        }
        Op::Slice(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            per_quad(&out, &[&x], |c| {
                let mut source = c.to_vec();
                let start = dim_index(op.start)?;
                source[op.dim] = format!("({start} + {}u * {})", op.step, c[op.dim]);
                Ok(Element::value(moved(&x, &source, out.ty)))
            })
        }
        Op::Cat(op) => cat(&tensors(&op.inputs)?, &out()?, op.dim),
        Op::Pad(op) => {
            let x = tensor(op.input)?;
            let fill = match op.mode {
                PadMode::Constant(value) => Some(value),
                PadMode::Reflect | PadMode::Replicate => None,
            };
            by_pieces(&x, &out()?, &op.pieces(&x.sizes), fill)
        }
        Op::Roll(op) => {
            let x = tensor(op.input)?;
            by_pieces(&x, &out()?, &op.pieces(&x.sizes), None)
        }
        Op::Strided(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            per_element(&out, no_extra, |c| {
                let mut terms = vec![int(op.offset as i64)?];
                for (coordinate, &stride) in c.iter().zip(&op.strides) {
                    terms.push(format!("i32({coordinate}) * {}", int(stride)?));
                }
                let position = format!("u32({})", terms.join(" + "));
                Ok(Element::value(convert(&x.load(&position), x.ty, out.ty)))
            })
        }
        Op::SliceScatter(op) => {
            let (x, src, out) = (tensor(op.input)?, tensor(op.src)?, out()?);
            let (start, step) = (int(op.start as i64)?, int(op.step as i64)?);
            let len = int(src.sizes[op.dim] as i64)?;
            per_element(&out, no_extra, |c| {
                let mut source = c.to_vec();
                source[op.dim] = "u32(r / step)".to_string();
                let code = format!(
                    "    let step = {step};\n    let r = i32({}) - {start};\n    var v = {};\n    if (r >= 0i && r % step == 0i && r / step < {len}) {{ v = {}; }}\n",
                    c[op.dim],
                    moved(&x, c, out.ty),
                    moved(&src, &source, out.ty),
                );
                Ok(Element {
                    code,
                    value: "v".to_string(),
                })
            })
        }
        Op::Tril(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            let rank = out.rank();
            let diagonal = int(op.diagonal)?;
            per_element(&out, no_extra, |c| {
                Ok(Element::value(format!(
                    "select({}, {}, i32({}) - i32({}) <= {diagonal})",
                    scalar(Scalar::Int(0), out.ty)?,
                    moved(&x, c, out.ty),
                    c[rank - 1],
                    c[rank - 2]
                )))
            })
        }
        Op::Repeat(op) => {
            let (x, out) = (tensor(op.input)?, out()?);
            per_element(&out, no_extra, |c| {
                let lead = c.len() - x.rank();
                let source: Vec<String> = (0..x.rank())
                    .map(|dim| format!("({} % {}u)", c[lead + dim], x.sizes[dim]))
                    .collect();
                Ok(Element::value(moved(&x, &source, out.ty)))
            })
        }
        Op::Full(op) => {
            let out = out()?;
            per_element(&out, no_extra, |_| {
                Ok(Element::value(scalar(constant_term(op.value)?, out.ty)?))
            })
        }
        Op::Arange(op) => {
            let out = out()?;
            per_element(&out, no_extra, |c| {
                let position = match out.ty {
                    Ty::F32 => format!("f32({})", c[0]),
                    Ty::I32 | Ty::Bool => format!("i32({})", c[0]),
                };
                Ok(Element::value(format!(
                    "({} + {position} * {})",
                    scalar(constant_term(op.start)?, out.ty)?,
                    scalar(op.step, out.ty)?
                )))
            })
        }
        Op::Reduce(op) => reduce(&tensor(op.input)?, &out()?, op.op, &op.dims, op.keepdim),
        Op::CumSum(op) => cumsum(&tensor(op.input)?, &out()?, op.dim),
        Op::Softmax(op) => softmax(&tensor(op.input)?, &out()?, op),
        Op::LayerNorm(op) => {
            // Statistics nothing reads are not written.
            let statistic = |index: usize| {
                let value = outputs.get(index).copied();
                optional(value.filter(|&value| !unused(graph, value)))
            };
            layer_norm(
                &tensor(op.input)?,
                [optional(op.weight)?, optional(op.bias)?],
                &out()?,
                [statistic(LayerNorm::MEAN)?, statistic(LayerNorm::RSTD)?],
                op.normalized_dims,
                op.eps.0,
            )
        }
        Op::BatchNorm(op) => batch_norm(
            &tensor(op.input)?,
            [&tensor(op.mean)?, &tensor(op.variance)?],
            [optional(op.weight)?, optional(op.bias)?],
            &out()?,
            op.eps.0,
        ),
        Op::MatMul(op) => matmul(
            [&tensor(op.a)?, &tensor(op.b)?],
            None,
            &out()?,
            (Scalar::Int(1), Scalar::Int(1)),
            op.clamp,
        ),
        Op::Addmm(op) => matmul(
            [&tensor(op.a)?, &tensor(op.b)?],
            Some(&tensor(op.bias)?),
            &out()?,
            (op.beta, op.alpha),
            op.clamp,
        ),
        Op::Convolution(op) if op.epilogue.is_some() => Err(refuse(
            "a convolution with epilogue steps (compiled for Vulkan, `fuse-epilogue` does not run)",
        )),
        Op::Convolution(op) => convolution(
            [&tensor(op.input)?, &tensor(op.weight)?],
            [optional(op.bias)?, optional(op.residual)?],
            &out()?,
            op,
        ),
        Op::MaxPool2d(op) => {
            let indices = outputs
                .get(1)
                .copied()
                .filter(|&value| !unused(graph, value));
            let indices = indices
                .map(|value| index_slot(graph, layout, value))
                .transpose()?;
            max_pool(&tensor(op.input)?, &out()?, op, indices)
        }
        Op::AvgPool2d(op) => avg_pool(&tensor(op.input)?, &out()?, op),
    }
}

/// A function undefined in the types a node asks for.
fn undefined(error: Undefined) -> Refusal {
    refuse(error.to_string())
}

/// One step of an elementwise kernel: an expression of the kernel's
/// operands (`in0`, ...) and earlier steps' results (`s0`, ...).
struct Step {
    expr: Expr,
    reads: Vec<StepInput>,
}

/// Elementwise steps at each element: the operands converted to the
/// compute type (`types[0]`), each step bound to `s{k}`, and the last
/// step's result (of type `types[1]`) converted to the output's.
fn pointwise(
    inputs: &[Tensor],
    out: &Tensor,
    types: [Ty; 2],
    steps: &[Step],
) -> Result<Kernel, Refusal> {
    if let Some(kernel) = pointwise_quads(inputs, out, types, steps)? {
        return Ok(kernel);
    }
    per_element(out, no_extra, |c| {
        let loads: Vec<String> = inputs.iter().map(|input| input.load_broadcast(c)).collect();
        let (code, value) = pointwise_steps(inputs, &loads, out, types, steps)?;
        Ok(Element { code, value })
    })
}

/// An elementwise kernel four neighbouring elements of `out` at a time (a
/// quad along its innermost dimension in memory), where every input gives
/// their four values as one quad or as one element broadcast to all four:
/// each element computed as [`pointwise`] computes it, with a quarter of
/// the loads and stores (lavapipe loads and stores a storage buffer lane by
/// lane). `None` where some tensor does not allow it.
fn pointwise_quads(
    inputs: &[Tensor],
    out: &Tensor,
    types: [Ty; 2],
    steps: &[Step],
) -> Result<Option<Kernel>, Refusal> {
    let Some(&inner) = out.order.last() else {
        return Ok(None);
    };
    if !out.quads_along(inner) {
        return Ok(None);
    }
    let (coordinates, c) = out.coordinates("p", "c");
    // Each input's load at the first element: its quad (`true`), or its
    // element for all four.
    let mut reads = Vec::with_capacity(inputs.len());
    for input in inputs {
        let skip = out.rank() - input.rank();
        let at = input.offset_at(&c[skip..]);
        let along = inner.checked_sub(skip);
        let read = match along {
            Some(dim) if input.sizes[dim] > 1 => match input.quads_along(dim) {
                true => (input.load_quad(&at), true),
                false => return Ok(None),
            },
            // The same element for all four, which must not be in place of
            // the output (read as words while the output is stored as
            // quads).
            _ if overlaps(input, out) => return Ok(None),
            _ => (input.load(&at), false),
        };
        reads.push(read);
    }
    let mut body = format!("    let p = t * 4u;\n{coordinates}");
    for (k, (load, _)) in reads.iter().enumerate() {
        let _ = writeln!(body, "    let x{k} = {load};");
    }
    four_lanes(out, "p", body, |lane| {
        let loads: Vec<String> = reads
            .iter()
            .enumerate()
            .map(|(k, &(_, quad))| match quad {
                true => format!("x{k}[{lane}]"),
                false => format!("x{k}"),
            })
            .collect();
        pointwise_steps(inputs, &loads, out, types, steps)
    })
    .map(Some)
}

/// A kernel of four neighbouring elements of `out` per invocation from
/// `body` (which binds the first one's position `position` and coordinates)
/// and each element's statements and value (`lane` 0 to 3, each in a block
/// of its own), stored as one quad.
fn four_lanes(
    out: &Tensor,
    position: &str,
    mut body: String,
    lane: impl Fn(usize) -> Result<(String, String), Refusal>,
) -> Result<Kernel, Refusal> {
    let _ = writeln!(body, "    var r: vec4<{}>;", out.ty.name());
    for k in 0..4 {
        let (code, value) = lane(k)?;
        let _ = write!(body, "    {{\n{code}    r[{k}] = {value};\n    }}\n");
    }
    let _ = writeln!(
        body,
        "    {}",
        out.store_quad(position, &["r[0]", "r[1]", "r[2]", "r[3]"])
    );
    Ok(Kernel {
        body,
        invocations: out.elements() / 4,
    })
}

/// [`per_element`]'s kernel four elements at a time where `out` stores
/// quads along its innermost dimension and none of `inputs` overlaps it
/// (they are read as words while the output is stored as quads): each
/// element's own loads, one store for the four (lavapipe stores lane by
/// lane).
fn per_quad(
    out: &Tensor,
    inputs: &[&Tensor],
    compute: impl Fn(&[String]) -> Result<Element, Refusal>,
) -> Result<Kernel, Refusal> {
    let inner = match out.order.last() {
        Some(&inner) if out.quads_along(inner) && !inputs.iter().any(|x| overlaps(x, out)) => inner,
        _ => return per_element(out, no_extra, compute),
    };
    let (coordinates, c) = out.coordinates("p0", "c");
    let body = format!("    let p0 = t * 4u;\n{coordinates}");
    four_lanes(out, "p0", body, |lane| {
        let element = compute(&in_block(&c, inner, lane))?;
        Ok((
            format!("    let p = p0 + {lane}u;\n{}", element.code),
            element.value,
        ))
    })
}

/// Whether two tensors' bytes may overlap.
fn overlaps(a: &Tensor, b: &Tensor) -> bool {
    let span = |t: &Tensor| {
        let last: u64 = t
            .sizes
            .iter()
            .zip(&t.strides)
            .map(|(size, stride)| size.saturating_sub(1) * stride)
            .sum();
        t.byte_offset..t.byte_offset + (last + 1) * t.dtype.size() as u64
    };
    let (a_bytes, b_bytes) = (span(a), span(b));
    a.buffer == b.buffer && a_bytes.start < b_bytes.end && b_bytes.start < a_bytes.end
}

/// The statements of an element of [`pointwise`]'s function from its
/// inputs' loaded values (`loads`, in their element types), and the value
/// to store (of `out`'s type).
fn pointwise_steps(
    inputs: &[Tensor],
    loads: &[String],
    out: &Tensor,
    [compute, result]: [Ty; 2],
    steps: &[Step],
) -> Result<(String, String), Refusal> {
    let mut code = String::new();
    for (k, (input, load)) in inputs.iter().zip(loads).enumerate() {
        let value = convert(load, input.ty, compute);
        let _ = writeln!(code, "    let in{k} = {value};");
    }
    for (k, step) in steps.iter().enumerate() {
        // The names of the operands and steps are `StepInput`'s own.
        let operands: Vec<String> = step.reads.iter().map(StepInput::to_string).collect();
        let value = expr::lower(&step.expr, &operands, compute)?;
        let _ = writeln!(code, "    let s{k} = {value};");
    }
    let last = format!("s{}", steps.len().saturating_sub(1));
    Ok((code, convert(&last, result, out.ty)))
}

fn permute(x: &Tensor, out: &Tensor, dims: &[usize]) -> Result<Kernel, Refusal> {
    per_quad(out, &[x], |c| {
        let mut source = vec![String::new(); dims.len()];
        for (j, &dim) in dims.iter().enumerate() {
            source[dim] = c[j].clone();
        }
        Ok(Element::value(moved(x, &source, out.ty)))
    })
}

fn cat(inputs: &[Tensor], out: &Tensor, dim: usize) -> Result<Kernel, Refusal> {
    per_element(out, no_extra, |c| {
        let mut code = format!("    var v: {};\n", out.ty.name());
        let mut start = 0;
        let mut first = true;
        for input in inputs.iter().filter(|input| input.sizes[dim] > 0) {
            let end = start + input.sizes[dim];
            let mut source = c.to_vec();
            source[dim] = format!("({} - {start}u)", c[dim]);
            let keyword = if first { "    if" } else { " else if" };
            let _ = write!(
                code,
                "{keyword} ({} < {end}u) {{ v = {}; }}",
                c[dim],
                moved(input, &source, out.ty)
            );
            first = false;
            start = end;
        }
        code.push('\n');
        Ok(Element {
            code,
            value: "v".to_string(),
        })
    })
}

/// A copy that maps each dimension on its own, by pieces ([`Piece`]): the
/// source coordinate along each dimension is the piece's run at the output
/// coordinate, and a filling piece gives `fill`.
fn by_pieces(
    x: &Tensor,
    out: &Tensor,
    pieces: &[Vec<Piece>],
    fill: Option<Scalar>,
) -> Result<Kernel, Refusal> {
    per_element(out, no_extra, |c| {
        let mut code = String::new();
        let mut inside = Vec::new();
        let mut source = Vec::new();
        for (dim, dim_pieces) in pieces.iter().enumerate() {
            let _ = writeln!(code, "    var s{dim} = 0i;");
            let mut branches = Vec::new();
            for piece in dim_pieces {
                let end = index(piece.start + piece.len)?;
                let body = match piece.source {
                    Source::Run { start, step } => format!(
                        "s{dim} = {} + {} * (i32({}) - {});",
                        int(start as i64)?,
                        int(step)?,
                        c[dim],
                        int(piece.start as i64)?
                    ),
                    Source::Fill => {
                        if !inside.contains(&dim) {
                            inside.push(dim);
                        }
                        format!("in{dim} = false;")
                    }
                };
                branches.push(format!("if ({} < {end}) {{ {body} }}", c[dim]));
            }
            if inside.contains(&dim) {
                let _ = writeln!(code, "    var in{dim} = true;");
            }
            let _ = writeln!(code, "    {}", branches.join(" else "));
            source.push(format!("u32(s{dim})"));
        }
        let read = moved(x, &source, out.ty);
        let Some(value) = fill.filter(|_| !inside.is_empty()) else {
            return Ok(Element { code, value: read });
        };
        let held: Vec<String> = inside.iter().map(|dim| format!("in{dim}")).collect();
        let _ = writeln!(
            code,
            "    var v = {};\n    if ({}) {{ v = {read}; }}",
            scalar(value, out.ty)?,
            held.join(" && ")
        );
        Ok(Element {
            code,
            value: "v".to_string(),
        })
    })
}

/// Inference batch norm: each channel normalized by its running statistics,
/// then scaled and shifted.
fn batch_norm(
    x: &Tensor,
    [mean, variance]: [&Tensor; 2],
    [weight, bias]: [Option<Tensor>; 2],
    out: &Tensor,
    eps: f64,
) -> Result<Kernel, Refusal> {
    per_element(out, no_extra, |c| {
        let channel = |t: &Tensor| t.load(&t.offset_at(std::slice::from_ref(&c[1])));
        let mut value = format!(
            "(({} - {}) / sqrt({} + {}))",
            x.load_broadcast(c),
            channel(mean),
            channel(variance),
            float(eps)
        );
        if let Some(weight) = &weight {
            value = format!("({value} * {})", channel(weight));
        }
        if let Some(bias) = &bias {
            value = format!("({value} + {})", channel(bias));
        }
        Ok(Element::value(value))
    })
}

/// A direct convolution, each output element a sum over its input
/// channels and kernel taps (ordinary or transposed, one to three spatial
/// dimensions), then the bias, the clamp and the residual. Each invocation
/// computes up to [`BLOCK`] output channels of one group (each input
/// element loaded once for all of them) at [`SPAN`] neighbouring positions
/// (each filter tap loaded once for all of them); each element sums in the
/// same order whatever the blocking ([`Conv::sums`]).
fn convolution(
    [x, w]: [&Tensor; 2],
    [bias, residual]: [Option<Tensor>; 2],
    out: &Tensor,
    op: &Convolution,
) -> Result<Kernel, Refusal> {
    if [x.ty, w.ty, out.ty] != [Ty::F32; 3] {
        return Err(refuse(format!("a convolution of {} elements", x.dtype)));
    }
    let conv = Conv {
        x,
        w,
        bias: bias.as_ref(),
        residual: residual.as_ref(),
        op,
        out_per_group: out.sizes[1] / op.groups,
    };
    let last = out.rank() - 1;
    let row = |block: u64, most: u64| {
        let quads = out.quads_along(last) && !block_quads(out, 1, block);
        span_along(out.sizes[last], most, quads)
    };
    let kernel = match conv.shape() {
        Shape::Depthwise => {
            let span = row(4, DEPTHWISE_SPAN);
            blocked(out, 1, 4, Some((last, span)), |c| {
                conv.sums(c, 4, span as usize, true)
            })?
        }
        Shape::Pointwise(block) => {
            let span = row(block, POINTWISE_SPAN);
            blocked(out, 1, block, Some((last, span)), |c| {
                conv.pointwise_sums(c, block as usize, span as usize)
            })?
        }
        Shape::Direct { block, span } => blocked(out, 1, block, Some((last, span)), |c| {
            conv.sums(c, block as usize, span as usize, false)
        })?,
    };
    kernel.ok_or_else(|| refuse(format!("a convolution into {} elements", out.dtype)))
}

/// How many neighbouring positions of the `size` along a dimension one
/// invocation computes, at most `most` and at least half as many (each
/// load serves the span's positions), or the whole `size` if shorter: the
/// span leaving the fewest positions past the end computed for nothing (a
/// row of 28 in spans of 8 computes 32, in spans of 7 none), the longer
/// of equals; a multiple of four where the output stores quads along it.
fn span_along(size: u64, most: u64, quads: bool) -> u64 {
    if size <= most && !quads {
        return size.max(1);
    }
    (most / 2..=most)
        .filter(|span| !quads || span.is_multiple_of(4))
        .min_by_key(|&span| (size.div_ceil(span) * span - size, Reverse(span)))
        .unwrap_or(most)
}

/// How a convolution's shader reads its operands.
enum Shape {
    /// One channel per group (each filter sees one input channel), the
    /// channels contiguous in the input and the filter: each invocation
    /// computes four neighbouring channels, reading a quad of inputs and
    /// one of filter taps at a time.
    Depthwise,
    /// A filter of one tap, not transposed and unpadded, whose input
    /// channels come in quads (contiguous in the input, a multiple of four
    /// per group): a matrix product over the channels, each input quad
    /// loaded once for this many output channels (and each filter quad
    /// once for the span's positions).
    Pointwise(u64),
    /// Anything else: element by element, `block` output channels at
    /// `span` positions per invocation.
    Direct { block: u64, span: u64 },
}

/// The most input columns a depthwise kernel, or a direct one on rows
/// read as quads, loads for one row of its windows at once
/// ([`Conv::sums`]).
const MAX_COLUMNS: u64 = 24;

/// A convolution's operands, for [`Conv::sums`].
struct Conv<'c> {
    x: &'c Tensor,
    w: &'c Tensor,
    bias: Option<&'c Tensor>,
    residual: Option<&'c Tensor>,
    op: &'c Convolution,
    out_per_group: u64,
}

impl Conv<'_> {
    /// How the shader reads the operands ([`Shape`]).
    fn shape(&self) -> Shape {
        let Conv { x, w, op, .. } = *self;
        let in_per_group = x.sizes[1] / op.groups;
        if op.transposed.is_none()
            && self.out_per_group == 1
            && in_per_group == 1
            && x.quads_along(1)
            && w.quads_along(0)
        {
            return Shape::Depthwise;
        }
        let block = [BLOCK, 4, 2, 1]
            .into_iter()
            .find(|&block| self.out_per_group.is_multiple_of(block))
            .unwrap_or(1);
        let one_tap = w.sizes[2..].iter().all(|&taps| taps == 1);
        let unpadded = op.padding.iter().all(|&p| p == 0);
        if op.transposed.is_none()
            && one_tap
            && unpadded
            && in_per_group.is_multiple_of(4)
            && x.quads_along(1)
        {
            return Shape::Pointwise(
                [POINTWISE_BLOCK, BLOCK, 4, 2, 1]
                    .into_iter()
                    .find(|&block| self.out_per_group.is_multiple_of(block))
                    .unwrap_or(1),
            );
        }
        // Neighbouring outputs along the last spatial dimension share the
        // filter's taps (a transposed convolution's skip taps by position).
        let span = match op.transposed {
            None => SPAN,
            Some(_) => 1,
        };
        if op.transposed.is_some() || !w.quads_along(0) {
            return Shape::Direct { block, span };
        }
        // Each input element of a window is loaded for every output
        // channel of the block: the filter's quads make wider blocks pay,
        // unless the input's rows are read as quads.
        let wide = [WIDE_BLOCK, BLOCK, 4, 2, 1]
            .into_iter()
            .find(|&block| self.out_per_group.is_multiple_of(block))
            .unwrap_or(1);
        match self.row_quads(ROW_BLOCK as usize, ROW_SPAN) {
            Some(_) if wide > ROW_BLOCK && wide.is_multiple_of(ROW_BLOCK) => Shape::Direct {
                block: ROW_BLOCK,
                span: ROW_SPAN,
            },
            _ => Shape::Direct { block: wide, span },
        }
    }

    /// Whether [`Conv::sums`] reads the filter's taps a quad of the
    /// block's `count` output channels at a time.
    fn filter_quads(&self, count: usize) -> bool {
        self.op.transposed.is_none() && self.w.quads_along(0) && count.is_multiple_of(4)
    }

    /// Whether [`Conv::sums`] (not depthwise) reads a quad of input
    /// channels per tap (a channels-last input).
    fn channel_quads(&self, count: usize) -> bool {
        let in_per_group = self.x.sizes[1] / self.op.groups;
        self.filter_quads(count) && in_per_group.is_multiple_of(4) && self.x.quads_along(1)
    }

    /// The input columns a row of `span` windows covers along the last
    /// spatial dimension.
    fn columns(&self, span: u64) -> u64 {
        let Conv { w, op, .. } = *self;
        let last = op.spatial_rank() - 1;
        (span - 1) * op.stride[last] + (w.sizes[2 + last] - 1) * op.dilation[last] + 1
    }

    /// Where along an input row the quads [`Conv::row_quads`] reads start,
    /// counted back from the first window's first column: the spans all
    /// start at this remainder modulo four.
    fn row_lead(&self) -> u64 {
        let last = self.op.spatial_rank() - 1;
        (-(self.op.padding[last] as i64)).rem_euclid(4) as u64
    }

    /// How many quads of an input row [`Conv::sums`] (not depthwise) loads
    /// for a row of `span` windows where it reads the input's rows as
    /// quads (contiguous rows, as an NCHW image's, and no quads of
    /// channels), from [`Conv::row_lead`] columns before the first window
    /// on; `None` where it reads them otherwise.
    fn row_quads(&self, count: usize, span: u64) -> Option<u64> {
        let Conv { x, op, .. } = *self;
        let last = op.spatial_rank() - 1;
        let quads = (self.row_lead() + self.columns(span)).div_ceil(4);
        let read = quads * 4 <= MAX_COLUMNS
            && !self.channel_quads(count)
            && op.transposed.is_none()
            && x.quads_along(2 + last)
            && (span * op.stride[last]).is_multiple_of(4);
        read.then_some(quads)
    }

    /// [`Conv::sums`] of a [`Shape::Pointwise`] convolution: the input
    /// channels four at a time, each element still summed channel by
    /// channel in order.
    fn pointwise_sums(
        &self,
        c: &[String],
        count: usize,
        span: usize,
    ) -> Result<(String, Vec<String>), Refusal> {
        let Conv {
            x,
            w,
            op,
            out_per_group,
            ..
        } = *self;
        let in_per_group = x.sizes[1] / op.groups;
        let rank = op.spatial_rank();
        let last = rank - 1;
        let mut code = format!("    let group = {} / {out_per_group}u;\n", c[1]);
        for k in 0..count * span {
            let _ = writeln!(code, "    var acc{k} = 0.0f;");
        }
        let _ = writeln!(
            code,
            "    for (var ci = 0u; ci < {in_per_group}u; ci = ci + 4u) {{
        let channel = group * {in_per_group}u + ci;"
        );
        // The filter's taps: a quad along the input channels for each
        // output channel, or along the output channels for each input one.
        let filter = |channel: String, input: String| {
            let mut at = vec![channel, input];
            at.extend((0..rank).map(|_| "0u".to_string()));
            w.offset_at(&at)
        };
        let taps: Vec<Vec<String>> = if w.quads_along(1) {
            for j in 0..count {
                let offset = filter(in_block(c, 1, j)[1].clone(), "ci".into());
                let _ = writeln!(code, "        let w{j} = {};", w.load_quad(&offset));
            }
            (0..count)
                .map(|j| (0..4).map(|s| format!("w{j}[{s}]")).collect())
                .collect()
        } else if w.quads_along(0) && count.is_multiple_of(4) {
            for s in 0..4 {
                for g in 0..count / 4 {
                    let offset = filter(in_block(c, 1, 4 * g)[1].clone(), format!("(ci + {s}u)"));
                    let _ = writeln!(code, "        let w{s}_{g} = {};", w.load_quad(&offset));
                }
            }
            (0..count)
                .map(|j| {
                    (0..4)
                        .map(|s| format!("w{s}_{}[{}]", j / 4, j % 4))
                        .collect()
                })
                .collect()
        } else {
            let mut taps = Vec::new();
            for j in 0..count {
                let mut row = Vec::new();
                for s in 0..4 {
                    let offset = filter(in_block(c, 1, j)[1].clone(), format!("(ci + {s}u)"));
                    let _ = writeln!(code, "        let w{j}_{s} = {};", w.load(&offset));
                    row.push(format!("w{j}_{s}"));
                }
                taps.push(row);
            }
            taps
        };
        for q in 0..span {
            let mut at = vec![c[0].clone(), "channel".into()];
            for d in 0..rank {
                let position = match d == last {
                    true => in_block(c, 2 + d, q)[2 + d].clone(),
                    false => c[2 + d].clone(),
                };
                at.push(format!("{position} * {}u", op.stride[d]));
            }
            let _ = writeln!(
                code,
                "        let v{q} = {};",
                x.load_quad(&x.offset_at(&at))
            );
        }
        for q in 0..span {
            for (j, tap) in taps.iter().enumerate() {
                let k = q * count + j;
                for (s, tap) in tap.iter().enumerate() {
                    let _ = writeln!(code, "        acc{k} = fma(v{q}[{s}], {tap}, acc{k});");
                }
            }
        }
        code.push_str("    }\n");
        let values = self.finish(&mut code, c, count, span);
        Ok((code, values))
    }

    /// Statements summing `count` output elements from coordinates `c` on
    /// along the channels (all of one group, or with `quads` four groups of
    /// one channel each, read a quad at a time), at `span` neighbouring
    /// positions along the last spatial dimension (one for a transposed
    /// convolution), and their values: the channels at each position in
    /// turn. Where the input's channels and the filter's output channels
    /// both come in quads (a channels-last input, `count` a multiple of
    /// four), each tap reads a quad of input channels at once, a quarter
    /// of the loads: the sums then go over quads of input channels, the
    /// taps, and the quad's four channels, in that order (else the
    /// channels, then the taps), whatever the block.
    fn sums(
        &self,
        c: &[String],
        count: usize,
        span: usize,
        quads: bool,
    ) -> Result<(String, Vec<String>), Refusal> {
        let Conv {
            x,
            w,
            op,
            out_per_group,
            ..
        } = *self;
        let in_per_group = x.sizes[1] / op.groups;
        let rank = op.spatial_rank();
        let mut code = format!("    let group = {} / {out_per_group}u;\n", c[1]);
        for k in 0..count * span {
            let _ = writeln!(code, "    var acc{k} = 0.0f;");
        }
        // The output channels' taps, a quad of channels at a time where the
        // filter allows (always for `quads`); then a quad of input channels
        // per tap too where the input allows (`step` channels an iteration).
        let filter_quads = self.filter_quads(count);
        let channel_quads = !quads && self.channel_quads(count);
        let step = if channel_quads { 4 } else { 1 };
        let _ = writeln!(
            code,
            "    for (var ci = 0u; ci < {in_per_group}u; ci = ci + {step}u) {{
        let channel = group * {in_per_group}u + ci;"
        );
        let window = Window {
            stride: &op.stride,
            padding: &op.padding,
            dilation: &op.dilation,
            kernel: &w.sizes[2..],
            transposed: op.transposed.is_some(),
            // The output's size keeps the windows of an unpadded
            // convolution inside its input.
            unpadded: op.transposed.is_none() && op.padding.iter().all(|&p| p == 0),
        };
        // The window's loops: all of them for a transposed convolution,
        // those but the last's otherwise, whose taps are checked per
        // position below.
        let looped = if window.transposed { rank } else { rank - 1 };
        let mut input = vec![c[0].clone(), "channel".into()];
        input.extend(window_loops(
            &mut code,
            &c[2..2 + looped],
            &x.sizes[2..2 + looped],
            &window,
        )?);
        let mut indent = "    ".repeat(looped + 2);
        // The filter's tap at input channel `ci` and window position
        // `k0, k1, ..`, the last one `last_tap`.
        let filter = |channel: &str, quad: bool, ci: &str, last_tap: &str| {
            let mut filter = match op.transposed {
                None => vec![channel.to_string(), ci.to_string()],
                Some(_) => vec!["channel".into(), format!("({channel} % {out_per_group}u)")],
            };
            filter.extend((0..rank - 1).map(|d| format!("k{d}")));
            filter.push(last_tap.to_string());
            match quad {
                true => w.load_quad(&w.offset_at(&filter)),
                false => w.load(&w.offset_at(&filter)),
            }
        };
        let last = rank - 1;
        let (taps, stride, dilation) = (w.sizes[2 + last], op.stride[last], op.dilation[last]);
        let columns = self.columns(span as u64);
        // The statements loading the block's output channels' filter taps
        // at input channel `ci` and last window position `last_tap` as
        // `w{sub}_{j}`, a quad of channels each where the filter allows.
        let load_taps = |code: &mut String, indent: &str, sub: usize, ci: &str, last_tap: &str| {
            for j in (0..count).filter(|j| !filter_quads || j % 4 == 0) {
                let channel = in_block(c, 1, j)[1].clone();
                let load = filter(&channel, filter_quads, ci, last_tap);
                let _ = writeln!(code, "{indent}let w{sub}_{j} = {load};");
            }
        };
        // The filter element of the block's output channel `j` among those
        // loaded as `w{sub}_..` (a quad's component where they are quads).
        let tap = |sub: usize, j: usize| match filter_quads {
            true => format!("w{sub}_{}[{}]", j - j % 4, j % 4),
            false => format!("w{sub}_{j}"),
        };
        // The input columns a row of the span's windows covers, each loaded
        // once for every tap and position that reads it: quads of channels
        // (a depthwise convolution's), or the quads of a contiguous row (an
        // image in NCHW, the first convolution of most networks) from the
        // quad-aligned column before the first, the spans starting at a
        // fixed remainder modulo four; a word per tap and position
        // otherwise.
        let lead = self.row_lead();
        let row_quads = match quads {
            true => None,
            false => self.row_quads(count, span as u64),
        };
        let covered = match quads {
            true => columns <= MAX_COLUMNS,
            false => row_quads.is_some(),
        };
        if covered {
            let _ = writeln!(
                code,
                "{indent}let first = i32({} * {stride}u) - {};",
                c[2 + last],
                int(op.padding[last] as i64)?
            );
            for k in 0..taps {
                load_taps(&mut code, &indent, k as usize, "ci", &format!("{k}u"));
            }
            for m in 0..row_quads.unwrap_or(columns) {
                let mut at = input.clone();
                at.push(match row_quads {
                    None => format!("u32(first + {m}i)"),
                    Some(_) => format!("u32(first - {lead}i + {}i)", 4 * m),
                });
                let _ = writeln!(
                    code,
                    "{indent}let x{m} = {};",
                    x.load_quad(&x.offset_at(&at))
                );
            }
            let width = int(x.sizes[2 + last] as i64)?;
            for k in 0..taps {
                for q in 0..span as u64 {
                    let m = q * stride + k * dilation;
                    let update: String = (0..count)
                        .map(|j| {
                            let acc = q as usize * count + j;
                            let x = match row_quads {
                                None => format!("x{m}[{j}]"),
                                Some(_) => format!("x{}[{}]", (lead + m) / 4, (lead + m) % 4),
                            };
                            let w = tap(k as usize, j);
                            format!("acc{acc} = fma({x}, {w}, acc{acc}); ")
                        })
                        .collect();
                    let _ = writeln!(
                        code,
                        "{indent}{}",
                        in_columns(m, &width, window.unpadded, &update)
                    );
                }
            }
            let _ = writeln!(code, "{}    }}", close_loops(looped));
            let values = self.finish(&mut code, c, count, span);
            return Ok((code, values));
        }
        if !window.transposed {
            let _ = writeln!(code, "{indent}{}", open_taps(last, taps, window.unpadded));
            indent.push_str("    ");
        }
        for sub in 0..step {
            load_taps(
                &mut code,
                &indent,
                sub,
                &format!("(ci + {sub}u)"),
                &format!("k{last}"),
            );
        }
        for q in 0..span {
            let mut at = input.clone();
            let mut inner = indent.clone();
            let checked = !window.transposed && !window.unpadded;
            if !window.transposed {
                let position = in_block(c, 2 + last, q)[2 + last].clone();
                let _ = writeln!(
                    code,
                    "{indent}let i{last}_{q} = i32({position} * {}u + k{last} * {}u) - {};",
                    op.stride[last],
                    op.dilation[last],
                    int(op.padding[last] as i64)?,
                );
                at.push(format!("u32(i{last}_{q})"));
            }
            if checked {
                let _ = writeln!(
                    code,
                    "{indent}if (i{last}_{q} >= 0i && i{last}_{q} < {}) {{",
                    int(x.sizes[2 + last] as i64)?
                );
                inner.push_str("    ");
            }
            let (load, component): (String, fn(usize, usize) -> String) =
                match (quads, channel_quads) {
                    (true, _) => (x.load_quad(&x.offset_at(&at)), |j, _| format!("[{j}]")),
                    (false, true) => (x.load_quad(&x.offset_at(&at)), |_, sub| format!("[{sub}]")),
                    (false, false) => (x.load(&x.offset_at(&at)), |_, _| String::new()),
                };
            let _ = writeln!(code, "{inner}let v{q} = {load};");
            for j in 0..count {
                let k = q * count + j;
                for sub in 0..step {
                    let _ = writeln!(
                        code,
                        "{inner}acc{k} = fma(v{q}{}, {}, acc{k});",
                        component(j, sub),
                        tap(sub, j)
                    );
                }
            }
            if checked {
                let _ = writeln!(code, "{indent}}}");
            }
        }
        if !window.transposed {
            let _ = writeln!(code, "{}}}", &indent[4..]);
        }
        let _ = writeln!(code, "{}    }}", close_loops(looped));
        let values = self.finish(&mut code, c, count, span);
        Ok((code, values))
    }

    /// The values of the `count` channels at `span` positions summed in
    /// `acc0..` from coordinates `c` on: the bias, the clamp and the
    /// residual applied.
    fn finish(&self, code: &mut String, c: &[String], count: usize, span: usize) -> Vec<String> {
        let last = self.op.spatial_rank() - 1;
        let at = |k: usize| in_block(&in_block(c, 1, k % count), 2 + last, k / count);
        // Each channel's bias loaded once for the span, a quad of channels
        // at a time where the bias allows.
        let bias_quads =
            self.bias.is_some_and(|bias| bias.quads_along(0)) && count.is_multiple_of(4);
        let mut biases = Vec::new();
        for (j, channel) in (0..count).map(|j| (j, in_block(c, 1, j))) {
            let Some(bias) = self.bias else { break };
            let offset = bias.offset_at(&channel[1..2]);
            if !bias_quads {
                let _ = writeln!(code, "    let bias{j} = {};", bias.load(&offset));
                biases.push(format!("bias{j}"));
                continue;
            }
            if j % 4 == 0 {
                let _ = writeln!(code, "    let bias{j} = {};", bias.load_quad(&offset));
            }
            biases.push(format!("bias{}[{}]", j - j % 4, j % 4));
        }
        // The residual's elements, a quad of channels at a time where it
        // allows.
        let residual_quads = self.residual.is_some_and(|residual| {
            residual.rank() == c.len() && residual.quads_along(1) && count.is_multiple_of(4)
        });
        // Each biased sum bound once, as the clamp names it several times.
        let mut values = Vec::new();
        for k in 0..count * span {
            let mut value = format!("acc{k}");
            if let Some(bias) = biases.get(k % count) {
                let _ = writeln!(code, "    let biased{k} = {value} + {bias};");
                value = format!("biased{k}");
            }
            value = clamped(value, self.op.clamp);
            if let Some(residual) = self.residual {
                let term = match residual_quads {
                    false => residual.load_broadcast(&at(k)),
                    true => {
                        let first = k - k % 4;
                        if k % 4 == 0 {
                            let quad = residual.load_quad(&residual.offset_at(&at(first)));
                            let _ = writeln!(code, "    let residual{k} = {quad};");
                        }
                        format!("residual{first}[{}]", k % 4)
                    }
                };
                value = format!("({value} + {term})");
            }
            values.push(value);
        }
        values
    }
}

fn max_pool(
    x: &Tensor,
    out: &Tensor,
    MaxPool2d {
        kernel,
        stride,
        padding,
        dilation,
        ..
    }: &MaxPool2d,
    indices: Option<(u64, Vec<u64>)>,
) -> Result<Kernel, Refusal> {
    let width = x.sizes[3];
    per_element(
        out,
        |c| {
            let Some((word, strides)) = &indices else {
                return Ok(String::new());
            };
            let offset: Vec<String> = c
                .iter()
                .zip(strides)
                .map(|(coord, stride)| format!("{coord} * {stride}u"))
                .collect();
            Ok(format!(
                "    let at = {} + 2u * ({});\n    arena[at] = bitcast<u32>(best_index);\n    arena[at + 1u] = select(0u, 0xffffffffu, best_index < 0i);\n",
                base(*word),
                offset.join(" + ")
            ))
        },
        |c| {
            // The first tap inside the input is taken whatever its value
            // (a window of -inf gives its index, as PyTorch); later ones
            // when greater, or NaN.
            let mut code = format!(
                "    var best = {};\n    var best_index = -1i;\n",
                float(f64::NEG_INFINITY)
            );
            let window = Window {
                stride,
                padding,
                dilation,
                kernel,
                transposed: false,
                unpadded: false,
            };
            let spatial = window_loops(&mut code, &c[2..], &x.sizes[2..], &window)?;
            let _ = writeln!(
                code,
                "            let v = {};
            if (v > best || is_nan(v) || best_index < 0i) {{ best = v; best_index = i32({} * {width}u + {}); }}
{}",
                x.load(&x.offset_at(&[
                    c[0].clone(),
                    c[1].clone(),
                    spatial[0].clone(),
                    spatial[1].clone()
                ])),
                spatial[0],
                spatial[1],
                close_loops(2)
            );
            Ok(Element {
                code,
                value: "best".to_string(),
            })
        },
    )
}

fn avg_pool(
    x: &Tensor,
    out: &Tensor,
    AvgPool2d {
        kernel,
        stride,
        padding,
        count_include_pad,
        ..
    }: &AvgPool2d,
) -> Result<Kernel, Refusal> {
    let (height, width) = (x.sizes[2] as i64, x.sizes[3] as i64);
    per_element(out, no_extra, |c| {
        let mut code = String::new();
        for (axis, size) in [(0, height), (1, width)] {
            let name = ["h", "w"][axis];
            let _ = write!(
                code,
                "    let {name}0 = i32({}) * {} - {};
    let {name}1 = min({name}0 + {}, {});
    let {name}pool = {name}1 - {name}0;
    let {name}s = max({name}0, 0i);
    let {name}e = min({name}1, {});
",
                c[2 + axis],
                int(stride[axis] as i64)?,
                int(padding[axis] as i64)?,
                int(kernel[axis] as i64)?,
                int(size + padding[axis] as i64)?,
                int(size)?
            );
        }
        let divisor = if *count_include_pad {
            "f32(hpool * wpool)"
        } else {
            "f32((he - hs) * (we - ws))"
        };
        let _ = writeln!(
            code,
            "    var sum = 0.0f;
    for (var ih = hs; ih < he; ih = ih + 1i) {{
        for (var iw = ws; iw < we; iw = iw + 1i) {{
            sum = sum + {};
        }}
    }}",
            x.load(&x.offset_at(&[
                c[0].clone(),
                c[1].clone(),
                "u32(ih)".into(),
                "u32(iw)".into()
            ]))
        );
        Ok(Element {
            code,
            value: format!("(sum / {divisor})"),
        })
    })
}

/// The element of `x` at coordinates `source`, converted to `ty`.
fn moved(x: &Tensor, source: &[String], ty: Ty) -> String {
    convert(&x.load(&x.offset_at(source)), x.ty, ty)
}

/// `value` bounded by a fused clamp, as the elementwise clamp bounds it.
fn clamped(value: String, clamp: ClampRange) -> String {
    let mut value = value;
    if let Some(min) = clamp.min {
        value = at_least(&value, &float(min.0));
    }
    if let Some(max) = clamp.max {
        value = at_most(&value, &float(max.0));
    }
    value
}

/// The word offset and element strides of an i64 tensor of indices, which
/// shaders write as two words (the indices are small and non-negative).
fn index_slot(
    graph: &Graph<'_>,
    layout: &Layout<'_>,
    value: ValueId,
) -> Result<(u64, Vec<u64>), Refusal> {
    let data = graph.value(value);
    let (Some(offset), Some(strides)) = (data.offset, data.ty.fixed_strides()) else {
        return Err(refuse(format!("{value}, unplanned or dynamic,")));
    };
    let offset = layout.arena(value, offset)?;
    if !offset.is_multiple_of(8) || matches!(data.kind, ValueKind::Constant(_)) {
        return Err(refuse(format!("indices {value} at byte offset {offset}")));
    }
    Ok((offset / 4, strides))
}

/// The window of a convolution or pooling along each spatial dimension.
struct Window<'w> {
    stride: &'w [u64],
    padding: &'w [u64],
    dilation: &'w [u64],
    kernel: &'w [u64],
    /// Whether the window is a transposed convolution's: the input
    /// position `i` of tap `k` at output `o` solves
    /// `i * stride - padding + k * dilation = o`.
    transposed: bool,
    /// Whether every tap of every output lies inside the input, so that
    /// none needs checking (a pooling's ceil mode can put windows past it).
    unpadded: bool,
}

/// Opens a loop over each spatial dimension's taps (`k0`, `k1`, ...) at
/// output coordinates `spatial`, skipping taps outside an input of
/// `extents` (in the padding, or between a transposed convolution's
/// strides); returns the input coordinate expressions. The caller closes
/// the loops ([`close_loops`]).
fn window_loops(
    code: &mut String,
    spatial: &[String],
    extents: &[u64],
    window: &Window<'_>,
) -> Result<Vec<String>, Refusal> {
    let mut names = Vec::new();
    for (d, coordinate) in spatial.iter().enumerate() {
        let indent = "    ".repeat(d + 1);
        let (extent, stride, padding, dilation) = (
            int(extents[d] as i64)?,
            window.stride[d],
            int(window.padding[d] as i64)?,
            window.dilation[d],
        );
        let _ = writeln!(
            code,
            "{indent}{}",
            open_taps(d, window.kernel[d], window.unpadded)
        );
        if window.transposed {
            let stride = int(stride as i64)?;
            let _ = write!(
                code,
                "{indent}    let t{d} = i32({coordinate}) + {padding} - i32(k{d} * {dilation}u);
{indent}    if (t{d} < 0i || t{d} % {stride} != 0i) {{ continue; }}
{indent}    let i{d} = t{d} / {stride};
{indent}    if (i{d} >= {extent}) {{ continue; }}
"
            );
        } else {
            let _ = writeln!(
                code,
                "{indent}    let i{d} = i32({coordinate} * {stride}u + k{d} * {dilation}u) - {padding};"
            );
            if !window.unpadded {
                let _ = writeln!(
                    code,
                    "{indent}    if (i{d} < 0i || i{d} >= {extent}) {{ continue; }}"
                );
            }
        }
        names.push(format!("u32(i{d})"));
    }
    Ok(names)
}

/// The statements `update` of the input column `first + m` of a row
/// [`Conv::sums`] loaded at once, run only where the column is inside the
/// row of `width` (always, for a window that is never padded).
fn in_columns(m: u64, width: &str, unpadded: bool, update: &str) -> String {
    match unpadded {
        true => update.trim_end().to_string(),
        false => format!("if (first + {m}i >= 0i && first + {m}i < {width}) {{ {update}}}"),
    }
}

/// The opening of the loop over the `taps` taps `k{d}` of a window's
/// dimension `d`: a plain block for a single tap that needs no check (whose
/// body has no `continue`).
fn open_taps(d: usize, taps: u64, unpadded: bool) -> String {
    if taps == 1 && unpadded {
        format!("{{ let k{d} = 0u;")
    } else {
        format!("for (var k{d} = 0u; k{d} < {taps}u; k{d} = k{d} + 1u) {{")
    }
}

/// The closing braces of `count` nested loops from [`window_loops`].
fn close_loops(count: usize) -> String {
    (0..count)
        .rev()
        .map(|d| format!("{}}}\n", "    ".repeat(d + 1)))
        .collect()
}

/// `out = clamp(beta * bias + alpha * (a @ b))`, batched over leading
/// dimensions with broadcasting: up to [`BLOCK`] rows at [`SPAN`] (or
/// [`WIDE_SPAN`]) columns per invocation, or one element per invocation where the output
/// does not suit a blocked kernel (one-byte elements). Either way each
/// element sums in the same order.
fn matmul(
    [a, b]: [&Tensor; 2],
    bias: Option<&Tensor>,
    out: &Tensor,
    (beta, alpha): (Scalar, Scalar),
    clamp: ClampRange,
) -> Result<Kernel, Refusal> {
    if a.rank() < 2 || b.rank() < 2 {
        return Err(refuse("a matrix product of vectors"));
    }
    // Floats accumulate with fused multiply-adds; integers (i8, u8, i32,
    // computed in i32) wrap as WGSL's i32 arithmetic does, which their
    // stores then truncate like PyTorch's products.
    let (zero, step) = match out.ty {
        Ty::F32 => ("0.0f", "fma({a}, {b}, {acc})"),
        Ty::I32 if clamp.is_none() => ("0i", "{acc} + {a} * {b}"),
        Ty::I32 => return Err(refuse("a fused clamp on an integer matrix product")),
        Ty::Bool => return Err(refuse("a matrix product of bool elements")),
    };
    let depth = a.sizes[a.rank() - 1];
    let rows_dim = out.rank() - 2;
    let columns_dim = out.rank() - 1;
    // `count` rows at `span` neighbouring columns: each of `a`'s elements
    // loaded once for the columns, each of `b`'s once for the rows; four
    // steps along the depth at a time where an operand is read in quads
    // (`a` along the depth; `b` along its columns, or along the depth),
    // each element still summed step by step in order.
    let a_quads = a.quads_along(a.rank() - 1);
    let b_quads = [b.rank() - 1, b.rank() - 2].map(|dim| b.quads_along(dim));
    let sums = |c: &[String], count: usize, span: usize| -> Result<_, Refusal> {
        let rank = c.len();
        let offset = |t: &Tensor, rows: String, columns: String| {
            let mut coords: Vec<String> = c[rank - t.rank()..rank - 2].to_vec();
            coords.push(rows);
            coords.push(columns);
            t.offset_at(&coords)
        };
        let b_columns = b_quads[0] && span.is_multiple_of(4);
        // `a`'s and `b`'s quads along the depth imply a multiple of four.
        let steps = match a_quads || b_quads[1] || (b_columns && depth.is_multiple_of(4)) {
            true => 4,
            false => 1,
        };
        let depth_at = |s: usize| match s {
            0 => "k".to_string(),
            s => format!("(k + {s}u)"),
        };
        let row = |j: usize| in_block(c, rows_dim, j)[rows_dim].clone();
        let column = |q: usize| in_block(c, columns_dim, q)[columns_dim].clone();
        // The column of quad `g` of a row of `b`'s span, kept inside the
        // row where the span runs past its end (columns not stored).
        let columns = out.sizes[columns_dim];
        let quad_column = |g: usize| match g > 0 && !columns.is_multiple_of(span as u64) {
            true => format!("min({}, {}u)", column(g * 4), columns - 4),
            false => column(g * 4),
        };
        let mut code = String::new();
        for k in 0..count * span {
            let _ = writeln!(code, "    var acc{k} = {zero};");
        }
        let _ = writeln!(
            code,
            "    for (var k = 0u; k < {depth}u; k = k + {steps}u) {{"
        );
        // Each operand's element at step `s`, row `j` or column `q`.
        let mut left = vec![Vec::new(); count];
        for (j, row_values) in left.iter_mut().enumerate() {
            if a_quads {
                let quad = a.load_quad(&offset(a, row(j), "k".into()));
                let _ = writeln!(code, "        let a{j} = {quad};");
                *row_values = (0..steps).map(|s| format!("a{j}[{s}]")).collect();
                continue;
            }
            for s in 0..steps {
                let value = a.load(&offset(a, row(j), depth_at(s)));
                let _ = writeln!(code, "        let a{j}_{s} = {value};");
                row_values.push(format!("a{j}_{s}"));
            }
        }
        let mut right = vec![Vec::new(); steps];
        for (s, step_values) in right.iter_mut().enumerate() {
            if b_columns {
                for g in 0..span / 4 {
                    let quad = b.load_quad(&offset(b, depth_at(s), quad_column(g)));
                    let _ = writeln!(code, "        let b{s}_{g} = {quad};");
                }
                *step_values = (0..span)
                    .map(|q| format!("b{s}_{}[{}]", q / 4, q % 4))
                    .collect();
            } else if !b_quads[1] {
                for q in 0..span {
                    let value = b.load(&offset(b, depth_at(s), column(q)));
                    let _ = writeln!(code, "        let b{s}_{q} = {value};");
                    step_values.push(format!("b{s}_{q}"));
                }
            }
        }
        if b_quads[1] && !b_columns {
            for q in 0..span {
                let quad = b.load_quad(&offset(b, "k".into(), column(q)));
                let _ = writeln!(code, "        let b{q} = {quad};");
                for (s, step_values) in right.iter_mut().enumerate() {
                    step_values.push(format!("b{q}[{s}]"));
                }
            }
        }
        // Each sum over the depth's steps in a row, as the convolutions'.
        for q in 0..span {
            for (j, row_values) in left.iter().enumerate() {
                for (s, step_values) in right.iter().enumerate() {
                    let update = step
                        .replace("{a}", &row_values[s])
                        .replace("{b}", &step_values[q])
                        .replace("{acc}", &format!("acc{}", q * count + j));
                    let _ = writeln!(code, "        acc{} = {update};", q * count + j);
                }
            }
        }
        code.push_str("    }\n");
        let mut values = Vec::new();
        for k in 0..count * span {
            let at = in_block(&in_block(c, rows_dim, k % count), columns_dim, k / count);
            let mut value = if alpha.as_f64() == 1.0 {
                format!("acc{k}")
            } else {
                format!("({} * acc{k})", scalar(alpha, out.ty)?)
            };
            if let Some(bias) = bias.filter(|_| beta.as_f64() != 0.0) {
                let term = bias.load_broadcast(&at);
                value = if beta.as_f64() == 1.0 {
                    format!("({term} + {value})")
                } else {
                    format!("({} * {term} + {value})", scalar(beta, out.ty)?)
                };
            }
            // Bound once, as the clamp names it several times.
            let _ = writeln!(code, "    let sum{k} = {value};");
            values.push(clamped(format!("sum{k}"), clamp));
        }
        Ok((code, values))
    };
    // Where `b`'s rows read in quads, each row of `a`'s quads (loaded lane
    // by lane on lavapipe) serves four quads of columns; not for a product
    // of a few rows (a classifier's vector), whose columns are all there is
    // to share between invocations.
    let span =
        match b_quads[0] && out.sizes[columns_dim] >= WIDE_SPAN && out.sizes[rows_dim] >= BLOCK {
            true => WIDE_SPAN,
            false => out.sizes[columns_dim].clamp(1, SPAN),
        };
    let block = out.sizes[rows_dim].clamp(1, BLOCK);
    let blocks = blocked(out, rows_dim, block, Some((columns_dim, span)), |c| {
        sums(c, block as usize, span as usize)
    })?;
    if let Some(kernel) = blocks {
        return Ok(kernel);
    }
    per_element(out, no_extra, |c| {
        let (code, mut values) = sums(c, 1, 1)?;
        Ok(Element {
            code,
            value: values.remove(0),
        })
    })
}

/// The dimensions of `x` other than `skip`, and statements binding their
/// coordinates (`r{d}`) from the invocation index `t`, row-major.
fn row_coordinates(x: &Tensor, skip: &[usize]) -> (u64, String, Vec<String>) {
    let kept: Vec<usize> = (0..x.rank()).filter(|dim| !skip.contains(dim)).collect();
    let rows: u64 = kept.iter().map(|&dim| x.sizes[dim]).product();
    let mut code = String::new();
    let mut coords = vec!["0u".to_string(); x.rank()];
    let mut rest = "t".to_string();
    for (step, &dim) in kept.iter().rev().enumerate() {
        coords[dim] = format!("r{dim}");
        let _ = writeln!(code, "    let r{dim} = {rest} % {}u;", x.sizes[dim]);
        let next = format!("rr{step}");
        let _ = writeln!(code, "    let {next} = {rest} / {}u;", x.sizes[dim]);
        rest = next;
    }
    (rows, code, coords)
}

fn reduce(
    x: &Tensor,
    out: &Tensor,
    op: ReduceOp,
    dims: &[usize],
    keepdim: bool,
) -> Result<Kernel, Refusal> {
    let op = op.into_type(out.dtype);
    // A sum or product computes in its output's type: each element is
    // converted first, which these shaders do not do.
    if matches!(op, ReduceOp::Sum | ReduceOp::Prod) && out.dtype != x.dtype {
        return Err(refuse(format!(
            "{op:?} of {} tensors into {}",
            x.dtype, out.dtype
        )));
    }
    let ty = x.ty;
    let (init, combine): (String, fn(&str) -> String) = match (op, ty) {
        (ReduceOp::Sum | ReduceOp::Mean, Ty::F32) => ("0.0f".into(), |v| format!("acc + {v}")),
        (ReduceOp::Prod, Ty::F32) => ("1.0f".into(), |v| format!("acc * {v}")),
        (ReduceOp::Max, Ty::F32) => (float(f64::NEG_INFINITY), |v| format!("nan_max(acc, {v})")),
        (ReduceOp::Min, Ty::F32) => (float(f64::INFINITY), |v| format!("nan_min(acc, {v})")),
        (ReduceOp::Max, Ty::I32) => (int(i32::MIN.into())?, |v| format!("max(acc, {v})")),
        (ReduceOp::Min, Ty::I32) => (int(i32::MAX.into())?, |v| format!("min(acc, {v})")),
        (ReduceOp::Any, _) => ("false".into(), |v| format!("acc || {v}")),
        (ReduceOp::All, _) => ("true".into(), |v| format!("acc && {v}")),
        _ => return Err(refuse(format!("{op:?} of {} tensors", x.dtype))),
    };
    let acc_ty = match op {
        ReduceOp::Any | ReduceOp::All => Ty::Bool,
        _ => ty,
    };
    let reduced: Vec<usize> = dims.to_vec();
    let count: u64 = reduced.iter().map(|&dim| x.sizes[dim]).product();
    let finish = |acc: &str| match op {
        ReduceOp::Mean => format!("({acc} / {})", float(count as f64)),
        _ => acc.to_string(),
    };
    per_element(out, no_extra, |c| {
        // Input coordinates: kept dimensions from the output's, reduced ones
        // from the loop index.
        let mut source = Vec::new();
        let mut next = 0;
        for dim in 0..x.rank() {
            if reduced.contains(&dim) {
                source.push(format!("q{dim}"));
                if keepdim {
                    next += 1;
                }
            } else {
                source.push(c[next].clone());
                next += 1;
            }
        }
        let mut code = format!("    var acc: {} = {init};\n", acc_ty.name());
        if count == 0 {
            // An empty reduction: the initial value (and 0 / 0 for a mean).
            return Ok(Element {
                code,
                value: convert(&finish("acc"), acc_ty, out.ty),
            });
        }
        let _ = writeln!(code, "    for (var q = 0u; q < {count}u; q = q + 1u) {{");
        let mut rest = "q".to_string();
        for (step, &dim) in reduced.iter().rev().enumerate() {
            let _ = writeln!(code, "        let q{dim} = {rest} % {}u;", x.sizes[dim]);
            let _ = writeln!(code, "        let qq{step} = {rest} / {}u;", x.sizes[dim]);
            rest = format!("qq{step}");
        }
        let element = convert(&x.load(&x.offset_at(&source)), ty, acc_ty);
        let _ = writeln!(code, "        acc = {};\n    }}", combine(&element));
        Ok(Element {
            code,
            value: convert(&finish("acc"), acc_ty, out.ty),
        })
    })
}

/// A kernel with one invocation per row of `x` along `dim`: `body` is the
/// code run for each row, given the row's coordinates (`dim`'s replaced by
/// the loop variable `i`).
fn per_row(x: &Tensor, dims: &[usize], body: impl FnOnce(&[String]) -> String) -> Kernel {
    let (rows, mut code, coords) = row_coordinates(x, dims);
    code.push_str(&body(&coords));
    Kernel {
        body: code,
        invocations: rows,
    }
}

fn store(out: &Tensor, coords: &[String], value: &str) -> String {
    format!(
        "arena[{} + {}] = bitcast<u32>({value});",
        base(out.byte_offset / 4),
        out.offset_at(coords)
    )
}

/// A softmax as the CPU computes it; a safe softmax's row of -inf shifts by
/// 0 and scales by 0, giving zeros.
fn softmax(
    x: &Tensor,
    out: &Tensor,
    &Softmax { dim, log, safe, .. }: &Softmax,
) -> Result<Kernel, Refusal> {
    if x.ty != Ty::F32 || out.ty != Ty::F32 {
        return Err(refuse(format!("softmax of {} tensors", x.dtype)));
    }
    let length = x.sizes[dim];
    let lowest = float(f64::NEG_INFINITY);
    Ok(per_row(x, &[dim], |coords| {
        let mut at = coords.to_vec();
        at[dim] = "i".into();
        let element = x.load(&x.offset_at(&at));
        let result = match (log, safe) {
            (true, _) => "v - m - log(s)",
            (false, false) => "exp(v - m) / s",
            (false, true) => "select(exp(v - m) / s, 0.0f, masked)",
        };
        let mask = match safe {
            true => format!("    let masked = m == {lowest};\n    m = select(m, 0.0f, masked);\n"),
            false => String::new(),
        };
        format!(
            "    var m = {lowest};
    for (var i = 0u; i < {length}u; i = i + 1u) {{ m = nan_max(m, {element}); }}
{mask}    var s = 0.0f;
    for (var i = 0u; i < {length}u; i = i + 1u) {{ s = s + exp({element} - m); }}
    for (var i = 0u; i < {length}u; i = i + 1u) {{
        let v = {element};
        {}
    }}
",
            store(out, &at, result)
        )
    }))
}

/// Running sums, in f32.
fn cumsum(x: &Tensor, out: &Tensor, dim: usize) -> Result<Kernel, Refusal> {
    if out.ty != Ty::F32 {
        return Err(refuse(format!(
            "cumulative sums into {} elements",
            out.dtype
        )));
    }
    let length = x.sizes[dim];
    Ok(per_row(x, &[dim], |coords| {
        let mut at = coords.to_vec();
        at[dim] = "i".into();
        format!(
            "    var s = 0.0f;
    for (var i = 0u; i < {length}u; i = i + 1u) {{
        s = s + {};
        {}
    }}
",
            convert(&x.load(&x.offset_at(&at)), x.ty, Ty::F32),
            store(out, &at, "s")
        )
    }))
}

fn layer_norm(
    x: &Tensor,
    [weight, bias]: [Option<Tensor>; 2],
    out: &Tensor,
    [mean, rstd]: [Option<Tensor>; 2],
    normalized_dims: usize,
    eps: f64,
) -> Result<Kernel, Refusal> {
    if x.ty != Ty::F32 {
        return Err(refuse(format!("layer norm of {} tensors", x.dtype)));
    }
    let lead = x.rank() - normalized_dims;
    let trailing: Vec<usize> = (lead..x.rank()).collect();
    let count: u64 = trailing.iter().map(|&dim| x.sizes[dim]).product();
    // A row along one dimension read (and written) four elements at a
    // time where every tensor allows, each still summed in order.
    let quads = normalized_dims == 1
        && x.quads_along(lead)
        && out.quads_along(lead)
        && [&weight, &bias]
            .into_iter()
            .flatten()
            .all(|t| t.rank() == 1 && t.quads_along(0));
    let lanes = if quads { 4 } else { 1 };
    let lane = |name: &str, s: usize| match quads {
        true => format!("{name}[{s}]"),
        false => name.to_string(),
    };
    Ok(per_row(x, &trailing, |coords| {
        let mut at = coords.to_vec();
        let mut split = String::new();
        let mut index = "i".to_string();
        for (step, &dim) in trailing.iter().rev().enumerate() {
            at[dim] = format!("i{dim}");
            let _ = writeln!(split, "        let i{dim} = {index} % {}u;", x.sizes[dim]);
            let _ = writeln!(split, "        let ii{step} = {index} / {}u;", x.sizes[dim]);
            index = format!("ii{step}");
        }
        let load = |t: &Tensor, coords: &[String]| match quads {
            true => t.load_quad(&t.offset_at(coords)),
            false => t.load_broadcast(coords),
        };
        let _ = writeln!(split, "        let v = {};", load(x, &at));
        let (mut sum, mut squares, mut normalized) = (String::new(), String::new(), Vec::new());
        for s in 0..lanes {
            let v = lane("v", s);
            let _ = writeln!(sum, "        sum = sum + {v};");
            let _ = writeln!(
                squares,
                "        let d{s} = {v} - mean;\n        squares = squares + d{s} * d{s};"
            );
            let mut value = format!("({v} - mean) * rstd");
            if weight.is_some() {
                value = format!("{value} * {}", lane("w", s));
            }
            if bias.is_some() {
                value = format!("{value} + {}", lane("b", s));
            }
            normalized.push(value);
        }
        let mut parameters = String::new();
        for (name, t) in [("w", &weight), ("b", &bias)] {
            if let Some(t) = t {
                let _ = writeln!(parameters, "        let {name} = {};", load(t, &at[lead..]));
            }
        }
        let normalized: Vec<&str> = normalized.iter().map(String::as_str).collect();
        let stored = match quads {
            true => out.store_quad(&out.offset_at(&at), &normalized),
            false => store(out, &at, normalized[0]),
        };
        let statistic = |t: &Option<Tensor>, value: &str| {
            t.as_ref()
                .map(|t| format!("    {}\n", store(t, &coords[..t.rank()], value)))
                .unwrap_or_default()
        };
        format!(
            "    var sum = 0.0f;
    for (var i = 0u; i < {count}u; i = i + {lanes}u) {{
{split}{sum}    }}
    let mean = sum / {n};
    var squares = 0.0f;
    for (var i = 0u; i < {count}u; i = i + {lanes}u) {{
{split}{squares}    }}
    let rstd = 1.0f / sqrt(squares / {n} + {eps});
{}{}    for (var i = 0u; i < {count}u; i = i + {lanes}u) {{
{split}{parameters}        {stored}
    }}
",
            statistic(&mean, "mean"),
            statistic(&rstd, "rstd"),
            n = float(count as f64),
            eps = float(eps),
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::span_along;

    /// Rows of 28, 14 and 7 (mobilenet_v2's later stages) in spans of 7,
    /// none computed past the end; rows that spans of 8 divide keep 8.
    #[test]
    fn spans_leave_no_positions_past_the_row_where_they_can() {
        let spans: Vec<u64> = [112, 56, 28, 14, 7, 10, 3]
            .map(|size| span_along(size, 8, false))
            .to_vec();
        assert_eq!(spans, [8, 8, 7, 7, 7, 5, 3]);
        // Stored in quads along the row: multiples of four only.
        let quads: Vec<u64> = [56, 28, 14, 3]
            .map(|size| span_along(size, 8, true))
            .to_vec();
        assert_eq!(quads, [8, 4, 8, 4]);
    }
}
