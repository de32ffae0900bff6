//! Matrix products: a register-blocked float GEMM (f32, or f64) that mm,
//! bmm, addmm and pointwise (1x1) convolutions share, a scalar loop for
//! integer products, and the row helpers other kernels use. An addmm whose
//! operands the graph proves small integers takes the integer GEMM
//! (`quantized.rs`).
//!
//! The GEMM computes tiles of 4 rows by two vectors (f32x4 or f64x2) per
//! row, eight accumulators, over the whole K dimension: each step loads two
//! vectors of B and broadcasts four elements of A. Edge tiles use fewer rows,
//! one vector, or single columns; the AVX microkernels take f32 tiles. The epilogue applies alpha, beta * bias
//! (any bias broadcastable to the output) and an optional clamp.

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Type, Value, types};
use ptec_ir::ops::linalg::{Addmm, ClampRange, MatMul};
use ptec_ir::{DType, Scalar, ValueId};

use super::arith::{Arith, element_address};
use super::expr::{at_least, at_most, fconst};
use super::map::broadcast_strides;
use super::nest::{byte_strides, over_axes, over_indices};
use crate::emit::{Emitter, Size, flags};
use crate::error::CodegenError;
use crate::microkernel;

/// The rows of a tile.
const TILE_ROWS: usize = 4;

/// The tallest tiles that cover a number of rows known only at run time,
/// taken tallest first: taller ones leave remainders the shorter tiles
/// cover in more passes (nine rows pay only for a count known to suit
/// them).
const GREEDY_ROWS: usize = 8;

/// How many steps of K one iteration of a tile's loop takes.
const K_UNROLL: i64 = 4;

/// An operand of the GEMM: element (i, j) is at `base + i * row + j * col`
/// (byte strides).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Matrix {
    pub base: Value,
    pub row: Size,
    pub col: Size,
}

/// The float type a GEMM computes in, and its vectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Float {
    F32,
    F64,
}

impl Float {
    fn scalar(self) -> Type {
        match self {
            Float::F32 => types::F32,
            Float::F64 => types::F64,
        }
    }

    /// A 16-byte vector of it.
    fn vector(self) -> Type {
        match self {
            Float::F32 => types::F32X4,
            Float::F64 => types::F64X2,
        }
    }

    fn bytes(self) -> i64 {
        match self {
            Float::F32 => 4,
            Float::F64 => 8,
        }
    }

    /// Elements in a vector.
    fn lanes(self) -> i64 {
        VECTOR_BYTES as i64 / self.bytes()
    }
}

/// The bytes of a vector register, of either float type.
const VECTOR_BYTES: i32 = 16;

/// The rows a GEMM's work is split across threads by: a multiple of every
/// tile height (the microkernels' 8, 6 and 4, Cranelift's 4 and 1), so
/// that each row is computed by the tile it would be on one thread.
pub(super) const ROWS_PER_PART: i64 = 24;

/// `C = alpha * (A @ B) + beta * bias`, then clamped, for float matrices.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Gemm {
    pub float: Float,
    pub m: Size,
    pub n: Size,
    pub k: Size,
    pub a: Matrix,
    pub b: Matrix,
    pub c: Matrix,
    pub bias: Option<Matrix>,
    pub alpha: f64,
    pub beta: f64,
    pub epilogue: Epilogue,
    /// B's columns prepacked into the widest microkernel's panels, when B
    /// is a constant; `b` then holds only the columns after the panels.
    pub b_panels: Option<Panels>,
}

/// B prepacked at compile time for the microkernels ([`Panels::pack`]):
/// panel `p` holds columns `p * width .. (p + 1) * width` of every row of
/// B, `width` f32 a row, the panels one after another, so a tile streams
/// its panel from contiguous memory instead of reading a short run of each
/// of K rows a whole row of B apart. The columns past the last whole panel
/// follow as a matrix of their own (`tail`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Panels {
    pub base: Value,
    /// Columns a panel.
    pub width: i64,
    /// The columns past the panels, row-major.
    pub tail: Matrix,
}

impl Panels {
    /// The panels of `value`, a constant `[k, n]` f32 matrix whose element
    /// `(i, j)` is element `i * strides[0] + j * strides[1]` of its bytes,
    /// for the widest GEMM microkernel this target has; `None` without one,
    /// when `n` holds no whole panel, or when the constant is too short.
    pub(crate) fn pack(
        e: &mut Emitter<'_, '_, '_>,
        value: ValueId,
        [k, n]: [i64; 2],
        strides: [i64; 2],
    ) -> Option<Panels> {
        let width =
            e.cx.microkernels
                .gemm
                .iter()
                .map(|(tile, _)| tile.columns() as i64)
                .max()?;
        let whole = n / width;
        if whole == 0 {
            return None;
        }
        let graph = e.cx.graph;
        let elements = graph.value(value).constant_bytes()?;
        let element = |i: i64, j: i64| -> Option<&[u8]> {
            let at = usize::try_from(i * strides[0] + j * strides[1]).ok()? * 4;
            elements.get(at..at + 4)
        };
        let mut bytes = Vec::with_capacity((k * n * 4) as usize);
        let column_runs = (0..whole)
            .map(|panel| panel * width..(panel + 1) * width)
            .chain(std::iter::once(whole * width..n));
        for columns in column_runs {
            for i in 0..k {
                for j in columns.clone() {
                    bytes.extend_from_slice(element(i, j)?);
                }
            }
        }
        let base = e.computed_constant(bytes);
        let tail = Matrix {
            base: e.b.ins().iadd_imm_s(base, whole * k * width * 4),
            row: Size::Const((n - whole * width) * 4),
            col: Size::Const(4),
        };
        Some(Panels { base, width, tail })
    }
}

