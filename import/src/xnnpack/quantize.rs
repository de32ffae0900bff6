//! What the elements of an XNNPACK value stand for: f32 numbers, or
//! integers with a scale and a zero point (one for the tensor; for
//! constants also one scale per channel or per block of a row; for
//! dynamically quantized activations one per row, chosen at run time).
//!
//! ptec computes quantized graphs in f32. Quantized constants become f32
//! constants here ([`Numbers::constant`]): real numbers, or the integers
//! themselves for products XNNPACK accumulates in integers
//! (`Translation::product`); a value XNNPACK holds as
//! integers is rounded onto its grid after the node that computes it
//! (`Translation::fake_quantize`), which reproduces XNNPACK's
//! requantization: the real result divided by the scale, rounded to nearest
//! even, offset by the zero point and clamped to the integer type (narrowed
//! by the node's output range, [`Quantization::bounds`]). Dynamically
//! quantized rows get their grid at run time (`Translation::quantize_rows`).

use std::borrow::Cow;

use ptec_frontend::delegate::xnnpack::{XnnDatatype, XnnQuantization, XnnScales, XnnTensorValue};

use ptec_ir::ops::linalg::ClampRange;
use ptec_ir::{DType, Real};

/// The integer type of quantized elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Integer {
    /// 4-bit weights: nibbles standing for `nibble - 8`, two a byte (the
    /// low one first), each row of the last dimension padded to whole
    /// bytes.
    I4,
    I8,
    U8,
    I32,
}

impl Integer {
    /// The element type a program's tensor of these integers has (int8 or
    /// uint8 activations passed between delegates); `None` for those a
    /// program does not hold.
    pub(super) fn dtype(self) -> Option<DType> {
        match self {
            Integer::I8 => Some(DType::I8),
            Integer::U8 => Some(DType::U8),
            Integer::I4 | Integer::I32 => None,
        }
    }

    fn range(self) -> (i64, i64) {
        match self {
            Integer::I4 => (-8, 7),
            Integer::I8 => (i8::MIN.into(), i8::MAX.into()),
            Integer::U8 => (u8::MIN.into(), u8::MAX.into()),
            Integer::I32 => (i32::MIN.into(), i32::MAX.into()),
        }
    }

    /// The elements of a tensor of these dims stored in `bytes`
    /// (little-endian); `None` when the bytes are not that many.
    fn decode(self, bytes: &[u8], dims: &[u64]) -> Option<Vec<i64>> {
        let count = dims
            .iter()
            .try_fold(1u64, |count, &dim| count.checked_mul(dim))?;
        if self == Integer::I4 {
            let row = dims.last().copied().unwrap_or(1);
            let rows = count.checked_div(row).unwrap_or(0);
            let row_bytes = row.div_ceil(2);
            if rows.checked_mul(row_bytes)? != bytes.len() as u64 {
                return None;
            }
            let nibble = |index: u64| {
                let byte = bytes[((index / row) * row_bytes + (index % row) / 2) as usize];
                let nibble = if (index % row).is_multiple_of(2) {
                    byte & 0xf
                } else {
                    byte >> 4
                };
                i64::from(nibble) - 8
            };
            return Some((0..count).map(nibble).collect());
        }
        let size = if self == Integer::I32 { 4 } else { 1 };
        if count.checked_mul(size)? != bytes.len() as u64 {
            return None;
        }
        Some(
            bytes
                .chunks_exact(size as usize)
                .map(|element| match self {
                    Integer::I8 => i64::from(element[0] as i8),
                    Integer::U8 => i64::from(element[0]),
                    _ => i64::from(i32::from_le_bytes([
                        element[0], element[1], element[2], element[3],
                    ])),
                })
                .collect(),
        )
    }
}

/// What a quantized constant's f32 elements are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Elements {
    /// The real numbers the integers stand for.
    Real,
    /// The integers less the zero point, for products XNNPACK accumulates
    /// in integers (exact in f32 below 2^24).
    Integers,
}

/// Integers `q` of one type standing for `(q - zero_point) * scale`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct Quantization {
    pub(super) scale: f32,
    pub(super) zero_point: i32,
    pub(super) integer: Integer,
}

