//! Convolutions with epilogue steps (`fuse-epilogue`) against the same
//! graph without the pass, where the steps are a fused kernel of their own:
//! the same bits with the chain kernels (AVX-512), with the Cranelift map
//! applied block by block (AVX2's microkernels, which have no chain
//! kernels) and with Cranelift's kernels alone, on every kind of
//! channels-last convolution (pointwise GEMMs in chunks of rows, depthwise
//! rows, im2col blocks of one and two groups, and the integer GEMMs of an
//! input proven integral), channel counts around the sixteen of a register
//! (the chain kernel masks the last). The method returns the result
//! widened to f64 (exactly), which reads any layout, so that the
//! convolution's result is channels-last as the pass needs; an NCHW result (whose chain goes after the whole
//! convolution) is checked on graphs written with their epilogue.
//!
//! A SiLU chain goes through the activation microkernel on each block.
//! The other chain multiplies by a per-channel scale, rounds, clamps, adds a
//! residual laid out as the result (another convolution's), divides by one
//! value, takes the negated absolute value and scales again; the scale
//! holds NaN, infinities and signed zeros, so the NaN-keeping bounds, the
//! rounding and the sign operations are checked on them.

mod common;

use common::{elements, le_bytes, run_jit, run_jit_on};
use ptec_codegen::CodegenOptions;
use ptec_ir::{Graph, Op};
use ptec_passes::{PassOptions, run_pipeline};

/// A deterministic value in [-2, 2) for element `index` of operand `seed`,
/// and every 13th (from `seed`) a special one.
fn value(seed: u64, index: usize) -> f32 {
    const SPECIAL: [f32; 5] = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0];
    if (index + seed as usize).is_multiple_of(13) {
        return SPECIAL[(index / 13) % SPECIAL.len()];
    }
    let mut x = seed
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(index as u64 + 1);
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^= x >> 29;
    (x % 4001) as f32 / 1000.0 - 2.0
}

fn operand(seed: u64, count: usize, special: bool) -> Vec<u8> {
    let values: Vec<f32> = (0..count)
        .map(|index| match special {
            true => value(seed, index),
            false => value(seed, index * 13 + 1),
        })
        .collect();
    le_bytes(&values, f32::to_le_bytes)
}

/// Small integers for constant weights and biases (the integer GEMMs take
/// constant integers).
fn integers(seed: u64, count: usize) -> String {
    (0..count)
        .map(|index| format!("{:.1}", (value(seed, index * 13 + 1) * 2.0).round()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Clone, Copy, Debug)]
struct Case {
    channels: usize,
    outputs: usize,
    groups: usize,
    size: usize,
    kernel: usize,
    stride: usize,
    /// The input rounded and clamped first, so the integer GEMMs take it.
    integral: bool,
    chain: Steps,
}

/// The elementwise chain after the convolution.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Steps {
    /// Like an int8 program's requantization, with a residual.
    Requantize,
    /// A SiLU: the activation microkernel's alone.
    Silu,
    /// A sigmoid (the activation microkernel's) times another
    /// convolution's result and a per-channel operand: the rest of the
    /// chain after the microkernel.
    Gate,
    /// A sigmoid between a requantization-like product and rounding and a
    /// product with another convolution's result: chains before and after
    /// the microkernel.
    Inside,
}

impl Case {
    fn output(&self) -> usize {
        let padding = self.kernel / 2;
        (self.size + 2 * padding - self.kernel) / self.stride + 1
    }

