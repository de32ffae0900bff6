//! `ptec test` on XNNPACK-delegated programs: ptec compiles the delegates'
//! graphs itself, so every fp32 fixture and corpus program passes, with the
//! whole optimizer and with each pass switched off; quantized (q8) programs
//! land as close to their expected outputs as ExecuTorch's own XNNPACK
//! runtime does.

mod common;

use std::path::{Path, PathBuf};

use common::{
    assert_all_pass, assert_pass_with_each_pass_off, corpus_dir, corpus_programs_pass, ptec,
    ptec_test, repo_dir, with_suffix,
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
    let reports = ptec_test(&fixtures(), &[]);
    assert_all_pass(&reports, "XNNPACK fixtures");
    for report in &reports {
        assert!(
            report["cases"]
                .as_array()
                .is_some_and(|cases| !cases.is_empty()),
            "no test cases ran: {report}"
        );
    }
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
/// its expected outputs (which come from the quantized model in eager
/// PyTorch, rounding a little differently from XNNPACK's integer kernels).
struct Quantized {
    file: PathBuf,
    executorch_error: f64,
    /// How much further than ExecuTorch ptec may land.
    slack: f64,
}

impl Quantized {
    fn bound(&self) -> f64 {
        self.executorch_error + self.slack
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
        .map(|(name, entry)| {
            let executorch_error = entry["executorch_max_abs_err"]
                .as_f64()
                .expect("index.json records ExecuTorch's error");
            let slack = match entry["output_steps"].as_array() {
                Some(steps) => half_step(
                    steps
                        .iter()
                        .map(|step| step.as_f64().expect("a step is a number"))
                        .fold(0.0, f64::max),
                ),
                None => F32_SLACK,
            };
            Quantized {
                file: xnnpack.join(name),
                executorch_error,
                slack,
            }
        })
        .collect();
    assert!(
        programs.len() >= 4,
        "the quantized XNNPACK fixtures are missing"
    );
    let measured = |dir: &Path, name: &str, executorch_error, output_step| Quantized {
        file: dir.join(name),
        executorch_error,
        slack: half_step(output_step),
    };
    let fixtures = repo_dir().join("tests/fixtures");
    programs.push(measured(
        &fixtures,
        "conv_bn.xnnpack-q8.bpte",
        0.042457,
        0.042457,
    ));
    programs.push(measured(
        &fixtures,
        "linear_relu.xnnpack-q8.bpte",
        0.0,
        0.007759,
    ));
    if let Some(corpus) = corpus_dir().filter(|_| with_corpus) {
        programs.push(measured(
            &corpus,
            "mobilenet_v2.xnnpack-q8.bpte",
            0.094802,
            0.004122,
        ));
        programs.push(measured(
            &corpus,
            "small_cnn.xnnpack-q8.bpte",
            0.0012987,
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

#[test]
fn quantized_programs_are_as_close_as_executorch() {
    for program in quantized_programs(true) {
        let tolerance = tolerance(program.bound());
        let args: Vec<&str> = tolerance.iter().map(String::as_str).collect();
        let reports = ptec_test(std::slice::from_ref(&program.file), &args);
        assert_all_pass(&reports, &format!("q8 programs within {}", program.bound()));
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

/// Element types ptec does not compute with fail with an error that names
/// the node, its type and debug handle, and the value's kind.
#[test]
fn fp16_programs_are_reported_unsupported() {
    let file = repo_dir().join("tests/fixtures/xnnpack/linear.xnnpack-fp16.bpte");
    let output = ptec(&["test", file.to_str().expect("utf-8 path")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let expected = "XNNPACK node 0 (XNNFullyConnected, debug handle 1): \
                    value 0 (of element type xnn_datatype_fp16) is not supported";
    assert!(
        stdout.contains(expected),
        "expected {expected:?} in {stdout}"
    );
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