/// What a kernel applies to each result before storing it: a clamp, then a
/// residual added (read at a fixed byte distance from the result, in a
/// tensor of the result's layout).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Epilogue {
    pub min: Option<f32>,
    pub max: Option<f32>,
    /// Bytes from an output element to its residual.
    pub residual: Option<Value>,
}

impl Epilogue {
    /// Bounds alone.
    pub(crate) fn clamped(clamp: ClampRange) -> Epilogue {
        Epilogue {
            min: clamp.min.map(|min| min.0 as f32),
            max: clamp.max.map(|max| max.0 as f32),
            residual: None,
        }
    }

    /// Applies the epilogue to `value`, the result stored at
    /// `address + offset`.
    pub(crate) fn apply(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        mut value: Value,
        address: Value,
        offset: i32,
    ) -> Value {
        let lane = e.b.func.dfg.value_type(value);
        if let Some(min) = self.min {
            let min = fconst(e, lane, f64::from(min));
            value = at_least(e, value, min);
        }
        if let Some(max) = self.max {
            let max = fconst(e, lane, f64::from(max));
            value = at_most(e, value, max);
        }
        if let Some(distance) = self.residual {
            let residual_address = e.b.ins().iadd(address, distance);
            let residual = e.b.ins().load(lane, flags(), residual_address, offset);
            value = e.b.ins().fadd(value, residual);
        }
        value
    }
}

/// How many columns a tile covers: vectors, or one scalar column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Columns {
    Vectors(usize),
    Scalar,
}

impl Columns {
    fn width(self, float: Float) -> i64 {
        match self {
            Columns::Vectors(count) => float.lanes() * count as i64,
            Columns::Scalar => 1,
        }
    }

    /// The type of one group of columns, and how many groups.
    fn lane(self, float: Float) -> (Type, usize) {
        match self {
            Columns::Vectors(count) => (float.vector(), count),
            Columns::Scalar => (float.scalar(), 1),
        }
    }
}

pub(crate) fn emit_gemm(e: &mut Emitter<'_, '_, '_>, gemm: &Gemm) -> Result<(), CodegenError> {
    let gemm = &part_of_this_call(e, gemm).gemm;
    // Vector tiles need B, C (and a moving bias) contiguous along j.
    let unit = gemm.float.bytes();
    let contiguous = |stride: Size| stride == Size::Const(unit);
    let vector = contiguous(gemm.b.col)
        && contiguous(gemm.c.col)
        && gemm
            .bias
            .is_none_or(|bias| bias.col == Size::Const(0) || contiguous(bias.col));
    // Column panels outside, row blocks inside: a panel of B (K rows of one
    // tile's width) stays in the L1 cache while every row block uses it.
    debug_assert!(
        vector || gemm.b_panels.is_none(),
        "prepacked panels need C contiguous along j"
    );
    let call = (vector && microkernel_applies(e, gemm)).then(|| MicrokernelCall::prepare(e, gemm));
    // Prepacked panels' width, the microkernels' widths (widest first),
    // then Cranelift's.
    let mut widths: Vec<Columns> = gemm
        .b_panels
        .map(|panels| Columns::Vectors(panels.width as usize / 4))
        .into_iter()
        .collect();
    for (tile, _) in call.iter().flat_map(|call| &call.kernels) {
        let columns = Columns::Vectors(tile.columns() / 4);
        if !widths.contains(&columns) {
            widths.push(columns);
        }
    }
    let cranelift_widths = match vector {
        true => &[Columns::Vectors(2), Columns::Vectors(1), Columns::Scalar][..],
        false => &[Columns::Scalar][..],
    };
    for &columns in cranelift_widths {
        if !widths.contains(&columns) {
            widths.push(columns);
        }
    }
    let mut carried = vec![gemm.b.base, gemm.c.base];
    carried.extend(gemm.bias.map(|bias| bias.base));
    let mut left = gemm.n;
    for &columns in &widths {
        let width = columns.width(gemm.float);
        let count = if columns == Columns::Scalar {
            left
        } else {
            divide(e, left, width)
        };
        left = remainder(e, left, width);
        // Prepacked panels of this width: B's pointer walks them, then
        // the matrix's columns after them.
        let panels = gemm
            .b_panels
            .filter(|panels| columns == Columns::Vectors(panels.width as usize / 4));
        let call = call.as_ref();
        carried = match panels {
            Some(panels) => {
                let row = Size::Const(width * gemm.float.bytes());
                let packed = Gemm {
                    b: Matrix {
                        base: panels.base,
                        row,
                        col: gemm.b.col,
                    },
                    ..*gemm
                };
                let panel_bytes = e.mul(gemm.k, row);
                carried[0] = panels.base;
                let mut carried =
                    column_panels(e, &packed, call, columns, count, panel_bytes, carried)?;
                carried[0] = gemm.b.base;
                carried
            }
            None => {
                let b_step = e.mul(gemm.b.col, Size::Const(width));
                column_panels(e, gemm, call, columns, count, b_step, carried)?
            }
        };
    }
    Ok(())
}