    /// The unoptimized graph and its inputs.
    fn graph(&self) -> (String, Vec<Vec<u8>>) {
        let Case {
            channels: c,
            outputs: o,
            groups,
            size: s,
            kernel: k,
            stride,
            ..
        } = *self;
        let os = self.output();
        let padding = k / 2;
        let per_group = c / groups;
        let prepared = match self.integral {
            true => format!(
                "  %7: f32[1,{c},{s},{s}] = fused(%0) steps=[round(in0); clamp(s0) min=-20.0 max=20.0]\n"
            ),
            false => format!("  %7: f32[1,{c},{s},{s}] = neg(%0)\n"),
        };
        let filter = integers(5, o * per_group * k * k);
        let bias = integers(6, o);
        let residual_filter = integers(7, o * per_group * k * k);
        let chain = match self.chain {
            Steps::Silu => format!(
                "  %9: f32[1,{o},{os},{os}] = sigmoid(%8)
  %16: f32[1,{o},{os},{os}] = mul(%8, %9)
"
            ),
            Steps::Gate => format!(
                "  %9: f32[1,{o},{os},{os}] = sigmoid(%8)
  %10: f32[1,{o},{os},{os}] = mul(%9, %2)
  %16: f32[1,{o},{os},{os}] = mul(%10, %1)
"
            ),
            Steps::Inside => format!(
                "  %9: f32[1,{o},{os},{os}] = mul(%8, %1)
  %10: f32[1,{o},{os},{os}] = round(%9)
  %11: f32[1,{o},{os},{os}] = sigmoid(%10)
  %12: f32[1,{o},{os},{os}] = mul(%11, %2)
  %16: f32[1,{o},{os},{os}] = round(%12)
"
            ),
            Steps::Requantize => format!(
                "  %9: f32[1,{o},{os},{os}] = mul(%8, %1)
  %10: f32[1,{o},{os},{os}] = round(%9)
  %11: f32[1,{o},{os},{os}] = clamp(%10) min=-60.0 max=60.0
  %12: f32[1,{o},{os},{os}] = add(%2, %11)
  %13: f32[1,{o},{os},{os}] = div(%12, %3)
  %14: f32[1,{o},{os},{os}] = abs(%13)
  %15: f32[1,{o},{os},{os}] = neg(%14)
  %16: f32[1,{o},{os},{os}] = mul(%15, %1)
"
            ),
        };
        let text = format!(
            "graph g {{
  %0: f32[1,{c},{s},{s}] = input 0
  %1: f32[{o},1,1] = input 1
  %3: f32[1] = input 2
  %4: f32[{o},{per_group},{k},{k}] = constant [{filter}]
  %5: f32[{o}] = constant [{bias}]
  %6: f32[{o},{per_group},{k},{k}] = constant [{residual_filter}]
{prepared}  %2: f32[1,{o},{os},{os}] = convolution(%7, %6) stride=[{stride}, {stride}] \
padding=[{padding}, {padding}] dilation=[1, 1] groups={groups}
  %8: f32[1,{o},{os},{os}] = convolution(%7, %4, bias=%5) stride=[{stride}, {stride}] \
padding=[{padding}, {padding}] dilation=[1, 1] groups={groups}
{chain}  %17: f64[1,{o},{os},{os}] = copy(%16)
  return %17
}}"
        );
        let inputs = vec![
            operand(1, c * s * s, false),
            operand(2, o, true),
            le_bytes(&[0.75f32], f32::to_le_bytes),
        ];
        (text, inputs)
    }
}

/// The graph through the pipeline, with `fuse-epilogue` or without it.
fn optimized(text: &str, fuse: bool) -> Graph<'static> {
    let mut graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let options = PassOptions {
        disabled: match fuse {
            true => Vec::new(),
            false => vec!["fuse-epilogue".to_string()],
        },
        verify: true,
        ..PassOptions::default()
    };
    run_pipeline(&mut graph, &options, |_, _| {}).expect("the pipeline runs");
    graph
}

fn epilogues(graph: &Graph<'_>) -> usize {
    graph
        .schedule()
        .iter()
        .filter(|&&id| matches!(graph.op(id), Op::Convolution(conv) if conv.epilogue.is_some()))
        .count()
}

fn check(case: Case) {
    let (text, inputs) = case.graph();
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    let (fused, apart) = (optimized(&text, true), optimized(&text, false));
    assert_eq!(
        (epilogues(&fused), epilogues(&apart)),
        (1, 0),
        "{case:?}: the chain joins the convolution"
    );
    let run = |graph: &Graph<'_>, options: &CodegenOptions, threads: usize| {
        let outputs = run_jit_on(graph, options, &inputs, threads).expect("the graph runs");
        elements(&outputs[0], f64::from_le_bytes)
    };
    let want = run(&apart, &CodegenOptions::default(), 1);
    let forms = [
        ("the chain kernels", CodegenOptions::default(), 1),
        (
            "the chain kernels on 2 threads",
            CodegenOptions::default(),
            2,
        ),
        (
            "the chain kernels on 3 threads",
            CodegenOptions::default(),
            3,
        ),
        (
            "AVX2's microkernels",
            CodegenOptions {
                avx512: false,
                ..CodegenOptions::default()
            },
            1,
        ),
        (
            "Cranelift's kernels",
            CodegenOptions {
                microkernels: false,
                ..CodegenOptions::default()
            },
            1,
        ),
    ];
    for (form, options, threads) in forms {
        let got = run(&fused, &options, threads);
        for (index, (&got, &want)) in got.iter().zip(&want).enumerate() {
            assert_eq!(
                got.to_bits(),
                want.to_bits(),
                "{case:?} with {form}, element {index}: {got}, not {want}"
            );
        }
    }
}

