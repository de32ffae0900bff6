//! The strided map: one loop nest that reads any number of operands through
//! their own strides (0 where an operand is broadcast), computes an element
//! and stores it. Elementwise ops, copies, permutations, slices and casts are
//! all strided maps.
//!
//! Before emitting, size-1 dimensions are dropped, the others walked in the
//! output's memory order and merged where every operand walks them
//! contiguously; operands that do not move along the
//! innermost dimension are loaded once outside it; and when every operand is
//! f32 and moves by 0 or 1 element in the innermost dimension, that loop
//! handles 4 elements at a time (f32x4) with a scalar tail.

use cranelift_codegen::ir::{InstBuilder, Type, Value, types};
use ptec_ir::{DType, Dim, TensorType, strides_in_order};

use crate::emit::{Emitter, Size, flags};
use crate::error::CodegenError;

/// An operand of a map: where it starts, its element type, and its stride
/// (in elements) along each dimension of the iteration space.
#[derive(Clone, Debug)]
pub(crate) struct Operand {
    pub base: Value,
    pub dtype: DType,
    pub strides: Vec<Size>,
}

/// The body of a map: computes one element (or, vectorized, a vector of
/// them) of type `ty` (the compute type, or a vector type as [`Vectors`]
/// says) from the inputs, already converted.
pub(crate) type Body<'b> =
    &'b dyn Fn(&mut Emitter<'_, '_, '_>, &[Value], Type) -> Result<Value, CodegenError>;

/// The vectors a map's body computes on besides scalars, when the map's
/// operands are contiguous along its innermost dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Vectors {
    /// None: scalars only.
    Scalar,
    /// f32x4, when the map is f32 throughout.
    F32,
    /// Sixteen bytes of the map's one type, whatever it is (a copy, whose
    /// body returns its input).
    Any,
}

impl Vectors {
    /// [`Vectors::F32`] when `f32x4` holds, else [`Vectors::Scalar`].
    pub(crate) fn f32_when(f32x4: bool) -> Vectors {
        match f32x4 {
            true => Vectors::F32,
            false => Vectors::Scalar,
        }
    }
}

pub(crate) struct Map<'b> {
    /// The iteration space (the output's shape).
    pub shape: Vec<Size>,
    pub output: Operand,
    pub inputs: Vec<Operand>,
    /// The type inputs are converted to before `body`.
    pub compute: DType,
    /// The type `body` returns; converted to the output's type.
    pub result: DType,
    /// The vectors `body` also computes on.
    pub vectors: Vectors,
    pub body: Body<'b>,
    /// Whether the map is everything its kernel writes, so that threads
    /// may each run a part of its outermost loop.
    pub whole_kernel: bool,
}

/// Strides (in elements) of a tensor of `shape` stored in `dim_order`, by
/// the IR's rule, folded where the sizes are constants.
pub(crate) fn layout_strides(
    e: &mut Emitter<'_, '_, '_>,
    shape: &[Dim],
    dim_order: &[u8],
) -> Vec<Size> {
    let sizes = e.shape(shape);
    strides_in_order(&sizes, dim_order, Size::Const(1), |stride, size| {
        e.mul(stride, size)
    })
}

/// The strides with which a tensor of type `ty` is read when broadcast to
/// `target` (a shape of equal or higher rank).
pub(crate) fn broadcast_strides(
    e: &mut Emitter<'_, '_, '_>,
    ty: &TensorType,
    target: &[Dim],
) -> Vec<Size> {
    let own = layout_strides(e, &ty.shape, &ty.dim_order);
    let lead = target.len() - ty.rank();
    (0..target.len())
        .map(|axis| match axis.checked_sub(lead) {
            Some(index) if ty.shape[index] != Dim::Fixed(1) || target[axis] == Dim::Fixed(1) => {
                own[index]
            }
            _ => Size::Const(0),
        })
        .collect()
}

/// An operand for a value read (or written) in its own layout, broadcast to
/// `target`.
pub(crate) fn operand(
    e: &mut Emitter<'_, '_, '_>,
    value: ptec_ir::ValueId,
    target: &[Dim],
) -> Operand {
    let ty = e.graph().value(value).ty.clone();
    let strides = broadcast_strides(e, &ty, target);
    Operand {
        base: e.address(value),
        dtype: ty.dtype,
        strides,
    }
}