/// `count` column panels of `columns` each, from the B, C and bias
/// pointers `carried`, B's `b_step` bytes apart; returns the pointers past
/// them.
fn column_panels(
    e: &mut Emitter<'_, '_, '_>,
    gemm: &Gemm,
    call: Option<&MicrokernelCall>,
    columns: Columns,
    count: Size,
    b_step: Size,
    carried: Vec<Value>,
) -> Result<Vec<Value>, CodegenError> {
    let width = columns.width(gemm.float);
    let c_step = e.mul(gemm.c.col, Size::Const(width));
    let bias_step = gemm.bias.map(|bias| e.mul(bias.col, Size::Const(width)));
    e.counted_loop(count, &carried, |e, _, p| {
        column_panel(e, gemm, call, columns, p[0], p[1], p.get(2).copied())?;
        let mut next = vec![e.add_size(p[0], b_step), e.add_size(p[1], c_step)];
        if let (Some(step), Some(&pointer)) = (bias_step, p.get(2)) {
            next.push(e.add_size(pointer, step));
        }
        Ok(next)
    })
}

/// The part of a GEMM one call of its kernel computes: the GEMM of that
/// part (its C and bias moved to the part's first element) and where it
/// lies in the whole.
pub(super) struct GemmPart {
    pub gemm: Gemm,
    /// The part's first column of C (0 for a split by rows).
    pub first_column: Value,
}

/// How many blocks of [`ROWS_PER_PART`] rows a GEMM needs to be split by
/// rows even where B is the larger operand: enough to share out evenly,
/// and a split the kernel after it most often shares (a depthwise
/// convolution by output rows reads the pixels this thread wrote, in its
/// own core's cache; split by columns, half of each came from the other
/// core's). On the Sapphire Rapids Xeon it was chosen on, mobilenet_v2's
/// 14x14 depthwise convolutions went from 0.7x to 1.0-1.3x of their
/// one-thread speed on two threads, and the pointwise convolutions
/// before them, now by rows, from 85 to 74 us.
const ROW_PARTS_FOR_ROWS: i64 = 8;

/// The part of `gemm` this call of the kernel computes, when its kernel
/// splits across threads (else all of it), the split the kernel's range
/// selects:
/// - by columns, whole panels of prepacked B a part (the columns after
///   them with the last), when B has at least two panels and as many
///   columns as A has rows, and A has fewer than [`ROW_PARTS_FOR_ROWS`]
///   blocks of rows: each thread then reads its share of B, the larger
///   operand, and all of A;
/// - else by rows, blocks of [`ROWS_PER_PART`] (the last one shorter).
///
/// Each element is computed by the tile it has on one thread, its products
/// summed in the same order, so the result is the same bits.
pub(super) fn part_of_this_call(e: &mut Emitter<'_, '_, '_>, gemm: &Gemm) -> GemmPart {
    let mut part = GemmPart {
        gemm: *gemm,
        first_column: e.iconst(0),
    };
    let (Size::Const(m), Size::Const(n), Size::Const(k)) = (gemm.m, gemm.n, gemm.k) else {
        return part;
    };
    // Moves a matrix to its element `first` rows or columns in.
    let shift = |e: &mut Emitter<'_, '_, '_>, matrix: &mut Matrix, first: Value, columns: bool| {
        let step = if columns { matrix.col } else { matrix.row };
        let offset = e.mul(Size::Dyn(first), step);
        matrix.base = e.add_size(matrix.base, offset);
    };
    let row_parts = (m + ROWS_PER_PART - 1) / ROWS_PER_PART;
    if let Some(panels) = gemm
        .b_panels
        .filter(|_| (n >= m && row_parts < ROW_PARTS_FOR_ROWS) || row_parts < 2)
    {
        let width = panels.width;
        let column_parts = (n + width - 1) / width;
        if column_parts >= 2 {
            let cost = (m * width * k) as u64;
            let Some((lo, hi)) = e.parallel_range(column_parts, cost) else {
                return part;
            };
            let (first, columns) = span_of_units(e, (lo, hi), width, n);
            let gemm = &mut part.gemm;
            gemm.n = Size::Dyn(columns);
            let panel_bytes = k * width * gemm.float.bytes();
            let base = e.b.ins().imul_imm_s(lo, panel_bytes);
            gemm.b_panels = Some(Panels {
                base: e.b.ins().iadd(panels.base, base),
                ..panels
            });
            shift(e, &mut gemm.c, first, true);
            if let Some(bias) = gemm.bias.as_mut() {
                shift(e, bias, first, true);
            }
            part.first_column = first;
            return part;
        }
    }
    if row_parts < 2 {
        return part;
    }
    let cost = (ROWS_PER_PART * n * k) as u64;
    let Some((lo, hi)) = e.parallel_range(row_parts, cost) else {
        return part;
    };
    let (first, rows) = span_of_units(e, (lo, hi), ROWS_PER_PART, m);
    let gemm = &mut part.gemm;
    gemm.m = Size::Dyn(rows);
    shift(e, &mut gemm.a, first, false);
    shift(e, &mut gemm.c, first, false);
    if let Some(bias) = gemm.bias.as_mut() {
        shift(e, bias, first, false);
    }
    part
}

/// The first element and the count of the units `lo..hi` of `unit`
/// elements each, of `total` elements in all (the last unit may be
/// shorter).
pub(super) fn span_of_units(
    e: &mut Emitter<'_, '_, '_>,
    (lo, hi): (Value, Value),
    unit: i64,
    total: i64,
) -> (Value, Value) {
    let first = e.b.ins().imul_imm_s(lo, unit);
    let end = e.b.ins().imul_imm_s(hi, unit);
    let limit = e.iconst(total);
    let beyond = e.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, end, total);
    let end = e.b.ins().select(beyond, limit, end);
    (first, e.b.ins().isub(end, first))
}

