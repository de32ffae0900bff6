//! Writes `.ptd` FlatTensor data files for tests, laid out as ExecuTorch's
//! serializer lays them out: the flatbuffer with the 40-byte `FH01` header
//! inserted after its file identifier (padded to 48 bytes, the root offset
//! moved past it), then the segment area, each segment 128-aligned.
//!
//! Shared by the frontend's tests of malformed files (which corrupt what this
//! writes) and the integration tests (which write data files that disagree
//! with a program).

use flatbuffers::FlatBufferBuilder;
use ptec_schema::{FlatTensorScalarType, flat_tensor as ft};

/// What a blob is when it is a tensor.
#[derive(Clone, Debug)]
pub struct Layout {
    /// The format's element type number (6 is float).
    pub scalar_type: i8,
    pub sizes: Vec<i32>,
    pub dim_order: Vec<u8>,
}

/// One named blob.
#[derive(Clone, Debug)]
pub struct Blob {
    pub key: String,
    pub data: Vec<u8>,
    pub layout: Option<Layout>,
}

const HEADER_LEN: usize = 40;
const PADDED_HEADER_LEN: usize = 48;
const SEGMENT_ALIGNMENT: usize = 128;

/// A data file holding `blobs`, one segment each.
pub fn write(blobs: &[Blob]) -> Vec<u8> {
    let mut fbb = FlatBufferBuilder::new();
    let mut area = Vec::new();
    let mut segments = Vec::new();
    for blob in blobs {
        area.resize(area.len().next_multiple_of(SEGMENT_ALIGNMENT), 0);
        segments.push(ft::DataSegment::create(
            &mut fbb,
            &ft::DataSegmentArgs {
                offset: area.len() as u64,
                size_: blob.data.len() as u64,
            },
        ));
        area.extend_from_slice(&blob.data);
    }
    let named: Vec<_> = blobs
        .iter()
        .enumerate()
        .map(|(index, blob)| {
            let key = fbb.create_string(&blob.key);
            let tensor_layout = blob.layout.as_ref().map(|layout| {
                let sizes = fbb.create_vector(&layout.sizes);
                let dim_order = fbb.create_vector(&layout.dim_order);
                ft::TensorLayout::create(
                    &mut fbb,
                    &ft::TensorLayoutArgs {
                        scalar_type: FlatTensorScalarType(layout.scalar_type),
                        sizes: Some(sizes),
                        dim_order: Some(dim_order),
                    },
                )
            });
            ft::NamedData::create(
                &mut fbb,
                &ft::NamedDataArgs {
                    key: Some(key),
                    segment_index: index as u32,
                    tensor_layout,
                },
            )
        })
        .collect();
    let segments = fbb.create_vector(&segments);
    let named_data = fbb.create_vector(&named);
    let root = ft::FlatTensor::create(
        &mut fbb,
        &ft::FlatTensorArgs {
            version: 0,
            segments: Some(segments),
            named_data: Some(named_data),
        },
    );
    fbb.finish(root, Some("FT01"));
    let flatbuffer = fbb.finished_data();

    let flatbuffer_end = PADDED_HEADER_LEN + flatbuffer.len();
    let segment_base = flatbuffer_end.next_multiple_of(SEGMENT_ALIGNMENT);
    let root_offset = u32::from_le_bytes(flatbuffer[..4].try_into().expect("4 bytes"));
    let mut file = Vec::new();
    file.extend_from_slice(&(root_offset + PADDED_HEADER_LEN as u32).to_le_bytes());
    file.extend_from_slice(&flatbuffer[4..8]);
    file.extend_from_slice(b"FH01");
    file.extend_from_slice(&(HEADER_LEN as u32).to_le_bytes());
    for field in [
        PADDED_HEADER_LEN,
        flatbuffer.len(),
        segment_base,
        area.len(),
    ] {
        file.extend_from_slice(&(field as u64).to_le_bytes());
    }
    file.resize(8 + PADDED_HEADER_LEN, 0);
    file.extend_from_slice(&flatbuffer[8..]);
    file.resize(segment_base, 0);
    file.extend_from_slice(&area);
    file
}
