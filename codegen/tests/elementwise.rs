//! Elementwise semantics on the CPU: small graphs in the IR's text form,
//! compiled by the JIT and run, one or more per family of the IR's scalar
//! primitives (NaN through maximum, minimum and clamps; integer division,
//! its rounding and its error; unsigned integers; sign; comparisons; a fused
//! chain). Thirteen elements make every f32 map run both its four-lane loop
//! and its scalar tail, so special values sit in both. The graphs the Vulkan
//! backend takes must also give shaders that naga's validator accepts.

mod common;

use common::{elements, le_bytes, run_jit};
use ptec_codegen::{
    Backend, CodegenError, CodegenOptions, Place, VulkanLimits, VulkanSegment, compile_jit,
    compile_vulkan, vulkan_placement,
};
use ptec_ir::ops::OpError;
use ptec_ir::ops::elementwise::{BinaryOp, Func, UnaryOp};
use ptec_ir::ops::promotion::Operand;
use ptec_ir::{DType, Problem, Scalar};
use ptec_runtime::{HostTensor, RuntimeError};

/// Parses `text` and runs it with the JIT on `inputs`.
fn run(text: &str, inputs: &[Vec<u8>]) -> Result<Vec<HostTensor>, RuntimeError> {
    let graph = ptec_ir::parse(text).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let inputs: Vec<&[u8]> = inputs.iter().map(Vec::as_slice).collect();
    run_jit(&graph, &inputs)
}

/// The outputs of a graph that must run.
fn outputs(text: &str, inputs: &[Vec<u8>]) -> Vec<HostTensor> {
    run(text, inputs).expect("the graph runs")
}

fn f32_bytes(values: &[f32]) -> Vec<u8> {
    le_bytes(values, f32::to_le_bytes)
}

fn i32_bytes(values: &[i32]) -> Vec<u8> {
    le_bytes(values, i32::to_le_bytes)
}

fn f32s(tensor: &HostTensor) -> Vec<f32> {
    elements(tensor, f32::from_le_bytes)
}

fn bools(tensor: &HostTensor) -> Vec<bool> {
    tensor.data.iter().map(|&byte| byte != 0).collect()
}

/// Bit patterns, so that NaN equals NaN and -0.0 differs from 0.0.
fn bits(values: &[f32]) -> Vec<u32> {
    values.iter().map(|value| value.to_bits()).collect()
}

/// Fails unless each element is the wanted one, bit for bit, or both are
/// NaN (arithmetic that makes a NaN need not make the same one as Rust).
fn assert_same(got: &[f32], wanted: &[f32]) {
    assert_eq!(got.len(), wanted.len());
    for (k, (&got, &wanted)) in got.iter().zip(wanted).enumerate() {
        let same = got.to_bits() == wanted.to_bits() || (got.is_nan() && wanted.is_nan());
        assert!(same, "element {k}: {got} for {wanted}");
    }
}

const NAN: f32 = f32::NAN;

/// Two f32 operands of thirteen elements, NaN in the vector loop and in
/// the tail, on either side.
fn nan_operands() -> [Vec<f32>; 2] {
    let mut a: Vec<f32> = (0..13).map(|k| k as f32 - 6.0).collect();
    let mut b: Vec<f32> = (0..13).map(|k| 6.0 - k as f32).collect();
    a[1] = NAN;
    b[2] = NAN;
    a[12] = NAN;
    b[11] = NAN;
    [a, b]
}

const MAXIMUM_MINIMUM: &str = "
graph maximum_minimum (arena 256 bytes) {
  %0: f32[13] @0 = input 0
  %1: f32[13] @64 = input 1
  %2: f32[13] @128 = maximum(%0, %1)
  %3: f32[13] @192 = minimum(%0, %1)
  return %2, %3
}";

