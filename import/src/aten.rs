//! The operator table: how each ATen out-variant kernel call (and the
//! `dim_order_ops` ones ExecuTorch adds) becomes IR ops. Arguments are
//! positional, as the operator's schema lists them, with the `out` tensors
//! last. Each entry also names the kinds of op it emits, which is how `ptec
//! operators` tells, per back end, what a key needs.
//!
//! Unary elementwise functions are not listed here: every [`UnaryOp`] whose
//! ATen name is its own is imported as `aten::NAME.out(self, *, out)`.

use std::collections::HashMap;
use std::sync::OnceLock;

use ptec_ir::ops::conv::{AvgPool2d, Convolution, MaxPool2d, Pair};
use ptec_ir::ops::creation::{Arange, Full};
use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::gather::{Embedding, IndexSelect};
use ptec_ir::ops::layout::{Cat, Copy, Pad, Permute, Repeat, Reshape, Select, Slice};
use ptec_ir::ops::linalg::{Addmm, ClampRange, MatMul};
use ptec_ir::ops::norm::{BatchNorm, LayerNorm};
use ptec_ir::ops::reduce::{ArgReduce, CumSum, Extreme, Reduce, ReduceOp, Softmax};
use ptec_ir::{Op, OpKind, Real, Scalar};

use crate::call::Call;
use crate::error::ImportError;

