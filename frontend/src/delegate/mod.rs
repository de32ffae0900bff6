//! Delegate payloads: the XNNPACK ("XH00" header, XN00/XN01 graph, constant
//! data) and Vulkan ("VH00" header, VK00 graph, constant bytes) blobs, split
//! here, with every constant they name resolved to bytes in the file; their
//! graphs are verified and decoded into plain typed values by `xnnpack.rs`
//! and `vulkan.rs`, so that no consumer reads a flatbuffer.

pub mod vulkan;
pub mod xnnpack;

use std::collections::BTreeMap;

use crate::bytes::{slice, u16_at, u32_at, u64_at};
use crate::error::{Error, Result};
use crate::model::NamedData;
use vulkan::VulkanGraph;
use xnnpack::XnnpackGraph;

/// The backend ids ExecuTorch's partitioners write.
pub const XNNPACK_BACKEND: &str = "XnnpackBackend";
pub const VULKAN_BACKEND: &str = "VulkanBackend";

/// A delegate's payload, split by backend.
#[derive(Debug)]
pub enum DelegatePayload<'a> {
    Xnnpack(XnnpackGraph<'a>),
    Vulkan(VulkanGraph<'a>),
    /// A backend ptec does not know: the raw bytes.
    Opaque(&'a [u8]),
}

impl DelegatePayload<'_> {
    /// How many nodes (operator calls) the delegated graph has.
    pub fn node_count(&self) -> Option<usize> {
        match self {
            DelegatePayload::Xnnpack(graph) => Some(graph.nodes.len()),
            DelegatePayload::Vulkan(graph) => Some(graph.chain.len()),
            DelegatePayload::Opaque(_) => None,
        }
    }

    /// Bytes of the constants the graph uses.
    pub fn constant_bytes(&self) -> u64 {
        match self {
            DelegatePayload::Xnnpack(graph) => graph
                .constants
                .iter()
                .flatten()
                .map(|data| data.len() as u64)
                .sum(),
            DelegatePayload::Vulkan(graph) => {
                graph.constants.iter().map(|data| data.len() as u64).sum()
            }
            DelegatePayload::Opaque(_) => 0,
        }
    }

    /// The graph's node kinds with their counts (XNNPACK node types such as
    /// `XNNConv2d`, Vulkan operator names such as `aten.add.Tensor`).
    pub fn node_histogram(&self) -> BTreeMap<&str, usize> {
        let kinds: Vec<&str> = match self {
            DelegatePayload::Xnnpack(graph) => {
                graph.nodes.iter().map(|node| node.op.name()).collect()
            }
            DelegatePayload::Vulkan(graph) => {
                graph.chain.iter().map(|call| call.name.as_str()).collect()
            }
            DelegatePayload::Opaque(_) => Vec::new(),
        };
        let mut histogram = BTreeMap::new();
        for kind in kinds {
            *histogram.entry(kind).or_default() += 1;
        }
        histogram
    }
}

/// Declares a Rust enum that mirrors an enum of a graph schema: a variant
/// for each value the schema defines, and `Unknown` with the code for the
/// others, since a file may hold any code; `name` is the schema's name of
/// the value, as messages show it.
macro_rules! mirror_enum {
    (
        $(#[$doc:meta])*
        $name:ident: $schema:ty, $code:ty {
            $($variant:ident = $value:ident,)*
        }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)*
            /// A code the schema does not define.
            Unknown($code),
        }

        impl $name {
            fn decode(value: $schema) -> Self {
                match value {
                    $(<$schema>::$value => $name::$variant,)*
                    other => $name::Unknown(other.0),
                }
            }

            /// The schema's name of the value, or `unknown`.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => stringify!($value),)*
                    $name::Unknown(_) => "unknown",
                }
            }
        }
    };
}
use mirror_enum;

pub(crate) fn read_payload<'a>(
    backend: &str,
    data: &'a [u8],
    named_data: &NamedData<'a>,
    path: &str,
) -> Result<DelegatePayload<'a>> {
    match backend {
        XNNPACK_BACKEND => xnnpack::read(data, named_data, path).map(DelegatePayload::Xnnpack),
        VULKAN_BACKEND => vulkan::read(data, named_data, path).map(DelegatePayload::Vulkan),
        _ => Ok(DelegatePayload::Opaque(data)),
    }
}

/// The two regions of a payload that has an `XH00`/`VH00` header.
struct Regions<'a> {
    flatbuffer: &'a [u8],
    constants: &'a [u8],
}

/// Splits a payload with the 30-byte header both backends use: a flatbuffer
/// offset and size (u32 at 10 and 14), then a constant-data offset (u32 at
/// 18) and size (u64 at 22).
fn split_header<'a>(data: &'a [u8], what: &'static str, path: &str) -> Result<Regions<'a>> {
    const HEADER_LEN: u16 = 30;
    let length = u16_at(data, 8, what)?;
    if length < HEADER_LEN {
        return Err(Error::Header {
            what,
            problem: format!("{path}: its length {length} is below {HEADER_LEN}"),
        });
    }
    let flatbuffer_offset = u32_at(data, 10, what)?;
    let flatbuffer_size = u32_at(data, 14, what)?;
    let constants_offset = u32_at(data, 18, what)?;
    let constants_size = u64_at(data, 22, what)?;
    let flatbuffer = slice(
        data,
        u64::from(flatbuffer_offset),
        u64::from(flatbuffer_size),
        || format!("{path}: {what} flatbuffer"),
        "delegate payload",
    )?;
    // A zero size means "to the end of the payload".
    let constants_size = if constants_size == 0 {
        (data.len() as u64).saturating_sub(u64::from(constants_offset))
    } else {
        constants_size
    };
    let constants = slice(
        data,
        u64::from(constants_offset),
        constants_size,
        || format!("{path}: {what} constant data"),
        "delegate payload",
    )?;
    Ok(Regions {
        flatbuffer,
        constants,
    })
}

/// A constant of a delegate graph: bytes in the payload's constant region,
/// or, when the offset is u64::MAX, the program's named data under a key.
fn resolve_constant<'a>(
    offset: u64,
    size: u64,
    named_key: Option<&str>,
    regions_constants: &'a [u8],
    named_data: &NamedData<'a>,
    at: &dyn Fn() -> String,
) -> Result<&'a [u8]> {
    match named_key.filter(|key| !key.is_empty()) {
        Some(key) => {
            let data = named_data
                .get(key)
                .ok_or_else(|| named_data.missing(at(), "named data key", key))?;
            if data.len() as u64 != size {
                return Err(Error::ByteCount {
                    at: at(),
                    problem: format!(
                        "the constant is {size} bytes but named data {key:?} holds {}",
                        data.len()
                    ),
                });
            }
            Ok(data)
        }
        None => slice(
            regions_constants,
            offset,
            size,
            at,
            "delegate constant data",
        ),
    }
}
