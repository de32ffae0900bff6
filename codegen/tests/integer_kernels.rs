//! The integer microkernels against the f32 kernels, on convolutions whose
//! input is `round` then `clamp` to a range at most 256 values wide and
//! whose weights and bias are integer constants (as the quantized programs
//! of XNNPACK compute): each result must give the same bits with the
//! widest integer form the CPU runs (AVX512-VNNI), with AVX2's registers
//! (AVX-VNNI where the CPU has it), with AVX2's `vpmaddwd` form, with the
//! f32 microkernels and with Cranelift's kernels alone, and equal the
//! exact integer sums, wherever the f32 sums are exact.
//!
//! - Pointwise convolutions (blocks of up to 72 pixels, fewer where that
//!   makes at most eight) and im2col ones, with
//!   pixel counts around the tiles' 9 and 6 rows and the blocks, output
//!   channels around the panels' 32, 16 and 8 columns (the last panel
//!   masked), K not a multiple of four, padding, strides, with and without
//!   a bias, a clamp and a residual, input ranges below and above zero.
//! - Sums beyond 2^24, where the f32 kernels round and the integer ones
//!   give the exact sum rounded once.
//! - A NaN input, which the integer kernels leave to the f32 GEMM.
//! - Matrix products (`addmm`) with constant weights stored either way.

mod common;

use common::{elements, le_bytes, run_jit, run_jit_on};
use ptec_codegen::CodegenOptions;

/// A deterministic value in `[0, 1)` for element `index` of operand `seed`.
fn unit(seed: u64, index: usize) -> f64 {
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index as u64 + 1);
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 29;
    (x % 100_003) as f64 / 100_003.0
}

/// A deterministic integer in `[low, high]`.
fn integer(seed: u64, index: usize, [low, high]: [i64; 2]) -> i64 {
    low + (unit(seed, index) * (high - low + 1) as f64) as i64
}

/// A channels-last convolution of one group whose input is
/// `clamp(round(x), low, high)`.
#[derive(Clone, Debug)]
struct Case {
    channels: usize,
    outputs: usize,
    size: [usize; 2],
    kernel: usize,
    stride: usize,
    padding: usize,
    /// The input's range.
    range: [i64; 2],
    /// The raw input `x`'s range (wider, so the clamp bites).
    raw: [f64; 2],
    /// The weights' range.
    weights: [i64; 2],
    bias: bool,
    /// The bias's range.
    biases: [i64; 2],
    clamp: bool,
    residual: bool,
    /// An epilogue requantizing the result: `clamp(round(v * scale[co]),
    /// -128, 127)`.
    requantize: bool,
    channels_last_input: bool,
    /// An input element set to NaN.
    nan_at: Option<usize>,
}

impl Case {
    fn new(channels: usize, outputs: usize, size: [usize; 2]) -> Case {
        Case {
            channels,
            outputs,
            size,
            kernel: 1,
            stride: 1,
            padding: 0,
            range: [-133, 122],
            raw: [-150.0, 140.0],
            weights: [-127, 127],
            bias: true,
            biases: [-5000, 5000],
            clamp: false,
            residual: false,
            requantize: false,
            channels_last_input: true,
            nan_at: None,
        }
    }

    /// A 3x3 convolution of stride 2 and padding 1 of a row-major input
    /// (im2col).
    fn strided() -> Case {
        Case {
            kernel: 3,
            padding: 1,
            stride: 2,
            channels_last_input: false,
            ..Case::new(3, 20, [13, 10])
        }
    }

    fn output(&self) -> [usize; 2] {
        self.size
            .map(|size| (size + 2 * self.padding - self.kernel) / self.stride + 1)
    }

    /// The raw input, NCHW row-major (the order `input 0` takes).
    fn raw_input(&self) -> Vec<f32> {
        let [h, w] = self.size;
        let [low, high] = self.raw;
        let mut input: Vec<f32> = (0..self.channels * h * w)
            .map(|index| (low + unit(1, index) * (high - low)) as f32)
            .collect();
        if let Some(index) = self.nan_at {
            input[index] = f32::NAN;
        }
        input
    }

    /// The weight `[co, ci, ky, kx]`.
    fn weight(&self, co: usize, ci: usize, ky: usize, kx: usize) -> i64 {
        let index = ((co * self.channels + ci) * self.kernel + ky) * self.kernel + kx;
        integer(2, index, self.weights)
    }

    fn bias_of(&self, co: usize) -> i64 {
        match self.bias {
            true => integer(3, co, self.biases),
            false => 0,
        }
    }

