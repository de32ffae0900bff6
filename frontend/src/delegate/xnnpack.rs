//! The graph of an XNNPACK delegate (`XN00`/`XN01`), verified and decoded
//! into plain typed values: tensor values with their ids, element types,
//! constant bytes and quantization, and nodes whose operation and operands
//! are typed. Every value id the graph names is checked here, once, and the
//! id 0xFFFFFFFF, which stands for no value, becomes `None`, so that
//! consumers never see it.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use ptec_schema::xnnpack as xnn;

use super::{Regions, mirror_enum, resolve_constant, split_header};
use crate::bytes::{expect_identifier, tag_at, verified_flatbuffer};
use crate::error::{Error, Result};
use crate::model::NamedData;
use crate::pte::{vec_of, vec_of_scalars};

/// The id that stands for no value (an absent bias, an unused input) and
/// the external id of a value that is none of the call's arguments.
const NONE: u32 = u32::MAX;

/// Value flags: the value is one of the call's inputs, or outputs.
const EXTERNAL_INPUT: u32 = 0x1;
const EXTERNAL_OUTPUT: u32 = 0x2;

/// The id of a value of an XNNPACK graph (its `id_out`), by which nodes name
/// their operands. The reader hands out only ids of the graph's values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct XnnValueId(u32);

impl fmt::Display for XnnValueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A verified XNNPACK graph, decoded.
#[derive(Debug)]
pub struct XnnpackGraph<'a> {
    /// The file identifier the graph carries (`XN00` or `XN01`).
    pub identifier: [u8; 4],
    /// The tensor values, in the file's order.
    values: Vec<XnnTensorValue<'a>>,
    /// The position in `values` of the value of each id.
    positions: BTreeMap<XnnValueId, usize>,
    /// The nodes, in the order they run.
    pub nodes: Vec<XnnNode>,
    /// The values the graph lists as the call's inputs and outputs.
    pub input_ids: Vec<XnnValueId>,
    pub output_ids: Vec<XnnValueId>,
    /// The bytes of each entry of the graph's constant table, by index;
    /// `None` for the reserved entry 0.
    pub constants: Vec<Option<&'a [u8]>>,
}

impl<'a> XnnpackGraph<'a> {
    /// The tensor values, in the file's order.
    pub fn values(&self) -> &[XnnTensorValue<'a>] {
        &self.values
    }

    /// The value of an id; `None` only for an id of another graph.
    pub fn value(&self, id: XnnValueId) -> Option<&XnnTensorValue<'a>> {
        self.positions
            .get(&id)
            .and_then(|&position| self.values.get(position))
    }
}

/// A tensor value of the graph (`XNNTensorValue`, or the tensor of an
/// `XNNQuantizedTensorValue`).
#[derive(Clone, Debug, PartialEq)]
pub struct XnnTensorValue<'a> {
    pub id: XnnValueId,
    pub datatype: XnnDatatype,
    /// The rank as the graph records it; `dims` holds the sizes.
    pub num_dims: u32,
    pub dims: Vec<u32>,
    /// The bytes of the value's entry in the constant table, for a
    /// constant.
    pub constant: Option<&'a [u8]>,
    /// The value's position among the DelegateCall's arguments, for an
    /// external value.
    pub external_id: Option<u32>,
    /// Whether the value is one of the call's inputs (flag 0x1).
    pub external_input: bool,
    /// Whether the value is one of the call's outputs (flag 0x2).
    pub external_output: bool,
    /// The type XNNPACK converts the value to at run time; `Invalid` for
    /// none.
    pub dq_datatype: XnnDatatype,
    /// How the value's integers stand for numbers, for a quantized value.
    pub quantization: Option<XnnQuantization>,
}

mirror_enum! {
    /// The element type of a value (`XNNDatatype`, XNNPACK's
    /// `xnn_datatype`).
    XnnDatatype: xnn::XNNDatatype, i16 {
        Invalid = xnn_datatype_invalid,
        Fp32 = xnn_datatype_fp32,
        Fp16 = xnn_datatype_fp16,
        Qint8 = xnn_datatype_qint8,
        Quint8 = xnn_datatype_quint8,
        Qint32 = xnn_datatype_qint32,
        Qcint8 = xnn_datatype_qcint8,
        Qcint32 = xnn_datatype_qcint32,
        Qcint4 = xnn_datatype_qcint4,
        Qdint8 = xnn_datatype_qdint8,
        Qbint4 = xnn_datatype_qbint4,
        Qpint8 = xnn_datatype_qpint8,
        Int32 = xnn_datatype_int32,
        Pfp32 = xnn_datatype_pfp32,
        Bf16 = xnn_datatype_bf16,
    }
}

/// How a quantized value's integers `q` stand for numbers
/// (`XNNQuantParams`).
#[derive(Clone, Debug, PartialEq)]
pub enum XnnQuantization {
    /// `(q - zero_point) * scale` (`PerTensorQuant`).
    PerTensor { scale: f32, zero_point: i32 },
    /// `q * scales[c]`, `c` the index along `channel_dim`
    /// (`PerChannelQuant`).
    PerChannel { scales: XnnScales, channel_dim: i32 },
    /// `q * scale` with a scale per `group_size` elements along
    /// `channel_dim` (`PerChannelGroupQuant`).
    PerChannelGroup {
        scales: XnnScales,
        channel_dim: i32,
        group_size: i32,
    },
    /// Integers XNNPACK chooses at run time, with a scale and zero point
    /// per row of the last `num_nonbatch_dims` dimensions
    /// (`PerTokenDynamicQuant`).
    PerTokenDynamic { num_nonbatch_dims: i32 },
    /// No parameters (union tag 0), or parameters of a kind the schema does
    /// not define: the union tag.
    Unknown(u8),
}