type Rule = fn(&mut Call<'_, '_, '_>) -> Result<(), ImportError>;

/// How one operator is imported.
#[derive(Clone, Copy)]
enum Import {
    /// By a rule of its own.
    Rule(Rule),
    /// As a unary elementwise function: `(self, *, out)`.
    Unary(UnaryOp),
}

/// An operator the table imports: its rule and the kinds of op it emits.
#[derive(Clone, Copy)]
struct Entry {
    import: Import,
    emits: &'static [OpKind],
}

const ELEMENTWISE: &[OpKind] = &[OpKind::Elementwise];

/// Every operator with a rule of its own, by its kernel key
/// (`name.overload`), with the kinds of op it emits.
const OPERATORS: &[(&str, Rule, &[OpKind])] = &[
    ("aten::leaky_relu.out", leaky_relu, ELEMENTWISE),
    ("aten::elu.out", elu, ELEMENTWISE),
    ("aten::gelu.out", gelu, ELEMENTWISE),
    ("aten::hardtanh.out", hardtanh, ELEMENTWISE),
    ("aten::clamp.out", clamp, ELEMENTWISE),
    // Elementwise, two operands.
    (
        "aten::add.out",
        |c| binary_alpha(c, BinaryOp::Add),
        ELEMENTWISE,
    ),
    (
        "aten::sub.out",
        |c| binary_alpha(c, BinaryOp::Sub),
        ELEMENTWISE,
    ),
    (
        "aten::add.Scalar_out",
        |c| scalar_alpha(c, BinaryOp::Add),
        ELEMENTWISE,
    ),
    (
        "aten::sub.Scalar_out",
        |c| scalar_alpha(c, BinaryOp::Sub),
        ELEMENTWISE,
    ),
    ("aten::mul.out", |c| binary(c, BinaryOp::Mul), ELEMENTWISE),
    ("aten::div.out", |c| binary(c, BinaryOp::Div), ELEMENTWISE),
    ("aten::div.out_mode", div_mode, ELEMENTWISE),
    (
        "aten::floor_divide.out",
        |c| binary(c, BinaryOp::FloorDiv),
        ELEMENTWISE,
    ),
    (
        "aten::remainder.Tensor_out",
        |c| binary(c, BinaryOp::Remainder),
        ELEMENTWISE,
    ),
    (
        "aten::pow.Tensor_Tensor_out",
        |c| binary(c, BinaryOp::Pow),
        ELEMENTWISE,
    ),
    (
        "aten::maximum.out",
        |c| binary(c, BinaryOp::Maximum),
        ELEMENTWISE,
    ),
    (
        "aten::minimum.out",
        |c| binary(c, BinaryOp::Minimum),
        ELEMENTWISE,
    ),
    (
        "aten::eq.Tensor_out",
        |c| binary(c, BinaryOp::Eq),
        ELEMENTWISE,
    ),
    (
        "aten::ne.Tensor_out",
        |c| binary(c, BinaryOp::Ne),
        ELEMENTWISE,
    ),
    (
        "aten::lt.Tensor_out",
        |c| binary(c, BinaryOp::Lt),
        ELEMENTWISE,
    ),
    (
        "aten::le.Tensor_out",
        |c| binary(c, BinaryOp::Le),
        ELEMENTWISE,
    ),
    (
        "aten::gt.Tensor_out",
        |c| binary(c, BinaryOp::Gt),
        ELEMENTWISE,
    ),
    (
        "aten::ge.Tensor_out",
        |c| binary(c, BinaryOp::Ge),
        ELEMENTWISE,
    ),
    (
        "aten::logical_and.out",
        |c| binary(c, BinaryOp::LogicalAnd),
        ELEMENTWISE,
    ),
    (
        "aten::logical_or.out",
        |c| binary(c, BinaryOp::LogicalOr),
        ELEMENTWISE,
    ),
    (
        "aten::logical_xor.out",
        |c| binary(c, BinaryOp::LogicalXor),
        ELEMENTWISE,
    ),
    (
        "aten::mul.Scalar_out",
        |c| with_scalar(c, BinaryOp::Mul),
        ELEMENTWISE,
    ),
    (
        "aten::div.Scalar_out",
        |c| with_scalar(c, BinaryOp::Div),
        ELEMENTWISE,
    ),
    (
        "aten::remainder.Scalar_out",
        |c| with_scalar(c, BinaryOp::Remainder),
        ELEMENTWISE,
    ),
    (
        "aten::pow.Tensor_Scalar_out",
        |c| with_scalar(c, BinaryOp::Pow),
        ELEMENTWISE,
    ),
    (
        "aten::eq.Scalar_out",
        |c| with_scalar(c, BinaryOp::Eq),
        ELEMENTWISE,
    ),
    (
        "aten::ne.Scalar_out",
        |c| with_scalar(c, BinaryOp::Ne),
        ELEMENTWISE,
    ),
    (
        "aten::lt.Scalar_out",
        |c| with_scalar(c, BinaryOp::Lt),
        ELEMENTWISE,
    ),
    (
        "aten::le.Scalar_out",
        |c| with_scalar(c, BinaryOp::Le),
        ELEMENTWISE,
    ),
    (
        "aten::gt.Scalar_out",
        |c| with_scalar(c, BinaryOp::Gt),
        ELEMENTWISE,
    ),
    (
        "aten::ge.Scalar_out",
        |c| with_scalar(c, BinaryOp::Ge),
        ELEMENTWISE,
    ),
    ("aten::where.self_out", where_, ELEMENTWISE),
    // Copies and layout changes.
    ("aten::clone.out", |c| copy(c, 2), &[OpKind::Copy]),
    ("aten::_to_copy.out", |c| copy(c, 3), &[OpKind::Copy]),
    (
        "dim_order_ops::_to_dim_order_copy.out",
        |c| copy(c, 3),
        &[OpKind::Copy],
    ),
    (
        "dim_order_ops::_clone_dim_order.out",
        |c| copy(c, 3),
        &[OpKind::Copy],
    ),
    ("aten::expand_copy.out", |c| copy(c, 3), &[OpKind::Copy]),
    ("aten::copy.out", copy_from, &[OpKind::Copy]),
    ("aten::copy_", copy_into, &[OpKind::Copy]),
    ("aten::view_copy.out", |c| reshape(c, 2), &[OpKind::Reshape]),
    (
        "aten::_unsafe_view.out",
        |c| reshape(c, 2),
        &[OpKind::Reshape],
    ),
    (
        "aten::unsqueeze_copy.out",
        |c| reshape(c, 2),
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.dims_out",
        |c| reshape(c, 2),
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.dim_out",
        |c| reshape(c, 2),
        &[OpKind::Reshape],
    ),
    (
        "aten::squeeze_copy.out",
        |c| reshape(c, 1),
        &[OpKind::Reshape],
    ),
    ("aten::permute_copy.out", permute, &[OpKind::Permute]),
    ("aten::t_copy.out", transpose_matrix, &[OpKind::Permute]),
    (
        "aten::transpose_copy.int_out",
        transpose,
        &[OpKind::Permute],
    ),
    ("aten::select_copy.int_out", select, &[OpKind::Select]),
    ("aten::slice_copy.Tensor_out", slice, &[OpKind::Slice]),
    (
        "aten::split_with_sizes_copy.out",
        split_with_sizes,
        &[OpKind::Slice],
    ),
    ("aten::constant_pad_nd.out", constant_pad, &[OpKind::Pad]),
    ("aten::repeat.out", repeat, &[OpKind::Repeat]),
    (
        "aten::index_select.out",
        index_select,
        &[OpKind::IndexSelect],
    ),
    ("aten::cat.out", cat, &[OpKind::Cat]),
    // Reductions and normalizations.
    (
        "aten::sum.IntList_out",
        |c| reduce(c, ReduceOp::Sum),
        &[OpKind::Reduce],
    ),
    (
        "aten::mean.out",
        |c| reduce(c, ReduceOp::Mean),
        &[OpKind::Reduce],
    ),
    (
        "aten::amax.out",
        |c| reduce_list(c, ReduceOp::Max),
        &[OpKind::Reduce],
    ),
    (
        "aten::amin.out",
        |c| reduce_list(c, ReduceOp::Min),
        &[OpKind::Reduce],
    ),
    ("aten::any.out", any_along, &[OpKind::Reduce]),
    (
        "aten::any.all_out",
        |c| reduce_all(c, ReduceOp::Any),
        &[OpKind::Reduce],
    ),
    (
        "aten::all.all_out",
        |c| reduce_all(c, ReduceOp::All),
        &[OpKind::Reduce],
    ),
    (
        "aten::argmax.out",
        |c| arg_reduce(c, Extreme::Max),
        &[OpKind::ArgReduce],
    ),
    (
        "aten::argmin.out",
        |c| arg_reduce(c, Extreme::Min),
        &[OpKind::ArgReduce],
    ),
    // Values and indices: a reduction and an arg-reduction of one input.
    (
        "aten::max.dim_max",
        |c| extreme_along(c, Extreme::Max),
        &[OpKind::Reduce, OpKind::ArgReduce],
    ),
    (
        "aten::min.dim_min",
        |c| extreme_along(c, Extreme::Min),
        &[OpKind::Reduce, OpKind::ArgReduce],
    ),
    (
        "aten::max.unary_out",
        |c| reduce_all(c, ReduceOp::Max),
        &[OpKind::Reduce],
    ),
    (
        "aten::min.unary_out",
        |c| reduce_all(c, ReduceOp::Min),
        &[OpKind::Reduce],
    ),
    ("aten::prod.int_out", prod, &[OpKind::Reduce]),
    ("aten::cumsum.out", cumsum, &[OpKind::CumSum]),
    (
        "aten::_softmax.out",
        |c| softmax(c, false),
        &[OpKind::Softmax],
    ),
    (
        "aten::_log_softmax.out",
        |c| softmax(c, true),
        &[OpKind::Softmax],
    ),
    (
        "aten::native_layer_norm.out",
        layer_norm,
        &[OpKind::LayerNorm],
    ),
    (
        "aten::_native_batch_norm_legit_no_training.out",
        batch_norm,
        &[OpKind::BatchNorm],
    ),
    // Linear algebra, convolution, pooling.
    ("aten::mm.out", matmul, &[OpKind::MatMul]),
    ("aten::bmm.out", matmul, &[OpKind::MatMul]),
    ("aten::addmm.out", addmm, &[OpKind::Addmm]),
    ("aten::convolution.out", convolution, &[OpKind::Convolution]),
    (
        "aten::max_pool2d_with_indices.out",
        max_pool2d,
        &[OpKind::MaxPool2d],
    ),
    ("aten::avg_pool2d.out", avg_pool2d, &[OpKind::AvgPool2d]),
    (
        "aten::_adaptive_avg_pool2d.out",
        adaptive_avg_pool2d,
        &[OpKind::AvgPool2d],
    ),
    ("aten::embedding.out", embedding, &[OpKind::Embedding]),
    // Creation.
    ("aten::full.out", |c| fill_from(c, 1, 2), &[OpKind::Full]),
    (
        "aten::full_like.out",
        |c| fill_from(c, 1, 3),
        &[OpKind::Full],
    ),
    (
        "aten::scalar_tensor.out",
        |c| fill_from(c, 0, 1),
        &[OpKind::Full],
    ),
    (
        "aten::zeros_like.out",
        |c| fill(c, Scalar::Int(0), 2),
        &[OpKind::Full],
    ),
    (
        "aten::ones_like.out",
        |c| fill(c, Scalar::Int(1), 2),
        &[OpKind::Full],
    ),
    ("aten::arange.start_out", arange_start, &[OpKind::Arange]),
    ("aten::arange.out", arange, &[OpKind::Arange]),
];

/// The table by key, the unary functions' entries included.
fn table() -> &'static HashMap<String, Entry> {
    static TABLE: OnceLock<HashMap<String, Entry>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let unary = UnaryOp::ALL.into_iter().filter_map(|op| {
            let entry = Entry {
                import: Import::Unary(op),
                emits: ELEMENTWISE,
            };
            op.aten_name()
                .map(|name| (format!("aten::{name}.out"), entry))
        });
        let own = OPERATORS.iter().map(|&(key, rule, emits)| {
            let entry = Entry {
                import: Import::Rule(rule),
                emits,
            };
            (key.to_string(), entry)
        });
        unary.chain(own).collect()
    })
}

