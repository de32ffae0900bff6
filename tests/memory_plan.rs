//! ptec's memory plan against the file's: for every portable program, the
//! arena after ptec's passes is no larger than the one the exporter planned
//! (but for the 0-dim value ptec holds each scalar output in, where the
//! file returns the scalar itself), never below the liveness lower bound,
//! and over the corpus at least 20% smaller.

mod common;

use std::path::Path;

use common::{bpte_files, corpus_dir, corpus_for, fixture_files, ptec};

/// A scalar output's 0-dim value, 8 bytes, in an arena of 16-byte steps.
const SCALAR_OUTPUT_BYTES: u64 = 16;

/// (ptec's arena, the file's arena, the live peak, the scalar outputs) of
/// each method.
fn plans(file: &Path) -> Vec<(u64, u64, u64, u64)> {
    let output = ptec(&["inspect", "--json", file.to_str().expect("utf-8 path")]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    report["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .map(|method| {
            let field = |name: &str| {
                method[name]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{name} in {method}"))
            };
            let scalars = method["outputs"]
                .as_array()
                .expect("outputs")
                .iter()
                .filter(|output| output["kind"] != "Tensor")
                .count() as u64;
            (
                field("planned_bytes"),
                field("executorch_planned_bytes"),
                field("live_peak_bytes"),
                scalars,
            )
        })
        .collect()
}

fn check(files: &[std::path::PathBuf]) -> (u64, u64) {
    let (mut ours, mut theirs) = (0, 0);
    for file in files {
        for (planned, executorch, peak, scalars) in plans(file) {
            assert!(
                planned <= executorch + scalars * SCALAR_OUTPUT_BYTES,
                "{}: ptec plans {planned} bytes, the file {executorch}",
                file.display()
            );
            assert!(
                peak <= planned,
                "{}: {planned} bytes is below the live peak {peak}",
                file.display()
            );
            ours += planned;
            theirs += executorch;
        }
    }
    (ours, theirs)
}

#[test]
fn fixtures_plan_no_more_than_the_file() {
    let files: Vec<_> = fixture_files()
        .into_iter()
        .filter(|path| path.to_string_lossy().ends_with(".portable.bpte"))
        .collect();
    check(&files);
}

#[test]
fn corpus_plans_are_smaller_than_the_files() {
    let Some(corpus) = corpus_for("corpus_plans_are_smaller_than_the_files") else {
        return;
    };
    let files: Vec<_> = bpte_files(&corpus)
        .into_iter()
        .filter(|path| path.to_string_lossy().ends_with(".portable.bpte"))
        .collect();
    let (ours, theirs) = check(&files);
    assert!(
        ours * 5 <= theirs * 4,
        "ptec plans {ours} bytes over the corpus, the files {theirs}: less than 20% smaller"
    );
}

