//! Reads a `.pte` program: the container (extended header and segments), the
//! verified flatbuffer, and every method's values and instructions, checking
//! each offset, range and index before it is used.

use ptec_schema::program as fb;

use crate::bytes::{self, expect_identifier, slice, u32_at, u64_at, verifier_options};
use crate::delegate::{self, DelegatePayload};
use crate::error::{Error, Result};
use crate::model::{
    CompileSpec, DataEntry, Delegate, DelegateIndex, ExtendedHeader, Instruction, Method,
    NamedData, Operator, OperatorIndex, Program, Segment, ShapeDynamism, Tensor, TensorStorage,
    Value, ValueIndex,
};
use crate::ptd::DataFile;
use crate::scalar_type::ScalarType;

const EXTENDED_HEADER_MAGIC: &[u8; 4] = b"eh00";
/// The header must hold its magic, its length, `program_size` and
/// `segment_base_offset`; `segment_data_size` follows when the length allows.
const EXTENDED_HEADER_MIN_LEN: u32 = 24;
const EXTENDED_HEADER_START: usize = 8;

/// Reads a `.pte` program from `bytes`, borrowing its data.
pub fn read_program(bytes: &[u8]) -> Result<Program<'_>> {
    read_program_with_data(bytes, &[])
}

/// Reads a `.pte` program whose named data and external tensors may live in
/// the data files `data` (`.ptd`, read with [`read_data_file`]); their blobs
/// join the program's named data, and a key defined twice is an error.
///
/// [`read_data_file`]: crate::read_data_file
pub fn read_program_with_data<'a>(bytes: &'a [u8], data: &[DataFile<'a>]) -> Result<Program<'a>> {
    if bytes.len() < 8 {
        return Err(Error::Truncated {
            what: "program",
            needed: 8,
            available: bytes.len() as u64,
        });
    }
    expect_identifier(bytes, &[b"ET12"], "program")?;
    let header = read_extended_header(bytes)?;
    let flatbuffer = match header {
        Some(header) => &bytes[..header.program_size as usize],
        None => bytes,
    };
    let root = flatbuffers::root_with_opts::<fb::Program>(&verifier_options(), flatbuffer)
        .map_err(|source| Error::Flatbuffer {
            what: "program".to_string(),
            source,
        })?;
    let segments = read_segments(bytes, header, root)?;
    let mut named_data = read_named_data(root, &segments)?;
    for file in data {
        named_data.merge(&file.named_data)?;
    }
    let constants = ConstantData::read(root, &segments)?;
    let mutable = read_mutable_data(root, &segments)?;
    let file = FileData {
        root,
        segments: &segments,
        named_data: &named_data,
        constants: &constants,
        mutable: mutable.as_ref(),
    };
    let methods = vec_of(root.execution_plan())
        .enumerate()
        .map(|(index, plan)| read_method(&file, index, plan))
        .collect::<Result<Vec<_>>>()?;
    check_method_names(&methods)?;
    let constant_bytes = constants.total_bytes();
    Ok(Program {
        version: root.version(),
        header,
        methods,
        segments,
        named_data,
        constant_bytes,
    })
}

/// Methods are called by name: two of the same name would leave one
/// unreachable, or the one called a matter of order.
fn check_method_names(methods: &[Method<'_>]) -> Result<()> {
    let mut seen = std::collections::HashMap::new();
    for (index, method) in methods.iter().enumerate() {
        if let Some(first) = seen.insert(method.name.as_str(), index) {
            return Err(Error::invalid(
                format!("execution_plan[{index}].name"),
                format!(
                    "the method name {:?} is also that of execution_plan[{first}]",
                    method.name
                ),
            ));
        }
    }
    Ok(())
}

fn read_extended_header(bytes: &[u8]) -> Result<Option<ExtendedHeader>> {
    const WHAT: &str = "extended (eh00)";
    if bytes::tag_at(bytes, EXTENDED_HEADER_START) != Some(*EXTENDED_HEADER_MAGIC) {
        return Ok(None);
    }
    let header_error = |problem: String| Error::Header {
        what: WHAT,
        problem,
    };
    let length = u32_at(bytes, 12, "extended header")?;
    if length < EXTENDED_HEADER_MIN_LEN {
        return Err(header_error(format!(
            "its length {length} at byte 12 is below the minimum {EXTENDED_HEADER_MIN_LEN}"
        )));
    }
    let header_end = EXTENDED_HEADER_START as u64 + u64::from(length);
    if header_end > bytes.len() as u64 {
        return Err(Error::Truncated {
            what: "extended header",
            needed: header_end,
            available: bytes.len() as u64,
        });
    }
    let program_size = u64_at(bytes, 16, "extended header")?;
    let segment_base_offset = u64_at(bytes, 24, "extended header")?;
    let segment_data_size = if length >= 32 {
        Some(u64_at(bytes, 32, "extended header")?)
    } else {
        None
    };
    let file_len = bytes.len() as u64;
    if program_size < header_end || program_size > file_len {
        return Err(header_error(format!(
            "program_size {program_size} (byte 16) is outside {header_end}..={file_len}"
        )));
    }
    if segment_base_offset < program_size || segment_base_offset > file_len {
        return Err(header_error(format!(
            "segment_base_offset {segment_base_offset} (byte 24) is outside {program_size}..={file_len}"
        )));
    }
    if let Some(size) = segment_data_size {
        let end = segment_base_offset.checked_add(size);
        if end.is_none_or(|end| end > file_len) {
            return Err(header_error(format!(
                "segment_data_size {size} (byte 32) runs past the end of the {file_len}-byte file \
                 from segment_base_offset {segment_base_offset}"
            )));
        }
    }
    Ok(Some(ExtendedHeader {
        program_size,
        segment_base_offset,
        segment_data_size,
    }))
}

fn read_segments<'a>(
    bytes: &'a [u8],
    header: Option<ExtendedHeader>,
    root: fb::Program<'a>,
) -> Result<Vec<Segment<'a>>> {
    let Some(table) = root.segments() else {
        return Ok(Vec::new());
    };
    if table.is_empty() {
        return Ok(Vec::new());
    }
    let Some(header) = header else {
        // Without the extended header there is no segment area; a program
        // without constants still lists its (empty) constant segment.
        return table
            .iter()
            .enumerate()
            .map(|(index, segment)| match segment.size_() {
                0 => Ok(Segment { offset: bytes.len() as u64, data: &[] }),
                size => Err(Error::invalid(
                    format!("segments[{index}]"),
                    format!("the segment holds {size} bytes but the program has no extended header to locate them"),
                )),
            })
            .collect();
    };
    let base = header.segment_base_offset;
    let area_end = header
        .segment_data_size
        .map_or(bytes.len() as u64, |size| base + size);
    let area = &bytes[..area_end as usize];
    let segments = table
        .iter()
        .enumerate()
        .map(|(index, segment)| {
            let at = || {
                format!(
                    "segments[{index}] (offset {}, size {})",
                    segment.offset(),
                    segment.size_()
                )
            };
            let start = base.checked_add(segment.offset()).ok_or_else(|| {
                Error::invalid(at(), "the offset overflows when added to the segment base")
            })?;
            let data = slice(area, start, segment.size_(), at, "segment area")?;
            Ok(Segment {
                offset: start,
                data,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    check_no_overlap(&segments)?;
    Ok(segments)
}

/// Rejects two non-empty segments whose byte ranges intersect. Empty
/// segments may share an offset with their neighbour.
fn check_no_overlap(segments: &[Segment<'_>]) -> Result<()> {
    let mut ranges: Vec<(u64, u64, usize)> = segments
        .iter()
        .enumerate()
        .filter(|(_, segment)| !segment.data.is_empty())
        .map(|(index, segment)| {
            (
                segment.offset,
                segment.offset + segment.data.len() as u64,
                index,
            )
        })
        .collect();
    ranges.sort_unstable();
    for pair in ranges.windows(2) {
        let [
            (first_start, first_end, first),
            (second_start, second_end, second),
        ] = *pair
        else {
            continue;
        };
        if second_start < first_end {
            return Err(Error::SegmentOverlap {
                first,
                first_start,
                first_end,
                second,
                second_start,
                second_end,
            });
        }
    }
    Ok(())
}

fn segment<'a>(
    segments: &[Segment<'a>],
    index: u64,
    at: impl FnOnce() -> String,
) -> Result<&'a [u8]> {
    usize::try_from(index)
        .ok()
        .and_then(|index| segments.get(index))
        .map(|segment| segment.data)
        .ok_or_else(|| Error::OutOfRange {
            at: at(),
            what: "segment index",
            index: index as i64,
            len: segments.len(),
        })
}

fn read_named_data<'a>(root: fb::Program<'a>, segments: &[Segment<'a>]) -> Result<NamedData<'a>> {
    let mut named = NamedData::default();
    for (index, entry) in vec_of(root.named_data()).enumerate() {
        let at = || format!("named_data[{index}]");
        let key = entry
            .key()
            .ok_or_else(|| Error::invalid(at(), "the entry has no key"))?;
        let data = segment(segments, u64::from(entry.segment_index()), at)?;
        if named
            .insert(key.to_string(), DataEntry { data, layout: None })
            .is_some()
        {
            return Err(Error::invalid(at(), format!("key {key:?} appears twice")));
        }
    }
    Ok(named)
}

/// The constant tensors' bytes: the constant segment with its offsets, or the
/// legacy inline buffers.
enum ConstantData<'a> {
    Segment { data: &'a [u8], offsets: Vec<u64> },
    Inline(Vec<&'a [u8]>),
}

impl<'a> ConstantData<'a> {
    fn read(root: fb::Program<'a>, segments: &[Segment<'a>]) -> Result<Self> {
        let inline: Vec<&'a [u8]> = vec_of(root.constant_buffer())
            .map(|buffer| buffer.storage().map_or(&[][..], |storage| storage.bytes()))
            .collect();
        let subsegment = root.constant_segment();
        let offsets: Vec<u64> = subsegment
            .and_then(|subsegment| subsegment.offsets())
            .map(|offsets| offsets.iter().collect())
            .unwrap_or_default();
        // A one-entry list holds only the reserved placeholder: no constants.
        if offsets.len() <= 1 {
            return Ok(ConstantData::Inline(inline));
        }
        if inline.len() > 1 {
            return Err(Error::invalid(
                "constant_buffer",
                "both the inline constant_buffer and constant_segment hold constants",
            ));
        }
        let index = subsegment.map_or(0, |subsegment| subsegment.segment_index());
        let data = segment(segments, u64::from(index), || {
            "constant_segment.segment_index".to_string()
        })?;
        for (entry, &offset) in offsets.iter().enumerate() {
            if offset > data.len() as u64 {
                return Err(Error::OutOfBounds {
                    at: format!("constant_segment.offsets[{entry}]"),
                    start: offset,
                    end: offset,
                    limit: data.len() as u64,
                    region: "constant segment",
                });
            }
        }
        Ok(ConstantData::Segment { data, offsets })
    }

    fn total_bytes(&self) -> u64 {
        match self {
            ConstantData::Segment { data, .. } => data.len() as u64,
            ConstantData::Inline(buffers) => buffers.iter().map(|buffer| buffer.len() as u64).sum(),
        }
    }

    /// The `nbytes` bytes of constant buffer `index`.
    fn get(&self, index: u32, nbytes: u64, at: &dyn Fn() -> String) -> Result<&'a [u8]> {
        let out_of_range = |len| Error::OutOfRange {
            at: at(),
            what: "data_buffer_idx",
            index: i64::from(index),
            len,
        };
        match self {
            ConstantData::Segment { data, offsets } => {
                let offset = *offsets
                    .get(index as usize)
                    .ok_or_else(|| out_of_range(offsets.len()))?;
                slice(data, offset, nbytes, at, "constant segment")
            }
            ConstantData::Inline(buffers) => {
                let buffer = *buffers
                    .get(index as usize)
                    .ok_or_else(|| out_of_range(buffers.len()))?;
                if buffer.len() as u64 != nbytes {
                    return Err(Error::ByteCount {
                        at: at(),
                        problem: format!(
                            "the tensor needs {nbytes} bytes but constant_buffer[{index}] holds {}",
                            buffer.len()
                        ),
                    });
                }
                Ok(buffer)
            }
        }
    }
}

/// The initial contents of planned tensors (`mutable_data_segments[0]`, the
/// only entry the runtime reads).
struct MutableData<'a> {
    data: &'a [u8],
    offsets: Vec<u64>,
}

fn read_mutable_data<'a>(
    root: fb::Program<'a>,
    segments: &[Segment<'a>],
) -> Result<Option<MutableData<'a>>> {
    let Some(first) = root
        .mutable_data_segments()
        .and_then(|list| list.iter().next())
    else {
        return Ok(None);
    };
    let data = segment(segments, u64::from(first.segment_index()), || {
        "mutable_data_segments[0].segment_index".to_string()
    })?;
    let offsets = first
        .offsets()
        .map(|offsets| offsets.iter().collect())
        .unwrap_or_default();
    Ok(Some(MutableData { data, offsets }))
}

/// What every method reads from the program as a whole.
struct FileData<'f, 'a> {
    root: fb::Program<'a>,
    segments: &'f [Segment<'a>],
    named_data: &'f NamedData<'a>,
    constants: &'f ConstantData<'a>,
    mutable: Option<&'f MutableData<'a>>,
}

fn read_method<'a>(
    file: &FileData<'_, 'a>,
    plan_index: usize,
    plan: fb::ExecutionPlan<'a>,
) -> Result<Method<'a>> {
    let path = format!("execution_plan[{plan_index}]");
    let name = plan
        .name()
        .ok_or_else(|| Error::invalid(path.clone(), "the method has no name"))?
        .to_string();
    let value_count = plan.values().map_or(0, |values| values.len());
    let non_const_buffer_sizes = vec_of_scalars(plan.non_const_buffer_sizes())
        .enumerate()
        .map(|(index, size)| {
            u64::try_from(size).map_err(|_| {
                Error::invalid(
                    format!("{path}.non_const_buffer_sizes[{index}]"),
                    format!("the arena size {size} is negative"),
                )
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let values = vec_of(plan.values())
        .enumerate()
        .map(|(index, value)| {
            let at = || format!("{path}.values[{index}]");
            read_value(file, value, value_count, &non_const_buffer_sizes, &at)
        })
        .collect::<Result<Vec<_>>>()?;
    check_list_kinds(&values, &path)?;
    let value_indices = |list: Option<flatbuffers::Vector<'a, i32>>, field: &str| {
        vec_of_scalars(list)
            .enumerate()
            .map(|(index, raw)| {
                value_index(i64::from(raw), value_count, || {
                    format!("{path}.{field}[{index}]")
                })
            })
            .collect::<Result<Vec<_>>>()
    };
    let inputs = value_indices(plan.inputs(), "inputs")?;
    let outputs = value_indices(plan.outputs(), "outputs")?;
    let operators = vec_of(plan.operators())
        .enumerate()
        .map(|(index, operator)| {
            let name = operator.name().ok_or_else(|| {
                Error::invalid(
                    format!("{path}.operators[{index}]"),
                    "the operator has no name",
                )
            })?;
            Ok(Operator {
                name: name.to_string(),
                overload: operator.overload().unwrap_or_default().to_string(),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let delegates = vec_of(plan.delegates())
        .enumerate()
        .map(|(index, delegate)| {
            read_delegate(file, delegate, &format!("{path}.delegates[{index}]"))
        })
        .collect::<Result<Vec<_>>>()?;
    let counts = TableSizes {
        values: value_count,
        operators: operators.len(),
        delegates: delegates.len(),
    };
    let chains = vec_of(plan.chains())
        .enumerate()
        .map(|(chain_index, chain)| {
            let chain_path = format!("{path}.chains[{chain_index}]");
            let instructions = chain.instructions();
            let count = instructions.map_or(0, |list| list.len());
            vec_of(instructions)
                .enumerate()
                .map(|(index, instruction)| {
                    read_instruction(
                        instruction,
                        counts,
                        count,
                        &format!("{chain_path}.instructions[{index}]"),
                    )
                })
                .collect::<Result<Vec<_>>>()
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Method {
        name,
        values,
        inputs,
        outputs,
        chains,
        operators,
        delegates,
        non_const_buffer_sizes,
    })
}

fn read_value<'a>(
    file: &FileData<'_, 'a>,
    value: fb::EValue<'a>,
    value_count: usize,
    buffer_sizes: &[u64],
    at: &dyn Fn() -> String,
) -> Result<Value<'a>> {
    let kind = value.val_type();
    let missing = || {
        Error::invalid(
            at(),
            format!("the value's union tag {} has no table", kind.0),
        )
    };
    Ok(match kind {
        fb::KernelTypes::Null => Value::Null,
        fb::KernelTypes::Int => Value::Int(value.val_as_int().ok_or_else(missing)?.int_val()),
        fb::KernelTypes::Bool => Value::Bool(value.val_as_bool().ok_or_else(missing)?.bool_val()),
        fb::KernelTypes::Double => {
            Value::Double(value.val_as_double().ok_or_else(missing)?.double_val())
        }
        fb::KernelTypes::String => Value::String(
            value
                .val_as_string()
                .ok_or_else(missing)?
                .string_val()
                .unwrap_or_default()
                .to_string(),
        ),
        fb::KernelTypes::Tensor => Value::Tensor(read_tensor(
            file,
            value.val_as_tensor().ok_or_else(missing)?,
            buffer_sizes,
            at,
        )?),
        fb::KernelTypes::IntList => Value::IntList(
            vec_of_scalars(value.val_as_int_list().ok_or_else(missing)?.items())
                .enumerate()
                .map(|(item, raw)| {
                    value_index(raw, value_count, || format!("{}.items[{item}]", at()))
                })
                .collect::<Result<_>>()?,
        ),
        fb::KernelTypes::DoubleList => Value::DoubleList(
            vec_of_scalars(value.val_as_double_list().ok_or_else(missing)?.items()).collect(),
        ),
        fb::KernelTypes::BoolList => Value::BoolList(
            vec_of_scalars(value.val_as_bool_list().ok_or_else(missing)?.items()).collect(),
        ),
        fb::KernelTypes::TensorList => Value::TensorList(
            vec_of_scalars(value.val_as_tensor_list().ok_or_else(missing)?.items())
                .enumerate()
                .map(|(item, raw)| {
                    value_index(i64::from(raw), value_count, || {
                        format!("{}.items[{item}]", at())
                    })
                })
                .collect::<Result<_>>()?,
        ),
        fb::KernelTypes::OptionalTensorList => Value::OptionalTensorList(
            vec_of_scalars(
                value
                    .val_as_optional_tensor_list()
                    .ok_or_else(missing)?
                    .items(),
            )
            .enumerate()
            .map(|(item, raw)| match raw {
                -1 => Ok(None),
                raw => value_index(i64::from(raw), value_count, || {
                    format!("{}.items[{item}]", at())
                })
                .map(Some),
            })
            .collect::<Result<_>>()?,
        ),
        other => {
            return Err(Error::invalid(
                at(),
                format!("unknown value kind (union tag {})", other.0),
            ));
        }
    })
}

/// List items must point at values of the kind the list holds.
fn check_list_kinds(values: &[Value<'_>], path: &str) -> Result<()> {
    for (index, value) in values.iter().enumerate() {
        let (items, want): (Vec<ValueIndex>, &str) = match value {
            Value::IntList(items) => (items.clone(), "Int"),
            Value::TensorList(items) => (items.clone(), "Tensor"),
            Value::OptionalTensorList(items) => {
                (items.iter().flatten().copied().collect(), "Tensor")
            }
            _ => continue,
        };
        for (item, target) in items.iter().enumerate() {
            let kind = values[target.index()].kind();
            if kind != want {
                return Err(Error::invalid(
                    format!("{path}.values[{index}].items[{item}]"),
                    format!(
                        "{} items must be {want} values, but value {} is a {kind}",
                        value.kind(),
                        target.0
                    ),
                ));
            }
        }
    }
    Ok(())
}

fn read_tensor<'a>(
    file: &FileData<'_, 'a>,
    tensor: fb::Tensor<'a>,
    buffer_sizes: &[u64],
    at: &dyn Fn() -> String,
) -> Result<Tensor<'a>> {
    let code = tensor.scalar_type().0;
    let dtype = ScalarType::decode(code, at)?;
    if tensor.storage_offset() != 0 {
        return Err(Error::Unsupported {
            at: at(),
            what: format!("a storage offset of {}", tensor.storage_offset()),
        });
    }
    let sizes = vec_of_scalars(tensor.sizes())
        .map(i64::from)
        .collect::<Vec<_>>();
    let dim_order = tensor
        .dim_order()
        .map(|order| order.bytes().to_vec())
        .unwrap_or_default();
    let nbytes = byte_count(&sizes, dtype, at)?;
    check_dim_order(&dim_order, sizes.len(), at)?;
    let dynamism = match tensor.shape_dynamism() {
        fb::TensorShapeDynamism::STATIC => ShapeDynamism::Static,
        fb::TensorShapeDynamism::DYNAMIC_BOUND => ShapeDynamism::DynamicBound,
        fb::TensorShapeDynamism::DYNAMIC_UNBOUND => ShapeDynamism::DynamicUnbound,
        other => {
            return Err(Error::invalid(
                at(),
                format!("unknown shape dynamism {}", other.0),
            ));
        }
    };
    let storage = match external_name(tensor, at)? {
        Some(name) => TensorStorage::Constant(external_tensor(
            file.named_data,
            name,
            dtype,
            &sizes,
            &dim_order,
            at,
        )?),
        None => tensor_storage(file, tensor, nbytes, buffer_sizes, at)?,
    };
    Ok(Tensor {
        dtype,
        sizes,
        dim_order,
        dynamism,
        storage,
    })
}

fn tensor_storage<'a>(
    file: &FileData<'_, 'a>,
    tensor: fb::Tensor<'a>,
    nbytes: u64,
    buffer_sizes: &[u64],
    at: &dyn Fn() -> String,
) -> Result<TensorStorage<'a>> {
    let buffer = tensor.data_buffer_idx();
    let Some(allocation) = tensor.allocation_info() else {
        if buffer == 0 {
            return Ok(TensorStorage::Unplanned);
        }
        return file
            .constants
            .get(buffer, nbytes, at)
            .map(TensorStorage::Constant);
    };
    let memory_id = allocation.memory_id();
    let offset = u64::from(allocation.memory_offset_low())
        | (u64::from(allocation.memory_offset_high()) << 32);
    let arena = *buffer_sizes
        .get(memory_id as usize)
        .filter(|_| memory_id != 0)
        .ok_or_else(|| Error::OutOfRange {
            at: format!("{}.allocation_info.memory_id", at()),
            what: "memory id (1-based index into non_const_buffer_sizes)",
            index: i64::from(memory_id),
            len: buffer_sizes.len(),
        })?;
    if offset.checked_add(nbytes).is_none_or(|end| end > arena) {
        return Err(Error::OutOfBounds {
            at: format!("{}.allocation_info", at()),
            start: offset,
            end: offset.saturating_add(nbytes),
            limit: arena,
            region: "planned arena",
        });
    }
    let initial = if buffer == 0 {
        None
    } else {
        let mutable = file.mutable.ok_or_else(|| {
            Error::invalid(
                at(),
                "the tensor has initial data but the program has no mutable_data_segments",
            )
        })?;
        let start = *mutable
            .offsets
            .get(buffer as usize)
            .ok_or_else(|| Error::OutOfRange {
                at: at(),
                what: "data_buffer_idx",
                index: i64::from(buffer),
                len: mutable.offsets.len(),
            })?;
        Some(slice(
            mutable.data,
            start,
            nbytes,
            at,
            "mutable data segment",
        )?)
    };
    Ok(TensorStorage::Planned {
        memory_id,
        offset,
        initial,
    })
}

/// The key under which the program keeps `tensor`'s data outside
/// (`TensorDataLocation::EXTERNAL`), if it does.
fn external_name<'a>(tensor: fb::Tensor<'a>, at: &dyn Fn() -> String) -> Result<Option<&'a str>> {
    let Some(extra) = tensor.extra_tensor_info() else {
        return Ok(None);
    };
    if extra.location() != fb::TensorDataLocation::EXTERNAL {
        return Ok(None);
    }
    match extra.fully_qualified_name() {
        Some(name) if !name.is_empty() => Ok(Some(name)),
        _ => Err(Error::invalid(
            at(),
            "external tensor data has no fully qualified name",
        )),
    }
}

