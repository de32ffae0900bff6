//! The WGSL vocabulary the shaders are written in: the buffers and views,
//! the prelude of helper functions, literals, the types IR element types
//! compute in, conversions between them, and tensors seen as strided views
//! of a buffer (loads, stores, coordinates of an element); and
//! [`Refusal`], why a shader cannot express something.

use std::fmt::Write as _;

use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, Graph, Scalar, ValueId, ValueKind};

use super::Layout;

/// Invocations per workgroup; every shader uses this size.
pub(super) const WORKGROUP_SIZE: u64 = 64;

/// The declarations every shader starts with: binding 0 is the arena,
/// binding 1 the constants, both as 32-bit words; binding 2 is the arena
/// as 16-byte quads, which a kernel stores four neighbouring words to in
/// one store ([`Tensor::store_quad`]); bindings 3 and 4 are the constants
/// and the arena as texel buffers of quads, which a kernel reads four
/// neighbouring words from in one fetch ([`Tensor::load_quad`]): devices
/// fetch texels for all lanes at once where they load storage buffers lane
/// by lane (lavapipe's loads took most of a convolution's time). WGSL has
/// no texel buffers: they are declared as 1D textures, which `texel.rs`
/// turns into texel buffers in the SPIR-V.
pub(super) const BUFFERS: &str = "\
@group(0) @binding(0) var<storage, read_write> arena: array<u32>;
@group(0) @binding(1) var<storage, read> constants: array<u32>;
@group(0) @binding(2) var<storage, read_write> arena_quads: array<vec4<u32>>;
@group(0) @binding(3) var constants_texels: texture_1d<u32>;
@group(0) @binding(4) var arena_texels: texture_1d<u32>;
";

/// `arena_quad` in a shader of several kernels, or where the arena has
/// more quads than a texel buffer view holds: through the storage buffer,
/// since a texel fetch need not see what an earlier kernel of the same
/// dispatch stored (a device may cache texels apart from storage).
pub(super) const ARENA_QUAD_STORED: &str =
    "fn arena_quad(q: u32) -> vec4<u32> { return arena_quads[q]; }\n";

/// `constant_quad` where the constants have more quads than a texel buffer
/// view holds: four words of the storage buffer.
pub(super) const CONSTANT_QUAD_STORED: &str = "fn constant_quad(q: u32) -> vec4<u32> { return vec4<u32>(constants[4u * q], constants[4u * q + 1u], constants[4u * q + 2u], constants[4u * q + 3u]); }\n";