impl Quantization {
    /// The integers a node's result is clamped to, less the zero point: the
    /// type's range, narrowed by the node's output range quantized the way
    /// XNNPACK quantizes it (`bound / scale + zero_point` in f32, within
    /// the type, rounded to nearest even).
    pub(super) fn bounds(self, range: ClampRange) -> (i64, i64) {
        let (min, max) = self.integer.range();
        let quantize = |bound: Real| {
            let shifted = bound.0 as f32 / self.scale + self.zero_point as f32;
            shifted.clamp(min as f32, max as f32).round_ties_even() as i64
        };
        let zero_point = i64::from(self.zero_point);
        let low = range.min.map_or(min, quantize).max(min);
        let high = range.max.map_or(max, quantize).min(max);
        (low - zero_point, high - zero_point)
    }
}

/// What a value's elements stand for.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Numbers {
    /// f32 numbers.
    Float,
    /// f16 numbers, which ptec computes as f32: constants are widened at
    /// import, call arguments and outputs converted.
    Half,
    /// bf16 numbers (`--xnnpack-enable-bf16`), computed as f32 like f16 ones.
    BFloat16,
    /// Integers of one quantization: qint8 and quint8 activations and
    /// constants, qint32 biases.
    PerTensor(Quantization),
    /// Integer constants `q` standing for `q * scales[c]`, `c` the index
    /// along `channel_dim` (zero point 0): qcint8 and qcint4 filters,
    /// qcint32 biases.
    PerChannel {
        integer: Integer,
        scales: Vec<f32>,
        channel_dim: usize,
    },
    /// 4-bit constants of rank 2 (qbint4) with a scale per block of
    /// `block_size` elements of each row, row-major.
    Blockwise { scales: Vec<f32>, block_size: u64 },
    /// Activations quantized at run time to int8 with a scale and zero
    /// point per row of the last `nonbatch_dims` dimensions (qdint8).
    Dynamic { nonbatch_dims: usize },
    /// Elements ptec does not compute with, described for the error
    /// (tensors marked for the legacy dynamic quantization, other
    /// quantizations, other element types).
    Unsupported(String),
}

impl Numbers {
    /// Classifies a value of the graph. An error says how the value
    /// contradicts itself.
    pub(super) fn of(tensor: &XnnTensorValue<'_>) -> Result<Numbers, String> {
        use XnnDatatype as D;
        let name = tensor.datatype.name();
        if tensor.dq_datatype != D::Invalid {
            return Ok(Numbers::Unsupported(format!(
                "(dynamically quantized to {})",
                tensor.dq_datatype.name()
            )));
        }
        let Some(quantization) = &tensor.quantization else {
            return Ok(match tensor.datatype {
                D::Fp32 => Numbers::Float,
                D::Fp16 => Numbers::Half,
                D::Bf16 => Numbers::BFloat16,
                _ => Numbers::Unsupported(format!("(of element type {name})")),
            });
        };
        let dims: Vec<u64> = tensor.dims.iter().map(|&dim| u64::from(dim)).collect();
        let unsupported = || Ok(unsupported_quantization(name, quantization));
        let integer = match tensor.datatype {
            D::Qint8 | D::Qcint8 | D::Qdint8 => Integer::I8,
            D::Quint8 => Integer::U8,
            D::Qint32 | D::Qcint32 => Integer::I32,
            D::Qcint4 | D::Qbint4 => Integer::I4,
            _ => return unsupported(),
        };
        match (tensor.datatype, quantization) {
            (
                D::Qint8 | D::Quint8 | D::Qint32,
                &XnnQuantization::PerTensor { scale, zero_point },
            ) => per_tensor(integer, scale, zero_point),
            (
                D::Qcint8 | D::Qcint32 | D::Qcint4,
                XnnQuantization::PerChannel {
                    scales,
                    channel_dim,
                },
            ) => per_channel_scales(&dims, scales, *channel_dim).map(|(scales, channel_dim)| {
                Numbers::PerChannel {
                    integer,
                    scales,
                    channel_dim,
                }
            }),
            (
                D::Qbint4,
                XnnQuantization::PerChannelGroup {
                    scales,
                    channel_dim,
                    group_size,
                },
            ) => blockwise(&dims, scales, *channel_dim, *group_size),
            (D::Qdint8, &XnnQuantization::PerTokenDynamic { num_nonbatch_dims }) => {
                usize::try_from(num_nonbatch_dims)
                    .ok()
                    .filter(|&count| (1..=dims.len()).contains(&count))
                    .map(|nonbatch_dims| Numbers::Dynamic { nonbatch_dims })
                    .ok_or_else(|| {
                        format!(
                            "{num_nonbatch_dims} non-batch dimensions of a rank-{} tensor",
                            dims.len()
                        )
                    })
            }
            _ => unsupported(),
        }
    }

