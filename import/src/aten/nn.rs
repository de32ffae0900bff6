//! Neural-network operators: normalizations, matrix products, convolution,
//! pooling and embedding lookups.

use ptec_ir::ops::conv::{AvgPool2d, Convolution, MaxPool2d, Pair};
use ptec_ir::ops::creation::Full;
use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::gather::{Index, Scatter};
use ptec_ir::ops::layout::{Copy, Pad, PadMode, Permute, Reshape, Slice};
use ptec_ir::ops::linalg::{Addmm, ClampRange, MatMul};
use ptec_ir::ops::norm::{BatchNorm, LayerNorm};
use ptec_ir::ops::reduce::{Reduce, ReduceOp};
use ptec_ir::ops::{Expected, ShapeContext, show};
use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, Op, OpKind, Real, Scalar, TensorType, ValueId};

use super::{Operator, reduce, sample};
use crate::call::Call;
use crate::error::ImportError;

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::native_layer_norm.out(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        layer_norm,
        &[OpKind::LayerNorm],
    ),
    (
        "aten::_native_batch_norm_legit_no_training.out(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, Tensor running_var, float momentum, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        |c| batch_norm(c, ["out0", "out1", "out2"]),
        &[OpKind::BatchNorm],
    ),
    (
        "aten::_native_batch_norm_legit.out(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, Tensor(b!) running_var, bool training, float momentum, float eps, *, Tensor(d!) out, Tensor(e!) save_mean, Tensor(f!) save_invstd) -> (Tensor(d!), Tensor(e!), Tensor(f!))",
        |c| batch_norm_legit(c, true),
        BATCH_NORM_LEGIT,
    ),
    (
        "aten::_native_batch_norm_legit.no_stats_out(Tensor input, Tensor? weight, Tensor? bias, bool training, float momentum, float eps, *, Tensor(a!) out, Tensor(b!) save_mean, Tensor(c!) save_invstd) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        |c| batch_norm_legit(c, false),
        BATCH_NORM_LEGIT,
    ),
    (
        "aten::native_group_norm.out(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, float eps, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        group_norm,
        &[OpKind::Reshape, OpKind::Reduce, OpKind::Elementwise],
    ),
    (
        "aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
        matmul,
        &[OpKind::MatMul],
    ),
    (
        "aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out) -> Tensor(a!)",
        matmul,
        &[OpKind::MatMul],
    ),
    (
        "aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1, Tensor(a!) out) -> Tensor(a!)",
        addmm,
        &[OpKind::Addmm],
    ),
    (
        "aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out) -> Tensor(a!)",
        linear,
        &[
            OpKind::Permute,
            OpKind::Reshape,
            OpKind::MatMul,
            OpKind::Addmm,
        ],
    ),
    (
        "aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, *, Tensor(a!) out) -> Tensor(a!)",
        convolution,
        &[OpKind::Convolution],
    ),
    (
        "aten::convolution_backward.out(Tensor grad_output, Tensor input, Tensor weight, SymInt[]? bias_sizes, SymInt[] stride, SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups, bool[3] output_mask, *, Tensor(a!) out0, Tensor(b!) out1, Tensor(c!) out2) -> (Tensor(a!), Tensor(b!), Tensor(c!))",
        convolution_backward,
        &[
            OpKind::Convolution,
            OpKind::Reshape,
            OpKind::Permute,
            OpKind::Slice,
            OpKind::Reduce,
        ],
    ),
    (
        "aten::max_pool2d_with_indices.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, bool ceil_mode=False, *, Tensor(a!) out, Tensor(b!) indices) -> (Tensor(a!), Tensor(b!))",
        max_pool2d,
        &[OpKind::MaxPool2d],
    ),
    (
        "aten::max_pool2d_with_indices_backward.grad_input(Tensor grad_output, Tensor self, int[2] kernel_size, int[2] stride, int[2] padding, int[2] dilation, bool ceil_mode, Tensor indices, *, Tensor(a!) grad_input) -> Tensor(a!)",
        max_pool2d_backward,
        &[OpKind::Full, OpKind::Reshape, OpKind::Scatter],
    ),
    (
        "aten::avg_pool2d.out(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, bool count_include_pad=True, int? divisor_override=None, *, Tensor(a!) out) -> Tensor(a!)",
        avg_pool2d,
        &[
            OpKind::AvgPool2d,
            OpKind::Pad,
            OpKind::Slice,
            OpKind::Elementwise,
            OpKind::Copy,
        ],
    ),
    (
        "aten::_adaptive_avg_pool2d.out(Tensor self, SymInt[2] output_size, *, Tensor(a!) out) -> Tensor(a!)",
        adaptive_avg_pool2d,
        &[
            OpKind::AvgPool2d,
            OpKind::Slice,
            OpKind::Reduce,
            OpKind::Cat,
            OpKind::Elementwise,
            OpKind::Copy,
        ],
    ),
    (
        "aten::embedding.out(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, bool sparse=False, *, Tensor(a!) out) -> Tensor(a!)",
        embedding,
        &[OpKind::Index],
    ),
];

/// What `_native_batch_norm_legit` emits: the inference batch norm, or in
/// training a normalization composed of reductions, elementwise steps and
/// reshapes.
const BATCH_NORM_LEGIT: &[OpKind] = &[
    OpKind::BatchNorm,
    OpKind::Reduce,
    OpKind::Elementwise,
    OpKind::Reshape,
];

