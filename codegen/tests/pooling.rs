//! Max pooling's indices on the CPU where values tie or are NaN, as
//! PyTorch's CPU kernel gives them (checked against eager PyTorch 2.14): a
//! window takes its first tap inside the input, then a larger value or any
//! NaN, so the last NaN's index wins and a window of -inf gives its first.

mod common;

use common::{elements, le_bytes, run_jit, run_jit_on};
use ptec_codegen::CodegenOptions;

/// The value and index max pooling with a window of width 5 and stride 5
/// (one output, whatever the padding on each side) gives for `row`.
fn pooled(row: [f32; 5], padding: u64) -> (f32, i64) {
    let text = format!(
        "graph g (arena 256 bytes) {{
  %0: f32[1,1,1,5] @0 = input 0
  %1: f32[1,1,1,1] @64, %2: i64[1,1,1,1] @128 = max_pool2d(%0) kernel=[1, 5] stride=[1, 5] padding=[0, {padding}] dilation=[1, 1] ceil_mode=false
  return %1, %2
}}"
    );
    let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let input = le_bytes(&row, f32::to_le_bytes);
    let results = run_jit(&graph, &[&input]).expect("the graph runs");
    let values = elements(&results[0], f32::from_le_bytes);
    let indices = elements(&results[1], i64::from_le_bytes);
    (values[0], indices[0])
}

#[test]
fn the_last_nan_of_a_window_gives_the_index() {
    let nan = f32::NAN;
    let (value, index) = pooled([1.0, nan, 2.0, nan, 0.5], 0);
    assert!(value.is_nan());
    assert_eq!(index, 3);
    let (value, index) = pooled([nan, 5.0, 1.0, 2.0, 0.5], 0);
    assert!(value.is_nan());
    assert_eq!(index, 0);
}

#[test]
fn a_window_of_minus_infinity_gives_its_first_tap_inside() {
    let row = [f32::NEG_INFINITY; 5];
    assert_eq!(pooled(row, 1), (f32::NEG_INFINITY, 0));
    assert_eq!(pooled(row, 0), (f32::NEG_INFINITY, 0));
}

/// Padded max pooling whose indices nothing reads (the input copied inside
/// a border of -inf, every window then a vector of taps) gives each
/// window's maximum as the indexed kernel does: the first tap inside, then
/// a larger value or any NaN. Six output columns: one vector of four, then
/// the last four again, overlapping it.
#[test]
fn padded_pooling_without_indices_takes_the_maximum_inside() {
    let (height, width) = (5usize, 11usize);
    let nan = f32::NAN;
    let specials = [f32::NEG_INFINITY, nan, -0.0, 0.0, 1.5, -2.0, f32::INFINITY];
    let input: Vec<f32> = (0..height * width)
        .map(|index| match index % 7 {
            0 | 3 => specials[index % specials.len()],
            _ => -(((index * 37) % 23) as f32) - 1.0,
        })
        .collect();
    let (out_h, out_w) = ((height + 2 - 3) / 2 + 1, (width + 2 - 3) / 2 + 1);
    let text = format!(
        "graph g (arena 2048 bytes) {{
  %0: f32[1,1,{height},{width}] @0 = input 0
  %1: f32[1,1,{out_h},{out_w}] @256, %2: i64[1,1,{out_h},{out_w}] @512 = max_pool2d(%0) kernel=[3, 3] stride=[2, 2] padding=[1, 1] dilation=[1, 1] ceil_mode=false
  return %1
}}"
    );
    let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let results = run_jit(&graph, &[&le_bytes(&input, f32::to_le_bytes)]).expect("the graph runs");
    let values = elements(&results[0], f32::from_le_bytes);
    for oy in 0..out_h {
        for ox in 0..out_w {
            let mut best: Option<f32> = None;
            for iy in (2 * oy).saturating_sub(1)..(2 * oy + 2).min(height) {
                for ix in (2 * ox).saturating_sub(1)..(2 * ox + 2).min(width) {
                    let value = input[iy * width + ix];
                    best = Some(match best {
                        Some(best) if !(value > best || value.is_nan()) => best,
                        _ => value,
                    });
                }
            }
            let (got, want) = (values[oy * out_w + ox], best.expect("a tap inside"));
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "output ({oy}, {ox}): {got}, not {want}"
            );
        }
    }
}

