//! Channels-last layouts: `propagate-dim-order` stores convolution chains
//! channels-last without adding kernels or changing results, and the
//! convolution kernel computes every combination of NCHW and channels-last
//! input and output alike.

mod common;

use std::borrow::Cow;

use common::lie::{Lie, Patch, find_instruction, value};
use common::{corpus_for, ptec, ptec_test, repo_dir};
use ptec_codegen::{CodegenOptions, compile_jit};
use ptec_frontend::{ExecutorchFile, FileBytes, ScalarType, TestValue};
use ptec_ir::ops::conv::Convolution;
use ptec_ir::{CHANNELS_LAST, FILTER_HWIO, Graph, Op, TensorType, ValueData, ValueKind};
use ptec_runtime::{ElementType, HostTensor, Instance, TensorRef};

const CHANNELS_LAST_TEXT: &str = "{order [0, 2, 3, 1]}";

/// The optimized IR of a file's first method.
fn optimized_ir(file: &str, extra: &[&str]) -> String {
    let mut args = vec!["compile", file, "--emit", "ir"];
    args.extend_from_slice(extra);
    let output = ptec(&args);
    assert!(output.status.success(), "{file}: compile --emit ir fails");
    String::from_utf8(output.stdout).expect("the IR is text")
}

/// How many nodes apply `op` (by the name in the IR text form), and how many
/// values of those nodes' results are channels-last.
fn count(ir: &str, op: &str) -> (usize, usize) {
    let needle = format!("= {op}(");
    let nodes: Vec<&str> = ir.lines().filter(|line| line.contains(&needle)).collect();
    let channels_last = nodes
        .iter()
        .filter(|line| {
            line.split(" = ")
                .next()
                .is_some_and(|lhs| lhs.contains(CHANNELS_LAST_TEXT))
        })
        .count();
    (nodes.len(), channels_last)
}

fn kernels(file: &str) -> u64 {
    let output = ptec(&["inspect", file, "--json"]);
    assert!(output.status.success(), "{file}: inspect fails");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    report["methods"][0]["kernels"]
        .as_u64()
        .expect("a kernel count")
}

/// Checks a program whose convolutions should all become channels-last:
/// they do (and none without the pass), the kernel count stays at most one
/// a convolution plus two, and every bundled test still passes.
fn check_channels_last_chain(file: &str, expected_convolutions: usize) {
    let (convolutions, channels_last) = count(&optimized_ir(file, &[]), "convolution");
    assert_eq!(convolutions, expected_convolutions, "{file}");
    assert_eq!(
        channels_last, convolutions,
        "{file}: not every convolution result is channels-last"
    );
    let (_, without) = count(
        &optimized_ir(file, &["--disable-pass", "propagate-dim-order"]),
        "convolution",
    );
    assert_eq!(without, 0, "{file}: channels-last results without the pass");
    let kernels = kernels(file);
    assert!(
        kernels <= convolutions as u64 + 2,
        "{file}: {kernels} kernels"
    );
    passes_its_tests(file);
}

#[test]
fn mobilenet_v2_convolutions_are_channels_last() {
    let Some(corpus) = corpus_for("mobilenet_v2_convolutions_are_channels_last") else {
        return;
    };
    let file = corpus.join("mobilenet_v2.portable.bpte");
    check_channels_last_chain(&file.display().to_string(), 52);
}

#[test]
fn fixture_convolution_chain_is_channels_last() {
    let file = repo_dir().join("tests/fixtures/xnnpack/channels_last.xnnpack.bpte");
    let file = file.display().to_string();
    let (convolutions, channels_last) = count(&optimized_ir(&file, &[]), "convolution");
    assert!(convolutions > 0 && channels_last > 0, "{file}");
    passes_its_tests(&file);
}

fn passes_its_tests(file: &str) {
    let reports = ptec_test(&[file.into()], &[]);
    assert_eq!(reports[0]["pass"], true, "{file}: {:#}", reports[0]);
}