impl XnnQuantization {
    /// The schema's name of the kind of parameters (`PerChannelQuant`).
    pub fn name(&self) -> &'static str {
        match self {
            XnnQuantization::PerTensor { .. } => "PerTensorQuant",
            XnnQuantization::PerChannel { .. } => "PerChannelQuant",
            XnnQuantization::PerChannelGroup { .. } => "PerChannelGroupQuant",
            XnnQuantization::PerTokenDynamic { .. } => "PerTokenDynamicQuant",
            XnnQuantization::Unknown(tag) => xnn::XNNQuantParams(*tag)
                .variant_name()
                .unwrap_or("no parameters"),
        }
    }
}

/// The scales of a quantization per channel or per group, as f32.
#[derive(Clone, Debug, PartialEq)]
pub enum XnnScales {
    /// Kept in the graph (`scale`).
    Inline(Vec<f32>),
    /// Kept in an entry of the constant table (`scale_buffer_idx`): f32 for
    /// a quantization per channel, bf16 (widened exactly) per group.
    Buffer(Vec<f32>),
}

impl XnnScales {
    pub fn values(&self) -> &[f32] {
        match self {
            XnnScales::Inline(scales) | XnnScales::Buffer(scales) => scales,
        }
    }
}

/// A node of the graph.
#[derive(Clone, Debug, PartialEq)]
pub struct XnnNode {
    /// What the node computes, with its operands.
    pub op: XnnOp,
    /// The handle ExecuTorch's tools know the node by.
    pub debug_handle: u32,
    /// The range the node clamps its output to (`output_min_max`), when
    /// the graph gives one.
    pub output_range: Option<OutputRange>,
}

/// A clamp fused into a node. An omitted `output_min` reads as 0.0, the
/// schema's default, as in XNNPACK's runtime.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputRange {
    pub min: f32,
    pub max: f32,
}

/// Declares [`XnnOp`] from the members of the schema's `XNodeUnion`, in the
/// schema's order (`Variant(operands) = member, accessor => decoder`): its
/// variants, the schema's name of each, and the decoding of a node's
/// operand table.
macro_rules! node_types {
    ($($variant:ident($operands:ty) = $member:ident, $accessor:ident => $decode:expr;)*) => {
        /// What a node computes, with its operands: one variant per node
        /// type of the schema's `XNodeUnion`, named without its `XNN`
        /// prefix, whether ptec compiles it or not.
        #[derive(Clone, Debug, PartialEq)]
        pub enum XnnOp {
            $($variant($operands),)*
        }

        impl XnnOp {
            /// The schema's name of the node type (`XNNConv2d`).
            pub fn name(&self) -> &'static str {
                self.kind().name()
            }

            pub fn kind(&self) -> XnnOpKind {
                match self {
                    $(XnnOp::$variant(_) => XnnOpKind::$variant,)*
                }
            }
        }

        /// The node types of [`XnnOp`], without their operands.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum XnnOpKind {
            $($variant,)*
        }

        impl XnnOpKind {
            pub const ALL: &[XnnOpKind] = &[$(XnnOpKind::$variant,)*];

            /// The schema's name of the node type (`XNNConv2d`).
            pub fn name(self) -> &'static str {
                match self {
                    $(XnnOpKind::$variant => stringify!($member),)*
                }
            }
        }

        /// The operation of a node; `None` for a union tag the schema does
        /// not define.
        fn decode_op(node: &xnn::XNode<'_>, ids: &Ids<'_>) -> Result<Option<XnnOp>> {
            match node.xnode_union_type() {
                $(xnn::XNodeUnion::$member => node
                    .$accessor()
                    .map(|table| $decode(table, ids).map(XnnOp::$variant))
                    .transpose(),)*
                _ => Ok(None),
            }
        }
    };
}

