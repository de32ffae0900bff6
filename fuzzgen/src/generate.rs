//! Programs from bytes: a small graph of ops in the IR's text form, built
//! node by node from an [`Unstructured`], with the inputs to run it on.
//!
//! Each node reads values made before it (inputs, constants or results of
//! earlier nodes), or fresh inputs and constants of the shape it needs, and
//! its output type is computed here by PyTorch's rules for the op. The
//! rules aim at programs the verifier accepts; where one disagrees with
//! ptec's, the verifier refuses the program, which the invariant allows and
//! the differential test counts.

use std::fmt::Write as _;

use arbitrary::{Result, Unstructured};
use ptec_ir::DType;

/// The element types programs use.
const DTYPES: [DType; 5] = [DType::F32, DType::F16, DType::I32, DType::I64, DType::Bool];

/// The most nodes a program has (fresh inputs and constants aside).
const MAX_NODES: usize = 8;

/// A generated program: its IR text and the bytes of each input, in the
/// order of the graph's inputs (row-major, little-endian).
#[derive(Debug, Clone)]
pub struct Case {
    pub text: String,
    pub inputs: Vec<Input>,
}

/// One input's element type, sizes and bytes.
#[derive(Debug, Clone)]
pub struct Input {
    pub dtype: DType,
    pub sizes: Vec<u64>,
    pub data: Vec<u8>,
}

impl<'a> arbitrary::Arbitrary<'a> for Case {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let mut builder = Builder {
            u,
            header: Vec::new(),
            body: Vec::new(),
            values: Vec::new(),
            inputs: Vec::new(),
            finite: false,
        };
        let first = builder.u.int_in_range(1..=2)?;
        for _ in 0..first {
            let dtype = *builder.u.choose(&DTYPES)?;
            let shape = builder.shape()?;
            builder.input(dtype, shape)?;
        }
        let nodes = builder.u.int_in_range(1..=MAX_NODES)?;
        for _ in 0..nodes {
            builder.node()?;
        }
        builder.finish()
    }
}

/// A value of the program being built.
#[derive(Debug, Clone)]
struct Value {
    id: usize,
    dtype: DType,
    shape: Vec<usize>,
    /// Written by a node (not an input or a constant).
    computed: bool,
}

struct Builder<'u, 'a> {
    u: &'u mut Unstructured<'a>,
    /// Inputs and constants, written before the nodes.
    header: Vec<String>,
    body: Vec<String>,
    values: Vec<Value>,
    inputs: Vec<Input>,
    /// Make only finite elements (no NaN or infinity).
    finite: bool,
}

/// The kinds of node the generator makes.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Unary,
    Binary,
    BinaryScalar,
    Compare,
    Where,
    MaskedFill,
    MatMul,
    Addmm,
    Reduce,
    Softmax,
    Permute,
    Reshape,
    Slice,
    Cat,
    Pad,
    Convolution,
    MaxPool,
    AvgPool,
    Cast,
}

const KINDS: [Kind; 19] = [
    Kind::Unary,
    Kind::Binary,
    Kind::BinaryScalar,
    Kind::Compare,
    Kind::Where,
    Kind::MaskedFill,
    Kind::MatMul,
    Kind::Addmm,
    Kind::Reduce,
    Kind::Softmax,
    Kind::Permute,
    Kind::Reshape,
    Kind::Slice,
    Kind::Cat,
    Kind::Pad,
    Kind::Convolution,
    Kind::MaxPool,
    Kind::AvgPool,
    Kind::Cast,
];

const FLOATS: [DType; 2] = [DType::F32, DType::F16];
const NUMBERS: [DType; 4] = [DType::F32, DType::F16, DType::I32, DType::I64];

/// The shape `a` and `b` broadcast to, if they do.
fn broadcast(a: &[usize], b: &[usize]) -> Option<Vec<usize>> {
    let rank = a.len().max(b.len());
    let at = |shape: &[usize], k: usize| {
        (k + shape.len())
            .checked_sub(rank)
            .map_or(1, |index| shape[index])
    };
    (0..rank)
        .map(|k| match (at(a, k), at(b, k)) {
            (x, y) if x == y => Some(x),
            (1, y) => Some(y),
            (x, 1) => Some(x),
            _ => None,
        })
        .collect()
}

