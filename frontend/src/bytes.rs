//! Bounds-checked reads of little-endian integers and byte ranges from
//! untrusted buffers, and flatbuffer verification.

use std::borrow::Cow;

use crate::error::{Error, Result};

/// `bytes[start..start + len]`, or an error naming the region and the range.
pub(crate) fn slice<'a>(
    bytes: &'a [u8],
    start: u64,
    len: u64,
    at: impl FnOnce() -> String,
    region: &'static str,
) -> Result<&'a [u8]> {
    let out_of_bounds = |end| Error::OutOfBounds {
        at: at(),
        start,
        end,
        limit: bytes.len() as u64,
        region,
    };
    let Some(end) = start.checked_add(len) else {
        return Err(out_of_bounds(u64::MAX));
    };
    if end > bytes.len() as u64 {
        return Err(out_of_bounds(end));
    }
    // Both bounds fit in usize: they are at most bytes.len().
    Ok(&bytes[start as usize..end as usize])
}

fn array<const N: usize>(bytes: &[u8], offset: usize, what: &'static str) -> Result<[u8; N]> {
    bytes
        .get(offset..offset + N)
        .and_then(|window| window.try_into().ok())
        .ok_or(Error::Truncated {
            what,
            needed: (offset + N) as u64,
            available: bytes.len() as u64,
        })
}

pub(crate) fn u16_at(bytes: &[u8], offset: usize, what: &'static str) -> Result<u16> {
    array(bytes, offset, what).map(u16::from_le_bytes)
}

pub(crate) fn u32_at(bytes: &[u8], offset: usize, what: &'static str) -> Result<u32> {
    array(bytes, offset, what).map(u32::from_le_bytes)
}

pub(crate) fn u64_at(bytes: &[u8], offset: usize, what: &'static str) -> Result<u64> {
    array(bytes, offset, what).map(u64::from_le_bytes)
}

/// The four bytes at `offset`, as text for messages (lossy, escaped).
pub(crate) fn tag_at(bytes: &[u8], offset: usize) -> Option<[u8; 4]> {
    bytes.get(offset..offset + 4)?.try_into().ok()
}

pub(crate) fn show_tag(tag: Option<[u8; 4]>) -> String {
    match tag {
        Some(tag) => tag.escape_ascii().to_string(),
        None => "<end of file>".to_string(),
    }
}

/// Checks the flatbuffer file identifier at bytes 4..8.
pub(crate) fn expect_identifier(
    bytes: &[u8],
    accepted: &[&'static [u8; 4]],
    what: &str,
) -> Result<[u8; 4]> {
    let found = tag_at(bytes, 4);
    match found {
        Some(tag) if accepted.iter().any(|&want| *want == tag) => Ok(tag),
        _ => Err(Error::Identifier {
            what: what.to_string(),
            expected: accepted
                .iter()
                .map(|tag| format!("{:?}", tag.escape_ascii().to_string()))
                .collect::<Vec<_>>()
                .join(" or "),
            found: show_tag(found),
        }),
    }
}

/// Options for the flatbuffers verifier, sized for models of a few GiB.
pub(crate) fn verifier_options() -> flatbuffers::VerifierOptions {
    flatbuffers::VerifierOptions {
        max_depth: 64,
        max_tables: 10_000_000,
        max_apparent_size: 1 << 32,
        ignore_missing_null_terminator: false,
    }
}

/// Verifies that `bytes` hold a well-formed flatbuffer of some root type
/// with `verify` (which runs the verifier for that root type), returning
/// the bytes to read it from.
///
/// One flaw of real files is tolerated: flatbuffers builders sometimes write
/// an *empty* vector of 8-byte scalars without aligning it (ExecuTorch's
/// Vulkan serializer does), and the Rust verifier rejects it although there
/// is nothing to read. Such a vector is repointed, in a private copy of the
/// flatbuffer, at an aligned empty vector appended to the copy. Any other
/// problem, including a misaligned vector that is not empty, is an error.
pub(crate) fn verified_flatbuffer<'a>(
    bytes: &'a [u8],
    what: &str,
    verify: impl Fn(&[u8], &flatbuffers::VerifierOptions) -> Result<(), flatbuffers::InvalidFlatbuffer>,
) -> Result<Cow<'a, [u8]>> {
    let options = verifier_options();
    let mut buffer = Cow::Borrowed(bytes);
    let mut aligned_empty_vector: Option<usize> = None;
    loop {
        let error = match verify(&buffer, &options) {
            Ok(()) => return Ok(buffer),
            Err(error) => error,
        };
        let flatbuffers::InvalidFlatbuffer::Unaligned {
            position,
            error_trace,
            ..
        } = &error
        else {
            return Err(Error::Flatbuffer {
                what: what.to_string(),
                source: error,
            });
        };
        let field = match error_trace.as_ref().first() {
            Some(flatbuffers::ErrorTraceDetail::TableField {
                position: field, ..
            }) => *field,
            _ => {
                return Err(Error::Flatbuffer {
                    what: what.to_string(),
                    source: error,
                });
            }
        };
        let vector = position.wrapping_sub(4);
        let is_empty_vector_of_field = u32_at(&buffer, field, "flatbuffer field")
            .is_ok_and(|offset| field.checked_add(offset as usize) == Some(vector))
            && u32_at(&buffer, vector, "flatbuffer vector").is_ok_and(|len| len == 0);
        if !is_empty_vector_of_field {
            return Err(Error::Flatbuffer {
                what: what.to_string(),
                source: error,
            });
        }
        let owned = buffer.to_mut();
        let target = *aligned_empty_vector.get_or_insert_with(|| {
            // Pad so that the vector's elements would start 8-aligned, then
            // append a zero length.
            while (owned.len() + 4) % 8 != 0 {
                owned.push(0);
            }
            owned.extend_from_slice(&[0; 4]);
            owned.len() - 4
        });
        let Ok(offset) = u32::try_from(target - field) else {
            return Err(Error::Flatbuffer {
                what: what.to_string(),
                source: error,
            });
        };
        owned[field..field + 4].copy_from_slice(&offset.to_le_bytes());
    }
}
