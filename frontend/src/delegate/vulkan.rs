//! The graph of a Vulkan delegate (`VK00`), verified and decoded into plain
//! typed values: the values by id (scalars, lists, tensors with their
//! constant bytes) and the chain of operator calls, whose arguments are
//! value ids. Every id the graph holds is checked here, once, against its
//! values.

use ptec_schema::vulkan as vk;

use super::{Regions, mirror_enum, resolve_constant, split_header};
use crate::bytes::{expect_identifier, tag_at, verified_flatbuffer};
use crate::error::{Error, Result};
use crate::model::{NamedData, typed_index};
use crate::pte::{vec_of, vec_of_scalars};

typed_index!(
    /// The id of a value of a Vulkan graph: an index into
    /// [`VulkanGraph::values`].
    VkValueId,
    ""
);

/// A verified Vulkan graph, decoded.
#[derive(Debug)]
pub struct VulkanGraph<'a> {
    /// The file identifier the graph carries (`VK00`).
    pub identifier: [u8; 4],
    /// The values, by id.
    pub values: Vec<VkValue<'a>>,
    /// The operator calls, in the order they run.
    pub chain: Vec<VkCall>,
    /// The values the graph lists as the call's inputs and outputs.
    pub input_ids: Vec<VkValueId>,
    pub output_ids: Vec<VkValueId>,
    /// The bytes of each entry of the graph's constant table, by index.
    pub constants: Vec<&'a [u8]>,
}

impl<'a> VulkanGraph<'a> {
    /// The value of an id of this graph.
    pub fn value(&self, id: VkValueId) -> &VkValue<'a> {
        &self.values[id.index()]
    }
}

/// One operator application (`OperatorCall`): `name` is the torch target
/// (`aten.add.Tensor`), `args` every argument of its schema in order and
/// then the output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VkCall {
    pub node_id: u32,
    pub name: String,
    pub args: Vec<VkValueId>,
}

/// A value of the graph (`VkValue`, by the kind of its `GraphTypes`
/// union).
#[derive(Clone, Debug, PartialEq)]
pub enum VkValue<'a> {
    Null,
    Int(i64),
    Double(f64),
    Bool(bool),
    String(String),
    /// Literal integers, unlike the program's boxed lists.
    IntList(Vec<i64>),
    DoubleList(Vec<f64>),
    BoolList(Vec<bool>),
    /// Values of the graph.
    ValueList(Vec<VkValueId>),
    /// An integer the graph computes at run time.
    SymInt(i32),
    Tensor(VkTensor<'a>),
    /// No value (union tag 0), or one of a kind the schema does not
    /// define: the union tag.
    Unknown(u8),
}

impl VkValue<'_> {
    /// The kind's name, as the schema's `GraphTypes` union spells it.
    pub fn kind(&self) -> &'static str {
        match self {
            VkValue::Null => "Null",
            VkValue::Int(_) => "Int",
            VkValue::Double(_) => "Double",
            VkValue::Bool(_) => "Bool",
            VkValue::String(_) => "String",
            VkValue::IntList(_) => "IntList",
            VkValue::DoubleList(_) => "DoubleList",
            VkValue::BoolList(_) => "BoolList",
            VkValue::ValueList(_) => "ValueList",
            VkValue::SymInt(_) => "SymInt",
            VkValue::Tensor(_) => "VkTensor",
            VkValue::Unknown(tag) => vk::GraphTypes(*tag).variant_name().unwrap_or("unknown"),
        }
    }
}

/// A tensor of the graph (`VkTensor`).
#[derive(Clone, Debug, PartialEq)]
pub struct VkTensor<'a> {
    pub datatype: VkDataType,
    pub dims: Vec<u32>,
    /// The bytes of the tensor's entry in the constant table, for a
    /// constant.
    pub constant: Option<&'a [u8]>,
    /// The shared memory slot the tensor lives in, when it shares one.
    pub mem_obj_id: Option<u32>,
    /// The GPU resource that backs the tensor.
    pub storage_type: VkStorageType,
    /// Which dimension the GPU packs four to a texel.
    pub memory_layout: VkMemoryLayout,
    /// The element type of an input's or output's staging buffer, which
    /// the runtime converts to and from `datatype` (`Unset`: `datatype`
    /// itself). The exporter's `force_fp16` computes in f16 what the
    /// program passes as f32.
    pub staging_datatype: VkDataType,
}

