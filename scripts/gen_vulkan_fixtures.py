"""Generate ptec's Vulkan operator fixtures with the public ExecuTorch exporter.

Each fixture is a tiny program lowered with ``VulkanPartitioner``, so that the
operators it exercises are calls of a VK00 delegate's graph: one fixture per
operator the partitioner delegates (and per case of its arguments that ptec
reads differently), for the operators the feature fixtures and the shared
corpus do not call. Each holds two test cases whose expected outputs come from
eager PyTorch.

ExecuTorch's runtime in the anchor environment has no Vulkan backend, so each
fixture's model is also exported without a partitioner and run there: the
index records ExecuTorch's largest error on the test cases
(``executorch_portable_error``), and the script fails when it exceeds 1e-4
or when the delegate does not call the operators the fixture names (so that a
future partitioner which leaves one on the CPU is noticed).

Files are named ``<name>.vulkan.bpte``; the script also writes ``index.json``
(per file: the delegated operators it checks, description, input and output
dtypes and shapes, size, SHA-256) and ``README.md``. Seeds are fixed per
fixture, so a second run writes byte-identical files.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_vulkan_fixtures.py [OUT_DIR]      # default: tests/fixtures/vulkan
    $ANCHOR_PY scripts/gen_vulkan_fixtures.py --only NAME... # only these fixtures' files
"""

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from executorch.backends.vulkan.custom_ops_lib import (
    apply_rotary_emb_hf_impl,
    apply_rotary_emb_impl,
    apply_rotary_emb_interleaved_impl,
    grid_priors_impl,
    sdpa_impl,
)
from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
from executorch.extension.llm.custom_ops import custom_ops  # noqa: F401  (registers llama::)
import executorch.kernels.quantized  # noqa: F401  (quantized_decomposed out variants, for the portable runs)
from executorch.devtools.bundled_program.serialize import (
    deserialize_from_flatbuffer_to_bundled_program,
)
from executorch.runtime import Runtime

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fixtures import check_sizes  # noqa: E402  (sibling script)
from gen_op_fixtures import (  # noqa: E402
    OpFixture,
    arguments,
    export_bundled,
    fn,
    index_entry,
    ints,
    positive,
    randn,
    twice,
)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "vulkan"
VARIANT = "vulkan"
MAX_FIXTURE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 512 * 1024
PORTABLE_TOLERANCE = 1e-4


@dataclass
class VulkanFixture:
    """An operator fixture and the Vulkan operators its delegate must call."""

    spec: OpFixture
    calls: tuple
    # The model ExecuTorch's portable runtime runs instead, for a custom
    # operator it has no kernel for: the operator's reference implementation.
    portable_model: object = None
    # ExecuTorch's portable runtime's largest error allowed on the test
    # cases, when its kernels compute otherwise than eager PyTorch.
    portable_tolerance: float = 1e-4
    # (from, to): an operator name of the delegate rewritten into another
    # of the same length and arguments, for an operator no public flow
    # leaves in a delegate.
    rename: tuple = None


FIXTURES: list[VulkanFixture] = []


def fixture(
    name,
    calls,
    description,
    make_model,
    make_cases,
    preserve=(),
    dynamic_shapes=None,
    portable_model=None,
    portable_tolerance=PORTABLE_TOLERANCE,
    rename=None,
) -> None:
    """A fixture whose delegate calls ``calls`` (``preserve`` and
    ``dynamic_shapes`` as ``OpFixture``'s; ``portable_model``,
    ``portable_tolerance`` and ``rename`` as ``VulkanFixture``'s)."""
    parts = calls[0].split(".")
    op = parts[1] if len(parts) > 2 else parts[0]
    spec = OpFixture(name, op, description, make_model, make_cases, preserve, dynamic_shapes)
    FIXTURES.append(VulkanFixture(spec, tuple(calls), portable_model, portable_tolerance, rename))


class Linear(nn.Module):
    """Layers whose weights are the model's (seeded) parameters."""

    def __init__(self, layer: nn.Module, after=None):
        super().__init__()
        self.layer = layer
        self.after = after

    def forward(self, *args):
        y = self.layer(*args)
        return self.after(y) if self.after else y


