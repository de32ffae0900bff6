//! Integer GEMMs for the convolutions (pointwise and im2col ones of one
//! group) and `addmm`s of quantized programs. XNNPACK's int8
//! programs are imported as f32 ops on integer-valued floats: an
//! activation is `round` then `clamp` to a range 256 values wide (the
//! quantized value less its zero point), a weight a constant of integers in
//! `[-127, 127]`, a bias an integer-valued constant. When the graph proves
//! that of a product's operands ([`ptec_ir::value_bounds`], and the
//! constants' elements here), its sums are integers, which i32 arithmetic
//! computes exactly:
//!
//! - the weights are prepacked at compile time into the integer
//!   microkernels' panels (i8 in groups of four along K for `vpdpbusd`,
//!   i16 in pairs for AVX2's `vpmaddwd`), with K padded by zeros;
//! - each block of the input's rows is converted from f32 to `u = v - low`
//!   (u8, or u8 values as i16 for AVX2), `low` being the input's least
//!   value, so that `v @ w = u @ w + low * sum_k w[k, j]`: that correction
//!   per output column is folded into the bias at compile time (an im2col
//!   convolution converts its input rows once, then unfolds A's rows from
//!   them);
//! - the microkernels sum in i32, add the bias, convert to f32 once and
//!   apply the kernel's clamp and residual as the f32 tiles do; where the
//!   convolution's epilogue is a requantization alone (`[mul(in0, in1);
//!   round(s0); clamp(s1)]`, `in1` one scale per channel, on a result with
//!   neither clamp nor residual: most convolutions of an int8 network once
//!   `shorten-integer-chains` and `elide-requantize` have run), they
//!   multiply by the scale, round and clamp themselves, the same
//!   instructions in the same order as the chain kernel, so the result is
//!   stored once instead of stored, read and stored again.
//!
//! Whenever the f32 kernels' sums are exact (below 2^24 in magnitude), the
//! result is theirs bit for bit; beyond, it is the exact sum rounded once,
//! as ExecuTorch's int32 kernels compute it. A NaN among the input's rows
//! (which no integer holds; the bounds say nothing of NaN) sends that block
//! through the f32 GEMM instead, so NaN propagates as it would there.

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Value, types};
use cranelift_module::FuncId;
use ptec_ir::ops::conv::Convolution;
use ptec_ir::ops::elementwise::{BinaryOp, Func, UnaryOp};
use ptec_ir::ops::fused::StepInput;
use ptec_ir::ops::linalg::Addmm;
use ptec_ir::{DType, ValueId};

use super::conv_epilogue::{BlockEpilogue, Layout, block_layouts};
use super::conv_nhwc::ChannelsLast;
use super::linalg::{Epilogue, Float, Gemm, Matrix, emit_gemm, span_of_units};
use crate::emit::{Emitter, PTR, Size, bitcast_flags, flags};
use crate::error::CodegenError;
use crate::microkernel::IntegerForm;

/// The most a sum may reach in magnitude, the bias included, for i32 to
/// hold it.
const I32_LIMIT: i64 = i32::MAX as i64;

/// The most rows of a matrix product's A packed at a time (a multiple of
/// every integer tile's rows), and the unit threads share out.
const BLOCK_ROWS: i64 = 72;

/// The most blocks of whole tiles a product's rows are cut into where
/// blocks of [`BLOCK_ROWS`] would be fewer, so that threads share them out
/// evenly: blocks of [`BLOCK_ROWS`] left mobilenet_v2's 14x14 and 7x7
/// stages (196 and 49 pixels) three blocks and one, which two threads split
/// 2:1 or by columns (each thread then converting all of A), and those
/// pointwise convolutions ran no faster on two threads than on one.
const SHARED_BLOCKS: i64 = 8;

/// The largest magnitude of an input the packing converts: `v + ROUNDER`
/// holds `v` in its low mantissa bits for integers `|v| < 2^22`.
const MAGNITUDE: i64 = 1 << 21;

/// 1.5 * 2^23: added to an integer-valued f32 of magnitude below 2^22, it
/// gives a float whose bits are this float's plus the integer.
const ROUNDER: f32 = 12_582_912.0;

/// A convolution the integer microkernels compute: the input's least value,
/// and the prepacked weights, bias and mask.
#[derive(Clone, Debug)]
pub(super) struct IntegerGemm {
    form: IntegerForm,
    /// The tiles two registers and one register wide.
    kernels: [FuncId; 2],
    low: i32,
    /// K, and its four-byte groups in a row of A.
    k: i64,
    groups: i64,
    /// The output's columns.
    n: i64,
    /// The panels two registers wide, and the last, narrower or masked
    /// one (its registers and its columns).
    full_panels: i64,
    rest: Option<(usize, i64)>,
    /// The constant: B's panels, then the bias, then the last panel's mask,
    /// then each column's scale (1 unless the tiles requantize).
    bytes: Vec<u8>,
    bias_at: usize,
    mask_at: usize,
    scale_at: usize,
    /// The clamp after the scale, when the tiles compute the convolution's
    /// requantization (its epilogue's steps) themselves.
    requantized: Option<[f32; 2]>,
    /// The most any partial sum of an output reaches in magnitude: the
    /// bias's plus every product's bound.
    largest_sum: i64,
}

