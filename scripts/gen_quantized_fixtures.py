"""Generate ptec's quantize-family fixtures with the public ExecuTorch exporter.

PT2E-quantized programs lowered without a delegate (or with ops a delegate
leaves outside) call ExecuTorch's quantized kernels between their float
operators: ``quantized_decomposed::quantize_per_tensor.out``,
``dequantize_per_tensor.out``, their ``Tensor_out`` forms, the per-channel
and per-token ones, ``choose_qparams.Tensor_out`` and
``choose_qparams_per_token_asymmetric.out``. Each fixture here is a tiny
program calling some of them directly (with the values where their rounding,
clamping and parameter choice matter: ties, NaN, infinities, values beyond
int64, ranges too narrow for a scale), or a small model quantized with
``XNNPACKQuantizer`` through ``prepare_pt2e``/``convert_pt2e`` (static and
dynamic) and exported with no partitioner. The fixtures marked ``vulkan`` are
also lowered with ``VulkanPartitioner``, which must delegate every quantize
call; those dequantize integer inputs rather than their own quantized results,
since the partitioner folds a dequantize of a quantize into the float value
(so do PT2E models: their Vulkan graphs compute in float, or with the
``et_vk.q8ta_*`` operators, and are not written).

The expected outputs are ExecuTorch's own: each program (the portable one,
for a Vulkan variant, since this runtime has no Vulkan backend) is run on
ExecuTorch's runtime and its outputs are bundled, so that ptec is held to its
kernels bit for bit. Eager PyTorch's reference kernels differ on some inputs
(ExecuTorch converts a rounded value to int64 before clamping, so NaN, the
infinities and values beyond 2^63 give quant_min; PyTorch clamps first; and
ExecuTorch's choose_qparams ignores ``eps``): ``index.json`` records, per
file, the largest difference from PyTorch (``pytorch_difference``, in units
of the output: integer steps for quantized outputs).

A few programs with arguments ptec must refuse (naming the argument) are
written as ``<name>.refused.bpte``, with eager PyTorch's outputs.

Files are ``<name>.portable.bpte`` and ``<name>.vulkan.bpte``; the script
also writes ``index.json`` and ``README.md``. Seeds are fixed per fixture.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_quantized_fixtures.py [OUT_DIR]   # default: tests/fixtures/quantized
"""

import hashlib
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
    XNNPACKQuantizer,
    get_symmetric_quantization_config,
)
from executorch.devtools import BundledProgram
from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
from executorch.devtools.bundled_program.serialize import (
    serialize_from_bundled_program_to_flatbuffer,
)
from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower
from executorch.runtime import Runtime
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

import executorch.kernels.quantized  # noqa: F401  (registers quantized_decomposed's out variants)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fixtures import check_sizes, dtype_name, seed_for  # noqa: E402  (sibling script)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "quantized"
MAX_FIXTURE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 256 * 1024

Q = torch.ops.quantized_decomposed
NAN, INF = math.nan, math.inf

Inputs = tuple[torch.Tensor, ...]


@dataclass
class Fixture:
    name: str
    description: str
    make_model: Callable[[], nn.Module]
    make_cases: Callable[[], list[Inputs]]
    # Whether to write a Vulkan variant: VulkanPartitioner folds each
    # dequantize of a quantize into the float value (FoldQDQPass), so those
    # fixtures dequantize separate integer inputs instead.
    vulkan: bool


FIXTURES: list[Fixture] = []


def fixture(name, description, make_model, make_cases, vulkan=False) -> None:
    FIXTURES.append(Fixture(name, description, make_model, make_cases, vulkan))


class Fn(nn.Module):
    """A module whose forward is ``f``, with constant tensors as buffers."""

    def __init__(self, f, **buffers):
        super().__init__()
        self.f = f
        for name, value in buffers.items():
            self.register_buffer(name, value)

    def forward(self, *inputs):
        return self.f(self, *inputs)