#[test]
fn maximum_and_minimum_propagate_nan() {
    let [a, b] = nan_operands();
    let results = outputs(MAXIMUM_MINIMUM, &[f32_bytes(&a), f32_bytes(&b)]);
    for (k, (&x, &y)) in a.iter().zip(&b).enumerate() {
        let (max, min) = (f32s(&results[0])[k], f32s(&results[1])[k]);
        if x.is_nan() || y.is_nan() {
            assert!(max.is_nan() && min.is_nan(), "element {k}: {max}, {min}");
        } else {
            assert_eq!((max, min), (x.max(y), x.min(y)), "element {k}");
        }
    }
}

const CLAMPS: &str = "
graph clamps (arena 256 bytes) {
  %0: f32[13] @0 = input 0
  %1: f32[13] @64 = clamp(%0) min=0 max=2.5
  %2: f32[13] @128 = relu(%0)
  %3: f32[13] @192 = clamp(%0) min=none max=-1.5
  return %1, %2, %3
}";

#[test]
fn clamps_keep_nan() {
    let [x, _] = nan_operands();
    let results = outputs(CLAMPS, &[f32_bytes(&x)]);
    let expect = |bound: fn(f32) -> f32| -> Vec<u32> {
        bits(
            &x.iter()
                .map(|&v| if v.is_nan() { v } else { bound(v) })
                .collect::<Vec<_>>(),
        )
    };
    assert_eq!(bits(&f32s(&results[0])), expect(|v| v.clamp(0.0, 2.5)));
    assert_eq!(bits(&f32s(&results[1])), expect(|v| v.max(0.0)));
    assert_eq!(bits(&f32s(&results[2])), expect(|v| v.min(-1.5)));
}

const INTEGER_DIVISION: &str = "
graph integer_division (arena 256 bytes) {
  %0: i32[7] @0 = input 0
  %1: i32[7] @64 = input 1
  %2: i32[7] @128 = floor_div(%0, %1)
  %3: i32[7] @160 = remainder(%0, %1)
  %4: i32[7] @192 = trunc_div(%0, %1)
  return %2, %3, %4
}";

#[test]
fn integer_division_rounds_as_python_and_wraps() {
    let a = [7, -7, 7, -7, i32::MIN, 0, 6];
    let b = [2, 2, -2, -2, -1, 3, 3];
    let results = outputs(INTEGER_DIVISION, &[i32_bytes(&a), i32_bytes(&b)]);
    assert_eq!(
        elements(&results[0], i32::from_le_bytes),
        [3, -4, -4, 3, i32::MIN, 0, 2]
    );
    assert_eq!(
        elements(&results[1], i32::from_le_bytes),
        [1, 1, -1, -1, 0, 0, 0]
    );
    assert_eq!(
        elements(&results[2], i32::from_le_bytes),
        [3, -3, -3, 3, i32::MIN, 0, 2]
    );
}

#[test]
fn integer_division_by_zero_is_an_error() {
    let a = [7, -7, 7, -7, 1, 0, 6];
    let b = [2, 2, -2, -2, 1, 0, 3];
    let error = run(INTEGER_DIVISION, &[i32_bytes(&a), i32_bytes(&b)])
        .expect_err("a zero divisor is an error");
    let RuntimeError::Execution { message, .. } = error else {
        panic!("an execution error, not {error}");
    };
    assert_eq!(message, "integer division by zero");
}

#[test]
fn unsigned_maximum_minimum_and_clamps_of_u8_above_127() {
    let text = "
graph unsigned (arena 384 bytes) {
  %0: u8[6] @0 = input 0
  %1: u8[6] @64 = input 1
  %2: u8[6] @128 = maximum(%0, %1)
  %3: u8[6] @192 = minimum(%0, %1)
  %4: u8[6] @256 = clamp(%0) min=10 max=200
  %5: u8[6] @320 = relu(%0)
  %6: bool[6] @352 = gt(%0, %1)
  return %2, %3, %4, %5, %6
}";
    let a = vec![200u8, 100, 5, 255, 128, 0];
    let b = vec![100u8, 250, 6, 127, 129, 0];
    let results = outputs(text, &[a, b]);
    assert_eq!(results[0].data, [200, 250, 6, 255, 129, 0]);
    assert_eq!(results[1].data, [100, 100, 5, 127, 128, 0]);
    assert_eq!(results[2].data, [200, 100, 10, 200, 128, 10]);
    assert_eq!(results[3].data, [200, 100, 5, 255, 128, 0]);
    assert_eq!(bools(&results[4]), [true, false, false, true, false, false]);
}