/// The bytes of a tensor the program keeps outside, under the key `name`,
/// checked against the tensor's element type, sizes and dim order: their
/// byte count, and the layout the data file records.
fn external_tensor<'a>(
    named_data: &NamedData<'a>,
    name: &str,
    dtype: ScalarType,
    sizes: &[i64],
    dim_order: &[u8],
    at: &dyn Fn() -> String,
) -> Result<&'a [u8]> {
    let nbytes = byte_count(sizes, dtype, at)?;
    let entry = named_data
        .entry(name)
        .ok_or_else(|| named_data.missing(at(), "external tensor", name))?;
    let mismatch = |problem: String| Error::DataMismatch {
        at: at(),
        key: name.to_string(),
        problem,
    };
    if let Some(layout) = &entry.layout {
        if layout.dtype != dtype {
            return Err(mismatch(format!(
                "is {dtype} in the program but {} in the data file",
                layout.dtype
            )));
        }
        if layout.sizes != sizes {
            return Err(mismatch(format!(
                "has sizes {sizes:?} in the program but {:?} in the data file",
                layout.sizes
            )));
        }
        if layout.dim_order != dim_order {
            return Err(mismatch(format!(
                "has dim order {dim_order:?} in the program but {:?} in the data file",
                layout.dim_order
            )));
        }
    }
    if entry.data.len() as u64 != nbytes {
        return Err(mismatch(format!(
            "is {nbytes} bytes in the program but {} in the data file",
            entry.data.len()
        )));
    }
    Ok(entry.data)
}

