//! Programs and loaded methods that own their bytes, for callers that
//! cannot hold borrows across calls (the Python package): a [`ProgramFile`]
//! owns a file's bytes (a mapping, or a caller's buffer) and what was read
//! from them; a [`LoadedMethod`] shares its program and owns a runner that
//! borrows from it.

use std::path::Path;
use std::sync::Arc;

use ptec_frontend::{ExecutorchFile, FileBytes, Method, Program};
use ptec_passes::PassReport;
use ptec_runtime::{HostTensor, RuntimeError, TensorRef};
use self_cell::self_cell;

use crate::error::Error;
use crate::load::{Backend, Runner, load};
use crate::pipeline::Options;

/// Bytes a program can be read from: a file's mapping, or a buffer the
/// caller hands over.
pub type ProgramBytes = Box<dyn AsRef<[u8]> + Send + Sync>;

self_cell!(
    struct FileCell {
        owner: ProgramBytes,
        #[covariant]
        dependent: ExecutorchFile,
    }
);

/// A `.pte` or `.bpte` file, read, holding its bytes.
pub struct ProgramFile {
    cell: FileCell,
}

impl std::fmt::Debug for ProgramFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProgramFile")
            .field("bytes", &self.bytes().len())
            .field("file", self.file())
            .finish()
    }
}

impl ProgramFile {
    /// Maps the file at `path` and reads it.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let bytes = FileBytes::open(path)?;
        ProgramFile::read(Box::new(bytes)).map_err(|error| error.in_file(path))
    }

    /// Reads a program (or a bundled program) from `bytes`.
    pub fn read(bytes: ProgramBytes) -> Result<Self, Error> {
        let cell = FileCell::try_new(bytes, |bytes| ExecutorchFile::read((**bytes).as_ref()))?;
        Ok(ProgramFile { cell })
    }

    /// The bytes the file was read from.
    pub fn bytes(&self) -> &[u8] {
        (**self.cell.borrow_owner()).as_ref()
    }

    pub fn file(&self) -> &ExecutorchFile<'_> {
        self.cell.borrow_dependent()
    }

    pub fn program(&self) -> &Program<'_> {
        self.file().program()
    }

    /// The method called `name`.
    pub fn method(&self, name: &str) -> Result<&Method<'_>, Error> {
        let program = self.program();
        program
            .method(name)
            .ok_or_else(|| Error::no_method(program, name))
    }
}

self_cell!(
    struct MethodCell {
        owner: Arc<ProgramFile>,
        #[covariant]
        dependent: Runner,
    }

    impl {Debug}
);

/// A method compiled for a back end and instantiated; it keeps its program
/// alive, and its state persists across runs.
#[derive(Debug)]
pub struct LoadedMethod {
    cell: MethodCell,
    compile_ms: f64,
    passes: Vec<PassReport>,
}

impl LoadedMethod {
    /// Compiles the method `name` of `program` for `backend`.
    pub fn load(
        program: Arc<ProgramFile>,
        name: &str,
        backend: Backend,
        options: &Options,
    ) -> Result<Self, Error> {
        let mut report = (0.0, Vec::new());
        let cell = MethodCell::try_new(program, |program| {
            let loaded = load(program.method(name)?, backend, options)?;
            report = (loaded.compile_ms, loaded.passes);
            Ok::<_, Error>(loaded.runner)
        })?;
        let (compile_ms, passes) = report;
        Ok(LoadedMethod {
            cell,
            compile_ms,
            passes,
        })
    }

    /// Runs the method once on `inputs`.
    pub fn run(&mut self, inputs: &[TensorRef<'_>]) -> Result<Vec<HostTensor>, RuntimeError> {
        self.cell.with_dependent_mut(|_, runner| runner.run(inputs))
    }

    pub fn program(&self) -> &ProgramFile {
        self.cell.borrow_owner()
    }

    /// How long importing, optimizing and compiling took.
    pub fn compile_ms(&self) -> f64 {
        self.compile_ms
    }

    /// What each pass did, in order.
    pub fn passes(&self) -> &[PassReport] {
        &self.passes
    }
}