fixture(
    "cat",
    ["aten.cat.default"],
    "cat of three float32 [2,3,4] along dim 1 and of two along dim -1",
    fn(lambda x, y: (torch.cat([x, y, x * 2.0], 1), torch.cat([x, y], -1))),
    twice(lambda: (randn(2, 3, 4), randn(2, 3, 4))),
)
fixture(
    "mm",
    ["aten.mm.default"],
    "mm of float32 [5,6] and [6,3] inputs",
    fn(lambda x, y: torch.mm(x, y)),
    twice(lambda: (randn(5, 6), randn(6, 3))),
)
fixture(
    "addmm",
    ["aten.addmm.default"],
    "addmm of a float32 [4] bias, [3,5] and [5,4] with beta 0.5 and alpha 2",
    fn(lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0)),
    twice(lambda: (randn(4), randn(3, 5), randn(5, 4))),
)
fixture(
    "avg_pool2d",
    ["aten.avg_pool2d.default"],
    "avg_pool2d(2) and avg_pool2d(3, stride 2, padding 1, count_include_pad=False) of float32 [1,3,7,6]",
    fn(lambda x: (F.avg_pool2d(x, 2), F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False))),
    twice(lambda: (randn(1, 3, 7, 6),)),
)
fixture(
    "max_pool2d_padded",
    ["aten.max_pool2d_with_indices.default"],
    "max_pool2d(3, stride 2, padding 1) of float32 [1,4,9,8] (ResNet's stem): the graph's indices are int32",
    fn(lambda x: F.max_pool2d(x, 3, stride=2, padding=1)),
    twice(lambda: (randn(1, 4, 9, 8),)),
)
fixture(
    "split_with_sizes",
    ["aten.split_with_sizes_copy.default"],
    "split of float32 [2,7,3] into 2, 4 and 1 rows along dim 1, each scaled",
    fn(lambda x: tuple(part * float(i + 1) for i, part in enumerate(torch.split(x, [2, 4, 1], 1)))),
    twice(lambda: (randn(2, 7, 3),)),
)
fixture(
    "conv1d",
    ["aten.convolution.default"],
    "Conv1d(3, 5, 3, padding 1) and Conv1d(3, 4, 2, stride 2) of float32 [2,3,9]",
    lambda: Linear(nn.Conv1d(3, 5, 3, padding=1)),
    twice(lambda: (randn(2, 3, 9),)),
)
fixture(
    "upsample_nearest",
    ["aten.upsample_nearest2d.vec"],
    "nearest interpolation of float32 [1,2,3,4] by 2 and to 5x7",
    fn(lambda x: (F.interpolate(x, scale_factor=2, mode="nearest"), F.interpolate(x, size=(5, 7), mode="nearest"))),
    twice(lambda: (randn(1, 2, 3, 4),)),
)
fixture(
    "upsample_bilinear",
    ["aten.upsample_bilinear2d.vec"],
    "bilinear interpolation of float32 [1,2,4,5] by 2 and to 7x3 with aligned corners",
    fn(
        lambda x: (
            F.interpolate(x, scale_factor=2, mode="bilinear"),
            F.interpolate(x, size=(7, 3), mode="bilinear", align_corners=True),
        )
    ),
    twice(lambda: (randn(1, 2, 4, 5),)),
)
fixture(
    "constant_pad",
    ["aten.constant_pad_nd.default"],
    "constant pads (1, 2) with 0 and (1, 0, 2, 1) with 0.5 of float32 [1,2,3,4]",
    fn(lambda x: (F.pad(x, (1, 2)), F.pad(x, (1, 0, 2, 1), value=0.5))),
    twice(lambda: (randn(1, 2, 3, 4),)),
)
fixture(
    "permute",
    ["aten.permute_copy.default"],
    "permute (2, 0, 1) and transpose of float32 [2,3,4], plus one",
    fn(lambda x: (x.permute(2, 0, 1) + 1.0, x.transpose(1, 2) * 2.0)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "reductions",
    ["aten.sum.dim_IntList", "aten.amax.default", "aten.amin.default"],
    "sum, amax and amin over dim -1 (amin keeping it) of float32 [2,3,4]",
    fn(lambda x: (x.sum(-1), x.amax(-1), x.amin(-1, keepdim=True))),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "argmax",
    ["aten.argmax.default", "aten.argmin.default"],
    "argmax and argmin over dim -1 of float32 [3,5]",
    fn(lambda x: (x.argmax(-1), x.argmin(-1))),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "activations",
    ["aten.leaky_relu.default"],
    "leaky_relu(0.1) and hardshrink(0.5) (abs, le and where) of float32 [3,5]",
    fn(lambda x: (F.leaky_relu(x, 0.1), F.hardshrink(x, 0.5))),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "pow",
    ["aten.pow.Tensor_Scalar", "aten.pow.Tensor_Tensor"],
    "x ** 3 and p ** y of float32 [3,4] (p positive)",
    fn(lambda x, p, y: (x**3, p**y)),
    twice(lambda: (randn(3, 4), positive(3, 4), randn(3, 4))),
)
fixture(
    "minimum",
    ["aten.minimum.default"],
    "minimum of two float32 [3,4]",
    fn(lambda x, y: torch.minimum(x, y)),
    twice(lambda: (randn(3, 4), randn(3, 4))),
)
fixture(
    "compare",
    ["aten.lt.Tensor", "aten.gt.Scalar", "aten.ge.Tensor", "aten.eq.Tensor"],
    "x < y, x > 0.25, x >= y and x == y (equal where y copies x) of float32 [3,4], as where selections",
    fn(
        lambda x, y: (
            torch.where(x < y, x, y),
            torch.where(x > 0.25, x, 0.0 * x),
            torch.where(x >= y, y, x),
            torch.where(x == y, x, 2.0 * x),
        )
    ),
    twice(lambda: (lambda x: (x, torch.where(randn(3, 4) > 0, x, randn(3, 4))))(randn(3, 4))),
)
fixture(
    "div_floor",
    ["aten.div.Tensor_mode"],
    "div with rounding_mode floor of float32 [3,4] by values away from zero",
    fn(lambda x, y: torch.div(x, y, rounding_mode="floor")),
    twice(lambda: (randn(3, 4) * 4.0, positive(3, 4) + 0.5)),
)
fixture(
    "group_norm",
    ["aten.native_group_norm.default"],
    "GroupNorm(2, 4) of float32 [2,4,3,3]",
    lambda: nn.GroupNorm(2, 4),
    twice(lambda: (randn(2, 4, 3, 3),)),
)
fixture(
    "index_select",
    ["aten.index_select.default"],
    "index_select of float32 [5,3] rows 4, 0, 2, 2 (constant indices)",
    fn(lambda x: torch.index_select(x, 0, torch.tensor([4, 0, 2, 2]))),
    twice(lambda: (randn(5, 3),)),
)
fixture(
    "embedding",
    ["aten.embedding.default"],
    "Embedding(10, 4) of int32 indices [2,3]",
    lambda: nn.Embedding(10, 4),
    twice(lambda: (ints(0, 10, 2, 3, dtype=torch.int32),)),
)
fixture(
    "flip",
    ["aten.flip.default"],
    "flip of float32 [2,3,4] along dims 0 and 2",
    fn(lambda x: torch.flip(x, (0, 2))),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "repeat",
    ["aten.repeat.default"],
    "repeat (2, 1, 3) of float32 [2,3,2]",
    fn(lambda x: x.repeat(2, 1, 3)),
    twice(lambda: (randn(2, 3, 2),)),
)
fixture(
    "pixel_shuffle",
    ["aten.pixel_shuffle.default"],
    "pixel_shuffle(2) of float32 [1,8,2,3]",
    fn(lambda x: F.pixel_shuffle(x, 2)),
    twice(lambda: (randn(1, 8, 2, 3),)),
)

fixture(
    "compare_more",
    ["aten.ne.Scalar", "aten.lt.Scalar", "aten.le.Tensor", "aten.ge.Scalar", "aten.gt.Tensor", "aten.logical_or.default"],
    "x != 0.5, x < -0.25, x <= y, x >= 0.75, x > y and their logical or, of float32 [3,4], as where selections",
    fn(
        lambda x, y: (
            torch.where(x != 0.5, x, y),
            torch.where(torch.logical_or(x < -0.25, x >= 0.75), x, y),
            torch.where(x <= y, y, x),
            torch.where(x > y, x * 2.0, y),
        )
    ),
    twice(lambda: (lambda x: (x, torch.where(randn(3, 4) > 0, x, randn(3, 4))))(torch.round(randn(3, 4) * 4.0) / 4.0)),
)
fixture(
    "bitwise",
    ["aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor"],
    "bitwise and and or of bool [3,4] (x > 0, y > 0) as where selections of float32 [3,4]",
    fn(lambda x, y: (torch.where((x > 0) & (y > 0), x, y), torch.where((x > 0) | (y > 0), x, y))),
    twice(lambda: (randn(3, 4), randn(3, 4))),
)
fixture(
    "gather",
    ["aten.gather.default"],
    "gather of float32 [3,5] along dim 1 at int64 [3,2] indices",
    fn(lambda x, i: torch.gather(x, 1, i)),
    twice(lambda: (randn(3, 5), ints(0, 5, 3, 2))),
)
fixture(
    "index",
    ["aten.index.Tensor"],
    "x[i] and x[:, j] of float32 [4,5] at int64 indices",
    fn(lambda x, i, j: (x[i], x[:, j])),
    twice(lambda: (randn(4, 5), ints(0, 4, 3), ints(0, 5, 2))),
)
fixture(
    "unfold",
    ["aten.unfold_copy.default"],
    "unfold(1, 3, 2) of float32 [2,7]",
    fn(lambda x: x.unfold(1, 3, 2) * 2.0),
    twice(lambda: (randn(2, 7),)),
)



class SymSizes(nn.Module):
    """Sizes computed from a dynamic dimension ``n`` (even: ``2 * k``) with
    Python's operators on them, in views and slices."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4))

    def forward(self, x):
        n = x.shape[0]
        y = torch.relu(x * self.weight + 1.0)
        return y.view(n * 2, 2), y[1 : n - 1] * 3.0, y[: n // 2] + 1.0, y[: n + 1] + 2.0


fixture(
    "sym_sizes",
    ["sym_size.int", "mul", "sub", "floordiv", "add", "aten.slice_copy.Tensor"],
    "float32 [n,4], n = 2k dynamic (4..16; cases n 6 and 10): relu(x * w + 1) viewed as [n*2,2] and "
    "sliced [1:n-1], [:n//2] and [:n+1]: the graph computes the sizes as SymInts",
    SymSizes,
    lambda: [(randn(n, 4),) for n in (6, 10)],
    dynamic_shapes=({0: 2 * torch.export.Dim("k", min=2, max=8)},),
)


class TwoLinear(nn.Module):
    """Two linear layers, the first with a bias."""

    def __init__(self):
        super().__init__()
        self.first = nn.Linear(16, 8)
        self.second = nn.Linear(8, 4, bias=False)

    def forward(self, x):
        return self.second(self.first(x))


fixture(
    "linear_dynamic",
    ["aten.linear.default"],
    "float32 [1,n,16], n dynamic (2..12; cases n 5 and 9): linear(16, 8) with a bias, then "
    "linear(8, 4) without, over the last dimension of a tensor of dynamic shape",
    TwoLinear,
    lambda: [(randn(1, n, 16),) for n in (5, 9)],
    dynamic_shapes=({1: torch.export.Dim("n", min=2, max=12)},),
)


fixture(
    "conv_clamp_dynamic",
    ["et_vk.conv_with_clamp.default"],
    "float32 [1,2,n], n dynamic (8..40; cases n 13 and 29): relu(Conv1d(2, 4, 3, stride 2)), a "
    "convolution and its clamp in one call, over a length known only at run time",
    lambda: nn.Sequential(nn.Conv1d(2, 4, 3, stride=2), nn.ReLU()),
    lambda: [(randn(1, 2, n),) for n in (13, 29)],
    dynamic_shapes=({2: torch.export.Dim("n", min=8, max=40)},),
)


class RmsNorms(nn.Module):
    """Two RMS norms written out as transformers' Llama writes them (the
    partitioner fuses each into one call), with a scale and shift between."""

    def __init__(self, features=16, eps=1e-6):
        super().__init__()
        self.first = nn.Parameter(torch.randn(features))
        self.second = nn.Parameter(torch.randn(features))
        self.eps = eps

    def norm(self, x, weight):
        return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))

    def forward(self, x):
        return self.norm(self.norm(x, self.first) * 2.0 + 1.0, self.second)


fixture(
    "rms_norm_dynamic",
    ["et_vk.rms_norm.default"],
    "float32 [1,n,16], n dynamic (2..12; cases n 3 and 10): two RMS norms (eps 1e-6) written out as "
    "Llama's, with x * 2 + 1 between, over a tensor of dynamic shape",
    RmsNorms,
    lambda: [(randn(1, n, 16),) for n in (3, 10)],
    dynamic_shapes=({1: torch.export.Dim("n", min=2, max=12)},),
)


class SymIntInput(nn.Module):
    """A size read from the data before the delegate (``.item()``, which
    stays on the CPU) passed into its graph as a SymInt."""

    def forward(self, x, t):
        m = t.item()
        torch._check(m >= 2)
        torch._check(m <= 8)
        return x[:m] * 2.0, x * 3.0


fixture(
    "sym_int_input",
    ["aten.slice_copy.Tensor"],
    "x[:m] * 2 and x * 3 of float32 [10,4], m = t.item() of an int64 scalar (cases 4 and 7): the "
    "delegate's graph takes m as a SymInt input",
    SymIntInput,
    lambda: [(randn(10, 4), torch.tensor(m)) for m in (4, 7)],
)

fixture(
    "max_pool2d",
    ["aten.max_pool2d.default"],
    "max_pool2d(2) and max_pool2d(3, stride 2, padding 1, ceil_mode) of float32 [1,3,8,7], kept "
    "as max_pool2d (no indices) by preserve_ops",
    fn(lambda x: (F.max_pool2d(x, 2), F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True))),
    twice(lambda: (randn(1, 3, 8, 7),)),
    preserve=(torch.ops.aten.max_pool2d.default,),
)
fixture(
    "grid_priors",
    ["et_vk.grid_priors.default"],
    "et_vk.grid_priors of float32 [1,2,3,5] with stride 8 and offset 0.5, plus x * 2 so the "
    "program reads its input",
    fn(lambda x: (torch.ops.et_vk.grid_priors(x, 8, 0.5), x * 2.0)),
    twice(lambda: (randn(1, 2, 3, 5),)),
    portable_model=fn(lambda x: (grid_priors_impl(x, 8, 0.5), x * 2.0)),
)



class KvAttention(nn.Module):
    """ExecuTorch's LLM attention: the new keys and values written into
    caches at ``start_pos`` (``llama.update_cache``), then causal attention
    over the caches (``llama.custom_sdpa``); the partitioner fuses them into
    ``sdpa_with_kv_cache``. Or, with ``update_only``, the key cache alone."""

    def __init__(self, update_only=False):
        super().__init__()
        self.update_only = update_only
        self.register_buffer("k_cache", torch.zeros(1, 8, 2, 4))
        self.register_buffer("v_cache", torch.zeros(1, 8, 2, 4))

    def forward(self, q, k, v, pos):
        start = pos.item()
        torch._check(start >= 0)
        torch._check(start <= 6)
        torch.ops.llama.update_cache(k, self.k_cache, start)
        if self.update_only:
            return self.k_cache * 2.0
        torch.ops.llama.update_cache(v, self.v_cache, start)
        return torch.ops.llama.custom_sdpa(q, self.k_cache, self.v_cache, start, None, 0.0, True)


def kv_cases():
    """Two steps of decoding: positions 0-1, then 2-3 (the caches keep the
    first step's rows)."""
    return [(randn(1, 2, 4, 4), randn(1, 2, 2, 4), randn(1, 2, 2, 4), torch.tensor(start)) for start in (0, 2)]


fixture(
    "sdpa_with_kv_cache",
    ["sdpa_with_kv_cache.default"],
    "update_cache of float32 [1,2,2,4] keys and values into [1,8,2,4] caches at start_pos (an int64 "
    "scalar read by .item(): 0, then 2) and causal custom_sdpa of [1,2,4,4] queries over them "
    "(grouped heads), which the partitioner fuses; the caches keep their rows across the cases",
    KvAttention,
    kv_cases,
)
fixture(
    "update_cache",
    ["update_cache.default"],
    "update_cache of float32 [1,2,2,4] keys into a [1,8,2,4] cache at start_pos 0, then 2, and the "
    "cache doubled",
    lambda: KvAttention(update_only=True),
    kv_cases,
)

fixture(
    "sdpa",
    ["et_vk.sdpa.default"],
    "et_vk.sdpa of float32 [1,2,3,4] queries over [1,2,5,4] keys and values, with the default scale "
    "and with scale 0.3 and an additive [3,5] mask",
    fn(
        lambda q, k, v, m: (
            torch.ops.et_vk.sdpa(q, k, v, None, None),
            torch.ops.et_vk.sdpa(q, k, v, m, 0.3),
        )
    ),
    twice(lambda: (randn(1, 2, 3, 4), randn(1, 2, 5, 4), randn(1, 2, 5, 4), randn(3, 5))),
    portable_model=fn(lambda q, k, v, m: (sdpa_impl(q, k, v, None, None), sdpa_impl(q, k, v, m, 0.3))),
)

fixture(
    "apply_rotary_emb",
    ["et_vk.apply_rotary_emb.default"],
    "et_vk.apply_rotary_emb of float32 [1,3,4,8] queries and [1,3,2,8] keys by [3,4] cosine and "
    "sine tables (Llama's rotary embedding)",
    fn(lambda q, k, c, s: torch.ops.et_vk.apply_rotary_emb(q, k, c, s)),
    twice(lambda: (randn(1, 3, 4, 8), randn(1, 3, 2, 8), randn(3, 4), randn(3, 4))),
    portable_model=fn(lambda q, k, c, s: apply_rotary_emb_impl(q, k, c, s)),
)
fixture(
    "apply_rotary_emb_interleaved",
    ["et_vk.apply_rotary_emb_interleaved.default"],
    "et_vk.apply_rotary_emb_interleaved of float32 [2,3,8] by [1,3,4,2] (cosine, sine) pairs",
    fn(lambda x, f: torch.ops.et_vk.apply_rotary_emb_interleaved(x, f)),
    twice(lambda: (randn(2, 3, 8), randn(1, 3, 4, 2))),
    portable_model=fn(lambda x, f: apply_rotary_emb_interleaved_impl(x, f)),
)



class HfRotary(nn.Module):
    """Hugging Face's rotary embedding at a position read from the data."""

    def __init__(self, reference=False):
        super().__init__()
        self.reference = reference

    def forward(self, q, k, cos, sin, pos):
        start = pos.item()
        torch._check(start >= 0)
        torch._check(start <= 6)
        rotary = apply_rotary_emb_hf_impl if self.reference else torch.ops.et_vk.apply_rotary_emb_hf
        return rotary(q, k, cos, sin, start)


fixture(
    "apply_rotary_emb_hf",
    ["et_vk.apply_rotary_emb_hf.default"],
    "et_vk.apply_rotary_emb_hf of float32 [1,2,4,6] queries and [1,2,2,6] keys by rows start_pos.. "
    "(an int64 scalar read by .item(): 1, then 5) of [8,4] cosine and sine tables: the first 4 "
    "dimensions of each head rotated, the last 2 kept",
    HfRotary,
    lambda: [
        (randn(1, 2, 4, 6), randn(1, 2, 2, 6), randn(8, 4), randn(8, 4), torch.tensor(start)) for start in (1, 5)
    ],
    portable_model=lambda: HfRotary(reference=True),
)



class ConvAddRelu(nn.Module):
    """Two pointwise convolutions of one input, added, then ReLU."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(4, 6, 1)
        self.b = nn.Conv2d(4, 6, 1)

    def forward(self, x):
        return F.relu(self.a(x) + self.b(x))


def static_int8():
    """XNNPACK's symmetric per-channel static int8 configuration, which the
    Vulkan preprocessing fuses into its ``q8ta_*`` operators."""
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )

    quantizer = XNNPACKQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_per_channel=True, is_dynamic=False))
    return quantizer


def vulkan_weight_only(bits):
    """The Vulkan quantizer's weight-only configuration of ``bits``-bit
    per-channel weights."""
    from executorch.backends.vulkan.quantizer.vulkan_quantizer import (
        VulkanQuantizer,
        get_symmetric_quantization_config,
    )

    quantizer = VulkanQuantizer()
    quantizer.set_global(get_symmetric_quantization_config(is_dynamic=False, weight_bits=bits))
    return quantizer


def quantized(layer, *shape, quantizer=static_int8):
    """A fixture model: ``layer()`` quantized with PT2E by ``quantizer()``,
    calibrated on inputs of ``shape`` drawn from the fixture's seeded
    generator; the converted graph, exported again by the fixture (its
    train/eval switches, which exported graphs refuse, do nothing)."""
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    def make():
        calibration = tuple(randn(*each) for each in shape)
        graph = torch.export.export(layer().eval(), calibration, strict=True).module()
        graph = prepare_pt2e(graph, quantizer())
        graph(*calibration)
        graph = convert_pt2e(graph)
        graph.eval = lambda: graph
        return graph

    return make


fixture(
    "q8ta_conv2d",
    ["et_vk.q8ta_conv2d.default"],
    "PT2E int8 Conv2d(3, 6, 3, padding 1) + ReLU of float32 [1,3,6,6]: weights packed [6, 27 -> 28], "
    "scales and bias padded to 8",
    quantized(lambda: Linear(nn.Conv2d(3, 6, 3, padding=1), F.relu), (1, 3, 6, 6)),
    twice(lambda: (randn(1, 3, 6, 6),)),
)
fixture(
    "q8ta_conv2d_dw",
    ["et_vk.q8ta_conv2d_dw.default"],
    "PT2E int8 depthwise Conv2d(8, 8, 3, stride 2, padding 1, groups 8) of float32 [1,8,7,7]",
    quantized(lambda: nn.Conv2d(8, 8, 3, stride=2, padding=1, groups=8), (1, 8, 7, 7)),
    twice(lambda: (randn(1, 8, 7, 7),)),
)
fixture(
    "q8ta_conv2d_pw",
    ["et_vk.q8ta_conv2d_pw.default"],
    "PT2E int8 pointwise Conv2d(6, 10, 1) of float32 [1,6,4,5]: scales and bias padded to 12",
    quantized(lambda: nn.Conv2d(6, 10, 1), (1, 6, 4, 5)),
    twice(lambda: (randn(1, 6, 4, 5),)),
)
fixture(
    "q8ta_conv2d_transposed",
    ["et_vk.q8ta_conv2d_transposed.default"],
    "PT2E int8 ConvTranspose2d(4, 6, 3, stride 2, padding 1, output_padding 1) of float32 [1,4,3,3]",
    quantized(lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), (1, 4, 3, 3)),
    twice(lambda: (randn(1, 4, 3, 3),)),
)
fixture(
    "q8ta_linear",
    ["et_vk.q8ta_linear.default"],
    "PT2E int8 Linear(12, 6) of float32 [3,12]: scales and bias padded to 8",
    quantized(lambda: nn.Linear(12, 6), (3, 12)),
    twice(lambda: (randn(3, 12),)),
)
fixture(
    "q8ta_linear_gemv",
    ["et_vk.q8ta_linear_gemv.default"],
    "PT2E int8 Linear(12, 5) of float32 [1,12] (one row: the gemv form)",
    quantized(lambda: nn.Linear(12, 5), (1, 12)),
    twice(lambda: (randn(1, 12),)),
)
fixture(
    "q8ta_add",
    ["et_vk.q8ta_add.default", "et_vk.q8ta_conv2d_pw.default"],
    "PT2E int8 ReLU(Conv2d(4, 6, 1)(x) + Conv2d(4, 6, 1)(x)) of float32 [1,4,3,3]: the ReLU is the "
    "output range's clamp",
    quantized(ConvAddRelu, (1, 4, 3, 3)),
    twice(lambda: (randn(1, 4, 3, 3),)),
)
fixture(
    "q8ta_relu",
    ["et_vk.q8ta_relu.default", "et_vk.q8ta_conv2d.default"],
    "PT2E int8 ReLU(max_pool2d(Conv2d(4, 8, 3, padding 1)(x), 2)) of float32 [1,4,4,4]: the ReLU after "
    "the pooling is a quantized ReLU of its own",
    quantized(lambda: Linear(nn.Conv2d(4, 8, 3, padding=1), lambda y: F.relu(F.max_pool2d(y, 2))), (1, 4, 4, 4)),
    twice(lambda: (randn(1, 4, 4, 4),)),
)
fixture(
    "weight_int8pack_mm",
    ["aten._weight_int8pack_mm.default"],
    "Linear(16, 6) of float32 [3,16] with the Vulkan quantizer's weight-only int8 per-channel weights",
    quantized(lambda: nn.Linear(16, 6), (3, 16), quantizer=lambda: vulkan_weight_only(8)),
    twice(lambda: (randn(3, 16),)),
)



def torchao(layer, config, modules=nn.Linear):
    """A fixture model: ``layer()`` with the ``modules`` quantized by
    torchao's ``quantize_(config())``, its tensor subclasses unwrapped into
    plain parameters and torchao operator calls."""
    from torchao.quantization import quantize_
    from torchao.utils import unwrap_tensor_subclass

    def make():
        model = layer().eval()
        quantize_(model, config(), filter_fn=lambda module, _: isinstance(module, modules))
        return unwrap_tensor_subclass(model)

    return make


def decomposed(make, *example, dynamic_shapes=None):
    """The model ``make()`` with torchao's operators (which ExecuTorch's
    portable runtime has no kernels for) decomposed by torchao's own
    decompositions: the portable model of a torchao fixture, traced on the
    ``example`` inputs (with ``dynamic_shapes``, as ``torch.export`` takes
    them)."""
    from torch._inductor.decomposition import decompositions  # torchao registers its own there

    def model():
        exported = torch.export.export(make(), example, dynamic_shapes=dynamic_shapes, strict=True)
        table = {op: f for op, f in decompositions.items() if op.namespace == "torchao"}
        module = exported.run_decompositions(table).module()
        module.eval = lambda: module
        return module

    return model


def weight_only(dtype, group):
    """torchao's weight-only configuration: ``dtype`` weights in groups of
    ``group`` input channels."""
    from torchao.quantization import IntxWeightOnlyConfig
    from torchao.quantization.granularity import PerGroup

    return lambda: IntxWeightOnlyConfig(weight_dtype=dtype, granularity=PerGroup(group))


def dynamic_int8(dtype, group):
    """torchao's 8da configuration (``export_llama``'s ``8da4w``): int8
    activations quantized per row at run time, ``dtype`` weights in groups
    of ``group`` input channels."""
    from torchao.quantization import Int8DynamicActivationIntxWeightConfig
    from torchao.quantization.granularity import PerGroup

    return lambda: Int8DynamicActivationIntxWeightConfig(
        weight_dtype=dtype, weight_granularity=PerGroup(group)
    )


fixture(
    "linear_q4gsw",
    ["et_vk.linear_q4gsw.default"],
    "torchao int4 weight-only Linear(64, 8) in groups of 32 of float32 [3,64]: weights packed two to a "
    "byte, scales transposed to [2, 8] (1.5.1's preprocessing fails on 6 outputs: the reference "
    "cannot view the padded scales)",
    torchao(lambda: nn.Linear(64, 8), weight_only(torch.int4, 32)),
    twice(lambda: (randn(3, 64),)),
    portable_model=decomposed(torchao(lambda: nn.Linear(64, 8), weight_only(torch.int4, 32)), torch.zeros(3, 64)),
)
fixture(
    "linear_dq8ca_q4gsw",
    ["et_vk.linear_dq8ca_q4gsw.default", "torchao.choose_qparams_affine.default"],
    "torchao 8da4w Linear(64, 8) in groups of 32 of float32 [2,3,64]: each row's int8 scale and zero "
    "point chosen at run time (choose_qparams_affine, asymmetric)",
    torchao(lambda: nn.Linear(64, 8, bias=False), dynamic_int8(torch.int4, 32)),
    twice(lambda: (randn(2, 3, 64),)),
    portable_model=decomposed(torchao(lambda: nn.Linear(64, 8, bias=False), dynamic_int8(torch.int4, 32)), torch.zeros(2, 3, 64)),
)
fixture(
    "linear_dq8ca_q4gsw_dynamic",
    ["et_vk.linear_dq8ca_q4gsw.default", "torchao.choose_qparams_affine.default"],
    "torchao 8da4w Linear(64, 8) in groups of 32 of float32 [1,n,64], n dynamic (2..12; cases n 5 "
    "and 9), as export_llama -V -qmode 8da4w writes it: each row's parameters chosen at run time",
    torchao(lambda: nn.Linear(64, 8, bias=False), dynamic_int8(torch.int4, 32)),
    lambda: [(randn(1, n, 64),) for n in (5, 9)],
    dynamic_shapes=({1: torch.export.Dim("n", min=2, max=12)},),
    portable_model=decomposed(
        torchao(lambda: nn.Linear(64, 8, bias=False), dynamic_int8(torch.int4, 32)),
        torch.zeros(1, 5, 64),
        dynamic_shapes=({1: torch.export.Dim("n", min=2, max=12)},),
    ),
)
fixture(
    "linear_qcs4w",
    ["et_vk.linear_qcs4w.default"],
    "Linear(16, 6) of float32 [3,16] with the Vulkan quantizer's weight-only 4-bit per-channel "
    "weights packed into 8 bytes a row, the bias a separate add (1.5.1's preprocessing fails on an "
    "odd number of columns: the reference's shapes disagree)",
    quantized(lambda: nn.Linear(16, 6), (3, 16), quantizer=lambda: vulkan_weight_only(4)),
    twice(lambda: (randn(3, 16),)),
)
fixture(
    "embedding_q4gsw",
    ["et_vk.embedding_q4gsw.default"],
    "torchao int4 weight-only Embedding(10, 32) in groups of 16, indices int64 [2,3]",
    torchao(lambda: nn.Embedding(10, 32), weight_only(torch.int4, 16), nn.Embedding),
    twice(lambda: (ints(0, 10, 2, 3),)),
    portable_model=decomposed(
        torchao(lambda: nn.Embedding(10, 32), weight_only(torch.int4, 16), nn.Embedding),
        torch.zeros(2, 3, dtype=torch.int64),
    ),
)
fixture(
    "dequantize_affine",
    ["torchao.dequantize_affine.default", "aten.linear.default"],
    "torchao int8 weight-only Linear(64, 6) in groups of 32 of float32 [3,64]: the weights "
    "dequantized by torchao's primitive, then a float linear layer",
    torchao(lambda: nn.Linear(64, 6), weight_only(torch.int8, 32)),
    twice(lambda: (randn(3, 64),)),
    portable_model=decomposed(torchao(lambda: nn.Linear(64, 6), weight_only(torch.int8, 32)), torch.zeros(3, 64)),
)


def float_types():
    """The float element types the Vulkan registry admits."""
    return {torch.float16, torch.float32}


def admit_uint8(name, inputs=None, outputs=None):
    """Lets the partitioner delegate the Vulkan operator ``name`` with the
    element types ``inputs`` and ``outputs`` (sets, one per tensor): 1.5.1's
    registry declares the training operators of 4-bit weights but refuses
    their packed uint8 tensors (it admits float ones only), so no program
    of the public flow calls them. The delegate is serialized by
    ExecuTorch's own Vulkan preprocessing all the same."""
    from executorch.backends.vulkan import utils
    from executorch.backends.vulkan.op_registry import vulkan_supported_ops
    from executorch.exir.dialects._ops import ops as exir_ops

    features = vulkan_supported_ops[getattr(exir_ops.edge.et_vk, name).default]
    if inputs is not None:
        features.inputs_dtypes = utils.DtypeSetList(inputs)
    if outputs is not None:
        features.outputs_dtypes = utils.DtypeSetList(outputs)


