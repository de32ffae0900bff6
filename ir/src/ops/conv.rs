//! Convolutions over one to three spatial dimensions, ordinary or
//! transposed, and 2-D pooling over NCHW tensors.

use super::attributes::{AttributeReader, AttributeWriter, FormError, OperandReader};
use super::fused::{Epilogue, read_steps, write_steps};
use super::linalg::ClampRange;
use super::one_input;
use super::{
    Expected, LayoutRule, OpDef, OpError, Outputs, ShapeContext, Slot, broadcast, dim_poly, fixed,
    floor_div_poly, keeps, keeps_input_type, one, poly_dim, shapes_of, term_of,
};
use crate::graph::ValueId;
use crate::op::Op;
use crate::symbolic::{Poly, SymOp, SymbolDef, Term};
use crate::types::{Dim, Shape, TensorType};

/// Two spatial extents: (height, width).
pub type Pair = [u64; 2];

/// A convolution of `input` `[N, C, *spatial]` (one to three spatial
/// dimensions) by `weight`, plus `bias` (one per output channel) when
/// present; the result is bounded by `clamp` (a fused ReLU or ReLU6), then
/// `residual` (a tensor of the output's type, a fused skip connection) is
/// added, then `epilogue`'s elementwise steps, when present, compute what
/// is stored from that (a fused requantization or activation). `stride`, `padding` and `dilation` hold one extent per spatial
/// dimension.
///
/// An ordinary convolution's weight is `[O, C/groups, *kernel]`; a
/// transposed one's (`transposed` holds its output padding, the extra size
/// at the end of each spatial dimension) is `[C, O/groups, *kernel]`: each
/// input element is spread over the output window it would have been
/// computed from, as the gradient of a convolution with respect to its
/// input is.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Convolution {
    pub input: ValueId,
    pub weight: ValueId,
    pub bias: Option<ValueId>,
    pub residual: Option<ValueId>,
    pub stride: Vec<u64>,
    pub padding: Vec<u64>,
    pub dilation: Vec<u64>,
    pub transposed: Option<Vec<u64>>,
    pub groups: u64,
    pub clamp: ClampRange,
    pub epilogue: Option<Epilogue>,
}

impl Convolution {
    /// The operands of the epilogue's steps (after the result, `in0`).
    pub fn epilogue_operands(&self) -> impl Iterator<Item = ValueId> + '_ {
        self.epilogue
            .iter()
            .flat_map(|epilogue| epilogue.operands.iter().copied())
    }

    /// The number of spatial dimensions.
    pub fn spatial_rank(&self) -> usize {
        self.stride.len()
    }

    /// The 2-D form of an ordinary convolution's stride, padding and
    /// dilation (for kernels that only know that case).
    pub fn as_2d(&self) -> Option<[Pair; 3]> {
        let pair = |values: &[u64]| <Pair>::try_from(values).ok();
        match self.transposed {
            None => Some([
                pair(&self.stride)?,
                pair(&self.padding)?,
                pair(&self.dilation)?,
            ]),
            Some(_) => None,
        }
    }
}

/// 2-D max pooling. Outputs: the maxima, and the flat index of each within
/// its plane (NaN wins, as in PyTorch).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MaxPool2d {
    pub input: ValueId,
    pub kernel: Pair,
    pub stride: Pair,
    pub padding: Pair,
    pub dilation: Pair,
    pub ceil_mode: bool,
}

/// 2-D average pooling.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AvgPool2d {
    pub input: ValueId,
    pub kernel: Pair,
    pub stride: Pair,
    pub padding: Pair,
    pub ceil_mode: bool,
    pub count_include_pad: bool,
}

fn attribute_error(name: &'static str, value: impl std::fmt::Debug, problem: String) -> OpError {
    OpError::Attribute {
        name,
        value: format!("{value:?}"),
        problem,
    }
}