const SIGN: &str = "
graph sign (arena 128 bytes) {
  %0: f32[13] @0 = input 0
  %1: f32[13] @64 = sign(%0)
  return %1
}";

#[test]
fn sign_gives_zero_for_nan_and_both_zeros() {
    let x = [
        NAN,
        -0.0,
        0.0,
        -3.0,
        2.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::MIN_POSITIVE,
        -1e-45,
        -NAN,
        5.0,
        -0.0,
        NAN,
    ];
    let got = f32s(&outputs(SIGN, &[f32_bytes(&x)])[0]);
    let wanted = [
        0.0, 0.0, 0.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, 0.0, 1.0, 0.0, 0.0,
    ];
    assert_eq!(bits(&got), bits(&wanted));
}

#[test]
fn sign_of_8_bit_integers() {
    let text = "
graph sign_i8 (arena 64 bytes) {
  %0: i8[5] @0 = input 0
  %1: i8[5] @32 = sign(%0)
  return %1
}";
    let x: Vec<u8> = [-128i8, -5, 0, 7, 127].iter().map(|&v| v as u8).collect();
    let got: Vec<i8> = outputs(text, &[x])[0]
        .data
        .iter()
        .map(|&v| v as i8)
        .collect();
    assert_eq!(got, [-1, -1, 0, 1, 1]);
}

const COMPARISONS: &str = "
graph comparisons (arena 448 bytes) {
  %0: f32[13] @0 = input 0
  %1: f32[13] @64 = input 1
  %2: bool[13] @128 = eq(%0, %1)
  %3: bool[13] @192 = ne(%0, %1)
  %4: bool[13] @256 = lt(%0, %1)
  %5: bool[13] @320 = ge(%0, %1)
  %6: bool[13] @384 = le_scalar(%0) scalar=0
  return %2, %3, %4, %5, %6
}";

#[test]
fn comparisons_with_nan_are_false_but_not_equal() {
    let [mut a, mut b] = nan_operands();
    a[5] = NAN;
    b[5] = NAN;
    let results = outputs(COMPARISONS, &[f32_bytes(&a), f32_bytes(&b)]);
    let wanted = |compare: fn(f32, f32) -> bool| -> Vec<bool> {
        a.iter().zip(&b).map(|(&x, &y)| compare(x, y)).collect()
    };
    assert_eq!(bools(&results[0]), wanted(|x, y| x == y));
    assert_eq!(bools(&results[1]), wanted(|x, y| x != y));
    assert_eq!(bools(&results[2]), wanted(|x, y| x < y));
    assert_eq!(bools(&results[3]), wanted(|x, y| x >= y));
    assert_eq!(bools(&results[4]), wanted(|x, _| x <= 0.0));
    assert!(bools(&results[1])[5], "NaN != NaN");
}

#[test]
fn integer_tensors_compare_with_float_scalars_exactly() {
    let text = "
graph compare_scalar (arena 256 bytes) {
  %0: i32[5] @0 = input 0
  %1: bool[5] @64 = gt_scalar(%0) scalar=2.5
  %2: bool[5] @128 = eq_scalar(%0) scalar=3.0
  %3: bool[5] @192 = lt_scalar(%0) scalar=1e10
  return %1, %2, %3
}";
    let results = outputs(text, &[i32_bytes(&[1, 2, 3, 4, i32::MAX])]);
    assert_eq!(bools(&results[0]), [false, false, true, true, true]);
    assert_eq!(bools(&results[1]), [false, false, true, false, false]);
    assert_eq!(bools(&results[2]), [true; 5]);
}

const FUSED: &str = "
graph fused (arena 256 bytes) {
  %0: f32[13] @0 = input 0
  %1: f32[13] @64 = input 1
  %2: f32[13] @128 = fused(%0, %1) steps=[add(in0, in1) alpha=2; clamp(s0) min=-4 max=6; mul(s1, in0); sub_scalar(s2) scalar=0.5]
  %3: f32[13] @192 = fused(%0) steps=[sigmoid(in0); mul(s0, in0); leaky_relu(s1) slope=0.25]
  return %2, %3
}";