/// The table's key of the unary function whose ATen name is `name`.
pub(crate) fn unary_key(name: &str) -> Option<&'static str> {
    table()
        .get_key_value(&format!("aten::{name}.out"))
        .map(|(key, _)| key.as_str())
}

/// The kinds of op the entry `key` emits.
pub(crate) fn emits(key: &str) -> Option<&'static [OpKind]> {
    table().get(key).map(|entry| entry.emits)
}

pub(crate) fn is_supported(key: &str) -> bool {
    table().contains_key(key)
}

pub(crate) fn import_call(key: &str, call: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let entry = table()
        .get(key)
        .ok_or_else(|| call.invalid(format!("operator {key} is not supported")))?;
    match entry.import {
        Import::Rule(rule) => rule(call),
        Import::Unary(op) => {
            let x = call.tensor(0)?;
            call.emit(Elementwise::unary(op, x), &[1])
        }
    }
}

/// Every operator key the table imports, sorted, with the kinds of op it
/// emits.
pub fn operators() -> Vec<(String, &'static [OpKind])> {
    let mut operators: Vec<(String, &'static [OpKind])> = table()
        .iter()
        .map(|(key, entry)| (key.clone(), entry.emits))
        .collect();
    operators.sort();
    operators
}

/// A dimension argument, negative ones counted from the end.
fn axis(c: &Call<'_, '_, '_>, dim: i64, rank: usize) -> Result<usize, ImportError> {
    let rank = rank as i64;
    let normalized = if dim < 0 { dim + rank } else { dim };
    if (0..rank).contains(&normalized) {
        Ok(normalized as usize)
    } else {
        Err(c.invalid(format!("dimension {dim} is out of range for rank {rank}")))
    }
}

fn non_negative(c: &Call<'_, '_, '_>, value: i64) -> Result<u64, ImportError> {
    u64::try_from(value).map_err(|_| c.invalid(format!("{value} must not be negative")))
}

/// A two-element spatial argument (one element means both), or `default`
/// when the list is empty.
fn pair(c: &Call<'_, '_, '_>, position: usize, default: u64) -> Result<Pair, ImportError> {
    let list = c.int_list(position)?;
    match list.as_slice() {
        [] => Ok([default; 2]),
        [both] => Ok([non_negative(c, *both)?; 2]),
        [height, width] => Ok([non_negative(c, *height)?, non_negative(c, *width)?]),
        _ => Err(c.invalid(format!(
            "argument {position} has {} values; 2-D ops take 2",
            list.len()
        ))),
    }
}

fn elementwise(
    c: &mut Call<'_, '_, '_>,
    func: Func,
    inputs: &[usize],
    out: usize,
) -> Result<(), ImportError> {
    let inputs = inputs
        .iter()
        .map(|&position| c.tensor(position))
        .collect::<Result<Vec<_>, _>>()?;
    c.emit(Elementwise::op(func, inputs), &[out])
}

fn leaky_relu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let slope = Real(c.scalar(1)?.as_f64());
    elementwise(c, Func::LeakyRelu { slope }, &[0], 2)
}

