//! The differential test: generated programs (`ptec-fuzzgen`, seeded, the
//! same on every run) through the JIT with the optimizer on and off, a
//! shared object run through its C ABI, and the Vulkan back end (with the
//! kernels no shader expresses, such as 64-bit integers and halves, on the
//! CPU between the device's segments), which must agree (bit for bit on integers and booleans and between the JIT
//! and the shared object; within a small tolerance on floats, which the
//! optimizer's fused chains and a device's math functions may round
//! otherwise). A failure prints the program's IR text.
//!
//! Without a Vulkan device the shaders are only compiled and validated,
//! and the test says `NOT RUN` for the device runs, except under CI (`CI`
//! set), where it fails.

mod common;

use ptec_fuzzgen::{Case, Input, Outcome, Runs, case_from_seed, check};
use ptec_ir::DType;

/// How many programs run: enough to reach every kind of node many times,
/// few enough for well under a minute in release on two cores.
const CASES: u64 = 400;

/// The seeds to run: `0..CASES`, or the range `PTEC_DIFFERENTIAL_SEEDS`
/// gives (`16000..18000`), to search further or bisect a finding; with a
/// range each seed is named on stderr before it runs, so that the last one
/// named is the one a crash happened in.
fn seeds() -> (std::ops::Range<u64>, bool) {
    let Ok(range) = std::env::var("PTEC_DIFFERENTIAL_SEEDS") else {
        return (0..CASES, false);
    };
    let bounds = range
        .split_once("..")
        .and_then(|(start, end)| Some((start.parse().ok()?, end.parse().ok()?)));
    match bounds {
        Some((start, end)) if start < end => (start..end, true),
        _ => panic!("PTEC_DIFFERENTIAL_SEEDS={range:?}: expected START..END"),
    }
}

/// Every how many programs one is also linked and run as a shared object
/// (linking is the expensive step).
const AOT_EVERY: u64 = 10;

#[test]
fn generated_programs_agree_on_every_back_end() {
    let device = device_for("generated_programs_agree_on_every_back_end (Vulkan runs)");
    let (mut refused, mut failed, mut agreed, mut exact) = (0, 0, 0, 0);
    let (mut on_vulkan, mut with_cpu) = (0, 0);
    let (seeds, named) = seeds();
    let count = seeds.end - seeds.start;
    for seed in seeds {
        if named {
            eprintln!("seed {seed}");
        }
        let case = case_from_seed(seed);
        let runs = Runs {
            aot: seed % AOT_EVERY == 0,
            vulkan: device,
        };
        match check(&case, runs) {
            Ok(Outcome::Refused(_)) => refused += 1,
            Ok(Outcome::Failed(_)) => failed += 1,
            Ok(Outcome::Agreed {
                exact: same,
                vulkan,
                cpu_kernels,
            }) => {
                agreed += 1;
                exact += usize::from(same);
                on_vulkan += usize::from(vulkan);
                with_cpu += usize::from(cpu_kernels > 0);
            }
            Err(finding) => panic!("seed {seed}: {finding}\n{}", case.text),
        }
    }
    eprintln!(
        "{count} programs: {agreed} agreed ({exact} bit for bit, {on_vulkan} on Vulkan too, \
         {with_cpu} of them with kernels on the CPU), {failed} failed alike at run time, \
         {refused} refused"
    );
    // The generator writes programs the verifier accepts: most must run,
    // or the test would check little.
    assert!(
        agreed * 4 >= count as usize * 3,
        "only {agreed} of {count} programs ran ({refused} refused, {failed} failed)"
    );
    // The generator writes fixed shapes only, so the Vulkan back end runs
    // every program the JIT runs, some with kernels on the CPU.
    assert_eq!(on_vulkan, agreed, "programs the Vulkan back end refused");
    assert!(
        with_cpu > 0,
        "no program ran kernels on the CPU under Vulkan"
    );
}

/// Whether a Vulkan device opens; without one, says that `test` did not
/// run (a failure under CI).
fn device_for(test: &str) -> bool {
    match ptec_runtime::vulkan::VulkanDevice::open() {
        Ok(_) => true,
        Err(error) => {
            common::not_run(test, &format!("no Vulkan device: {error}"));
            false
        }
    }
}

/// Checks that `case` runs on the device (and, with `aot`, as a shared
/// object too) with the JIT's results.
fn assert_agrees_on_the_device(case: &Case, aot: bool) {
    match check(case, Runs { aot, vulkan: true }) {
        Ok(Outcome::Agreed { vulkan: true, .. }) => {}
        Ok(other) => panic!("not run on the device: {other:?}\n{}", case.text),
        Err(finding) => panic!("{finding}\n{}", case.text),
    }
}

/// An input of `sizes` with small integers (as f32 or i32), from a
/// linear congruential sequence seeded with `seed`.
fn input(dtype: DType, sizes: &[u64], seed: u32) -> Input {
    let mut state = seed;
    let count: u64 = sizes.iter().product();
    let mut data = Vec::new();
    for _ in 0..count {
        state = state.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
        let value = (state >> 24) as i32 % 7 - 3;
        match dtype {
            DType::F32 => data.extend_from_slice(&(value as f32 * 0.25).to_le_bytes()),
            _ => data.extend_from_slice(&value.to_le_bytes()),
        }
    }
    Input {
        dtype,
        sizes: sizes.to_vec(),
        data,
    }
}