/// All the rows of one column panel starting at `b` / `c`: blocks of as
/// many rows as the microkernels of the panel's width compute (tallest
/// first), then of four, then single rows.
#[allow(clippy::too_many_arguments)] // The panel's operands.
fn column_panel(
    e: &mut Emitter<'_, '_, '_>,
    gemm: &Gemm,
    call: Option<&MicrokernelCall>,
    columns: Columns,
    b: Value,
    c: Value,
    bias: Option<Value>,
) -> Result<(), CodegenError> {
    let mut carried = vec![gemm.a.base, c];
    carried.extend(bias);
    let mut heights: Vec<usize> = call
        .iter()
        .flat_map(|call| &call.kernels)
        .filter(|(tile, _)| Columns::Vectors(tile.columns() / 4) == columns)
        .map(|(tile, _)| tile.rows)
        .collect();
    for rows in [TILE_ROWS, 1] {
        if !heights.contains(&rows) {
            heights.push(rows);
        }
    }
    let blocks: Vec<(usize, Size)> = match gemm.m {
        Size::Const(m) => fewest_tiles(m as usize, &heights)
            .into_iter()
            .map(|(rows, count)| (rows, Size::Const(count as i64)))
            .collect(),
        Size::Dyn(_) => {
            let mut left = gemm.m;
            let greedy = heights.into_iter().filter(|&rows| rows <= GREEDY_ROWS);
            greedy
                .map(|rows| {
                    let count = divide(e, left, rows as i64);
                    left = remainder(e, left, rows as i64);
                    (rows, count)
                })
                .collect()
        }
    };
    for (rows, count) in blocks {
        let a_step = e.mul(gemm.a.row, Size::Const(rows as i64));
        let c_step = e.mul(gemm.c.row, Size::Const(rows as i64));
        let bias_step = gemm
            .bias
            .map(|matrix| e.mul(matrix.row, Size::Const(rows as i64)));
        carried = e.counted_loop(count, &carried, |e, _, p| {
            tile(
                e,
                gemm,
                call,
                rows,
                columns,
                p[0],
                b,
                p[1],
                p.get(2).copied(),
            )?;
            let mut next = vec![e.add_size(p[0], a_step), e.add_size(p[1], c_step)];
            if let (Some(step), Some(&pointer)) = (bias_step, p.get(2)) {
                next.push(e.add_size(pointer, step));
            }
            Ok(next)
        })?;
    }
    Ok(())
}

/// How many tiles of each height (of `heights`, which hold 1) cover `m`
/// rows in the fewest tiles, each a pass over the panel of B, then with
/// the fewest single rows; in the order of `heights`.
fn fewest_tiles(m: usize, heights: &[usize]) -> Vec<(usize, usize)> {
    // best[i]: (tiles, single rows) for i rows, and the height of the
    // first tile.
    let mut best: Vec<((usize, usize), usize)> = vec![((0, 0), 0)];
    for rows in 1..=m {
        let choice = heights
            .iter()
            .filter(|&&height| height <= rows)
            .map(|&height| {
                let ((tiles, singles), _) = best[rows - height];
                ((tiles + 1, singles + usize::from(height == 1)), height)
            })
            .min()
            .expect("a height of one row fits any count");
        best.push(choice);
    }
    let mut counts = vec![0; heights.len()];
    let mut rows = m;
    while rows > 0 {
        let height = best[rows].1;
        let slot = heights.iter().position(|&h| h == height);
        counts[slot.expect("the height is one of them")] += 1;
        rows -= height;
    }
    heights.iter().copied().zip(counts).collect()
}

fn divide(e: &mut Emitter<'_, '_, '_>, size: Size, by: i64) -> Size {
    match size {
        Size::Const(n) => Size::Const(n / by),
        Size::Dyn(n) => Size::Dyn(e.b.ins().udiv_imm_u(n, by)),
    }
}

fn remainder(e: &mut Emitter<'_, '_, '_>, size: Size, by: i64) -> Size {
    match size {
        Size::Const(n) => Size::Const(n % by),
        Size::Dyn(n) => Size::Dyn(e.b.ins().urem_imm_u(n, by)),
    }
}

/// Loads (or, with a zero stride, broadcasts) the data of one tile column
/// group at `address`.
fn load_columns(
    e: &mut Emitter<'_, '_, '_>,
    float: Float,
    columns: Columns,
    address: Value,
    offset: i32,
    moving: bool,
) -> Value {
    let (scalar, vector) = (float.scalar(), float.vector());
    match (columns, moving) {
        (Columns::Scalar, _) => e.b.ins().load(scalar, flags(), address, offset),
        (Columns::Vectors(_), true) => e.b.ins().load(vector, flags(), address, offset),
        (Columns::Vectors(_), false) => {
            let element = e.b.ins().load(scalar, flags(), address, offset);
            e.b.ins().splat(vector, element)
        }
    }
}

fn row_address(e: &mut Emitter<'_, '_, '_>, base: Value, stride: Size, row: usize) -> (Value, i32) {
    match stride {
        Size::Const(bytes) => (base, (bytes * row as i64) as i32),
        Size::Dyn(bytes) => {
            let offset = e.b.ins().imul_imm_s(bytes, row as i64);
            (e.b.ins().iadd(base, offset), 0)
        }
    }
}

