"""Generate ptec's own small test fixtures with the public ExecuTorch exporter.

Each fixture is a bundled program (``.bpte``): an ExecuTorch program plus a
test suite for its ``forward`` method whose expected outputs were computed by
eager PyTorch. The models are tiny, hand-written modules chosen to cover one
feature each (broadcasting, delegation, quantization, control flow, mutable
state, dynamic shapes, integer outputs), lowered in up to four variants:

  portable    no delegation: every operator is a KernelCall
  xnnpack     XnnpackPartitioner (XNNPACK delegate blobs)
  xnnpack-q8  PT2E static int8 quantization, then XnnpackPartitioner
  vulkan      VulkanPartitioner (Vulkan delegate blobs)

The script also writes ``index.json`` describing every file. Weights and
inputs come from a fixed seed per model, so the output is reproducible as long
as the exporter itself is deterministic. Any export failure is printed and
makes the script exit with status 1; no variant is skipped silently.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_fixtures.py [OUT_DIR]      # default: tests/fixtures
"""

import argparse
import copy
import hashlib
import json
import sys
import traceback
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
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
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "tests" / "fixtures"

# Fixtures are committed to the repository, so each one must stay small.
MAX_FIXTURE_BYTES = 100 * 1024
MAX_TOTAL_BYTES = 1536 * 1024

Inputs = tuple[torch.Tensor, ...]


# ---------------------------------------------------------------- models


class AddScaled(nn.Module):
    """Broadcasting elementwise arithmetic: ``x + 2y``."""

    def forward(self, x, y):
        return x + y * 2.0


class LinearRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return torch.relu(self.fc(x))


class ConvBn(nn.Module):
    """Convolution, batch norm and a ReLU6-style clamp."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x):
        return F.hardtanh(self.bn(self.conv(x)), 0.0, 6.0)


class Cond(nn.Module):
    """Data-dependent control flow through ``torch.cond``."""

    def forward(self, x):
        return torch.cond(x.sum() > 0, lambda t: t.sin() * 2.0, lambda t: t.cos() - 1.0, (x,))


class Counter(nn.Module):
    """A mutable buffer that accumulates every input it is called with."""

    def __init__(self):
        super().__init__()
        self.register_buffer("acc", torch.zeros(4))

    def forward(self, x):
        self.acc.add_(x)
        return self.acc * 1.0


class LinearTanh(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 8)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class MultiOut(nn.Module):
    """Integer input ids; a float, an int64 and another int64 output."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 4)

    def forward(self, ids):
        pooled = self.emb(ids).sum(dim=1)
        return pooled, torch.argmax(pooled, dim=-1), torch.cumsum(ids, dim=1)


def conv_bn_with_statistics() -> ConvBn:
    """A ConvBn whose batch-norm statistics match its convolution's output.

    Freshly initialised running statistics (mean 0, variance 1) do not fit the
    convolution, so most outputs would sit in the flat parts of the clamp.
    Measuring them on random images, and drawing a random affine transform,
    keeps the outputs spread over the clamp's range.
    """
    model = ConvBn()
    with torch.no_grad():
        features = model.conv(torch.randn(16, 3, 8, 8))
        model.bn.running_mean.copy_(features.mean(dim=(0, 2, 3)))
        model.bn.running_var.copy_(features.var(dim=(0, 2, 3)))
        model.bn.weight.copy_(torch.rand(4) + 0.5)
        model.bn.bias.copy_(torch.rand(4) * 2.0)
    return model


# ---------------------------------------------------------------- fixture specs


class SeqBlock(nn.Module):
    """A pre-norm transformer block over a sequence of dynamic length:
    single-head causal attention with softmax, layer norm and an MLP."""

    def __init__(self, d: int = 16):
        super().__init__()
        self.norm1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 32), nn.GELU(), nn.Linear(32, d))

    def forward(self, x):
        seq, d = x.shape[1], x.shape[2]
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        scores = q @ k.transpose(-1, -2) / (d**0.5)
        causal = torch.ones(seq, seq).tril() == 0
        attn = scores.masked_fill(causal, float("-inf")).softmax(dim=-1)
        x = x + self.proj(attn @ v)
        x = x + self.mlp(self.norm2(x))
        return x.reshape(-1, d)


