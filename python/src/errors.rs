//! ptec's errors as the Python exceptions of `ptec.errors`, each carrying
//! ptec's own message.

use std::any::Any;

use ptec_compiler::Error as CompilerError;
use ptec_passes::PassError;
use ptec_runtime::RuntimeError;
use pyo3::PyErr;

pyo3::import_exception!(ptec.errors, ReadError);
pyo3::import_exception!(ptec.errors, MethodNotFoundError);
pyo3::import_exception!(ptec.errors, CompileError);
pyo3::import_exception!(ptec.errors, InputError);
pyo3::import_exception!(ptec.errors, ExecutionError);
pyo3::import_exception!(ptec.errors, DeviceError);
pyo3::import_exception!(ptec.errors, UsageError);
pyo3::import_exception!(ptec.errors, InternalError);
pyo3::import_exception!(ptec.errors, Error);

/// The exception for an error of the compiler library.
pub(crate) fn compiler(error: CompilerError) -> PyErr {
    let message = error.full_message();
    match error {
        CompilerError::Read(_)
        | CompilerError::ReadFile { .. }
        | CompilerError::NotBundled
        | CompilerError::NoCases { .. }
        | CompilerError::TestValue(_) => ReadError::new_err(message),
        CompilerError::NoMethod { .. } => MethodNotFoundError::new_err(message),
        CompilerError::Pass(PassError::UnknownPass(_)) | CompilerError::Target { .. } => {
            UsageError::new_err(message)
        }
        CompilerError::Import(_)
        | CompilerError::Verify(_)
        | CompilerError::Pass(_)
        | CompilerError::Codegen { .. }
        | CompilerError::Link(_)
        | CompilerError::Library(_)
        | CompilerError::NoMethods
        | CompilerError::Limit { .. }
        | CompilerError::ElementType(_) => CompileError::new_err(message),
        CompilerError::Runtime(source) | CompilerError::Case { source, .. } => {
            runtime_kind(&source, message)
        }
        CompilerError::Vulkan { .. } | CompilerError::VulkanDevice(_) => {
            DeviceError::new_err(message)
        }
        CompilerError::Io { .. } => Error::new_err(message),
    }
}

/// The exception for an error of running a method.
pub(crate) fn runtime(error: RuntimeError) -> PyErr {
    let message = error.to_string();
    runtime_kind(&error, message)
}

fn runtime_kind(error: &RuntimeError, message: String) -> PyErr {
    match error {
        RuntimeError::InputCount { .. }
        | RuntimeError::InputType { .. }
        | RuntimeError::InputShape { .. }
        | RuntimeError::InputBytes { .. } => InputError::new_err(message),
        RuntimeError::Execution { .. }
        | RuntimeError::Allocation { .. }
        | RuntimeError::Threads { .. } => ExecutionError::new_err(message),
    }
}

/// `ptec.InternalError` for a panic: a bug in ptec, reported instead of
/// unwinding into the interpreter.
pub(crate) fn panic(payload: &(dyn Any + Send)) -> PyErr {
    let what = payload
        .downcast_ref::<&str>()
        .map(|text| text.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".to_string());
    InternalError::new_err(format!("internal error in ptec (a bug): {what}"))
}
