//! Matrix products of every shape the GEMM tiles split differently: rows
//! and columns around each tile's height and width (the microkernels' 8, 6
//! and 4 rows, 32, 16 and 8 columns; Cranelift's 4 rows, two, one and no
//! vectors), with a bias along the columns and a clamp, which the
//! microkernels apply themselves. Each product must give the same bits with
//! the microkernels as with Cranelift's kernels alone (both sum each element
//! in the order of K with fused multiply-adds), and be close to a reference
//! computed in f64.

mod common;

use common::{elements, le_bytes, run_jit, run_jit_with};
use ptec_codegen::CodegenOptions;

/// A deterministic value in [-1, 1) for element `index` of operand `seed`.
fn value(seed: u64, index: usize) -> f32 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index as u64 + 1);
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 29;
    (x % 2001) as f32 / 1000.0 - 1.0
}

/// `clamp(a @ b + bias, -0.5, 0.75)` for `a` of `[m, k]`, `b` of `[k, n]`,
/// with the microkernels (the default) and without.
fn products(m: usize, n: usize, k: usize) -> [Vec<f32>; 2] {
    let (a_bytes, b_bytes, bias_bytes, out_bytes) = (4 * m * k, 4 * k * n, 4 * n, 4 * m * n);
    let b_at = a_bytes.next_multiple_of(64);
    let bias_at = (b_at + b_bytes).next_multiple_of(64);
    let out_at = (bias_at + bias_bytes).next_multiple_of(64);
    let arena = out_at + out_bytes;
    let text = format!(
        "graph g (arena {arena} bytes) {{
  %0: f32[{m},{k}] @0 = input 0
  %1: f32[{k},{n}] @{b_at} = input 1
  %2: f32[{n}] @{bias_at} = input 2
  %3: f32[{m},{n}] @{out_at} = addmm(%2, %0, %1) beta=1 alpha=1 clamp_min=-0.5 clamp_max=0.75
  return %3
}}"
    );
    let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let operand = |seed: u64, count: usize| -> Vec<u8> {
        let values: Vec<f32> = (0..count).map(|index| value(seed, index)).collect();
        le_bytes(&values, f32::to_le_bytes)
    };
    let (a, b, bias) = (operand(1, m * k), operand(2, k * n), operand(3, n));
    let inputs: [&[u8]; 3] = [&a, &b, &bias];
    let without = CodegenOptions {
        microkernels: false,
        ..CodegenOptions::default()
    };
    [
        run_jit(&graph, &inputs),
        run_jit_with(&graph, &without, &inputs),
    ]
    .map(|outputs| elements(&outputs.expect("the graph runs")[0], f32::from_le_bytes))
}

#[test]
fn every_tile_shape_gives_the_same_bits_and_the_right_products() {
    for m in [1, 3, 4, 5, 6, 7, 8, 9, 12, 13, 17, 25] {
        for n in [
            1, 3, 4, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 40, 47, 48, 56, 72,
        ] {
            for k in [1, 5, 16] {
                let [tiled, plain] = products(m, n, k);
                for (index, (&got, &want)) in tiled.iter().zip(&plain).enumerate() {
                    assert_eq!(
                        got.to_bits(),
                        want.to_bits(),
                        "[{m}, {k}] @ [{k}, {n}], element {index}: {got} with the microkernels, \
                         {want} without"
                    );
                    let (row, column) = (index / n, index % n);
                    let sum: f64 = (0..k)
                        .map(|i| {
                            f64::from(value(1, row * k + i)) * f64::from(value(2, i * n + column))
                        })
                        .sum::<f64>()
                        + f64::from(value(3, column));
                    let reference = sum.clamp(-0.5, 0.75);
                    assert!(
                        (f64::from(got) - reference).abs() < 1e-5,
                        "[{m}, {k}] @ [{k}, {n}], element {index}: {got}, not {reference}"
                    );
                }
            }
        }
    }
}
