//! The operators of ExecuTorch's LLM export path (`export_llama`): the KV
//! cache's in-place update and the attention over it (`llama::*`, from
//! `extension/llm/custom_ops`), and embedding tables quantized to 8, 4 or 2
//! bits (`quantized_decomposed::embedding_*`, from `kernels/quantized`).
//!
//! Each is a composition of ordinary ops. A cache is `[batch, length,
//! heads, head_dim]`, state that persists between calls; `update_cache`
//! writes `value` at rows `start_pos..start_pos + seq_len` with an
//! `index_put` in place, and `custom_sdpa` attends over the rows
//! `0..start_pos + seq_len` of the caches (a slice whose length is known at
//! run time), query heads sharing key heads in groups, the causal mask
//! letting query row `m` see key rows `0..=start_pos + m`, or over every row
//! of the caches with an additive `[seq_len, cache length]` mask, as
//! ExecuTorch 1.5.1's kernel does. `custom_quantized_sdpa` (`--quantize_kv_cache`)
//! attends the same way over int8 caches whose every token and head has a
//! scale and a zero point, the query quantized alike: each operand is
//! dequantized, `(x - zero_point) * scale` in f32, the caches' filled rows
//! only. The embeddings gather the packed rows and their scales,
//! unpack the integers with shifts and masks, and compute `(q - zero_point)
//! * scale` in f32, rounded once into the output's type.

use ptec_ir::ops::creation::{Arange, Full};
use ptec_ir::ops::elementwise::{BinaryOp, Func};
use ptec_ir::ops::gather::{Index, IndexPut};
use ptec_ir::ops::layout::{Cat, Copy, Slice};
use ptec_ir::ops::linalg::{ClampRange, MatMul};
use ptec_ir::ops::reduce::Softmax;
use ptec_ir::symbolic::{SymOp, Term};
use ptec_ir::{DType, Dim, Op, OpKind, Scalar, TensorType, ValueId};

use super::Operator;
use super::layout::{permuted, view};
use crate::call::Call;
use crate::error::ImportError;

const ATTENTION: &[OpKind] = &[
    OpKind::Slice,
    OpKind::Permute,
    OpKind::Reshape,
    OpKind::MatMul,
    OpKind::Elementwise,
    OpKind::Arange,
    OpKind::Softmax,
];

const QUANTIZED_ATTENTION: &[OpKind] = &[
    OpKind::Slice,
    OpKind::Permute,
    OpKind::Reshape,
    OpKind::MatMul,
    OpKind::Elementwise,
    OpKind::Arange,
    OpKind::Softmax,
    OpKind::Copy,
];

const CACHE_UPDATE: &[OpKind] = &[OpKind::Arange, OpKind::IndexPut, OpKind::Full];

const CACHE_UPDATE_AT: &[OpKind] = &[
    OpKind::Arange,
    OpKind::IndexPut,
    OpKind::Full,
    OpKind::Elementwise,
    OpKind::Reshape,
];

const DELTA_RULE: &[OpKind] = &[
    OpKind::Slice,
    OpKind::Reshape,
    OpKind::MatMul,
    OpKind::Elementwise,
    OpKind::Cat,
    OpKind::Copy,
];

/// The most tokens `gated_delta_rule` unrolls its recurrence over.
const MAX_UNROLLED_TOKENS: u64 = 4096;

const EMBEDDING: &[OpKind] = &[
    OpKind::Index,
    OpKind::Elementwise,
    OpKind::Reshape,
    OpKind::Cat,
    OpKind::Copy,
];