/// Emits the f32 rows of A the f32 GEMM reads when a block holds NaN, and
/// the bytes from one row to the next.
pub(super) type FloatRows<'a> = (
    &'a mut dyn FnMut(&mut Emitter<'_, '_, '_>) -> Result<Value, CodegenError>,
    i64,
);

/// Which of an integer GEMM's column units a call computes.
#[derive(Clone, Copy)]
pub(super) enum Units {
    All,
    /// Units `lo..hi` of [`IntegerGemm::column_units`], a thread's part.
    Part(Value, Value),
}

/// Where an integer convolution's constant is and its clamp bounds, set up
/// once at the kernel's start.
#[derive(Clone, Copy)]
pub(super) struct Prepared {
    constant: Value,
    bounds: Value,
}

impl IntegerGemm {
    /// The plan for `op`, a channels-last convolution `conv` (of one group:
    /// its HWIO filter is B, `[K, N]` row-major) writing `output`, when
    /// [`IntegerGemm::new`] finds one.
    pub(super) fn for_convolution(
        e: &Emitter<'_, '_, '_>,
        op: &Convolution,
        conv: &ChannelsLast,
        output: ValueId,
    ) -> Option<IntegerGemm> {
        let [out_channels, in_channels, kernel_h, kernel_w] = conv.filter;
        let k = kernel_h * kernel_w * in_channels;
        let padded = conv.padding != [0, 0];
        let weights = e.graph().value(op.weight).constant_bytes()?;
        (conv.groups == 1).then_some(())?;
        let plan = Self::new(
            e,
            op.input,
            padded,
            [k, out_channels],
            weights,
            [out_channels, 1],
            op.bias,
        )?;
        Some(match requantization(e, op, output, out_channels) {
            Some((scales, bounds)) => plan.requantizing(&scales, bounds),
            None => plan,
        })
    }

    /// The plan with its tiles scaling column `j` by `scales[j]`, rounding
    /// and clamping to `bounds`, the convolution's epilogue steps.
    fn requantizing(mut self, scales: &[f32], bounds: [f32; 2]) -> IntegerGemm {
        for (j, scale) in scales.iter().enumerate() {
            let at = self.scale_at + 4 * j;
            self.bytes[at..at + 4].copy_from_slice(&scale.to_le_bytes());
        }
        self.requantized = Some(bounds);
        self
    }

