"""Generate ptec's XNNPACK test fixtures with the public ExecuTorch exporter.

Each fixture is a tiny model lowered with ``XnnpackPartitioner``, so that its
work runs in XNNPACK delegate payloads: together they cover the XNNPACK node
types and layouts the shared corpus does not (elementwise nodes, slices, pads,
concatenations of three to five inputs, pooling whose ceil mode becomes
asymmetric padding, average pooling, grouped and depthwise-multiplier
convolutions, transposed convolutions, PReLU, bilinear resizing, matrix
products in their several forms, a channels-last input). Each has two test cases
whose expected outputs come from eager PyTorch.

The ``xnnpack-q8`` fixtures are quantized first (PT2E static int8 with the
XNNPACK quantizer, as ``gen_fixtures.py`` does), so that the node types run on
int8 values; their expected outputs come from the quantized model, which
computes in f32 between quantize and dequantize steps and so rounds a little
differently from XNNPACK's integer kernels. For each of them ``index.json``
records how far ExecuTorch's own runtime lands from those outputs in each test
case (``executorch_errors``) and the quantization step of each output
(``output_steps``), the scale of what one rounding difference costs. Two more
hold other element types: ``xnnpack-8da4w`` (torchao's dynamic int8 activations
with int4 grouped weights) and ``xnnpack-fp16``; their index entries record
ExecuTorch's error too.

Files are named ``<name>.<variant>.bpte``; the script also writes
``index.json`` (per file: description, input and output dtypes and shapes,
size, SHA-256, but for q8 files the operators left outside the delegates) and
``README.md``. Seeds are fixed per fixture, so a second run
writes byte-identical files.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_xnnpack_fixtures.py [OUT_DIR]      # default: tests/fixtures/xnnpack
    $ANCHOR_PY scripts/gen_xnnpack_fixtures.py --only NAME... # only these fixtures' files
"""

import hashlib
import json
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
from executorch.devtools.bundled_program.serialize import (
    deserialize_from_flatbuffer_to_bundled_program,
)
from executorch.runtime import Runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_fixtures  # noqa: E402  (sibling script)
from gen_fixtures import check_sizes  # noqa: E402
from gen_op_fixtures import (  # noqa: E402
    OpFixture,
    arguments,
    export_bundled,
    fn,
    index_entry,
    positive,
    randn,
    twice,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "xnnpack"
VARIANT = "xnnpack"
MAX_FIXTURE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 256 * 1024


class Conv(nn.Module):
    """A convolution followed by ReLU6 (fused into the XNNPACK node's range)."""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.conv = nn.Conv2d(*args, **kwargs)

    def forward(self, x):
        return F.hardtanh(self.conv(x), 0.0, 6.0)


class Residual(nn.Module):
    """``x + body(x)``."""

    def __init__(self, body: nn.Module):
        super().__init__()
        self.body = body

    def forward(self, x):
        return x + self.body(x)


class Products(nn.Module):
    """The matrix products XNNPACK takes: linear on a 3-D input without bias
    (flattened rows), mm with a weight (a transposed filter) and bmm."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(6, 5, bias=False)
        self.weight = nn.Parameter(torch.randn(6, 4))

    def forward(self, x, y):
        return self.linear(x), torch.mm(x[0], self.weight), torch.bmm(x, y)


class ChannelsLast(nn.Module):
    """A convolution of a channels-last input, then an elementwise op."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.sigmoid(self.conv(x))


class ConvPool(nn.Module):
    """Convolutions of each kind and the pooling between them, then a linear."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.grouped = nn.Conv2d(8, 4, 3, padding=2, dilation=2, groups=2)
        self.linear = nn.Linear(4, 3)

    def forward(self, x):
        x = F.relu(self.conv(x))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        x = F.hardtanh(self.depthwise(x), 0.0, 6.0)
        x = F.adaptive_avg_pool2d(self.grouped(x), 1).flatten(1)
        return self.linear(x)


class Elementwise(nn.Module):
    """Quantized add, mul and cat (with and without a fused ReLU, one add
    broadcasting a slice), around a hardswish XNNPACK computes in f32."""

    def forward(self, x, y):
        a = x + y[:, :1]
        b = F.relu(a * y)
        c = F.hardswish(F.relu(x + b))
        return torch.cat([a, c * x], dim=1)


class Rows(nn.Module):
    """A linear without bias on a rank-3 input (rows flattened) with a fused
    ReLU, then a linear with bias."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(6, 5, bias=False)
        self.second = nn.Linear(5, 4)

    def forward(self, x):
        return self.second(F.relu(self.first(x)))


class ConvTranspose(nn.Module):
    """Transposed convolutions: with output padding, a bias and a fused ReLU;
    grouped and dilated without a bias."""

    def __init__(self):
        super().__init__()
        self.padded = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.grouped = nn.ConvTranspose2d(4, 6, 3, stride=2, groups=2, dilation=2, bias=False)

    def forward(self, x):
        return F.relu(self.padded(x)), self.grouped(x)


class QuantizedConvTranspose(nn.Module):
    """The transposed convolutions XNNPACK's quantizer annotates (groups of
    1): with output padding, a bias and a fused ReLU; dilated without a
    bias."""

    def __init__(self):
        super().__init__()
        self.padded = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1)
        self.dilated = nn.ConvTranspose2d(4, 3, 2, stride=2, dilation=2, bias=False)

    def forward(self, x):
        return F.relu(self.padded(x)), self.dilated(x)