impl Map<'_> {
    fn operands(&self) -> impl Iterator<Item = &Operand> {
        std::iter::once(&self.output).chain(&self.inputs)
    }

    /// Drops dimensions of size 1, walks the others in the output's memory
    /// order, and merges dimensions every operand walks contiguously.
    fn simplify(&mut self) {
        let mut axis = 0;
        while axis < self.shape.len() {
            if self.shape[axis] == Size::Const(1) {
                self.shape.remove(axis);
                for operand in std::iter::once(&mut self.output).chain(&mut self.inputs) {
                    operand.strides.remove(axis);
                }
            } else {
                axis += 1;
            }
        }
        self.walk_output_order();
        let mut axis = self.shape.len();
        while axis >= 2 {
            axis -= 1;
            let (outer, inner) = (axis - 1, axis);
            let Some(inner_size) = self.shape[inner].constant() else {
                continue;
            };
            let mergeable = self.operands().all(|operand| {
                match (
                    operand.strides[outer].constant(),
                    operand.strides[inner].constant(),
                ) {
                    (Some(a), Some(b)) => a == b * inner_size,
                    _ => false,
                }
            });
            if let (true, Some(outer_size)) = (mergeable, self.shape[outer].constant()) {
                self.shape[outer] = Size::Const(outer_size * inner_size);
                self.shape.remove(inner);
                for operand in std::iter::once(&mut self.output).chain(&mut self.inputs) {
                    operand.strides.remove(outer);
                }
            }
        }
    }

    /// Reorders the axes by the output's strides, outermost first, when
    /// they are constants: each element of a map is computed on its own, so
    /// any order is right, and this one makes the innermost loop contiguous
    /// for an output stored in another dim order (channels-last).
    fn walk_output_order(&mut self) {
        let Some(strides) = self
            .output
            .strides
            .iter()
            .map(|stride| stride.constant())
            .collect::<Option<Vec<i64>>>()
        else {
            return;
        };
        let mut order: Vec<usize> = (0..strides.len()).collect();
        order.sort_by_key(|&axis| std::cmp::Reverse(strides[axis]));
        let permute = |values: &[Size]| order.iter().map(|&axis| values[axis]).collect();
        self.shape = permute(&self.shape);
        for operand in std::iter::once(&mut self.output).chain(&mut self.inputs) {
            operand.strides = permute(&operand.strides);
        }
    }

    /// Narrows the outermost loop to the part of it this call computes,
    /// moving `bases` to its first element: a unit of the parallel range is
    /// one step of that loop, or [`PART_ELEMENTS`] of a map that is one
    /// loop. Each unit costs about an element moved per operand and
    /// element. Sizes known only at run time leave the loop whole.
    fn take_part(&mut self, e: &mut Emitter<'_, '_, '_>, bases: &mut [Value]) {
        let Some((&outer, inner)) = self.shape.split_first() else {
            return;
        };
        let (Some(outer), Some(inner)) = (
            outer.constant(),
            inner
                .iter()
                .map(|size| size.constant())
                .product::<Option<i64>>(),
        ) else {
            return;
        };
        let per_unit = if inner == 1 { PART_ELEMENTS } else { 1 };
        let units = (outer as u64).div_ceil(per_unit as u64) as i64;
        let moved = 1 + self.inputs.len() as u64;
        let cost = (per_unit * inner) as u64 * moved;
        let Some((lo, hi)) = e.parallel_range(units, cost) else {
            return;
        };
        let start = e.b.ins().imul_imm_s(lo, per_unit);
        let end = e.b.ins().imul_imm_s(hi, per_unit);
        let limit = e.iconst(outer);
        let end = e.b.ins().smin(end, limit);
        self.shape[0] = Size::Dyn(e.b.ins().isub(end, start));
        for (base, operand) in bases.iter_mut().zip(self.operands()) {
            let step = e.mul(operand.strides[0], Size::Const(operand.dtype_size()));
            let offset = e.mul(Size::Dyn(start), step);
            *base = e.add_size(*base, offset);
        }
    }

    /// The vector type the innermost loop runs on, if it can.
    fn vector_type(&self) -> Option<Type> {
        let last = self.shape.len().checked_sub(1)?;
        let dtype = self.compute;
        let one_type =
            self.result == dtype && self.operands().all(|operand| operand.dtype == dtype);
        let contiguous = self.output.strides[last] == Size::Const(1)
            && self
                .inputs
                .iter()
                .all(|operand| matches!(operand.strides[last], Size::Const(0 | 1)));
        if !(one_type && contiguous) {
            return None;
        }
        match (self.vectors, dtype) {
            (Vectors::F32 | Vectors::Any, DType::F32) => Some(types::F32X4),
            (Vectors::Any, _) => {
                let scalar = crate::emit::scalar_type(dtype);
                scalar.by(16 / scalar.bytes())
            }
            (Vectors::Scalar | Vectors::F32, _) => None,
        }
    }
}