/// `native_layer_norm`: `input` normalized over its trailing dimensions,
/// which `normalized_shape` must give.
fn layer_norm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("input")?;
    let shape = c.shape(input);
    let sizes = c
        .terms("normalized_shape")?
        .into_iter()
        .map(|size| c.size("normalized_shape", size))
        .collect::<Result<Vec<_>, _>>()?;
    let normalized_dims = sizes.len();
    let trailing = shape
        .len()
        .checked_sub(normalized_dims)
        .map(|lead| &shape[lead..]);
    let agrees = trailing.is_some_and(|trailing| {
        sizes
            .iter()
            .zip(trailing)
            .all(|(&size, &dim)| c.importer.symbols.equate(size, dim).is_some())
    });
    if !agrees {
        return Err(c.bad(
            "normalized_shape",
            format!(
                "{} is not the trailing dimensions of `input`, {}",
                show(&sizes),
                show(&shape)
            ),
        ));
    }
    let op = Op::LayerNorm(LayerNorm {
        input,
        weight: c.optional_tensor("weight")?,
        bias: c.optional_tensor("bias")?,
        normalized_dims,
        eps: Real(c.double("eps")?),
    });
    c.emit(op, &["out0", "out1", "out2"])
}

/// The inference batch norm with running statistics, writing `outputs`.
fn batch_norm(c: &mut Call<'_, '_, '_>, outputs: [&str; 3]) -> Result<(), ImportError> {
    let op = Op::BatchNorm(BatchNorm {
        input: c.tensor("input")?,
        weight: c.optional_tensor("weight")?,
        bias: c.optional_tensor("bias")?,
        mean: c.tensor("running_mean")?,
        variance: c.tensor("running_var")?,
        eps: Real(c.double("eps")?),
    });
    c.emit(op, &outputs)
}

/// `native_group_norm`: `input` of `[N, C, *]` normalized over each of
/// `group` groups of `C / group` channels (with all their positions), then
/// scaled by `weight` and shifted by `bias` per channel; `out1` and `out2`
/// are each group's mean and `1 / sqrt(variance + eps)` (the variance
/// biased), of `[N, group]`. Composed of a reshape into `[N, group, rest]`,
/// the centred values (`reduce::centered`), their mean square and
/// elementwise steps. `N`, `C` and `HxW` must describe the input.
fn group_norm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("input")?;
    let stored = c.ty(input).dtype;
    if !stored.is_float() {
        return Err(c.bad(
            "input",
            format!("is {stored}: group norm is defined for floats only, as in PyTorch"),
        ));
    }
    // Halves compute in f32 and round each result once, as PyTorch's
    // accumulation does.
    let dtype = stored.arithmetic();
    let sizes = c.fixed_sizes("input", input)?;
    let (batch, channels) = match sizes.as_slice() {
        [batch, channels, ..] => (*batch, *channels),
        _ => {
            return Err(c.bad(
                "input",
                format!("is {}: group norm needs [N, C, *]", c.ty(input)),
            ));
        }
    };
    let positions: u64 = sizes[2..].iter().product();
    for (name, given) in [("N", batch), ("C", channels), ("HxW", positions)] {
        if c.count(name)? != given {
            return Err(c.bad(
                name,
                format!(
                    "is {}, but the input {} has {given}",
                    c.int(name)?,
                    c.ty(input)
                ),
            ));
        }
    }
    let groups = c.count("group")?;
    if groups == 0 || channels % groups != 0 {
        return Err(c.bad(
            "group",
            format!("{groups} does not divide the input's {channels} channels into equal groups"),
        ));
    }
    let eps = c.double("eps")?;
    let [weight, bias] = channel_parameters(c, ["weight", "bias"], channels)?;
    let shaped = |c: &mut Call<'_, '_, '_>, input, shape: &[u64]| {
        let ty = TensorType::contiguous(
            c.ty(input).dtype,
            shape.iter().map(|&size| Dim::Fixed(size)).collect(),
        );
        c.temporary_of(Op::Reshape(Reshape { input }), ty)
    };
    let grouped = shaped(c, input, &[batch, groups, channels / groups * positions]);
    let normalized = normalize(c, grouped, &[2], eps, dtype)?;
    let result = shaped(c, normalized.result, &[batch, channels, positions]);
    let result = affine(c, result, [weight, bias], &[channels, 1], dtype)?;
    for (value, name) in [
        (result, "out0"),
        (normalized.mean, "out1"),
        (normalized.inverse, "out2"),
    ] {
        reshape_into(c, value, name)?;
    }
    Ok(())
}

/// A tensor normalized over some dimensions, with its statistics (their
/// reduced dimensions kept as size 1).
struct Normalized {
    mean: ValueId,
    /// The biased variance.
    variance: ValueId,
    /// `1 / sqrt(variance + eps)`.
    inverse: ValueId,
    /// `(input - mean) * inverse`.
    result: ValueId,
}

/// `input` normalized over `dims`, computed in `dtype`: its deviations from
/// the mean (`reduce::centered`) times `1 / sqrt(variance + eps)`, the
/// variance biased, as group and batch norms define it.
fn normalize(
    c: &mut Call<'_, '_, '_>,
    input: ValueId,
    dims: &[usize],
    eps: f64,
    dtype: DType,
) -> Result<Normalized, ImportError> {
    let centered = reduce::centered(c, input, dims, dtype)?;
    let variance = Op::Reduce(Reduce {
        input: centered.square,
        op: ReduceOp::Mean,
        dims: dims.to_vec(),
        keepdim: true,
    });
    let variance = c.temporary(variance, dtype)?;
    let shifted = c.temporary(scaled(BinaryOp::Add, variance, eps), dtype)?;
    let inverse = c.temporary(Elementwise::unary(UnaryOp::Rsqrt, shifted), dtype)?;
    let result = c.temporary(
        reduce::binary(BinaryOp::Mul, centered.deviation, inverse),
        dtype,
    )?;
    Ok(Normalized {
        mean: centered.mean,
        variance,
        inverse,
        result,
    })
}

