//! The emitter: a Cranelift function builder for one kernel, with the
//! helpers every kernel generator uses: sizes that fold when they are
//! constant, value addresses, element loads and stores with type conversion,
//! counted loops in rotated form, math calls and error exits.

use std::borrow::Cow;
use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{
    AbiParam, Block, BlockArg, Endianness, FuncRef, InstBuilder, MemFlagsData, Type, Value, types,
};
use cranelift_frontend::FunctionBuilder;
use cranelift_module::{FuncId, Linkage, Module};
use ptec_ir::ops::elementwise::MathFn;
use ptec_ir::symbolic::{ScalarKind, Term};
use ptec_ir::{DType, Dim, Graph, Op, ValueId, ValueKind};

use crate::error::{Backend, CodegenError};
use crate::half::{self, Half};

/// The pointer type of every target ptec generates for (64-bit).
pub(crate) const PTR: Type = types::I64;

/// A size or stride: a constant, or a value computed at run time (from a
/// symbolic dimension).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Size {
    Const(i64),
    Dyn(Value),
}

/// The most steps [`Emitter::short_loop`] emits straight-line.
const UNROLLED_STEPS: i64 = 4;

impl Size {
    pub(crate) fn constant(self) -> Option<i64> {
        match self {
            Size::Const(value) => Some(value),
            Size::Dyn(_) => None,
        }
    }
}

/// What every kernel of a method shares: the graph, where constants are, the
/// target's features and the method's error messages.
pub(crate) struct MethodContext<'g, 'a> {
    pub graph: &'g Graph<'a>,
    /// The constant table, in the order kernels asked for them: the
    /// graph's constants whose addresses kernels took, and those kernels
    /// computed at compile time (prepacked weights).
    pub constants: Vec<Cow<'a, [u8]>>,
    /// The index of each constant value in the constant table.
    pub constant_index: HashMap<ValueId, usize>,
    pub has_fma: bool,
    pub errors: Vec<String>,
    /// Bytes of scratch memory the largest kernel needs, after the graph's
    /// arena.
    pub scratch_bytes: u64,
    /// The microkernels the target can run.
    pub microkernels: Microkernels,
    /// C math functions declared in the module so far, by symbol.
    pub math: HashMap<&'static str, FuncId>,
}

/// The machine-code kernels defined in a method's module (none when the
/// target cannot run them or the options switch them off).
#[derive(Clone, Debug, Default)]
pub(crate) struct Microkernels {
    /// GEMM tiles, widest and tallest first.
    pub gemm: Vec<(crate::microkernel::Tile, FuncId)>,
    /// Direct convolution pixels, the width of their registers, and the
    /// kernels reading [`crate::microkernel::WindowReads::Channels`] and
    /// [`crate::microkernel::WindowReads::Broadcast`].
    pub direct: Option<(crate::microkernel::Width, [FuncId; 2])>,
    /// Activations over f32 arrays.
    pub activations: Vec<(crate::microkernel::Activation, FuncId)>,
    /// Integer GEMM tiles: their form, and the tile of each number of
    /// registers a row (two, then one).
    pub integer: Option<(crate::microkernel::IntegerForm, [FuncId; 2])>,
    /// Chain kernels (`chain_kernel.rs`) of the convolutions' epilogue
    /// steps, by the steps and how they read their operands.
    pub chains: HashMap<ChainKey, FuncId>,
}

/// What a chain kernel is specialized for: the steps (their constants are
/// in its code) and how each operand is read.
pub(crate) type ChainKey = (
    Vec<ptec_ir::ops::fused::FusedStep>,
    Vec<crate::chain_kernel::Reach>,
);

impl Microkernels {
    /// The microkernel computing `activation`, if the target has one.
    pub(crate) fn activation(&self, activation: crate::microkernel::Activation) -> Option<FuncId> {
        self.activations
            .iter()
            .find(|(known, _)| *known == activation)
            .map(|&(_, id)| id)
    }
}

/// Where scratch memory starts in the arena.
pub(crate) fn scratch_offset(graph: &Graph<'_>) -> u64 {
    graph.arena_size().next_multiple_of(64)
}

/// Whether a kernel's work may be split across threads, and how.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Parallel {
    /// The kernel writes shared memory outside any range it was given:
    /// one thread runs it whole.
    Off,
    /// Everything the kernel writes outside [`Emitter::parallel_range`]'s
    /// loops is its own scratch memory, so threads may each run a range.
    Allowed,
    /// The loops over `0..count` (each unit costing about `cost`
    /// operations) take their part of the kernel's range.
    Claimed { count: i64, cost: u64 },
    /// Loops over different counts asked: one thread runs it whole.
    Conflict,
}