pub(super) const OPERATORS: &[Operator] = &[
    (
        "llama::update_cache.out(Tensor value, Tensor(a!) cache, SymInt start_pos, *, Tensor(b!) out) -> Tensor(b!)",
        update_cache,
        CACHE_UPDATE,
    ),
    (
        "llama::update_cache_with_indices.out(Tensor value, Tensor(a!) cache, SymInt start_pos, Tensor indices, *, Tensor(b!) out) -> Tensor(b!)",
        update_cache_with_indices,
        CACHE_UPDATE_AT,
    ),
    (
        "llama::custom_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos, Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, *, Tensor(a!) out) -> Tensor(a!)",
        custom_sdpa,
        ATTENTION,
    ),
    (
        "llama::custom_quantized_sdpa.out(Tensor query, Tensor key, Tensor value, SymInt start_pos, Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, Tensor? q_zero_points=None, Tensor? q_scales=None, Tensor? k_zero_points=None, Tensor? k_scales=None, Tensor? v_zero_points=None, Tensor? v_scales=None, bool is_seq_at_dim_2=False, *, Tensor(a!) out) -> Tensor(a!)",
        custom_quantized_sdpa,
        QUANTIZED_ATTENTION,
    ),
    (
        "llama::sdpa_with_kv_cache.out(Tensor query, Tensor key, Tensor value, Tensor(a!) key_cache, Tensor(b!) value_cache, SymInt start_pos, SymInt seq_len, Tensor? attn_mask=None, float drpout_p=0., bool is_causal=False, float? scale=None, *, Tensor(c!) out) -> Tensor(c!)",
        sdpa_with_kv_cache,
        &[
            OpKind::Slice,
            OpKind::Permute,
            OpKind::Reshape,
            OpKind::MatMul,
            OpKind::Elementwise,
            OpKind::Arange,
            OpKind::Softmax,
            OpKind::IndexPut,
        ],
    ),
    (
        "llama::gated_delta_rule.out(Tensor query, Tensor key, Tensor value, Tensor decay, Tensor beta, Tensor initial_state, *, Tensor(a!) out, Tensor(b!) final_state_out) -> (Tensor(a!), Tensor(b!))",
        gated_delta_rule,
        DELTA_RULE,
    ),
    (
        "llama::channelwise_gated_delta_rule.out(Tensor query, Tensor key, Tensor value, Tensor decay, Tensor beta, Tensor initial_state, *, Tensor(a!) out, Tensor(b!) final_state_out) -> (Tensor(a!), Tensor(b!))",
        gated_delta_rule,
        DELTA_RULE,
    ),
    (
        "quantized_decomposed::embedding_byte.out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantized_embedding(c, 8, false),
        EMBEDDING,
    ),
    (
        "quantized_decomposed::embedding_byte.dtype_out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| quantized_embedding(c, 8, true),
        EMBEDDING,
    ),
    (
        "quantized_decomposed::embedding_4bit.out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantized_embedding(c, 4, false),
        EMBEDDING,
    ),
    (
        "quantized_decomposed::embedding_4bit.dtype_out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| quantized_embedding(c, 4, true),
        EMBEDDING,
    ),
    (
        "quantized_decomposed::embedding_2bit.out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *, Tensor(a!) out) -> Tensor(a!)",
        |c| quantized_embedding(c, 2, false),
        EMBEDDING,
    ),
    (
        "quantized_decomposed::embedding_2bit.dtype_out(Tensor weight, Tensor weight_scales, Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *, ScalarType? dtype=None, Tensor(a!) out) -> Tensor(a!)",
        |c| quantized_embedding(c, 2, true),
        EMBEDDING,
    ),
];

/// The sizes of a `[batch, length, heads, head_dim]` tensor argument.
fn rows_of_heads(c: &Call<'_, '_, '_>, name: &str, id: ValueId) -> Result<[Dim; 4], ImportError> {
    let shape = c.ty(id).shape.clone();
    <[Dim; 4]>::try_from(shape).map_err(|shape| {
        c.bad(
            name,
            format!(
                "must be [batch, length, heads, head_dim], not rank {}",
                shape.len()
            ),
        )
    })
}

/// That dimension `dim` of two tensor arguments agree.
fn same_size(
    c: &Call<'_, '_, '_>,
    (a, a_dims): (&str, &[Dim; 4]),
    (b, b_dims): (&str, &[Dim; 4]),
    dim: usize,
) -> Result<(), ImportError> {
    match (a_dims[dim], b_dims[dim]) {
        (Dim::Fixed(x), Dim::Fixed(y)) if x != y => Err(c.bad(
            b,
            format!("has size {y} in dimension {dim}, where {a} has {x}"),
        )),
        _ => Ok(()),
    }
}

/// The cache's length, which must be fixed.
fn cache_length(c: &Call<'_, '_, '_>, name: &str, dims: &[Dim; 4]) -> Result<u64, ImportError> {
    dims[1]
        .fixed()
        .ok_or_else(|| c.bad(name, "must have a fixed length"))
}

/// Requires `0 <= start_pos` and `start_pos + length <= capacity` at run
/// time, as ExecuTorch's kernels do, and returns `start_pos + length`,
/// with a range of `0..=capacity`.
fn filled_length(
    c: &mut Call<'_, '_, '_>,
    start: Term,
    length: Dim,
    capacity: u64,
) -> Result<Term, ImportError> {
    let capacity = Term::int(capacity as i64);
    let end = c.poly(start)?.add(&c.poly(Term::from(length))?);
    let end = c.poly_term(end)?;
    let not_negative = c.sym_op(SymOp::Le, vec![Term::int(0), start])?;
    c.require(
        not_negative,
        format!("start_pos {start} must not be negative"),
    )?;
    let fits = c.sym_op(SymOp::Le, vec![end, capacity])?;
    c.require(
        fits,
        format!("start_pos {start} plus {length} rows must fit the cache's {capacity}"),
    )?;
    let end = c.sym_op(SymOp::Max, vec![end, Term::int(0)])?;
    c.sym_op(SymOp::Min, vec![end, capacity])
}

