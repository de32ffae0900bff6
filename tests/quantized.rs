//! The quantize family of ExecuTorch's quantized kernels
//! (`quantized_decomposed::*`): the fixtures of `tests/fixtures/quantized/`
//! (`scripts/gen_quantized_fixtures.py`), whose expected outputs are
//! ExecuTorch's own, pass bit for bit with the JIT and through the C ABI,
//! as programs and as Vulkan delegates, and with each pass switched off;
//! arguments ptec refuses are named.
//! `tests/spirv.rs` runs those a shader can run on a Vulkan device.

mod common;

use std::path::PathBuf;

use common::{assert_all_pass, assert_pass_with_each_pass_off, ptec_test, repo_dir, with_suffix};

/// Fixtures whose float results go through float matrix products, which
/// ptec sums in another order than ExecuTorch's kernels (one rounding step
/// apart): compared within the default tolerance.
const FLOAT_PRODUCTS: &[&str] = &["pt2e_dynamic_mlp.portable.bpte"];

/// The fixtures that run, and the refused ones.
fn fixtures() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let dir = repo_dir().join("tests/fixtures/quantized");
    let mut running = with_suffix(&dir, ".portable.bpte");
    running.extend(with_suffix(&dir, ".vulkan.bpte"));
    assert!(running.len() >= 17, "the quantized fixtures are missing");
    (running, with_suffix(&dir, ".refused.bpte"))
}

fn is_float_product(path: &std::path::Path) -> bool {
    FLOAT_PRODUCTS
        .iter()
        .any(|name| path.file_name().and_then(|file| file.to_str()) == Some(name))
}

/// The fixtures compared bit for bit, and those with float products.
fn exact_and_inexact() -> (Vec<PathBuf>, Vec<PathBuf>) {
    let (running, _) = fixtures();
    let (inexact, exact): (Vec<PathBuf>, Vec<PathBuf>) =
        running.into_iter().partition(|path| is_float_product(path));
    assert_eq!(inexact.len(), FLOAT_PRODUCTS.len());
    (exact, inexact)
}

/// Every fixture on `backend`: bit for bit, but the float products.
fn fixtures_pass_on(backend: &str) {
    let (exact, inexact) = exact_and_inexact();
    assert_all_pass(
        &ptec_test(
            &exact,
            &["--backend", backend, "--rtol", "0", "--atol", "0"],
        ),
        &format!("quantized fixtures, bit for bit, --backend {backend}"),
    );
    assert_all_pass(
        &ptec_test(&inexact, &["--backend", backend]),
        &format!("quantized fixtures with float products, --backend {backend}"),
    );
}

#[test]
fn fixtures_pass_bit_for_bit_with_the_jit() {
    fixtures_pass_on("jit");
}

#[test]
fn fixtures_pass_bit_for_bit_through_the_c_abi() {
    fixtures_pass_on("aot");
}

/// Each pass switched off, and the pipeline stopped after each, changes no
/// bit.
#[test]
fn every_pass_can_be_switched_off() {
    let (exact, _) = exact_and_inexact();
    assert_pass_with_each_pass_off(&exact, &["--rtol", "0", "--atol", "0"]);
}

/// Arguments the kernels refuse, or ptec cannot represent, are named.
#[test]
fn wrong_arguments_are_named() {
    let (_, refused) = fixtures();
    let expected = [
        (
            "quant_min_above_quant_max",
            "argument `quant_min`: 10 is greater than quant_max 5",
        ),
        (
            "quant_min_beyond_int8",
            "argument `quant_min`: -300 is below i8's least value -128",
        ),
        (
            "uint16",
            "argument `dtype`: 27 is not an element type ptec knows",
        ),
    ];
    assert_eq!(refused.len(), expected.len());
    for report in ptec_test(&refused, &[]) {
        let file = report["file"].as_str().expect("file name");
        let (_, message) = expected
            .iter()
            .find(|(name, _)| file.ends_with(&format!("/{name}.refused.bpte")))
            .unwrap_or_else(|| panic!("no expected error for {file}"));
        let error = report["error"].as_str().unwrap_or_default();
        assert!(
            report["pass"] == serde_json::Value::Bool(false) && error.contains(message),
            "{file}: expected an error containing {message:?}, got {report}"
        );
    }
}
