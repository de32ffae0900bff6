//! XNNPACK delegates: the nodes of a delegate's XNNGraph become IR nodes of
//! the method, between the kernel calls around the DelegateCall, so that
//! they go through the same passes and code generator.
//!
//! A graph's external values are the call's arguments (an external id is a
//! position in the argument list); XNNPACK sees each argument's bytes with
//! the dims of its physical layout. Constants are borrowed from the payload
//! or the program's named data. XNNPACK computes convolutions and pooling in
//! NHWC while the IR's are NCHW, so each XNNPACK tensor is kept as an IR
//! value seen through a permutation ([`Laid`]): the NHWC output of a
//! convolution stays the NCHW value the IR computed, elementwise nodes work
//! in whatever layout their operands share, and a transpose only changes the
//! permutation. Permutes are emitted where a layout must change.
//!
//! Quantized values are computed in f32 as XNNPACK computes them in
//! integers (see `quantize`).
//!
//! The graph comes decoded by the frontend, which checked that every value
//! id it names is one of its values. Node types, element types and flags
//! ptec does not implement give [`ImportError::UnsupportedXnnpack`] with
//! the node's type and debug handle; graphs that contradict themselves
//! otherwise (wrong ranks, dims that disagree with what the nodes compute,
//! values read before a node writes them) give [`ImportError::Invalid`].

mod quantize;

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use ptec_frontend::ValueIndex;
use ptec_frontend::delegate::xnnpack::{
    Concatenate, ConvNode, FullyConnected, Node1x1, Node2x1, OutputRange, Pooling2d,
    StaticConstantPad, StaticReshape, StaticResizeBilinear2d, StaticSlice, StaticTranspose,
    XnnNode, XnnOp, XnnOpKind, XnnTensorValue, XnnValueId, XnnpackGraph,
};

use ptec_ir::ops::conv::{AvgPool2d, Convolution, MaxPool2d, Pair};
use ptec_ir::ops::elementwise::{BinaryOp, Elementwise, Func, UnaryOp};
use ptec_ir::ops::gather::Index;
use ptec_ir::ops::layout::{Cat, Copy, Pad, PadMode, Permute, Reshape, Slice, is_permutation};
use ptec_ir::ops::linalg::{Addmm, ClampRange, MatMul};
use ptec_ir::ops::reduce::{Reduce, ReduceOp, Softmax};
use ptec_ir::ops::{Expected, show};
use ptec_ir::symbolic::Term;
use ptec_ir::{DType, Dim, Op, OpKind, Real, Scalar, Shape, TensorType, ValueData, ValueId};

use crate::call::TensorRef;
use crate::error::{ImportError, InstructionId, Location};
use crate::program::Importer;
use crate::{Operator, OperatorSource};
use quantize::{Elements, Integer, Numbers, Quantization};

/// Node flags: a fully connected node's filter is `[in, out]` rather than
/// `[out, in]`; a batch matrix multiply's second operand is transposed.
const FLAG_TRANSPOSE_WEIGHTS: u32 = 0x1;
/// Node flag: pooling keeps the pooled dimensions (as size 1).
const FLAG_KEEP_DIMS: u32 = 0x40;
/// Resize flag: the corner pixels of the input and output are aligned.
const FLAG_ALIGN_CORNERS: u32 = 0x8;
/// Resize flag: TensorFlow's legacy source positions (`output * input /
/// output`, no pixel centers).
const FLAG_TENSORFLOW_LEGACY_MODE: u32 = 0x4;
/// XNNPACK's NHWC tensor is the IR's NCHW value permuted by this.
const NHWC_OF_NCHW: [usize; 4] = [0, 2, 3, 1];

/// What the importer says of a node type it does not translate (the error
/// reads "... XNNPACK node 3 (XNNPReLU, ...): this node type is not
/// supported").
const UNTRANSLATED: &str = "this node type";

/// The kinds of op a node of each type becomes (besides the elementwise
/// ops that clamp and requantize results and the copies, permutes and
/// reshapes that change layouts), or why the importer refuses it.
fn translation(kind: XnnOpKind) -> Result<&'static [OpKind], &'static str> {
    use XnnOpKind as K;
    Ok(match kind {
        K::Add
        | K::Subtract
        | K::Multiply
        | K::Div
        | K::Minimum
        | K::Maximum
        | K::Sigmoid
        | K::Tanh
        | K::Gelu
        | K::Hardswish
        | K::Abs
        | K::Negate
        | K::Floor
        | K::Ceiling
        | K::SquareRoot
        | K::ReciprocalSquareRoot
        | K::Log
        | K::Exp
        | K::Sin
        | K::Cos
        | K::Square
        | K::Clamp
        | K::Copy
        | K::Convert
        | K::LeakyRelu
        | K::Elu
        | K::StaticTranspose => &[],
        K::BatchMatrixMultiply => &[OpKind::MatMul],
        K::Softmax => &[OpKind::Softmax],
        K::GlobalAvgPooling2d => &[OpKind::Reduce],
        K::FullyConnected => &[OpKind::MatMul, OpKind::Addmm, OpKind::Reduce],
        K::Conv2d | K::DepthwiseConv2d => &[OpKind::Convolution, OpKind::Pad],
        K::MaxPooling2d => &[OpKind::MaxPool2d, OpKind::Pad],
        K::AvgPooling2d => &[OpKind::AvgPool2d],
        K::ConvTranspose2d => &[OpKind::Convolution],
        K::PRelu => &[],
        K::StaticResizeBilinear2d => &[OpKind::Index],
        K::StaticReshape => &[],
        K::StaticSlice => &[OpKind::Slice],
        K::StaticConstantPad => &[OpKind::Pad],
        K::Concatenate2 | K::Concatenate3 | K::Concatenate4 | K::Concatenate5 => &[OpKind::Cat],
        K::ArgMaxPooling2d | K::ScaledDotProductAttention => return Err(UNTRANSLATED),
    })
}

/// Every XNNPACK node type, with the kinds of op it becomes or why the
/// importer refuses it.
pub(crate) fn node_types() -> Vec<Operator> {
    const LAYOUT_AND_RESULTS: [OpKind; 4] = [
        OpKind::Elementwise,
        OpKind::Copy,
        OpKind::Permute,
        OpKind::Reshape,
    ];
    XnnOpKind::ALL
        .iter()
        .map(|&kind| Operator {
            key: kind.name().to_string(),
            source: OperatorSource::Xnnpack,
            emits: translation(kind)
                .map(|own| LAYOUT_AND_RESULTS.iter().chain(own).copied().collect())
                .map_err(|why| format!("ptec does not translate {why} yet")),
        })
        .collect()
}

/// Translates one DelegateCall of an XNNPACK delegate into IR nodes.
pub(crate) fn import<'m, 'a>(
    importer: &mut Importer<'m, 'a>,
    graph: &'m XnnpackGraph<'a>,
    args: &[ValueIndex],
) -> Result<(), ImportError> {
    let (inputs, outputs) = (graph.input_ids.len(), graph.output_ids.len());
    if inputs + outputs != args.len() {
        return Err(importer.contradiction(format!(
            "the XNNPACK graph has {inputs} inputs and {outputs} outputs but the call passes {} \
             arguments",
            args.len()
        )));
    }
    check_externals(importer, graph)?;
    let mut translation = Translation {
        instruction: importer.current_instruction(),
        importer,
        graph,
        args,
        numbers: HashMap::new(),
        tensors: HashMap::new(),
        created: HashSet::new(),
        node: NodeContext::default(),
    };
    for (index, value) in graph.values().iter().enumerate() {
        translation.classify(index, value)?;
    }
    for (index, node) in graph.nodes.iter().enumerate() {
        translation.enter(index, node);
        translation.node(node)?;
    }
    translation.importer.at = Location::XnnpackOutputs(translation.instruction);
    translation.outputs()?;
    translation.importer.at = Location::Instruction(translation.instruction);
    Ok(())
}

/// Checks that the graph's `input_ids` and `output_ids` list exactly its
/// values flagged as the call's inputs and outputs, each once: the
/// importer finds a call's arguments by those flags, so a list that says
/// otherwise is a lie about the call.
fn check_externals(
    importer: &Importer<'_, '_>,
    graph: &XnnpackGraph<'_>,
) -> Result<(), ImportError> {
    type Flagged = fn(&XnnTensorValue<'_>) -> bool;
    let lists: [(&str, &[XnnValueId], &str, Flagged); 2] = [
        ("input_ids", &graph.input_ids, "an input", |value| {
            value.external_input
        }),
        ("output_ids", &graph.output_ids, "an output", |value| {
            value.external_output
        }),
    ];
    for (field, ids, role, flagged) in lists {
        let mut listed = HashSet::new();
        for (index, &id) in ids.iter().enumerate() {
            let value = graph.value(id).ok_or_else(|| {
                importer.contradiction(format!(
                    "XNNPACK {field}[{index}]: value id {id} is none of the graph's values"
                ))
            })?;
            if !flagged(value) {
                return Err(importer.contradiction(format!(
                    "XNNPACK {field}[{index}]: value {id} is not flagged {role} of the call"
                )));
            }
            if !listed.insert(id) {
                return Err(importer.contradiction(format!(
                    "XNNPACK {field}[{index}]: value {id} is listed twice"
                )));
            }
        }
        let unlisted = graph
            .values()
            .iter()
            .find(|value| flagged(value) && !listed.contains(&value.id));
        if let Some(value) = unlisted {
            return Err(importer.contradiction(format!(
                "XNNPACK value {} is flagged {role} of the call but {field} does not list it",
                value.id
            )));
        }
    }
    Ok(())
}

/// An XNNPACK tensor as the IR holds it: `value.permute(perm)`.
#[derive(Clone, Debug)]
struct Laid {
    value: ValueId,
    perm: Vec<usize>,
}

/// The node being translated.
#[derive(Debug, Default)]
struct NodeContext {
    index: usize,
    kind: &'static str,
    debug_handle: u32,
    /// Whether each element of the node's result is an element of an
    /// input or a bound of its output range (layout changes, copies, max
    /// pooling, clamps), so that a result quantized like its inputs stays
    /// on their grid.
    selects: bool,
    /// The value ids the node has read.
    read: Vec<XnnValueId>,
}

/// What a one-input node computes.
#[derive(Debug)]
enum OneInput {
    /// An elementwise function, computed in the input's layout.
    Map(Func),
    /// `x * x`.
    Square,
    /// The input itself (copies, conversions between equal types, and
    /// clamps, whose bounds are the node's output range).
    Same,
    /// Softmax over the last dimension.
    Softmax,
    /// The mean over H and W of an NHWC tensor.
    GlobalAveragePool,
}

/// What a two-input node computes.
#[derive(Debug)]
enum TwoInputs {
    /// An elementwise op, broadcasting.
    Map(BinaryOp),
    /// A batched matrix product.
    MatMul,
    /// `x < 0 ? x * slope : x`, the slope broadcasting as the operands of
    /// an elementwise op do (one per channel, the last NHWC dimension).
    PRelu,
}

/// How XNNPACK computes a convolution or fully connected node whose input
/// and output are quantized per tensor and whose filter per channel: an
/// int32 accumulator of integer products, times a multiplier per output
/// channel, rounded onto the output's grid.
#[derive(Debug)]
struct Accumulated {
    /// `input scale * filter scale / output scale`, in f32 as XNNPACK
    /// computes it.
    multipliers: Vec<f32>,
    input: Quantization,
    output: Quantization,
}

/// The three convolution node types, which differ in their filter's layout.
#[derive(Clone, Copy, Debug)]
enum ConvKind {
    Ordinary,
    Depthwise,
    Transposed,
}

/// The value ids of a convolution or fully connected node.
#[derive(Clone, Copy, Debug)]
struct ProductIds {
    input: XnnValueId,
    filter: XnnValueId,
    bias: Option<XnnValueId>,
    output: XnnValueId,
}

/// The operands of a convolution or fully connected node: real numbers,
/// or when XNNPACK accumulates integer products the integers less their
/// zero points (exact in f32 below 2^24), and how to requantize them.
struct Product {
    x: Laid,
    filter: Laid,
    bias: Option<Laid>,
    accumulated: Option<Accumulated>,
}

struct Translation<'i, 'm, 'a> {
    importer: &'i mut Importer<'m, 'a>,
    /// The DelegateCall's place in the method, for messages.
    instruction: InstructionId,
    graph: &'m XnnpackGraph<'a>,
    args: &'i [ValueIndex],
    /// What the elements of every value of the graph stand for, by id.
    numbers: HashMap<XnnValueId, Numbers>,
    /// The tensor each value id holds, once it has one.
    tensors: HashMap<XnnValueId, Laid>,
    /// The values this translation's nodes write.
    created: HashSet<ValueId>,
    node: NodeContext,
}