/// How a kernel splits: its outermost parallel loop runs over `count`
/// units of about `cost` operations each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Split {
    pub count: i64,
    pub cost: u64,
}

/// Builds one kernel function: `(arena, constants, dims, scratch, start,
/// end) -> status`, computing the part `[start, end)` of its outermost
/// parallel loop (the whole kernel when that range covers it), with its
/// scratch memory at `scratch`.
pub(crate) struct Emitter<'k, 'g, 'a> {
    pub b: FunctionBuilder<'k>,
    pub cx: &'k mut MethodContext<'g, 'a>,
    module: &'k mut dyn Module,
    /// The op of the node whose kernel this is, named in refusals.
    op: &'g Op,
    arena: Value,
    constants: Value,
    dims: Value,
    scratch: Value,
    /// The range of the kernel's parallel loop this call computes.
    range: [Value; 2],
    parallel: Parallel,
    /// C math functions this kernel calls, by symbol.
    imported: HashMap<&'static str, FuncRef>,
    /// The block each error code returns from.
    error_blocks: HashMap<i32, Block>,
}

pub(crate) fn flags() -> MemFlagsData {
    MemFlagsData::new().with_notrap()
}

/// The flags of a `bitcast`, which accepts only a byte order (vectors must
/// name theirs; every target ptec generates for is little-endian).
pub(crate) fn bitcast_flags() -> MemFlagsData {
    MemFlagsData::new().with_endianness(Endianness::Little)
}

/// The Cranelift type that holds an element of `dtype` (booleans as bytes,
/// half-precision floats as their bit patterns: no arithmetic works on
/// them before [`Emitter::convert`] widens them to
/// [`DType::arithmetic`]'s type).
pub(crate) fn scalar_type(dtype: DType) -> Type {
    match dtype {
        DType::Bool | DType::U8 | DType::I8 => types::I8,
        DType::I16 | DType::F16 | DType::BF16 => types::I16,
        DType::I32 => types::I32,
        DType::I64 => types::I64,
        DType::F32 => types::F32,
        DType::F64 => types::F64,
    }
}

/// The half-precision format of `dtype`, if it is one.
fn half_format(dtype: DType) -> Option<Half> {
    match dtype {
        DType::F16 => Some(Half::F16),
        DType::BF16 => Some(Half::BF16),
        _ => None,
    }
}

impl<'k, 'g, 'a> Emitter<'k, 'g, 'a> {
    pub(crate) fn new(
        mut b: FunctionBuilder<'k>,
        cx: &'k mut MethodContext<'g, 'a>,
        module: &'k mut dyn Module,
        op: &'g Op,
    ) -> Self {
        let entry = b.create_block();
        b.append_block_params_for_function_params(entry);
        b.switch_to_block(entry);
        b.seal_block(entry);
        let params = b.block_params(entry).to_vec();
        Emitter {
            b,
            cx,
            module,
            op,
            arena: params[0],
            constants: params[1],
            dims: params[2],
            scratch: params[3],
            range: [params[4], params[5]],
            parallel: Parallel::Off,
            imported: HashMap::new(),
            error_blocks: HashMap::new(),
        }
    }

    /// Returns success and finishes the function; says how the kernel
    /// splits across threads, if it does.
    pub(crate) fn finish(mut self) -> Option<Split> {
        let zero = self.b.ins().iconst(types::I32, 0);
        self.b.ins().return_(&[zero]);
        self.b.seal_all_blocks();
        self.b.finalize(self.module.target_config());
        match self.parallel {
            Parallel::Claimed { count, cost } => Some(Split { count, cost }),
            _ => None,
        }
    }

    /// Declares that this kernel writes nothing shared outside the loops
    /// that take a [`Emitter::parallel_range`] (only its scratch memory,
    /// which is each thread's own), so that threads may run it on parts
    /// of its range.
    pub(crate) fn allow_parallel(&mut self) {
        if self.parallel == Parallel::Off {
            self.parallel = Parallel::Allowed;
        }
    }