/// Output size of a window op along one dimension.
pub fn pooled_size(
    input: u64,
    kernel: u64,
    stride: u64,
    padding: u64,
    dilation: u64,
    ceil_mode: bool,
) -> Result<u64, OpError> {
    if stride == 0 || dilation == 0 {
        return Err(attribute_error(
            if stride == 0 { "stride" } else { "dilation" },
            [stride, dilation],
            "stride and dilation must be positive".into(),
        ));
    }
    let span = dilation
        .checked_mul(kernel.max(1) - 1)
        .and_then(|extent| extent.checked_add(1));
    let padded = padding
        .checked_mul(2)
        .and_then(|both| both.checked_add(input));
    let (Some(span), Some(padded)) = (span, padded) else {
        return Err(attribute_error(
            "kernel",
            kernel,
            format!("a window of {kernel} (dilation {dilation}) padded by {padding} overflows"),
        ));
    };
    if padded < span {
        return Err(OpError::Attribute {
            name: "kernel",
            value: kernel.to_string(),
            problem: format!(
                "a window of {kernel} (dilation {dilation}, stride {stride}) does not fit an input of {input} padded by {padding}"
            ),
        });
    }
    let mut out = if ceil_mode {
        (padded - span).div_ceil(stride) + 1
    } else {
        (padded - span) / stride + 1
    };
    // A last window that starts in the right padding is dropped.
    if ceil_mode && (out - 1) * stride >= input + padding {
        out -= 1;
    }
    Ok(out)
}

/// The output size of a window op along a dimension of any size: fixed
/// when the input's is, else a symbol (the input's size must be at least
/// the window's span once padded, which is checked at run time).
pub fn pooled_dim(
    cx: &mut dyn ShapeContext,
    input: Dim,
    window: [u64; 4],
    ceil_mode: bool,
) -> Result<Dim, OpError> {
    let [kernel, stride, padding, dilation] = window;
    if let Dim::Fixed(size) = input {
        return pooled_size(size, kernel, stride, padding, dilation, ceil_mode).map(Dim::Fixed);
    }
    if stride == 0 || dilation == 0 {
        return Err(attribute_error(
            if stride == 0 { "stride" } else { "dilation" },
            [stride, dilation],
            "stride and dilation must be positive".into(),
        ));
    }
    let span = dilation
        .checked_mul(kernel.max(1) - 1)
        .and_then(|extent| extent.checked_add(1))
        .filter(|&span| i64::try_from(span).is_ok() && i64::try_from(padding).is_ok())
        .ok_or_else(|| {
            attribute_error(
                "kernel",
                kernel,
                format!("a window of {kernel} (dilation {dilation}) overflows"),
            )
        })?;
    let what = "a window op's output size";
    let size = dim_poly(cx, input)?;
    let padded = size.add(&Poly::constant(2 * padding as i64));
    let fits = term_of(
        cx,
        SymbolDef::Poly(padded.sub(&Poly::constant(span as i64))),
        what,
    )?;
    cx.require(SymbolDef::Op(SymOp::Le, vec![Term::int(0), fits]), &|| {
        format!(
            "an input of size {input} padded by {padding} is smaller than a window of \
                 {kernel} (dilation {dilation})"
        )
    })?;
    let rounding = if ceil_mode { stride as i64 - 1 } else { 0 };
    let windows = padded.sub(&Poly::constant(span as i64 - rounding));
    let out = floor_div_poly(cx, windows, stride as i64, what)?.add(&Poly::constant(1));
    if !ceil_mode {
        return poly_dim(cx, out, what);
    }
    // A last window that starts in the right padding is dropped.
    let last_start = out.sub(&Poly::constant(1)).scale(stride as i64);
    let last_start = term_of(cx, SymbolDef::Poly(last_start), what)?;
    let limit = term_of(
        cx,
        SymbolDef::Poly(size.add(&Poly::constant(padding as i64))),
        what,
    )?;
    let dropped = term_of(cx, SymbolDef::Op(SymOp::Le, vec![limit, last_start]), what)?;
    let fewer = term_of(cx, SymbolDef::Poly(out.sub(&Poly::constant(1))), what)?;
    let out = term_of(cx, SymbolDef::Poly(out), what)?;
    let chosen = term_of(
        cx,
        SymbolDef::Op(SymOp::Ite, vec![dropped, fewer, out]),
        what,
    )?;
    chosen.as_dim().ok_or_else(|| OpError::Symbolic {
        what,
        problem: format!("{chosen} is negative"),
    })
}

