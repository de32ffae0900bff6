//! The CPU's own f32 exponential (`exp`, and through it sigmoid, SiLU and
//! softmax): within 1 ulp of the exact value on a sweep of f32 with a
//! prime stride (every exponent, both signs, subnormals, the edges of
//! overflow and underflow), NaN for NaN, and the same bits from a map's
//! four-lane loop and its scalar tail; erf and tanh (built on it) within 2
//! ulp and alike in the loop and the tail; softmax's rows and columns alike,
//! and a safe softmax's rows of -inf zeros.

mod common;

use common::{elements, le_bytes, run_jit};

/// `exp` of each of `inputs`, by the JIT.
fn jit_exp(inputs: &[f32]) -> Vec<f32> {
    jit_unary("exp", inputs)
}

/// The unary op `name` of each of `inputs`, by the JIT.
fn jit_unary(name: &str, inputs: &[f32]) -> Vec<f32> {
    let count = inputs.len();
    let text = format!(
        "graph g (arena {} bytes) {{\n  %0: f32[{count}] @0 = input 0\n  %1: f32[{count}] @{} = {name}(%0)\n  return %1\n}}",
        8 * count + 64,
        (4 * count).next_multiple_of(64),
    );
    let graph = ptec_ir::parse(&text).expect("the graph parses");
    let bytes = le_bytes(inputs, f32::to_le_bytes);
    let outputs = run_jit(&graph, &[&bytes]).unwrap_or_else(|error| panic!("{name}: {error}"));
    elements(&outputs[0], f32::from_le_bytes)
}

/// How many f32 steps `got` is from `exact`, rounded to f32 first (both of
/// one sign, where bit patterns order as the magnitudes do).
fn ulps(got: f32, exact: f64) -> u32 {
    (got.to_bits() as i64 - (exact as f32).to_bits() as i64).unsigned_abs() as u32
}

#[test]
fn exp_is_within_one_ulp_over_a_sweep_of_f32() {
    let edges = [
        f32::MIN_POSITIVE,
        88.72283,
        88.72284,
        -87.33655,
        -103.27893,
        -103.97208,
        -104.0,
        89.0,
    ];
    let (distance, x) = worst_ulps("exp", f64::exp, &edges);
    assert!(
        distance <= 1,
        "exp({x}) is {distance} ulp from the exact value"
    );
    assert_eq!(jit_exp(&[0.0, -0.0, 1.0]), [1.0, 1.0, std::f32::consts::E]);
}

#[test]
fn the_vector_loop_and_the_scalar_tail_agree_bit_for_bit() {
    let values = [-3.7f32, 0.31, 42.5, -101.9, 1e-20, 88.5, -0.69];
    // Seven elements: the first four in the vector loop, the last three in
    // the tail; the second run shifts every value by one place.
    let mut shifted = values;
    shifted.rotate_left(1);
    for name in ["exp", "erf", "tanh", "gelu", "gelu_tanh"] {
        let (first, second) = (jit_unary(name, &values), jit_unary(name, &shifted));
        for k in 0..values.len() {
            let moved = (k + values.len() - 1) % values.len();
            assert_eq!(
                first[k].to_bits(),
                second[moved].to_bits(),
                "{name}({}) differs between the loop and the tail",
                values[k]
            );
        }
    }
}

unsafe extern "C" {
    /// The C library's f64 `erf`, the reference (Rust's has none).
    safe fn erf(x: f64) -> f64;
}

/// The most ulp `name` is from `exact` (and the input where it is) over a
/// sweep of f32 with a prime stride (every exponent, both signs,
/// subnormals), `edges` and the special values, which must give exact's
/// result exactly (signed zeros, infinities; NaN stays NaN).
fn worst_ulps(name: &str, exact: fn(f64) -> f64, edges: &[f32]) -> (u32, f32) {
    let inputs: Vec<f32> = (0..u32::MAX)
        .step_by(1021)
        .map(f32::from_bits)
        .chain([0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY])
        .chain(edges.iter().copied())
        .collect();
    let results = jit_unary(name, &inputs);
    let mut worst = (0, 0.0f32);
    for (&x, &got) in inputs.iter().zip(&results) {
        if x.is_nan() {
            assert!(got.is_nan(), "{name}({x}) = {got}");
            continue;
        }
        let want = exact(f64::from(x));
        if x == 0.0 || x.is_infinite() {
            assert_eq!(
                got.to_bits(),
                (want as f32).to_bits(),
                "{name}({x}) = {got}"
            );
        }
        let distance = ulps(got, want);
        if distance > worst.0 {
            worst = (distance, x);
        }
    }
    worst
}

/// ptec's own erf and tanh (which GELU computes with) are within 2 ulp of
/// the exact values.
#[test]
fn erf_and_tanh_are_within_two_ulp_over_a_sweep_of_f32() {
    let exact_erf = |x: f64| erf(x);
    for (name, exact) in [("erf", exact_erf as fn(f64) -> f64), ("tanh", f64::tanh)] {
        let (distance, x) = worst_ulps(name, exact, &[0.625, 1.0, 4.0, -1.0]);
        assert!(
            distance <= 2,
            "{name}({x}) is {distance} ulp from the exact value"
        );
    }
}