impl<'m, 'a> Translation<'_, 'm, 'a> {
    fn invalid(&self, problem: impl Into<String>) -> ImportError {
        self.importer.contradiction(problem)
    }

    fn unsupported(&self, what: impl Into<String>) -> ImportError {
        ImportError::UnsupportedXnnpack {
            method: self.importer.method.name.clone(),
            at: self.instruction,
            node: self.node.index,
            kind: self.node.kind,
            debug_handle: self.node.debug_handle,
            what: what.into(),
        }
    }

    /// Records what the elements of the graph's value `index` stand for.
    fn classify(&mut self, index: usize, value: &XnnTensorValue<'_>) -> Result<(), ImportError> {
        if value.num_dims as usize != value.dims.len() {
            return Err(self.invalid(format!(
                "XNNPACK value {index} (id {}): num_dims is {}, but dims has {} entries",
                value.id,
                value.num_dims,
                value.dims.len()
            )));
        }
        let numbers = Numbers::of(value)
            .map_err(|problem| self.invalid(format!("XNNPACK value {index}: {problem}")))?;
        self.numbers.insert(value.id, numbers);
        Ok(())
    }

    fn enter(&mut self, index: usize, node: &XnnNode) {
        self.node = NodeContext {
            selects: matches!(
                node.op,
                XnnOp::StaticTranspose(_)
                    | XnnOp::StaticReshape(_)
                    | XnnOp::StaticSlice(_)
                    | XnnOp::MaxPooling2d(_)
                    | XnnOp::Concatenate2(_)
                    | XnnOp::Concatenate3(_)
                    | XnnOp::Concatenate4(_)
                    | XnnOp::Concatenate5(_)
                    | XnnOp::Copy(_)
                    | XnnOp::Convert(_)
                    | XnnOp::Clamp(_)
            ),
            read: Vec::new(),
            index,
            kind: node.op.name(),
            debug_handle: node.debug_handle,
        };
        self.importer.at = Location::XnnpackNode {
            instruction: self.instruction,
            node: index,
            kind: self.node.kind,
            debug_handle: node.debug_handle,
        };
    }

    fn node(&mut self, node: &XnnNode) -> Result<(), ImportError> {
        if let Some(OutputRange { min, max }) = node.output_range {
            // Also refuses a NaN bound, which bounds nothing.
            if min.partial_cmp(&max).is_none_or(|order| order.is_gt()) {
                return Err(self.invalid(format!(
                    "the output range's output_min {min} is above its output_max {max}"
                )));
            }
        }
        let range = output_range(node.output_range);
        let none = ClampRange::default();
        let unary = |op| OneInput::Map(Func::Unary(op));
        match &node.op {
            XnnOp::Add(t) => self.two(t, TwoInputs::Map(BinaryOp::Add), range),
            XnnOp::Subtract(t) => self.two(t, TwoInputs::Map(BinaryOp::Sub), range),
            XnnOp::Multiply(t) => self.two(t, TwoInputs::Map(BinaryOp::Mul), range),
            XnnOp::Div(t) => self.two(t, TwoInputs::Map(BinaryOp::Div), range),
            XnnOp::Minimum(t) => self.two(t, TwoInputs::Map(BinaryOp::Minimum), none),
            XnnOp::Maximum(t) => self.two(t, TwoInputs::Map(BinaryOp::Maximum), none),
            XnnOp::BatchMatrixMultiply(t) => self.two(t, TwoInputs::MatMul, none),
            XnnOp::Sigmoid(t) => self.one(t, unary(UnaryOp::Sigmoid), none),
            XnnOp::Tanh(t) => self.one(t, unary(UnaryOp::Tanh), none),
            XnnOp::Gelu(t) => self.one(t, unary(UnaryOp::Gelu), none),
            XnnOp::Hardswish(t) => self.one(t, unary(UnaryOp::Hardswish), none),
            XnnOp::Abs(t) => self.one(t, unary(UnaryOp::Abs), none),
            XnnOp::Negate(t) => self.one(t, unary(UnaryOp::Neg), none),
            XnnOp::Floor(t) => self.one(t, unary(UnaryOp::Floor), none),
            XnnOp::Ceiling(t) => self.one(t, unary(UnaryOp::Ceil), none),
            XnnOp::SquareRoot(t) => self.one(t, unary(UnaryOp::Sqrt), none),
            XnnOp::ReciprocalSquareRoot(t) => self.one(t, unary(UnaryOp::Rsqrt), none),
            XnnOp::Log(t) => self.one(t, unary(UnaryOp::Log), none),
            XnnOp::Exp(t) => self.one(t, unary(UnaryOp::Exp), none),
            XnnOp::Sin(t) => self.one(t, unary(UnaryOp::Sin), none),
            XnnOp::Cos(t) => self.one(t, unary(UnaryOp::Cos), none),
            XnnOp::Square(t) => self.one(t, OneInput::Square, none),
            XnnOp::Clamp(t) => self.one(t, OneInput::Same, range),
            XnnOp::Copy(t) => self.one(t, OneInput::Same, none),
            XnnOp::Convert(t) => self.one(t, OneInput::Same, none),
            XnnOp::Softmax(t) => self.one(t, OneInput::Softmax, none),
            XnnOp::GlobalAvgPooling2d(t) => self.one(t, OneInput::GlobalAveragePool, range),
            XnnOp::LeakyRelu(t) => {
                let op = Func::LeakyRelu {
                    slope: Real(f64::from(t.negative_slope)),
                };
                self.one(
                    &node_1x1(t.input, t.output, t.flags),
                    OneInput::Map(op),
                    none,
                )
            }
            XnnOp::Elu(t) => {
                let op = Func::Elu {
                    alpha: Real(f64::from(t.alpha)),
                    scale: Real(1.0),
                    input_scale: Real(1.0),
                };
                self.one(
                    &node_1x1(t.input, t.output, t.flags),
                    OneInput::Map(op),
                    none,
                )
            }
            XnnOp::FullyConnected(t) => self.fully_connected(t, range),
            XnnOp::Conv2d(t) => self.convolution(t, ConvKind::Ordinary, range),
            XnnOp::DepthwiseConv2d(t) => self.convolution(t, ConvKind::Depthwise, range),
            XnnOp::MaxPooling2d(t) => self.max_pooling(t, range),
            XnnOp::StaticTranspose(t) => self.transpose(t),
            XnnOp::StaticReshape(t) => self.reshape(t),
            XnnOp::StaticSlice(t) => self.slice(t),
            XnnOp::StaticConstantPad(t) => self.constant_pad(t),
            XnnOp::Concatenate2(t)
            | XnnOp::Concatenate3(t)
            | XnnOp::Concatenate4(t)
            | XnnOp::Concatenate5(t) => self.concatenate(t),
            XnnOp::AvgPooling2d(t) => self.average_pooling(t, range),
            XnnOp::ConvTranspose2d(t) => self.convolution(t, ConvKind::Transposed, range),
            XnnOp::PRelu(t) => self.two(t, TwoInputs::PRelu, none),
            XnnOp::StaticResizeBilinear2d(t) => self.resize_bilinear(t),
            XnnOp::ArgMaxPooling2d(_) | XnnOp::ScaledDotProductAttention(_) => {
                Err(self.unsupported(UNTRANSLATED))
            }
        }
    }

    /// Checks a node's `num_dims` against the length of a list it gives
    /// (`field`).
    fn check_num_dims(&self, num_dims: u32, field: &str, len: usize) -> Result<(), ImportError> {
        if num_dims as usize != len {
            return Err(self.invalid(format!(
                "num_dims is {num_dims}, but {field} has {len} entries"
            )));
        }
        Ok(())
    }

    fn check_flags(&self, flags: u32, allowed: u32) -> Result<(), ImportError> {
        match flags & !allowed {
            0 => Ok(()),
            other => Err(self.unsupported(format!("flags {other:#x}"))),
        }
    }

    /// The IR tensor of value `id`: what a node wrote, a call argument, or
    /// a constant.
    fn input(&mut self, id: XnnValueId) -> Result<Laid, ImportError> {
        self.node.read.push(id);
        if let Some(laid) = self.tensors.get(&id) {
            return Ok(laid.clone());
        }
        let tensor = self.value(id)?;
        let laid = if tensor.external_input {
            self.check_external(id)?;
            self.external_input(tensor)?
        } else if tensor.constant.is_some() {
            self.constant(tensor, Elements::Real)?
        } else {
            return Err(self.invalid(format!("value {id} is read before a node writes it")));
        };
        self.tensors.insert(id, laid.clone());
        Ok(laid)
    }

    /// The graph's value `id`, if ptec computes with its kind.
    fn value(&self, id: XnnValueId) -> Result<&'m XnnTensorValue<'a>, ImportError> {
        let tensor = self
            .graph
            .value(id)
            .ok_or_else(|| self.invalid(format!("value id {id} is not in the graph")))?;
        match self.numbers.get(&id) {
            Some(Numbers::Unsupported(what)) => Err(self.unsupported(format!("value {id} {what}"))),
            _ => Ok(tensor),
        }
    }

    /// The quantization of value `id` when XNNPACK holds it as integers of
    /// one scale and zero point.
    fn quantization(&self, id: XnnValueId) -> Option<Quantization> {
        match self.numbers.get(&id) {
            Some(Numbers::PerTensor(quantization)) => Some(*quantization),
            _ => None,
        }
    }

    /// Call arguments and outputs are floats, or 8-bit integers of one
    /// scale and zero point (the integers themselves: a program passes
    /// them between delegates through kernels that keep them, such as an
    /// average pooling XNNPACK does not take).
    fn check_external(&self, id: XnnValueId) -> Result<(), ImportError> {
        match self.numbers.get(&id) {
            Some(Numbers::Float | Numbers::Half | Numbers::BFloat16) => Ok(()),
            Some(Numbers::PerTensor(quantization)) if quantization.integer.dtype().is_some() => {
                Ok(())
            }
            _ => Err(self.unsupported(format!("quantized value {id} as a call argument"))),
        }
    }

    /// The f32 numbers the integers `value` stand for in `quantization`:
    /// `(q - zero point) * scale`, the points of its grid as ptec computes
    /// quantized values.
    fn dequantized(
        &mut self,
        value: ValueId,
        quantization: Quantization,
    ) -> Result<ValueId, ImportError> {
        let shape = self.importer.graph.value(value).ty.shape.clone();
        let numbers = self.emit_given(copy(value), shape)?;
        let zero_point = f64::from(quantization.zero_point);
        let centred = self.emit(scalar(BinaryOp::Sub, numbers, zero_point))?;
        self.emit(scalar(
            BinaryOp::Mul,
            centred,
            f64::from(quantization.scale),
        ))
    }

    /// The dims a value declares.
    fn dims(&self, tensor: &XnnTensorValue<'_>) -> Vec<u64> {
        tensor.dims.iter().map(|&dim| u64::from(dim)).collect()
    }

    /// The call argument an external value is.
    fn argument(&self, tensor: &XnnTensorValue<'_>) -> Result<ValueIndex, ImportError> {
        let external_id = tensor.external_id.ok_or_else(|| {
            self.invalid(format!("external value {} has no external id", tensor.id))
        })?;
        self.args.get(external_id as usize).copied().ok_or_else(|| {
            self.invalid(format!(
                "external id {external_id} is out of range for a call of {} arguments",
                self.args.len()
            ))
        })
    }

    /// A call argument, seen with the dims of its physical layout, and
    /// converted to f32 when it is another float type.
    fn external_input(&mut self, tensor: &XnnTensorValue<'_>) -> Result<Laid, ImportError> {
        let id = tensor.id;
        let mut value = self
            .importer
            .read(TensorRef::Method(self.argument(tensor)?))?;
        let ty = self.importer.graph.value(value).ty.clone();
        if let Some(quantization) = self.quantization(id) {
            let integers = quantization.integer.dtype();
            if Some(ty.dtype) != integers {
                return Err(self.invalid(format!(
                    "value {id} holds {}, but the argument it names is {ty}",
                    show_integers(integers)
                )));
            }
            value = self.dequantized(value, quantization)?;
        } else if ty.dtype != DType::F32 {
            if !ty.dtype.is_float() {
                return Err(self.invalid(format!(
                    "value {id} holds floats, but the argument it names is {ty}"
                )));
            }
            value = self.emit_given(copy(value), ty.shape.clone())?;
        }
        let laid = Laid {
            value,
            perm: ty.dim_order.iter().map(|&dim| usize::from(dim)).collect(),
        };
        let dims = self.dims(tensor);
        if self.fits(&laid, &dims) {
            return Ok(laid);
        }
        // A rank-0 argument is declared with dims [1], for one.
        match ty.fixed_shape() {
            Some(sizes) if byte_count(&sizes) == byte_count(&dims) => {
                let contiguous = self.materialize(&laid, &identity(ty.rank()))?;
                let reshaped = self.emit_given(reshape(contiguous), fixed(&dims))?;
                Ok(Laid {
                    value: reshaped,
                    perm: identity(dims.len()),
                })
            }
            _ => Err(self.invalid(format!(
                "value {id} has dims {dims:?}, but the argument it names is {ty}"
            ))),
        }
    }

    /// Whether a tensor has the declared dims (symbolic dimensions are
    /// declared at their bound).
    fn fits(&self, laid: &Laid, dims: &[u64]) -> bool {
        let shape = self.xnn_shape(laid);
        shape.len() == dims.len()
            && shape.iter().zip(dims).all(|(&dim, &declared)| match dim {
                Dim::Fixed(size) => size == declared,
                Dim::Symbol(symbol) => self.importer.symbols.bound(symbol) == declared,
            })
    }

    fn constant(
        &mut self,
        tensor: &XnnTensorValue<'a>,
        elements: Elements,
    ) -> Result<Laid, ImportError> {
        let id = tensor.id;
        let bytes = tensor
            .constant
            .ok_or_else(|| self.invalid(format!("value {id} is not a constant")))?;
        let dims = self.dims(tensor);
        let bytes = self.numbers[&id]
            .constant(bytes, &dims, elements)
            .map_err(|problem| self.invalid(format!("constant value {id}: {problem}")))?;
        let value = self
            .importer
            .graph
            .add_value(ValueData::constant(contiguous(fixed(&dims)), bytes));
        Ok(Laid {
            value,
            perm: identity(dims.len()),
        })
    }

    /// Records what a node wrote to value `id`.
    fn define(&mut self, id: XnnValueId, laid: Laid) -> Result<(), ImportError> {
        self.define_bounded(id, laid, ClampRange::default())
    }

    /// Records what a node wrote to value `id`, bounded by the node's
    /// output range: clamped, or for a quantized value rounded onto its
    /// grid within the range.
    fn define_bounded(
        &mut self,
        id: XnnValueId,
        laid: Laid,
        range: ClampRange,
    ) -> Result<(), ImportError> {
        let numbers = match self.numbers.get(&id) {
            Some(numbers) => numbers.clone(),
            None => return Err(self.invalid(format!("value id {id} is not in the graph"))),
        };
        let laid = match numbers {
            Numbers::Float | Numbers::Unsupported(_) => self.clamp(laid, range)?,
            // XNNPACK stores the value in its own type: each node's result
            // rounded once, as ptec computes it in f32 (an output of that
            // type by its copy into the call's argument).
            Numbers::Half | Numbers::BFloat16 => {
                let clamped = self.clamp(laid, range)?;
                let narrow = if numbers == Numbers::Half {
                    DType::F16
                } else {
                    DType::BF16
                };
                let tensor = self.value(id)?;
                let copied_as_narrow = tensor.external_output && {
                    let argument = TensorRef::Method(self.argument(tensor)?);
                    self.importer.declared_type(argument)?.dtype == narrow
                };
                if copied_as_narrow {
                    clamped
                } else {
                    self.rounded_to(clamped, narrow)?
                }
            }
            Numbers::PerTensor(quantization) => {
                let on_grid = self.node.selects
                    && self
                        .node
                        .read
                        .iter()
                        .all(|&input| self.quantization(input) == Some(quantization));
                if on_grid {
                    // The range's bounds on the grid, computed as the
                    // grid's points are.
                    let (low, high) = quantization.bounds(range);
                    let point = |q: i64| Some(Real(f64::from(q as f32 * quantization.scale)));
                    let bounds = ClampRange {
                        min: range.min.and_then(|_| point(low)),
                        max: range.max.and_then(|_| point(high)),
                    };
                    self.clamp(laid, bounds)?
                } else {
                    self.fake_quantize(laid, quantization, range)?
                }
            }
            Numbers::Dynamic { nonbatch_dims } => self.quantize_rows(laid, nonbatch_dims)?,
            Numbers::PerChannel { .. } | Numbers::Blockwise { .. } => {
                return Err(self.unsupported(format!(
                    "a result in value {id}, quantized per channel or block"
                )));
            }
        };
        self.record(id, laid)
    }

    /// Records `laid` as value `id`, checking it against the value's
    /// declared dims.
    fn record(&mut self, id: XnnValueId, laid: Laid) -> Result<(), ImportError> {
        let tensor = self.value(id)?;
        if tensor.external_output {
            self.check_external(id)?;
        }
        if tensor.external_input || tensor.constant.is_some() {
            return Err(self.invalid(format!(
                "value {id} is an input or a constant, and a node writes it"
            )));
        }
        let dims = self.dims(tensor);
        let shape = self.xnn_shape(&laid);
        let agrees = match self.numbers.get(&id) {
            // The exporter declares a dynamically quantized value's dims in
            // PyTorch's order (NCHW) before it lays the graph out
            // channels-last, and XNNPACK gives it the shape of what its
            // convert reads, as it does every value a node writes: only the
            // number of elements must agree.
            Some(Numbers::Dynamic { .. }) => {
                let elements = shape.iter().map(|dim| dim.fixed()).product::<Option<u64>>();
                elements.is_none_or(|elements| elements == dims.iter().product::<u64>())
            }
            _ => {
                shape.len() == dims.len()
                    && shape
                        .iter()
                        .zip(&dims)
                        .all(|(&dim, &declared)| dim.fixed().is_none_or(|size| size == declared))
            }
        };
        if !agrees {
            return Err(self.invalid(format!(
                "the node computes {} for value {id}, which the graph declares {dims:?}",
                show(&shape)
            )));
        }
        if self.tensors.insert(id, laid).is_some() {
            return Err(self.invalid(format!("value {id} is written twice")));
        }
        Ok(())
    }

    /// A tensor's shape as XNNPACK sees it.
    fn xnn_shape(&self, laid: &Laid) -> Shape {
        let stored = self
            .importer
            .symbols
            .resolve_shape(&self.importer.graph.value(laid.value).ty.shape);
        laid.perm.iter().map(|&dim| stored[dim]).collect()
    }

    /// A contiguous value `y` with `tensor = y.permute(layout)`.
    fn materialize(&mut self, laid: &Laid, layout: &[usize]) -> Result<ValueId, ImportError> {
        let dims = permutation_between(&laid.perm, layout);
        let ty = &self.importer.graph.value(laid.value).ty;
        match dims {
            dims if dims != identity(dims.len()) => self.emit(permute(laid.value, dims)),
            _ if ty.is_contiguous() => Ok(laid.value),
            _ => {
                let shape = ty.shape.clone();
                self.emit_given(copy(laid.value), shape)
            }
        }
    }

    /// The tensor with rank `rank`: leading dimensions of size 1 added.
    fn with_rank(&mut self, laid: Laid, rank: usize) -> Result<Laid, ImportError> {
        let shape = self.xnn_shape(&laid);
        if shape.len() >= rank {
            return Ok(laid);
        }
        let contiguous = self.materialize(&laid, &identity(shape.len()))?;
        let mut padded = vec![Dim::Fixed(1); rank - shape.len()];
        padded.extend(shape);
        Ok(Laid {
            value: self.emit_given(reshape(contiguous), padded)?,
            perm: identity(rank),
        })
    }

    /// Emits `op` with outputs of these element types, the shapes its rule
    /// gives or else `given`.
    fn emit_outputs(
        &mut self,
        op: Op,
        dtypes: &[DType],
        given: Option<Shape>,
    ) -> Result<Vec<ValueId>, ImportError> {
        let expected = self.importer.expected_shapes(&op, dtypes.len())?;
        let mut outputs = Vec::with_capacity(dtypes.len());
        for (slot, &dtype) in dtypes.iter().enumerate() {
            let shape = match (expected.get(slot), &given) {
                (Some(Expected::Shape(shape)), _) => shape.clone(),
                (_, Some(shape)) => shape.clone(),
                _ => {
                    return Err(self.invalid(format!("{}: output {slot} has no shape", op.name())));
                }
            };
            let ty = TensorType {
                dtype,
                ..contiguous(shape)
            };
            outputs.push(self.importer.graph.add_value(ValueData::computed(ty)));
        }
        self.created.extend(&outputs);
        self.importer.push(op, outputs.clone());
        Ok(outputs)
    }

    /// Emits `op`, whose one f32 output has the shape its rule gives.
    fn emit(&mut self, op: Op) -> Result<ValueId, ImportError> {
        Ok(self.emit_outputs(op, &[DType::F32], None)?[0])
    }

    /// Emits `op`, whose one f32 output has the given shape.
    fn emit_given(&mut self, op: Op, shape: Shape) -> Result<ValueId, ImportError> {
        Ok(self.emit_outputs(op, &[DType::F32], Some(shape))?[0])
    }

    /// The f32 tensor rounded to the nearest `dtype` (a narrower float
    /// type), still as f32.
    fn rounded_to(&mut self, laid: Laid, dtype: DType) -> Result<Laid, ImportError> {
        let shape = self.importer.graph.value(laid.value).ty.shape.clone();
        let narrow = self.emit_outputs(copy(laid.value), &[dtype], Some(shape.clone()))?[0];
        Ok(Laid {
            value: self.emit_given(copy(narrow), shape)?,
            perm: laid.perm,
        })
    }

    /// The tensor clamped to a node's output range.
    fn clamp(&mut self, laid: Laid, range: ClampRange) -> Result<Laid, ImportError> {
        if range.is_none() {
            return Ok(laid);
        }
        let bound = |bound: Option<Real>| bound.map(|bound| bound.0);
        Ok(Laid {
            value: self.emit(clamp(laid.value, bound(range.min), bound(range.max)))?,
            perm: laid.perm,
        })
    }

    /// The tensor rounded onto the grid of a quantization, as XNNPACK
    /// requantizes a result: `clamp(round_even(x / scale), low, high) *
    /// scale`, the bounds being the integer range less the zero point
    /// (rounding before the zero point is added, as XNNPACK does, matters
    /// at ties when the zero point is odd). XNNPACK multiplies by the
    /// reciprocal of the scale, in f32.
    fn fake_quantize(
        &mut self,
        laid: Laid,
        quantization: Quantization,
        range: ClampRange,
    ) -> Result<Laid, ImportError> {
        let descaled = self.descale(laid.value, quantization.scale)?;
        Ok(Laid {
            value: self.round_to_grid(descaled, quantization, range)?,
            perm: laid.perm,
        })
    }

    /// The integers less the zero point that a value on a quantization's
    /// grid stands for (exact: the value is one of the grid's points).
    fn integers(
        &mut self,
        value: ValueId,
        quantization: Quantization,
    ) -> Result<ValueId, ImportError> {
        let descaled = self.descale(value, quantization.scale)?;
        self.emit(unary(UnaryOp::Round, descaled))
    }

    /// `x * (1 / scale)`: XNNPACK scales by the reciprocal, in f32.
    fn descale(&mut self, value: ValueId, scale: f32) -> Result<ValueId, ImportError> {
        self.emit(scalar(BinaryOp::Mul, value, f64::from(1.0 / scale)))
    }

    /// A value in units of a quantization's scale rounded onto its grid:
    /// `clamp(round_even(x), low, high) * scale`.
    fn round_to_grid(
        &mut self,
        value: ValueId,
        quantization: Quantization,
        range: ClampRange,
    ) -> Result<ValueId, ImportError> {
        let (low, high) = quantization.bounds(range);
        let rounded = self.emit(unary(UnaryOp::Round, value))?;
        let bounded = self.emit(clamp(rounded, Some(low as f64), Some(high as f64)))?;
        self.emit(scalar(
            BinaryOp::Mul,
            bounded,
            f64::from(quantization.scale),
        ))
    }

    /// The tensor quantized row by row as XNNPACK's conversion to qdint8
    /// does at run time, back in f32: each row of its last `nonbatch_dims`
    /// dimensions gets an int8 scale and zero point from its range
    /// (widened to hold 0), its elements are rounded onto that grid, and
    /// the fully connected node that reads them computes with `(q - zero
    /// point) * scale`.
    fn quantize_rows(&mut self, x: Laid, nonbatch_dims: usize) -> Result<Laid, ImportError> {
        let rank = x.perm.len();
        let mut dims = x.perm[rank - nonbatch_dims..].to_vec();
        dims.sort_unstable();
        let reduce = |op, input| {
            Op::Reduce(Reduce {
                input,
                op,
                dims: dims.clone(),
                keepdim: true,
            })
        };
        let (qmin, qmax) = (f64::from(i8::MIN), f64::from(i8::MAX));
        // The row's range, widened to hold 0.
        let low = self.emit(reduce(ReduceOp::Min, x.value))?;
        let low = self.emit(clamp(low, None, Some(0.0)))?;
        let high = self.emit(reduce(ReduceOp::Max, x.value))?;
        let high = self.emit(clamp(high, Some(0.0), None))?;
        // 255 / (high - low). A row of zeros gets a finite multiplier in
        // place of XNNPACK's 1, which gives the same zeros (so does any
        // width too small for a finite multiplier).
        let width = self.emit(binary(BinaryOp::Sub, high, low))?;
        let narrowest = 2.0 * (qmax - qmin) as f32 / f32::MAX;
        let width = self.emit(clamp(width, Some(f64::from(narrowest)), None))?;
        let levels = self.splat((qmax - qmin) as f32);
        let multiplier = self.emit(binary(BinaryOp::Div, levels, width))?;
        // The zero point from whichever end of the range errs less.
        let descaled_low = self.emit(binary(BinaryOp::Mul, low, multiplier))?;
        let descaled_high = self.emit(binary(BinaryOp::Mul, high, multiplier))?;
        let low_error = self.emit(scalar(BinaryOp::Add, descaled_low, qmin))?;
        let high_error = self.emit(scalar(BinaryOp::Add, descaled_high, qmax))?;
        let errors = self.emit(binary(BinaryOp::Add, low_error, high_error))?;
        let from_low =
            self.emit_outputs(scalar(BinaryOp::Gt, errors, 0.0), &[DType::Bool], None)?[0];
        let mut ends = Vec::new();
        for (descaled, end) in [(descaled_low, qmin), (descaled_high, qmax)] {
            let negated = self.emit(unary(UnaryOp::Neg, descaled))?;
            ends.push(self.emit(scalar(BinaryOp::Add, negated, end))?);
        }
        let zero_point = self.emit(Elementwise::op(
            Func::Where,
            vec![from_low, ends[0], ends[1]],
        ))?;
        let zero_point = self.emit(clamp(zero_point, Some(qmin), Some(qmax)))?;
        let zero_point = self.emit(unary(UnaryOp::Round, zero_point))?;
        // The conversion multiplies by 1 / (1 / multiplier), the scale the
        // product uses being 1 / multiplier.
        let scale = self.emit(unary(UnaryOp::Reciprocal, multiplier))?;
        let inverse = self.emit(unary(UnaryOp::Reciprocal, scale))?;
        let negated = self.emit(unary(UnaryOp::Neg, zero_point))?;
        let floor = self.emit(scalar(BinaryOp::Add, negated, qmin))?;
        let ceiling = self.emit(scalar(BinaryOp::Add, negated, qmax))?;
        let scaled = self.emit(binary(BinaryOp::Mul, x.value, inverse))?;
        let rounded = self.emit(unary(UnaryOp::Round, scaled))?;
        let bounded = self.emit(binary(BinaryOp::Maximum, rounded, floor))?;
        let bounded = self.emit(binary(BinaryOp::Minimum, bounded, ceiling))?;
        Ok(Laid {
            value: self.emit(binary(BinaryOp::Mul, bounded, scale))?,
            perm: x.perm,
        })
    }

    /// The operands of a convolution or fully connected node;
    /// `output_channels` is the filter's dimension of output channels.
    fn product(&mut self, ids: ProductIds, output_channels: usize) -> Result<Product, ImportError> {
        let x = self.input(ids.input)?;
        let Some(accumulated) = self.accumulated(ids, output_channels) else {
            let filter = self.input(ids.filter)?;
            let bias = ids.bias.map(|bias| self.input(bias)).transpose()?;
            return Ok(Product {
                x,
                filter,
                bias,
                accumulated: None,
            });
        };
        let integers = Laid {
            value: self.integers(x.value, accumulated.input)?,
            perm: x.perm,
        };
        let mut integer_constant = |id| {
            let tensor = self.value(id)?;
            self.constant(tensor, Elements::Integers)
        };
        let filter = integer_constant(ids.filter)?;
        let bias = ids.bias.map(integer_constant).transpose()?;
        Ok(Product {
            x: integers,
            filter,
            bias,
            accumulated: Some(accumulated),
        })
    }

    /// How XNNPACK accumulates a product node, when it does in integers:
    /// int8 input and output of one scale each, constant int8 filter with
    /// a scale per output channel, constant int32 bias (if any).
    fn accumulated(&self, ids: ProductIds, output_channels: usize) -> Option<Accumulated> {
        let input = self
            .quantization(ids.input)
            .filter(|q| q.integer != Integer::I32)?;
        let output = self.quantization(ids.output)?;
        let filter_tensor = self.graph.value(ids.filter)?;
        let Numbers::PerChannel {
            integer: Integer::I8,
            scales,
            channel_dim,
        } = self.numbers.get(&ids.filter)?
        else {
            return None;
        };
        if *channel_dim != output_channels {
            return None;
        }
        let bias_is_integral = ids.bias.is_none_or(|bias| {
            self.graph
                .value(bias)
                .is_some_and(|tensor| tensor.constant.is_some())
                && match self.numbers.get(&bias) {
                    Some(Numbers::PerChannel { integer, .. }) => *integer == Integer::I32,
                    Some(Numbers::PerTensor(q)) => q.integer == Integer::I32 && q.zero_point == 0,
                    _ => false,
                }
        });
        (filter_tensor.constant.is_some() && bias_is_integral).then(|| Accumulated {
            multipliers: scales
                .iter()
                .map(|&scale| input.scale * scale / output.scale)
                .collect(),
            input,
            output,
        })
    }

    /// Records a product node's result: its accumulator requantized (the
    /// channels along `channel_axis` of the value), or the real result
    /// bounded by the node's range.
    fn define_product(
        &mut self,
        id: XnnValueId,
        result: Laid,
        channel_axis: usize,
        accumulated: Option<Accumulated>,
        range: ClampRange,
    ) -> Result<(), ImportError> {
        let Some(accumulated) = accumulated else {
            return self.define_bounded(id, result, range);
        };
        let rank = self.importer.graph.value(result.value).ty.rank();
        let mut dims = vec![accumulated.multipliers.len() as u64];
        dims.resize(rank - channel_axis, 1);
        let bytes = accumulated
            .multipliers
            .iter()
            .flat_map(|multiplier| multiplier.to_le_bytes())
            .collect();
        let multipliers = self.importer.graph.add_value(ValueData::constant(
            contiguous(fixed(&dims)),
            Cow::Owned(bytes),
        ));
        let scaled = self.emit(binary(BinaryOp::Mul, result.value, multipliers))?;
        let value = self.round_to_grid(scaled, accumulated.output, range)?;
        self.record(
            id,
            Laid {
                value,
                perm: result.perm,
            },
        )
    }

    /// A constant f32 scalar.
    fn splat(&mut self, value: f32) -> ValueId {
        let bytes = Cow::Owned(value.to_le_bytes().to_vec());
        self.importer
            .graph
            .add_value(ValueData::constant(contiguous(Vec::new()), bytes))
    }

    fn one(
        &mut self,
        operands: &Node1x1,
        what: OneInput,
        range: ClampRange,
    ) -> Result<(), ImportError> {
        let keep_dims = matches!(what, OneInput::GlobalAveragePool);
        self.check_flags(operands.flags, if keep_dims { FLAG_KEEP_DIMS } else { 0 })?;
        let x = self.input(operands.input)?;
        let result = match what {
            OneInput::Map(func) => Laid {
                value: self.emit(Elementwise::op(func, vec![x.value]))?,
                perm: x.perm,
            },
            OneInput::Square => Laid {
                value: self.emit(binary(BinaryOp::Mul, x.value, x.value))?,
                perm: x.perm,
            },
            OneInput::Same => x,
            OneInput::Softmax => {
                let dim = *x
                    .perm
                    .last()
                    .ok_or_else(|| self.invalid("softmax of a rank-0 tensor"))?;
                let op = Op::Softmax(Softmax {
                    input: x.value,
                    dim,
                    log: false,
                    safe: false,
                });
                Laid {
                    value: self.emit(op)?,
                    perm: x.perm,
                }
            }
            OneInput::GlobalAveragePool => {
                let keep_dims = operands.flags & FLAG_KEEP_DIMS != 0;
                let quantized = (
                    self.quantization(operands.input),
                    self.quantization(operands.output),
                );
                if let (Some(input), Some(output)) = quantized {
                    return self.quantized_average_pool(
                        x,
                        keep_dims,
                        [input, output],
                        operands.output,
                        range,
                    );
                }
                self.global_pool(x, keep_dims, ReduceOp::Mean)?
            }
        };
        self.define_bounded(operands.output, result, range)
    }

    /// The global average pooling of a quantized input, as XNNPACK
    /// computes it: the int32 sum of the integers less their zero point,
    /// times `input scale / output scale * (1 / count)`, onto the output's
    /// grid (over H and W of fixed size; the mean of the real numbers
    /// otherwise).
    fn quantized_average_pool(
        &mut self,
        x: Laid,
        keep_dims: bool,
        [input, output]: [Quantization; 2],
        output_id: XnnValueId,
        range: ClampRange,
    ) -> Result<(), ImportError> {
        let shape = self.xnn_shape(&x);
        let count = shape.get(1..3).and_then(|spatial| {
            spatial
                .iter()
                .map(|dim| dim.fixed())
                .product::<Option<u64>>()
        });
        let Some(count) = count else {
            let mean = self.global_pool(x, keep_dims, ReduceOp::Mean)?;
            return self.define_bounded(output_id, mean, range);
        };
        let integers = Laid {
            value: self.integers(x.value, input)?,
            perm: x.perm,
        };
        let sum = self.global_pool(integers, keep_dims, ReduceOp::Sum)?;
        let multiplier = input.scale / output.scale * (1.0 / count as f32);
        let scaled = self.emit(scalar(BinaryOp::Mul, sum.value, f64::from(multiplier)))?;
        let value = self.round_to_grid(scaled, output, range)?;
        self.record(
            output_id,
            Laid {
                value,
                perm: sum.perm,
            },
        )
    }

    /// The reduction over H and W of an NHWC tensor.
    fn global_pool(
        &mut self,
        x: Laid,
        keep_dims: bool,
        reduce: ReduceOp,
    ) -> Result<Laid, ImportError> {
        if x.perm.len() != 4 {
            return Err(self.invalid(format!(
                "global average pooling of a rank-{} tensor",
                x.perm.len()
            )));
        }
        // With kept dims the result stays in the input's layout; without,
        // it is [N, C] from the NHWC tensor.
        let (source, layout) = if keep_dims {
            (x.value, x.perm)
        } else {
            (self.materialize(&x, &identity(4))?, identity(4))
        };
        let mut dims = vec![layout[1], layout[2]];
        dims.sort_unstable();
        let value = self.emit(Op::Reduce(Reduce {
            input: source,
            op: reduce,
            dims,
            keepdim: keep_dims,
        }))?;
        let perm = if keep_dims { layout } else { identity(2) };
        Ok(Laid { value, perm })
    }

    fn two(&mut self, t: &Node2x1, what: TwoInputs, range: ClampRange) -> Result<(), ImportError> {
        let transpose_b =
            matches!(what, TwoInputs::MatMul) && t.flags & FLAG_TRANSPOSE_WEIGHTS != 0;
        self.check_flags(
            t.flags,
            if matches!(what, TwoInputs::MatMul) {
                FLAG_TRANSPOSE_WEIGHTS
            } else {
                0
            },
        )?;
        let (a, b) = (self.input(t.input1)?, self.input(t.input2)?);
        let result = match what {
            TwoInputs::Map(op) => {
                let (inputs, layout) = self.broadcast(a, b)?;
                Laid {
                    value: self.emit(Elementwise::op(
                        Func::Binary { op, alpha: None },
                        inputs.to_vec(),
                    ))?,
                    perm: layout,
                }
            }
            TwoInputs::PRelu => {
                let ([x, slope], layout) = self.broadcast(a, b)?;
                let negative =
                    self.emit_outputs(scalar(BinaryOp::Lt, x, 0.0), &[DType::Bool], None)?[0];
                let scaled = self.emit(binary(BinaryOp::Mul, x, slope))?;
                Laid {
                    value: self.emit(Elementwise::op(Func::Where, vec![negative, scaled, x]))?,
                    perm: layout,
                }
            }
            TwoInputs::MatMul => {
                let lhs = self.materialize(&a, &identity(a.perm.len()))?;
                let mut rhs = self.materialize(&b, &identity(b.perm.len()))?;
                if transpose_b {
                    rhs = self.transpose_last(rhs, b.perm.len())?;
                }
                let value = self.emit(Op::MatMul(MatMul {
                    a: lhs,
                    b: rhs,
                    clamp: ClampRange::default(),
                }))?;
                Laid {
                    value,
                    perm: identity(a.perm.len()),
                }
            }
        };
        self.define_bounded(t.output, result, range)
    }

    /// The operands of an elementwise op of two tensors, brought to one rank
    /// (leading dimensions of size 1 added) and one layout (whichever
    /// operand's is not plain), and that layout.
    fn broadcast(&mut self, a: Laid, b: Laid) -> Result<([ValueId; 2], Vec<usize>), ImportError> {
        let rank = a.perm.len().max(b.perm.len());
        let (a, b) = (self.with_rank(a, rank)?, self.with_rank(b, rank)?);
        let layout = if a.perm == identity(rank) {
            b.perm.clone()
        } else {
            a.perm.clone()
        };
        let inputs = [
            self.materialize(&a, &layout)?,
            self.materialize(&b, &layout)?,
        ];
        Ok((inputs, layout))
    }

    /// A value with its last two dimensions swapped.
    fn transpose_last(&mut self, value: ValueId, rank: usize) -> Result<ValueId, ImportError> {
        if rank < 2 {
            return Err(self.invalid(format!("transposing a rank-{rank} matrix")));
        }
        let mut dims = identity(rank);
        dims.swap(rank - 2, rank - 1);
        self.emit(permute(value, dims))
    }

    /// `out = x @ filter^T + bias` over the last dimension of `x`.
    fn fully_connected(
        &mut self,
        t: &FullyConnected,
        range: ClampRange,
    ) -> Result<(), ImportError> {
        self.check_flags(t.flags, FLAG_TRANSPOSE_WEIGHTS)?;
        // The filter is [out, in], or [in, out] when transposed.
        let transposed = t.flags & FLAG_TRANSPOSE_WEIGHTS != 0;
        let ids = ProductIds {
            input: t.input,
            filter: t.filter,
            bias: t.bias,
            output: t.output,
        };
        let Product {
            x,
            filter,
            bias,
            accumulated,
        } = self.product(ids, usize::from(transposed))?;
        if filter.perm.len() != 2 || x.perm.is_empty() {
            return Err(self.invalid(format!(
                "a fully connected node of a rank-{} input and a rank-{} filter",
                x.perm.len(),
                filter.perm.len()
            )));
        }
        let mut weight = self.materialize(&filter, &identity(2))?;
        if !transposed {
            weight = self.transpose_last(weight, 2)?;
        }
        let shape = self.xnn_shape(&x);
        let rank = shape.len();
        let mut rows = self.materialize(&x, &identity(rank))?;
        // XNNPACK flattens the leading dimensions into rows.
        let leading = &shape[..rank - 1];
        if rank != 2 {
            let count = self.importer.symbols.product(leading);
            let count = count.ok().and_then(Term::as_dim).ok_or_else(|| {
                self.invalid(format!("an input {} of too many rows", show(&shape)))
            })?;
            rows = self.emit_given(reshape(rows), vec![count, shape[rank - 1]])?;
        }
        let product = match bias {
            None => self.emit(Op::MatMul(MatMul {
                a: rows,
                b: weight,
                clamp: ClampRange::default(),
            }))?,
            Some(bias) => {
                let bias = self.materialize(&bias, &identity(bias.perm.len()))?;
                self.emit(Op::Addmm(Addmm {
                    bias,
                    a: rows,
                    b: weight,
                    beta: Scalar::Int(1),
                    alpha: Scalar::Int(1),
                    clamp: ClampRange::default(),
                }))?
            }
        };
        let value = if rank == 2 {
            product
        } else {
            let columns = self.importer.graph.value(product).ty.shape[1];
            let mut out_shape = leading.to_vec();
            out_shape.push(columns);
            self.emit_given(reshape(product), out_shape)?
        };
        let result = Laid {
            value,
            perm: identity(rank),
        };
        self.define_product(t.output, result, rank - 1, accumulated, range)
    }

    /// A 4-D input as the NCHW value an NHWC node needs.
    fn nchw_input(&mut self, id: XnnValueId) -> Result<ValueId, ImportError> {
        let x = self.input(id)?;
        self.as_nchw(id, &x)
    }

    /// Value `id`, held as `x`, as the NCHW value an NHWC node needs.
    fn as_nchw(&mut self, id: XnnValueId, x: &Laid) -> Result<ValueId, ImportError> {
        if x.perm.len() != 4 {
            return Err(self.invalid(format!(
                "value {id} has rank {} where a 4-D NHWC tensor is needed",
                x.perm.len()
            )));
        }
        self.materialize(x, &NHWC_OF_NCHW)
    }

    /// A window's size, stride or dilation, given as its two fields with
    /// their schema names; each must be at least 1.
    fn positive(&self, [height, width]: [(&str, u32); 2]) -> Result<Pair, ImportError> {
        for (field, value) in [height, width] {
            if value == 0 {
                return Err(self.invalid(format!("field `{field}` is 0; it must be positive")));
            }
        }
        Ok([height.1.into(), width.1.into()])
    }

    /// Pads an NCHW value by XNNPACK's (top, right, bottom, left) padding.
    /// Returns the value and the symmetric padding left to the op: all of
    /// it when the op can take it (`implicit`), else none after an explicit
    /// pad with `value`.
    fn pad_spatial(
        &mut self,
        x: ValueId,
        [top, right, bottom, left]: [u32; 4],
        value: f64,
        implicit: bool,
    ) -> Result<(ValueId, Pair), ImportError> {
        if implicit && top == bottom && left == right {
            return Ok((x, [u64::from(top), u64::from(left)]));
        }
        let op = Op::Pad(Pad {
            input: x,
            before: vec![0, 0, i64::from(top), i64::from(left)],
            after: vec![0, 0, i64::from(bottom), i64::from(right)],
            mode: PadMode::Constant(Scalar::Float(value)),
        });
        Ok((self.emit(op)?, [0, 0]))
    }

    fn convolution(
        &mut self,
        t: &ConvNode,
        kind: ConvKind,
        range: ClampRange,
    ) -> Result<(), ImportError> {
        self.check_flags(t.flags, 0)?;
        let quantized = self.quantization(t.output).is_some();
        let ids = ProductIds {
            input: t.input,
            filter: t.filter,
            bias: t.bias,
            output: t.output,
        };
        // The filter's dimension of output channels.
        let output_channels = match kind {
            ConvKind::Depthwise => 3,
            ConvKind::Ordinary | ConvKind::Transposed => 0,
        };
        let product = self.product(ids, output_channels)?;
        let (x, filter, bias) = (product.x, product.filter, product.bias);
        let x = self.as_nchw(t.input, &x)?;
        if filter.perm.len() != 4 {
            return Err(self.invalid(format!("a rank-{} filter", filter.perm.len())));
        }
        // XNNPACK's filters are [O, KH, KW, I/groups], depthwise ones
        // [1, KH, KW, O]; the IR's are [O, I/groups, KH, KW], transposed
        // ones [I, O/groups, KH, KW].
        let filter_shape = self.xnn_shape(&filter);
        let kernel = [
            Dim::Fixed(t.kernel_height.into()),
            Dim::Fixed(t.kernel_width.into()),
        ];
        if filter_shape[1..3] != kernel[..] {
            return Err(self.invalid(format!(
                "a {}x{} kernel with a filter of shape {}",
                t.kernel_height,
                t.kernel_width,
                show(&filter_shape)
            )));
        }
        let groups = u64::from(t.groups);
        if groups == 0 {
            return Err(self.invalid("field `groups` is 0; it must be positive"));
        }
        let weight = self.materialize(&filter, &identity(4))?;
        let weight = match kind {
            ConvKind::Ordinary => self.emit(permute(weight, vec![0, 3, 1, 2]))?,
            ConvKind::Depthwise => self.emit(permute(weight, vec![3, 0, 1, 2]))?,
            ConvKind::Transposed => self.transposed_weight(weight, &filter_shape, groups)?,
        };
        self.check_groups(
            t,
            kind,
            input_channels(&self.importer.graph.value(x).ty.shape),
            weight,
        )?;
        let bias = match bias {
            Some(bias) => Some(self.materialize(&bias, &identity(bias.perm.len()))?),
            None => None,
        };
        let padding = [
            t.padding_top,
            t.padding_right,
            t.padding_bottom,
            t.padding_left,
        ];
        let (input, padding, transposed) = match kind {
            ConvKind::Ordinary | ConvKind::Depthwise => {
                let (input, padding) = self.pad_spatial(x, padding, 0.0, true)?;
                (input, padding, None)
            }
            // A transposed convolution's padding crops its output.
            ConvKind::Transposed => {
                let [top, right, bottom, left] = padding;
                if top != bottom || left != right {
                    return Err(self.unsupported(format!(
                        "asymmetric padding (top {top}, right {right}, bottom {bottom}, left \
                         {left})"
                    )));
                }
                let adjustment = vec![t.adjustment_height.into(), t.adjustment_width.into()];
                (x, [top.into(), left.into()], Some(adjustment))
            }
        };
        let value = self.emit(Op::Convolution(Convolution {
            input,
            weight,
            bias,
            residual: None,
            stride: self
                .positive([
                    ("subsampling_height", t.subsampling_height),
                    ("subsampling_width", t.subsampling_width),
                ])?
                .to_vec(),
            padding: padding.to_vec(),
            dilation: self
                .positive([
                    ("dilation_height", t.dilation_height),
                    ("dilation_width", t.dilation_width),
                ])?
                .to_vec(),
            transposed,
            groups,
            // A quantized result is bounded as it is requantized.
            clamp: if quantized {
                ClampRange::default()
            } else {
                range
            },
            epilogue: None,
        }))?;
        let result = Laid {
            value,
            perm: NHWC_OF_NCHW.to_vec(),
        };
        if quantized {
            self.define_product(t.output, result, 1, product.accumulated, range)
        } else {
            self.define(t.output, result)
        }
    }

    /// Checks a convolution's `groups`, `group_input_channels` and
    /// `group_output_channels` against its NCHW input's channels and its
    /// weight in the IR's layout: `[O, I/groups, KH, KW]`, or `[I,
    /// O/groups, KH, KW]` for a transposed convolution.
    fn check_groups(
        &self,
        t: &ConvNode,
        kind: ConvKind,
        channels: Option<u64>,
        weight: ValueId,
    ) -> Result<(), ImportError> {
        let shape = &self.importer.graph.value(weight).ty.shape;
        let groups = u64::from(t.groups);
        let (group_inputs, outputs) = match kind {
            ConvKind::Ordinary | ConvKind::Depthwise => (shape[1].fixed(), shape[0].fixed()),
            ConvKind::Transposed => (
                shape[0].fixed().map(|inputs| inputs / groups),
                shape[1].fixed().map(|group_outputs| group_outputs * groups),
            ),
        };
        let fields = [
            (
                "group_input_channels",
                u64::from(t.group_input_channels),
                group_inputs,
                "the filter's input channels",
            ),
            (
                "groups",
                groups * u64::from(t.group_input_channels),
                channels,
                "the input's channels (with `group_input_channels`)",
            ),
            (
                "group_output_channels",
                groups * u64::from(t.group_output_channels),
                outputs,
                "the filter's output channels (with `groups`)",
            ),
        ];
        // In this order, each check blames the first field that disagrees
        // with the tensors, the others having agreed.
        for (field, declared, actual, what) in fields {
            if let Some(actual) = actual.filter(|&actual| actual != declared) {
                return Err(self.invalid(format!(
                    "field `{field}` gives {declared} for {what}, which are {actual}"
                )));
            }
        }
        Ok(())
    }

    /// A transposed convolution's XNNPACK filter `[O, KH, KW, I/groups]`
    /// (the output channels of each group together) as the IR's weight
    /// `[I, O/groups, KH, KW]`.
    fn transposed_weight(
        &mut self,
        filter: ValueId,
        filter_shape: &[Dim],
        groups: u64,
    ) -> Result<ValueId, ImportError> {
        if groups == 1 {
            return self.emit(permute(filter, vec![3, 0, 1, 2]));
        }
        let sizes = filter_shape
            .iter()
            .map(|dim| dim.fixed())
            .collect::<Option<Vec<u64>>>();
        let [outputs, height, width, group_inputs] = match sizes.as_deref() {
            Some(&[outputs, height, width, group_inputs]) if outputs % groups == 0 => {
                [outputs, height, width, group_inputs]
            }
            _ => {
                return Err(self.invalid(format!(
                    "a filter of shape {} for {groups} groups",
                    show(filter_shape)
                )));
            }
        };
        let group_outputs = outputs / groups;
        let split = self.emit_given(
            reshape(filter),
            fixed(&[groups, group_outputs, height, width, group_inputs]),
        )?;
        let moved = self.emit(permute(split, vec![0, 4, 1, 2, 3]))?;
        self.emit_given(
            reshape(moved),
            fixed(&[groups * group_inputs, group_outputs, height, width]),
        )
    }

    /// A pooling node's NCHW input, its window and its stride (ExecuTorch
    /// sets the keep-dims flag, which 2-D pooling ignores).
    fn pooling_window(&mut self, t: &Pooling2d) -> Result<(ValueId, Pair, Pair), ImportError> {
        self.check_flags(t.flags, FLAG_KEEP_DIMS)?;
        let x = self.nchw_input(t.input)?;
        let kernel = self.positive([
            ("pooling_height", t.pooling_height),
            ("pooling_width", t.pooling_width),
        ])?;
        let stride = self.positive([
            ("stride_height", t.stride_height),
            ("stride_width", t.stride_width),
        ])?;
        Ok((x, kernel, stride))
    }

    /// Average pooling, over the window's elements inside the input
    /// (XNNPACK leaves padding out of the count).
    fn average_pooling(&mut self, t: &Pooling2d, range: ClampRange) -> Result<(), ImportError> {
        let (x, kernel, stride) = self.pooling_window(t)?;
        let [top, right, bottom, left] = [
            t.padding_top,
            t.padding_right,
            t.padding_bottom,
            t.padding_left,
        ];
        let padding = [u64::from(top), u64::from(left)];
        if top != bottom
            || left != right
            || 2 * padding[0] > kernel[0]
            || 2 * padding[1] > kernel[1]
        {
            return Err(self.unsupported(format!(
                "padding (top {top}, right {right}, bottom {bottom}, left {left}) that is \
                 asymmetric or more than half the {}x{} window",
                kernel[0], kernel[1]
            )));
        }
        let op = Op::AvgPool2d(AvgPool2d {
            input: x,
            kernel,
            stride,
            padding,
            ceil_mode: false,
            count_include_pad: false,
        });
        let result = Laid {
            value: self.emit(op)?,
            perm: NHWC_OF_NCHW.to_vec(),
        };
        self.define_bounded(t.output, result, range)
    }

    /// Bilinear resizing as XNNPACK computes it: each output pixel's source
    /// position (in f32, from pixel centers unless the flags ask for
    /// aligned corners or TensorFlow's legacy mode), clamped into the
    /// image, and the four pixels around it interpolated along W, then H.
    fn resize_bilinear(&mut self, t: &StaticResizeBilinear2d) -> Result<(), ImportError> {
        self.check_flags(t.flags, FLAG_ALIGN_CORNERS | FLAG_TENSORFLOW_LEGACY_MODE)?;
        let corners = t.flags & (FLAG_ALIGN_CORNERS | FLAG_TENSORFLOW_LEGACY_MODE) != 0;
        let align = t.flags & FLAG_ALIGN_CORNERS != 0;
        let x = self.nchw_input(t.input)?;
        let shape = self.importer.graph.value(x).ty.shape.clone();
        let (Some(height), Some(width)) = (shape[2].fixed(), shape[3].fixed()) else {
            return Err(self.unsupported(format!("resizing an image of size {}", show(&shape))));
        };
        let axes = [
            (height, t.new_height, "new_height"),
            (width, t.new_width, "new_width"),
        ];
        let mut sources = Vec::new();
        for (input, output, field) in axes {
            if output == 0 || input >= 1 << 24 || output >= 1 << 24 {
                return Err(self.invalid(format!(
                    "a resize of {input} pixels to `{field}` {output}: both must be positive \
                     and below 2^24"
                )));
            }
            sources.push(resize_sources(input, output.into(), align, corners));
        }
        let (rows, columns) = (&sources[0], &sources[1]);
        let row_shape = [rows.weights.len() as u64, 1];
        let column_shape = [1, columns.weights.len() as u64];
        let row_index = [&rows.low, &rows.high].map(|r| self.index_constant(r, &row_shape));
        let column_index =
            [&columns.low, &columns.high].map(|c| self.index_constant(c, &column_shape));
        let mut lines = Vec::new();
        for row in row_index {
            let [left, right] = column_index.map(|column| {
                self.emit(Op::Index(Index {
                    input: x,
                    indices: vec![row, column],
                    dims: vec![2, 3],
                    wrap: false,
                }))
            });
            let alpha = self.f32_constant(&columns.weights, &column_shape);
            lines.push(self.lerp(left?, right?, alpha)?);
        }
        let alpha = self.f32_constant(&rows.weights, &row_shape);
        let value = self.lerp(lines[0], lines[1], alpha)?;
        self.define(
            t.output,
            Laid {
                value,
                perm: NHWC_OF_NCHW.to_vec(),
            },
        )
    }

    /// `a + (b - a) * alpha`, XNNPACK's interpolation.
    fn lerp(&mut self, a: ValueId, b: ValueId, alpha: ValueId) -> Result<ValueId, ImportError> {
        let difference = self.emit(binary(BinaryOp::Sub, b, a))?;
        let step = self.emit(binary(BinaryOp::Mul, difference, alpha))?;
        self.emit(binary(BinaryOp::Add, a, step))
    }

    /// A constant i64 tensor of `shape`.
    fn index_constant(&mut self, values: &[i64], shape: &[u64]) -> ValueId {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let ty = TensorType {
            dtype: DType::I64,
            ..contiguous(fixed(shape))
        };
        self.importer
            .graph
            .add_value(ValueData::constant(ty, Cow::Owned(bytes)))
    }

    /// A constant f32 tensor of `shape`.
    fn f32_constant(&mut self, values: &[f32], shape: &[u64]) -> ValueId {
        let bytes = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.importer.graph.add_value(ValueData::constant(
            contiguous(fixed(shape)),
            Cow::Owned(bytes),
        ))
    }

    fn max_pooling(&mut self, t: &Pooling2d, range: ClampRange) -> Result<(), ImportError> {
        let (x, kernel, stride) = self.pooling_window(t)?;
        let padding = [
            t.padding_top,
            t.padding_right,
            t.padding_bottom,
            t.padding_left,
        ];
        // The IR's pooling pads by at most half the window.
        let implicit =
            2 * u64::from(padding[0]) <= kernel[0] && 2 * u64::from(padding[1]) <= kernel[1];
        let (x, padding) = self.pad_spatial(x, padding, f64::NEG_INFINITY, implicit)?;
        let op = Op::MaxPool2d(MaxPool2d {
            input: x,
            kernel,
            stride,
            padding,
            dilation: self.positive([
                ("dilation_height", t.dilation_height),
                ("dilation_width", t.dilation_width),
            ])?,
            ceil_mode: false,
        });
        let values = self.emit_outputs(op, &[DType::F32, DType::I64], None)?[0];
        let result = Laid {
            value: values,
            perm: NHWC_OF_NCHW.to_vec(),
        };
        self.define_bounded(t.output, result, range)
    }

    fn transpose(&mut self, t: &StaticTranspose) -> Result<(), ImportError> {
        self.check_flags(t.flags, 0)?;
        self.check_num_dims(t.num_dims, "perm", t.perm.len())?;
        let x = self.input(t.input)?;
        let perm: Vec<usize> = t.perm.iter().map(|&d| d as usize).collect();
        if !is_permutation(&perm, x.perm.len()) {
            return Err(self.invalid(format!(
                "{perm:?} is not a permutation of {} dimensions",
                x.perm.len()
            )));
        }
        // tensor.permute(perm) = value.permute(x.perm).permute(perm).
        let composed = perm.iter().map(|&dim| x.perm[dim]).collect();
        self.define(
            t.output,
            Laid {
                value: x.value,
                perm: composed,
            },
        )
    }

    fn reshape(&mut self, t: &StaticReshape) -> Result<(), ImportError> {
        self.check_flags(t.flags, 0)?;
        self.check_num_dims(t.num_dims, "new_shape", t.new_shape.len())?;
        let x = self.input(t.input)?;
        let declared = self.dims(self.value(t.output)?);
        let new_shape: Vec<u64> = t.new_shape.iter().map(|&size| u64::from(size)).collect();
        // A 0 in the new shape is the dimension XNNPACK infers.
        let consistent = new_shape.len() == declared.len()
            && new_shape
                .iter()
                .zip(&declared)
                .all(|(&size, &dim)| size == 0 || size == dim);
        if !consistent {
            return Err(self.invalid(format!(
                "a reshape to {new_shape:?} whose output is declared {declared:?}"
            )));
        }
        let source = self.materialize(&x, &identity(x.perm.len()))?;
        let source_ty = self.importer.graph.value(source).ty.clone();
        let shape = match source_ty.fixed_shape() {
            Some(sizes) => {
                if byte_count(&sizes) != byte_count(&declared) {
                    return Err(self.invalid(format!("cannot reshape {source_ty} to {declared:?}")));
                }
                fixed(&declared)
            }
            None if byte_count(&declared).is_none() => {
                return Err(self.invalid(format!("a reshape to {declared:?}")));
            }
            // The dimension XNNPACK infers is the source's one dynamic
            // dimension when the others hold as many elements on both
            // sides; else dynamic dimensions carry over where the bounds
            // line up.
            None => match self.inferred_dimension(&source_ty.shape, &new_shape) {
                Some((index, dim)) => {
                    let mut shape = fixed(&declared);
                    shape[index] = dim;
                    shape
                }
                None => {
                    self.importer
                        .symbols
                        .view_type(&source_ty, contiguous(fixed(&declared)))
                        .shape
                }
            },
        };
        let value = self.emit_given(reshape(source), shape)?;
        self.define(
            t.output,
            Laid {
                value,
                perm: identity(declared.len()),
            },
        )
    }

    /// Where a reshape's new shape leaves one dimension for XNNPACK to
    /// infer (a 0) and the source has one dynamic dimension, the other
    /// dimensions holding as many elements on both sides: that position
    /// and the source's dynamic dimension, which it is at every size.
    fn inferred_dimension(&self, source: &[Dim], new_shape: &[u64]) -> Option<(usize, Dim)> {
        let source = self.importer.symbols.resolve_shape(source);
        let mut zeros = (new_shape.iter().enumerate())
            .filter_map(|(index, &size)| (size == 0).then_some(index));
        let (index, None) = (zeros.next()?, zeros.next()) else {
            return None;
        };
        let mut dynamic = source.iter().filter(|dim| dim.fixed().is_none());
        let (&dim, None) = (dynamic.next()?, dynamic.next()) else {
            return None;
        };
        let kept = byte_count(
            &source
                .iter()
                .filter_map(|dim| dim.fixed())
                .collect::<Vec<_>>(),
        )?;
        let given = byte_count(
            &(new_shape.iter().copied())
                .filter(|&size| size != 0)
                .collect::<Vec<_>>(),
        )?;
        (kept == given).then_some((index, dim))
    }

    fn slice(&mut self, t: &StaticSlice) -> Result<(), ImportError> {
        self.check_flags(t.flags, 0)?;
        self.check_num_dims(t.num_dims, "offsets", t.offsets.len())?;
        self.check_num_dims(t.num_dims, "sizes", t.sizes.len())?;
        let x = self.input(t.input)?;
        let offsets: Vec<u64> = t.offsets.iter().map(|&offset| u64::from(offset)).collect();
        let sizes: Vec<u64> = t.sizes.iter().map(|&size| u64::from(size)).collect();
        let shape = self.xnn_shape(&x);
        if offsets.len() != shape.len() || sizes.len() != shape.len() {
            return Err(self.invalid(format!(
                "a slice of {} offsets and {} sizes of a rank-{} tensor",
                offsets.len(),
                sizes.len(),
                shape.len()
            )));
        }
        let mut value = x.value;
        for (axis, ((&start, &size), &dim)) in offsets.iter().zip(&sizes).zip(&shape).enumerate() {
            if start == 0 && Dim::Fixed(size) == dim {
                continue;
            }
            let stored = x.perm[axis];
            let mut out = self
                .importer
                .symbols
                .resolve_shape(&self.importer.graph.value(value).ty.shape);
            out[stored] = Dim::Fixed(size);
            let op = Op::Slice(Slice {
                input: value,
                dim: stored,
                start: Dim::Fixed(start),
                step: 1,
            });
            value = self.emit_given(op, out)?;
        }
        self.define(
            t.output,
            Laid {
                value,
                perm: x.perm,
            },
        )
    }

    fn constant_pad(&mut self, t: &StaticConstantPad) -> Result<(), ImportError> {
        self.check_flags(t.flags, 0)?;
        let x = self.input(t.input)?;
        let pre: Vec<i64> = t.pre_paddings.iter().map(|&pad| i64::from(pad)).collect();
        let post: Vec<i64> = t.post_paddings.iter().map(|&pad| i64::from(pad)).collect();
        let rank = x.perm.len();
        if pre.len() != rank || post.len() != rank {
            return Err(self.invalid(format!(
                "paddings of {} and {} dims for a rank-{rank} tensor",
                pre.len(),
                post.len()
            )));
        }
        let (mut before, mut after) = (vec![0; rank], vec![0; rank]);
        for (axis, &stored) in x.perm.iter().enumerate() {
            before[stored] = pre[axis];
            after[stored] = post[axis];
        }
        let value = self.emit(Op::Pad(Pad {
            input: x.value,
            before,
            after,
            mode: PadMode::Constant(Scalar::Float(f64::from(t.padding_value))),
        }))?;
        self.define(
            t.output,
            Laid {
                value,
                perm: x.perm,
            },
        )
    }

    fn concatenate(&mut self, t: &Concatenate) -> Result<(), ImportError> {
        self.check_flags(t.flags, 0)?;
        let parts = t
            .inputs
            .iter()
            .map(|&id| self.input(id))
            .collect::<Result<Vec<_>, _>>()?;
        let layout = parts[0].perm.clone();
        let axis = t.axis as usize;
        if axis >= layout.len() || parts.iter().any(|part| part.perm.len() != layout.len()) {
            return Err(self.invalid(format!(
                "concatenation along axis {axis} of tensors of ranks {:?}",
                parts.iter().map(|part| part.perm.len()).collect::<Vec<_>>()
            )));
        }
        let inputs = parts
            .iter()
            .map(|part| self.materialize(part, &layout))
            .collect::<Result<Vec<_>, _>>()?;
        let value = self.emit(Op::Cat(Cat {
            inputs,
            dim: layout[axis],
        }))?;
        self.define(
            t.output,
            Laid {
                value,
                perm: layout,
            },
        )
    }

    /// Writes every external output into the call's argument.
    fn outputs(&mut self) -> Result<(), ImportError> {
        for tensor in self.graph.values() {
            if !tensor.external_output {
                continue;
            }
            let id = tensor.id;
            let laid = self
                .tensors
                .get(&id)
                .cloned()
                .ok_or_else(|| self.invalid(format!("output value {id} is never written")))?;
            let index = self.argument(tensor)?;
            let laid = match self.quantization(id) {
                // The integers the grid's points stand for, which the copy
                // into the argument converts exactly.
                Some(quantization) => {
                    let integers = quantization.integer.dtype();
                    let argument = self.importer.declared_type(TensorRef::Method(index))?;
                    if Some(argument.dtype) != integers {
                        return Err(self.invalid(format!(
                            "value {id} holds {}, but the argument it names is {argument}",
                            show_integers(integers)
                        )));
                    }
                    let centred = self.integers(laid.value, quantization)?;
                    let zero_point = f64::from(quantization.zero_point);
                    Laid {
                        value: self.emit(scalar(BinaryOp::Add, centred, zero_point))?,
                        perm: laid.perm,
                    }
                }
                None => laid,
            };
            let file_tensor = self.importer.tensor(index)?;
            let order: Vec<usize> = file_tensor
                .dim_order
                .iter()
                .map(|&d| usize::from(d))
                .collect();
            let laid = if order.len() == laid.perm.len() {
                laid
            } else {
                // A rank-0 output is declared with dims [1], for one: the
                // bytes take the argument's physical sizes.
                let physical: Vec<u64> = order
                    .iter()
                    .map(|&dim| file_tensor.sizes[dim] as u64)
                    .collect();
                let contiguous_value = self.materialize(&laid, &identity(laid.perm.len()))?;
                Laid {
                    value: self.emit_given(reshape(contiguous_value), fixed(&physical))?,
                    perm: identity(order.len()),
                }
            };
            // The argument holds the tensor in its dim order: the argument
            // is tensor.permute(order^-1) = value.permute(dims).
            let dims = permutation_between(&laid.perm, &order);
            let stored = self
                .importer
                .symbols
                .resolve_shape(&self.importer.graph.value(laid.value).ty.shape);
            let shape: Shape = dims.iter().map(|&dim| stored[dim]).collect();
            let moves = dims != identity(dims.len());
            let output = self.importer.write(
                TensorRef::Method(index),
                Some(&shape),
                if moves { "permute" } else { "copy" },
                0,
            )?;
            let output_ty = &self.importer.graph.value(output).ty;
            let converts = output_ty.dtype != DType::F32;
            let retarget = !moves
                && self.created.contains(&laid.value)
                && output_ty.is_contiguous()
                && !converts;
            if retarget {
                self.retarget(laid.value, output);
            } else if converts && moves {
                // Copies convert; the permutation happens in f32 first.
                let permuted = self.emit_given(permute(laid.value, dims), shape)?;
                self.importer.push(copy(permuted), vec![output]);
            } else if moves {
                self.importer.push(permute(laid.value, dims), vec![output]);
            } else {
                self.importer.push(copy(laid.value), vec![output]);
            }
        }
        Ok(())
    }

    /// Makes the node that wrote `value` (a value of this translation, of
    /// the output's type) write the call's output in its place, instead of
    /// copying it there: every later read of `value` reads the output.
    fn retarget(&mut self, value: ValueId, output: ValueId) {
        let graph = &mut self.importer.graph;
        for writer in graph.writers(value) {
            let outputs = graph
                .node(writer)
                .outputs()
                .iter()
                .map(|&written| if written == value { output } else { written })
                .collect();
            graph.set_node_outputs(writer, outputs);
        }
        graph.replace_reads(value, output);
        self.importer.record_written(output);
        for laid in self.tensors.values_mut() {
            if laid.value == value {
                laid.value = output;
            }
        }
        self.created.remove(&value);
    }
}

