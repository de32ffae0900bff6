//! The quantize family of ExecuTorch's quantized kernels
//! (`quantized_decomposed::*`, `kernels/quantized`): what a PT2E-quantized
//! program runs between its float operators when no delegate takes them.
//!
//! Each is a composition of elementwise ops, the building blocks the
//! XNNPACK importer rounds quantized values with, in the arithmetic of
//! ExecuTorch's kernels:
//! - quantizing multiplies by `1.0f / float(scale)` in f32 (f64 inputs in
//!   f64, then rounded to f32), rounds half to even, adds the zero point as
//!   f32 and clamps to `[quant_min, quant_max]`; a result the kernel's
//!   conversion to `int64_t` cannot hold (NaN, infinities, beyond 2^63)
//!   becomes `quant_min`, as x86-64's conversion gives `INT64_MIN`;
//! - dequantizing subtracts the zero point in i32 and multiplies by
//!   `float(scale)` in f32 (a per-channel rank-1 input converts the
//!   difference to the output's type first, so an f64 result is computed
//!   in f64), then converts to the output's type;
//! - choosing parameters takes the minimum and maximum (widened to hold 0)
//!   and computes the scale in f64, replaces a scale whose f32 reciprocal is
//!   infinite by 0.1 and one below `6.1e-5f` by that threshold (stretching
//!   the range as the kernel does), and the zero point from whichever end
//!   errs less, nudged into range and rounded in f32. `eps` is not read, as
//!   ExecuTorch's kernel does not read it.
//!
//! Scales and zero points given as tensors (per channel, per token, or the
//! `Tensor_out` forms) are viewed so that they broadcast along the axis
//! they apply to, and are read at run time. Vulkan graphs call the same
//! entries, with those tensors (and choose_qparams' results) in f32 and
//! int32, as the Vulkan serializer narrows 64-bit values.

use ptec_ir::ops::elementwise::{BinaryOp, Func, UnaryOp};
use ptec_ir::ops::layout::Copy;
use ptec_ir::ops::reduce::{Reduce, ReduceOp};
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use super::layout::view;
use crate::call::Call;
use crate::error::ImportError;

const ELEMENTWISE: &[OpKind] = &[OpKind::Elementwise, OpKind::Copy, OpKind::Reshape];

const CHOOSE: &[OpKind] = &[
    OpKind::Reduce,
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reshape,
];

pub(super) const OPERATORS: &[Operator] = &[
    (
        "quantized_decomposed::quantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantize(c, Granularity::Tensor),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::quantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantize(c, Granularity::TensorArgs),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::quantize_per_channel.out(Tensor input, Tensor scales, Tensor zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantize(c, Granularity::Channel),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::quantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantize(c, Granularity::Token),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::dequantize_per_tensor.out(Tensor input, float scale, int zero_point, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| dequantize(c, Granularity::Tensor),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::dequantize_per_tensor.Tensor_out(Tensor input, Tensor scale, Tensor zero_point, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| dequantize(c, Granularity::TensorArgs),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::dequantize_per_channel.out(Tensor input, Tensor scales, Tensor? zero_points, int axis, int quant_min, int quant_max, ScalarType dtype, *, ScalarType? out_dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| dequantize(c, Granularity::Channel),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::dequantize_per_token.out(Tensor input, Tensor scales, Tensor zero_points, int quant_min, int quant_max, ScalarType dtype, ScalarType output_dtype, *, Tensor(a!) out) -> Tensor(a!)",
        |c| dequantize(c, Granularity::Token),
        ELEMENTWISE,
    ),
    (
        "quantized_decomposed::choose_qparams.Tensor_out(Tensor input, int quant_min, int quant_max, float eps, ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))",
        |c| {
            let range = (c.int("quant_min")?, c.int("quant_max")?);
            choose_qparams(c, range, false)
        },
        CHOOSE,
    ),
    (
        "quantized_decomposed::choose_qparams_per_token_asymmetric.out(Tensor input, ScalarType dtype, *, Tensor(a!) scale_out, Tensor(b!) zero_point_out) -> (Tensor(a!), Tensor(b!))",
        // The kernel quantizes to int8's range whatever `dtype` says.
        |c| choose_qparams(c, (i8::MIN.into(), i8::MAX.into()), true),
        CHOOSE,
    ),
];