def planted(base: torch.Tensor, values) -> torch.Tensor:
    """``base`` with its first elements replaced by ``values``."""
    flat = base.flatten().clone()
    flat[: len(values)] = torch.tensor(values, dtype=base.dtype)
    return flat.reshape(base.shape)


def randn(*shape, scale=1.0) -> torch.Tensor:
    return (torch.randn(*shape, dtype=torch.float64) * scale).to(torch.float32)


def integers(dtype, *shape, low=None, high=None) -> torch.Tensor:
    """Integers of ``dtype`` across its range (or ``[low, high]``)."""
    info = torch.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return torch.randint(low, high + 1, shape, dtype=torch.int64).to(dtype)


# ---------------------------------------------------------------- per tensor

SPECIALS = (NAN, INF, -INF, 1e30, -1e30, 9.3e18, -9.3e18, 0.0, -0.0)


fixture(
    "per_tensor_u8",
    "quantize_per_tensor of float32 [3,7] with NaN, infinities and values beyond int64 to uint8 "
    "(scale 0.05, zero point 3), and dequantize_per_tensor of uint8 [3,7]",
    lambda: Fn(
        lambda m, x, q: (
            Q.quantize_per_tensor.default(x, 0.05, 3, 0, 255, torch.uint8),
            Q.dequantize_per_tensor.default(q, 0.05, 3, 0, 255, torch.uint8),
        )
    ),
    lambda: [
        (planted(randn(3, 7, scale=4.0), SPECIALS), integers(torch.uint8, 3, 7)),
        (randn(3, 7, scale=8.0), integers(torch.uint8, 3, 7)),
    ],
    vulkan=True,
)


def ties(*shape) -> torch.Tensor:
    """Multiples of 1/8: exact ties of a scale of 0.25, both signs."""
    return (torch.randint(-700, 700, shape).to(torch.float32) / 8).to(torch.float32)


fixture(
    "per_tensor_i8_ties",
    "quantize_per_tensor to int8 (scale 0.25, zero point -3, range [-100, 90]) of float32 [4,8] "
    "ties, and dequantize_per_tensor of int8 [4,8] to float64 (out_dtype)",
    lambda: Fn(
        lambda m, x, q: (
            Q.quantize_per_tensor.default(x, 0.25, -3, -100, 90, torch.int8),
            Q.dequantize_per_tensor.default(q, 0.25, -3, -100, 90, torch.int8, out_dtype=torch.float64),
        )
    ),
    lambda: [(ties(4, 8), integers(torch.int8, 4, 8)), (ties(4, 8), integers(torch.int8, 4, 8))],
    vulkan=True,
)

fixture(
    "per_tensor_i16",
    "quantize_per_tensor of float32 [3,5] to int16 (scale 0.001, zero point 7) and back",
    lambda: Fn(
        lambda m, x: (
            (a := Q.quantize_per_tensor.default(x, 0.001, 7, -32768, 32767, torch.int16)),
            Q.dequantize_per_tensor.default(a, 0.001, 7, -32768, 32767, torch.int16),
        )
    ),
    lambda: [(randn(3, 5, scale=20.0),), (randn(3, 5, scale=40.0),)],
)

fixture(
    "per_tensor_i32",
    "quantize_per_tensor to int32's whole range (scale 0.001) of float32 [2,6] beyond it, and "
    "dequantize_per_tensor of int32 [2,6]",
    lambda: Fn(
        lambda m, x, q: (
            Q.quantize_per_tensor.default(x, 0.001, 0, -(2**31), 2**31 - 1, torch.int32),
            Q.dequantize_per_tensor.default(q, 0.001, 5, -(2**31), 2**31 - 1, torch.int32),
        )
    ),
    lambda: [
        (
            planted(randn(2, 6, scale=1e6), (2147483.75, -2147483.75, 3e6, -3e6)),
            integers(torch.int32, 2, 6, low=-(2**30), high=2**30),
        ),
        (randn(2, 6, scale=3e6), integers(torch.int32, 2, 6, low=-(2**20), high=2**20)),
    ],
    vulkan=True,
)