mirror_enum! {
    /// The element type of a tensor (`VkDataType`).
    VkDataType: vk::VkDataType, i8 {
        Bool = BOOL,
        Uint8 = UINT8,
        Int8 = INT8,
        Int32 = INT32,
        Float16 = FLOAT16,
        Float32 = FLOAT32,
        Float64 = FLOAT64,
        Int64 = INT64,
        Unset = UNSET,
    }
}

mirror_enum! {
    /// The GPU resource that backs a tensor (`VkStorageType`).
    VkStorageType: vk::VkStorageType, u8 {
        Buffer = BUFFER,
        Texture3d = TEXTURE_3D,
        Texture2d = TEXTURE_2D,
        Default = DEFAULT_STORAGE,
    }
}

mirror_enum! {
    /// How the GPU packs a tensor's elements (`VkMemoryLayout`).
    VkMemoryLayout: vk::VkMemoryLayout, u8 {
        WidthPacked = TENSOR_WIDTH_PACKED,
        HeightPacked = TENSOR_HEIGHT_PACKED,
        ChannelsPacked = TENSOR_CHANNELS_PACKED,
        Int8Packed4W4C = PACKED_INT8_4W4C,
        Int8Packed4H4W = PACKED_INT8_4H4W,
        Int8Packed4W = PACKED_INT8_4W,
        Int8Packed4C = PACKED_INT8_4C,
        Int8Packed4C1W = PACKED_INT8_4C1W,
        Int8PackedConv2d = PACKED_INT8_CONV2D,
        Default = DEFAULT_LAYOUT,
    }
}