/// Helper functions, each included only in shaders that call it (by name:
/// the IR's math functions name theirs, `MathFn::shader`).
pub(super) const FUNCTIONS: &[(&str, &str)] = &[
    (
        "arena_byte",
        "fn arena_byte(b: u32) -> u32 { return (arena[b >> 2u] >> ((b & 3u) * 8u)) & 255u; }\n",
    ),
    (
        "constants_byte",
        "fn constants_byte(b: u32) -> u32 { return (constants[b >> 2u] >> ((b & 3u) * 8u)) & 255u; }\n",
    ),
    // Quad `q` of the constants and of the arena, texel `q` of their views,
    // clamped into the view as every index is into its buffer.
    (
        "constant_quad",
        "fn constant_quad(q: u32) -> vec4<u32> { return textureLoad(constants_texels, min(q, textureDimensions(constants_texels) - 1u), 0); }\n",
    ),
    (
        "arena_quad",
        "fn arena_quad(q: u32) -> vec4<u32> { return textureLoad(arena_texels, min(q, textureDimensions(arena_texels) - 1u), 0); }\n",
    ),
    (
        "is_nan",
        "fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }\n",
    ),
    // max and min that return NaN when either operand is NaN, as torch's.
    (
        "nan_max",
        "fn nan_max(a: f32, b: f32) -> f32 { return select(select(b, a, a > b), a + b, is_nan(a) || is_nan(b)); }\n",
    ),
    (
        "nan_min",
        "fn nan_min(a: f32, b: f32) -> f32 { return select(select(b, a, a < b), a + b, is_nan(a) || is_nan(b)); }\n",
    ),
    // erf by Abramowitz and Stegun 7.1.26 (absolute error below 1.5e-7).
    (
        "erf_f32",
        "fn erf_f32(x: f32) -> f32 {
    let a = abs(x);
    let t = 1.0 / (1.0 + 0.3275911 * a);
    let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
    return sign(x) * (1.0 - poly * exp(-a * a));
}
",
    ),
    // exp(x) - 1 and log(1 + x) without cancellation near zero.
    (
        "expm1_f32",
        "fn expm1_f32(x: f32) -> f32 {
    let u = exp(x);
    // 1 and infinity: x itself near zero, and no inf / inf.
    if (u == 1.0) { return x; }
    if (u > 3.40282347e38) { return u; }
    let m = u - 1.0;
    if (m == -1.0) { return -1.0; }
    return m * x / log(u);
}
",
    ),
    (
        "log1p_f32",
        "fn log1p_f32(x: f32) -> f32 {
    let u = 1.0 + x;
    if (u == 1.0) { return x; }
    if (u > 3.40282347e38) { return log(u); }
    return log(u) * x / (u - 1.0);
}
",
    ),
    // log10 through log2 (WGSL has no log10).
    (
        "log10_f32",
        "fn log10_f32(x: f32) -> f32 { return log2(x) * 0.30102999566398120f; }\n",
    ),
    // sinh, asinh and atanh without the cancellation near zero of their
    // textbook forms (glibc's forms).
    (
        "sinh_f32",
        "fn sinh_f32(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a > 88.0) {
        let h = exp(0.5 * a);
        r = (0.5 * h) * h;
    } else {
        let m = expm1_f32(a);
        r = 0.5 * (m + m / (m + 1.0));
    }
    if (is_nan(x)) { return x; }
    return select(r, -r, x < 0.0);
}
",
    ),
    (
        "asinh_f32",
        "fn asinh_f32(x: f32) -> f32 {
    let a = abs(x);
    var r: f32;
    if (a > 1.0e9) {
        r = log(a) + 0.69314718055994531f;
    } else {
        r = log1p_f32(a + a * a / (1.0 + sqrt(1.0 + a * a)));
    }
    if (is_nan(x)) { return x; }
    return select(r, -r, x < 0.0);
}
",
    ),
    (
        "atanh_f32",
        "fn atanh_f32(x: f32) -> f32 {
    let a = abs(x);
    if (is_nan(x) || a > 1.0) { return bitcast<f32>(0x7fc00000u); }
    var r = bitcast<f32>(0x7f800000u);
    if (a < 1.0) { r = 0.5 * log1p_f32(2.0 * a / (1.0 - a)); }
    return select(r, -r, x < 0.0);
}
",
    ),
    // C's fmod, exact: binary long division of |x| by |y| (each step
    // subtracts |y| times a power of two no greater than the rest, which is
    // exact), with the dividend's sign.
    (
        "fmod_f32",
        "fn fmod_f32(x: f32, y: f32) -> f32 {
    let inf = bitcast<f32>(0x7f800000u);
    if (is_nan(x) || is_nan(y) || abs(x) == inf || y == 0.0) { return bitcast<f32>(0x7fc00000u); }
    let b = abs(y);
    var r = abs(x);
    if (b == inf || r < b) { return x; }
    var s = ldexp(b, frexp(r).exp - frexp(b).exp);
    if (s > r) { s = s * 0.5; }
    loop {
        if (r >= s) { r = r - s; }
        if (s <= b) { break; }
        s = s * 0.5;
    }
    return select(r, -r, x < 0.0);
}
",
    ),
    // atan, cosh, acosh and atan2 as C computes them where the device's
    // built-ins differ (lavapipe's lose NaN, overflow early, and get signed
    // zeros and infinities wrong).
    (
        "atan_f32",
        "fn atan_f32(x: f32) -> f32 { return select(atan(x), x, is_nan(x)); }\n",
    ),
    (
        "cosh_f32",
        "fn cosh_f32(x: f32) -> f32 {
    let a = abs(x);
    if (a > 88.0) {
        let h = exp(0.5 * a);
        return (0.5 * h) * h;
    }
    let e = exp(a);
    return 0.5 * (e + 1.0 / e);
}
",
    ),
    (
        "acosh_f32",
        "fn acosh_f32(x: f32) -> f32 {
    if (x > 1.0e9) { return log(x) + 0.69314718055994531f; }
    if (x < 2.0) {
        let t = x - 1.0;
        return log1p_f32(t + sqrt(2.0 * t + t * t));
    }
    return log(x + sqrt(x * x - 1.0));
}
",
    ),
    (
        "atan2_f32",
        "fn atan2_f32(y: f32, x: f32) -> f32 {
    let pi = 3.14159265358979323846f;
    let inf = bitcast<f32>(0x7f800000u);
    if (is_nan(x) || is_nan(y)) { return bitcast<f32>(0x7fc00000u); }
    let y_negative = (bitcast<u32>(y) >> 31u) == 1u;
    let x_negative = (bitcast<u32>(x) >> 31u) == 1u;
    var r: f32;
    if (y == 0.0) {
        r = select(0.0, pi, x_negative);
    } else if (abs(y) == inf) {
        r = select(0.5 * pi, select(0.25 * pi, 0.75 * pi, x_negative), abs(x) == inf);
    } else if (x == 0.0) {
        r = 0.5 * pi;
    } else if (abs(x) == inf) {
        r = select(0.0, pi, x_negative);
    } else {
        r = atan2(abs(y), x);
    }
    return select(r, -r, y_negative);
}
",
    ),
    // a^b of integers by repeated squaring, wrapping (negative exponents
    // are selected around by the caller).
    (
        "pow_i32",
        "fn pow_i32(a: i32, b: i32) -> i32 {
    var result = 1i;
    var square = a;
    var bits = bitcast<u32>(b);
    while (bits != 0u) {
        if ((bits & 1u) == 1u) { result = result * square; }
        square = square * square;
        bits = bits >> 1u;
    }
    return result;
}
",
    ),
    // x^y as C's powf, which PyTorch's CPU kernels call, with every
    // special case decided here (a device's pow is exp2(y * log2(x)), whose
    // approximations may lose NaN, zeros and infinities): 1 for a zero
    // exponent or a base of 1 (even against NaN) and for -1 to an infinite
    // power; x for an exponent of 1 and x * x for 2, exactly; a negative
    // base (-0 and -inf included) negates the result for an odd integral
    // exponent, and a finite negative one is NaN for a non-integral one.
    (
        "pow_f32",
        "fn pow_f32(x: f32, y: f32) -> f32 {
    let a = abs(x);
    let b = abs(y);
    let infinity = bitcast<f32>(0x7f800000u);
    if (y == 0.0 || x == 1.0 || (a == 1.0 && b == infinity)) { return 1.0; }
    if (is_nan(x) || is_nan(y)) { return bitcast<f32>(0x7fc00000u); }
    if (y == 1.0) { return x; }
    if (b == infinity) { return select(0.0, infinity, (a > 1.0) == (y > 0.0)); }
    let negative = (bitcast<u32>(x) & 0x80000000u) != 0u;
    let integral = y == floor(y);
    var magnitude = select(0.0, infinity, y < 0.0);
    if (a == infinity) {
        magnitude = select(0.0, infinity, y > 0.0);
    } else if (a != 0.0) {
        if (negative && !integral) { return bitcast<f32>(0x7fc00000u); }
        magnitude = select(pow(a, y), a * a, y == 2.0);
    }
    let odd = integral && b < 16777216.0 && (y * 0.5) != floor(y * 0.5);
    return select(magnitude, -magnitude, negative && odd);
}
",
    ),
    // A float into an i32 as the CPU converts it
    // (`ptec_ir::tensor_data::float_to_int`): truncated, and what an i32
    // cannot hold (NaN, infinities, too large) its minimum.
    (
        "f32_to_i32",
        "fn f32_to_i32(x: f32) -> i32 {
    return select(bitcast<i32>(0x80000000u), i32(x), x >= -2147483648.0f && x < 2147483648.0f);
}
",
    ),
    // x times a zero literal on the bits: a zero signed as the product's
    // for finite x, NaN otherwise; a driver that assumes no NaN or infinity
    // folds the product to zero (lavapipe does).
    (
        "times_zero",
        "fn times_zero(x: f32, zero: f32) -> f32 {
    let bits = bitcast<u32>(x);
    if ((bits & 0x7fffffffu) >= 0x7f800000u) { return bitcast<f32>(0x7fc00000u); }
    return bitcast<f32>((bits ^ bitcast<u32>(zero)) & 0x80000000u);
}
",
    ),
];

