//! Vulkan delegates: the operator calls of a delegate's VkGraph become IR
//! nodes of the method, between the kernel calls around the DelegateCall, so
//! that they go through the same passes and code generator (which run them
//! on the CPU).
//!
//! A Vulkan operator call names a torch operator (`aten.add.Tensor`) and
//! lists every argument of its schema in order, then its output (a
//! ValueList when it returns several tensors). That is the ATen operator
//! table's convention less the `out` keyword, so most calls go through the
//! table (`aten.rs`) under the out variant's key, with the arguments the
//! out variant lacks (`dtype`, `layout`, `device`, ...) left out. The
//! graph's values become values of the method, appended after its own: the
//! graph's inputs and outputs are the DelegateCall's arguments, constants
//! borrow the payload's bytes, other tensors are the graph's own (their GPU
//! storage type and memory layout do not change the logical values), and
//! scalars and lists become the program's value kinds.
//!
//! Operators and value kinds ptec does not translate (SymInts, whose values
//! the GPU graph computes at run time) give
//! [`ImportError::UnsupportedVulkan`] with the operator's name and position
//! in the chain; graphs that contradict themselves give
//! [`ImportError::Invalid`].

use std::collections::HashMap;

use ptec_frontend::delegate::vulkan::{
    VkCall, VkDataType, VkTensor, VkValue, VkValueId, VulkanGraph,
};
use ptec_frontend::{ScalarType, ShapeDynamism, Tensor, TensorStorage, Value, ValueIndex};

use super::{Call, ImportError, Importer, aten};