/// The shaders' blocked convolutions and matrix products (a block of
/// channels or rows at several positions or columns per invocation) at
/// sizes that end blocks part-way: rows not a multiple of the block,
/// widths and columns not a multiple of the span, grouped channels,
/// padded and unpadded windows. The device must agree with the CPU
/// (integers bit for bit).
#[test]
fn blocked_shaders_agree_at_ragged_edges() {
    if !device_for("blocked_shaders_agree_at_ragged_edges") {
        return;
    }
    let cases = [
        (
            "%0: f32[11,5] = input 0\n  %1: f32[5,7] = input 1\n  %2: f32[11,7] = input 2\n  \
             %3: f32[11,7] = addmm(%2, %0, %1) beta=1 alpha=1",
            vec![
                (DType::F32, vec![11, 5]),
                (DType::F32, vec![5, 7]),
                (DType::F32, vec![11, 7]),
            ],
            "%3",
        ),
        (
            "%0: i32[3,9,6] = input 0\n  %1: i32[3,6,13] = input 1\n  \
             %2: i32[3,9,13] = mat_mul(%0, %1)",
            vec![(DType::I32, vec![3, 9, 6]), (DType::I32, vec![3, 6, 13])],
            "%2",
        ),
        (
            "%0: f32[2,12,5,9] = input 0\n  %1: f32[12,6,3,3] = input 1\n  %2: f32[12] = input 2\n  \
             %3: f32[2,12,5,9] = convolution(%0, %1, bias=%2) stride=[1, 1] padding=[1, 1] dilation=[1, 1] groups=2",
            vec![
                (DType::F32, vec![2, 12, 5, 9]),
                (DType::F32, vec![12, 6, 3, 3]),
                (DType::F32, vec![12]),
            ],
            "%3",
        ),
        (
            "%0: f32[1,5,7,11] = input 0\n  %1: f32[16,5,1,1] = input 1\n  \
             %2: f32[1,16,4,6] = convolution(%0, %1) stride=[2, 2] padding=[0, 0] dilation=[1, 1] groups=1",
            vec![
                (DType::F32, vec![1, 5, 7, 11]),
                (DType::F32, vec![16, 5, 1, 1]),
            ],
            "%2",
        ),
        (
            "%0: f32[1,6,6,10] = input 0\n  %1: f32[6,1,3,3] = input 1\n  \
             %2: f32[1,6,2,4] = convolution(%0, %1) stride=[2, 2] padding=[0, 0] dilation=[1, 1] groups=6",
            vec![
                (DType::F32, vec![1, 6, 6, 10]),
                (DType::F32, vec![6, 1, 3, 3]),
            ],
            "%2",
        ),
    ];
    for (body, inputs, result) in cases {
        let case = Case {
            text: format!("graph forward {{\n  {body}\n  return {result}\n}}\n"),
            inputs: inputs
                .iter()
                .zip(1..)
                .map(|((dtype, sizes), seed)| input(*dtype, sizes, seed))
                .collect(),
        };
        assert_agrees_on_the_device(&case, false);
    }
}

/// A max-pooling window whose taps inside the input are all -inf takes the
/// first of them, as PyTorch (the shader once returned index -1 there, its
/// strict comparison never taking a tap).
#[test]
fn max_pooling_over_minus_infinity_gives_the_first_tap_inside() {
    if !device_for("max_pooling_over_minus_infinity_gives_the_first_tap_inside") {
        return;
    }
    let values = [f32::NEG_INFINITY, f32::NEG_INFINITY, f32::NEG_INFINITY, 3.0];
    let case = Case {
        text: "graph forward {\n  %0: f32[1,1,4,1] = input 0\n  \
               %1: f32[1,1,3,1], %2: i64[1,1,3,1] = max_pool2d(%0) kernel=[2, 1] stride=[2, 1] \
               padding=[1, 0] dilation=[1, 1] ceil_mode=false\n  return %1, %2\n}\n"
            .into(),
        inputs: vec![Input {
            dtype: DType::F32,
            sizes: vec![1, 1, 4, 1],
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }],
    };
    assert_agrees_on_the_device(&case, true);
}

/// Special values through the shader functions that a driver's own math
/// or algebra gets wrong where IEEE and C say otherwise: `pow` over a grid
/// of zeros, ones, halves, twos, odd integers, infinities and NaN (C's
/// powf); a product with a zero literal (NaN for inf and NaN); a float
/// compared with itself (false for NaN); and floats converted to i32 (the
/// minimum for what it cannot hold). The device must agree with the CPU.
#[test]
fn special_values_agree_on_the_device() {
    if !device_for("special_values_agree_on_the_device") {
        return;
    }
    let specials = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -3.0,
        2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        3e9,
    ];
    let n = specials.len() * specials.len();
    let bytes = |values: Vec<f32>| values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let bases = specials.iter().flat_map(|&x| specials.map(|_| x)).collect();
    let exponents = specials.iter().flat_map(|_| specials).collect();
    let case = Case {
        text: format!(
            "graph forward {{\n  %0: f32[{n}] = input 0\n  %1: f32[{n}] = input 1\n  \
             %2: f32[{n}] = pow(%0, %1)\n  %3: f32[{n}] = mul_scalar(%0) scalar=0\n  \
             %4: bool[{n}] = eq(%1, %1)\n  %5: bool[{n}] = ne(%1, %1)\n  \
             %6: i32[{n}] = copy(%0)\n  return %2, %3, %4, %5, %6\n}}\n"
        ),
        inputs: [bases, exponents]
            .into_iter()
            .map(|values| Input {
                dtype: DType::F32,
                sizes: vec![n as u64],
                data: bytes(values),
            })
            .collect(),
    };
    assert_agrees_on_the_device(&case, true);
}