/// The byte size of a tensor of `sizes`, checking that no size is negative and
/// that the product does not overflow.
pub(crate) fn byte_count(sizes: &[i64], dtype: ScalarType, at: &dyn Fn() -> String) -> Result<u64> {
    let mut total = dtype.element_size() as u64;
    for (dim, &size) in sizes.iter().enumerate() {
        let size = u64::try_from(size).map_err(|_| Error::ByteCount {
            at: at(),
            problem: format!("size {size} of dimension {dim} is negative"),
        })?;
        total = total.checked_mul(size).ok_or_else(|| Error::ByteCount {
            at: at(),
            problem: format!("the byte count of sizes {sizes:?} overflows 64 bits"),
        })?;
    }
    Ok(total)
}

pub(crate) fn check_dim_order(
    dim_order: &[u8],
    rank: usize,
    at: &dyn Fn() -> String,
) -> Result<()> {
    let mut seen = vec![false; rank];
    let is_permutation = dim_order.len() == rank
        && dim_order.iter().all(|&dim| {
            let fresh = seen.get(dim as usize).is_some_and(|seen| !seen);
            if fresh {
                seen[dim as usize] = true;
            }
            fresh
        });
    if is_permutation {
        Ok(())
    } else {
        Err(Error::DimOrder {
            at: at(),
            dim_order: dim_order.to_vec(),
            rank,
        })
    }
}