/// How a Vulkan operator becomes IR.
enum Translate {
    /// Through the operator table entry `key`, whose arguments are the
    /// call's at `args`, then the call's outputs.
    Table {
        key: &'static str,
        args: &'static [usize],
    },
    /// By a translation of its own, over the call's arguments (outputs
    /// included).
    Own(fn(&mut Translation<'_, '_, '_>, &[ValueIndex]) -> Result<(), ImportError>),
}

const fn table(key: &'static str, args: &'static [usize]) -> Translate {
    Translate::Table { key, args }
}

/// Every Vulkan operator ptec translates.
const OPERATORS: &[(&str, Translate)] = &[
    ("aten.abs.default", table("aten::abs.out", &[0])),
    ("aten.neg.default", table("aten::neg.out", &[0])),
    ("aten.relu.default", table("aten::relu.out", &[0])),
    ("aten.sigmoid.default", table("aten::sigmoid.out", &[0])),
    ("aten.tanh.default", table("aten::tanh.out", &[0])),
    ("aten.exp.default", table("aten::exp.out", &[0])),
    ("aten.sqrt.default", table("aten::sqrt.out", &[0])),
    ("aten.rsqrt.default", table("aten::rsqrt.out", &[0])),
    ("aten.hardswish.default", table("aten::hardswish.out", &[0])),
    (
        "aten.hardsigmoid.default",
        table("aten::hardsigmoid.out", &[0]),
    ),
    (
        "aten.logical_not.default",
        table("aten::logical_not.out", &[0]),
    ),
    ("aten.gelu.default", table("aten::gelu.out", &[0, 1])),
    (
        "aten.hardtanh.default",
        table("aten::hardtanh.out", &[0, 1, 2]),
    ),
    ("aten.clamp.default", table("aten::clamp.out", &[0, 1, 2])),
    ("aten.add.Tensor", table("aten::add.out", &[0, 1, 2])),
    ("aten.sub.Tensor", table("aten::sub.out", &[0, 1, 2])),
    ("aten.mul.Tensor", table("aten::mul.out", &[0, 1])),
    ("aten.div.Tensor", table("aten::div.out", &[0, 1])),
    ("aten.eq.Scalar", table("aten::eq.Scalar_out", &[0, 1])),
    ("aten.le.Scalar", table("aten::le.Scalar_out", &[0, 1])),
    (
        "aten.logical_and.default",
        table("aten::logical_and.out", &[0, 1]),
    ),
    ("aten.where.self", table("aten::where.self_out", &[0, 1, 2])),
    (
        "aten._softmax.default",
        table("aten::_softmax.out", &[0, 1, 2]),
    ),
    (
        "aten._log_softmax.default",
        table("aten::_log_softmax.out", &[0, 1, 2]),
    ),
    (
        "aten.native_layer_norm.default",
        table("aten::native_layer_norm.out", &[0, 1, 2, 3, 4]),
    ),
    (
        "aten._native_batch_norm_legit_no_training.default",
        table(
            "aten::_native_batch_norm_legit_no_training.out",
            &[0, 1, 2, 3, 4, 5, 6],
        ),
    ),
    ("aten.mean.dim", table("aten::mean.out", &[0, 1, 2, 3])),
    ("aten.bmm.default", table("aten::bmm.out", &[0, 1])),
    (
        "aten.convolution.default",
        table("aten::convolution.out", &[0, 1, 2, 3, 4, 5, 6, 7, 8]),
    ),
    (
        "aten.max_pool2d_with_indices.default",
        table("aten::max_pool2d_with_indices.out", &[0, 1, 2, 3, 4, 5]),
    ),
    ("aten.clone.default", table("aten::clone.out", &[0, 1])),
    (
        "aten.view_copy.default",
        table("aten::view_copy.out", &[0, 1]),
    ),
    (
        "aten.permute_copy.default",
        table("aten::permute_copy.out", &[0, 1]),
    ),
    (
        "aten.select_copy.int",
        table("aten::select_copy.int_out", &[0, 1, 2]),
    ),
    (
        "aten.slice_copy.Tensor",
        table("aten::slice_copy.Tensor_out", &[0, 1, 2, 3, 4]),
    ),
    (
        "aten.squeeze_copy.dims",
        table("aten::squeeze_copy.dims_out", &[0, 1]),
    ),
    (
        "aten.unsqueeze_copy.default",
        table("aten::unsqueeze_copy.out", &[0, 1]),
    ),
    (
        "aten.expand_copy.default",
        table("aten::expand_copy.out", &[0, 1, 2]),
    ),
    // `full(size, fill_value, *, dtype, layout, device, pin_memory)`.
    ("aten.full.default", table("aten::full.out", &[0, 1])),
    // `full_like(self, fill_value, *, dtype, layout, device, pin_memory,
    // memory_format)`.
    (
        "aten.full_like.default",
        table("aten::full_like.out", &[0, 1, 6]),
    ),
    // `arange.start_step(start, end, step, *, dtype, layout, device,
    // pin_memory)`.
    (
        "aten.arange.start_step",
        table("aten::arange.start_out", &[0, 1, 2]),
    ),
    // `_to_dim_order_copy(self, *, dtype, layout, device, pin_memory,
    // non_blocking, dim_order)`.
    (
        "dim_order_ops._to_dim_order_copy.default",
        table("dim_order_ops::_to_dim_order_copy.out", &[0, 5, 6]),
    ),
    ("aten.linear.default", Translate::Own(linear)),
    ("et_vk.prepack.default", Translate::Own(prepack)),
    (
        "et_vk.conv_with_clamp.default",
        Translate::Own(conv_with_clamp),
    ),
    ("et_vk.rms_norm.default", Translate::Own(rms_norm)),
];

/// Translates one DelegateCall of a Vulkan delegate into IR nodes.
pub(super) fn import<'m, 'a>(
    importer: &mut Importer<'m, 'a>,
    graph: &'m VulkanGraph<'a>,
    args: &[ValueIndex],
) -> Result<(), ImportError> {
    let (inputs, outputs) = (&graph.input_ids, &graph.output_ids);
    if inputs.len() + outputs.len() != args.len() {
        return Err(importer.invalid(format!(
            "the Vulkan graph has {} inputs and {} outputs but the call passes {} arguments",
            inputs.len(),
            outputs.len(),
            args.len()
        )));
    }
    let instruction = importer.at.clone();
    let mut translation = Translation {
        importer,
        graph,
        instruction: instruction.clone(),
        values: HashMap::new(),
        node: 0,
        name: String::new(),
    };
    for (&id, &arg) in inputs.iter().chain(outputs).zip(args) {
        if translation.values.insert(id, arg).is_some() {
            return Err(translation.invalid(format!(
                "value {id} is more than one of the graph's inputs and outputs"
            )));
        }
    }
    for (node, call) in graph.chain.iter().enumerate() {
        translation.enter(node, call);
        if !OPERATORS.iter().any(|(name, _)| *name == translation.name) {
            return Err(translation.unsupported("the operator"));
        }
    }
    for (node, call) in graph.chain.iter().enumerate() {
        translation.enter(node, call);
        translation.call(call)?;
    }
    translation.importer.at = format!("{instruction}, Vulkan outputs");
    for (&id, &arg) in outputs.iter().zip(&args[inputs.len()..]) {
        if !translation.importer.values.contains_key(&arg) {
            return Err(
                translation.invalid(format!("output value {id} is never written by the graph"))
            );
        }
    }
    translation.importer.at = instruction;
    Ok(())
}

struct Translation<'i, 'm, 'a> {
    importer: &'i mut Importer<'m, 'a>,
    graph: &'m VulkanGraph<'a>,
    /// The DelegateCall's place in the method, for messages.
    instruction: String,
    /// The method value each graph value id has become, once it has one.
    values: HashMap<VkValueId, ValueIndex>,
    /// The operator call being translated: its position in the chain and
    /// its name.
    node: usize,
    name: String,
}

impl<'m, 'a> Translation<'_, 'm, 'a> {
    fn invalid(&self, problem: impl Into<String>) -> ImportError {
        self.importer.invalid(problem)
    }

