//! Programs and loaded methods that own their bytes, for callers that
//! cannot hold borrows across calls (the Python package and the command
//! line): a [`ProgramFile`] owns a file's bytes (a mapping, or a caller's
//! buffer), those of its data files (`.ptd`), and what was read from them; a
//! [`LoadedMethod`] shares its program and owns a runner that borrows from
//! it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ptec_frontend::{DataFile, ExecutorchFile, FileBytes, Method, Program, read_data_file};
use ptec_passes::PassReport;
use ptec_runtime::{HostTensor, RuntimeError, TensorRef};
use self_cell::self_cell;

use crate::error::Error;
use crate::load::{Backend, Runner, load};
use crate::pipeline::Options;

/// Bytes a program can be read from: a file's mapping, or a buffer the
/// caller hands over.
pub type ProgramBytes = Box<dyn AsRef<[u8]> + Send + Sync>;

/// A data file's bytes, and the name its errors give (its path).
pub struct DataBytes {
    pub name: String,
    pub bytes: ProgramBytes,
}

impl std::fmt::Debug for DataBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataBytes")
            .field("name", &self.name)
            .field("bytes", &(*self.bytes).as_ref().len())
            .finish()
    }
}

impl DataBytes {
    /// Maps the data file at `path`.
    pub fn open(path: &Path) -> Result<Self, Error> {
        Ok(DataBytes {
            name: path.display().to_string(),
            bytes: Box::new(FileBytes::open(path)?),
        })
    }
}

/// A program's bytes and its data files'.
struct Sources {
    program: ProgramBytes,
    data: Vec<DataBytes>,
}

self_cell!(
    struct FileCell {
        owner: Sources,
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
    /// Maps the file at `path` and the data files at `data`, and reads them.
    pub fn open(path: &Path, data: &[PathBuf]) -> Result<Self, Error> {
        let bytes = FileBytes::open(path)?;
        let data = data
            .iter()
            .map(|path| DataBytes::open(path))
            .collect::<Result<Vec<_>, _>>()?;
        ProgramFile::read(Box::new(bytes), data).map_err(|error| error.in_file(path))
    }

    /// Reads a program (or a bundled program) from `bytes`, with the data
    /// files that hold what it keeps outside: external tensors and named
    /// data.
    pub fn read(bytes: ProgramBytes, data: Vec<DataBytes>) -> Result<Self, Error> {
        let sources = Sources {
            program: bytes,
            data,
        };
        let cell = FileCell::try_new(sources, |sources| {
            let data = sources
                .data
                .iter()
                .map(|file| {
                    read_data_file((*file.bytes).as_ref()).map_err(|source| Error::ReadFile {
                        path: file.name.clone(),
                        source,
                    })
                })
                .collect::<Result<Vec<DataFile<'_>>, Error>>()?;
            ExecutorchFile::read_with_data((*sources.program).as_ref(), &data).map_err(|error| {
                // A clash is the data file's fault: name it.
                match &error {
                    ptec_frontend::Error::DuplicateKey { data_file, .. } => Error::ReadFile {
                        path: sources.data[*data_file].name.clone(),
                        source: error,
                    },
                    _ => Error::Read(error),
                }
            })
        })?;
        Ok(ProgramFile { cell })
    }

    /// The bytes the file was read from.
    pub fn bytes(&self) -> &[u8] {
        (*self.cell.borrow_owner().program).as_ref()
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
