//! The microkernels against Cranelift's kernels, on the shapes that split
//! their work differently. Each result must give the same bits with the
//! widest microkernels the CPU runs, with AVX2's (so an AVX-512 machine
//! checks those too) and with Cranelift's kernels alone (all of them sum
//! each element in the same order with fused multiply-adds), and be close
//! to a reference computed in f64.
//!
//! - Matrix products: rows and columns around each tile's height and width
//!   (the microkernels' 9, 8, 6 and 4 rows, 32, 16 and 8 columns; Cranelift's
//!   4 rows, two, one and no vectors), with a bias along the columns and a
//!   clamp, which the microkernels apply themselves; B an input, or a constant
//!   the microkernels read prepacked.
//! - Channels-last depthwise convolutions: channel counts around the 16 of
//!   a vector block (AVX-512's kernel masks the last block; AVX2's takes
//!   channels in eights, Cranelift the others), kernels of 3 and 5 with
//!   strides, padding and dilation (border pixels read fewer taps), with
//!   and without a bias and a clamp, from channels-last and NCHW inputs.
//! - Convolutions of few input channels (a network's first), computed
//!   directly like the depthwise ones, each tap's element broadcast.
//! - Pointwise convolutions, one GEMM per image, and the others, through
//!   im2col in blocks of output rows (blocks wholly in a kernel row's
//!   padding among them), with filters given as inputs and as constants
//!   (which the microkernels read prepacked into panels, the output
//!   channels past the last panel from a matrix of their own).

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

/// The bytes of `count` values of operand `seed`.
fn operand(seed: u64, count: usize) -> Vec<u8> {
    let values: Vec<f32> = (0..count).map(|index| value(seed, index)).collect();
    le_bytes(&values, f32::to_le_bytes)
}

/// The first output of the graph `text` on `inputs` with the widest
/// microkernels (the default), after checking that AVX2's and Cranelift's
/// kernels alone give the same bits; `what` names the case in a failure.
fn same_bits_three_ways(text: &str, inputs: &[Vec<u8>], what: &str) -> Vec<f32> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let avx2 = CodegenOptions {
        avx512: false,
        ..CodegenOptions::default()
    };
    let plain = CodegenOptions {
        microkernels: false,
        ..CodegenOptions::default()
    };
    let [widest, avx2, plain] = [
        run_jit(&graph, &inputs),
        run_jit_with(&graph, &avx2, &inputs),
        run_jit_with(&graph, &plain, &inputs),
    ]
    .map(|outputs| elements(&outputs.expect("the graph runs")[0], f32::from_le_bytes));
    for (index, ((&got, &avx2), &want)) in widest.iter().zip(&avx2).zip(&plain).enumerate() {
        assert_eq!(
            [got.to_bits(), avx2.to_bits()],
            [want.to_bits(); 2],
            "{what}, element {index}: {got} with the microkernels, {avx2} with AVX2's, {want} \
             without"
        );
    }
    widest
}

/// `clamp(a @ b + bias, -0.5, 0.75)` for `a` of `[m, k]`, `b` of `[k, n]`.
/// `b` is an input, or with `constant_b` a constant of the graph (which
/// the microkernels read prepacked).
fn products(m: usize, n: usize, k: usize, constant_b: bool) -> Vec<f32> {
    let (a_bytes, b_bytes, bias_bytes, out_bytes) = (4 * m * k, 4 * k * n, 4 * n, 4 * m * n);
    let b_at = a_bytes.next_multiple_of(64);
    let bias_at = (b_at + b_bytes).next_multiple_of(64);
    let out_at = (bias_at + bias_bytes).next_multiple_of(64);
    let arena = out_at + out_bytes;
    let (b, bias_input) = match constant_b {
        true => {
            let elements: Vec<String> = (0..k * n).map(|i| format!("{:?}", value(2, i))).collect();
            (format!("= constant [{}]", elements.join(", ")), 1)
        }
        false => (format!("@{b_at} = input 1"), 2),
    };
    let text = format!(
        "graph g (arena {arena} bytes) {{
  %0: f32[{m},{k}] @0 = input 0
  %1: f32[{k},{n}] {b}
  %2: f32[{n}] @{bias_at} = input {bias_input}
  %3: f32[{m},{n}] @{out_at} = addmm(%2, %0, %1) beta=1 alpha=1 clamp_min=-0.5 clamp_max=0.75
  return %3
}}"
    );
    let mut inputs = vec![operand(1, m * k)];
    if !constant_b {
        inputs.push(operand(2, k * n));
    }
    inputs.push(operand(3, n));
    let what = format!("[{m}, {k}] @ [{k}, {n}], constant: {constant_b}");
    same_bits_three_ways(&text, &inputs, &what)
}

