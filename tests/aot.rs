//! Ahead-of-time compilation, tested the way users meet it: `ptec test
//! --backend aot` over the corpus, the C example linked against compiled
//! models (on the host, and cross-compiled for aarch64 under qemu-user), the
//! C ABI's error codes from C, the libraries' dependencies, and the asm and IR
//! listings.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{
    assert_all_pass, corpus_dir, ptec, ptec_ok, ptec_test, repo_dir, run_ok, with_suffix,
};
use ptec_frontend::{ExecutorchFile, FileBytes, ScalarType, TestTensor, TestValue};

fn temp_dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("ptec-aot-{name}-"))
        .tempdir()
        .expect("a temporary directory")
}

fn corpus_file(name: &str) -> PathBuf {
    let dir = corpus_dir().expect("../shared/corpus is beside the repository");
    dir.join(name)
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// Every bundled case of the given programs passes through a loaded `.so`.
fn assert_aot_passes(files: &[PathBuf]) {
    let reports = ptec_test(files, &["--backend", "aot"]);
    assert_all_pass(&reports, "ptec test --backend aot");
}

#[test]
fn aot_backend_passes_the_fixtures() {
    assert_aot_passes(&with_suffix(
        &repo_dir().join("tests/fixtures"),
        ".portable.bpte",
    ));
}

#[test]
fn aot_backend_passes_the_portable_corpus() {
    let dir = corpus_dir().expect("../shared/corpus is beside the repository");
    let files = with_suffix(&dir, ".portable.bpte");
    assert_eq!(files.len(), 11, "the corpus has 11 portable programs");
    assert_aot_passes(&files);
}

/// The numpy type string of a test tensor's element type.
fn npy_descr(dtype: ScalarType) -> &'static str {
    match dtype {
        ScalarType::Float => "<f4",
        ScalarType::Double => "<f8",
        ScalarType::Long => "<i8",
        ScalarType::Int => "<i4",
        ScalarType::Bool => "|b1",
        other => panic!("the C example test has no .npy type for {other:?}"),
    }
}

/// Writes a test tensor as a version 1 `.npy` file.
fn write_npy(path: &Path, tensor: &TestTensor<'_>) {
    let shape: Vec<String> = tensor.sizes.iter().map(i64::to_string).collect();
    let shape = match shape.len() {
        1 => format!("({},)", shape[0]),
        _ => format!("({})", shape.join(", ")),
    };
    let mut header = format!(
        "{{'descr': '{}', 'fortran_order': False, 'shape': {shape}, }}",
        npy_descr(tensor.dtype)
    );
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend((header.len() as u16).to_le_bytes());
    bytes.extend(header.as_bytes());
    bytes.extend(tensor.data);
    std::fs::write(path, bytes).expect("the .npy file is written");
}

/// The values of a test tensor, as f64.
fn tensor_values(tensor: &TestTensor<'_>) -> Vec<f64> {
    let data = tensor.data;
    match tensor.dtype {
        ScalarType::Float => data
            .chunks_exact(4)
            .map(|c| f64::from(f32::from_le_bytes(c.try_into().expect("4 bytes"))))
            .collect(),
        ScalarType::Double => data
            .chunks_exact(8)
            .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
        ScalarType::Long => data
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")) as f64)
            .collect(),
        ScalarType::Int => data
            .chunks_exact(4)
            .map(|c| f64::from(i32::from_le_bytes(c.try_into().expect("4 bytes"))))
            .collect(),
        ScalarType::Bool => data.iter().map(|&b| f64::from(b)).collect(),
        other => panic!("no values for {other:?}"),
    }
}