    /// The plan for a matrix product `input @ weight + bias` of `[k, n]`
    /// f32 constant weights (`weight_strides` apart in `weights`, the
    /// constant's bytes), when the target has the integer microkernels and
    /// the graph proves the operands integers that i32 sums hold: the input
    /// integral in a range at most 256 values wide (0 included when the
    /// window pads), the weights integers in `[-128, 127]` and the bias, if
    /// any, a constant of `n` integers.
    pub(super) fn new(
        e: &Emitter<'_, '_, '_>,
        input: ValueId,
        padded: bool,
        [k, n]: [i64; 2],
        weights: &[u8],
        weight_strides: [i64; 2],
        bias: Option<ValueId>,
    ) -> Option<IntegerGemm> {
        let (form, kernels) = e.cx.microkernels.integer?;
        let graph = e.graph();
        let (mut low, mut high) = ptec_ir::value_bounds(graph, input).integers()?;
        if padded {
            (low, high) = (low.min(0), high.max(0));
        }
        if high - low > 255 || low < -MAGNITUDE || high > MAGNITUDE {
            return None;
        }
        let weights = f32_elements(weights);
        let at = |k_index: i64, j: i64| k_index * weight_strides[0] + j * weight_strides[1];
        if at(k - 1, n - 1) >= weights.len() as i64 {
            return None;
        }
        let weight_ok = |w: f32| w.fract() == 0.0 && (-128.0..=127.0).contains(&w);
        if !(0..k).all(|i| (0..n).all(|j| weight_ok(weights[at(i, j) as usize]))) {
            return None;
        }
        let bias = match bias {
            Some(bias) => f32_elements(graph.value(bias).constant_bytes()?),
            None => vec![0.0; n as usize],
        };
        let bias_ok = |b: &f32| b.fract() == 0.0 && b.abs() <= I32_LIMIT as f32;
        if bias.len() as i64 != n || !bias.iter().all(bias_ok) {
            return None;
        }
        let weight = |k_index: i64, j: i64| weights[at(k_index, j) as usize] as i64;
        let folded: Vec<i64> = (0..n)
            .map(|j| bias[j as usize] as i64 + low * (0..k).map(|i| weight(i, j)).sum::<i64>())
            .collect();
        let largest = folded.iter().map(|b| b.abs()).max().unwrap_or(0);
        if k * 255 * 128 + largest > I32_LIMIT {
            return None;
        }
        let magnitude = low.abs().max(high.abs());
        let largest_sum = (0..n)
            .map(|j| {
                let products: i64 = (0..k).map(|i| weight(i, j).abs() * magnitude).sum();
                (bias[j as usize] as i64).abs() + products
            })
            .max()
            .unwrap_or(0);
        let columns = form.register_columns() as i64;
        let (full_panels, left) = (n / (2 * columns), n % (2 * columns));
        let rest = match left {
            0 => None,
            left if left <= columns => Some((1, left)),
            left => Some((2, left)),
        };
        let steps = form.group_steps() as i64;
        let groups = (k as u64).next_multiple_of(4) as i64 / steps;
        let mut panels: Vec<(i64, i64)> = (0..full_panels)
            .map(|panel| (panel * 2 * columns, 2 * columns))
            .collect();
        panels.extend(
            rest.map(|(registers, _)| (full_panels * 2 * columns, registers as i64 * columns)),
        );
        let mut bytes = Vec::new();
        for &(first, width) in &panels {
            for group in 0..groups {
                for j in first..first + width {
                    for step in 0..steps {
                        let k_index = group * steps + step;
                        let w = match k_index < k && j < n {
                            true => weight(k_index, j),
                            false => 0,
                        };
                        match form {
                            IntegerForm::Vnni512 | IntegerForm::VnniAvx2 => {
                                bytes.push(w as i8 as u8)
                            }
                            IntegerForm::Avx2 => bytes.extend((w as i16).to_le_bytes()),
                        }
                    }
                }
            }
        }
        let padded = panels.last().map_or(0, |&(first, width)| first + width);
        let bias_at = bytes.len().next_multiple_of(64);
        bytes.resize(bias_at, 0);
        for j in 0..padded {
            let value = folded.get(j as usize).copied().unwrap_or(0) as i32;
            bytes.extend(value.to_le_bytes());
        }
        let mask_at = bytes.len().next_multiple_of(64);
        bytes.resize(mask_at, 0);
        if let Some((registers, valid)) = rest {
            for j in 0..registers as i64 * columns {
                let lane: i32 = if j < valid { -1 } else { 0 };
                bytes.extend(lane.to_le_bytes());
            }
        }
        let scale_at = bytes.len().next_multiple_of(64);
        bytes.resize(scale_at, 0);
        for _ in 0..padded {
            bytes.extend(1.0f32.to_le_bytes());
        }
        Some(IntegerGemm {
            form,
            kernels,
            low: low as i32,
            k,
            groups,
            n,
            full_panels,
            rest,
            bytes,
            bias_at,
            mask_at,
            scale_at,
            requantized: None,
            largest_sum,
        })
    }

    /// Whether f32 sums of the product, in any order, are exact: every
    /// partial sum an integer below 2^24 in magnitude. A kernel summing in
    /// f32 then gives the integer GEMM's bits.
    pub(super) fn f32_sums_exact(&self) -> bool {
        self.largest_sum <= 1 << 24
    }

    /// Bytes of a row of A.
    pub(super) fn a_row(&self) -> i64 {
        self.groups * 4
    }

    /// Bytes of scratch that `rows` rows of A take, rounded up to whole
    /// tiles (which the microkernels read) and with room for the packing's
    /// last 16-byte store.
    pub(super) fn a_bytes(&self, rows: i64) -> u64 {
        let rows = (rows as u64).next_multiple_of(self.form.rows() as u64);
        (rows * self.a_row() as u64 + 16).next_multiple_of(64)
    }

    /// Sets up the constant's address and the clamp bounds.
    pub(super) fn prepare(&self, e: &mut Emitter<'_, '_, '_>, epilogue: Epilogue) -> Prepared {
        let constant = e.computed_constant(self.bytes.clone());
        let slot =
            e.b.create_sized_stack_slot(StackSlotData::new(StackSlotKind::ExplicitSlot, 8, 4));
        let bounds = self.requantized.unwrap_or([
            epilogue.min.unwrap_or(f32::NEG_INFINITY),
            epilogue.max.unwrap_or(f32::INFINITY),
        ]);
        for (offset, bound) in [0, 4].into_iter().zip(bounds) {
            let value = e.b.ins().f32const(bound);
            e.b.ins().stack_store(PTR, value, slot, offset);
        }
        Prepared {
            constant,
            bounds: e.b.ins().stack_addr(PTR, slot, 0),
        }
    }