    /// The f32 bytes of a constant of these dims stored in `bytes`
    /// (borrowed when they are f32 already), as real numbers or as the
    /// integers less the zero point; an error says why the bytes cannot be
    /// that constant.
    pub(super) fn constant<'a>(
        &self,
        bytes: &'a [u8],
        dims: &[u64],
        elements: Elements,
    ) -> Result<Cow<'a, [u8]>, String> {
        let wrong_size = || format!("{} bytes for a constant of dims {dims:?}", bytes.len());
        let (integer, zero_point, scales): (Integer, i64, &[f32]) = match self {
            Numbers::Float | Numbers::Half | Numbers::BFloat16 => {
                let element: u64 = if *self == Numbers::Float { 4 } else { 2 };
                let size = dims
                    .iter()
                    .try_fold(element, |size, &dim| size.checked_mul(dim));
                if size != Some(bytes.len() as u64) {
                    return Err(wrong_size());
                }
                let widen = |to_f32: fn([u8; 2]) -> f32| {
                    let widened = bytes
                        .chunks_exact(2)
                        .flat_map(|chunk| to_f32([chunk[0], chunk[1]]).to_le_bytes());
                    Cow::Owned(widened.collect())
                };
                return Ok(match self {
                    Numbers::Half => widen(|bytes| half::f16::from_le_bytes(bytes).to_f32()),
                    Numbers::BFloat16 => widen(|bytes| half::bf16::from_le_bytes(bytes).to_f32()),
                    _ => Cow::Borrowed(bytes),
                });
            }
            Numbers::PerTensor(quantization) => (
                quantization.integer,
                i64::from(quantization.zero_point),
                std::slice::from_ref(&quantization.scale),
            ),
            Numbers::PerChannel {
                integer, scales, ..
            } => (*integer, 0, scales),
            Numbers::Blockwise { scales, .. } => (Integer::I4, 0, scales),
            Numbers::Dynamic { .. } | Numbers::Unsupported(_) => {
                return Err("a constant of run-time or unknown quantization".to_string());
            }
        };
        let integers = integer.decode(bytes, dims).ok_or_else(wrong_size)?;
        let scale_of = |index: u64| -> f32 {
            match self {
                _ if elements == Elements::Integers => 1.0,
                Numbers::PerChannel {
                    scales,
                    channel_dim,
                    ..
                } => {
                    let inner: u64 = dims[channel_dim + 1..].iter().product();
                    scales[((index / inner) % scales.len() as u64) as usize]
                }
                Numbers::Blockwise { block_size, .. } => {
                    let row = dims[1];
                    let blocks = row / block_size;
                    scales[((index / row) * blocks + (index % row) / block_size) as usize]
                }
                _ => scales[0],
            }
        };
        Ok(Cow::Owned(
            integers
                .into_iter()
                .zip(0u64..)
                .flat_map(|(q, index)| {
                    let real = (q - zero_point) as f64 * f64::from(scale_of(index));
                    (real as f32).to_le_bytes()
                })
                .collect(),
        ))
    }
}

fn unsupported_quantization(name: &str, quantization: &XnnQuantization) -> Numbers {
    Numbers::Unsupported(format!("(quantized, {name} with {})", quantization.name()))
}

/// A scale XNNPACK accepts: positive and normal.
fn check_scale(scale: f32) -> Result<f32, String> {
    if scale > 0.0 && scale.is_normal() {
        Ok(scale)
    } else {
        Err(format!("a quantization scale of {scale}"))
    }
}

