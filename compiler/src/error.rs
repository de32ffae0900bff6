//! The library's error: which stage failed, and for which method.

use ptec_codegen::CodegenError;
use ptec_import::ImportError;
use ptec_passes::PassError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
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
}