class Requant(nn.Module):
    """``et_vk.q4gsw_requant`` of the input by fixed group scales (with a
    zero one), or its reference implementation."""

    def __init__(self, reference=False):
        super().__init__()
        admit_uint8("q4gsw_requant", outputs=[{torch.uint8}])
        scales = torch.rand(3, 6) * 0.2 + 0.05
        scales[1, 2] = 0.0
        self.register_buffer("scales", scales)
        self.reference = reference

    def forward(self, latent):
        if not self.reference:
            return torch.ops.et_vk.q4gsw_requant(latent, self.scales, 15)
        # The reference's arithmetic in operators ExecuTorch's portable
        # library has (no shifts): codes per group, the odd ones times 16.
        scales = self.scales.t().repeat_interleave(15, dim=1)
        zero = scales == 0
        q = torch.round(latent / torch.where(zero, torch.ones_like(scales), scales))
        codes = torch.where(zero, torch.zeros_like(q), q).clamp(-8, 7).to(torch.int32) + 8
        codes = F.pad(codes, (0, 1))
        return (codes[:, 0::2] + codes[:, 1::2] * 16).to(torch.uint8)


fixture(
    "q4gsw_requant",
    ["et_vk.q4gsw_requant.default"],
    "et_vk.q4gsw_requant of float32 [6,45] by scales [3, 6] (one zero) in groups of 15: 45 codes "
    "packed into 23 bytes per row, some beyond [-8, 7]; the partitioner's registry patched to admit "
    "the uint8 output, which 1.5.1 refuses",
    Requant,
    twice(lambda: (randn(6, 45) * 1.5,)),
    portable_model=lambda: Requant(reference=True),
)
class Shrink(nn.Module):
    """hardshrink(x, 0.7), exported as leaky_relu(x, 0.7): every flow of
    1.5.1 decomposes hardshrink before the partitioner sees it, and the
    fixture renames the delegate's call (same arguments, same name
    length)."""

    def forward(self, x):
        if torch.compiler.is_exporting():
            return F.leaky_relu(x, 0.7)
        return F.hardshrink(x, 0.7)