/// Max pooling of a channels-last input whose indices nothing reads gives
/// the values the NCHW kernel gives, bit for bit where they are numbers:
/// channel counts below, at and above a vector of four (the last four
/// channels computed again, overlapping), padding and `ceil_mode` windows
/// past the input, dilated windows, and NaN, -inf and signed zeros among
/// the values.
#[test]
fn channels_last_pooling_matches_nchw() {
    let specials = [f32::NAN, f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY];
    let windows = [(0, false), (1, false), (0, true), (1, true)]
        .into_iter()
        .flat_map(|window| [1usize, 2].map(|dilation| (window, dilation)));
    for ((padding, ceil_mode), dilation) in windows {
        for channels in [1usize, 3, 4, 6, 9] {
            let (height, width) = (7usize, 9usize);
            let count = channels * height * width;
            // Logical (NCHW-ordered) values: the runtime stores them in
            // each graph's layout and reads the outputs back the same way.
            let values: Vec<f32> = (0..count)
                .map(|index| match index % 11 {
                    0 => specials[(index / 11) % specials.len()],
                    _ => ((index * 37) % 29) as f32 - 14.0,
                })
                .collect();
            let out = |size: usize| {
                let span = size + 2 * padding - (2 * dilation + 1);
                let steps = if ceil_mode {
                    span.div_ceil(2)
                } else {
                    span / 2
                };
                // A window must start inside the input or its left padding.
                match ceil_mode && steps * 2 >= size + padding {
                    true => steps,
                    false => steps + 1,
                }
            };
            let (out_h, out_w) = (out(height), out(width));
            let results: Vec<Vec<f32>> = ["", "{order [0, 2, 3, 1]}"]
                .iter()
                .map(|order| {
                    let text = format!(
                        "graph g (arena 8192 bytes) {{
  %0: f32[1,{channels},{height},{width}]{order} @0 = input 0
  %1: f32[1,{channels},{out_h},{out_w}]{order} @4096, %2: i64[1,{channels},{out_h},{out_w}] @6144 = max_pool2d(%0) kernel=[3, 3] stride=[2, 2] padding=[{padding}, {padding}] dilation=[{dilation}, {dilation}] ceil_mode={ceil_mode}
  return %1
}}"
                    );
                    let graph =
                        ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
                    let input = le_bytes(&values, f32::to_le_bytes);
                    let outputs = run_jit(&graph, &[&input]).expect("the graph runs");
                    elements(&outputs[0], f32::from_le_bytes)
                })
                .collect();
            for (index, (&want, &got)) in results[0].iter().zip(&results[1]).enumerate() {
                assert!(
                    got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                    "{channels} channels, padding {padding}, dilation {dilation}, ceil_mode {ceil_mode}: \
                     element {index}: {got}, not {want}"
                );
            }
        }
    }
}

/// A channels-last max pooling large enough to split gives the same bits
/// on 1, 2 and 3 threads as the NCHW kernel on one: two images, each
/// thread's output rows crossing the border rows, whose windows read fewer
/// taps.
#[test]
fn channels_last_pooling_splits_rows_across_threads() {
    let (channels, size, out) = (64usize, 48usize, 24usize);
    let count = 2 * channels * size * size;
    let values: Vec<f32> = (0..count)
        .map(|index| ((index * 53) % 61) as f32 - 30.0)
        .collect();
    let input = le_bytes(&values, f32::to_le_bytes);
    let run = |order: &str, threads: usize| {
        let text = format!(
            "graph g (arena 4194304 bytes) {{
  %0: f32[2,{channels},{size},{size}]{order} @0 = input 0
  %1: f32[2,{channels},{out},{out}]{order} @2097152, %2: i64[2,{channels},{out},{out}] @3145728 = max_pool2d(%0) kernel=[3, 3] stride=[2, 2] padding=[1, 1] dilation=[1, 1] ceil_mode=false
  return %1
}}"
        );
        let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        let outputs = run_jit_on(&graph, &CodegenOptions::default(), &[&input], threads)
            .expect("the graph runs");
        elements(&outputs[0], f32::from_le_bytes)
    };
    let want = run("", 1);
    for threads in [1, 2, 3] {
        let got = run("{order [0, 2, 3, 1]}", threads);
        assert!(
            got.iter()
                .map(|v| v.to_bits())
                .eq(want.iter().map(|v| v.to_bits())),
            "channels-last pooling on {threads} threads differs from NCHW's"
        );
    }
}
