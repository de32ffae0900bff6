//! The Vulkan partitioner's 4-bit weight operators: `et_vk.linear_q4gsw`
//! and `linear_dq8ca_q4gsw` (weights quantized symmetrically per group of
//! input channels, from torchao's weight-only and 8da4w configurations),
//! `linear_qcs4w` (per output channel, from the Vulkan quantizer's 4-bit
//! weights), `embedding_q4gsw` (a 4-bit table per group of columns) and
//! `q4gsw_requant` (float weights onto the grid of fixed group scales).
//!
//! Each is a composition of table entries, as ExecuTorch's reference
//! implementations (`custom_ops_lib.py`) compute them, reading the weights
//! as the Vulkan preprocessing packs them (`backends/vulkan/patterns/`,
//! `_passes/fuse_quantized_ops.py`): two signed 4-bit values to a byte,
//! each plus 8, the even column in the low nibble for the group-wise forms
//! and in the high nibble for the per-channel one, rows padded with zeros
//! to an even (per-channel) or a multiple of 8 (group-wise) number of
//! columns. The group scales are stored transposed (`[groups, N]`) and,
//! like the bias, padded to a multiple of 4 along `N`; the compositions
//! read the unpadded part. The per-channel reference unpacks the nibbles
//! without taking the 8 back off, which its own packing adds; ptec follows
//! the packing, so that the program computes what its float model does.
//! `linear_dq8ca_q4gsw` rounds the input onto the int8 grid of the scales
//! and zero points computed for each of its rows (torchao's dynamic
//! activation quantization, which the device computes with), where the
//! reference leaves the input as it is.

use ptec_ir::{DType, Dim};

use super::{Translation, sizes_argument};
use crate::call::Argument;
use crate::error::ImportError;

/// Which nibble of a byte holds the even column.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Nibbles {
    LowFirst,
    HighFirst,
}

/// The range of the signed 4-bit values.
const INT4: (i64, i64) = (-8, 7);

/// The range of the dynamically quantized activations.
const INT8: (i64, i64) = (-128, 127);