fn elu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let func = Func::Elu {
        alpha: Real(c.scalar(1)?.as_f64()),
        scale: Real(c.scalar(2)?.as_f64()),
        input_scale: Real(c.scalar(3)?.as_f64()),
    };
    elementwise(c, func, &[0], 4)
}

fn gelu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = match c.string(1)?.as_str() {
        "none" => UnaryOp::Gelu,
        "tanh" => UnaryOp::GeluTanh,
        other => {
            return Err(c.invalid(format!(
                "gelu approximation {other:?} is not one of none, tanh"
            )));
        }
    };
    elementwise(c, Func::Unary(op), &[0], 2)
}

fn hardtanh(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (min, max) = (c.scalar(1)?, c.scalar(2)?);
    let func = Func::Clamp {
        min: Some(min),
        max: Some(max),
    };
    elementwise(c, func, &[0], 3)
}

fn clamp(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (min, max) = (c.optional_scalar(1)?, c.optional_scalar(2)?);
    elementwise(c, Func::Clamp { min, max }, &[0], 3)
}

fn binary(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    elementwise(c, Func::Binary { op, alpha: None }, &[0, 1], 2)
}

fn binary_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let alpha = Some(c.scalar(2)?).filter(|alpha| alpha.as_f64() != 1.0);
    elementwise(c, Func::Binary { op, alpha }, &[0, 1], 3)
}

