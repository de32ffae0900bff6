//! Reads a `.ptd` FlatTensor data file, in which ExecuTorch keeps a program's
//! weights outside the program: the `FH01` header after the file identifier,
//! the verified flatbuffer, the segment area, and every named blob with its
//! tensor layout, each checked before use.

use ptec_schema::flat_tensor as fb;

use crate::bytes::{self, expect_identifier, slice, u32_at, u64_at, verifier_options};
use crate::error::{Error, Result};
use crate::model::{DataEntry, NamedData, TensorLayout};
use crate::pte::{byte_count, check_dim_order, vec_of, vec_of_scalars};
use crate::scalar_type::ScalarType;

const HEADER_MAGIC: &[u8; 4] = b"FH01";
const HEADER_START: usize = 8;
/// Magic, length, flatbuffer offset and size, segment base offset and size.
const HEADER_MIN_LEN: u32 = 40;
/// The newest FlatTensor schema version ptec reads.
const MAX_VERSION: u32 = 0;

/// A `.ptd` data file: blobs by key, borrowed from the file's bytes.
#[derive(Clone, Debug, Default)]
pub struct DataFile<'a> {
    pub version: u32,
    pub named_data: NamedData<'a>,
}

/// Where the header says the flatbuffer and the segment area are.
struct Header {
    flatbuffer_end: u64,
    segment_base_offset: u64,
    segment_data_size: u64,
}

/// Reads a `.ptd` data file from `bytes`, borrowing its data.
pub fn read_data_file(bytes: &[u8]) -> Result<DataFile<'_>> {
    if bytes.len() < HEADER_START {
        return Err(Error::Truncated {
            what: "data file",
            needed: HEADER_START as u64,
            available: bytes.len() as u64,
        });
    }
    expect_identifier(bytes, &[b"FT01"], "data file")?;
    let header = read_header(bytes)?;
    let root = flatbuffers::root_with_opts::<fb::FlatTensor>(
        &verifier_options(),
        &bytes[..header.flatbuffer_end as usize],
    )
    .map_err(|source| Error::Flatbuffer {
        what: "data file".to_string(),
        source,
    })?;
    if root.version() > MAX_VERSION {
        return Err(Error::Unsupported {
            at: "version".to_string(),
            what: format!(
                "FlatTensor version {} (ptec reads up to {MAX_VERSION})",
                root.version()
            ),
        });
    }
    let area = slice(
        bytes,
        header.segment_base_offset,
        header.segment_data_size,
        || "header".to_string(),
        "data file",
    )?;
    let segments = vec_of(root.segments())
        .enumerate()
        .map(|(index, segment)| {
            slice(
                area,
                segment.offset(),
                segment.size_(),
                || format!("segments[{index}]"),
                "segment area",
            )
        })
        .collect::<Result<Vec<_>>>()?;
    let mut named_data = NamedData::default();
    for (index, named) in vec_of(root.named_data()).enumerate() {
        let at = || format!("named_data[{index}]");
        let key = named
            .key()
            .filter(|key| !key.is_empty())
            .ok_or_else(|| Error::invalid(at(), "the entry has no key"))?;
        let segment = named.segment_index();
        let data = *segments
            .get(segment as usize)
            .ok_or_else(|| Error::OutOfRange {
                at: format!("{}.segment_index", at()),
                what: "segment index",
                index: i64::from(segment),
                len: segments.len(),
            })?;
        let layout = named
            .tensor_layout()
            .map(|layout| read_layout(layout, data, &|| format!("{}.tensor_layout", at())))
            .transpose()?;
        if named_data
            .insert(key.to_string(), DataEntry { data, layout })
            .is_some()
        {
            return Err(Error::invalid(at(), format!("key {key:?} appears twice")));
        }
    }
    Ok(DataFile {
        version: root.version(),
        named_data,
    })
}

fn read_header(bytes: &[u8]) -> Result<Header> {
    const WHAT: &str = "data file (FH01)";
    let header_error = |problem: String| Error::Header {
        what: WHAT,
        problem,
    };
    let magic = bytes::tag_at(bytes, HEADER_START);
    if magic != Some(*HEADER_MAGIC) {
        return Err(header_error(format!(
            "bytes 8..12 are \"{}\", expected \"FH01\"",
            bytes::show_tag(magic)
        )));
    }
    let length = u32_at(bytes, 12, "data file header")?;
    if length < HEADER_MIN_LEN {
        return Err(header_error(format!(
            "its length {length} at byte 12 is below the minimum {HEADER_MIN_LEN}"
        )));
    }
    let header_end = HEADER_START as u64 + u64::from(length);
    let file_len = bytes.len() as u64;
    if header_end > file_len {
        return Err(Error::Truncated {
            what: "data file header",
            needed: header_end,
            available: file_len,
        });
    }
    let flatbuffer_offset = u64_at(bytes, 16, "data file header")?;
    let flatbuffer_size = u64_at(bytes, 24, "data file header")?;
    let segment_base_offset = u64_at(bytes, 32, "data file header")?;
    let segment_data_size = u64_at(bytes, 40, "data file header")?;
    // The header sits inside the flatbuffer, which spans the header's padded
    // length (flatbuffer_offset) plus the flatbuffer's own size.
    if flatbuffer_offset < u64::from(length) {
        return Err(header_error(format!(
            "flatbuffer_offset {flatbuffer_offset} (byte 16) is below the header's length {length}"
        )));
    }
    let flatbuffer_end = flatbuffer_offset
        .checked_add(flatbuffer_size)
        .filter(|&end| end <= file_len)
        .ok_or_else(|| {
            header_error(format!(
                "the flatbuffer (offset {flatbuffer_offset}, byte 16, size {flatbuffer_size}, \
                 byte 24) runs past the end of the {file_len}-byte file"
            ))
        })?;
    if segment_base_offset < flatbuffer_end {
        return Err(header_error(format!(
            "segment_base_offset {segment_base_offset} (byte 32) is inside the flatbuffer, \
             which ends at byte {flatbuffer_end}"
        )));
    }
    if segment_base_offset
        .checked_add(segment_data_size)
        .is_none_or(|end| end > file_len)
    {
        return Err(header_error(format!(
            "segment_data_size {segment_data_size} (byte 40) runs past the end of the \
             {file_len}-byte file from segment_base_offset {segment_base_offset}"
        )));
    }
    Ok(Header {
        flatbuffer_end,
        segment_base_offset,
        segment_data_size,
    })
}

/// A tensor layout, checked: a known element type, sizes that are not
/// negative, a dim order that permutes the dimensions, and as many bytes as
/// the blob holds.
fn read_layout(
    layout: fb::TensorLayout<'_>,
    data: &[u8],
    at: &dyn Fn() -> String,
) -> Result<TensorLayout> {
    let dtype = ScalarType::decode(layout.scalar_type().0, at)?;
    let sizes = vec_of_scalars(layout.sizes())
        .map(i64::from)
        .collect::<Vec<_>>();
    let dim_order = layout
        .dim_order()
        .map(|order| order.bytes().to_vec())
        .unwrap_or_default();
    check_dim_order(&dim_order, sizes.len(), at)?;
    let nbytes = byte_count(&sizes, dtype, at)?;
    if nbytes != data.len() as u64 {
        return Err(Error::ByteCount {
            at: at(),
            problem: format!(
                "a {dtype} tensor of sizes {sizes:?} is {nbytes} bytes but its segment holds {}",
                data.len()
            ),
        });
    }
    Ok(TensorLayout {
        dtype,
        sizes,
        dim_order,
    })
}