/// Copies `input` into `output` over `shape`, converting elements to the
/// output's type.
pub(crate) fn emit_copy(
    e: &mut Emitter<'_, '_, '_>,
    shape: Vec<Size>,
    output: Operand,
    input: Operand,
) -> Result<(), CodegenError> {
    let dtype = output.dtype;
    emit_map(
        e,
        Map {
            shape,
            output,
            inputs: vec![input],
            compute: dtype,
            result: dtype,
            vectors: Vectors::Any,
            body: &|_, x, _| Ok(x[0]),
            whole_kernel: false,
        },
    )
}

/// Emits the loop nest of `map`; the outermost loop of a map that is its
/// whole kernel runs the part of it this call computes.
pub(crate) fn emit_map(e: &mut Emitter<'_, '_, '_>, mut map: Map<'_>) -> Result<(), CodegenError> {
    map.simplify();
    let mut bases: Vec<Value> = map.operands().map(|operand| operand.base).collect();
    if map.whole_kernel {
        e.allow_parallel();
        map.take_part(e, &mut bases);
    }
    nest(e, &map, 0, &bases)
}

/// Elements of a one-dimensional map per unit of its parallel range: a
/// few microseconds of work, in whole f32x4 vectors.
const PART_ELEMENTS: i64 = 4096;

fn nest(
    e: &mut Emitter<'_, '_, '_>,
    map: &Map<'_>,
    depth: usize,
    bases: &[Value],
) -> Result<(), CodegenError> {
    if map.shape.is_empty() {
        let inputs = load_inputs(e, map, &bases[1..])?;
        let ty = crate::emit::scalar_type(map.compute);
        let result = (map.body)(e, &inputs, ty)?;
        return store_result(e, map, result, bases[0]);
    }
    if depth + 1 == map.shape.len() {
        return innermost(e, map, bases);
    }
    let steps: Vec<Size> = map
        .operands()
        .map(|operand| operand.strides[depth])
        .zip(map.operands())
        .map(|(stride, operand)| e.mul(stride, Size::Const(operand.dtype_size())))
        .collect();
    e.counted_loop(map.shape[depth], bases, |e, _, bases| {
        nest(e, map, depth + 1, bases)?;
        Ok(bases
            .iter()
            .zip(&steps)
            .map(|(&base, &step)| e.add_size(base, step))
            .collect())
    })?;
    Ok(())
}

impl Operand {
    fn dtype_size(&self) -> i64 {
        self.dtype.size() as i64
    }
}