/// The WGSL type an element type computes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Ty {
    F32,
    I32,
    Bool,
}

impl Ty {
    /// The type elements of `dtype` compute in. 64-bit and half-precision
    /// elements have none (WGSL has neither without extensions), and
    /// shaders load and store only 32-bit words and bytes.
    pub(super) fn of(dtype: DType) -> Result<Ty, Refusal> {
        match dtype {
            DType::F32 => Ok(Ty::F32),
            DType::I32 | DType::I8 | DType::U8 => Ok(Ty::I32),
            DType::Bool => Ok(Ty::Bool),
            DType::I16 | DType::I64 | DType::F16 | DType::BF16 | DType::F64 => {
                Err(refuse(format!("{dtype} elements")))
            }
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Ty::F32 => "f32",
            Ty::I32 => "i32",
            Ty::Bool => "bool",
        }
    }
}

/// Why a shader cannot express what a node asks: the reason of the
/// node's `CodegenError::Unsupported` on the Vulkan backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Refusal(pub String);

pub(super) fn refuse(why: impl Into<String>) -> Refusal {
    Refusal(why.into())
}

/// The name of a prelude function, when the prelude has it.
pub(super) fn helper(name: &str) -> Result<&'static str, Refusal> {
    FUNCTIONS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(known, _)| known)
        .ok_or_else(|| refuse(format!("{name}, which the shader prelude lacks")))
}