fn read_delegate<'a>(
    file: &FileData<'_, 'a>,
    delegate: fb::BackendDelegate<'a>,
    path: &str,
) -> Result<Delegate<'a>> {
    let id = delegate
        .id()
        .ok_or_else(|| Error::invalid(path, "the delegate has no backend id"))?
        .to_string();
    let processed = delegate
        .processed()
        .ok_or_else(|| Error::invalid(path, "the delegate has no payload reference (processed)"))?;
    let index = processed.index();
    let at = || format!("{path}.processed.index");
    let data = match processed.location() {
        fb::DataLocation::INLINE => {
            let inline = file.root.backend_delegate_data();
            let entry = inline
                .filter(|list| (index as usize) < list.len())
                .map(|list| list.get(index as usize))
                .ok_or_else(|| Error::OutOfRange {
                    at: at(),
                    what: "backend_delegate_data index",
                    index: i64::from(index),
                    len: inline.map_or(0, |list| list.len()),
                })?;
            entry.data().map_or(&[][..], |data| data.bytes())
        }
        fb::DataLocation::SEGMENT => segment(file.segments, u64::from(index), at)?,
        other => {
            return Err(Error::invalid(
                format!("{path}.processed.location"),
                format!("unknown data location {}", other.0),
            ));
        }
    };
    let payload: DelegatePayload<'a> = delegate::read_payload(&id, data, file.named_data, path)?;
    let compile_specs = vec_of(delegate.compile_specs())
        .map(|spec| CompileSpec {
            key: spec.key().unwrap_or_default().to_string(),
            value: spec.value().map_or(&[][..], |value| value.bytes()),
        })
        .collect();
    Ok(Delegate {
        id,
        payload,
        compile_specs,
    })
}

