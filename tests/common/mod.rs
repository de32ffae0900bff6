//! Helpers shared by the integration tests: where the shared corpus and the
//! project's fixtures are, and running the `ptec` binary.

#![allow(dead_code)] // Each test binary uses its own subset.

pub mod lie;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared corpus beside the repository, when it is there (CI has it).
pub fn corpus_dir() -> Option<PathBuf> {
    let dir = repo_dir().join("../shared/corpus");
    dir.is_dir().then_some(dir)
}

/// The shared corpus for `test`; when it is absent, `None` after saying
/// so through [`not_run`] (which fails the test under CI).
pub fn corpus_for(test: &str) -> Option<PathBuf> {
    let corpus = corpus_dir();
    if corpus.is_none() {
        not_run(test, "../shared/corpus is absent");
    }
    corpus
}

/// The `.bpte` files of a folder, sorted.
pub fn bpte_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot list {}: {error}", dir.display()))
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "bpte"))
        .collect();
    files.sort();
    files
}

/// The project's own fixtures (committed; always present).
pub fn fixture_files() -> Vec<PathBuf> {
    let files = bpte_files(&repo_dir().join("tests/fixtures"));
    assert!(!files.is_empty(), "tests/fixtures has no .bpte files");
    files
}

pub fn ptec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptec"))
        .args(args)
        .output()
        .expect("the ptec binary runs")
}

/// Runs a command that must succeed; returns its standard output.
pub fn run_ok(command: &mut Command, what: &str) -> String {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{what}: cannot run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{}{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// Runs `ptec`, which must succeed; returns its standard output.
pub fn ptec_ok(args: &[&str]) -> String {
    let output = ptec(args);
    assert!(
        output.status.success(),
        "ptec {args:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("UTF-8 output")
}

/// The `.bpte` files of a folder whose names end with `suffix`
/// (`.portable.bpte`, `.xnnpack.bpte`), sorted.
pub fn with_suffix(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    bpte_files(dir)
        .into_iter()
        .filter(|path| path.to_string_lossy().ends_with(suffix))
        .collect()
}

/// Runs `ptec test --json` with extra arguments; returns each file's report.
pub fn ptec_test(files: &[PathBuf], extra: &[&str]) -> Vec<serde_json::Value> {
    let mut args = vec!["test", "--json"];
    args.extend_from_slice(extra);
    let paths: Vec<String> = files
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    args.extend(paths.iter().map(String::as_str));
    let output = ptec(&args);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let reports: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
        .collect();
    assert_eq!(
        reports.len(),
        files.len(),
        "one report per file; stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    reports
}

pub fn assert_all_pass(reports: &[serde_json::Value], context: &str) {
    let failures: Vec<String> = reports
        .iter()
        .filter(|report| report["pass"] != serde_json::Value::Bool(true))
        .map(|report| report.to_string())
        .collect();
    assert!(
        failures.is_empty(),
        "{context}: failing files:\n{}",
        failures.join("\n")
    );
}

/// Every file passes `ptec test`, each having run at least one case.
pub fn files_pass_with_cases(files: &[PathBuf], context: &str) {
    let reports = ptec_test(files, &[]);
    assert_all_pass(&reports, context);
    for report in &reports {
        assert!(
            report["cases"]
                .as_array()
                .is_some_and(|cases| !cases.is_empty()),
            "no test cases ran: {report}"
        );
    }
}

/// The corpus programs whose names end with `suffix` pass (there must be
/// `count` of them); when the corpus is absent nothing runs, which fails
/// under CI.
pub fn corpus_programs_pass(suffix: &str, count: usize) {
    let Some(corpus) = corpus_for(&format!("corpus programs {suffix}")) else {
        return;
    };
    let files = with_suffix(&corpus, suffix);
    assert_eq!(
        files.len(),
        count,
        "the corpus has {count} {suffix} programs"
    );
    assert_all_pass(&ptec_test(&files, &[]), "corpus");
}

/// The files pass with each pass switched off, and with the pipeline
/// stopped after each; `extra` goes to every `ptec test` (tolerances).
pub fn assert_pass_with_each_pass_off(files: &[PathBuf], extra: &[&str]) {
    for pass in ptec_passes::names() {
        for switch in ["--disable-pass", "--stop-after"] {
            let mut args = vec![switch, pass];
            args.extend_from_slice(extra);
            assert_all_pass(&ptec_test(files, &args), &format!("{switch} {pass}"));
        }
    }
}

/// Says on the terminal (past the harness's capture) that `test` did not
/// run and why; under CI (`CI` set) a test that cannot run fails instead.
pub fn not_run(test: &str, problem: &str) {
    assert!(std::env::var_os("CI").is_none(), "{test}: {problem}");
    let notice = format!("\nNOT RUN {test}: {problem}\n");
    std::io::stderr()
        .write_all(notice.as_bytes())
        .expect("stderr is writable");
}

/// Runs the `ptec` binary, killing it and failing the test when it has not
/// finished within `timeout` (a hang is a failure, not a stuck test run).
pub fn ptec_within(timeout: std::time::Duration, args: &[&str]) -> Output {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptec"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the ptec binary starts");
    let drain = |mut pipe: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).expect("a readable pipe");
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("ptec can be waited for") {
            break status;
        }
        if start.elapsed() > timeout {
            child.kill().expect("a hung ptec can be killed");
            child.wait().expect("the killed ptec is reaped");
            panic!("ptec {} did not finish within {timeout:?}", args.join(" "));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().expect("stdout is read"),
        stderr: stderr.join().expect("stderr is read"),
    }
}
