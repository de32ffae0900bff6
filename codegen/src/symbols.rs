//! The generated evaluation of a method's symbols: the entry point computes
//! each symbol that is not an input's dimension (a polynomial, an operation,
//! a tensor element) where the schedule makes it known ([`Ready`]), stores
//! it in the method's `dims` (ints and bools as `i64`, floats as the bits of
//! an `f64`) for the kernels to read, and checks there what the program
//! requires: the table's checks, and that a computed dimension lies within
//! the bound memory was planned for. A failed check returns its error code,
//! never letting a kernel run on sizes its memory does not hold.

use std::collections::HashSet;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{Block, InstBuilder, MemFlagsData, Value, types};
use cranelift_frontend::FunctionBuilder;
use ptec_ir::symbolic::{Poly, ScalarKind, SymOp, SymbolDef, Term, element_scalar};
use ptec_ir::{DType, Dim, Graph, Ready, Scalar, SymbolId, ValueId};

use crate::emit::{flags, scalar_type};
use crate::error::{Backend, CodegenError};
use crate::half::{self, Half};

/// What evaluating symbols needs from the entry point being built.
pub(crate) struct SymbolCode<'g, 'a> {
    graph: &'g Graph<'a>,
    points: Vec<Ready>,
    /// The symbols some value's shape names: they must be sizes within
    /// their bounds.
    dimensions: HashSet<SymbolId>,
    pub arena: Value,
    pub dims: Value,
    /// Where a failed check goes, with its status.
    pub fail: Block,
}

fn refuse(why: String) -> CodegenError {
    CodegenError::UnsupportedMethod {
        backend: Backend::Cpu,
        why,
    }
}

impl<'g, 'a> SymbolCode<'g, 'a> {
    pub(crate) fn new(graph: &'g Graph<'a>, arena: Value, dims: Value, fail: Block) -> Self {
        let dimensions = graph
            .values()
            .flat_map(|(_, value)| value.ty.shape.iter())
            .filter_map(|dim| match dim {
                Dim::Symbol(symbol) => Some(*symbol),
                Dim::Fixed(_) => None,
            })
            .collect();
        SymbolCode {
            graph,
            points: graph.symbol_points(),
            dimensions,
            arena,
            dims,
            fail,
        }
    }

    /// Computes the symbols known at `point` and evaluates the checks that
    /// become decidable there.
    pub(crate) fn emit(
        &self,
        b: &mut FunctionBuilder<'_>,
        point: Ready,
        errors: &mut Vec<String>,
    ) -> Result<(), CodegenError> {
        let table = self.graph.symbol_table();
        for (symbol, data) in table.iter() {
            if self.points[symbol.index()] != point || data.def == SymbolDef::Input {
                continue;
            }
            let value = self.evaluate(b, symbol, &data.def, data.kind, errors)?;
            b.ins()
                .store(flags(), value, self.dims, (symbol.index() * 8) as i32);
            if self.dimensions.contains(&symbol) && !data.is_within_bound() {
                let bound = i64::try_from(data.bound).unwrap_or(i64::MAX);
                let fits = b
                    .ins()
                    .icmp_imm_u(IntCC::UnsignedLessThanOrEqual, value, bound);
                let message = format!(
                    "{symbol} ({}, {}) is a size outside 0..={}, the bound memory was planned for",
                    data.origin, data.def, data.bound
                );
                self.check(b, fits, message, errors);
            }
        }
        for check in table.checks() {
            if self.points.get(check.condition.index()) == Some(&point) {
                let holds = self.load(b, check.condition);
                self.check(b, holds, check.message.clone(), errors);
            }
        }
        Ok(())
    }

    /// Continues when `holds` is not zero, else returns a new error code.
    fn check(
        &self,
        b: &mut FunctionBuilder<'_>,
        holds: Value,
        message: String,
        errors: &mut Vec<String>,
    ) {
        errors.push(message);
        let status = b.ins().iconst(types::I32, errors.len() as i64);
        let next = b.create_block();
        b.ins().brif(holds, next, &[], self.fail, &[status.into()]);
        b.switch_to_block(next);
    }

    /// A symbol's slot of `dims`, as `i64`.
    fn load(&self, b: &mut FunctionBuilder<'_>, symbol: SymbolId) -> Value {
        b.ins()
            .load(types::I64, flags(), self.dims, (symbol.index() * 8) as i32)
    }

