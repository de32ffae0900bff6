//! Random operators: `rand`, `randn` and `native_dropout`, as compositions
//! of integer and float elementwise ops over a counter.
//!
//! The generator is counter-based and stateless: element `i` of a call site
//! is splitmix64's output for the state `seed + (i + 1) * 0x9E3779B97F4A7C15`
//! (wrapping), where `seed` is the FNV-1a hash of where the call is (its
//! instruction and operator). So a program draws the same numbers at every
//! run, different call sites draw different ones, and the numbers do not
//! depend on the back end or on how the work is split. A uniform float of a
//! type with `d` significand digits is the top `d` bits of that output times
//! `2^-d` (in `[0, 1)`, exact in the type, as PyTorch's `uniform_real`
//! draws); a normal one is Box-Muller's `sqrt(-2 ln(1 - u1)) cos(2 pi u2)` of
//! two uniform f32 (f64 for f64) streams of seeds `seed` and `!seed`.

use ptec_ir::ops::creation::{Arange, Full};
use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::layout::{Copy, Reshape};
use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use crate::call::Call;
use crate::error::ImportError;

const EMITS: &[OpKind] = &[
    OpKind::Arange,
    OpKind::Elementwise,
    OpKind::Copy,
    OpKind::Reshape,
];

pub(super) const OPERATORS: &[Operator] = &[
    (
        "aten::rand.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        rand,
        EMITS,
    ),
    (
        "aten::randn.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)",
        randn,
        EMITS,
    ),
    (
        "aten::native_dropout.out(Tensor input, float p, bool? train, *, Tensor(a!) out0, Tensor(b!) out1) -> (Tensor(a!), Tensor(b!))",
        native_dropout,
        &[
            OpKind::Arange,
            OpKind::Elementwise,
            OpKind::Copy,
            OpKind::Reshape,
            OpKind::Full,
        ],
    ),
];

/// splitmix64's increment (the golden ratio's fraction).
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// The seed of the call being imported: the FNV-1a hash of its location.
fn call_site_seed(c: &Call<'_, '_, '_>) -> u64 {
    c.importer
        .at
        .to_string()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
}

/// A float element type's significand digits (the bits of a uniform draw).
fn digits(dtype: DType) -> Option<u32> {
    match dtype {
        DType::F64 => Some(53),
        DType::F32 => Some(24),
        DType::F16 => Some(11),
        DType::BF16 => Some(8),
        DType::Bool | DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => None,
    }
}

/// `z ^ (z >>> shift)` of an i64 holding 64 bits (the shift logical).
fn xor_shift(c: &mut Call<'_, '_, '_>, z: ValueId, shift: u32) -> Result<ValueId, ImportError> {
    let shifted = c.with_scalar(
        z,
        BinaryOp::RightShift,
        Scalar::Int(shift.into()),
        DType::I64,
    )?;
    let mask = Scalar::Int(((1u64 << (64 - shift)) - 1) as i64);
    let logical = c.with_scalar(shifted, BinaryOp::BitwiseAnd, mask, DType::I64)?;
    c.binary(BinaryOp::BitwiseXor, z, logical, DType::I64)
}

/// `count` uniform numbers in `[0, 1)` of `dtype` from the stream `seed`,
/// as a 1-D value.
fn uniform(
    c: &mut Call<'_, '_, '_>,
    seed: u64,
    count: u64,
    dtype: DType,
    digits: u32,
) -> Result<ValueId, ImportError> {
    let counter = c.temporary_of(
        Op::Arange(Arange {
            start: Term::Const(Scalar::Int(1)),
            step: Scalar::Int(1),
        }),
        TensorType::contiguous(DType::I64, vec![Dim::Fixed(count)]),
    );
    let wrapping = |value: u64| Scalar::Int(value as i64);
    let mut z = c.with_scalar(counter, BinaryOp::Mul, wrapping(GOLDEN), DType::I64)?;
    z = c.with_scalar(z, BinaryOp::Add, wrapping(seed), DType::I64)?;
    for (shift, multiplier) in [(30, 0xbf58_476d_1ce4_e5b9), (27, 0x94d0_49bb_1331_11eb)] {
        z = xor_shift(c, z, shift)?;
        z = c.with_scalar(z, BinaryOp::Mul, wrapping(multiplier), DType::I64)?;
    }
    z = xor_shift(c, z, 31)?;
    let top = c.with_scalar(
        z,
        BinaryOp::RightShift,
        Scalar::Int((64 - digits).into()),
        DType::I64,
    )?;
    let mask = Scalar::Int((1i64 << digits) - 1);
    let bits = c.with_scalar(top, BinaryOp::BitwiseAnd, mask, DType::I64)?;
    let float = c.temporary_of(
        Op::Copy(Copy { input: bits }),
        TensorType::contiguous(dtype, vec![Dim::Fixed(count)]),
    );
    let unit = Scalar::Float((-f64::from(digits)).exp2());
    c.with_scalar(float, BinaryOp::Mul, unit, dtype)
}