node_types! {
    Add(Node2x1) = XNNAdd, xnode_union_as_xnnadd => node_2x1;
    FullyConnected(FullyConnected) = XNNFullyConnected,
        xnode_union_as_xnnfully_connected => fully_connected;
    Softmax(Node1x1) = XNNSoftmax, xnode_union_as_xnnsoftmax => node_1x1;
    Sigmoid(Node1x1) = XNNSigmoid, xnode_union_as_xnnsigmoid => node_1x1;
    StaticTranspose(StaticTranspose) = XNNStaticTranspose,
        xnode_union_as_xnnstatic_transpose => static_transpose;
    Clamp(Node1x1) = XNNClamp, xnode_union_as_xnnclamp => node_1x1;
    Conv2d(ConvNode) = XNNConv2d, xnode_union_as_xnnconv_2d => convolution;
    Div(Node2x1) = XNNDiv, xnode_union_as_xnndiv => node_2x1;
    StaticResizeBilinear2d(StaticResizeBilinear2d) = XNNStaticResizeBilinear2D,
        xnode_union_as_xnnstatic_resize_bilinear_2_d => static_resize_bilinear_2d;
    StaticConstantPad(StaticConstantPad) = XNNStaticConstantPad,
        xnode_union_as_xnnstatic_constant_pad => static_constant_pad;
    AvgPooling2d(Pooling2d) = XNNAvgPooling2d, xnode_union_as_xnnavg_pooling_2d => pooling_2d;
    Minimum(Node2x1) = XNNMinimum, xnode_union_as_xnnminimum => node_2x1;
    DepthwiseConv2d(ConvNode) = XNNDepthwiseConv2d,
        xnode_union_as_xnndepthwise_conv_2d => convolution;
    MaxPooling2d(Pooling2d) = XNNMaxPooling2d, xnode_union_as_xnnmax_pooling_2d => pooling_2d;
    Multiply(Node2x1) = XNNMultiply, xnode_union_as_xnnmultiply => node_2x1;
    Subtract(Node2x1) = XNNSubtract, xnode_union_as_xnnsubtract => node_2x1;
    Floor(Node1x1) = XNNFloor, xnode_union_as_xnnfloor => node_1x1;
    Convert(Node1x1) = XNNConvert, xnode_union_as_xnnconvert => node_1x1;
    GlobalAvgPooling2d(Node1x1) = XNNGlobalAvgPooling2d,
        xnode_union_as_xnnglobal_avg_pooling_2d => node_1x1;
    StaticReshape(StaticReshape) = XNNStaticReshape,
        xnode_union_as_xnnstatic_reshape => static_reshape;
    ArgMaxPooling2d(ArgMaxPooling2d) = XNNArgMaxPooling2d,
        xnode_union_as_xnnarg_max_pooling_2d => arg_max_pooling_2d;
    SquareRoot(Node1x1) = XNNSquareRoot, xnode_union_as_xnnsquare_root => node_1x1;
    Ceiling(Node1x1) = XNNCeiling, xnode_union_as_xnnceiling => node_1x1;
    Hardswish(Node1x1) = XNNHardswish, xnode_union_as_xnnhardswish => node_1x1;
    LeakyRelu(LeakyRelu) = XNNLeakyReLU, xnode_union_as_xnnleaky_re_lu => leaky_relu;
    Maximum(Node2x1) = XNNMaximum, xnode_union_as_xnnmaximum => node_2x1;
    Negate(Node1x1) = XNNNegate, xnode_union_as_xnnnegate => node_1x1;
    Square(Node1x1) = XNNSquare, xnode_union_as_xnnsquare => node_1x1;
    Elu(Elu) = XNNELU, xnode_union_as_xnnelu => elu;
    Abs(Node1x1) = XNNAbs, xnode_union_as_xnnabs => node_1x1;
    PRelu(Node2x1) = XNNPReLU, xnode_union_as_xnnpre_lu => node_2x1;
    Concatenate2(Concatenate) = XNNConcatenate2,
        xnode_union_as_xnnconcatenate_2 => concatenate::<2>;
    Concatenate3(Concatenate) = XNNConcatenate3,
        xnode_union_as_xnnconcatenate_3 => concatenate::<3>;
    Concatenate4(Concatenate) = XNNConcatenate4,
        xnode_union_as_xnnconcatenate_4 => concatenate::<4>;
    StaticSlice(StaticSlice) = XNNStaticSlice, xnode_union_as_xnnstatic_slice => static_slice;
    ScaledDotProductAttention(ScaledDotProductAttention) = XNNScaledDotProductAttention,
        xnode_union_as_xnnscaled_dot_product_attention => scaled_dot_product_attention;
    BatchMatrixMultiply(Node2x1) = XNNBatchMatrixMultiply,
        xnode_union_as_xnnbatch_matrix_multiply => node_2x1;
    Concatenate5(Concatenate) = XNNConcatenate5,
        xnode_union_as_xnnconcatenate_5 => concatenate::<5>;
    ConvTranspose2d(ConvNode) = XNNConvTranspose2d,
        xnode_union_as_xnnconv_transpose_2d => convolution;
    ReciprocalSquareRoot(Node1x1) = XNNReciprocalSquareRoot,
        xnode_union_as_xnnreciprocal_square_root => node_1x1;
    Log(Node1x1) = XNNLog, xnode_union_as_xnnlog => node_1x1;
    Gelu(Node1x1) = XNNGelu, xnode_union_as_xnngelu => node_1x1;
    Tanh(Node1x1) = XNNTanh, xnode_union_as_xnntanh => node_1x1;
    Exp(Node1x1) = XNNExp, xnode_union_as_xnnexp => node_1x1;
    Sin(Node1x1) = XNNSin, xnode_union_as_xnnsin => node_1x1;
    Copy(Node1x1) = XNNCopy, xnode_union_as_xnncopy => node_1x1;
    Cos(Node1x1) = XNNCos, xnode_union_as_xnncos => node_1x1;
}

/// The operands of a node of one input and one output (`_XNNNode1x1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node1x1 {
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// The operands of a node of two inputs and one output (`_XNNNode2x1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node2x1 {
    pub input1: XnnValueId,
    pub input2: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// A convolution, depthwise convolution or transposed convolution
/// (`_XNNNodeConv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvNode {
    pub padding_top: u32,
    pub padding_right: u32,
    pub padding_bottom: u32,
    pub padding_left: u32,
    pub kernel_height: u32,
    pub kernel_width: u32,
    pub subsampling_height: u32,
    pub subsampling_width: u32,
    pub dilation_height: u32,
    pub dilation_width: u32,
    pub group_input_channels: u32,
    pub group_output_channels: u32,
    pub groups: u32,
    pub adjustment_height: u32,
    pub adjustment_width: u32,
    pub input: XnnValueId,
    pub filter: XnnValueId,
    pub bias: Option<XnnValueId>,
    pub output: XnnValueId,
    pub flags: u32,
}

/// A max or average pooling (`_XNNPooling2D`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pooling2d {
    pub padding_top: u32,
    pub padding_right: u32,
    pub padding_bottom: u32,
    pub padding_left: u32,
    pub pooling_height: u32,
    pub pooling_width: u32,
    pub stride_height: u32,
    pub stride_width: u32,
    pub dilation_height: u32,
    pub dilation_width: u32,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// A concatenation along `axis` (`_XNNCat`), with as many inputs as its
/// node type says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Concatenate {
    pub axis: u32,
    pub inputs: Vec<XnnValueId>,
    pub output: XnnValueId,
    pub flags: u32,
}

/// `input @ filter^T + bias` (`XNNFullyConnected`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FullyConnected {
    pub input: XnnValueId,
    pub filter: XnnValueId,
    pub bias: Option<XnnValueId>,
    pub output: XnnValueId,
    pub flags: u32,
}

/// `input.permute(perm)` (`XNNStaticTranspose`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticTranspose {
    pub num_dims: u32,
    pub perm: Vec<u32>,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// `input` with the shape `new_shape`, in which a 0 is inferred
/// (`XNNStaticReshape`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticReshape {
    pub num_dims: u32,
    pub new_shape: Vec<u32>,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// The block of `input` of these sizes at these offsets (`XNNStaticSlice`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticSlice {
    pub num_dims: u32,
    pub offsets: Vec<u32>,
    pub sizes: Vec<u32>,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// `input` padded with `padding_value` (`XNNStaticConstantPad`).
