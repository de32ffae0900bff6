"""Generate ptec's per-operator test fixtures with the public ExecuTorch exporter.

Each fixture is a portable bundled program (``.bpte``, no delegation: every
operator is a KernelCall) that exercises one ATen operator on one dtype class,
or one edge case PyTorch defines (NaN/inf propagation, empty and 0-dim tensors,
integer overflow, division by zero, negative dims, broadcasting). Each has two
test cases with different inputs; expected outputs come from eager PyTorch.
Shapes are tiny, so every file stays a few KB.

Files are named ``<op>[_<variant>].portable.bpte``. The script also writes
``index.json`` (per file: op, description, the operators of the exported
program's execution plan, input and output dtypes and shapes, size, SHA-256)
and ``README.md`` (the same list, plus the fixtures that failed to export).

Weights and inputs come from a fixed seed per fixture, so the output is
reproducible as long as the exporter itself is deterministic. A fixture that
fails to export or lower is printed, skipped and listed in README.md; the
script exits with status 1 if more than a quarter of the fixtures fail (a
broken environment) or if the files grow too large to commit.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_op_fixtures.py [OUT_DIR]      # default: tests/fixtures/ops
    $ANCHOR_PY scripts/gen_op_fixtures.py --only NAME... # just these fixtures; the
                                                         # others' files and entries stay
"""

import argparse
import copy
import hashlib
import json
import math
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import torch
import torch.nn as nn
import torch.nn.functional as F
from executorch.devtools import BundledProgram
from executorch.devtools.bundled_program.config import MethodTestCase, MethodTestSuite
from executorch.devtools.bundled_program.serialize import (
    serialize_from_bundled_program_to_flatbuffer,
)
from executorch.exir import EdgeCompileConfig, to_edge, to_edge_transform_and_lower

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fixtures import check_sizes, dtype_name, seed_for  # noqa: E402  (sibling script)

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "ops"
VARIANT = "portable"

# Fixtures are committed to the repository, so each one must stay small.
MAX_FIXTURE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 1536 * 1024  # raised as the operator families grew (issue 13)
# More failed exports than this fraction means the environment is broken.
MAX_FAILED_FRACTION = 0.25

Inputs = tuple[torch.Tensor, ...]

NAN, INF = math.nan, math.inf
I32_MAX, I32_MIN = 2**31 - 1, -(2**31)
I64_MAX, I64_MIN = 2**63 - 1, -(2**63)


# ---------------------------------------------------------------- models


class Fn(nn.Module):
    """A module whose forward is a plain function of its inputs."""

    def __init__(self, fn: Callable):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def fn(f: Callable) -> Callable[[], nn.Module]:
    return lambda: Fn(f)


def layer_norm(shape, affine: bool) -> nn.Module:
    """LayerNorm with a random affine transform (the default one is the identity)."""
    model = nn.LayerNorm(shape, elementwise_affine=affine)
    if affine:
        with torch.no_grad():
            model.weight.copy_(torch.rand(shape) + 0.5)
            model.bias.copy_(torch.randn(shape))
    return model


def batch_norm(channels: int) -> nn.Module:
    """BatchNorm2d in eval mode with random running statistics and affine transform."""
    model = nn.BatchNorm2d(channels)
    with torch.no_grad():
        model.running_mean.copy_(torch.randn(channels))
        model.running_var.copy_(torch.rand(channels) + 0.5)
        model.weight.copy_(torch.rand(channels) + 0.5)
        model.bias.copy_(torch.randn(channels))
    return model


# ---------------------------------------------------------------- inputs
#
# Every helper draws from the global generator, which export_bundled seeds per
# fixture, so each call of a fixture's make_cases returns the same inputs.


def randn(*shape, dtype=torch.float32) -> torch.Tensor:
    return torch.randn(shape).to(dtype)


def positive(*shape) -> torch.Tensor:
    """Values in [0.1, 3.1): safe for log, sqrt, rsqrt and fractional powers."""
    return torch.rand(shape) * 3.0 + 0.1


def away_from_zero(*shape) -> torch.Tensor:
    """Values of either sign with magnitude in [0.5, 2.5): safe divisors."""
    sign = torch.randint(0, 2, shape).float() * 2.0 - 1.0
    return sign * (torch.rand(shape) * 2.0 + 0.5)


def ints(low: int, high: int, *shape, dtype=torch.int64) -> torch.Tensor:
    return torch.randint(low, high, shape, dtype=dtype)


def nonzero_ints(*shape, bound: int = 7) -> torch.Tensor:
    """int64 values in [-bound, bound] without zero."""
    magnitude = torch.randint(1, bound + 1, shape)
    sign = torch.randint(0, 2, shape) * 2 - 1
    return magnitude * sign


def bools(*shape) -> torch.Tensor:
    return torch.rand(shape) > 0.5


def halves(*shape) -> torch.Tensor:
    """Coarse values (multiples of 0.5 in [-2, 2]): comparisons see ties."""
    return torch.randint(-4, 5, shape).float() * 0.5


def planted(base: torch.Tensor, values) -> torch.Tensor:
    """``base`` with ``values`` written at distinct random flat positions."""
    out = base.clone()
    flat = out.view(-1)
    positions = torch.randperm(flat.numel())[: len(values)]
    flat[positions] = torch.tensor(values, dtype=out.dtype)
    return out


def with_specials(*shape, values=(NAN, INF, -INF)) -> torch.Tensor:
    """Standard normal values with NaN, +inf and -inf planted at random positions."""
    return planted(torch.randn(shape), values)


def rounding_ties(*shape) -> torch.Tensor:
    """Values up to +-4 including exact halves, where round() rounds to even."""
    return planted(torch.randn(shape) * 2.0, (-2.5, -1.5, -0.5, 0.5, 1.5, 2.5))


def signed_zeros(*shape) -> torch.Tensor:
    return planted(torch.randn(shape), (0.0, -0.0, 0.0))


def fractional(*shape) -> torch.Tensor:
    """Values in (-50, 50) with fractional parts: float -> int truncates toward zero."""
    return planted(torch.randn(shape) * 20.0, (-2.7, 2.7, -0.5, 0.5, -0.0))


def near(limit: int, sign: int, *shape, dtype) -> torch.Tensor:
    """Integers within 1000 of ``limit``, on the side of zero (sign -1 moves down from
    a maximum, +1 up from a minimum)."""
    return torch.full(shape, limit, dtype=dtype) + sign * torch.randint(0, 1000, shape, dtype=dtype)


def twice(make: Callable[[], Inputs]) -> Callable[[], list[Inputs]]:
    """Two test cases drawn one after the other from the same generator."""
    return lambda: [make() for _ in range(2)]


def add_overflow_cases(dtype, high: int, low: int) -> Callable[[], list[Inputs]]:
    """x + y where row 0 passes the maximum and row 1 passes the minimum."""

    def make():
        x = torch.stack([near(high, -1, 6, dtype=dtype), near(low, 1, 6, dtype=dtype)])
        step = torch.randint(1000, 5000, (2, 6), dtype=dtype)
        y = torch.stack([step[0], -step[1]])
        return (x, y)

    return twice(make)


def sub_overflow_cases(dtype, high: int, low: int) -> Callable[[], list[Inputs]]:
    """x - y where row 0 passes the minimum and row 1 passes the maximum."""

    def make():
        x = torch.stack([near(low, 1, 6, dtype=dtype), near(high, -1, 6, dtype=dtype)])
        step = torch.randint(1000, 5000, (2, 6), dtype=dtype)
        y = torch.stack([step[0], -step[1]])
        return (x, y)

    return twice(make)


def softmax_specials() -> torch.Tensor:
    """Rows: +inf, all -inf (fully masked), some -inf (partly masked), NaN, finite."""
    x = torch.randn(5, 6)
    x[0, torch.randint(0, 6, ()).item()] = INF
    x[1, :] = -INF
    x[2, torch.randperm(6)[:3]] = -INF
    x[3, torch.randint(0, 6, ()).item()] = NAN
    return x


def sum_specials() -> torch.Tensor:
    """Rows: one NaN, one +inf, +inf and -inf (NaN sum), -inf, finite."""
    x = torch.randn(5, 6)
    columns = torch.randperm(6)
    x[0, columns[0]] = NAN
    x[1, columns[1]] = INF
    x[2, columns[2]] = INF
    x[2, columns[3]] = -INF
    x[3, columns[4]] = -INF
    return x


def zero_divisors() -> Inputs:
    """Numerators of both signs and zero; divisors with zeros: x/0 = +-inf, 0/0 = NaN."""
    x = planted(torch.randn(3, 5), (1.0, -1.0, 0.0, 0.0))
    y = torch.randn(3, 5)
    flat_x, flat_y = x.view(-1), y.view(-1)
    zeros = (flat_x == 0).nonzero().view(-1).tolist()
    ones = ((flat_x == 1.0) | (flat_x == -1.0)).nonzero().view(-1).tolist()
    for i in zeros + ones:
        flat_y[i] = 0.0
    flat_y[ones[0]] = -0.0
    return (x, y)


# ---------------------------------------------------------------- fixture specs


@dataclass(frozen=True)
class OpFixture:
    """One operator (or edge case) and its test inputs.

    ``make_cases`` returns the inputs of every test case; the first one is also
    the example input given to the exporter. ``preserve`` lists ATen operators
    the exporter must keep rather than decompose (``EdgeCompileConfig``'s
    ``preserve_ops``), for kernels such as ``stack`` or ``roll`` that a program
    only calls when it is exported so.
    """

    name: str
    op: str
    description: str
    make_model: Callable[[], nn.Module]
    make_cases: Callable[[], list[Inputs]]
    # Operators the exporter must keep rather than decompose into core ATen
    # (``aten::glu.out`` is otherwise a slice, a sigmoid and a product).
    preserve: tuple = ()
    # ``torch.export``'s dynamic_shapes (dynamic dimensions of the inputs).
    dynamic_shapes: tuple | None = None


FIXTURES: list[OpFixture] = []


def fixture(
    name: str, op: str, description: str, make_model, make_cases, preserve: tuple = (), dynamic_shapes=None
) -> None:
    FIXTURES.append(OpFixture(name, op, description, make_model, make_cases, preserve, dynamic_shapes))


def unary(name: str, op: str, f: Callable, make_input: Callable[[], torch.Tensor], note: str = "") -> None:
    description = f"{op} on float32 [3,5]" + (f" ({note})" if note else "")
    fixture(name, op, description, fn(f), twice(lambda: (make_input(),)))


# ---- elementwise unary (float32)

unary("abs", "abs", torch.abs, lambda: randn(3, 5))
unary("neg", "neg", torch.neg, lambda: randn(3, 5))
unary("relu", "relu", torch.relu, lambda: randn(3, 5))
unary("sigmoid", "sigmoid", torch.sigmoid, lambda: randn(3, 5) * 4.0)
unary("tanh", "tanh", torch.tanh, lambda: randn(3, 5) * 2.0)
unary("exp", "exp", torch.exp, lambda: randn(3, 5) * 2.0)
unary("log", "log", torch.log, lambda: positive(3, 5), "positive inputs")
unary("sqrt", "sqrt", torch.sqrt, lambda: positive(3, 5), "positive inputs")
unary("rsqrt", "rsqrt", torch.rsqrt, lambda: positive(3, 5), "positive inputs")
unary("reciprocal", "reciprocal", torch.reciprocal, lambda: away_from_zero(3, 5), "|x| >= 0.5")
unary("sin", "sin", torch.sin, lambda: randn(3, 5) * 3.0)
unary("tan", "tan", torch.tan, lambda: randn(3, 5) * 1.5, "crosses the poles at +-pi/2")
unary("cos", "cos", torch.cos, lambda: randn(3, 5) * 3.0)
unary("erf", "erf", torch.erf, lambda: randn(3, 5))
unary("floor", "floor", torch.floor, lambda: rounding_ties(3, 5), "negative values and exact halves")
unary("ceil", "ceil", torch.ceil, lambda: rounding_ties(3, 5), "negative values and exact halves")
unary("round", "round", torch.round, lambda: rounding_ties(3, 5), "exact halves round half to even")
unary("trunc", "trunc", torch.trunc, lambda: rounding_ties(3, 5), "negative values and exact halves")
unary("sign", "sign", torch.sign, lambda: signed_zeros(3, 5), "includes 0.0 and -0.0")
unary("hardswish", "hardswish", F.hardswish, lambda: randn(3, 5) * 4.0, "spans both knees at -3 and 3")
unary("hardsigmoid", "hardsigmoid", F.hardsigmoid, lambda: randn(3, 5) * 4.0, "spans both knees at -3 and 3")
unary("silu", "silu", F.silu, lambda: randn(3, 5) * 3.0)
unary("gelu", "gelu", F.gelu, lambda: randn(3, 5) * 2.0, "approximate='none'")
unary("gelu_tanh", "gelu", lambda x: F.gelu(x, approximate="tanh"), lambda: randn(3, 5) * 2.0, "approximate='tanh'")
unary("hardtanh", "hardtanh", F.hardtanh, lambda: randn(3, 5) * 2.0, "default bounds -1, 1")
unary("hardtanh_relu6", "hardtanh", lambda x: F.hardtanh(x, 0.0, 6.0), lambda: randn(3, 5) * 5.0, "bounds 0, 6")
unary("clamp_min", "clamp", lambda x: torch.clamp(x, min=-0.5), lambda: randn(3, 5), "min=-0.5 only")
unary("clamp_max", "clamp", lambda x: torch.clamp(x, max=0.25), lambda: randn(3, 5), "max=0.25 only")
unary("clamp", "clamp", lambda x: torch.clamp(x, -0.5, 0.75), lambda: randn(3, 5), "min=-0.5, max=0.75")
unary("leaky_relu", "leaky_relu", lambda x: F.leaky_relu(x, 0.1), lambda: randn(3, 5), "negative_slope=0.1")
unary("elu", "elu", F.elu, lambda: randn(3, 5) * 2.0)
unary("log1p", "log1p", torch.log1p, lambda: positive(3, 5) - 0.05, "inputs > -1")
unary("expm1", "expm1", torch.expm1, lambda: randn(3, 5))
unary("softplus", "softplus", F.softplus, lambda: randn(3, 5) * 10.0, "crosses the linear threshold 20")
fixture(
    "logical_not",
    "logical_not",
    "logical_not on bool [3,5]",
    fn(torch.logical_not),
    twice(lambda: (bools(3, 5),)),
)


# ---- binary with broadcasting (float32)

fixture(
    "add",
    "add",
    "x + y, float32 [3,4] + [4]",
    fn(torch.add),
    twice(lambda: (randn(3, 4), randn(4))),
)
fixture(
    "add_alpha",
    "add",
    "torch.add(x, y, alpha=2.5), float32 [2,3,4] + [3,1]",
    fn(lambda x, y: torch.add(x, y, alpha=2.5)),
    twice(lambda: (randn(2, 3, 4), randn(3, 1))),
)
fixture(
    "add_scalar",
    "add",
    "x + 1.5, float32 [3,4] and a Python scalar",
    fn(lambda x: x + 1.5),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "sub_alpha",
    "sub",
    "torch.sub(x, y, alpha=0.5), float32 [3,4] - [3,1]",
    fn(lambda x, y: torch.sub(x, y, alpha=0.5)),
    twice(lambda: (randn(3, 4), randn(3, 1))),
)
fixture(
    "rsub_scalar",
    "rsub",
    "2.0 - x, float32 [3,4]",
    fn(lambda x: 2.0 - x),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "mul",
    "mul",
    "x * y, float32 [2,3,4] * [4]",
    fn(torch.mul),
    twice(lambda: (randn(2, 3, 4), randn(4))),
)
fixture(
    "mul_scalar",
    "mul",
    "x * -3.0, float32 [3,4]",
    fn(lambda x: x * -3.0),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "div",
    "div",
    "x / y, float32 [3,4] / [3,1], |y| >= 0.5",
    fn(torch.div),
    twice(lambda: (randn(3, 4), away_from_zero(3, 1))),
)
fixture(
    "maximum",
    "maximum",
    "torch.maximum(x, y), float32 [3,4] and [4]",
    fn(torch.maximum),
    twice(lambda: (randn(3, 4), randn(4))),
)
fixture(
    "minimum",
    "minimum",
    "torch.minimum(x, y), float32 [3,4] and [3,1]",
    fn(torch.minimum),
    twice(lambda: (randn(3, 4), randn(3, 1))),
)
fixture(
    "pow_scalar_2",
    "pow",
    "x ** 2, float32 [3,4] of both signs",
    fn(lambda x: x**2),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "pow_scalar_half",
    "pow",
    "x ** 0.5, float32 [3,4], positive x",
    fn(lambda x: x**0.5),
    twice(lambda: (positive(3, 4),)),
)
fixture(
    "pow_scalar_3",
    "pow",
    "x ** 3, float32 [3,4] of both signs",
    fn(lambda x: x**3),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "pow_tensor",
    "pow",
    "x ** y, float32 [3,4] ** [4], positive base, exponents of both signs",
    fn(torch.pow),
    twice(lambda: (positive(3, 4), randn(4))),
)
fixture(
    "remainder",
    "remainder",
    "torch.remainder(x, y), float32 [3,4] and [4], operands of both signs (result takes the divisor's sign)",
    fn(torch.remainder),
    twice(lambda: (randn(3, 4) * 4.0, away_from_zero(4))),
)
fixture(
    "floor_divide",
    "floor_divide",
    "torch.floor_divide(x, y), float32 [3,4] and [4], operands of both signs (rounds toward -inf)",
    fn(torch.floor_divide),
    twice(lambda: (randn(3, 4) * 4.0, away_from_zero(4))),
)

COMPARISONS = {
    "eq": torch.eq,
    "ne": torch.ne,
    "lt": torch.lt,
    "le": torch.le,
    "gt": torch.gt,
    "ge": torch.ge,
}
for _name, _op in COMPARISONS.items():
    fixture(
        _name,
        _name,
        f"{_name}(x, y) -> bool, float32 [3,4] and [4], multiples of 0.5 so ties occur",
        fn(_op),
        twice(lambda: (halves(3, 4), halves(4))),
    )
    fixture(
        f"{_name}_scalar",
        _name,
        f"{_name}(x, 0.5) -> bool, float32 [3,4], multiples of 0.5 so ties occur",
        fn(lambda x, _op=_op: _op(x, 0.5)),
        twice(lambda: (halves(3, 4),)),
    )