pub(super) fn read<'a>(
    data: &'a [u8],
    named_data: &NamedData<'a>,
    path: &str,
) -> Result<VulkanGraph<'a>> {
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
        })
        .collect::<Result<Vec<_>>>()?;
    let ids = Ids {
        count: graph.values().map_or(0, |values| values.len()),
        at: format!("{path}: Vulkan"),
    };
    let values = vec_of(graph.values())
        .enumerate()
        .map(|(index, value)| decode_value(&value, &constants, &ids, &format!("values[{index}]")))
        .collect::<Result<Vec<_>>>()?;
    let chain = vec_of(graph.chain())
        .enumerate()
        .map(|(index, call)| {
            let at = format!("chain[{index}]");
            Ok(VkCall {
                node_id: call.node_id(),
                name: call
                    .name()
                    .ok_or_else(|| {
                        Error::invalid(format!("{} {at}", ids.at), "the operator call has no name")
                    })?
                    .to_string(),
                args: ids.list(&format!("{at}.args"), call.args())?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(VulkanGraph {
        identifier,
        input_ids: ids.list("input_ids", graph.input_ids())?,
        output_ids: ids.list("output_ids", graph.output_ids())?,
        values,
        chain,
        constants,
    })
}

/// Checks value ids against the graph's values.
struct Ids {
    /// How many values the graph has.
    count: usize,
    /// Where the graph is, for messages (`... Vulkan`).
    at: String,
}

impl Ids {
    /// The value ids of the vector at `field`.
    fn list<'b, T: Into<i64> + flatbuffers::Follow<'b, Inner = T> + 'b>(
        &self,
        field: &str,
        raw: Option<flatbuffers::Vector<'b, T>>,
    ) -> Result<Vec<VkValueId>> {
        vec_of_scalars(raw)
            .enumerate()
            .map(|(index, raw)| {
                let id = raw.into();
                u32::try_from(id)
                    .ok()
                    .filter(|&id| (id as usize) < self.count)
                    .map(VkValueId)
                    .ok_or_else(|| Error::OutOfRange {
                        at: format!("{} {field}[{index}]", self.at),
                        what: "value id",
                        index: id,
                        len: self.count,
                    })
            })
            .collect()
    }
}

fn decode_value<'a>(
    value: &vk::VkValue<'_>,
    constants: &[&'a [u8]],
    ids: &Ids,
    field: &str,
) -> Result<VkValue<'a>> {
    use vk::GraphTypes as G;
    let kind = value.value_type();
    let decoded = match kind {
        G::Null => Some(VkValue::Null),
        G::Int => value.value_as_int().map(|v| VkValue::Int(v.int_val())),
        G::Double => value
            .value_as_double()
            .map(|v| VkValue::Double(v.double_val())),
        G::Bool => value.value_as_bool().map(|v| VkValue::Bool(v.bool_val())),
        G::String => value
            .value_as_string()
            .map(|v| VkValue::String(v.string_val().unwrap_or_default().to_string())),
        G::IntList => value
            .value_as_int_list()
            .map(|list| VkValue::IntList(vec_of_scalars(list.items()).collect())),
        G::DoubleList => value
            .value_as_double_list()
            .map(|list| VkValue::DoubleList(vec_of_scalars(list.items()).collect())),
        G::BoolList => value
            .value_as_bool_list()
            .map(|list| VkValue::BoolList(vec_of_scalars(list.items()).collect())),
        G::ValueList => value
            .value_as_value_list()
            .map(|list| {
                ids.list(&format!("{field}.items"), list.items())
                    .map(VkValue::ValueList)
            })
            .transpose()?,
        G::SymInt => value.value_as_sym_int().map(|v| VkValue::SymInt(v.value())),
        G::VkTensor => value
            .value_as_vk_tensor()
            .map(|tensor| decode_tensor(&tensor, constants, ids, field).map(VkValue::Tensor))
            .transpose()?,
        _ => None,
    };
    Ok(decoded.unwrap_or(VkValue::Unknown(kind.0)))
}

fn decode_tensor<'a>(
    tensor: &vk::VkTensor<'_>,
    constants: &[&'a [u8]],
    ids: &Ids,
    field: &str,
) -> Result<VkTensor<'a>> {
    // A negative constant id names no constant.
    let constant = match usize::try_from(tensor.constant_id()) {
        Ok(index) => Some(
            constants
                .get(index)
                .copied()
                .ok_or_else(|| Error::OutOfRange {
                    at: format!("{} {field}.constant_id", ids.at),
                    what: "constant index",
                    index: tensor.constant_id().into(),
                    len: constants.len(),
                })?,
        ),
        Err(_) => None,
    };
    Ok(VkTensor {
        datatype: VkDataType::decode(tensor.datatype()),
        dims: vec_of_scalars(tensor.dims()).collect(),
        constant,
        mem_obj_id: u32::try_from(tensor.mem_obj_id()).ok(),
        storage_type: VkStorageType::decode(tensor.storage_type()),
        memory_layout: VkMemoryLayout::decode(tensor.memory_layout()),
        staging_datatype: VkDataType::decode(tensor.staging_datatype()),
    })
}

#[cfg(test)]
mod tests {
    use flatbuffers::FlatBufferBuilder;

    use super::*;

    /// A graph of four values: an Int, a constant tensor, a ValueList of
    /// `items` and a value of a kind the schema does not define; one empty
    /// constant; one call of `args`.
    struct Graph {
        constant_id: i32,
        items: Vec<i32>,
        args: Vec<i32>,
        input_ids: Vec<u32>,
        output_ids: Vec<u32>,
    }

    impl Default for Graph {
        fn default() -> Self {
            Graph {
                constant_id: 0,
                items: vec![0, 1],
                args: vec![1, 0, 2],
                input_ids: vec![1],
                output_ids: vec![2],
            }
        }
    }

