//! Running a bundled program's test cases: every case of every suite, in
//! order on one instance per method (so state carries from case to case),
//! each output compared with the expected one. `ptec test` and the Python
//! package's `ptec.test` print this report.

use std::path::{Path, PathBuf};

use ptec_frontend::ExecutorchFile;
use ptec_passes::PassReport;
use ptec_runtime::{HostTensor, TensorRef};
use serde::Serialize;

use crate::error::Error;
use crate::file::ProgramFile;
use crate::load::{Backend, load};
use crate::pipeline::Options;
use crate::tensors::{test_tensor, values};

/// How close floats must be: |got - expected| <= atol + rtol * |expected|.
#[derive(Debug, Clone, Copy)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
}

impl Default for Tolerance {
    /// `ptec test`'s defaults.
    fn default() -> Self {
        Tolerance {
            rtol: 1e-3,
            atol: 1e-5,
        }
    }
}

/// One file's result. Its JSON form is `ptec test --json`'s stable line.
#[derive(Debug, Serialize)]
pub struct FileReport {
    pub file: String,
    pub pass: bool,
    pub cases: Vec<CaseReport>,
    /// Why the file could not be tested (it does not read, a method does
    /// not compile, a case fails to run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One test case's result.
#[derive(Debug, Serialize)]
pub struct CaseReport {
    pub method: String,
    pub pass: bool,
    pub max_abs_err: f64,
    /// The first output element out of tolerance, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
}

/// Runs every test case of the bundled program at `path` (with the data
/// files at `data`) on `backend`;
/// `passes` sees what the passes did for each method. A file passes when
/// it has cases and every case passes.
pub fn test_file(
    path: &Path,
    data: &[PathBuf],
    backend: Backend,
    tolerance: Tolerance,
    options: &Options,
    mut passes: impl FnMut(&[PassReport]),
) -> FileReport {
    let mut cases = Vec::new();
    let result = ProgramFile::open(path, data).and_then(|program| {
        let run = Run {
            backend,
            tolerance,
            options,
        };
        run.cases(program.file(), &mut passes, &mut cases)
    });
    let error = result.err().map(|error| error.full_message());
    FileReport {
        file: path.display().to_string(),
        pass: error.is_none() && !cases.is_empty() && cases.iter().all(|case| case.pass),
        cases,
        error,
    }
}

/// How a file's cases run.
struct Run<'o> {
    backend: Backend,
    tolerance: Tolerance,
    options: &'o Options,
}

impl Run<'_> {
    fn cases(
        &self,
        file: &ExecutorchFile<'_>,
        passes: &mut impl FnMut(&[PassReport]),
        reports: &mut Vec<CaseReport>,
    ) -> Result<(), Error> {
        if file.test_suites().is_empty() {
            return Err(Error::NotBundled);
        }
        for suite in file.test_suites() {
            if suite.cases.is_empty() {
                return Err(Error::NoCases {
                    method: suite.method.clone(),
                });
            }
            let method = file
                .program()
                .method(&suite.method)
                .ok_or_else(|| Error::no_method(file.program(), &suite.method))?;
            let loaded = load(method, self.backend, self.options)?;
            passes(&loaded.passes);
            let mut runner = loaded.runner;
            for (index, case) in suite.cases.iter().enumerate() {
                let inputs: Vec<HostTensor> = case
                    .inputs
                    .iter()
                    .map(test_tensor)
                    .collect::<Result<_, _>>()?;
                let outputs = runner.run(&refs(&inputs)).map_err(|source| Error::Case {
                    method: suite.method.clone(),
                    index,
                    source,
                })?;
                let mut report = CaseReport {
                    method: suite.method.clone(),
                    pass: true,
                    max_abs_err: 0.0,
                    problem: None,
                };
                for (position, (output, expected)) in
                    outputs.iter().zip(&case.expected_outputs).enumerate()
                {
                    let comparison = compare(output, &test_tensor(expected)?, self.tolerance);
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
}

/// Borrowed views of host tensors, for `Runner::run`.
pub fn refs(tensors: &[HostTensor]) -> Vec<TensorRef<'_>> {
    tensors
        .iter()
        .map(|tensor| TensorRef {
            element: tensor.element,
            sizes: &tensor.sizes,
            data: &tensor.data,
        })
        .collect()
}

struct Comparison {
    max_abs_err: f64,
    /// Why the outputs differ, when they do.
    problem: Option<String>,
}

/// Elementwise: floats pass when |got - expected| <= atol + rtol * |expected|
/// (NaN matches NaN, infinities match their own sign); integers and bools
/// must be equal.
fn compare(got: &HostTensor, expected: &HostTensor, tolerance: Tolerance) -> Comparison {
    if got.element != expected.element || got.sizes != expected.sizes {
        return Comparison {
            max_abs_err: f64::INFINITY,
            problem: Some(format!(
                "got {}{:?}, expected {}{:?}",
                got.element, got.sizes, expected.element, expected.sizes
            )),
        };
    }
    let (values, wanted) = (values(got), values(expected));
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
    Comparison {
        max_abs_err,
        problem: first_bad,
    }
}
