//! `ptec test` on portable programs: every bundled case of the project's
//! fixtures and of the shared corpus passes on the JIT, with the whole
//! optimizer and with each pass switched off in turn.

mod common;

use std::path::{Path, PathBuf};

use common::{
    assert_all_pass, assert_pass_with_each_pass_off, bpte_files, corpus_for, corpus_programs_pass,
    fixture_files, ptec, ptec_test, repo_dir, with_suffix,
};
use serde_json::Value;

/// The portable feature fixtures.
fn portable_fixtures() -> Vec<PathBuf> {
    fixture_files()
        .into_iter()
        .filter(|path| path.to_string_lossy().ends_with(".portable.bpte"))
        .collect()
}

#[test]
fn fixtures_pass() {
    let files = portable_fixtures();
    let reports = ptec_test(&files, &[]);
    assert_all_pass(&reports, "fixtures");
    for report in &reports {
        assert!(
            report["cases"]
                .as_array()
                .is_some_and(|cases| !cases.is_empty())
        );
    }
}

/// Operator fixtures ptec cannot compile yet, with what its error must say.
const NOT_YET_SUPPORTED: &[(&str, &str)] = &[
    (
        "batch_norm_training_half",
        "argument `input`: is bf16: ptec's training batch norm takes float32 and float64",
    ),
    (
        "view_as_real",
        "a complex element type (ComplexFloat, scalar type 9) is not supported by ptec",
    ),
];

/// Every operator fixture passes, except the ones listed as not supported
/// yet, which must fail with an error that says what is not supported (so
/// that support landing updates the list).
#[test]
fn operator_fixtures_pass_or_are_reported_unsupported() {
    let dir = repo_dir().join("tests/fixtures/ops");
    let files = bpte_files(&dir);
    assert!(
        files.len() >= 200,
        "tests/fixtures/ops should hold the per-operator fixtures"
    );
    let mut unexpected = Vec::new();
    for report in ptec_test(&files, &[]) {
        let file = report["file"].as_str().expect("file name").to_string();
        let name = Path::new(&file)
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        let op = name.trim_end_matches(".portable.bpte");
        let passed = report["pass"] == Value::Bool(true);
        match NOT_YET_SUPPORTED.iter().find(|(listed, _)| *listed == op) {
            Some((_, message)) => {
                let error = report["error"].as_str().unwrap_or_default();
                if passed || !error.contains(message) {
                    unexpected.push(format!(
                        "{op}: expected an error containing {message:?}, got {report}"
                    ));
                }
            }
            None if !passed => unexpected.push(format!("{op}: {report}")),
            None => {}
        }
    }
    assert!(
        unexpected.is_empty(),
        "operator fixtures:\n{}",
        unexpected.join("\n")
    );
}

#[test]
fn corpus_portable_programs_pass() {
    corpus_programs_pass(".portable.bpte", 11);
}

/// Each pass switched off in turn, on the fixtures and the corpus' small
/// programs (the large ones run with every pass above).
#[test]
fn every_pass_can_be_switched_off() {
    let mut files = portable_fixtures();
    if let Some(corpus) = corpus_for("every_pass_can_be_switched_off") {
        files.extend(
            with_suffix(&corpus, ".portable.bpte")
                .into_iter()
                .filter(|path| !path.to_string_lossy().contains("mobilenet")),
        );
    }
    assert_pass_with_each_pass_off(&files, &[]);
}

/// The pure-Cranelift kernels (no AVX2 microkernels) give the same results.
#[test]
fn cranelift_only_kernels_pass() {
    let mut files = portable_fixtures();
    if let Some(corpus) = corpus_for("cranelift_only_kernels_pass") {
        files.extend(with_suffix(&corpus, ".portable.bpte"));
    }
    assert_all_pass(
        &ptec_test(&files, &["--no-microkernels"]),
        "--no-microkernels",
    );
}

#[test]
fn failures_are_reported() {
    // A zero tolerance fails the float cases that are not bit-exact.
    let file = repo_dir().join("tests/fixtures/conv_bn.portable.bpte");
    let output = ptec(&[
        "test",
        "--rtol",
        "0",
        "--atol",
        "0",
        file.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stdout).contains("0 passed, 1 failed"));

    let unknown = ptec(&[
        "test",
        "--disable-pass",
        "no-such-pass",
        file.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stdout).contains("unknown pass"));
}