/// The element types of scale tensors: the kernels' f64, and the f32 of
/// Vulkan graphs, which hold 64-bit values in 32 bits (the kernels convert
/// a scale to f32 before using it, so the results are the same).
const SCALES: &[DType] = &[DType::F64, DType::F32];

/// The element types of zero point tensors: int64, and the int32 of
/// Vulkan graphs.
const ZERO_POINTS: &[DType] = &[DType::I64, DType::I32];

/// Which elements share a scale and a zero point.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Granularity {
    /// All of them, given as `float scale, int zero_point`.
    Tensor,
    /// All of them, given as one-element tensors.
    TensorArgs,
    /// Those at one index along `axis`.
    Channel,
    /// Those of one row of the last dimension.
    Token,
}

impl Granularity {
    /// The names of the scale and zero point arguments, when they are
    /// tensors.
    fn parameter_names(self) -> (&'static str, &'static str) {
        match self {
            Granularity::TensorArgs => ("scale", "zero_point"),
            Granularity::Tensor | Granularity::Channel | Granularity::Token => {
                ("scales", "zero_points")
            }
        }
    }
}

/// A scale or zero point: a number of the call, or a tensor shaped to
/// broadcast against the input.
#[derive(Clone, Copy)]
enum Param {
    Number(f64),
    Tensor(ValueId),
}

/// The integer types the kernels quantize to, with their ranges.
fn integer_range(dtype: DType) -> Option<(i64, i64)> {
    Some(match dtype {
        DType::U8 => (u8::MIN.into(), u8::MAX.into()),
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => return None,
    })
}

/// Checks the `dtype` argument: an integer type the kernels take, which
/// `tensor` (the quantized input or output) must have; returns
/// `quant_min` and `quant_max`, in order and (when `bounded`: quantizing
/// clamps to them) within the type's range.
fn quantized_type(
    c: &Call<'_, '_, '_>,
    tensor: &str,
    bounded: bool,
) -> Result<(i64, i64), ImportError> {
    let dtype = c
        .optional_dtype("dtype")?
        .ok_or_else(|| c.bad("dtype", "must name an integer type"))?;
    let (low, high) = integer_range(dtype).ok_or_else(|| {
        c.bad(
            "dtype",
            format!("is {dtype}; the quantized kernels take uint8, int8, int16 and int32"),
        )
    })?;
    let declared = c.declared_type_of(tensor)?.dtype;
    if declared != dtype {
        return Err(c.bad(tensor, format!("is {declared}, but dtype is {dtype}")));
    }
    let (quant_min, quant_max) = (c.int("quant_min")?, c.int("quant_max")?);
    if bounded && quant_min < low {
        return Err(c.bad(
            "quant_min",
            format!("{quant_min} is below {dtype}'s least value {low}"),
        ));
    }
    if bounded && quant_max > high {
        return Err(c.bad(
            "quant_max",
            format!("{quant_max} is above {dtype}'s greatest value {high}"),
        ));
    }
    if quant_min > quant_max {
        return Err(c.bad(
            "quant_min",
            format!("{quant_min} is greater than quant_max {quant_max}"),
        ));
    }
    Ok((quant_min, quant_max))
}

/// `id` converted to `dtype` (a copy between element types is a cast).
fn cast(c: &mut Call<'_, '_, '_>, id: ValueId, dtype: DType) -> ValueId {
    if c.ty(id).dtype == dtype {
        return id;
    }
    let shape = c.ty(id).shape.clone();
    c.temporary_of(
        Op::Copy(Copy { input: id }),
        TensorType::contiguous(dtype, shape),
    )
}

fn unary(
    c: &mut Call<'_, '_, '_>,
    op: UnaryOp,
    x: ValueId,
    dtype: DType,
) -> Result<ValueId, ImportError> {
    c.elementwise(Func::Unary(op), vec![x], dtype)
}

