//! torchao's affine quantization primitives as Vulkan graphs call them
//! (`torchao.quantize_affine`, `dequantize_affine`, `choose_qparams_affine`),
//! and the steps of them that the 4-bit operators share.
//!
//! A `block_size` gives, per dimension of the input, how many consecutive
//! elements share one scale and zero point: the input is viewed with each
//! blocked dimension split into (blocks, block), and the parameters, one per
//! block, broadcast over the block's elements, as torchao's reference does.
//! The arithmetic is torchao's, in the parameters' f32: quantizing
//! multiplies by the scale's f32 reciprocal, rounds half to even, adds the
//! zero point and clamps to `[quant_min, quant_max]`; dequantizing
//! subtracts the zero point from the integer in the output's float type and
//! multiplies by the scale; choosing parameters reduces each block to its
//! range (widened to hold 0) and derives the scale (at least `eps`) and the
//! zero point of the mapping type asked for. The serializer writes the
//! `ScalarType` arguments as nulls: the element types are the tensors'.

use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim};

use super::{Translation, shape_argument};
use crate::call::Argument;
use crate::error::ImportError;

/// The broadcast sizes of two operands' sizes (of equal rank).
fn broadcast(a: &[u64], b: &[u64]) -> Vec<u64> {
    a.iter().zip(b).map(|(&x, &y)| x.max(y)).collect()
}

/// The integer range of a quantized element type.
pub(super) fn integer_range(dtype: DType) -> Option<(i64, i64)> {
    Some(match dtype {
        DType::U8 => (u8::MIN.into(), u8::MAX.into()),
        DType::I8 => (i8::MIN.into(), i8::MAX.into()),
        DType::I16 => (i16::MIN.into(), i16::MAX.into()),
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => return None,
    })
}