#[test]
fn every_tile_shape_gives_the_same_bits_and_the_right_products() {
    for m in [1, 3, 4, 5, 6, 7, 8, 9, 12, 13, 17, 18, 25, 27, 36] {
        for n in [
            1, 3, 4, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 40, 47, 48, 56, 72,
        ] {
            for (k, constant_b) in [(1, false), (5, false), (16, false), (5, true)] {
                let products = products(m, n, k, constant_b);
                for (index, &got) in products.iter().enumerate() {
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
                        "[{m}, {k}] @ [{k}, {n}] (constant: {constant_b}), element {index}: \
                         {got}, not {reference}"
                    );
                }
            }
        }
    }
}

/// A channels-last convolution of `channels` input channels, `outputs`
/// output channels and `groups` groups (depthwise: all three equal).
#[derive(Clone, Copy, Debug)]
struct Case {
    channels: usize,
    outputs: usize,
    groups: usize,
    size: [usize; 2],
    kernel: usize,
    stride: usize,
    padding: usize,
    dilation: usize,
    bias: bool,
    clamp: bool,
    channels_last_input: bool,
    /// The filter a constant of the graph rather than an input.
    constant_filter: bool,
}

impl Case {
    fn output(&self) -> [usize; 2] {
        self.size.map(|size| {
            (size + 2 * self.padding - self.dilation * (self.kernel - 1) - 1) / self.stride + 1
        })
    }

    /// The graph's text, and its inputs' bytes (input, filter unless it is
    /// a constant, bias), each given in row-major order.
    fn graph(&self) -> (String, Vec<Vec<u8>>) {
        let Case {
            channels: c,
            outputs: o,
            groups,
            kernel: k,
            ..
        } = *self;
        let per_group = c / groups;
        let [h, w] = self.size;
        let [oh, ow] = self.output();
        let input_order = match self.channels_last_input {
            true => "{order [0, 2, 3, 1]}",
            false => "",
        };
        let input_at = 0;
        let filter_at = (4 * c * h * w).next_multiple_of(64);
        let bias_at = (filter_at + 4 * o * per_group * k * k).next_multiple_of(64);
        let output_at = (bias_at + 4 * o).next_multiple_of(64);
        let arena = output_at + 4 * o * oh * ow;
        let bias = match self.bias {
            true => ", bias=%2",
            false => "",
        };
        let clamp = match self.clamp {
            true => " clamp_min=-0.5 clamp_max=0.75",
            false => "",
        };
        let (stride, padding, dilation) = (self.stride, self.padding, self.dilation);
        // A constant lists its elements in its dim order: HWIO.
        let filter_value = |o_index: usize, i: usize, ky: usize, kx: usize| {
            value(2, ((o_index * per_group + i) * k + ky) * k + kx)
        };
        let (filter, bias_input) = match self.constant_filter {
            true => {
                let mut elements = Vec::new();
                for ky in 0..k {
                    for kx in 0..k {
                        for i in 0..per_group {
                            for o_index in 0..o {
                                elements.push(format!("{:?}", filter_value(o_index, i, ky, kx)));
                            }
                        }
                    }
                }
                (format!("= constant [{}]", elements.join(", ")), 1)
            }
            false => (format!("@{filter_at} = input 1"), 2),
        };
        let text = format!(
            "graph g (arena {arena} bytes) {{
  %0: f32[1,{c},{h},{w}]{input_order} @{input_at} = input 0
  %1: f32[{o},{per_group},{k},{k}]{{order [2, 3, 1, 0]}} {filter}
  %2: f32[{o}] @{bias_at} = input {bias_input}
  %3: f32[1,{o},{oh},{ow}]{{order [0, 2, 3, 1]}} @{output_at} = convolution(%0, %1{bias}) \
stride=[{stride}, {stride}] padding=[{padding}, {padding}] dilation=[{dilation}, {dilation}] \
groups={groups}{clamp}
  return %3
}}"
        );
        let mut inputs = vec![operand(1, c * h * w)];
        if !self.constant_filter {
            inputs.push(operand(2, o * per_group * k * k));
        }
        inputs.push(operand(3, o));
        (text, inputs)
    }

    /// The output element `[channel, y, x]` in f64.
    fn reference(&self, channel: usize, y: usize, x: usize) -> f64 {
        let [h, w] = self.size;
        let k = self.kernel;
        let per_group = self.channels / self.groups;
        let group = channel / (self.outputs / self.groups);
        let mut sum = match self.bias {
            true => f64::from(value(3, channel)),
            false => 0.0,
        };
        for ky in 0..k {
            for kx in 0..k {
                let iy = (y * self.stride + ky * self.dilation) as i64 - self.padding as i64;
                let ix = (x * self.stride + kx * self.dilation) as i64 - self.padding as i64;
                if !(0..h as i64).contains(&iy) || !(0..w as i64).contains(&ix) {
                    continue;
                }
                for i in 0..per_group {
                    let input_channel = group * per_group + i;
                    let input = value(1, (input_channel * h + iy as usize) * w + ix as usize);
                    let weight = value(2, ((channel * per_group + i) * k + ky) * k + kx);
                    sum += f64::from(input) * f64::from(weight);
                }
            }
        }
        match self.clamp {
            true => sum.clamp(-0.5, 0.75),
            false => sum,
        }
    }

    fn check(&self) {
        let (text, inputs) = self.graph();
        let outputs = same_bits_three_ways(&text, &inputs, &format!("{self:?}"));
        let [oh, ow] = self.output();
        for (index, &got) in outputs.iter().enumerate() {
            let (channel, y, x) = (index / (oh * ow), index / ow % oh, index % ow);
            let reference = self.reference(channel, y, x);
            assert!(
                (f64::from(got) - reference).abs() < 1e-5,
                "{self:?}, element {index}: {got}, not {reference}"
            );
        }
    }
}