impl Translation<'_, '_, '_> {
    /// The uint8 `packed` (`[R, P]`, named `name`) as `[R, 2P]` f32 values
    /// in `[-8, 7]`: each byte's nibbles less 8, the even column's first.
    fn unpacked(
        &mut self,
        packed: Argument,
        order: Nibbles,
        name: &str,
    ) -> Result<Argument, ImportError> {
        let sizes = self.typed(&packed, name, DType::U8)?;
        let &[rows, bytes] = sizes.as_slice() else {
            return Err(self.invalid(format!("{name} has sizes {sizes:?}, not [rows, bytes]")));
        };
        let high = self.applied(
            "aten::bitwise_right_shift.Tensor_Scalar_out",
            vec![packed.clone(), Argument::Int(4)],
            DType::U8,
            &sizes,
        )?;
        let low = self.applied(
            "aten::bitwise_and.Scalar_out",
            vec![packed, Argument::Int(0xF)],
            DType::U8,
            &sizes,
        )?;
        let pair = match order {
            Nibbles::LowFirst => [low, high],
            Nibbles::HighFirst => [high, low],
        };
        let pairs = super::tensor_list(self, pair)?;
        let stacked = self.applied(
            "aten::stack.out",
            vec![pairs, Argument::Int(-1)],
            DType::U8,
            &[rows, bytes, 2],
        )?;
        let codes = self.viewed(stacked, &[rows, bytes * 2])?;
        let codes = self.converted(codes, DType::F32)?;
        self.applied(
            "aten::sub.Scalar_out",
            vec![codes, Argument::Int(8), Argument::Int(1)],
            DType::F32,
            &[rows, bytes * 2],
        )
    }

    /// The call's `group_size` at `at`, which must split `columns` into
    /// `groups` groups.
    fn group_size(
        &self,
        args: &[Argument],
        at: usize,
        columns: u64,
        groups: u64,
    ) -> Result<u64, ImportError> {
        let group_size = self.int_arg(args, at, "group_size")?;
        match u64::try_from(group_size) {
            Ok(size) if size > 0 && size.checked_mul(groups) == Some(columns) => Ok(size),
            _ => Err(self.invalid(format!(
                "group_size is {group_size}, which does not split {columns} columns into the \
                 {groups} groups of the scales"
            ))),
        }
    }

    /// The f32 `values` (`[R, C]`) times one of the f32 `scales` (`[R, G]`)
    /// per group of `C / G` columns.
    fn scaled_groups(
        &mut self,
        values: Argument,
        scales: Argument,
        group_size: u64,
    ) -> Result<Argument, ImportError> {
        let (_, sizes) = self.declared(&values)?;
        let (_, scale_sizes) = self.declared(&scales)?;
        let (&[rows, columns], &[_, groups]) = (sizes.as_slice(), scale_sizes.as_slice()) else {
            return Err(self.invalid(format!(
                "values {sizes:?} scaled by groups {scale_sizes:?}: two dimensions each are needed"
            )));
        };
        let grouped = self.viewed(values, &[rows, groups, group_size])?;
        let scales = self.viewed(scales, &[rows, groups, 1])?;
        let scaled = self.binary("aten::mul.out", grouped, scales, DType::F32)?;
        self.viewed(scaled, &[rows, columns])
    }

    /// The `[N, K]` f32 weights of a group-wise 4-bit linear layer: the
    /// packed `weights` (`[N, >= K / 2]`), the transposed `weight_scales`
    /// (`[K / group_size, >= N]`) and the call's `group_size` at `at`.
    fn group_weights(
        &mut self,
        args: &[Argument],
        (weights, scales, at): (usize, usize, usize),
        outputs: u64,
        features: u64,
    ) -> Result<Argument, ImportError> {
        let packed = self.arg(args, weights)?.clone();
        let unpacked = self.unpacked(packed, Nibbles::LowFirst, "weights")?;
        let (_, sizes) = self.declared(&unpacked)?;
        if sizes[0] != outputs {
            return Err(self.invalid(format!(
                "weights has {} rows, but the output has {outputs} features",
                sizes[0]
            )));
        }
        let weight = self.unpadded(unpacked, features, "weights (unpacked)")?;
        let scales = self.arg(args, scales)?.clone();
        let scales = self.widened(scales, "weight_scales")?;
        let (_, scale_sizes) = self.declared(&scales)?;
        let &[groups, _] = scale_sizes.as_slice() else {
            return Err(self.invalid(format!(
                "weight_scales has sizes {scale_sizes:?}, not [groups, N]"
            )));
        };
        let group_size = self.group_size(args, at, features, groups)?;
        let scales = self.unpadded(scales, outputs, "weight_scales")?;
        let scales = self.applied(
            "aten::t_copy.out",
            vec![scales],
            DType::F32,
            &[outputs, groups],
        )?;
        self.scaled_groups(weight, scales, group_size)
    }

    /// The f32 or f16 input `x` (`[.., K]`) and the output's `[.., N]`
    /// sizes (their leading ones, which a run may compute, bounded alike).
    fn linear_sizes(&self, x: &Argument, out: &Argument) -> Result<(u64, u64), ImportError> {
        let bounds = |x: &Argument, name: &str| {
            let (dtype, sizes) = self.bounds(x)?;
            if !matches!(dtype, DType::F32 | DType::F16) {
                return Err(self.invalid(format!("{name} is {dtype}, not f32 or f16")));
            }
            Ok(sizes)
        };
        let (x_sizes, out_sizes) = (bounds(x, "the input")?, bounds(out, "the output")?);
        match (x_sizes.split_last(), out_sizes.split_last()) {
            (Some((&features, lead)), Some((&outputs, out_lead))) if lead == out_lead => {
                Ok((features, outputs))
            }
            _ => Err(self.invalid(format!(
                "a linear layer of an input of sizes {x_sizes:?} into an output of sizes \
                 {out_sizes:?}"
            ))),
        }
    }
}

/// `linear_q4gsw(self, weights, weight_scales, group_size, bias)`.
pub(super) fn linear_q4gsw(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?.clone(), t.arg(args, 5)?.clone());
    let (features, outputs) = t.linear_sizes(&x, &out)?;
    let weight = t.group_weights(args, (1, 2, 3), outputs, features)?;
    let bias = t.bias(t.arg(args, 4)?.clone(), outputs)?;
    linear_in_f32(t, [x, weight, bias, out])
}