class PRelu(nn.Module):
    """PReLU with a slope per channel after a convolution, and with one
    slope for every channel."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.per_channel = nn.PReLU(4)
        self.shared = nn.PReLU()
        with torch.no_grad():
            self.per_channel.weight.copy_(torch.tensor([0.25, -0.5, 1.5, 0.0]))

    def forward(self, x):
        return self.per_channel(self.conv(x)), self.shared(x)


class KeywordSpotting(nn.Module):
    """A small keyword-spotting CNN over a spectrogram: convolutions, average
    pooling and a linear classifier."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(1, 8, 3, padding=1)
        self.second = nn.Conv2d(8, 8, 3, padding=1)
        self.classifier = nn.Linear(8 * 2 * 3, 4)

    def forward(self, x):
        x = F.avg_pool2d(F.relu(self.first(x)), 2)
        x = F.avg_pool2d(F.relu(self.second(x)), 2)
        return self.classifier(x.flatten(1))


class Heads(nn.Module):
    """Self-attention over 4 heads of a linear layer's result, merged back."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 16)

    def forward(self, x):
        batch, length, _ = x.shape
        heads = self.linear(x).view(batch, -1, 4, 4).transpose(1, 2)
        attended = F.scaled_dot_product_attention(heads, heads, heads)
        return attended.transpose(1, 2).reshape(batch, length, 16)


class PoolBetween(nn.Module):
    """Inception's pooling branch: an average pooling that counts its
    padding, which XNNPACK's does not, runs on the int8 values of a result
    that a convolution in the delegate also reads, so the delegates before
    and after it exchange those integers with the program."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 8, 3, padding=1)
        self.direct = nn.Conv2d(8, 4, 1)
        self.pooled = nn.Conv2d(8, 4, 1)

    def forward(self, x):
        x = F.relu(self.first(x))
        pooled = F.avg_pool2d(x, 3, stride=1, padding=1)
        return torch.cat([F.relu(self.direct(x)), F.relu(self.pooled(pooled))], 1)


def channels_last(*shape) -> torch.Tensor:
    return randn(*shape).to(memory_format=torch.channels_last)