    /// Emits `body` with no loop of it taking a part of the kernel's range:
    /// for code inside a loop that already took one.
    pub(crate) fn whole<T>(&mut self, body: impl FnOnce(&mut Self) -> T) -> T {
        let parallel = std::mem::replace(&mut self.parallel, Parallel::Off);
        let result = body(self);
        self.parallel = parallel;
        result
    }

    /// The part `[lo, hi)` of `0..count` this call computes, for a loop
    /// whose units cost about `cost` operations each; `None` when the loop
    /// must run whole (the kernel did not allow splitting, or another loop
    /// of it split a different count). Each unit must compute the same
    /// bits whichever thread runs it and whichever units run beside it.
    pub(crate) fn parallel_range(&mut self, count: i64, cost: u64) -> Option<(Value, Value)> {
        match self.parallel {
            Parallel::Allowed => self.parallel = Parallel::Claimed { count, cost },
            Parallel::Claimed {
                count: claimed,
                cost: before,
            } if claimed == count => {
                self.parallel = Parallel::Claimed {
                    count,
                    cost: before.saturating_add(cost),
                }
            }
            Parallel::Claimed { .. } => {
                self.parallel = Parallel::Conflict;
                return None;
            }
            Parallel::Off | Parallel::Conflict => return None,
        }
        let limit = self.iconst(count);
        let range = self.range;
        let [lo, hi] = range.map(|bound| {
            let below = self.b.ins().icmp(IntCC::SignedLessThan, bound, limit);
            self.b.ins().select(below, bound, limit)
        });
        Some((lo, hi))
    }

    pub(crate) fn iconst(&mut self, value: i64) -> Value {
        self.b.ins().iconst(PTR, value)
    }

    pub(crate) fn graph(&self) -> &'g Graph<'a> {
        self.cx.graph
    }