/// `x op scalar` of a float scalar.
fn scaled(op: BinaryOp, x: ValueId, scalar: f64) -> Op {
    Elementwise::op(
        Func::BinaryScalar {
            op,
            scalar: Scalar::Float(scalar),
        },
        vec![x],
    )
}

/// `result * weight + bias`, each when given, the per-channel parameters
/// viewed as `shape` to broadcast along the channels.
fn affine(
    c: &mut Call<'_, '_, '_>,
    mut result: ValueId,
    [weight, bias]: [Option<ValueId>; 2],
    shape: &[u64],
    dtype: DType,
) -> Result<ValueId, ImportError> {
    for (parameter, op) in [(weight, BinaryOp::Mul), (bias, BinaryOp::Add)] {
        if let Some(parameter) = parameter {
            let ty = TensorType::contiguous(
                c.ty(parameter).dtype,
                shape.iter().map(|&size| Dim::Fixed(size)).collect(),
            );
            let column = c.temporary_of(Op::Reshape(Reshape { input: parameter }), ty);
            result = c.temporary(reduce::binary(op, result, column), dtype)?;
        }
    }
    Ok(result)
}

/// The per-channel parameters `names` of a normalization over `channels`
/// channels, each when given: one value per channel.
fn channel_parameters<const N: usize>(
    c: &mut Call<'_, '_, '_>,
    names: [&str; N],
    channels: u64,
) -> Result<[Option<ValueId>; N], ImportError> {
    let mut parameters = [None; N];
    for (name, slot) in names.into_iter().zip(&mut parameters) {
        let Some(parameter) = c.optional_tensor(name)? else {
            continue;
        };
        if c.fixed_sizes(name, parameter)? != [channels] {
            return Err(c.bad(
                name,
                format!(
                    "is {}, not one value for each of the {channels} channels",
                    c.ty(parameter)
                ),
            ));
        }
        *slot = Some(parameter);
    }
    Ok(parameters)
}

/// `_native_batch_norm_legit`: in training, `input` of `[N, C, *]`
/// normalized per channel with the batch's statistics (over every
/// dimension but 1), `save_mean` and `save_invstd` the channels' mean and
/// `1 / sqrt(variance + eps)`, and the running statistics, when the
/// operator has them, updated in place as PyTorch does:
/// `running = (1 - momentum) * running + momentum * batch`, the running
/// variance taking the unbiased batch variance. Outside training it is the
/// inference batch norm with the running statistics; without them
/// (`no_stats`) that is an error, as in PyTorch.
fn batch_norm_legit(c: &mut Call<'_, '_, '_>, running: bool) -> Result<(), ImportError> {
    if !c.bool("training")? {
        if running {
            return batch_norm(c, ["out", "save_mean", "save_invstd"]);
        }
        return Err(c.bad(
            "training",
            "is false, but without running statistics a batch norm can only use the batch's, in training (PyTorch refuses it too)",
        ));
    }
    let input = c.tensor("input")?;
    let dtype = c.ty(input).dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        // PyTorch's CPU kernel rounds statistics of halves along the way in
        // ways its results show but ptec does not reproduce yet.
        return Err(c.bad(
            "input",
            format!("is {dtype}: ptec's training batch norm takes float32 and float64"),
        ));
    }
    let sizes = c.fixed_sizes("input", input)?;
    let Some(&channels) = sizes.get(1) else {
        return Err(c.bad(
            "input",
            format!("is {}: batch norm needs [N, C, *]", c.ty(input)),
        ));
    };
    let [weight, bias] = channel_parameters(c, ["weight", "bias"], channels)?;
    let eps = c.double("eps")?;
    let dims: Vec<usize> = (0..sizes.len()).filter(|&dim| dim != 1).collect();
    let normalized = normalize(c, input, &dims, eps, dtype)?;
    let mut column = vec![1; sizes.len() - 1];
    column[0] = channels;
    let result = affine(c, normalized.result, [weight, bias], &column, dtype)?;
    for (value, name) in [
        (result, "out"),
        (normalized.mean, "save_mean"),
        (normalized.inverse, "save_invstd"),
    ] {
        reshape_into(c, value, name)?;
    }
    if running {
        let count: u64 = dims.iter().map(|&dim| sizes[dim]).product();
        let momentum = c.double("momentum")?;
        let unbiased = count as f64 / (count as f64 - 1.0);
        let stats = channel_parameters(c, ["running_mean", "running_var"], channels)?;
        let updates = [
            ("running_mean", normalized.mean, 1.0),
            ("running_var", normalized.variance, unbiased),
        ];
        for (running, (name, batch, correction)) in stats.into_iter().zip(updates) {
            let Some(running) = running else {
                return Err(c.bad(name, "is None, but the operator updates it in place"));
            };
            let stats_ty = c.ty(running).clone();
            let batch = c.temporary_of(Op::Reshape(Reshape { input: batch }), stats_ty.clone());
            let batch = scaled(BinaryOp::Mul, batch, momentum * correction);
            let batch = c.temporary(batch, stats_ty.dtype)?;
            let kept = c.temporary(
                scaled(BinaryOp::Mul, running, 1.0 - momentum),
                stats_ty.dtype,
            )?;
            c.emit_into(reduce::binary(BinaryOp::Add, kept, batch), name)?;
        }
    }
    Ok(())
}