FIXTURES = [
    OpFixture(
        "unary",
        "unary",
        "abs, neg, floor, ceil, sqrt, exp, log, sin, cos of float32 [3,5] (positive inputs for sqrt and log)",
        fn(
            lambda x, p: (
                torch.abs(x),
                torch.neg(x),
                torch.floor(x),
                torch.ceil(x),
                torch.sqrt(p),
                torch.exp(x),
                torch.log(p),
                torch.sin(x),
                torch.cos(x),
            )
        ),
        twice(lambda: (randn(3, 5) * 3.0, positive(3, 5))),
    ),
    OpFixture(
        "binary_activations",
        "binary",
        "maximum, minimum, leaky_relu(0.1), elu, hardtanh(-0.5, 0.5) and x - y * 2 (broadcast) of float32 [2,3,4]",
        fn(
            lambda x, y: (
                torch.maximum(x, y),
                torch.minimum(x, y),
                F.leaky_relu(x, 0.1),
                F.elu(x),
                F.hardtanh(x, -0.5, 0.5),
                x - y[0] * 2.0,
            )
        ),
        twice(lambda: (randn(2, 3, 4), randn(2, 3, 4))),
    ),
    OpFixture(
        "slice_pad_cat",
        "slice",
        "slices, a constant pad with 0.5, and cat of 3, 4 and 5 inputs of float32 [2,6,4]",
        fn(
            lambda x: (
                x[:, 1:4] * 2.0,
                F.pad(x, (1, 2, 0, 1), value=0.5) + 1.0,
                torch.cat([x, x * 2.0, x * 3.0], dim=1),
                torch.cat([x, x + 1.0, x + 2.0, x + 3.0], dim=2),
                torch.cat([x, x - 1.0, x - 2.0, x - 3.0, x - 4.0], dim=0),
            )
        ),
        twice(lambda: (randn(2, 6, 4),)),
    ),
    OpFixture(
        "max_pool_ceil",
        "max_pool2d",
        "max_pool2d(3, stride 2, ceil_mode) and max_pool2d(3, stride 2, padding 1) of float32 [1,2,7,6]",
        fn(
            lambda x: (
                F.max_pool2d(x, 3, stride=2, ceil_mode=True),
                F.max_pool2d(x, 3, stride=2, padding=1),
            )
        ),
        twice(lambda: (randn(1, 2, 7, 6),)),
    ),
    OpFixture(
        "conv_grouped",
        "convolution",
        "Conv2d(4, 6, 3, stride 2, groups 2, no bias) + ReLU6, float32 [1,4,7,7]",
        lambda: Conv(4, 6, 3, stride=2, groups=2, bias=False),
        twice(lambda: (randn(1, 4, 7, 7) * 3.0,)),
    ),
    OpFixture(
        "conv_depthwise_multiplier",
        "convolution",
        "Conv2d(3, 6, 3, groups 3, dilation 2, padding 2) + ReLU6: depthwise with 2 outputs per channel, float32 [2,3,6,6]",
        lambda: Conv(3, 6, 3, groups=3, dilation=2, padding=2),
        twice(lambda: (randn(2, 3, 6, 6) * 3.0,)),
    ),
    OpFixture(
        "products",
        "linear",
        "linear without bias on [2,3,6], mm with a [6,4] weight, bmm of [2,3,6] and [2,6,3]",
        Products,
        twice(lambda: (randn(2, 3, 6), randn(2, 6, 3))),
    ),
    OpFixture(
        "channels_last",
        "convolution",
        "Conv2d(3, 4, 3, padding 1) and sigmoid of a channels-last float32 [1,3,5,5] input",
        ChannelsLast,
        twice(lambda: (channels_last(1, 3, 5, 5),)),
    ),
    OpFixture(
        "avg_pool",
        "avg_pool2d",
        "avg_pool2d(2), and avg_pool2d(3, stride 2, padding 1) counting only the input's elements, of float32 [1,3,7,6]",
        fn(
            lambda x: (
                F.avg_pool2d(x, 2),
                F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
            )
        ),
        twice(lambda: (randn(1, 3, 7, 6),)),
    ),
    OpFixture(
        "conv_transpose",
        "convolution",
        "ConvTranspose2d(4, 6, 3, stride 2, padding 1, output_padding 1) + ReLU, and ConvTranspose2d(4, 6, 3, stride 2, groups 2, dilation 2, no bias), float32 [1,4,4,3]",
        ConvTranspose,
        twice(lambda: (randn(1, 4, 4, 3),)),
    ),
    OpFixture(
        "prelu",
        "prelu",
        "PReLU(4) (slopes 0.25, -0.5, 1.5, 0) after Conv2d(3, 4, 1), and PReLU() of float32 [1,3,5,6]",
        PRelu,
        twice(lambda: (randn(1, 3, 5, 6),)),
    ),
    OpFixture(
        "resize_bilinear",
        "upsample_bilinear2d",
        "bilinear interpolation of float32 [1,2,5,7] to 11x4, to 3x3, and by 2 with aligned corners",
        fn(
            lambda x: (
                F.interpolate(x, size=(11, 4), mode="bilinear"),
                F.interpolate(x, size=(3, 3), mode="bilinear"),
                F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=True),
            )
        ),
        twice(lambda: (randn(1, 2, 5, 7),)),
    ),
    OpFixture(
        "heads_dynamic",
        "heads",
        "Linear(16,16) of float32 [1,n,16], split into 4 heads of 4 ([1,n,4,4]), self-attention, "
        "merged back, n dynamic up to 32: XNNPACK's reshapes leave the dynamic length to infer",
        lambda: Heads(),
        lambda: [(randn(1, 12, 16),), (randn(1, 5, 16),)],
        dynamic_shapes=({1: torch.export.Dim("n", min=2, max=32)},),
    ),
]