/// The bytes of an f32 filter `[O, I, H, W]` stored HWIO.
fn hwio_bytes(bytes: &[u8], [o, i, h, w]: [usize; 4]) -> Vec<u8> {
    let mut out = vec![0; bytes.len()];
    for (index, element) in bytes.chunks_exact(4).enumerate() {
        let (oo, rest) = (index / (i * h * w), index % (i * h * w));
        let (ii, rest) = (rest / (h * w), rest % (h * w));
        let (yy, xx) = (rest / w, rest % w);
        let target = ((yy * w + xx) * i + ii) * o + oo;
        out[target * 4..target * 4 + 4].copy_from_slice(element);
    }
    out
}

/// Makes the graph's input and output, the convolution's operands, the
/// given layouts (the runtime converts at the boundary), storing the filter
/// HWIO for a channels-last output. False when the graph is not one
/// convolution from input to output.
fn relayout(graph: &mut Graph<'_>, input_last: bool, output_last: bool) -> bool {
    let convolutions: Vec<_> = graph
        .schedule()
        .iter()
        .copied()
        .filter(|&id| matches!(graph.op(id), Op::Convolution(_)))
        .collect();
    let [conv] = convolutions[..] else {
        return false;
    };
    let Op::Convolution(convolution) = graph.op(conv).clone() else {
        return false;
    };
    let output = graph.node(conv).outputs()[0];
    let filter = graph.value(convolution.weight).clone();
    let direct = graph.inputs() == [convolution.input]
        && graph.outputs() == [output]
        && graph.value(convolution.input).ty.rank() == 4;
    let (ValueKind::Constant(bytes), true) = (&filter.kind, direct) else {
        return false;
    };
    if output_last {
        let sizes: Vec<usize> = filter
            .ty
            .shape
            .iter()
            .map(|d| d.fixed().expect("fixed") as usize)
            .collect();
        let packed = hwio_bytes(bytes, [sizes[0], sizes[1], sizes[2], sizes[3]]);
        let packed = graph.add_value(ValueData::constant(
            TensorType {
                dim_order: FILTER_HWIO.to_vec(),
                ..filter.ty.clone()
            },
            Cow::Owned(packed),
        ));
        graph.set_op(
            conv,
            Op::Convolution(Convolution {
                weight: packed,
                ..convolution.clone()
            }),
        );
        graph.value_mut(output).ty.dim_order = CHANNELS_LAST.to_vec();
    }
    if input_last {
        graph.value_mut(convolution.input).ty.dim_order = CHANNELS_LAST.to_vec();
    }
    true
}

fn run(graph: &Graph<'_>, input: &HostTensor) -> Vec<HostTensor> {
    let jit =
        compile_jit(graph, &CodegenOptions::default(), u64::MAX).expect("the method compiles");
    // SAFETY: the code, constants and ABI come from one compilation.
    let mut instance =
        unsafe { Instance::new(jit.abi, jit.entry, jit.constants, Box::new(jit.code)) }
            .expect("the instance is created");
    let inputs = [TensorRef {
        element: input.element,
        sizes: &input.sizes,
        data: &input.data,
    }];
    instance.run(&inputs).expect("the method runs")
}

fn f32s(tensor: &HostTensor) -> Vec<f32> {
    tensor
        .data
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}