/// Writes `value` into the output `name` of the same element count, viewed
/// with its shape and, when its element type differs (a half computed in
/// f32), rounded to its type.
fn reshape_into(c: &mut Call<'_, '_, '_>, value: ValueId, name: &str) -> Result<(), ImportError> {
    let declared = c.declared_type_of(name)?.dtype;
    let value = match c.ty(value).dtype == declared {
        true => value,
        false => cast(c, value, declared),
    };
    c.emit(Op::Reshape(Reshape { input: value }), &[name])
}

/// `value` converted to `dtype` (with PyTorch's cast rules) into a new
/// value of its shape.
fn cast(c: &mut Call<'_, '_, '_>, value: ValueId, dtype: DType) -> ValueId {
    let ty = TensorType {
        dtype,
        ..c.ty(value).clone()
    };
    c.temporary_of(Op::Copy(Copy { input: value }), ty)
}

/// The element type of a matrix product's tensor arguments `names` and its
/// `out`: one type, as PyTorch requires, and not bool, which PyTorch's CPU
/// kernels do not implement.
fn product_dtype(c: &Call<'_, '_, '_>, names: &[&str]) -> Result<DType, ImportError> {
    let dtype = c.declared_type_of(names[0])?.dtype;
    for &name in names[1..].iter().chain(&["out"]) {
        let other = c.declared_type_of(name)?.dtype;
        if other != dtype {
            return Err(c.bad(
                name,
                format!(
                    "is {other}, not {dtype} as `{}`: PyTorch multiplies matrices of one element type",
                    names[0]
                ),
            ));
        }
    }
    if dtype == DType::Bool {
        return Err(c.bad(
            names[0],
            "is bool: PyTorch's CPU matrix products (addmm_impl_cpu_, bmm) are not implemented for 'Bool'",
        ));
    }
    Ok(dtype)
}

/// The Scalar argument `name` of a product of `dtype` elements, which
/// PyTorch converts to that type: an integer product refuses a value
/// PyTorch reports as an overflow (`fits`), with PyTorch's reason.
fn factor(c: &Call<'_, '_, '_>, name: &str, dtype: DType) -> Result<Scalar, ImportError> {
    let scalar = c.scalar(name)?;
    if dtype.is_float() {
        return Ok(scalar);
    }
    if !fits(scalar, dtype) {
        return Err(c.bad(
            name,
            format!("is {scalar}, which cannot be converted to {dtype} without overflow, as PyTorch says"),
        ));
    }
    Ok(scalar)
}

/// Whether PyTorch converts `scalar` to `dtype` (an integer type) without
/// reporting an overflow: a float must lie in `[lowest, max + 1)` (it is
/// then truncated), an integer within the type's range, or for unsigned
/// types its negation within it (which wraps).
fn fits(scalar: Scalar, dtype: DType) -> bool {
    let bits = 8 * dtype.size() as u32;
    let (low, high): (i128, i128) = match dtype.is_unsigned() {
        true => (0, 1 << bits),
        false => (-(1 << (bits - 1)), 1 << (bits - 1)),
    };
    match scalar {
        Scalar::Int(value) if dtype.is_unsigned() => i128::from(value).abs() < high,
        Scalar::Int(value) => (low..high).contains(&i128::from(value)),
        Scalar::Bool(_) => true,
        // Both bounds are powers of two, which an f64 holds exactly; NaN
        // fits nowhere.
        Scalar::Float(value) => value >= low as f64 && value < high as f64,
    }
}