/// Checks the example's printed outputs against a case's expected ones.
fn check_printed_outputs(printed: &str, expected: &[TestValue<'_>], context: &str) {
    let lines: Vec<&str> = printed.lines().collect();
    assert_eq!(
        lines.len(),
        2 * expected.len(),
        "{context}: two lines per output expected, got:\n{printed}"
    );
    for (index, expected) in expected.iter().enumerate() {
        let TestValue::Tensor(expected) = expected else {
            panic!("{context}: non-tensor expected output");
        };
        let sizes: Vec<String> = expected.sizes.iter().map(i64::to_string).collect();
        let heading = lines[2 * index];
        assert!(
            heading.ends_with(&format!("[{}]", sizes.join(", "))),
            "{context}: output {index} is {heading}, expected sizes {sizes:?}"
        );
        let values: Vec<f64> = lines[2 * index + 1]
            .split_whitespace()
            .map(|value| value.parse().expect("a printed number"))
            .collect();
        let wanted = tensor_values(expected);
        assert_eq!(values.len(), wanted.len(), "{context}: output {index}");
        for (position, (value, want)) in values.iter().zip(&wanted).enumerate() {
            let close = (value - want).abs() <= 1e-5 + 1e-3 * want.abs()
                || (value.is_nan() && want.is_nan());
            assert!(
                close,
                "{context}: output {index} element {position} is {value}, expected {want}"
            );
        }
    }
}

/// Runs `runner` (a C example binary, through `launcher` if any) on every
/// case of the first suite of `file` and checks what it prints.
fn run_example_cases(file: &Path, runner: &[&str], dir: &Path) -> usize {
    let bytes = FileBytes::open(file).expect("the file opens");
    let bundled = ExecutorchFile::read(bytes.bytes()).expect("the file reads");
    let suite = &bundled.test_suites()[0];
    for (case_index, case) in suite.cases.iter().enumerate() {
        let mut args: Vec<String> = runner[1..].iter().map(|arg| arg.to_string()).collect();
        for (input_index, input) in case.inputs.iter().enumerate() {
            let TestValue::Tensor(tensor) = input else {
                panic!("non-tensor input in {}", file.display());
            };
            let path = dir.join(format!("case{case_index}_input{input_index}.npy"));
            write_npy(&path, tensor);
            args.push(path_str(&path).to_string());
        }
        let printed = run_ok(
            Command::new(runner[0]).args(&args).current_dir(dir),
            &format!("the C example on {} case {case_index}", file.display()),
        );
        let context = format!("{} case {case_index}", file.display());
        check_printed_outputs(&printed, &case.expected_outputs, &context);
    }
    suite.cases.len()
}

/// Compiles `file` into `dir` as `output` with its header `model.h`; `extra`
/// adds options.
fn compile_into(file: &Path, dir: &Path, output: &str, extra: &[&str]) {
    let output = dir.join(output);
    let header = dir.join("model.h");
    let mut args = vec![
        "compile",
        path_str(file),
        "-o",
        path_str(&output),
        "--header",
        path_str(&header),
    ];
    args.extend(extra);
    ptec_ok(&args);
}

/// Copies the C program `source` (relative to the repository) into `dir`
/// and builds it with `compiler`, warnings as errors, against `library`
/// and libm.
fn build_c(compiler: &str, source: &str, libraries: &[&str], dir: &Path, output: &str) {
    let name = Path::new(source).file_name().expect("a file name");
    std::fs::copy(repo_dir().join(source), dir.join(name)).expect("the C source is copied");
    let name = name.to_str().expect("a UTF-8 name");
    run_ok(
        Command::new(compiler)
            .args(["-Wall", "-Wextra", "-Werror", "-pthread", name])
            .args(libraries)
            .args(["-lm", "-o", output])
            .current_dir(dir),
        &format!("building {source} with {compiler}"),
    );
}

/// Compiles `file` with its header into `dir` and builds the C example
/// against it with `cc` and nothing but the library and libm.
fn build_example(file: &Path, dir: &Path) {
    compile_into(file, dir, "model.so", &[]);
    build_c("cc", "examples/c/main.c", &["model.so"], dir, "run_model");
}

#[test]
fn c_example_runs_compiled_models() {
    let mut files: Vec<PathBuf> = [
        "add",
        "dyn_batch",
        "dyn_seq",
        "dyn_cnn",
        "sym_ops",
        "linear_relu",
        "conv_bn",
        "multi_out",
    ]
    .iter()
    .map(|name| repo_dir().join(format!("tests/fixtures/{name}.portable.bpte")))
    .collect();
    files.extend(
        ["mlp", "small_cnn", "llama_block"]
            .iter()
            .map(|name| corpus_file(&format!("{name}.portable.bpte"))),
    );
    for file in files {
        let dir = temp_dir("example");
        build_example(&file, dir.path());
        let runner = format!("{}/run_model", dir.path().display());
        let library_path = dir.path().display().to_string();
        // The example finds model.so through the loader's search path.
        let launcher = ["env", &format!("LD_LIBRARY_PATH={library_path}"), &runner];
        let cases = run_example_cases(&file, &launcher, dir.path());
        assert!(cases > 0, "{} has test cases", file.display());
    }
}

/// The C ABI's error codes, checked from C.
#[test]
fn c_abi_reports_bad_calls() {
    let dir = temp_dir("abi");
    let file = repo_dir().join("tests/fixtures/dyn_batch.portable.bpte");
    compile_into(&file, dir.path(), "model.so", &[]);
    build_c(
        "cc",
        "tests/c/abi_errors.c",
        &["model.so"],
        dir.path(),
        "abi_errors",
    );
    let printed = run_ok(
        Command::new("./abi_errors")
            .env("LD_LIBRARY_PATH", dir.path())
            .current_dir(dir.path()),
        "abi_errors",
    );
    assert!(printed.contains("all checks passed"), "{printed}");
}

/// `<prefix>_set_threads` from a C program: mobilenet_v2's outputs are the
/// same bytes on 1, 2 and 3 threads, and bad calls get their status.
#[test]
fn c_programs_set_threads_and_get_the_same_bits() {
    let dir = temp_dir("threads");
    let file = corpus_file("mobilenet_v2.portable.bpte");
    compile_into(&file, dir.path(), "model.so", &[]);
    build_c(
        "cc",
        "tests/c/threads.c",
        &["model.so"],
        dir.path(),
        "threads",
    );
    let printed = run_ok(
        Command::new("./threads")
            .env("LD_LIBRARY_PATH", dir.path())
            .current_dir(dir.path()),
        "threads",
    );
    assert!(printed.contains("all checks passed"), "{printed}");
}

/// `ldd` of a compiled mobilenet_v2 names libc, libm and the loader at most.
#[test]
fn shared_objects_need_only_libc_and_libm() {
    let dir = temp_dir("ldd");
    let library = dir.path().join("mobilenet_v2.so");
    ptec_ok(&[
        "compile",
        path_str(&corpus_file("mobilenet_v2.portable.bpte")),
        "-o",
        path_str(&library),
    ]);
    let listing = run_ok(Command::new("ldd").arg(&library), "ldd");
    for line in listing
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
    {
        let name = line.split_whitespace().next().unwrap_or_default();
        let allowed = name.starts_with("linux-vdso")
            || name.starts_with("libc.so")
            || name.starts_with("libm.so")
            || name.contains("ld-linux");
        assert!(allowed, "mobilenet_v2.so needs {line}:\n{listing}");
    }
}

/// The integer GEMM tiles a quantized program gets are the widest the
/// host's CPU runs: AVX512-VNNI's where it has them (asking Cranelift for
/// a flag it does not have, AVX512BW, once left them unused).
#[cfg(target_arch = "x86_64")]
#[test]
fn integer_tiles_are_the_widest_the_host_runs() {
    use std::arch::is_x86_feature_detected as detected;
    let file = repo_dir().join("tests/fixtures/conv_bn.xnnpack-q8.bpte");
    let listing = ptec_ok(&["compile", path_str(&file), "--emit", "asm"]);
    let avx2 = detected!("avx2") && detected!("fma");
    let vnni512 = detected!("avx512f") && detected!("avx512vnni");
    let form = match (avx2, vnni512, detected!("avxvnni")) {
        (false, ..) => None,
        (true, true, _) => Some("vnni512"),
        (true, false, true) => Some("vnniavx2"),
        (true, false, false) => Some("avx2"),
    };
    match form {
        Some(form) => {
            let tile = format!("__integer_gemm_2_{form}:");
            assert!(listing.contains(&tile), "no {tile} in the listing");
        }
        None => assert!(
            !listing.contains("__integer_gemm_"),
            "integer tiles without AVX2"
        ),
    }
}

#[test]
fn asm_listing_names_every_function() {
    let file = repo_dir().join("tests/fixtures/linear_relu.portable.bpte");
    let listing = ptec_ok(&["compile", path_str(&file), "--emit", "asm"]);
    for expected in ["ptec_create:", "ptec_run:", "ptec_0_forward:", "ret"] {
        assert!(listing.contains(expected), "no {expected} in:\n{listing}");
    }
    // Calls name their targets.
    assert!(
        listing
            .lines()
            .any(|line| line.contains("call") && line.contains("; ptec_0_forward")),
        "no named call to the entry point in:\n{listing}"
    );
    let aarch64 = ptec_ok(&[
        "compile",
        path_str(&file),
        "--emit",
        "asm",
        "--target",
        "aarch64-unknown-linux-gnu",
    ]);
    assert!(
        aarch64.contains("ptec_run:") && aarch64.contains("ret"),
        "{aarch64}"
    );
    let ir = ptec_ok(&["compile", path_str(&file), "--emit", "ir"]);
    assert!(ir.contains("forward"), "{ir}");
    // `-o -` is standard output too, for the text forms only.
    let dir = temp_dir("stdout");
    let in_dir = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_ptec"))
            .args(args)
            .current_dir(dir.path())
            .output()
            .expect("ptec runs")
    };
    let file = file.canonicalize().expect("the fixture exists");
    let dashed = in_dir(&["compile", path_str(&file), "--emit", "ir", "-o", "-"]);
    assert_eq!(String::from_utf8_lossy(&dashed.stdout), ir);
    let so = in_dir(&["compile", path_str(&file), "-o", "-"]);
    let stderr = String::from_utf8_lossy(&so.stderr);
    assert_eq!(so.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("takes --emit asm or ir"), "{stderr}");
    assert!(!dir.path().join("-").exists(), "a file named - was written");
}

