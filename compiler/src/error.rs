//! The library's error: which stage failed, and for which method.

use std::path::Path;

use ptec_codegen::CodegenError;
use ptec_frontend::{Program, ScalarType};
use ptec_import::ImportError;
use ptec_passes::PassError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The bytes are not a program ptec can read (or the file cannot be
    /// read at all: the frontend's error names it).
    #[error(transparent)]
    Read(#[from] ptec_frontend::Error),
    /// As `Read`, for the file at `path`.
    #[error("{path}: {source}")]
    ReadFile {
        path: String,
        #[source]
        source: ptec_frontend::Error,
    },
    #[error("the program has no method {name:?} (it has {available})")]
    NoMethod { name: String, available: String },
    #[error(transparent)]
    Import(#[from] ImportError),
    /// The imported graph is malformed (a bug in the importer).
    #[error("the imported graph: {0}")]
    Verify(#[from] ptec_ir::VerifyError),
    #[error(transparent)]
    Pass(#[from] PassError),
    /// Code generation failed for a method, on a back end.
    #[error("compiling method {method} for {target}: {source}")]
    Codegen {
        method: String,
        /// `the CPU`, `Vulkan`.
        target: &'static str,
        #[source]
        source: CodegenError,
    },
    /// Linking a shared object failed.
    #[error(transparent)]
    Link(CodegenError),
    #[error(transparent)]
    Runtime(#[from] ptec_runtime::RuntimeError),
    #[error(transparent)]
    Library(#[from] ptec_runtime::library::LibraryError),
    #[error("loading method {method} onto the Vulkan device: {source}")]
    Vulkan {
        method: String,
        #[source]
        source: ptec_runtime::vulkan::VulkanError,
    },
    #[error("opening a Vulkan device: {0}")]
    VulkanDevice(#[source] ptec_runtime::vulkan::VulkanError),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the program has no methods")]
    NoMethods,
    /// A method needs more than a [`crate::Limits`] allows.
    #[error(
        "method {method} needs {needed} bytes of {what}, above the limit of {limit} bytes \
         ({option} BYTES raises it)"
    )]
    Limit {
        method: String,
        /// `planned memory (its arena)`, `compiled code`.
        what: &'static str,
        needed: u64,
        limit: u64,
        /// The command-line option that sets the limit.
        option: &'static str,
    },
    #[error("target {target:?}: {problem}")]
    Target { target: String, problem: String },
    #[error("the file has no test cases (is it a bundled program?)")]
    NotBundled,
    #[error("the bundled program has no test cases for method {method}")]
    NoCases { method: String },
    /// A bundled test value ptec cannot give a method or compare.
    #[error("{0}")]
    TestValue(String),
    #[error("{0} tensors are not supported")]
    ElementType(ScalarType),
    /// A bundled test case failed to run.
    #[error("case {index} of {method}: {source}")]
    Case {
        method: String,
        index: usize,
        #[source]
        source: ptec_runtime::RuntimeError,
    },
}

impl Error {
    /// The error of reading the file at `path`, naming it.
    pub(crate) fn in_file(self, path: &Path) -> Self {
        match self {
            Error::Read(source) => Error::ReadFile {
                path: path.display().to_string(),
                source,
            },
            other => other,
        }
    }

    /// The error with its causes, as [`full_message`] says them: what
    /// reports and the Python package show (the reason a back end refuses an
    /// op is a cause).
    pub fn full_message(&self) -> String {
        full_message(self)
    }

    /// `program` has no method `name`.
    pub fn no_method(program: &Program<'_>, name: &str) -> Self {
        let names: Vec<&str> = program
            .methods
            .iter()
            .map(|method| method.name.as_str())
            .collect();
        Error::NoMethod {
            name: name.to_string(),
            available: names.join(", "),
        }
    }
}

/// `error` with its causes, each after a colon, those its message already
/// ends with said once (most of ptec's errors say their cause in their own
/// message too).
pub fn full_message(error: &(dyn std::error::Error + 'static)) -> String {
    let mut message = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let text = error.to_string();
        if !message.ends_with(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = error.source();
    }
    message
}