    /// Converts `rows` rows of `elements` f32 (at `source`, the elements
    /// contiguous) into rows of A's elements at `target`, the rows
    /// `row_bytes` apart (source's and target's); returns an i32 that is
    /// non-zero when any element was NaN, and with `nan_flags` also stores
    /// each row's (an i32 a row, from `nan_flags` on).
    fn convert(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        [source, target]: [Value; 2],
        row_bytes: [i64; 2],
        (elements, rows): (i64, Size),
        nan_flags: Option<Value>,
    ) -> Result<Value, CodegenError> {
        let element = self.element().size() as i64;
        let wide = element == 2;
        // v - low is the bits of v + ROUNDER less those of ROUNDER + low
        // (exact: v is an integer of magnitude below 2^22, or NaN, and then
        // the block goes to the f32 GEMM whatever it packed).
        let rounder = e.b.ins().f32const(ROUNDER);
        let rounders = e.b.ins().splat(types::F32X4, rounder);
        let offset = i64::from(ROUNDER.to_bits() as i32) + i64::from(self.low);
        let low = e.b.ins().iconst(types::I32, offset);
        let lows = e.b.ins().splat(types::I32X4, low);
        let none = e.b.ins().iconst(types::I32, 0);
        let nones = e.b.ins().splat(types::I32X4, none);
        let (chunks, tail) = (elements / 8, elements % 8);
        // Carried: the rows' addresses, the row's flag's and NaN seen.
        let flag = nan_flags.unwrap_or(source);
        let carried = [source, target, flag, none];
        let result = e.counted_loop(rows, &carried, |e, _, p| {
            // Eight elements at a time: two vectors, narrowed to i16 (and
            // to u8 for the VNNI forms), stored 16 bytes wide (the bytes
            // past the eight of u8 are overwritten next or are padding).
            let vectors =
                e.counted_loop(Size::Const(chunks), &[p[0], p[1], nones], |e, _, q| {
                    let mut halves = Vec::with_capacity(2);
                    let mut nan = q[2];
                    for half in 0..2 {
                        let x = e.b.ins().load(types::F32X4, flags(), q[0], 16 * half);
                        let unordered = e.b.ins().fcmp(FloatCC::Unordered, x, x);
                        nan = e.b.ins().bor(nan, unordered);
                        let shifted = e.b.ins().fadd(x, rounders);
                        let bits = e.b.ins().bitcast(types::I32X4, bitcast_flags(), shifted);
                        halves.push(e.b.ins().isub(bits, lows));
                    }
                    let words = e.b.ins().snarrow(halves[0], halves[1]);
                    let packed = match wide {
                        true => words,
                        false => e.b.ins().unarrow(words, words),
                    };
                    e.b.ins().store(flags(), packed, q[1], 0);
                    Ok(vec![
                        e.b.ins().iadd_imm_s(q[0], 32),
                        e.b.ins().iadd_imm_s(q[1], 8 * element),
                        nan,
                    ])
                })?;
            let any = e.b.ins().vany_true(vectors[2]);
            let mut nan = e.b.ins().uextend(types::I32, any);
            for index in 0..tail {
                let x =
                    e.b.ins()
                        .load(types::F32, flags(), vectors[0], (4 * index) as i32);
                let unordered = e.b.ins().fcmp(FloatCC::Unordered, x, x);
                let unordered = e.b.ins().uextend(types::I32, unordered);
                nan = e.b.ins().bor(nan, unordered);
                let shifted = e.b.ins().fadd(x, rounder);
                let bits = e.b.ins().bitcast(types::I32, bitcast_flags(), shifted);
                let value = e.b.ins().isub(bits, low);
                let offset = (element * index) as i32;
                match wide {
                    true => e.b.ins().istore16(flags(), value, vectors[1], offset),
                    false => e.b.ins().istore8(flags(), value, vectors[1], offset),
                };
            }
            if nan_flags.is_some() {
                e.b.ins().store(flags(), nan, p[2], 0);
            }
            Ok(vec![
                e.b.ins().iadd_imm_s(p[0], row_bytes[0]),
                e.b.ins().iadd_imm_s(p[1], row_bytes[1]),
                e.b.ins().iadd_imm_s(p[2], 4),
                e.b.ins().bor(p[3], nan),
            ])
        })?;
        Ok(result[3])
    }