/// `f(x)`.
fn unary(op: UnaryOp, x: ValueId) -> Op {
    Elementwise::unary(op, x)
}

/// `a op b`.
fn binary(op: BinaryOp, a: ValueId, b: ValueId) -> Op {
    Elementwise::op(Func::Binary { op, alpha: None }, vec![a, b])
}

/// `x op value`.
fn scalar(op: BinaryOp, x: ValueId, value: f64) -> Op {
    let scalar = Scalar::Float(value);
    Elementwise::op(Func::BinaryScalar { op, scalar }, vec![x])
}

/// `x` clamped to the bounds that are given.
fn clamp(x: ValueId, min: Option<f64>, max: Option<f64>) -> Op {
    let func = Func::Clamp {
        min: min.map(Scalar::Float),
        max: max.map(Scalar::Float),
    };
    Elementwise::op(func, vec![x])
}

fn copy(input: ValueId) -> Op {
    Op::Copy(Copy { input })
}

fn reshape(input: ValueId) -> Op {
    Op::Reshape(Reshape { input })
}

fn permute(input: ValueId, dims: Vec<usize>) -> Op {
    Op::Permute(Permute { input, dims })
}

/// The operands of a one-input node whose table has more fields.
fn node_1x1(input: XnnValueId, output: XnnValueId, flags: u32) -> Node1x1 {
    Node1x1 {
        input,
        output,
        flags,
    }
}