#[test]
fn convolutions_compute_alike_in_every_layout() {
    let dir = repo_dir().join("tests/fixtures/ops");
    let mut checked = 0;
    for path in common::bpte_files(&dir) {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !name.starts_with("conv2d") {
            continue;
        }
        let bytes = FileBytes::open(&path).expect("the file opens");
        let file = ExecutorchFile::read(bytes.bytes()).expect("the file reads");
        let input = match &file.test_suites()[0].cases[0].inputs[0] {
            // The channels-last kernels are f32's; other element types
            // take the direct kernel, which reads every layout alike.
            TestValue::Tensor(tensor) if tensor.dtype != ScalarType::Float => continue,
            TestValue::Tensor(tensor) => HostTensor {
                element: ElementType::F32,
                sizes: tensor.sizes.iter().map(|&s| s as u64).collect(),
                data: tensor.data.to_vec(),
            },
            other => panic!("{name}: a tensor input, not {other:?}"),
        };
        let method = &file.program().methods[0];
        let graph =
            ptec_compiler::optimize(method, &ptec_passes::PassOptions::default(), |_, _| {})
                .expect("the method imports and optimizes")
                .graph;
        let expected = f32s(&run(&graph, &input)[0]);
        for (input_last, output_last) in [(true, false), (false, true), (true, true)] {
            let mut changed = graph.clone();
            assert!(relayout(&mut changed, input_last, output_last), "{name}");
            let got = f32s(&run(&changed, &input)[0]);
            let worst = got
                .iter()
                .zip(&expected)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(
                got.len() == expected.len() && worst <= 1e-4,
                "{name}, input channels-last {input_last}, output {output_last}: off by {worst}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 8, "only {checked} convolution fixtures");
}

/// A depthwise convolution of several one-channel images whose
/// channels-last result is one pixel, read from an NCHW input: the kernel
/// packs each image into scratch, at the same address for every image, and
/// the loads of the packed window must stay below that copy (they were
/// hoisted above it once, as loads of memory nothing writes, and read
/// zeros). Against the same convolution with an NCHW result.
#[test]
fn depthwise_over_packed_images_reads_each_image() {
    let text = |output_order: &str, weight_order: &str| {
        format!(
            "graph g {{
  %0: f32[4,1,3,2] = input 0
  %1: f32[1,1,2,1]{weight_order} = constant [1.0, 10.0]
  %2: f32[4,1,1,1]{output_order} = convolution(%0, %1) stride=[2, 2] padding=[0, 0] dilation=[1, 1] groups=1
  %3: f32[4,1,1,1] = relu(%2)
  return %3
}}"
        )
    };
    let planned = |text: &str| {
        let mut graph = ptec_ir::parse(text).expect("the text parses");
        let passes = ptec_passes::PassOptions {
            disabled: ptec_passes::names()
                .into_iter()
                .filter(|name| *name != "plan-memory")
                .map(String::from)
                .collect(),
            ..ptec_passes::PassOptions::default()
        };
        ptec_passes::run_pipeline(&mut graph, &passes, |_, _| {}).expect("the graph is planned");
        graph
    };
    let input = HostTensor {
        element: ElementType::F32,
        sizes: vec![4, 1, 3, 2],
        data: (0..24u8).flat_map(|v| f32::from(v).to_le_bytes()).collect(),
    };
    let expected = f32s(&run(&planned(&text("", "")), &input)[0]);
    let got = f32s(
        &run(
            &planned(&text(CHANNELS_LAST_TEXT, "{order [2, 3, 1, 0]}")),
            &input,
        )[0],
    );
    // Image n reads rows 0 and 1 of column 0: 6n and 6n + 2.
    let reference: Vec<f32> = (0..4)
        .map(|n| (6 * n) as f32 + (6 * n + 2) as f32 * 10.0)
        .collect();
    assert_eq!(expected, reference);
    assert_eq!(got, reference);
}

/// `view_copy` reshapes the logical order, as PyTorch's view does, whatever
/// the dim order of its out tensor: `flatten` ([2, 3, 2, 2] into [2, 12])
/// whose out the file stores column-major (dim order [1, 0]) gives the
/// bundled outputs on every back end, through a row-major view and a copy
/// (a view alone cannot reinterpret bytes of another order).
#[test]
fn a_view_into_another_dim_order_reshapes_the_logical_order() {
    let lie = Lie::of("ops/flatten.portable.bpte");
    let lie = lie.patch(|lie| {
        let program = lie.program();
        let (_, call) = find_instruction(&program, |i| i.instr_args_as_kernel_call().is_some());
        let args = call
            .instr_args_as_kernel_call()
            .expect("a kernel call")
            .args()
            .expect("arguments");
        let out = args.get(args.len() - 1) as usize;
        let tensor = value(&program, out).val_as_tensor().expect("a tensor");
        let order = tensor.dim_order().expect("a dim order");
        assert_eq!(order.bytes(), [0, 1], "the fixture's out is row-major");
        let order = order.bytes();
        vec![
            Patch::element(order, 1, 0, &[1]),
            Patch::element(order, 1, 1, &[0]),
        ]
    });
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = lie.save(dir.path(), "flatten_column_major.bpte");
    let optimized = optimized_ir(file.to_str().expect("utf-8"), &[]);
    assert!(optimized.contains("{order [1, 0]}"), "{optimized}");
    for backend in ["jit", "aot", "vulkan"] {
        let reports = ptec_test(std::slice::from_ref(&file), &["--backend", backend]);
        assert_eq!(reports[0]["pass"], true, "{backend}: {}", reports[0]);
    }
}