fixture(
    "hardshrink",
    ["aten.hardshrink.default"],
    "hardshrink(lambd=0.7) of float32 [4,5] with values at and beside +-0.7 and a NaN: a delegate call "
    "of aten.leaky_relu.default(x, 0.7) renamed, since 1.5.1 decomposes hardshrink in every flow",
    Shrink,
    twice(lambda: (torch.cat([randn(4, 4), torch.tensor([[0.7], [-0.7], [0.69], [float("nan")]])], 1),)),
    portable_model=lambda: Linear(nn.Hardshrink(0.7)),
    rename=("aten.leaky_relu.default", "aten.hardshrink.default"),
)


class Backward(nn.Module):
    """The training operators of a frozen 4-bit linear layer:
    ``et_vk.linear_q4gsw_backward`` (the input's gradient, by packed weights
    [8, 16] in groups of 16 with scales [2, 8]) and ``et_vk.linear_dW``
    (the weight's gradient), or their reference implementations."""

    def __init__(self, reference=False):
        super().__init__()
        admit_uint8("linear_q4gsw_backward", inputs=[float_types(), {torch.uint8}, float_types()], outputs=[float_types()])
        self.register_buffer("weights", torch.randint(0, 256, (8, 16), dtype=torch.uint8))
        self.register_buffer("scales", torch.rand(2, 8) * 0.1 + 0.01)
        self.reference = reference

    def forward(self, d_out, x):
        if self.reference:
            # The references' arithmetic in operators ExecuTorch's portable
            # library has (no shifts): each byte's low nibble first, less 8,
            # times its group's scale.
            packed = self.weights.to(torch.int32)
            codes = torch.stack([packed % 16, packed // 16], -1).reshape(8, 32).float() - 8
            weight = codes * self.scales.t().repeat_interleave(16, dim=1)
            return d_out @ weight, d_out.reshape(-1, 8).t() @ x.reshape(-1, 5)
        d_x = torch.ops.et_vk.linear_q4gsw_backward(d_out, self.weights, self.scales, 16)
        return d_x, torch.ops.et_vk.linear_dW(d_out, x)


fixture(
    "linear_q4gsw_backward",
    ["et_vk.linear_q4gsw_backward.default", "et_vk.linear_dW.default"],
    "et_vk.linear_q4gsw_backward of float32 [2,3,8] by packed 4-bit weights [8, 16] (32 input "
    "features, groups of 16) and et_vk.linear_dW of it and float32 [2,3,5]; the partitioner's "
    "registry patched to admit the uint8 weights, which 1.5.1 refuses",
    Backward,
    twice(lambda: (randn(2, 3, 8), randn(2, 3, 5))),
    portable_model=lambda: Backward(reference=True),
)

class CrossEntropy(nn.Module):
    """``et_vk.fused_ce`` of logits and int32 labels (one negative: a row
    left out) with ``n_valid`` 3, or its reference implementation."""

    def __init__(self, reference=False):
        super().__init__()
        self.reference = reference

    def forward(self, logits, labels):
        if self.reference:
            from executorch.backends.vulkan.custom_ops_lib import fused_ce_impl

            return fused_ce_impl(logits, labels, 3.0)
        return torch.ops.et_vk.fused_ce(logits, labels, 3.0)


fixture(
    "fused_ce",
    ["et_vk.fused_ce.default"],
    "et_vk.fused_ce of float32 [4,6] logits and int32 [4] labels (one of them -1) with n_valid 3: the "
    "summed loss and the logits' gradient",
    CrossEntropy,
    twice(lambda: (randn(4, 6) * 2, torch.tensor([1, -1, 5, 0], dtype=torch.int32))),
    portable_model=lambda: CrossEntropy(reference=True),
)

class Affine(nn.Module):
    """torchao's primitives on their own: parameters chosen per block,
    then the input quantized with them (an int8 output)."""

    def __init__(self, mapping, block):
        super().__init__()
        self.mapping = mapping
        self.block = block

    def forward(self, x):
        scale, zero_point = torch.ops.torchao.choose_qparams_affine(
            x, self.mapping, self.block, torch.int8, -128, 127, None, None, None, False
        )
        q = torch.ops.torchao.quantize_affine(x, self.block, scale, zero_point, torch.int8, -128, 127)
        return q, scale


fixture(
    "quantize_affine",
    ["torchao.quantize_affine.default", "torchao.choose_qparams_affine.default"],
    "torchao's choose_qparams_affine (SYMMETRIC) and quantize_affine of float32 [4,16] in blocks of "
    "[2, 8]",
    lambda: Affine("SYMMETRIC", [2, 8]),
    twice(lambda: (randn(4, 16) * 3,)),
    # A symmetric block's extreme element is exactly -127.5 scales in eager
    # PyTorch, a tie rounded to -128; ExecuTorch's portable run computes the
    # scale one ulp apart and rounds that element to -127 (ptec: eager's).
    portable_tolerance=1.0,
    portable_model=decomposed(lambda: Affine("SYMMETRIC", [2, 8]), torch.zeros(4, 16)),
)

def shifted_window_mask(x):
    """Swin's attention mask for shifted windows: zeros, each region of
    rows and columns numbered in turn (the region's number a constant the
    exporter lifts, which a delegate returns as it is), added to ``x``."""
    mask = x.new_zeros((4, 4))
    count = 0
    for rows in ((0, -2), (-2, None)):
        for columns in ((0, -1), (-1, None)):
            mask[rows[0] : rows[1], columns[0] : columns[1]] = count
            count += 1
    return x + mask


fixture(
    "shifted_window_mask",
    ["aten.full.default", "aten.slice_copy.Tensor"],
    "Swin's shifted-window mask of a float32 [4,4], added to float32 [2,4,4]: the first delegate "
    "returns one of the graph's constants as an output",
    fn(shifted_window_mask),
    twice(lambda: (randn(2, 4, 4),)),
)



class TokenEmbedding(nn.Module):
    """An embedding of int64 token ids, and the ids flattened plus 3."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(10, 4)

    def forward(self, ids):
        return self.embedding(ids), ids.view(-1) + 3


fixture(
    "int64_staged",
    ["aten.embedding.default", "aten.view_copy.default"],
    "Embedding(10, 4) of int64 [2,3] token ids, and the ids flattened plus 3: the partitioner "
    "computes int64 tensors in int32, so the delegate's input and int64 output are converted "
    "as they are staged",
    TokenEmbedding,
    twice(lambda: (torch.randint(0, 10, (2, 3)),)),
)


def delegated_error(data: bytes, fixture: VulkanFixture) -> list[str]:
    """The operators the fixture names that its delegates do not call."""
    program = bytes(deserialize_from_flatbuffer_to_bundled_program(data).program)
    return [call for call in fixture.calls if call.encode() not in program]


def portable_error(fixture: VulkanFixture) -> float:
    """ExecuTorch's largest error on the test cases of the model exported
    without a partitioner (its runtime has no Vulkan backend), its preserved
    operators decomposed (the portable library has no kernel for some)."""
    spec = replace(fixture.spec, preserve=(), make_model=fixture.portable_model or fixture.spec.make_model)
    data, cases, _, _ = export_bundled(spec, None, VARIANT)
    bundled = deserialize_from_flatbuffer_to_bundled_program(data)
    method = Runtime.get().load_program(bytes(bundled.program)).load_method("forward")
    worst = 0.0
    with torch.no_grad():
        for case, inputs in zip(bundled.method_test_suites[0].test_cases, cases):
            outputs = method.execute(list(inputs))
            for got, want in zip(outputs, case.expected_outputs):
                want = torch.frombuffer(
                    bytearray(bytes(want.val.data)), dtype=got.dtype
                ).reshape(list(want.val.sizes))
                worst = max(worst, (got.double() - want.double()).abs().max().item())
    return worst


def write_readme(out_dir: Path, index: dict) -> None:
    lines = [
        "# Vulkan fixtures",
        "",
        "Tiny programs lowered with `VulkanPartitioner` by `scripts/gen_vulkan_fixtures.py` with the",
        "public ExecuTorch 1.5.1 exporter (torch 2.14.0), one per Vulkan operator (or a few related",
        "ones) that the feature fixtures and the shared corpus do not call; `calls` in `index.json`",
        "names the operators of the delegate's graph each one exercises. Each holds two test cases",
        "whose expected outputs come from eager PyTorch. ExecuTorch's runtime here has no Vulkan",
        "backend, so the same model exported without a partitioner was run on it: its largest error",
        "is `executorch_portable_error`. `tests/vulkan.rs` runs them with the JIT and AOT, and",
        "`tests/spirv.rs` on a Vulkan device.",
        "",
        "Regenerate them from the repository root (deterministic: fixed seeds per fixture):",
        "",
        "    $ANCHOR_PY scripts/gen_vulkan_fixtures.py [--only NAME...]",
        "",
        "| file | calls | description | bytes |",
        "|---|---|---|---|",
    ]
    for name, entry in index.items():
        calls = ", ".join(f"`{call}`" for call in entry["calls"])
        lines.append(f"| `{name}` | {calls} | {entry['description']} | {entry['bytes']} |")
    (out_dir / "README.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    args = arguments(__doc__, DEFAULT_OUT_DIR, only=True)
    out_dir = args.out_dir
    names = [f.spec.name for f in FIXTURES]
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        print(f"no such fixtures: {unknown}", file=sys.stderr)
        return 1
    index = {}
    index_file = out_dir / "index.json"
    if args.only and index_file.exists():
        index = json.loads(index_file.read_text())
    problems = []
    for fixture in FIXTURES:
        spec = fixture.spec
        if args.only and spec.name not in args.only:
            continue
        file_name = f"{spec.name}.{VARIANT}.bpte"
        data, cases, outputs, operators = export_bundled(spec, [VulkanPartitioner()], VARIANT)
        if fixture.rename:
            old, new = (name.encode() for name in fixture.rename)
            if len(old) != len(new) or data.count(old) != 1:
                problems.append(f"{file_name}: cannot rename the one {old} into {new}")
            data = data.replace(old, new)
        missing = delegated_error(data, fixture)
        error = portable_error(fixture)
        if missing:
            problems.append(f"{file_name}: the delegate does not call {missing}")
        if error > fixture.portable_tolerance:
            problems.append(f"{file_name}: ExecuTorch's portable program is {error} off")
        entry = index_entry(spec, data, cases, outputs, operators, VARIANT)
        entry["calls"] = list(fixture.calls)
        entry["executorch_portable_error"] = error
        (out_dir / file_name).write_bytes(data)
        index[file_name] = entry
        print(f"wrote {file_name} ({len(data)} bytes, portable error {error:.2e})", flush=True)
    order = [f"{name}.{VARIANT}.bpte" for name in names]
    index = {name: index[name] for name in order if name in index}
    with open(index_file, "w") as out:
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