/// The range a node clamps its output to (XNNPACK's output min and max;
/// infinite bounds are none).
fn output_range(range: Option<OutputRange>) -> ClampRange {
    let bound = |value: f32, unbounded: f32| (value != unbounded).then_some(Real(f64::from(value)));
    range.map_or_else(ClampRange::default, |range| ClampRange {
        min: bound(range.min, f32::NEG_INFINITY),
        max: bound(range.max, f32::INFINITY),
    })
}

/// The channels of an NCHW shape, when they are fixed.
fn input_channels(shape: &Shape) -> Option<u64> {
    shape.get(1).and_then(|dim| dim.fixed())
}

/// Along one dimension of a bilinear resize, the two input positions each
/// output position interpolates and the weight of the second.
#[derive(Debug, PartialEq)]
struct ResizeSources {
    low: Vec<i64>,
    high: Vec<i64>,
    weights: Vec<f32>,
}

/// XNNPACK's source positions of a bilinear resize from `input` to `output`
/// pixels (both positive, below 2^24), computed in f32 as it does: from the
/// corners (`corners`: aligned corners, or TensorFlow's legacy mode, whose
/// scale is the plain ratio) or else from pixel centers, clamped into the
/// input.
fn resize_sources(input: u64, output: u64, align: bool, corners: bool) -> ResizeSources {
    let adjustment = u64::from(align && output != 1);
    let scale = (input - adjustment) as f32 / (output - adjustment) as f32;
    let last = input - 1;
    let offset = 0.5 * scale - 0.5;
    let mut sources = ResizeSources {
        low: Vec::new(),
        high: Vec::new(),
        weights: Vec::new(),
    };
    for position in 0..output {
        let source = if corners {
            position as f32 * scale
        } else {
            (position as f32 * scale + offset).clamp(0.0, last as f32)
        };
        let low = (source as u64).min(last);
        sources.low.push(low as i64);
        sources.high.push((low + 1).min(last) as i64);
        sources.weights.push(source - low as f32);
    }
    sources
}

