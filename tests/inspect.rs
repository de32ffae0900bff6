//! `ptec inspect` on real files: every corpus file and fixture reads, the JSON
//! report carries what the format says each file holds, and the exit codes
//! follow the contract (0 success, 1 invalid input, 2 usage).

mod common;

use std::path::Path;

use common::{corpus_for, fixture_files, ptec};
use serde_json::Value;

fn inspect_json(path: &Path) -> Value {
    let output = ptec(&["inspect", "--json", path.to_str().expect("utf-8 path")]);
    assert!(
        output.status.success(),
        "ptec inspect {} failed: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("inspect --json prints JSON")
}

fn method(report: &Value) -> &Value {
    &report["methods"][0]
}

#[test]
fn every_fixture_reads_as_text_and_json() {
    for file in fixture_files() {
        let report = inspect_json(&file);
        assert_eq!(report["format"], "bundled_program", "{}", file.display());
        assert!(
            report["test_suites"][0]["cases"]
                .as_u64()
                .is_some_and(|cases| cases >= 1)
        );
        let text = ptec(&["inspect", file.to_str().expect("utf-8 path")]);
        assert!(text.status.success());
        assert!(String::from_utf8_lossy(&text.stdout).contains("method forward"));
    }
}

/// The report says where `--backend vulkan` runs each kernel: all on the
/// device for a linear layer, the gathers of an upsampling on the CPU with
/// their reason, every kernel on the CPU with control flow; a method with
/// dynamic shapes is refused, and the report says why.
#[test]
fn the_vulkan_placement_is_reported() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let vulkan = |file: &str| method(&inspect_json(&fixtures.join(file))).clone();
    let linear = vulkan("linear_relu.vulkan.bpte");
    assert_eq!(
        linear["vulkan"]["device_kernels"], linear["kernels"],
        "{linear}"
    );
    assert_eq!(linear["vulkan"]["cpu_kernels"], serde_json::json!([]));

    let upsample = vulkan("vulkan/upsample_bilinear.vulkan.bpte");
    let cpu = upsample["vulkan"]["cpu_kernels"]
        .as_array()
        .expect("cpu kernels");
    assert!(!cpu.is_empty(), "{upsample}");
    for kernel in cpu {
        assert_eq!(kernel["op"], "index", "{kernel}");
        assert!(
            kernel["reason"]
                .as_str()
                .is_some_and(|why| why.starts_with("gathers")),
            "{kernel}"
        );
    }
    let device = upsample["vulkan"]["device_kernels"]
        .as_u64()
        .expect("a count");
    assert!(device > 0, "{upsample}");
    assert_eq!(
        Some(device + cpu.len() as u64),
        upsample["kernels"].as_u64()
    );

    let cond = vulkan("cond.portable.bpte");
    assert_eq!(cond["vulkan"]["device_kernels"], 0, "{cond}");
    assert!(
        cond["vulkan"]["cpu_kernels"]
            .as_array()
            .is_some_and(|kernels| !kernels.is_empty()
                && kernels
                    .iter()
                    .all(|kernel| kernel["reason"] == "the method has control flow")),
        "{cond}"
    );

    let dynamic = vulkan("dyn_batch.portable.bpte");
    assert_eq!(dynamic["vulkan"], Value::Null);
    assert!(
        dynamic["vulkan_error"]
            .as_str()
            .is_some_and(|why| why.ends_with("dynamic shapes")),
        "{dynamic}"
    );
    let text = ptec(&[
        "inspect",
        fixtures
            .join("vulkan/upsample_bilinear.vulkan.bpte")
            .to_str()
            .expect("utf-8 path"),
    ]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("on the CPU: 8 index (gathers"), "{text}");
}