/// An f32 literal, exact: decimal when finite, a bit pattern otherwise.
pub(super) fn float(value: f64) -> String {
    let value = value as f32;
    if !value.is_finite() {
        return format!("bitcast<f32>({:#010x}u)", value.to_bits());
    }
    let text = format!("{value:?}");
    if text.contains(['.', 'e']) {
        format!("{text}f")
    } else {
        format!("{text}.0f")
    }
}

/// An i32 literal.
pub(super) fn int(value: i64) -> Result<String, Refusal> {
    let value =
        i32::try_from(value).map_err(|_| refuse(format!("the integer {value}, beyond 32 bits")))?;
    Ok(if value == i32::MIN {
        "bitcast<i32>(0x80000000u)".to_string()
    } else {
        format!("{value}i")
    })
}

/// A scalar attribute as a literal of `ty`.
pub(super) fn scalar(value: Scalar, ty: Ty) -> Result<String, Refusal> {
    Ok(match ty {
        Ty::F32 => float(value.as_f64()),
        Ty::I32 => int(value.as_i64())?,
        Ty::Bool => (value.as_f64() != 0.0).to_string(),
    })
}

/// A scalar attribute, which shaders take only as a constant: one known
/// only at run time (a symbol) is refused.
pub(super) fn constant_term(term: Term) -> Result<Scalar, Refusal> {
    term.constant()
        .ok_or_else(|| refuse(format!("a scalar known only at run time ({term})")))
}

/// A u32 literal for a size or index attribute, which shaders take only as
/// a constant: one known only at run time (a symbol) is refused.
pub(super) fn dim_index(dim: Dim) -> Result<String, Refusal> {
    match dim {
        Dim::Fixed(value) => index(value),
        Dim::Symbol(symbol) => Err(refuse(format!(
            "an index known only at run time ({symbol})"
        ))),
    }
}

/// A u32 literal for sizes and indices.
pub(super) fn index(value: u64) -> Result<String, Refusal> {
    let value =
        u32::try_from(value).map_err(|_| refuse(format!("an index of {value}, beyond 32 bits")))?;
    Ok(format!("{value}u"))
}

/// Converts `x` from one compute type to another, with torch's rules
/// (floats to integers truncate, anything to bool is "not zero").
pub(super) fn convert(x: &str, from: Ty, to: Ty) -> String {
    match (from, to) {
        _ if from == to => x.to_string(),
        // On the bits: devices may flush subnormals to zero in comparisons.
        (Ty::F32, Ty::Bool) => format!("((bitcast<u32>({x}) & 0x7fffffffu) != 0u)"),
        (Ty::I32, Ty::Bool) => format!("({x} != 0i)"),
        (Ty::Bool, Ty::F32) => format!("select(0.0f, 1.0f, {x})"),
        (Ty::Bool, Ty::I32) => format!("select(0i, 1i, {x})"),
        (Ty::F32, Ty::I32) => format!("f32_to_i32({x})"),
        _ => format!("f32({x})"),
    }
}

/// The most base offsets one shader takes as push constants (128 bytes,
/// the least `maxPushConstantsSize` every device allows); more are
/// written as literals.
pub(super) const MAX_PUSH_CONSTANTS: usize = 32;