/// One tile: accumulates over K, then applies the epilogue and stores.
#[allow(clippy::too_many_arguments)] // The tile's coordinates and shape.
fn tile(
    e: &mut Emitter<'_, '_, '_>,
    gemm: &Gemm,
    call: Option<&MicrokernelCall>,
    rows: usize,
    columns: Columns,
    a: Value,
    b: Value,
    c: Value,
    bias: Option<Value>,
) -> Result<(), CodegenError> {
    let (lane, vectors) = columns.lane(gemm.float);
    if let (Some(call), Columns::Vectors(vectors)) = (call, columns)
        && let Some(&kernel) = call
            .kernels
            .iter()
            .find(|(tile, _)| tile.columns() == 4 * vectors && tile.rows == rows)
    {
        return microkernel_tile(e, gemm, call, kernel, vectors, [a, b, c], bias);
    }
    let zero = fconst(e, lane, 0.0);
    let mut carried = vec![a, b];
    carried.extend(std::iter::repeat_n(zero, rows * vectors));
    // One step of K: two vectors of B, four broadcasts of A, eight FMAs.
    let step = |e: &mut Emitter<'_, '_, '_>, p: &[Value]| -> Vec<Value> {
        let b_values: Vec<Value> = (0..vectors)
            .map(|t| load_columns(e, gemm.float, columns, p[1], VECTOR_BYTES * t as i32, true))
            .collect();
        let mut accumulators = p[2..].to_vec();
        for row in 0..rows {
            let (address, offset) = row_address(e, p[0], gemm.a.row, row);
            let scalar =
                e.b.ins()
                    .load(gemm.float.scalar(), flags(), address, offset);
            let a_value = if lane.is_vector() {
                e.b.ins().splat(lane, scalar)
            } else {
                scalar
            };
            for (t, &b_value) in b_values.iter().enumerate() {
                let slot = row * vectors + t;
                accumulators[slot] = e.multiply_add(a_value, b_value, accumulators[slot]);
            }
        }
        let mut next = vec![e.add_size(p[0], gemm.a.col), e.add_size(p[1], gemm.b.row)];
        next.extend(accumulators);
        next
    };
    // K unrolled by four: the register allocator moves every loop-carried
    // accumulator on each back edge, so fewer back edges matter.
    let unrolled = divide(e, gemm.k, K_UNROLL);
    let carried = e.counted_loop(unrolled, &carried, |e, _, p| {
        let mut values = p.to_vec();
        for _ in 0..K_UNROLL {
            values = step(e, &values);
        }
        Ok(values)
    })?;
    let rest = remainder(e, gemm.k, K_UNROLL);
    let result = e.counted_loop(rest, &carried, |e, _, p| Ok(step(e, p)))?;
    let products = &result[2..];
    finish_tile(e, gemm, rows, columns, c, bias, &mut |_, row, t| {
        products[row * vectors + t]
    })
}

/// What every microkernel call of one GEMM shares, prepared once outside
/// its loops: the kernel, whether it applies the whole epilogue itself, the
/// clamp bounds and the -0.0 biases for a GEMM without one.
#[derive(Clone)]
struct MicrokernelCall {
    kernels: Vec<(microkernel::Tile, cranelift_module::FuncId)>,
    fused: Option<FusedBias>,
    bounds: Value,
    no_row_bias: Value,
    no_column_bias: Value,
}

/// Which bias a microkernel adds itself: none, one per row (broadcast
/// along the columns) or one per column (broadcast along the rows).
#[derive(Clone, Copy, PartialEq, Eq)]
enum FusedBias {
    None,
    Rows,
    Columns,
}

impl MicrokernelCall {
    fn prepare(e: &mut Emitter<'_, '_, '_>, gemm: &Gemm) -> Self {
        let unit = Size::Const(4);
        let bias = match gemm.bias {
            None => Some(FusedBias::None),
            Some(matrix) if matrix.col == Size::Const(0) && matrix.row == unit => {
                Some(FusedBias::Rows)
            }
            Some(matrix) if matrix.row == Size::Const(0) && matrix.col == unit => {
                Some(FusedBias::Columns)
            }
            Some(_) => None,
        };
        let fused = bias.filter(|_| gemm.alpha == 1.0 && gemm.beta == 1.0);
        // Bounds (two f32), then the biases of a GEMM without them: -0.0,
        // which added to any sum leaves it as it is.
        let no_bias_bytes = 4 * (microkernel::MAX_ROWS + microkernel::MAX_COLUMNS) as u32;
        let bytes = 8 + no_bias_bytes;
        let slot =
            e.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, bytes, 4));
        let minus_zero = e.b.ins().f32const(-0.0);
        for offset in (8..bytes as i32).step_by(4) {
            e.b.ins()
                .stack_store(crate::emit::PTR, minus_zero, slot, offset);
        }
        let (low, high) = match fused {
            Some(_) => (
                gemm.epilogue.min.unwrap_or(f32::NEG_INFINITY),
                gemm.epilogue.max.unwrap_or(f32::INFINITY),
            ),
            None => (f32::NEG_INFINITY, f32::INFINITY),
        };
        for (offset, bound) in [(0, low), (4, high)] {
            let value = e.b.ins().f32const(bound);
            e.b.ins().stack_store(crate::emit::PTR, value, slot, offset);
        }
        let columns_offset = 8 + 4 * microkernel::MAX_ROWS as i32;
        MicrokernelCall {
            kernels: e.cx.microkernels.gemm.clone(),
            fused,
            bounds: e.b.ins().stack_addr(crate::emit::PTR, slot, 0),
            no_row_bias: e.b.ins().stack_addr(crate::emit::PTR, slot, 8),
            no_column_bias: e.b.ins().stack_addr(crate::emit::PTR, slot, columns_offset),
        }
    }
}

