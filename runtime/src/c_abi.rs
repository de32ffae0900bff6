//! The C ABI of the shared objects and object files `ptec compile` writes:
//! the layout of the structures a C caller exchanges with them, the status
//! codes, the element-type codes and the names of the exported functions.
//! The code generator lays its data out from these definitions, the header
//! writer documents them, and [`crate::library`] calls them, so the three
//! cannot drift apart.
//!
//! Every exported function is named `<prefix>_<name>`, where the prefix is
//! chosen at compile time (`ptec` by default), so that several models can be
//! linked into one program.

use std::ffi::c_void;

use crate::abi::ElementType;

/// What a method's input or output looks like; returned by
/// `<prefix>_input_info` and `<prefix>_output_info`, in read-only memory of
/// the library.
#[repr(C)]
#[derive(Debug)]
pub struct CTensorInfo {
    /// An [`ElementType`] code (ExecuTorch's `ScalarType` numbering).
    pub dtype: i32,
    pub rank: i32,
    /// `rank` sizes; -1 where the size is dynamic.
    pub sizes: *const i64,
    /// `rank` upper bounds (equal to `sizes` where those are fixed).
    pub max_sizes: *const i64,
    /// `rank` dimension indices, outermost first: the order the data is
    /// laid out in (0, 1, ..., rank-1 when contiguous).
    pub dim_order: *const u8,
}

/// One tensor argument of `<prefix>_run`: its data, laid out in the dim
/// order its info gives, and its sizes (read for inputs, written for
/// outputs).
#[repr(C)]
#[derive(Debug)]
pub struct CTensor {
    pub data: *mut c_void,
    pub sizes: *mut i64,
}

/// The status codes below zero; zero is success, and codes above zero are
/// errors the generated code reports while running a method (for example an
/// integer division by zero), described by `<prefix>_status_message`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(i32)]
pub enum Status {
    NullArgument = -1,
    NoSuchMethod = -2,
    BadSizes = -3,
    BadThreads = -4,
}

impl Status {
    pub const ALL: [Status; 4] = [
        Status::NullArgument,
        Status::NoSuchMethod,
        Status::BadSizes,
        Status::BadThreads,
    ];

    /// The name of the constant in the C header.
    pub fn constant(self) -> &'static str {
        match self {
            Status::NullArgument => "NULL_ARGUMENT",
            Status::NoSuchMethod => "NO_SUCH_METHOD",
            Status::BadSizes => "BAD_SIZES",
            Status::BadThreads => "BAD_THREADS",
        }
    }

    pub fn message(self) -> &'static str {
        match self {
            Status::NullArgument => "a required pointer argument is null",
            Status::NoSuchMethod => "there is no method with that index",
            Status::BadSizes => {
                "an input's sizes do not fit the method (a fixed size differs, a dynamic size is \
                 above its bound, or two inputs disagree on a shared dimension)"
            }
            Status::BadThreads => {
                "the thread count is below 1, or its threads or their memory cannot be had (the \
                 instance then runs on one thread)"
            }
        }
    }
}

/// The suffixes of the exported functions, in the order the header lists
/// them.
pub mod symbol {
    pub const CREATE: &str = "create";
    pub const DESTROY: &str = "destroy";
    pub const METHOD_COUNT: &str = "method_count";
    pub const METHOD_NAME: &str = "method_name";
    pub const INPUT_COUNT: &str = "input_count";
    pub const OUTPUT_COUNT: &str = "output_count";
    pub const INPUT_INFO: &str = "input_info";
    pub const OUTPUT_INFO: &str = "output_info";
    pub const SET_THREADS: &str = "set_threads";
    pub const RUN: &str = "run";
    pub const STATUS_MESSAGE: &str = "status_message";
}

impl ElementType {
    /// The code of this type in the C ABI: ExecuTorch's `ScalarType` number.
    pub fn code(self) -> i32 {
        match self {
            ElementType::U8 => 0,
            ElementType::I8 => 1,
            ElementType::I16 => 2,
            ElementType::I32 => 3,
            ElementType::I64 => 4,
            ElementType::F16 => 5,
            ElementType::F32 => 6,
            ElementType::F64 => 7,
            ElementType::Bool => 11,
            ElementType::BF16 => 15,
        }
    }

    pub fn from_code(code: i32) -> Option<ElementType> {
        ElementType::ALL
            .into_iter()
            .find(|element| element.code() == code)
    }

    /// The name of the constant in the C header.
    pub fn constant(self) -> &'static str {
        match self {
            ElementType::Bool => "BOOL",
            ElementType::U8 => "UINT8",
            ElementType::I8 => "INT8",
            ElementType::I16 => "INT16",
            ElementType::I32 => "INT32",
            ElementType::I64 => "INT64",
            ElementType::F16 => "FLOAT16",
            ElementType::BF16 => "BFLOAT16",
            ElementType::F32 => "FLOAT32",
            ElementType::F64 => "FLOAT64",
        }
    }
}
