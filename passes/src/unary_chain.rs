//! Chains of f32 steps of one operand each, evaluated on numbers: the
//! passes that rewrite a quantized program's requantizations prove the new
//! chain equal to the old on every value its operand can hold, bit for bit,
//! by evaluating both as the IR defines their steps (`Expr::eval_f32`).

use ptec_ir::DType;
use ptec_ir::ops::elementwise::Func;
use ptec_ir::ops::expr::Expr;
use ptec_ir::ops::fused::{FusedStep, StepInput};

/// The most integers apart a value's range may be for a chain to be
/// evaluated on each of them (int8 and uint8 ranges are 255 apart, int16's
/// 65535).
pub(crate) const MAX_INTEGERS: i64 = 1 << 16;

/// Functions applied one after another to one f32 value.
pub(crate) struct UnaryChain(Vec<Expr>);

impl UnaryChain {
    /// The chain of `funcs`, or `None` when one has no expression in f32.
    pub(crate) fn new<'f>(funcs: impl IntoIterator<Item = &'f Func>) -> Option<UnaryChain> {
        let exprs = funcs.into_iter().map(|func| func.expr(DType::F32).ok());
        exprs.collect::<Option<_>>().map(UnaryChain)
    }

    /// The chain's result for `x`, or `None` when a step holds a node
    /// `Expr::eval_f32` does not compute.
    pub(crate) fn eval(&self, x: f32) -> Option<f32> {
        self.0
            .iter()
            .try_fold(x, |value, expr| expr.eval_f32(&[value]))
    }
}

/// Whether two evaluated results are the same: both computed, and the same
/// bits or both NaN (whose payload the steps pass on as the hardware does).
pub(crate) fn same(a: Option<f32>, b: Option<f32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
        _ => false,
    }
}

/// Whether `steps`, the steps from `base` on of a chain, read one value
/// each: the first `first`, every other the step before it.
pub(crate) fn in_line(steps: &[FusedStep], first: StepInput, base: usize) -> bool {
    steps.iter().enumerate().all(|(offset, step)| {
        let operand = match offset {
            0 => first,
            _ => StepInput::Step(base + offset - 1),
        };
        step.inputs == [operand]
    })
}
