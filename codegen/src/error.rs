//! The code generator's error type, and what each back end supports: the
//! table [`support`] answers from is the one the back ends' dispatches
//! refuse from, so that a listing of supported ops and the code generators
//! agree.

use std::fmt;

use ptec_ir::{Op, OpKind};

/// A code generator: the CPU one serves both the JIT and AOT objects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    Cpu,
    Vulkan,
}

impl Backend {
    pub const ALL: [Backend; 2] = [Backend::Cpu, Backend::Vulkan];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "CPU",
            Backend::Vulkan => "Vulkan",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Whether `backend` lowers ops of `kind` at all, or why it refuses every
/// one of them. A supported kind can still be refused for the element types
/// or layouts of a particular node (f64 in shaders, half precision in the
/// CPU's reductions), with the reason in the error.
pub fn support(backend: Backend, kind: OpKind) -> Result<(), &'static str> {
    match backend {
        Backend::Cpu => crate::kernels::support(kind),
        Backend::Vulkan => crate::spirv::support(kind),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// The graph did not pass the IR verifier; generators accept only
    /// verified graphs.
    #[error(transparent)]
    Verify(Box<ptec_ir::VerifyError>),
    /// An op a back end cannot generate code for yet: its kind as a whole
    /// (the reason [`support`] gives), or for this node's element types,
    /// layouts or attributes.
    #[error("not supported yet on the {backend} backend: {why}")]
    Unsupported {
        /// The op's name in the text form (`add`, `convolution`).
        op: String,
        backend: Backend,
        why: String,
    },
    /// A method a back end cannot generate code for yet, whatever its ops
    /// (dynamic shapes in shaders, a constant as an output).
    #[error("not supported yet on the {backend} backend: {why}")]
    UnsupportedMethod { backend: Backend, why: String },
    /// A node's kernel could not be generated.
    #[error("in node {node} ({op})")]
    Node {
        node: String,
        op: String,
        #[source]
        source: Box<CodegenError>,
    },
    /// naga rejected a shader ptec generated (a bug in ptec): the stage
    /// that failed, naga's diagnostic and the shader's source.
    #[error("naga rejected a generated shader in {stage}: {message}\n{shader}")]
    Shader {
        stage: String,
        message: String,
        shader: String,
    },
    /// The machine code would take more than the limit: the function that
    /// went over it, the bytes with it, and the limit.
    #[error(
        "the machine code would take {needed} bytes with function {function}, above the limit of {limit}"
    )]
    CodeLimit {
        function: String,
        needed: u64,
        limit: u64,
    },
    #[error("Cranelift: {0}")]
    Module(Box<cranelift_module::ModuleError>),
    #[error("Cranelift cannot target this machine: {0}")]
    Isa(String),
    /// AOT options that cannot work (a symbol prefix that is no C
    /// identifier, a 32-bit target).
    #[error("{0}")]
    Options(String),
    #[error("writing the object file: {0}")]
    Object(String),
    /// The linker could not be run, or failed.
    #[error("linking with {linker}: {message}")]
    Link { linker: String, message: String },
}

impl CodegenError {
    /// `op` refused by `backend` for `why`.
    pub(crate) fn unsupported(op: &Op, backend: Backend, why: impl Into<String>) -> CodegenError {
        CodegenError::Unsupported {
            op: op.name().to_string(),
            backend,
            why: why.into(),
        }
    }
}

impl From<ptec_ir::VerifyError> for CodegenError {
    fn from(error: ptec_ir::VerifyError) -> Self {
        CodegenError::Verify(Box::new(error))
    }
}

impl From<cranelift_module::ModuleError> for CodegenError {
    fn from(error: cranelift_module::ModuleError) -> Self {
        CodegenError::Module(Box::new(error))
    }
}