    /// A term as a number of its kind: `i64` for ints and bools, `f64` for
    /// floats.
    fn term(
        &self,
        b: &mut FunctionBuilder<'_>,
        term: Term,
    ) -> Result<(Value, ScalarKind), CodegenError> {
        Ok(match term {
            Term::Const(Scalar::Int(value)) => (b.ins().iconst(types::I64, value), ScalarKind::Int),
            Term::Const(Scalar::Bool(value)) => (
                b.ins().iconst(types::I64, i64::from(value)),
                ScalarKind::Bool,
            ),
            Term::Const(Scalar::Float(value)) => (b.ins().f64const(value), ScalarKind::Float),
            Term::Symbol(symbol) => {
                let kind = self
                    .graph
                    .symbol_table()
                    .get(symbol)
                    .map(|data| data.kind)
                    .ok_or_else(|| refuse(format!("{symbol}, not a symbol of the graph")))?;
                let bits = self.load(b, symbol);
                let value = match kind {
                    ScalarKind::Float => b.ins().bitcast(types::F64, MemFlagsData::new(), bits),
                    ScalarKind::Int | ScalarKind::Bool => bits,
                };
                (value, kind)
            }
        })
    }

    /// The value of `symbol` as its `dims` slot holds it.
    fn evaluate(
        &self,
        b: &mut FunctionBuilder<'_>,
        symbol: SymbolId,
        def: &SymbolDef,
        kind: ScalarKind,
        errors: &mut Vec<String>,
    ) -> Result<Value, CodegenError> {
        let value = match def {
            SymbolDef::Input => {
                return Err(refuse(format!("{symbol}, an input's size, computed")));
            }
            SymbolDef::Element(value) => self.element(b, *value)?,
            SymbolDef::Poly(poly) => self.poly(b, poly),
            SymbolDef::Op(op, terms) => {
                let args = terms
                    .iter()
                    .map(|&arg| self.term(b, arg))
                    .collect::<Result<Vec<_>, _>>()?;
                // A divisor known only at run time may be zero: an error
                // (constant ones were folded or refused at import).
                if let (SymOp::FloorDiv | SymOp::Mod, [_, Term::Symbol(_)]) = (op, terms.as_slice())
                {
                    let nonzero = b.ins().icmp_imm_s(IntCC::NotEqual, args[1].0, 0);
                    let message = format!("division by zero computing {symbol} = {def}");
                    self.check(b, nonzero, message, errors);
                }
                operation(b, *op, &args).ok_or_else(|| {
                    refuse(format!(
                        "{symbol}: {def}, whose operands are not of its kinds"
                    ))
                })?
            }
        };
        Ok(match kind {
            ScalarKind::Float => b.ins().bitcast(types::I64, MemFlagsData::new(), value),
            ScalarKind::Int | ScalarKind::Bool => value,
        })
    }

    /// The first element of `value`, as a number of its kind.
    fn element(&self, b: &mut FunctionBuilder<'_>, value: ValueId) -> Result<Value, CodegenError> {
        let data = self.graph.value(value);
        let dtype = data.ty.dtype;
        let offset = data.offset.ok_or_else(|| {
            refuse(format!(
                "an element of {value}, which has no place in the arena"
            ))
        })?;
        let offset = i32::try_from(offset)
            .map_err(|_| refuse(format!("an element of {value}, beyond 2 GiB in the arena")))?;
        let loaded = b
            .ins()
            .load(scalar_type(dtype), flags(), self.arena, offset);
        let (kind, _) = element_scalar(dtype);
        Ok(match (kind, dtype) {
            (ScalarKind::Float, DType::F16) => {
                let wide = half::to_f32(b, Half::F16, loaded);
                b.ins().fpromote(types::F64, wide)
            }
            (ScalarKind::Float, DType::BF16) => {
                let wide = half::to_f32(b, Half::BF16, loaded);
                b.ins().fpromote(types::F64, wide)
            }
            (ScalarKind::Float, DType::F32) => b.ins().fpromote(types::F64, loaded),
            (ScalarKind::Float, _) => loaded,
            (_, DType::I64) => loaded,
            (_, DType::Bool | DType::U8) => b.ins().uextend(types::I64, loaded),
            (_, _) => b.ins().sextend(types::I64, loaded),
        })
    }

    /// A polynomial, with wrapping 64-bit arithmetic.
    fn poly(&self, b: &mut FunctionBuilder<'_>, poly: &Poly) -> Value {
        let mut sum = b.ins().iconst(types::I64, 0);
        for (atoms, coefficient) in poly.monomials() {
            let mut product = b.ins().iconst(types::I64, coefficient);
            for &atom in atoms {
                let factor = self.load(b, atom);
                product = b.ins().imul(product, factor);
            }
            sum = b.ins().iadd(sum, product);
        }
        sum
    }
}