class DynConv1d(nn.Module):
    """Two 1-D convolutions over a signal of any length."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv1d(3, 4, 3, padding=1)
        self.second = nn.Conv1d(4, 2, 5, stride=2, dilation=2)

    def forward(self, x):
        return self.second(torch.relu(self.first(x)))


class DynCnn(nn.Module):
    """A small CNN over images of dynamic height and width: convolution,
    batch norm, ReLU, max pooling, a spatial mean and a linear layer."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        x = F.relu(self.conv2(x))
        return self.fc(x.mean(dim=(2, 3)))


class SymOps(nn.Module):
    """Sizes computed at run time: arange over the sequence, a concatenation
    of two dynamic tensors, a slice ending at a SymInt and a narrow."""

    def forward(self, x, y):
        seq = x.shape[0]
        positions = torch.arange(seq, dtype=torch.float32).unsqueeze(1)
        joined = torch.cat([x + positions, y], dim=0)
        half = joined[: seq // 2 + 1]
        tail = joined.narrow(0, 1, seq)
        return half * 2, tail - 1, joined.reshape(-1)


@dataclass(frozen=True)
class Fixture:
    """One model and how to export and test it.

    ``make_cases`` returns the inputs of every test case, in the order the
    cases run; the first one is also the example input given to the exporter.
    """

    name: str
    description: str
    make_model: Callable[[], nn.Module]
    make_cases: Callable[[], list[Inputs]]
    variants: tuple[str, ...]
    dynamic_shapes: Optional[tuple] = None
    # Methods returning a constant, as LLM exports add (``get_max_seq_len``).
    constant_methods: Optional[dict] = None


def cond_cases() -> list[Inputs]:
    """One input with a positive sum and one with a negative sum, so the two
    cases take different branches of the ``torch.cond``."""
    x = torch.randn(3, 5).abs() + 0.1
    return [(x,), (-x.flip(0),)]


FIXTURES = [
    Fixture(
        "add",
        "broadcast elementwise x + y*2.0 ([4,8] and [8])",
        AddScaled,
        lambda: [(torch.randn(4, 8), torch.randn(8)) for _ in range(2)],
        ("portable", "xnnpack", "vulkan"),
    ),
    Fixture(
        "linear_relu",
        "Linear(16,8) + relu",
        LinearRelu,
        lambda: [(torch.randn(2, 16),) for _ in range(2)],
        ("portable", "xnnpack", "vulkan", "xnnpack-q8"),
    ),
    Fixture(
        "conv_bn",
        "Conv2d(3,4,3,padding=1) + BatchNorm2d + hardtanh(0,6)",
        conv_bn_with_statistics,
        lambda: [(torch.randn(1, 3, 8, 8),) for _ in range(2)],
        ("portable", "xnnpack", "xnnpack-q8", "vulkan"),
    ),
    Fixture(
        "cond",
        "torch.cond on x.sum()>0: sin(x)*2 or cos(x)-1; case 0 takes the true branch, case 1 the false one",
        Cond,
        cond_cases,
        ("portable",),
    ),
    Fixture(
        "counter",
        "mutable buffer acc += x; three cases run in order, expected outputs are running sums",
        Counter,
        lambda: [(torch.randn(4),) for _ in range(3)],
        ("portable",),
    ),
    Fixture(
        "dyn_batch",
        "Linear(16,8) + tanh with a dynamic batch dim (1..8); cases with batch 3 and 8",
        LinearTanh,
        lambda: [(torch.randn(3, 16),), (torch.randn(8, 16),)],
        ("portable",),
        dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=8)},),
    ),
    Fixture(
        "multi_out",
        "int64 ids [2,5]: embedding(20,4) summed over dim 1, its argmax, cumsum of ids (three outputs)",
        MultiOut,
        lambda: [(torch.randint(0, 20, (2, 5)),) for _ in range(2)],
        ("portable",),
    ),
    Fixture(
        "dyn_seq",
        "transformer block (causal attention, layer norm, MLP) over [1, seq, 16], seq dynamic (1..128); cases at seq 1, 7, 64, 128; constant methods get_max_seq_len (int 128), use_kv_cache (bool) and get_rope_theta (float)",
        SeqBlock,
        lambda: [(torch.randn(1, n, 16),) for n in (7, 1, 64, 128)],
        ("portable",),
        dynamic_shapes=({1: torch.export.Dim("seq", min=1, max=128)},),
        constant_methods={"get_max_seq_len": 128, "use_kv_cache": False, "get_rope_theta": 10000.0},
    ),
    Fixture(
        "dyn_cnn",
        "conv, batch norm, relu, max pool, strided conv, spatial mean, linear over [1,3,H,W], H and W dynamic (10..64); cases 16x16, 11x23, 64x64, 10x10",
        DynCnn,
        lambda: [(torch.randn(1, 3, h, w),) for h, w in ((16, 16), (11, 23), (64, 64), (10, 10))],
        ("portable",),
        dynamic_shapes=({2: torch.export.Dim("h", min=10, max=64), 3: torch.export.Dim("w", min=10, max=64)},),
    ),
    Fixture(
        "dyn_conv1d",
        "Conv1d(3,4,3,p1)+ReLU, Conv1d(4,2,5,stride 2,dilation 2) over [1,3,L], L dynamic (12..64), "
        "as an audio model's; cases at L 16, 13, 64",
        DynConv1d,
        lambda: [(torch.randn(1, 3, n),) for n in (16, 13, 64)],
        ("portable",),
        dynamic_shapes=({2: torch.export.Dim("length", min=12, max=64)},),
    ),
    Fixture(
        "sym_ops",
        "arange(seq), cat of two dynamic tensors, slice to seq//2+1, narrow(0, 1, seq), view(-1) over x [seq,4], y [n,4] (seq 2..32, n 1..16)",
        SymOps,
        lambda: [(torch.randn(s, 4), torch.randn(n, 4)) for s, n in ((5, 3), (2, 1), (32, 16), (9, 9))],
        ("portable",),
        dynamic_shapes=(
            {0: torch.export.Dim("seq", min=2, max=32)},
            {0: torch.export.Dim("n", min=1, max=16)},
        ),
    ),
]