#[derive(Clone, Debug, PartialEq)]
pub struct StaticConstantPad {
    pub pre_paddings: Vec<u32>,
    pub post_paddings: Vec<u32>,
    pub padding_value: f32,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// `x` where positive, else `negative_slope * x` (`XNNLeakyReLU`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LeakyRelu {
    pub negative_slope: f32,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// `x` where positive, else `alpha * (exp(x) - 1)` (`XNNELU`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Elu {
    pub alpha: f32,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

/// Attention of `query` over `key` and `value`, with an optional additive
/// mask (`XNNScaledDotProductAttention`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScaledDotProductAttention {
    pub query: XnnValueId,
    pub key: XnnValueId,
    pub value: XnnValueId,
    pub scale: XnnValueId,
    pub mask: Option<XnnValueId>,
    pub output: XnnValueId,
    pub flags: u32,
}

/// A max pooling that also outputs where each maximum is
/// (`XNNArgMaxPooling2d`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgMaxPooling2d {
    pub padding_top: u32,
    pub padding_right: u32,
    pub padding_bottom: u32,
    pub padding_left: u32,
    pub pooling_height: u32,
    pub pooling_width: u32,
    pub input: XnnValueId,
    pub output_value: XnnValueId,
    pub output_index: XnnValueId,
    pub flags: u32,
}

/// A bilinear resize of an NHWC tensor to `new_height` x `new_width`
/// (`XNNStaticResizeBilinear2D`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticResizeBilinear2d {
    pub new_height: u32,
    pub new_width: u32,
    pub input: XnnValueId,
    pub output: XnnValueId,
    pub flags: u32,
}

pub(super) fn read<'a>(
    data: &'a [u8],
    named_data: &NamedData<'a>,
    path: &str,
) -> Result<XnnpackGraph<'a>> {
    const WHAT: &str = "XNNPACK payload";
    let has_header = tag_at(data, 4) == Some(*b"XH00");
    let regions = if has_header {
        split_header(data, WHAT, path)?
    } else {
        Regions {
            flatbuffer: data,
            constants: &[],
        }
    };
    let what = format!("{path}: XNNPACK graph");
    let identifier = expect_identifier(regions.flatbuffer, &[b"XN00", b"XN01"], &what)?;
    let flatbuffer = verified_flatbuffer(regions.flatbuffer, &what, |bytes, options| {
        flatbuffers::root_with_opts::<xnn::XNNGraph>(options, bytes).map(|_| ())
    })?;
    // SAFETY: verified just above.
    let graph = unsafe { flatbuffers::root_unchecked::<xnn::XNNGraph>(&flatbuffer) };
    let mut constants = vec![None];
    if has_header {
        for (index, entry) in vec_of(graph.constant_data()).enumerate().skip(1) {
            let at = || format!("{path}: XNNPACK constant_data[{index}]");
            constants.push(Some(resolve_constant(
                entry.offset(),
                entry.size_(),
                entry.named_key(),
                regions.constants,
                named_data,
                &at,
            )?));
        }
    } else {
        // Without a header the graph keeps its constants inline, in the file.
        let Cow::Borrowed(in_file) = flatbuffer else {
            return Err(Error::Unsupported {
                at: format!("{path}: XNNPACK graph"),
                what: "inline constants in a graph with misaligned empty vectors".to_string(),
            });
        };
        // SAFETY: these are the bytes verified above, unmended.
        let graph = unsafe { flatbuffers::root_unchecked::<xnn::XNNGraph>(in_file) };
        constants.extend(
            vec_of(graph.constant_buffer())
                .skip(1)
                .map(|buffer| Some(buffer.storage().map_or(&[][..], |storage| storage.bytes()))),
        );
    }
    let at = format!("{path}: XNNPACK");
    let values = vec_of(graph.xvalues())
        .enumerate()
        .map(|(index, value)| decode_value(&value, &constants, &format!("{at} xvalues[{index}]")))
        .collect::<Result<Vec<_>>>()?;
    let mut positions = BTreeMap::new();
    for (position, value) in values.iter().enumerate() {
        if let Some(first) = positions.insert(value.id, position) {
            return Err(Error::invalid(
                format!("{at} xvalues[{position}].id_out"),
                format!("value id {} is also that of xvalues[{first}]", value.id),
            ));
        }
    }
    let nodes = vec_of(graph.xnodes())
        .enumerate()
        .map(|(index, node)| {
            let node_at = format!("{at} xnodes[{index}]");
            let ids = Ids {
                known: &positions,
                prefix: format!("{node_at}."),
            };
            let op = decode_op(&node, &ids)?.ok_or_else(|| {
                Error::invalid(
                    node_at,
                    format!(
                        "unknown node type (union tag {})",
                        node.xnode_union_type().0
                    ),
                )
            })?;
            Ok(XnnNode {
                op,
                debug_handle: node.debug_handle(),
                output_range: node.output_min_max().map(|range| OutputRange {
                    min: range.output_min(),
                    max: range.output_max(),
                }),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let ids = Ids {
        known: &positions,
        prefix: format!("{at} "),
    };
    let input_ids = ids.list("input_ids", graph.input_ids())?;
    let output_ids = ids.list("output_ids", graph.output_ids())?;
    Ok(XnnpackGraph {
        identifier,
        values,
        positions,
        nodes,
        input_ids,
        output_ids,
        constants,
    })
}

/// `raw`, unless it is the sentinel that stands for none: the one place
/// that reads it.
fn unless_none(raw: u32) -> Option<u32> {
    (raw != NONE).then_some(raw)
}

/// Checks the value ids that one table of the graph names (a node's
/// operands, the graph's inputs or outputs) against the graph's values.
struct Ids<'g> {
    known: &'g BTreeMap<XnnValueId, usize>,
    /// What the name of a field follows in messages: where the table is
    /// (`... XNNPACK xnodes[3].`).
    prefix: String,
}

impl Ids<'_> {
    /// The value that `field` names, which it must.
    fn required(&self, field: &str, raw: u32) -> Result<XnnValueId> {
        self.optional(field, raw)?.ok_or_else(|| {
            Error::invalid(
                format!("{}{field}", self.prefix),
                "the field names no value (0xFFFFFFFF) where one is required",
            )
        })
    }

    /// The value that `field` names, if any.
    fn optional(&self, field: &str, raw: u32) -> Result<Option<XnnValueId>> {
        let Some(id) = unless_none(raw).map(XnnValueId) else {
            return Ok(None);
        };
        if !self.known.contains_key(&id) {
            return Err(Error::invalid(
                format!("{}{field}", self.prefix),
                format!("value id {id} is none of the graph's values"),
            ));
        }
        Ok(Some(id))
    }

    /// The values a vector of ids names, each of which it must.
    fn list(
        &self,
        field: &str,
        raw: Option<flatbuffers::Vector<'_, u32>>,
    ) -> Result<Vec<XnnValueId>> {
        vec_of_scalars(raw)
            .enumerate()
            .map(|(index, raw)| self.required(&format!("{field}[{index}]"), raw))
            .collect()
    }
}

fn decode_value<'a>(
    value: &xnn::XValue<'_>,
    constants: &[Option<&'a [u8]>],
    at: &str,
) -> Result<XnnTensorValue<'a>> {
    let quantized = value.xvalue_union_as_xnnquantized_tensor_value();
    let tensor = match (value.xvalue_union_as_xnntensor_value(), &quantized) {
        (Some(tensor), _) => tensor,
        (None, Some(quantized)) => quantized
            .tensor_value()
            .ok_or_else(|| Error::invalid(at, "the quantized value has no tensor_value"))?,
        (None, None) => {
            return Err(Error::invalid(
                at,
                format!(
                    "the value is not a tensor (union tag {})",
                    value.xvalue_union_type().0
                ),
            ));
        }
    };
    let id = unless_none(tensor.id_out())
        .map(XnnValueId)
        .ok_or_else(|| Error::invalid(format!("{at}.id_out"), "0xFFFFFFFF is no value id"))?;
    Ok(XnnTensorValue {
        id,
        datatype: XnnDatatype::decode(tensor.datatype()),
        num_dims: tensor.num_dims(),
        dims: vec_of_scalars(tensor.dims()).collect(),
        constant: constant(constants, tensor.constant_buffer_idx(), || {
            format!("{at}.constant_buffer_idx")
        })?,
        external_id: unless_none(tensor.external_id()),
        external_input: tensor.flags() & EXTERNAL_INPUT != 0,
        external_output: tensor.flags() & EXTERNAL_OUTPUT != 0,
        dq_datatype: XnnDatatype::decode(tensor.dq_datatype()),
        quantization: quantized
            .map(|quantized| decode_quantization(&quantized, constants, at))
            .transpose()?,
    })
}

