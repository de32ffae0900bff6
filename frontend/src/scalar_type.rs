//! Tensor element types, numbered as the file format numbers them.

use std::fmt;

use crate::error::{Error, Result};

/// The element type of a tensor (`ScalarType` in the format).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScalarType {
    Byte,
    Char,
    Short,
    Int,
    Long,
    Half,
    Float,
    Double,
    Bool,
    QInt8,
    QUInt8,
    QInt32,
    BFloat16,
    QUInt4x2,
    QUInt2x4,
    Bits16,
    Float8E5M2,
    Float8E4M3Fn,
    Float8E5M2Fnuz,
    Float8E4M3Fnuz,
    UInt16,
    UInt32,
    UInt64,
}

impl ScalarType {
    /// Every element type, in the order of their numbers.
    pub const ALL: [ScalarType; 23] = [
        ScalarType::Byte,
        ScalarType::Char,
        ScalarType::Short,
        ScalarType::Int,
        ScalarType::Long,
        ScalarType::Half,
        ScalarType::Float,
        ScalarType::Double,
        ScalarType::Bool,
        ScalarType::QInt8,
        ScalarType::QUInt8,
        ScalarType::QInt32,
        ScalarType::BFloat16,
        ScalarType::QUInt4x2,
        ScalarType::QUInt2x4,
        ScalarType::Bits16,
        ScalarType::Float8E5M2,
        ScalarType::Float8E4M3Fn,
        ScalarType::Float8E5M2Fnuz,
        ScalarType::Float8E4M3Fnuz,
        ScalarType::UInt16,
        ScalarType::UInt32,
        ScalarType::UInt64,
    ];

    /// Decodes the format's number; `None` for numbers it does not define.
    pub fn from_code(code: i8) -> Option<Self> {
        ScalarType::ALL
            .into_iter()
            .find(|scalar| scalar.code() == code)
    }

    /// The format's number for the type (torch's `ScalarType` value, which
    /// ExecuTorch's `TensorInfo.dtype()` reports).
    pub fn code(self) -> i8 {
        use ScalarType::*;
        match self {
            Byte => 0,
            Char => 1,
            Short => 2,
            Int => 3,
            Long => 4,
            Half => 5,
            Float => 6,
            Double => 7,
            Bool => 11,
            QInt8 => 12,
            QUInt8 => 13,
            QInt32 => 14,
            BFloat16 => 15,
            QUInt4x2 => 16,
            QUInt2x4 => 17,
            Bits16 => 22,
            Float8E5M2 => 23,
            Float8E4M3Fn => 24,
            Float8E5M2Fnuz => 25,
            Float8E4M3Fnuz => 26,
            UInt16 => 27,
            UInt32 => 28,
            UInt64 => 29,
        }
    }

    /// Decodes the format's number for the tensor at `at`: the complex
    /// types (8 to 10) are named as unsupported, since ptec has no complex
    /// element type; a number the format does not define is invalid.
    pub(crate) fn decode(code: i8, at: &dyn Fn() -> String) -> Result<Self> {
        let complex = match code {
            8 => "ComplexHalf",
            9 => "ComplexFloat",
            10 => "ComplexDouble",
            _ => {
                return Self::from_code(code)
                    .ok_or_else(|| Error::invalid(at(), format!("unknown scalar type {code}")));
            }
        };
        Err(Error::Unsupported {
            at: at(),
            what: format!("a complex element type ({complex}, scalar type {code})"),
        })
    }

    /// Bytes per element, as torch's `element_size()` gives them.
    pub fn element_size(self) -> usize {
        use ScalarType::*;
        match self {
            Byte | Char | Bool | QInt8 | QUInt8 | QUInt4x2 | QUInt2x4 => 1,
            Float8E5M2 | Float8E4M3Fn | Float8E5M2Fnuz | Float8E4M3Fnuz => 1,
            Short | Half | BFloat16 | Bits16 | UInt16 => 2,
            Int | Float | QInt32 | UInt32 => 4,
            Long | Double | UInt64 => 8,
        }
    }

    /// The torch name of the type (`float32`, `int64`, `bool`, ...).
    pub fn name(self) -> &'static str {
        use ScalarType::*;
        match self {
            Byte => "uint8",
            Char => "int8",
            Short => "int16",
            Int => "int32",
            Long => "int64",
            Half => "float16",
            Float => "float32",
            Double => "float64",
            Bool => "bool",
            QInt8 => "qint8",
            QUInt8 => "quint8",
            QInt32 => "qint32",
            BFloat16 => "bfloat16",
            QUInt4x2 => "quint4x2",
            QUInt2x4 => "quint2x4",
            Bits16 => "bits16",
            Float8E5M2 => "float8_e5m2",
            Float8E4M3Fn => "float8_e4m3fn",
            Float8E5M2Fnuz => "float8_e5m2fnuz",
            Float8E4M3Fnuz => "float8_e4m3fnuz",
            UInt16 => "uint16",
            UInt32 => "uint32",
            UInt64 => "uint64",
        }
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