/// Writes a tensor as a `.npy` file.
fn write_npy<T: npyz::AutoSerialize + Copy>(path: &Path, shape: &[u64], values: &[T]) {
    use npyz::WriterBuilder as _;
    let file = std::fs::File::create(path).expect("temporary file");
    let mut writer = npyz::WriteOptions::<T>::new()
        .default_dtype()
        .shape(shape)
        .writer(std::io::BufWriter::new(file))
        .begin_nd()
        .expect("npy header");
    writer.extend(values.iter().copied()).expect("npy data");
    writer.finish().expect("npy written");
}

/// PyTorch raises on integer division by zero; so does ptec, with an error
/// instead of a crash (the generated code checks the divisor).
#[test]
fn integer_division_by_zero_is_an_error() {
    let dir = std::env::temp_dir().join(format!("ptec-div-zero-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let (numerator, denominator) = (dir.join("a.npy"), dir.join("b.npy"));
    write_npy(&numerator, &[3, 4], &(1..=12).collect::<Vec<i64>>());
    write_npy(&denominator, &[4], &[3i64, -2, 0, 5]);
    let file = repo_dir().join("tests/fixtures/ops/floor_divide_int64.portable.bpte");
    let output = ptec(&[
        "run",
        file.to_str().expect("utf-8 path"),
        "--input",
        numerator.to_str().expect("utf-8 path"),
        "--input",
        denominator.to_str().expect("utf-8 path"),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        output.status.code(),
        Some(1),
        "stdout: {}",
        String::from_utf8_lossy(&output.stdout)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error:") && stderr.contains("integer division by zero"),
        "{stderr}"
    );
}

/// PyTorch raises on a gather index outside its dimension; so does ptec,
/// with an error naming the op instead of a read outside the input.
#[test]
fn an_index_out_of_range_is_an_error() {
    let dir = std::env::temp_dir().join(format!("ptec-index-range-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let (x, index) = (dir.join("x.npy"), dir.join("index.npy"));
    write_npy::<i64>(&x, &[4, 3], &(1..=12).collect::<Vec<_>>());
    write_npy::<i64>(&index, &[2, 2], &[0, 3, 4, 1]);
    let file = repo_dir().join("tests/fixtures/ops/gather_int64.portable.bpte");
    let output = ptec(&[
        "run",
        file.to_str().expect("utf-8 path"),
        "--input",
        x.to_str().expect("utf-8 path"),
        "--input",
        index.to_str().expect("utf-8 path"),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.starts_with("error:")
            && stderr.contains("index out of range: an index of dimension 0 (size 4)"),
        "{stderr}"
    );
}

/// `nonzero`'s result has as many rows as the input has non-zero elements,
/// in row-major order, and none for an input of zeros (a `[0, 2]` result the
/// exporter cannot bundle as a test case), on the JIT and through the C ABI.
#[test]
fn nonzero_results_have_the_size_of_the_data() {
    let dir = std::env::temp_dir().join(format!("ptec-nonzero-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let (some, zeros) = (dir.join("some.npy"), dir.join("zeros.npy"));
    write_npy::<i64>(&some, &[3, 4], &[0, 1, 0, 2, 0, 0, 0, 0, -3, 0, 0, 0]);
    write_npy::<i64>(&zeros, &[3, 4], &[0; 12]);
    let file = repo_dir().join("tests/fixtures/ops/nonzero.portable.bpte");
    let path = |path: &Path| path.to_str().expect("utf-8 path").to_string();
    for backend in ["jit", "aot"] {
        for (input, shape, rows) in [
            (&some, [3, 2], vec![0i64, 1, 0, 3, 2, 0]),
            (&zeros, [0, 2], Vec::new()),
        ] {
            let out = dir.join(format!("out-{backend}-{}", shape[0]));
            let output = ptec(&[
                "run",
                &path(&file),
                "--backend",
                backend,
                "--input",
                &path(input),
                "--output-dir",
                &path(&out),
            ]);
            assert!(
                output.status.success(),
                "{backend}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
            let result = npyz::NpyFile::new(
                std::fs::File::open(out.join("output_0.npy")).expect("output written"),
            )
            .expect("npy");
            assert_eq!(result.shape(), &shape, "{backend}");
            let values: Vec<i64> = result.into_vec().expect("i64 data");
            assert_eq!(values, rows, "{backend}");
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `ptec run` with `.npy` inputs writes `.npy` outputs that hold the
/// method's result (`add` computes x + 2 * y, broadcasting y).
#[test]
fn run_reads_and_writes_npy() {
    use npyz::WriterBuilder as _;
    let dir = std::env::temp_dir().join(format!("ptec-run-npy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let write_f32 = |name: &str, shape: &[u64], values: Vec<f32>| {
        let path = dir.join(name);
        let file = std::fs::File::create(&path).expect("temporary file");
        let mut writer = npyz::WriteOptions::<f32>::new()
            .default_dtype()
            .shape(shape)
            .writer(std::io::BufWriter::new(file))
            .begin_nd()
            .expect("npy header");
        writer.extend(values).expect("npy data");
        writer.finish().expect("npy written");
        path
    };
    let x = write_f32("x.npy", &[4, 8], (0..32).map(|i| i as f32).collect());
    let y = write_f32("y.npy", &[8], (0..8).map(|i| i as f32 * 0.5).collect());
    let out = dir.join("out");
    let file = repo_dir().join("tests/fixtures/add.portable.bpte");
    let path = |path: &Path| path.to_str().expect("utf-8 path").to_string();
    let output = ptec(&[
        "run",
        &path(&file),
        "--input",
        &path(&x),
        "--input",
        &path(&y),
        "--output-dir",
        &path(&out),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result =
        npyz::NpyFile::new(std::fs::File::open(out.join("output_0.npy")).expect("output written"))
            .expect("npy");
    assert_eq!(result.shape(), &[4, 8]);
    let values: Vec<f32> = result.into_vec().expect("f32 data");
    std::fs::remove_dir_all(&dir).ok();
    for (index, value) in values.iter().enumerate() {
        let expected = index as f32 + 2.0 * (index % 8) as f32 * 0.5;
        assert_eq!(*value, expected, "element {index}");
    }
}

/// The constant methods LLM exports add (`get_max_seq_len`, ...) take no
/// inputs and answer an int, a bool or a float, as a 0-dim tensor of
/// int64, bool or float64, on the JIT and through the C ABI.
#[test]
fn constant_methods_are_answered() {
    let file = repo_dir().join("tests/fixtures/dyn_seq.portable.bpte");
    for backend in ["jit", "aot"] {
        for (method, expected) in [
            ("get_max_seq_len", "output 0: int64[] [128]"),
            ("use_kv_cache", "output 0: bool[] [false]"),
            ("get_rope_theta", "output 0: float64[] [10000.000000]"),
        ] {
            let output = ptec(&[
                "run",
                "--backend",
                backend,
                "--method",
                method,
                &file.display().to_string(),
            ]);
            let printed = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success() && printed.trim() == expected,
                "{backend} {method}: {printed}{}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
    }
}

/// A size above an input's bound, or one that breaks what the program
/// requires of its sizes, is an error naming the input and dimension, on
/// the JIT and through the C ABI.
#[test]
fn sizes_above_their_bound_are_errors() {
    let dir = std::env::temp_dir().join(format!("ptec-above-bound-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temporary folder");
    let input = dir.join("x.npy");
    write_npy(&input, &[1, 129, 16], &vec![0f32; 129 * 16]);
    let file = repo_dir().join("tests/fixtures/dyn_seq.portable.bpte");
    for backend in ["jit", "aot"] {
        let expected = "input 0: dimension 1 is 129, above its bound 128";
        let output = ptec(&[
            "run",
            "--backend",
            backend,
            file.to_str().expect("utf-8 path"),
            "--input",
            input.to_str().expect("utf-8 path"),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.code() == Some(1) && stderr.contains(expected),
            "{backend}: {stderr}"
        );
    }
    std::fs::remove_dir_all(&dir).ok();
}