impl Translation<'_, '_, '_> {
    /// The table entry `key` over `args` and a new output of `dtype` and
    /// `sizes`, which it returns.
    pub(super) fn applied(
        &mut self,
        key: &str,
        mut args: Vec<Argument>,
        dtype: DType,
        sizes: &[u64],
    ) -> Result<Argument, ImportError> {
        let out = self.temporary(dtype, sizes);
        args.push(out.clone());
        self.table(key, &args)?;
        Ok(out)
    }

    /// `a op b` (a binary table entry without `alpha`) of two tensors of
    /// equal rank that broadcast, in `dtype`.
    pub(super) fn binary(
        &mut self,
        key: &str,
        a: Argument,
        b: Argument,
        dtype: DType,
    ) -> Result<Argument, ImportError> {
        let (_, a_sizes) = self.bounds(&a)?;
        let (_, b_sizes) = self.bounds(&b)?;
        let sizes = broadcast(&a_sizes, &b_sizes);
        self.applied(key, vec![a, b], dtype, &sizes)
    }

    /// `x` converted to `dtype` (a copy when it already is).
    pub(super) fn converted(&mut self, x: Argument, dtype: DType) -> Result<Argument, ImportError> {
        let (have, sizes) = self.bounds(&x)?;
        if have == dtype {
            return Ok(x);
        }
        self.applied(
            "aten::_to_copy.out",
            vec![x, Argument::Bool(false), Argument::Null],
            dtype,
            &sizes,
        )
    }

    /// The unary function `key` (`aten::round.out`) of `x`.
    fn unary(&mut self, key: &str, x: Argument) -> Result<Argument, ImportError> {
        let (dtype, sizes) = self.bounds(&x)?;
        self.applied(key, vec![x], dtype, &sizes)
    }

    /// `x` clamped to `[low, high]`.
    fn clamped(&mut self, x: Argument, low: i64, high: i64) -> Result<Argument, ImportError> {
        let (dtype, sizes) = self.bounds(&x)?;
        self.applied(
            "aten::clamp.out",
            vec![x, Argument::Int(low), Argument::Int(high)],
            dtype,
            &sizes,
        )
    }

    /// The f32 `x`'s integers on the grid of `scale` and `zero_point`
    /// (tensors that broadcast against it): `clamp(round(x * (1 / scale))
    /// + zero_point, low, high)`, still in f32.
    pub(super) fn quantized_values(
        &mut self,
        x: Argument,
        scale: Argument,
        zero_point: Option<Argument>,
        (low, high): (i64, i64),
    ) -> Result<Argument, ImportError> {
        let scale = self.converted(scale, DType::F32)?;
        let inverse = self.unary("aten::reciprocal.out", scale)?;
        let scaled = self.binary("aten::mul.out", x, inverse, DType::F32)?;
        let mut rounded = self.unary("aten::round.out", scaled)?;
        if let Some(zero_point) = zero_point {
            let zero_point = self.converted(zero_point, DType::F32)?;
            let (_, sizes) = self.bounds(&rounded)?;
            let (_, z_sizes) = self.bounds(&zero_point)?;
            rounded = self.applied(
                "aten::add.out",
                vec![rounded, zero_point, Argument::Int(1)],
                DType::F32,
                &broadcast(&sizes, &z_sizes),
            )?;
        }
        self.clamped(rounded, low, high)
    }

    /// `(q - zero_point) * scale` in `dtype` (a float type), `q` integers
    /// of any type and the parameters tensors that broadcast against it.
    pub(super) fn dequantized_values(
        &mut self,
        q: Argument,
        scale: Argument,
        zero_point: Option<Argument>,
        dtype: DType,
    ) -> Result<Argument, ImportError> {
        let mut values = self.converted(q, dtype)?;
        if let Some(zero_point) = zero_point {
            let zero_point = self.converted(zero_point, dtype)?;
            let (_, sizes) = self.bounds(&values)?;
            let (_, z_sizes) = self.bounds(&zero_point)?;
            values = self.applied(
                "aten::sub.out",
                vec![values, zero_point, Argument::Int(1)],
                dtype,
                &broadcast(&sizes, &z_sizes),
            )?;
        }
        let scale = self.converted(scale, dtype)?;
        self.binary("aten::mul.out", values, scale, dtype)
    }

    /// A parameter tensor argument (named `name`) viewed as `shape`, which
    /// must hold as many elements.
    pub(super) fn parameter(
        &mut self,
        x: Argument,
        shape: &[Dim],
        name: &str,
    ) -> Result<Argument, ImportError> {
        let (_, have) = self.shape(&x)?;
        let elements = |sizes: Vec<u64>| sizes.iter().product::<u64>();
        let (have_elements, want_elements) = (
            elements(self.max_sizes(&have)),
            elements(self.max_sizes(shape)),
        );
        if have_elements != want_elements {
            return Err(self.invalid(format!(
                "{name} has sizes {have:?}; one element per block needs {want_elements} elements"
            )));
        }
        if have == shape {
            return Ok(x);
        }
        self.viewed_as(x, shape)
    }
}

/// How an input of some shape splits into blocks.
struct Blocks {
    /// The input's shape, each blocked dimension split into (blocks,
    /// block).
    split: Vec<Dim>,
    /// The shape of one parameter per block: `split` with each block's
    /// extent 1.
    params: Vec<Dim>,
    /// The dimensions of `split` a block extends over.
    within: Vec<i64>,
}

