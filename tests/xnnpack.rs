//! `ptec test` on XNNPACK-delegated programs: ptec compiles the delegates'
//! graphs itself, so every fp32 fixture and corpus program passes, with the
//! whole optimizer and with each pass switched off; fp16 programs (computed
//! in f32) and quantized (q8) ones land as close to their expected outputs
//! as ExecuTorch's own XNNPACK runtime does.

mod common;

use std::path::{Path, PathBuf};

use common::{
    assert_all_pass, assert_pass_with_each_pass_off, corpus_for, corpus_programs_pass,
    files_pass_with_cases, ptec, ptec_test, repo_dir, with_suffix,
};

/// The fp32 XNNPACK fixtures: the feature fixtures' XNNPACK variants and
/// `tests/fixtures/xnnpack/`.
fn fixtures() -> Vec<PathBuf> {
    let fixtures = repo_dir().join("tests/fixtures");
    let mut files = with_suffix(&fixtures, ".xnnpack.bpte");
    files.extend(with_suffix(&fixtures.join("xnnpack"), ".xnnpack.bpte"));
    assert!(files.len() >= 11, "the XNNPACK fixtures are missing");
    files
}

#[test]
fn fixtures_pass() {
    files_pass_with_cases(&fixtures(), "XNNPACK fixtures");
}

#[test]
fn corpus_fp32_programs_pass() {
    corpus_programs_pass(".xnnpack.bpte", 8);
}

/// Each pass switched off, and the pipeline stopped after each, on the
/// fixtures.
#[test]
fn every_pass_can_be_switched_off() {
    assert_pass_with_each_pass_off(&fixtures(), &[]);
}

/// A quantized program, and how far ExecuTorch 1.5.1's runtime lands from
/// its expected outputs in each test case (the expected outputs come from
/// the quantized model in eager PyTorch, which rounds a little differently
/// from XNNPACK's integer kernels).
struct Quantized {
    file: PathBuf,
    executorch_errors: Vec<f64>,
    /// How much further than ExecuTorch ptec may land, for `ptec test`.
    slack: f64,
}

impl Quantized {
    fn bound(&self) -> f64 {
        self.executorch_errors.iter().copied().fold(0.0, f64::max) + self.slack
    }
}

/// The slack for quantized outputs: ptec's, like ExecuTorch's, are on the
/// output's quantization grid, and half a step keeps ptec from being a
/// whole step worse than ExecuTorch's worst element anywhere. Without
/// requantizing after each node ptec would land off the grid: 0.19 from
/// `elementwise.xnnpack-q8.bpte`, whose bound is 0.056.
fn half_step(step: f64) -> f64 {
    step / 2.0
}

/// The slack for f32 outputs of dynamically quantized programs, where ptec
/// and ExecuTorch differ only by f32 rounding (9e-8 on `linear_8da4w`);
/// without quantizing rows as XNNPACK does ptec would land 3.6e-3 from its
/// expected outputs, 1.1e-3 beyond the bound.
const F32_SLACK: f64 = 1e-5;

fn numbers(value: &serde_json::Value) -> Vec<f64> {
    value
        .as_array()
        .expect("a list of numbers")
        .iter()
        .map(|number| number.as_f64().expect("a number"))
        .collect()
}

/// The quantized fixtures of `tests/fixtures/xnnpack/`, with what their
/// generator measured; the feature fixtures' q8 variants and the
/// corpus's, measured with `../shared/anchor/et_run.py`.
fn quantized_programs(with_corpus: bool) -> Vec<Quantized> {
    let xnnpack = repo_dir().join("tests/fixtures/xnnpack");
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(xnnpack.join("index.json")).expect("index.json is readable"),
    )
    .expect("index.json is JSON");
    let mut programs: Vec<Quantized> = index
        .as_object()
        .expect("index.json maps files to entries")
        .iter()
        .filter(|(_, entry)| {
            ["xnnpack-q8", "xnnpack-8da4w"].contains(&entry["variant"].as_str().unwrap_or(""))
        })
        .map(|(name, entry)| Quantized {
            file: xnnpack.join(name),
            executorch_errors: numbers(&entry["executorch_errors"]),
            slack: match entry.get("output_steps") {
                Some(steps) => half_step(numbers(steps).into_iter().fold(0.0, f64::max)),
                None => F32_SLACK,
            },
        })
        .collect();
    assert!(
        programs.len() >= 4,
        "the quantized XNNPACK fixtures are missing"
    );
    let measured = |dir: &Path, name: &str, executorch_errors: [f64; 2], output_step| Quantized {
        file: dir.join(name),
        executorch_errors: executorch_errors.to_vec(),
        slack: half_step(output_step),
    };
    let fixtures = repo_dir().join("tests/fixtures");
    programs.push(measured(
        &fixtures,
        "conv_bn.xnnpack-q8.bpte",
        [0.042456865310668945, 0.0],
        0.042457,
    ));
    programs.push(measured(
        &fixtures,
        "linear_relu.xnnpack-q8.bpte",
        [0.0, 0.0],
        0.007759,
    ));
    let corpus = with_corpus.then(|| corpus_for("quantized_programs_land_where_executorch_does"));
    if let Some(corpus) = corpus.flatten() {
        programs.push(measured(
            &corpus,
            "mobilenet_v2.xnnpack-q8.bpte",
            [0.09480199217796326, 0.08243650197982788],
            0.004122,
        ));
        programs.push(measured(
            &corpus,
            "small_cnn.xnnpack-q8.bpte",
            [0.0012987405061721802, 0.0],
            0.0012987,
        ));
    }
    programs
}