fixture(
    "per_tensor_tensor_args",
    "quantize_per_tensor.tensor of float32 [2,3,4] and dequantize_per_tensor.tensor of uint8 "
    "[2,3,4] with a float64 scale and int64 zero point given as tensors",
    lambda: Fn(
        lambda m, x, q: (
            Q.quantize_per_tensor.tensor(x, m.scale, m.zero_point, 0, 255, torch.uint8),
            Q.dequantize_per_tensor.tensor(q, m.scale, m.zero_point, 0, 255, torch.uint8),
        ),
        scale=torch.tensor([0.0173], dtype=torch.float64),
        zero_point=torch.tensor([120], dtype=torch.int64),
    ),
    lambda: [
        (randn(2, 3, 4), integers(torch.uint8, 2, 3, 4)),
        (planted(randn(2, 3, 4, scale=3.0), SPECIALS), integers(torch.uint8, 2, 3, 4)),
    ],
    vulkan=True,
)

# ---------------------------------------------------------------- per channel

fixture(
    "per_channel",
    "quantize_per_channel of float32 [4,3,2,2] along axis 0 to int8 and of [2,3,5] along axis -1 "
    "to uint8; dequantize_per_channel of int8 [4,3,2,2] and of uint8 [2,3,5] without zero points",
    lambda: Fn(
        lambda m, w, x, qw, qx: (
            Q.quantize_per_channel.default(w, m.s4, m.z4, 0, -128, 127, torch.int8),
            Q.dequantize_per_channel.default(qw, m.s4, m.z4, 0, -128, 127, torch.int8),
            Q.quantize_per_channel.default(x, m.s5, m.z5, -1, 0, 255, torch.uint8),
            Q.dequantize_per_channel.default(qx, m.s5, None, -1, 0, 255, torch.uint8),
        ),
        s4=torch.tensor([0.01, 0.02, 0.05, 0.3], dtype=torch.float64),
        z4=torch.tensor([0, -5, 3, 10], dtype=torch.int64),
        s5=torch.tensor([0.01, 0.1, 0.03, 0.2, 0.07], dtype=torch.float64),
        z5=torch.tensor([128, 0, 30, 200, 255], dtype=torch.int64),
    ),
    lambda: [
        (
            randn(4, 3, 2, 2),
            planted(randn(2, 3, 5, scale=3.0), SPECIALS),
            integers(torch.int8, 4, 3, 2, 2),
            integers(torch.uint8, 2, 3, 5),
        ),
        (
            randn(4, 3, 2, 2, scale=5.0),
            randn(2, 3, 5, scale=10.0),
            integers(torch.int8, 4, 3, 2, 2),
            integers(torch.uint8, 2, 3, 5),
        ),
    ],
    vulkan=True,
)

fixture(
    "per_channel_1d_f64",
    "quantize_per_channel of float32 [6] to int16 and dequantize_per_channel to float64 "
    "(a rank-1 input: the kernel multiplies in the output's type)",
    lambda: Fn(
        lambda m, x: (
            (a := Q.quantize_per_channel.default(x, m.s, m.z, 0, -32768, 32767, torch.int16)),
            Q.dequantize_per_channel.default(a, m.s, m.z, 0, -32768, 32767, torch.int16, out_dtype=torch.float64),
        ),
        s=torch.tensor([0.1, 0.013, 0.007, 1e-4, 3.3, 0.05], dtype=torch.float64),
        z=torch.tensor([0, 11, -7, 100, 0, -3], dtype=torch.int64),
    ),
    lambda: [(randn(6, scale=3.0),), (randn(6, scale=30.0),)],
)

# ---------------------------------------------------------------- per token and choose_qparams


def token_rows(rows: int, width: int) -> torch.Tensor:
    """Rows with the ranges choose_qparams treats apart: zeros, a range too
    narrow for a scale (both signs, positive only, negative only), one sign
    only, and ordinary ones."""
    x = randn(rows, width, scale=2.0)
    narrow = randn(width, scale=1e-4)
    x[0] = 0.0
    x[1] = narrow
    x[2] = narrow.abs()
    x[3] = -narrow.abs()
    x[4] = x[4].abs() + 0.5
    x[5] = -x[5].abs()
    return x


