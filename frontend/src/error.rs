//! The reader's error type: every way an untrusted file can be wrong, each
//! naming what is wrong and where (a byte offset or a table path such as
//! `execution_plan[0].values[12]`).

use std::path::PathBuf;

/// Where in a file a problem is: a table path, a byte range, or both.
pub type At = String;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("cannot read {path}: it is {kind}, not a file")]
    NotAFile { path: PathBuf, kind: &'static str },

    #[error("{what} is truncated: it needs {needed} bytes but has {available}")]
    Truncated {
        what: &'static str,
        needed: u64,
        available: u64,
    },

    #[error(
        "not an ExecuTorch file: bytes 4..8 are \"{found}\", expected \"ET12\" (program) or \"BP08\" (bundled program)"
    )]
    UnknownFormat { found: String },

    #[error("{what}: expected file identifier {expected}, found \"{found}\"")]
    Identifier {
        what: String,
        expected: String,
        found: String,
    },

    #[error("{what} header: {problem}")]
    Header { what: &'static str, problem: String },

    #[error("{what}: the flatbuffer is malformed: {source}")]
    Flatbuffer {
        what: String,
        #[source]
        source: flatbuffers::InvalidFlatbuffer,
    },

    #[error("{at}: {what} {index} is out of range (there are {len})")]
    OutOfRange {
        at: At,
        what: &'static str,
        index: i64,
        len: usize,
    },

    #[error("{at}: bytes {start}..{end} lie outside the {limit}-byte {region}")]
    OutOfBounds {
        at: At,
        start: u64,
        end: u64,
        limit: u64,
        region: &'static str,
    },

    #[error(
        "segments[{first}] (bytes {first_start}..{first_end}) overlaps segments[{second}] (bytes {second_start}..{second_end})"
    )]
    SegmentOverlap {
        first: usize,
        first_start: u64,
        first_end: u64,
        second: usize,
        second_start: u64,
        second_end: u64,
    },

    #[error("{at}: dim order {dim_order:?} is not a permutation of the {rank} dimensions")]
    DimOrder {
        at: At,
        dim_order: Vec<u8>,
        rank: usize,
    },

    #[error("{at}: {problem}")]
    ByteCount { at: At, problem: String },

    #[error("{at}: {problem}")]
    Invalid { at: At, problem: String },

    /// A problem inside the program a bundled program embeds; byte offsets
    /// in `source` count from `offset`.
    #[error("in the program embedded at byte {offset}")]
    InBundle {
        offset: u64,
        #[source]
        source: Box<Error>,
    },

    #[error(
        "{at}: {what} {key:?} is in neither the program nor {}",
        match data_files {
            0 => "a data file: none was given (pass the program's .ptd file with --data)".to_string(),
            1 => "its data file".to_string(),
            n => format!("its {n} data files"),
        }
    )]
    MissingData {
        at: At,
        what: &'static str,
        key: String,
        data_files: usize,
    },

    /// A key of data file `data_file` (counting from 0, in the order the
    /// files were given) that the program or an earlier data file defines.
    #[error("named data key {key:?} is also in the program or an earlier data file")]
    DuplicateKey { data_file: usize, key: String },

    #[error("{at}: external tensor {key:?} {problem}")]
    DataMismatch {
        at: At,
        key: String,
        problem: String,
    },

    #[error("{at}: {what} is not supported by ptec")]
    Unsupported { at: At, what: String },
}

impl Error {
    pub(crate) fn invalid(at: impl Into<At>, problem: impl Into<String>) -> Self {
        Error::Invalid {
            at: at.into(),
            problem: problem.into(),
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