/// `aten.linear` of f32 weights computed in f32 whatever the float type of
/// the input and the output (a `force_fp16` graph's f16): the input
/// widened, the result rounded once into the output.
fn linear_in_f32(
    t: &mut Translation<'_, '_, '_>,
    [x, weight, bias, out]: [Argument; 4],
) -> Result<(), ImportError> {
    let x = t.converted(x, DType::F32)?;
    let (out_type, out_sizes) = t.bounds(&out)?;
    if out_type == DType::F32 {
        return super::linear(t, &[x, weight, bias, out]);
    }
    let wide = t.temporary(DType::F32, &out_sizes);
    super::linear(t, &[x, weight, bias, wide.clone()])?;
    t.convert([wide, out])
}

/// `linear_dq8ca_q4gsw(input, input_scales, input_zp, weights,
/// weight_sums, weight_scales, group_size, bias)`: the input rounded onto
/// the int8 grid of its rows' scales and zero points, then
/// `linear_q4gsw`. `weight_sums` serves the device's integer
/// accumulation and is not read.
pub(super) fn linear_dq8ca_q4gsw(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?.clone(), t.arg(args, 8)?.clone());
    let (features, outputs) = t.linear_sizes(&x, &out)?;
    let (_, mut per_row) = t.shape(&x)?;
    // One scale and zero point per row (rows a run may count).
    if let Some(last) = per_row.last_mut() {
        *last = Dim::Fixed(1);
    }
    let scales = t.arg(args, 1)?.clone();
    let scales = t.parameter(scales, &per_row, "input_scales")?;
    let zero_points = t.arg(args, 2)?.clone();
    let (zp_type, _) = t.bounds(&zero_points)?;
    if zp_type.is_float() {
        return Err(t.invalid(format!("input_zp is {zp_type}, not an integer type")));
    }
    let zero_points = t.parameter(zero_points, &per_row, "input_zp")?;
    let x = t.converted(x, DType::F32)?;
    let q = t.quantized_values(x, scales.clone(), Some(zero_points.clone()), INT8)?;
    let x = t.dequantized_values(q, scales, Some(zero_points), DType::F32)?;
    let weight = t.group_weights(args, (3, 5, 6), outputs, features)?;
    let bias = t.bias(t.arg(args, 7)?.clone(), outputs)?;
    linear_in_f32(t, [x, weight, bias, out])
}

/// `linear_qcs4w(self, weight, scales)`: a linear layer without bias by
/// 4-bit weights (`[N, >= K / 2]`, the even column in the high nibble)
/// with one f32 scale per output channel.
pub(super) fn linear_qcs4w(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?.clone(), t.arg(args, 3)?.clone());
    let (features, outputs) = t.linear_sizes(&x, &out)?;
    let packed = t.arg(args, 1)?.clone();
    let unpacked = t.unpacked(packed, Nibbles::HighFirst, "weight")?;
    let (_, sizes) = t.declared(&unpacked)?;
    if sizes[0] != outputs {
        return Err(t.invalid(format!(
            "weight has {} rows, but the output has {outputs} features",
            sizes[0]
        )));
    }
    let weight = t.unpadded(unpacked, features, "weight (unpacked)")?;
    let scales = t.arg(args, 2)?.clone();
    let scales = t.widened(scales, "scales")?;
    let scales = t.unpadded(scales, outputs, "scales")?;
    let scales = t.parameter(scales, &[Dim::Fixed(outputs), Dim::Fixed(1)], "scales")?;
    let weight = t.binary("aten::mul.out", weight, scales, DType::F32)?;
    linear_in_f32(t, [x, weight, Argument::Null, out])
}