impl Translation<'_, '_, '_> {
    /// The blocks `block_size` (the call's argument `at`) makes of an
    /// input of `shape`: every block size must divide its dimension, and a
    /// dimension whose size a run computes (a sequence) has blocks of one
    /// or takes its declared size.
    fn blocks(
        &mut self,
        args: &[Argument],
        at: usize,
        shape: &[Dim],
    ) -> Result<Blocks, ImportError> {
        let block_size = self.ints_arg(args, at, "block_size")?;
        let sizes = self.max_sizes(shape);
        if block_size.len() != sizes.len() {
            return Err(self.invalid(format!(
                "block_size {block_size:?} has {} sizes, but the input has {} dimensions",
                block_size.len(),
                sizes.len()
            )));
        }
        let mut blocks = Blocks {
            split: Vec::new(),
            params: Vec::new(),
            within: Vec::new(),
        };
        for ((&block, &size), &dim) in block_size.iter().zip(&sizes).zip(shape) {
            // A dimension a run sizes has blocks of one; one whose blocks
            // are larger takes its declared size.
            let dim = if block == 1 {
                dim
            } else {
                Dim::Fixed(self.fixed_dim(dim)?)
            };
            if dim.fixed().is_none() {
                blocks.split.push(dim);
                blocks.params.push(dim);
                continue;
            }
            let block = u64::try_from(block)
                .ok()
                .filter(|&block| block > 0 && size % block == 0)
                .ok_or_else(|| {
                    self.invalid(format!(
                        "block_size {block_size:?} does not divide the input's sizes {sizes:?}"
                    ))
                })?;
            let fixed = Dim::Fixed;
            if block == 1 || block == size {
                if block != 1 {
                    blocks.within.push(blocks.split.len() as i64);
                }
                blocks.split.push(dim);
                blocks.params.push(fixed(if block == 1 { size } else { 1 }));
            } else {
                blocks.split.extend([fixed(size / block), fixed(block)]);
                blocks.params.extend([fixed(size / block), fixed(1)]);
                blocks.within.push(blocks.split.len() as i64 - 1);
            }
        }
        Ok(blocks)
    }

    /// The optional quantization bound at `at` (named `name`), `default`
    /// when the call leaves it out.
    fn bound(
        &self,
        args: &[Argument],
        at: usize,
        name: &str,
        default: i64,
    ) -> Result<i64, ImportError> {
        match self.arg(args, at)? {
            Argument::Null => Ok(default),
            &Argument::Int(value) => Ok(value),
            other => Err(self.invalid(format!("{name} is a {}, not an int", other.kind()))),
        }
    }

    /// The quantized type's range (of the tensor `x`, named `name`) and
    /// the call's `quant_min` and `quant_max` at `at` and `at + 1`, which
    /// must lie within it, in order.
    fn quant_range(
        &self,
        args: &[Argument],
        at: usize,
        x: &Argument,
        name: &str,
    ) -> Result<(i64, i64), ImportError> {
        let (dtype, _) = self.bounds(x)?;
        let (low, high) = integer_range(dtype).ok_or_else(|| {
            self.invalid(format!(
                "{name} is {dtype}; torchao's integer quantization takes uint8, int8, int16 and \
                 int32"
            ))
        })?;
        let quant_min = self.bound(args, at, "quant_min", low)?;
        let quant_max = self.bound(args, at + 1, "quant_max", high)?;
        if quant_min < low || quant_max > high || quant_min > quant_max {
            return Err(self.invalid(format!(
                "quant_min {quant_min} and quant_max {quant_max} are not an ordered range \
                 within {dtype}'s [{low}, {high}]"
            )));
        }
        Ok((quant_min, quant_max))
    }

    /// The optional zero point tensor at `at` viewed as the blocks'
    /// parameters (absent: none).
    fn zero_point(
        &mut self,
        args: &[Argument],
        at: usize,
        blocks: &Blocks,
    ) -> Result<Option<Argument>, ImportError> {
        match self.arg(args, at)?.clone() {
            Argument::Null => Ok(None),
            zero_point => {
                // Symmetric parameters' zero points keep the scale's float
                // type unless torchao is told otherwise.
                let (dtype, _) = self.bounds(&zero_point)?;
                if dtype == DType::Bool {
                    return Err(self.invalid("zero_point is bool, not a number type"));
                }
                self.parameter(zero_point, &blocks.params, "zero_point")
                    .map(Some)
            }
        }
    }
}

/// `torchao.quantize_affine(input, block_size, scale, zero_point,
/// output_dtype, quant_min, quant_max)`.
pub(super) fn quantize_affine(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (input, out) = (t.arg(args, 0)?.clone(), t.arg(args, 7)?.clone());
    let (dtype, shape) = t.shape(&input)?;
    if !dtype.is_float() {
        return Err(t.invalid(format!("input is {dtype}, not a float type")));
    }
    let range = t.quant_range(args, 5, &out, "the output")?;
    let blocks = t.blocks(args, 1, &shape)?;
    let scale = t.arg(args, 2)?.clone();
    let scale = t.parameter(scale, &blocks.params, "scale")?;
    let zero_point = t.zero_point(args, 3, &blocks)?;
    let input = t.converted(input, DType::F32)?;
    let input = t.viewed_as(input, &blocks.split)?;
    let values = t.quantized_values(input, scale, zero_point, range)?;
    let (out_dtype, _) = t.bounds(&out)?;
    let values = t.converted(values, out_dtype)?;
    t.table(
        "aten::view_copy.out",
        &[values, shape_argument(&shape), out],
    )
}