/// Where [`write_cache`] writes a value's rows in the cache.
enum Rows {
    /// From this row on.
    From(Term),
    /// At the rows the `[batch, seq_len]` int64 tensor argument of this name
    /// holds.
    At(&'static str),
}

/// Writes `value` (`[batch, seq_len, heads, head_dim]`) into the cache
/// argument `cache` at `rows`, in place.
fn write_cache(
    c: &mut Call<'_, '_, '_>,
    value_name: &str,
    cache_name: &str,
    rows: Rows,
) -> Result<(), ImportError> {
    let value = c.tensor(value_name)?;
    let cache = c.tensor(cache_name)?;
    let value_dims = rows_of_heads(c, value_name, value)?;
    let cache_dims = rows_of_heads(c, cache_name, cache)?;
    for dim in [0, 2, 3] {
        same_size(c, (cache_name, &cache_dims), (value_name, &value_dims), dim)?;
    }
    if c.ty(value).dtype != c.ty(cache).dtype {
        return Err(c.bad(
            value_name,
            format!(
                "is {}, where {cache_name} is {}",
                c.ty(value).dtype,
                c.ty(cache).dtype
            ),
        ));
    }
    let capacity = cache_length(c, cache_name, &cache_dims)?;
    let arange = |c: &mut Call<'_, '_, '_>, start: Term, length: Dim| {
        let op = Op::Arange(Arange {
            start,
            step: Scalar::Int(1),
        });
        c.temporary_of(op, TensorType::contiguous(DType::I64, vec![length]))
    };
    let (indices, dims) = match rows {
        Rows::From(start) => {
            filled_length(c, start, value_dims[1], capacity)?;
            (vec![arange(c, start, value_dims[1])], vec![1])
        }
        Rows::At(name) => {
            let rows = c.tensor(name)?;
            let ty = c.ty(rows).clone();
            let batch_and_length = [value_dims[0], value_dims[1]];
            if ty.dtype != DType::I64 || ty.shape != batch_and_length {
                return Err(c.bad(
                    name,
                    format!("is {ty}, where {value_name} needs int64 {batch_and_length:?}"),
                ));
            }
            // A negative row is out of range, as ExecuTorch's kernel has
            // it (an index_put would count it from the end).
            let negative = c.with_scalar(rows, BinaryOp::Lt, Scalar::Int(0), DType::Bool)?;
            let func = Func::MaskedFill {
                value: Scalar::Int(capacity as i64),
            };
            let rows = c.elementwise(func, vec![rows, negative], DType::I64)?;
            let batches = arange(c, Term::int(0), value_dims[0]);
            let batches = view(c, batches, vec![value_dims[0], Dim::Fixed(1)])?;
            (vec![batches, rows], vec![0, 1])
        }
    };
    let op = Op::IndexPut(IndexPut {
        input: cache,
        values: value,
        indices,
        dims,
        accumulate: false,
    });
    c.emit_into(op, cache_name)
}

/// `update_cache(value, cache, start_pos)`: `value` written into the cache
/// at `start_pos`.
fn update_cache(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let start = c.term("start_pos")?;
    write_cache(c, "value", "cache", Rows::From(start))?;
    cache_updated(c)
}

/// `update_cache_with_indices(value, cache, start_pos, indices)`: row `s`
/// of `value` written into the cache at row `indices[b, s]` of each batch
/// `b` (a ring buffer's positions; `start_pos` unread, as ExecuTorch's
/// kernel leaves it), later rows winning where two land on one. A row
/// outside the cache is an error at run time.
fn update_cache_with_indices(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    write_cache(c, "value", "cache", Rows::At("indices"))?;
    cache_updated(c)
}

/// An update's result: a placeholder nothing reads, written as a zero.
fn cache_updated(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    c.emit(
        Op::Full(Full {
            value: Term::int(0),
        }),
        &["out"],
    )
}

/// `sdpa_with_kv_cache(query, key, value, key_cache, value_cache,
/// start_pos, seq_len, ...)`: the new keys and values written into the
/// caches, then `custom_sdpa` of the query over them.
fn sdpa_with_kv_cache(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let start = c.term("start_pos")?;
    write_cache(c, "key", "key_cache", Rows::From(start))?;
    write_cache(c, "value", "value_cache", Rows::From(start))?;
    let operands = Operand::floats(c, ["query", "key_cache", "value_cache"])?;
    attention(c, operands, false)
}

/// `custom_sdpa(query, key, value, start_pos, ...)`: attention of the
/// query over the rows the caches `key` and `value` hold.
fn custom_sdpa(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let operands = Operand::floats(c, ["query", "key", "value"])?;
    attention(c, operands, false)
}

/// `custom_quantized_sdpa(query, key, value, start_pos, ..., q_zero_points,
/// q_scales, k_zero_points, k_scales, v_zero_points, v_scales,
/// is_seq_at_dim_2)`: with an int8 query, attention over int8 caches, each
/// operand with a zero point and a scale per token and head; with a float
/// one, `custom_sdpa` (the parameters unread, as ExecuTorch's kernel leaves
/// them). `is_seq_at_dim_2`: every operand is `[batch, heads, length,
/// head_dim]`, and so is the result.
fn custom_quantized_sdpa(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    let seq_at_dim_2 = c.bool("is_seq_at_dim_2")?;
    let query = c.tensor("query")?;
    let operands = if c.ty(query).dtype == DType::I8 {
        [
            Operand::quantized(c, "query", "q_zero_points", "q_scales")?,
            Operand::quantized(c, "key", "k_zero_points", "k_scales")?,
            Operand::quantized(c, "value", "v_zero_points", "v_scales")?,
        ]
    } else {
        Operand::floats(c, ["query", "key", "value"])?
    };
    attention(c, operands, seq_at_dim_2)
}