Q8_FIXTURES = [
    gen_fixtures.Fixture(
        "conv_pool",
        "Conv2d(3,8,3,s2,p1)+ReLU, max_pool2d(3,s2,p1), depthwise Conv2d+ReLU6, Conv2d(8,4,3,groups 2,dilation 2), adaptive_avg_pool2d(1), Linear(4,3) of [1,3,12,12]",
        ConvPool,
        twice(lambda: (randn(1, 3, 12, 12),)),
        ("xnnpack-q8",),
    ),
    gen_fixtures.Fixture(
        "elementwise",
        "x + y[:, :1], relu(a * y), hardswish(relu(x + b)), cat of a and c * x, float32 [1,4,5,5] inputs",
        Elementwise,
        twice(lambda: (randn(1, 4, 5, 5), randn(1, 4, 5, 5))),
        ("xnnpack-q8",),
    ),
    gen_fixtures.Fixture(
        "rows",
        "Linear(6,5,no bias)+ReLU on [2,3,6], then Linear(5,4)",
        Rows,
        twice(lambda: (randn(2, 3, 6),)),
        ("xnnpack-q8",),
    ),
    gen_fixtures.Fixture(
        "keyword_spotting",
        "Conv2d(1,8,3,p1)+ReLU, avg_pool2d(2), Conv2d(8,8,3,p1)+ReLU, avg_pool2d(2), Linear(24,4) of a [1,1,8,12] spectrogram",
        KeywordSpotting,
        twice(lambda: (randn(1, 1, 8, 12),)),
        ("xnnpack-q8",),
    ),
    gen_fixtures.Fixture(
        "pool_between",
        "Conv2d(3,8,3,p1)+ReLU, then Conv2d(8,4,1)+ReLU of it and of its avg_pool2d(3, stride 1, "
        "padding 1) counting the padding (outside XNNPACK, on int8), concatenated, of [1,3,6,6]: "
        "delegates exchanging int8 tensors",
        PoolBetween,
        twice(lambda: (randn(1, 3, 6, 6),)),
        ("xnnpack-q8",),
    ),
    gen_fixtures.Fixture(
        "conv_transpose",
        "ConvTranspose2d(4, 6, 3, stride 2, padding 1, output_padding 1) + ReLU, and ConvTranspose2d(4, 3, 2, stride 2, dilation 2, no bias), of [1,4,5,4]",
        QuantizedConvTranspose,
        twice(lambda: (randn(1, 4, 5, 4),)),
        ("xnnpack-q8",),
    ),
]


def quantize_8da4w(model: nn.Module) -> nn.Module:
    """torchao's 8da4w: int8 activations quantized per row at run time, int4
    weights with a scale per group of 32 inputs."""
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import Int8DynamicActivationIntxWeightConfig, quantize_

    quantize_(
        model,
        Int8DynamicActivationIntxWeightConfig(weight_dtype=torch.int4, weight_granularity=PerGroup(32)),
    )
    return model


