//! A program and its loaded methods, as the Python half's `Program` and
//! `Method` hold them.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use ptec_compiler::Backend;
use ptec_compiler::file::{DataBytes, LoadedMethod, ProgramFile};
use ptec_frontend::{TensorStorage, Value};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedBytes;
use pyo3::types::PyDict;

use crate::errors::{self, UsageError};
use crate::guard;
use crate::tensors::{InputArray, InputView, OutputArray, output};
use crate::tools::{Switches, options};

/// Descriptions of a method's inputs or outputs (see `method_meta`).
type Descriptions<'py> = Vec<Bound<'py, PyAny>>;

/// A `.pte` or `.bpte` file, read.
#[pyclass(module = "ptec._ptec", frozen)]
pub(crate) struct NativeProgram {
    program: Arc<ProgramFile>,
}

#[pymethods]
impl NativeProgram {
    /// Maps the file at `path` and the data files (`.ptd`) at `data`, and
    /// reads them.
    #[staticmethod]
    fn open(py: Python<'_>, path: PathBuf, data: Vec<PathBuf>) -> PyResult<Self> {
        py.detach(|| guard(|| ProgramFile::open(&path, &data).map_err(errors::compiler)))
            .map(NativeProgram::new)
    }

    /// Reads a program from a `bytes` object (kept, not copied) or another
    /// bytes-like object (copied), with the data files at `data`.
    #[staticmethod]
    fn from_bytes(py: Python<'_>, bytes: PyBackedBytes, data: Vec<PathBuf>) -> PyResult<Self> {
        py.detach(|| {
            guard(|| {
                let data = data
                    .iter()
                    .map(|path| DataBytes::open(path))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(errors::compiler)?;
                ProgramFile::read(Box::new(bytes), data).map_err(errors::compiler)
            })
        })
        .map(NativeProgram::new)
    }

    /// The names of the methods, in the file's order.
    fn method_names(&self) -> Vec<String> {
        self.program
            .program()
            .methods
            .iter()
            .map(|method| method.name.clone())
            .collect()
    }

    /// What the method's inputs and outputs are: for each, a dict of its
    /// tensor's `dtype` (the file's number), `dtype_name`, `sizes` (upper
    /// bounds where dynamic), `dim_order`, `dynamism`, `is_memory_planned`
    /// and `nbytes`, or the kind's name for a value that is no tensor.
    fn method_meta<'py>(
        &self,
        py: Python<'py>,
        name: &str,
    ) -> PyResult<(Descriptions<'py>, Descriptions<'py>)> {
        let method = self.program.method(name).map_err(errors::compiler)?;
        let describe = |indices: &[ptec_frontend::ValueIndex]| {
            indices
                .iter()
                .map(|&index| tensor_info(py, method.value(index)))
                .collect::<PyResult<Vec<_>>>()
        };
        Ok((describe(&method.inputs)?, describe(&method.outputs)?))
    }

    /// Compiles a method for a back end (`jit`, `aot` or `vulkan`) with the
    /// compiler's switches, with the GIL released.
    fn load_method(
        &self,
        py: Python<'_>,
        name: String,
        backend: &str,
        switches: Switches,
    ) -> PyResult<NativeMethod> {
        let backend: Backend = backend.parse().map_err(UsageError::new_err)?;
        let options = options(switches);
        let program = self.program.clone();
        let method = py.detach(|| {
            guard(|| {
                LoadedMethod::load(program, &name, backend, &options).map_err(errors::compiler)
            })
        })?;
        Ok(NativeMethod {
            backend,
            compile_ms: method.compile_ms(),
            method: Mutex::new(method),
        })
    }
}

impl NativeProgram {
    fn new(program: ProgramFile) -> Self {
        NativeProgram {
            program: Arc::new(program),
        }
    }
}

/// A method input's or output's description, or its kind's name when it is
/// not a tensor.
fn tensor_info<'py>(py: Python<'py>, value: &Value<'_>) -> PyResult<Bound<'py, PyAny>> {
    let Value::Tensor(tensor) = value else {
        return Ok(value.kind().into_pyobject(py)?.into_any());
    };
    let info = PyDict::new(py);
    info.set_item("dtype", tensor.dtype.code())?;
    info.set_item("dtype_name", format!("{:?}", tensor.dtype))?;
    info.set_item("element", tensor.dtype.name())?;
    info.set_item("sizes", tensor.sizes.clone())?;
    info.set_item("dim_order", tensor.dim_order.clone())?;
    info.set_item("dynamism", tensor.dynamism.name())?;
    info.set_item(
        "is_memory_planned",
        matches!(tensor.storage, TensorStorage::Planned { .. }),
    )?;
    info.set_item("nbytes", tensor.nbytes())?;
    Ok(info.into_any())
}

/// A method compiled and instantiated; its state persists across calls.
#[pyclass(module = "ptec._ptec", frozen)]
pub(crate) struct NativeMethod {
    backend: Backend,
    compile_ms: f64,
    /// Locked by the thread running it, with the GIL released.
    method: Mutex<LoadedMethod>,
}

#[pymethods]
impl NativeMethod {
    #[getter]
    fn backend(&self) -> &'static str {
        self.backend.name()
    }

    /// How long importing, optimizing and compiling the method took.
    #[getter]
    fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    /// Runs the method on C-contiguous arrays, read in place, with the GIL
    /// released; returns each output's bytes (owned by the array, not
    /// copied), element type and sizes.
    fn execute<'py>(
        &self,
        py: Python<'py>,
        inputs: Vec<InputArray<'py>>,
    ) -> PyResult<Vec<OutputArray<'py>>> {
        let views = inputs
            .iter()
            .enumerate()
            .map(|(index, input)| InputView::new(index, input))
            .collect::<PyResult<Vec<_>>>()?;
        let outputs = py.detach(|| {
            guard(|| {
                let refs: Vec<_> = views.iter().map(InputView::as_ref).collect();
                let mut method = self.method.lock().unwrap_or_else(PoisonError::into_inner);
                method.run(&refs).map_err(errors::runtime)
            })
        })?;
        Ok(outputs
            .into_iter()
            .map(|tensor| output(py, tensor))
            .collect())
    }
}