/// How many entries each table of a method has, for index checks.
#[derive(Clone, Copy)]
struct TableSizes {
    values: usize,
    operators: usize,
    delegates: usize,
}

fn read_instruction(
    instruction: fb::Instruction<'_>,
    sizes: TableSizes,
    chain_len: usize,
    path: &str,
) -> Result<Instruction> {
    let kind = instruction.instr_args_type();
    let missing = || {
        Error::invalid(
            path,
            format!("the instruction's union tag {} has no table", kind.0),
        )
    };
    let value = |raw: i32, field: &str| {
        value_index(i64::from(raw), sizes.values, || format!("{path}.{field}"))
    };
    let args = |list: Option<flatbuffers::Vector<'_, i32>>| {
        vec_of_scalars(list)
            .enumerate()
            .map(|(index, raw)| value(raw, &format!("args[{index}]")))
            .collect::<Result<Vec<_>>>()
    };
    Ok(match kind {
        fb::InstructionArguments::KernelCall => {
            let call = instruction
                .instr_args_as_kernel_call()
                .ok_or_else(missing)?;
            Instruction::Kernel {
                operator: OperatorIndex(table_index(
                    call.op_index(),
                    sizes.operators,
                    "operator index",
                    || format!("{path}.op_index"),
                )?),
                args: args(call.args())?,
            }
        }
        fb::InstructionArguments::DelegateCall => {
            let call = instruction
                .instr_args_as_delegate_call()
                .ok_or_else(missing)?;
            Instruction::Delegate {
                delegate: DelegateIndex(table_index(
                    call.delegate_index(),
                    sizes.delegates,
                    "delegate index",
                    || format!("{path}.delegate_index"),
                )?),
                args: args(call.args())?,
            }
        }
        fb::InstructionArguments::MoveCall => {
            let call = instruction.instr_args_as_move_call().ok_or_else(missing)?;
            Instruction::Move {
                from: value(call.move_from(), "move_from")?,
                to: value(call.move_to(), "move_to")?,
            }
        }
        fb::InstructionArguments::JumpFalseCall => {
            let call = instruction
                .instr_args_as_jump_false_call()
                .ok_or_else(missing)?;
            // Jumping to the chain's length ends the chain.
            let destination = table_index(
                call.destination_instruction(),
                chain_len + 1,
                "destination instruction",
                || format!("{path}.destination_instruction"),
            )?;
            Instruction::JumpFalse {
                condition: value(call.cond_value_index(), "cond_value_index")?,
                destination: destination as usize,
            }
        }
        fb::InstructionArguments::FreeCall => {
            let call = instruction.instr_args_as_free_call().ok_or_else(missing)?;
            Instruction::Free {
                value: value(call.value_index(), "value_index")?,
            }
        }
        other => {
            return Err(Error::invalid(
                path,
                format!("unknown instruction kind (union tag {})", other.0),
            ));
        }
    })
}