/// The bound as `ptec test` tolerances.
fn tolerance(bound: f64) -> [String; 4] {
    [
        "--rtol".to_string(),
        "0".to_string(),
        "--atol".to_string(),
        bound.to_string(),
    ]
}

/// ptec lands where ExecuTorch does, case by case: convolutions, fully
/// connected nodes and average pooling accumulate the integers exactly as
/// XNNPACK does, so their outputs are XNNPACK's (f32 rounding aside for
/// dynamically quantized programs). Accumulating the real numbers instead
/// put mobilenet_v2's second case at 0.0948 where ExecuTorch is at 0.0824.
#[test]
fn quantized_programs_land_where_executorch_does() {
    const SAME: f64 = 1e-6;
    for program in quantized_programs(true) {
        let tolerance = tolerance(program.bound());
        let args: Vec<&str> = tolerance.iter().map(String::as_str).collect();
        let reports = ptec_test(std::slice::from_ref(&program.file), &args);
        assert_all_pass(&reports, &format!("within {}", program.bound()));
        let errors: Vec<f64> = reports[0]["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .map(|case| case["max_abs_err"].as_f64().expect("an error"))
            .collect();
        let same = errors.len() == program.executorch_errors.len()
            && errors
                .iter()
                .zip(&program.executorch_errors)
                .all(|(ptec, executorch)| (ptec - executorch).abs() <= SAME);
        assert!(
            same,
            "{}: ptec's errors {errors:?}, ExecuTorch's {:?}",
            program.file.display(),
            program.executorch_errors
        );
    }
}

/// Convolutions of PT2E dynamic int8 (`is_dynamic`): the exporter declares
/// the result of the conversion of an NCHW input in NCHW order, and XNNPACK
/// gives it the channels-last shape of what it converts, which ptec takes
/// (it refused the program before: "the node computes [1,6,6,3] for value
/// 2, which the graph declares [1, 3, 6, 6]"). ptec lands on eager
/// PyTorch's reference (4.5e-8), each image quantized as one row;
/// ExecuTorch 1.5.1 lands 1.5e-3 and 2.1e-3 away (the index's
/// `executorch_errors`), a difference not traced yet.
#[test]
fn dynamically_quantized_convolutions_take_the_shape_xnnpack_gives() {
    let file = repo_dir().join("tests/fixtures/xnnpack/conv_qd8.xnnpack-qd8.bpte");
    for backend in ["jit", "aot"] {
        let reports = ptec_test(std::slice::from_ref(&file), &["--backend", backend]);
        assert_all_pass(&reports, &format!("conv_qd8 on {backend}"));
    }
}

#[test]
fn quantized_fixtures_pass_with_each_pass_off() {
    for program in quantized_programs(false) {
        let tolerance = tolerance(program.bound());
        let args: Vec<&str> = tolerance.iter().map(String::as_str).collect();
        assert_pass_with_each_pass_off(std::slice::from_ref(&program.file), &args);
    }
}

/// fp16 programs compute in f32 between conversions of the call's f16
/// arguments and outputs (constants widened at import), and land no farther
/// from the expected outputs than ExecuTorch 1.5.1's XNNPACK runtime does
/// (4.9e-4 in each case of this file: XNNPACK rounds to f16 as it
/// accumulates), with the whole optimizer and with each pass switched off.
#[test]
fn fp16_programs_land_where_executorch_does() {
    const EXECUTORCH_ERROR: f64 = 0.00048828125;
    let file = repo_dir().join("tests/fixtures/xnnpack/linear.xnnpack-fp16.bpte");
    let reports = ptec_test(std::slice::from_ref(&file), &[]);
    assert_all_pass(&reports, "fp16 XNNPACK fixture");
    let cases = reports[0]["cases"].as_array().expect("cases");
    assert!(!cases.is_empty(), "no test cases ran");
    for case in cases {
        let error = case["max_abs_err"].as_f64().expect("an error");
        assert!(error <= EXECUTORCH_ERROR, "{}: {case}", file.display());
    }
    let dump = ptec(&["dump", file.to_str().expect("utf-8 path")]);
    let text = String::from_utf8_lossy(&dump.stdout);
    for converted in ["f32[2,8]", "f16[2,4]"] {
        assert!(
            text.lines()
                .any(|line| line.contains(converted) && line.contains("= copy(")),
            "a copy into {converted} in {text}"
        );
    }
    assert_pass_with_each_pass_off(&[file], &[]);
}

/// `ptec dump` shows the delegate's nodes as IR ops, not as one opaque
/// delegate, and the last node writes the call's output.
#[test]
fn dump_shows_the_translated_nodes() {
    let file = repo_dir().join("tests/fixtures/conv_bn.xnnpack.bpte");
    let output = ptec(&["dump", file.to_str().expect("utf-8 path")]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("delegate("), "{text}");
    // The NHWC filter becomes an OIHW one, and the ReLU6 the partitioner
    // fused into the node's output range stays in the convolution.
    assert!(text.contains("permute(%1) dims=[0, 3, 1, 2]"), "{text}");
    assert!(text.contains("clamp_min=0.0 clamp_max=6.0"), "{text}");
    // The convolution writes the call's output itself, without a copy.
    assert!(!text.contains("copy("), "{text}");
}

/// The passes that rewrite quantized programs' requantizations
/// (`shorten-integer-chains`, `elide-requantize`) change no bit of their
/// outputs: the int8 fixtures, and mobilenet_v2's int8 program (which has
/// both rewrites: residual blocks), run on one thread with them on and off.
#[test]
fn requantization_passes_change_no_output_bit() {
    const PASSES: [&str; 2] = ["shorten-integer-chains", "elide-requantize"];
    let fixtures = repo_dir().join("tests/fixtures");
    let mut files = vec![
        (fixtures.join("conv_bn.xnnpack-q8.bpte"), &PASSES[..1]),
        (fixtures.join("linear_relu.xnnpack-q8.bpte"), &PASSES[..1]),
    ];
    if let Some(corpus) = corpus_for("requantization_passes_change_no_output_bit") {
        files.push((corpus.join("mobilenet_v2.xnnpack-q8.bpte"), &PASSES[..]));
    }
    let dir = std::env::temp_dir().join(format!("ptec-requantization-{}", std::process::id()));
    for (file, rewritten_by) in files {
        let path = file.to_str().expect("utf-8 path");
        let off: Vec<&str> = PASSES
            .iter()
            .flat_map(|pass| ["--disable-pass", pass])
            .collect();
        // Each pass rewrites the program, so the comparison tests it.
        let ir = |extra: &[&str]| {
            let output = ptec(&[&["compile", "--emit", "ir", "-o", "-", path], extra].concat());
            assert!(output.status.success(), "ptec compile {path}");
            output.stdout
        };
        for pass in rewritten_by {
            assert_ne!(
                ir(&[]),
                ir(&["--disable-pass", pass]),
                "{pass} leaves {path} as it is"
            );
        }
        let outputs = |name: &str, extra: &[&str]| {
            let out = dir.join(name);
            let out = out.to_str().expect("utf-8 path");
            let args = [&["run", path, "--threads", "1", "--output-dir", out], extra].concat();
            let output = ptec(&args);
            assert!(
                output.status.success(),
                "ptec run {path}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let mut files: Vec<PathBuf> = std::fs::read_dir(out)
                .expect("the outputs are written")
                .map(|entry| entry.expect("readable entry").path())
                .collect();
            files.sort();
            assert!(!files.is_empty(), "{path} wrote no output");
            files
                .iter()
                .map(|file| std::fs::read(file).expect("readable output"))
                .collect::<Vec<Vec<u8>>>()
        };
        assert!(
            outputs("on", &[]) == outputs("off", &off),
            "{path}: the outputs differ with the requantization passes off"
        );
        std::fs::remove_dir_all(&dir).expect("temporary outputs removed");
    }
}
