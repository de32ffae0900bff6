//! Reductions on the CPU. Into another element type than their input's: a
//! sum or product computes in its output's type, as PyTorch does, so each
//! element is converted first (a float truncated into integers), and into
//! bool a sum is `or` and a product `and`. Over the pixels of a
//! channels-last image, where channels are folded four at a time, one a
//! lane: the same bits as the NCHW image's reduction, one channel at a time
//! (any NaN alike).

mod common;

use common::{elements, le_bytes, run_jit};

/// The bytes of the first output of `text` run on one f32 input.
fn reduced(text: &str, input: &[f32]) -> Vec<u8> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let input = le_bytes(input, f32::to_le_bytes);
    let results = run_jit(&graph, &[&input]).expect("the graph runs");
    results[0].data.clone()
}

fn graph(op: &str, output: &str) -> String {
    format!(
        "graph g (arena 128 bytes) {{
  %0: f32[2,3] @0 = input 0
  %1: {output}[2] @64 = {op}(%0) dims=[1] keepdim=false
  return %1
}}"
    )
}

#[test]
fn sums_and_products_into_bool_are_or_and_and() {
    let input = [0.5, -0.5, 0.0, 0.0, 0.0, 0.0];
    assert_eq!(reduced(&graph("reduce_sum", "bool"), &input), [1, 0]);
    let input = [1.0, -1.0, 0.0, 0.5, 2.0, 3.0];
    assert_eq!(reduced(&graph("reduce_sum", "bool"), &input), [1, 1]);
    assert_eq!(reduced(&graph("reduce_prod", "bool"), &input), [0, 1]);
}

#[test]
fn sums_into_integers_truncate_each_element() {
    let input = [0.6, 0.6, 0.6, -1.5, 2.5, 1.0];
    let sums = reduced(&graph("reduce_sum", "i64"), &input);
    let sums = elements(
        &ptec_runtime::HostTensor {
            element: ptec_runtime::ElementType::I64,
            sizes: vec![2],
            data: sums,
        },
        i64::from_le_bytes,
    );
    assert_eq!(sums, [0, 2]);
}

/// The bits of the f32 elements of the first output of `text` on one f32
/// input, every NaN as `f32::NAN`.
fn reduced_f32(text: &str, input: &[f32]) -> Vec<u32> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let input = le_bytes(input, f32::to_le_bytes);
    let results = run_jit(&graph, &[&input]).expect("the graph runs");
    // Every NaN alike: x86's vector max and min give its default NaN, the
    // scalar ones the input's.
    elements(&results[0], f32::from_le_bytes)
        .into_iter()
        .map(|value| match value.is_nan() {
            true => f32::NAN.to_bits(),
            false => value.to_bits(),
        })
        .collect()
}

#[test]
fn channels_last_pixels_reduce_to_the_bits_of_nchw_ones() {
    // Seven channels (a block of four lanes and three alone), 5x3 pixels,
    // with NaN, infinities, signed zeros and magnitudes that round.
    let [c, h, w] = [7, 5, 3];
    let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, 1e-30];
    let input: Vec<f32> = (0..c * h * w)
        .map(|i| match i % 17 {
            3 | 8 | 11 => specials[i % specials.len()],
            _ => ((i * 7919) % 1000) as f32 / 37.0 - 13.0,
        })
        .collect();
    for op in [
        "reduce_sum",
        "reduce_mean",
        "reduce_max",
        "reduce_min",
        "reduce_prod",
    ] {
        for (dims, keepdim, out) in [
            ("[3, 2]", true, format!("[1,{c},1,1]")),
            ("[2, 3]", false, format!("[1,{c}]")),
            ("[2]", true, format!("[1,{c},1,{w}]")),
        ] {
            let text = |order: &str, out_order: &str| {
                format!(
                    "graph g (arena 4096 bytes) {{
  %0: f32[1,{c},{h},{w}]{order} @0 = input 0
  %1: f32{out}{out_order} @1024 = {op}(%0) dims={dims} keepdim={keepdim}
  return %1
}}"
                )
            };
            let channels_last = "{order [0, 2, 3, 1]}";
            let out_order = match out.matches(',').count() {
                3 => channels_last,
                _ => "",
            };
            let want = reduced_f32(&text("", ""), &input);
            let got = reduced_f32(&text(channels_last, out_order), &input);
            assert_eq!(got, want, "{op} dims={dims} keepdim={keepdim}");
        }
    }
}
