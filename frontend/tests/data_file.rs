//! `.ptd` data files: a valid one reads with its blobs and layouts, and each
//! kind of fault injected into it is rejected with an error that says what is
//! wrong and where.

#[path = "../../tests/common/ptd_writer.rs"]
mod ptd_writer;

use ptd_writer::{Blob, Layout};
use ptec_frontend::{Error, ScalarType, read_data_file};

const FLOAT: i8 = 6;

/// Byte offsets of the header's fields.
mod header {
    pub const LENGTH: usize = 12;
    pub const FLATBUFFER_SIZE: usize = 24;
    pub const SEGMENT_DATA_SIZE: usize = 40;
}

fn weight(key: &str, sizes: Vec<i32>, bytes: usize) -> Blob {
    let dim_order = (0..sizes.len() as u8).collect();
    Blob {
        key: key.to_string(),
        data: (0..bytes).map(|byte| byte as u8).collect(),
        layout: Some(Layout {
            scalar_type: FLOAT,
            sizes,
            dim_order,
        }),
    }
}

/// A float [2, 3] tensor and a 10-byte blob that is not a tensor.
fn blobs() -> Vec<Blob> {
    vec![
        weight("w", vec![2, 3], 24),
        Blob {
            key: "packed".to_string(),
            data: vec![7; 10],
            layout: None,
        },
    ]
}

fn error_of(bytes: &[u8]) -> Error {
    match read_data_file(bytes) {
        Ok(_) => panic!("the reader accepted a faulty data file"),
        Err(error) => error,
    }
}

fn set_u64(bytes: &mut [u8], offset: usize, value: u64) {
    bytes[offset..offset + 8].copy_from_slice(&value.to_le_bytes());
}

fn u64_at(bytes: &[u8], offset: usize) -> u64 {
    u64::from_le_bytes(bytes[offset..offset + 8].try_into().expect("8 bytes"))
}

#[test]
fn the_unfaulted_data_file_reads() {
    let bytes = ptd_writer::write(&blobs());
    let file = read_data_file(&bytes).expect("valid data file");
    assert_eq!(file.named_data.len(), 2);
    let w = file.named_data.entry("w").expect("w is there");
    assert_eq!(w.data, (0..24).collect::<Vec<u8>>());
    let layout = w.layout.as_ref().expect("w is a tensor");
    assert_eq!(layout.dtype, ScalarType::Float);
    assert_eq!(layout.sizes, [2, 3]);
    assert_eq!(layout.dim_order, [0, 1]);
    let packed = file.named_data.entry("packed").expect("packed is there");
    assert_eq!(packed.data, [7; 10]);
    assert!(packed.layout.is_none());
}

#[test]
fn truncated_files() {
    let bytes = ptd_writer::write(&blobs());
    for len in [0, 7] {
        let error = error_of(&bytes[..len]);
        assert!(
            matches!(
                error,
                Error::Truncated {
                    what: "data file",
                    ..
                }
            ),
            "{len} bytes: {error}"
        );
    }
    // The identifier is there but the 40-byte header is cut short.
    for len in [12, 20, 47] {
        let error = error_of(&bytes[..len]);
        assert!(
            matches!(
                error,
                Error::Truncated {
                    what: "data file header",
                    ..
                }
            ),
            "{len} bytes: {error}"
        );
    }
    // The header is whole but the segment area is cut off.
    let error = error_of(&bytes[..bytes.len() - 1]);
    assert!(error.to_string().contains("segment_data_size"), "{error}");
}

#[test]
fn wrong_identifier_and_header_magic() {
    let mut bytes = ptd_writer::write(&blobs());
    bytes[4..8].copy_from_slice(b"ET12");
    assert!(matches!(error_of(&bytes), Error::Identifier { .. }));

    let mut bytes = ptd_writer::write(&blobs());
    bytes[8..12].copy_from_slice(b"eh00");
    let error = error_of(&bytes);
    assert!(matches!(error, Error::Header { .. }), "{error}");
    assert!(error.to_string().contains("FH01"), "{error}");
}

#[test]
fn header_fields_outside_the_file() {
    let good = ptd_writer::write(&blobs());

    let mut bytes = good.clone();
    bytes[header::LENGTH..header::LENGTH + 4].copy_from_slice(&16u32.to_le_bytes());
    let error = error_of(&bytes);
    assert!(
        error.to_string().contains("below the minimum 40"),
        "{error}"
    );

    let mut bytes = good.clone();
    set_u64(&mut bytes, header::FLATBUFFER_SIZE, u64::MAX - 8);
    let error = error_of(&bytes);
    assert!(error.to_string().contains("flatbuffer"), "{error}");

    let mut bytes = good.clone();
    set_u64(&mut bytes, header::SEGMENT_DATA_SIZE, u64::MAX);
    let error = error_of(&bytes);
    assert!(error.to_string().contains("segment_data_size"), "{error}");
}

#[test]
fn segment_outside_the_segment_area() {
    let mut bytes = ptd_writer::write(&blobs());
    // Shrink the area so that the second segment (at 128, 10 bytes) ends
    // past it.
    set_u64(&mut bytes, header::SEGMENT_DATA_SIZE, 130);
    match error_of(&bytes) {
        Error::OutOfBounds {
            at,
            start,
            end,
            limit,
            region,
            ..
        } => {
            assert_eq!(at, "segments[1]");
            assert_eq!((start, end, limit, region), (128, 138, 130, "segment area"));
        }
        other => panic!("expected OutOfBounds, got {other}"),
    }
    assert_eq!(
        u64_at(&ptd_writer::write(&blobs()), header::SEGMENT_DATA_SIZE),
        138
    );
}

#[test]
fn duplicate_keys() {
    let mut blobs = blobs();
    blobs[1].key = "w".to_string();
    blobs[1].layout = None;
    let error = error_of(&ptd_writer::write(&blobs));
    let message = error.to_string();
    assert!(message.contains("named_data[1]"), "{message}");
    assert!(message.contains("\"w\" appears twice"), "{message}");
}

#[test]
fn layouts_that_disagree_with_their_data() {
    // 24 bytes hold six floats, not eight.
    let error = error_of(&ptd_writer::write(&[weight("w", vec![2, 4], 24)]));
    assert!(matches!(error, Error::ByteCount { .. }), "{error}");
    assert!(
        error.to_string().contains("named_data[0].tensor_layout"),
        "{error}"
    );

    let mut blob = weight("w", vec![2, 3], 24);
    blob.layout.as_mut().expect("a layout").dim_order = vec![1, 1];
    let error = error_of(&ptd_writer::write(&[blob]));
    assert!(matches!(error, Error::DimOrder { .. }), "{error}");

    let error = error_of(&ptd_writer::write(&[weight("w", vec![-2, -3], 24)]));
    assert!(matches!(error, Error::ByteCount { .. }), "{error}");

    let mut blob = weight("w", vec![2, 3], 24);
    blob.layout.as_mut().expect("a layout").scalar_type = 99;
    let error = error_of(&ptd_writer::write(&[blob]));
    assert!(
        error.to_string().contains("named_data[0].tensor_layout"),
        "{error}"
    );
}

#[test]
fn empty_key() {
    let mut blobs = blobs();
    blobs[0].key = String::new();
    let error = error_of(&ptd_writer::write(&blobs));
    assert!(
        error
            .to_string()
            .contains("named_data[0]: the entry has no key"),
        "{error}"
    );
}