#[test]
fn bad_compile_options_are_reported() {
    let file = repo_dir().join("tests/fixtures/add.portable.bpte");
    for (args, message) in [
        (vec!["--prefix", "9lives"], "C identifier"),
        (vec!["--target", "not-a-triple-at-all"], "target"),
        (vec!["--method", "backward"], "no method"),
        (
            vec!["--linker", "/nonexistent/cc"],
            "linking with /nonexistent/cc",
        ),
    ] {
        let dir = temp_dir("bad");
        let output_path = dir.path().join("out.so");
        let mut all = vec!["compile", path_str(&file), "-o", path_str(&output_path)];
        all.extend(args.iter().copied());
        let output = ptec(&all);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{all:?}: {stderr}");
        assert!(
            stderr.starts_with("error:") && stderr.contains(message),
            "{all:?}: {stderr}"
        );
    }
}

/// A directory where a file is expected is named as one (mapping it failed
/// with "No such device"), by `run` and `compile`, and as a data file;
/// `test` tests the bundled programs in it, and names a directory that holds
/// none.
#[test]
fn a_directory_given_as_a_file_is_named() {
    let dir = temp_dir("directory");
    let file = repo_dir().join("tests/fixtures/add.portable.bpte");
    let output_path = dir.path().join("out.so");
    let directory = path_str(dir.path());
    let output = ptec(&["test", directory]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("{directory} holds no bundled program")),
        "{stderr}"
    );
    for name in ["b.portable.bpte", "a.portable.bpte"] {
        std::fs::copy(&file, dir.path().join(name)).expect("the fixture copies");
    }
    let tested = ptec_ok(&["test", directory]);
    let a = tested.find("a.portable.bpte").expect("a is tested");
    let b = tested.find("b.portable.bpte").expect("b is tested");
    assert!(a < b && tested.contains("2 passed, 0 failed"), "{tested}");
    for all in [
        vec!["run", directory],
        vec!["compile", directory, "-o", path_str(&output_path)],
        vec!["run", path_str(&file), "--data", directory],
    ] {
        let output = ptec(&all);
        let printed = [output.stdout, output.stderr].concat();
        let printed = String::from_utf8_lossy(&printed);
        assert_eq!(output.status.code(), Some(1), "{all:?}: {printed}");
        assert!(
            printed.contains(&format!("cannot read {directory}: it is a directory")),
            "{all:?}: {printed}"
        );
    }
}

