//! Scalar arithmetic in a kernel's compute type, for the kernels that take
//! every element type one loop at a time (direct convolutions, matrix
//! products of other types than f32): floats compute in their arithmetic type (half
//! precision widened to f32, f64 in f64), integers and booleans in i64,
//! which wraps like the narrower types once stored. Elements are converted
//! as they are loaded and stored, with PyTorch's cast rules.

use cranelift_codegen::ir::{InstBuilder, Type, Value, types};
use ptec_ir::DType;

use super::expr::{at_least, at_most, fconst};
use crate::emit::{Emitter, Size, scalar_type};
use crate::error::CodegenError;

/// The type a kernel computes elements of `dtype` in.
pub(crate) fn compute_type(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype.arithmetic()
    } else {
        DType::I64
    }
}

/// Arithmetic on numbers of one compute type.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Arith {
    pub compute: DType,
    pub ty: Type,
}

impl Arith {
    /// The arithmetic elements of `dtype` are computed with.
    pub(crate) fn of(dtype: DType) -> Arith {
        let compute = compute_type(dtype);
        Arith {
            compute,
            ty: scalar_type(compute),
        }
    }

    pub(crate) fn is_float(self) -> bool {
        self.compute.is_float()
    }

    /// A constant of the compute type (integers truncate `value`).
    pub(crate) fn constant(self, e: &mut Emitter<'_, '_, '_>, value: f64) -> Value {
        if self.is_float() {
            fconst(e, self.ty, value)
        } else {
            e.b.ins().iconst(self.ty, value as i64)
        }
    }

    pub(crate) fn zero(self, e: &mut Emitter<'_, '_, '_>) -> Value {
        self.constant(e, 0.0)
    }

    pub(crate) fn add(self, e: &mut Emitter<'_, '_, '_>, a: Value, b: Value) -> Value {
        if self.is_float() {
            e.b.ins().fadd(a, b)
        } else {
            e.b.ins().iadd(a, b)
        }
    }

    pub(crate) fn mul(self, e: &mut Emitter<'_, '_, '_>, a: Value, b: Value) -> Value {
        if self.is_float() {
            e.b.ins().fmul(a, b)
        } else {
            e.b.ins().imul(a, b)
        }
    }

    /// `a * b + c` (fused when the CPU has FMA, for floats).
    pub(crate) fn mul_add(
        self,
        e: &mut Emitter<'_, '_, '_>,
        a: Value,
        b: Value,
        c: Value,
    ) -> Value {
        if self.is_float() {
            e.multiply_add(a, b, c)
        } else {
            let product = e.b.ins().imul(a, b);
            e.b.ins().iadd(product, c)
        }
    }

    /// `value` bounded below by `min` and above by `max` (NaN kept), for a
    /// fused clamp; integers take the bounds truncated.
    pub(crate) fn clamp(
        self,
        e: &mut Emitter<'_, '_, '_>,
        value: Value,
        min: Option<f64>,
        max: Option<f64>,
    ) -> Value {
        let mut value = value;
        if let Some(min) = min {
            let bound = self.constant(e, min);
            value = if self.is_float() {
                at_least(e, value, bound)
            } else {
                e.b.ins().smax(value, bound)
            };
        }
        if let Some(max) = max {
            let bound = self.constant(e, max);
            value = if self.is_float() {
                at_most(e, value, bound)
            } else {
                e.b.ins().smin(value, bound)
            };
        }
        value
    }

    /// Loads an element of `dtype` at `address`, converted to the compute
    /// type.
    pub(crate) fn load(
        self,
        e: &mut Emitter<'_, '_, '_>,
        dtype: DType,
        address: Value,
    ) -> Result<Value, CodegenError> {
        let value = e.load(dtype, address);
        e.convert(value, dtype, self.compute)
    }

    /// Stores a number as an element of `dtype` at `address`.
    pub(crate) fn store(
        self,
        e: &mut Emitter<'_, '_, '_>,
        value: Value,
        dtype: DType,
        address: Value,
    ) -> Result<(), CodegenError> {
        let value = e.convert(value, self.compute, dtype)?;
        e.store(value, address);
        Ok(())
    }
}

/// `index * stride` as a byte offset (`index` a pointer-sized integer).
pub(crate) fn scaled(e: &mut Emitter<'_, '_, '_>, index: Value, stride: Size) -> Value {
    match stride {
        Size::Const(0) => e.iconst(0),
        Size::Const(1) => index,
        Size::Const(stride) => e.b.ins().imul_imm_s(index, stride),
        Size::Dyn(stride) => e.b.ins().imul(index, stride),
    }
}

/// `base` plus each index times its byte stride.
pub(crate) fn element_address(
    e: &mut Emitter<'_, '_, '_>,
    base: Value,
    terms: &[(Value, Size)],
) -> Value {
    terms.iter().fold(base, |address, &(index, stride)| {
        let offset = scaled(e, index, stride);
        e.b.ins().iadd(address, offset)
    })
}

/// Whether every flag (an i8 0 or 1) is set; true without flags.
pub(crate) fn all(e: &mut Emitter<'_, '_, '_>, flags: &[Value]) -> Value {
    match flags.split_first() {
        None => e.b.ins().iconst(types::I8, 1),
        Some((&first, rest)) => rest
            .iter()
            .fold(first, |all, &flag| e.b.ins().band(all, flag)),
    }
}