/// Where a tensor starts in its buffer (in the units the access indexes:
/// words, quads or bytes), written as a placeholder that [`lift_bases`]
/// turns into a push constant, so that kernels that differ only in where
/// their tensors lie share one shader.
pub(super) fn base(offset: u64) -> String {
    format!("\u{27e8}{offset}\u{27e9}")
}

/// The code of a kernel with each distinct base offset ([`base`]) read
/// from the push constants (`bases.b0`, in order of first use), the
/// declarations of those push constants, and their values. Offsets beyond
/// [`MAX_PUSH_CONSTANTS`] or 32 bits stay literals.
pub(super) fn lift_bases(code: &str) -> (String, String, Vec<u32>) {
    let mut lifted = String::with_capacity(code.len());
    let mut values: Vec<u32> = Vec::new();
    let mut rest = code;
    while let Some(start) = rest.find('\u{27e8}') {
        lifted.push_str(&rest[..start]);
        let after = &rest[start + '\u{27e8}'.len_utf8()..];
        let end = after.find('\u{27e9}').unwrap_or(after.len());
        let digits = &after[..end];
        rest = after.get(end + '\u{27e9}'.len_utf8()..).unwrap_or("");
        let slot = u32::try_from(digits.parse::<u64>().unwrap_or(u64::MAX))
            .ok()
            .and_then(
                |value| match values.iter().position(|&known| known == value) {
                    Some(slot) => Some(slot),
                    None if values.len() < MAX_PUSH_CONSTANTS => {
                        values.push(value);
                        Some(values.len() - 1)
                    }
                    None => None,
                },
            );
        match slot {
            Some(slot) => {
                let _ = write!(lifted, "bases.b{slot}");
            }
            None => {
                let _ = write!(lifted, "{digits}u");
            }
        }
    }
    lifted.push_str(rest);
    if values.is_empty() {
        return (lifted, String::new(), values);
    }
    let fields: Vec<String> = (0..values.len()).map(|k| format!("b{k}: u32")).collect();
    let declarations = format!(
        "struct Bases {{ {} }}\nvar<immediate> bases: Bases;\n",
        fields.join(", ")
    );
    (lifted, declarations, values)
}

/// Which buffer a tensor lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Buffer {
    Arena,
    Constants,
}

impl Buffer {
    pub(super) fn name(self) -> &'static str {
        match self {
            Buffer::Arena => "arena",
            Buffer::Constants => "constants",
        }
    }
}

/// A tensor as a shader sees it: a buffer, a byte offset, an element type,
/// sizes, and the stride of each dimension in elements (from its dim order).
#[derive(Clone, Debug)]
pub(super) struct Tensor {
    pub buffer: Buffer,
    pub byte_offset: u64,
    pub dtype: DType,
    /// The type its elements compute in.
    pub ty: Ty,
    pub sizes: Vec<u64>,
    pub strides: Vec<u64>,
    /// Dimensions from outermost to innermost in memory.
    pub order: Vec<usize>,
}

impl Tensor {
    pub(super) fn of(
        graph: &Graph<'_>,
        layout: &Layout<'_>,
        value: ValueId,
    ) -> Result<Tensor, Refusal> {
        let data = graph.value(value);
        let sizes = data
            .ty
            .fixed_shape()
            .ok_or_else(|| refuse(format!("{value}, whose shape {} is dynamic", data.ty)))?;
        let (buffer, byte_offset, stored) = match (&data.kind, data.offset) {
            (ValueKind::Constant(_), _) => {
                let (offset, ty) = layout.constant(value)?;
                (Buffer::Constants, offset, ty)
            }
            (_, Some(offset)) => (Buffer::Arena, layout.arena(value, offset)?, &data.ty),
            (_, None) => return Err(refuse(format!("{value}, which has no memory planned"))),
        };
        let ty = Ty::of(data.ty.dtype)?;
        let strides = stored.fixed_strides().unwrap_or_default();
        if data.ty.dtype.size() == 4 && !byte_offset.is_multiple_of(4) {
            return Err(refuse(format!(
                "{value} at byte offset {byte_offset}, not a multiple of 4"
            )));
        }
        Ok(Tensor {
            buffer,
            byte_offset,
            dtype: data.ty.dtype,
            ty,
            sizes,
            strides,
            order: stored.dim_order.iter().map(|&dim| dim as usize).collect(),
        })
    }

    pub(super) fn elements(&self) -> u64 {
        self.sizes.iter().product()
    }