/// `count` scales XNNPACK accepts; `of` says what they are for.
fn check_scales(
    scales: &[f32],
    count: usize,
    of: impl FnOnce() -> String,
) -> Result<Vec<f32>, String> {
    if scales.len() != count {
        return Err(format!("{} scales for {}", scales.len(), of()));
    }
    scales.iter().map(|&scale| check_scale(scale)).collect()
}

fn per_tensor(integer: Integer, scale: f32, zero_point: i32) -> Result<Numbers, String> {
    let (min, max) = integer.range();
    if !(min..=max).contains(&i64::from(zero_point)) {
        return Err(format!(
            "a zero point of {zero_point} for {integer:?} elements"
        ));
    }
    Ok(Numbers::PerTensor(Quantization {
        scale: check_scale(scale)?,
        zero_point,
        integer,
    }))
}

/// The scales of a per-channel quantization, one per index along the
/// channel dimension; and that dimension.
fn per_channel_scales(
    dims: &[u64],
    scales: &XnnScales,
    channel_dim: i32,
) -> Result<(Vec<f32>, usize), String> {
    let channel_dim = usize::try_from(channel_dim)
        .ok()
        .filter(|&dim| dim < dims.len())
        .ok_or_else(|| {
            format!(
                "channel dimension {channel_dim} of a rank-{} tensor",
                dims.len()
            )
        })?;
    let channels = dims[channel_dim] as usize;
    let scales = check_scales(scales.values(), channels, || {
        format!("{channels} channels along dimension {channel_dim}")
    })?;
    Ok((scales, channel_dim))
}