#[test]
fn pointwise_convolutions_give_the_bits_of_the_chain_apart() {
    for outputs in [1, 7, 16, 17, 40] {
        for size in [5, 24] {
            for (integral, chain) in [
                (false, Steps::Requantize),
                (true, Steps::Requantize),
                (false, Steps::Silu),
                (false, Steps::Gate),
                (false, Steps::Inside),
            ] {
                check(Case {
                    channels: 8,
                    outputs,
                    groups: 1,
                    size,
                    kernel: 1,
                    stride: 1,
                    integral,
                    chain,
                });
            }
        }
    }
}

#[test]
fn depthwise_convolutions_give_the_bits_of_the_chain_apart() {
    for channels in [8, 17, 32] {
        for (stride, chain) in [
            (1, Steps::Requantize),
            (2, Steps::Silu),
            (1, Steps::Gate),
            (2, Steps::Inside),
        ] {
            check(Case {
                channels,
                outputs: channels,
                groups: channels,
                size: 9,
                kernel: 3,
                stride,
                integral: false,
                chain,
            });
        }
    }
}

#[test]
fn im2col_convolutions_give_the_bits_of_the_chain_apart() {
    for (channels, outputs, groups) in [(3, 16, 1), (4, 24, 2), (6, 33, 1)] {
        for integral in [false, true] {
            check(Case {
                channels,
                outputs,
                groups,
                size: 11,
                kernel: 3,
                stride: 2,
                integral,
                chain: Steps::Requantize,
            });
        }
    }
}

/// Small images are one im2col block, whose groups threads share out, or
/// with one group its GEMM: by rows (more pixels than channels) or by
/// column panels (more channels, with columns after the last panel); each
/// thread's part of the chain follows its part of the GEMM. So does a
/// pointwise convolution of few pixels. A prime height of 13 makes two
/// blocks, the second one row shorter.
#[test]
fn one_block_convolutions_split_by_groups_rows_or_columns_give_the_same_bits() {
    let cases = [
        (16, 9, 24, 1),
        (16, 13, 24, 1),
        (16, 7, 80, 1),
        (16, 5, 200, 1),
        (48, 13, 48, 6),
    ];
    let pointwise = [(64, 5, 200, 1)];
    let kernels = cases.map(|case| (case, 3)).into_iter();
    for ((channels, size, outputs, groups), kernel) in
        kernels.chain(pointwise.map(|case| (case, 1)))
    {
        for chain in [Steps::Requantize, Steps::Silu, Steps::Gate, Steps::Inside] {
            check(Case {
                channels,
                outputs,
                groups,
                size,
                kernel,
                stride: 1,
                integral: false,
                chain,
            });
        }
    }
}

/// A convolution with an NCHW result and epilogue steps, written so (the
/// pass leaves such results to a kernel of their own), against the
/// convolution and a fused kernel: the steps run after the whole
/// convolution, which then runs on one thread.
#[test]
fn an_nchw_result_gives_the_bits_of_the_chain_apart() {
    let head = "graph g {
  %0: f32[1,3,6,6] = input 0
  %1: f32[5,1,1] = input 1
  %2: f32[5,3,3,3] = input 2";
    let steps = "[mul(in0, in1); round(s0); clamp(s1) min=-1.0 max=1.0; neg(s2)]";
    let conv = "stride=[1, 1] padding=[1, 1] dilation=[1, 1] groups=1";
    let fused = format!(
        "{head}
  %3: f32[1,5,6,6] = convolution(%0, %2, %1) {conv} epilogue={steps}
  return %3
}}"
    );
    let apart = format!(
        "{head}
  %4: f32[1,5,6,6] = convolution(%0, %2) {conv}
  %3: f32[1,5,6,6] = fused(%4, %1) steps={steps}
  return %3
}}"
    );
    let inputs = [
        operand(1, 3 * 6 * 6, false),
        operand(2, 5, true),
        operand(3, 5 * 3 * 3 * 3, false),
    ];
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    // Only memory is planned, so the graphs stay as written.
    let placed = |text: &str| {
        let mut graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
        let options = PassOptions {
            disabled: ptec_passes::names()
                .into_iter()
                .filter(|&name| name != "plan-memory")
                .map(str::to_string)
                .collect(),
            verify: true,
            ..PassOptions::default()
        };
        run_pipeline(&mut graph, &options, |_, _| {}).expect("the pipeline runs");
        graph
    };
    let (fused, apart) = (placed(&fused), placed(&apart));
    assert_eq!((epilogues(&fused), epilogues(&apart)), (1, 0));
    let run = |graph: &Graph<'_>| {
        let outputs = run_jit(graph, &inputs).expect("it runs");
        elements(&outputs[0], f32::from_le_bytes)
    };
    let (got, want) = (run(&fused), run(&apart));
    assert_eq!(got.len(), want.len());
    for (index, (got, want)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            got.to_bits(),
            want.to_bits(),
            "element {index}: {got}, not {want}"
        );
    }
}