    fn bytes(graph: &Graph) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let int = vk::Int::create(&mut fbb, &vk::IntArgs { int_val: 3 });
        let dims = fbb.create_vector(&[0u32, 2]);
        let tensor = vk::VkTensor::create(
            &mut fbb,
            &vk::VkTensorArgs {
                datatype: vk::VkDataType::FLOAT32,
                dims: Some(dims),
                constant_id: graph.constant_id,
                mem_obj_id: -1,
                ..Default::default()
            },
        );
        let items = fbb.create_vector(&graph.items);
        let list = vk::ValueList::create(&mut fbb, &vk::ValueListArgs { items: Some(items) });
        let unknown = vk::Null::create(&mut fbb, &vk::NullArgs {});
        let values: Vec<_> = [
            (vk::GraphTypes::Int, int.as_union_value()),
            (vk::GraphTypes::VkTensor, tensor.as_union_value()),
            (vk::GraphTypes::ValueList, list.as_union_value()),
            (vk::GraphTypes(99), unknown.as_union_value()),
        ]
        .into_iter()
        .map(|(value_type, value)| {
            let args = vk::VkValueArgs {
                value_type,
                value: Some(value),
            };
            vk::VkValue::create(&mut fbb, &args)
        })
        .collect();
        let values = fbb.create_vector(&values);
        let name = fbb.create_string("aten.add.Tensor");
        let args = fbb.create_vector(&graph.args);
        let call = vk::OperatorCall::create(
            &mut fbb,
            &vk::OperatorCallArgs {
                node_id: 5,
                name: Some(name),
                args: Some(args),
            },
        );
        let chain = fbb.create_vector(&[call]);
        let constant = vk::VkBytes::create(&mut fbb, &vk::VkBytesArgs::default());
        let constants = fbb.create_vector(&[constant]);
        let input_ids = fbb.create_vector(&graph.input_ids);
        let output_ids = fbb.create_vector(&graph.output_ids);
        let root = vk::VkGraph::create(
            &mut fbb,
            &vk::VkGraphArgs {
                chain: Some(chain),
                values: Some(values),
                input_ids: Some(input_ids),
                output_ids: Some(output_ids),
                constants: Some(constants),
                ..Default::default()
            },
        );
        fbb.finish(root, Some("VK00"));
        fbb.finished_data().to_vec()
    }

    fn error(graph: &Graph) -> String {
        match read(&bytes(graph), &NamedData::default(), "test") {
            Ok(decoded) => panic!("decoded a bad graph: {decoded:?}"),
            Err(error) => error.to_string(),
        }
    }

    #[test]
    fn graphs_decode_into_typed_values() {
        let bytes = bytes(&Graph::default());
        let graph = read(&bytes, &NamedData::default(), "test").expect("the graph is valid");
        let [int, tensor, list] = [0, 1, 2].map(VkValueId);
        assert_eq!(graph.value(int), &VkValue::Int(3));
        let VkValue::Tensor(decoded) = graph.value(tensor) else {
            panic!("not a tensor: {:?}", graph.value(tensor));
        };
        assert_eq!(decoded.datatype, VkDataType::Float32);
        assert_eq!(decoded.dims, [0, 2]);
        assert_eq!(decoded.constant, Some(&[][..]));
        assert_eq!(decoded.mem_obj_id, None);
        assert_eq!(decoded.storage_type, VkStorageType::Default);
        assert_eq!(graph.value(list), &VkValue::ValueList(vec![int, tensor]));
        assert_eq!(graph.values[3], VkValue::Unknown(99));
        assert_eq!(graph.values[3].kind(), "unknown");
        assert_eq!(
            graph.chain,
            [VkCall {
                node_id: 5,
                name: "aten.add.Tensor".to_string(),
                args: vec![tensor, int, list],
            }]
        );
        assert_eq!(
            (graph.input_ids, graph.output_ids),
            (vec![tensor], vec![list])
        );
    }

    #[test]
    fn every_id_is_in_range() {
        let cases = [
            (
                Graph {
                    items: vec![0, 9],
                    ..Graph::default()
                },
                "test: Vulkan values[2].items[1]: value id 9 is out of range (there are 4)",
            ),
            (
                Graph {
                    args: vec![1, -1],
                    ..Graph::default()
                },
                "test: Vulkan chain[0].args[1]: value id -1 is out of range",
            ),
            (
                Graph {
                    output_ids: vec![4],
                    ..Graph::default()
                },
                "test: Vulkan output_ids[0]: value id 4 is out of range",
            ),
            (
                Graph {
                    constant_id: 1,
                    ..Graph::default()
                },
                "test: Vulkan values[1].constant_id: constant index 1 is out of range (there are 1)",
            ),
        ];
        for (graph, expected) in cases {
            let error = error(&graph);
            assert!(error.contains(expected), "{error}");
        }
    }
}
