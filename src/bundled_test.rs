//! `ptec test`: runs every test case of bundled programs, in order on one
//! instance per method (so state carries from case to case), and compares
//! the outputs with the expected ones.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use ptec_frontend::{ExecutorchFile, FileBytes, TestValue};
use ptec_runtime::HostTensor;
use serde::Serialize;

use crate::instance::{Backend, CompileArgs, load, refs};
use crate::npy;
use crate::run::test_input;

#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

#[derive(Debug, Serialize)]
struct FileReport {
    file: String,
    pass: bool,
    cases: Vec<CaseReport>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

#[derive(Debug, Serialize)]
struct CaseReport {
    method: String,
    pass: bool,
    max_abs_err: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    problem: Option<String>,
}

/// Runs the tests of every file; returns whether all passed.
pub fn run(
    files: &[PathBuf],
    backend: Backend,
    tolerance: Tolerance,
    json: bool,
    passes: &CompileArgs,
) -> anyhow::Result<bool> {
    let (mut passed, mut failed) = (0, 0);
    for path in files {
        let report = test_file(path, backend, tolerance, passes);
        if report.pass {
            passed += 1;
        } else {
            failed += 1;
        }
        if json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            print_report(&report);
        }
    }
    if !json {
        println!("{passed} passed, {failed} failed");
    }
    Ok(failed == 0)
}

fn print_report(report: &FileReport) {
    let worst = report
        .cases
        .iter()
        .map(|case| case.max_abs_err)
        .fold(0.0, f64::max);
    match (&report.error, report.pass) {
        (Some(error), _) => println!("FAIL {}: {error}", report.file),
        (None, true) => println!(
            "ok   {} ({} cases, max abs err {worst:.3e})",
            report.file,
            report.cases.len()
        ),
        (None, false) => {
            println!("FAIL {}", report.file);
            for (index, case) in report.cases.iter().enumerate() {
                let verdict = if case.pass { "ok" } else { "FAIL" };
                let problem = case
                    .problem
                    .as_deref()
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default();
                println!(
                    "     case {index} ({}): {verdict}, max abs err {:.3e}{problem}",
                    case.method, case.max_abs_err
                );
            }
        }
    }
}

fn test_file(
    path: &Path,
    backend: Backend,
    tolerance: Tolerance,
    passes: &CompileArgs,
) -> FileReport {
    let mut cases = Vec::new();
    let result = run_cases(path, backend, tolerance, passes, &mut cases);
    let error = result.err().map(|error| format!("{error:#}"));
    FileReport {
        file: path.display().to_string(),
        pass: error.is_none() && !cases.is_empty() && cases.iter().all(|case| case.pass),
        cases,
        error,
    }
}

fn run_cases(
    path: &Path,
    backend: Backend,
    tolerance: Tolerance,
    passes: &CompileArgs,
    reports: &mut Vec<CaseReport>,
) -> anyhow::Result<()> {
    let bytes = FileBytes::open(path)?;
    let file = ExecutorchFile::read(bytes.bytes())?;
    if file.test_suites().is_empty() {
        bail!("the file has no test cases (is it a bundled program?)");
    }
    for suite in file.test_suites() {
        let method = file
            .program()
            .method(&suite.method)
            .with_context(|| format!("no method {}", suite.method))?;
        let mut loaded = load(method, backend, passes)?;
        for (index, case) in suite.cases.iter().enumerate() {
            let inputs: Vec<HostTensor> = case
                .inputs
                .iter()
                .map(test_input)
                .collect::<anyhow::Result<_>>()?;
            let outputs = loaded
                .runner
                .run(&refs(&inputs))
                .with_context(|| format!("case {index} of {}", suite.method))?;
            let mut report = CaseReport {
                method: suite.method.clone(),
                pass: true,
                max_abs_err: 0.0,
                problem: None,
            };
            for (position, (output, expected)) in
                outputs.iter().zip(&case.expected_outputs).enumerate()
            {
                let expected = match expected {
                    TestValue::Tensor(tensor) => npy::from_test_tensor(tensor)?,
                    other => bail!("non-tensor expected outputs ({other:?}) are not supported"),
                };
                let comparison = compare(output, &expected, tolerance)?;
                report.max_abs_err = report.max_abs_err.max(comparison.max_abs_err);
                if let Some(problem) = comparison.problem {
                    report.pass = false;
                    report
                        .problem
                        .get_or_insert(format!("output {position}: {problem}"));
                }
            }
            reports.push(report);
        }
    }
    Ok(())
}

struct Comparison {
    max_abs_err: f64,
    /// Why the outputs differ, when they do.
    problem: Option<String>,
}

/// Elementwise: floats pass when |got - expected| <= atol + rtol * |expected|
/// (NaN matches NaN, infinities match their own sign); integers and bools
/// must be equal.
fn compare(
    got: &HostTensor,
    expected: &HostTensor,
    tolerance: Tolerance,
) -> anyhow::Result<Comparison> {
    if got.element != expected.element || got.sizes != expected.sizes {
        return Ok(Comparison {
            max_abs_err: f64::INFINITY,
            problem: Some(format!(
                "got {}{:?}, expected {}{:?}",
                got.element, got.sizes, expected.element, expected.sizes
            )),
        });
    }
    let (values, wanted) = (npy::values(got)?, npy::values(expected)?);
    let mut max_abs_err: f64 = 0.0;
    let mut first_bad = None;
    for (index, (&value, &want)) in values.iter().zip(&wanted).enumerate() {
        let same = value == want || (value.is_nan() && want.is_nan());
        let error = if same { 0.0 } else { (value - want).abs() };
        max_abs_err = max_abs_err.max(if error.is_nan() { f64::INFINITY } else { error });
        let close = same
            || (got.element.is_float() && error <= tolerance.atol + tolerance.rtol * want.abs());
        if !close && first_bad.is_none() {
            first_bad = Some(format!("element {index} is {value}, expected {want}"));
        }
    }
    if !got.element.is_float() && first_bad.is_none() && got.data != expected.data {
        first_bad = Some("integer outputs differ".to_string());
    }
    Ok(Comparison {
        max_abs_err,
        problem: first_bad,
    })
}