/// A tensor argument of attention, `[batch, length, heads, head_dim]`.
#[derive(Clone, Copy)]
struct Operand {
    name: &'static str,
    data: ValueId,
    /// An int8 operand's zero points (int8) and scales (f32), one per
    /// token and head: `[batch, length, heads, 1]`.
    quantization: Option<(ValueId, ValueId)>,
}

impl Operand {
    /// The float query, keys and values these arguments are.
    fn floats(
        c: &mut Call<'_, '_, '_>,
        [query, key, value]: [&'static str; 3],
    ) -> Result<[Self; 3], ImportError> {
        let mut float = |name| {
            Ok(Self {
                name,
                data: c.tensor(name)?,
                quantization: None,
            })
        };
        Ok([float(query)?, float(key)?, float(value)?])
    }

    /// The int8 argument `name` with its parameters, which must be given.
    fn quantized(
        c: &mut Call<'_, '_, '_>,
        name: &'static str,
        zero_points_name: &str,
        scales_name: &str,
    ) -> Result<Self, ImportError> {
        let data = c.tensor(name)?;
        if c.ty(data).dtype != DType::I8 {
            return Err(c.bad(
                name,
                format!("is {}, where the query is int8", c.ty(data).dtype),
            ));
        }
        let mut per_row = c.ty(data).shape.clone();
        if let Some(last) = per_row.last_mut() {
            *last = Dim::Fixed(1);
        }
        let mut parameter = |parameter: &str, dtype: DType| {
            let id = c
                .optional_tensor(parameter)?
                .ok_or_else(|| c.bad(parameter, format!("must be given with an int8 {name}")))?;
            let ty = c.ty(id);
            if ty.dtype != dtype || ty.shape != per_row {
                return Err(c.bad(
                    parameter,
                    format!("is {ty}, where {name}'s needs {dtype} {per_row:?}"),
                ));
            }
            Ok(id)
        };
        let zero_points = parameter(zero_points_name, DType::I8)?;
        let scales = parameter(scales_name, DType::F32)?;
        Ok(Self {
            name,
            data,
            quantization: Some((zero_points, scales)),
        })
    }

    /// The operand (and its parameters) through `step`.
    fn map(
        self,
        c: &mut Call<'_, '_, '_>,
        mut step: impl FnMut(&mut Call<'_, '_, '_>, ValueId) -> Result<ValueId, ImportError>,
    ) -> Result<Self, ImportError> {
        let quantization = match self.quantization {
            Some((zero_points, scales)) => Some((step(c, zero_points)?, step(c, scales)?)),
            None => None,
        };
        Ok(Self {
            data: step(c, self.data)?,
            quantization,
            ..self
        })
    }

    /// The operand's values in `dtype`: an int8 one's `(x - zero_point) *
    /// scale` in f32.
    fn values(self, c: &mut Call<'_, '_, '_>) -> Result<ValueId, ImportError> {
        let Some((zero_points, scales)) = self.quantization else {
            return Ok(self.data);
        };
        let data = as_f32(c, self.data);
        let zero_points = as_f32(c, zero_points);
        let centred = c.binary(BinaryOp::Sub, data, zero_points, DType::F32)?;
        c.binary(BinaryOp::Mul, centred, scales, DType::F32)
    }
}

/// `id`'s elements converted to f32.
fn as_f32(c: &mut Call<'_, '_, '_>, id: ValueId) -> ValueId {
    let shape = c.ty(id).shape.clone();
    c.temporary_of(
        Op::Copy(Copy { input: id }),
        TensorType::contiguous(DType::F32, shape),
    )
}

/// Scaled dot-product attention of `query` (`[batch, seq_len, heads,
/// head_dim]`) over rows `0..start_pos + seq_len` of the caches `key` and
/// `value`, into `out`. `seq_at_dim_2`: every operand and the result are
/// `[batch, heads, length, head_dim]` instead.
fn attention(
    c: &mut Call<'_, '_, '_>,
    operands: [Operand; 3],
    seq_at_dim_2: bool,
) -> Result<(), ImportError> {
    let operands = if seq_at_dim_2 {
        let mut rows_first = operands;
        for operand in &mut rows_first {
            rows_of_heads(c, operand.name, operand.data)?;
            *operand = operand.map(c, |c, id| permuted(c, id, vec![0, 2, 1, 3]))?;
        }
        rows_first
    } else {
        operands
    };
    let [query, key, value] = operands;
    let q = rows_of_heads(c, query.name, query.data)?;
    let k = rows_of_heads(c, key.name, key.data)?;
    let v = rows_of_heads(c, value.name, value.data)?;
    let (key_name, value_name) = (key.name, value.name);
    let dtype = if query.quantization.is_some() {
        DType::F32
    } else {
        // ExecuTorch's CPU kernel attends in float32 or float64, its
        // Vulkan shaders in float16 too (an export's `force_fp16`).
        let dtype = c.ty(query.data).dtype;
        if !matches!(dtype, DType::F32 | DType::F64 | DType::F16) {
            return Err(c.bad(
                "query",
                format!("is {dtype}; attention is in float32, float64 or float16"),
            ));
        }
        for operand in [key, value] {
            let found = c.ty(operand.data).dtype;
            if found != dtype {
                return Err(c.bad(operand.name, format!("is {found}, where query is {dtype}")));
            }
        }
        dtype
    };
    for dim in [0, 3] {
        same_size(c, ("query", &q), (key_name, &k), dim)?;
    }
    for dim in 0..4 {
        same_size(c, (key_name, &k), (value_name, &v), dim)?;
    }
    let (Some(heads), Some(kv_heads), Some(head_dim)) = (q[2].fixed(), k[2].fixed(), q[3].fixed())
    else {
        return Err(c.bad("query", "must have a fixed number of heads and head size"));
    };
    if kv_heads == 0 || heads % kv_heads != 0 {
        return Err(c.bad(
            key_name,
            format!("has {kv_heads} heads, which must divide the query's {heads}"),
        ));
    }
    let is_causal = c.bool("is_causal")?;
    let mask = c.optional_tensor("attn_mask")?;
    if mask.is_some() && is_causal {
        return Err(c.bad("attn_mask", "cannot be given with is_causal"));
    }
    let scale = c
        .optional_double("scale")?
        .unwrap_or(1.0 / (head_dim as f64).sqrt());
    let capacity = cache_length(c, key_name, &k)?;
    let start = c.term("start_pos")?;
    let filled = filled_length(c, start, q[1], capacity)?;
    // A mask covers every row of the caches; otherwise the filled ones are
    // attended to.
    let filled = match mask {
        Some(_) => Dim::Fixed(capacity),
        None => c.size("start_pos", filled)?,
    };

    // Query heads in groups that share a key head: [B, KVH, G * S, D].
    let group = heads / kv_heads;
    let (batch, length) = (q[0], q[1]);
    let fixed = Dim::Fixed;
    let query = query.values(c)?;
    let query = permuted(c, query, vec![0, 2, 1, 3])?;
    let grouped_rows = c
        .importer
        .symbols
        .product(&[fixed(group), length])
        .ok()
        .and_then(Term::as_dim)
        .ok_or_else(|| c.bad("query", "has too many rows"))?;
    let query = view(
        c,
        query,
        vec![batch, fixed(kv_heads), grouped_rows, fixed(head_dim)],
    )?;
    // The filled rows of the caches: keys as [B, KVH, D, T], values as [B,
    // KVH, T, D].
    let filled_rows = |c: &mut Call<'_, '_, '_>, cache: Operand| {
        let cache = cache.map(c, |c, tensor| {
            let ty = c.ty(tensor);
            let mut shape = ty.shape.clone();
            shape[1] = filled;
            let op = Op::Slice(Slice {
                input: tensor,
                dim: 1,
                start: fixed(0),
                step: 1,
            });
            Ok(c.temporary_of(op, TensorType::contiguous(ty.dtype, shape)))
        })?;
        cache.values(c)
    };
    let keys = filled_rows(c, key)?;
    let keys = permuted(c, keys, vec![0, 2, 3, 1])?;
    let values = filled_rows(c, value)?;
    let values = permuted(c, values, vec![0, 2, 1, 3])?;

    let product = |a, b| {
        Op::MatMul(MatMul {
            a,
            b,
            clamp: ClampRange::default(),
        })
    };
    let scores = c.temporary(product(query, keys), dtype)?;
    let scores = c.with_scalar(scores, BinaryOp::Mul, Scalar::Float(scale), dtype)?;
    // Scores as [B, KVH, G, S, T], which a [S, T] mask broadcasts against.
    let split = vec![batch, fixed(kv_heads), fixed(group), length, filled];
    let scores = view(c, scores, split)?;
    let scores = if let Some(mask) = mask {
        if c.ty(mask).rank() != 2 {
            return Err(c.bad("attn_mask", "must be 2-D [seq_len, cache length]"));
        }
        // An additive mask of the query's type, as ExecuTorch's kernel
        // requires (not a boolean one).
        if c.ty(mask).dtype != dtype {
            return Err(c.bad(
                "attn_mask",
                format!("is {}, where query is {dtype}", c.ty(mask).dtype),
            ));
        }
        c.binary(BinaryOp::Add, scores, mask, dtype)?
    } else if is_causal {
        // Query row m (at position start_pos + m) sees keys 0..=start_pos + m.
        let positions = |c: &mut Call<'_, '_, '_>, start: Term, length: Dim, shape| {
            let op = Op::Arange(Arange {
                start,
                step: Scalar::Int(1),
            });
            let line = c.temporary_of(op, TensorType::contiguous(DType::I64, vec![length]));
            view(c, line, shape)
        };
        let rows = positions(c, start, length, vec![length, fixed(1)])?;
        let keys = positions(c, Term::int(0), filled, vec![fixed(1), filled])?;
        let future = c.binary(BinaryOp::Gt, keys, rows, DType::Bool)?;
        let func = Func::MaskedFill {
            value: Scalar::Float(f64::NEG_INFINITY),
        };
        c.elementwise(func, vec![scores, future], dtype)?
    } else {
        scores
    };
    let weights = c.temporary(
        Op::Softmax(Softmax {
            input: scores,
            dim: 4,
            log: false,
            safe: false,
        }),
        dtype,
    )?;
    let weights = view(
        c,
        weights,
        vec![batch, fixed(kv_heads), grouped_rows, filled],
    )?;
    let attended = c.temporary(product(weights, values), dtype)?;
    let attended = view(
        c,
        attended,
        vec![batch, fixed(heads), length, fixed(head_dim)],
    )?;
    if seq_at_dim_2 {
        return c.emit_as(attended, "out");
    }
    let op = Op::Permute(ptec_ir::ops::layout::Permute {
        input: attended,
        dims: vec![0, 2, 1, 3],
    });
    c.emit(op, &["out"])
}