    /// The requantization's scale of output channel `co`.
    fn scale_of(&self, co: usize) -> f32 {
        0.0005 + 0.00002 * co as f32
    }

    /// The residual, NCHW row-major.
    fn residual_input(&self) -> Vec<f32> {
        let [oh, ow] = self.output();
        (0..self.outputs * oh * ow)
            .map(|index| integer(4, index, [-300, 300]) as f32 * 0.25)
            .collect()
    }

    fn graph(&self) -> (String, Vec<Vec<u8>>) {
        let (c, o, k) = (self.channels, self.outputs, self.kernel);
        let [h, w] = self.size;
        let [oh, ow] = self.output();
        let order = match self.channels_last_input {
            true => "{order [0, 2, 3, 1]}",
            false => "",
        };
        // The filter's elements in its storage order, HWIO.
        let mut filter = Vec::new();
        for ky in 0..k {
            for kx in 0..k {
                for ci in 0..c {
                    for co in 0..o {
                        filter.push(format!("{:?}", self.weight(co, ci, ky, kx) as f32));
                    }
                }
            }
        }
        let bias: Vec<String> = (0..o)
            .map(|co| format!("{:?}", self.bias_of(co) as f32))
            .collect();
        let input_bytes = 4 * c * h * w;
        let output_bytes = 4 * o * oh * ow;
        let rounded_at = input_bytes.next_multiple_of(64);
        let residual_at = (rounded_at + input_bytes).next_multiple_of(64);
        let output_at = (residual_at + output_bytes).next_multiple_of(64);
        let arena = output_at + output_bytes;
        let [low, high] = self.range;
        let (s, p) = (self.stride, self.padding);
        let bias_operand = if self.bias { ", bias=%3" } else { "" };
        let residual_operand = if self.residual { ", residual=%5" } else { "" };
        let clamp = if self.clamp {
            " clamp_min=-20000.0 clamp_max=30000.0"
        } else {
            ""
        };
        let scales: Vec<String> = (0..o)
            .map(|co| format!("{:?}", self.scale_of(co)))
            .collect();
        let (scale_operand, requantize) = match self.requantize {
            true => (
                ", %6",
                " epilogue=[mul(in0, in1); round(s0); clamp(s1) min=-128.0 max=127.0]",
            ),
            false => ("", ""),
        };
        let text = format!(
            "graph g (arena {arena} bytes) {{
  %0: f32[1,{c},{h},{w}]{order} @0 = input 0
  %5: f32[1,{o},{oh},{ow}]{{order [0, 2, 3, 1]}} @{residual_at} = input 1
  %1: f32[1,{c},{h},{w}]{order} @{rounded_at} = fused(%0) steps=[round(in0); clamp(s0) min={low}.0 max={high}.0]
  %2: f32[{o},{c},{k},{k}]{{order [2, 3, 1, 0]}} = constant [{filter}]
  %3: f32[{o}] = constant [{bias}]
  %6: f32[{o},1,1] = constant [{scales}]
  %4: f32[1,{o},{oh},{ow}]{{order [0, 2, 3, 1]}} @{output_at} = \
convolution(%1, %2{scale_operand}{bias_operand}{residual_operand}) \
stride=[{s}, {s}] padding=[{p}, {p}] dilation=[1, 1] groups=1{clamp}{requantize}
  return %4
}}",
            filter = filter.join(", "),
            bias = bias.join(", "),
            scales = scales.join(", "),
        );
        let raw = self.raw_input();
        let residual = self.residual_input();
        // The graph reads NCHW row-major inputs; a channels-last one is
        // given as its NCHW elements too (the runtime's tensors are
        // row-major in their logical order).
        let inputs = vec![
            le_bytes(&raw, f32::to_le_bytes),
            le_bytes(&residual, f32::to_le_bytes),
        ];
        (text, inputs)
    }

    /// The exact result `[co, y, x]`: the integer sum and the bias, rounded
    /// once to f32, clamped, plus the residual.
    fn exact(&self, co: usize, y: usize, x: usize) -> f32 {
        let [h, w] = self.size;
        let raw = self.raw_input();
        let [low, high] = self.range;
        let mut sum = self.bias_of(co);
        for ky in 0..self.kernel {
            for kx in 0..self.kernel {
                let iy = (y * self.stride + ky) as i64 - self.padding as i64;
                let ix = (x * self.stride + kx) as i64 - self.padding as i64;
                if !(0..h as i64).contains(&iy) || !(0..w as i64).contains(&ix) {
                    continue;
                }
                for ci in 0..self.channels {
                    let v = raw[(ci * h + iy as usize) * w + ix as usize];
                    let v = (v.round_ties_even() as i64).clamp(low, high);
                    sum += v * self.weight(co, ci, ky, kx);
                }
            }
        }
        let mut value = sum as f32;
        if self.clamp {
            value = value.clamp(-20000.0, 30000.0);
        }
        if self.residual {
            let [oh, ow] = self.output();
            value += self.residual_input()[(co * oh + y) * ow + x];
        }
        if self.requantize {
            value = (value * self.scale_of(co))
                .round_ties_even()
                .clamp(-128.0, 127.0);
        }
        value
    }

    /// The output with each set of options, named.
    fn outputs(&self) -> Vec<(&'static str, Vec<f32>)> {
        let (text, inputs) = self.graph();
        outputs_of(&text, &inputs)
    }
}