/// Checks `base` with each window `[kernel, stride, padding, dilation]`
/// and each `(bias, clamp, channels_last_input)`.
fn check_windows(base: Case, windows: &[[usize; 4]], options: &[(bool, bool, bool)]) {
    for &[kernel, stride, padding, dilation] in windows {
        for &(bias, clamp, channels_last_input) in options {
            Case {
                kernel,
                stride,
                padding,
                dilation,
                bias,
                clamp,
                channels_last_input,
                ..base
            }
            .check();
        }
    }
}

#[test]
fn every_depthwise_shape_gives_the_same_bits_and_the_right_sums() {
    for channels in [1, 3, 8, 15, 16, 17, 24, 33, 40] {
        let depthwise = Case {
            channels,
            outputs: channels,
            groups: channels,
            size: [9, 11],
            ..FIRST
        };
        check_windows(
            depthwise,
            &[
                [3, 1, 1, 1],
                [3, 2, 1, 1],
                [3, 1, 0, 2],
                [5, 2, 2, 1],
                [5, 1, 3, 1],
            ],
            &[
                (true, true, true),
                (false, false, true),
                (true, false, false),
            ],
        );
    }
}

/// Pointwise convolutions (one GEMM per image) of channels-last and NCHW
/// inputs (which are copied channels-last first), with output channels
/// of whole panels and of panels and a rest.
#[test]
fn pointwise_convolutions_give_the_same_bits_and_the_right_sums() {
    let shapes = [(true, 40), (false, 40), (true, 64), (false, 75)];
    for (channels_last_input, outputs) in shapes {
        for constant_filter in [false, true] {
            Case {
                channels: 24,
                outputs,
                groups: 1,
                size: [13, 17],
                kernel: 1,
                stride: 1,
                padding: 0,
                dilation: 1,
                bias: true,
                clamp: true,
                channels_last_input,
                constant_filter,
            }
            .check();
        }
    }
}