fn matmul(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    product_dtype(c, &["self", "mat2"])?;
    let op = Op::MatMul(MatMul {
        a: c.tensor("self")?,
        b: c.tensor("mat2")?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &["out"])
}

fn addmm(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let dtype = product_dtype(c, &["self", "mat1", "mat2"])?;
    let op = Op::Addmm(Addmm {
        bias: c.tensor("self")?,
        a: c.tensor("mat1")?,
        b: c.tensor("mat2")?,
        beta: factor(c, "beta", dtype)?,
        alpha: factor(c, "alpha", dtype)?,
        clamp: ClampRange::default(),
    });
    c.emit(op, &["out"])
}

/// `linear(input, weight, bias)`: `input @ weight.T (+ bias)` over the
/// last dimension of `input`, its other dimensions flattened into the rows
/// of one matrix product (a bias broadcast over them, as addmm's) and
/// restored after.
fn linear(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("input")?;
    let weight = c.tensor("weight")?;
    let bias = c.optional_tensor("bias")?;
    match bias {
        Some(_) => product_dtype(c, &["input", "weight", "bias"])?,
        None => product_dtype(c, &["input", "weight"])?,
    };
    let dtype = c.ty(input).dtype;
    let sizes = c.shape(input);
    let Some((&features, leading)) = sizes.split_last() else {
        return Err(c.bad("input", "is 0-D: linear needs a last dimension of features"));
    };
    let weight_ty = c.ty(weight).clone();
    let &[out_features, weight_features] = c.shape(weight).as_slice() else {
        return Err(c.bad(
            "weight",
            format!("is {weight_ty}: ptec takes a matrix of [out_features, in_features]"),
        ));
    };
    if c.importer
        .symbols
        .equate(weight_features, features)
        .is_none()
    {
        return Err(c.bad(
            "weight",
            format!("is {weight_ty}, whose {weight_features} input features are not the input's {features}"),
        ));
    }
    let rows = c.numel_dim("input", leading)?;
    let transposed = c.temporary(
        Op::Permute(Permute {
            input: weight,
            dims: vec![1, 0],
        }),
        weight_ty.dtype,
    )?;
    let rows_in = match sizes.len() {
        2 => input,
        _ => c.temporary_of(
            Op::Reshape(Reshape { input }),
            TensorType::contiguous(dtype, vec![rows, features]),
        ),
    };
    let product = match bias {
        Some(bias) => Op::Addmm(Addmm {
            bias,
            a: rows_in,
            b: transposed,
            beta: Scalar::Int(1),
            alpha: Scalar::Int(1),
            clamp: ClampRange::default(),
        }),
        None => Op::MatMul(MatMul {
            a: rows_in,
            b: transposed,
            clamp: ClampRange::default(),
        }),
    };
    match sizes.len() {
        2 => c.emit(product, &["out"]),
        _ => {
            let rows_out = c.temporary(product, dtype)?;
            let mut shape = leading.to_vec();
            shape.push(out_features);
            let out = c.output("out")?;
            super::creation::emit_given(c, Op::Reshape(Reshape { input: rows_out }), out, shape)
        }
    }
}

fn convolution(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let rank = c.rank_of("input")?;
    let spatial = rank
        .checked_sub(2)
        .filter(|spatial| (1..=3).contains(spatial));
    let Some(spatial) = spatial else {
        return Err(c.bad(
            "input",
            format!("a convolution of a {rank}-D input: it must have 1 to 3 spatial dimensions"),
        ));
    };
    let transposed = if c.bool("transposed")? {
        Some(c.spatial("output_padding", spatial, 0)?)
    } else {
        if c.counts("output_padding")?.iter().any(|&size| size != 0) {
            return Err(c.bad(
                "output_padding",
                "is only meaningful for a transposed convolution",
            ));
        }
        None
    };
    let op = Op::Convolution(Convolution {
        input: c.tensor("input")?,
        weight: c.tensor("weight")?,
        bias: c.optional_tensor("bias")?,
        residual: None,
        stride: c.positive_spatial("stride", spatial, 1)?,
        padding: c.spatial("padding", spatial, 0)?,
        dilation: c.positive_spatial("dilation", spatial, 1)?,
        transposed,
        groups: c.count("groups")?,
        clamp: ClampRange::default(),
        epilogue: None,
    });
    c.emit(op, &["out"])
}

/// The convolution a `convolution_backward` call differentiates.
struct Forward {
    conv: Convolution,
    spatial: usize,
    /// The sizes of the input, the weight and the result (`grad_output`).
    sizes: [Vec<u64>; 3],
    dtype: DType,
}

/// `convolution_backward`: the gradients of a convolution with respect to
/// its input, weight and bias (each when `output_mask` asks for it), as
/// ops ptec has. The input's gradient is the transposed convolution of the
/// output's gradient by the weight (for a transposed convolution, the
/// ordinary one); the weight's is a convolution of the input by the
/// output's gradient with the batch as channels, stride and dilation
/// swapped; the bias's is the output's gradient summed over all but its
/// channels. Gradients `output_mask` does not ask for are not written.
fn convolution_backward(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let mask = c.bool_list("output_mask")?;
    let &[input_wanted, weight_wanted, bias_wanted] = mask.as_slice() else {
        return Err(c.bad("output_mask", format!("has {} values, not 3", mask.len())));
    };
    let forward = backward_forward(c)?;
    if input_wanted {
        input_gradient(c, &forward)?;
    }
    if weight_wanted {
        weight_gradient(c, &forward)?;
    }
    if bias_wanted {
        let grad = c.tensor("grad_output")?;
        let mut dims = vec![0];
        dims.extend(2..forward.spatial + 2);
        let sum = Reduce {
            input: grad,
            op: ReduceOp::Sum,
            dims,
            keepdim: false,
        };
        c.emit(Op::Reduce(sum), &["out2"])?;
    }
    Ok(())
}

/// The forward convolution of a backward call, checked: `grad_output` must
/// have its result's shape and element type.
fn backward_forward(c: &mut Call<'_, '_, '_>) -> Result<Forward, ImportError> {
    let rank = c.rank_of("input")?;
    let Some(spatial) = rank
        .checked_sub(2)
        .filter(|spatial| (1..=3).contains(spatial))
    else {
        return Err(c.bad(
            "input",
            format!("a convolution of a {rank}-D input: it must have 1 to 3 spatial dimensions"),
        ));
    };
    let transposed = if c.bool("transposed")? {
        Some(c.spatial("output_padding", spatial, 0)?)
    } else {
        None
    };
    let conv = Convolution {
        input: c.tensor("input")?,
        weight: c.tensor("weight")?,
        bias: None,
        residual: None,
        stride: c.positive_spatial("stride", spatial, 1)?,
        padding: c.spatial("padding", spatial, 0)?,
        dilation: c.positive_spatial("dilation", spatial, 1)?,
        transposed,
        groups: c.count("groups")?,
        clamp: ClampRange::default(),
        epilogue: None,
    };
    let grad = c.tensor("grad_output")?;
    let result = match c
        .importer
        .expected_shapes(&Op::Convolution(conv.clone()), 1)?
        .first()
    {
        Some(Expected::Shape(shape)) => shape.clone(),
        _ => return Err(c.invalid("a convolution whose result has no shape")),
    };
    if c.ty(grad).shape != result {
        return Err(c.bad(
            "grad_output",
            format!(
                "has shape {}, not the convolution's result's {}",
                show(&c.ty(grad).shape),
                show(&result)
            ),
        ));
    }
    let dtype = c.ty(conv.input).dtype;
    for (name, value) in [("weight", conv.weight), ("grad_output", grad)] {
        if c.ty(value).dtype != dtype {
            return Err(c.bad(
                name,
                format!("is {}, not the input's {dtype}", c.ty(value).dtype),
            ));
        }
    }
    let sizes = [conv.input, conv.weight, grad].map(|value| {
        c.ty(value)
            .shape
            .iter()
            .map(|dim| dim.fixed().unwrap_or(0))
            .collect()
    });
    Ok(Forward {
        conv,
        spatial,
        sizes,
        dtype,
    })
}

/// The input's gradient, into `out0`.
fn input_gradient(c: &mut Call<'_, '_, '_>, forward: &Forward) -> Result<(), ImportError> {
    let grad = c.tensor("grad_output")?;
    let [input, weight, result] = &forward.sizes;
    let conv = &forward.conv;
    let transposed = match conv.transposed {
        // The output padding that gives back the input's size.
        None => Some(
            (0..forward.spatial)
                .map(|d| {
                    let spread = (result[2 + d].saturating_sub(1)) * conv.stride[d]
                        + conv.dilation[d] * (weight[2 + d] - 1)
                        + 1;
                    (input[2 + d] + 2 * conv.padding[d]).saturating_sub(spread)
                })
                .collect(),
        ),
        Some(_) => None,
    };
    let op = Op::Convolution(Convolution {
        input: grad,
        transposed,
        ..conv.clone()
    });
    emit_cropped(c, op, forward.dtype, &input[2..], &[], "out0")
}

/// The weight's gradient, into `out1`: a convolution whose batch is the
/// channels of a group of one operand (the input, or for a transposed
/// convolution the output's gradient) and whose filters are the other's,
/// batch as channels.
fn weight_gradient(c: &mut Call<'_, '_, '_>, forward: &Forward) -> Result<(), ImportError> {
    let grad = c.tensor("grad_output")?;
    let conv = &forward.conv;
    let (spread, filters) = match conv.transposed {
        None => (conv.input, grad),
        Some(_) => (grad, conv.input),
    };
    let batch = forward.sizes[0][0];
    let spread = grouped_batch(c, spread, conv.groups, batch, forward.dtype)?;
    let filters = swapped(c, filters, forward.dtype)?;
    let op = Op::Convolution(Convolution {
        input: spread,
        weight: filters,
        stride: conv.dilation.clone(),
        dilation: conv.stride.clone(),
        transposed: None,
        ..conv.clone()
    });
    let kernel = &forward.sizes[1][2..];
    emit_cropped(
        c,
        op,
        forward.dtype,
        kernel,
        &swap_order(forward.spatial),
        "out1",
    )
}

/// `[1, 0, 2, ...]`: the first two dimensions swapped.
fn swap_order(spatial: usize) -> Vec<usize> {
    let mut dims = vec![1, 0];
    dims.extend(2..spatial + 2);
    dims
}

/// `value` `[A, B, ...]` as `[B, A, ...]`.
fn swapped(c: &mut Call<'_, '_, '_>, value: ValueId, dtype: DType) -> Result<ValueId, ImportError> {
    let spatial = c.ty(value).rank() - 2;
    let op = Op::Permute(Permute {
        input: value,
        dims: swap_order(spatial),
    });
    c.temporary(op, dtype)
}

/// `value` `[N, G * K, ...]` as `[K, G * N, ...]`: each group's channels
/// become the batch, and the batch the channels of each group.
fn grouped_batch(
    c: &mut Call<'_, '_, '_>,
    value: ValueId,
    groups: u64,
    batch: u64,
    dtype: DType,
) -> Result<ValueId, ImportError> {
    let shape = c.ty(value).shape.clone();
    if shape[0].fixed().is_none() {
        return Err(c.bad("input", "the weight's gradient of a batch of symbolic size"));
    }
    let per_group = shape[1].fixed().unwrap_or(0) / groups.max(1);
    let mut split = vec![shape[0], Dim::Fixed(groups), Dim::Fixed(per_group)];
    split.extend(&shape[2..]);
    let split = c.temporary_of(
        Op::Reshape(Reshape { input: value }),
        TensorType::contiguous(dtype, split),
    );
    let mut dims = vec![2, 1, 0];
    dims.extend(3..shape.len() + 1);
    let moved = c.temporary(Op::Permute(Permute { input: split, dims }), dtype)?;
    let mut merged = vec![Dim::Fixed(per_group), Dim::Fixed(groups * batch)];
    merged.extend(&shape[2..]);
    Ok(c.temporary_of(
        Op::Reshape(Reshape { input: moved }),
        TensorType::contiguous(dtype, merged),
    ))
}

/// Emits `op` into the tensor argument `out`, its spatial dimensions (from
/// the third) cut to `sizes` where the op gives more, then permuted by
/// `permutation` (none when empty).
fn emit_cropped(
    c: &mut Call<'_, '_, '_>,
    op: Op,
    dtype: DType,
    sizes: &[u64],
    permutation: &[usize],
    out: &str,
) -> Result<(), ImportError> {
    let shape = match c.importer.expected_shapes(&op, 1)?.first() {
        Some(Expected::Shape(shape)) => shape.clone(),
        _ => return Err(c.invalid("a convolution whose result has no shape")),
    };
    let cuts: Vec<usize> = (0..sizes.len())
        .filter(|&d| shape[2 + d] != Dim::Fixed(sizes[d]))
        .collect();
    if cuts.is_empty() && permutation.is_empty() {
        return c.emit(op, &[out]);
    }
    let mut value = c.temporary(op, dtype)?;
    let mut shape = shape;
    for d in cuts {
        shape[2 + d] = Dim::Fixed(sizes[d]);
        let slice = Op::Slice(Slice {
            input: value,
            dim: 2 + d,
            start: Dim::Fixed(0),
            step: 1,
        });
        value = c.temporary_of(slice, TensorType::contiguous(dtype, shape.clone()));
    }
    let dims = if permutation.is_empty() {
        (0..shape.len()).collect()
    } else {
        permutation.to_vec()
    };
    c.emit(Op::Permute(Permute { input: value, dims }), &[out])
}

/// A pooling stride: the kernel's when the list is empty.
fn pooling_stride(c: &Call<'_, '_, '_>, kernel: Pair) -> Result<Pair, ImportError> {
    if c.int_list("stride")?.is_empty() {
        Ok(kernel)
    } else {
        c.positive_pair("stride", 1)
    }
}

/// The max pooling of `input` that the call's arguments describe.
fn max_pooling(c: &Call<'_, '_, '_>, input: ValueId) -> Result<Op, ImportError> {
    let kernel = c.positive_pair("kernel_size", 1)?;
    Ok(Op::MaxPool2d(MaxPool2d {
        input,
        kernel,
        stride: pooling_stride(c, kernel)?,
        padding: c.pair("padding", 0)?,
        dilation: c.positive_pair("dilation", 1)?,
        ceil_mode: c.bool("ceil_mode")?,
    }))
}

fn max_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let op = max_pooling(c, input)?;
    c.emit(op, &["out", "indices"])
}