fixture(
    "per_token_choose",
    "choose_qparams_per_token_asymmetric of float32 [2,4,8] (rows of zeros, narrow ranges and "
    "one sign), quantize_per_token to int8 with them, and dequantize_per_token of int8 [2,4,8]",
    lambda: Fn(
        lambda m, x, q: (
            (s := Q.choose_qparams_per_token_asymmetric.default(x, torch.int8))[0],
            s[1],
            Q.quantize_per_token.default(x, s[0], s[1], -128, 127, torch.int8),
            Q.dequantize_per_token.default(q, s[0], s[1], -128, 127, torch.int8, torch.float32),
        )
    ),
    lambda: [
        (token_rows(8, 8).reshape(2, 4, 8), integers(torch.int8, 2, 4, 8)),
        (randn(2, 4, 8, scale=5.0), integers(torch.int8, 2, 4, 8)),
    ],
    vulkan=True,
)

fixture(
    "per_token",
    "choose_qparams_per_token_asymmetric of float32 [2,4,8] (rows of zeros, narrow ranges and "
    "one sign), quantize_per_token to int8 and dequantize_per_token to float32",
    lambda: Fn(
        lambda m, x: (
            (s := Q.choose_qparams_per_token_asymmetric.default(x, torch.int8))[0],
            s[1],
            (a := Q.quantize_per_token.default(x, s[0], s[1], -128, 127, torch.int8)),
            Q.dequantize_per_token.default(a, s[0], s[1], -128, 127, torch.int8, torch.float32),
        )
    ),
    lambda: [(token_rows(8, 8).reshape(2, 4, 8),), (randn(2, 4, 8, scale=5.0),)],
)


def choose_case(values: torch.Tensor) -> Inputs:
    return (values.reshape(3, 4),)


fixture(
    "choose_qparams",
    "choose_qparams.tensor of float32 [3,4] for uint8 [0, 255] then quantize and dequantize "
    "per tensor with the chosen tensors: ordinary, all-zero, narrow and one-sign ranges",
    lambda: Fn(
        lambda m, x: (
            (s := Q.choose_qparams.tensor(x, 0, 255, 1e-5, torch.uint8))[0],
            s[1],
            (a := Q.quantize_per_tensor.tensor(x, s[0], s[1], 0, 255, torch.uint8)),
            Q.dequantize_per_tensor.tensor(a, s[0], s[1], 0, 255, torch.uint8),
        )
    ),
    lambda: [
        choose_case(randn(12, scale=3.0)),
        choose_case(torch.zeros(12)),
        choose_case(randn(12, scale=1e-5)),
        choose_case(randn(12, scale=1e-5).abs()),
        choose_case(-randn(12, scale=2.0).abs() - 1.0),
    ],
)

# ---------------------------------------------------------------- PT2E models


class ConvLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.linear = nn.Linear(4 * 5 * 5, 6)

    def forward(self, x):
        return self.linear(torch.relu(self.conv(x)).flatten(1))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def pt2e(make: Callable[[], nn.Module], shape, **config) -> Callable[[], nn.Module]:
    """``make``'s model quantized by XNNPACKQuantizer (per-channel symmetric
    weights) through prepare_pt2e and convert_pt2e, calibrated on random
    inputs of ``shape``."""

    def quantized() -> nn.Module:
        model = make().eval()
        example = (torch.randn(*shape),)
        quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True, **config))
        prepared = prepare_pt2e(torch.export.export(model, example).module(), quantizer)
        with torch.no_grad():
            for _ in range(4):
                prepared(torch.randn(*shape) * 2)
        return convert_pt2e(prepared)

    return quantized


fixture(
    "pt2e_conv_linear",
    "Conv2d(3, 4, 3) + relu + Linear(100, 6) quantized statically to int8 by XNNPACKQuantizer "
    "(PT2E), lowered with no delegate, of float32 [1,3,5,5]",
    pt2e(ConvLinear, (1, 3, 5, 5)),
    lambda: [(randn(1, 3, 5, 5, scale=2.0),), (randn(1, 3, 5, 5, scale=3.0),)],
)