#[test]
fn a_fused_chain_computes_its_steps_in_order() {
    let [a, b] = nan_operands();
    let results = outputs(FUSED, &[f32_bytes(&a), f32_bytes(&b)]);
    let chain: Vec<f32> = a
        .iter()
        .zip(&b)
        .map(|(&x, &y)| {
            let sum = x + y * 2.0;
            let clamped = if sum.is_nan() {
                sum
            } else {
                sum.clamp(-4.0, 6.0)
            };
            clamped * x - 0.5
        })
        .collect();
    assert_same(&f32s(&results[0]), &chain);
    // Within a few ulp: the JIT computes exp itself (codegen/tests/exp.rs).
    for (k, (&x, got)) in a.iter().zip(f32s(&results[1])).enumerate() {
        let silu = 1.0 / (1.0 + (-x).exp()) * x;
        let wanted = if silu > 0.0 { silu } else { silu * 0.25 };
        let close = (got - wanted).abs() <= 1e-6 * wanted.abs();
        assert!(
            close || (got.is_nan() && wanted.is_nan()),
            "element {k}: {got} for {wanted}"
        );
    }
}

#[test]
fn a_fused_chain_of_half_precision_rounds_each_step() {
    let text = "
graph fused_f16 (arena 128 bytes) {
  %0: f16[3] @0 = input 0
  %1: f16[3] @64 = fused(%0) steps=[mul_scalar(in0) scalar=3; sub(s0, in0)]
  return %1
}";
    use half::f16;
    let x = [
        f16::from_f32(1.0 + 3.0 / 1024.0),
        f16::from_f32(2.0),
        f16::from_f32(-0.5),
    ];
    // Each step's result is stored as f16 before the next step reads it.
    let rounded: Vec<u16> = x
        .iter()
        .map(|&x| {
            let tripled = f16::from_f32(x.to_f32() * 3.0);
            f16::from_f32(tripled.to_f32() - x.to_f32()).to_bits()
        })
        .collect();
    // Unrounded, 3x - x in f32 would be 2 + 6 * 2^-10, an f16 of its own;
    // rounding 3x first makes it 2 + 4 * 2^-10.
    assert_eq!(rounded[0], f16::from_f32(2.0 + 4.0 / 1024.0).to_bits());
    let input: Vec<u8> = x.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect();
    let got = elements(&outputs(text, &[input])[0], u16::from_le_bytes);
    assert_eq!(got, rounded);
}

/// The type `func` gives for operands of `dtype`, or `dtype` itself where
/// the function does not compute in it (which the verifier then refuses).
fn result_of(func: Func, operands: usize, dtype: DType) -> DType {
    let operands = vec![Operand::tensor(dtype); operands];
    func.types(&operands).map_or(dtype, |(_, result)| result)
}