/// The scales of a blockwise quantization, which the exporter puts in a
/// constant buffer as bf16: one per block of each row of a rank-2 tensor.
fn blockwise(
    dims: &[u64],
    scales: &XnnScales,
    channel_dim: i32,
    group_size: i32,
) -> Result<Numbers, String> {
    let [rows, row] = dims[..] else {
        return Err(format!("blockwise scales for dims {dims:?}"));
    };
    let block_size = u64::try_from(group_size)
        .ok()
        .filter(|&size| size > 0 && row % size == 0 && channel_dim == 0)
        .ok_or_else(|| {
            format!("blocks of {group_size} along dimension {channel_dim} of dims {dims:?}")
        })?;
    let XnnScales::Buffer(scales) = scales else {
        return Ok(Numbers::Unsupported(
            "(quantized, xnn_datatype_qbint4 with f32 scales in the graph)".to_string(),
        ));
    };
    let count = rows
        .checked_mul(row / block_size)
        .and_then(|count| usize::try_from(count).ok())
        .ok_or_else(|| format!("blockwise scales for dims {dims:?}"))?;
    let scales = check_scales(scales, count, || {
        format!("{count} blocks of {block_size} of dims {dims:?}")
    })?;
    Ok(Numbers::Blockwise { scales, block_size })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int8(scale: f32, zero_point: i32) -> Quantization {
        Quantization {
            scale,
            zero_point,
            integer: Integer::I8,
        }
    }

    #[test]
    fn bounds_quantize_the_output_range() {
        let q = int8(0.05, -3);
        // No range: the type's, less the zero point.
        assert_eq!(q.bounds(ClampRange::default()), (-125, 130));
        // ReLU: 0 is the zero point; ReLU6: 6 / 0.05 = 120.
        let relu6 = ClampRange {
            min: Some(Real(0.0)),
            max: Some(Real(6.0)),
        };
        assert_eq!(q.bounds(relu6), (0, 120));
        // Bounds beyond the type stay within it; ties round to even.
        let wide = ClampRange {
            min: Some(Real(-100.0)),
            max: Some(Real(0.125)),
        };
        assert_eq!(int8(0.25, 0).bounds(wide), (-128, 0));
        let uint8 = Quantization {
            scale: 1.0,
            zero_point: 10,
            integer: Integer::U8,
        };
        assert_eq!(uint8.bounds(ClampRange::default()), (-10, 245));
    }

    fn floats(bytes: Result<Cow<'_, [u8]>, String>) -> Vec<f32> {
        bytes
            .expect("the bytes are the constant")
            .chunks_exact(4)
            .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
            .collect()
    }

    #[test]
    fn constants_dequantize_per_tensor_and_per_channel() {
        let per_tensor = Numbers::PerTensor(int8(0.5, 2));
        let bytes = [0u8, 2, 0xff, 0x80];
        assert_eq!(
            floats(per_tensor.constant(&bytes, &[4], Elements::Real)),
            [-1.0, 0.0, -1.5, -65.0]
        );
        assert!(per_tensor.constant(&bytes, &[5], Elements::Real).is_err());
        assert_eq!(
            floats(per_tensor.constant(&bytes, &[4], Elements::Integers)),
            [-2.0, 0.0, -3.0, -130.0]
        );
        // [2, 3] with a scale per row (channel dimension 0) ...
        let rows = Numbers::PerChannel {
            integer: Integer::I8,
            scales: vec![1.0, 0.25],
            channel_dim: 0,
        };
        let bytes = [1u8, 2, 3, 4, 0xfc, 8];
        assert_eq!(
            floats(rows.constant(&bytes, &[2, 3], Elements::Real)),
            [1.0, 2.0, 3.0, 1.0, -1.0, 2.0]
        );
        // ... or per column (dimension 1), int32 elements.
        let columns = Numbers::PerChannel {
            integer: Integer::I32,
            scales: vec![1.0, 0.5, 2.0],
            channel_dim: 1,
        };
        let bytes: Vec<u8> = [1i32, 2, 3, -4, 5, 6]
            .iter()
            .flat_map(|q| q.to_le_bytes())
            .collect();
        assert_eq!(
            floats(columns.constant(&bytes, &[2, 3], Elements::Real)),
            [1.0, 1.0, 6.0, -4.0, 2.5, 12.0]
        );
        // f32 constants stay the file's bytes.
        assert!(matches!(
            Numbers::Float.constant(&bytes, &[2, 3], Elements::Real),
            Ok(Cow::Borrowed(_))
        ));
        assert!(
            Numbers::Float
                .constant(&bytes, &[7], Elements::Real)
                .is_err()
        );
        // f16 constants widen exactly (1, -2.5, the smallest subnormal,
        // infinity), two bytes an element.
        let bytes: Vec<u8> = [0x3c00u16, 0xc100, 0x0001, 0x7c00]
            .iter()
            .flat_map(|bits| bits.to_le_bytes())
            .collect();
        assert_eq!(
            floats(Numbers::Half.constant(&bytes, &[2, 2], Elements::Real)),
            [1.0, -2.5, 2f32.powi(-24), f32::INFINITY]
        );
        assert!(
            Numbers::Half
                .constant(&bytes, &[4, 2], Elements::Real)
                .is_err()
        );
        // bf16 constants are an f32's high half (1, -2.5, the smallest
        // subnormal, infinity).
        let bytes: Vec<u8> = [0x3f80u16, 0xc020, 0x0001, 0x7f80]
            .iter()
            .flat_map(|bits| bits.to_le_bytes())
            .collect();
        assert_eq!(
            floats(Numbers::BFloat16.constant(&bytes, &[4], Elements::Real)),
            [1.0, -2.5, f32::from_bits(0x0001_0000), f32::INFINITY]
        );
    }

    #[test]
    fn four_bit_constants_unpack_nibbles_low_first() {
        // Rows of 3 nibbles take 2 bytes each; a nibble n stands for n - 8.
        let bytes = [0x9f, 0x08, 0x70, 0x0c];
        let per_row = Numbers::PerChannel {
            integer: Integer::I4,
            scales: vec![1.0, 0.5],
            channel_dim: 0,
        };
        assert_eq!(
            floats(per_row.constant(&bytes, &[2, 3], Elements::Real)),
            [7.0, 1.0, 0.0, -4.0, -0.5, 2.0]
        );
        // Blocks of 2 along rows of 4, a scale per block.
        let blocks = Numbers::Blockwise {
            scales: vec![1.0, 2.0, 0.5, 4.0],
            block_size: 2,
        };
        let bytes = [0x9a, 0x87, 0x80, 0xf8];
        assert_eq!(
            floats(blocks.constant(&bytes, &[2, 4], Elements::Real)),
            [2.0, 1.0, -2.0, 0.0, -4.0, 0.0, 0.0, 28.0]
        );
        assert!(
            blocks
                .constant(&bytes[..3], &[2, 4], Elements::Real)
                .is_err()
        );
    }
}