/// A tile of `rows` rows and `vectors` f32x4 columns by a microkernel. It
/// adds a bias along the rows or the columns, clamps and adds a residual by
/// itself; anything else (alpha, beta, a bias of another shape) is applied
/// afterwards to the products it stored.
fn microkernel_tile(
    e: &mut Emitter<'_, '_, '_>,
    gemm: &Gemm,
    call: &MicrokernelCall,
    (tile, kernel): (microkernel::Tile, cranelift_module::FuncId),
    vectors: usize,
    [a, b, c]: [Value; 3],
    bias: Option<Value>,
) -> Result<(), CodegenError> {
    let (mut row_bias, mut column_bias) = (call.no_row_bias, call.no_column_bias);
    match (call.fused, bias) {
        (Some(FusedBias::Rows), Some(pointer)) => row_bias = pointer,
        (Some(FusedBias::Columns), Some(pointer)) => column_bias = pointer,
        (Some(FusedBias::None) | None, _) | (Some(_), None) => {}
    }
    let residual = match (call.fused, gemm.epilogue.residual) {
        (Some(_), Some(distance)) => e.b.ins().iadd(c, distance),
        _ => e.b.ins().iconst(crate::emit::PTR, 0),
    };
    let k = e.value_of(gemm.k);
    let a_row = e.value_of(gemm.a.row);
    let b_row = e.value_of(gemm.b.row);
    let c_row = e.value_of(gemm.c.row);
    let func_ref = e.import_function(kernel);
    e.b.ins().call(
        func_ref,
        &[
            a,
            b,
            c,
            k,
            a_row,
            c_row,
            row_bias,
            column_bias,
            call.bounds,
            residual,
            b_row,
        ],
    );
    if call.fused.is_some() {
        return Ok(());
    }
    // The products it stored, each read right before it is finished (read
    // all at once, they would not fit in registers).
    let mut stored = |e: &mut Emitter<'_, '_, '_>, row: usize, t: usize| {
        let (c_row, c_offset) = row_address(e, c, gemm.c.row, row);
        e.b.ins()
            .load(types::F32X4, flags(), c_row, c_offset + 16 * t as i32)
    };
    let columns = Columns::Vectors(vectors);
    finish_tile(e, gemm, tile.rows, columns, c, bias, &mut stored)
}

