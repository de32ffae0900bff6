//! PyTorch's type promotion, which decides the type an elementwise function
//! computes in: [`promote_types`] (c10's table for two element types),
//! [`result_type`] (`torch.result_type`: tensors with dimensions outrank
//! 0-dim tensors, which outrank Python scalars, and a lower rank changes
//! the result only when its category is higher: bool < integer < float) and
//! [`can_cast`] (which results an out tensor may receive).

use crate::types::{DType, Scalar, TensorType};

/// The kind of number an element type holds: promotion crosses categories
/// upward only.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Category {
    Bool,
    Integer,
    Float,
}

fn category(dtype: DType) -> Category {
    match dtype {
        DType::Bool => Category::Bool,
        DType::U8 | DType::I8 | DType::I16 | DType::I32 | DType::I64 => Category::Integer,
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => Category::Float,
    }
}

/// The type two element types promote to (c10's `promoteTypes`): the
/// wider of two of a category, a float over any integer, `u8` and `i8` to
/// `i16`, `f16` and `bf16` to `f32`.
pub fn promote_types(a: DType, b: DType) -> DType {
    use DType::*;
    if a == b {
        return a;
    }
    match (category(a), category(b)) {
        (Category::Bool, _) => b,
        (_, Category::Bool) => a,
        (Category::Float, Category::Integer) => a,
        (Category::Integer, Category::Float) => b,
        (Category::Float, Category::Float) => match (a, b) {
            (F16, BF16) | (BF16, F16) => F32,
            _ if a.size() >= b.size() => a,
            _ => b,
        },
        (Category::Integer, Category::Integer) => match (a, b) {
            (U8, I8) | (I8, U8) => I16,
            (U8, other) | (other, U8) => other,
            _ if a.size() >= b.size() => a,
            _ => b,
        },
    }
}

/// Whether a result of type `from` may be written into an out tensor of
/// type `to` (c10's `canCast`): not a float into an integer tensor, and
/// only a bool into a bool tensor.
pub fn can_cast(from: DType, to: DType) -> bool {
    let float_into_integer = from.is_float() && !to.is_float();
    let into_bool = from != DType::Bool && to == DType::Bool;
    !(float_into_integer || into_bool)
}

/// An operand as type promotion sees it: its element type, and whether it
/// is a 0-dim tensor (which promotes another operand only across a
/// category).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Operand {
    pub dtype: DType,
    pub zero_dim: bool,
}

impl Operand {
    /// An operand of type `ty`.
    pub fn of(ty: &TensorType) -> Operand {
        Operand {
            dtype: ty.dtype,
            zero_dim: ty.rank() == 0,
        }
    }

    /// An operand with dimensions.
    pub fn tensor(dtype: DType) -> Operand {
        Operand {
            dtype,
            zero_dim: false,
        }
    }
}

/// The element type a Python scalar takes part in promotion as: `bool`,
/// `int64`, or the default float type (`float32`).
pub fn scalar_type(scalar: Scalar) -> DType {
    match scalar {
        Scalar::Bool(_) => DType::Bool,
        Scalar::Int(_) => DType::I64,
        Scalar::Float(_) => DType::F32,
    }
}

/// The promoted type of one priority class, `None` when it is empty.
fn promote_all(types: impl Iterator<Item = DType>) -> Option<DType> {
    types.reduce(promote_types)
}

/// c10's `combine_categories`: the type of the higher-priority class, unless
/// the lower one holds a higher category of number.
fn combine(higher: Option<DType>, lower: Option<DType>) -> Option<DType> {
    match (higher, lower) {
        (None, lower) => lower,
        (higher, None) => higher,
        (Some(higher), Some(lower)) => {
            if category(lower) > category(higher) {
                Some(promote_types(higher, lower))
            } else {
                Some(higher)
            }
        }
    }
}

/// `torch.result_type` of tensor operands and Python scalars: tensors with
/// dimensions first, then 0-dim tensors, then scalars, each class promoting
/// the result only by a higher category. `None` without any operand.
pub fn result_type(operands: &[Operand], scalars: &[Scalar]) -> Option<DType> {
    let class = |zero_dim: bool| {
        promote_all(
            operands
                .iter()
                .filter(|operand| operand.zero_dim == zero_dim)
                .map(|operand| operand.dtype),
        )
    };
    let wrapped = promote_all(scalars.iter().map(|&scalar| scalar_type(scalar)));
    combine(class(false), combine(class(true), wrapped))
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn promote_types_is_c10s_table() {
        let cases = [
            (U8, I8, I16),
            (U8, I16, I16),
            (I8, I64, I64),
            (I32, I16, I32),
            (Bool, U8, U8),
            (Bool, F16, F16),
            (I64, F16, F16),
            (F16, BF16, F32),
            (BF16, F64, F64),
            (F32, F16, F32),
        ];
        for (a, b, promoted) in cases {
            assert_eq!(promote_types(a, b), promoted, "{a} and {b}");
            assert_eq!(promote_types(b, a), promoted, "{b} and {a}");
        }
    }

    #[test]
    fn result_type_ranks_dimensioned_zero_dim_and_scalars() {
        let zero = |dtype| Operand {
            dtype,
            zero_dim: true,
        };
        let t = Operand::tensor;
        // Within a category, lower classes do not promote.
        assert_eq!(result_type(&[t(F32), zero(F64)], &[]), Some(F32));
        assert_eq!(result_type(&[t(I32), zero(I64)], &[]), Some(I32));
        assert_eq!(result_type(&[t(I8)], &[Scalar::Int(1000)]), Some(I8));
        assert_eq!(result_type(&[t(F16)], &[Scalar::Float(0.1)]), Some(F16));
        // Across a category, they do.
        assert_eq!(result_type(&[t(I32), zero(F64)], &[]), Some(F64));
        assert_eq!(result_type(&[t(I32)], &[Scalar::Float(2.5)]), Some(F32));
        assert_eq!(result_type(&[t(Bool)], &[Scalar::Int(2)]), Some(I64));
        assert_eq!(result_type(&[zero(U8)], &[Scalar::Float(1.0)]), Some(F32));
        assert_eq!(result_type(&[t(Bool), zero(I32)], &[]), Some(I32));
        // 0-dim tensors alone promote as tensors.
        assert_eq!(result_type(&[zero(U8), zero(I8)], &[]), Some(I16));
        assert_eq!(result_type(&[t(U8), t(I8)], &[]), Some(I16));
        assert_eq!(result_type(&[], &[]), None);
    }

    #[test]
    fn can_cast_refuses_floats_into_integers_and_anything_into_bool() {
        assert!(can_cast(I32, F32));
        assert!(can_cast(I32, I8));
        assert!(can_cast(Bool, I64));
        assert!(can_cast(F64, F16));
        assert!(!can_cast(F32, I64));
        assert!(!can_cast(I64, Bool));
        assert!(can_cast(Bool, Bool));
    }
}
