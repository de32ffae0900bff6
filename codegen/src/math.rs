//! Math functions that generated code calls: the C library's (libm), by
//! name, so that the JIT (which resolves them in the process) and AOT objects
//! (which the linker resolves against libm) call the same code. Their
//! accuracy is the C library's: glibc documents at most 1-2 ulp for these
//! single-precision functions on x86_64 and aarch64.

use cranelift_codegen::ir::{Type, types};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum MathFn {
    Exp,
    Log,
    Tanh,
    Sin,
    Cos,
    Erf,
    Pow,
    Expm1,
    Log1p,
    Exp64,
    Log64,
    Tanh64,
    Sin64,
    Cos64,
    Erf64,
    Pow64,
    Expm1F64,
    Log1pF64,
}

impl MathFn {
    /// The C symbol.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            MathFn::Exp => "expf",
            MathFn::Log => "logf",
            MathFn::Tanh => "tanhf",
            MathFn::Sin => "sinf",
            MathFn::Cos => "cosf",
            MathFn::Erf => "erff",
            MathFn::Pow => "powf",
            MathFn::Expm1 => "expm1f",
            MathFn::Log1p => "log1pf",
            MathFn::Expm1F64 => "expm1",
            MathFn::Log1pF64 => "log1p",
            MathFn::Exp64 => "exp",
            MathFn::Log64 => "log",
            MathFn::Tanh64 => "tanh",
            MathFn::Sin64 => "sin",
            MathFn::Cos64 => "cos",
            MathFn::Erf64 => "erf",
            MathFn::Pow64 => "pow",
        }
    }

    pub(crate) fn arity(self) -> usize {
        match self {
            MathFn::Pow | MathFn::Pow64 => 2,
            _ => 1,
        }
    }

    /// The type of the arguments and the result.
    pub(crate) fn ty(self) -> Type {
        match self {
            MathFn::Exp
            | MathFn::Log
            | MathFn::Tanh
            | MathFn::Sin
            | MathFn::Cos
            | MathFn::Erf
            | MathFn::Pow
            | MathFn::Expm1
            | MathFn::Log1p => types::F32,
            _ => types::F64,
        }
    }

    /// The function of this kind for `ty` (F32 or F64).
    pub(crate) fn for_type(self, ty: Type) -> MathFn {
        let wide = ty == types::F64;
        match (self, wide) {
            (MathFn::Exp | MathFn::Exp64, false) => MathFn::Exp,
            (MathFn::Exp | MathFn::Exp64, true) => MathFn::Exp64,
            (MathFn::Log | MathFn::Log64, false) => MathFn::Log,
            (MathFn::Log | MathFn::Log64, true) => MathFn::Log64,
            (MathFn::Tanh | MathFn::Tanh64, false) => MathFn::Tanh,
            (MathFn::Tanh | MathFn::Tanh64, true) => MathFn::Tanh64,
            (MathFn::Sin | MathFn::Sin64, false) => MathFn::Sin,
            (MathFn::Sin | MathFn::Sin64, true) => MathFn::Sin64,
            (MathFn::Cos | MathFn::Cos64, false) => MathFn::Cos,
            (MathFn::Cos | MathFn::Cos64, true) => MathFn::Cos64,
            (MathFn::Erf | MathFn::Erf64, false) => MathFn::Erf,
            (MathFn::Erf | MathFn::Erf64, true) => MathFn::Erf64,
            (MathFn::Pow | MathFn::Pow64, false) => MathFn::Pow,
            (MathFn::Pow | MathFn::Pow64, true) => MathFn::Pow64,
            (MathFn::Expm1 | MathFn::Expm1F64, false) => MathFn::Expm1,
            (MathFn::Expm1 | MathFn::Expm1F64, true) => MathFn::Expm1F64,
            (MathFn::Log1p | MathFn::Log1pF64, false) => MathFn::Log1p,
            (MathFn::Log1p | MathFn::Log1pF64, true) => MathFn::Log1pF64,
        }
    }
}