/// Output size of a transposed convolution along one dimension:
/// `(input - 1) * stride - 2 * padding + dilation * (kernel - 1) +
/// output_padding + 1`, which must be positive.
pub fn transposed_size(
    input: u64,
    kernel: u64,
    stride: u64,
    padding: u64,
    dilation: u64,
    output_padding: u64,
) -> Result<u64, OpError> {
    if stride == 0 || dilation == 0 {
        return Err(attribute_error(
            if stride == 0 { "stride" } else { "dilation" },
            [stride, dilation],
            "stride and dilation must be positive".into(),
        ));
    }
    if output_padding >= stride && output_padding >= dilation {
        return Err(attribute_error(
            "output_padding",
            output_padding,
            format!("must be smaller than the stride {stride} or the dilation {dilation}"),
        ));
    }
    let size = (i128::from(input) - 1) * i128::from(stride) - 2 * i128::from(padding)
        + i128::from(dilation) * (i128::from(kernel) - 1)
        + i128::from(output_padding)
        + 1;
    if size <= 0 || input == 0 {
        return Err(attribute_error(
            "padding",
            padding,
            format!(
                "leaves no output of a transposed convolution of an input of {input} by a kernel of {kernel} (stride {stride}, dilation {dilation})"
            ),
        ));
    }
    u64::try_from(size).map_err(|_| {
        attribute_error(
            "stride",
            stride,
            format!("gives an output of {size}, too large"),
        )
    })
}

fn pooled_shape(
    cx: &mut dyn ShapeContext,
    x: &[Dim],
    kernel: &Pair,
    stride: &Pair,
    padding: &Pair,
    dilation: &Pair,
    ceil_mode: bool,
) -> Result<Shape, OpError> {
    if x.len() != 4 {
        return Err(OpError::Shapes {
            what: "2-D pooling of an input that is not NCHW",
            shapes: vec![x.to_vec()],
        });
    }
    let mut shape = x[..2].to_vec();
    for axis in 0..2 {
        if kernel[axis] == 0 {
            return Err(attribute_error(
                "kernel",
                kernel,
                "kernel sizes must be positive".into(),
            ));
        }
        if padding[axis] * 2 > kernel[axis] {
            return Err(OpError::Attribute {
                name: "padding",
                value: format!("{padding:?}"),
                problem: format!("more than half the kernel {kernel:?}"),
            });
        }
        shape.push(pooled_dim(
            cx,
            x[2 + axis],
            [kernel[axis], stride[axis], padding[axis], dilation[axis]],
            ceil_mode,
        )?);
    }
    Ok(shape)
}

/// The output shape of `conv` of input `x` by weight `w`.
/// An ordinary convolution's input may have symbolic sizes (its channels
/// become the weight's); a transposed one's must be fixed.
fn convolution_shape(
    eq: &mut dyn ShapeContext,
    conv: &Convolution,
    x: &[Dim],
    w: &[Dim],
) -> Result<Shape, OpError> {
    let rank = conv.spatial_rank();
    let mismatch = |what| OpError::Shapes {
        what,
        shapes: vec![x.to_vec(), w.to_vec()],
    };
    if !(1..=3).contains(&rank) {
        return Err(attribute_error(
            "stride",
            &conv.stride,
            "a convolution has one to three spatial dimensions".into(),
        ));
    }
    let output_padding = conv.transposed.as_deref().unwrap_or(&[]);
    if conv.padding.len() != rank
        || conv.dilation.len() != rank
        || (conv.transposed.is_some() && output_padding.len() != rank)
    {
        return Err(attribute_error(
            "padding",
            (&conv.padding, &conv.dilation, output_padding),
            format!("padding, dilation and output padding need {rank} values, as the stride has"),
        ));
    }
    if x.len() != rank + 2 || w.len() != rank + 2 {
        return Err(mismatch(
            "convolution of an input and weight of other ranks than its spatial dimensions and 2",
        ));
    }
    let (w0, w1) = (
        fixed(w[0], "weight channels")?,
        fixed(w[1], "weight channels")?,
    );
    let groups = conv.groups;
    let channels = match x[1].fixed() {
        Some(channels) => channels,
        // A symbolic channel count becomes the weight's.
        None => match conv.transposed {
            None => w1.checked_mul(groups),
            Some(_) => Some(w0),
        }
        .filter(|&channels| eq.equate(x[1], Dim::Fixed(channels)).is_some())
        .ok_or(OpError::NotFixed {
            what: "input channels",
            dim: x[1],
        })?,
    };
    // Input channels per group and output channels.
    let (grouped, out_channels) = match conv.transposed {
        None => (w1, w0),
        Some(_) => (w0 / groups.max(1), w1.saturating_mul(groups)),
    };
    let splits = groups != 0
        && channels % groups == 0
        && out_channels % groups == 0
        && grouped == channels / groups
        && (conv.transposed.is_none() || w0 == channels);
    if !splits {
        return Err(OpError::Attribute {
            name: "groups",
            value: groups.to_string(),
            problem: format!(
                "do not split input {} and weight {}",
                super::show(x),
                super::show(w)
            ),
        });
    }
    let mut shape = vec![x[0], Dim::Fixed(out_channels)];
    for axis in 0..rank {
        let kernel = fixed(w[2 + axis], "a kernel dimension")?;
        if kernel == 0 {
            return Err(mismatch("convolution by a kernel of size 0"));
        }
        let (stride, padding, dilation) =
            (conv.stride[axis], conv.padding[axis], conv.dilation[axis]);
        shape.push(match conv.transposed {
            None => pooled_dim(eq, x[2 + axis], [kernel, stride, padding, dilation], false)?,
            Some(_) => Dim::Fixed(transposed_size(
                fixed(x[2 + axis], "a transposed convolution's spatial dimension")?,
                kernel,
                stride,
                padding,
                dilation,
                output_padding[axis],
            )?),
        });
    }
    Ok(shape)
}