/// Applies alpha, beta * bias and the epilogue to a tile's products
/// (`rows * vectors` of them, row by row) and stores them.
fn finish_tile(
    e: &mut Emitter<'_, '_, '_>,
    gemm: &Gemm,
    rows: usize,
    columns: Columns,
    c: Value,
    bias: Option<Value>,
    product: &mut dyn FnMut(&mut Emitter<'_, '_, '_>, usize, usize) -> Value,
) -> Result<(), CodegenError> {
    let (lane, vectors) = columns.lane(gemm.float);
    for row in 0..rows {
        let (c_row, c_offset) = row_address(e, c, gemm.c.row, row);
        let bias_row = match (gemm.bias, bias) {
            (Some(matrix), Some(pointer)) => Some((
                row_address(e, pointer, matrix.row, row),
                matrix.col != Size::Const(0),
            )),
            _ => None,
        };
        for t in 0..vectors {
            let mut value = product(e, row, t);
            if gemm.alpha != 1.0 {
                let alpha = fconst(e, lane, gemm.alpha);
                value = e.b.ins().fmul(value, alpha);
            }
            if let Some(((address, offset), moving)) = bias_row {
                let mut bias_value = load_columns(
                    e,
                    gemm.float,
                    columns,
                    address,
                    offset + if moving { VECTOR_BYTES * t as i32 } else { 0 },
                    moving,
                );
                if gemm.beta != 1.0 {
                    let beta = fconst(e, lane, gemm.beta);
                    bias_value = e.b.ins().fmul(bias_value, beta);
                }
                value = e.b.ins().fadd(value, bias_value);
            }
            let offset = c_offset + VECTOR_BYTES * t as i32;
            let value = gemm.epilogue.apply(e, value, c_row, offset);
            e.b.ins().store(flags(), value, c_row, offset);
        }
    }
    Ok(())
}

/// Whether the microkernels can compute this GEMM's tiles: they are in the
/// module, the GEMM is f32, and A, B and C are contiguous along K and j.
fn microkernel_applies(e: &Emitter<'_, '_, '_>, gemm: &Gemm) -> bool {
    let unit = Size::Const(4);
    gemm.float == Float::F32
        && !e.cx.microkernels.gemm.is_empty()
        && gemm.a.col == unit
        && gemm.b.col == unit
        && gemm.c.col == unit
}

/// `out = x * scale + shift` over a contiguous f32 row of `count` elements.
pub(crate) fn scale_shift_row(
    e: &mut Emitter<'_, '_, '_>,
    input: Value,
    output: Value,
    count: Size,
    scale: Value,
    shift: Value,
) -> Result<(), CodegenError> {
    let scale4 = e.b.ins().splat(types::F32X4, scale);
    let shift4 = e.b.ins().splat(types::F32X4, shift);
    let vectors = divide(e, count, 4);
    let rest = remainder(e, count, 4);
    let after = e.counted_loop(vectors, &[input, output], |e, _, p| {
        let x = e.b.ins().load(types::F32X4, flags(), p[0], 0);
        let y = e.multiply_add(x, scale4, shift4);
        e.b.ins().store(flags(), y, p[1], 0);
        Ok(vec![
            e.b.ins().iadd_imm_s(p[0], 16),
            e.b.ins().iadd_imm_s(p[1], 16),
        ])
    })?;
    e.counted_loop(rest, &after, |e, _, p| {
        let x = e.b.ins().load(types::F32, flags(), p[0], 0);
        let y = e.multiply_add(x, scale, shift);
        e.b.ins().store(flags(), y, p[1], 0);
        Ok(vec![
            e.b.ins().iadd_imm_s(p[0], 4),
            e.b.ins().iadd_imm_s(p[1], 4),
        ])
    })?;
    Ok(())
}

/// The GEMM's float type when every operand and the result are f32, or
/// all f64 without a clamp (whose f32 bounds the GEMM takes); `None` for
/// the scalar loop.
fn gemm_float(e: &Emitter<'_, '_, '_>, values: &[ValueId], clamp: ClampRange) -> Option<Float> {
    let all = |dtype| {
        values
            .iter()
            .all(|&value| e.graph().value(value).ty.dtype == dtype)
    };
    if all(DType::F32) {
        Some(Float::F32)
    } else if all(DType::F64) && clamp.is_none() {
        Some(Float::F64)
    } else {
        None
    }
}

/// `a @ b`, batched over leading dimensions, clamped.
pub(super) fn matmul(
    e: &mut Emitter<'_, '_, '_>,
    &MatMul { a, b, clamp }: &MatMul,
    output: ValueId,
) -> Result<(), CodegenError> {
    match gemm_float(e, &[a, b, output], clamp) {
        Some(float) => product(e, float, [a, b, output], None, 1.0, clamp),
        None => any_product(e, [a, b, output], None, Scalar::Int(1), clamp),
    }
}

/// `beta * bias + alpha * (a @ b)`, clamped. A zero beta ignores the bias
/// (NaN and infinity included), as PyTorch's addmm does.
pub(super) fn addmm(
    e: &mut Emitter<'_, '_, '_>,
    op: &Addmm,
    output: ValueId,
) -> Result<(), CodegenError> {
    if super::quantized::addmm(e, op, output)? {
        return Ok(());
    }
    let bias = (op.beta.as_f64() != 0.0).then_some((op.bias, op.beta));
    match gemm_float(e, &[op.bias, op.a, op.b, output], op.clamp) {
        Some(float) => product(
            e,
            float,
            [op.a, op.b, output],
            bias,
            op.alpha.as_f64(),
            op.clamp,
        ),
        None => any_product(e, [op.a, op.b, output], bias, op.alpha, op.clamp),
    }
}

/// A matrix product of integers (or of f64 with a clamp) one output element
/// at a time: the sum over K in `Arith`'s compute type (integers in i64,
/// which wraps like the narrower types once stored, as PyTorch's products
/// wrap; f64 in f64), then times
/// `alpha`, plus `beta` times the bias, each scalar taken in the compute
/// type (an integer product truncates a float alpha or beta, as PyTorch
/// converts them to the tensors' type).
fn any_product(
    e: &mut Emitter<'_, '_, '_>,
    [a_value, b_value, c_value]: [ValueId; 3],
    bias: Option<(ValueId, Scalar)>,
    alpha: Scalar,
    clamp: ClampRange,
) -> Result<(), CodegenError> {
    let c_ty = e.graph().value(c_value).ty.clone();
    let a_ty = e.graph().value(a_value).ty.clone();
    let b_dtype = e.graph().value(b_value).ty.dtype;
    let arith = Arith::of(c_ty.dtype);
    if !arith.is_float() && !clamp.is_none() {
        return Err(e.unsupported("a fused clamp on an integer matrix product"));
    }
    let rank = c_ty.rank();
    let sizes = e.shape(&c_ty.shape);
    let k = e.dim(a_ty.shape[rank - 1]);
    let [a_strides, b_strides, c_strides] = [a_value, b_value, c_value].map(|v| byte_strides(e, v));
    let [a, b, c] = [a_value, b_value, c_value].map(|v| e.address(v));
    let bias = bias.map(|(value, beta)| {
        let ty = e.graph().value(value).ty.clone();
        let size = Size::Const(ty.dtype.size() as i64);
        let strides: Vec<Size> = broadcast_strides(e, &ty, &c_ty.shape)
            .into_iter()
            .map(|stride| e.mul(stride, size))
            .collect();
        (e.address(value), ty.dtype, strides, beta)
    });
    let alpha = scalar_in(e, arith, alpha);
    over_indices(e, &sizes, &[], &mut |e, index, _| {
        let batch = &index[..rank - 2];
        let (i, j) = (index[rank - 2], index[rank - 1]);
        let terms = |strides: &[Size], last: [Value; 2]| -> Vec<(Value, Size)> {
            let mut terms: Vec<(Value, Size)> =
                batch.iter().copied().zip(strides.iter().copied()).collect();
            terms.push((last[0], strides[rank - 2]));
            terms.push((last[1], strides[rank - 1]));
            terms
        };
        let zero = arith.zero(e);
        let sum = over_indices(e, &[k], &[zero], &mut |e, kk, acc| {
            let a_address = element_address(e, a, &terms(&a_strides, [i, kk[0]]));
            let b_address = element_address(e, b, &terms(&b_strides, [kk[0], j]));
            let x = arith.load(e, a_ty.dtype, a_address)?;
            let y = arith.load(e, b_dtype, b_address)?;
            Ok(vec![arith.mul_add(e, x, y, acc[0])])
        })?[0];
        let mut value = match alpha {
            Some(alpha) => arith.mul(e, sum, alpha),
            None => sum,
        };
        if let Some((base, dtype, strides, beta)) = &bias {
            let address = element_address(e, *base, &terms(strides, [i, j]));
            let mut term = arith.load(e, *dtype, address)?;
            if let Some(beta) = scalar_in(e, arith, *beta) {
                term = arith.mul(e, term, beta);
            }
            value = arith.add(e, value, term);
        }
        let value = arith.clamp(
            e,
            value,
            clamp.min.map(|min| min.0),
            clamp.max.map(|max| max.0),
        );
        let address = element_address(e, c, &terms(&c_strides, [i, j]));
        arith.store(e, value, c_ty.dtype, address)?;
        Ok(Vec::new())
    })?;
    Ok(())
}

/// A scalar factor in the compute type, or `None` for 1 (nothing to
/// multiply by); integers take a float truncated.
fn scalar_in(e: &mut Emitter<'_, '_, '_>, arith: Arith, scalar: Scalar) -> Option<Value> {
    match scalar {
        Scalar::Int(1) | Scalar::Bool(true) => None,
        Scalar::Float(1.0) => None,
        Scalar::Int(value) if !arith.is_float() => Some(e.b.ins().iconst(arith.ty, value)),
        _ => Some(arith.constant(e, scalar.as_f64())),
    }
}

/// A GEMM per batch position of `[.., M, K] @ [.., K, N]`.
fn product(
    e: &mut Emitter<'_, '_, '_>,
    float: Float,
    [a_value, b_value, c_value]: [ValueId; 3],
    bias: Option<(ValueId, Scalar)>,
    alpha: f64,
    clamp: ClampRange,
) -> Result<(), CodegenError> {
    let c_ty = e.graph().value(c_value).ty.clone();
    let a_ty = e.graph().value(a_value).ty.clone();
    let rank = c_ty.rank();
    let sizes = e.shape(&c_ty.shape);
    let k = e.dim(a_ty.shape[rank - 1]);
    let strides = [
        byte_strides(e, a_value),
        byte_strides(e, b_value),
        byte_strides(e, c_value),
    ];
    let bias_strides = bias.map(|(value, _)| {
        let ty = e.graph().value(value).ty.clone();
        broadcast_strides(e, &ty, &c_ty.shape)
            .into_iter()
            .map(|stride| e.mul(stride, Size::Const(float.bytes())))
            .collect::<Vec<_>>()
    });
    let batch: Vec<usize> = (0..rank - 2).collect();
    let panels = constant_panels(e, float, b_value, &strides, [k, sizes[rank - 1]]);
    let b_base = match panels {
        Some(panels) => panels.tail.base,
        None => e.address(b_value),
    };
    let mut operand_strides = strides.to_vec();
    let mut bases = vec![e.address(a_value), b_base, e.address(c_value)];
    if let (Some((value, _)), Some(strides)) = (bias, &bias_strides) {
        operand_strides.push(strides.clone());
        bases.push(e.address(value));
    }
    let beta = bias.map_or(1.0, |(_, beta)| beta.as_f64());
    // The kernel writes its output through the GEMMs alone.
    e.allow_parallel();
    over_axes(e, &sizes, &operand_strides, &batch, &bases, &mut |e, p| {
        let gemm = Gemm {
            float,
            m: sizes[rank - 2],
            n: sizes[rank - 1],
            k,
            a: Matrix {
                base: p[0],
                row: strides[0][rank - 2],
                col: strides[0][rank - 1],
            },
            b: match panels {
                Some(panels) => panels.tail,
                None => Matrix {
                    base: p[1],
                    row: strides[1][rank - 2],
                    col: strides[1][rank - 1],
                },
            },
            c: Matrix {
                base: p[2],
                row: strides[2][rank - 2],
                col: strides[2][rank - 1],
            },
            bias: bias_strides.as_ref().map(|strides| Matrix {
                base: p[3],
                row: strides[rank - 2],
                col: strides[rank - 1],
            }),
            alpha,
            beta,
            epilogue: Epilogue::clamped(clamp),
            b_panels: panels,
        };
        emit_gemm(e, &gemm)
    })
}

/// A matrix product's B prepacked for the microkernels, when it is an f32
/// constant matrix (no batch) of fixed size and C is contiguous along its
/// rows (`strides` are A's, B's and C's byte strides).
fn constant_panels(
    e: &mut Emitter<'_, '_, '_>,
    float: Float,
    b: ValueId,
    [_, b_strides, c_strides]: &[Vec<Size>; 3],
    [k, n]: [Size; 2],
) -> Option<Panels> {
    let [b_row, b_col] = <[Size; 2]>::try_from(b_strides.as_slice())
        .ok()?
        .map(Size::constant);
    let element = float.bytes();
    let contiguous_c = c_strides.last().and_then(|stride| stride.constant()) == Some(element);
    if float != Float::F32 || !contiguous_c {
        return None;
    }
    let strides = [b_row? / element, b_col? / element];
    Panels::pack(e, b, [k.constant()?, n.constant()?], strides)
}
