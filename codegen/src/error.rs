//! The code generator's error type.

#[derive(Debug, thiserror::Error)]
pub enum CodegenError {
    /// The graph did not pass the IR verifier; generators accept only
    /// verified graphs.
    #[error(transparent)]
    Verify(Box<ptec_ir::VerifyError>),
    /// Something ptec cannot generate code for yet.
    #[error("not supported yet: {0}")]
    Unsupported(String),
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
    #[error("Cranelift: {0}")]
    Module(Box<cranelift_module::ModuleError>),
    #[error("Cranelift cannot target this machine: {0}")]
    Isa(String),
    #[error("writing the object file: {0}")]
    Object(String),
    /// The linker could not be run, or failed.
    #[error("linking with {linker}: {message}")]
    Link { linker: String, message: String },
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
