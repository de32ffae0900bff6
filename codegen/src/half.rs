//! Half-precision floats (IEEE binary16 and bfloat16) in Cranelift IR: their
//! 16-bit patterns to f32 and back, branch-free (integer arithmetic and
//! selects), with the results of PyTorch's `c10::Half` and `c10::BFloat16`.
//! Cranelift's x64 backend has no `fpromote`/`fdemote` for `F16`, and bit
//! manipulation needs no CPU extension (F16C) and no runtime library, so the
//! same code runs on every target.
//!
//! f16 and bf16 to f32 is exact. f32 to f16 and to bf16 rounds to nearest,
//! ties to even; what is too large for f16 becomes infinity; NaN stays NaN
//! (the quiet NaN `0x7e00` with the input's sign for f16, `0x7fc0` for bf16,
//! as `c10` writes them).

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::FunctionBuilder;

/// Which half-precision format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Half {
    /// IEEE binary16: 1 sign, 5 exponent and 10 mantissa bits.
    F16,
    /// bfloat16: the top 16 bits of an f32.
    BF16,
}

fn to_f32_bits(b: &mut FunctionBuilder<'_>, bits: Value) -> Value {
    b.ins().bitcast(types::F32, MemFlagsData::new(), bits)
}

fn from_f32_bits(b: &mut FunctionBuilder<'_>, value: Value) -> Value {
    b.ins().bitcast(types::I32, MemFlagsData::new(), value)
}

/// The f32 value of the 16-bit pattern `bits` (an `i16`).
pub(crate) fn to_f32(b: &mut FunctionBuilder<'_>, half: Half, bits: Value) -> Value {
    let wide = b.ins().uextend(types::I32, bits);
    match half {
        Half::BF16 => {
            let shifted = b.ins().ishl_imm_u(wide, 16);
            to_f32_bits(b, shifted)
        }
        Half::F16 => {
            // Exponent and mantissa moved to f32's places, then scaled by
            // 2^(127-15): exact for normals and subnormals alike (a product
            // with a power of two), since every f16 is a normal f32.
            let magnitude = b.ins().band_imm_u(wide, 0x7fff);
            let moved = b.ins().ishl_imm_u(magnitude, 13);
            let moved_float = to_f32_bits(b, moved);
            let scale = b.ins().f32const(2f32.powi(112));
            let finite = b.ins().fmul(moved_float, scale);
            let finite = from_f32_bits(b, finite);
            // Infinity and NaN: all exponent bits set, the mantissa (a NaN's
            // payload) kept.
            let special = b.ins().bor_imm_u(moved, 0x7f80_0000);
            let is_special =
                b.ins()
                    .icmp_imm_u(IntCC::UnsignedGreaterThanOrEqual, magnitude, 0x7c00);
            let unsigned = b.ins().select(is_special, special, finite);
            let sign = b.ins().band_imm_u(wide, 0x8000);
            let sign = b.ins().ishl_imm_u(sign, 16);
            let result = b.ins().bor(unsigned, sign);
            to_f32_bits(b, result)
        }
    }
}

/// The 16-bit pattern (an `i16`) nearest to the f32 `value`.
pub(crate) fn from_f32(b: &mut FunctionBuilder<'_>, half: Half, value: Value) -> Value {
    let bits = from_f32_bits(b, value);
    let result = match half {
        Half::BF16 => {
            // Adding 0x7fff plus the lowest kept bit carries into the kept
            // bits exactly when the dropped ones are above half, or half
            // with the kept part odd.
            let kept = b.ins().ushr_imm_u(bits, 16);
            let odd = b.ins().band_imm_u(kept, 1);
            let bias = b.ins().iadd_imm_u(odd, 0x7fff);
            let rounded = b.ins().iadd(bits, bias);
            let rounded = b.ins().ushr_imm_u(rounded, 16);
            let nan = b.ins().iconst(types::I32, 0x7fc0);
            let is_nan = b.ins().fcmp(FloatCC::Unordered, value, value);
            b.ins().select(is_nan, nan, rounded)
        }
        Half::F16 => {
            let magnitude = b.ins().band_imm_u(bits, 0x7fff_ffff);
            // Below 2^-14 the result is subnormal (or zero): adding 0.5 to
            // the magnitude makes the FPU round it, ties to even, at the
            // place of f16's smallest subnormal (2^-24), which then sits in
            // the low mantissa bits.
            let magnitude_float = to_f32_bits(b, magnitude);
            let half_float = b.ins().f32const(0.5);
            let small = b.ins().fadd(magnitude_float, half_float);
            let small = from_f32_bits(b, small);
            let small = b.ins().iadd_imm_s(small, -0x3f00_0000);
            // Normal results: rebias the exponent and round the 13 dropped
            // mantissa bits to nearest even; a carry moves into the exponent,
            // up to infinity (0x7c00) for what rounds beyond 65504.
            let odd = b.ins().ushr_imm_u(magnitude, 13);
            let odd = b.ins().band_imm_u(odd, 1);
            let normal = b.ins().iadd_imm_s(magnitude, ((15 - 127) << 23) + 0xfff);
            let normal = b.ins().iadd(normal, odd);
            let normal = b.ins().ushr_imm_u(normal, 13);
            let is_small = b
                .ins()
                .icmp_imm_u(IntCC::UnsignedLessThan, magnitude, 113 << 23);
            let finite = b.ins().select(is_small, small, normal);
            // From 2^16 on (infinity included) the result is infinity; NaN
            // becomes the quiet NaN.
            let infinity = b.ins().iconst(types::I32, 0x7c00);
            let nan = b.ins().iconst(types::I32, 0x7e00);
            let is_nan = b
                .ins()
                .icmp_imm_u(IntCC::UnsignedGreaterThan, magnitude, 0x7f80_0000);
            let special = b.ins().select(is_nan, nan, infinity);
            let is_large = b.ins().icmp_imm_u(
                IntCC::UnsignedGreaterThanOrEqual,
                magnitude,
                (127 + 16) << 23,
            );
            let unsigned = b.ins().select(is_large, special, finite);
            let sign = b.ins().ushr_imm_u(bits, 16);
            let sign = b.ins().band_imm_u(sign, 0x8000);
            b.ins().bor(unsigned, sign)
        }
    };
    b.ins().ireduce(types::I16, result)
}