/// `x op param` in `dtype`.
fn apply(
    c: &mut Call<'_, '_, '_>,
    x: ValueId,
    op: BinaryOp,
    param: Param,
    dtype: DType,
) -> Result<ValueId, ImportError> {
    match param {
        Param::Number(value) => c.with_scalar(x, op, Scalar::Float(value), dtype),
        Param::Tensor(t) => c.binary(op, x, t, dtype),
    }
}

/// `mask ? value : x`.
fn fill(
    c: &mut Call<'_, '_, '_>,
    x: ValueId,
    mask: ValueId,
    value: f64,
) -> Result<ValueId, ImportError> {
    let dtype = c.ty(x).dtype;
    let func = Func::MaskedFill {
        value: Scalar::Float(value),
    };
    c.elementwise(func, vec![x, mask], dtype)
}

/// `x op value` as a bool.
fn compare(
    c: &mut Call<'_, '_, '_>,
    x: ValueId,
    op: BinaryOp,
    value: f64,
) -> Result<ValueId, ImportError> {
    c.with_scalar(x, op, Scalar::Float(value), DType::Bool)
}

/// The shape a scale or zero point tensor is viewed as to broadcast against
/// an input of `shape`.
fn param_shape(
    c: &Call<'_, '_, '_>,
    granularity: Granularity,
    shape: &[Dim],
) -> Result<Vec<Dim>, ImportError> {
    Ok(match granularity {
        Granularity::Tensor | Granularity::TensorArgs => vec![Dim::Fixed(1); shape.len()],
        Granularity::Channel => {
            let axis = c.dim("axis", shape.len())?;
            let mut param = vec![shape[axis]];
            param.extend(vec![Dim::Fixed(1); shape.len() - axis - 1]);
            param
        }
        Granularity::Token => {
            let Some((_, lead)) = shape.split_last() else {
                return Err(c.bad("input", "has no dimension to quantize per token"));
            };
            let mut param = lead.to_vec();
            param.push(Dim::Fixed(1));
            param
        }
    })
}

/// The tensor argument `name`, of an element type in `dtypes`, viewed as
/// `shape` (it must have as many elements), then converted to `compute`.
fn param_tensor(
    c: &mut Call<'_, '_, '_>,
    name: &str,
    dtypes: &[DType],
    shape: &[Dim],
    compute: DType,
) -> Result<ValueId, ImportError> {
    let tensor = c.tensor(name)?;
    let ty = c.ty(tensor).clone();
    if !dtypes.contains(&ty.dtype) {
        let names: Vec<String> = dtypes.iter().map(ToString::to_string).collect();
        return Err(c.bad(
            name,
            format!("is {}; the kernel takes {}", ty.dtype, names.join(" or ")),
        ));
    }
    let count = |dims: &[Dim]| {
        dims.iter()
            .try_fold(1u64, |count, dim| count.checked_mul(dim.fixed()?))
    };
    let same = match (count(&ty.shape), count(shape)) {
        (Some(have), Some(want)) => have == want,
        _ => ty.shape[..] == shape[..],
    };
    if !same {
        let want: Vec<String> = shape.iter().map(ToString::to_string).collect();
        return Err(c.bad(
            name,
            format!(
                "is {ty}; it needs one element per group of the input's elements ([{}])",
                want.join(", ")
            ),
        ));
    }
    let viewed = if ty.shape[..] == shape[..] {
        tensor
    } else {
        view(c, tensor, shape.to_vec())?
    };
    Ok(cast(c, viewed, compute))
}