    /// The name of this kernel's op, for its run-time error messages.
    pub(crate) fn op_name(&self) -> &'static str {
        self.op.name()
    }

    /// The error refusing this kernel's op on the CPU, for `why`.
    pub(crate) fn unsupported(&self, why: impl Into<String>) -> CodegenError {
        CodegenError::unsupported(self.op, Backend::Cpu, why)
    }

    /// The size of a dimension.
    pub(crate) fn dim(&mut self, dim: Dim) -> Size {
        match dim {
            Dim::Fixed(size) => Size::Const(size as i64),
            Dim::Symbol(symbol) => {
                let offset = (symbol.index() * 8) as i32;
                Size::Dyn(
                    self.b
                        .ins()
                        .load(PTR, flags().with_readonly(), self.dims, offset),
                )
            }
        }
    }

    /// A scalar attribute as a number of `dtype` (converted as PyTorch
    /// converts a scalar): a constant, or a symbol's value from `dims`
    /// (ints and bools as `i64`, floats as the bits of an `f64`).
    pub(crate) fn term(&mut self, term: Term, dtype: DType) -> Result<Value, CodegenError> {
        let symbol = match term {
            Term::Const(value) => return self.constant(dtype, value),
            Term::Symbol(symbol) => symbol,
        };
        let kind = self
            .graph()
            .symbol_table()
            .get(symbol)
            .map(|data| data.kind)
            .ok_or_else(|| self.unsupported(format!("{symbol}, not a symbol of the graph")))?;
        let offset = (symbol.index() * 8) as i32;
        let bits = self
            .b
            .ins()
            .load(types::I64, flags().with_readonly(), self.dims, offset);
        match kind {
            ScalarKind::Int => self.convert(bits, DType::I64, dtype),
            ScalarKind::Float => {
                let value = self.b.ins().bitcast(types::F64, MemFlagsData::new(), bits);
                self.convert(value, DType::F64, dtype)
            }
            ScalarKind::Bool => {
                let value = self.b.ins().icmp_imm_s(IntCC::NotEqual, bits, 0);
                self.convert(value, DType::Bool, dtype)
            }
        }
    }

    pub(crate) fn shape(&mut self, shape: &[Dim]) -> Vec<Size> {
        shape.iter().map(|&dim| self.dim(dim)).collect()
    }

    pub(crate) fn value_of(&mut self, size: Size) -> Value {
        match size {
            Size::Const(value) => self.iconst(value),
            Size::Dyn(value) => value,
        }
    }

    pub(crate) fn mul(&mut self, a: Size, b: Size) -> Size {
        match (a, b) {
            (Size::Const(x), Size::Const(y)) => Size::Const(x * y),
            (Size::Const(0), _) | (_, Size::Const(0)) => Size::Const(0),
            (Size::Const(1), other) | (other, Size::Const(1)) => other,
            (Size::Const(x), Size::Dyn(v)) | (Size::Dyn(v), Size::Const(x)) => {
                Size::Dyn(self.b.ins().imul_imm_s(v, x))
            }
            (Size::Dyn(x), Size::Dyn(y)) => Size::Dyn(self.b.ins().imul(x, y)),
        }
    }

    pub(crate) fn add(&mut self, a: Size, b: Size) -> Size {
        match (a, b) {
            (Size::Const(x), Size::Const(y)) => Size::Const(x + y),
            (Size::Const(0), other) | (other, Size::Const(0)) => other,
            (Size::Const(x), Size::Dyn(v)) | (Size::Dyn(v), Size::Const(x)) => {
                Size::Dyn(self.b.ins().iadd_imm_s(v, x))
            }
            (Size::Dyn(x), Size::Dyn(y)) => Size::Dyn(self.b.ins().iadd(x, y)),
        }
    }

    pub(crate) fn product(&mut self, sizes: &[Size]) -> Size {
        sizes
            .iter()
            .fold(Size::Const(1), |acc, &size| self.mul(acc, size))
    }

    /// The address of a value's first element.
    pub(crate) fn address(&mut self, value: ValueId) -> Value {
        let graph = self.graph();
        let data = graph.value(value);
        if let ValueKind::Constant(bytes) = &data.kind {
            let constants = &mut self.cx.constants;
            let index = *self.cx.constant_index.entry(value).or_insert_with(|| {
                constants.push(bytes.clone());
                constants.len() - 1
            });
            let offset = (index * 8) as i32;
            return self
                .b
                .ins()
                .load(PTR, flags().with_readonly(), self.constants, offset);
        }
        let offset = data.offset.unwrap_or(0);
        self.b.ins().iadd_imm_s(self.arena, offset as i64)
    }

    /// The address of `bytes`, a constant the kernel computed at compile
    /// time (64-byte aligned in objects; read with unaligned loads).
    pub(crate) fn computed_constant(&mut self, bytes: Vec<u8>) -> Value {
        let index = self.cx.constants.len();
        self.cx.constants.push(Cow::Owned(bytes));
        self.b.ins().load(
            PTR,
            flags().with_readonly(),
            self.constants,
            (index * 8) as i32,
        )
    }

    /// The start of this kernel's scratch memory (at least `bytes` long,
    /// 64-byte aligned): the end of the arena on the calling thread, a
    /// pool's memory on its workers. Scratch is free for any kernel to
    /// overwrite.
    pub(crate) fn scratch(&mut self, bytes: u64) -> Value {
        self.cx.scratch_bytes = self.cx.scratch_bytes.max(bytes);
        self.scratch
    }

    pub(crate) fn add_size(&mut self, base: Value, size: Size) -> Value {
        match size {
            Size::Const(0) => base,
            Size::Const(value) => self.b.ins().iadd_imm_s(base, value),
            Size::Dyn(value) => self.b.ins().iadd(base, value),
        }
    }

    /// `a * b + addend`, fused when the CPU has FMA.
    pub(crate) fn multiply_add(&mut self, a: Value, b: Value, addend: Value) -> Value {
        if self.cx.has_fma {
            self.b.ins().fma(a, b, addend)
        } else {
            let product = self.b.ins().fmul(a, b);
            self.b.ins().fadd(product, addend)
        }
    }

    /// Loads an element of `dtype` at `address`.
    pub(crate) fn load(&mut self, dtype: DType, address: Value) -> Value {
        let ty = scalar_type(dtype);
        self.b.ins().load(ty, flags(), address, 0)
    }

    pub(crate) fn store(&mut self, value: Value, address: Value) {
        self.b.ins().store(flags(), value, address, 0);
    }

    /// Converts a scalar from one element type to another as a PyTorch cast
    /// does (floats to integers truncate, saturating; anything to bool is
    /// "not zero").
    pub(crate) fn convert(
        &mut self,
        value: Value,
        from: DType,
        to: DType,
    ) -> Result<Value, CodegenError> {
        if from == to {
            return Ok(value);
        }
        if let Some(half) = half_format(from) {
            let wide = half::to_f32(&mut self.b, half, value);
            return self.convert(wide, DType::F32, to);
        }
        if let Some(half) = half_format(to) {
            let wide = self.convert(value, from, DType::F32)?;
            return Ok(half::from_f32(&mut self.b, half, wide));
        }
        let target = scalar_type(to);
        if to == DType::Bool {
            let truth = if from.is_float() {
                let zero = self.float_const(from, 0.0)?;
                self.b.ins().fcmp(FloatCC::NotEqual, value, zero)
            } else {
                self.b.ins().icmp_imm_s(IntCC::NotEqual, value, 0)
            };
            return Ok(truth);
        }
        let source = scalar_type(from);
        let unsigned = matches!(from, DType::Bool | DType::U8);
        Ok(match (from.is_float(), to.is_float()) {
            (true, true) if source.bits() < target.bits() => self.b.ins().fpromote(target, value),
            (true, true) => self.b.ins().fdemote(target, value),
            (false, true) if unsigned => self.b.ins().fcvt_from_uint(target, value),
            (false, true) => self.b.ins().fcvt_from_sint(target, value),
            (true, false) => {
                // As `ptec_ir::tensor_data::float_to_int`: truncated through
                // a 64-bit or a 32-bit integer, whose minimum stands for what
                // it cannot hold, then wrapped.
                let wide = if target == types::I64 {
                    types::I64
                } else {
                    types::I32
                };
                let bound = 2f64.powi(wide.bits() as i32 - 1);
                let truncated = self.b.ins().fcvt_to_sint_sat(wide, value);
                let low = self.float_const(from, -bound)?;
                let high = self.float_const(from, bound)?;
                let above_low = self.b.ins().fcmp(FloatCC::GreaterThanOrEqual, value, low);
                let below_high = self.b.ins().fcmp(FloatCC::LessThan, value, high);
                let held = self.b.ins().band(above_low, below_high);
                let minimum = self.b.ins().iconst(wide, wide.bounds(true).0 as i64);
                let wide_value = self.b.ins().select(held, truncated, minimum);
                if target == wide {
                    wide_value
                } else {
                    self.b.ins().ireduce(target, wide_value)
                }
            }
            (false, false) if source.bits() < target.bits() && unsigned => {
                self.b.ins().uextend(target, value)
            }
            (false, false) if source.bits() < target.bits() => self.b.ins().sextend(target, value),
            (false, false) if source.bits() > target.bits() => self.b.ins().ireduce(target, value),
            (false, false) => value,
        })
    }

    /// A float constant of a float element type.
    pub(crate) fn float_const(&mut self, dtype: DType, value: f64) -> Result<Value, CodegenError> {
        Ok(match dtype {
            DType::F64 => self.b.ins().f64const(value),
            DType::F32 => self.b.ins().f32const(value as f32),
            other => return Err(self.unsupported(format!("float constants of type {other}"))),
        })
    }

    /// A constant of any element type.
    pub(crate) fn constant(
        &mut self,
        dtype: DType,
        value: ptec_ir::Scalar,
    ) -> Result<Value, CodegenError> {
        if dtype.is_float() {
            return self.float_const(dtype, value.as_f64());
        }
        let ty = scalar_type(dtype);
        let value = if dtype == DType::Bool {
            i64::from(value.as_f64() != 0.0)
        } else {
            value.as_i64()
        };
        Ok(self.b.ins().iconst(ty, value))
    }

    /// A loop that runs `count` times (not at all when `count` <= 0), in
    /// rotated form: the test is at the bottom, behind one guard. `carried`
    /// values flow from one iteration to the next; `body` gets them and the
    /// iteration index and returns their next values. Returns their values
    /// after the loop.
    pub(crate) fn counted_loop(
        &mut self,
        count: Size,
        carried: &[Value],
        mut body: impl FnMut(&mut Self, Value, &[Value]) -> Result<Vec<Value>, CodegenError>,
    ) -> Result<Vec<Value>, CodegenError> {
        if count == Size::Const(0) {
            return Ok(carried.to_vec());
        }
        if count == Size::Const(1) {
            let zero = self.iconst(0);
            return body(self, zero, carried);
        }
        let types: Vec<Type> = carried
            .iter()
            .map(|&v| self.b.func.dfg.value_type(v))
            .collect();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.append_block_param(body_block, PTR);
        for &ty in &types {
            self.b.append_block_param(body_block, ty);
            self.b.append_block_param(exit, ty);
        }
        let count_value = self.value_of(count);
        let zero = self.iconst(0);
        let mut start_args = vec![BlockArg::from(zero)];
        start_args.extend(carried.iter().map(|&v| BlockArg::from(v)));
        let exit_args: Vec<_> = carried.iter().map(|&v| BlockArg::from(v)).collect();
        if matches!(count, Size::Const(n) if n > 0) {
            self.b.ins().jump(body_block, &start_args);
        } else {
            let any = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThan, count_value, 0);
            self.b
                .ins()
                .brif(any, body_block, &start_args, exit, &exit_args);
        }
        self.b.switch_to_block(body_block);
        let params = self.b.block_params(body_block).to_vec();
        let next = body(self, params[0], &params[1..])?;
        let index = self.b.ins().iadd_imm_s(params[0], 1);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, index, count_value);
        let mut loop_args = vec![BlockArg::from(index)];
        loop_args.extend(next.iter().map(|&v| BlockArg::from(v)));
        let done_args: Vec<_> = next.iter().map(|&v| BlockArg::from(v)).collect();
        self.b
            .ins()
            .brif(more, body_block, &loop_args, exit, &done_args);
        self.b.switch_to_block(exit);
        Ok(self.b.block_params(exit).to_vec())
    }

    /// [`Emitter::counted_loop`], but with a count known to be at most
    /// [`UNROLLED_STEPS`] the body is emitted once per step, straight-line
    /// (short innermost loops, such as an im2col run of a few vectors).
    pub(crate) fn short_loop(
        &mut self,
        count: Size,
        carried: &[Value],
        mut body: impl FnMut(&mut Self, Value, &[Value]) -> Result<Vec<Value>, CodegenError>,
    ) -> Result<Vec<Value>, CodegenError> {
        match count {
            Size::Const(steps) if (0..=UNROLLED_STEPS).contains(&steps) => {
                let mut carried = carried.to_vec();
                for step in 0..steps {
                    let index = self.iconst(step);
                    carried = body(self, index, &carried)?;
                }
                Ok(carried)
            }
            _ => self.counted_loop(count, carried, body),
        }
    }

    /// Calls a function of the C math library on `args`, f32 or f64
    /// values, by its C symbol: the JIT resolves it in this process, the
    /// linker of an AOT object in libm.
    pub(crate) fn call_math(
        &mut self,
        function: MathFn,
        args: &[Value],
    ) -> Result<Value, CodegenError> {
        let ty = self.b.func.dfg.value_type(args[0]);
        let symbol = function.c_symbol(ty == types::F64);
        let func_ref = match self.imported.get(symbol) {
            Some(&func_ref) => func_ref,
            None => {
                let id = match self.cx.math.get(symbol) {
                    Some(&id) => id,
                    None => {
                        let mut signature = self.module.make_signature();
                        for _ in 0..function.arity() {
                            signature.params.push(AbiParam::new(ty));
                        }
                        signature.returns.push(AbiParam::new(ty));
                        let id =
                            self.module
                                .declare_function(symbol, Linkage::Import, &signature)?;
                        self.cx.math.insert(symbol, id);
                        id
                    }
                };
                let func_ref = self.module.declare_func_in_func(id, self.b.func);
                self.imported.insert(symbol, func_ref);
                func_ref
            }
        };
        let call = self.b.ins().call(func_ref, args);
        Ok(self.b.inst_results(call)[0])
    }

    /// A reference to a module function, for calls from this kernel.
    pub(crate) fn import_function(&mut self, id: FuncId) -> FuncRef {
        self.module.declare_func_in_func(id, self.b.func)
    }

    /// Returns error `message` from the kernel when `condition` is true.
    pub(crate) fn fail_if(&mut self, condition: Value, message: String) {
        let code = match self.cx.errors.iter().position(|known| *known == message) {
            Some(index) => index as i32 + 1,
            None => {
                self.cx.errors.push(message);
                self.cx.errors.len() as i32
            }
        };
        let (error_block, fresh) = match self.error_blocks.get(&code) {
            Some(&block) => (block, false),
            None => {
                let block = self.b.create_block();
                self.error_blocks.insert(code, block);
                (block, true)
            }
        };
        let go_on = self.b.create_block();
        self.b.ins().brif(condition, error_block, &[], go_on, &[]);
        if fresh {
            self.b.switch_to_block(error_block);
            let status = self.b.ins().iconst(types::I32, i64::from(code));
            self.b.ins().return_(&[status]);
        }
        self.b.switch_to_block(go_on);
    }
}
