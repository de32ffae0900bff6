//! What the elements of an XNNPACK value stand for: f32 numbers, or
//! integers with a scale and a zero point (one for the tensor, or one scale
//! per channel for constants).
//!
//! ptec computes quantized graphs in f32. Quantized constants become f32
//! constants here ([`Numbers::dequantize`]); a value XNNPACK holds as
//! integers is rounded onto its grid after the node that computes it
//! (`Translation::fake_quantize`), which reproduces XNNPACK's
//! requantization: the real result divided by the scale, rounded to nearest
//! even, offset by the zero point and clamped to the integer type (narrowed
//! by the node's output range, [`Quantization::bounds`]).

use ptec_frontend::delegate::xnnpack_schema as xnn;

use crate::op::ClampRange;

/// The integer type of quantized elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Integer {
    I8,
    U8,
    I32,
}

impl Integer {
    pub(super) fn size(self) -> usize {
        match self {
            Integer::I8 | Integer::U8 => 1,
            Integer::I32 => 4,
        }
    }

    fn range(self) -> (i64, i64) {
        match self {
            Integer::I8 => (i8::MIN.into(), i8::MAX.into()),
            Integer::U8 => (u8::MIN.into(), u8::MAX.into()),
            Integer::I32 => (i32::MIN.into(), i32::MAX.into()),
        }
    }

    /// The element in `bytes`, which are `size()` long (little-endian).
    fn read(self, bytes: &[u8]) -> i64 {
        match self {
            Integer::I8 => i64::from(bytes[0] as i8),
            Integer::U8 => i64::from(bytes[0]),
            Integer::I32 => i64::from(i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])),
        }
    }
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
        let quantize = |bound: f64| {
            let shifted = bound as f32 / self.scale + self.zero_point as f32;
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
    /// Integers of one quantization: qint8 and quint8 activations and
    /// constants, qint32 biases.
    PerTensor(Quantization),
    /// Integer constants `q` standing for `q * scales[c]`, `c` the index
    /// along `channel_dim` (zero point 0): qcint8 filters, qcint32 biases.
    PerChannel {
        integer: Integer,
        scales: Vec<f32>,
        channel_dim: usize,
    },
    /// Elements ptec does not compute with, described for the error
    /// (fp16, 4-bit and dynamically quantized values).
    Unsupported(String),
}

impl Numbers {
    /// Classifies a value of the graph; `constants` holds the per-channel
    /// scales kept in constant buffers. An error says how the value
    /// contradicts itself.
    pub(super) fn of(
        tensor: &xnn::XNNTensorValue<'_>,
        quantized: Option<&xnn::XNNQuantizedTensorValue<'_>>,
        constants: &[Option<&[u8]>],
    ) -> Result<Numbers, String> {
        use xnn::XNNDatatype as D;
        let datatype = tensor.datatype();
        let name = datatype.variant_name().unwrap_or("unknown");
        if tensor.dq_datatype() != D::xnn_datatype_invalid {
            let target = tensor.dq_datatype().variant_name().unwrap_or("unknown");
            return Ok(Numbers::Unsupported(format!(
                "(dynamically quantized to {target})"
            )));
        }
        let Some(quantized) = quantized else {
            return Ok(if datatype == D::xnn_datatype_fp32 {
                Numbers::Float
            } else {
                Numbers::Unsupported(format!("(of element type {name})"))
            });
        };
        let params = quantized.quant_params_type();
        let integer = match datatype {
            D::xnn_datatype_qint8 | D::xnn_datatype_qcint8 => Integer::I8,
            D::xnn_datatype_quint8 => Integer::U8,
            D::xnn_datatype_qint32 | D::xnn_datatype_qcint32 => Integer::I32,
            _ => return Ok(unsupported_quantization(name, params)),
        };
        let per_channel = matches!(datatype, D::xnn_datatype_qcint8 | D::xnn_datatype_qcint32);
        if let (false, Some(params)) = (per_channel, quantized.quant_params_as_per_tensor_quant()) {
            return per_tensor(integer, params.scale(), params.zero_point());
        }
        match (per_channel, quantized.quant_params_as_per_channel_quant()) {
            (true, Some(params)) => {
                per_channel_scales(tensor, &params, constants).map(|(scales, channel_dim)| {
                    Numbers::PerChannel {
                        integer,
                        scales,
                        channel_dim,
                    }
                })
            }
            _ => Ok(unsupported_quantization(name, params)),
        }
    }

    /// The bytes of one element in the graph's buffers.
    pub(super) fn element_size(&self) -> usize {
        match self {
            Numbers::PerTensor(quantization) => quantization.integer.size(),
            Numbers::PerChannel { integer, .. } => integer.size(),
            Numbers::Float | Numbers::Unsupported(_) => 4,
        }
    }