fn div_mode(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = match c.optional_string(2)?.as_deref() {
        None => BinaryOp::Div,
        Some("floor") => BinaryOp::FloorDiv,
        Some("trunc") => BinaryOp::TruncDiv,
        Some(other) => {
            return Err(c.invalid(format!("division rounding mode {other:?} is not supported")));
        }
    };
    elementwise(c, Func::Binary { op, alpha: None }, &[0, 1], 3)
}

fn with_scalar(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let scalar = c.scalar(1)?;
    elementwise(c, Func::BinaryScalar { op, scalar }, &[0], 2)
}

/// `x op (alpha * scalar)`, folded into one scalar.
fn scalar_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let (other, alpha) = (c.scalar(1)?, c.scalar(2)?);
    let scalar = match (other, alpha) {
        (Scalar::Int(a), Scalar::Int(b)) => Scalar::Int(a.wrapping_mul(b)),
        _ => Scalar::Float(other.as_f64() * alpha.as_f64()),
    };
    elementwise(c, Func::BinaryScalar { op, scalar }, &[0], 3)
}

fn where_(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    elementwise(c, Func::Where, &[0, 1, 2], 3)
}

fn copy(c: &mut Call<'_, '_, '_>, out: usize) -> Result<(), ImportError> {
    let input = c.tensor(0)?;
    c.emit(Op::Copy(Copy { input }), &[out])
}

/// `copy(self, src, non_blocking, *, out)`: the source into `out`.
fn copy_from(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor(1)?;
    c.emit(Op::Copy(Copy { input }), &[3])
}

/// `copy_(self, src)`: the source into `self`, in place.
fn copy_into(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor(1)?;
    c.emit_into(Op::Copy(Copy { input }), 0)
}

fn reshape(c: &mut Call<'_, '_, '_>, out: usize) -> Result<(), ImportError> {
    let input = c.tensor(0)?;
    c.emit(Op::Reshape(Reshape { input }), &[out])
}

fn permute(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let dims = c
        .int_list(1)?
        .into_iter()
        .map(|d| axis(c, d, rank))
        .collect::<Result<Vec<_>, _>>()?;
    let input = c.tensor(0)?;
    c.emit(Op::Permute(Permute { input, dims }), &[2])
}