/// Entry `index` of the constant table; `None` for 0, which names none.
fn constant<'a>(
    constants: &[Option<&'a [u8]>],
    index: u32,
    at: impl FnOnce() -> String,
) -> Result<Option<&'a [u8]>> {
    if index == 0 {
        return Ok(None);
    }
    match constants.get(index as usize) {
        Some(&bytes) => Ok(bytes),
        None => Err(Error::OutOfRange {
            at: at(),
            what: "constant buffer index",
            index: index.into(),
            len: constants.len(),
        }),
    }
}

fn decode_quantization(
    quantized: &xnn::XNNQuantizedTensorValue<'_>,
    constants: &[Option<&[u8]>],
    at: &str,
) -> Result<XnnQuantization> {
    let at = || format!("{at}.quant_params.scale_buffer_idx");
    if let Some(params) = quantized.quant_params_as_per_tensor_quant() {
        return Ok(XnnQuantization::PerTensor {
            scale: params.scale(),
            zero_point: params.zero_point(),
        });
    }
    if let Some(params) = quantized.quant_params_as_per_channel_quant() {
        return Ok(XnnQuantization::PerChannel {
            scales: scales(
                params.scale(),
                params.scale_buffer_idx(),
                f32::from_le_bytes,
                constants,
                at,
            )?,
            channel_dim: params.channel_dim(),
        });
    }
    if let Some(params) = quantized.quant_params_as_per_channel_group_quant() {
        return Ok(XnnQuantization::PerChannelGroup {
            scales: scales(
                params.scale(),
                params.scale_buffer_idx(),
                bf16_scale,
                constants,
                at,
            )?,
            channel_dim: params.channel_dim(),
            group_size: params.group_size(),
        });
    }
    if let Some(params) = quantized.quant_params_as_per_token_dynamic_quant() {
        return Ok(XnnQuantization::PerTokenDynamic {
            num_nonbatch_dims: params.num_nonbatch_dims(),
        });
    }
    Ok(XnnQuantization::Unknown(quantized.quant_params_type().0))
}

/// The scales of a quantization: inline, or in entry `buffer` of the
/// constant table when that is not 0, `N` bytes each, which `read` widens
/// to f32.
fn scales<const N: usize>(
    inline: Option<flatbuffers::Vector<'_, f32>>,
    buffer: u32,
    read: fn([u8; N]) -> f32,
    constants: &[Option<&[u8]>],
    at: impl Fn() -> String,
) -> Result<XnnScales> {
    let Some(bytes) = constant(constants, buffer, &at)? else {
        return Ok(XnnScales::Inline(vec_of_scalars(inline).collect()));
    };
    let (chunks, rest) = bytes.as_chunks::<N>();
    if !rest.is_empty() {
        return Err(Error::ByteCount {
            at: at(),
            problem: format!(
                "constant {buffer} holds {} bytes, no whole number of {N}-byte scales",
                bytes.len()
            ),
        });
    }
    Ok(XnnScales::Buffer(
        chunks.iter().map(|&chunk| read(chunk)).collect(),
    ))
}

/// A bf16 scale, the high half of an f32, as the exporter writes blockwise
/// scales.
fn bf16_scale(bytes: [u8; 2]) -> f32 {
    f32::from_bits(u32::from(u16::from_le_bytes(bytes)) << 16)
}