/// A network's first convolution: 3x3 with stride 2 over an RGB image
/// (NCHW), to 16 channels, with a bias and a clamp.
const FIRST: Case = Case {
    channels: 3,
    outputs: 16,
    groups: 1,
    size: [130, 97],
    kernel: 3,
    stride: 2,
    padding: 1,
    dilation: 1,
    bias: true,
    clamp: true,
    channels_last_input: false,
    constant_filter: false,
};

/// Convolutions of few input channels (a network's first: three), computed
/// directly with each tap's element broadcast to the output channels:
/// output channels around the vector blocks (AVX-512 masks the last one,
/// AVX2's kernel takes eights, Cranelift the rest), kernels of 1, 3 and 5
/// (5x5 of one channel: more taps go through im2col) with strides,
/// padding and dilation (border pixels read fewer taps),
/// rows of more and fewer than eight pixels, from NCHW and channels-last
/// inputs, and no input channel at all (every output the bias).
#[test]
fn few_channel_convolutions_give_the_same_bits_and_the_right_sums() {
    let first = Case {
        size: [21, 19],
        ..FIRST
    };
    for channels in [1, 3, 4] {
        for outputs in [8, 16, 24, 37] {
            check_windows(
                Case {
                    channels,
                    outputs,
                    ..first
                },
                &[[3, 2, 1, 1], [3, 1, 0, 2], [5, 2, 2, 1], [1, 2, 0, 1]],
                &[(true, true, false), (false, false, true)],
            );
        }
    }
    Case {
        outputs: 64,
        constant_filter: true,
        ..FIRST
    }
    .check();
    Case {
        channels: 0,
        constant_filter: true,
        channels_last_input: true,
        ..first
    }
    .check();
}

/// Convolutions through im2col in blocks of output rows: images tall and
/// wide enough for several blocks (the blocks at the top and bottom meet
/// rows of padding that the blocks between do not), NCHW inputs of more
/// channels than are computed directly and grouped ones.
#[test]
fn im2col_blocks_give_the_same_bits_and_the_right_sums() {
    let first = Case {
        channels: 5,
        ..FIRST
    };
    first.check();
    // Constant filters: panels and a rest, from NCHW and channels-last
    // inputs, and without a bias or clamp.
    Case {
        outputs: 70,
        constant_filter: true,
        ..first
    }
    .check();
    Case {
        channels: 10,
        outputs: 48,
        size: [23, 19],
        stride: 1,
        bias: false,
        clamp: false,
        channels_last_input: true,
        constant_filter: true,
        ..first
    }
    .check();
    Case {
        channels: 8,
        outputs: 12,
        groups: 2,
        size: [72, 40],
        kernel: 5,
        padding: 2,
        stride: 1,
        channels_last_input: true,
        ..first
    }
    .check();
    Case {
        channels: 6,
        outputs: 24,
        groups: 3,
        size: [61, 45],
        kernel: 3,
        padding: 0,
        dilation: 2,
        stride: 1,
        bias: false,
        clamp: false,
        ..first
    }
    .check();
    // Blocks that lie wholly above or below the output rows some kernel
    // row meets inside the image, whose rows are all padding for that
    // kernel row: a 5x5 convolution over 21 rows in blocks of 5 (the last
    // of one row, below kernel row 4's, as Inception's are), and a 7x7 one
    // with padding 3 in blocks of 2 rows (the first above kernel row 0's,
    // the last below kernel row 6's). The output lies just before the
    // scratch memory of the calling thread, where a fill before a block
    // would land.
    for (channels, size, kernel) in [(8, [21, 64], 5), (4, [20, 128], 7)] {
        Case {
            channels,
            outputs: 16,
            size,
            kernel,
            padding: kernel / 2,
            stride: 1,
            channels_last_input: true,
            ..first
        }
        .check();
    }
}

/// The f32 values an activation must get right beside ordinary ones: NaN,
/// infinities, signed zeros, subnormals, and arguments around where the
/// exponential overflows, turns subnormal and rounds to 0.
fn activation_inputs(count: usize) -> Vec<f32> {
    let specials = [
        f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1e-40,
        -1e-40,
        88.72,
        89.5,
        -88.0,
        -95.0,
        -103.97,
        -103.98,
        104.0,
        -150.0,
    ];
    (0..count)
        .map(|index| match index % 5 {
            0 => specials[(index / 5) % specials.len()],
            _ => value(7, index) * 12.0,
        })
        .collect()
}