def quantize_qd8(model: nn.Module, example: tuple) -> nn.Module:
    """PT2E dynamic int8, as XNNPACK's quantizer gives it with ``is_dynamic``:
    activations quantized per row at run time, weights per output channel."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from gen_real_models import Quantized
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    config = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)
    module = prepare_pt2e(torch.export.export(model.eval(), example).module(), XNNPACKQuantizer().set_global(config))
    module(*example)
    return Quantized(convert_pt2e(module))


# Fixtures of other element types, by variant: each file records ExecuTorch's
# own error on its test cases too.
TYPED_FIXTURES = [
    (
        "xnnpack-8da4w",
        OpFixture(
            "linear_8da4w",
            "linear",
            "8da4w Linear(64,32)+ReLU then Linear(32,8) on float32 [2,3,64]: int8 rows quantized at run time, int4 weights in groups of 32 with bf16 scales",
            lambda: quantize_8da4w(nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))),
            twice(lambda: (randn(2, 3, 64),)),
        ),
    ),
    (
        "xnnpack-qd8",
        OpFixture(
            "conv_qd8",
            "convolution",
            "PT2E dynamic int8 Conv2d(3,8,3,stride 2)+Hardswish then Conv2d(8,4,1) on float32 [1,3,6,6]: each "
            "convolution's input quantized per row (per pixel, channels-last) at run time, the "
            "convert's result declared in NCHW order",
            lambda: quantize_qd8(
                nn.Sequential(nn.Conv2d(3, 8, 3, stride=2), nn.Hardswish(), nn.Conv2d(8, 4, 1)), (randn(1, 3, 6, 6),)
            ),
            twice(lambda: (randn(1, 3, 6, 6),)),
        ),
    ),
    (
        "xnnpack-fp16",
        OpFixture(
            "linear",
            "linear",
            "Linear(8,4) in float16 on float16 [2,8]",
            lambda: nn.Linear(8, 4).half(),
            twice(lambda: (randn(2, 8, dtype=torch.float16),)),
        ),
    ),
    (
        "xnnpack-fp16",
        OpFixture(
            "mlp",
            "linear",
            "Linear(32,32)+ReLU then Linear(32,32) and a residual add in float16 on float16 [4,32]: "
            "values inside the graph are float16, each node's result rounded",
            lambda: Residual(nn.Sequential(nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 32))).half(),
            twice(lambda: (randn(4, 32, dtype=torch.float16),)),
        ),
    ),
]


def bundled_tensor(value) -> torch.Tensor:
    """A float tensor of a bundled program's test case."""
    tensor = value.val
    dtype = {5: torch.float16, 6: torch.float32}[int(tensor.scalar_type)]
    return torch.frombuffer(bytearray(bytes(tensor.data)), dtype=dtype).reshape(list(tensor.sizes))


def executorch_errors(data: bytes) -> list[float]:
    """Per test case, the largest difference between ExecuTorch's outputs (its
    runtime runs the XNNPACK delegate) and the expected ones."""
    bundled = deserialize_from_flatbuffer_to_bundled_program(data)
    method = Runtime.get().load_program(bytes(bundled.program)).load_method("forward")
    errors = []
    for case in bundled.method_test_suites[0].test_cases:
        outputs = method.execute([bundled_tensor(value) for value in case.inputs])
        differences = [
            (got.float() - bundled_tensor(want).float()).abs().max().item()
            for got, want in zip(outputs, case.expected_outputs)
        ]
        errors.append(max(differences))
    return errors


def output_steps(quantized: nn.Module) -> list[float]:
    """The scale of the dequantization that produces each output."""
    dequantize = torch.ops.quantized_decomposed.dequantize_per_tensor.default
    output = next(node for node in quantized.graph.nodes if node.op == "output")
    steps = []
    for node in output.args[0]:
        if node.target != dequantize:
            raise ValueError(f"output {node} is not dequantized")
        steps.append(float(node.args[1]))
    return steps


def q8_entry(fixture, data: bytes, cases, reference: nn.Module) -> dict:
    return {
        "variant": "xnnpack-q8",
        "description": fixture.description,
        "inputs": gen_fixtures.describe_inputs(fixture, cases[0]),
        "test_cases": len(cases),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "executorch_errors": executorch_errors(data),
        "output_steps": output_steps(reference),
    }


