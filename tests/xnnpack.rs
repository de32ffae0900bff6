//! `ptec test` on XNNPACK-delegated programs: ptec compiles the delegates'
//! graphs itself, so every fp32 fixture and corpus program passes, with the
//! whole optimizer and with each pass switched off; quantized programs fail
//! with an error that names the XNNPACK node ptec cannot compile.

mod common;

use std::path::PathBuf;

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
    assert_pass_with_each_pass_off(&fixtures());
}

/// Quantized delegates need int8 kernels ptec does not have: the error
/// names the node, its type and debug handle, and the quantized value.
#[test]
fn quantized_programs_are_reported_unsupported() {
    let mut files = with_suffix(&repo_dir().join("tests/fixtures"), ".xnnpack-q8.bpte");
    if let Some(corpus) = corpus_dir() {
        files.extend(with_suffix(&corpus, ".xnnpack-q8.bpte"));
    }
    assert!(files.len() >= 2, "the quantized fixtures are missing");
    for file in &files {
        let output = ptec(&["test", file.to_str().expect("utf-8 path")]);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{}: {stdout}",
            file.display()
        );
        for expected in [
            "XNNPACK node 0 (XNNConvert, debug handle ",
            "(quantized, xnn_datatype_qint8) is not supported",
        ] {
            assert!(
                stdout.contains(expected),
                "{}: expected {expected:?} in {stdout}",
                file.display()
            );
        }
    }
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