impl OpDef for Convolution {
    fn name(&self) -> &'static str {
        "convolution"
    }

    /// The output keeps the input's type, and epilogue operands have it.
    fn element_types(
        &self,
        inputs: &[&TensorType],
        outputs: &[&TensorType],
    ) -> Result<(), OpError> {
        keeps(inputs, outputs, &[0])?;
        let Some(epilogue) = &self.epilogue else {
            return Ok(());
        };
        let output = outputs[0].dtype;
        if !output.is_float() {
            return Err(OpError::ElementType {
                what: "the output of a convolution with an epilogue",
                expected: "a float",
                found: output,
            });
        }
        let extra = &inputs[2..2 + epilogue.operands.len()];
        if let Some(operand) = extra.iter().find(|operand| operand.dtype != output) {
            return Err(OpError::ElementType {
                what: "a convolution's epilogue operand",
                expected: "of the output's type",
                found: operand.dtype,
            });
        }
        epilogue.check()
    }

    fn operands(&self) -> Vec<(Slot, ValueId)> {
        let mut operands = vec![
            (Slot::Positional, self.input),
            (Slot::Positional, self.weight),
        ];
        operands.extend(
            self.epilogue_operands()
                .map(|value| (Slot::Positional, value)),
        );
        operands.extend(self.bias.map(|bias| (Slot::Named("bias"), bias)));
        operands.extend(
            self.residual
                .map(|residual| (Slot::Named("residual"), residual)),
        );
        operands
    }

    fn operands_mut(&mut self) -> Vec<&mut ValueId> {
        let mut operands = vec![&mut self.input, &mut self.weight];
        operands.extend(
            self.epilogue
                .iter_mut()
                .flat_map(|epilogue| epilogue.operands.iter_mut()),
        );
        operands.extend(self.bias.as_mut());
        operands.extend(self.residual.as_mut());
        operands
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let (x, w) = (&inputs[0].shape, &inputs[1].shape);
        let mismatch = |what| OpError::Shapes {
            what,
            shapes: shapes_of(inputs),
        };
        let shape = convolution_shape(eq, self, x, w)?;
        let extra = self.epilogue_operands().count();
        for operand in &inputs[2..2 + extra] {
            let shapes = [operand.shape.as_slice(), shape.as_slice()];
            if broadcast(&shapes, eq)? != shape {
                return Err(mismatch(
                    "convolution with an epilogue operand that does not broadcast to its output",
                ));
            }
        }
        let mut rest = inputs[2 + extra..].iter();
        if self.bias.is_some()
            && rest.next().map(|bias| bias.shape.as_slice()) != Some(&shape[1..2])
        {
            return Err(mismatch(
                "convolution with a bias not one per output channel",
            ));
        }
        if self.residual.is_some() && rest.next().map(|residual| &residual.shape) != Some(&shape) {
            return Err(mismatch(
                "convolution with a residual of another shape than its output",
            ));
        }
        one(shape)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("stride", &self.stride);
        out.ints("padding", &self.padding);
        out.ints("dilation", &self.dilation);
        if let Some(output_padding) = &self.transposed {
            out.ints("output_padding", output_padding);
        }
        out.int("groups", self.groups);
        self.clamp.write(out);
        if let Some(epilogue) = &self.epilogue {
            write_steps(out, "epilogue", &epilogue.steps);
        }
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::Convolution
    }

    /// The clamp comes before the residual and the epilogue's steps, so
    /// none can join once either has.
    fn clamp_epilogue(&mut self) -> Option<&mut ClampRange> {
        (self.residual.is_none() && self.epilogue.is_none()).then_some(&mut self.clamp)
    }

    /// The residual comes before the epilogue's steps.
    fn residual_epilogue(&mut self) -> Option<&mut Option<ValueId>> {
        self.epilogue.is_none().then_some(&mut self.residual)
    }
}