fixture(
    "pt2e_dynamic_mlp",
    "Linear(8, 16) + relu + Linear(16, 4) with int8 weights and dynamically quantized "
    "activations (XNNPACKQuantizer is_dynamic, PT2E), lowered with no delegate, of float32 [3,8]",
    pt2e(Mlp, (3, 8), is_dynamic=True),
    lambda: [(randn(3, 8, scale=2.0),), (randn(3, 8, scale=0.5),)],
)


# ---------------------------------------------------------------- refused

# Programs whose arguments ptec refuses at import, naming the argument:
# ExecuTorch's kernels abort on the first two and take uint16, which ptec's
# IR has no element type for. Neither ExecuTorch nor eager PyTorch runs them
# all, so their expected outputs are zeros.
REFUSED: list[tuple[Fixture, torch.dtype]] = [
    (
        Fixture(
            name,
            description,
            (lambda f: lambda: Fn(lambda m, x: f(x)))(f),
            lambda: [(randn(2, 5),)],
            False,
        ),
        dtype,
    )
    for name, description, f, dtype in [
        (
            "quant_min_above_quant_max",
            "quantize_per_tensor to uint8 with quant_min 10 and quant_max 5",
            lambda x: Q.quantize_per_tensor.default(x, 0.1, 0, 10, 5, torch.uint8),
            torch.uint8,
        ),
        (
            "quant_min_beyond_int8",
            "quantize_per_tensor to int8 with quant_min -300",
            lambda x: Q.quantize_per_tensor.default(x, 0.1, 0, -300, 127, torch.int8),
            torch.int8,
        ),
        (
            "uint16",
            "quantize_per_tensor to uint16",
            lambda x: Q.quantize_per_tensor.default(x, 0.1, 0, 0, 65535, torch.uint16),
            torch.uint16,
        ),
    ]
]


# ---------------------------------------------------------------- export


def flat(outputs) -> list[torch.Tensor]:
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def export(model: nn.Module, example: Inputs, partitioner: list) -> object:
    edge = to_edge_transform_and_lower(
        torch.export.export(model, example),
        partitioner=partitioner,
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
    )
    return edge.to_executorch()


def plan_operators(program) -> list[str]:
    plan = program.executorch_program.execution_plan[0]
    return [f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators]


def difference(got: torch.Tensor, want: torch.Tensor) -> float:
    """The largest difference between two outputs (NaN where one is NaN
    and the other not)."""
    got, want = got.double(), want.double()
    both_nan = got.isnan() & want.isnan()
    gap = (got - want).abs().masked_fill(both_nan | (got == want), 0.0)
    return gap.max().item() if gap.numel() else 0.0


def bundle(program, cases: list[Inputs], expected: list[list[torch.Tensor]]) -> bytes:
    test_cases = [MethodTestCase(inputs=list(i), expected_outputs=o) for i, o in zip(cases, expected)]
    suite = MethodTestSuite(method_name="forward", test_cases=test_cases)
    return serialize_from_bundled_program_to_flatbuffer(BundledProgram(program, [suite]))


def describe(tensors) -> list[dict]:
    return [{"dtype": dtype_name(t.dtype), "shape": list(t.shape)} for t in tensors]