for _name, _op in {"logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor}.items():
    fixture(
        _name,
        _name,
        f"{_name}(x, y) on bool [3,4] and [4]",
        fn(_op),
        twice(lambda: (bools(3, 4), bools(4))),
    )
fixture(
    "where",
    "where",
    "torch.where(cond, x, y), bool [3,1,4], float32 [3,5,4] and [4] (broadcast)",
    fn(torch.where),
    twice(lambda: (bools(3, 1, 4), randn(3, 5, 4), randn(4))),
)
fixture(
    "where_scalar",
    "where",
    "torch.where(x > 0, x, 0.0), float32 [3,4] (masked fill with a scalar)",
    fn(lambda x: torch.where(x > 0, x, 0.0)),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "masked_fill",
    "masked_fill",
    "x.masked_fill(mask, -1e4), float32 [2,3,4], bool mask [3,4] (broadcast)",
    fn(lambda x, m: x.masked_fill(m, -1e4)),
    twice(lambda: (randn(2, 3, 4), bools(3, 4))),
)


# ---- other float dtypes

fixture(
    "add_float16",
    "add",
    "x + y, float16 [3,4] + [4]",
    fn(torch.add),
    twice(lambda: (randn(3, 4, dtype=torch.float16), randn(4, dtype=torch.float16))),
)
fixture(
    "exp_float16",
    "exp",
    "exp on float16 [3,5], |x| up to ~12 (exp overflows float16 above 11.09), with NaN and infinities",
    fn(torch.exp),
    twice(lambda: (with_specials(3, 5, values=(NAN, INF, -INF, 11.5)).mul(3.0).to(torch.float16),)),
)
fixture(
    "mul_add_float16",
    "mul",
    "x * 0.1 + y, float16 [3,4]: each op rounds to float16 (a fused chain must too)",
    fn(lambda x, y: x * 0.1 + y),
    twice(lambda: (randn(3, 4, dtype=torch.float16), randn(3, 4, dtype=torch.float16))),
)
fixture(
    "to_bfloat16",
    "_to_copy",
    "x.to(torch.bfloat16), float32 [3,5]",
    fn(lambda x: x.to(torch.bfloat16)),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "add_float64",
    "add",
    "x + y, float64 [3,4] + [4]",
    fn(torch.add),
    twice(lambda: (randn(3, 4, dtype=torch.float64), randn(4, dtype=torch.float64))),
)


# ---- integer dtypes

fixture(
    "add_int32_overflow",
    "add",
    "x + y, int32 [2,6]: row 0 wraps past INT32_MAX, row 1 wraps past INT32_MIN",
    fn(torch.add),
    add_overflow_cases(torch.int32, I32_MAX, I32_MIN),
)
fixture(
    "sub_int32_overflow",
    "sub",
    "x - y, int32 [2,6]: row 0 wraps past INT32_MIN, row 1 wraps past INT32_MAX",
    fn(torch.sub),
    sub_overflow_cases(torch.int32, I32_MAX, I32_MIN),
)
fixture(
    "mul_int32_overflow",
    "mul",
    "x * y, int32 [3,4], |x|,|y| < 200000 so most products wrap",
    fn(torch.mul),
    twice(lambda: (ints(-200000, 200000, 3, 4, dtype=torch.int32), ints(-200000, 200000, 3, 4, dtype=torch.int32))),
)
fixture(
    "add_int64_overflow",
    "add",
    "x + y, int64 [2,6]: row 0 wraps past INT64_MAX, row 1 wraps past INT64_MIN",
    fn(torch.add),
    add_overflow_cases(torch.int64, I64_MAX, I64_MIN),
)
fixture(
    "sub_int64_overflow",
    "sub",
    "x - y, int64 [2,6]: row 0 wraps past INT64_MIN, row 1 wraps past INT64_MAX",
    fn(torch.sub),
    sub_overflow_cases(torch.int64, I64_MAX, I64_MIN),
)
fixture(
    "mul_int64_overflow",
    "mul",
    "x * y, int64 [3,4], |x|,|y| < 2**40 so most products wrap",
    fn(torch.mul),
    twice(lambda: (ints(-(2**40), 2**40, 3, 4), ints(-(2**40), 2**40, 3, 4))),
)
fixture(
    "add_int64_broadcast",
    "add",
    "x + y, int64 [3,4] + [4], small values",
    fn(torch.add),
    twice(lambda: (ints(-100, 100, 3, 4), ints(-100, 100, 4))),
)
fixture(
    "add_uint8_overflow",
    "add",
    "x + y, uint8 [3,4], sums above 255 wrap",
    fn(torch.add),
    twice(lambda: (ints(100, 256, 3, 4, dtype=torch.uint8), ints(0, 256, 3, 4, dtype=torch.uint8))),
)
fixture(
    "add_int32_float32",
    "add",
    "x + y, int32 [3,4] + float32 [4] -> float32 (type promotion)",
    fn(torch.add),
    twice(lambda: (ints(-100, 100, 3, 4, dtype=torch.int32), randn(4))),
)
fixture(
    "add_int64_int32",
    "add",
    "x + y, int64 [3,4] + int32 [4] -> int64 (type promotion)",
    fn(torch.add),
    twice(lambda: (ints(-(2**40), 2**40, 3, 4), ints(-1000, 1000, 4, dtype=torch.int32))),
)
fixture(
    "mul_int64_scalar",
    "mul",
    "x * 3, int64 [3,4]",
    fn(lambda x: x * 3),
    twice(lambda: (ints(-1000, 1000, 3, 4),)),
)
fixture(
    "div_int64",
    "div",
    "x / y, int64 [3,4] / [4] -> float32 (true division), nonzero divisors of both signs",
    fn(torch.div),
    twice(lambda: (ints(-50, 50, 3, 4), nonzero_ints(4))),
)
fixture(
    "floor_divide_int64",
    "floor_divide",
    "torch.floor_divide(x, y), int64 [3,4] and [4], negative operands, nonzero divisors (rounds toward -inf)",
    fn(torch.floor_divide),
    twice(lambda: (ints(-50, 50, 3, 4), nonzero_ints(4))),
)
fixture(
    "div_floor_int64",
    "div",
    "torch.div(x, y, rounding_mode='floor'), int64 [3,4] and [4], negative operands",
    fn(lambda x, y: torch.div(x, y, rounding_mode="floor")),
    twice(lambda: (ints(-50, 50, 3, 4), nonzero_ints(4))),
)
fixture(
    "div_trunc_int64",
    "div",
    "torch.div(x, y, rounding_mode='trunc'), int64 [3,4] and [4], negative operands",
    fn(lambda x, y: torch.div(x, y, rounding_mode="trunc")),
    twice(lambda: (ints(-50, 50, 3, 4), nonzero_ints(4))),
)
fixture(
    "remainder_int64",
    "remainder",
    "torch.remainder(x, y), int64 [3,4] and [4], negative operands (result takes the divisor's sign)",
    fn(torch.remainder),
    twice(lambda: (ints(-50, 50, 3, 4), nonzero_ints(4))),
)
for _name, _op in COMPARISONS.items():
    fixture(
        f"{_name}_int64",
        _name,
        f"{_name}(x, y) -> bool, int64 [3,4] and [4] in [-3, 3] so ties occur",
        fn(_op),
        twice(lambda: (ints(-3, 4, 3, 4), ints(-3, 4, 4))),
    )
fixture(
    "gt_int64_scalar",
    "gt",
    "x > 1 -> bool, int64 [3,4] in [-3, 3]",
    fn(lambda x: x > 1),
    twice(lambda: (ints(-3, 4, 3, 4),)),
)
fixture(
    "sum_int32",
    "sum",
    "x.sum() and x.sum(dim=-1), int32 [3,4] near 2**30 -> int64 (sums exceed INT32_MAX)",
    fn(lambda x: (x.sum(), x.sum(dim=-1))),
    twice(lambda: (ints(2**30 - 1000, 2**30, 3, 4, dtype=torch.int32),)),
)
fixture(
    "cumsum_int64",
    "cumsum",
    "torch.cumsum(x, dim=-1), int64 [3,5]",
    fn(lambda x: torch.cumsum(x, dim=-1)),
    twice(lambda: (ints(-100, 100, 3, 5),)),
)
fixture(
    "argmax_int64",
    "argmax",
    "torch.argmax(x, dim=1), int64 [3,6] in [0, 3] so ties occur (first maximum wins)",
    fn(lambda x: torch.argmax(x, dim=1)),
    twice(lambda: (ints(0, 4, 3, 6),)),
)
fixture(
    "neg_int64",
    "neg",
    "-x, int64 [3,4]",
    fn(torch.neg),
    twice(lambda: (ints(-1000, 1000, 3, 4),)),
)
fixture(
    "abs_int32",
    "abs",
    "abs(x), int32 [3,4]",
    fn(torch.abs),
    twice(lambda: (ints(-1000, 1000, 3, 4, dtype=torch.int32),)),
)


# ---- casts

fixture(
    "to_int32_from_float32",
    "_to_copy",
    "x.to(torch.int32), float32 [3,5] with fractions of both signs (truncates toward zero)",
    fn(lambda x: x.to(torch.int32)),
    twice(lambda: (fractional(3, 5),)),
)
fixture(
    "to_int64_from_float32",
    "_to_copy",
    "x.to(torch.int64), float32 [3,5] with fractions of both signs (truncates toward zero)",
    fn(lambda x: x.to(torch.int64)),
    twice(lambda: (fractional(3, 5),)),
)
fixture(
    "to_float32_from_int64",
    "_to_copy",
    "x.to(torch.float32), int64 [3,5]",
    fn(lambda x: x.to(torch.float32)),
    twice(lambda: (ints(-100000, 100000, 3, 5),)),
)
fixture(
    "to_bool_from_float32",
    "_to_copy",
    "x.to(torch.bool), float32 [3,5] including 0.0, -0.0 and NaN (NaN is true)",
    fn(lambda x: x.to(torch.bool)),
    twice(lambda: (planted(torch.randn(3, 5), (0.0, -0.0, 0.0, NAN)),)),
)
fixture(
    "to_float32_from_bool",
    "_to_copy",
    "x.to(torch.float32), bool [3,5]",
    fn(lambda x: x.to(torch.float32)),
    twice(lambda: (bools(3, 5),)),
)
fixture(
    "to_int64_from_int32",
    "_to_copy",
    "x.to(torch.int64), int32 [3,5] of both signs",
    fn(lambda x: x.to(torch.int64)),
    twice(lambda: (ints(I32_MIN, I32_MAX, 3, 5, dtype=torch.int32),)),
)


# ---- shape and layout

fixture(
    "permute",
    "permute",
    "x.permute(2, 0, 1), float32 [2,3,4]",
    fn(lambda x: x.permute(2, 0, 1)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "permute_negative",
    "permute",
    "x.permute(-1, -3, -2), float32 [2,3,4]",
    fn(lambda x: x.permute(-1, -3, -2)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "transpose",
    "transpose",
    "x.transpose(-1, -3), float32 [2,3,4]",
    fn(lambda x: x.transpose(-1, -3)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "t",
    "t",
    "x.t(), float32 [3,5]",
    fn(lambda x: x.t()),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "expand",
    "expand",
    "x.expand(2, -1, 4), float32 [3,1] -> [2,3,4]",
    fn(lambda x: x.expand(2, -1, 4)),
    twice(lambda: (randn(3, 1),)),
)
fixture(
    "view",
    "view",
    "x.view(-1, 6), float32 [2,3,4]",
    fn(lambda x: x.view(-1, 6)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "reshape_transposed",
    "reshape",
    "x.t().reshape(-1), float32 [3,5] (reshape of a non-contiguous tensor copies)",
    fn(lambda x: x.t().reshape(-1)),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "flatten",
    "flatten",
    "x.flatten(1), float32 [2,3,2,2]",
    fn(lambda x: x.flatten(1)),
    twice(lambda: (randn(2, 3, 2, 2),)),
)
fixture(
    "flatten_negative",
    "flatten",
    "x.flatten(-3, -2), float32 [2,3,2,2]",
    fn(lambda x: x.flatten(-3, -2)),
    twice(lambda: (randn(2, 3, 2, 2),)),
)
fixture(
    "squeeze",
    "squeeze",
    "x.squeeze(-2), float32 [3,1,4]",
    fn(lambda x: x.squeeze(-2)),
    twice(lambda: (randn(3, 1, 4),)),
)
fixture(
    "squeeze_all",
    "squeeze",
    "x.squeeze(), float32 [1,3,1,4]",
    fn(lambda x: x.squeeze()),
    twice(lambda: (randn(1, 3, 1, 4),)),
)
fixture(
    "unsqueeze",
    "unsqueeze",
    "x.unsqueeze(1), float32 [3,4]",
    fn(lambda x: x.unsqueeze(1)),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "unsqueeze_negative",
    "unsqueeze",
    "x.unsqueeze(-1), float32 [3,4]",
    fn(lambda x: x.unsqueeze(-1)),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "select_negative",
    "select",
    "x[:, -1], float32 [3,4,2]",
    fn(lambda x: x[:, -1]),
    twice(lambda: (randn(3, 4, 2),)),
)
fixture(
    "slice_step_negative",
    "slice",
    "x[:, -3::2], float32 [3,8]",
    fn(lambda x: x[:, -3::2]),
    twice(lambda: (randn(3, 8),)),
)
fixture(
    "slice_negative_end",
    "slice",
    "x[1:-1, 2:-2], float32 [5,8]",
    fn(lambda x: x[1:-1, 2:-2]),
    twice(lambda: (randn(5, 8),)),
)
fixture(
    "cat",
    "cat",
    "torch.cat([a, b, c], dim=-1), float32 [2,3,1], [2,3,2], [2,3,4]",
    fn(lambda a, b, c: torch.cat([a, b, c], dim=-1)),
    twice(lambda: (randn(2, 3, 1), randn(2, 3, 2), randn(2, 3, 4))),
)
fixture(
    "cat_dim0",
    "cat",
    "torch.cat([a, b, c], dim=0), int64 [1,3], [2,3], [3,3]",
    fn(lambda a, b, c: torch.cat([a, b, c], dim=0)),
    twice(lambda: (ints(-9, 9, 1, 3), ints(-9, 9, 2, 3), ints(-9, 9, 3, 3))),
)
fixture(
    "stack",
    "stack",
    "torch.stack([a, b], dim=-1), float32 [3,4] each",
    fn(lambda a, b: torch.stack([a, b], dim=-1)),
    twice(lambda: (randn(3, 4), randn(3, 4))),
)
fixture(
    "split",
    "split_with_sizes",
    "torch.split(x, [1, 3, 2], dim=-1), float32 [2,6] (three outputs)",
    fn(lambda x: torch.split(x, [1, 3, 2], dim=-1)),
    twice(lambda: (randn(2, 6),)),
)
fixture(
    "chunk",
    "chunk",
    "torch.chunk(x, 3, dim=0), float32 [7,2] (chunks of 3, 3, 1)",
    fn(lambda x: torch.chunk(x, 3, dim=0)),
    twice(lambda: (randn(7, 2),)),
)
fixture(
    "contiguous_transposed",
    "clone",
    "x.transpose(0, 1).contiguous(), float32 [3,5]",
    fn(lambda x: x.transpose(0, 1).contiguous()),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "clone",
    "clone",
    "x.clone(), float32 [3,5]",
    fn(lambda x: x.clone()),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "channels_last",
    "_to_dim_order_copy",
    "x to channels_last, relu, back to contiguous, float32 [1,3,2,4]",
    fn(lambda x: x.contiguous(memory_format=torch.channels_last).relu().contiguous()),
    twice(lambda: (randn(1, 3, 2, 4),)),
)

class ChannelsLastBlock(nn.Module):
    """A convolution, a depthwise one and a channel shuffle (ShuffleNet's:
    split the channels into groups, swap, flatten), on channels-last tensors."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, groups=8, padding=1)

    def forward(self, x):
        y = self.depthwise(self.conv(x).relu())
        b, c, h, w = y.shape
        return y.view(b, 2, c // 2, h, w).transpose(1, 2).reshape(b, c, h, w) + y


def channels_last(*shape) -> torch.Tensor:
    return randn(*shape).contiguous(memory_format=torch.channels_last)


fixture(
    "channels_last_cnn",
    "convolution",
    "a model exported in channels-last memory format (filters and input channels-last): "
    "Conv2d(3, 8, 3), relu, a depthwise Conv2d(8, 8, 3) and a channel shuffle, float32 [1,3,5,6]",
    lambda: ChannelsLastBlock().to(memory_format=torch.channels_last),
    twice(lambda: (channels_last(1, 3, 5, 6),)),
)

fixture(
    "index_select",
    "index_select",
    "torch.index_select(x, -1, idx), float32 [3,5], int64 idx [4] with repeats",
    fn(lambda x, i: torch.index_select(x, -1, i)),
    twice(lambda: (randn(3, 5), ints(0, 5, 4))),
)
fixture(
    "gather",
    "gather",
    "torch.gather(x, 1, idx), float32 [3,5], int64 idx [3,2]",
    fn(lambda x, i: torch.gather(x, 1, i)),
    twice(lambda: (randn(3, 5), ints(0, 5, 3, 2))),
)
fixture(
    "index_tensor",
    "index",
    "x[idx], float32 [5,3], int64 idx [4] with repeats (advanced indexing)",
    fn(lambda x, i: x[i]),
    twice(lambda: (randn(5, 3), ints(0, 5, 4))),
)
fixture(
    "pad",
    "constant_pad_nd",
    "F.pad(x, (1, 2, 0, 1), value=0.5), float32 [1,2,3,3]",
    fn(lambda x: F.pad(x, (1, 2, 0, 1), value=0.5)),
    twice(lambda: (randn(1, 2, 3, 3),)),
)
fixture(
    "repeat",
    "repeat",
    "x.repeat(2, 1, 3), float32 [2,3]",
    fn(lambda x: x.repeat(2, 1, 3)),
    twice(lambda: (randn(2, 3),)),
)
fixture(
    "upsample_nearest2d",
    "upsample_nearest2d",
    "F.interpolate(x, scale_factor=2, mode='nearest') of float32 [1,1,3,3]; F.interpolate(x, scale_factor=(1.7, 0.6), mode='nearest') of float32 [1,1,5,6] (non-integer scales, given to the kernel); F.interpolate(y, size=(5, 2), mode='nearest') of float16 [1,1,3,5]",
    fn(lambda w, x, y: (F.interpolate(w, scale_factor=2, mode="nearest"), F.interpolate(x, scale_factor=(1.7, 0.6), mode="nearest"), F.interpolate(y, size=(5, 2), mode="nearest"))),
    twice(lambda: (randn(1, 1, 3, 3), randn(1, 1, 5, 6), randn(1, 1, 3, 5, dtype=torch.float16))),
)
fixture(
    "upsample_bilinear2d",
    "upsample_bilinear2d",
    "F.interpolate(w, size=(5, 7), mode='bilinear', align_corners=False) of float32 [1,2,3,4]; F.interpolate(x, size=(6, 3), mode='bilinear', align_corners=True) of float32 [1,1,4,5]; F.interpolate(y, scale_factor=(1.5, 2.3), mode='bilinear') of float32 [1,1,4,3] (the given scales decide the source positions)",
    fn(lambda w, x, y: (F.interpolate(w, size=(5, 7), mode="bilinear", align_corners=False), F.interpolate(x, size=(6, 3), mode="bilinear", align_corners=True), F.interpolate(y, scale_factor=(1.5, 2.3), mode="bilinear"))),
    twice(lambda: (randn(1, 2, 3, 4), randn(1, 1, 4, 5), randn(1, 1, 4, 3))),
)
fixture(
    "upsample_bilinear2d_float64_float16",
    "upsample_bilinear2d",
    "F.interpolate(x, size=(5, 3), mode='bilinear') of float64 [1,1,3,4]; F.interpolate(y, size=(5, 7), mode='bilinear', align_corners=True) of float16 [1,1,3,4] (weights 0 and 1/2, exact in float16); F.interpolate(x, size=(2, 3), mode='bilinear', antialias=True) (_upsample_bilinear2d_aa)",
    fn(lambda x, y: (F.interpolate(x, size=(5, 3), mode="bilinear"), F.interpolate(y, size=(5, 7), mode="bilinear", align_corners=True), F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True))),
    twice(lambda: (randn(1, 1, 3, 4, dtype=torch.float64), randn(1, 1, 3, 4, dtype=torch.float16))),
)
fixture(
    "cdist_pdist",
    "_cdist_forward/_pdist_forward",
    "torch.cdist(a, b, p) for p = 0, 1, 2, inf, 1.5 of float32 [2,2,3] and [2,2,3]; F.pdist(x, p) for p = 2, 3 of float64 [4,3]; multiples of 1/2 (some differences are 0)",
    fn(lambda a, b, x: tuple(torch.cdist(a, b, p=p) for p in (0.0, 1.0, 2.0, INF, 1.5)) + tuple(F.pdist(x, p) for p in (2.0, 3.0))),
    twice(lambda: (halves(2, 2, 3), halves(2, 2, 3), halves(4, 3).double())),
)


# ---- copies, views, strided reads, rolls and triangles (every dtype moves as it is)

aten = torch.ops.aten


def distinct(*shape, dtype=torch.float32) -> torch.Tensor:
    """Distinct values in random order (no ties), as ``dtype``."""
    count = math.prod(shape)
    return (torch.randperm(count).float() - count / 2).reshape(shape).to(dtype)


fixture(
    "alias_copy_int64",
    "alias_copy",
    "torch.ops.aten.alias_copy(x), int64 [3,4]",
    fn(lambda x: aten.alias_copy(x)),
    twice(lambda: (ints(-(2**40), 2**40, 3, 4),)),
)
fixture(
    "detach_copy_bool",
    "detach_copy",
    "torch.ops.aten.detach_copy(x), bool [3,4]",
    fn(lambda x: aten.detach_copy(x)),
    twice(lambda: (bools(3, 4),)),
)
fixture(
    "lift_fresh_copy_float16",
    "lift_fresh_copy",
    "torch.ops.aten.lift_fresh_copy(x), float16 [2,3]",
    fn(lambda x: aten.lift_fresh_copy(x)),
    twice(lambda: (randn(2, 3, dtype=torch.float16),)),
    preserve=(aten.lift_fresh_copy.default,),
)
fixture(
    "narrow_copy_float16",
    "narrow_copy",
    "torch.ops.aten.narrow_copy(x, -1, 1, 3), float16 [2,5]",
    fn(lambda x: aten.narrow_copy(x, -1, 1, 3)),
    twice(lambda: (randn(2, 5, dtype=torch.float16),)),
)
fixture(
    "expand_bool",
    "expand",
    "x.expand(2, 3, -1), bool [3,1] -> [2,3,1] (new leading dim, -1 keeps one)",
    fn(lambda x: x.expand(2, 3, -1)),
    twice(lambda: (bools(3, 1),)),
)
fixture(
    "expand_float16",
    "expand",
    "x.expand(4, 3), float16 [1,3]",
    fn(lambda x: x.expand(4, 3)),
    twice(lambda: (randn(1, 3, dtype=torch.float16),)),
)
fixture(
    "split_copy_int64",
    "split_copy",
    "torch.split(x, 2, dim=1), int64 [3,5,2] (pieces 2, 2, 1; split_copy kept)",
    fn(lambda x: torch.split(x, 2, dim=1)),
    twice(lambda: (ints(-9, 9, 3, 5, 2),)),
    preserve=(aten.split.Tensor,),
)
fixture(
    "unbind_copy_bool",
    "unbind_copy",
    "torch.unbind(x, -1), bool [2,3,3] (three outputs; unbind_copy kept)",
    fn(lambda x: torch.unbind(x, -1)),
    twice(lambda: (bools(2, 3, 3),)),
    preserve=(aten.unbind.int,),
)
fixture(
    "stack_float16",
    "stack",
    "torch.stack([a, b, c], dim=-1), float16 [2,3] each (stack kept)",
    fn(lambda a, b, c: torch.stack([a, b, c], dim=-1)),
    twice(lambda: (randn(2, 3, dtype=torch.float16), randn(2, 3, dtype=torch.float16), randn(2, 3, dtype=torch.float16))),
    preserve=(aten.stack.default,),
)
fixture(
    "stack_0dim_int64",
    "stack",
    "torch.stack([a, b]), int64 0-dim each -> [2] (stack kept)",
    fn(lambda a, b: torch.stack([a, b])),
    twice(lambda: (ints(-9, 9), ints(-9, 9))),
    preserve=(aten.stack.default,),
)
fixture(
    "flip",
    "flip",
    "torch.flip(x, [0, -1]), float32 [3,4,5]",
    fn(lambda x: torch.flip(x, [0, -1])),
    twice(lambda: (randn(3, 4, 5),)),
)
fixture(
    "flip_bool",
    "flip",
    "torch.flip(x, [1]), bool [3,5]",
    fn(lambda x: torch.flip(x, [1])),
    twice(lambda: (bools(3, 5),)),
)
fixture(
    "flip_empty",
    "flip",
    "torch.flip(x, [0, 1]), int64 [0,3] (nothing to read)",
    fn(lambda x: torch.flip(x, [0, 1])),
    twice(lambda: (ints(0, 9, 0, 3),)),
)
fixture(
    "diagonal_copy",
    "diagonal_copy",
    "torch.diagonal(x, 1, -1, 0), float32 [4,3,5] (offset above the main diagonal, dims out of order)",
    fn(lambda x: torch.diagonal(x, 1, -1, 0)),
    twice(lambda: (randn(4, 3, 5),)),
)
fixture(
    "diagonal_copy_int64_below",
    "diagonal_copy",
    "torch.diagonal(x, -2), int64 [5,4] (below the main diagonal)",
    fn(lambda x: torch.diagonal(x, -2)),
    twice(lambda: (ints(-(2**40), 2**40, 5, 4),)),
)
fixture(
    "as_strided_copy",
    "as_strided_copy",
    "torch.as_strided(x, (3, 3), (4, 2), 1), float32 [4,5] (overlapping windows, storage offset)",
    fn(lambda x: torch.as_strided(x, (3, 3), (4, 2), 1)),
    twice(lambda: (randn(4, 5),)),
)
fixture(
    "unfold_copy",
    "unfold_copy",
    "x.unfold(-1, 3, 2), float32 [2,7] -> [2,3,3]",
    fn(lambda x: x.unfold(-1, 3, 2)),
    twice(lambda: (randn(2, 7),)),
)
fixture(
    "unfold_copy_bool",
    "unfold_copy",
    "x.unfold(0, 2, 1), bool [4,3] -> [3,3,2]",
    fn(lambda x: x.unfold(0, 2, 1)),
    twice(lambda: (bools(4, 3),)),
)
fixture(
    "roll",
    "roll",
    "torch.roll(x, (1, -2), (0, -1)), float32 [3,4,5] (roll kept)",
    fn(lambda x: torch.roll(x, (1, -2), (0, -1))),
    twice(lambda: (randn(3, 4, 5),)),
    preserve=(aten.roll.default,),
)
fixture(
    "roll_flat_int64",
    "roll",
    "torch.roll(x, 7), int64 [2,5] (no dims: the flattened tensor; roll kept)",
    fn(lambda x: torch.roll(x, 7)),
    twice(lambda: (ints(-9, 9, 2, 5),)),
    preserve=(aten.roll.default,),
)
fixture(
    "tril",
    "tril",
    "torch.tril(x), float32 [2,3,4] (tril kept)",
    fn(lambda x: torch.tril(x)),
    twice(lambda: (randn(2, 3, 4),)),
    preserve=(aten.tril.default,),
)
fixture(
    "tril_int64_offsets",
    "tril",
    "torch.tril(x, -1) and torch.tril(x, 2), int64 [4,3] (tril kept)",
    fn(lambda x: (torch.tril(x, -1), torch.tril(x, 2))),
    twice(lambda: (ints(-9, 9, 4, 3),)),
    preserve=(aten.tril.default,),
)
fixture(
    "pixel_shuffle",
    "pixel_shuffle",
    "F.pixel_shuffle(x, 2), float32 [1,8,2,3] (pixel_shuffle kept)",
    fn(lambda x: F.pixel_shuffle(x, 2)),
    twice(lambda: (randn(1, 8, 2, 3),)),
    preserve=(aten.pixel_shuffle.default,),
)
fixture(
    "pixel_unshuffle_int64",
    "pixel_unshuffle",
    "F.pixel_unshuffle(x, 2), int64 [2,1,4,6] (pixel_unshuffle kept)",
    fn(lambda x: F.pixel_unshuffle(x, 2)),
    twice(lambda: (ints(-9, 9, 2, 1, 4, 6),)),
    preserve=(aten.pixel_unshuffle.default,),
)
fixture(
    "select_scatter",
    "select_scatter",
    "torch.select_scatter(x, src, 1, -1), float32 [3,4,5], src [3,5] (select_scatter kept)",
    fn(lambda x, src: torch.select_scatter(x, src, 1, -1)),
    twice(lambda: (randn(3, 4, 5), randn(3, 5))),
    preserve=(aten.select_scatter.default,),
)
fixture(
    "slice_scatter",
    "slice_scatter",
    "torch.slice_scatter(x, src, 2, 1, 5, 2), float32 [3,4,6], src [3,4,2]",
    fn(lambda x, src: torch.slice_scatter(x, src, 2, 1, 5, 2)),
    twice(lambda: (randn(3, 4, 6), randn(3, 4, 2))),
)
fixture(
    "slice_scatter_bool",
    "slice_scatter",
    "torch.slice_scatter(x, src, 0, -2), bool [5,3], src [2,3] (negative start)",
    fn(lambda x, src: torch.slice_scatter(x, src, 0, -2)),
    twice(lambda: (bools(5, 3), bools(2, 3))),
)


# ---- padding (constant with negative amounts, reflection, replication)

fixture(
    "pad_negative",
    "constant_pad_nd",
    "F.pad(x, (-1, 2, 1, -2), value=1.5), float32 [2,4,5] (negative padding crops)",
    fn(lambda x: F.pad(x, (-1, 2, 1, -2), value=1.5)),
    twice(lambda: (randn(2, 4, 5),)),
)
fixture(
    "pad_int64_crop",
    "constant_pad_nd",
    "F.pad(x, (-2, -1)), int64 [3,5] (cropping only)",
    fn(lambda x: F.pad(x, (-2, -1))),
    twice(lambda: (ints(-9, 9, 3, 5),)),
)
fixture(
    "reflection_pad1d",
    "reflection_pad1d",
    "F.pad(x, (2, 3), mode='reflect'), float32 [2,3,5] (reflection_pad1d kept)",
    fn(lambda x: F.pad(x, (2, 3), mode="reflect")),
    twice(lambda: (randn(2, 3, 5),)),
    preserve=(aten.reflection_pad1d.default,),
)
fixture(
    "reflection_pad2d_float16",
    "reflection_pad2d",
    "aten.reflection_pad2d(x, [1, 2, 2, -1]), float16 [1,2,4,5] (one side crops; kept)",
    fn(lambda x: aten.reflection_pad2d(x, [1, 2, 2, -1])),
    twice(lambda: (randn(1, 2, 4, 5, dtype=torch.float16),)),
    preserve=(aten.reflection_pad2d.default,),
)
fixture(
    "reflection_pad3d",
    "reflection_pad3d",
    "F.pad(x, (1, 1, 0, 2, 1, 0), mode='reflect'), float32 [1,2,3,3,4] (reflection_pad3d kept)",
    fn(lambda x: F.pad(x, (1, 1, 0, 2, 1, 0), mode="reflect")),
    twice(lambda: (randn(1, 2, 3, 3, 4),)),
    preserve=(aten.reflection_pad3d.default,),
)
fixture(
    "replication_pad1d_int64",
    "replication_pad1d",
    "F.pad(x, (3, 1), mode='replicate'), int64 [2,4] (replication_pad1d kept)",
    fn(lambda x: F.pad(x, (3, 1), mode="replicate")),
    twice(lambda: (ints(-9, 9, 2, 4),)),
    preserve=(aten.replication_pad1d.default,),
)
fixture(
    "replication_pad2d",
    "replication_pad2d",
    "F.pad(x, (2, 0, 1, 3), mode='replicate'), float32 [1,2,3,4] (replication_pad2d kept)",
    fn(lambda x: F.pad(x, (2, 0, 1, 3), mode="replicate")),
    twice(lambda: (randn(1, 2, 3, 4),)),
    preserve=(aten.replication_pad2d.default,),
)
fixture(
    "replication_pad3d_int32",
    "replication_pad3d",
    "aten.replication_pad3d(x, [1, 0, 0, 1, 2, -1]), int32 [2,2,3,3] (replication_pad3d kept)",
    fn(lambda x: aten.replication_pad3d(x, [1, 0, 0, 1, 2, -1])),
    twice(lambda: (ints(-9, 9, 2, 2, 3, 3, dtype=torch.int32),)),
    preserve=(aten.replication_pad3d.default,),
)


# ---- gathers, scatters and advanced indexing (indices checked at run time)

fixture(
    "gather_int64",
    "gather",
    "torch.gather(x, -2, idx), int64 [4,3], idx [2,2] (smaller than x along dim 1)",
    fn(lambda x, i: torch.gather(x, -2, i)),
    twice(lambda: (ints(-(2**40), 2**40, 4, 3), ints(0, 4, 2, 2))),
)
fixture(
    "gather_float16",
    "gather",
    "torch.gather(x, 1, idx), float16 [2,5], idx [2,4] with repeats",
    fn(lambda x, i: torch.gather(x, 1, i)),
    twice(lambda: (randn(2, 5, dtype=torch.float16), ints(0, 5, 2, 4))),
)
fixture(
    "gather_0dim",
    "gather",
    "torch.gather(x, 0, idx), float32 0-dim x and idx",
    fn(lambda x, i: torch.gather(x, 0, i)),
    twice(lambda: (randn(), torch.tensor(0))),
)
fixture(
    "gather_empty",
    "gather",
    "torch.gather(x, 1, idx), float32 [3,4], idx [3,0] (nothing gathered)",
    fn(lambda x, i: torch.gather(x, 1, i)),
    twice(lambda: (randn(3, 4), ints(0, 4, 3, 0))),
)
fixture(
    "scatter",
    "scatter",
    "torch.scatter(x, 1, idx, src), float32 [3,5], idx [3,2] distinct per row, src [3,3]",
    fn(lambda x, i, src: torch.scatter(x, 1, i, src)),
    twice(lambda: (randn(3, 5), torch.stack([torch.randperm(5)[:2] for _ in range(3)]), randn(3, 3))),
)
fixture(
    "scatter_value_int64",
    "scatter",
    "torch.scatter(x, 0, idx, 7), int64 [4,3], idx [2,3] (a scalar value)",
    fn(lambda x, i: torch.scatter(x, 0, i, 7)),
    twice(lambda: (ints(-9, 9, 4, 3), torch.stack([torch.randperm(4)[:2] for _ in range(3)], dim=1))),
)
fixture(
    "scatter_add",
    "scatter_add",
    "torch.scatter_add(x, 1, idx, src), float32 [2,4], idx [2,6] with duplicates (summed in order)",
    fn(lambda x, i, src: torch.scatter_add(x, 1, i, src)),
    twice(lambda: (randn(2, 4), ints(0, 4, 2, 6), randn(2, 6) * 100.0)),
)
fixture(
    "scatter_add_int64",
    "scatter_add",
    "torch.scatter_add(x, 0, idx, src), int64 [3,2], idx [5,2] with duplicates",
    fn(lambda x, i, src: torch.scatter_add(x, 0, i, src)),
    twice(lambda: (ints(-9, 9, 3, 2), ints(0, 3, 5, 2), ints(-9, 9, 5, 2))),
)
fixture(
    "scatter_add_float16",
    "scatter_add",
    "torch.scatter_add(x, 0, idx, src), float16 [3], idx [6] with duplicates (summed in float32, rounded once, as PyTorch does)",
    fn(lambda x, i, src: torch.scatter_add(x, 0, i, src)),
    twice(lambda: (randn(3, dtype=torch.float16), ints(0, 3, 6), randn(6, dtype=torch.float16))),
)
fixture(
    "index_tensor_separated",
    "index",
    "x[i, :, j], float32 [4,3,5], i [2,1] and j [3] broadcast (separated: broadcast dims first)",
    fn(lambda x, i, j: x[i, :, j]),
    twice(lambda: (randn(4, 3, 5), ints(-4, 4, 2, 1), ints(-5, 5, 3))),
)
fixture(
    "index_tensor_adjacent_int64",
    "index",
    "x[:, i, j], int64 [2,4,5], i [3], j [3] (adjacent: in place), negative indices",
    fn(lambda x, i, j: x[:, i, j]),
    twice(lambda: (ints(-9, 9, 2, 4, 5), ints(-4, 4, 3), ints(-5, 5, 3))),
)
fixture(
    "index_tensor_bool",
    "index",
    "x[:, i], bool [3,4], i [2,2]",
    fn(lambda x, i: x[:, i]),
    twice(lambda: (bools(3, 4), ints(0, 4, 2, 2))),
)
fixture(
    "index_tensor_float16_int32",
    "index",
    "x[i], float16 [5,2], int32 i [3]",
    fn(lambda x, i: x[i]),
    twice(lambda: (randn(5, 2, dtype=torch.float16), ints(-5, 5, 3, dtype=torch.int32))),
)
fixture(
    "index_put",
    "index_put",
    "torch.index_put(x, (i,), v), float32 [5,3], distinct i [3] with negatives, v [3,3]",
    fn(lambda x, i, v: torch.index_put(x, (i,), v)),
    twice(lambda: (randn(5, 3), torch.randperm(5)[:3] - 2, randn(3, 3))),
)
fixture(
    "index_put_accumulate",
    "index_put",
    "torch.index_put(x, (i, j), v, accumulate=True), float32 [3,4], i and j [6] with repeated pairs, v [6]",
    fn(lambda x, i, j, v: torch.index_put(x, (i, j), v, accumulate=True)),
    twice(lambda: (randn(3, 4), ints(0, 2, 6), ints(0, 2, 6), randn(6) * 100.0)),
)
def put_columns(x, i, v):
    """``x[:, i] = v`` on a copy (index_put with indices (None, i))."""
    y = x.clone()
    y[:, i] = v
    return y


fixture(
    "index_put_broadcast_int64",
    "index_put",
    "y[:, i] = v, int64 [2,4,3], i [2], v [3] broadcast (indices (None, i))",
    fn(put_columns),
    twice(lambda: (ints(-9, 9, 2, 4, 3), torch.randperm(4)[:2], ints(-9, 9, 3))),
)
fixture(
    "index_put_mask",
    "index_put",
    "y = x.clone(); y[x > 0] = 0.5, float32 [3,4] (a boolean mask written with one value)",
    fn(lambda x: torch.index_put(x, (x > 0,), torch.tensor(0.5))),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "masked_scatter",
    "masked_scatter",
    "x.masked_scatter(mask, src), float32 [3,4], bool mask [4] (broadcast), src [13]",
    fn(lambda x, m, src: x.masked_scatter(m, src)),
    twice(lambda: (randn(3, 4), bools(4), randn(13))),
)
fixture(
    "masked_scatter_int64",
    "masked_scatter",
    "x.masked_scatter(mask, src), int64 [2,3], bool mask [2,3], src [2,3]",
    fn(lambda x, m, src: x.masked_scatter(m, src)),
    twice(lambda: (ints(-9, 9, 2, 3), bools(2, 3), ints(-9, 9, 2, 3))),
)
fixture(
    "masked_select",
    "masked_select",
    "x.masked_select(x > 0), float32 [3,4] (the result's size depends on the data)",
    fn(lambda x: x.masked_select(x > 0)),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "nonzero",
    "nonzero",
    "x.nonzero(), int64 [3,4] (the result's size depends on the data)",
    fn(lambda x: x.nonzero()),
    twice(lambda: (ints(-1, 2, 3, 4),)),
)
fixture(
    "nonzero_1d_float",
    "nonzero",
    "x.nonzero(), float32 [9] with 0.0, -0.0 (zeros) and NaN (non-zero) planted",
    fn(lambda x: x.nonzero()),
    twice(lambda: (planted(torch.randn(9), (0.0, -0.0, NAN, 0.0)),)),
)
fixture(
    "nonzero_3d_bool",
    "nonzero",
    "torch.nonzero(m), bool [2,3,4]",
    fn(lambda m: torch.nonzero(m)),
    twice(lambda: (bools(2, 3, 4),)),
)
# nonzero's result is [count, rank] with strides (1, count), which the exporter
# cannot bundle when count or rank is 0 ("0 in strides"): these cases return a
# reduction of it, whose shape still depends on the count, or use masked_select.
fixture(
    "nonzero_0dim",
    "nonzero",
    "x.nonzero().sum(1), int64 0-dim: [1] (of [1, 0]) when non-zero, [0] when zero",
    fn(lambda x: x.nonzero().sum(1)),
    lambda: [(torch.tensor(5),), (torch.tensor(0),)],
)
fixture(
    "nonzero_all_false",
    "nonzero",
    "m.nonzero().sum(1), bool [3,4] all false in one case (a [0] result), all true in the other",
    fn(lambda m: m.nonzero().sum(1)),
    lambda: [(torch.zeros(3, 4, dtype=torch.bool),), (torch.ones(3, 4, dtype=torch.bool),)],
)
fixture(
    "masked_select_all_false",
    "masked_select",
    "x.masked_select(m), int64 [2,3], bool mask all false (a [0] result) in one case, all true in the other",
    fn(lambda x, m: x.masked_select(m)),
    lambda: [
        (ints(-9, 9, 2, 3), torch.zeros(2, 3, dtype=torch.bool)),
        (ints(-9, 9, 2, 3), torch.ones(2, 3, dtype=torch.bool)),
    ],
)
fixture(
    "masked_select_broadcast_mask",
    "masked_select",
    "x.masked_select(m), float32 [3,4], bool mask [4] broadcast over the rows",
    fn(lambda x, m: x.masked_select(m)),
    twice(lambda: (randn(3, 4), bools(4))),
)
fixture(
    "masked_select_broadcast_self",
    "masked_select",
    "torch.masked_select(x, m), int64 [4], bool mask [3,4] with 3 true: self broadcast over the rows "
    "(the exporter bounds the result by self's 4 elements, not the broadcast 12: more fails at run time)",
    fn(lambda x, m: torch.masked_select(x, m)),
    twice(lambda: (ints(-9, 9, 4), planted(torch.zeros(3, 4, dtype=torch.bool), (True, True, True)))),
)
fixture(
    "index_tensor_mask",
    "index",
    "x[m], float32 [3,4], bool mask [3,4] (every dimension)",
    fn(lambda x, m: x[m]),
    twice(lambda: (randn(3, 4), bools(3, 4))),
)
fixture(
    "index_tensor_mask_rows",
    "index",
    "x[m], float32 [5,3], bool mask [5] on the rows",
    fn(lambda x, m: x[m]),
    twice(lambda: (randn(5, 3), bools(5))),
)
fixture(
    "index_put_mask_rows",
    "index_put",
    "torch.index_put(x, (m,), v), float32 [4,3], bool mask [4] on rows, v [3] broadcast over the selected rows",
    fn(lambda x, m, v: torch.index_put(x, (m,), v)),
    twice(lambda: (randn(4, 3), bools(4), randn(3))),
)
fixture(
    "index_put_mask_accumulate",
    "index_put",
    "torch.index_put(x, (m,), v, accumulate=True), float32 [4,3], bool mask [4], v [3]",
    fn(lambda x, m, v: torch.index_put(x, (m,), v, accumulate=True)),
    twice(lambda: (randn(4, 3), bools(4), randn(3))),
)
fixture(
    "index_put_mask_accumulate_one_value",
    "index_put",
    "x.index_put((m,), v, accumulate=True), int64 [3,4], bool mask [3,4], one value v [1]",
    fn(lambda x, m, v: x.index_put((m,), v, accumulate=True)),
    twice(lambda: (ints(-9, 9, 3, 4), bools(3, 4), ints(-9, 9, 1))),
)
fixture(
    "masked_select_sum",
    "masked_select",
    "x[x > 0].sum() and (x[x > 0] * 2).exp(): consumers of the data-dependent size, float32 [3,4]",
    fn(lambda x: (x[x > 0].sum(), (x[x > 0] * 2.0).exp())),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "index_tensor_mask_pair",
    "index",
    "x[m] + y[m] * 2, float32 [3,4], bool mask [3,4]: two data-dependent results of one size meet",
    fn(lambda x, y, m: x[m] + y[m] * 2.0),
    twice(lambda: (randn(3, 4), randn(3, 4), bools(3, 4))),
)
fixture(
    "nonzero_dynamic_input",
    "nonzero",
    "(x > 0.5).nonzero(), x[x > 0] summed and doubled, x.masked_select(x < -0.5) over x float32 [n,3], n dynamic (2..16); cases n 5, 2, 16",
    fn(lambda x: ((x > 0.5).nonzero(), x[x > 0].sum(), x[x > 0] * 2.0, x.masked_select(x < -0.5))),
    lambda: [(randn(n, 3),) for n in (5, 2, 16)],
    # Fn.forward takes *args: one entry for the tuple of them.
    dynamic_shapes=(({0: torch.export.Dim("n", min=2, max=16)},),),
)
fixture(
    "nonzero_count_sym_size",
    "nonzero",
    "torch.ones(x.nonzero().shape[0], 3) * 2: a size read from the data-dependent dimension (sym_size), int64 [3,4]",
    fn(lambda x: torch.ones(x.nonzero().shape[0], 3) * 2.0),
    twice(lambda: (ints(-1, 2, 3, 4),)),
)
fixture(
    "view_as_real",
    "view_as_real_copy",
    "torch.view_as_real(torch.complex(x, y)), float32 [3] (a complex tensor)",
    fn(lambda x, y: torch.view_as_real(torch.complex(x, y))),
    twice(lambda: (randn(3), randn(3))),
)
fixture(
    "index_select_bool",
    "index_select",
    "torch.index_select(x, 0, idx), bool [4,3], idx [5] with repeats",
    fn(lambda x, i: torch.index_select(x, 0, i)),
    twice(lambda: (bools(4, 3), ints(0, 4, 5))),
)
fixture(
    "index_select_0dim_index",
    "index_select",
    "torch.index_select(x, 1, idx), int64 [3,4], 0-dim idx",
    fn(lambda x, i: torch.index_select(x, 1, i)),
    twice(lambda: (ints(-9, 9, 3, 4), ints(0, 4))),
)
fixture(
    "index_select_empty",
    "index_select",
    "torch.index_select(x, 0, idx), float32 [4,3], idx [0]",
    fn(lambda x, i: torch.index_select(x, 0, i)),
    twice(lambda: (randn(4, 3), ints(0, 4, 0))),
)
fixture(
    "embedding_float16_int32",
    "embedding",
    "F.embedding(ids, w), float16 table [6,3], int32 ids [2,3]",
    fn(lambda w, i: F.embedding(i, w)),
    twice(lambda: (randn(6, 3, dtype=torch.float16), ints(0, 6, 2, 3, dtype=torch.int32))),
)


# ---- top-k and repeat_interleave

fixture(
    "topk",
    "topk",
    "torch.topk(x, 3), float32 [3,6] of distinct values",
    fn(lambda x: tuple(torch.topk(x, 3))),
    twice(lambda: (distinct(3, 6),)),
)
fixture(
    "topk_smallest_dim0",
    "topk",
    "torch.topk(x, 2, dim=0, largest=False), float32 [4,3] of distinct values",
    fn(lambda x: tuple(torch.topk(x, 2, dim=0, largest=False))),
    twice(lambda: (distinct(4, 3),)),
)
fixture(
    "topk_nan",
    "topk",
    "torch.topk(x, 2) and torch.topk(x, 2, largest=False), float32 [2,5] with one NaN per row (NaN is the largest)",
    fn(lambda x: (*torch.topk(x, 2), *torch.topk(x, 2, largest=False))),
    twice(lambda: (torch.stack([planted(distinct(5), (NAN,)) for _ in range(2)]),)),
)
fixture(
    "topk_int64",
    "topk",
    "torch.topk(x, 4), int64 [2,7] of distinct values",
    fn(lambda x: tuple(torch.topk(x, 4))),
    twice(lambda: (distinct(2, 7, dtype=torch.int64),)),
)
fixture(
    "topk_float16",
    "topk",
    "torch.topk(x, 2, dim=1), float16 [2,4,3] of distinct values",
    fn(lambda x: tuple(torch.topk(x, 2, dim=1))),
    twice(lambda: (distinct(2, 4, 3, dtype=torch.float16),)),
)
fixture(
    "repeat_interleave",
    "repeat_interleave",
    "torch.repeat_interleave(r, output_size=6), int64 counts [3] adding up to 6",
    fn(lambda r: torch.repeat_interleave(r, output_size=6)),
    lambda: [(torch.tensor([1, 2, 3]),), (torch.tensor([3, 0, 3]),)],
)

# the remaining dtypes: bfloat16, float64 and the narrow integers move and index alike
fixture(
    "flip_bfloat16",
    "flip",
    "torch.flip(x, [0]), bfloat16 [3,4]",
    fn(lambda x: torch.flip(x, [0])),
    twice(lambda: (randn(3, 4, dtype=torch.bfloat16),)),
)
fixture(
    "gather_float64",
    "gather",
    "torch.gather(x, 0, idx), float64 [3,4], idx [2,4]",
    fn(lambda x, i: torch.gather(x, 0, i)),
    twice(lambda: (randn(3, 4, dtype=torch.float64), ints(0, 3, 2, 4))),
)
fixture(
    "index_select_uint8",
    "index_select",
    "torch.index_select(x, 1, idx), uint8 [3,4], idx [3]",
    fn(lambda x, i: torch.index_select(x, 1, i)),
    twice(lambda: (ints(0, 256, 3, 4, dtype=torch.uint8), ints(0, 4, 3))),
)
fixture(
    "roll_int8",
    "roll",
    "torch.roll(x, -1, 1), int8 [2,5] (roll kept)",
    fn(lambda x: torch.roll(x, -1, 1)),
    twice(lambda: (ints(-128, 128, 2, 5, dtype=torch.int8),)),
    preserve=(aten.roll.default,),
)
fixture(
    "replication_pad1d_int16",
    "replication_pad1d",
    "F.pad(x, (1, 2), mode='replicate'), int16 [2,3] (replication_pad1d kept)",
    fn(lambda x: F.pad(x, (1, 2), mode="replicate")),
    twice(lambda: (ints(-(2**15), 2**15, 2, 3, dtype=torch.int16),)),
    preserve=(aten.replication_pad1d.default,),
)
fixture(
    "scatter_add_bfloat16",
    "scatter_add",
    "torch.scatter_add(x, 0, idx, src), bfloat16 [3], idx [5] with duplicates (summed in float32, rounded once, as PyTorch does)",
    fn(lambda x, i, src: torch.scatter_add(x, 0, i, src)),
    twice(lambda: (randn(3, dtype=torch.bfloat16), ints(0, 3, 5), randn(5, dtype=torch.bfloat16))),
)
fixture(
    "topk_float64",
    "topk",
    "torch.topk(x, 3, largest=False), float64 [2,5] of distinct values",
    fn(lambda x: tuple(torch.topk(x, 3, largest=False))),
    twice(lambda: (distinct(2, 5, dtype=torch.float64),)),
)
fixture(
    "index_put_accumulate_bfloat16",
    "index_put",
    "torch.index_put(x, (i,), v, accumulate=True), bfloat16 [3], i [6] with repeats (each addition rounds to bfloat16, as PyTorch does)",
    fn(lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True)),
    twice(lambda: (randn(3, dtype=torch.bfloat16), ints(0, 3, 6), randn(6, dtype=torch.bfloat16))),
)
fixture(
    "index_put_accumulate_int8",
    "index_put",
    "torch.index_put(x, (i,), v, accumulate=True), int8 [3,2], i [4] with repeats, v [4,2] (sums wrap)",
    fn(lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True)),
    twice(lambda: (ints(-128, 128, 3, 2, dtype=torch.int8), ints(-3, 3, 4), ints(-128, 128, 4, 2, dtype=torch.int8))),
)


# ---- reductions

fixture(
    "sum_dims",
    "sum",
    "x.sum(dim=(0, 2)), float32 [2,3,4]",
    fn(lambda x: x.sum(dim=(0, 2))),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "sum_keepdim",
    "sum",
    "x.sum(dim=-1, keepdim=True), float32 [2,3,4]",
    fn(lambda x: x.sum(dim=-1, keepdim=True)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "sum_all",
    "sum",
    "x.sum() -> 0-dim, float32 [2,3,4]",
    fn(lambda x: x.sum()),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "mean_negative_dim",
    "mean",
    "x.mean(dim=-2), float32 [2,3,4]",
    fn(lambda x: x.mean(dim=-2)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "mean_keepdim",
    "mean",
    "x.mean(dim=(-1, -2), keepdim=True), float32 [1,3,4,5]",
    fn(lambda x: x.mean(dim=(-1, -2), keepdim=True)),
    twice(lambda: (randn(1, 3, 4, 5),)),
)
fixture(
    "amax",
    "amax",
    "x.amax(dim=-1), float32 [3,5]",
    fn(lambda x: x.amax(dim=-1)),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "amin",
    "amin",
    "x.amin(dim=(0, 1), keepdim=True), float32 [2,3,4]",
    fn(lambda x: x.amin(dim=(0, 1), keepdim=True)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "max_dim",
    "max",
    "torch.max(x, dim=-1) -> (values, int64 indices), float32 [3,5]",
    fn(lambda x: tuple(torch.max(x, dim=-1))),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "min_dim",
    "min",
    "torch.min(x, dim=0, keepdim=True) -> (values, int64 indices), float32 [3,5]",
    fn(lambda x: tuple(torch.min(x, dim=0, keepdim=True))),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "max_all",
    "max",
    "torch.max(x) -> 0-dim, float32 [3,5]",
    fn(torch.max),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "any",
    "any",
    "x.any(dim=-1), bool [4,3] (one row all false)",
    fn(lambda x: x.any(dim=-1)),
    twice(lambda: (torch.cat([bools(3, 3), torch.zeros(1, 3, dtype=torch.bool)]),)),
)
fixture(
    "any_all",
    "any",
    "x.any() -> 0-dim bool, bool [3,4]",
    fn(lambda x: x.any()),
    twice(lambda: (bools(3, 4),)),
)
fixture(
    "argmax_dim",
    "argmax",
    "torch.argmax(x, dim=-2, keepdim=True), float32 [2,3,4]",
    fn(lambda x: torch.argmax(x, dim=-2, keepdim=True)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "argmax_none",
    "argmax",
    "torch.argmax(x) -> 0-dim int64 index into the flattened tensor, float32 [3,5]",
    fn(torch.argmax),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "argmin",
    "argmin",
    "torch.argmin(x, dim=1), float32 [3,5]",
    fn(lambda x: torch.argmin(x, dim=1)),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "cumsum",
    "cumsum",
    "torch.cumsum(x, dim=0), float32 [4,3]",
    fn(lambda x: torch.cumsum(x, dim=0)),
    twice(lambda: (randn(4, 3),)),
)
fixture(
    "cumsum_negative_dim",
    "cumsum",
    "torch.cumsum(x, dim=-1), float32 [2,3,4]",
    fn(lambda x: torch.cumsum(x, dim=-1)),
    twice(lambda: (randn(2, 3, 4),)),
)
fixture(
    "softmax",
    "_softmax",
    "torch.softmax(x, dim=-1), float32 [2,3,5]",
    fn(lambda x: torch.softmax(x, dim=-1)),
    twice(lambda: (randn(2, 3, 5) * 3.0,)),
)
fixture(
    "softmax_dim1",
    "_softmax",
    "torch.softmax(x, dim=1), float32 [2,4,3] (not the last dim)",
    fn(lambda x: torch.softmax(x, dim=1)),
    twice(lambda: (randn(2, 4, 3) * 3.0,)),
)
fixture(
    "log_softmax",
    "_log_softmax",
    "torch.log_softmax(x, dim=-1), float32 [3,5]",
    fn(lambda x: torch.log_softmax(x, dim=-1)),
    twice(lambda: (randn(3, 5) * 3.0,)),
)
fixture(
    "log_softmax_dim0",
    "_log_softmax",
    "torch.log_softmax(x, dim=0), float32 [4,3,2] (not the last dim)",
    fn(lambda x: torch.log_softmax(x, dim=0)),
    twice(lambda: (randn(4, 3, 2) * 3.0,)),
)
fixture(
    "layer_norm",
    "native_layer_norm",
    "LayerNorm(8) with random weight and bias, float32 [2,3,8]",
    lambda: layer_norm(8, affine=True),
    twice(lambda: (randn(2, 3, 8) * 2.0 + 1.0,)),
)
fixture(
    "layer_norm_no_affine",
    "native_layer_norm",
    "LayerNorm((3, 4), elementwise_affine=False), float32 [2,3,4]",
    lambda: layer_norm((3, 4), affine=False),
    twice(lambda: (randn(2, 3, 4) * 2.0 + 1.0,)),
)
fixture(
    "batch_norm",
    "_native_batch_norm_legit_no_training",
    "BatchNorm2d(3) in eval mode, random running stats, weight and bias, float32 [2,3,2,3]",
    lambda: batch_norm(3),
    twice(lambda: (randn(2, 3, 2, 3),)),
)
fixture(
    "var",
    "var",
    "x.var(dim=-1, keepdim=True) (unbiased), float32 [3,6]",
    fn(lambda x: x.var(dim=-1, keepdim=True)),
    twice(lambda: (randn(3, 6),)),
)
fixture(
    "prod",
    "prod",
    "x.prod(dim=1), float32 [3,4]",
    fn(lambda x: x.prod(dim=1)),
    twice(lambda: (randn(3, 4),)),
)

fixture(
    "mean_all_dtype",
    "mean",
    "x.mean(dtype=torch.float64) -> 0-dim float64, float32 [3,5]",
    fn(lambda x: x.mean(dtype=torch.float64)),
    twice(lambda: (randn(3, 5),)),
)
fixture(
    "mean_int_dtype",
    "mean",
    "x.mean(dtype=torch.float32), int32 [4,6] (the mean of an integer tensor needs a float dtype)",
    fn(lambda x: x.mean(dtype=torch.float32)),
    twice(lambda: (ints(-1000, 1000, 4, 6, dtype=torch.int32),)),
)
fixture(
    "mean_empty",
    "mean",
    "x.mean() of float32 [0,3] -> NaN",
    fn(lambda x: x.mean()),
    twice(lambda: (randn(0, 3),)),
)
fixture(
    "var_all",
    "var",
    "x.var() (every dimension, unbiased), float32 [3,5]",
    fn(lambda x: x.var()),
    twice(lambda: (randn(3, 5) * 3.0 + 2.0,)),
)
fixture(
    "var_correction",
    "var",
    "torch.var(x, dim=(0, 2), correction=0, keepdim=True), float64 [2,3,4]",
    fn(lambda x: torch.var(x, dim=(0, 2), correction=0, keepdim=True)),
    twice(lambda: (randn(2, 3, 4, dtype=torch.float64),)),
)
fixture(
    "var_one_element",
    "var",
    "torch.var(x, dim=1) of float32 [3,1] -> NaN (count 1 minus correction 1), and correction=2.5 over [3,2] -> inf or NaN",
    fn(lambda x, y: (torch.var(x, dim=1), torch.var(y, dim=1, correction=2.5))),
    twice(lambda: (randn(3, 1), torch.tensor([[1.0, 2.0], [3.0, 3.0], [-1.0, 4.0]]))),
)
fixture(
    "var_dim_unbiased",
    "var",
    "torch.ops.aten.var.dim(x, [1], False, False) (biased; exported as var.correction_out with correction 0), float32 [3,4,2]",
    fn(lambda x: torch.ops.aten.var.dim(x, [1], False, False)),
    twice(lambda: (randn(3, 4, 2),)),
)
fixture(
    "var_mean",
    "var_mean",
    "torch.var_mean(x, dim=-1, correction=2), float32 [3,6]",
    fn(lambda x: torch.var_mean(x, dim=-1, correction=2)),
    twice(lambda: (randn(3, 6) + 1.0,)),
)
fixture(
    "any_dims",
    "any",
    "torch.any(x, dim=(0, 2)) of bool [2,3,4] and torch.any(y, dim=(-1,), keepdim=True) of float32 [3,4] with zeros",
    fn(lambda x, y: (torch.any(x, dim=(0, 2)), torch.any(y, dim=(-1,), keepdim=True))),
    twice(lambda: (torch.rand(2, 3, 4) > 0.9, (torch.rand(3, 4) > 0.7).float() * randn(3, 4))),
)
fixture(
    "prod_all",
    "prod",
    "x.prod() of float32 [2,3], y.prod() of int32 [3,4] -> int64, z.prod() of float32 [0] -> 1",
    fn(lambda x, y, z: (x.prod(), y.prod(), z.prod())),
    twice(lambda: (randn(2, 3), ints(-4, 5, 3, 4, dtype=torch.int32), randn(0))),
)
fixture(
    "reduce_0dim",
    "sum",
    "x.sum(dim=0), x.amax(dim=-1), x.max(dim=0) of a 0-dim float32 (PyTorch's dims 0 and -1 of a scalar)",
    fn(lambda x: (x.sum(dim=0), x.amax(dim=-1), *torch.max(x, dim=0))),
    twice(lambda: (randn(),)),
)

fixture(
    "group_norm",
    "native_group_norm",
    "F.group_norm(x, 2, w, b, eps=1e-3), float32 [2,4,3,3]",
    fn(lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-3)),
    twice(lambda: (randn(2, 4, 3, 3) * 2.0 + 1.0, randn(4), randn(4))),
)
fixture(
    "group_norm_stats",
    "native_group_norm",
    "torch.ops.aten.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5): the result, each group's mean and 1/std, float64 [2,6,5]",
    fn(lambda x: torch.ops.aten.native_group_norm(x, None, None, 2, 6, 5, 3, 1e-5)),
    twice(lambda: (randn(2, 6, 5, dtype=torch.float64) * 3.0,)),
)

fixture(
    "batch_norm_no_stats",
    "_native_batch_norm_legit",
    "F.batch_norm(x, None, None, w, b, training=True, eps=1e-3) (no running statistics), float64 [3,2,5]",
    fn(lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True, eps=1e-3)),
    twice(lambda: (randn(3, 2, 5, dtype=torch.float64), randn(2, dtype=torch.float64), randn(2, dtype=torch.float64))),
)


# ---- linear algebra

fixture(
    "mm",
    "mm",
    "x @ y, float32 [3,4] @ [4,5]",
    fn(torch.mm),
    twice(lambda: (randn(3, 4), randn(4, 5))),
)
fixture(
    "bmm",
    "bmm",
    "torch.bmm(x, y), float32 [2,3,4] @ [2,4,5]",
    fn(torch.bmm),
    twice(lambda: (randn(2, 3, 4), randn(2, 4, 5))),
)
fixture(
    "matmul_3d_2d",
    "matmul",
    "x @ y, float32 [2,3,4] @ [4,5]",
    fn(torch.matmul),
    twice(lambda: (randn(2, 3, 4), randn(4, 5))),
)
fixture(
    "matmul_4d",
    "matmul",
    "x @ y, float32 [2,2,3,4] @ [2,2,4,3] (batched, as in attention)",
    fn(torch.matmul),
    twice(lambda: (randn(2, 2, 3, 4), randn(2, 2, 4, 3))),
)
fixture(
    "matmul_1d_2d",
    "matmul",
    "x @ y, float32 [4] @ [4,5] -> [5]",
    fn(torch.matmul),
    twice(lambda: (randn(4), randn(4, 5))),
)
fixture(
    "addmm",
    "addmm",
    "torch.addmm(b, x, y, beta=0.5, alpha=2.0), float32 [5] + [3,4] @ [4,5]",
    fn(lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0)),
    twice(lambda: (randn(5), randn(3, 4), randn(4, 5))),
)
fixture(
    "linear",
    "linear",
    "Linear(8, 5) with bias, float32 [3,8]",
    lambda: nn.Linear(8, 5),
    twice(lambda: (randn(3, 8),)),
)
fixture(
    "linear_no_bias",
    "linear",
    "Linear(8, 5, bias=False), float32 [2,3,8]",
    lambda: nn.Linear(8, 5, bias=False),
    twice(lambda: (randn(2, 3, 8),)),
)

fixture(
    "linear_kept",
    "linear",
    "F.linear(x, w, b) of float32 [2,3,4] and [5,4] and F.linear(v, w) of [4] (rank 1), kept as aten::linear",
    fn(lambda x, w, b, v: (F.linear(x, w, b), F.linear(v, w))),
    twice(lambda: (randn(2, 3, 4), randn(5, 4), randn(5), randn(4))),
    preserve=(aten.linear.default,),
)
fixture(
    "linear_kept_2d",
    "linear",
    "F.linear(x, w, b) of float32 [3,4], [2,4] and [2] and F.linear(x, w) unbiased, kept as aten::linear",
    fn(lambda x, w, b: (F.linear(x, w, b), F.linear(x, w))),
    twice(lambda: (randn(3, 4), randn(2, 4), randn(2))),
    preserve=(aten.linear.default,),
)


# Matrix products of f64 and integer elements: integers wrap as PyTorch's do
# (int8 and uint8 overflow on purpose), addmm's scalars are taken in the
# tensors' type (a float truncated for integers), a zero beta ignores the bias.
I64, I32, I16, I8, U8, F64 = torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.float64
fixture(
    "mm_float64",
    "mm",
    "x @ y, float64 [3,9] @ [9,5]",
    fn(torch.mm),
    twice(lambda: (randn(3, 9, dtype=F64), randn(9, 5, dtype=F64))),
)
fixture(
    "bmm_float64",
    "bmm",
    "torch.bmm(x, y) of float64 [2,6,7] @ [2,7,11] (whole and partial tiles) and torch.bmm(x, z.transpose(1, 2)) of [2,7,3] (a transposed operand)",
    fn(lambda x, y, z: (torch.bmm(x, y), torch.bmm(x, z.transpose(1, 2)))),
    twice(lambda: (randn(2, 6, 7, dtype=F64), randn(2, 7, 11, dtype=F64), randn(2, 3, 7, dtype=F64))),
)
fixture(
    "bmm_int32",
    "bmm",
    "torch.bmm(x, y), int32 [2,3,4] @ [2,4,5], values in [-1000, 1000)",
    fn(torch.bmm),
    twice(lambda: (ints(-1000, 1000, 2, 3, 4, dtype=I32), ints(-1000, 1000, 2, 4, 5, dtype=I32))),
)
fixture(
    "mm_int64_wrap",
    "mm",
    "x @ y, int64 [3,4] @ [4,2], values up to 2^40 (products wrap modulo 2^64)",
    fn(torch.mm),
    twice(lambda: (ints(-(2**40), 2**40, 3, 4, dtype=I64), ints(-(2**40), 2**40, 4, 2, dtype=I64))),
)
fixture(
    "mm_int8_wrap",
    "mm",
    "x @ y, int8 [3,8] @ [8,5], values in [-128, 128) (sums wrap modulo 2^8)",
    fn(torch.mm),
    twice(lambda: (ints(-128, 128, 3, 8, dtype=I8), ints(-128, 128, 8, 5, dtype=I8))),
)
fixture(
    "mm_uint8_wrap",
    "mm",
    "x @ y, uint8 [3,8] @ [8,5], values in [0, 256) (sums wrap modulo 2^8)",
    fn(torch.mm),
    twice(lambda: (ints(0, 256, 3, 8, dtype=U8), ints(0, 256, 8, 5, dtype=U8))),
)
fixture(
    "matmul_int16_4d",
    "matmul",
    "x @ y, int16 [2,2,3,4] @ [2,2,4,3], values in [-300, 300) (sums wrap modulo 2^16)",
    fn(torch.matmul),
    twice(lambda: (ints(-300, 300, 2, 2, 3, 4, dtype=I16), ints(-300, 300, 2, 2, 4, 3, dtype=I16))),
)
fixture(
    "addmm_int8_wrap",
    "addmm",
    "torch.addmm(b, x, y, beta=3, alpha=5), int8 [5] + [3,4] @ [4,5], values in [-100, 100) (wraps)",
    fn(lambda b, x, y: torch.addmm(b, x, y, beta=3, alpha=5)),
    twice(lambda: (ints(-100, 100, 5, dtype=I8), ints(-100, 100, 3, 4, dtype=I8), ints(-100, 100, 4, 5, dtype=I8))),
)
fixture(
    "addmm_int32_float_scalars",
    "addmm",
    "torch.addmm(b, x, y, beta=2.5, alpha=-1.5), int32 [3,5] + [3,4] @ [4,5] (beta 2 and alpha -1, truncated)",
    fn(lambda b, x, y: torch.addmm(b, x, y, beta=2.5, alpha=-1.5)),
    twice(lambda: (ints(-50, 50, 3, 5, dtype=I32), ints(-50, 50, 3, 4, dtype=I32), ints(-50, 50, 4, 5, dtype=I32))),
)
fixture(
    "addmm_float64",
    "addmm",
    "torch.addmm(b, x, y, beta=0.5, alpha=2.0), float64 [5] + [3,7] @ [7,5]",
    fn(lambda b, x, y: torch.addmm(b, x, y, beta=0.5, alpha=2.0)),
    twice(lambda: (randn(5, dtype=F64), randn(3, 7, dtype=F64), randn(7, 5, dtype=F64))),
)
fixture(
    "addmm_beta_zero",
    "addmm",
    "torch.addmm(b, x, y, beta=0) with NaN and inf in b, float32 [3,5] and float64 [3,5] (the bias is ignored)",
    fn(lambda b, x, y, d, u, v: (torch.addmm(b, x, y, beta=0), torch.addmm(d, u, v, beta=0, alpha=2))),
    twice(lambda: (with_specials(3, 5), randn(3, 4), randn(4, 5), with_specials(3, 5).double(), randn(3, 4, dtype=F64), randn(4, 5, dtype=F64))),
)
fixture(
    "linear_float64",
    "linear",
    "F.linear(x, w, b), float64 [2,3,6], [4,6], [4]",
    fn(lambda x, w, b: F.linear(x, w, b)),
    twice(lambda: (randn(2, 3, 6, dtype=F64), randn(4, 6, dtype=F64), randn(4, dtype=F64))),
)
fixture(
    "linear_uint8_wrap",
    "linear",
    "F.linear(x, w, b) kept as aten::linear, uint8 [3,6], [4,6], [4], values in [0, 256) (wraps)",
    fn(lambda x, w, b: F.linear(x, w, b)),
    twice(lambda: (ints(0, 256, 3, 6, dtype=U8), ints(0, 256, 4, 6, dtype=U8), ints(0, 256, 4, dtype=U8))),
    preserve=(aten.linear.default,),
)
fixture(
    "linear_int64",
    "linear",
    "F.linear(x, w) of int64 [2,5] and [3,5]",
    fn(lambda x, w: F.linear(x, w)),
    twice(lambda: (ints(-1000, 1000, 2, 5, dtype=I64), ints(-1000, 1000, 3, 5, dtype=I64))),
)

# Accumulating ops on half-precision floats: PyTorch's CPU kernels compute
# them in float32 and round each result once.
F16, BF16 = torch.float16, torch.bfloat16


def half_cases(*shapes, scale: float = 1.0, shift: float = 0.0):
    return lambda: [tuple((randn(*shape) * scale + shift).to(dtype) for shape, dtype in shapes) for _ in range(2)]


fixture(
    "sum_half",
    "sum",
    "x.sum(dim=1) of float16 [3,200] (many terms: an f16 accumulator would drift) and y.sum() of bfloat16 [4,50], values ~N(3, 2)",
    fn(lambda x, y: (x.sum(dim=1), y.sum())),
    half_cases(((3, 200), F16), ((4, 50), BF16), scale=2.0, shift=3.0),
)
fixture(
    "mean_amax_argmax_half",
    "mean",
    "x.mean(dim=0), x.amax(dim=1), x.argmax(dim=1) of bfloat16 [4,30] and y.cumsum(1) of float16 [2,40]",
    fn(lambda x, y: (x.mean(dim=0), x.amax(dim=1), x.argmax(dim=1), y.cumsum(1))),
    half_cases(((4, 30), BF16), ((2, 40), F16), scale=2.0, shift=1.0),
)
fixture(
    "softmax_half",
    "softmax",
    "softmax(x, dim=1) of float16 [3,20] and log_softmax(y, dim=0) of bfloat16 [6,4]",
    fn(lambda x, y: (torch.softmax(x, dim=1), torch.log_softmax(y, dim=0))),
    half_cases(((3, 20), F16), ((6, 4), BF16), scale=3.0),
)
fixture(
    "layer_norm_half",
    "native_layer_norm",
    "F.layer_norm over the last dim of float16 [2,3,16] (weights and bias float16) and of bfloat16 [4,8] without affine",
    fn(lambda x, w, b, y: (F.layer_norm(x, [16], w, b), F.layer_norm(y, [8]))),
    half_cases(((2, 3, 16), F16), ((16,), F16), ((16,), F16), ((4, 8), BF16), scale=2.0, shift=1.0),
)
fixture(
    "matmul_half",
    "bmm",
    "x @ y of float16 [2,3,32] @ [2,32,5], torch.addmm(b, u, v, beta=0.5, alpha=2) of bfloat16 [5] + [3,16] @ [16,5]",
    fn(lambda x, y, b, u, v: (x @ y, torch.addmm(b, u, v, beta=0.5, alpha=2.0))),
    half_cases(((2, 3, 32), F16), ((2, 32, 5), F16), ((5,), BF16), ((3, 16), BF16), ((16, 5), BF16)),
)
fixture(
    "conv2d_half",
    "convolution",
    "F.conv2d(x, w, b, padding=1) of float16 [1,3,6,6], [4,3,3,3], [4] and F.conv2d(y, v) of bfloat16 [1,2,5,5], [3,2,1,1]",
    fn(lambda x, w, b, y, v: (F.conv2d(x, w, b, padding=1), F.conv2d(y, v))),
    half_cases(((1, 3, 6, 6), F16), ((4, 3, 3, 3), F16), ((4,), F16), ((1, 2, 5, 5), BF16), ((3, 2, 1, 1), BF16)),
)
fixture(
    "pool_half",
    "max_pool2d_with_indices",
    "F.max_pool2d(x, 2) of float16 [1,2,4,6] and F.avg_pool2d(y, 3, stride=2, padding=1) of bfloat16 [1,2,5,5]",
    fn(lambda x, y: (F.max_pool2d(x, 2), F.avg_pool2d(y, 3, stride=2, padding=1))),
    half_cases(((1, 2, 4, 6), F16), ((1, 2, 5, 5), BF16), scale=2.0),
)
fixture(
    "norm_half",
    "native_group_norm",
    "F.group_norm(x, 2, w, b) of float16 [2,4,3] (weights float16), F.group_norm(y, 3) of bfloat16 [2,6,4] and inference F.batch_norm of bfloat16 [3,2,5] with bfloat16 running statistics and weights",
    fn(lambda x, w, b, y, z, m, v, g, h: (
        F.group_norm(x, 2, w, b),
        F.group_norm(y, 3),
        F.batch_norm(z, m, v.abs() + 0.5, g, h, training=False),
    )),
    half_cases(((2, 4, 3), F16), ((4,), F16), ((4,), F16), ((2, 6, 4), BF16), ((3, 2, 5), BF16), ((2,), BF16), ((2,), BF16), ((2,), BF16), ((2,), BF16), scale=2.0, shift=1.0),
)
fixture(
    "batch_norm_training_half",
    "native_batch_norm",
    "F.batch_norm in training of bfloat16 [3,2,5] (refused: PyTorch's CPU kernel rounds the statistics of halves along the way)",
    fn(lambda x: F.batch_norm(x, None, None, training=True)),
    half_cases(((3, 2, 5), BF16), scale=2.0, shift=1.0),
)
fixture(
    "var_mean_half",
    "var_mean",
    "torch.var_mean(x, dim=1) of float16 [3,40] and torch.var(y) of bfloat16 [4,6] (computed in float32, rounded once), x.mean() of float16 [3,40]",
    fn(lambda x, y: (*torch.var_mean(x, dim=1), torch.var(y), x.mean())),
    twice(lambda: ((randn(3, 40) * 3.0 + 10.0).half(), (randn(4, 6) * 2.0 + 1.0).bfloat16())),
)


# ---- convolution and pooling


def conv(name: str, description: str, make_model, shape) -> None:
    fixture(name, "convolution", f"{description}, float32 {list(shape)}", make_model, twice(lambda: (randn(*shape),)))


conv("conv2d", "Conv2d(3, 4, 3), stride 1, no padding", lambda: nn.Conv2d(3, 4, 3), (1, 3, 6, 6))
conv("conv2d_padding", "Conv2d(3, 4, 3, padding=1)", lambda: nn.Conv2d(3, 4, 3, padding=1), (2, 3, 5, 5))
conv("conv2d_stride2", "Conv2d(3, 4, 3, stride=2, padding=1)", lambda: nn.Conv2d(3, 4, 3, stride=2, padding=1), (1, 3, 7, 7))
conv("conv2d_dilation2", "Conv2d(2, 3, 3, dilation=2, padding=2)", lambda: nn.Conv2d(2, 3, 3, dilation=2, padding=2), (1, 2, 6, 6))
conv("conv2d_groups2", "Conv2d(4, 6, 3, groups=2, padding=1)", lambda: nn.Conv2d(4, 6, 3, groups=2, padding=1), (1, 4, 5, 5))
conv("conv2d_depthwise", "Conv2d(4, 4, 3, groups=4, padding=1) (depthwise)", lambda: nn.Conv2d(4, 4, 3, groups=4, padding=1), (1, 4, 5, 5))
conv("conv2d_1x1", "Conv2d(4, 3, 1) (pointwise)", lambda: nn.Conv2d(4, 3, 1), (2, 4, 3, 3))
conv("conv2d_no_bias", "Conv2d(3, 4, 3, padding=1, bias=False)", lambda: nn.Conv2d(3, 4, 3, padding=1, bias=False), (1, 3, 4, 4))
conv("conv2d_1x3", "Conv2d(3, 4, (1, 3), padding=(0, 1)) (non-square kernel)", lambda: nn.Conv2d(3, 4, (1, 3), padding=(0, 1)), (1, 3, 4, 5))
conv("conv2d_3x1", "Conv2d(3, 4, (3, 1), stride=(2, 1)) (non-square kernel and stride)", lambda: nn.Conv2d(3, 4, (3, 1), stride=(2, 1)), (1, 3, 7, 4))
conv("conv1d", "Conv1d(3, 4, 3, padding=1)", lambda: nn.Conv1d(3, 4, 3, padding=1), (2, 3, 8))
conv("conv_transpose2d", "ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1)", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), (1, 3, 3, 3))

conv("conv1d_strided_groups", "Conv1d(4, 6, 3, stride=2, dilation=2, padding=2, groups=2)", lambda: nn.Conv1d(4, 6, 3, stride=2, dilation=2, padding=2, groups=2), (2, 4, 11))
conv("conv1d_depthwise", "Conv1d(4, 4, 5, groups=4, padding=2) (depthwise, as audio models have)", lambda: nn.Conv1d(4, 4, 5, groups=4, padding=2), (2, 4, 9))
conv("conv2d_depthwise_one_row", "Conv2d(3, 6, 3, groups=3) with one output row", lambda: nn.Conv2d(3, 6, 3, groups=3), (2, 3, 3, 7))
conv("conv3d", "Conv3d(2, 3, (2, 3, 3), padding=(1, 0, 1))", lambda: nn.Conv3d(2, 3, (2, 3, 3), padding=(1, 0, 1)), (1, 2, 4, 5, 5))
conv("conv3d_strided_groups", "Conv3d(4, 4, 3, stride=2, padding=1, groups=2, bias=False)", lambda: nn.Conv3d(4, 4, 3, stride=2, padding=1, groups=2, bias=False), (1, 4, 5, 5, 5))
conv("conv_transpose1d", "ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1)", lambda: nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1), (2, 3, 5))
conv("conv_transpose2d_groups_dilation", "ConvTranspose2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, output_padding=1)", lambda: nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, dilation=2, groups=2, output_padding=1), (1, 4, 4, 3))
conv("conv_transpose3d", "ConvTranspose3d(2, 3, 2, stride=2, bias=False)", lambda: nn.ConvTranspose3d(2, 3, 2, stride=2, bias=False), (1, 2, 3, 2, 3))


def exact(model: nn.Module, dtype) -> nn.Module:
    """``model`` in ``dtype`` with parameters that are multiples of 1/4 in [-1, 1]: with
    inputs that are multiples of 1/2, sums of few products are exact in half precision,
    so the result does not depend on the order of the additions."""
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randint(-4, 5, parameter.shape).float() / 4)
    return model.to(dtype)


for _dtype in (torch.float16, torch.bfloat16, torch.float64):
    _name = dtype_name(_dtype)
    fixture(
        f"conv2d_{_name}",
        "convolution",
        f"Conv2d(3, 4, 3, padding=1), {_name} [1,3,4,5], exact multiples of 1/4 and 1/2",
        lambda _dtype=_dtype: exact(nn.Conv2d(3, 4, 3, padding=1), _dtype),
        twice(lambda _dtype=_dtype: (halves(1, 3, 4, 5).to(_dtype),)),
    )
    fixture(
        f"conv_transpose1d_{_name}",
        "convolution",
        f"ConvTranspose1d(2, 3, 3, stride=2), {_name} [2,2,4], exact multiples of 1/4 and 1/2",
        lambda _dtype=_dtype: exact(nn.ConvTranspose1d(2, 3, 3, stride=2), _dtype),
        twice(lambda _dtype=_dtype: (halves(2, 2, 4).to(_dtype),)),
    )


def conv_backward(name: str, description: str, grad_shape, input_shape, weight_shape, *args) -> None:
    """torch.ops.aten.convolution_backward(grad, x, w, *args): the gradients of a
    convolution with respect to its input, weight and bias."""
    fixture(
        name,
        "convolution_backward",
        f"convolution_backward {description}, float32 grad {list(grad_shape)}, input {list(input_shape)}, weight {list(weight_shape)}",
        fn(lambda g, x, w: tuple(t for t in torch.ops.aten.convolution_backward.default(g, x, w, *args) if t is not None)),
        twice(lambda: (randn(*grad_shape), randn(*input_shape), randn(*weight_shape))),
    )


conv_backward("conv_backward", "2-D, stride (2, 1), padding (1, 0)", (2, 3, 3, 2), (2, 2, 5, 4), (3, 2, 3, 3), [3], [2, 1], [1, 0], [1, 1], False, [0, 0], 1, [True, True, True])
conv_backward("conv_backward_groups_1d", "1-D, stride 2, dilation 2, padding 1, 2 groups, no bias gradient", (1, 4, 5), (1, 6, 9), (4, 3, 2), None, [2], [1], [2], False, [0], 2, [True, True, False])
conv_backward("conv_backward_transposed", "of a transposed 2-D convolution, stride 2, padding 1, output padding 1, 2 groups", (1, 4, 6, 4), (1, 2, 3, 2), (2, 2, 3, 3), [4], [2, 2], [1, 1], [1, 1], True, [1, 1], 2, [True, True, True])
conv_backward("conv_backward_3d_weight_only", "3-D, stride 2, the weight's gradient only", (1, 2, 2, 2, 2), (1, 3, 4, 5, 4), (2, 3, 2, 3, 2), None, [2, 2, 2], [0, 0, 0], [1, 1, 1], False, [0, 0, 0], 1, [False, True, False])

def pool(name: str, op: str, description: str, f, shape) -> None:
    fixture(name, op, f"{description}, float32 {list(shape)}", fn(f), twice(lambda: (randn(*shape),)))


pool("max_pool2d", "max_pool2d_with_indices", "F.max_pool2d(x, 2)", lambda x: F.max_pool2d(x, 2), (1, 2, 4, 6))
pool("max_pool2d_ceil", "max_pool2d_with_indices", "F.max_pool2d(x, 3, stride=2, ceil_mode=True)", lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True), (1, 2, 6, 6))
pool("max_pool2d_padding", "max_pool2d_with_indices", "F.max_pool2d(x, 3, stride=2, padding=1)", lambda x: F.max_pool2d(x, 3, stride=2, padding=1), (1, 2, 5, 5))
fixture(
    "max_pool2d_backward",
    "max_pool2d_with_indices_backward",
    "max_pool2d_with_indices_backward of F.max_pool2d(x, 2, stride=1, padding=1) (overlapping windows: gradients add up), float32 x [1,1,3,4], grad [1,1,4,5]",
    fn(lambda x, g: torch.ops.aten.max_pool2d_with_indices_backward(
        g, x, [2, 2], [1, 1], [1, 1], [1, 1], False,
        torch.ops.aten.max_pool2d_with_indices(x, [2, 2], [1, 1], [1, 1])[1])),
    twice(lambda: (randn(1, 1, 3, 4), randn(1, 1, 4, 5))),
)
pool("avg_pool2d", "avg_pool2d", "F.avg_pool2d(x, 2)", lambda x: F.avg_pool2d(x, 2), (1, 2, 4, 6))
pool("avg_pool2d_pad_include", "avg_pool2d", "F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=True)", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=True), (1, 2, 5, 5))
pool("avg_pool2d_pad_exclude", "avg_pool2d", "F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False)", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False), (1, 2, 5, 5))
pool("avg_pool2d_ceil", "avg_pool2d", "F.avg_pool2d(x, 3, stride=2, ceil_mode=True)", lambda x: F.avg_pool2d(x, 3, stride=2, ceil_mode=True), (1, 2, 6, 6))
pool("adaptive_avg_pool2d", "adaptive_avg_pool2d", "F.adaptive_avg_pool2d(x, 1)", lambda x: F.adaptive_avg_pool2d(x, 1), (2, 3, 3, 4))
pool("adaptive_avg_pool2d_2x2", "adaptive_avg_pool2d", "F.adaptive_avg_pool2d(x, 2) on a 4x6 input", lambda x: F.adaptive_avg_pool2d(x, 2), (1, 2, 4, 6))


# ---- embedding and constants

fixture(
    "embedding",
    "embedding",
    "Embedding(10, 4), int64 ids [2,5] with repeats",
    lambda: nn.Embedding(10, 4),
    twice(lambda: (ints(0, 10, 2, 5),)),
)
fixture(
    "arange",
    "arange",
    "x + torch.arange(0, 10, 2), int64 [5] (integer arange)",
    fn(lambda x: x + torch.arange(0, 10, 2)),
    twice(lambda: (ints(-100, 100, 5),)),
)
fixture(
    "arange_float",
    "arange",
    "x * torch.arange(0.5, 2.0, 0.25), float32 [6] (float arange)",
    fn(lambda x: x * torch.arange(0.5, 2.0, 0.25)),
    twice(lambda: (randn(6),)),
)
fixture(
    "full",
    "full",
    "torch.full((2, 3), 1.5) * x, float32 [3]",
    fn(lambda x: torch.full((2, 3), 1.5) * x),
    twice(lambda: (randn(3),)),
)
fixture(
    "zeros_like",
    "zeros_like",
    "torch.zeros_like(x) -> float32 and torch.zeros_like(x, dtype=torch.int64), float32 [3,4]",
    fn(lambda x: (torch.zeros_like(x), torch.zeros_like(x, dtype=torch.int64))),
    twice(lambda: (randn(3, 4),)),
)
fixture(
    "ones_like",
    "ones_like",
    "torch.ones_like(x) + x, float32 [3,4]",
    fn(lambda x: torch.ones_like(x) + x),
    twice(lambda: (randn(3, 4),)),
)
for _dtype, _value in (
    (torch.bool, True),
    (torch.uint8, 200),
    (torch.int8, -7),
    (torch.int16, -300),
    (torch.int32, 70000),
    (torch.float16, 1.5),
    (torch.bfloat16, -2.25),
    (torch.float64, 0.1),
):
    fixture(
        f"full_{dtype_name(_dtype)}",
        "full",
        f"torch.full((2, 3), {_value}, dtype={dtype_name(_dtype)}) and x + 1, float32 x [3]",
        fn(lambda x, _dtype=_dtype, _value=_value: (torch.full((2, 3), _value, dtype=_dtype), x + 1)),
        twice(lambda: (randn(3),)),
    )
fixture(
    "zeros_ones",
    "zeros",
    "torch.zeros(2, 3, dtype=int32) and torch.ones(3, dtype=float16) + x, float16 x [3] (zeros and ones kept, not decomposed into full)",
    fn(lambda x: (torch.zeros(2, 3, dtype=torch.int32), torch.ones(3, dtype=torch.float16) + x)),
    twice(lambda: (randn(3).half(),)),
    preserve=(torch.ops.aten.zeros.default, torch.ops.aten.ones.default),
)
fixture(
    "fill",
    "fill",
    "x.clone().fill_(2.5) and x.clone().fill_(v) for a 0-dim v, float32 x [2, 3] (fill kept, not decomposed)",
    fn(lambda x, v: (x.clone().fill_(2.5), x.clone().fill_(v))),
    twice(lambda: (randn(2, 3), randn())),
    preserve=(torch.ops.aten.fill.Scalar, torch.ops.aten.fill.Tensor),
)
fixture(
    "empty_filled",
    "_empty_dim_order",
    "torch.empty(2, 3).fill_(2.5) + x, float32 [2, 3]",
    fn(lambda x: torch.empty(2, 3).fill_(2.5) + x),
    twice(lambda: (randn(2, 3),)),
)
fixture(
    "arange_int32_fractional_end",
    "arange",
    "torch.arange(0, 2.5, dtype=int32) + x, int32 [3] (the length counts the fractional end)",
    fn(lambda x: torch.arange(0, 2.5, dtype=torch.int32) + x),
    twice(lambda: (ints(-100, 100, 3).int(),)),
)
fixture(
    "arange_negative_step",
    "arange",
    "torch.arange(5.0, 0.0, -1.5) * x, float32 [4]",
    fn(lambda x: torch.arange(5.0, 0.0, -1.5) * x),
    twice(lambda: (randn(4),)),
)
fixture(
    "full_like",
    "full_like",
    "torch.full_like(x, 7) for int64 x [3,4]",
    fn(lambda x: torch.full_like(x, 7)),
    twice(lambda: (ints(-9, 9, 3, 4),)),
)
fixture(
    "scalar_tensor",
    "scalar_tensor",
    "x * torch.scalar_tensor(2.5), float32 [3,4]",
    fn(lambda x: x * torch.scalar_tensor(2.5)),
    twice(lambda: (randn(3, 4),)),
)


# ---- edge cases: empty tensors

fixture(
    "empty_add",
    "add",
    "x + y with x float32 [0,4] and y [4] -> [0,4]",
    fn(torch.add),
    twice(lambda: (randn(0, 4), randn(4))),
)
fixture(
    "empty_relu",
    "relu",
    "relu(x), float32 [2,0,3]",
    fn(torch.relu),
    twice(lambda: (randn(2, 0, 3),)),
)
fixture(
    "empty_sum",
    "sum",
    "x.sum(dim=1), float32 [3,0] -> zeros [3] (sum over an empty dim)",
    fn(lambda x: x.sum(dim=1)),
    twice(lambda: (randn(3, 0),)),
)
fixture(
    "empty_cat",
    "cat",
    "torch.cat([a, b], dim=1), float32 [2,0] and [2,3]",
    fn(lambda a, b: torch.cat([a, b], dim=1)),
    twice(lambda: (randn(2, 0), randn(2, 3))),
)


# ---- edge cases: NaN and inf

fixture(
    "relu_nan_inf",
    "relu",
    "relu(x), float32 [3,5] containing NaN, +inf, -inf (NaN stays NaN)",
    fn(torch.relu),
    twice(lambda: (with_specials(3, 5),)),
)
fixture(
    "clamp_nan_inf",
    "clamp",
    "torch.clamp(x, -1, 1), float32 [3,5] containing NaN, +inf, -inf (NaN stays NaN)",
    fn(lambda x: torch.clamp(x, -1.0, 1.0)),
    twice(lambda: (with_specials(3, 5),)),
)
fixture(
    "maximum_nan_inf",
    "maximum",
    "torch.maximum(x, y), float32 [3,5] both containing NaN, +inf, -inf (NaN propagates)",
    fn(torch.maximum),
    twice(lambda: (with_specials(3, 5), with_specials(3, 5))),
)
fixture(
    "minimum_nan_inf",
    "minimum",
    "torch.minimum(x, y), float32 [3,5] both containing NaN, +inf, -inf (NaN propagates)",
    fn(torch.minimum),
    twice(lambda: (with_specials(3, 5), with_specials(3, 5))),
)
fixture(
    "amax_nan_inf",
    "amax",
    "x.amax(dim=-1), float32 [5,6]: rows with NaN, +inf, +inf/-inf, -inf, finite",
    fn(lambda x: x.amax(dim=-1)),
    twice(lambda: (sum_specials(),)),
)
fixture(
    "amin_nan_inf",
    "amin",
    "x.amin(dim=-1), float32 [5,6]: rows with NaN, +inf, +inf/-inf, -inf, finite",
    fn(lambda x: x.amin(dim=-1)),
    twice(lambda: (sum_specials(),)),
)
fixture(
    "max_dim_nan_inf",
    "max",
    "torch.max(x, dim=-1) -> (values, indices), float32 [5,6]: rows with NaN, +inf, +inf/-inf, -inf, finite (NaN wins)",
    fn(lambda x: tuple(torch.max(x, dim=-1))),
    twice(lambda: (sum_specials(),)),
)
fixture(
    "min_dim_nan_inf",
    "min",
    "torch.min(x, dim=-1) -> (values, indices), float32 [5,6]: rows with NaN, +inf, +inf/-inf, -inf, finite (NaN wins)",
    fn(lambda x: tuple(torch.min(x, dim=-1))),
    twice(lambda: (sum_specials(),)),
)
fixture(
    "argmax_nan",
    "argmax",
    "torch.argmax(x, dim=-1), float32 [5,6]: rows with NaN, +inf, +inf/-inf, -inf, finite (NaN counts as the maximum)",
    fn(lambda x: torch.argmax(x, dim=-1)),
    twice(lambda: (sum_specials(),)),
)
fixture(
    "sum_nan_inf",
    "sum",
    "x.sum(dim=-1), float32 [5,6]: rows with NaN, +inf, +inf and -inf (NaN), -inf, finite",
    fn(lambda x: x.sum(dim=-1)),
    twice(lambda: (sum_specials(),)),
)
fixture(
    "softmax_nan_inf",
    "_softmax",
    "torch.softmax(x, dim=-1), float32 [5,6]: rows with +inf, all -inf, some -inf, NaN, finite",
    fn(lambda x: torch.softmax(x, dim=-1)),
    twice(lambda: (softmax_specials(),)),
)
fixture(
    "max_pool2d_nan_inf",
    "max_pool2d_with_indices",
    "F.max_pool2d(x, 2), float32 [1,2,4,4] containing NaN, +inf, -inf (NaN propagates)",
    fn(lambda x: F.max_pool2d(x, 2)),
    twice(lambda: (with_specials(1, 2, 4, 4),)),
)
fixture(
    "add_nan_inf",
    "add",
    "x + y, float32 [3,5] both containing NaN, +inf, -inf (inf + -inf = NaN)",
    fn(torch.add),
    twice(lambda: (with_specials(3, 5), with_specials(3, 5))),
)
fixture(
    "exp_inf",
    "exp",
    "exp(x), float32 [3,5] containing NaN, +inf, -inf and values above 88 (overflow to inf)",
    fn(torch.exp),
    twice(lambda: (planted(torch.randn(3, 5), (NAN, INF, -INF, 100.0, -100.0)),)),
)
fixture(
    "div_by_zero",
    "div",
    "x / y, float32 [3,5], y has zeros: +-1/0 = +-inf (also via -0.0), 0/0 = NaN",
    fn(torch.div),
    twice(zero_divisors),
)
fixture(
    "div_by_zero_scalar",
    "div",
    "x / 0.0, float32 [3,5] including 0.0 (-> NaN)",
    fn(lambda x: x / 0.0),
    twice(lambda: (planted(torch.randn(3, 5), (0.0,)),)),
)
fixture(
    "log_nonpositive",
    "log",
    "log(x), float32 [3,5] including 0 (-> -inf) and negatives (-> NaN)",
    fn(torch.log),
    twice(lambda: (planted(positive(3, 5), (0.0, -1.0, -0.0, INF)),)),
)


# ---- edge cases: 0-dim tensors and broadcasting

fixture(
    "add_0dim",
    "add",
    "x + y with x a 0-dim float32 tensor and y [3,4]",
    fn(torch.add),
    twice(lambda: (randn(), randn(3, 4))),
)
fixture(
    "mul_0dim_0dim",
    "mul",
    "x * y, both 0-dim float32 -> 0-dim",
    fn(torch.mul),
    twice(lambda: (randn(), randn())),
)
fixture(
    "relu_0dim",
    "relu",
    "relu(x), 0-dim float32",
    fn(torch.relu),
    twice(lambda: (randn(),)),
)
fixture(
    "sum_0dim",
    "sum",
    "x.sum(), 0-dim int64 -> 0-dim int64",
    fn(lambda x: x.sum()),
    twice(lambda: (ints(-100, 100),)),
)
fixture(
    "broadcast_middle",
    "add",
    "x + y, float32 [2,1,4] + [3,1] -> [2,3,4] (size-1 dims broadcast on both sides)",
    fn(torch.add),
    twice(lambda: (randn(2, 1, 4), randn(3, 1))),
)
fixture(
    "broadcast_both",
    "mul",
    "x * y, float32 [3,1] * [1,4] -> [3,4]",
    fn(torch.mul),
    twice(lambda: (randn(3, 1), randn(1, 4))),
)


# ---- elementwise: every function in every dtype the portable kernels take
#
# Sweeps apply many functions to one input per dtype in one program (one
# output per function), so that each dtype class costs one small file; the
# per-op fixtures below them hold the special values (NaN, infinities, signed
# zeros, ties, out-of-range shifts, zero divisors).

ALL_INTS = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

# Unary functions PyTorch computes in floats: integer and bool inputs give
# float32.
FLOAT_FNS = {
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "exp": torch.exp,
    "log": torch.log,
    "log2": torch.log2,
    "log10": torch.log10,
    "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal,
    "sin": torch.sin,
    "cos": torch.cos,
    "tan": torch.tan,
    "asin": torch.asin,
    "acos": torch.acos,
    "atan": torch.atan,
    "sinh": torch.sinh,
    "cosh": torch.cosh,
    "asinh": torch.asinh,
    "acosh": torch.acosh,
    "atanh": torch.atanh,
    "erf": torch.erf,
    "expm1": torch.expm1,
    "log1p": torch.log1p,
}
# Unary functions that keep an integer input's type.
INT_FNS = {
    "neg": torch.neg,
    "abs": torch.abs,
    "relu": torch.relu,
    "sign": torch.sign,
    "floor": torch.floor,
    "ceil": torch.ceil,
    "round": torch.round,
    "trunc": torch.trunc,
    "bitwise_not": torch.bitwise_not,
}
PREDICATES = {"isnan": torch.isnan, "isinf": torch.isinf, "logical_not": torch.logical_not}
# Float functions whose domains end at 0 or +-1, for the promotion of integers
# (each function's own code is the same for every input type).
PROMOTED_FNS = {
    name: FLOAT_FNS[name] for name in ("sqrt", "log", "log10", "acos", "atanh", "sigmoid", "reciprocal", "expm1")
}


def apply_all(fns) -> Callable[[], nn.Module]:
    """A model returning each function of each of its inputs."""
    return fn(lambda *xs: tuple(f(x) for x in xs for f in fns.values()))


def sample(dtype, *shape) -> torch.Tensor:
    """Values of ``dtype`` around its interesting points: floats of either sign
    within the domain of most functions, with NaN, infinities, signed zeros and
    the ends of [-1, 1]; integers from both ends of their range and near zero."""
    if dtype == torch.bool:
        return bools(*shape)
    if dtype.is_floating_point:
        base = torch.rand(shape) * 1.8 - 0.9
        return planted(base, (NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, 0.5, 2.5)).to(dtype)
    info = torch.iinfo(dtype)
    base = torch.randint(max(info.min, -4), min(info.max, 5) + 1, shape, dtype=dtype)
    return planted(base, (info.min, info.max, 0, 1))


def sweep(name: str, fns, dtypes, note: str, shape=(3, 4)) -> None:
    names = ", ".join(dtype_name(dtype) for dtype in dtypes)
    fixture(
        name,
        "/".join(fns),
        f"{'/'.join(fns)} of {names} {list(shape)}: {note}",
        apply_all(fns),
        twice(lambda: tuple(sample(dtype, *shape) for dtype in dtypes)),
    )


# Float functions of integers and bools (promoted to float32); of the half
# types (computed in float32, rounded once); of float64.
sweep("float_fns_int32_uint8_bool", PROMOTED_FNS, (torch.int32, torch.uint8, torch.bool), "-> float32", shape=(2, 4))
sweep("float_fns_int8_int16_int64", PROMOTED_FNS, (torch.int8, torch.int16, torch.int64), "-> float32", shape=(2, 4))
sweep("float_fns_float16", FLOAT_FNS, (torch.float16,), "NaN, infinities, signed zeros, +-1")
sweep("float_fns_bfloat16", FLOAT_FNS, (torch.bfloat16,), "NaN, infinities, signed zeros, +-1")
sweep("float_fns_float64", FLOAT_FNS, (torch.float64,), "NaN, infinities, signed zeros, +-1")
# Functions that keep integer types, with each type's minimum (whose negation
# and absolute value wrap) and maximum.
sweep("int_fns_int32_uint8_int8", INT_FNS, (torch.int32, torch.uint8, torch.int8), "the types' limits; neg and abs wrap")
sweep("int_fns_int16_int64", INT_FNS, (torch.int16, torch.int64), "the types' limits; neg and abs wrap")
sweep("int_fns_half_float64", {k: v for k, v in INT_FNS.items() if k != "bitwise_not"},
      (torch.float16, torch.bfloat16, torch.float64), "NaN, infinities, signed zeros, halves")
sweep("bool_fns", {"sign": torch.sign, "bitwise_not": torch.bitwise_not, **PREDICATES}, (torch.bool,), "bool -> bool")
sweep("predicates_float", PREDICATES, (torch.float32, torch.float16, torch.bfloat16, torch.float64), "NaN, infinities -> bool")
sweep("predicates_int", PREDICATES, (torch.int32, torch.uint8, torch.int64), "integers are never NaN or infinite")


def unary_cases(make: Callable[[], torch.Tensor]) -> Callable[[], list[Inputs]]:
    return twice(lambda: (make(),))


def in_range(low: float, high: float, *shape, values=()) -> torch.Tensor:
    """Uniform values in [low, high) with ``values`` planted."""
    return planted(torch.rand(shape) * (high - low) + low, values)


# New float32 functions, with their domains' edges and special values.
for _name, _low, _high, _values, _note in [
    ("asin", -1.0, 1.0, (1.0, -1.0, 1.5, NAN, -0.0), "[-1, 1], +-1, 1.5 -> NaN"),
    ("acos", -1.0, 1.0, (1.0, -1.0, -1.5, NAN), "[-1, 1], +-1, -1.5 -> NaN"),
    ("atan", -10.0, 10.0, (INF, -INF, NAN, -0.0), "+-inf -> +-pi/2"),
    ("sinh", -5.0, 5.0, (1e-4, -1e-4, 89.0, -INF, NAN), "tiny values, 89 near f32 overflow, -inf"),
    ("cosh", -5.0, 5.0, (1e-4, 89.0, -INF, NAN), "tiny values, 89, -inf"),
    ("asinh", -20.0, 20.0, (1e-4, -1e-4, 1e20, -INF, NAN), "tiny and huge values, -inf"),
    ("acosh", 1.0, 20.0, (1.0, 0.5, 1e20, INF, NAN), "1 -> 0, 0.5 -> NaN, huge values"),
    ("atanh", -1.0, 1.0, (1.0, -1.0, 1e-4, 2.0, NAN), "+-1 -> +-inf, 2 -> NaN, tiny values"),
    ("log2", 0.0, 100.0, (0.0, -1.0, 1024.0, INF, NAN), "0 -> -inf, -1 -> NaN, exact powers"),
    ("log10", 0.0, 100.0, (0.0, -1.0, 1000.0, 1e-5, INF), "0 -> -inf, -1 -> NaN, exact powers"),
]:
    unary(_name, _name, getattr(torch, _name), lambda low=_low, high=_high, values=_values: in_range(low, high, 3, 5, values=values), _note)

fixture(
    "isnan_isinf",
    "isnan/isinf",
    "isnan(x), isinf(x) -> bool, float32 [3,5] with NaN, +inf, -inf, huge finite values",
    fn(lambda x: (torch.isnan(x), torch.isinf(x))),
    unary_cases(lambda: planted(torch.randn(3, 5), (NAN, INF, -INF, 3e38, -3e38))),
)
for _name, _dtype in [("int32", torch.int32), ("uint8", torch.uint8), ("bool", torch.bool)]:
    fixture(
        f"bitwise_not_{_name}",
        "bitwise_not",
        f"~x, {_name} [3,5] with the type's limits",
        fn(torch.bitwise_not),
        unary_cases(lambda dtype=_dtype: sample(dtype, 3, 5)),
    )
for _name, _eps in [("logit", None), ("logit_eps", 0.01)]:
    fixture(
        _name,
        "logit",
        f"torch.logit(x, eps={_eps}), float32 [3,5] in (-0.2, 1.2) with 0, 1 and NaN",
        fn(lambda x, eps=_eps: torch.logit(x, eps)),
        unary_cases(lambda: in_range(-0.2, 1.2, 3, 5, values=(0.0, 1.0, 0.5, NAN))),
        preserve=(torch.ops.aten.logit.default,),
    )
fixture(
    "logit_int32_float16",
    "logit",
    "torch.logit(x, eps=0.25) of int32 (-> float32) and float16 [2,4]",
    fn(lambda x, y: (torch.logit(x, 0.25), torch.logit(y, 0.25))),
    twice(lambda: (ints(-1, 3, 2, 4, dtype=torch.int32), in_range(0.0, 1.0, 2, 4).half())),
    preserve=(torch.ops.aten.logit.default,),
)
fixture(
    "conj_physical",
    "_conj_physical",
    "torch.conj_physical(x) of a real float32 [3,4] and int64 [4]: copies",
    fn(lambda x, y: (torch.ops.aten._conj_physical(x), torch.ops.aten._conj_physical(y))),
    twice(lambda: (randn(3, 4), ints(-100, 100, 4))),
    preserve=(torch.ops.aten._conj_physical.default,),
)

# ---- binary functions

BINARY_FNS = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "div": torch.div,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "pow": torch.pow,
    "atan2": torch.atan2,
    "fmod": torch.fmod,
    "remainder": torch.remainder,
    "floor_divide": torch.floor_divide,
    "eq": torch.eq,
    "lt": torch.lt,
}


def apply_pairs(fns) -> Callable[[], nn.Module]:
    """A model returning each function of each pair of inputs (x0, y0, x1, y1, ...)."""
    return fn(lambda *xs: tuple(f(x, y) for x, y in zip(xs[::2], xs[1::2]) for f in fns.values()))


def float_pair(dtype) -> Inputs:
    """[3,4] and [4] of ``dtype``, NaN and infinities on both sides, zero divisors."""
    x = planted(torch.randn(3, 4) * 3.0, (NAN, INF, -INF, 0.0, -0.0, 5.5)).to(dtype)
    y = planted(torch.randn(4) * 2.0, (0.0, NAN, -2.0)).to(dtype)
    return (x, y)


for _dtype in (torch.float16, torch.bfloat16, torch.float64):
    fixture(
        f"binary_fns_{dtype_name(_dtype)}",
        "/".join(BINARY_FNS),
        f"{'/'.join(BINARY_FNS)} of {dtype_name(_dtype)} [3,4] and [4]: NaN, infinities, zero divisors",
        apply_pairs(BINARY_FNS),
        twice(lambda dtype=_dtype: float_pair(dtype)),
    )

# Integer binary functions that cannot divide by zero, in every integer type
# (wrapping), and bool where PyTorch defines them.
INT_BINARY_FNS = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "pow": torch.pow,
    "eq": torch.eq,
    "gt": torch.gt,
}


def int_pair(dtype) -> Inputs:
    """[3,4] and [4] of ``dtype``: limits and small values; small exponents of both signs."""
    return (sample(dtype, 3, 4), sample(dtype, 4))


for _dtypes in [(torch.int32, torch.uint8, torch.int8), (torch.int16, torch.int64)]:
    _names = "_".join(dtype_name(dtype) for dtype in _dtypes)
    fixture(
        f"int_binary_fns_{_names}",
        "/".join(INT_BINARY_FNS),
        f"{'/'.join(INT_BINARY_FNS)} of {_names} [3,4] and [4] with the types' limits (wrapping; negative exponents)",
        apply_pairs(INT_BINARY_FNS),
        twice(lambda dtypes=_dtypes: tuple(t for dtype in dtypes for t in int_pair(dtype))),
    )
BOOL_BINARY_FNS = {
    "add": torch.add,
    "mul": torch.mul,
    "maximum": torch.maximum,
    "minimum": torch.minimum,
    "bitwise_and": torch.bitwise_and,
    "bitwise_or": torch.bitwise_or,
    "bitwise_xor": torch.bitwise_xor,
    "eq": torch.eq,
    "lt": torch.lt,
}
fixture(
    "bool_binary_fns",
    "/".join(BOOL_BINARY_FNS),
    f"{'/'.join(BOOL_BINARY_FNS)} of bool [3,4] and [4] (add is or, mul is and)",
    apply_pairs(BOOL_BINARY_FNS),
    twice(lambda: (bools(3, 4), bools(4))),
)
# Integer division by nonzero divisors in every integer type.
INT_DIVISIONS = {
    "div": torch.div,
    "floor_divide": torch.floor_divide,
    "remainder": torch.remainder,
    "fmod": torch.fmod,
    "div_trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc"),
}
fixture(
    "int_divisions",
    "/".join(INT_DIVISIONS),
    f"{'/'.join(INT_DIVISIONS)} of int8, uint8, int16, int32, int64 [3,4] and [4] (nonzero divisors of both signs)",
    apply_pairs(INT_DIVISIONS),
    twice(lambda: tuple(
        t
        for dtype in ALL_INTS
        for t in (ints(0 if dtype == torch.uint8 else -100, 100, 3, 4).to(dtype),
                  (nonzero_ints(4).abs() if dtype == torch.uint8 else nonzero_ints(4)).to(dtype))
    )),
)
fixture(
    "fmod_int64",
    "fmod",
    "torch.fmod(x, y), int64 [3,4] and [4], nonzero divisors of both signs (the dividend's sign; a zero divisor is an error)",
    fn(torch.fmod),
    twice(lambda: (ints(-50, 50, 3, 4), nonzero_ints(4))),
)

fixture(
    "atan2",
    "atan2",
    "torch.atan2(y, x), float32 [3,4] and [4]: signed zeros, infinities and NaN on both sides",
    fn(torch.atan2),
    twice(lambda: (planted(torch.randn(3, 4), (0.0, -0.0, INF, -INF, NAN, 1.0)), planted(torch.randn(4), (0.0, -0.0, -INF)))),
)
fixture(
    "atan2_int32",
    "atan2",
    "torch.atan2(y, x), int32 [3,4] and [4] -> float32, zeros included",
    fn(torch.atan2),
    twice(lambda: (ints(-3, 4, 3, 4, dtype=torch.int32), ints(-3, 4, 4, dtype=torch.int32))),
)
fixture(
    "fmod",
    "fmod",
    "torch.fmod(x, y), float32 [3,4] and [4]: signs of both, zero divisors (NaN), infinities, large quotients",
    fn(torch.fmod),
    twice(lambda: (planted(torch.randn(3, 4) * 10.0, (INF, -INF, NAN, -0.0, 1e7, -3.0)), planted(away_from_zero(4), (0.0, INF, -0.75)))),
)
fixture(
    "fmod_scalar",
    "fmod",
    "torch.fmod(x, -1.5), float32 [3,4] of both signs",
    fn(lambda x: torch.fmod(x, -1.5)),
    unary_cases(lambda: randn(3, 4) * 5.0),
)
fixture(
    "fmod_scalar_int32",
    "fmod",
    "torch.fmod(x, 3), int32 [3,4] of both signs (the dividend's sign)",
    fn(lambda x: torch.fmod(x, 3)),
    unary_cases(lambda: ints(-20, 20, 3, 4, dtype=torch.int32)),
)
fixture(
    "remainder_float_exact",
    "remainder",
    "torch.remainder(x, y), float32 [3,4] and [4]: large quotients, infinities and zero divisors (exact, via fmod)",
    fn(torch.remainder),
    twice(lambda: (planted(torch.randn(3, 4) * 1e6, (INF, NAN, -0.0, 1.0, -1.0)), planted(away_from_zero(4) * 0.1, (INF, 0.0)))),
)
fixture(
    "floor_divide_float_exact",
    "floor_divide",
    "torch.floor_divide(x, y), float32 [3,4] and [4]: 1 // 0.1 = 9 (not floor(1 / 0.1)), zero divisors, signed zero quotients",
    fn(torch.floor_divide),
    twice(lambda: (planted(torch.randn(3, 4) * 3.0, (1.0, -1.0, 0.3, -0.0, INF)), torch.tensor([0.1, -0.1, 0.0, 7.0]))),
)
for _name, _f, _note in [
    ("bitwise_and", torch.bitwise_and, "&"),
    ("bitwise_or", torch.bitwise_or, "|"),
    ("bitwise_xor", torch.bitwise_xor, "^"),
]:
    fixture(
        _name,
        _name,
        f"x {_note} y, int32 [3,4] and [4] with the type's limits",
        fn(_f),
        twice(lambda: int_pair(torch.int32)),
    )
    fixture(
        f"{_name}_scalar",
        _name,
        f"x {_note} 6 (a Scalar), int64 [3,4]; bool [4] {_note} True",
        fn(lambda x, b, f=_f: (f(x, 6), f(b, True))),
        twice(lambda: (sample(torch.int64, 3, 4), bools(4))),
    )


def shift_cases(dtype) -> Callable[[], list[Inputs]]:
    """Values with the type's limits, and amounts from -2 to past the width."""
    bits = torch.iinfo(dtype).bits

    def make():
        amounts = torch.tensor([0, 1, bits - 1, bits, bits + 3, -1, -2, 3])
        if dtype == torch.uint8:
            amounts = amounts.clamp(min=0)
        return (sample(dtype, 4, 8), amounts.to(dtype))

    return twice(make)


for _dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64):
    fixture(
        f"shifts_{dtype_name(_dtype)}",
        "bitwise_left_shift/bitwise_right_shift",
        f"x << y and x >> y, {dtype_name(_dtype)} [4,8] and [8]: amounts of 0, 1, width-1, width, past it, negative",
        fn(lambda x, y: (torch.bitwise_left_shift(x, y), torch.bitwise_right_shift(x, y))),
        shift_cases(_dtype),
    )
fixture(
    "shifts_scalar",
    "bitwise_left_shift/bitwise_right_shift",
    "x << 3, x >> 3, x << 40 and x >> 70 (Scalars), int32 [3,4] with the type's limits",
    fn(lambda x: (torch.bitwise_left_shift(x, 3), torch.bitwise_right_shift(x, 3),
                  torch.bitwise_left_shift(x, 40), torch.bitwise_right_shift(x, 70))),
    unary_cases(lambda: sample(torch.int32, 3, 4)),
)
fixture(
    "pow_scalar_base",
    "pow",
    "torch.pow(2.5, x), float32 [3,4] with NaN, infinities and zero",
    fn(lambda x: torch.pow(2.5, x)),
    unary_cases(lambda: planted(torch.randn(3, 4) * 3.0, (NAN, INF, -INF, 0.0))),
)
fixture(
    "pow_scalar_base_int64",
    "pow",
    "torch.pow(3, x), int64 [3,4]: negative exponents give 0, large ones wrap; torch.pow(-1, x) by parity",
    fn(lambda x: (torch.pow(3, x), torch.pow(-1, x), torch.pow(1, x))),
    unary_cases(lambda: planted(ints(-3, 12, 3, 4), (-5, 40, 63, 0))),
)
fixture(
    "pow_int32",
    "pow",
    "x ** y, int32 [3,4] and [4]: negative exponents (0, or +-1 for bases +-1), wrapping",
    fn(torch.pow),
    twice(lambda: (planted(ints(-4, 5, 3, 4, dtype=torch.int32), (1, -1, 0, 7)), torch.tensor([0, 3, -1, 25], dtype=torch.int32))),
)
fixture(
    "pow_tensor_scalar_int",
    "pow",
    "x ** 5 and x ** 0 of int32 [3,4] (PyTorch refuses negative exponents here); x ** 2.5 of int32 -> float32",
    fn(lambda x: (x**5, x**0, x**2.5)),
    unary_cases(lambda: ints(-4, 5, 3, 4, dtype=torch.int32)),
)
fixture(
    "pow_scalar_exponents",
    "pow",
    "x ** -1, x ** -2, x ** -0.5 and x ** 1.5, float32 [3,4] with zeros",
    fn(lambda x: (x**-1, x**-2, x**-0.5, x**1.5)),
    unary_cases(lambda: planted(positive(3, 4), (0.0, -0.0))),
)
fixture(
    "rsub",
    "rsub",
    "torch.rsub(x, 2.0, alpha=3) = 2 - 3x, float32 [3,4]",
    fn(lambda x: torch.rsub(x, 2.0, alpha=3)),
    unary_cases(lambda: randn(3, 4)),
    preserve=(torch.ops.aten.rsub.Scalar,),
)
fixture(
    "rsub_int32",
    "rsub",
    "torch.rsub(x, 5) = 5 - x and torch.rsub(x, 1.5) (-> float32), int32 [3,4] with the type's limits",
    fn(lambda x: (torch.rsub(x, 5), torch.rsub(x, 1.5))),
    unary_cases(lambda: sample(torch.int32, 3, 4)),
    preserve=(torch.ops.aten.rsub.Scalar,),
)
fixture(
    "div_scalar_mode",
    "div",
    "torch.div(x, 0.75, rounding_mode=floor|trunc), float32 [3,4]; of int64 by 3 and by 2.5",
    fn(lambda x, i: (torch.ops.aten.div.Scalar_mode(x, 0.75, rounding_mode="floor"),
                     torch.ops.aten.div.Scalar_mode(x, 0.75, rounding_mode="trunc"),
                     torch.ops.aten.div.Scalar_mode(i, 3, rounding_mode="floor"),
                     torch.ops.aten.div.Scalar_mode(i, 2.5, rounding_mode="trunc"))),
    twice(lambda: (randn(3, 4) * 3.0, ints(-20, 20, 3, 4))),
    preserve=(torch.ops.aten.div.Scalar_mode,),
)
fixture(
    "clamp_tensor",
    "clamp",
    "torch.clamp(x, lo, hi), float32 [3,4], lo [4], hi [3,1] (broadcast), NaN in each",
    fn(lambda x, lo, hi: torch.clamp(x, lo, hi)),
    twice(lambda: (planted(randn(3, 4), (NAN,)), planted(randn(4) - 1.0, (NAN,)), planted(randn(3, 1) + 1.0, (NAN,)))),
)
fixture(
    "clamp_tensor_min_int32",
    "clamp",
    "torch.clamp(x, min=lo) and torch.clamp(x, max=hi), int32 [3,4] and [4]",
    fn(lambda x, lo: (torch.clamp(x, min=lo), torch.clamp(x, max=lo))),
    twice(lambda: (sample(torch.int32, 3, 4), ints(-3, 3, 4, dtype=torch.int32))),
)
fixture(
    "clamp_int64_float_bounds",
    "clamp",
    "torch.clamp(x, -1.5, 2.5) of int64 [3,4] -> float32 (float bounds promote)",
    fn(lambda x: torch.clamp(x, -1.5, 2.5)),
    unary_cases(lambda: ints(-5, 5, 3, 4)),
)
fixture(
    "masked_fill_scalar",
    "masked_fill",
    "x.masked_fill(mask, -2.5) float32 [2,3,4] with a bool [3,4] mask; int32 [3,4] filled with 7",
    fn(lambda x, m, i: (x.masked_fill(m, -2.5), i.masked_fill(m, 7))),
    twice(lambda: (randn(2, 3, 4), bools(3, 4), ints(-9, 9, 3, 4, dtype=torch.int32))),
    preserve=(torch.ops.aten.masked_fill.Scalar,),
)
fixture(
    "masked_fill_float16",
    "masked_fill",
    "x.masked_fill(mask, inf) of float16 [3,4], and x.masked_fill(mask, 0.1) of bfloat16 [3,4]",
    fn(lambda x, y, m: (x.masked_fill(m, INF), y.masked_fill(m, 0.1))),
    twice(lambda: (randn(3, 4, dtype=torch.float16), randn(3, 4, dtype=torch.bfloat16), bools(3, 4))),
    preserve=(torch.ops.aten.masked_fill.Scalar,),
)
for _name, _dim, _shape in [("glu", -1, (3, 8)), ("glu_dim0", 0, (4, 3)), ("glu_negative_dim", -3, (2, 3, 2))]:
    fixture(
        _name,
        "glu",
        f"F.glu(x, dim={_dim}), float32 {list(_shape)}",
        fn(lambda x, dim=_dim: F.glu(x, dim)),
        unary_cases(lambda shape=_shape: randn(*shape) * 3.0),
        preserve=(torch.ops.aten.glu.default,),
    )
fixture(
    "glu_float16_float64",
    "glu",
    "F.glu(x, -1) of float16 [2,6] and float64 [2,6]",
    fn(lambda x, y: (F.glu(x, -1), F.glu(y, -1))),
    twice(lambda: (randn(2, 6, dtype=torch.float16), randn(2, 6, dtype=torch.float64))),
    preserve=(torch.ops.aten.glu.default,),
)

# ---- type promotion

fixture(
    "promote_uint8_int8",
    "add/mul",
    "x + y and x * y, uint8 [3,4] and int8 [4] -> int16 (neither holds the other)",
    fn(lambda x, y: (x + y, x * y)),
    twice(lambda: (sample(torch.uint8, 3, 4), sample(torch.int8, 4))),
)
fixture(
    "promote_0dim",
    "add/mul/where",
    "float32 [3,4] + 0-dim float64 -> float32; int32 [3,4] * 0-dim int64 -> int32; int32 [3,4] + 0-dim float64 -> float64",
    fn(lambda x, d, i, l: (x + d, i * l, i + d, torch.where(i > 0, x, d))),
    twice(lambda: (randn(3, 4), randn(dtype=torch.float64), sample(torch.int32, 3, 4), ints(-3, 3))),
)
fixture(
    "promote_scalars",
    "add/mul/gt",
    "int32 [3,4] + 2.5 -> float32; bool [3,4] + 2 -> int64; int8 [3,4] * 100 -> int8 (wraps); int64 > 1.5; float16 * 3.3",
    fn(lambda i, b, s, h: (i + 2.5, b + 2, s * 100, i.long() > 1.5, h * 3.3)),
    twice(lambda: (sample(torch.int32, 3, 4), bools(3, 4), sample(torch.int8, 3, 4), randn(3, 4, dtype=torch.float16))),
)
fixture(
    "promote_half_bfloat16",
    "add/div",
    "float16 [3,4] + bfloat16 [4] -> float32; int64 [3,4] / int64 [4] -> float32",
    fn(lambda h, b, i, j: (h + b, i / j)),
    twice(lambda: (randn(3, 4, dtype=torch.float16), randn(4, dtype=torch.bfloat16), ints(-9, 9, 3, 4), nonzero_ints(4))),
)
fixture(
    "where_dtypes",
    "where",
    "torch.where(c, x, y) of int32 [3,4] and float16 [4] -> float16; of uint8 and int8 -> int16; of bool and bool",
    fn(lambda c, i, h, u, s, b: (torch.where(c, i, h), torch.where(c, u, s), torch.where(c, b, ~b))),
    twice(lambda: (bools(3, 4), sample(torch.int32, 3, 4), randn(4, dtype=torch.float16),
                   sample(torch.uint8, 3, 4), sample(torch.int8, 4), bools(3, 4))),
)
fixture(
    "comparisons_nan",
    "eq/ne/lt/le/gt/ge",
    "x op y of float32 [3,4] and [4] with NaN on both sides (only ne is true) and infinities",
    fn(lambda x, y: (x == y, x != y, x < y, x <= y, x > y, x >= y)),
    twice(lambda: (planted(halves(3, 4), (NAN, INF, -INF, -0.0)), planted(halves(4), (NAN, 0.0, INF)))),
)
fixture(
    "maximum_minimum_nan",
    "maximum/minimum",
    "torch.maximum and torch.minimum, float32 [3,4] and [4] with NaN on either side (NaN wins), infinities",
    fn(lambda x, y: (torch.maximum(x, y), torch.minimum(x, y))),
    twice(lambda: (planted(randn(3, 4), (NAN, INF, -INF)), planted(randn(4), (NAN, -INF)))),
)
fixture(
    "broadcast_shapes",
    "add/mul",
    "x + y and x * y of [2,1,3,1] and [4,1,1] -> [2,4,3,1]; [1] + [3,4]; [0,4] + [1] (empty)",
    fn(lambda a, b, c, d, e: (a + b, a * b, c + d, e + c)),
    twice(lambda: (randn(2, 1, 3, 1), randn(4, 1, 1), randn(1), randn(3, 4), randn(0, 4))),
)


# ---- the LLM export path's operators (llama::*, quantized embeddings)


def llm_ops():
    """Registers the llama:: operators and the quantized embeddings with torch."""
    import executorch.exir.passes._quant_patterns_and_replacements  # noqa: F401
    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401


class CustomSdpa(nn.Module):
    """``custom_sdpa`` of the query over caches given as inputs."""

    def __init__(self, start_pos: int, is_causal: bool, scale=None):
        super().__init__()
        llm_ops()
        self.start_pos, self.is_causal, self.scale = start_pos, is_causal, scale

    def forward(self, q, k, v, mask=None):
        return torch.ops.llama.custom_sdpa(q, k, v, self.start_pos, mask, 0.0, self.is_causal, self.scale)


class KvCacheAttention(nn.Module):
    """``sdpa_with_kv_cache`` over caches the module holds (state across cases)."""

    def __init__(self, start_pos: int):
        super().__init__()
        llm_ops()
        self.start_pos = start_pos
        self.register_buffer("k_cache", torch.zeros(1, 8, 2, 8))
        self.register_buffer("v_cache", torch.zeros(1, 8, 2, 8))

    def forward(self, q, k, v):
        return torch.ops.llama.sdpa_with_kv_cache(
            q, k, v, self.k_cache, self.v_cache, self.start_pos, q.shape[1], None, 0.0, True, None
        )


class CacheUpdate(nn.Module):
    """``update_cache`` into a cache the module holds, then the cache read back."""

    def __init__(self, start_pos: int):
        super().__init__()
        llm_ops()
        self.start_pos = start_pos
        self.register_buffer("cache", torch.zeros(1, 6, 2, 4))

    def forward(self, value):
        torch.ops.llama.update_cache(value, self.cache, self.start_pos)
        return self.cache * 1.0


class QuantizedEmbedding(nn.Module):
    """A table of ``bits``-bit integers (packed as ExecuTorch packs them) with
    a scale, and optionally a zero point, per group of columns."""

    def __init__(self, bits: int, groups: int, zero_points: bool, dtype=torch.float32):
        super().__init__()
        llm_ops()
        rows, columns = 6, 8
        low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        q = torch.randint(low, high + 1, (rows, columns), dtype=torch.int32)
        if bits == 8:
            packed = q.to(torch.int8)
        elif bits == 4:
            shifted = (q + 8).to(torch.uint8).view(rows, columns // 2, 2)
            packed = (shifted[:, :, 0] << 4) | shifted[:, :, 1]
        else:
            shifted = (q + 2).to(torch.uint8).view(rows, columns // 4, 4)
            packed = shifted[:, :, 0] | (shifted[:, :, 1] << 2) | (shifted[:, :, 2] << 4) | (shifted[:, :, 3] << 6)
        self.bits, self.low, self.high, self.dtype = bits, low, high, dtype
        self.register_buffer("weight", packed)
        shape = (rows, groups) if groups > 1 else (rows,)
        self.register_buffer("scales", (0.05 + torch.rand(shape)).to(dtype))
        self.register_buffer("zero_points", torch.randint(-2, 3, shape).to(dtype) if zero_points else None)

    def forward(self, indices):
        name = {8: "embedding_byte", 4: "embedding_4bit", 2: "embedding_2bit"}[self.bits]
        op = getattr(torch.ops.quantized_decomposed, name).dtype
        return op(self.weight, self.scales, self.zero_points, self.low, self.high, indices, dtype=self.dtype)


def attention_inputs(length: int, mask_columns: int | None = None):
    def make():
        inputs = (randn(1, length, 4, 8), randn(1, 8, 2, 8), randn(1, 8, 2, 8))
        if mask_columns is None:
            return inputs
        mask = torch.where(torch.rand(length, mask_columns) < 0.3, -math.inf, 0.0)
        mask[:, 0] = 0.0  # every row sees a key
        return (*inputs, mask)

    return twice(make)


fixture(
    "custom_sdpa_causal",
    "llama::custom_sdpa",
    "custom_sdpa of q [1,3,4,8] over caches [1,8,2,8] (4 query heads on 2 key heads) from start_pos 2, causal",
    lambda: CustomSdpa(2, True),
    attention_inputs(3),
)
fixture(
    "custom_sdpa_mask",
    "llama::custom_sdpa",
    "custom_sdpa of q [1,3,4,8] from start_pos 2 with an additive float mask [3,8] holding -inf "
    "(a mask covers every row of the caches)",
    lambda: CustomSdpa(2, False),
    attention_inputs(3, 8),
)
fixture(
    "custom_sdpa_full_scale",
    "llama::custom_sdpa",
    "custom_sdpa of q [1,2,4,8] from start_pos 4, not causal (every filled row), scale 0.5",
    lambda: CustomSdpa(4, False, 0.5),
    attention_inputs(2),
)
fixture(
    "sdpa_with_kv_cache",
    "llama::sdpa_with_kv_cache",
    "sdpa_with_kv_cache: k, v [1,3,2,8] written into held caches [1,8,2,8] at 2, then causal attention",
    lambda: KvCacheAttention(2),
    twice(lambda: (randn(1, 3, 4, 8), randn(1, 3, 2, 8), randn(1, 3, 2, 8))),
)
fixture(
    "update_cache",
    "llama::update_cache",
    "update_cache of value [1,2,2,4] into a held cache [1,6,2,4] at 3 (the second case overwrites it)",
    lambda: CacheUpdate(3),
    twice(lambda: (randn(1, 2, 2, 4),)),
)


class IndexedCacheUpdate(nn.Module):
    """``update_cache_with_indices`` into a cache the module holds, then the
    cache read back."""

    def __init__(self):
        super().__init__()
        llm_ops()
        self.register_buffer("cache", torch.zeros(1, 6, 2, 4))

    def forward(self, value, indices):
        torch.ops.llama.update_cache_with_indices(value, self.cache, 0, indices)
        return self.cache * 1.0


class QuantizedSdpa(nn.Module):
    """``custom_quantized_sdpa`` of int8 operands, each with a scale and zero
    point per token and head, given as inputs."""

    def __init__(self, start_pos: int, seq_at_dim_2: bool):
        super().__init__()
        llm_ops()
        self.start_pos, self.seq_at_dim_2 = start_pos, seq_at_dim_2

    def forward(self, q, k, v, q_zp, q_scale, k_zp, k_scale, v_zp, v_scale):
        return torch.ops.llama.custom_quantized_sdpa(
            q, k, v, self.start_pos, None, 0.0, True, None,
            q_zp, q_scale, k_zp, k_scale, v_zp, v_scale, self.seq_at_dim_2,
        )


def quantized_attention_inputs(length: int, seq_at_dim_2: bool):
    """int8 q [1, length, 4, 8] and caches [1, 8, 2, 8] (heads before rows
    with ``seq_at_dim_2``), zero points and scales per row of heads."""

    def operand(rows, heads):
        data = ints(-128, 128, 1, rows, heads, 8, dtype=torch.int8)
        zero_points = ints(-10, 11, 1, rows, heads, 1, dtype=torch.int8)
        scales = 0.01 + 0.05 * torch.rand(1, rows, heads, 1)
        if seq_at_dim_2:
            data, zero_points, scales = (x.transpose(1, 2).contiguous() for x in (data, zero_points, scales))
        return data, zero_points, scales

    def make():
        (q, qz, qs), (k, kz, ks), (v, vz, vs) = operand(length, 4), operand(8, 2), operand(8, 2)
        return (q, k, v, qz, qs, kz, ks, vz, vs)

    return twice(make)


class GatedDeltaRule(nn.Module):
    """``gated_delta_rule`` (Qwen3.5's linear attention): both results."""

    def __init__(self):
        super().__init__()
        llm_ops()

    def forward(self, q, k, v, decay, beta, state):
        return torch.ops.llama.gated_delta_rule(q, k, v, decay, beta, state)


def delta_rule_inputs(query_heads: int, heads: int, tokens: int, channelwise: bool):
    def make():
        decay = torch.rand(1, heads, tokens, *([4] if channelwise else []))
        return (
            randn(1, query_heads, tokens, 4) * 0.5,
            torch.nn.functional.normalize(randn(1, heads, tokens, 4), dim=-1),
            randn(1, heads, tokens, 3),
            decay,
            torch.sigmoid(randn(1, heads, tokens)),
            randn(1, heads, 4, 3),
        )

    return twice(make)


fixture(
    "update_cache_with_indices",
    "llama::update_cache_with_indices",
    "update_cache_with_indices of value [1,3,2,4] into a held cache [1,6,2,4] at rows int64 [1,3] "
    "(the second case writes one row twice: the later value stays)",
    IndexedCacheUpdate,
    lambda: [
        (randn(1, 3, 2, 4), torch.tensor([[5, 0, 2]])),
        (randn(1, 3, 2, 4), torch.tensor([[1, 1, 4]])),
    ],
)
for seq_at_dim_2 in [False, True]:
    fixture(
        "custom_quantized_sdpa" + ("_seq_at_dim_2" if seq_at_dim_2 else ""),
        "llama::custom_quantized_sdpa",
        "custom_quantized_sdpa of int8 q [1,3,4,8] over int8 caches [1,8,2,8] from start_pos 2, causal, "
        "a scale and zero point per token and head"
        + (" (operands [batch, heads, rows, head_dim]: is_seq_at_dim_2)" if seq_at_dim_2 else ""),
        lambda seq_at_dim_2=seq_at_dim_2: QuantizedSdpa(2, seq_at_dim_2),
        quantized_attention_inputs(3, seq_at_dim_2),
    )
fixture(
    "gated_delta_rule",
    "llama::gated_delta_rule",
    "gated_delta_rule over 5 tokens: 4 query heads in groups on 2 state heads [4 x 3], a decay per key channel",
    GatedDeltaRule,
    delta_rule_inputs(4, 2, 5, True),
)
fixture(
    "gated_delta_rule_scalar_decay",
    "llama::gated_delta_rule",
    "gated_delta_rule over 3 tokens, 2 heads, one decay per token and head",
    GatedDeltaRule,
    delta_rule_inputs(2, 2, 3, False),
)
for bits, groups, zero_points, dtype, note in [
    (8, 1, False, torch.float32, "one scale per row"),
    (8, 2, True, torch.float32, "2 groups, zero points"),
    (4, 2, True, torch.float32, "2 groups, zero points"),
    (4, 1, False, torch.float16, "one scale per row, float16"),
    (2, 4, True, torch.float32, "4 groups, zero points"),
]:
    name = {8: "byte", 4: "4bit", 2: "2bit"}[bits]
    fixture(
        f"embedding_{name}_g{groups}{'_zp' if zero_points else ''}{'_f16' if dtype == torch.float16 else ''}",
        f"quantized_decomposed::embedding_{name}",
        f"embedding_{name} of a [6,8] table of {bits}-bit integers, {note}; int64 ids [2,3]",
        lambda bits=bits, groups=groups, zero_points=zero_points, dtype=dtype: QuantizedEmbedding(
            bits, groups, zero_points, dtype
        ),
        twice(lambda: (ints(0, 6, 2, 3),)),
    )


# ---------------------------------------------------------------- lowering


def flat_outputs(outputs) -> list[torch.Tensor]:
    return [outputs] if isinstance(outputs, torch.Tensor) else list(outputs)


def plan_operators(program) -> list[str]:
    """The operators of the forward method's execution plan, as ``name.overload``."""
    plan = program.executorch_program.execution_plan[0]
    return [f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators]


def export_bundled(
    spec: OpFixture, partitioner: list | None = None, seed_scope: str = "ops"
) -> tuple[bytes, list[Inputs], list[torch.Tensor], list[str]]:
    """Export one fixture (lowered to ``partitioner``, none by default); return the
    serialized bundled program, the inputs of its test cases, the expected outputs
    of the first case and the plan's operators."""
    torch.manual_seed(seed_for(seed_scope, spec.name))
    model = spec.make_model().eval()
    cases = spec.make_cases()
    reference = copy.deepcopy(model)

    exported = torch.export.export(model, cases[0], dynamic_shapes=spec.dynamic_shapes)
    config = EdgeCompileConfig(_check_ir_validity=False, preserve_ops=list(spec.preserve))
    if partitioner and spec.preserve:
        # Lowering in the same step decomposes the preserved operators
        # (the partitioner's own list of operators not to decompose wins);
        # lowering the edge program keeps them for the partitioner.
        edge = to_edge(exported, compile_config=config)
        for each in partitioner:
            edge = edge.to_backend(each)
    else:
        edge = to_edge_transform_and_lower(exported, partitioner=partitioner or [], compile_config=config)
    program = edge.to_executorch()

    test_cases, expected = [], []
    with torch.no_grad():
        for inputs in cases:
            outputs = flat_outputs(reference(*inputs))
            expected.append(outputs)
            test_cases.append(MethodTestCase(inputs=inputs, expected_outputs=outputs))
    suite = MethodTestSuite(method_name="forward", test_cases=test_cases)
    data = serialize_from_bundled_program_to_flatbuffer(BundledProgram(program, [suite]))
    return data, cases, expected[0], plan_operators(program)


# ---------------------------------------------------------------- index and README


def describe(tensors) -> list[dict]:
    return [{"dtype": dtype_name(t.dtype), "shape": list(t.shape)} for t in tensors]


def index_entry(spec: OpFixture, data: bytes, cases, outputs, operators, variant: str = VARIANT) -> dict:
    return {
        "op": spec.op,
        "variant": variant,
        "description": spec.description,
        "operators": operators,
        "inputs": describe(cases[0]),
        "outputs": describe(outputs),
        "test_cases": len(cases),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


README_HEAD = """\
# Operator fixtures

One small portable bundled program (`.bpte`, no delegation) per ATen operator and dtype class,
plus edge cases PyTorch defines: NaN and inf propagation, empty and 0-dim tensors, integer
overflow (PyTorch wraps), division by zero, negative dims and broadcasting. Each file holds two test
cases with different inputs whose expected outputs were computed by eager PyTorch; inputs that must
contain NaN, inf or particular values (ties, exact halves, signed zeros) are built deterministically
in both cases. Files are named `<op>[_<variant>].portable.bpte`.

They were written by `scripts/gen_op_fixtures.py` with the public ExecuTorch 1.5.1 exporter (torch
2.14.0). `index.json` lists each file's op, description, the operators of its execution plan,
input and output dtypes and shapes, number of test cases, size and SHA-256.

Regenerate them from the repository root (the generator is deterministic: fixed seeds per fixture):

    $ANCHOR_PY scripts/gen_op_fixtures.py        # e.g. ANCHOR_PY=~/.cache/ptec-anchor/venv/bin/python

Check them with ptec and with ExecuTorch's own runtime:

    target/release/ptec test tests/fixtures/ops/*.bpte
    $ANCHOR_PY ../shared/anchor/et_run.py tests/fixtures/ops/*.bpte

Expected outputs contain NaN where PyTorch defines NaN; compare them with NaN equal to NaN in the
same position. `et_run.py` compares with `torch.allclose` without `equal_nan`, so it reports every
fixture whose expected outputs contain NaN as failing even when ExecuTorch computes the same NaNs.

Expected outputs always follow eager PyTorch, also where ExecuTorch 1.5.1's portable kernels differ:
`remainder_int64` and `int_divisions` (ExecuTorch returns C's truncated remainder of signed
integers, whose sign follows the dividend; PyTorch's follows the divisor), `max_pool2d_nan_inf`
(ExecuTorch drops NaN inside a pooling window; PyTorch propagates it), `max_pool2d_backward`
(ExecuTorch 1.5.1's kernel gives other gradients on these overlapping, padded windows, up to 1.39
away; ptec's equal PyTorch's exactly), `shifts_*` (ExecuTorch shifts
by amounts below 0 or not below the width as C leaves undefined; PyTorch gives 0, or the sign for
right shifts of signed types), `pow_int32`, `pow_scalar_base_int64` and the integer sweeps'
`pow` (ExecuTorch computes integer powers in floats and casts the overflowing result; PyTorch
wraps), the integer sweeps' `floor`/`ceil`/`trunc` of the types' limits (ExecuTorch goes through
a float and saturates; PyTorch returns the integer), `int_fns_half_float64` (ExecuTorch's
`sign` keeps NaN; PyTorch gives 0) and `floor_divide` of infinities (the float sweeps and
`floor_divide_float_exact`: ExecuTorch gives an infinity; PyTorch NaN). ExecuTorch refuses three programs PyTorch computes:
`conj_physical` (an int64 input), `logit_int32_float16` (an int32 input) and `promote_0dim` (a
0-dim float64 operand with a float32 or int32 tensor).
"""


def write_readme(out_dir: Path, index: dict, skipped: dict) -> None:
    lines = [README_HEAD, "| file | op | description | bytes |", "|---|---|---|---|"]
    for name, entry in index.items():
        description = entry["description"].replace("|", "\\|")
        lines.append(f"| `{name}` | `{entry['op']}` | {description} | {entry['bytes']} |")
    total = sum(entry["bytes"] for entry in index.values())
    lines.append(f"\n{len(index)} files, {total} bytes.\n")
    lines.append("## Skipped\n")
    if skipped:
        lines.append("These fixtures failed to export or lower on the portable path and have no file:\n")
        lines.extend(f"- `{name}`: {reason}" for name, reason in skipped.items())
    else:
        lines.append("None: every fixture exported.")
    (out_dir / "README.md").write_text("\n".join(lines) + "\n")


# ---------------------------------------------------------------- main


def arguments(doc: str, default: Path, only: bool = False) -> argparse.Namespace:
    """The command line: the output folder (created), by default ``default``, and
    with ``only`` the fixtures to write (``--only``; all by default)."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=default)
    if only:
        parser.add_argument("--only", nargs="+", metavar="NAME", help="write only these fixtures")
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    return args


def out_dir_argument(doc: str, default: Path) -> Path:
    """The output folder from the command line (created), by default ``default``."""
    return arguments(doc, default).out_dir


def main() -> int:
    args = arguments(__doc__, DEFAULT_OUT_DIR, only=True)
    out_dir = args.out_dir

    names = [spec.name for spec in FIXTURES]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        print(f"duplicate fixture names: {duplicates}", file=sys.stderr)
        return 1
    unknown = sorted(set(args.only or ()) - set(names))
    if unknown:
        print(f"no such fixtures: {unknown}", file=sys.stderr)
        return 1

    # With --only, the other fixtures' files and index entries stay as they are.
    index, skipped = {}, {}
    index_file = out_dir / "index.json"
    if args.only and index_file.exists():
        index = {
            name: entry
            for name, entry in json.loads(index_file.read_text()).items()
            if name.removesuffix(f".{VARIANT}.bpte") not in args.only
        }
    for spec in FIXTURES:
        if args.only and spec.name not in args.only:
            continue
        file_name = f"{spec.name}.{VARIANT}.bpte"
        try:
            data, cases, outputs, operators = export_bundled(spec)
        except Exception as error:  # noqa: BLE001 - skip this op, report it, go on
            traceback.print_exc()
            reason = f"{type(error).__name__}: {str(error).strip().splitlines()[0] if str(error).strip() else ''}"
            print(f"SKIPPED {file_name} ({spec.op}): {reason}", flush=True)
            skipped[file_name] = reason[:300]
            continue
        (out_dir / file_name).write_bytes(data)
        index[file_name] = index_entry(spec, data, cases, outputs, operators)
        print(f"wrote {file_name} ({len(data)} bytes)", flush=True)

    # Files of fixtures that no longer exist or were skipped this time are stale.
    for stale in sorted(set(p.name for p in out_dir.glob(f"*.{VARIANT}.bpte")) - set(index)):
        (out_dir / stale).unlink()
        print(f"removed stale {stale}")

    # In the fixtures' order, as a full run writes them.
    order = [f"{spec.name}.{VARIANT}.bpte" for spec in FIXTURES]
    index = {name: index[name] for name in order if name in index}
    with open(out_dir / "index.json", "w") as out:
        json.dump(index, out, indent=2, sort_keys=True)
        out.write("\n")
    write_readme(out_dir, index, skipped)

    total = sum(entry["bytes"] for entry in index.values())
    print(f"{len(index)} fixtures, {total} bytes, {len(skipped)} skipped")
    for name, reason in skipped.items():
        print(f"  skipped {name}: {reason}")

    problems = check_sizes(index, MAX_FIXTURE_BYTES, MAX_TOTAL_BYTES)
    attempted = len(args.only) if args.only else len(FIXTURES)
    if len(skipped) > MAX_FAILED_FRACTION * attempted:
        problems.append(
            f"{len(skipped)} of {attempted} fixtures failed to export (more than "
            f"{MAX_FAILED_FRACTION:.0%}): the environment looks broken"
        )
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