def write_readme(out_dir: Path, index: dict) -> None:
    lines = [
        "# XNNPACK fixtures",
        "",
        "Tiny models lowered with `XnnpackPartitioner` by `scripts/gen_xnnpack_fixtures.py` with the",
        "public ExecuTorch 1.5.1 exporter (torch 2.14.0), in fp32 (`.xnnpack.bpte`), after PT2E static",
        "int8 quantization (`.xnnpack-q8.bpte`), after torchao's 8da4w dynamic quantization",
        "(`.xnnpack-8da4w.bpte`), after PT2E dynamic int8 quantization (`.xnnpack-qd8.bpte`) and in",
        "fp16 (`.xnnpack-fp16.bpte`, which ptec reports unsupported).",
        "They cover the XNNPACK node types and layouts the shared",
        "corpus does not; each holds two test cases whose expected outputs come from eager PyTorch (for",
        "q8, the quantized model). `index.json` lists each file's description, input and output dtypes",
        "and shapes, size and SHA-256, the operators left outside the delegates (but for q8 files), and",
        "for quantized and fp16 files ExecuTorch's own error on each test case (with the quantization",
        "step of each output for q8 files); `ptec inspect` shows the node types of each delegate.",
        "",
        "Regenerate them from the repository root (deterministic: fixed seeds per fixture):",
        "",
        "    $ANCHOR_PY scripts/gen_xnnpack_fixtures.py",
        "",
        "or only some fixtures (every variant of each), leaving the others' files and entries as they are:",
        "",
        "    $ANCHOR_PY scripts/gen_xnnpack_fixtures.py --only NAME...",
        "",
        "| file | description | bytes |",
        "|---|---|---|",
    ]
    for name, entry in index.items():
        lines.append(f"| `{name}` | {entry['description']} | {entry['bytes']} |")
    (out_dir / "README.md").write_text("\n".join(lines) + "\n")


def jobs():
    """Every fixture file, in the order a full run writes them: its name and
    how to export it (the bytes and the index entry)."""

    def plain(spec):
        def export():
            data, cases, outputs, operators = export_bundled(spec, [XnnpackPartitioner()], VARIANT)
            return data, index_entry(spec, data, cases, outputs, operators, VARIANT)

        return f"{spec.name}.{VARIANT}.bpte", spec.name, export

    def typed(variant, spec):
        def export():
            data, cases, outputs, operators = export_bundled(spec, [XnnpackPartitioner()], VARIANT)
            entry = index_entry(spec, data, cases, outputs, operators, variant)
            entry["executorch_errors"] = executorch_errors(data)
            return data, entry

        return f"{spec.name}.{variant}.bpte", spec.name, export

    def q8(fixture):
        def export():
            data, cases, reference = gen_fixtures.export_bundled(fixture, "xnnpack-q8")
            return data, q8_entry(fixture, data, cases, reference)

        return f"{fixture.name}.xnnpack-q8.bpte", fixture.name, export

    return (
        [plain(spec) for spec in FIXTURES]
        + [typed(variant, spec) for variant, spec in TYPED_FIXTURES]
        + [q8(fixture) for fixture in Q8_FIXTURES]
    )


def main() -> int:
    args = arguments(__doc__, DEFAULT_OUT_DIR, only=True)
    out_dir = args.out_dir
    every = jobs()
    unknown = sorted(set(args.only or ()) - {name for _, name, _ in every})
    if unknown:
        print(f"no such fixtures: {unknown}", file=sys.stderr)
        return 1

    # With --only (fixture names: every variant of each), the other files
    # and their index entries stay as they are.
    index = {}
    index_file = out_dir / "index.json"
    if args.only and index_file.exists():
        index = json.loads(index_file.read_text())
    for file_name, name, export in every:
        if args.only and name not in args.only:
            continue
        data, entry = export()
        (out_dir / file_name).write_bytes(data)
        index[file_name] = entry
        print(f"wrote {file_name} ({len(data)} bytes)", flush=True)
    # In the order a full run writes them.
    index = {file_name: index[file_name] for file_name, _, _ in every if file_name in index}

    with open(out_dir / "index.json", "w") as out:
        json.dump(index, out, indent=2, sort_keys=True)
        out.write("\n")
    write_readme(out_dir, index)

    problems = check_sizes(index, MAX_FIXTURE_BYTES, MAX_TOTAL_BYTES)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