/// `gated_delta_rule(query, key, value, decay, beta, initial_state)`
/// (Qwen3.5's linear attention; `channelwise_gated_delta_rule` its old
/// name): a state `S` (`[B, H, K, V]`, from `initial_state`) carried along
/// the sequence; at each token `t`, `S = S * decay_t`, `delta = (v_t - k_t
/// S) * beta_t`, `S = S + k_t^T delta`, and the output row is `q_t S`, the
/// query's `Hq` heads in groups of `Hq / H` sharing a state head. `decay`
/// is `[B, H, T]` (one gate a token) or `[B, H, T, K]` (one a key
/// channel), already exponentiated; `beta` `[B, H, T]`. The recurrence is
/// unrolled over the tokens, so their number must be fixed (as the
/// exporter's Qwen3.5 programs, of static shapes, have it) and at most
/// [`MAX_UNROLLED_TOKENS`]. Results:
/// `out` `[B, Hq, T, V]` and the final state.
fn gated_delta_rule(c: &mut Call<'_, '_, '_>) -> Result<(), ImportError> {
    // Every argument float32 of fixed sizes: the recurrence is unrolled.
    let read = |c: &mut Call<'_, '_, '_>, name: &str| {
        let id = c.tensor(name)?;
        let ty = c.ty(id);
        if ty.dtype != DType::F32 {
            return Err(c.bad(name, format!("is {}, not float32", ty.dtype)));
        }
        let sizes = ty.fixed_shape().ok_or_else(|| {
            c.bad(
                name,
                format!(
                    "has shape {}; ptec unrolls the recurrence over a fixed number of tokens",
                    ptec_ir::ops::show(&ty.shape)
                ),
            )
        })?;
        Ok((id, sizes))
    };
    let (query, query_sizes) = read(c, "query")?;
    let (key, key_sizes) = read(c, "key")?;
    let (value, value_sizes) = read(c, "value")?;
    let (decay, decay_sizes) = read(c, "decay")?;
    let (beta, beta_sizes) = read(c, "beta")?;
    let (state, state_sizes) = read(c, "initial_state")?;
    let (Ok([batch, query_heads, tokens, key_dim]), Some(&heads), Some(&value_dim)) = (
        <[u64; 4]>::try_from(query_sizes.as_slice()),
        key_sizes.get(1),
        value_sizes.get(3),
    ) else {
        return Err(c.bad("query", "and key and value must be 4-D"));
    };
    let decay_shape = if decay_sizes.len() == 4 {
        vec![batch, heads, tokens, key_dim]
    } else {
        vec![batch, heads, tokens]
    };
    let expected = [
        ("key", &key_sizes, vec![batch, heads, tokens, key_dim]),
        ("value", &value_sizes, vec![batch, heads, tokens, value_dim]),
        ("beta", &beta_sizes, vec![batch, heads, tokens]),
        (
            "initial_state",
            &state_sizes,
            vec![batch, heads, key_dim, value_dim],
        ),
        ("decay", &decay_sizes, decay_shape),
    ];
    for (name, sizes, shape) in expected {
        if *sizes != shape {
            return Err(c.bad(
                name,
                format!("has sizes {sizes:?}, where the query and key need {shape:?}"),
            ));
        }
    }
    // A file's claim of the sequence length, checked before the graph
    // grows by a dozen ops a token.
    if tokens > MAX_UNROLLED_TOKENS {
        return Err(c.bad(
            "query",
            format!(
                "has {tokens} tokens; ptec unrolls the recurrence over at most \
                 {MAX_UNROLLED_TOKENS}"
            ),
        ));
    }
    if heads == 0 || query_heads % heads != 0 {
        return Err(c.bad(
            "query",
            format!("has {query_heads} heads, which the key's {heads} must divide"),
        ));
    }
    let group = query_heads / heads;
    let fixed = |sizes: &[u64]| {
        sizes
            .iter()
            .map(|&size| Dim::Fixed(size))
            .collect::<Vec<_>>()
    };
    // Token `t` of a `[B, H, T, ...]` tensor, viewed as `shape`.
    let token = |c: &mut Call<'_, '_, '_>, tensor: ValueId, t: u64, shape: &[u64]| {
        let mut sliced = c.ty(tensor).shape.clone();
        sliced[2] = Dim::Fixed(1);
        let op = Op::Slice(Slice {
            input: tensor,
            dim: 2,
            start: Dim::Fixed(t),
            step: 1,
        });
        let row = c.temporary_of(op, TensorType::contiguous(DType::F32, sliced));
        view(c, row, fixed(shape))
    };
    let product = |c: &mut Call<'_, '_, '_>, a, b| {
        let op = Op::MatMul(MatMul {
            a,
            b,
            clamp: ClampRange::default(),
        });
        c.temporary(op, DType::F32)
    };
    let decay_row = if decay_sizes.len() == 4 {
        [batch, heads, key_dim, 1]
    } else {
        [batch, heads, 1, 1]
    };
    let mut state = state;
    let mut rows = Vec::with_capacity(tokens as usize);
    for t in 0..tokens {
        let decay_t = token(c, decay, t, &decay_row)?;
        state = c.binary(BinaryOp::Mul, state, decay_t, DType::F32)?;
        let key_row = token(c, key, t, &[batch, heads, 1, key_dim])?;
        let predicted = product(c, key_row, state)?;
        let value_row = token(c, value, t, &[batch, heads, 1, value_dim])?;
        let error = c.binary(BinaryOp::Sub, value_row, predicted, DType::F32)?;
        let beta_t = token(c, beta, t, &[batch, heads, 1, 1])?;
        let delta = c.binary(BinaryOp::Mul, error, beta_t, DType::F32)?;
        let key_column = token(c, key, t, &[batch, heads, key_dim, 1])?;
        let update = c.binary(BinaryOp::Mul, key_column, delta, DType::F32)?;
        state = c.binary(BinaryOp::Add, state, update, DType::F32)?;
        let query_rows = token(c, query, t, &[batch, heads, group, key_dim])?;
        let row = product(c, query_rows, state)?;
        rows.push(view(c, row, fixed(&[batch, query_heads, 1, value_dim]))?);
    }
    let output = match rows[..] {
        [] => {
            c.emit(
                Op::Full(Full {
                    value: Term::int(0),
                }),
                &["out"],
            )?;
            return c.emit_as(state, "final_state_out");
        }
        [row] => row,
        _ => {
            let shape =
                TensorType::contiguous(DType::F32, fixed(&[batch, query_heads, tokens, value_dim]));
            c.temporary_of(
                Op::Cat(Cat {
                    inputs: rows,
                    dim: 2,
                }),
                shape,
            )
        }
    };
    c.emit_as(output, "out")?;
    c.emit_as(state, "final_state_out")
}

