//! ptec's front end: reads ExecuTorch `.pte` programs and `.bpte` bundled
//! programs, the `.ptd` data files that hold weights a program keeps
//! outside, and the XNNPACK and Vulkan payloads inside programs, from
//! untrusted bytes.
//!
//! Every flatbuffer passes the flatbuffers verifier before it is read, and
//! every offset, range and index is checked before use: bad input gives an
//! [`Error`] that says what is wrong and where, never a panic. The result is
//! plain Rust values ([`Program`], [`Method`], [`Value`], [`Instruction`],
//! [`Tensor`]) that borrow constant data from the input instead of copying it.

mod bpte;
mod bytes;
pub mod delegate;
mod error;
mod model;
mod ptd;
mod pte;
mod scalar_type;
mod source;

pub use bpte::{
    BundledProgram, TestCase, TestSuite, TestTensor, TestValue, read_bundled_program,
    read_bundled_program_with_data,
};
pub use delegate::DelegatePayload;
pub use error::{Error, Result};
pub use model::{
    CompileSpec, DataEntry, Delegate, DelegateIndex, ExtendedHeader, Instruction, Method,
    NamedData, Operator, OperatorIndex, Program, Segment, ShapeDynamism, Tensor, TensorLayout,
    TensorStorage, Value, ValueIndex,
};
pub use ptd::{DataFile, read_data_file};
pub use pte::{read_program, read_program_with_data};
pub use scalar_type::ScalarType;
pub use source::FileBytes;

/// A file ptec reads: a program, or a bundled program that contains one.
#[derive(Debug)]
pub enum ExecutorchFile<'a> {
    Program(Program<'a>),
    Bundled(BundledProgram<'a>),
}

impl<'a> ExecutorchFile<'a> {
    /// Reads `bytes` as whichever of the two formats its identifier names.
    pub fn read(bytes: &'a [u8]) -> Result<Self> {
        Self::read_with_data(bytes, &[])
    }

    /// Reads `bytes` as [`ExecutorchFile::read`] does, with the data files
    /// that hold the program's external tensors and named data.
    pub fn read_with_data(bytes: &'a [u8], data: &[DataFile<'a>]) -> Result<Self> {
        match bytes.get(4..8) {
            Some(b"ET12") => read_program_with_data(bytes, data).map(ExecutorchFile::Program),
            Some(b"BP08") => {
                read_bundled_program_with_data(bytes, data).map(ExecutorchFile::Bundled)
            }
            found => Err(Error::UnknownFormat {
                found: found.map_or_else(
                    || "<end of file>".to_string(),
                    |tag| tag.escape_ascii().to_string(),
                ),
            }),
        }
    }

    pub fn program(&self) -> &Program<'a> {
        match self {
            ExecutorchFile::Program(program) => program,
            ExecutorchFile::Bundled(bundled) => &bundled.program,
        }
    }

    /// The test suites of a bundled program; none for a plain program.
    pub fn test_suites(&self) -> &[TestSuite<'a>] {
        match self {
            ExecutorchFile::Program(_) => &[],
            ExecutorchFile::Bundled(bundled) => &bundled.test_suites,
        }
    }
}