fn table_index(
    raw: i32,
    len: usize,
    what: &'static str,
    at: impl FnOnce() -> String,
) -> Result<u32> {
    u32::try_from(raw)
        .ok()
        .filter(|&index| (index as usize) < len)
        .ok_or_else(|| Error::OutOfRange {
            at: at(),
            what,
            index: i64::from(raw),
            len,
        })
}

fn value_index(raw: i64, len: usize, at: impl FnOnce() -> String) -> Result<ValueIndex> {
    u32::try_from(raw)
        .ok()
        .filter(|&index| (index as usize) < len)
        .map(ValueIndex)
        .ok_or_else(|| Error::OutOfRange {
            at: at(),
            what: "value index",
            index: raw,
            len,
        })
}

/// The tables of an optional vector; absent reads as empty.
pub(crate) fn vec_of<'a, T: flatbuffers::Follow<'a> + 'a>(
    list: Option<flatbuffers::Vector<'a, flatbuffers::ForwardsUOffset<T>>>,
) -> impl Iterator<Item = T::Inner> {
    list.into_iter().flat_map(|list| list.iter())
}

/// The scalars of an optional vector; absent reads as empty.
pub(crate) fn vec_of_scalars<'a, T: flatbuffers::Follow<'a, Inner = T> + 'a>(
    list: Option<flatbuffers::Vector<'a, T>>,
) -> impl Iterator<Item = T> {
    list.into_iter().flat_map(|list| list.iter())
}
