//! `ptec test` on Vulkan-delegated programs: ptec translates the delegates'
//! operator calls into its own IR and runs them on the CPU, so every fixture
//! (the feature fixtures' Vulkan variants and one per Vulkan operator) and
//! corpus program passes, through the JIT and the C ABI, with the whole
//! optimizer and with each pass switched off; operators it does not
//! translate are reported with their name and place in the chain.

mod common;

use std::path::PathBuf;

use common::{
    assert_all_pass, assert_pass_with_each_pass_off, corpus_programs_pass, files_pass_with_cases,
    ptec, ptec_test, repo_dir, with_suffix,
};

/// The feature fixtures' Vulkan variants and the Vulkan operator fixtures
/// (`tests/fixtures/vulkan/`).
fn fixtures() -> Vec<PathBuf> {
    let mut files = with_suffix(&repo_dir().join("tests/fixtures"), ".vulkan.bpte");
    assert!(files.len() >= 3, "the Vulkan fixtures are missing");
    let operators = with_suffix(&repo_dir().join("tests/fixtures/vulkan"), ".vulkan.bpte");
    assert!(
        operators.len() >= 28,
        "the Vulkan operator fixtures are missing"
    );
    files.extend(operators);
    files
}

#[test]
fn fixtures_pass() {
    files_pass_with_cases(&fixtures(), "Vulkan fixtures");
}

#[test]
fn fixtures_pass_through_the_c_abi() {
    assert_all_pass(
        &ptec_test(&fixtures(), &["--backend", "aot"]),
        "Vulkan fixtures, --backend aot",
    );
}

#[test]
fn corpus_passes() {
    corpus_programs_pass(".vulkan.bpte", 7);
}

/// Each pass switched off, and the pipeline stopped after each, on the
/// fixtures.
#[test]
fn every_pass_can_be_switched_off() {
    assert_pass_with_each_pass_off(&fixtures(), &[]);
}

/// `ptec dump` shows the delegate's operator calls as IR ops: the linear
/// layer becomes a matrix product with the transposed weight, and no opaque
/// delegate node is left.
#[test]
fn dump_shows_the_translated_calls() {
    let file = repo_dir().join("tests/fixtures/linear_relu.vulkan.bpte");
    let output = ptec(&["dump", file.to_str().expect("utf-8 path")]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(!text.contains("delegate("), "{text}");
    assert!(text.contains("addmm("), "{text}");
    assert!(text.contains("relu("), "{text}");
}

/// An operator the translation does not know fails with an error naming
/// it and its position in the graph's chain, before anything is compiled.
#[test]
fn unknown_operators_are_reported() {
    let file = repo_dir().join("tests/fixtures/linear_relu.vulkan.bpte");
    let mut bytes = std::fs::read(&file).expect("the fixture");
    let (name, renamed) = (b"aten.relu.default", b"aten.relu.unknown");
    let at = bytes
        .windows(name.len())
        .position(|window| window == name)
        .expect("the fixture calls aten.relu.default");
    bytes[at..at + name.len()].copy_from_slice(renamed);
    let dir = tempfile::tempdir().expect("a temporary directory");
    let renamed_file = dir.path().join("renamed.vulkan.bpte");
    std::fs::write(&renamed_file, &bytes).expect("the renamed program");
    let output = ptec(&["test", renamed_file.to_str().expect("utf-8 path")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let expected = "Vulkan operator call 1 (aten.relu.unknown): the operator is not supported";
    assert!(
        stdout.contains(expected),
        "expected {expected:?} in {stdout}"
    );
}

/// A quantized operator's activation other than "none" and "relu" is
/// refused with an error naming the argument (the q8ta_conv2d fixture's
/// "relu" rewritten as "gelu").
#[test]
fn unknown_quantized_activations_are_refused() {
    let file = repo_dir().join("tests/fixtures/vulkan/q8ta_conv2d.vulkan.bpte");
    let mut bytes = std::fs::read(&file).expect("the fixture");
    // The flatbuffer string: its length, then its bytes.
    let relu = b"\x04\x00\x00\x00relu";
    let at = bytes
        .windows(relu.len())
        .position(|window| window == relu)
        .expect("the fixture's activation is relu");
    bytes[at + 4..at + relu.len()].copy_from_slice(b"gelu");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let changed = dir.path().join("gelu.vulkan.bpte");
    std::fs::write(&changed, &bytes).expect("the changed program");
    let output = ptec(&["test", changed.to_str().expect("utf-8 path")]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    let expected = "(et_vk.q8ta_conv2d.default): activation is \"gelu\"";
    assert!(
        stdout.contains(expected),
        "expected {expected:?} in {stdout}"
    );
}