/// After fusion mobilenet_v2 runs one kernel per convolution, plus the
/// global average pool and the classifier.
#[test]
fn mobilenet_v2_runs_one_kernel_per_convolution_plus_two() {
    let Some(corpus) = corpus_for("mobilenet_v2_runs_one_kernel_per_convolution_plus_two") else {
        return;
    };
    let file = corpus.join("mobilenet_v2.portable.bpte");
    let output = ptec(&["inspect", "--json", file.to_str().expect("utf-8 path")]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let method = &report["methods"][0];
    let convolutions = method["operators"]["aten::convolution.out"]
        .as_u64()
        .expect("convolutions");
    let kernels = method["kernels"].as_u64().expect("kernels");
    assert!(
        kernels <= convolutions + 2,
        "{kernels} kernels for {convolutions} convolutions"
    );
}

/// mobilenet_v3_small's hardswish and hardsigmoid are chains of add, clamp,
/// mul and div: after fusion none of those runs as a kernel of its own,
/// except the multiplications that broadcast a squeeze-excitation scale
/// (which cannot join a chain of the other shape). Switching the pass off
/// leaves them all.
#[test]
fn mobilenet_v3_small_elementwise_chains_fuse() {
    let corpus = corpus_dir().expect("../shared/corpus is beside the repository");
    let file = corpus.join("mobilenet_v3_small.portable.bpte");
    let file = file.to_str().expect("utf-8 path");
    let count_ops = |extra: &[&str]| {
        // Without `fuse-epilogue`, which moves the chains after
        // convolutions into them.
        let mut args = vec![
            "dump",
            file,
            "--after",
            "plan-memory",
            "--disable-pass",
            "fuse-epilogue",
        ];
        args.extend(extra);
        let output = ptec(&args);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        let count = |op: &str| text.matches(&format!("= {op}(")).count();
        (
            count("add") + count("clamp") + count("div"),
            count("mul"),
            count("fused"),
        )
    };
    let (standalone, muls, fused) = count_ops(&[]);
    assert_eq!(standalone, 0, "unfused add, clamp or div kernels remain");
    assert!(fused >= 28, "{fused} fused kernels");
    assert!(muls <= 9, "{muls} standalone muls");
    let (unfused, _, none) = count_ops(&["--disable-pass", "fuse-elementwise"]);
    assert!(
        unfused >= 100 && none == 0,
        "{unfused} unfused without the pass"
    );
}

/// The exported encoder multiplies by each attention projection copied
/// across the batch (786 KB a call); remove-copies makes that one matrix
/// product reading the weight itself, which takes its arena from ExecuTorch's
/// 860 KB to under 100 KB. Switched off, the copy and its memory come back.
#[test]
fn encoder_reads_its_projection_weights_in_place() {
    let corpus = corpus_dir().expect("../shared/corpus is beside the repository");
    let file = corpus.join("encoder.portable.bpte");
    let file = file.to_str().expect("utf-8 path");
    let arena = |extra: &[&str]| -> u64 {
        let mut args = vec!["dump", file, "--after", "plan-memory"];
        args.extend(extra);
        let output = ptec(&args);
        let text = String::from_utf8(output.stdout).expect("UTF-8");
        let header = text.lines().next().expect("a graph header");
        let start = header.find("(arena ").expect("the arena size") + "(arena ".len();
        header[start..]
            .split_whitespace()
            .next()
            .and_then(|bytes| bytes.parse().ok())
            .expect("a byte count")
    };
    let output = ptec(&["inspect", "--json", file]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let executorch = report["methods"][0]["executorch_planned_bytes"]
        .as_u64()
        .expect("executorch_planned_bytes");
    let bytes = arena(&[]);
    assert!(bytes < 100_000, "encoder plans {bytes} bytes");
    assert!(
        bytes * 8 < executorch,
        "{bytes} against ExecuTorch's {executorch}"
    );
    let without = arena(&["--disable-pass", "remove-copies"]);
    assert!(without > 786_000, "{without} bytes without the pass");
}

/// An elementwise kernel whose input of the same type dies there writes its
/// result over that input: in mobilenet_v3_small's final plan, fused kernels
/// share memory with an input (without in-place reuse, an input read by a
/// node is live while its output is written, so the two never share).
#[test]
fn elementwise_kernels_reuse_a_dying_input() {
    let corpus = corpus_dir().expect("../shared/corpus is beside the repository");
    let file = corpus.join("mobilenet_v3_small.portable.bpte");
    // Without `fuse-epilogue`, which moves most chains into convolutions.
    let output = ptec(&[
        "dump",
        file.to_str().expect("utf-8 path"),
        "--after",
        "plan-memory",
        "--disable-pass",
        "fuse-epilogue",
    ]);
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    // `%7: f32[1,16,112,112] @0 = convolution(...)`: value, offset.
    let offset_of = |line: &str| -> Option<(String, String)> {
        let (value, rest) = line.trim().split_once(": ")?;
        let offset = rest.split_whitespace().find(|word| word.starts_with('@'))?;
        Some((value.to_string(), offset.to_string()))
    };
    let offsets: std::collections::HashMap<String, String> =
        text.lines().filter_map(offset_of).collect();
    let in_place = text
        .lines()
        .filter(|line| line.contains("= fused("))
        .filter(|line| {
            let Some((_, own)) = offset_of(line) else {
                return false;
            };
            let arguments = line
                .split("fused(")
                .nth(1)
                .and_then(|rest| rest.split(')').next());
            arguments.is_some_and(|arguments| {
                arguments
                    .split(", ")
                    .any(|input| offsets.get(input.trim()) == Some(&own))
            })
        })
        .count();
    assert!(
        in_place >= 10,
        "{in_place} fused kernels write over an input"
    );
}