    pub(super) fn rank(&self) -> usize {
        self.sizes.len()
    }

    /// The element at `offset` (an element index expression, u32), as a
    /// value of [`Tensor::ty`].
    pub(super) fn load(&self, offset: &str) -> String {
        let buffer = self.buffer.name();
        if self.dtype.size() == 4 {
            let word = base(self.byte_offset / 4);
            return format!("bitcast<{}>({buffer}[{word} + {offset}])", self.ty.name());
        }
        let byte = format!("{buffer}_byte({} + {offset})", base(self.byte_offset));
        match self.dtype {
            DType::Bool => format!("({byte} != 0u)"),
            DType::I8 => format!("((i32({byte}) << 24u) >> 24u)"),
            _ => format!("i32({byte})"),
        }
    }

    /// Whether [`Tensor::load_quad`] reads this tensor along `dim`: 32-bit
    /// elements from a 16-byte boundary, `dim` contiguous and a multiple of
    /// four long, and every other dimension's stride a multiple of four, so
    /// that four elements along `dim` from a coordinate that is a multiple
    /// of four are one quad.
    pub(super) fn quads_along(&self, dim: usize) -> bool {
        self.dtype.size() == 4
            && self.byte_offset.is_multiple_of(16)
            && self.strides[dim] == 1
            && self.sizes[dim].is_multiple_of(4)
            && (0..self.rank())
                .all(|d| d == dim || self.sizes[d] == 1 || self.strides[d].is_multiple_of(4))
    }

    /// The four elements from `offset` on (an element offset, a multiple of
    /// four, of a tensor [`Tensor::quads_along`] some dimension), as a
    /// `vec4` of [`Tensor::ty`].
    pub(super) fn load_quad(&self, offset: &str) -> String {
        let ty = self.ty.name();
        let quad = format!("{} + {offset} / 4u", base(self.byte_offset / 16));
        match self.buffer {
            Buffer::Arena => format!("bitcast<vec4<{ty}>>(arena_quad({quad}))"),
            Buffer::Constants => format!("bitcast<vec4<{ty}>>(constant_quad({quad}))"),
        }
    }

    /// The statement storing four values of [`Tensor::ty`] from `offset` on
    /// (as for [`Tensor::load_quad`]; the arena only).
    pub(super) fn store_quad(&self, offset: &str, values: &[&str]) -> String {
        format!(
            "arena_quads[{} + {offset} / 4u] = bitcast<vec4<u32>>(vec4<{}>({}));",
            base(self.byte_offset / 16),
            self.ty.name(),
            values.join(", ")
        )
    }

    /// The element offset of the element at `coords` (one expression per
    /// dimension).
    pub(super) fn offset_at(&self, coords: &[String]) -> String {
        let terms: Vec<String> = coords
            .iter()
            .zip(&self.strides)
            .zip(&self.sizes)
            .filter(|((_, _), size)| **size > 1)
            .map(|((coord, stride), _)| {
                if *stride == 1 {
                    coord.clone()
                } else {
                    format!("{coord} * {stride}u")
                }
            })
            .collect();
        if terms.is_empty() {
            "0u".to_string()
        } else {
            format!("({})", terms.join(" + "))
        }
    }

    /// The element this tensor contributes at the output coordinates
    /// `coords`, broadcasting (dimensions aligned right, size 1 repeated).
    pub(super) fn load_broadcast(&self, coords: &[String]) -> String {
        let skip = coords.len() - self.rank();
        self.load(&self.offset_at(&coords[skip..]))
    }

    /// Statements binding `{prefix}{d}` to the coordinate along each
    /// dimension `d` of the element at memory position `position`.
    pub(super) fn coordinates(&self, position: &str, prefix: &str) -> (String, Vec<String>) {
        let mut code = String::new();
        let names: Vec<String> = (0..self.rank())
            .map(|dim| format!("{prefix}{dim}"))
            .collect();
        let mut rest = position.to_string();
        for (step, &dim) in self.order.iter().rev().enumerate() {
            let size = self.sizes[dim];
            if step + 1 == self.rank() {
                let _ = writeln!(code, "    let {} = {rest};", names[dim]);
            } else {
                let _ = writeln!(code, "    let {} = {rest} % {size}u;", names[dim]);
                let next = format!("{prefix}r{step}");
                let _ = writeln!(code, "    let {next} = {rest} / {size}u;");
                rest = next;
            }
        }
        (code, names)
    }
}