/// The JIT's softmax (`safe` or not) along `dim` of `values` of `shape`.
fn softmax(shape: &str, dim: usize, safe: bool, values: &[f32]) -> Vec<f32> {
    let text = format!(
        "graph g (arena 1024 bytes) {{\n  %0: f32[{shape}] @0 = input 0\n  %1: f32[{shape}] @512 = softmax(%0) dim={dim} log=false safe={safe}\n  return %1\n}}"
    );
    let graph = ptec_ir::parse(&text).expect("the graph parses");
    let bytes = le_bytes(values, f32::to_le_bytes);
    elements(
        &run_jit(&graph, &[&bytes]).expect("softmax runs")[0],
        f32::from_le_bytes,
    )
}

/// Softmax along a contiguous row (its maximum, exponentials and sum four
/// lanes at a time) gives the bits of softmax along a strided column (one
/// element at a time, into four running sums), and lands within a few ulp
/// of f64's; masked (-inf) scores give 0.
#[test]
fn softmax_rows_match_strided_columns_bit_for_bit() {
    let (rows, length) = (3usize, 13usize);
    let scores: Vec<f32> = (0..rows * length)
        .map(|index| match index % 5 {
            3 => f32::NEG_INFINITY,
            _ => ((index * 29) % 17) as f32 * 0.7 - 5.0,
        })
        .collect();
    // The same scores transposed: row r of `scores` is column r.
    let mut transposed = vec![0.0f32; rows * length];
    for r in 0..rows {
        for k in 0..length {
            transposed[k * rows + r] = scores[r * length + k];
        }
    }
    let by_rows = softmax(&format!("{rows},{length}"), 1, false, &scores);
    let by_columns = softmax(&format!("{length},{rows}"), 0, false, &transposed);
    for r in 0..rows {
        let row = &scores[r * length..(r + 1) * length];
        let max = row
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, |m, x| m.max(f64::from(x)));
        let total: f64 = row.iter().map(|&x| (f64::from(x) - max).exp()).sum();
        for k in 0..length {
            let got = by_rows[r * length + k];
            assert_eq!(
                got.to_bits(),
                by_columns[k * rows + r].to_bits(),
                "row {r}, element {k}"
            );
            let want = (f64::from(row[k]) - max).exp() / total;
            assert!(
                (f64::from(got) - want).abs() <= 1e-6 * want + 1e-12,
                "row {r}, element {k}: {got}, not {want}"
            );
        }
    }
}

/// A safe softmax (PyTorch's `_safe_softmax`) gives +0 for a row of -inf,
/// where a softmax gives NaN, and a softmax's bits for every other row: one
/// with some -inf, one with a NaN among -inf (NaN, as the test of every
/// element against -inf that it replaces is false there), along a
/// contiguous row and along a strided column.
#[test]
fn safe_softmax_zeros_rows_of_negative_infinity_only() {
    let length = 13usize;
    let inf = f32::NEG_INFINITY;
    let rows: [Vec<f32>; 4] = [
        (0..length).map(|k| (k % 5) as f32 * 0.5 - 1.0).collect(),
        (0..length)
            .map(|k| if k % 3 == 0 { 1.5 } else { inf })
            .collect(),
        vec![inf; length],
        (0..length)
            .map(|k| if k == 7 { f32::NAN } else { inf })
            .collect(),
    ];
    let count = rows.len();
    let scores: Vec<f32> = rows.concat();
    let transposed: Vec<f32> = (0..length)
        .flat_map(|k| rows.iter().map(move |row| row[k]))
        .collect();
    let row_shape = format!("{count},{length}");
    let column_shape = format!("{length},{count}");
    let plain = softmax(&row_shape, 1, false, &scores);
    let safe = softmax(&row_shape, 1, true, &scores);
    let safe_columns = softmax(&column_shape, 0, true, &transposed);
    for (r, row) in rows.iter().enumerate() {
        for k in 0..length {
            let (got, by_column) = (safe[r * length + k], safe_columns[k * count + r]);
            // The same bits but for a NaN's sign, as the maximums' order
            // differs.
            let same = got.to_bits() == by_column.to_bits() || got.is_nan() && by_column.is_nan();
            assert!(
                same,
                "row {r}, element {k}: {got} by rows, {by_column} by columns"
            );
            match r {
                2 => {
                    assert_eq!(got.to_bits(), 0, "row {r}, element {k}: {got}, not +0");
                    assert!(plain[r * length + k].is_nan(), "a softmax of -inf is NaN");
                }
                3 => assert!(got.is_nan(), "row {r}, element {k}: {got}, not NaN"),
                _ => assert_eq!(
                    got.to_bits(),
                    plain[r * length + k].to_bits(),
                    "row {r}, element {k} ({}): {got}, not the softmax's bits",
                    row[k]
                ),
            }
        }
    }
}