/// Sigmoid and SiLU (as one op, and as the fused chain the fusion pass
/// writes) over counts around the microkernels' 8 and 16 lanes and their
/// blocks of 4096 elements: the activation microkernels give Cranelift's
/// bits, and each result is within a few ulp of f64's (or below f32's
/// normal range where it is: `exp(-x)` overflows f32 for x below -88, and
/// the sigmoid, like PyTorch's in f32, is then 0).
#[test]
fn activations_match_cranelift_bit_for_bit() {
    let chains = [
        ("sigmoid(%0)", false),
        ("silu(%0)", true),
        ("fused(%0) steps=[sigmoid(in0); mul(in0, s0)]", true),
        ("fused(%0) steps=[sigmoid(in0); mul(s0, in0)]", true),
    ];
    for count in [1, 7, 8, 9, 15, 16, 17, 33, 4096, 4101, 9000] {
        let input = activation_inputs(count);
        let bytes = 4 * count;
        let out_at = bytes.next_multiple_of(64);
        for (chain, silu) in chains {
            let text = format!(
                "graph g (arena {} bytes) {{\n  %0: f32[{count}] @0 = input 0\n  %1: f32[{count}] @{out_at} = {chain}\n  return %1\n}}",
                out_at + bytes
            );
            let what = format!("{chain} of {count}");
            let got = same_bits_three_ways(&text, &[le_bytes(&input, f32::to_le_bytes)], &what);
            for (index, (&x, &got)) in input.iter().zip(&got).enumerate() {
                let x64 = f64::from(x);
                let sigmoid = 1.0 / (1.0 + (-x64).exp());
                let want = if silu { x64 * sigmoid } else { sigmoid };
                let close = f64::from(got) == want
                    || (f64::from(got) - want).abs()
                        <= 4.0 * f64::from(f32::EPSILON) * want.abs()
                            + f64::from(f32::MIN_POSITIVE);
                assert!(
                    close || (got.is_nan() && want.is_nan()),
                    "{what}, element {index}: {got} for {x}, not {want}"
                );
            }
        }
    }
}

/// GELU in both forms over counts around the microkernels' lanes and
/// blocks, on special values, a sweep of [-8, 8] and the neighbours of
/// where erf and tanh change form (x / sqrt 2 = 1, and the tanh form's
/// argument 0.625): the activation microkernels give Cranelift's bits, and
/// the tanh form is within a few ulp of f64's but where `1 + tanh` cancels
/// (the erf form is checked against it, 1e-3 apart at most, as the two
/// forms are).
#[test]
fn gelus_match_cranelift_bit_for_bit() {
    let tanh_gelu = |x: f64| {
        let inner = (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x);
        x / 2.0 * (1.0 + inner.tanh())
    };
    let mut edges = vec![std::f32::consts::SQRT_2, 0.5_f32.sqrt() * 8.0, 0.6011];
    for k in 1..=16 {
        for edge in [std::f32::consts::SQRT_2, 0.6011] {
            edges.extend([
                f32::from_bits(edge.to_bits() - k),
                f32::from_bits(edge.to_bits() + k),
            ]);
        }
    }
    for count in [1, 7, 8, 9, 15, 16, 17, 33, 4096, 4101] {
        let input: Vec<f32> = activation_inputs(count)
            .into_iter()
            .enumerate()
            .map(|(index, x)| match index % 5 {
                1 => (index as f32 / count as f32) * 16.0 - 8.0,
                2 => edges[index % edges.len()] * if index % 2 == 0 { 1.0 } else { -1.0 },
                _ => x,
            })
            .collect();
        let bytes = 4 * count;
        let out_at = bytes.next_multiple_of(64);
        for op in ["gelu", "gelu_tanh"] {
            let text = format!(
                "graph g (arena {} bytes) {{\n  %0: f32[{count}] @0 = input 0\n  %1: f32[{count}] @{out_at} = {op}(%0)\n  return %1\n}}",
                out_at + bytes
            );
            let what = format!("{op} of {count}");
            let got = same_bits_three_ways(&text, &[le_bytes(&input, f32::to_le_bytes)], &what);
            for (index, (&x, &got)) in input.iter().zip(&got).enumerate() {
                let want = tanh_gelu(f64::from(x));
                let tolerance = match op {
                    "gelu" => 1e-3,
                    // 1 + tanh cancels for negative x: x/2 times an ulp of 1.
                    _ => f64::from(f32::EPSILON) * (8.0 * want.abs() + f64::from(x.abs())),
                };
                let close = (f64::from(got) - want).abs() <= tolerance || f64::from(got) == want;
                assert!(
                    close || (got.is_nan() && want.is_nan()),
                    "{what}, element {index}: {got} for {x}, not {want}"
                );
            }
        }
    }
}