/// Pooling's output length (PyTorch's `pooling_output_shape`), if the
/// window fits.
fn pooled(
    size: usize,
    kernel: usize,
    stride: usize,
    pad: usize,
    dilation: usize,
    ceil: bool,
) -> Option<usize> {
    let span = (size + 2 * pad).checked_sub(dilation * (kernel - 1) + 1)?;
    let round = if ceil { stride - 1 } else { 0 };
    let mut out = (span + round) / stride + 1;
    if ceil && (out - 1) * stride >= size + pad {
        out -= 1;
    }
    Some(out)
}

fn list(values: &[usize]) -> String {
    let items: Vec<String> = values.iter().map(usize::to_string).collect();
    format!("[{}]", items.join(", "))
}

impl Builder<'_, '_> {
    /// A random shape: 0 to 4 dimensions of sizes 0 to 5 (rarely 0).
    fn shape(&mut self) -> Result<Vec<usize>> {
        let rank = self.u.int_in_range(0..=4)?;
        (0..rank).map(|_| self.size(1)).collect()
    }

    /// A dimension's size, at least `min`, zero one time in sixteen.
    fn size(&mut self, min: usize) -> Result<usize> {
        if min == 0 && self.u.ratio(1, 16)? {
            return Ok(0);
        }
        self.u.int_in_range(min.max(1)..=5)
    }

    fn type_text(dtype: DType, shape: &[usize]) -> String {
        let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
        format!("{}[{}]", dtype.name(), dims.join(","))
    }

    fn add_value(&mut self, dtype: DType, shape: Vec<usize>, computed: bool) -> usize {
        let id = self.values.len();
        self.values.push(Value {
            id,
            dtype,
            shape,
            computed,
        });
        id
    }