#[test]
fn every_corpus_file_reads() {
    let Some(corpus) = corpus_for("every_corpus_file_reads") else {
        return;
    };
    let files = common::bpte_files(&corpus);
    assert_eq!(files.len(), 28, "the shared corpus has 28 files");
    for file in files {
        let report = inspect_json(&file);
        let name = file
            .file_name()
            .expect("file name")
            .to_string_lossy()
            .into_owned();
        let method = method(&report);
        assert_eq!(method["name"], "forward", "{name}");
        let delegates = method["delegates"].as_array().expect("delegates list");
        let expected_backend = if name.contains(".xnnpack") {
            Some("XnnpackBackend")
        } else if name.contains(".vulkan") {
            Some("VulkanBackend")
        } else {
            None
        };
        match expected_backend {
            Some(backend) => {
                assert!(!delegates.is_empty(), "{name} has delegates");
                for delegate in delegates {
                    assert_eq!(delegate["id"], backend, "{name}");
                    assert!(
                        delegate["nodes"].as_u64().is_some_and(|nodes| nodes > 0),
                        "{name}"
                    );
                }
            }
            None => assert!(delegates.is_empty(), "{name} is portable"),
        }
    }
}

/// Facts from FORMATS.md §5.1, checked on the files they were read from.
#[test]
fn corpus_operator_histograms_match_the_format_notes() {
    let Some(corpus) = corpus_for("corpus_operator_histograms_match_the_format_notes") else {
        return;
    };
    let ops = |file: &str| method(&inspect_json(&corpus.join(file)))["operators"].clone();
    assert_eq!(
        ops("add.portable.bpte"),
        serde_json::json!({"aten::add.out": 1, "aten::mul.out": 1})
    );
    assert_eq!(
        ops("counter.portable.bpte"),
        serde_json::json!({"aten::add.out": 1, "aten::mul.out": 1, "aten::copy_": 1})
    );
    let mobilenet = ops("mobilenet_v2.portable.bpte");
    assert_eq!(mobilenet["aten::convolution.out"], 52);
    assert_eq!(
        mobilenet["aten::_native_batch_norm_legit_no_training.out"],
        52
    );
    assert_eq!(mobilenet["aten::hardtanh.out"], 35);

    let cond = inspect_json(&corpus.join("cond.portable.bpte"));
    assert_eq!(method(&cond)["instructions"]["jump_false"], 2);
    assert_eq!(method(&cond)["instructions"]["move"], 2);

    let encoder = inspect_json(&corpus.join("encoder.xnnpack.bpte"));
    assert_eq!(
        method(&encoder)["delegates"].as_array().map(Vec::len),
        Some(14)
    );
    let encoder = inspect_json(&corpus.join("encoder.vulkan.bpte"));
    assert_eq!(
        method(&encoder)["delegates"].as_array().map(Vec::len),
        Some(5)
    );

    let dyn_batch = inspect_json(&corpus.join("dyn_batch.portable.bpte"));
    assert_eq!(method(&dyn_batch)["inputs"][0]["dynamism"], "dynamic_bound");
    assert_eq!(
        method(&dyn_batch)["inputs"][0]["sizes"],
        serde_json::json!([32, 16])
    );

    let embed = inspect_json(&corpus.join("embed.portable.bpte"));
    assert_eq!(method(&embed)["inputs"][0]["dtype"], "int64");
    assert_eq!(method(&embed)["outputs"].as_array().map(Vec::len), Some(3));
}

#[test]
fn exit_codes() {
    let missing = ptec(&["inspect", "/nonexistent/model.pte"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).starts_with("error: cannot read"));

    let not_a_model = common::repo_dir().join("Cargo.toml");
    let invalid = ptec(&["inspect", not_a_model.to_str().expect("utf-8 path")]);
    assert_eq!(invalid.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&invalid.stderr).starts_with("error: "));
    assert!(String::from_utf8_lossy(&invalid.stderr).contains("not an ExecuTorch file"));

    assert_eq!(ptec(&["inspect"]).status.code(), Some(2));
    assert_eq!(
        ptec(&["inspect", "a", "--no-such-flag"]).status.code(),
        Some(2)
    );
    assert_eq!(ptec(&["no-such-command"]).status.code(), Some(2));
}

/// A reader that closes the pipe early ends ptec quietly (by SIGPIPE, as
/// any Unix tool), without a panic on stderr.
#[test]
fn a_closed_pipe_is_not_a_panic() {
    use std::process::{Command, Stdio};
    let file = common::repo_dir().join("tests/fixtures/add.portable.bpte");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptec"))
        .args(["dump", "--after", "all", file.to_str().expect("utf-8 path")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ptec starts");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("ptec ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}