/// `t_copy(self, *, out)`: a matrix transposed, anything smaller as it is.
fn transpose_matrix(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let input = c.tensor(0)?;
    let dims = if rank == 2 {
        vec![1, 0]
    } else {
        (0..rank).collect()
    };
    c.emit(Op::Permute(Permute { input, dims }), &[1])
}

fn transpose(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let (a, b) = (axis(c, c.int(1)?, rank)?, axis(c, c.int(2)?, rank)?);
    let mut dims: Vec<usize> = (0..rank).collect();
    dims.swap(a, b);
    let input = c.tensor(0)?;
    c.emit(Op::Permute(Permute { input, dims }), &[3])
}

fn select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of(0)?;
    let dim = axis(c, c.int(1)?, sizes.len())?;
    let index = c.int(2)?;
    let index = if index < 0 { index + sizes[dim] } else { index };
    let index = u64::try_from(index)
        .map_err(|_| c.invalid(format!("select index {index} is out of range")))?;
    let input = c.tensor(0)?;
    c.emit(Op::Select(Select { input, dim, index }), &[3])
}

fn slice(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of(0)?;
    let dim = axis(c, c.int(1)?, sizes.len())?;
    let size = sizes[dim];
    let clamp = |value: i64| {
        if value < 0 {
            (value + size).max(0)
        } else {
            value.min(size)
        }
    };
    let start = clamp(c.optional_int(2)?.unwrap_or(0)) as u64;
    let step = c.int(4)?;
    let step = u64::try_from(step)
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| c.invalid(format!("slice step {step} must be positive")))?;
    let input = c.tensor(0)?;
    c.emit(
        Op::Slice(Slice {
            input,
            dim,
            start,
            step,
        }),
        &[5],
    )
}

fn split_with_sizes(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of(0)?;
    let dim = axis(c, c.int(2)?, sizes.len())?;
    let pieces = c.int_list(1)?;
    let outputs = c.tensor_list_refs(3)?;
    if pieces.len() != outputs.len()
        || pieces.iter().any(|&piece| piece < 0)
        || pieces.iter().sum::<i64>() != sizes[dim]
    {
        return Err(c.invalid(format!(
            "split sizes {pieces:?} do not split dimension {dim} of {sizes:?}"
        )));
    }
    let input = c.tensor(0)?;
    let mut start = 0;
    for (piece, output) in pieces.into_iter().zip(outputs) {
        let op = Op::Slice(Slice {
            input,
            dim,
            start,
            step: 1,
        });
        c.emit_to(op, &[output])?;
        start += piece as u64;
    }
    Ok(())
}

fn constant_pad(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let pad = c.int_list(1)?;
    if pad.len() % 2 != 0 || pad.len() / 2 > rank || pad.iter().any(|&p| p < 0) {
        return Err(c.invalid(format!(
            "padding {pad:?} (negative padding crops, which ptec does not support)"
        )));
    }
    // Pairs run from the last dimension backwards.
    let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
    for (pair, chunk) in pad.chunks(2).enumerate() {
        before[rank - 1 - pair] = chunk[0] as u64;
        after[rank - 1 - pair] = chunk[1] as u64;
    }
    let value = c.scalar(2)?;
    let input = c.tensor(0)?;
    c.emit(
        Op::Pad(Pad {
            input,
            before,
            after,
            value,
        }),
        &[3],
    )
}

fn repeat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let repeats = c
        .int_list(1)?
        .into_iter()
        .map(|r| non_negative(c, r))
        .collect::<Result<Vec<_>, _>>()?;
    let input = c.tensor(0)?;
    c.emit(Op::Repeat(Repeat { input, repeats }), &[2])
}

fn index_select(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
    let (input, index) = (c.tensor(0)?, c.tensor(2)?);
    c.emit(Op::IndexSelect(IndexSelect { input, index, dim }), &[3])
}

fn cat(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let inputs = c.tensor_list(0)?;
    let rank = inputs.first().map_or(0, |&first| c.ty(first).rank());
    let dim = axis(c, c.int(1)?, rank)?;
    c.emit(Op::Cat(Cat { inputs, dim }), &[2])
}

