//! Delegate payloads: the XNNPACK ("XH00" header, XN00/XN01 graph, constant
//! data) and Vulkan ("VH00" header, VK00 graph, constant bytes) blobs, split
//! and verified, with every constant they name resolved to bytes in the
//! file; XNNPACK graphs are decoded into plain typed values by `xnnpack.rs`.

pub mod xnnpack;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;

/// The accessors of the Vulkan graph flatbuffer, for reading the graphs
/// [`DelegateGraph::graph`] hands out.
pub use ptec_schema::vulkan as vulkan_schema;
use ptec_schema::vulkan as vk;

use crate::bytes::{expect_identifier, slice, tag_at, u16_at, u32_at, u64_at, verified_flatbuffer};
use crate::error::{Error, Result};
use crate::model::NamedData;
use crate::pte::{vec_of, vec_of_scalars};
use xnnpack::XnnpackGraph;

/// The backend ids ExecuTorch's partitioners write.
pub const XNNPACK_BACKEND: &str = "XnnpackBackend";
pub const VULKAN_BACKEND: &str = "VulkanBackend";

/// A delegate's payload, split by backend.
#[derive(Debug)]
pub enum DelegatePayload<'a> {
    Xnnpack(XnnpackGraph<'a>),
    Vulkan(DelegateGraph<'a, Vulkan>),
    /// A backend ptec does not know: the raw bytes.
    Opaque(&'a [u8]),
}

impl DelegatePayload<'_> {
    /// How many nodes (operator calls) the delegated graph has.
    pub fn node_count(&self) -> Option<usize> {
        match self {
            DelegatePayload::Xnnpack(graph) => Some(graph.nodes.len()),
            DelegatePayload::Vulkan(graph) => Some(graph.node_kinds.len()),
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
            DelegatePayload::Vulkan(graph) => graph
                .constants
                .iter()
                .flatten()
                .map(|data| data.len() as u64)
                .sum(),
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
            DelegatePayload::Vulkan(graph) => graph.node_kinds.iter().map(String::as_str).collect(),
            DelegatePayload::Opaque(_) => Vec::new(),
        };
        let mut histogram = BTreeMap::new();
        for kind in kinds {
            *histogram.entry(kind).or_default() += 1;
        }
        histogram
    }
}

/// Marks a [`DelegateGraph`] that holds a Vulkan graph.
#[derive(Debug)]
pub enum Vulkan {}

/// A verified delegate graph with its constants resolved.
#[derive(Debug)]
pub struct DelegateGraph<'a, Backend> {
    /// The graph's flatbuffer, verified; borrowed from the file unless it
    /// had to be mended (see `verified_flatbuffer`).
    flatbuffer: Cow<'a, [u8]>,
    /// The file identifier the graph carries (`VK00`).
    pub identifier: [u8; 4],
    /// The bytes of each entry of the graph's constant table, by index.
    pub constants: Vec<Option<&'a [u8]>>,
    /// The kind of each node, in order.
    pub node_kinds: Vec<String>,
    backend: PhantomData<Backend>,
}

impl DelegateGraph<'_, Vulkan> {
    pub fn graph(&self) -> vk::VkGraph<'_> {
        // SAFETY: `flatbuffer` passed the verifier for this root type when
        // the graph was read, and it is immutable since.
        unsafe { flatbuffers::root_unchecked::<vk::VkGraph>(&self.flatbuffer) }
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
        VULKAN_BACKEND => read_vulkan(data, named_data, path).map(DelegatePayload::Vulkan),
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
            let data = named_data.get(key).ok_or_else(|| {
                Error::invalid(
                    at(),
                    format!("named data key {key:?} is not in the program"),
                )
            })?;
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

fn read_vulkan<'a>(
    data: &'a [u8],
    named_data: &NamedData<'a>,
    path: &str,
) -> Result<DelegateGraph<'a, Vulkan>> {
    const WHAT: &str = "Vulkan payload";
    let regions = if tag_at(data, 4) == Some(*b"VH00") {
        split_header(data, WHAT, path)?
    } else {
        Regions {
            flatbuffer: data,
            constants: &[],
        }
    };
    let what = format!("{path}: Vulkan graph");
    let identifier = expect_identifier(regions.flatbuffer, &[b"VK00"], &what)?;
    let flatbuffer = verified_flatbuffer(regions.flatbuffer, &what, |bytes, options| {
        flatbuffers::root_with_opts::<vk::VkGraph>(options, bytes).map(|_| ())
    })?;
    // SAFETY: verified just above.
    let graph = unsafe { flatbuffers::root_unchecked::<vk::VkGraph>(&flatbuffer) };
    let constants = vec_of(graph.constants())
        .enumerate()
        .map(|(index, entry)| {
            let at = || format!("{path}: Vulkan constants[{index}]");
            resolve_constant(
                entry.offset(),
                entry.length(),
                entry.named_key(),
                regions.constants,
                named_data,
                &at,
            )
            .map(Some)
        })
        .collect::<Result<Vec<_>>>()?;
    let value_count = graph.values().map_or(0, |values| values.len());
    let node_kinds = vec_of(graph.chain())
        .enumerate()
        .map(|(index, call)| {
            let at = || format!("{path}: Vulkan chain[{index}]");
            for (arg, id) in vec_of_scalars(call.args()).enumerate() {
                if usize::try_from(id).map_or(true, |id| id >= value_count) {
                    return Err(Error::OutOfRange {
                        at: format!("{}.args[{arg}]", at()),
                        what: "value id",
                        index: i64::from(id),
                        len: value_count,
                    });
                }
            }
            call.name()
                .map(str::to_string)
                .ok_or_else(|| Error::invalid(at(), "the operator call has no name"))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(DelegateGraph {
        flatbuffer,
        identifier,
        constants,
        node_kinds,
        backend: PhantomData,
    })
}