fn node_1x1(t: xnn::_XNNNode1x1<'_>, ids: &Ids<'_>) -> Result<Node1x1> {
    Ok(Node1x1 {
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn node_2x1(t: xnn::_XNNNode2x1<'_>, ids: &Ids<'_>) -> Result<Node2x1> {
    Ok(Node2x1 {
        input1: ids.required("input1_id", t.input1_id())?,
        input2: ids.required("input2_id", t.input2_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn convolution(t: xnn::_XNNNodeConv<'_>, ids: &Ids<'_>) -> Result<ConvNode> {
    Ok(ConvNode {
        padding_top: t.padding_top(),
        padding_right: t.padding_right(),
        padding_bottom: t.padding_bottom(),
        padding_left: t.padding_left(),
        kernel_height: t.kernel_height(),
        kernel_width: t.kernel_width(),
        subsampling_height: t.subsampling_height(),
        subsampling_width: t.subsampling_width(),
        dilation_height: t.dilation_height(),
        dilation_width: t.dilation_width(),
        group_input_channels: t.group_input_channels(),
        group_output_channels: t.group_output_channels(),
        groups: t.groups(),
        adjustment_height: t.adjustment_height(),
        adjustment_width: t.adjustment_width(),
        input: ids.required("input1_id", t.input1_id())?,
        filter: ids.required("filter_id", t.filter_id())?,
        bias: ids.optional("bias_id", t.bias_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn pooling_2d(t: xnn::_XNNPooling2D<'_>, ids: &Ids<'_>) -> Result<Pooling2d> {
    Ok(Pooling2d {
        padding_top: t.padding_top(),
        padding_right: t.padding_right(),
        padding_bottom: t.padding_bottom(),
        padding_left: t.padding_left(),
        pooling_height: t.pooling_height(),
        pooling_width: t.pooling_width(),
        stride_height: t.stride_height(),
        stride_width: t.stride_width(),
        dilation_height: t.dilation_height(),
        dilation_width: t.dilation_width(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

/// A concatenation of `INPUTS` inputs; the fields of the others are unused.
fn concatenate<const INPUTS: usize>(t: xnn::_XNNCat<'_>, ids: &Ids<'_>) -> Result<Concatenate> {
    let fields = [
        ("input1_id", t.input1_id()),
        ("input2_id", t.input2_id()),
        ("input3_id", t.input3_id()),
        ("input4_id", t.input4_id()),
        ("input5_id", t.input5_id()),
    ];
    Ok(Concatenate {
        axis: t.axis(),
        inputs: fields
            .iter()
            .take(INPUTS)
            .map(|&(field, raw)| ids.required(field, raw))
            .collect::<Result<_>>()?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn fully_connected(t: xnn::XNNFullyConnected<'_>, ids: &Ids<'_>) -> Result<FullyConnected> {
    Ok(FullyConnected {
        input: ids.required("input1_id", t.input1_id())?,
        filter: ids.required("filter_id", t.filter_id())?,
        bias: ids.optional("bias_id", t.bias_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn static_transpose(t: xnn::XNNStaticTranspose<'_>, ids: &Ids<'_>) -> Result<StaticTranspose> {
    Ok(StaticTranspose {
        num_dims: t.num_dims(),
        perm: vec_of_scalars(t.perm()).collect(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn static_reshape(t: xnn::XNNStaticReshape<'_>, ids: &Ids<'_>) -> Result<StaticReshape> {
    Ok(StaticReshape {
        num_dims: t.num_dims(),
        new_shape: vec_of_scalars(t.new_shape()).collect(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn static_slice(t: xnn::XNNStaticSlice<'_>, ids: &Ids<'_>) -> Result<StaticSlice> {
    Ok(StaticSlice {
        num_dims: t.num_dims(),
        offsets: vec_of_scalars(t.offsets()).collect(),
        sizes: vec_of_scalars(t.sizes()).collect(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn static_constant_pad(
    t: xnn::XNNStaticConstantPad<'_>,
    ids: &Ids<'_>,
) -> Result<StaticConstantPad> {
    Ok(StaticConstantPad {
        pre_paddings: vec_of_scalars(t.pre_paddings()).collect(),
        post_paddings: vec_of_scalars(t.post_paddings()).collect(),
        padding_value: t.padding_value(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn leaky_relu(t: xnn::XNNLeakyReLU<'_>, ids: &Ids<'_>) -> Result<LeakyRelu> {
    Ok(LeakyRelu {
        negative_slope: t.negative_slope(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn elu(t: xnn::XNNELU<'_>, ids: &Ids<'_>) -> Result<Elu> {
    Ok(Elu {
        alpha: t.alpha(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn scaled_dot_product_attention(
    t: xnn::XNNScaledDotProductAttention<'_>,
    ids: &Ids<'_>,
) -> Result<ScaledDotProductAttention> {
    Ok(ScaledDotProductAttention {
        query: ids.required("query_id", t.query_id())?,
        key: ids.required("key_id", t.key_id())?,
        value: ids.required("value_id", t.value_id())?,
        scale: ids.required("scale_id", t.scale_id())?,
        mask: ids.optional("mask_id", t.mask_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

fn arg_max_pooling_2d(t: xnn::XNNArgMaxPooling2d<'_>, ids: &Ids<'_>) -> Result<ArgMaxPooling2d> {
    Ok(ArgMaxPooling2d {
        padding_top: t.padding_top(),
        padding_right: t.padding_right(),
        padding_bottom: t.padding_bottom(),
        padding_left: t.padding_left(),
        pooling_height: t.pooling_height(),
        pooling_width: t.pooling_width(),
        input: ids.required("input_id", t.input_id())?,
        output_value: ids.required("output_value_id", t.output_value_id())?,
        output_index: ids.required("output_index_id", t.output_index_id())?,
        flags: t.flags(),
    })
}

fn static_resize_bilinear_2d(
    t: xnn::XNNStaticResizeBilinear2D<'_>,
    ids: &Ids<'_>,
) -> Result<StaticResizeBilinear2d> {
    Ok(StaticResizeBilinear2d {
        new_height: t.new_height(),
        new_width: t.new_width(),
        input: ids.required("input_id", t.input_id())?,
        output: ids.required("output_id", t.output_id())?,
        flags: t.flags(),
    })
}

#[cfg(test)]
mod tests {
    use flatbuffers::{FlatBufferBuilder, WIPOffset};

    use super::*;

    /// A node of a test graph, by its value ids.
    enum TestNode {
        Add([u32; 3]),
        /// Input, filter, bias, output.
        FullyConnected([u32; 4]),
        /// The five input fields, then the output.
        Concatenate2([u32; 6]),
        /// An operand table under a tag the schema does not define.
        UnknownTag,
    }

    /// A graph without a payload header, so with its constants inline:
    /// entry 1 holds two f32 values, entry 2 two f32 scales.
    struct Graph {
        /// Each fp32 value of dims [2]: id, flags, constant buffer index.
        values: Vec<(u32, u32, u32)>,
        /// A value quantized per channel, with its scales in entry 2.
        quantized_id: u32,
        nodes: Vec<TestNode>,
        input_ids: Vec<u32>,
        output_ids: Vec<u32>,
    }

    impl Default for Graph {
        fn default() -> Self {
            Graph {
                values: vec![
                    (10, EXTERNAL_INPUT, 0),
                    (11, 0, 1),
                    (12, EXTERNAL_OUTPUT, 0),
                ],
                quantized_id: 13,
                nodes: vec![
                    TestNode::Add([10, 11, 12]),
                    TestNode::FullyConnected([10, 13, NONE, 12]),
                    TestNode::Concatenate2([10, 11, 77, 78, 79, 12]),
                ],
                input_ids: vec![10],
                output_ids: vec![12],
            }
        }
    }

    fn floats(values: &[f32]) -> Vec<u8> {
        values
            .iter()
            .flat_map(|value| value.to_le_bytes())
            .collect()
    }

    fn tensor<'b>(
        fbb: &mut FlatBufferBuilder<'b>,
        datatype: xnn::XNNDatatype,
        (id, flags, constant): (u32, u32, u32),
    ) -> WIPOffset<xnn::XNNTensorValue<'b>> {
        let dims = fbb.create_vector(&[2u32, 1]);
        xnn::XNNTensorValue::create(
            fbb,
            &xnn::XNNTensorValueArgs {
                datatype,
                num_dims: 2,
                dims: Some(dims),
                constant_buffer_idx: constant,
                external_id: if flags == 0 { NONE } else { flags - 1 },
                flags,
                id_out: id,
                dq_datatype: xnn::XNNDatatype::xnn_datatype_invalid,
            },
        )
    }

    fn node<'b>(fbb: &mut FlatBufferBuilder<'b>, node: &TestNode) -> WIPOffset<xnn::XNode<'b>> {
        let (tag, table) = match *node {
            TestNode::Add([input1_id, input2_id, output_id]) => {
                let args = xnn::_XNNNode2x1Args {
                    input1_id,
                    input2_id,
                    output_id,
                    flags: 0,
                };
                let table = xnn::_XNNNode2x1::create(fbb, &args);
                (xnn::XNodeUnion::XNNAdd, table.as_union_value())
            }
            TestNode::FullyConnected([input1_id, filter_id, bias_id, output_id]) => {
                let args = xnn::XNNFullyConnectedArgs {
                    input1_id,
                    filter_id,
                    bias_id,
                    output_id,
                    flags: 0,
                };
                let table = xnn::XNNFullyConnected::create(fbb, &args);
                (xnn::XNodeUnion::XNNFullyConnected, table.as_union_value())
            }
            TestNode::Concatenate2(
                [
                    input1_id,
                    input2_id,
                    input3_id,
                    input4_id,
                    input5_id,
                    output_id,
                ],
            ) => {
                let args = xnn::_XNNCatArgs {
                    axis: 1,
                    input1_id,
                    input2_id,
                    input3_id,
                    input4_id,
                    output_id,
                    flags: 0,
                    input5_id,
                };
                let table = xnn::_XNNCat::create(fbb, &args);
                (xnn::XNodeUnion::XNNConcatenate2, table.as_union_value())
            }
            TestNode::UnknownTag => {
                let table = xnn::_XNNNode1x1::create(fbb, &xnn::_XNNNode1x1Args::default());
                (xnn::XNodeUnion(200), table.as_union_value())
            }
        };
        // Only a maximum: the minimum reads as the schema's default.
        let range = xnn::OutputMinMax::create(
            fbb,
            &xnn::OutputMinMaxArgs {
                output_min: 0.0,
                output_max: 6.0,
            },
        );
        xnn::XNode::create(
            fbb,
            &xnn::XNodeArgs {
                xnode_union_type: tag,
                xnode_union: Some(table),
                debug_handle: 7,
                output_min_max: Some(range),
            },
        )
    }

    fn bytes(graph: &Graph) -> Vec<u8> {
        let mut fbb = FlatBufferBuilder::new();
        let mut values = Vec::new();
        for &value in &graph.values {
            let tensor = tensor(&mut fbb, xnn::XNNDatatype::xnn_datatype_fp32, value);
            values.push(xnn::XValue::create(
                &mut fbb,
                &xnn::XValueArgs {
                    xvalue_union_type: xnn::XValueUnion::XNNTensorValue,
                    xvalue_union: Some(tensor.as_union_value()),
                },
            ));
        }
        let quantized = tensor(
            &mut fbb,
            xnn::XNNDatatype::xnn_datatype_qcint8,
            (graph.quantized_id, 0, 1),
        );
        let params = xnn::PerChannelQuant::create(
            &mut fbb,
            &xnn::PerChannelQuantArgs {
                scale: None,
                channel_dim: 0,
                scale_buffer_idx: 2,
                num_scales: 2,
            },
        );
        let quantized = xnn::XNNQuantizedTensorValue::create(
            &mut fbb,
            &xnn::XNNQuantizedTensorValueArgs {
                tensor_value: Some(quantized),
                quant_params_type: xnn::XNNQuantParams::PerChannelQuant,
                quant_params: Some(params.as_union_value()),
            },
        );
        values.push(xnn::XValue::create(
            &mut fbb,
            &xnn::XValueArgs {
                xvalue_union_type: xnn::XValueUnion::XNNQuantizedTensorValue,
                xvalue_union: Some(quantized.as_union_value()),
            },
        ));
        let values = fbb.create_vector(&values);
        let nodes: Vec<_> = graph.nodes.iter().map(|n| node(&mut fbb, n)).collect();
        let nodes = fbb.create_vector(&nodes);
        let mut buffers = vec![xnn::Buffer::create(&mut fbb, &xnn::BufferArgs::default())];
        for data in [floats(&[1.0, 2.0]), floats(&[0.5, 0.25])] {
            let storage = fbb.create_vector(&data);
            let args = xnn::BufferArgs {
                storage: Some(storage),
            };
            buffers.push(xnn::Buffer::create(&mut fbb, &args));
        }
        let constant_buffer = fbb.create_vector(&buffers);
        let input_ids = fbb.create_vector(&graph.input_ids);
        let output_ids = fbb.create_vector(&graph.output_ids);
        let root = xnn::XNNGraph::create(
            &mut fbb,
            &xnn::XNNGraphArgs {
                xnodes: Some(nodes),
                xvalues: Some(values),
                input_ids: Some(input_ids),
                output_ids: Some(output_ids),
                constant_buffer: Some(constant_buffer),
                ..Default::default()
            },
        );
        fbb.finish(root, Some("XN01"));
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
        assert_eq!(&graph.identifier, b"XN01");
        assert_eq!(graph.values().len(), 4);
        let [input, constant, output, quantized] = [10, 11, 12, 13].map(XnnValueId);
        let value = graph.value(input).expect("a value of the graph");
        assert!(value.external_input && !value.external_output);
        assert_eq!((value.external_id, value.constant), (Some(0), None));
        assert_eq!(value.datatype, XnnDatatype::Fp32);
        assert_eq!(value.datatype.name(), "xnn_datatype_fp32");
        assert_eq!(value.dq_datatype, XnnDatatype::Invalid);
        assert_eq!(value.dims, [2, 1]);
        let value = graph.value(constant).expect("a value of the graph");
        assert_eq!(value.external_id, None);
        assert_eq!(value.constant, Some(&floats(&[1.0, 2.0])[..]));
        let value = graph.value(quantized).expect("a value of the graph");
        let Some(XnnQuantization::PerChannel {
            scales: XnnScales::Buffer(scales),
            channel_dim: 0,
        }) = &value.quantization
        else {
            panic!("not per channel from a buffer: {value:?}");
        };
        assert_eq!(scales, &[0.5, 0.25]);
        assert_eq!(graph.input_ids, [input]);
        assert_eq!(graph.output_ids, [output]);

        let ops: Vec<&str> = graph.nodes.iter().map(|node| node.op.name()).collect();
        assert_eq!(ops, ["XNNAdd", "XNNFullyConnected", "XNNConcatenate2"]);
        assert_eq!(
            graph.nodes[0].output_range,
            Some(OutputRange { min: 0.0, max: 6.0 })
        );
        assert_eq!(graph.nodes[0].debug_handle, 7);
        let XnnOp::FullyConnected(operands) = &graph.nodes[1].op else {
            panic!("not a fully connected node");
        };
        assert_eq!(operands.bias, None);
        assert_eq!((operands.filter, operands.output), (quantized, output));
        // The fields of the inputs a concatenation does not use are ignored.
        let XnnOp::Concatenate2(operands) = &graph.nodes[2].op else {
            panic!("not a concatenation");
        };
        assert_eq!(operands.inputs, [input, constant]);
    }

    #[test]
    fn value_ids_are_unique_and_known() {
        let taken = Graph {
            quantized_id: 11,
            ..Graph::default()
        };
        assert!(
            error(&taken).contains(
                "test: XNNPACK xvalues[3].id_out: value id 11 is also that of xvalues[1]"
            ),
            "{}",
            error(&taken)
        );
        let none = Graph {
            quantized_id: NONE,
            ..Graph::default()
        };
        assert!(error(&none).contains("xvalues[3].id_out: 0xFFFFFFFF is no value id"));
        let unknown = Graph {
            nodes: vec![TestNode::Add([10, 99, 12])],
            ..Graph::default()
        };
        assert!(
            error(&unknown).contains("XNNPACK xnodes[0].input2_id: value id 99 is none of"),
            "{}",
            error(&unknown)
        );
        let missing = Graph {
            nodes: vec![TestNode::FullyConnected([10, NONE, 11, 12])],
            ..Graph::default()
        };
        assert!(error(&missing).contains("XNNPACK xnodes[0].filter_id: the field names no value"));
        let unused_input = Graph {
            nodes: vec![TestNode::Concatenate2([10, NONE, 11, 11, 11, 12])],
            ..Graph::default()
        };
        assert!(error(&unused_input).contains("xnodes[0].input2_id"));
        let graph_output = Graph {
            output_ids: vec![12, 40],
            ..Graph::default()
        };
        assert!(error(&graph_output).contains("XNNPACK output_ids[1]: value id 40"));
    }

    #[test]
    fn constants_and_node_types_are_checked() {
        let constant = Graph {
            values: vec![(10, 0, 3)],
            nodes: Vec::new(),
            input_ids: Vec::new(),
            output_ids: Vec::new(),
            ..Graph::default()
        };
        assert!(
            error(&constant).contains(
                "XNNPACK xvalues[0].constant_buffer_idx: constant buffer index 3 is out of range (there are 3)"
            ),
            "{}",
            error(&constant)
        );
        let unknown = Graph {
            nodes: vec![TestNode::UnknownTag],
            ..Graph::default()
        };
        assert!(error(&unknown).contains("XNNPACK xnodes[0]: unknown node type (union tag 200)"));
    }
}