/// The first output of the graph `text` on `inputs` with each set of
/// options, named; the last is Cranelift's kernels alone.
fn outputs_of(text: &str, inputs: &[Vec<u8>]) -> Vec<(&'static str, Vec<f32>)> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let default = CodegenOptions::default();
    let forms = [
        ("the widest integer form", None, 1),
        ("the widest integer form on 2 threads", Some(default), 2),
        ("the widest integer form on 3 threads", Some(default), 3),
        (
            "AVX2's registers",
            Some(CodegenOptions {
                avx512: false,
                ..default
            }),
            1,
        ),
        (
            "vpmaddwd",
            Some(CodegenOptions {
                vnni: false,
                ..default
            }),
            1,
        ),
        (
            "the f32 microkernels",
            Some(CodegenOptions {
                integer: false,
                ..default
            }),
            1,
        ),
        (
            "Cranelift's kernels",
            Some(CodegenOptions {
                microkernels: false,
                ..default
            }),
            1,
        ),
    ];
    forms
        .into_iter()
        .map(|(name, options, threads)| {
            let outputs = match options {
                None => run_jit(&graph, &inputs),
                Some(options) => run_jit_on(&graph, &options, &inputs, threads),
            }
            .expect("the graph runs");
            (name, elements(&outputs[0], f32::from_le_bytes))
        })
        .collect()
}

/// Every output of `outputs_of` has the bits of the last.
fn same_bits(outputs: &[(&str, Vec<f32>)], what: &str) {
    let (_, want) = &outputs[outputs.len() - 1];
    for (name, got) in outputs {
        for (index, (got, want)) in got.iter().zip(want).enumerate() {
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{what}, element {index}: {got} with {name}, {want} with Cranelift's kernels"
            );
        }
    }
}

impl Case {
    /// Whether the window of output pixel `(y, x)` reads the NaN input.
    fn window_holds_nan(&self, y: usize, x: usize) -> bool {
        let Some(index) = self.nan_at else {
            return false;
        };
        let [h, w] = self.size;
        let [row, column] = [index / w % h, index % w];
        let meets = |output: usize, input: usize| {
            let start = (output * self.stride) as i64 - self.padding as i64;
            (start..start + self.kernel as i64).contains(&(input as i64))
        };
        meets(y, row) && meets(x, column)
    }

    /// Every form gives the same bits, and they are the exact results
    /// (the output is NCHW row-major).
    fn check(&self) {
        let outputs = self.outputs();
        let [oh, ow] = self.output();
        same_bits(&outputs, &format!("{self:?}"));
        let (_, want) = &outputs[outputs.len() - 1];
        if self.nan_at.is_some() {
            assert!(want.iter().any(|value| value.is_nan()), "{self:?}: no NaN");
        }
        for (index, &got) in want.iter().enumerate() {
            let (co, y, x) = (index / (oh * ow), index / ow % oh, index % ow);
            if self.window_holds_nan(y, x) {
                assert!(got.is_nan(), "{self:?}, element {index}: {got}, not NaN");
                continue;
            }
            let exact = self.exact(co, y, x);
            assert_eq!(
                got.to_bits(),
                exact.to_bits(),
                "{self:?}, element {index}: {got}, not {exact}"
            );
        }
    }
}