/// `torchao.dequantize_affine(input, block_size, scale, zero_point,
/// input_dtype, quant_min, quant_max, output_dtype)`.
pub(super) fn dequantize_affine(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let (input, out) = (t.arg(args, 0)?.clone(), t.arg(args, 8)?.clone());
    let (_, shape) = t.shape(&input)?;
    t.quant_range(args, 5, &input, "input")?;
    let (dtype, _) = t.bounds(&out)?;
    if !matches!(dtype, DType::F32 | DType::F16) {
        return Err(t.invalid(format!("the output is {dtype}, not float32 or float16")));
    }
    let blocks = t.blocks(args, 1, &shape)?;
    let scale = t.arg(args, 2)?.clone();
    let scale = t.parameter(scale, &blocks.params, "scale")?;
    let zero_point = t.zero_point(args, 3, &blocks)?;
    let input = t.viewed_as(input, &blocks.split)?;
    let values = t.dequantized_values(input, scale, zero_point, dtype)?;
    t.table(
        "aten::view_copy.out",
        &[values, shape_argument(&shape), out],
    )
}

/// `torchao.choose_qparams_affine(input, mapping_type, block_size,
/// target_dtype, quant_min, quant_max, eps, scale_dtype, zero_point_dtype,
/// keepdim)` into `(scale, zero_point)`. The target type is written as a
/// null, so `quant_min` and `quant_max` must be given.
pub(super) fn choose_qparams_affine(
    t: &mut Translation<'_, '_, '_>,
    args: &[Argument],
) -> Result<(), ImportError> {
    let input = t.arg(args, 0)?.clone();
    let (scale_out, zero_point_out) = (t.arg(args, 10)?.clone(), t.arg(args, 11)?.clone());
    let (dtype, shape) = t.shape(&input)?;
    if !matches!(dtype, DType::F32 | DType::F16) {
        return Err(t.invalid(format!("input is {dtype}, not float32 or float16")));
    }
    // A `force_fp16` graph's input, chosen for in f32 as the others.
    let input = t.converted(input, DType::F32)?;
    let symmetric = match t.arg(args, 1)? {
        Argument::String(name) if name == "ASYMMETRIC" => false,
        Argument::String(name) if name == "SYMMETRIC" => true,
        Argument::String(name) => {
            return Err(t.invalid(format!(
                "mapping_type is {name:?}; ptec takes \"ASYMMETRIC\" and \"SYMMETRIC\""
            )));
        }
        other => {
            return Err(t.invalid(format!("mapping_type is a {}, not a str", other.kind())));
        }
    };
    let (&Argument::Int(low), &Argument::Int(high)) = (t.arg(args, 4)?, t.arg(args, 5)?) else {
        return Err(t.invalid(
            "quant_min and quant_max are not given, and the graph does not say the target type",
        ));
    };
    if low >= high {
        return Err(t.invalid(format!("quant_min {low} is not below quant_max {high}")));
    }
    // torchao's default: float32's smallest normal number.
    let eps = match t.arg(args, 6)? {
        Argument::Null => f64::from(f32::MIN_POSITIVE),
        _ => t.float_arg(args, 6, "eps")?,
    };
    let blocks = t.blocks(args, 2, &shape)?;
    let params = t.max_sizes(&blocks.params);
    let input = t.viewed_as(input, &blocks.split)?;
    let extreme = |t: &mut Translation<'_, '_, '_>, key: &str, x: Argument| {
        let dims = Argument::IntList(blocks.within.iter().map(|&d| Term::int(d)).collect());
        t.applied(
            key,
            vec![x, dims, Argument::Bool(true)],
            DType::F32,
            &params,
        )
    };
    // The range widened to hold 0: the least value at most 0, the
    // greatest at least 0.
    let widened = |t: &mut Translation<'_, '_, '_>, x: Argument, at_most: bool| {
        let (zero, none) = (Argument::Int(0), Argument::Null);
        let bounds = if at_most { [none, zero] } else { [zero, none] };
        let [min, max] = bounds;
        t.applied("aten::clamp.out", vec![x, min, max], DType::F32, &params)
    };
    let low_end = extreme(t, "aten::amin.out", input.clone())?;
    let low_end = widened(t, low_end, true)?;
    let high_end = extreme(t, "aten::amax.out", input)?;
    let high_end = widened(t, high_end, false)?;
    let levels = (high - low) as f64;
    let divide = |t: &mut Translation<'_, '_, '_>, x: Argument, by: f64| {
        let (_, sizes) = t.bounds(&x)?;
        t.applied(
            "aten::div.Scalar_out",
            vec![x, Argument::Double(by)],
            DType::F32,
            &sizes,
        )
    };
    let at_least_eps = |t: &mut Translation<'_, '_, '_>, x: Argument| {
        let (_, sizes) = t.bounds(&x)?;
        t.applied(
            "aten::clamp.out",
            vec![x, Argument::Double(eps), Argument::Null],
            DType::F32,
            &sizes,
        )
    };
    let (scale, zero_point) = if symmetric {
        let negated = t.unary("aten::neg.out", low_end)?;
        let magnitude = t.binary("aten::maximum.out", negated, high_end, DType::F32)?;
        let scale = divide(t, magnitude, levels / 2.0)?;
        let scale = at_least_eps(t, scale)?;
        // `int((quant_max + quant_min + 1) / 2)`: Python's true division,
        // truncated towards zero.
        let middle = ((high + low + 1) as f64 / 2.0).trunc();
        let zero_point = t.applied(
            "aten::full_like.out",
            vec![scale.clone(), Argument::Double(middle), Argument::Null],
            DType::F32,
            &params,
        )?;
        (scale, zero_point)
    } else {
        let width = t.applied(
            "aten::sub.out",
            vec![high_end, low_end.clone(), Argument::Int(1)],
            DType::F32,
            &params,
        )?;
        let scale = divide(t, width, levels)?;
        let scale = at_least_eps(t, scale)?;
        let descaled = t.binary("aten::div.out", low_end, scale.clone(), DType::F32)?;
        let rounded = t.unary("aten::round.out", descaled)?;
        let zero_point = t.applied(
            "aten::rsub.Scalar_out",
            vec![rounded, Argument::Int(low), Argument::Int(1)],
            DType::F32,
            &params,
        )?;
        let zero_point = t.clamped(zero_point, low, high)?;
        (scale, zero_point)
    };
    for (value, out, name) in [
        (scale, scale_out, "scale"),
        (zero_point, zero_point_out, "zero_point"),
    ] {
        let (dtype, sizes) = t.bounds(&out)?;
        if sizes.iter().product::<u64>() != params.iter().product::<u64>() {
            return Err(t.invalid(format!(
                "the {name} output has sizes {sizes:?}, not one element per block"
            )));
        }
        let value = t.converted(value, dtype)?;
        // A parameter per block, of the output's rank: the blocks' shape,
        // or that less the dimensions blocks extend over (`keepdim`
        // false); sizes a run computes stay the input's.
        let squeezed: Vec<Dim> = (blocks.params.iter().enumerate())
            .filter(|(at, _)| !blocks.within.contains(&(*at as i64)))
            .map(|(_, &dim)| dim)
            .collect();
        let shape = [blocks.params.clone(), squeezed]
            .into_iter()
            .find(|shape| t.max_sizes(shape) == sizes)
            .ok_or_else(|| {
                t.invalid(format!(
                    "the {name} output has sizes {sizes:?}, which are not the blocks' {:?}",
                    blocks.params
                ))
            })?;
        t.table("aten::view_copy.out", &[value, shape_argument(&shape), out])?;
    }
    Ok(())
}