/// A graph applying each elementwise function to operands of `dtype`
/// (a `where`'s condition is a bool), into the type PyTorch gives the
/// result (bool for predicates, f32 for floating functions of integers).
fn every_function(dtype: DType) -> Vec<String> {
    let mut calls: Vec<(String, usize, DType)> = Vec::new();
    for op in UnaryOp::ALL {
        let output = result_of(Func::Unary(op), 1, dtype);
        calls.push((format!("{}(%0)", op.name()), 1, output));
    }
    for op in BinaryOp::ALL {
        let output = result_of(Func::Binary { op, alpha: None }, 2, dtype);
        calls.push((format!("{}(%0, %1)", op.name()), 2, output));
        for (text, scalar) in [
            ("2", Scalar::Int(2)),
            ("0.5", Scalar::Float(0.5)),
            ("3.0", Scalar::Float(3.0)),
            ("-1", Scalar::Int(-1)),
        ] {
            let output = result_of(Func::BinaryScalar { op, scalar }, 1, dtype);
            let call = format!("{}(%0) scalar={text}", op.scalar_name());
            calls.push((call, 1, output));
        }
    }
    // The scalar bounds of clamps take part in promotion.
    for (call, min, max) in [
        (
            "clamp(%0) min=0 max=6",
            Some(Scalar::Int(0)),
            Some(Scalar::Int(6)),
        ),
        ("clamp(%0) min=none max=2.5", None, Some(Scalar::Float(2.5))),
    ] {
        let output = result_of(Func::Clamp { min, max }, 1, dtype);
        calls.push((call.to_string(), 1, output));
    }
    for (call, operands) in [
        ("leaky_relu(%0) slope=0.25", 1),
        ("elu(%0) alpha=1.0 scale=1.0507 input_scale=1.0", 1),
        ("add(%0, %1) alpha=2", 2),
    ] {
        calls.push((call.to_string(), operands, dtype));
    }
    calls.push(("where(%2, %0, %1)".to_string(), 3, dtype));
    calls
        .into_iter()
        .map(|(call, operands, output)| {
            let mut text = String::from("graph g (arena 512 bytes) {\n");
            for k in 0..operands.min(2) {
                text += &format!("  %{k}: {dtype}[13] @{} = input {k}\n", k * 128);
            }
            if operands == 3 {
                text += "  %2: bool[13] @256 = input 2\n";
            }
            text += &format!("  %3: {output}[13] @384 = {call}\n  return %3\n}}");
            text
        })
        .collect()
}

/// Whether `error` is a node's refusal on `backend`, or the verifier's
/// refusal of a function that does not compute in its operands' type (as
/// PyTorch refuses the square root of integers or bitwise ops of floats).
fn is_refusal(error: &CodegenError, backend: Backend) -> bool {
    match error {
        CodegenError::Node { source, .. } => matches!(
            **source,
            CodegenError::Unsupported { backend: refusing, .. } if refusing == backend
        ),
        error => is_undefined(error),
    }
}

/// Whether `error` is the verifier's refusal of a function that does not
/// compute in its operands' type.
fn is_undefined(error: &CodegenError) -> bool {
    matches!(
        error,
        CodegenError::Verify(error) if matches!(error.problem, Problem::Op(OpError::Undefined(_)))
    )
}

#[test]
fn every_function_of_every_element_type_compiles_or_is_refused_on_the_cpu() {
    for dtype in DType::ALL {
        for text in every_function(dtype) {
            let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
            if let Err(error) = compile_jit(&graph, &CodegenOptions::default(), u64::MAX) {
                assert!(is_refusal(&error, Backend::Cpu), "{error:?}\n{text}");
            }
        }
    }
}

/// Every function of f32 compiles to shaders, all on the device; those of
/// the other element types shaders compute in compile for the Vulkan back
/// end too, what no shader expresses placed on the CPU.
#[test]
fn every_function_of_f32_compiles_to_shaders() {
    for dtype in [DType::F32, DType::I32, DType::U8, DType::Bool] {
        for text in every_function(dtype) {
            let graph = ptec_ir::parse(&text).unwrap_or_else(|error| panic!("{error}\n{text}"));
            match compile_vulkan(&graph, &VulkanLimits::DEFAULT) {
                Err(error) => assert!(is_undefined(&error), "{error:?}\n{text}"),
                Ok(method) if dtype == DType::F32 => assert!(
                    method
                        .segments
                        .iter()
                        .all(|segment| matches!(segment, VulkanSegment::Device { .. })),
                    "{:?}\n{text}",
                    method.segments
                ),
                Ok(_) => {}
            }
        }
    }
}

/// The graphs above that the Vulkan backend takes: integer division and
/// 8-bit signs aside, every one.
const SHADER_GRAPHS: [&str; 5] = [MAXIMUM_MINIMUM, CLAMPS, SIGN, COMPARISONS, FUSED];