/// `quantize_per_*`: `clamp(round(x * (1.0f / scale)) + zero_point)` into
/// the integer type `dtype`.
fn quantize(c: &mut Call<'_, '_, '_>, granularity: Granularity) -> Result<(), ImportError> {
    let x = c.tensor("input")?;
    let ty = c.ty(x).clone();
    if !ty.dtype.is_float() {
        return Err(c.bad("input", format!("is {}, not a float type", ty.dtype)));
    }
    let (quant_min, quant_max) = quantized_type(c, "out", true)?;
    let shape = param_shape(c, granularity, &ty.shape)?;
    // f64 inputs multiply in f64; halves, as C++ promotes them, in f32.
    let compute = if ty.dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let (scale, zero_point) = match granularity {
        Granularity::Tensor => {
            let inverse = 1.0f32 / c.double("scale")? as f32;
            let zero_point = c.int("zero_point")? as i32 as f32;
            (
                Param::Number(inverse.into()),
                Param::Number(zero_point.into()),
            )
        }
        _ => {
            let (scale, zero_point) = granularity.parameter_names();
            let scale = param_tensor(c, scale, SCALES, &shape, DType::F32)?;
            let inverse = unary(c, UnaryOp::Reciprocal, scale, DType::F32)?;
            let zero_point = param_tensor(c, zero_point, ZERO_POINTS, &shape, DType::I32)?;
            let zero_point = cast(c, zero_point, DType::F32);
            (
                Param::Tensor(cast(c, inverse, compute)),
                Param::Tensor(zero_point),
            )
        }
    };
    let x = cast(c, x, compute);
    let scaled = apply(c, x, BinaryOp::Mul, scale, compute)?;
    let scaled = cast(c, scaled, DType::F32);
    let rounded = unary(c, UnaryOp::Round, scaled, DType::F32)?;
    let shifted = apply(c, rounded, BinaryOp::Add, zero_point, DType::F32)?;
    // Bounds f32 cannot hold exactly (int32's) clamp in f64.
    let exact = |bound: i64| (bound as f32) as i64 == bound;
    let bounded_type = if exact(quant_min) && exact(quant_max) {
        DType::F32
    } else {
        DType::F64
    };
    let shifted = cast(c, shifted, bounded_type);
    let clamp = Func::Clamp {
        min: Some(Scalar::Int(quant_min)),
        max: Some(Scalar::Int(quant_max)),
    };
    let clamped = c.elementwise(clamp, vec![shifted], bounded_type)?;
    // What `int64_t` cannot hold becomes INT64_MIN, then quant_min.
    let magnitude = unary(c, UnaryOp::Abs, shifted, bounded_type)?;
    let held = compare(c, magnitude, BinaryOp::Lt, 2f64.powi(63))?;
    let unheld = unary(c, UnaryOp::LogicalNot, held, DType::Bool)?;
    let result = fill(c, clamped, unheld, quant_min as f64)?;
    c.emit_copy(result, "out")
}

/// `dequantize_per_*`: `(q - zero_point) * scale` in the float type of
/// `out`.
fn dequantize(c: &mut Call<'_, '_, '_>, granularity: Granularity) -> Result<(), ImportError> {
    let q = c.tensor("input")?;
    let ty = c.ty(q).clone();
    quantized_type(c, "input", false)?;
    let out = c.declared_type_of("out")?.dtype;
    if !out.is_float() {
        return Err(c.bad("out", format!("is {out}, not a float type")));
    }
    if granularity == Granularity::Token {
        c.requested_dtype("output_dtype", "out")?;
    } else {
        c.requested_dtype("out_dtype", "out")?;
    }
    let shape = param_shape(c, granularity, &ty.shape)?;
    let (scale, zero_point) = match granularity {
        Granularity::Tensor => {
            let scale = c.double("scale")? as f32;
            let zero_point = c.int("zero_point")? as i32;
            (
                Param::Number(scale.into()),
                Some(Param::Number(zero_point.into())),
            )
        }
        _ => {
            let (scale, zero_point) = granularity.parameter_names();
            let scale = param_tensor(c, scale, SCALES, &shape, DType::F32)?;
            let zero_point = match c.optional_tensor(zero_point)? {
                None => None,
                Some(_) => Some(Param::Tensor(param_tensor(
                    c,
                    zero_point,
                    ZERO_POINTS,
                    &shape,
                    DType::I32,
                )?)),
            };
            (Param::Tensor(scale), zero_point)
        }
    };
    let q = cast(c, q, DType::I32);
    let difference = match zero_point {
        Some(Param::Number(zero_point)) => {
            c.with_scalar(q, BinaryOp::Sub, Scalar::Int(zero_point as i64), DType::I32)?
        }
        Some(Param::Tensor(zero_point)) => c.binary(BinaryOp::Sub, q, zero_point, DType::I32)?,
        None => q,
    };
    // The per-channel kernel converts a rank-1 input's difference to the
    // output's type before multiplying (by a float: in f64 for an f64
    // result); every other case multiplies in f32.
    let one_dimensional = granularity == Granularity::Channel && ty.rank() == 1;
    let difference = if one_dimensional {
        cast(c, difference, out)
    } else {
        difference
    };
    let compute = if one_dimensional && out == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let difference = cast(c, difference, compute);
    let scale = match scale {
        Param::Tensor(scale) => Param::Tensor(cast(c, scale, compute)),
        number => number,
    };
    let product = apply(c, difference, BinaryOp::Mul, scale, compute)?;
    c.emit_copy(product, "out")
}