    /// Converts the rows `[top, bottom)` of an f32 image of `row_elements`
    /// elements a row (contiguous, at `image`) into the same rows of A's
    /// elements at `target`, and each row's NaN flag into the i32 at
    /// `row_flags` (row `r`'s at `row_flags + 4 * r`).
    pub(super) fn convert_image_rows(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        [image, target, row_flags]: [Value; 3],
        row_elements: i64,
        [top, bottom]: [Value; 2],
    ) -> Result<(), CodegenError> {
        let element = self.element().size() as i64;
        let at = |e: &mut Emitter<'_, '_, '_>, base: Value, bytes: i64| {
            let offset = e.b.ins().imul_imm_s(top, bytes);
            e.b.ins().iadd(base, offset)
        };
        let pointers = [
            at(e, image, row_elements * 4),
            at(e, target, row_elements * element),
        ];
        let first_flag = at(e, row_flags, 4);
        let rows = Size::Dyn(e.b.ins().isub(bottom, top));
        let row_bytes = [row_elements * 4, row_elements * element];
        self.convert(
            e,
            pointers,
            row_bytes,
            (row_elements, rows),
            Some(first_flag),
        )?;
        Ok(())
    }

    /// The type of A's elements: u8, or (AVX2) a u8 value as i16.
    pub(super) fn element(&self) -> DType {
        match self.form {
            IntegerForm::Avx2 => DType::I16,
            IntegerForm::Vnni512 | IntegerForm::VnniAvx2 => DType::U8,
        }
    }

    /// The bits of A's element for a tap outside the image (an f32 zero,
    /// `0 - low`), which the plan of a padded window holds.
    pub(super) fn outside_element(&self) -> i64 {
        -i64::from(self.low)
    }

    /// The units a split by columns shares out: the panels two registers
    /// wide, then the last one, if any.
    fn column_units(&self) -> i64 {
        self.full_panels + i64::from(self.rest.is_some())
    }

    /// The columns this call computes of a GEMM of `rows` rows that threads
    /// share out by columns (all of them when the kernel does not split).
    pub(super) fn columns_of_this_call(&self, e: &mut Emitter<'_, '_, '_>, rows: i64) -> Units {
        let cost = (rows * self.k * self.panel_columns()) as u64;
        e.parallel_range(self.column_units(), cost)
            .map_or(Units::All, |(lo, hi)| Units::Part(lo, hi))
    }

    /// The output columns of a panel two registers wide.
    fn panel_columns(&self) -> i64 {
        2 * self.form.register_columns() as i64
    }

    /// The columns of `units` (a part of [`IntegerGemm::column_units`], or
    /// all of them): the first one and how many.
    fn columns_of(&self, e: &mut Emitter<'_, '_, '_>, units: Units) -> (Value, Size) {
        match units {
            Units::All => (e.iconst(0), Size::Const(self.n)),
            Units::Part(lo, hi) => {
                let (first, columns) = span_of_units(e, (lo, hi), self.panel_columns(), self.n);
                (first, Size::Dyn(columns))
            }
        }
    }

    /// `rows` rows of the output at `c` (rows `self.n` f32 apart) from A's
    /// rows at `a`: per panel of columns (those of `units`), the
    /// microkernel on each tile of rows; `residual` is the bytes from an
    /// output to its residual.
    #[allow(clippy::too_many_arguments)] // The operands of one product.
    pub(super) fn gemm(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        prepared: Prepared,
        a: Value,
        rows: Size,
        c: Value,
        residual: Option<Value>,
        units: Units,
    ) -> Result<(), CodegenError> {
        let columns = self.form.register_columns() as i64;
        let panel_bytes = |registers: i64| self.groups * 4 * registers * columns;
        let bias = e.b.ins().iadd_imm_s(prepared.constant, self.bias_at as i64);
        let (full, rest) = match units {
            Units::All => (Size::Const(self.full_panels), Size::Const(1)),
            Units::Part(lo, hi) => {
                // The full panels of the part, and its last one if it
                // reaches past them (never more than one).
                let full = e.iconst(self.full_panels);
                let past = e.b.ins().icmp(IntCC::SignedGreaterThan, hi, full);
                let end = e.b.ins().select(past, full, hi);
                let rest = e.b.ins().isub(hi, end);
                (Size::Dyn(e.b.ins().isub(end, lo)), Size::Dyn(rest))
            }
        };
        let carried = match units {
            Units::All => [prepared.constant, c, bias],
            Units::Part(lo, _) => {
                let panels = e.b.ins().imul_imm_s(lo, panel_bytes(2));
                let outputs = e.b.ins().imul_imm_s(lo, self.panel_columns() * 4);
                [
                    e.b.ins().iadd(prepared.constant, panels),
                    e.b.ins().iadd(c, outputs),
                    e.b.ins().iadd(bias, outputs),
                ]
            }
        };
        let next = e.counted_loop(full, &carried, |e, _, p| {
            self.tiles(e, prepared, [a, p[0], p[1], p[2]], rows, residual, 2, None)?;
            Ok(vec![
                e.b.ins().iadd_imm_s(p[0], panel_bytes(2)),
                e.b.ins().iadd_imm_s(p[1], 2 * columns * 4),
                e.b.ins().iadd_imm_s(p[2], 2 * columns * 4),
            ])
        })?;
        if let Some((registers, valid)) = self.rest {
            e.counted_loop(rest, &next, |e, _, p| {
                let mask = (valid != registers as i64 * columns)
                    .then(|| e.b.ins().iadd_imm_s(prepared.constant, self.mask_at as i64));
                let operands = [a, p[0], p[1], p[2]];
                self.tiles(e, prepared, operands, rows, residual, registers, mask)?;
                Ok(p.to_vec())
            })?;
        }
        Ok(())
    }

    /// One panel: the microkernel of `registers` registers a row on each
    /// tile of `rows` rows, `mask` (or null) choosing the stored columns.
    #[allow(clippy::too_many_arguments)] // A panel's operands.
    fn tiles(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        prepared: Prepared,
        [a, b, c, bias]: [Value; 4],
        rows: Size,
        residual: Option<Value>,
        registers: usize,
        mask: Option<Value>,
    ) -> Result<(), CodegenError> {
        let tile_rows = self.form.rows() as i64;
        let tiles = match rows {
            Size::Const(rows) => Size::Const((rows + tile_rows - 1) / tile_rows),
            Size::Dyn(rows) => {
                let rounded = e.b.ins().iadd_imm_s(rows, tile_rows - 1);
                Size::Dyn(e.b.ins().udiv_imm_u(rounded, tile_rows))
            }
        };
        let kernel = self.kernels[2 - registers];
        let func = e.import_function(kernel);
        let groups = e.iconst(self.groups);
        let a_row = e.iconst(self.a_row());
        let c_row = e.iconst(self.n * 4);
        let null = e.iconst(0);
        let mask = mask.unwrap_or(null);
        // The scales lie as the bias does, a fixed distance after it.
        let scale =
            e.b.ins()
                .iadd_imm_s(bias, (self.scale_at - self.bias_at) as i64);
        let left = e.value_of(rows);
        e.counted_loop(tiles, &[a, c, left], |e, _, p| {
            let residual = match residual {
                Some(distance) => e.b.ins().iadd(p[1], distance),
                None => null,
            };
            let arguments = [
                p[0],
                b,
                p[1],
                groups,
                a_row,
                c_row,
                bias,
                prepared.bounds,
                residual,
                p[2],
                mask,
                scale,
            ];
            e.b.ins().call(func, &arguments);
            Ok(vec![
                e.b.ins().iadd_imm_s(p[0], tile_rows * self.a_row()),
                e.b.ins().iadd_imm_s(p[1], tile_rows * self.n * 4),
                e.b.ins().iadd_imm_s(p[2], -tile_rows),
            ])
        })?;
        Ok(())
    }

    /// Packs `rows` rows of f32 A (at `source`, `source_row` bytes apart)
    /// into `scratch` and computes them by [`IntegerGemm::packed_block`].
    #[allow(clippy::too_many_arguments)] // The operands of one product.
    pub(super) fn block(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        prepared: Prepared,
        [source, scratch, output]: [Value; 3],
        source_row: i64,
        rows: Size,
        (b, units): (Matrix, Units),
        bias: Option<Value>,
        epilogues: (Epilogue, Option<&BlockEpilogue>),
    ) -> Result<(), CodegenError> {
        let row_bytes = [source_row, self.a_row()];
        let nan = self.convert(e, [source, scratch], row_bytes, (self.k, rows), None)?;
        let float_rows: FloatRows<'_> = (&mut |_| Ok(source), source_row);
        let pointers = [scratch, output];
        self.packed_block(
            e,
            prepared,
            nan,
            float_rows,
            pointers,
            rows,
            (b, units),
            bias,
            epilogues,
        )
    }

    /// Computes `rows` rows of the product, A's packed at `packed`, with the
    /// microkernels, or, when the i32 `nan` is non-zero, with the f32 GEMM
    /// on the f32 rows `float_rows` emits, B's f32 elements `b` and `bias`
    /// (along the columns) as the kernel would have without this plan. Only
    /// the columns of `units` are computed. Epilogue steps (`blocks`) are
    /// then applied to them.
    #[allow(clippy::too_many_arguments)] // The operands of one product.
    pub(super) fn packed_block(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        prepared: Prepared,
        nan: Value,
        (float_rows, source_row): FloatRows<'_>,
        [packed, output]: [Value; 2],
        rows: Size,
        (b, units): (Matrix, Units),
        bias: Option<Value>,
        (epilogue, blocks): (Epilogue, Option<&BlockEpilogue>),
    ) -> Result<(), CodegenError> {
        let (first_column, n) = self.columns_of(e, units);
        let (float, integer, join) = (e.b.create_block(), e.b.create_block(), e.b.create_block());
        e.b.ins().brif(nan, float, &[], integer, &[]);
        e.b.switch_to_block(float);
        {
            let source = float_rows(e)?;
            let unit = Size::Const(4);
            let row = |base: Value, bytes: i64| Matrix {
                base,
                row: Size::Const(bytes),
                col: unit,
            };
            // The part's columns of B, C and the bias.
            let shift = |e: &mut Emitter<'_, '_, '_>, base: Value, column: Size| {
                let offset = e.mul(Size::Dyn(first_column), column);
                e.add_size(base, offset)
            };
            let gemm = Gemm {
                float: Float::F32,
                m: rows,
                n,
                k: Size::Const(self.k),
                a: row(source, source_row),
                b: Matrix {
                    base: shift(e, b.base, b.col),
                    ..b
                },
                c: row(shift(e, output, unit), self.n * 4),
                bias: bias.map(|base| row(shift(e, base, unit), 0)),
                alpha: 1.0,
                beta: 1.0,
                epilogue,
                b_panels: None,
            };
            e.whole(|e| emit_gemm(e, &gemm))?;
            // Tiles that requantize have applied the steps themselves.
            if self.requantized.is_some() {
                apply_steps(e, blocks, output, first_column, rows, n)?;
            }
        }
        e.b.ins().jump(join, &[]);
        e.b.switch_to_block(integer);
        self.gemm(e, prepared, packed, rows, output, epilogue.residual, units)?;
        e.b.ins().jump(join, &[]);
        e.b.switch_to_block(join);
        match self.requantized {
            Some(_) => Ok(()),
            None => apply_steps(e, blocks, output, first_column, rows, n),
        }
    }
}