/// `embedding_{byte,4bit,2bit}(weight, weight_scales, weight_zero_points,
/// quant_min, quant_max, indices)`: rows of a table of `bits`-bit integers
/// (packed `8 / bits` to a byte, high nibble first for 4 bits, low bits
/// first for 2, each less `2^(bits-1)`; bytes as they are for 8), with a
/// scale (and zero point) per row or per group of columns. `has_dtype`:
/// the overload takes the output's `dtype`, which must be `out`'s.
fn quantized_embedding(
    c: &mut Call<'_, '_, '_>,
    bits: u32,
    has_dtype: bool,
) -> Result<(), ImportError> {
    let weight = c.tensor("weight")?;
    let scales = c.tensor("weight_scales")?;
    let zero_points = c.optional_tensor("weight_zero_points")?;
    let indices = c.tensor("indices")?;
    let out = c.declared_type_of("out")?;
    let Some([rows, packed]) = c
        .ty(weight)
        .fixed_shape()
        .and_then(|s| <[u64; 2]>::try_from(s).ok())
    else {
        return Err(c.bad("weight", "must be a 2-D table of fixed size"));
    };
    let weight_type = c.ty(weight).dtype;
    let accepted = if bits == 8 {
        matches!(weight_type, DType::U8 | DType::I8)
    } else {
        weight_type == DType::U8
    };
    if !accepted {
        return Err(c.bad("weight", format!("is {weight_type}, not packed bytes")));
    }
    let per_byte = u64::from(8 / bits);
    let columns = packed * per_byte;
    let groups = match c.ty(scales).fixed_shape().as_deref() {
        Some([n]) if *n == rows => 1,
        Some([n, groups]) if *n == rows && *groups > 0 && columns % groups == 0 => *groups,
        _ => {
            return Err(c.bad(
                "weight_scales",
                format!(
                    "is {}; it needs {rows} rows of one scale, or of groups that divide {columns} columns",
                    c.ty(scales)
                ),
            ));
        }
    };
    let params = c.ty(scales).dtype;
    if !matches!(params, DType::F32 | DType::F16) {
        return Err(c.bad(
            "weight_scales",
            format!("is {params}, not float32 or float16"),
        ));
    }
    if let Some(zero_points) = zero_points
        && c.ty(zero_points).shape != c.ty(scales).shape
    {
        return Err(c.bad(
            "weight_zero_points",
            format!(
                "is {}, unlike weight_scales {}",
                c.ty(zero_points),
                c.ty(scales)
            ),
        ));
    }
    if !matches!(out.dtype, DType::F32 | DType::F16) {
        return Err(c.bad("out", format!("is {}, not float32 or float16", out.dtype)));
    }
    if has_dtype {
        c.requested_dtype("dtype", "out")?;
    }
    if c.ty(indices).dtype != DType::I64 {
        return Err(c.bad("indices", format!("is {}, not int64", c.ty(indices).dtype)));
    }

    let lookup = |c: &mut Call<'_, '_, '_>, table: ValueId| {
        let ty = c.ty(table).clone();
        let mut shape = c.ty(indices).shape.clone();
        shape.extend_from_slice(&ty.shape[1..]);
        let op = Op::Index(Index {
            input: table,
            indices: vec![indices],
            dims: vec![0],
            wrap: false,
        });
        c.temporary_of(op, TensorType::contiguous(ty.dtype, shape))
    };
    let mut lead = c.ty(indices).shape.clone();
    let bytes = lookup(c, weight);
    let integers = if bits == 8 {
        bytes
    } else {
        unpack(c, bytes, bits, &lead, packed)?
    };
    let mut values = as_f32(c, integers);
    let offset = if bits == 8 { 0 } else { 1 << (bits - 1) };
    if offset != 0 {
        values = c.with_scalar(values, BinaryOp::Sub, Scalar::Int(offset), DType::F32)?;
    }
    // [*indices, groups, columns / groups] against [*indices, groups, 1].
    let mut grouped = lead.clone();
    grouped.extend([Dim::Fixed(groups), Dim::Fixed(columns / groups)]);
    values = view(c, values, grouped)?;
    let mut per_group = lead.clone();
    per_group.extend([Dim::Fixed(groups), Dim::Fixed(1)]);
    if let Some(zero_points) = zero_points {
        let zero_points = lookup(c, zero_points);
        let zero_points = as_f32(c, zero_points);
        let zero_points = view(c, zero_points, per_group.clone())?;
        values = c.binary(BinaryOp::Sub, values, zero_points, DType::F32)?;
    }
    let scales = lookup(c, scales);
    let scales = as_f32(c, scales);
    let scales = view(c, scales, per_group)?;
    let dequantized = c.binary(BinaryOp::Mul, values, scales, DType::F32)?;
    lead.push(Dim::Fixed(columns));
    let rows = view(c, dequantized, lead)?;
    c.emit_copy(rows, "out")
}