/// `choose_qparams` (one scale and zero point for the whole input) or
/// `choose_qparams_per_token_asymmetric` (one per row of the last
/// dimension), into the f64 `scale_out` and int64 `zero_point_out`.
fn choose_qparams(
    c: &mut Call<'_, '_, '_>,
    (quant_min, quant_max): (i64, i64),
    per_token: bool,
) -> Result<(), ImportError> {
    let x = c.tensor("input")?;
    let ty = c.ty(x).clone();
    if ty.dtype != DType::F32 {
        return Err(c.bad("input", format!("is {}, not float32", ty.dtype)));
    }
    if quant_min >= quant_max {
        return Err(c.bad(
            "quant_min",
            format!("{quant_min} is not less than quant_max {quant_max}"),
        ));
    }
    let (Ok(qmin), Ok(qmax)) = (i32::try_from(quant_min), i32::try_from(quant_max)) else {
        return Err(c.bad(
            "quant_max",
            format!("[{quant_min}, {quant_max}] is not within int32"),
        ));
    };
    for (name, dtypes) in [("scale_out", SCALES), ("zero_point_out", ZERO_POINTS)] {
        let declared = c.declared_type_of(name)?.dtype;
        if !dtypes.contains(&declared) {
            return Err(c.bad(name, format!("is {declared}, not {}", dtypes[0])));
        }
    }
    let rank = ty.rank();
    if per_token && rank == 0 {
        return Err(c.bad("input", "has no dimension to choose parameters per token"));
    }
    let dims: Vec<usize> = if per_token {
        vec![rank - 1]
    } else {
        (0..rank).collect()
    };
    let extreme = |c: &mut Call<'_, '_, '_>, op| {
        let reduce = Op::Reduce(Reduce {
            input: x,
            op,
            dims: dims.clone(),
            keepdim: true,
        });
        c.temporary(reduce, DType::F32)
    };
    let clamp = |c: &mut Call<'_, '_, '_>, x, min: Option<f64>, max: Option<f64>| {
        let func = Func::Clamp {
            min: min.map(Scalar::Float),
            max: max.map(Scalar::Float),
        };
        c.elementwise(func, vec![x], DType::F32)
    };
    // The range, widened to hold 0.
    let low = extreme(c, ReduceOp::Min)?;
    let low = clamp(c, low, None, Some(0.0))?;
    let high = extreme(c, ReduceOp::Max)?;
    let high = clamp(c, high, Some(0.0), None)?;
    // scale = (double(max) - min) / (qmax - qmin).
    let levels = f64::from(qmax) - f64::from(qmin);
    let wide_low = cast(c, low, DType::F64);
    let wide_high = cast(c, high, DType::F64);
    let width = c.binary(BinaryOp::Sub, wide_high, wide_low, DType::F64)?;
    let scale = c.with_scalar(width, BinaryOp::Div, Scalar::Float(levels), DType::F64)?;
    // A scale whose f32 reciprocal is infinite (0 included) becomes 0.1.
    let narrow = cast(c, scale, DType::F32);
    let reciprocal = unary(c, UnaryOp::Reciprocal, narrow, DType::F32)?;
    let infinite = compare(c, reciprocal, BinaryOp::Eq, f64::INFINITY)?;
    let scale = fill(c, scale, infinite, 0.1)?;
    // A scale below the threshold becomes it, the range stretched to match.
    let threshold = 6.1e-5f32;
    let small = compare(c, scale, BinaryOp::Lt, threshold.into())?;
    let original = cast(c, scale, DType::F32);
    let scale = fill(c, scale, small, threshold.into())?;
    let stretched_end = f64::from(threshold * levels as f32);
    let amplifier = c.elementwise(
        Func::ScalarFirst {
            op: BinaryOp::Div,
            scalar: Scalar::Float(threshold.into()),
            alpha: None,
        },
        vec![original],
        DType::F32,
    )?;
    let low_is_zero = compare(c, low, BinaryOp::Eq, 0.0)?;
    let high_is_zero = compare(c, high, BinaryOp::Eq, 0.0)?;
    let mut ends = Vec::with_capacity(2);
    for (end, (if_high_zero, if_low_zero)) in
        [(low, (-stretched_end, 0.0)), (high, (0.0, stretched_end))]
    {
        let amplified = c.binary(BinaryOp::Mul, end, amplifier, DType::F32)?;
        let amplified = fill(c, amplified, high_is_zero, if_high_zero)?;
        let amplified = fill(c, amplified, low_is_zero, if_low_zero)?;
        let end = c.elementwise(Func::Where, vec![small, amplified, end], DType::F32)?;
        ends.push(cast(c, end, DType::F64));
    }
    // The zero point from whichever end errs less, in f64.
    let mut candidates = Vec::with_capacity(2);
    let mut errors = Vec::with_capacity(2);
    for (end, bound) in ends.into_iter().zip([qmin, qmax]) {
        let bound = f64::from(bound);
        let descaled = c.binary(BinaryOp::Div, end, scale, DType::F64)?;
        let from_end = |c: &mut Call<'_, '_, '_>, x, value: f64| {
            let func = Func::ScalarFirst {
                op: BinaryOp::Sub,
                scalar: Scalar::Float(value),
                alpha: None,
            };
            c.elementwise(func, vec![x], DType::F64)
        };
        candidates.push(from_end(c, descaled, bound)?);
        let magnitude = unary(c, UnaryOp::Abs, descaled, DType::F64)?;
        errors.push(from_end(c, magnitude, bound.abs())?);
    }
    let from_low = c.binary(BinaryOp::Lt, errors[0], errors[1], DType::Bool)?;
    let initial = c.elementwise(
        Func::Where,
        vec![from_low, candidates[0], candidates[1]],
        DType::F64,
    )?;
    // Nudged into range, else rounded in f32; converted through int32.
    let below = compare(c, initial, BinaryOp::Lt, qmin.into())?;
    let above = compare(c, initial, BinaryOp::Gt, qmax.into())?;
    let narrow = cast(c, initial, DType::F32);
    let rounded = unary(c, UnaryOp::Round, narrow, DType::F32)?;
    let nudged = fill(c, rounded, above, qmax.into())?;
    let nudged = fill(c, nudged, below, qmin.into())?;
    let zero_point = cast(c, nudged, DType::I32);
    let zero_point = cast(c, zero_point, DType::I64);
    for (name, value) in [("scale_out", scale), ("zero_point_out", zero_point)] {
        let declared = c.declared_type_of(name)?.shape;
        let have = c.ty(value).shape.clone();
        let value = if per_token || declared == have {
            value
        } else {
            if declared.iter().any(|dim| *dim != Dim::Fixed(1)) {
                return Err(c.bad(name, "must hold one element"));
            }
            view(c, value, declared)?
        };
        c.emit_copy(value, name)?;
    }
    Ok(())
}