impl IntegerGemm {
    /// `output [m, n] = source [m, k] @ B + bias` through the epilogue, with
    /// rows `source_row` and `n * 4` bytes apart: per block of
    /// [`block_rows`] rows, which threads share out, packed into scratch
    /// and computed by [`IntegerGemm::block`].
    #[allow(clippy::too_many_arguments)] // The operands of one product.
    pub(super) fn rows_in_blocks(
        &self,
        e: &mut Emitter<'_, '_, '_>,
        prepared: Prepared,
        [source, output]: [Value; 2],
        [source_row, m]: [i64; 2],
        b: Matrix,
        bias: Option<Value>,
        epilogues: (Epilogue, Option<&BlockEpilogue>),
    ) -> Result<(), CodegenError> {
        let block_rows = block_rows(self.form.rows() as i64, m);
        let blocks = (m + block_rows - 1) / block_rows;
        let scratch = e.scratch(self.a_bytes(block_rows));
        // Threads share out the blocks, or with one block the columns.
        let (range, units) = match blocks {
            1 => (None, self.columns_of_this_call(e, m)),
            _ => {
                let cost = (block_rows * self.k * self.n) as u64;
                (e.parallel_range(blocks, cost), Units::All)
            }
        };
        let (first, count) = match range {
            Some((lo, hi)) => (lo, Size::Dyn(e.b.ins().isub(hi, lo))),
            None => (e.iconst(0), Size::Const(blocks)),
        };
        e.counted_loop(count, &[], |e, index, _| {
            let block = e.b.ins().iadd(first, index);
            let start = e.b.ins().imul_imm_s(block, block_rows);
            let total = e.iconst(m);
            let left = e.b.ins().isub(total, start);
            let whole = e.iconst(block_rows);
            let short = e.b.ins().icmp(IntCC::SignedLessThan, left, whole);
            let rows = e.b.ins().select(short, left, whole);
            let from = e.b.ins().imul_imm_s(start, source_row);
            let from = e.b.ins().iadd(source, from);
            let to = e.b.ins().imul_imm_s(start, self.n * 4);
            let to = e.b.ins().iadd(output, to);
            let targets = [from, scratch, to];
            self.block(
                e,
                prepared,
                targets,
                source_row,
                Size::Dyn(rows),
                (b, units),
                bias,
                epilogues,
            )?;
            Ok(Vec::new())
        })?;
        Ok(())
    }
}