/// `max_pool2d_with_indices_backward`: each output gradient added to the
/// input element its index names (row-major within its image's plane), in
/// the order of the output positions, as PyTorch's CPU kernel adds them;
/// every other input element's gradient is zero. That is a `scatter_add`
/// into zeros of the planes flattened. The gradient and the indices must
/// have the shape the forward pooling of `self` gives; an index outside its
/// plane (PyTorch's kernel writes out of bounds) is an error at run time.
/// Half-precision gradients are refused: PyTorch rounds each addition to
/// the half type, where the scatter sums in f32 and rounds once.
fn max_pool2d_backward(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let input = c.tensor("self")?;
    let dtype = c.ty(input).dtype;
    if !matches!(dtype, DType::F32 | DType::F64) {
        return Err(c.bad(
            "self",
            format!(
                "{dtype:?} gradients: ptec computes max pooling's gradient in f32 and f64 only"
            ),
        ));
    }
    let sizes = c.fixed_sizes("self", input)?;
    let &[batch, channels, height, width] = sizes.as_slice() else {
        return Err(c.bad("self", format!("{sizes:?} is not an NCHW image (4-D)")));
    };
    let pooled = match c
        .importer
        .expected_shapes(&max_pooling(c, input)?, 2)?
        .first()
    {
        Some(Expected::Shape(shape)) => shape.clone(),
        _ => return Err(c.invalid("a max pooling whose result has no shape")),
    };
    for name in ["grad_output", "indices"] {
        let declared = c.declared_type_of(name)?.shape;
        if declared != pooled {
            return Err(c.bad(
                name,
                format!(
                    "{} is not the shape {} of the pooling of self",
                    show(&declared),
                    show(&pooled)
                ),
            ));
        }
    }
    let declared = c.declared_type_of("grad_input")?.shape;
    if declared != c.ty(input).shape {
        return Err(c.bad(
            "grad_input",
            format!("{} is not the shape {sizes:?} of self", show(&declared)),
        ));
    }
    let positions: u64 = pooled[2..]
        .iter()
        .map(|dim| dim.fixed().unwrap_or(0))
        .product();
    let planes = |length: u64, dtype: DType| {
        TensorType::contiguous(
            dtype,
            vec![Dim::Fixed(batch), Dim::Fixed(channels), Dim::Fixed(length)],
        )
    };
    let grad_output = c.tensor("grad_output")?;
    let src = c.temporary_of(
        Op::Reshape(Reshape { input: grad_output }),
        planes(positions, dtype),
    );
    let indices = c.tensor("indices")?;
    let index_type = c.ty(indices).dtype;
    let index = c.temporary_of(
        Op::Reshape(Reshape { input: indices }),
        planes(positions, index_type),
    );
    let zeros = c.temporary_of(
        Op::Full(Full {
            value: Term::Const(Scalar::Int(0)),
        }),
        planes(height * width, dtype),
    );
    let op = Op::Scatter(Scatter {
        input: zeros,
        index,
        src,
        dim: 2,
        accumulate: true,
    });
    let sums = c.temporary(op, dtype)?;
    c.emit(Op::Reshape(Reshape { input: sums }), &["grad_input"])
}