/// `embedding_q4gsw(weight, weight_scales, group_size, indices,
/// is_linear_weight)`: the rows `indices` of a 4-bit table (`[V, E / 2]`,
/// the even column in the low nibble when `is_linear_weight`, else in the
/// high one) with one f32 scale per group of `group_size` columns (`[V,
/// groups]`, or one `[V]` per row), gathered, then dequantized.
pub(super) fn embedding_q4gsw(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (table, scales, indices, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 3)?.clone(),
        t.arg(args, 5)?.clone(),
    );
    let order = match t.arg(args, 4)? {
        Argument::Bool(true) => Nibbles::LowFirst,
        Argument::Bool(false) => Nibbles::HighFirst,
        other => {
            return Err(t.invalid(format!(
                "is_linear_weight is a {}, not a bool",
                other.kind()
            )));
        }
    };
    let table_sizes = t.typed(&table, "weight", DType::U8)?;
    let scale_sizes = t.typed(&scales, "weight_scales", DType::F32)?;
    // int64 token ids, or int32 where the partitioner computes int64
    // tensors in 32 bits (as `index_select` takes either).
    let (index_type, index_sizes) = t.declared(&indices)?;
    if !matches!(index_type, DType::I64 | DType::I32) {
        return Err(t.invalid(format!("indices is {index_type}, not i64 or i32")));
    }
    let out_sizes = t.typed(&out, "the output", DType::F32)?;
    let &[rows, bytes] = table_sizes.as_slice() else {
        return Err(t.invalid(format!("weight has sizes {table_sizes:?}, not [V, E / 2]")));
    };
    let groups = match *scale_sizes.as_slice() {
        [n] if n == rows => 1,
        [n, groups] if n == rows => groups,
        _ => {
            return Err(t.invalid(format!(
                "weight_scales has sizes {scale_sizes:?}, not [{rows}, groups] or [{rows}]"
            )));
        }
    };
    let columns = bytes * 2;
    let group_size = t.group_size(args, 2, columns, groups)?;
    let count = index_sizes.iter().product::<u64>();
    let mut want = index_sizes.clone();
    want.push(columns);
    if out_sizes != want {
        return Err(t.invalid(format!(
            "the output has sizes {out_sizes:?}; indices {index_sizes:?} of rows of {columns} \
             columns need {want:?}"
        )));
    }
    let flat = t.viewed(indices, &[count])?;
    let gather = |t: &mut Translation<'_, '_, '_>, from: Argument, dtype, width| {
        t.applied(
            "aten::index_select.out",
            vec![from, Argument::Int(0), flat.clone()],
            dtype,
            &[count, width],
        )
    };
    let picked = gather(t, table, DType::U8, bytes)?;
    let scales = t.viewed(scales, &[rows, groups])?;
    let picked_scales = gather(t, scales, DType::F32, groups)?;
    let values = t.unpacked(picked, order, "weight")?;
    let rows = t.scaled_groups(values, picked_scales, group_size)?;
    t.table(
        "aten::view_copy.out",
        &[rows, sizes_argument(&out_sizes), out],
    )
}