/// The float element type and element count of the tensor argument `out`,
/// whose declared shape `size` must be.
fn drawn(c: &Call<'_, '_, '_>) -> Result<(DType, u32, u64), ImportError> {
    c.check_size("size", "out")?;
    let ty = c.declared_type_of("out")?;
    let Some(digits) = digits(ty.dtype) else {
        return Err(c.bad(
            "out",
            format!("{ty}: random numbers are drawn into float tensors"),
        ));
    };
    let Some(shape) = ty.fixed_shape() else {
        return Err(c.bad(
            "out",
            format!("{ty}: ptec draws into tensors of fixed shape"),
        ));
    };
    Ok((ty.dtype, digits, shape.iter().product()))
}

fn rand(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (dtype, digits, count) = drawn(c)?;
    let seed = call_site_seed(c);
    let numbers = uniform(c, seed, count, dtype, digits)?;
    c.emit(Op::Reshape(Reshape { input: numbers }), &["out"])
}

fn randn(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let (dtype, _, count) = drawn(c)?;
    let compute = if dtype == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let digits = digits(compute).unwrap_or(24);
    let seed = call_site_seed(c);
    let first = uniform(c, seed, count, compute, digits)?;
    let second = uniform(c, !seed, count, compute, digits)?;
    let one_minus = Func::ScalarFirst {
        op: BinaryOp::Sub,
        scalar: Scalar::Float(1.0),
        alpha: None,
    };
    let positive = c.elementwise(one_minus, vec![first], compute)?;
    let log = c.elementwise(Func::Unary(UnaryOp::Log), vec![positive], compute)?;
    let scaled = c.with_scalar(log, BinaryOp::Mul, Scalar::Float(-2.0), compute)?;
    let radius = c.elementwise(Func::Unary(UnaryOp::Sqrt), vec![scaled], compute)?;
    let tau = Scalar::Float(std::f64::consts::TAU);
    let angle = c.with_scalar(second, BinaryOp::Mul, tau, compute)?;
    let cos = c.elementwise(Func::Unary(UnaryOp::Cos), vec![angle], compute)?;
    let normal = c.binary(BinaryOp::Mul, radius, cos, dtype)?;
    c.emit(Op::Reshape(Reshape { input: normal }), &["out"])
}

/// `native_dropout(input, p, train)`: in training (`train` true or absent,
/// as in PyTorch) the mask keeps each element with probability `1 - p`
/// (a uniform f32 draw below `1 - p`) and the output is
/// `input * mask * (1 / (1 - p))` (0 when `p` is 1); otherwise the output
/// is the input and the mask all true.
fn native_dropout(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let p = c.double("p")?;
    if !(0.0..=1.0).contains(&p) {
        return Err(c.bad(
            "p",
            format!("{p}: a dropout probability is between 0 and 1"),
        ));
    }
    let input = c.tensor("input")?;
    let dtype = c.ty(input).dtype;
    if digits(dtype).is_none() {
        return Err(c.bad(
            "input",
            format!("{dtype:?} tensors: dropout is defined for float types"),
        ));
    }
    let training = c.optional_bool("train")?.unwrap_or(true);
    if !training {
        c.emit_copy(input, "out0")?;
        return c.emit(
            Op::Full(Full {
                value: Term::Const(Scalar::Bool(true)),
            }),
            &["out1"],
        );
    }
    let shape = c.fixed_sizes("input", input)?;
    let seed = call_site_seed(c);
    let draws = uniform(c, seed, shape.iter().product(), DType::F32, 24)?;
    let shaped = c.temporary_of(
        Op::Reshape(Reshape { input: draws }),
        TensorType::contiguous(DType::F32, shape.into_iter().map(Dim::Fixed).collect()),
    );
    let keep = 1.0 - p;
    let lt = Func::BinaryScalar {
        op: BinaryOp::Lt,
        scalar: Scalar::Float(keep),
    };
    let mask = c.temporary(Elementwise::op(lt, vec![shaped]), DType::Bool)?;
    c.emit_copy(mask, "out1")?;
    let kept = c.binary(BinaryOp::Mul, input, mask, dtype)?;
    let scale = if keep == 0.0 { 0.0 } else { 1.0 / keep };
    let scaled = Func::BinaryScalar {
        op: BinaryOp::Mul,
        scalar: Scalar::Float(scale),
    };
    c.emit(Elementwise::op(scaled, vec![kept]), &["out0"])
}