fn avg_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let kernel = c.positive_pair("kernel_size", 1)?;
    let pooling = AvgPool2d {
        input: c.tensor("self")?,
        kernel,
        stride: pooling_stride(c, kernel)?,
        padding: c.pair("padding", 0)?,
        ceil_mode: c.bool("ceil_mode")?,
        count_include_pad: c.bool("count_include_pad")?,
    };
    match c.optional_int("divisor_override")? {
        None => c.emit(Op::AvgPool2d(pooling), &["out"]),
        Some(0) => Err(c.bad("divisor_override", "a divisor must not be zero")),
        Some(divisor) => sum_pool2d(c, pooling, divisor),
    }
}

/// `avg_pool2d` with a `divisor_override`: each window's sum divided by
/// the divisor, whatever the window holds. The input is padded with zeros
/// (which add nothing to a sum) to cover every window of the output size
/// the pooling's shape rule gives; the sums are strided slices added along
/// the columns, then the rows, in f32 (f64 for f64 images).
fn sum_pool2d(
    c: &mut Call<'_, '_, '_>,
    pooling: AvgPool2d,
    divisor: i64,
) -> Result<(), ImportError> {
    let input = pooling.input;
    let sizes = c.fixed_sizes("self", input)?;
    let pooled = match c
        .importer
        .expected_shapes(&Op::AvgPool2d(pooling.clone()), 1)?
        .first()
    {
        Some(Expected::Shape(shape)) => shape.clone(),
        _ => return Err(c.invalid("an average pooling whose result has no shape")),
    };
    let (Some(rows), Some(columns)) = (
        pooled.get(2).and_then(|dim| dim.fixed()),
        pooled.get(3).and_then(|dim| dim.fixed()),
    ) else {
        return Err(c.bad("self", format!("{sizes:?} is not an NCHW image (4-D)")));
    };
    let out = [rows, columns];
    let compute = sample::compute_type(c, "self", c.ty(input).dtype)?;
    let widened = sample::widened(c, input, compute);
    let covered = |d: usize| (out[d] - 1) * pooling.stride[d] + pooling.kernel[d];
    let before: Vec<i64> = vec![0, 0, pooling.padding[0] as i64, pooling.padding[1] as i64];
    let after: Vec<i64> = (0..4)
        .map(|d| match d {
            2 | 3 => covered(d - 2) as i64 - sizes[d] as i64 - before[d],
            _ => 0,
        })
        .collect();
    let mut shape: Vec<Dim> = sizes.iter().copied().map(Dim::Fixed).collect();
    shape[2] = Dim::Fixed(covered(0));
    shape[3] = Dim::Fixed(covered(1));
    let pad = Op::Pad(Pad {
        input: widened,
        before,
        after,
        mode: PadMode::Constant(Scalar::Float(0.0)),
    });
    let mut value = c.temporary_of(pad, TensorType::contiguous(compute, shape.clone()));
    for dim in [3, 2] {
        shape[dim] = Dim::Fixed(out[dim - 2]);
        let mut sum = None;
        for start in 0..pooling.kernel[dim - 2] {
            let slice = Op::Slice(Slice {
                input: value,
                dim,
                start: Dim::Fixed(start),
                step: pooling.stride[dim - 2],
            });
            let term = c.temporary_of(slice, TensorType::contiguous(compute, shape.clone()));
            sum = Some(match sum {
                None => term,
                Some(sum) => c.binary(BinaryOp::Add, sum, term, compute)?,
            });
        }
        value = sum.ok_or_else(|| c.bad("kernel_size", "an empty pooling window"))?;
    }
    let divisor = sample::weight_constant(c, &[divisor as f64], compute, &[]);
    let func = Func::Binary {
        op: BinaryOp::Div,
        alpha: None,
    };
    c.emit(Elementwise::op(func, vec![value, divisor]), &["out"])
}