/// `q4gsw_requant(latent, scales, group_size)`: the f32 weights `latent`
/// (`[N, K]`) rounded onto the 4-bit grid of the transposed group scales
/// (`[K / group_size, >= N]`; a zero scale gives code 0), packed two to a
/// byte (the even column in the low nibble, each plus 8) into `[N, (K +
/// 1) / 2]`.
pub(super) fn q4gsw_requant(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (latent, scales, out) = (
        t.arg(args, 0)?.clone(),
        t.arg(args, 1)?.clone(),
        t.arg(args, 3)?.clone(),
    );
    let sizes = t.typed(&latent, "latent", DType::F32)?;
    let scale_sizes = t.typed(&scales, "scales", DType::F32)?;
    let out_sizes = t.typed(&out, "the output", DType::U8)?;
    let (&[rows, columns], &[groups, _]) = (sizes.as_slice(), scale_sizes.as_slice()) else {
        return Err(t.invalid(format!(
            "latent has sizes {sizes:?} and scales {scale_sizes:?}, not [N, K] and [groups, N]"
        )));
    };
    let bytes = columns.div_ceil(2);
    if out_sizes != [rows, bytes] {
        return Err(t.invalid(format!(
            "the output has sizes {out_sizes:?}, not [{rows}, {bytes}]"
        )));
    }
    let group_size = t.group_size(args, 2, columns, groups)?;
    let scales = t.unpadded(scales, rows, "scales")?;
    let scales = t.applied(
        "aten::t_copy.out",
        vec![scales],
        DType::F32,
        &[rows, groups],
    )?;
    let scales = t.viewed(scales, &[rows, groups, 1])?;
    let zero = t.applied(
        "aten::eq.Scalar_out",
        vec![scales.clone(), Argument::Int(0)],
        DType::Bool,
        &[rows, groups, 1],
    )?;
    // Zero scales divide by 1, and their codes are 0.
    let safe = t.applied(
        "aten::masked_fill.Scalar_out",
        vec![scales, zero.clone(), Argument::Int(1)],
        DType::F32,
        &[rows, groups, 1],
    )?;
    let grouped = t.viewed(latent, &[rows, groups, group_size])?;
    let ratio = t.binary("aten::div.out", grouped, safe, DType::F32)?;
    let rounded = t.applied(
        "aten::round.out",
        vec![ratio],
        DType::F32,
        &[rows, groups, group_size],
    )?;
    let kept = t.applied(
        "aten::masked_fill.Scalar_out",
        vec![rounded, zero, Argument::Int(0)],
        DType::F32,
        &[rows, groups, group_size],
    )?;
    let (low, high) = INT4;
    let clamped = t.applied(
        "aten::clamp.out",
        vec![kept, Argument::Int(low), Argument::Int(high)],
        DType::F32,
        &[rows, groups, group_size],
    )?;
    let shifted = t.applied(
        "aten::add.Scalar_out",
        vec![clamped, Argument::Int(8), Argument::Int(1)],
        DType::F32,
        &[rows, groups, group_size],
    )?;
    let codes = t.converted(shifted, DType::U8)?;
    let codes = t.viewed(codes, &[rows, columns])?;
    let codes = if columns % 2 == 0 {
        codes
    } else {
        t.applied(
            "aten::constant_pad_nd.out",
            vec![codes, sizes_argument(&[0, 1]), Argument::Int(0)],
            DType::U8,
            &[rows, columns + 1],
        )?
    };
    let pairs = t.viewed(codes, &[rows, bytes, 2])?;
    let [even, odd] = [0, 1].map(|index| {
        t.applied(
            "aten::select_copy.int_out",
            vec![pairs.clone(), Argument::Int(-1), Argument::Int(index)],
            DType::U8,
            &[rows, bytes],
        )
    });
    let high = t.applied(
        "aten::bitwise_left_shift.Tensor_Scalar_out",
        vec![odd?, Argument::Int(4)],
        DType::U8,
        &[rows, bytes],
    )?;
    t.table("aten::bitwise_or.Tensor_out", &[even?, high, out])
}

/// `linear_q4gsw_backward(d_out, weights, weight_scales, group_size)`: the
/// input's gradient of `linear_q4gsw` without bias, `d_out @ W` for the
/// dequantized weights `W` (`[N, K]`, `K` every unpacked column, as the
/// reference reads them).
pub(super) fn linear_q4gsw_backward(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (d_out, out) = (t.arg(args, 0)?.clone(), t.arg(args, 4)?.clone());
    let sizes = t.typed(&d_out, "d_out", DType::F32)?;
    let out_sizes = t.typed(&out, "the output", DType::F32)?;
    let weight_sizes = t.typed(t.arg(args, 1)?, "weights", DType::U8)?;
    let (Some((&outputs, lead)), &[_, bytes]) = (sizes.split_last(), weight_sizes.as_slice())
    else {
        return Err(t.invalid(format!(
            "d_out has sizes {sizes:?} and weights {weight_sizes:?}, not [.., N] and [N, K / 2]"
        )));
    };
    let features = bytes * 2;
    let mut want = lead.to_vec();
    want.push(features);
    if out_sizes != want {
        return Err(t.invalid(format!("the output has sizes {out_sizes:?}, not {want:?}")));
    }
    let weight = t.group_weights(args, (1, 2, 3), outputs, features)?;
    let rows = lead.iter().product::<u64>();
    let d_out = t.viewed(d_out, &[rows, outputs])?;
    let product = t.applied(
        "aten::mm.out",
        vec![d_out, weight],
        DType::F32,
        &[rows, features],
    )?;
    t.table(
        "aten::view_copy.out",
        &[product, sizes_argument(&out_sizes), out],
    )
}
