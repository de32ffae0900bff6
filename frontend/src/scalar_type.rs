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
    /// Decodes the format's number; `None` for numbers it does not define.
    pub fn from_code(code: i8) -> Option<Self> {
        use ScalarType::*;
        Some(match code {
            0 => Byte,
            1 => Char,
            2 => Short,
            3 => Int,
            4 => Long,
            5 => Half,
            6 => Float,
            7 => Double,
            11 => Bool,
            12 => QInt8,
            13 => QUInt8,
            14 => QInt32,
            15 => BFloat16,
            16 => QUInt4x2,
            17 => QUInt2x4,
            22 => Bits16,
            23 => Float8E5M2,
            24 => Float8E4M3Fn,
            25 => Float8E5M2Fnuz,
            26 => Float8E4M3Fnuz,
            27 => UInt16,
            28 => UInt32,
            29 => UInt64,
            _ => return None,
        })
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