/// The bytes of an f32 tensor of these sizes, unless they overflow.
fn byte_count(sizes: &[u64]) -> Option<u64> {
    sizes
        .iter()
        .try_fold(DType::F32.size() as u64, |count, &size| {
            count.checked_mul(size)
        })
}

fn identity(rank: usize) -> Vec<usize> {
    (0..rank).collect()
}

/// The dims `d` with `value.permute(perm) = y.permute(layout)` for
/// `y = value.permute(d)`: `d[i] = perm[layout^-1[i]]`.
fn permutation_between(perm: &[usize], layout: &[usize]) -> Vec<usize> {
    let mut inverse = vec![0; layout.len()];
    for (position, &dim) in layout.iter().enumerate() {
        inverse[dim] = position;
    }
    inverse.iter().map(|&position| perm[position]).collect()
}

fn fixed(sizes: &[u64]) -> Shape {
    sizes.iter().map(|&size| Dim::Fixed(size)).collect()
}

fn contiguous(shape: Shape) -> TensorType {
    TensorType {
        dtype: DType::F32,
        dim_order: (0..shape.len() as u8).collect(),
        shape,
    }
}

/// The element type of a quantized value's integers, as a message names it.
fn show_integers(dtype: Option<DType>) -> String {
    dtype.map_or_else(
        || "integers".to_string(),
        |dtype| format!("{dtype} integers"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_between_layouts() {
        // An NHWC tensor held as its NCHW value, wanted as NCHW: no permute.
        assert_eq!(
            permutation_between(&NHWC_OF_NCHW, &NHWC_OF_NCHW),
            identity(4)
        );
        // ... wanted as a plain NHWC value: the NCHW value permuted to NHWC.
        assert_eq!(
            permutation_between(&NHWC_OF_NCHW, &identity(4)),
            NHWC_OF_NCHW
        );
        // A plain NHWC tensor wanted as NCHW: NHWC permuted back.
        assert_eq!(
            permutation_between(&identity(4), &NHWC_OF_NCHW),
            [0, 3, 1, 2]
        );
        // Composition is not symmetric: perm [1,2,0] held, wanted as [2,0,1].
        assert_eq!(permutation_between(&[1, 2, 0], &[2, 0, 1]), [2, 0, 1]);
    }

    /// Source positions worked out by hand from XNNPACK's rules.
    #[test]
    fn resize_source_positions() {
        let sources = |low: &[i64], high: &[i64], weights: &[f32]| ResizeSources {
            low: low.to_vec(),
            high: high.to_vec(),
            weights: weights.to_vec(),
        };
        // Pixel centers: 2 -> 4 reads -0.25 (clamped to 0), 0.25, 0.75 and
        // 1.25 (clamped to 1).
        assert_eq!(
            resize_sources(2, 4, false, false),
            sources(&[0, 0, 0, 1], &[1, 1, 1, 1], &[0.0, 0.25, 0.75, 0.0])
        );
        // TensorFlow's legacy mode: 4 -> 8 reads 0, 0.5, ..., 3.5; the last
        // pixel has no right neighbour but itself.
        assert_eq!(
            resize_sources(4, 8, false, true),
            sources(
                &[0, 0, 1, 1, 2, 2, 3, 3],
                &[1, 1, 2, 2, 3, 3, 3, 3],
                &[0.0, 0.5, 0.0, 0.5, 0.0, 0.5, 0.0, 0.5]
            )
        );
        // Aligned corners: 3 -> 5 reads 0, 0.5, 1, 1.5, 2; to one pixel, the
        // first.
        assert_eq!(
            resize_sources(3, 5, true, true),
            sources(
                &[0, 0, 1, 1, 2],
                &[1, 1, 2, 2, 2],
                &[0.0, 0.5, 0.0, 0.5, 0.0]
            )
        );
        assert_eq!(
            resize_sources(3, 1, true, true),
            sources(&[0], &[1], &[0.0])
        );
    }
}