/// The innermost loop: hoists broadcast operands, and runs 4 lanes at a time
/// when it can.
fn innermost(
    e: &mut Emitter<'_, '_, '_>,
    map: &Map<'_>,
    bases: &[Value],
) -> Result<(), CodegenError> {
    let last = map.shape.len() - 1;
    let count = map.shape[last];
    // Inputs that do not move along this dimension are loaded once.
    let mut hoisted: Vec<Option<Value>> = Vec::with_capacity(map.inputs.len());
    for (operand, &base) in map.inputs.iter().zip(&bases[1..]) {
        hoisted.push(if operand.strides[last] == Size::Const(0) {
            let value = e.load(operand.dtype, base);
            Some(e.convert(value, operand.dtype, map.compute)?)
        } else {
            None
        });
    }
    let mut moving: Vec<(usize, Value, Size)> = Vec::new();
    for (index, operand) in map.operands().enumerate() {
        if index == 0 || hoisted[index - 1].is_none() {
            let step = e.mul(operand.strides[last], Size::Const(operand.dtype_size()));
            moving.push((index, bases[index], step));
        }
    }
    let mut pointers: Vec<Value> = moving.iter().map(|&(_, base, _)| base).collect();
    if let Some(ty) = map.vector_type() {
        let lanes = i64::from(ty.lane_count());
        let vector_count = match count {
            Size::Const(n) => Size::Const(n / lanes),
            Size::Dyn(n) => Size::Dyn(e.b.ins().ushr_imm_u(n, lanes.ilog2() as i64)),
        };
        let splats: Vec<Option<Value>> = hoisted
            .iter()
            .map(|value| value.map(|v| e.b.ins().splat(ty, v)))
            .collect();
        pointers = e.short_loop(vector_count, &pointers, |e, _, pointers| {
            let inputs = gather(e, map, &splats, &moving, pointers, ty)?;
            let result = (map.body)(e, &inputs, ty)?;
            e.b.ins().store(flags(), result, pointers[0], 0);
            Ok(pointers
                .iter()
                .zip(&moving)
                .map(|(&pointer, &(_, _, step))| match step {
                    Size::Const(0) => pointer,
                    _ => e.b.ins().iadd_imm_s(pointer, 16),
                })
                .collect())
        })?;
        let tail = match count {
            Size::Const(n) => Size::Const(n % lanes),
            Size::Dyn(n) => Size::Dyn(e.b.ins().band_imm_u(n, lanes - 1)),
        };
        scalar_loop(e, map, tail, &hoisted, &moving, &pointers)
    } else {
        scalar_loop(e, map, count, &hoisted, &moving, &pointers)
    }
}

fn scalar_loop(
    e: &mut Emitter<'_, '_, '_>,
    map: &Map<'_>,
    count: Size,
    hoisted: &[Option<Value>],
    moving: &[(usize, Value, Size)],
    pointers: &[Value],
) -> Result<(), CodegenError> {
    e.short_loop(count, pointers, |e, _, pointers| {
        let compute_ty = crate::emit::scalar_type(map.compute);
        let inputs = gather(e, map, hoisted, moving, pointers, compute_ty)?;
        let result = (map.body)(e, &inputs, compute_ty)?;
        store_result(e, map, result, pointers[0])?;
        Ok(pointers
            .iter()
            .zip(moving)
            .map(|(&pointer, &(_, _, step))| e.add_size(pointer, step))
            .collect())
    })?;
    Ok(())
}

/// The inputs of one step: hoisted values, or loads through the moving
/// pointers (vector loads when `ty` is a vector type).
fn gather(
    e: &mut Emitter<'_, '_, '_>,
    map: &Map<'_>,
    hoisted: &[Option<Value>],
    moving: &[(usize, Value, Size)],
    pointers: &[Value],
    ty: Type,
) -> Result<Vec<Value>, CodegenError> {
    let mut inputs = Vec::with_capacity(map.inputs.len());
    for (index, operand) in map.inputs.iter().enumerate() {
        let value = match hoisted[index] {
            Some(value) => value,
            None => {
                let slot = moving
                    .iter()
                    .position(|&(operand_index, _, _)| operand_index == index + 1);
                let pointer = pointers[slot.expect("a moving operand has a pointer")];
                if ty.is_vector() {
                    e.b.ins().load(ty, flags(), pointer, 0)
                } else {
                    let value = e.load(operand.dtype, pointer);
                    e.convert(value, operand.dtype, map.compute)?
                }
            }
        };
        inputs.push(value);
    }
    Ok(inputs)
}

fn load_inputs(
    e: &mut Emitter<'_, '_, '_>,
    map: &Map<'_>,
    bases: &[Value],
) -> Result<Vec<Value>, CodegenError> {
    map.inputs
        .iter()
        .zip(bases)
        .map(|(operand, &base)| {
            let value = e.load(operand.dtype, base);
            e.convert(value, operand.dtype, map.compute)
        })
        .collect()
}

fn store_result(
    e: &mut Emitter<'_, '_, '_>,
    map: &Map<'_>,
    result: Value,
    address: Value,
) -> Result<(), CodegenError> {
    let converted = e.convert(result, map.result, map.output.dtype)?;
    e.store(converted, address);
    Ok(())
}
