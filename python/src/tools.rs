//! The package's functions over whole files: `inspect`, `compile`, `test`,
//! the reader of bundled programs' cases, and the operators ptec runs.

use std::path::PathBuf;

use ptec_codegen::CodegenOptions;
use ptec_compiler::bundled::{Tolerance, test_file};
use ptec_compiler::emit::{Emit, EmitOptions, Emitted, compile_file};
use ptec_compiler::file::ProgramFile;
use ptec_compiler::inspect::Report;
use ptec_compiler::tensors::host_tensor;
use ptec_compiler::{Backend, Limits, OperatorSource, Options, operators as all_operators};
use ptec_frontend::TestValue;
use ptec_passes::PassOptions;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::errors::{self, UsageError};
use crate::guard;
use crate::tensors::output;

/// `ptec inspect --json`'s object for the file at `path` (with the data
/// files at `data`), as JSON text.
#[pyfunction]
pub(crate) fn inspect(py: Python<'_>, path: PathBuf, data: Vec<PathBuf>) -> PyResult<String> {
    py.detach(|| guard(|| to_json(&Report::read(&path, &data).map_err(errors::compiler)?)))
}

/// A report as JSON text, which the Python half parses.
fn to_json(report: &impl serde::Serialize) -> PyResult<String> {
    serde_json::to_string(report).map_err(|error| {
        errors::InternalError::new_err(format!("writing the report as JSON: {error}"))
    })
}

/// The compiler's switches as the Python half passes them: a dict of the
/// keyword arguments (`ptec.runtime._Switches.native`), checked there.
#[derive(FromPyObject)]
#[pyo3(from_item_all)]
pub(crate) struct Switches {
    disable_passes: Vec<String>,
    stop_after: Option<String>,
    verify: bool,
    microkernels: bool,
    /// `None`: one per physical core, as the command line's default.
    threads: Option<usize>,
    max_memory: u64,
    max_code: u64,
}

/// The compiler's options for `switches`.
pub(crate) fn options(switches: Switches) -> Options {
    Options {
        passes: PassOptions {
            disabled: switches.disable_passes,
            stop_after: switches.stop_after,
            verify: switches.verify,
        },
        codegen: CodegenOptions {
            microkernels: switches.microkernels,
            ..CodegenOptions::default()
        },
        limits: Limits {
            max_memory: switches.max_memory,
            max_code: switches.max_code,
        },
        threads: switches
            .threads
            .unwrap_or_else(ptec_runtime::pool::physical_cores),
    }
}

/// Compiles the file at `path` ahead of time (`ptec compile`); returns the
/// text for `asm` and `ir` without an output, else `None`.
#[pyfunction]
#[pyo3(signature = (path, data, output, target, emit, method, header, prefix, linker, switches))]
#[allow(clippy::too_many_arguments)] // Python's keyword arguments, one each.
pub(crate) fn compile(
    py: Python<'_>,
    path: PathBuf,
    data: Vec<PathBuf>,
    output: Option<PathBuf>,
    target: Option<String>,
    emit: &str,
    method: Option<String>,
    header: Option<PathBuf>,
    prefix: String,
    linker: Option<String>,
    switches: Switches,
) -> PyResult<Option<String>> {
    let emit: Emit = emit.parse().map_err(UsageError::new_err)?;
    let options = options(switches);
    py.detach(|| {
        guard(|| {
            let emit = EmitOptions {
                output: output.as_deref(),
                emit,
                target: target.as_deref(),
                method: method.as_deref(),
                header: header.as_deref(),
                prefix: &prefix,
                linker: linker.as_deref(),
                options: &options,
                data: &data,
            };
            match compile_file(&path, &emit, |_| {}).map_err(errors::compiler)? {
                Emitted::Text(text) => Ok(Some(text)),
                Emitted::Written(_) => Ok(None),
            }
        })
    })
}

/// Runs every bundled test case of the file at `path` (`ptec test`), read
/// with the data files at `data`; returns `ptec test --json`'s object as
/// JSON text.
#[pyfunction]
pub(crate) fn test(
    py: Python<'_>,
    path: PathBuf,
    data: Vec<PathBuf>,
    backend: &str,
    rtol: f64,
    atol: f64,
    switches: Switches,
) -> PyResult<String> {
    let backend: Backend = backend.parse().map_err(UsageError::new_err)?;
    let options = options(switches);
    py.detach(|| {
        guard(|| {
            to_json(&test_file(
                &path,
                &data,
                backend,
                Tolerance { rtol, atol },
                &options,
                |_| {},
            ))
        })
    })
}

/// A bundled program's embedded program (its bytes) and its test suites:
/// `[(method, [(inputs, expected_outputs)])]`, each value a tensor as
/// `("tensor", bytes array, element type, sizes)` or a Python scalar.
#[pyfunction]
pub(crate) fn read_bundled<'py>(
    py: Python<'py>,
    path: PathBuf,
) -> PyResult<(Bound<'py, PyBytes>, Vec<Bound<'py, PyAny>>)> {
    guard(|| {
        let program = ProgramFile::open(&path, &[]).map_err(errors::compiler)?;
        let ptec_frontend::ExecutorchFile::Bundled(bundle) = program.file() else {
            return Err(errors::compiler(ptec_compiler::Error::NotBundled));
        };
        let value = |value: &TestValue<'_>| -> PyResult<Bound<'py, PyAny>> {
            Ok(match value {
                TestValue::Tensor(tensor) => {
                    let tensor = host_tensor(tensor).map_err(errors::compiler)?;
                    ("tensor", output(py, tensor)).into_pyobject(py)?.into_any()
                }
                TestValue::Int(int) => int.into_pyobject(py)?.into_any(),
                TestValue::Bool(bool) => bool.into_pyobject(py)?.to_owned().into_any(),
                TestValue::Double(double) => double.into_pyobject(py)?.into_any(),
            })
        };
        let values =
            |values: &[TestValue<'_>]| values.iter().map(value).collect::<PyResult<Vec<_>>>();
        let suites = bundle
            .test_suites
            .iter()
            .map(|suite| {
                let cases = suite
                    .cases
                    .iter()
                    .map(|case| Ok((values(&case.inputs)?, values(&case.expected_outputs)?)))
                    .collect::<PyResult<Vec<_>>>()?;
                Ok((suite.method.as_str(), cases).into_pyobject(py)?.into_any())
            })
            .collect::<PyResult<Vec<_>>>()?;
        Ok((PyBytes::new(py, bundle.program_bytes), suites))
    })
}

/// The kernel keys of programs (`aten::add.out`, ...) that `backend` runs.
#[pyfunction]
pub(crate) fn operators(backend: &str) -> PyResult<Vec<String>> {
    let backend: Backend = backend.parse().map_err(UsageError::new_err)?;
    guard(|| {
        Ok(all_operators()
            .into_iter()
            .filter(|operator| {
                operator.source == OperatorSource::Program && operator.supported.contains(&backend)
            })
            .map(|operator| operator.key)
            .collect())
    })
}