/// Softmax along rows of lengths around the microkernels' 8 and 16 lanes,
/// its exponentials by the shifted-exponential microkernel: the bits of
/// Cranelift's kernel, special values (NaN, infinities, a row of -inf in
/// a safe softmax) included, and sums within a few ulp of 1.
#[test]
fn softmax_exponentials_match_cranelift_bit_for_bit() {
    for length in [1, 7, 8, 9, 15, 16, 17, 33, 100] {
        let rows = 4;
        let mut input = activation_inputs(rows * length);
        // The last row: ordinary scores, or all -inf in a safe softmax.
        let last = &mut input[(rows - 1) * length..];
        for (k, x) in last.iter_mut().enumerate() {
            *x = value(3, k) * 8.0;
        }
        for safe in [false, true] {
            if safe {
                input[length..2 * length].fill(f32::NEG_INFINITY);
            }
            let bytes = 4 * rows * length;
            let out_at = bytes.next_multiple_of(64);
            let text = format!(
                "graph g (arena {} bytes) {{\n  %0: f32[{rows},{length}] @0 = input 0\n  %1: f32[{rows},{length}] @{out_at} = softmax(%0) dim=1 log=false safe={safe}\n  return %1\n}}",
                out_at + bytes
            );
            let what = format!("softmax (safe: {safe}) of rows of {length}");
            let got = same_bits_three_ways(&text, &[le_bytes(&input, f32::to_le_bytes)], &what);
            let total: f64 = got[(rows - 1) * length..]
                .iter()
                .map(|&p| f64::from(p))
                .sum();
            assert!(
                (total - 1.0).abs() <= 1e-6 * length as f64,
                "{what}: the ordinary row sums to {total}"
            );
        }
    }
}

/// Chains with steps before or after an activation (a LLaMA MLP's gate,
/// `silu(a) * b`; a bias before a sigmoid) over counts around the
/// microkernels' lanes and blocks: the activation microkernel between the
/// steps, four lanes at a time, gives the Cranelift map's bits, with the
/// output apart from the operands, over the first (which the activation
/// reads before the block is written) and over the second (which the steps
/// after the activation read: the map computes those).
#[test]
fn chains_around_an_activation_match_cranelift_bit_for_bit() {
    let chains = [
        "steps=[sigmoid(in0); mul(in0, s0); mul(s1, in1)]",
        "steps=[silu(in0); mul(in1, s0)]",
        "steps=[add(in0, in1); sigmoid(s0); mul(s1, in1); add(s2, in0)]",
        "steps=[mul(in0, in1); silu(s0); add(s1, in1)]",
        "steps=[add(in0, in1); gelu(s0)]",
        "steps=[gelu_tanh(in0); mul(s0, in1)]",
    ];
    for count in [1, 9, 16, 17, 4096, 4101, 9000] {
        let a = activation_inputs(count);
        let b: Vec<f32> = (0..count).map(|index| value(5, index) * 3.0).collect();
        let bytes = (4 * count).next_multiple_of(64);
        let inputs = [
            le_bytes(&a, f32::to_le_bytes),
            le_bytes(&b, f32::to_le_bytes),
        ];
        for chain in chains {
            // The output apart, over `%0`, over `%1`.
            for out_at in [2 * bytes, 0, bytes] {
                let text = format!(
                    "graph g (arena {} bytes) {{\n  %0: f32[{count}] @0 = input 0\n  %1: f32[{count}] @{bytes} = input 1\n  %2: f32[{count}] @{out_at} = fused(%0, %1) {chain}\n  return %2\n}}",
                    3 * bytes
                );
                let what = format!("{chain} of {count} at {out_at}");
                same_bits_three_ways(&text, &inputs, &what);
            }
        }
    }
}
