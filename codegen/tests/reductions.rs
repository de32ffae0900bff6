//! Reductions on the CPU. Into another element type than their input's: a
//! sum or product computes in its output's type, as PyTorch does, so each
//! element is converted first (a float truncated into integers), and into
//! bool a sum is `or` and a product `and`. Over the pixels of a
//! channels-last image, where channels are folded four at a time, one a
//! lane: the same bits as folding one channel at a time, pixel after pixel
//! (any NaN alike).

mod common;

use common::{elements, le_bytes, run_jit, run_jit_on};
use ptec_codegen::{AotOptions, CodegenOptions, compile_object};

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
    // Seven channels (a vector of four lanes and three alone) and 43 (a
    // block of eight vectors folded side by side, two vectors, three
    // alone), 5x3 pixels, with NaN, infinities, signed zeros and
    // magnitudes that round.
    for c in [7, 43] {
        channels_reduce_to_the_bits_of_nchw_ones(c);
    }
}

fn channels_reduce_to_the_bits_of_nchw_ones(c: usize) {
    let [h, w] = [5, 3];
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
                    "graph g (arena 8192 bytes) {{
  %0: f32[1,{c},{h},{w}]{order} @0 = input 0
  %1: f32{out}{out_order} @4096 = {op}(%0) dims={dims} keepdim={keepdim}
  return %1
}}"
                )
            };
            let channels_last = "{order [0, 2, 3, 1]}";
            let out_order = match out.matches(',').count() {
                3 => channels_last,
                _ => "",
            };
            // Columns before rows: no contiguous row, so each channel is
            // folded alone, pixel after pixel (an NCHW image's rows are
            // folded four lanes at a time, in another order).
            let want = reduced_f32(&text("{order [0, 1, 3, 2]}", ""), &input);
            let got = reduced_f32(&text(channels_last, out_order), &input);
            assert_eq!(
                got, want,
                "{c} channels: {op} dims={dims} keepdim={keepdim}"
            );
        }
    }
}

/// Rows of reductions, a softmax and a layer norm, 512 of 512 elements:
/// enough work for threads to share the rows out. Each such kernel is
/// handed to the pool (a kernel the pool runs is an argument of
/// `ptec_parallel_for`, one called whole a call's target), and one, two or
/// three threads give the same bits, NaN and infinities in some rows.
#[test]
fn long_rows_split_across_threads_with_the_same_bits() {
    let text = "graph g (arena 4194304 bytes) {
  %0: f32[512,512] @0 = input 0
  %1: f32[512,512] @1048576 = softmax(%0) dim=1 log=false safe=false
  %2: f32[512,512] @2097152, %3: f32[512,1] @3147776, %4: f32[512,1] @3149824 = layer_norm(%0) normalized_dims=1 eps=1e-5
  %5: f32[512] @3145728 = reduce_sum(%0) dims=[1] keepdim=false
  %6: i64[512] @3151872 = arg_max(%0) dim=1 keepdim=false
  return %1, %2, %5, %6
}";
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let object = compile_object(
        std::slice::from_ref(&graph),
        &AotOptions {
            target: None,
            prefix: "rows".into(),
            codegen: CodegenOptions::default(),
            max_code: u64::MAX,
            listing: true,
        },
    )
    .expect("the graph compiles");
    let listing = object.listing.expect("a listing").render();
    for kernel in ["softmax", "layer_norm", "reduce_sum", "arg_max"] {
        assert!(
            listing
                .lines()
                .any(|line| line.contains(" mov rsi,") && line.ends_with(&format!("_{kernel}"))),
            "the {kernel} kernel does not run on the pool:\n{listing}"
        );
    }
    let mut values: Vec<f32> = (0..512 * 512)
        .map(|index| ((index * 37) % 101) as f32 * 0.25 - 12.0)
        .collect();
    values[3 * 512 + 7] = f32::NAN;
    values[300 * 512 + 1] = f32::INFINITY;
    values[400 * 512 + 9] = f32::NEG_INFINITY;
    let input = le_bytes(&values, f32::to_le_bytes);
    let bits = |threads: usize| -> Vec<Vec<u8>> {
        run_jit_on(&graph, &CodegenOptions::default(), &[&input], threads)
            .expect("the graph runs")
            .into_iter()
            .map(|tensor| tensor.data)
            .collect()
    };
    let one = bits(1);
    for threads in [2, 3] {
        assert!(
            bits(threads) == one,
            "{threads} threads give other bits than one"
        );
    }
}