/// The `bits`-bit integers packed in `bytes` (`[*lead, packed]`), as
/// `[*lead, packed * 8 / bits]` unsigned bytes.
fn unpack(
    c: &mut Call<'_, '_, '_>,
    bytes: ValueId,
    bits: u32,
    lead: &[Dim],
    packed: u64,
) -> Result<ValueId, ImportError> {
    let per_byte = 8 / bits;
    let mask = (1 << bits) - 1;
    let mut column = lead.to_vec();
    column.extend([Dim::Fixed(packed), Dim::Fixed(1)]);
    let mut pieces = Vec::with_capacity(per_byte as usize);
    for k in 0..per_byte {
        // 4-bit values are packed high nibble first, 2-bit ones low bits
        // first.
        let shift = if bits == 4 { 4 - 4 * k } else { bits * k };
        let mut piece = bytes;
        if shift != 0 {
            piece = c.with_scalar(
                piece,
                BinaryOp::RightShift,
                Scalar::Int(shift.into()),
                DType::U8,
            )?;
        }
        piece = c.with_scalar(piece, BinaryOp::BitwiseAnd, Scalar::Int(mask), DType::U8)?;
        pieces.push(view(c, piece, column.clone())?);
    }
    let mut interleaved = lead.to_vec();
    interleaved.extend([Dim::Fixed(packed), Dim::Fixed(per_byte.into())]);
    let op = Op::Cat(Cat {
        inputs: pieces,
        dim: lead.len() + 1,
    });
    let interleaved = c.temporary_of(op, TensorType::contiguous(DType::U8, interleaved));
    let mut shape = lead.to_vec();
    shape.push(Dim::Fixed(packed * u64::from(per_byte)));
    view(c, interleaved, shape)
}