fn reduction(
    c: &mut Call<'_, '_, '_>,
    op: ReduceOp,
    dims: Vec<usize>,
    keepdim: bool,
    out: usize,
) -> Result<(), ImportError> {
    let input = c.tensor(0)?;
    c.emit(
        Op::Reduce(Reduce {
            input,
            op,
            dims,
            keepdim,
        }),
        &[out],
    )
}

/// sum/mean: `(self, int[1]? dim, bool keepdim, *, ScalarType? dtype, out)`.
fn reduce(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let dims = match c.optional_int_list(1)? {
        Some(dims) if !dims.is_empty() => dims
            .into_iter()
            .map(|d| axis(c, d, rank))
            .collect::<Result<Vec<_>, _>>()?,
        _ => (0..rank).collect(),
    };
    let keepdim = c.bool(2)?;
    reduction(c, op, dims, keepdim, 4)
}

/// amax/amin: `(self, int[1] dim, bool keepdim, *, out)`.
fn reduce_list(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let dims = c.int_list(1)?;
    let dims = if dims.is_empty() {
        (0..rank).collect()
    } else {
        dims.into_iter()
            .map(|d| axis(c, d, rank))
            .collect::<Result<Vec<_>, _>>()?
    };
    let keepdim = c.bool(2)?;
    reduction(c, op, dims, keepdim, 3)
}

/// any along a dim: `(self, int dim, bool keepdim, *, out)`.
fn any_along(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?)?;
    let keepdim = c.bool(2)?;
    reduction(c, ReduceOp::Any, vec![dim], keepdim, 3)
}

/// A reduction of every element: `(self, *, out)`.
fn reduce_all(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dims = (0..c.rank_of(0)?).collect();
    reduction(c, op, dims, false, 1)
}

fn prod(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?)?;
    let keepdim = c.bool(2)?;
    reduction(c, ReduceOp::Prod, vec![dim], keepdim, 4)
}

fn arg_reduce(c: &mut Call<'_, '_, '_>, extreme: Extreme) -> Result<(), ImportError> {
    let rank = c.rank_of(0)?;
    let dim = c.optional_int(1)?.map(|d| axis(c, d, rank)).transpose()?;
    let keepdim = c.bool(2)?;
    let input = c.tensor(0)?;
    c.emit(
        Op::ArgReduce(ArgReduce {
            input,
            extreme,
            dim,
            keepdim,
        }),
        &[3],
    )
}

/// max/min along a dim: the values (a reduction) and their indices.
fn extreme_along(c: &mut Call<'_, '_, '_>, extreme: Extreme) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
    let keepdim = c.bool(2)?;
    let op = match extreme {
        Extreme::Max => ReduceOp::Max,
        Extreme::Min => ReduceOp::Min,
    };
    reduction(c, op, vec![dim], keepdim, 3)?;
    let input = c.tensor(0)?;
    c.emit(
        Op::ArgReduce(ArgReduce {
            input,
            extreme,
            dim: Some(dim),
            keepdim,
        }),
        &[4],
    )
}

fn cumsum(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
    let input = c.tensor(0)?;
    c.emit(Op::CumSum(CumSum { input, dim }), &[3])
}

fn softmax(c: &mut Call<'_, '_, '_>, log: bool) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
    let input = c.tensor(0)?;
    c.emit(Op::Softmax(Softmax { input, dim, log }), &[3])
}

/// `native_layer_norm(input, normalized_shape, weight?, bias?, eps, *,
/// out0, out1, out2)`.
fn layer_norm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let normalized_dims = c.int_list(1)?.len();
    let op = Op::LayerNorm(LayerNorm {
        input: c.tensor(0)?,
        weight: c.optional_tensor(2)?,
        bias: c.optional_tensor(3)?,
        normalized_dims,
        eps: Real(c.double(4)?),
    });
    c.emit(op, &[5, 6, 7])
}

/// `_native_batch_norm_legit_no_training(input, weight?, bias?,
/// running_mean, running_var, momentum, eps, *, out0, out1, out2)`.
fn batch_norm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::BatchNorm(BatchNorm {
        input: c.tensor(0)?,
        weight: c.optional_tensor(1)?,
        bias: c.optional_tensor(2)?,
        mean: c.tensor(3)?,
        variance: c.tensor(4)?,
        eps: Real(c.double(6)?),
    });
    c.emit(op, &[7, 8, 9])
}