    /// One element's bytes: special values often, small exact ones
    /// otherwise.
    fn element(&mut self, dtype: DType) -> Result<Vec<u8>> {
        const SPECIAL: [f32; 8] = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            1e-3,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
        ];
        let specials = if self.finite {
            &SPECIAL[..5]
        } else {
            &SPECIAL[..]
        };
        let float = |u: &mut Unstructured<'_>| -> Result<f32> {
            Ok(if u.ratio(1, 8)? {
                *u.choose(specials)?
            } else {
                f32::from(u.int_in_range(-32i8..=32)?) / 4.0
            })
        };
        Ok(match dtype {
            DType::F32 => float(self.u)?.to_le_bytes().to_vec(),
            DType::F16 => half::f16::from_f32(float(self.u)?).to_le_bytes().to_vec(),
            DType::I32 => {
                let value = if self.u.ratio(1, 16)? {
                    *self.u.choose(&[i32::MIN, i32::MAX])?
                } else {
                    self.u.int_in_range(-9..=9)?
                };
                value.to_le_bytes().to_vec()
            }
            DType::I64 => {
                let value = if self.u.ratio(1, 16)? {
                    *self.u.choose(&[i64::MIN, i64::MAX])?
                } else {
                    self.u.int_in_range(-9..=9)?
                };
                value.to_le_bytes().to_vec()
            }
            _ => vec![u8::from(self.u.arbitrary::<bool>()?)],
        })
    }

    /// A new input of this type.
    fn input(&mut self, dtype: DType, shape: Vec<usize>) -> Result<usize> {
        let count: usize = shape.iter().product();
        let mut data = Vec::with_capacity(count * dtype.size());
        for _ in 0..count {
            data.extend(self.element(dtype)?);
        }
        let index = self.inputs.len();
        self.inputs.push(Input {
            dtype,
            sizes: shape.iter().map(|&size| size as u64).collect(),
            data,
        });
        let id = self.add_value(dtype, shape.clone(), false);
        self.header.push(format!(
            "%{id}: {} = input {index}",
            Self::type_text(dtype, &shape)
        ));
        Ok(id)
    }

    /// A new constant of this type, its elements written out.
    fn constant(&mut self, dtype: DType, shape: Vec<usize>) -> Result<usize> {
        let count: usize = shape.iter().product();
        let mut elements = Vec::with_capacity(count);
        for _ in 0..count {
            let bytes = self.element(dtype)?;
            elements.push(match dtype {
                DType::F32 => {
                    let value = f32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]);
                    format!("{value:?}")
                }
                DType::F16 => format!("0x{:04x}", u16::from_le_bytes([bytes[0], bytes[1]])),
                DType::I32 => {
                    i32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]).to_string()
                }
                DType::I64 => {
                    let mut word = [0; 8];
                    word.copy_from_slice(&bytes);
                    i64::from_le_bytes(word).to_string()
                }
                _ => (bytes[0] != 0).to_string(),
            });
        }
        let id = self.add_value(dtype, shape.clone(), false);
        self.header.push(format!(
            "%{id}: {} = constant [{}]",
            Self::type_text(dtype, &shape),
            elements.join(", ")
        ));
        Ok(id)
    }

    /// A new input or constant of this type.
    fn fresh(&mut self, dtype: DType, shape: Vec<usize>) -> Result<usize> {
        if self.u.ratio(1, 3)? {
            self.constant(dtype, shape)
        } else {
            self.input(dtype, shape)
        }
    }

    /// An existing value that `accept` takes, or none.
    fn pick(&mut self, accept: impl Fn(&Value) -> bool) -> Result<Option<usize>> {
        let candidates: Vec<usize> = self
            .values
            .iter()
            .filter(|value| accept(value))
            .map(|value| value.id)
            .collect();
        if candidates.is_empty() || self.u.ratio(1, 6)? {
            return Ok(None);
        }
        Ok(Some(*self.u.choose(&candidates)?))
    }

    /// An existing value of one of `dtypes` and a rank `rank` takes, or a
    /// fresh one.
    fn operand(&mut self, dtypes: &[DType], rank: impl Fn(usize) -> bool) -> Result<usize> {
        if let Some(id) =
            self.pick(|value| dtypes.contains(&value.dtype) && rank(value.shape.len()))?
        {
            return Ok(id);
        }
        let dtype = *self.u.choose(dtypes)?;
        let mut shape = self.shape()?;
        while !rank(shape.len()) {
            if shape.len() == 4 {
                shape.clear();
            } else {
                shape.insert(0, self.size(1)?);
            }
        }
        self.fresh(dtype, shape)
    }

    /// A value of `dtype` whose shape broadcasts with `shape` to `shape`
    /// itself (`exact`) or to anything.
    fn broadcastable(&mut self, dtype: DType, shape: &[usize], exact: bool) -> Result<usize> {
        let fits = |other: &[usize]| {
            broadcast(shape, other).is_some_and(|result| !exact || result == shape)
        };
        if let Some(id) = self.pick(|value| value.dtype == dtype && fits(&value.shape))? {
            return Ok(id);
        }
        let skip = self.u.int_in_range(0..=shape.len())?;
        let mut other = Vec::new();
        for &size in &shape[skip..] {
            other.push(if self.u.ratio(1, 3)? { 1 } else { size });
        }
        self.fresh(dtype, other)
    }

    /// Writes a node with one output.
    fn emit(&mut self, dtype: DType, shape: Vec<usize>, call: String) -> usize {
        let id = self.add_value(dtype, shape.clone(), true);
        self.body.push(format!(
            "%{id}: {} = {call}",
            Self::type_text(dtype, &shape)
        ));
        id
    }

    fn node(&mut self) -> Result<()> {
        match *self.u.choose(&KINDS)? {
            Kind::Unary => self.unary(),
            Kind::Binary => self.binary(),
            Kind::BinaryScalar => self.binary_scalar(),
            Kind::Compare => self.compare(),
            Kind::Where => self.where_(),
            Kind::MaskedFill => self.masked_fill(),
            Kind::MatMul => self.mat_mul(false),
            Kind::Addmm => self.mat_mul(true),
            Kind::Reduce => self.reduce(),
            Kind::Softmax => self.softmax(),
            Kind::Permute => self.permute(),
            Kind::Reshape => self.reshape(),
            Kind::Slice => self.slice(),
            Kind::Cat => self.cat(),
            Kind::Pad => self.pad(),
            Kind::Convolution => self.convolution(),
            Kind::MaxPool => self.pool(true),
            Kind::AvgPool => self.pool(false),
            Kind::Cast => self.cast(),
        }
    }

    fn unary(&mut self) -> Result<()> {
        let x = self.operand(&DTYPES, |_| true)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let names: &[&str] = match dtype {
            DType::Bool => &["logical_not"],
            DType::I32 | DType::I64 => &["neg", "abs", "bitwise_not", "sign"],
            _ => &[
                "neg",
                "abs",
                "relu",
                "exp",
                "tanh",
                "sigmoid",
                "sqrt",
                "log",
                "sin",
                "floor",
                "round",
                "gelu",
                "silu",
                "reciprocal",
                "sign",
            ],
        };
        let name = *self.u.choose(names)?;
        self.emit(dtype, shape, format!("{name}(%{x})"));
        Ok(())
    }

    /// Two numeric operands that broadcast together: their ids, their
    /// element type and the broadcast shape.
    fn broadcast_pair(&mut self) -> Result<(usize, usize, DType, Vec<usize>)> {
        let a = self.operand(&NUMBERS, |_| true)?;
        let Value { dtype, shape, .. } = self.values[a].clone();
        let b = self.broadcastable(dtype, &shape, false)?;
        let out = broadcast(&shape, &self.values[b].shape).unwrap_or(shape);
        Ok((a, b, dtype, out))
    }

    fn binary(&mut self) -> Result<()> {
        let (a, b, dtype, out) = self.broadcast_pair()?;
        let mut names = vec!["add", "sub", "mul", "maximum", "minimum"];
        if dtype.is_float() {
            names.extend(["div", "pow", "atan2"]);
        }
        let name = *self.u.choose(&names)?;
        self.emit(dtype, out, format!("{name}(%{a}, %{b})"));
        Ok(())
    }

    fn binary_scalar(&mut self) -> Result<()> {
        let x = self.operand(&NUMBERS, |_| true)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let name = *self
            .u
            .choose(&["add_scalar", "sub_scalar", "mul_scalar", "rsub"])?;
        let scalar = self.u.int_in_range(-3i8..=3)?;
        self.emit(dtype, shape, format!("{name}(%{x}) scalar={scalar}"));
        Ok(())
    }

    fn compare(&mut self) -> Result<()> {
        let (a, b, _, out) = self.broadcast_pair()?;
        let name = *self.u.choose(&["gt", "lt", "ge", "le", "eq", "ne"])?;
        self.emit(DType::Bool, out, format!("{name}(%{a}, %{b})"));
        Ok(())
    }

    fn where_(&mut self) -> Result<()> {
        let a = self.operand(&DTYPES, |_| true)?;
        let Value { dtype, shape, .. } = self.values[a].clone();
        let condition = self.broadcastable(DType::Bool, &shape, false)?;
        let out = broadcast(&shape, &self.values[condition].shape).unwrap_or(shape);
        let b = self.broadcastable(dtype, &out, true)?;
        self.emit(dtype, out, format!("where(%{condition}, %{a}, %{b})"));
        Ok(())
    }

    fn masked_fill(&mut self) -> Result<()> {
        let x = self.operand(&DTYPES, |_| true)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let mask = self.broadcastable(DType::Bool, &shape, true)?;
        let value = match dtype {
            DType::Bool => "true",
            DType::I32 | DType::I64 => "-2",
            _ => "-1.5",
        };
        self.emit(
            dtype,
            shape,
            format!("masked_fill(%{x}, %{mask}) value={value}"),
        );
        Ok(())
    }

    fn mat_mul(&mut self, addmm: bool) -> Result<()> {
        let a = self.operand(&NUMBERS, |rank| rank == 2)?;
        let Value { dtype, shape, .. } = self.values[a].clone();
        let (m, k) = (shape[0], shape[1]);
        let columns = self.size(0)?;
        let b = match self
            .pick(|value| value.dtype == dtype && value.shape.len() == 2 && value.shape[0] == k)?
        {
            Some(b) => b,
            None => self.fresh(dtype, vec![k, columns])?,
        };
        let n = self.values[b].shape[1];
        if addmm {
            let bias = self.broadcastable(dtype, &[m, n], true)?;
            self.emit(
                dtype,
                vec![m, n],
                format!("addmm(%{bias}, %{a}, %{b}) beta=1 alpha=1"),
            );
        } else {
            self.emit(dtype, vec![m, n], format!("mat_mul(%{a}, %{b})"));
        }
        Ok(())
    }

    /// Some of `rank` dimensions, sorted, at least one.
    fn dims(&mut self, rank: usize) -> Result<Vec<usize>> {
        let mut dims = Vec::new();
        for dim in 0..rank {
            if self.u.arbitrary()? {
                dims.push(dim);
            }
        }
        if dims.is_empty() {
            dims.push(self.u.choose_index(rank)?);
        }
        Ok(dims)
    }

    fn reduce(&mut self) -> Result<()> {
        let x = self.operand(&NUMBERS, |rank| rank >= 1)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let dims = self.dims(shape.len())?;
        let keepdim: bool = self.u.arbitrary()?;
        let mut names = vec!["reduce_sum", "reduce_max", "reduce_min"];
        if dtype.is_float() {
            names.push("reduce_mean");
        }
        let name = *self.u.choose(&names)?;
        let out_dtype = match (name, dtype) {
            ("reduce_sum", DType::I32) => DType::I64,
            _ => dtype,
        };
        let out: Vec<usize> = shape
            .iter()
            .enumerate()
            .filter_map(|(k, &size)| match (dims.contains(&k), keepdim) {
                (false, _) => Some(size),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        self.emit(
            out_dtype,
            out,
            format!("{name}(%{x}) dims={} keepdim={keepdim}", list(&dims)),
        );
        Ok(())
    }

    /// A softmax, a log-softmax, or PyTorch's safe softmax as `torch.export`
    /// writes it (which `fuse-safe-softmax` folds) of rows masked to -inf
    /// at random.
    fn softmax(&mut self) -> Result<()> {
        let x = self.operand(&FLOATS, |rank| rank >= 1)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let dim = self.u.choose_index(shape.len())?;
        let log: bool = self.u.arbitrary()?;
        if log || self.u.arbitrary()? {
            let call = format!("softmax(%{x}) dim={dim} log={log} safe=false");
            self.emit(dtype, shape, call);
            return Ok(());
        }
        let mut rows = shape.clone();
        rows[dim] = 1;
        let masks = self.fresh(DType::Bool, rows.clone())?;
        let call = format!("masked_fill(%{x}, %{masks}) value=-inf");
        let x = self.emit(dtype, shape.clone(), call);
        let call = format!("softmax(%{x}) dim={dim} log=false safe=false");
        let probabilities = self.emit(dtype, shape.clone(), call);
        let call = format!("eq_scalar(%{x}) scalar=-inf");
        let infinite = self.emit(DType::Bool, shape.clone(), call);
        let finite = self.emit(
            DType::Bool,
            shape.clone(),
            format!("logical_not(%{infinite})"),
        );
        let call = format!("reduce_any(%{finite}) dims=[{dim}] keepdim=true");
        let any_finite = self.emit(DType::Bool, rows.clone(), call);
        let masked = self.emit(DType::Bool, rows, format!("logical_not(%{any_finite})"));
        let zeros = self.emit(dtype, shape.clone(), "full() value=0.0".into());
        let call = format!("where(%{masked}, %{zeros}, %{probabilities})");
        self.emit(dtype, shape, call);
        Ok(())
    }

    fn permute(&mut self) -> Result<()> {
        let x = self.operand(&DTYPES, |rank| rank >= 1)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let mut dims: Vec<usize> = (0..shape.len()).collect();
        for k in (1..dims.len()).rev() {
            let other = self.u.int_in_range(0..=k)?;
            dims.swap(k, other);
        }
        let out = dims.iter().map(|&dim| shape[dim]).collect();
        self.emit(dtype, out, format!("permute(%{x}) dims={}", list(&dims)));
        Ok(())
    }

    fn reshape(&mut self) -> Result<()> {
        let x = self.operand(&DTYPES, |_| true)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let count: usize = shape.iter().product();
        let rank = self.u.int_in_range(usize::from(count != 1)..=4)?;
        let mut out = vec![1; rank];
        if count == 0 {
            let at = self.u.choose_index(rank)?;
            out[at] = 0;
        } else {
            let mut rest = count;
            let mut factor = 2;
            while rest > 1 {
                while !rest.is_multiple_of(factor) {
                    factor += 1;
                }
                rest /= factor;
                let at = self.u.choose_index(rank)?;
                out[at] *= factor;
            }
        }
        self.emit(dtype, out, format!("reshape(%{x})"));
        Ok(())
    }

    fn slice(&mut self) -> Result<()> {
        let x = self.operand(&DTYPES, |rank| rank >= 1)?;
        let Value {
            dtype, mut shape, ..
        } = self.values[x].clone();
        let dim = self.u.choose_index(shape.len())?;
        let size = shape[dim];
        let start = self.u.int_in_range(0..=size)?;
        let step = self.u.int_in_range(1..=3)?;
        let most = (size - start).div_ceil(step);
        shape[dim] = self.u.int_in_range(0..=most)?;
        self.emit(
            dtype,
            shape,
            format!("slice(%{x}) dim={dim} start={start} step={step}"),
        );
        Ok(())
    }

    fn cat(&mut self) -> Result<()> {
        let a = self.operand(&DTYPES, |rank| rank >= 1)?;
        let Value { dtype, shape, .. } = self.values[a].clone();
        let dim = self.u.choose_index(shape.len())?;
        let matches = |other: &[usize]| {
            other.len() == shape.len()
                && other
                    .iter()
                    .zip(&shape)
                    .enumerate()
                    .all(|(k, (x, y))| k == dim || x == y)
        };
        let b = match self.pick(|value| value.dtype == dtype && matches(&value.shape))? {
            Some(b) => b,
            None => {
                let mut other = shape.clone();
                other[dim] = self.size(0)?;
                self.fresh(dtype, other)?
            }
        };
        let mut out = shape.clone();
        out[dim] += self.values[b].shape[dim];
        self.emit(dtype, out, format!("cat(%{a}, %{b}) dim={dim}"));
        Ok(())
    }

    fn pad(&mut self) -> Result<()> {
        let x = self.operand(&NUMBERS, |rank| rank >= 1)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        // The IR pads every dimension (import fills in PyTorch's leading
        // unpadded ones); most stay unpadded here.
        let mut before = Vec::new();
        let mut after = Vec::new();
        let mut out = shape.clone();
        for size in &mut out {
            let [b, a] = match self.u.ratio(1, 2)? {
                true => [self.u.int_in_range(0..=2)?, self.u.int_in_range(0..=2)?],
                false => [0, 0],
            };
            before.push(b);
            after.push(a);
            *size += b + a;
        }
        let value = if dtype.is_float() { "-0.5" } else { "3" };
        self.emit(
            dtype,
            out,
            format!(
                "pad(%{x}) before={} after={} value={value}",
                list(&before),
                list(&after)
            ),
        );
        Ok(())
    }

    fn convolution(&mut self) -> Result<()> {
        let x = self.operand(&FLOATS, |rank| rank == 4)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let channels = shape[1];
        let divisors: Vec<usize> = (1..=channels.max(1))
            .filter(|&g| channels.is_multiple_of(g))
            .collect();
        let groups = *self.u.choose(&divisors)?;
        let out_channels = groups * self.u.int_in_range(1..=2)?;
        let stride = [self.u.int_in_range(1..=2)?, self.u.int_in_range(1..=2)?];
        let padding = [self.u.int_in_range(0..=1)?, self.u.int_in_range(0..=1)?];
        let dilation = [self.u.int_in_range(1..=2)?, self.u.int_in_range(1..=2)?];
        let mut kernel = [self.u.int_in_range(1..=3)?, self.u.int_in_range(1..=3)?];
        let mut out = vec![shape[0], out_channels, 0, 0];
        for k in 0..2 {
            out[2 + k] = match pooled(
                shape[2 + k],
                kernel[k],
                stride[k],
                padding[k],
                dilation[k],
                false,
            ) {
                Some(size) => size,
                None => {
                    kernel[k] = 1;
                    pooled(shape[2 + k], 1, stride[k], padding[k], dilation[k], false).unwrap_or(0)
                }
            };
        }
        // Finite weights: some kernels skip a tap in the padding, others
        // multiply a padded zero by its weight, so an infinite weight there
        // gives a number on one and NaN on the other. PyTorch's kernels
        // differ the same way (eager f64 and im2col give NaN; its depthwise
        // kernel and ExecuTorch's portable one skip), so neither is wrong.
        self.finite = true;
        let weight = self.fresh(
            dtype,
            vec![out_channels, channels / groups, kernel[0], kernel[1]],
        )?;
        self.finite = false;
        let bias = if self.u.arbitrary()? {
            let bias = self.fresh(dtype, vec![out_channels])?;
            format!(", bias=%{bias}")
        } else {
            String::new()
        };
        self.emit(
            dtype,
            out,
            format!(
                "convolution(%{x}, %{weight}{bias}) stride={} padding={} dilation={} groups={groups}",
                list(&stride),
                list(&padding),
                list(&dilation)
            ),
        );
        Ok(())
    }

    fn pool(&mut self, max: bool) -> Result<()> {
        let x = self.operand(&FLOATS, |rank| rank == 4)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let mut kernel = [self.u.int_in_range(1..=3)?, self.u.int_in_range(1..=3)?];
        let stride = [self.u.int_in_range(1..=2)?, self.u.int_in_range(1..=2)?];
        let mut padding = [
            self.u.int_in_range(0..=kernel[0] / 2)?,
            self.u.int_in_range(0..=kernel[1] / 2)?,
        ];
        let mut dilation = match max {
            true => [self.u.int_in_range(1..=2)?, self.u.int_in_range(1..=2)?],
            false => [1, 1],
        };
        let ceil: bool = self.u.arbitrary()?;
        let mut out = shape.clone();
        for k in 0..2 {
            // A window that does not fit the input (the verifier refuses
            // it) one time in eight; one of a single element otherwise.
            if pooled(
                shape[2 + k],
                kernel[k],
                stride[k],
                padding[k],
                dilation[k],
                ceil,
            )
            .is_none()
                && !self.u.ratio(1, 8)?
            {
                (kernel[k], padding[k], dilation[k]) = (1, 0, 1);
            }
            let size = pooled(
                shape[2 + k],
                kernel[k],
                stride[k],
                padding[k],
                dilation[k],
                ceil,
            );
            out[2 + k] = size.unwrap_or(0);
        }
        let window = format!(
            "kernel={} stride={} padding={}",
            list(&kernel),
            list(&stride),
            list(&padding)
        );
        if max {
            let values = self.add_value(dtype, out.clone(), true);
            let indices = self.add_value(DType::I64, out.clone(), true);
            self.body.push(format!(
                "%{values}: {}, %{indices}: {} = max_pool2d(%{x}) {window} dilation={} ceil_mode={ceil}",
                Self::type_text(dtype, &out),
                Self::type_text(DType::I64, &out),
                list(&dilation)
            ));
        } else {
            let include: bool = self.u.arbitrary()?;
            self.emit(
                dtype,
                out,
                format!("avg_pool2d(%{x}) {window} ceil_mode={ceil} count_include_pad={include}"),
            );
        }
        Ok(())
    }

    fn cast(&mut self) -> Result<()> {
        let x = self.operand(&DTYPES, |_| true)?;
        let Value { dtype, shape, .. } = self.values[x].clone();
        let others: Vec<DType> = DTYPES.into_iter().filter(|&to| to != dtype).collect();
        let to = *self.u.choose(&others)?;
        self.emit(to, shape, format!("copy(%{x})"));
        Ok(())
    }

    /// The graph's text: inputs and constants, the nodes, and a return of
    /// the last node's result and some others.
    fn finish(self) -> Result<Case> {
        let computed: Vec<usize> = self
            .values
            .iter()
            .filter(|value| value.computed)
            .map(|value| value.id)
            .collect();
        let mut outputs = Vec::new();
        if let Some(&last) = computed.last() {
            outputs.push(last);
        }
        for &id in &computed {
            if !outputs.contains(&id) && self.u.ratio(1, 3)? {
                outputs.push(id);
            }
        }
        let mut text = String::from("graph forward {\n");
        for line in self.header.iter().chain(&self.body) {
            let _ = writeln!(text, "  {line}");
        }
        let returned: Vec<String> = outputs.iter().map(|id| format!("%{id}")).collect();
        let _ = writeln!(text, "  return {}\n}}", returned.join(", "));
        Ok(Case {
            text,
            inputs: self.inputs,
        })
    }
}