/// `op` on numbers of their kinds (`i64` for ints and bools, `f64` for
/// floats); `None` when the kinds are not ones it takes.
fn operation(
    b: &mut FunctionBuilder<'_>,
    op: SymOp,
    args: &[(Value, ScalarKind)],
) -> Option<Value> {
    use ScalarKind::{Bool, Float, Int};
    let boolean = |b: &mut FunctionBuilder<'_>, flag: Value| b.ins().uextend(types::I64, flag);
    Some(match (op, args) {
        (SymOp::FloorDiv | SymOp::Mod, &[(x, Int), (y, Int)]) => floor_div_mod(b, op, x, y),
        (SymOp::Max, &[(x, Int), (y, Int)]) => b.ins().smax(x, y),
        (SymOp::Min, &[(x, Int), (y, Int)]) => b.ins().smin(x, y),
        (SymOp::Max, &[(x, Float), (y, Float)]) => b.ins().fmax(x, y),
        (SymOp::Min, &[(x, Float), (y, Float)]) => b.ins().fmin(x, y),
        (SymOp::Eq | SymOp::Ne | SymOp::Lt | SymOp::Le, &[(x, Float), (y, Float)]) => {
            let cc = match op {
                SymOp::Eq => FloatCC::Equal,
                SymOp::Ne => FloatCC::NotEqual,
                SymOp::Lt => FloatCC::LessThan,
                _ => FloatCC::LessThanOrEqual,
            };
            let flag = b.ins().fcmp(cc, x, y);
            boolean(b, flag)
        }
        (SymOp::Eq | SymOp::Ne | SymOp::Lt | SymOp::Le, &[(x, a), (y, c)]) if a == c => {
            let cc = match op {
                SymOp::Eq => IntCC::Equal,
                SymOp::Ne => IntCC::NotEqual,
                SymOp::Lt => IntCC::SignedLessThan,
                _ => IntCC::SignedLessThanOrEqual,
            };
            let flag = b.ins().icmp(cc, x, y);
            boolean(b, flag)
        }
        (SymOp::Not, &[(x, Bool)]) => {
            let flag = b.ins().icmp_imm_s(IntCC::Equal, x, 0);
            boolean(b, flag)
        }
        (SymOp::Ite, &[(condition, Bool), (x, _), (y, _)]) => b.ins().select(condition, x, y),
        (SymOp::Add, &[(x, Float), (y, Float)]) => b.ins().fadd(x, y),
        (SymOp::Sub, &[(x, Float), (y, Float)]) => b.ins().fsub(x, y),
        (SymOp::Mul, &[(x, Float), (y, Float)]) => b.ins().fmul(x, y),
        (SymOp::TrueDiv, &[(x, Float), (y, Float)]) => b.ins().fdiv(x, y),
        (SymOp::Neg, &[(x, Float)]) => b.ins().fneg(x),
        (SymOp::ToFloat, &[(x, Int | Bool)]) => b.ins().fcvt_from_sint(types::F64, x),
        (SymOp::Trunc | SymOp::Floor | SymOp::Ceil | SymOp::Round, &[(x, Float)]) => {
            let rounded = match op {
                SymOp::Trunc => x,
                SymOp::Floor => b.ins().floor(x),
                SymOp::Ceil => b.ins().ceil(x),
                _ => b.ins().nearest(x),
            };
            b.ins().fcvt_to_sint_sat(types::I64, rounded)
        }
        _ => return None,
    })
}

/// Python's `x // y` or `x % y` (the divisor's sign), as
/// `ptec_ir::symbolic::floor_div` and `floor_mod` fold them. A zero divisor
/// gives 0 (a check before it stops the method); `i64::MIN // -1` wraps.
fn floor_div_mod(b: &mut FunctionBuilder<'_>, op: SymOp, x: Value, y: Value) -> Value {
    // Neither 0 nor -1 reaches `sdiv`/`srem` (which trap on them).
    let zero = b.ins().icmp_imm_s(IntCC::Equal, y, 0);
    let minus_one = b.ins().icmp_imm_s(IntCC::Equal, y, -1);
    let special = b.ins().bor(zero, minus_one);
    let one = b.ins().iconst(types::I64, 1);
    let safe = b.ins().select(special, one, y);
    let quotient = b.ins().sdiv(x, safe);
    let remainder = b.ins().srem(x, safe);
    // Rounds toward negative infinity: a remainder of the other sign than
    // the divisor moves the quotient down and the remainder by the divisor.
    let signs = b.ins().bxor(remainder, safe);
    let differ = b.ins().icmp_imm_s(IntCC::SignedLessThan, signs, 0);
    let nonzero = b.ins().icmp_imm_s(IntCC::NotEqual, remainder, 0);
    let adjust = b.ins().band(differ, nonzero);
    let zero_value = b.ins().iconst(types::I64, 0);
    match op {
        SymOp::FloorDiv => {
            let lowered = b.ins().iadd_imm_s(quotient, -1);
            let floored = b.ins().select(adjust, lowered, quotient);
            let negated = b.ins().ineg(x);
            let result = b.ins().select(minus_one, negated, floored);
            b.ins().select(zero, zero_value, result)
        }
        _ => {
            let raised = b.ins().iadd(remainder, safe);
            let floored = b.ins().select(adjust, raised, remainder);
            b.ins().select(special, zero_value, floored)
        }
    }
}