fn matmul(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::MatMul(MatMul {
        a: c.tensor(0)?,
        b: c.tensor(1)?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &[2])
}

fn addmm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::Addmm(Addmm {
        bias: c.tensor(0)?,
        a: c.tensor(1)?,
        b: c.tensor(2)?,
        beta: c.scalar(3)?,
        alpha: c.scalar(4)?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &[5])
}

/// `convolution(input, weight, bias?, stride, padding, dilation,
/// transposed, output_padding, groups, *, out)`.
fn convolution(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if c.bool(6)? {
        return Err(c.invalid("transposed convolution is not supported"));
    }
    let op = Op::Convolution(Convolution {
        input: c.tensor(0)?,
        weight: c.tensor(1)?,
        bias: c.optional_tensor(2)?,
        residual: None,
        stride: pair(c, 3, 1)?,
        padding: pair(c, 4, 0)?,
        dilation: pair(c, 5, 1)?,
        groups: non_negative(c, c.int(8)?)?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &[9])
}

/// A pooling stride: the kernel's when the list is empty.
fn pooling_stride(c: &Call<'_, '_, '_>, kernel: Pair) -> Result<Pair, ImportError> {
    if c.int_list(2)?.is_empty() {
        Ok(kernel)
    } else {
        pair(c, 2, 1)
    }
}

fn max_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let kernel = pair(c, 1, 1)?;
    let op = Op::MaxPool2d(MaxPool2d {
        input: c.tensor(0)?,
        kernel,
        stride: pooling_stride(c, kernel)?,
        padding: pair(c, 3, 0)?,
        dilation: pair(c, 4, 1)?,
        ceil_mode: c.bool(5)?,
    });
    c.emit(op, &[6, 7])
}

fn avg_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if c.optional_int(6)?.is_some() {
        return Err(c.invalid("avg_pool2d with divisor_override is not supported"));
    }
    let kernel = pair(c, 1, 1)?;
    let op = Op::AvgPool2d(AvgPool2d {
        input: c.tensor(0)?,
        kernel,
        stride: pooling_stride(c, kernel)?,
        padding: pair(c, 3, 0)?,
        ceil_mode: c.bool(4)?,
        count_include_pad: c.bool(5)?,
    });
    c.emit(op, &[7])
}

fn adaptive_avg_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of(0)?;
    let out = pair(c, 1, 1)?;
    if sizes.len() != 4 {
        return Err(c.invalid("adaptive average pooling of a tensor that is not NCHW"));
    }
    let input = [sizes[2] as u64, sizes[3] as u64];
    if out.iter().zip(&input).any(|(&o, &i)| o == 0 || i % o != 0) {
        return Err(c.invalid(format!(
            "adaptive average pooling from {input:?} to {out:?}: ptec handles only sizes that divide evenly"
        )));
    }
    let kernel = [input[0] / out[0], input[1] / out[1]];
    let op = Op::AvgPool2d(AvgPool2d {
        input: c.tensor(0)?,
        kernel,
        stride: kernel,
        padding: [0, 0],
        ceil_mode: false,
        count_include_pad: true,
    });
    c.emit(op, &[2])
}

fn embedding(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::Embedding(Embedding {
        weight: c.tensor(0)?,
        indices: c.tensor(1)?,
    });
    c.emit(op, &[5])
}

fn fill(c: &mut Call<'_, '_, '_>, value: Scalar, out: usize) -> Result<(), ImportError> {
    c.emit(Op::Full(Full { value }), &[out])
}

/// A fill with the scalar argument at `value`.
fn fill_from(c: &mut Call<'_, '_, '_>, value: usize, out: usize) -> Result<(), ImportError> {
    let value = c.scalar(value)?;
    fill(c, value, out)
}

fn arange_start(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (start, step) = (c.scalar(0)?, c.scalar(2)?);
    c.emit(Op::Arange(Arange { start, step }), &[3])
}

fn arange(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let op = Op::Arange(Arange {
        start: Scalar::Int(0),
        step: Scalar::Int(1),
    });
    c.emit(op, &[1])
}
