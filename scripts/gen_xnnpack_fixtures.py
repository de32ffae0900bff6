"""Generate ptec's XNNPACK test fixtures with the public ExecuTorch exporter.

Each fixture is a tiny model lowered with ``XnnpackPartitioner`` (fp32), so that
its work runs in XNNPACK delegate payloads: together they cover the XNNPACK node
types and layouts the shared corpus does not (elementwise nodes, slices, pads,
concatenations of three to five inputs, pooling whose ceil mode becomes
asymmetric padding, grouped and depthwise-multiplier convolutions, matrix
products in their several forms, a channels-last input). Each has two test cases
whose expected outputs come from eager PyTorch.

Files are named ``<name>.xnnpack.bpte``; the script also writes ``index.json``
(per file: description, the operators left outside the delegates, input and
output dtypes and shapes, size, SHA-256) and ``README.md``. Seeds are fixed per
fixture, so a second run writes byte-identical files.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_xnnpack_fixtures.py [OUT_DIR]      # default: tests/fixtures/xnnpack
"""

import json
import sys
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F
from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fixtures import check_sizes  # noqa: E402  (sibling script)
from gen_op_fixtures import (  # noqa: E402
    OpFixture,
    export_bundled,
    fn,
    index_entry,
    out_dir_argument,
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
]


def write_readme(out_dir: Path, index: dict) -> None:
    lines = [
        "# XNNPACK fixtures",
        "",
        "Tiny models lowered with `XnnpackPartitioner` (fp32) by `scripts/gen_xnnpack_fixtures.py`",
        "with the public ExecuTorch 1.5.1 exporter (torch 2.14.0). They cover the XNNPACK node types and",
        "layouts the shared corpus does not; each holds two test cases whose expected outputs come from",
        "eager PyTorch. `index.json` lists each file's description, the operators left outside the",
        "delegates, input and output dtypes and shapes, size and SHA-256; `ptec inspect` shows the node",
        "types of each delegate.",
        "",
        "Regenerate them from the repository root (deterministic: fixed seeds per fixture):",
        "",
        "    $ANCHOR_PY scripts/gen_xnnpack_fixtures.py",
        "",
        "| file | description | bytes |",
        "|---|---|---|",
    ]
    for name, entry in index.items():
        lines.append(f"| `{name}` | {entry['description']} | {entry['bytes']} |")
    (out_dir / "README.md").write_text("\n".join(lines) + "\n")


def main() -> int:
    out_dir = out_dir_argument(__doc__, DEFAULT_OUT_DIR)

    index = {}
    for spec in FIXTURES:
        file_name = f"{spec.name}.{VARIANT}.bpte"
        data, cases, outputs, operators = export_bundled(spec, [XnnpackPartitioner()], VARIANT)
        (out_dir / file_name).write_bytes(data)
        index[file_name] = index_entry(spec, data, cases, outputs, operators, VARIANT)
        print(f"wrote {file_name} ({len(data)} bytes)", flush=True)

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