# ---------------------------------------------------------------- lowering


def seed_for(*parts: str) -> int:
    """A stable seed derived from names (Python's ``hash`` is salted per run)."""
    return zlib.crc32("/".join(parts).encode())


def quantize_int8(model: nn.Module, cases: list[Inputs], seed: int) -> nn.Module:
    """PT2E static int8 quantization for XNNPACK (symmetric, per-channel weights).

    Observers are calibrated on a few random inputs shaped like the test
    inputs, then on the test inputs themselves.
    """
    quantizer = XNNPACKQuantizer().set_global(get_symmetric_quantization_config(is_per_channel=True))
    prepared = prepare_pt2e(torch.export.export(model, cases[0]).module(), quantizer)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for _ in range(4):
            prepared(*(torch.randn(t.shape, generator=generator) for t in cases[0]))
        for inputs in cases:
            prepared(*inputs)
    return convert_pt2e(prepared)


def partitioners(variant: str) -> list:
    return {
        "portable": [],
        "xnnpack": [XnnpackPartitioner()],
        "xnnpack-q8": [XnnpackPartitioner()],
        "vulkan": [VulkanPartitioner()],
    }[variant]


def export_bundled(fixture: Fixture, variant: str) -> tuple[bytes, list[Inputs], nn.Module]:
    """Export one fixture variant; return the serialized bundled program, the
    inputs of its test cases and the model that computed the expected outputs
    (for q8, the quantized one)."""
    torch.manual_seed(seed_for(fixture.name))
    model = fixture.make_model().eval()
    cases = fixture.make_cases()

    # The reference model computes expected outputs by running every case in
    # order on one instance, which is how stateful models (counter) behave on
    # the runtime too. For q8 it is the quantized model, not the float one.
    if variant == "xnnpack-q8":
        model = quantize_int8(model, cases, seed_for(fixture.name, variant))
        reference = model
    else:
        reference = copy.deepcopy(model)

    exported = torch.export.export(model, cases[0], dynamic_shapes=fixture.dynamic_shapes)
    edge = to_edge_transform_and_lower(
        exported,
        partitioner=partitioners(variant),
        compile_config=EdgeCompileConfig(_check_ir_validity=False),
        constant_methods=fixture.constant_methods,
    )
    program = edge.to_executorch()

    test_cases = []
    with torch.no_grad():
        for inputs in cases:
            outputs = reference(*inputs)
            if isinstance(outputs, torch.Tensor):
                outputs = (outputs,)
            test_cases.append(MethodTestCase(inputs=inputs, expected_outputs=list(outputs)))
    suite = MethodTestSuite(method_name="forward", test_cases=test_cases)
    return serialize_from_bundled_program_to_flatbuffer(BundledProgram(program, [suite])), cases, reference