#[test]
fn pointwise_shapes_give_the_same_bits_as_the_f32_kernels() {
    for pixels in [
        [1, 1],
        [1, 5],
        [2, 4],
        [1, 7],
        [3, 3],
        [2, 5],
        [4, 18],
        [1, 73],
        [5, 19],
        [7, 14],
        [10, 20],
    ] {
        for outputs in [1, 7, 8, 9, 16, 17, 24, 31, 32, 33, 40, 48, 56, 72] {
            for channels in [1, 3, 4, 8, 9, 17, 24] {
                Case::new(channels, outputs, pixels).check();
            }
        }
    }
}

#[test]
fn epilogues_and_ranges_give_the_same_bits_as_the_f32_kernels() {
    for range in [[-133, 122], [0, 255], [-20, 30], [5, 200], [-255, 0]] {
        for (bias, clamp, residual) in [
            (true, true, true),
            (false, false, true),
            (false, true, false),
        ] {
            let raw = [range[0] as f64 - 40.0, range[1] as f64 + 40.0];
            Case {
                range,
                raw,
                bias,
                clamp,
                residual,
                ..Case::new(19, 44, [9, 11])
            }
            .check();
            Case {
                range,
                raw,
                bias,
                clamp,
                residual,
                ..Case::strided()
            }
            .check();
        }
    }
}

/// A requantizing epilogue, which the integer tiles compute themselves
/// where the result has neither clamp nor residual (and the chain kernel
/// or a map after them otherwise, and after the f32 GEMM of a block that
/// holds NaN): pointwise and im2col, panels whole and cut, one block and
/// several.
#[test]
fn requantizing_epilogues_give_the_same_bits_as_the_f32_kernels() {
    for (clamp, residual) in [(false, false), (true, false), (false, true)] {
        for (pixels, outputs) in [([1, 5], 44), ([9, 11], 20), ([13, 17], 64)] {
            Case {
                clamp,
                residual,
                requantize: true,
                ..Case::new(19, outputs, pixels)
            }
            .check();
        }
        Case {
            clamp,
            residual,
            requantize: true,
            ..Case::strided()
        }
        .check();
    }
    Case {
        requantize: true,
        nan_at: Some(7),
        ..Case::new(19, 44, [13, 17])
    }
    .check();
}

#[test]
fn im2col_shapes_give_the_same_bits_as_the_f32_kernels() {
    for (kernel, stride, padding) in [(3, 1, 1), (3, 2, 1), (3, 2, 0), (5, 1, 2), (2, 2, 0)] {
        for channels in [1, 3, 5, 8] {
            for outputs in [8, 13, 32, 37] {
                for channels_last_input in [true, false] {
                    Case {
                        kernel,
                        stride,
                        padding,
                        channels_last_input,
                        ..Case::new(channels, outputs, [17, 12])
                    }
                    .check();
                }
            }
        }
    }
    // Several blocks of output rows.
    Case {
        kernel: 3,
        stride: 2,
        padding: 1,
        channels_last_input: false,
        clamp: true,
        ..Case::new(3, 32, [130, 97])
    }
    .check();
}

/// Sums beyond 2^24: the f32 kernels round along the way, the integer
/// ones (on x86-64 with AVX2) give the exact sum rounded once. Also with
/// three input channels, which the f32 kernels compute directly where
/// their sums are exact, and here, with a bias near 2^24, must not.
#[test]
fn sums_beyond_f32_precision_are_exact_with_the_integer_kernels() {
    let many = Case {
        range: [0, 255],
        raw: [250.0, 255.0],
        weights: [120, 127],
        bias: false,
        ..Case::new(700, 40, [4, 6])
    };
    let few = Case {
        channels: 3,
        outputs: 24,
        size: [7, 9],
        kernel: 3,
        padding: 1,
        bias: true,
        biases: [16_500_000, 16_700_000],
        channels_last_input: false,
        ..many.clone()
    };
    for case in [many, few] {
        let outputs = case.outputs();
        let [oh, ow] = case.output();
        let exact: Vec<f32> = (0..case.outputs * oh * ow)
            .map(|index| case.exact(index / (oh * ow), index / ow % oh, index % ow))
            .collect();
        let integer_kernels = cfg!(target_arch = "x86_64")
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("fma");
        for (name, got) in &outputs[..3] {
            let exact_here = got == &exact;
            assert_eq!(
                exact_here, integer_kernels,
                "{case:?} with {name}: exact sums {exact_here}, integer kernels {integer_kernels}"
            );
        }
        for (name, got) in &outputs[5..] {
            assert_ne!(
                got, &exact,
                "{case:?} with {name}: the f32 kernels rounded nothing"
            );
        }
    }
}

