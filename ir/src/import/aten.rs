//! The operator table: how each ATen out-variant kernel call (and the
//! `dim_order_ops` ones ExecuTorch adds) becomes an IR op. Arguments are
//! positional, as the operator's schema lists them, with the `out` tensors
//! last.

use super::{Call, ImportError};
use crate::op::{BinaryOp, ClampRange, Op, ReduceOp, UnaryOp};
use crate::types::Scalar;

type Importer = fn(&mut Call<'_, '_, '_>) -> Result<(), ImportError>;

pub(super) fn is_supported(key: &str) -> bool {
    OPERATORS.iter().any(|(name, _)| *name == key)
}

pub(super) fn import_call(key: &str, call: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (_, import) = OPERATORS
        .iter()
        .find(|(name, _)| *name == key)
        .ok_or_else(|| call.invalid(format!("operator {key} is not supported")))?;
    import(call)
}

/// Every operator ptec imports, by its kernel key (`name.overload`).
pub(crate) const OPERATORS: &[(&str, Importer)] = &[
    // Elementwise, one tensor.
    ("aten::abs.out", |c| unary(c, UnaryOp::Abs)),
    ("aten::neg.out", |c| unary(c, UnaryOp::Neg)),
    ("aten::relu.out", |c| unary(c, UnaryOp::Relu)),
    ("aten::sigmoid.out", |c| unary(c, UnaryOp::Sigmoid)),
    ("aten::tanh.out", |c| unary(c, UnaryOp::Tanh)),
    ("aten::exp.out", |c| unary(c, UnaryOp::Exp)),
    ("aten::log.out", |c| unary(c, UnaryOp::Log)),
    ("aten::sqrt.out", |c| unary(c, UnaryOp::Sqrt)),
    ("aten::rsqrt.out", |c| unary(c, UnaryOp::Rsqrt)),
    ("aten::reciprocal.out", |c| unary(c, UnaryOp::Reciprocal)),
    ("aten::sin.out", |c| unary(c, UnaryOp::Sin)),
    ("aten::cos.out", |c| unary(c, UnaryOp::Cos)),
    ("aten::erf.out", |c| unary(c, UnaryOp::Erf)),
    ("aten::floor.out", |c| unary(c, UnaryOp::Floor)),
    ("aten::ceil.out", |c| unary(c, UnaryOp::Ceil)),
    ("aten::round.out", |c| unary(c, UnaryOp::Round)),
    ("aten::sign.out", |c| unary(c, UnaryOp::Sign)),
    ("aten::hardswish.out", |c| unary(c, UnaryOp::Hardswish)),
    ("aten::hardsigmoid.out", |c| unary(c, UnaryOp::Hardsigmoid)),
    ("aten::silu.out", |c| unary(c, UnaryOp::Silu)),
    ("aten::logical_not.out", |c| unary(c, UnaryOp::LogicalNot)),
    ("aten::trunc.out", |c| unary(c, UnaryOp::Trunc)),
    ("aten::expm1.out", |c| unary(c, UnaryOp::Expm1)),
    ("aten::log1p.out", |c| unary(c, UnaryOp::Log1p)),
    ("aten::leaky_relu.out", |c| {
        let x = c.tensor(0)?;
        let slope = c.scalar(1)?.as_f64();
        c.emit(Op::LeakyRelu { slope }, vec![x], &[2])
    }),
    ("aten::elu.out", |c| {
        let x = c.tensor(0)?;
        let (alpha, scale, input_scale) = (
            c.scalar(1)?.as_f64(),
            c.scalar(2)?.as_f64(),
            c.scalar(3)?.as_f64(),
        );
        c.emit(
            Op::Elu {
                alpha,
                scale,
                input_scale,
            },
            vec![x],
            &[4],
        )
    }),
    ("aten::gelu.out", gelu),
    ("aten::hardtanh.out", |c| {
        let x = c.tensor(0)?;
        let (min, max) = (c.scalar(1)?, c.scalar(2)?);
        c.emit(
            Op::Clamp {
                min: Some(min),
                max: Some(max),
            },
            vec![x],
            &[3],
        )
    }),
    ("aten::clamp.out", |c| {
        let x = c.tensor(0)?;
        let (min, max) = (c.optional_scalar(1)?, c.optional_scalar(2)?);
        c.emit(Op::Clamp { min, max }, vec![x], &[3])
    }),
    // Elementwise, two operands.
    ("aten::add.out", |c| binary_alpha(c, BinaryOp::Add)),
    ("aten::sub.out", |c| binary_alpha(c, BinaryOp::Sub)),
    ("aten::add.Scalar_out", |c| scalar_alpha(c, BinaryOp::Add)),
    ("aten::sub.Scalar_out", |c| scalar_alpha(c, BinaryOp::Sub)),
    ("aten::mul.out", |c| binary(c, BinaryOp::Mul)),
    ("aten::div.out", |c| binary(c, BinaryOp::Div)),
    ("aten::div.out_mode", div_mode),
    ("aten::floor_divide.out", |c| binary(c, BinaryOp::FloorDiv)),
    ("aten::remainder.Tensor_out", |c| {
        binary(c, BinaryOp::Remainder)
    }),
    ("aten::pow.Tensor_Tensor_out", |c| binary(c, BinaryOp::Pow)),
    ("aten::maximum.out", |c| binary(c, BinaryOp::Maximum)),
    ("aten::minimum.out", |c| binary(c, BinaryOp::Minimum)),
    ("aten::eq.Tensor_out", |c| binary(c, BinaryOp::Eq)),
    ("aten::ne.Tensor_out", |c| binary(c, BinaryOp::Ne)),
    ("aten::lt.Tensor_out", |c| binary(c, BinaryOp::Lt)),
    ("aten::le.Tensor_out", |c| binary(c, BinaryOp::Le)),
    ("aten::gt.Tensor_out", |c| binary(c, BinaryOp::Gt)),
    ("aten::ge.Tensor_out", |c| binary(c, BinaryOp::Ge)),
    ("aten::logical_and.out", |c| binary(c, BinaryOp::LogicalAnd)),
    ("aten::logical_or.out", |c| binary(c, BinaryOp::LogicalOr)),
    ("aten::logical_xor.out", |c| binary(c, BinaryOp::LogicalXor)),
    ("aten::mul.Scalar_out", |c| with_scalar(c, BinaryOp::Mul)),
    ("aten::div.Scalar_out", |c| with_scalar(c, BinaryOp::Div)),
    ("aten::remainder.Scalar_out", |c| {
        with_scalar(c, BinaryOp::Remainder)
    }),
    ("aten::pow.Tensor_Scalar_out", |c| {
        with_scalar(c, BinaryOp::Pow)
    }),
    ("aten::eq.Scalar_out", |c| with_scalar(c, BinaryOp::Eq)),
    ("aten::ne.Scalar_out", |c| with_scalar(c, BinaryOp::Ne)),
    ("aten::lt.Scalar_out", |c| with_scalar(c, BinaryOp::Lt)),
    ("aten::le.Scalar_out", |c| with_scalar(c, BinaryOp::Le)),
    ("aten::gt.Scalar_out", |c| with_scalar(c, BinaryOp::Gt)),
    ("aten::ge.Scalar_out", |c| with_scalar(c, BinaryOp::Ge)),
    ("aten::where.self_out", |c| {
        let inputs = vec![c.tensor(0)?, c.tensor(1)?, c.tensor(2)?];
        c.emit(Op::Where, inputs, &[3])
    }),
    // Copies and layout changes.
    ("aten::clone.out", |c| copy(c, 2)),
    ("aten::_to_copy.out", |c| copy(c, 3)),
    ("dim_order_ops::_to_dim_order_copy.out", |c| copy(c, 3)),
    ("dim_order_ops::_clone_dim_order.out", |c| copy(c, 3)),
    ("aten::expand_copy.out", |c| copy(c, 3)),
    ("aten::copy.out", |c| {
        let source = c.tensor(1)?;
        c.emit(Op::Copy, vec![source], &[3])
    }),
    ("aten::copy_", |c| {
        let source = c.tensor(1)?;
        c.emit_into(Op::Copy, vec![source], 0)
    }),
    ("aten::view_copy.out", |c| reshape(c, 2)),
    ("aten::_unsafe_view.out", |c| reshape(c, 2)),
    ("aten::unsqueeze_copy.out", |c| reshape(c, 2)),
    ("aten::squeeze_copy.dims_out", |c| reshape(c, 2)),
    ("aten::squeeze_copy.dim_out", |c| reshape(c, 2)),
    ("aten::squeeze_copy.out", |c| reshape(c, 1)),
    ("aten::permute_copy.out", |c| {
        let rank = c.rank_of(0)?;
        let dims = c
            .int_list(1)?
            .into_iter()
            .map(|d| axis(c, d, rank))
            .collect::<Result<Vec<_>, _>>()?;
        let x = c.tensor(0)?;
        c.emit(Op::Permute { dims }, vec![x], &[2])
    }),
    ("aten::t_copy.out", |c| {
        let rank = c.rank_of(0)?;
        let x = c.tensor(0)?;
        let dims = if rank == 2 {
            vec![1, 0]
        } else {
            (0..rank).collect()
        };
        c.emit(Op::Permute { dims }, vec![x], &[1])
    }),
    ("aten::transpose_copy.int_out", |c| {
        let rank = c.rank_of(0)?;
        let (a, b) = (axis(c, c.int(1)?, rank)?, axis(c, c.int(2)?, rank)?);
        let mut dims: Vec<usize> = (0..rank).collect();
        dims.swap(a, b);
        let x = c.tensor(0)?;
        c.emit(Op::Permute { dims }, vec![x], &[3])
    }),
    ("aten::select_copy.int_out", |c| {
        let sizes = c.sizes_of(0)?;
        let dim = axis(c, c.int(1)?, sizes.len())?;
        let index = c.int(2)?;
        let index = if index < 0 { index + sizes[dim] } else { index };
        let index = u64::try_from(index)
            .map_err(|_| c.invalid(format!("select index {index} is out of range")))?;
        let x = c.tensor(0)?;
        c.emit(Op::Select { dim, index }, vec![x], &[3])
    }),
    ("aten::slice_copy.Tensor_out", |c| {
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
        let x = c.tensor(0)?;
        c.emit(Op::Slice { dim, start, step }, vec![x], &[5])
    }),
    ("aten::split_with_sizes_copy.out", |c| {
        let sizes = c.sizes_of(0)?;
        let dim = axis(c, c.int(2)?, sizes.len())?;
        let pieces = c.int_list(1)?;
        let outputs = c.tensor_list_values(3)?;
        if pieces.len() != outputs.len()
            || pieces.iter().any(|&piece| piece < 0)
            || pieces.iter().sum::<i64>() != sizes[dim]
        {
            return Err(c.invalid(format!(
                "split sizes {pieces:?} do not split dimension {dim} of {sizes:?}"
            )));
        }
        let x = c.tensor(0)?;
        let mut start = 0;
        for (piece, output) in pieces.into_iter().zip(outputs) {
            c.emit_values(
                Op::Slice {
                    dim,
                    start,
                    step: 1,
                },
                vec![x],
                &[output],
            )?;
            start += piece as u64;
        }
        Ok(())
    }),
    ("aten::constant_pad_nd.out", |c| {
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
        let x = c.tensor(0)?;
        c.emit(
            Op::Pad {
                before,
                after,
                value,
            },
            vec![x],
            &[3],
        )
    }),
    ("aten::repeat.out", |c| {
        let repeats = c
            .int_list(1)?
            .into_iter()
            .map(|r| non_negative(c, r))
            .collect::<Result<Vec<_>, _>>()?;
        let x = c.tensor(0)?;
        c.emit(Op::Repeat { repeats }, vec![x], &[2])
    }),
    ("aten::index_select.out", |c| {
        let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
        let inputs = vec![c.tensor(0)?, c.tensor(2)?];
        c.emit(Op::IndexSelect { dim }, inputs, &[3])
    }),
    ("aten::cat.out", |c| {
        let inputs = c.tensor_list(0)?;
        let rank = inputs.first().map_or(0, |&first| c.ty(first).rank());
        let dim = axis(c, c.int(1)?, rank)?;
        c.emit(Op::Cat { dim }, inputs, &[2])
    }),
    // Reductions and normalizations.
    ("aten::sum.IntList_out", |c| reduce(c, ReduceOp::Sum)),
    ("aten::mean.out", |c| reduce(c, ReduceOp::Mean)),
    ("aten::amax.out", |c| reduce_list(c, ReduceOp::Max)),
    ("aten::amin.out", |c| reduce_list(c, ReduceOp::Min)),
    ("aten::any.out", |c| {
        let dim = axis(c, c.int(1)?, c.rank_of(0)?)?;
        let keepdim = c.bool(2)?;
        let x = c.tensor(0)?;
        c.emit(
            Op::Reduce {
                op: ReduceOp::Any,
                dims: vec![dim],
                keepdim,
            },
            vec![x],
            &[3],
        )
    }),
    ("aten::any.all_out", |c| {
        let dims = (0..c.rank_of(0)?).collect();
        let x = c.tensor(0)?;
        c.emit(
            Op::Reduce {
                op: ReduceOp::Any,
                dims,
                keepdim: false,
            },
            vec![x],
            &[1],
        )
    }),
    ("aten::all.all_out", |c| {
        let dims = (0..c.rank_of(0)?).collect();
        let x = c.tensor(0)?;
        c.emit(
            Op::Reduce {
                op: ReduceOp::All,
                dims,
                keepdim: false,
            },
            vec![x],
            &[1],
        )
    }),
    ("aten::argmax.out", |c| {
        let rank = c.rank_of(0)?;
        let dim = c.optional_int(1)?.map(|d| axis(c, d, rank)).transpose()?;
        let keepdim = c.bool(2)?;
        let x = c.tensor(0)?;
        c.emit(Op::ArgMax { dim, keepdim }, vec![x], &[3])
    }),
    ("aten::argmin.out", |c| {
        let rank = c.rank_of(0)?;
        let dim = c.optional_int(1)?.map(|d| axis(c, d, rank)).transpose()?;
        let keepdim = c.bool(2)?;
        let x = c.tensor(0)?;
        c.emit(Op::ArgMin { dim, keepdim }, vec![x], &[3])
    }),
    // Values and indices: a reduction and an arg-reduction of one input.
    ("aten::max.dim_max", |c| extreme_along(c, ReduceOp::Max)),
    ("aten::min.dim_min", |c| extreme_along(c, ReduceOp::Min)),
    ("aten::max.unary_out", |c| reduce_all(c, ReduceOp::Max)),
    ("aten::min.unary_out", |c| reduce_all(c, ReduceOp::Min)),
    ("aten::prod.int_out", |c| {
        let dim = axis(c, c.int(1)?, c.rank_of(0)?)?;
        let keepdim = c.bool(2)?;
        let x = c.tensor(0)?;
        c.emit(
            Op::Reduce {
                op: ReduceOp::Prod,
                dims: vec![dim],
                keepdim,
            },
            vec![x],
            &[4],
        )
    }),
    ("aten::cumsum.out", |c| {
        let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
        let x = c.tensor(0)?;
        c.emit(Op::CumSum { dim }, vec![x], &[3])
    }),
    ("aten::_softmax.out", |c| softmax(c, false)),
    ("aten::_log_softmax.out", |c| softmax(c, true)),
    ("aten::native_layer_norm.out", |c| {
        let normalized_dims = c.int_list(1)?.len();
        let x = c.tensor(0)?;
        let weight = c.optional_tensor(2)?;
        let bias = c.optional_tensor(3)?;
        let eps = c.double(4)?;
        let mut inputs = vec![x];
        inputs.extend(weight);
        inputs.extend(bias);
        let op = Op::LayerNorm {
            normalized_dims,
            eps,
            weight: weight.is_some(),
            bias: bias.is_some(),
        };
        c.emit(op, inputs, &[5, 6, 7])
    }),
    ("aten::_native_batch_norm_legit_no_training.out", |c| {
        let x = c.tensor(0)?;
        let weight = c.optional_tensor(1)?;
        let bias = c.optional_tensor(2)?;
        let (mean, variance) = (c.tensor(3)?, c.tensor(4)?);
        let eps = c.double(6)?;
        let mut inputs = vec![x];
        inputs.extend(weight);
        inputs.extend(bias);
        inputs.extend([mean, variance]);
        let op = Op::BatchNorm {
            eps,
            weight: weight.is_some(),
            bias: bias.is_some(),
        };
        c.emit(op, inputs, &[7, 8, 9])
    }),
    // Linear algebra, convolution, pooling.
    ("aten::mm.out", matmul),
    ("aten::bmm.out", matmul),
    ("aten::addmm.out", |c| {
        let inputs = vec![c.tensor(0)?, c.tensor(1)?, c.tensor(2)?];
        let (beta, alpha) = (c.scalar(3)?, c.scalar(4)?);
        let clamp = ClampRange::default();
        c.emit(Op::Addmm { beta, alpha, clamp }, inputs, &[5])
    }),
    ("aten::convolution.out", |c| {
        if c.bool(6)? {
            return Err(c.invalid("transposed convolution is not supported"));
        }
        let x = c.tensor(0)?;
        let weight = c.tensor(1)?;
        let bias = c.optional_tensor(2)?;
        let op = Op::Convolution {
            stride: pair(c, 3, 1)?,
            padding: pair(c, 4, 0)?,
            dilation: pair(c, 5, 1)?,
            groups: non_negative(c, c.int(8)?)?,
            bias: bias.is_some(),
            clamp: ClampRange::default(),
            residual: false,
        };
        let mut inputs = vec![x, weight];
        inputs.extend(bias);
        c.emit(op, inputs, &[9])
    }),
    ("aten::max_pool2d_with_indices.out", |c| {
        let kernel = pair(c, 1, 1)?;
        let stride = if c.int_list(2)?.is_empty() {
            kernel
        } else {
            pair(c, 2, 1)?
        };
        let op = Op::MaxPool2d {
            kernel,
            stride,
            padding: pair(c, 3, 0)?,
            dilation: pair(c, 4, 1)?,
            ceil_mode: c.bool(5)?,
        };
        let x = c.tensor(0)?;
        c.emit(op, vec![x], &[6, 7])
    }),
    ("aten::avg_pool2d.out", |c| {
        if c.optional_int(6)?.is_some() {
            return Err(c.invalid("avg_pool2d with divisor_override is not supported"));
        }
        let kernel = pair(c, 1, 1)?;
        let stride = if c.int_list(2)?.is_empty() {
            kernel
        } else {
            pair(c, 2, 1)?
        };
        let op = Op::AvgPool2d {
            kernel,
            stride,
            padding: pair(c, 3, 0)?,
            ceil_mode: c.bool(4)?,
            count_include_pad: c.bool(5)?,
        };
        let x = c.tensor(0)?;
        c.emit(op, vec![x], &[7])
    }),
    ("aten::_adaptive_avg_pool2d.out", |c| {
        let sizes = c.sizes_of(0)?;
        let out = pair(c, 1, 1)?;
        let rank = sizes.len();
        if rank != 4 {
            return Err(c.invalid("adaptive average pooling of a tensor that is not NCHW"));
        }
        let input = [sizes[2] as u64, sizes[3] as u64];
        if out.iter().zip(&input).any(|(&o, &i)| o == 0 || i % o != 0) {
            return Err(c.invalid(format!(
                "adaptive average pooling from {input:?} to {out:?}: ptec handles only sizes that divide evenly"
            )));
        }
        let kernel = [input[0] / out[0], input[1] / out[1]];
        let op = Op::AvgPool2d {
            kernel,
            stride: kernel,
            padding: [0, 0],
            ceil_mode: false,
            count_include_pad: true,
        };
        let x = c.tensor(0)?;
        c.emit(op, vec![x], &[2])
    }),
    ("aten::embedding.out", |c| {
        let inputs = vec![c.tensor(0)?, c.tensor(1)?];
        c.emit(Op::Embedding, inputs, &[5])
    }),
    // Creation.
    ("aten::full.out", |c| {
        let value = c.scalar(1)?;
        c.emit(Op::Full { value }, Vec::new(), &[2])
    }),
    ("aten::full_like.out", |c| {
        let value = c.scalar(1)?;
        c.emit(Op::Full { value }, Vec::new(), &[3])
    }),
    ("aten::scalar_tensor.out", |c| {
        let value = c.scalar(0)?;
        c.emit(Op::Full { value }, Vec::new(), &[1])
    }),
    ("aten::zeros_like.out", |c| {
        c.emit(
            Op::Full {
                value: Scalar::Int(0),
            },
            Vec::new(),
            &[2],
        )
    }),
    ("aten::ones_like.out", |c| {
        c.emit(
            Op::Full {
                value: Scalar::Int(1),
            },
            Vec::new(),
            &[2],
        )
    }),
    ("aten::arange.start_out", |c| {
        let (start, step) = (c.scalar(0)?, c.scalar(2)?);
        c.emit(Op::Arange { start, step }, Vec::new(), &[3])
    }),
    ("aten::arange.out", |c| {
        c.emit(
            Op::Arange {
                start: Scalar::Int(0),
                step: Scalar::Int(1),
            },
            Vec::new(),
            &[1],
        )
    }),
];

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
fn pair(c: &Call<'_, '_, '_>, position: usize, default: u64) -> Result<[u64; 2], ImportError> {
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

fn unary(c: &mut Call<'_, '_, '_>, op: UnaryOp) -> Result<(), ImportError> {
    let x = c.tensor(0)?;
    c.emit(Op::Unary(op), vec![x], &[1])
}

fn gelu(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let tanh = match c.string(1)?.as_str() {
        "none" => false,
        "tanh" => true,
        other => {
            return Err(c.invalid(format!(
                "gelu approximation {other:?} is not one of none, tanh"
            )));
        }
    };
    let x = c.tensor(0)?;
    c.emit(Op::Unary(UnaryOp::Gelu { tanh }), vec![x], &[2])
}

fn binary(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    binary_at(c, op, 2)
}

fn binary_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let inputs = vec![c.tensor(0)?, c.tensor(1)?];
    let alpha = Some(c.scalar(2)?).filter(|alpha| alpha.as_f64() != 1.0);
    c.emit(Op::Binary { op, alpha }, inputs, &[3])
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
    binary_at(c, op, 3)
}

fn binary_at(c: &mut Call<'_, '_, '_>, op: BinaryOp, out: usize) -> Result<(), ImportError> {
    let inputs = vec![c.tensor(0)?, c.tensor(1)?];
    c.emit(Op::Binary { op, alpha: None }, inputs, &[out])
}

fn with_scalar(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let x = c.tensor(0)?;
    let scalar = c.scalar(1)?;
    c.emit(Op::BinaryScalar { op, scalar }, vec![x], &[2])
}

/// `x op (alpha * scalar)`, folded into one scalar.
fn scalar_alpha(c: &mut Call<'_, '_, '_>, op: BinaryOp) -> Result<(), ImportError> {
    let x = c.tensor(0)?;
    let (other, alpha) = (c.scalar(1)?, c.scalar(2)?);
    let scalar = match (other, alpha) {
        (Scalar::Int(a), Scalar::Int(b)) => Scalar::Int(a.wrapping_mul(b)),
        _ => Scalar::Float(other.as_f64() * alpha.as_f64()),
    };
    c.emit(Op::BinaryScalar { op, scalar }, vec![x], &[3])
}

fn copy(c: &mut Call<'_, '_, '_>, out: usize) -> Result<(), ImportError> {
    let x = c.tensor(0)?;
    c.emit(Op::Copy, vec![x], &[out])
}

fn reshape(c: &mut Call<'_, '_, '_>, out: usize) -> Result<(), ImportError> {
    let x = c.tensor(0)?;
    c.emit(Op::Reshape, vec![x], &[out])
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
    let x = c.tensor(0)?;
    c.emit(Op::Reduce { op, dims, keepdim }, vec![x], &[4])
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
    let x = c.tensor(0)?;
    c.emit(Op::Reduce { op, dims, keepdim }, vec![x], &[3])
}

fn softmax(c: &mut Call<'_, '_, '_>, log: bool) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
    let x = c.tensor(0)?;
    c.emit(Op::Softmax { dim, log }, vec![x], &[3])
}

fn matmul(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let inputs = vec![c.tensor(0)?, c.tensor(1)?];
    let clamp = ClampRange::default();
    c.emit(Op::MatMul { clamp }, inputs, &[2])
}

/// max/min along a dim: the values (a reduction) and their indices.
fn extreme_along(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dim = axis(c, c.int(1)?, c.rank_of(0)?.max(1))?;
    let keepdim = c.bool(2)?;
    let x = c.tensor(0)?;
    c.emit(
        Op::Reduce {
            op,
            dims: vec![dim],
            keepdim,
        },
        vec![x],
        &[3],
    )?;
    let arg = match op {
        ReduceOp::Max => Op::ArgMax {
            dim: Some(dim),
            keepdim,
        },
        _ => Op::ArgMin {
            dim: Some(dim),
            keepdim,
        },
    };
    c.emit(arg, vec![x], &[4])
}

/// max/min of every element.
fn reduce_all(c: &mut Call<'_, '_, '_>, op: ReduceOp) -> Result<(), ImportError> {
    let dims = (0..c.rank_of(0)?).collect();
    let x = c.tensor(0)?;
    c.emit(
        Op::Reduce {
            op,
            dims,
            keepdim: false,
        },
        vec![x],
        &[1],
    )
}