def write_readme(out_dir: Path, index: dict) -> None:
    lines = [
        "# Quantize-family fixtures",
        "",
        "Tiny programs calling ExecuTorch's quantized kernels (`quantized_decomposed::*`), written by",
        "`scripts/gen_quantized_fixtures.py` with the public ExecuTorch 1.5.1 exporter (torch 2.14.0):",
        "the quantize family called directly with the values where rounding, clamping and parameter",
        "choice matter, and small models quantized with `XNNPACKQuantizer` (PT2E) lowered with no",
        "delegate; `.vulkan.bpte` files are the same programs lowered with `VulkanPartitioner`, which",
        "delegates their quantize calls. The expected outputs are ExecuTorch's own (its runtime, on",
        "the portable program), so `tests/quantized.rs` compares them bit for bit;",
        "`pytorch_difference` in `index.json` is eager PyTorch's largest difference from them:",
        "ExecuTorch converts a rounded value to int64 before clamping it, so NaN, the infinities and",
        "values beyond int64 give quant_min where PyTorch's reference clamps (255 steps of uint8), and",
        "PyTorch's int32 results wrap at 2^31 where ExecuTorch's clamp; ExecuTorch's choose_qparams",
        "ignores `eps` and widens narrow ranges to a least scale of 6.1e-5, PyTorch's does neither",
        "alike (74 and 253 steps); its rank-1 dequantize_per_channel multiplies in the output's type",
        "(f64), PyTorch's in f32; and a float matrix product sums in another order (one f32 step).",
        "`.refused.bpte` programs have arguments ptec refuses, naming them (zeros as outputs).",
        "",
        "| file | description | PyTorch differs by | bytes |",
        "|---|---|---|---|",
    ]
    for name, entry in index.items():
        difference = entry.get("pytorch_difference")
        shown = "refused by ptec" if difference is None else f"{difference:g}"
        lines.append(f"| `{name}` | {entry['description']} | {shown} | {entry['bytes']} |")
    (out_dir / "README.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    out_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    runtime = Runtime.get()
    index, problems = {}, []
    for spec in FIXTURES:
        torch.manual_seed(seed_for("quantized", spec.name))
        model = spec.make_model()  # no dropout nor batch norm; PT2E models refuse .eval()
        cases = spec.make_cases()
        portable = export(model, cases[0], [])
        operators = plan_operators(portable)
        if not any(op.startswith("quantized_decomposed::") for op in operators):
            problems.append(f"{spec.name}: the program calls no quantized kernel ({operators})")
        method = runtime.load_program(portable.buffer).load_method("forward")
        expected, gap = [], 0.0
        with torch.no_grad():
            for inputs in cases:
                outputs = [o.clone() for o in method.execute(list(inputs))]
                expected.append(outputs)
                for got, want in zip(outputs, flat(model(*inputs))):
                    gap = max(gap, difference(got, want))
        variants = [("portable", portable)]
        if spec.vulkan:
            vulkan = export(model, cases[0], [VulkanPartitioner()])
            left = [op for op in plan_operators(vulkan) if op.startswith("quantized_decomposed::")]
            if left or not vulkan.executorch_program.execution_plan[0].delegates:
                problems.append(f"{spec.name}: VulkanPartitioner leaves {left} outside its delegate")
            variants.append(("vulkan", vulkan))
        for variant, program in variants:
            data = bundle(program, cases, expected)
            file_name = f"{spec.name}.{variant}.bpte"
            (out_dir / file_name).write_bytes(data)
            index[file_name] = {
                "description": spec.description,
                "variant": variant,
                "operators": plan_operators(program),
                "inputs": describe(cases[0]),
                "outputs": describe(expected[0]),
                "test_cases": len(cases),
                "pytorch_difference": gap,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
            }
            print(f"wrote {file_name} ({len(data)} bytes, PyTorch differs by {gap:g})", flush=True)
    for spec, dtype in REFUSED:
        torch.manual_seed(seed_for("quantized", spec.name))
        cases = spec.make_cases()
        program = export(spec.make_model(), cases[0], [])
        data = bundle(program, cases, [[torch.zeros(x.shape, dtype=dtype)] for (x,) in cases])
        file_name = f"{spec.name}.refused.bpte"
        (out_dir / file_name).write_bytes(data)
        index[file_name] = {
            "description": spec.description,
            "variant": "refused",
            "operators": plan_operators(program),
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        print(f"wrote {file_name} ({len(data)} bytes)", flush=True)
    with open(out_dir / "index.json", "w") as out:
        json.dump(index, out, indent=2, sort_keys=True)
        out.write("\n")
    write_readme(out_dir, index)
    problems += check_sizes(index, MAX_FIXTURE_BYTES, MAX_TOTAL_BYTES)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