#[test]
fn every_shader_passes_nagas_validator() {
    for text in SHADER_GRAPHS {
        let graph = ptec_ir::parse(text).expect("the graph parses");
        // `compile_vulkan` validates each shader before translating it;
        // validate the WGSL it keeps again, on its own.
        let method =
            compile_vulkan(&graph, &VulkanLimits::DEFAULT).expect("the graph compiles to shaders");
        assert!(!method.shaders.is_empty());
        for shader in &method.shaders {
            let module = naga::front::wgsl::parse_str(&shader.wgsl).unwrap_or_else(|error| {
                panic!("{}\n{}", error.emit_to_string(&shader.wgsl), shader.wgsl)
            });
            // Shaders read where their tensors lie as push constants
            // (immediates).
            naga::valid::Validator::new(
                naga::valid::ValidationFlags::all(),
                naga::valid::Capabilities::IMMEDIATES,
            )
            .validate(&module)
            .unwrap_or_else(|error| {
                panic!("{}\n{}", error.emit_to_string(&shader.wgsl), shader.wgsl)
            });
        }
    }
}

/// Two negations of the same shape, the second of the first's output, each
/// too large to share a dispatch: one shader, dispatched twice with where
/// each reads and writes (in quads) as its push constants.
const TWO_NEGATIONS: &str = "
graph twice (arena 1200000 bytes) {
  %0: f32[100000] @0 = input 0
  %1: f32[100000] @400000 = neg(%0)
  %2: f32[100000] @800000 = neg(%1)
  return %2
}";

#[test]
fn kernels_of_one_shape_share_a_shader() {
    let graph = ptec_ir::parse(TWO_NEGATIONS).expect("the graph parses");
    let method =
        compile_vulkan(&graph, &VulkanLimits::DEFAULT).expect("the graph compiles to shaders");
    assert_eq!(method.shaders.len(), 1);
    let dispatches: Vec<(usize, &[u32])> = method
        .dispatches
        .iter()
        .map(|dispatch| (dispatch.shader, dispatch.push_constants.as_slice()))
        .collect();
    // Each shader reads its input's offset, then its output's, in quads
    // (four elements at a time).
    assert_eq!(
        dispatches,
        [(0, &[0, 25_000][..]), (0, &[25_000, 50_000][..])]
    );
    assert!(
        method.shaders[0]
            .wgsl
            .contains("arena_quads[bases.b1 + p / 4u]")
    );
}

/// The same two negations of 13 elements: one dispatch of one workgroup
/// runs both in order, a barrier between them.
#[test]
fn small_kernels_share_one_dispatch() {
    let text = TWO_NEGATIONS
        .replace("100000", "13")
        .replace("1200000", "192")
        .replace("@400000", "@64")
        .replace("@800000", "@128");
    let graph = ptec_ir::parse(&text).expect("the graph parses");
    let method =
        compile_vulkan(&graph, &VulkanLimits::DEFAULT).expect("the graph compiles to shaders");
    let [dispatch] = method.dispatches.as_slice() else {
        panic!("{:?}", method.dispatches);
    };
    let nodes: Vec<&str> = dispatch
        .kernels
        .iter()
        .map(|kernel| kernel.node.as_str())
        .collect();
    assert_eq!(nodes, ["n0", "n1"]);
    assert_eq!(dispatch.workgroups, [1, 1, 1]);
    let wgsl = &method.shaders[dispatch.shader].wgsl;
    let first = wgsl.find("for (var t = lane;").expect("a loop per kernel");
    let barrier = wgsl.find("storageBarrier();").expect("a barrier");
    let second = wgsl.rfind("for (var t = lane;").expect("a loop per kernel");
    assert!(first < barrier && barrier < second, "{wgsl}");
}

/// Shaders cannot report a zero divisor: the Vulkan back end runs integer
/// division on the CPU, saying so.
#[test]
fn integer_division_runs_on_the_cpu_with_a_reason() {
    let graph = ptec_ir::parse(INTEGER_DIVISION).expect("the graph parses");
    let placed =
        vulkan_placement(&graph, &VulkanLimits::DEFAULT).expect("the graph compiles for Vulkan");
    assert_eq!(placed.len(), 3, "{placed:?}");
    for (node, place) in placed {
        let Place::Cpu(why) = place else {
            panic!("{node} on the device");
        };
        assert!(why.contains("integer division"), "{node}: {why}");
    }
}