# ---------------------------------------------------------------- index


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def describe_inputs(fixture: Fixture, example: Inputs) -> list[dict]:
    """Shapes and dtypes of the example inputs, with dynamic dims as [min, max]."""
    described = []
    for i, tensor in enumerate(example):
        entry = {"dtype": dtype_name(tensor.dtype), "shape": list(tensor.shape)}
        if fixture.dynamic_shapes and fixture.dynamic_shapes[i]:
            entry["dynamic_dims"] = {
                str(axis): [dim.min, dim.max] for axis, dim in fixture.dynamic_shapes[i].items()
            }
        described.append(entry)
    return described


def index_entry(fixture: Fixture, variant: str, data: bytes, cases: list[Inputs]) -> dict:
    return {
        "model": fixture.name,
        "variant": variant,
        "description": fixture.description,
        "inputs": describe_inputs(fixture, cases[0]),
        "test_cases": len(cases),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


# ---------------------------------------------------------------- main


def check_sizes(index: dict, max_fixture: int = MAX_FIXTURE_BYTES, max_total: int = MAX_TOTAL_BYTES) -> list[str]:
    """Complaints about fixtures that grew too large to commit."""
    problems = [
        f"{name}: {entry['bytes']} bytes exceeds {max_fixture}"
        for name, entry in index.items()
        if entry["bytes"] > max_fixture
    ]
    total = sum(entry["bytes"] for entry in index.values())
    if total > max_total:
        problems.append(f"total {total} bytes exceeds {max_total}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=DEFAULT_OUT_DIR)
    parser.add_argument("--only", nargs="+", metavar="NAME", help="regenerate these fixtures only, keeping the others' index entries")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)

    index, failures = {}, []
    index_path = args.out_dir / "index.json"
    if args.only and index_path.exists():
        index = json.loads(index_path.read_text())
    for fixture in FIXTURES:
        if args.only and fixture.name not in args.only:
            continue
        for variant in fixture.variants:
            file_name = f"{fixture.name}.{variant}.bpte"
            try:
                data, cases, _ = export_bundled(fixture, variant)
            except Exception:  # noqa: BLE001 - report every failure, then fail
                traceback.print_exc()
                print(f"FAILED {file_name}", flush=True)
                failures.append(file_name)
                continue
            (args.out_dir / file_name).write_bytes(data)
            index[file_name] = index_entry(fixture, variant, data, cases)
            print(f"wrote {file_name} ({len(data)} bytes)", flush=True)

    problems = [f"export failed: {name}" for name in failures] + check_sizes(index)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    with open(args.out_dir / "index.json", "w") as out:
        json.dump(index, out, indent=2, sort_keys=True)
        out.write("\n")
    total = sum(entry["bytes"] for entry in index.values())
    print(f"{len(index)} fixtures, {total} bytes, index in {args.out_dir / 'index.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
