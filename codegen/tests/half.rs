//! Conversions between half-precision floats (f16, bf16) and f32 in
//! JIT-compiled code, against the `half` crate: every f16 and bf16 bit
//! pattern to f32, and f32 values around every f16 (exact, halfway between
//! neighbours, one f32 step either side of halfway), at the subnormal,
//! overflow and special boundaries, and at pseudo-random bit patterns, to
//! f16 and bf16. NaNs become the quiet NaNs PyTorch's `c10` writes.

mod common;

use common::{elements, le_bytes, run_jit};
use half::{bf16, f16};
use ptec_ir::ops::layout::Copy;
use ptec_ir::{DType, Dim, Graph, Op, TensorType, ValueData, ValueId, ValueKind};
use ptec_runtime::HostTensor;

/// A graph of four copies that convert: f16 and bf16 inputs to f32, and one
/// f32 input to f16 and to bf16 (inputs and outputs in that order).
fn conversions(patterns: usize, samples: usize) -> Graph<'static> {
    let mut graph = Graph::new("conversions");
    let mut offset = 0;
    let mut value = |graph: &mut Graph<'static>, dtype: DType, count: usize, kind| {
        let ty = TensorType {
            dtype,
            shape: vec![Dim::Fixed(count as u64)],
            dim_order: vec![0],
        };
        let id = graph.add_value(ValueData {
            ty,
            kind,
            offset: Some(offset),
        });
        offset += (count * dtype.size()) as u64;
        id
    };
    let halves = value(&mut graph, DType::F16, patterns, ValueKind::Input(0));
    let brains = value(&mut graph, DType::BF16, patterns, ValueKind::Input(1));
    let floats = value(&mut graph, DType::F32, samples, ValueKind::Input(2));
    let mut outputs: Vec<ValueId> = Vec::new();
    for (input, dtype, count) in [
        (halves, DType::F32, patterns),
        (brains, DType::F32, patterns),
        (floats, DType::F16, samples),
        (floats, DType::BF16, samples),
    ] {
        let output = value(&mut graph, dtype, count, ValueKind::Computed);
        graph.push_node(Op::Copy(Copy { input }), vec![output]);
        outputs.push(output);
    }
    graph.set_outputs(outputs);
    graph.set_arena_size(offset);
    graph
}

/// Runs the conversions on every 16-bit pattern and on `samples`.
fn convert(samples: &[f32]) -> Vec<HostTensor> {
    let graph = conversions(1 << 16, samples.len());
    let patterns: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
    let floats = le_bytes(samples, f32::to_le_bytes);
    run_jit(&graph, &[&patterns, &patterns, &floats]).expect("runs")
}

/// f32 values that probe rounding to f16 and bf16.
fn samples() -> Vec<f32> {
    let mut samples = vec![
        0.0,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001), // a signalling NaN
        f32::from_bits(0xffc1_2345),
        f32::MAX,
        f32::MIN,
        f32::MIN_POSITIVE,
        f32::from_bits(1), // the smallest f32 subnormal
        f32::from_bits(0x807f_ffff),
        65504.0,
        65519.996,
        65520.0,
        65536.0,
        2f32.powi(-24),
        2f32.powi(-25),
        2f32.powi(-25) * 1.000_001,
        2f32.powi(-26),
        2f32.powi(-14),
        2f32.powi(-14) - 2f32.powi(-25),
    ];
    // Around every finite f16: the value, halfway to the next one, and one
    // f32 step either side of halfway; both signs.
    for bits in 0..0x7c00u16 {
        let low = f16::from_bits(bits).to_f32();
        let high = f16::from_bits(bits + 1).to_f32();
        let middle = low + (high - low) / 2.0;
        for x in [
            low,
            middle,
            f32::from_bits(middle.to_bits() - 1),
            f32::from_bits(middle.to_bits() + 1),
        ] {
            samples.extend([x, -x]);
        }
    }
    // Halfway between bf16 neighbours, where the kept part is even or odd.
    for bits in (0..0x7f80u32).step_by(97) {
        let middle = f32::from_bits((bits << 16) | 0x8000);
        samples.extend([middle, -middle]);
    }
    // Pseudo-random bit patterns (xorshift).
    let mut state = 0x2545_f491_u32;
    for _ in 0..200_000 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        samples.push(f32::from_bits(state));
    }
    samples
}

#[test]
fn half_conversions_match_the_half_crate() {
    let samples = samples();
    let outputs = convert(&samples);
    let [from_f16, from_bf16, to_f16, to_bf16] = &outputs[..] else {
        panic!("four outputs");
    };
    for (bits, got) in (0..=u16::MAX).zip(elements(from_f16, f32::from_le_bytes)) {
        let wanted = f16::from_bits(bits).to_f32();
        if wanted.is_nan() {
            // NaNs keep their sign and payload.
            let sign = u32::from(bits & 0x8000) << 16;
            let payload = u32::from(bits & 0x3ff) << 13;
            assert_eq!(
                got.to_bits(),
                sign | 0x7f80_0000 | payload,
                "f16 {bits:#06x}"
            );
        } else {
            assert_eq!(got.to_bits(), wanted.to_bits(), "f16 {bits:#06x}");
        }
    }
    for (bits, got) in (0..=u16::MAX).zip(elements(from_bf16, f32::from_le_bytes)) {
        let wanted = bf16::from_bits(bits).to_f32();
        if wanted.is_nan() {
            // The top half of an f32, signalling NaNs too (`half` quiets
            // them).
            assert_eq!(got.to_bits(), u32::from(bits) << 16, "bf16 {bits:#06x}");
        } else {
            assert_eq!(got.to_bits(), wanted.to_bits(), "bf16 {bits:#06x}");
        }
    }
    for ((&x, got_f16), got_bf16) in samples
        .iter()
        .zip(elements(to_f16, u16::from_le_bytes))
        .zip(elements(to_bf16, u16::from_le_bytes))
    {
        let (wanted_f16, wanted_bf16) = if x.is_nan() {
            let sign = (x.to_bits() >> 16) as u16 & 0x8000;
            (sign | 0x7e00, 0x7fc0)
        } else {
            (f16::from_f32(x).to_bits(), bf16::from_f32(x).to_bits())
        };
        assert_eq!(got_f16, wanted_f16, "{x:e} ({:#010x}) to f16", x.to_bits());
        assert_eq!(
            got_bf16,
            wanted_bf16,
            "{x:e} ({:#010x}) to bf16",
            x.to_bits()
        );
    }
}
