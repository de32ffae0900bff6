//! ptec's own single-precision exponential, emitted inline for one f32 or
//! four f32 lanes, so that kernels which compute `exp` (sigmoid, SiLU,
//! softmax, ELU) stay vectorised instead of calling the C library's `expf`
//! per element. Both forms run the same instructions, so a kernel's vector
//! body and its scalar tail agree bit for bit, as do the JIT and AOT on
//! every target: no fused multiply-add, whose use depends on the CPU.
//!
//! `exp(x) = 2^k * exp(r)`, with `k = round(x / ln 2)` and `r = x - k ln 2`
//! in `[-ln 2 / 2, ln 2 / 2]` (ln 2 split in two, Cody and Waite's
//! reduction, so `r` is exact but for one rounding). `exp(r)` is its Taylor
//! polynomial to `r^7 / 7!` (truncation below 0.1 ulp), and `2^k` is applied
//! as two powers of two, so a result in the subnormal range rounds once.
//! Inputs whose result rounds to 0 (-inf among them: masked attention
//! scores) give 0 by a select and are computed as 0, since arithmetic that
//! underflows costs x86 a microcode assist per instruction. Inputs above 89
//! are computed as 89, whose result is infinite; NaN stays NaN.
//! Every f32 input gives the exact value rounded to f32 or a neighbour of
//! it: over all 2^32 inputs, 99.6% are correctly rounded and the rest 1 ulp
//! off (measured against f64 `exp`; `codegen/tests/exp.rs` checks a
//! sweep).

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::{InstBuilder, Type, Value, types};

use super::expr::{at_most, fconst, select_lanes};
use crate::emit::{Emitter, bitcast_flags};

// The constants are shared with the activation microkernel
// (`microkernel::activation`), which computes the same steps 8 or 16 lanes
// at a time.

/// The least f32 whose `exp` does not round to 0 (below `-150 ln 2`, the
/// exact value is under half the smallest subnormal).
pub(crate) const LOWEST: f32 = -103.972_08;
/// Above it, `exp` overflows to infinity.
pub(crate) const HIGHEST: f32 = 89.0;
pub(crate) const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// Adding it to a float of magnitude under 2^22 rounds it to an integer,
/// which the low bits of the sum then hold (offset by the constant's own).
pub(crate) const ROUNDING_SHIFT: f32 = 12_582_912.0; // 1.5 * 2^23
/// ln 2 in two parts: the first has 9 significant bits, so `k * LN2_HIGH`
/// is exact for every `k` the clamp allows, and `x - k * LN2_HIGH` too.
pub(crate) const LN2_HIGH: f32 = 0.693_359_4;
pub(crate) const LN2_LOW: f32 = -2.121_944_4e-4;
/// The Taylor coefficients `1 / n!` for n = 7 down to 2.
pub(crate) const TAYLOR: [f32; 6] = [
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
];
/// The exponent bias of f32.
pub(crate) const EXPONENT_BIAS: i32 = 127;

/// `exp(x)` of an f32 or an f32x4 value.
pub(crate) fn exp_f32(e: &mut Emitter<'_, '_, '_>, x: Value) -> Value {
    let ty = e.b.func.dfg.value_type(x);
    debug_assert_eq!(ty.lane_type(), types::F32);
    let int_ty = ty.as_int();
    let lowest = fconst(e, ty, f64::from(LOWEST));
    let highest = fconst(e, ty, f64::from(HIGHEST));
    let zero = fconst(e, ty, 0.0);
    let vanishes = e.b.ins().fcmp(FloatCC::LessThan, x, lowest);
    let x = select_lanes(e, vanishes, zero, x);
    let x = at_most(e, x, highest);

    let log2e = fconst(e, ty, f64::from(LOG2_E));
    let shift = fconst(e, ty, f64::from(ROUNDING_SHIFT));
    let scaled = e.b.ins().fmul(x, log2e);
    let shifted = e.b.ins().fadd(scaled, shift);
    let k_float = e.b.ins().fsub(shifted, shift);
    let shifted_bits = bits(e, int_ty, shifted);
    let shift_bits = splat_int(e, int_ty, i64::from(ROUNDING_SHIFT.to_bits()));
    let k = e.b.ins().isub(shifted_bits, shift_bits);

    let ln2_high = fconst(e, ty, f64::from(LN2_HIGH));
    let ln2_low = fconst(e, ty, f64::from(LN2_LOW));
    let high = e.b.ins().fmul(k_float, ln2_high);
    let r = e.b.ins().fsub(x, high);
    let low = e.b.ins().fmul(k_float, ln2_low);
    let r = e.b.ins().fsub(r, low);

    let mut q = fconst(e, ty, f64::from(TAYLOR[0]));
    for &coefficient in &TAYLOR[1..] {
        let c = fconst(e, ty, f64::from(coefficient));
        let product = e.b.ins().fmul(q, r);
        q = e.b.ins().fadd(product, c);
    }
    let r2 = e.b.ins().fmul(r, r);
    let tail = e.b.ins().fmul(q, r2);
    let tail = e.b.ins().fadd(tail, r);
    let one = fconst(e, ty, 1.0);
    let p = e.b.ins().fadd(tail, one);

    // 2^k as 2^(k >> 1) * 2^(k - (k >> 1)): both normal for k in
    // [-150, 128], and the second product rounds once.
    let half_k = e.b.ins().sshr_imm_u(k, 1);
    let rest_k = e.b.ins().isub(k, half_k);
    let first = power_of_two(e, ty, half_k);
    let second = power_of_two(e, ty, rest_k);
    let p = e.b.ins().fmul(p, first);
    let result = e.b.ins().fmul(p, second);
    select_lanes(e, vanishes, zero, result)
}

/// `2^k` as a float of type `ty`, for `k` in the normal exponent range.
fn power_of_two(e: &mut Emitter<'_, '_, '_>, ty: Type, k: Value) -> Value {
    let int_ty = ty.as_int();
    let bias = splat_int(e, int_ty, i64::from(EXPONENT_BIAS));
    let biased = e.b.ins().iadd(k, bias);
    let exponent = e.b.ins().ishl_imm_u(biased, 23);
    e.b.ins().bitcast(ty, bitcast_flags(), exponent)
}

/// The bits of float `x` as the integer type of its width.
pub(super) fn bits(e: &mut Emitter<'_, '_, '_>, int_ty: Type, x: Value) -> Value {
    e.b.ins().bitcast(int_ty, bitcast_flags(), x)
}

pub(super) fn splat_int(e: &mut Emitter<'_, '_, '_>, int_ty: Type, value: i64) -> Value {
    let lane = e.b.ins().iconst(int_ty.lane_type(), value);
    if int_ty.is_vector() {
        e.b.ins().splat(int_ty, lane)
    } else {
        lane
    }
}