/// Applies the epilogue `blocks` (if any) to the columns from `first_column`
/// on (`n` of them) of `rows` rows of the output at `output`.
fn apply_steps(
    e: &mut Emitter<'_, '_, '_>,
    blocks: Option<&BlockEpilogue>,
    output: Value,
    first_column: Value,
    rows: Size,
    n: Size,
) -> Result<(), CodegenError> {
    match blocks {
        Some(blocks) => {
            let offset = e.b.ins().imul_imm_s(first_column, 4);
            let part = e.b.ins().iadd(output, offset);
            blocks.apply(e, part, Some(first_column), rows, n)
        }
        None => Ok(()),
    }
}

/// The per-channel scales and the bounds of a convolution's epilogue that
/// is a requantization alone, `[mul(in0, in1); round(s0); clamp(s1)]` with
/// `in1` a constant of one f32 per output channel (or one for all) and both
/// bounds, on a result `output` with neither clamp nor residual: the
/// integer tiles compute it in the same order, with the instructions the
/// chain kernel would.
fn requantization(
    e: &Emitter<'_, '_, '_>,
    op: &Convolution,
    output: ValueId,
    out_channels: i64,
) -> Option<(Vec<f32>, [f32; 2])> {
    let epilogue = op.epilogue.as_ref()?;
    (op.clamp.is_none() && op.residual.is_none()).then_some(())?;
    let [scale, round, clamp] = &epilogue.steps[..] else {
        return None;
    };
    let [scales] = epilogue.operands[..] else {
        return None;
    };
    let multiply = Func::Binary {
        op: BinaryOp::Mul,
        alpha: None,
    };
    let Func::Clamp {
        min: Some(min),
        max: Some(max),
    } = clamp.func
    else {
        return None;
    };
    let in_order = scale.func == multiply
        && scale.inputs == [StepInput::Input(0), StepInput::Input(1)]
        && round.func == Func::Unary(UnaryOp::Round)
        && round.inputs == [StepInput::Step(0)]
        && clamp.inputs == [StepInput::Step(1)];
    in_order.then_some(())?;
    // One scale per channel, or one for all, as the chain kernel reads it.
    let (_, layouts) = block_layouts(e.graph(), epilogue, output)?;
    let elements = f32_elements(e.graph().value(scales).constant_bytes()?);
    let scales = match (&layouts[..], &elements[..]) {
        ([Layout::PerChannel { stride: 0 }], &[one]) => vec![one; out_channels as usize],
        ([Layout::PerChannel { stride: 1 }], _) if elements.len() as i64 == out_channels => {
            elements
        }
        _ => return None,
    };
    Some((scales, [min, max].map(|bound| bound.as_f64() as f32)))
}