/// The tools the aarch64 test needs, or a message naming what is missing.
fn cross_tools() -> Result<(), String> {
    let missing: Vec<&str> = ["aarch64-linux-gnu-gcc", "qemu-aarch64"]
        .into_iter()
        .filter(|tool| {
            Command::new(tool)
                .arg("--version")
                .output()
                .map_or(true, |output| !output.status.success())
        })
        .collect();
    match missing.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{} not installed: the aarch64 test cannot run (Debian: apt-get install \
             gcc-aarch64-linux-gnu qemu-user; .ci/run installs them)",
            missing.join(" and ")
        )),
    }
}

/// aarch64 objects of four corpus programs, linked into the C example with
/// Debian's cross compiler, pass their bundled cases under qemu-user.
///
/// Without the tools the test fails under CI (`.ci/run` installs them);
/// elsewhere it says on the terminal that it did not run (written past the
/// test harness's capture, so it is never silent).
#[test]
fn aarch64_objects_pass_under_qemu() {
    if let Err(problem) = cross_tools() {
        common::not_run("aarch64_objects_pass_under_qemu", &problem);
        return;
    }
    for name in ["add", "mlp", "small_cnn", "llama_block"] {
        let file = corpus_file(&format!("{name}.portable.bpte"));
        let dir = temp_dir("aarch64");
        let target = ["--target", "aarch64-unknown-linux-gnu", "--emit", "obj"];
        compile_into(&file, dir.path(), "model.o", &target);
        let compiler = "aarch64-linux-gnu-gcc";
        build_c(
            compiler,
            "examples/c/main.c",
            // An object is linked with the thread pool's source beside it.
            &["model.o", "model_pool.c"],
            dir.path(),
            "run_model",
        );
        let runner = format!("{}/run_model", dir.path().display());
        let launcher = ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", &runner];
        let cases = run_example_cases(&file, &launcher, dir.path());
        assert!(cases > 0, "{name} has test cases");
    }
}