/// A NaN in the input: its block goes through the f32 GEMM, whose NaN
/// every form gives where a window reads it.
#[test]
fn a_nan_input_gives_the_f32_kernels_nan() {
    Case {
        nan_at: Some(37),
        ..Case::new(9, 20, [6, 7])
    }
    .check();
    Case {
        nan_at: Some(100),
        kernel: 3,
        padding: 1,
        ..Case::new(4, 12, [9, 9])
    }
    .check();
}

/// A NaN in one block of several: that block goes through the f32 GEMM,
/// the others through the integer one, each output exact or, where its
/// window reads the NaN, NaN.
#[test]
fn a_nan_in_one_block_of_several_leaves_the_others_exact() {
    for channels_last_input in [true, false] {
        Case {
            nan_at: Some(64 * 20 + 7),
            kernel: 3,
            padding: 1,
            channels_last_input,
            ..Case::new(8, 16, [130, 20])
        }
        .check();
    }
}

/// Images of few pixels are one block, whose column panels threads share
/// out (each packing the block's rows itself), pointwise and im2col, with
/// and without a NaN (which sends the block through the f32 GEMM, here of
/// the thread's columns).
#[test]
fn one_block_split_by_columns_gives_the_same_bits() {
    for nan_at in [None, Some(70)] {
        Case {
            nan_at,
            ..Case::new(64, 80, [7, 7])
        }
        .check();
        Case {
            nan_at,
            kernel: 3,
            padding: 1,
            ..Case::new(32, 80, [7, 7])
        }
        .check();
    }
}

/// `clamp(clamp(round(x), -120, 135) @ w + bias, -9000, 9000)` for `x` of
/// `[m, k]` and constant `w` of `[k, n]`, stored row-major or transposed.
fn product(m: usize, k: usize, n: usize, transposed: bool) {
    let x: Vec<f32> = (0..m * k)
        .map(|index| (unit(5, index) * 300.0 - 150.0) as f32)
        .collect();
    let w = |i: usize, j: usize| integer(6, i * n + j, [-128, 127]);
    let bias = |j: usize| integer(7, j, [-3000, 3000]);
    let stored: Vec<String> = match transposed {
        false => (0..k * n)
            .map(|index| format!("{:?}", w(index / n, index % n) as f32))
            .collect(),
        true => (0..k * n)
            .map(|index| format!("{:?}", w(index % k, index / k) as f32))
            .collect(),
    };
    let order = if transposed { "{order [1, 0]}" } else { "" };
    let bias_text: Vec<String> = (0..n).map(|j| format!("{:?}", bias(j) as f32)).collect();
    let rounded_at = (4 * m * k).next_multiple_of(64);
    let output_at = (rounded_at + 4 * m * k).next_multiple_of(64);
    let arena = output_at + 4 * m * n;
    let text = format!(
        "graph g (arena {arena} bytes) {{
  %0: f32[{m},{k}] @0 = input 0
  %1: f32[{m},{k}] @{rounded_at} = fused(%0) steps=[round(in0); clamp(s0) min=-120.0 max=135.0]
  %2: f32[{k},{n}]{order} = constant [{stored}]
  %3: f32[{n}] = constant [{bias_text}]
  %4: f32[{m},{n}] @{output_at} = addmm(%3, %1, %2) beta=1 alpha=1 clamp_min=-9000.0 clamp_max=9000.0
  return %4
}}",
        stored = stored.join(", "),
        bias_text = bias_text.join(", "),
    );
    let what = format!("[{m}, {k}] @ [{k}, {n}], transposed {transposed}");
    let outputs = outputs_of(&text, &[le_bytes(&x, f32::to_le_bytes)]);
    same_bits(&outputs, &what);
    let (_, got) = &outputs[0];
    for (index, &got) in got.iter().enumerate() {
        let (i, j) = (index / n, index % n);
        let sum: i64 = (0..k)
            .map(|kk| (x[i * k + kk].round_ties_even() as i64).clamp(-120, 135) * w(kk, j))
            .sum::<i64>()
            + bias(j);
        let exact = (sum as f32).clamp(-9000.0, 9000.0);
        assert_eq!(
            got.to_bits(),
            exact.to_bits(),
            "{what}, element {index}: {got}, not {exact}"
        );
    }
}

#[test]
fn matrix_products_give_the_same_bits_as_the_f32_kernels() {
    for m in [1, 5, 97, 200] {
        for k in [3, 16, 33] {
            for n in [1, 10, 40] {
                for transposed in [false, true] {
                    product(m, k, n, transposed);
                }
            }
        }
    }
}