/// The rows of a block of a product of `m` rows, with tiles of `tile`
/// rows: the fewest whole tiles that cut `m` into at most [`SHARED_BLOCKS`]
/// blocks, and at most [`BLOCK_ROWS`].
fn block_rows(tile: i64, m: i64) -> i64 {
    let rows = (m + SHARED_BLOCKS - 1) / SHARED_BLOCKS;
    let rows = (rows + tile - 1) / tile * tile;
    rows.clamp(tile, BLOCK_ROWS)
}

/// `addmm` through the integer GEMM when it has a plan: alpha and beta 1,
/// f32 throughout, a row-major `[m, k]` input and `[m, n]` output of fixed
/// sizes, constant weights `[k, n]` (any dim order) and a constant bias of
/// `n` elements broadcast along the rows. Returns whether it emitted the
/// kernel.
pub(super) fn addmm(
    e: &mut Emitter<'_, '_, '_>,
    op: &Addmm,
    output: ValueId,
) -> Result<bool, CodegenError> {
    let graph = e.graph();
    let [a_ty, b_ty, c_ty, bias_ty] = [op.a, op.b, output, op.bias].map(|v| &graph.value(v).ty);
    let fixed = |ty: &ptec_ir::TensorType| -> Option<Vec<i64>> {
        ty.shape
            .iter()
            .map(|dim| dim.fixed().map(|d| d as i64))
            .collect()
    };
    let row_major = |ty: &ptec_ir::TensorType| ty.dim_order == [0, 1];
    let ones = op.alpha.as_f64() == 1.0 && op.beta.as_f64() == 1.0;
    let f32s = [a_ty, b_ty, c_ty, bias_ty]
        .iter()
        .all(|ty| ty.dtype == DType::F32);
    let (Some(a_sizes), Some(b_sizes), Some(c_sizes), Some(bias_sizes)) =
        (fixed(a_ty), fixed(b_ty), fixed(c_ty), fixed(bias_ty))
    else {
        return Ok(false);
    };
    let (&[m, k], &[_, n]) = (a_sizes.as_slice(), c_sizes.as_slice()) else {
        return Ok(false);
    };
    let shapes = c_sizes == [m, n] && b_sizes == [k, n] && m * k * n > 0;
    let along_rows = bias_sizes == [n] || bias_sizes == [1, n];
    if !(ones && f32s && shapes && along_rows && row_major(a_ty) && row_major(c_ty)) {
        return Ok(false);
    }
    let strides = ptec_ir::strides_in_order(&b_sizes, &b_ty.dim_order, 1, |a, b| a * b);
    let weight_strides = [strides[0], strides[1]];
    let Some(weights) = graph.value(op.b).constant_bytes() else {
        return Ok(false);
    };
    let Some(plan) = IntegerGemm::new(
        e,
        op.a,
        false,
        [k, n],
        weights,
        weight_strides,
        Some(op.bias),
    ) else {
        return Ok(false);
    };
    e.allow_parallel();
    let epilogue = Epilogue::clamped(op.clamp);
    let prepared = plan.prepare(e, epilogue);
    let [a, b, c, bias] = [op.a, op.b, output, op.bias].map(|v| e.address(v));
    let b = Matrix {
        base: b,
        row: Size::Const(weight_strides[0] * 4),
        col: Size::Const(weight_strides[1] * 4),
    };
    plan.rows_in_blocks(
        e,
        prepared,
        [a, c],
        [k * 4, m],
        b,
        Some(bias),
        (epilogue, None),
    )?;
    Ok(true)
}

/// The f32 elements of constant bytes.
fn f32_elements(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_the_fewest_whole_tiles_making_at_most_eight() {
        for tile in [6, 9] {
            for m in 1..2000 {
                let rows = block_rows(tile, m);
                let blocks = (m + rows - 1) / rows;
                assert!(
                    rows % tile == 0 && rows <= BLOCK_ROWS,
                    "tile {tile}, m {m}: {rows}"
                );
                // At most SHARED_BLOCKS blocks below the largest, and a
                // tile fewer would make more.
                let fewer = rows - tile;
                if rows < BLOCK_ROWS {
                    assert!(
                        blocks <= SHARED_BLOCKS,
                        "tile {tile}, m {m}: {blocks} blocks"
                    );
                }
                if fewer > 0 {
                    assert!(
                        (m + fewer - 1) / fewer > SHARED_BLOCKS,
                        "tile {tile}, m {m}: {rows}"
                    );
                }
            }
        }
        // mobilenet_v2's 7x7 and 14x14 stages, with nine-row tiles.
        assert_eq!(block_rows(9, 49), 9);
        assert_eq!(block_rows(9, 196), 27);
        assert_eq!(block_rows(9, 3136), 72);
    }
}