    fn unsupported(&self, what: impl Into<String>) -> ImportError {
        ImportError::UnsupportedVulkan {
            method: self.importer.method.name.clone(),
            at: self.instruction.clone(),
            node: self.node,
            name: self.name.clone(),
            what: what.into(),
        }
    }

    fn enter(&mut self, node: usize, call: &VkCall) {
        self.node = node;
        self.name = call.name.clone();
        self.importer.at = format!("{}, Vulkan chain[{node}] ({})", self.instruction, self.name);
    }

    fn call(&mut self, call: &VkCall) -> Result<(), ImportError> {
        let Some((&output, operands)) = call.args.split_last() else {
            return Err(self.invalid("the operator call has no output"));
        };
        let mut args = operands
            .iter()
            .map(|&id| self.value(id))
            .collect::<Result<Vec<_>, _>>()?;
        let translate = OPERATORS
            .iter()
            .find(|(name, _)| *name == self.name)
            .map(|(_, translate)| translate)
            .ok_or_else(|| self.unsupported("the operator"))?;
        match translate {
            Translate::Table { key, args: take } => {
                let mut table_args = take
                    .iter()
                    .map(|&position| {
                        args.get(position).copied().ok_or_else(|| {
                            self.invalid(format!(
                                "argument {position} is missing ({} given)",
                                args.len()
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                table_args.extend(self.outputs(output)?);
                self.table(key, &table_args)
            }
            Translate::Own(translate) => {
                args.extend(self.outputs(output)?);
                translate(self, &args)
            }
        }
    }

    /// The outputs of a call: its output value, or the items of a
    /// ValueList when it returns several tensors.
    fn outputs(&mut self, id: VkValueId) -> Result<Vec<ValueIndex>, ImportError> {
        let index = self.value(id)?;
        Ok(match self.importer.value(index) {
            Value::TensorList(items) => items.clone(),
            _ => vec![index],
        })
    }

    /// Runs the operator table's entry `key` over method values `args`.
    fn table(&mut self, key: &str, args: &[ValueIndex]) -> Result<(), ImportError> {
        let mut call = Call {
            importer: self.importer,
            args,
        };
        aten::import_call(key, &mut call)
    }

    /// The method value graph value `id` stands for, made on first use.
    fn value(&mut self, id: VkValueId) -> Result<ValueIndex, ImportError> {
        if let Some(&index) = self.values.get(&id) {
            return Ok(index);
        }
        let translated = self.translate(id, self.graph.value(id))?;
        let index = self.importer.append(translated)?;
        self.values.insert(id, index);
        Ok(index)
    }

    fn translate(
        &mut self,
        id: VkValueId,
        value: &'m VkValue<'a>,
    ) -> Result<Value<'a>, ImportError> {
        Ok(match value {
            VkValue::Null => Value::Null,
            &VkValue::Int(value) => Value::Int(value),
            &VkValue::Double(value) => Value::Double(value),
            &VkValue::Bool(value) => Value::Bool(value),
            VkValue::String(value) => Value::String(value.clone()),
            VkValue::IntList(items) => {
                let boxed = items
                    .iter()
                    .map(|&item| self.importer.append(Value::Int(item)))
                    .collect::<Result<Vec<_>, _>>()?;
                Value::IntList(boxed)
            }
            VkValue::DoubleList(items) => Value::DoubleList(items.clone()),
            VkValue::BoolList(items) => Value::BoolList(items.clone()),
            VkValue::ValueList(items) => self.value_list(id, items)?,
            VkValue::Tensor(tensor) => Value::Tensor(self.tensor(id, tensor)?),
            VkValue::SymInt(_) => {
                return Err(self.unsupported(format!(
                    "value {id}, a SymInt (an integer the graph computes at run time)"
                )));
            }
            VkValue::Unknown(kind) => {
                return Err(self.invalid(format!("value {id} has unknown kind {kind}")));
            }
        })
    }

    /// A ValueList: tensors (a tuple of outputs, or a list argument) or
    /// integers (a size list). Its items are no lists themselves, which
    /// also keeps a list from containing itself.
    fn value_list(&mut self, id: VkValueId, items: &[VkValueId]) -> Result<Value<'a>, ImportError> {
        let values: Vec<&VkValue<'_>> = items.iter().map(|&item| self.graph.value(item)).collect();
        let indices = if values
            .iter()
            .all(|value| matches!(value, VkValue::Tensor(_)))
            || values.iter().all(|value| matches!(value, VkValue::Int(_)))
        {
            items
                .iter()
                .map(|&item| self.value(item))
                .collect::<Result<Vec<_>, _>>()?
        } else if values
            .iter()
            .any(|value| matches!(value, VkValue::SymInt(_)))
        {
            return Err(self.unsupported(format!(
                "value {id}, a list holding SymInts (integers the graph computes at run time)"
            )));
        } else {
            return Err(self.invalid(format!(
                "value {id} lists values of mixed kinds {:?}",
                values.iter().map(|value| value.kind()).collect::<Vec<_>>()
            )));
        };
        Ok(if matches!(values.first(), Some(VkValue::Int(_))) {
            Value::IntList(indices)
        } else {
            Value::TensorList(indices)
        })
    }

    /// A tensor of the graph: a constant, or a value an operator call
    /// writes.
    fn tensor(&self, id: VkValueId, tensor: &VkTensor<'a>) -> Result<Tensor<'a>, ImportError> {
        let dtype = scalar_type(tensor.datatype).ok_or_else(|| {
            self.unsupported(format!(
                "value {id}, a tensor of element type {}",
                tensor.datatype.name()
            ))
        })?;
        let sizes: Vec<i64> = tensor.dims.iter().map(|&size| i64::from(size)).collect();
        let dim_order = (0..sizes.len())
            .map(u8::try_from)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| self.invalid(format!("value {id} has {} dims", sizes.len())))?;
        let storage = match tensor.constant {
            Some(bytes) => {
                let expected = sizes
                    .iter()
                    .try_fold(dtype.element_size() as u64, |bytes, &size| {
                        bytes.checked_mul(size as u64)
                    });
                if expected != Some(bytes.len() as u64) {
                    return Err(self.invalid(format!(
                        "value {id} of sizes {sizes:?} has {} bytes of constant data",
                        bytes.len()
                    )));
                }
                TensorStorage::Constant(bytes)
            }
            None => TensorStorage::Unplanned,
        };
        Ok(Tensor {
            dtype,
            sizes,
            dim_order,
            dynamism: ShapeDynamism::Static,
            storage,
        })
    }

    /// A new tensor of the translation's own, for a value between the
    /// operator table entries one call becomes.
    fn temporary(&mut self, dtype: ScalarType, sizes: Vec<i64>) -> Result<ValueIndex, ImportError> {
        let dim_order = (0..sizes.len() as u8).collect();
        self.importer.append(Value::Tensor(Tensor {
            dtype,
            sizes,
            dim_order,
            dynamism: ShapeDynamism::Static,
            storage: TensorStorage::Unplanned,
        }))
    }

    /// A temporary of the type of tensor `like`.
    fn temporary_like(&mut self, like: ValueIndex) -> Result<ValueIndex, ImportError> {
        let tensor = self.importer.tensor(like)?;
        let (dtype, sizes) = (tensor.dtype, tensor.sizes.clone());
        self.temporary(dtype, sizes)
    }

    /// An Int or Bool value of the translation's own, for an argument the
    /// call does not list.
    fn constant(&mut self, value: Value<'a>) -> Result<ValueIndex, ImportError> {
        self.importer.append(value)
    }

    /// An IntList value of the translation's own.
    fn int_list(&mut self, items: &[i64]) -> Result<ValueIndex, ImportError> {
        let boxed = items
            .iter()
            .map(|&item| self.importer.append(Value::Int(item)))
            .collect::<Result<Vec<_>, _>>()?;
        self.importer.append(Value::IntList(boxed))
    }

    fn arg(&self, args: &[ValueIndex], position: usize) -> Result<ValueIndex, ImportError> {
        args.get(position).copied().ok_or_else(|| {
            self.invalid(format!(
                "argument {position} is missing ({} given)",
                args.len()
            ))
        })
    }
}

/// The element type of a Vulkan tensor.
fn scalar_type(datatype: VkDataType) -> Option<ScalarType> {
    Some(match datatype {
        VkDataType::Bool => ScalarType::Bool,
        VkDataType::Uint8 => ScalarType::Byte,
        VkDataType::Int8 => ScalarType::Char,
        VkDataType::Int32 => ScalarType::Int,
        VkDataType::Float16 => ScalarType::Half,
        VkDataType::Float32 => ScalarType::Float,
        VkDataType::Float64 => ScalarType::Double,
        VkDataType::Int64 => ScalarType::Long,
        VkDataType::Unset | VkDataType::Unknown(_) => return None,
    })
}

/// `et_vk.prepack(x)`: uploads a constant to the GPU; the value is `x`.
fn prepack(t: &mut Translation<'_, '_, '_>, args: &[ValueIndex]) -> Result<(), ImportError> {
    let (x, out) = (t.arg(args, 0)?, t.arg(args, 1)?);
    let memory_format = t.constant(Value::Null)?;
    t.table("aten::clone.out", &[x, memory_format, out])
}

/// `et_vk.conv_with_clamp(input, weight, bias, stride, padding, dilation,
/// transposed, output_padding, groups, output_min, output_max)`: a
/// convolution whose result is clamped (the `fuse_clamp` pass joins them
/// again).
fn conv_with_clamp(
    t: &mut Translation<'_, '_, '_>,
    args: &[ValueIndex],
) -> Result<(), ImportError> {
    let out = t.arg(args, 11)?;
    let convolved = t.temporary_like(out)?;
    let mut convolution = args
        .get(..9)
        .ok_or_else(|| t.invalid(format!("{} arguments given, 12 needed", args.len())))?
        .to_vec();
    convolution.push(convolved);
    t.table("aten::convolution.out", &convolution)?;
    let (min, max) = (t.arg(args, 9)?, t.arg(args, 10)?);
    t.table("aten::clamp.out", &[convolved, min, max, out])
}

/// `aten.linear(input, weight, bias)`: `input @ weight^T + bias` over the
/// last dimension, as a matrix product of the input's rows.
fn linear(t: &mut Translation<'_, '_, '_>, args: &[ValueIndex]) -> Result<(), ImportError> {
    let (x, weight, bias, out) = (
        t.arg(args, 0)?,
        t.arg(args, 1)?,
        t.arg(args, 2)?,
        t.arg(args, 3)?,
    );
    let input = t.importer.tensor(x)?;
    let (dtype, sizes) = (input.dtype, input.sizes.clone());
    let weight_sizes = t.importer.tensor(weight)?.sizes.clone();
    let out_sizes = t.importer.tensor(out)?.sizes.clone();
    let (&[outer, inner], Some((&features, leading))) =
        (weight_sizes.as_slice(), sizes.split_last())
    else {
        return Err(t.invalid(format!(
            "linear of an input of sizes {sizes:?} by a weight of sizes {weight_sizes:?}"
        )));
    };
    let rows = leading.iter().product::<i64>();
    let transposed = t.temporary(dtype, vec![inner, outer])?;
    t.table("aten::t_copy.out", &[weight, transposed])?;
    let matrix = if sizes.len() == 2 {
        x
    } else {
        let matrix = t.temporary(dtype, vec![rows, features])?;
        let shape = t.int_list(&[rows, features])?;
        t.table("aten::view_copy.out", &[x, shape, matrix])?;
        matrix
    };
    let product = if out_sizes.len() == 2 {
        out
    } else {
        t.temporary(dtype, vec![rows, outer])?
    };
    if matches!(t.importer.value(bias), Value::Null) {
        t.table("aten::mm.out", &[matrix, transposed, product])?;
    } else {
        let one = t.constant(Value::Int(1))?;
        t.table(
            "aten::addmm.out",
            &[bias, matrix, transposed, one, one, product],
        )?;
    }
    if product != out {
        let shape = t.int_list(&out_sizes)?;
        t.table("aten::view_copy.out", &[product, shape, out])?;
    }
    Ok(())
}

/// `et_vk.rms_norm(x, weight, eps)`: `x * rsqrt(mean(x^2, -1) + eps) *
/// weight`, as ExecuTorch's reference implementation computes it.
fn rms_norm(t: &mut Translation<'_, '_, '_>, args: &[ValueIndex]) -> Result<(), ImportError> {
    let (x, weight, eps, out) = (
        t.arg(args, 0)?,
        t.arg(args, 1)?,
        t.arg(args, 2)?,
        t.arg(args, 3)?,
    );
    let input = t.importer.tensor(x)?;
    let (dtype, sizes) = (input.dtype, input.sizes.clone());
    let mut reduced = sizes.clone();
    if let Some(last) = reduced.last_mut() {
        *last = 1;
    }
    let squares = t.temporary(dtype, sizes.clone())?;
    t.table("aten::mul.out", &[x, x, squares])?;
    let (last, keepdim, no_dtype) = (
        t.int_list(&[-1])?,
        t.constant(Value::Bool(true))?,
        t.constant(Value::Null)?,
    );
    let variance = t.temporary(dtype, reduced.clone())?;
    t.table(
        "aten::mean.out",
        &[squares, last, keepdim, no_dtype, variance],
    )?;
    let (shifted, one) = (
        t.temporary(dtype, reduced.clone())?,
        t.constant(Value::Int(1))?,
    );
    t.table("aten::add.Scalar_out", &[variance, eps, one, shifted])?;
    let scale = t.temporary(dtype, reduced)?;
    t.table("aten::rsqrt.out", &[shifted, scale])?;
    let normalized = t.temporary(dtype, sizes)?;
    t.table("aten::mul.out", &[x, scale, normalized])?;
    t.table("aten::mul.out", &[normalized, weight, out])
}
