//! `ptec._ptec`, the native half of the `ptec` Python package: the compiler
//! library (`ptec-compiler`) behind a few classes and functions, with
//! conversions and nothing else. The Python half (`python/ptec/`) builds
//! `executorch.runtime`'s API on it.
//!
//! Every entry point runs its Rust work inside [`guard`], so a panic becomes
//! `ptec.InternalError` instead of unwinding into the interpreter, and
//! releases the GIL while compiling and running.

mod errors;
mod program;
mod tensors;
mod tools;

use pyo3::prelude::*;

#[pymodule]
fn _ptec(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<program::NativeProgram>()?;
    module.add_class::<program::NativeMethod>()?;
    module.add_function(wrap_pyfunction!(tools::inspect, module)?)?;
    module.add_function(wrap_pyfunction!(tools::compile, module)?)?;
    module.add_function(wrap_pyfunction!(tools::test, module)?)?;
    module.add_function(wrap_pyfunction!(tools::read_bundled, module)?)?;
    module.add_function(wrap_pyfunction!(tools::operators, module)?)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add(
        "DEFAULT_MAX_MEMORY",
        ptec_compiler::Limits::DEFAULT_MAX_MEMORY,
    )?;
    module.add("DEFAULT_MAX_CODE", ptec_compiler::Limits::DEFAULT_MAX_CODE)?;
    Ok(())
}

/// Runs `work`, turning a panic into `ptec.InternalError`.
pub(crate) fn guard<T>(work: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .unwrap_or_else(|payload| Err(errors::panic(payload.as_ref())))
}
