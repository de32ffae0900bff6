//! ptec's own single-precision `erf` and `tanh`, built on its exponential
//! (`exp.rs`) and emitted inline for one f32 or four f32 lanes like it, so
//! that GELU (`x/2 * (1 + erf(x / sqrt 2))`, or its tanh form) stays
//! vectorised instead of calling the C library per element; both forms run
//! the same instructions, so a map's vector body and its scalar tail agree
//! bit for bit, and the JIT and AOT agree on every target.
//!
//! `erf(x)` is `x * P(x^2)` for `|x| <= 1` and `1 - exp(-x^2) R(1/|x|) / |x|`
//! (with `x`'s sign) above, `|x|` taken as at most 4, where the result
//! rounds to 1; `tanh(x)` is `x * Q(x^2)` for `|x| < 0.625` and
//! `1 - 2 / (exp(2|x|) + 1)` (with `x`'s sign) above. `P`, `R` and `Q` are
//! least-squares fits on Chebyshev points, relative error under 1.5e-7 with
//! their coefficients rounded to f32, so the results are within a few ulp
//! (`codegen/tests/exp.rs` sweeps them against f64's). Signed zeros keep
//! their sign, infinities give ±1, NaN stays NaN. The activation
//! microkernel (`microkernel::activation`) computes GELU's erf and tanh with
//! these constants, step for step, 8 or 16 lanes at a time.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Value};

use super::exp::{bits, exp_f32, splat_int};
use super::expr::{at_most, fconst, select_lanes};
use crate::emit::{Emitter, bitcast_flags};

/// `erf(x) / x = P(x^2)` on `[0, 1]`, lowest power first.
pub(crate) const ERF_SMALL: [f32; 7] = [
    std::f32::consts::FRAC_2_SQRT_PI,
    -0.376_126_3,
    0.112_836_12,
    -0.026_854_81,
    0.005_190_053_5,
    -0.000_802_435_4,
    7.898_21e-5,
];

/// `erfc(x) exp(x^2) x = R(1 / x)` on `[1, 4]`, lowest power first.
pub(crate) const ERFC_SCALED: [f32; 10] = [
    0.564_249_3,
    -0.001_721_411_7,
    -0.260_791_54,
    -0.149_484_62,
    1.075_584,
    -1.785_669,
    1.683_996,
    -0.976_212,
    0.325_792_43,
    -0.048_159_648,
];

/// Where `erf` takes its second form, and the largest `|x|` it computes.
pub(crate) const ERF_SPLIT: f64 = 1.0;
pub(crate) const ERF_ONE: f64 = 4.0;

/// `tanh(x) / x = Q(x^2)` on `[0, 0.625]`, lowest power first.
pub(crate) const TANH_SMALL: [f32; 6] = [
    1.0,
    -0.333_332_75,
    0.133_313_66,
    -0.053_735_863,
    0.020_630_308,
    -0.005_697_522_3,
];

/// Where `tanh` takes its second form.
pub(crate) const TANH_SPLIT: f64 = 0.625;

/// `coefficients` (lowest power first) at `x`, by Horner's rule.
fn polynomial(e: &mut Emitter<'_, '_, '_>, coefficients: &[f32], x: Value) -> Value {
    let ty = e.b.func.dfg.value_type(x);
    let (&highest, rest) = coefficients
        .split_last()
        .expect("a polynomial has a coefficient");
    let mut sum = fconst(e, ty, f64::from(highest));
    for &coefficient in rest.iter().rev() {
        let product = e.b.ins().fmul(sum, x);
        let c = fconst(e, ty, f64::from(coefficient));
        sum = e.b.ins().fadd(product, c);
    }
    sum
}

/// `magnitude` (not negative) with the sign of `x`, through the bits
/// (Cranelift has no vector `fcopysign` on x86-64).
fn with_sign_of(e: &mut Emitter<'_, '_, '_>, magnitude: Value, x: Value) -> Value {
    let ty = e.b.func.dfg.value_type(x);
    let int_ty = ty.as_int();
    let sign_bit = splat_int(e, int_ty, i64::from(0x8000_0000u32 as i32));
    let x_bits = bits(e, int_ty, x);
    let sign = e.b.ins().band(x_bits, sign_bit);
    let magnitude = bits(e, int_ty, magnitude);
    let signed = e.b.ins().bor(magnitude, sign);
    e.b.ins().bitcast(ty, bitcast_flags(), signed)
}

/// `x * P(x^2)` (`P` by its coefficients `small`) where `|x|` is below
/// `split` (`below` compares them), and `large(|x|)` with the sign of `x`
/// elsewhere (a NaN, which `below` does not take, among them).
fn by_magnitude(
    e: &mut Emitter<'_, '_, '_>,
    x: Value,
    small: &[f32],
    below: FloatCC,
    split: f64,
    large: impl FnOnce(&mut Emitter<'_, '_, '_>, Value) -> Value,
) -> Value {
    let ty = e.b.func.dfg.value_type(x);
    let magnitude = e.b.ins().fabs(x);
    let square = e.b.ins().fmul(x, x);
    let polynomial = polynomial(e, small, square);
    let small = e.b.ins().fmul(x, polynomial);
    let large = large(e, magnitude);
    let large = with_sign_of(e, large, x);
    let split = fconst(e, ty, split);
    let is_small = e.b.ins().fcmp(below, magnitude, split);
    select_lanes(e, is_small, small, large)
}

/// `erf(x)` of an f32 or an f32x4 value.
pub(crate) fn erf_f32(e: &mut Emitter<'_, '_, '_>, x: Value) -> Value {
    let ty = e.b.func.dfg.value_type(x);
    by_magnitude(
        e,
        x,
        &ERF_SMALL,
        FloatCC::LessThanOrEqual,
        ERF_SPLIT,
        |e, magnitude| {
            // A NaN stays NaN through the bound, the exponential and the sum.
            let one = fconst(e, ty, 1.0);
            let largest = fconst(e, ty, ERF_ONE);
            let a = at_most(e, magnitude, largest);
            let reciprocal = e.b.ins().fdiv(one, a);
            let scaled = polynomial(e, &ERFC_SCALED, reciprocal);
            let scaled = e.b.ins().fmul(scaled, reciprocal);
            let a_square = e.b.ins().fmul(a, a);
            let negated = e.b.ins().fneg(a_square);
            let decay = exp_f32(e, negated);
            let complement = e.b.ins().fmul(decay, scaled);
            e.b.ins().fsub(one, complement)
        },
    )
}

/// `tanh(x)` of an f32 or an f32x4 value.
pub(crate) fn tanh_f32(e: &mut Emitter<'_, '_, '_>, x: Value) -> Value {
    let ty = e.b.func.dfg.value_type(x);
    by_magnitude(
        e,
        x,
        &TANH_SMALL,
        FloatCC::LessThan,
        TANH_SPLIT,
        |e, magnitude| {
            // exp(2|x|) is infinite above 44.5, and 2 / inf is 0: the result
            // is 1.
            let twice = e.b.ins().fadd(magnitude, magnitude);
            let grown = exp_f32(e, twice);
            let one = fconst(e, ty, 1.0);
            let two = fconst(e, ty, 2.0);
            let denominator = e.b.ins().fadd(grown, one);
            let fraction = e.b.ins().fdiv(two, denominator);
            e.b.ins().fsub(one, fraction)
        },
    )
}