    /// The f32 bytes of a quantized constant of these dims (little-endian
    /// elements of `element_size()` bytes); `None` for f32 constants.
    pub(super) fn dequantize(&self, bytes: &[u8], dims: &[u64]) -> Option<Vec<u8>> {
        let (integer, zero_point, scales, inner) = match self {
            Numbers::PerTensor(quantization) => (
                quantization.integer,
                i64::from(quantization.zero_point),
                std::slice::from_ref(&quantization.scale),
                1,
            ),
            Numbers::PerChannel {
                integer,
                scales,
                channel_dim,
            } => {
                let inner: u64 = dims[channel_dim + 1..].iter().product();
                (*integer, 0, &scales[..], inner as usize)
            }
            Numbers::Float | Numbers::Unsupported(_) => return None,
        };
        let size = integer.size();
        Some(
            bytes
                .chunks_exact(size)
                .enumerate()
                .flat_map(|(index, element)| {
                    let scale = scales[(index / inner) % scales.len()];
                    let real = (integer.read(element) - zero_point) as f64 * f64::from(scale);
                    (real as f32).to_le_bytes()
                })
                .collect(),
        )
    }
}

fn unsupported_quantization(name: &str, params: xnn::XNNQuantParams) -> Numbers {
    let params = params.variant_name().unwrap_or("no parameters");
    Numbers::Unsupported(format!("(quantized, {name} with {params})"))
}

/// A scale XNNPACK accepts: positive and normal.
fn check_scale(scale: f32) -> Result<f32, String> {
    if scale > 0.0 && scale.is_normal() {
        Ok(scale)
    } else {
        Err(format!("a quantization scale of {scale}"))
    }
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

/// The scales of a per-channel quantization, inline or in a constant
/// buffer, one per index along the channel dimension; and that dimension.
fn per_channel_scales(
    tensor: &xnn::XNNTensorValue<'_>,
    params: &xnn::PerChannelQuant<'_>,
    constants: &[Option<&[u8]>],
) -> Result<(Vec<f32>, usize), String> {
    let dims: Vec<u32> = tensor.dims().into_iter().flatten().collect();
    let channel_dim = usize::try_from(params.channel_dim())
        .ok()
        .filter(|&dim| dim < dims.len())
        .ok_or_else(|| {
            format!(
                "channel dimension {} of a rank-{} tensor",
                params.channel_dim(),
                dims.len()
            )
        })?;
    let channels = dims[channel_dim] as usize;
    let scales: Vec<f32> = match params.scale_buffer_idx() {
        0 => params.scale().into_iter().flatten().collect(),
        index => {
            let bytes = constants
                .get(index as usize)
                .copied()
                .flatten()
                .ok_or_else(|| format!("scales in constant {index}, which is absent"))?;
            if bytes.len() != channels * 4 {
                return Err(format!(
                    "{} bytes of scales for {channels} channels",
                    bytes.len()
                ));
            }
            bytes
                .chunks_exact(4)
                .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
                .collect()
        }
    };
    if scales.len() != channels {
        return Err(format!(
            "{} scales for {channels} channels along dimension {channel_dim}",
            scales.len()
        ));
    }
    let scales = scales
        .into_iter()
        .map(check_scale)
        .collect::<Result<_, _>>()?;
    Ok((scales, channel_dim))
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
            min: Some(0.0),
            max: Some(6.0),
        };
        assert_eq!(q.bounds(relu6), (0, 120));
        // Bounds beyond the type stay within it; ties round to even.
        let wide = ClampRange {
            min: Some(-100.0),
            max: Some(0.125),
        };
        assert_eq!(int8(0.25, 0).bounds(wide), (-128, 0));
        let uint8 = Quantization {
            scale: 1.0,
            zero_point: 10,
            integer: Integer::U8,
        };
        assert_eq!(uint8.bounds(ClampRange::default()), (-10, 245));
    }

    #[test]
    fn constants_dequantize_per_tensor_and_per_channel() {
        let floats = |bytes: Option<Vec<u8>>| -> Vec<f32> {
            bytes
                .expect("a quantized constant dequantizes")
                .chunks_exact(4)
                .map(|chunk| f32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]))
                .collect()
        };
        let per_tensor = Numbers::PerTensor(int8(0.5, 2));
        let bytes = [0u8, 2, 0xff, 0x80];
        assert_eq!(
            floats(per_tensor.dequantize(&bytes, &[4])),
            [-1.0, 0.0, -1.5, -65.0]
        );
        // [2, 3] with a scale per row (channel dimension 0) ...
        let rows = Numbers::PerChannel {
            integer: Integer::I8,
            scales: vec![1.0, 0.25],
            channel_dim: 0,
        };
        let bytes = [1u8, 2, 3, 4, 0xfc, 8];
        assert_eq!(
            floats(rows.dequantize(&bytes, &[2, 3])),
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
            floats(columns.dequantize(&bytes, &[2, 3])),
            [1.0, 1.0, 6.0, -4.0, 2.5, 12.0]
        );
        assert_eq!(Numbers::Float.dequantize(&bytes, &[2, 3]), None);
    }
}
