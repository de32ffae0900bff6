//! The types IR values carry: element types, dimensions (fixed, or symbolic
//! with an upper bound), tensor types and scalar attributes.

use std::fmt;
use std::hash::{Hash, Hasher};

/// An element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    Bool,
    U8,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
}

impl DType {
    pub const ALL: [DType; 10] = [
        DType::Bool,
        DType::U8,
        DType::I8,
        DType::I16,
        DType::I32,
        DType::I64,
        DType::F16,
        DType::BF16,
        DType::F32,
        DType::F64,
    ];

    /// The element type of a name in the text form (`f32`).
    pub fn from_name(name: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|dtype| dtype.name() == name)
    }

    /// Whether integers of this type are unsigned (bool and u8).
    pub fn is_unsigned(self) -> bool {
        matches!(self, DType::Bool | DType::U8)
    }

    /// The type arithmetic on elements of this type is done in: f32 for
    /// the half-precision types (as PyTorch's CPU kernels compute them,
    /// rounding each op's result back), the type itself otherwise.
    pub fn arithmetic(self) -> DType {
        match self {
            DType::F16 | DType::BF16 => DType::F32,
            other => other,
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::Bool | DType::U8 | DType::I8 => 1,
            DType::I16 | DType::F16 | DType::BF16 => 2,
            DType::I32 | DType::F32 => 4,
            DType::I64 | DType::F64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F16 | DType::BF16 | DType::F32 | DType::F64)
    }

    /// The name used in the IR text form and in messages.
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::U8 => "u8",
            DType::I8 => "i8",
            DType::I16 => "i16",
            DType::I32 => "i32",
            DType::I64 => "i64",
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A symbolic dimension: a size known only when the method runs, at most
/// its bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SymbolId(pub(crate) u32);

impl SymbolId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for SymbolId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// One dimension of a shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dim {
    Fixed(u64),
    Symbol(SymbolId),
}

impl Dim {
    pub fn fixed(self) -> Option<u64> {
        match self {
            Dim::Fixed(size) => Some(size),
            Dim::Symbol(_) => None,
        }
    }
}

impl fmt::Display for Dim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dim::Fixed(size) => write!(f, "{size}"),
            Dim::Symbol(symbol) => write!(f, "{symbol}"),
        }
    }
}

pub type Shape = Vec<Dim>;

/// The dim order of an `[N, C, H, W]` value stored channels-last (NHWC).
pub const CHANNELS_LAST: [u8; 4] = [0, 2, 3, 1];

/// The dim order of a convolution filter `[O, I, H, W]` stored as HWIO: for
/// each kernel tap, a matrix of input by output channels, which is what
/// convolutions with a channels-last result multiply by.
pub const FILTER_HWIO: [u8; 4] = [2, 3, 1, 0];

/// The type of a tensor value: element type, shape and the order its
/// dimensions are laid out in memory (outermost first).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Shape,
    pub dim_order: Vec<u8>,
}

impl TensorType {
    /// A tensor of `dtype` and `shape`, stored row-major.
    pub fn contiguous(dtype: DType, shape: Shape) -> TensorType {
        TensorType {
            dtype,
            dim_order: (0..shape.len() as u8).collect(),
            shape,
        }
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// The shape if every dimension is fixed.
    pub fn fixed_shape(&self) -> Option<Vec<u64>> {
        self.shape.iter().map(|dim| dim.fixed()).collect()
    }

    /// Whether the layout is row-major (the identity dim order).
    pub fn is_contiguous(&self) -> bool {
        self.dim_order
            .iter()
            .enumerate()
            .all(|(index, &dim)| index == dim as usize)
    }

    /// The stride (in elements) of each dimension in memory, when every
    /// dimension is fixed.
    pub fn fixed_strides(&self) -> Option<Vec<u64>> {
        let sizes = self.fixed_shape()?;
        Some(strides_in_order(
            &sizes,
            &self.dim_order,
            1,
            |stride, size| stride * size,
        ))
    }

    /// Bytes at the largest size the shape allows, given symbol bounds
    /// (`u64::MAX` when that does not fit in 64 bits).
    pub fn max_bytes(&self, bound: impl Fn(SymbolId) -> u64) -> u64 {
        self.shape
            .iter()
            .map(|dim| match dim {
                Dim::Fixed(size) => *size,
                Dim::Symbol(symbol) => bound(*symbol),
            })
            .fold(self.dtype.size() as u64, u64::saturating_mul)
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (index, dim) in self.shape.iter().enumerate() {
            if index > 0 {
                f.write_str(",")?;
            }
            write!(f, "{dim}")?;
        }
        f.write_str("]")?;
        if !self.is_contiguous() {
            write!(f, "{{order {:?}}}", self.dim_order)?;
        }
        Ok(())
    }
}

/// A scalar attribute of an op: PyTorch's `Scalar` keeps the kind of the
/// Python value it came from. Floats compare and hash by their bits, as
/// every float attribute does ([`Real`]): two ops are the same op only when
/// they compute the same thing, so `-0.0` differs from `0.0` and a NaN equals
/// itself.
#[derive(Clone, Copy, Debug)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    Float(f64),
}

impl PartialEq for Scalar {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
            (Scalar::Int(a), Scalar::Int(b)) => a == b,
            (Scalar::Float(a), Scalar::Float(b)) => a.to_bits() == b.to_bits(),
            _ => false,
        }
    }
}

impl Eq for Scalar {}

impl Hash for Scalar {
    fn hash<H: Hasher>(&self, state: &mut H) {
        std::mem::discriminant(self).hash(state);
        match self {
            Scalar::Bool(value) => value.hash(state),
            Scalar::Int(value) => value.hash(state),
            Scalar::Float(value) => value.to_bits().hash(state),
        }
    }
}

impl Scalar {
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::Bool(value) => f64::from(u8::from(value)),
            Scalar::Int(value) => value as f64,
            Scalar::Float(value) => value,
        }
    }

    /// The value as an integer, truncating floats toward zero as torch does
    /// when a float scalar meets an integer tensor.
    pub fn as_i64(self) -> i64 {
        match self {
            Scalar::Bool(value) => i64::from(value),
            Scalar::Int(value) => value,
            Scalar::Float(value) => value as i64,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Bool(value) => write!(f, "{value}"),
            Scalar::Int(value) => write!(f, "{value}"),
            Scalar::Float(value) => write!(f, "{value:?}"),
        }
    }
}

/// A real-number attribute (an epsilon, a slope, a clamp bound), compared
/// and hashed by its bits so that ops holding one can be keys.
#[derive(Clone, Copy, Debug)]
pub struct Real(pub f64);

impl PartialEq for Real {
    fn eq(&self, other: &Self) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Real {}

impl Hash for Real {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

impl fmt::Display for Real {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

/// The stride of each dimension of a tensor of `sizes` laid out in
/// `dim_order` (outermost first), in elements: the innermost dimension moves
/// by `one`, each outer one by the product of the sizes inside it. Generic
/// over the size type so that the code generator derives strides of
/// symbolic shapes with the same rule.
pub fn strides_in_order<S: Copy>(
    sizes: &[S],
    dim_order: &[u8],
    one: S,
    mut times: impl FnMut(S, S) -> S,
) -> Vec<S> {
    let mut strides = vec![one; sizes.len()];
    let mut stride = one;
    for &dim in dim_order.iter().rev() {
        strides[usize::from(dim)] = stride;
        stride = times(stride, sizes[usize::from(dim)]);
    }
    strides
}