fn adaptive_avg_pool2d(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let sizes = c.sizes_of("self")?;
    let out = c.pair("output_size", 1)?;
    if sizes.len() != 4 {
        return Err(c.bad(
            "self",
            "adaptive average pooling of a tensor that is not NCHW",
        ));
    }
    let input_sizes = [sizes[2] as u64, sizes[3] as u64];
    let input = input_sizes;
    if out.contains(&0) || input.contains(&0) {
        return Err(c.bad(
            "output_size",
            format!("pooling from {input:?} to {out:?}: sizes must be positive"),
        ));
    }
    if out.iter().zip(&input).any(|(&o, &i)| i % o != 0) {
        let input = c.tensor("self")?;
        let windows = [0, 1].map(|d| sample::adaptive_windows(input_sizes[d], out[d]));
        return sample::window_average(c, input, windows);
    }
    let kernel = [input[0] / out[0], input[1] / out[1]];
    let op = Op::AvgPool2d(AvgPool2d {
        input: c.tensor("self")?,
        kernel,
        stride: kernel,
        padding: [0, 0],
        ceil_mode: false,
        count_include_pad: true,
    });
    c.emit(op, &["out"])
}

/// `embedding(weight, indices)`: a row of the 2-D table for each index
/// (advanced indexing of its first dimension, without negative indices;
/// `padding_idx` only matters to gradients).
fn embedding(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    if c.rank_of("weight")? != 2 {
        return Err(c.bad("weight", "must be 2-D"));
    }
    let op = Op::Index(Index {
        input: c.tensor("weight")?,
        indices: vec![c.tensor("indices")?],
        dims: vec![0],
        wrap: false,
    });
    c.emit(op, &["out"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_factors_fit_as_pytorch_converts_them() {
        assert!(fits(Scalar::Int(127), DType::I8));
        assert!(!fits(Scalar::Int(128), DType::I8));
        assert!(fits(Scalar::Int(-128), DType::I8));
        assert!(!fits(Scalar::Int(-129), DType::I8));
        // An unsigned type takes negated values of its range, which wrap.
        assert!(fits(Scalar::Int(-255), DType::U8));
        assert!(!fits(Scalar::Int(-256), DType::U8));
        assert!(fits(Scalar::Int(255), DType::U8));
        assert!(!fits(Scalar::Int(256), DType::U8));
        assert!(fits(Scalar::Int(i64::MAX), DType::I64));
        assert!(fits(Scalar::Int(i64::MIN), DType::I64));
        // Floats lie in [lowest, max + 1), then truncate toward zero.
        assert!(fits(Scalar::Float(127.9), DType::I8));
        assert!(!fits(Scalar::Float(128.0), DType::I8));
        assert!(!fits(Scalar::Float(-128.9), DType::I8));
        assert!(!fits(Scalar::Float(-0.5), DType::U8));
        assert!(fits(Scalar::Float(-0.0), DType::U8));
        assert!(fits(Scalar::Float(255.9), DType::U8));
        assert!(fits(Scalar::Float(9.2e18), DType::I64));
        assert!(!fits(Scalar::Float(9.3e18), DType::I64));
        assert!(!fits(Scalar::Float(f64::NAN), DType::I32));
        assert!(!fits(Scalar::Float(f64::INFINITY), DType::I32));
    }
}
