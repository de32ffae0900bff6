//! Threads: a method's outputs are the same bytes on 1, 2 and 3 threads, on
//! the JIT and through a shared object, for the project's fixtures and the
//! corpus programs; and the convolution networks do split their kernels
//! across the pool.

mod common;

use std::path::Path;

use common::{bpte_files, corpus_for, fixture_files, ptec_ok};

/// The outputs `ptec run` writes for `file` on `backend` with `threads`.
fn outputs(file: &Path, backend: &str, threads: &str) -> Vec<Vec<u8>> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let out = dir.path().to_str().expect("a UTF-8 path");
    let path = file.to_str().expect("a UTF-8 path");
    ptec_ok(&[
        "run",
        path,
        "--backend",
        backend,
        "--threads",
        threads,
        "--output-dir",
        out,
    ]);
    let mut files = npy_files(dir.path());
    files.sort();
    assert!(!files.is_empty(), "{} wrote no outputs", file.display());
    files
        .iter()
        .map(|output| std::fs::read(output).expect("the output reads"))
        .collect()
}

/// The `.npy` files of a folder.
fn npy_files(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .expect("the output folder lists")
        .map(|entry| entry.expect("an entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "npy"))
        .collect()
}

fn assert_same_bits(files: &[std::path::PathBuf]) {
    assert!(!files.is_empty(), "no programs");
    for file in files {
        for backend in ["jit", "aot"] {
            let one = outputs(file, backend, "1");
            for threads in ["2", "3"] {
                assert!(
                    outputs(file, backend, threads) == one,
                    "{} on {backend}: the outputs on {threads} threads differ from one thread's",
                    file.display()
                );
            }
        }
    }
}

/// Programs whose first method runs on bundled inputs and is not a Vulkan
/// delegate's (the CPU back ends are what threads change).
fn cpu_programs(files: Vec<std::path::PathBuf>) -> Vec<std::path::PathBuf> {
    files
        .into_iter()
        .filter(|file| {
            let name = file.to_string_lossy();
            name.ends_with(".portable.bpte") || name.contains(".xnnpack")
        })
        .collect()
}

#[test]
fn fixtures_give_the_same_bits_on_any_thread_count() {
    assert_same_bits(&cpu_programs(fixture_files()));
}

#[test]
fn corpus_programs_give_the_same_bits_on_any_thread_count() {
    let Some(corpus) = corpus_for("corpus_programs_give_the_same_bits_on_any_thread_count") else {
        return;
    };
    assert_same_bits(&cpu_programs(bpte_files(&corpus)));
}

/// The disassembly `ptec compile --emit asm` lists for `file`.
fn listing(file: &Path) -> String {
    ptec_ok(&[
        "compile",
        file.to_str().expect("a UTF-8 path"),
        "--emit",
        "asm",
    ])
}

/// mobilenet_v2's convolutions are large enough to split: its entry point
/// calls the pool.
#[test]
fn convolution_networks_call_the_pool() {
    let Some(corpus) = corpus_for("convolution_networks_call_the_pool") else {
        return;
    };
    let listing = listing(&corpus.join("mobilenet_v2.portable.bpte"));
    let calls = listing.matches("ptec_parallel_for").count();
    assert!(calls >= 30, "{calls} calls of the pool in mobilenet_v2");
}

/// Elementwise chains over large tensors split too: the int8 mobilenet_v2
/// quantizes its 150,528 input elements in a fused chain, which the entry
/// point hands to the pool (a kernel the pool runs is an argument, one
/// called whole is a call's target).
#[test]
fn large_elementwise_chains_call_the_pool() {
    let Some(corpus) = corpus_for("large_elementwise_chains_call_the_pool") else {
        return;
    };
    let listing = listing(&corpus.join("mobilenet_v2.xnnpack-q8.bpte"));
    let pooled = listing
        .lines()
        .filter(|line| line.contains(" mov rsi,") && line.ends_with("_fused"))
        .count();
    assert!(
        pooled >= 1,
        "no fused chain of the int8 mobilenet_v2 runs on the pool"
    );
}
