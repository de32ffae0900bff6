//! Matrix products, with the clamp a fused activation adds to their
//! epilogue.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::{Expected, OpDef, OpError, ShapeContext, Slot, broadcast, one, shapes_of};
use crate::graph::ValueId;
use crate::op::Op;
use crate::types::{DType, Real, Scalar, TensorType};

/// Bounds an op clamps its result to (either may be absent): a ReLU, ReLU6
/// or hardtanh fused into the op that feeds it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ClampRange {
    pub min: Option<Real>,
    pub max: Option<Real>,
}

impl ClampRange {
    pub fn is_none(self) -> bool {
        self.min.is_none() && self.max.is_none()
    }

    pub(crate) fn write(self, out: &mut AttributeWriter) {
        out.real_if_some("clamp_min", self.min);
        out.real_if_some("clamp_max", self.max);
    }

    pub(crate) fn read(attributes: &mut AttributeReader) -> Result<ClampRange, FormError> {
        Ok(ClampRange {
            min: attributes.real_if_present("clamp_min")?,
            max: attributes.real_if_present("clamp_max")?,
        })
    }
}

/// `a @ b` over the last two dimensions, batched over the others, bounded
/// by `clamp`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MatMul {
    pub a: ValueId,
    pub b: ValueId,
    pub clamp: ClampRange,
}

/// `beta * bias + alpha * (a @ b)` of matrices, `bias` broadcast, bounded
/// by `clamp`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Addmm {
    pub bias: ValueId,
    pub a: ValueId,
    pub b: ValueId,
    pub beta: Scalar,
    pub alpha: Scalar,
    pub clamp: ClampRange,
}

impl OpDef for MatMul {
    fn name(&self) -> &'static str {
        "mat_mul"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![(Slot::Positional, self.a), (Slot::Positional, self.b)]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.a, &mut self.b]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (a, b) = (&inputs[0].shape, &inputs[1].shape);
        let mismatch = |what| OpError::Shapes {
            what,
            shapes: shapes_of(inputs),
        };
        if a.len() < 2 || a.len() != b.len() {
            return Err(mismatch(
                "matmul of operands of ranks other than one rank of at least 2",
            ));
        }
        let rank = a.len();
        let mut shape = Vec::with_capacity(rank);
        for index in 0..rank - 2 {
            shape.push(
                eq.equate(a[index], b[index])
                    .ok_or_else(|| mismatch("matmul of operands of other batch dimensions"))?,
            );
        }
        eq.equate(a[rank - 1], b[rank - 2])
            .ok_or_else(|| mismatch("matmul of operands whose inner sizes differ"))?;
        shape.push(a[rank - 2]);
        shape.push(b[rank - 1]);
        one(shape)
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        one_element_type(inputs, outputs)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        self.clamp.write(out);
    }

    fn clamp_epilogue(&mut self) -> Option<&mut ClampRange> {
        Some(&mut self.clamp)
    }
}

impl OpDef for Addmm {
    fn name(&self) -> &'static str {
        "addmm"
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        vec![
            (Slot::Positional, self.bias),
            (Slot::Positional, self.a),
            (Slot::Positional, self.b),
        ]
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        vec![&mut self.bias, &mut self.a, &mut self.b]
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (bias, a, b) = (&inputs[0].shape, &inputs[1].shape, &inputs[2].shape);
        let mismatch = |what| OpError::Shapes {
            what,
            shapes: shapes_of(inputs),
        };
        if a.len() != 2 || b.len() != 2 {
            return Err(mismatch("addmm of operands that are not matrices"));
        }
        if bias.len() > 2 {
            return Err(mismatch(
                "addmm of a bias of rank above 2, which does not broadcast to the matrix product",
            ));
        }
        eq.equate(a[1], b[0])
            .ok_or_else(|| mismatch("addmm of matrices whose inner sizes differ"))?;
        let out = vec![a[0], b[1]];
        broadcast(&[bias, &out], eq)?;
        one(out)
    }

    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        one_element_type(inputs, outputs)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.scalar("beta", self.beta);
        out.scalar("alpha", self.alpha);
        self.clamp.write(out);
    }

    fn clamp_epilogue(&mut self) -> Option<&mut ClampRange> {
        Some(&mut self.clamp)
    }
}

/// A matrix product's operands and result share one element type, which
/// is a number (PyTorch multiplies no bools and no mixed types).
fn one_element_type(inputs: &[&TensorType], outputs: &[&TensorType]) -> Result<(), OpError> {
    let dtype = outputs[0].dtype;
    if dtype == DType::Bool {
        return Err(OpError::ElementType {
            what: "a matrix product",
            expected: "of numbers",
            found: dtype,
        });
    }
    match inputs.iter().find(|input| input.dtype != dtype) {
        Some(input) => Err(OpError::ElementType {
            what: "a matrix product's operand",
            expected: "of the result's type",
            found: input.dtype,
        }),
        None => Ok(()),
    }
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "mat_mul" => Op::MatMul(MatMul {
                a: operands.positional("a")?,
                b: operands.positional("b")?,
                clamp: ClampRange::read(attributes)?,
            }),
            "addmm" => Op::Addmm(Addmm {
                bias: operands.positional("bias")?,
                a: operands.positional("a")?,
                b: operands.positional("b")?,
                beta: attributes.scalar("beta")?,
                alpha: attributes.scalar("alpha")?,
                clamp: ClampRange::read(attributes)?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