impl OpDef for MaxPool2d {
    fn name(&self) -> &'static str {
        "max_pool2d"
    }

    keeps_input_type!();

    one_input!();

    fn outputs(&self) -> Outputs {
        Outputs::Exactly(2)
    }

    fn layout(&self) -> LayoutRule {
        LayoutRule::Pooling
    }

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        let shape = pooled_shape(
            eq,
            &inputs[0].shape,
            &self.kernel,
            &self.stride,
            &self.padding,
            &self.dilation,
            self.ceil_mode,
        )?;
        Ok(vec![Expected::Shape(shape.clone()), Expected::Shape(shape)])
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("kernel", &self.kernel);
        out.ints("stride", &self.stride);
        out.ints("padding", &self.padding);
        out.ints("dilation", &self.dilation);
        out.bool("ceil_mode", self.ceil_mode);
    }
}

impl OpDef for AvgPool2d {
    fn name(&self) -> &'static str {
        "avg_pool2d"
    }

    keeps_input_type!();

    one_input!();

    fn infer(
        &self,
        inputs: &[&TensorType],
        _outputs: usize,
        eq: &mut dyn ShapeContext,
    ) -> Result<Vec<Expected>, OpError> {
        one(pooled_shape(
            eq,
            &inputs[0].shape,
            &self.kernel,
            &self.stride,
            &self.padding,
            &[1, 1],
            self.ceil_mode,
        )?)
    }

    fn attributes(&self, out: &mut AttributeWriter) {
        out.ints("kernel", &self.kernel);
        out.ints("stride", &self.stride);
        out.ints("padding", &self.padding);
        out.bool("ceil_mode", self.ceil_mode);
        out.bool("count_include_pad", self.count_include_pad);
    }
}

pub(crate) fn parse(
    name: &str,
    operands: &mut OperandReader,
    attributes: &mut AttributeReader,
) -> Option<Result<Op, FormError>> {
    let parsed = (|| {
        Ok(Some(match name {
            "convolution" => Op::Convolution(Convolution {
                input: operands.positional("input")?,
                weight: operands.positional("weight")?,
                epilogue: match attributes.has("epilogue") {
                    true => Some(Epilogue {
                        steps: read_steps(attributes, "epilogue")?,
                        operands: operands.rest(),
                    }),
                    false => None,
                },
                bias: operands.named("bias"),
                residual: operands.named("residual"),
                stride: attributes.ints("stride")?,
                padding: attributes.ints("padding")?,
                dilation: attributes.ints("dilation")?,
                transposed: attributes.ints_if_present("output_padding")?,
                groups: attributes.int("groups")?,
                clamp: ClampRange::read(attributes)?,
            }),
            "max_pool2d" => Op::MaxPool2d(MaxPool2d {
                input: operands.positional("input")?,
                kernel: attributes.pair("kernel")?,
                stride: attributes.pair("stride")?,
                padding: attributes.pair("padding")?,
                dilation: attributes.pair("dilation")?,
                ceil_mode: attributes.bool("ceil_mode")?,
            }),
            "avg_pool2d" => Op::AvgPool2d(AvgPool2d {
                input: operands.positional("input")?,
                kernel: attributes.pair("kernel")?,
                stride: attributes.pair("stride")?,
                padding: attributes.pair("padding")?,
                ceil_mode: attributes.bool("ceil_mode")?,
                count_include_pad: attributes.bool("count_include_pad")?,
            }),
            _ => return Ok(None),
        }))
    })();
    parsed.transpose()
}
