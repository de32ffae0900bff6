"""Generate ptec's OpInfo oracle: PyTorch's own operator samples as portable bundled programs.

PyTorch describes every operator it tests in its OpInfo database
(``torch.testing._internal.common_methods_invocations.op_db``): the dtypes it
supports and sample inputs that exercise its arguments, broadcasting, empty and
0-dim tensors, and extremal values. This script walks that database. For each
OpInfo, each dtype ExecuTorch has a scalar type for (float32, float64, float16,
bfloat16, int64, int32, int16, int8, uint8, bool) and each sample of
``op.reference_inputs("cpu", dtype, requires_grad=False)``, it builds a module
that calls the OpInfo's function on the sample (tensors become the program's
inputs, everything else its constants), exports it with the public exporter
exactly as ``gen_op_fixtures.py`` does (no partitioner:
``to_edge_transform_and_lower`` then ``to_executorch``), and keeps it when every
operator of the execution plan is one of the 240 operator keys of ExecuTorch
1.5.1's portable kernel library. Expected outputs are eager PyTorch's on the same
inputs. Samples with identical inputs' shapes and dtypes and identical other
arguments share one program, as its several test cases.

``reference_inputs`` are the OpInfo's ``sample_inputs`` followed, for the
elementwise operators and some others, by its reference samples: NaN, infinities,
extremal and small values, non-contiguous and broadcasting layouts (where an
OpInfo defines none, they are its sample inputs). They are cheap to generate and
carry the NaN and inf cases this oracle is for; samples are numbered in that
order. ``error_inputs`` are not used: they raise in eager PyTorch, so they have
no expected output to compare with. Only ``op_db`` is walked: ``python_ref_db``
describes Python reference implementations of the same ATen operators with the
same samples, so it would repeat the same programs.

Every sample is accounted for. One that cannot be expressed is skipped with its
reason (the first line of the exception, normalized): the export or lowering
fails, the plan calls operators outside the portable library, the outputs are
not tensors or not deterministic, the sample is too large, ... To keep the files
few and small (they are committed), samples are attempted in the order of
``attempt_order`` (the richest sample, then one with NaN or inf, one with an empty
tensor, one with a 0-dim tensor, then new argument signatures) and at most
``CAPS[dtype]`` programs are kept per (OpInfo, dtype); the rest are counted as
not attempted. An OpInfo
whose first samples in its leading dtype all fail is not attempted in other
dtypes (so the walk does not export thousands of linalg or fft samples).
Random operators (``RANDOM_OPS``) are excluded: their outputs cannot be
compared elementwise.

ExecuTorch's own portable runtime then runs every written file in a separate
process (an abort or a hang of the runtime is recorded, not fatal), and its
verdict is stored with the fixture: pass, fail (with the largest error and the
first differing element) or error (with the runtime's message and log).
Outputs are compared as ``ptec test`` compares them, with the fixture's
tolerance: ``|got - expected| <= atol + rtol * |expected|`` for floats (NaN
equals NaN, infinities equal themselves), exact equality otherwise.

Tolerances are per dtype, ``torch.testing.assert_close``'s defaults, relaxed
where the OpInfo itself declares a looser ``toleranceOverride`` for CPU
numerics (``TOLERANCES``, ``opinfo_tolerance``).

Determinism: each (OpInfo, dtype) draws its samples after seeding the global
generator from their names, and PyTorch runs on one thread, so reruns give the
same files (as long as torch and executorch are the same versions).

Outputs, in ``OUT_DIR`` (default ``tests/fixtures/opinfo``):
  ``<opinfo>.<dtype>.s<NN>.bpte``  one bundled program per sample (or group);
  ``index.json``  per file: OpInfo name and variant, dtype, samples and their
      descriptions, the portable keys it exercises, the plan's operators,
      input and output dtypes and shapes, rtol and atol, size, SHA-256 and
      ExecuTorch's result; per OpInfo and dtype: samples seen, written,
      skipped by reason;
  ``skipped.json``  every skipped sample's index, by OpInfo, dtype and reason.

Work in progress lives in ``--work`` (default ``target/opinfo-work``): one
record per OpInfo, so an interrupted walk resumes where it stopped, and
``--only NAME...`` walks again just those OpInfos (``name`` or
``name.variant``) before the files are assembled from every record present.
OpInfos are walked in ``walk_order`` (those named after a portable operator
first); ``--minutes M`` starts no OpInfo after M minutes, and ``index.json``
lists the OpInfos without a record as ``not_walked`` until a later run walks them.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_opinfo_fixtures.py [--jobs 2] [--minutes 40] [--only add div.floor_rounding] [--out DIR]
    $ANCHOR_PY scripts/gen_opinfo_fixtures.py --et-only     # run ExecuTorch again on the files
"""

import argparse
import hashlib
import importlib.metadata
import json
import math
import multiprocessing
import os
import re
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_fixtures import check_sizes, dtype_name, seed_for  # noqa: E402  (sibling script)
from gen_op_fixtures import OpFixture, describe, export_bundled, fn  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT_DIR = REPO_ROOT / "tests" / "fixtures" / "opinfo"
DEFAULT_WORK_DIR = REPO_ROOT / "target" / "opinfo-work"

# The dtypes ExecuTorch has scalar types for, in the order they are walked: the
# first one an OpInfo supports leads (its failure stops the walk of the OpInfo).
DTYPES = [
    torch.float32,
    torch.float64,
    torch.float16,
    torch.bfloat16,
    torch.int64,
    torch.int32,
    torch.int16,
    torch.int8,
    torch.uint8,
    torch.bool,
]

# Programs kept per (OpInfo, dtype): more in float32, where samples differ in their
# arguments and values (see attempt_order); other dtypes mostly check the kernels'
# dtype support. An OpInfo's leading dtype (the first of DTYPES it supports) keeps
# at least one; a dtype whose cap is 0 is not walked (``dtypes_not_walked``). The
# committed walk ran on a shared, loaded machine: 2 in float32 and none in other
# dtypes (the eight OpInfos walked first, abs, acos, acosh, add, arange, bmm, mul
# and sin, kept 4 and 1).
CAPS = {torch.float32: 2}
DEFAULT_CAP = 0
# Failed attempts after which an (OpInfo, dtype) gives up: this many when none
# succeeded, the cap plus this many otherwise.
EXTRA_ATTEMPTS = 2
# Bytes of inputs and outputs (of every sample sharing a program) above which a
# sample is skipped, above which it is attempted only after the others, and of the
# sample attempted first (see attempt_order).
MAX_DATA_BYTES = 12 * 1024
LARGE_DATA_BYTES = 4 * 1024
RICH_BYTES = 512
# Committed files must stay small.
MAX_FIXTURE_BYTES = 16 * 1024
MAX_TOTAL_BYTES = 8 * 1024 * 1024
# Seconds one sample's export may take, and one file's run on ExecuTorch.
EXPORT_TIMEOUT = 300
ET_TIMEOUT = 60

# torch.testing.assert_close's default tolerances per dtype (rtol, atol); integers
# and bool compare exactly.
TOLERANCES = {
    torch.float32: (1.3e-6, 1e-5),
    torch.float64: (1e-7, 1e-7),
    torch.float16: (1e-3, 1e-5),
    torch.bfloat16: (1.6e-2, 1e-5),
}

# OpInfos whose outputs are random (or uninitialized memory): excluded, since they
# cannot be compared elementwise. Other random behaviour is caught by running each
# sample twice under different seeds.
RANDOM_OPS = {
    "bernoulli",
    "cauchy",
    "empty",
    "empty_like",
    "empty_permuted",
    "empty_strided",
    "exponential",
    "geometric",
    "log_normal",
    "multinomial",
    "new_empty",
    "new_empty_strided",
    "nn.functional.alpha_dropout",
    "nn.functional.dropout",
    "nn.functional.dropout2d",
    "nn.functional.dropout3d",
    "nn.functional.feature_alpha_dropout.with_train",
    "nn.functional.fractional_max_pool2d",
    "nn.functional.fractional_max_pool3d",
    "nn.functional.rrelu",
    "normal",
    "normal.in_place",
    "normal.number_mean",
    "pca_lowrank",
    "rand_like",
    "randint",
    "randint_like",
    "randn",
    "randn_like",
    "resize_",
    "resize_as_",
    "svd_lowrank",
    "uniform",
}

# Plan operators that only move, view, cast or materialize values around an
# operator; a fixture's main keys are its other operators (or all, if none).
AUXILIARY_KEYS = {
    "aten::alias_copy.out",
    "aten::clone.out",
    "aten::expand_copy.out",
    "aten::full.out",
    "aten::permute_copy.out",
    "aten::scalar_tensor.out",
    "aten::squeeze_copy.dim_out",
    "aten::squeeze_copy.dims_out",
    "aten::unsqueeze_copy.out",
    "aten::view_copy.out",
    "dim_order_ops::_clone_dim_order.out",
    "dim_order_ops::_to_dim_order_copy.out",
}

# ExecuTorch's ScalarType codes (bundled tensors) for the dtypes above.
SCALAR_TYPES = {
    0: torch.uint8,
    1: torch.int8,
    2: torch.int16,
    3: torch.int32,
    4: torch.int64,
    5: torch.float16,
    6: torch.float32,
    7: torch.float64,
    11: torch.bool,
    15: torch.bfloat16,
}


# ---------------------------------------------------------------- OpInfos


def opinfo_key(op) -> str:
    """``name`` or ``name.variant``: unique across op_db."""
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def opinfos() -> dict:
    from torch.testing._internal.common_methods_invocations import op_db

    return {opinfo_key(op): op for op in op_db}


def opinfo_tolerance(op, dtype: torch.dtype) -> tuple[float, float]:
    """The dtype's default tolerance, loosened to the largest ``toleranceOverride``
    the OpInfo declares for that dtype on CPU (or any device) outside gradient tests."""
    from torch.testing._internal.common_device_type import toleranceOverride

    rtol, atol = TOLERANCES.get(dtype, (0.0, 0.0))
    for info in op.decorators:
        if getattr(info, "device_type", None) not in (None, "cpu") or not getattr(info, "active_if", True):
            continue
        test = (getattr(info, "test_name", None) or "").lower()
        if any(word in test for word in ("grad", "jvp", "vjp", "hessian")):
            continue
        for decorator in getattr(info, "decorators", [info]):
            if isinstance(decorator, toleranceOverride) and dtype in decorator.d:
                rtol = max(rtol, decorator.d[dtype].rtol)
                atol = max(atol, decorator.d[dtype].atol)
    return rtol, atol


def normalize(error: BaseException) -> str:
    """A stable one-line reason: the exception's type and first line, without addresses."""
    text = str(error).strip()
    line = text.splitlines()[0] if text else ""
    line = re.sub(r"0x[0-9a-fA-F]+", "0x…", line)
    line = re.sub(r"\s+", " ", line)
    reason = f"{type(error).__name__}: {line}" if line else type(error).__name__
    return reason[:200]


class Skip(Exception):
    """A sample the oracle cannot express; the message is the reason."""


class Timeout(Exception):
    pass


def on_alarm(signum, frame):
    raise Timeout(f"export took more than {EXPORT_TIMEOUT} s")


# ---------------------------------------------------------------- samples


def describe_value(value) -> str:
    """A tensor as ``dtype[shape]``, anything else as its repr (without addresses)."""
    if isinstance(value, torch.Tensor):
        return f"{dtype_name(value.dtype)}{list(value.shape)}"
    text = re.sub(r"0x[0-9a-fA-F]+", "0x…", repr(value))
    return text if len(text) <= 60 else text[:57] + "..."


def describe_sample(sample) -> str:
    """``input; args; kwargs`` with tensors as ``dtype[shape]``."""
    parts = [describe_value(sample.input) if not isinstance(sample.input, (list, tuple))
             else "[" + ", ".join(describe_value(t) for t in sample.input) + "]"]
    parts += [describe_value(arg) for arg in sample.args]
    parts += [f"{name}={describe_value(value)}" for name, value in sample.kwargs.items()]
    return ", ".join(parts)


class Prepared:
    """One sample as a program: its tensors (contiguous copies) are the inputs,
    everything else is baked into the function that calls the OpInfo's op."""

    def __init__(self, op, sample):
        leaves, spec = tree_flatten((sample.input, sample.args, sample.kwargs))
        positions = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
        for i in positions:
            tensor = leaves[i]
            if tensor.layout != torch.strided:
                raise Skip(f"input layout {tensor.layout} has no bundled form")
            if tensor.dtype not in SCALAR_TYPES.values():
                raise Skip(f"input dtype {dtype_name(tensor.dtype)} has no ExecuTorch scalar type")
        self.inputs = tuple(leaves[i].detach().contiguous().clone() for i in positions)
        constants = [None if i in positions else leaf for i, leaf in enumerate(leaves)]
        call = op.op

        def apply(*tensors):
            values = list(constants)
            for position, tensor in zip(positions, tensors):
                values[position] = tensor
            first, args, kwargs = tree_unflatten(values, spec)
            result = call(first, *args, **kwargs)
            return tuple(tree_flatten(result)[0])

        self.apply = apply
        # Samples of one signature can share a program (the same constants and input
        # types); a new novelty (constants and ranks) is a new way to call the op.
        arguments = (spec, [repr(c) for c in constants])
        self.signature = repr((arguments, [(t.dtype, tuple(t.shape)) for t in self.inputs]))
        self.novelty = repr((arguments, [t.dim() for t in self.inputs]))
        self.description = describe_sample(sample)

    def outputs(self) -> tuple:
        """Eager PyTorch's outputs; refuses what the oracle cannot compare."""
        with torch.no_grad():
            torch.manual_seed(0)
            given = tuple(t.clone() for t in self.inputs)
            first = self.apply(*given)
            torch.manual_seed(1)
            second = self.apply(*(t.clone() for t in self.inputs))
        if any(not same_values(a, b) for a, b in zip(given, self.inputs)):
            raise Skip("the op writes its inputs in place")
        if not first:
            raise Skip("the op returns no tensor")
        for value in first:
            if not isinstance(value, torch.Tensor):
                raise Skip(f"non-tensor output {type(value).__name__}")
            if value.layout != torch.strided:
                raise Skip(f"output layout {value.layout} has no bundled form")
            if value.dtype not in SCALAR_TYPES.values():
                raise Skip(f"output dtype {dtype_name(value.dtype)} has no ExecuTorch scalar type")
        if not all(same_values(a, b) for a, b in zip(first, second)):
            raise Skip("outputs differ between two runs (random or nondeterministic op)")
        return first

    def data_bytes(self, outputs) -> int:
        return sum(t.nbytes for t in self.inputs + outputs)


def same_values(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and elements (NaN equal to NaN)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point():
        return bool(torch.equal(a.isnan(), b.isnan()) and torch.equal(a.nan_to_num(0.0), b.nan_to_num(0.0)))
    return bool(torch.equal(a, b))


def attempt_order(units: list[list[int]], prepared: dict, outputs: dict) -> list[int]:
    """Indices into ``units`` in the order they are attempted: the richest small
    unit (the most dimensions in at most ``RICH_BYTES`` of data, no empty or
    non-finite inputs; else the smallest), then the first with non-finite values,
    the first with an empty tensor, the first with a 0-dim tensor, then one per
    argument signature not seen yet, then the rest; units of more than
    ``LARGE_DATA_BYTES`` come last."""
    if not units:
        return []
    inputs = [prepared[unit[0]].inputs for unit in units]
    data = [sum(prepared[i].data_bytes(outputs[i]) for i in unit) for unit in units]
    empty = [any(t.numel() == 0 for t in tensors) for tensors in inputs]
    nonfinite = [any(t.is_floating_point() and not bool(t.isfinite().all()) for t in tensors)
                 for tensors in inputs]
    zero_dim = [any(t.dim() == 0 for t in tensors) for tensors in inputs]

    def richness(p):
        small = data[p] <= RICH_BYTES and not (empty[p] or nonfinite[p])
        return (not small, -sum(t.dim() for t in inputs[p]) if small else data[p], data[p], p)

    order = [min(range(len(units)), key=richness)]
    small = [p for p in range(len(units)) if data[p] <= LARGE_DATA_BYTES]
    for flags in (nonfinite, empty, zero_dim):
        found = next((p for p in small if flags[p] and p not in order), None)
        if found is not None:
            order.append(found)
    seen = {prepared[units[p][0]].novelty for p in order}
    for p in small:
        if p not in order and prepared[units[p][0]].novelty not in seen:
            seen.add(prepared[units[p][0]].novelty)
            order.append(p)
    rest = [p for p in range(len(units)) if p not in order]
    return order + sorted(rest, key=lambda p: data[p] > LARGE_DATA_BYTES)


# ---------------------------------------------------------------- walking one OpInfo


def fixture_name(key: str, dtype: torch.dtype, index: int) -> str:
    return f"{key}.{dtype_name(dtype)}.s{index:02d}.bpte"


def export_unit(key, op, dtype, unit, prepared, outputs, portable, bpte_dir) -> dict:
    """Exports the samples of ``unit`` as one program; returns its fixture entry."""
    first = prepared[unit[0]]
    name = fixture_name(key, dtype, unit[0])
    spec = OpFixture(
        name=name,
        op=key,
        description="; ".join(prepared[i].description for i in unit),
        make_model=fn(first.apply),
        make_cases=lambda: [prepared[i].inputs for i in unit],
    )
    signal.alarm(EXPORT_TIMEOUT)
    try:
        data, cases, _, operators = export_bundled(spec, seed_scope="opinfo")
    finally:
        signal.alarm(0)
    outside = sorted(set(operators) - portable)
    if outside:
        raise Skip(f"calls operators outside the portable library: {', '.join(outside)}")
    if not operators:
        raise Skip("the program calls no operator")
    if len(data) > MAX_FIXTURE_BYTES:
        raise Skip(f"the program takes {len(data)} bytes, more than {MAX_FIXTURE_BYTES}")
    (bpte_dir / name).write_bytes(data)
    keys = sorted(set(operators))
    main = [k for k in keys if k not in AUXILIARY_KEYS] or keys
    rtol, atol = opinfo_tolerance(op, dtype)
    return {
        "opinfo": op.name,
        "variant": op.variant_test_name,
        "dtype": dtype_name(dtype),
        "samples": unit,
        "descriptions": [prepared[i].description for i in unit],
        "keys": main,
        "operators": operators,
        "inputs": describe(cases[0]),
        "outputs": describe(outputs[unit[0]]),
        "test_cases": len(unit),
        "rtol": rtol,
        "atol": atol,
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
    }


def walk_dtype(key, op, dtype, cap, portable, bpte_dir) -> tuple[dict, dict, list, int]:
    """Samples of one (OpInfo, dtype), keeping at most ``cap`` programs: fixtures by
    file, skip reason by sample, the reasons of failed attempts in order, and the
    number of samples."""
    torch.manual_seed(seed_for("opinfo", key, dtype_name(dtype)))
    samples = list(op.reference_inputs("cpu", dtype, requires_grad=False))
    skipped, prepared, outputs = {}, {}, {}
    for index, sample in enumerate(samples):
        try:
            prepared[index] = Prepared(op, sample)
            outputs[index] = prepared[index].outputs()
            if prepared[index].data_bytes(outputs[index]) > MAX_DATA_BYTES:
                raise Skip(f"inputs and outputs take more than {MAX_DATA_BYTES} bytes")
        except Skip as skip:
            skipped[index] = str(skip)
        except Exception as error:  # noqa: BLE001 - eager PyTorch refuses the sample
            skipped[index] = f"eager PyTorch fails: {normalize(error)}"
    # Samples with the same signature share one program.
    units: dict[str, list[int]] = {}
    for index in sorted(set(range(len(samples))) - set(skipped)):
        units.setdefault(prepared[index].signature, []).append(index)
    units = list(units.values())
    fixtures, failures = {}, []
    for position in attempt_order(units, prepared, outputs):
        unit = units[position]
        if len(fixtures) >= cap:
            for index in unit:
                skipped[index] = f"not attempted: {cap} programs per (OpInfo, dtype) at most"
            continue
        if len(failures) >= (cap if fixtures else 0) + EXTRA_ATTEMPTS:
            for index in unit:
                skipped[index] = f"not attempted: {len(failures)} attempts failed"
            continue
        try:
            entry = export_unit(key, op, dtype, unit, prepared, outputs, portable, bpte_dir)
            fixtures[fixture_name(key, dtype, unit[0])] = entry
            continue
        except Skip as skip:
            reason = str(skip)
        except Exception as error:  # noqa: BLE001 - the exporter refuses the sample
            reason = f"export fails: {normalize(error)}"
        failures.append(reason)
        for index in unit:
            skipped[index] = reason
    return fixtures, skipped, failures, len(samples)


def walk_opinfo(key: str, portable: frozenset, bpte_dir: Path) -> dict:
    """Every dtype of one OpInfo: its fixtures and, per dtype, what was skipped."""
    op = WORKER_OPINFOS[key]
    supported = op.supported_dtypes("cpu")
    walked = [d for d in DTYPES if d in supported]
    caps = {d: max(CAPS.get(d, DEFAULT_CAP), int(d == walked[0])) for d in walked}
    record = {
        "key": key,
        "fixtures": {},
        "dtypes": {},
        "unsupported_dtypes": sorted(dtype_name(d) for d in supported if d not in DTYPES),
        "dtypes_not_walked": [dtype_name(d) for d in walked if caps[d] == 0],
    }
    given_up = "random op: outputs cannot be compared elementwise" if key in RANDOM_OPS else None
    for dtype in [d for d in walked if caps[d] > 0]:
        started = time.time()
        try:
            if given_up:
                torch.manual_seed(seed_for("opinfo", key, dtype_name(dtype)))
                count = len(list(op.reference_inputs("cpu", dtype, requires_grad=False)))
                fixtures, skipped, failures = {}, dict.fromkeys(range(count), given_up), []
            else:
                fixtures, skipped, failures, count = walk_dtype(key, op, dtype, caps[dtype], portable, bpte_dir)
        except Exception as error:  # noqa: BLE001 - the sample generator itself fails
            record["dtypes"][dtype_name(dtype)] = {"error": f"reference_inputs fails: {normalize(error)}"}
            continue
        if not given_up and not fixtures and not record["fixtures"]:
            first = (failures or sorted(set(skipped.values())) or ["no samples"])[0]
            given_up = f"not attempted: no {dtype_name(dtype)} sample is expressible (first: {first})"
        record["fixtures"].update(fixtures)
        record["dtypes"][dtype_name(dtype)] = {
            "samples": count,
            "skipped": {str(index): reason for index, reason in sorted(skipped.items())},
            "seconds": round(time.time() - started, 1),
        }
    return record


WORKER_OPINFOS: dict = {}


def cache_cia_operator_scan() -> None:
    """Makes exports about a third cheaper: torch.export lists every operator with a
    CompositeImplicitAutograd kernel on each decomposition (walking every namespace
    of ``torch.ops``), and that list cannot change once the libraries are loaded.
    The first call, here, loads them; later ones reuse its answer. The exported
    programs are byte for byte the same."""
    import functools

    import torch._export.utils as export_utils
    import torch.export.decomp_utils as decomp_utils
    import torch.export.exported_program as exported_program

    every_namespace = functools.cache(export_utils._collect_all_valid_cia_ops)
    aten = functools.cache(export_utils._collect_all_valid_cia_ops_for_aten_namespace)
    every_namespace(), aten()
    exported_program._collect_all_valid_cia_ops = every_namespace
    decomp_utils._collect_all_valid_cia_ops = every_namespace
    decomp_utils._collect_all_valid_cia_ops_for_aten_namespace = aten


def init_worker() -> None:
    torch.set_num_threads(1)
    signal.signal(signal.SIGALRM, on_alarm)
    WORKER_OPINFOS.update(opinfos())
    import executorch.exir  # noqa: F401  (registers ExecuTorch's operator libraries)

    cache_cia_operator_scan()


def walk_task(task) -> dict:
    key, portable, bpte_dir = task
    return walk_opinfo(key, portable, Path(bpte_dir))


def record_path(work: Path, key: str) -> Path:
    return work / "records" / f"{key}.json"


# OpInfo namespaces whose operators (linear algebra, FFTs, special functions, sparse
# layouts) mostly decompose into operators outside the portable library: walked last.
UNLIKELY_PREFIXES = ("linalg.", "fft.", "special.", "sparse.", "signal.", "_refs.")


def walk_order(keys: list[str], portable: frozenset) -> list[str]:
    """``keys`` with the likeliest to give programs first (a time budget may stop the
    walk before the end): OpInfos named after a portable ATen operator (``sin``,
    ``nn.functional.relu``, ``narrow`` for ``narrow_copy``), then the others, then
    those of ``UNLIKELY_PREFIXES``; op_db's order within each group."""
    names = set()
    for portable_key in portable:
        namespace, _, name = portable_key.partition("::")
        if namespace == "aten":
            base = name.split(".")[0].lstrip("_")
            names.update({base, base.removesuffix("_copy")})

    def group(key: str) -> int:
        name = WORKER_OPINFOS[key].name
        if name.split(".")[-1].lstrip("_") in names:
            return 0
        return 2 if name.startswith(UNLIKELY_PREFIXES) else 1

    return sorted(keys, key=group)


def walk(keys: list[str], portable: frozenset, work: Path, jobs: int, minutes: float | None) -> None:
    """Walks the OpInfos that have no record yet, ``jobs`` at a time, in
    ``walk_order``; with ``minutes``, starts no OpInfo after that long (the ones
    left stay without a record, for a later run to walk)."""
    todo = [key for key in walk_order(keys, portable) if not record_path(work, key).exists()]
    print(f"{len(keys) - len(todo)} OpInfos walked before, {len(todo)} to walk", flush=True)
    if not todo:
        return
    deadline = time.time() + minutes * 60 if minutes is not None else math.inf
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(jobs, mp_context=context, initializer=init_worker) as pool:
        pending = {pool.submit(walk_task, (key, portable, str(work / "bpte"))) for key in todo}
        done = 0
        while pending:
            finished, pending = wait(pending, timeout=30, return_when=FIRST_COMPLETED)
            for future in finished:
                if future.cancelled():
                    continue
                record = future.result()
                done += 1
                path = record_path(work, record["key"])
                path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
                seen = sum(d.get("samples", 0) for d in record["dtypes"].values())
                seconds = sum(d.get("seconds", 0) for d in record["dtypes"].values())
                print(f"[{done}/{len(todo)}] {record['key']}: {len(record['fixtures'])} programs "
                      f"of {seen} samples ({seconds:.0f} s)", flush=True)
            if time.time() > deadline:
                cancelled = sum(future.cancel() for future in pending)
                if cancelled:
                    print(f"time budget spent: {cancelled} OpInfos left for a later run", flush=True)


# ---------------------------------------------------------------- ExecuTorch's verdict


def bundled_tensor(value) -> torch.Tensor:
    tensor = value.val
    dtype = SCALAR_TYPES[int(tensor.scalar_type)]
    data = bytes(tensor.data)
    flat = torch.frombuffer(bytearray(data), dtype=dtype) if data else torch.empty(0, dtype=dtype)
    return flat.reshape(list(tensor.sizes)).clone()


def compare(got, expected: torch.Tensor, rtol: float, atol: float) -> tuple[float, str | None]:
    """(largest error, first problem or None), as ``ptec test`` compares."""
    if not isinstance(got, torch.Tensor):
        return math.inf, f"got {type(got).__name__}, expected a tensor"
    if got.dtype != expected.dtype or list(got.shape) != list(expected.shape):
        return math.inf, (f"got {dtype_name(got.dtype)}{list(got.shape)}, "
                          f"expected {dtype_name(expected.dtype)}{list(expected.shape)}")
    if got.numel() == 0:
        return 0.0, None
    a, b = got.double().flatten(), expected.double().flatten()
    same = (a == b) | (a.isnan() & b.isnan())
    error = torch.where(same, torch.zeros_like(a), (a - b).abs())
    error = torch.where(error.isnan(), torch.full_like(error, math.inf), error)
    close = same | (error <= atol + rtol * b.abs()) if expected.is_floating_point() else same
    worst = float(error.max())
    if bool(close.all()):
        return worst, None
    bad = int((~close).nonzero()[0])
    return worst, f"element {bad} is {a[bad].item()}, expected {b[bad].item()}"


def et_check(path: Path, rtol: float, atol: float) -> dict:
    """Runs every test case of one file on ExecuTorch's portable runtime."""
    from executorch.devtools.bundled_program.serialize import (
        deserialize_from_flatbuffer_to_bundled_program,
    )
    from executorch.runtime import Runtime

    bundled = deserialize_from_flatbuffer_to_bundled_program(path.read_bytes())
    method = Runtime.get().load_program(bytes(bundled.program)).load_method("forward")
    worst, problems = 0.0, []
    for number, case in enumerate(bundled.method_test_suites[0].test_cases):
        outputs = method.execute([bundled_tensor(value) for value in case.inputs])
        if len(outputs) != len(case.expected_outputs):
            problems.append(f"case {number}: {len(outputs)} outputs, expected {len(case.expected_outputs)}")
            continue
        for position, (got, want) in enumerate(zip(outputs, case.expected_outputs)):
            error, problem = compare(got, bundled_tensor(want), rtol, atol)
            worst = max(worst, error)
            if problem:
                problems.append(f"case {number}: output {position}: {problem}")
    # JSON has no infinity: an infinite error (a NaN or inf where a number was
    # expected) is written as the string "inf".
    result = {"result": "fail" if problems else "pass", "max_abs_err": worst if math.isfinite(worst) else "inf"}
    if problems:
        result["message"] = problems[0]
    return result


def et_worker() -> None:
    """Reads ``{"file", "rtol", "atol", "log"}`` lines and answers one verdict line
    each, after a ``ready`` line. While a file runs, the runtime's output (its log on
    stderr) goes to the job's ``log`` file, which survives an abort."""
    from executorch.runtime import Runtime

    torch.set_num_threads(1)
    Runtime.get()
    answers = os.fdopen(os.dup(1), "w")
    saved = os.dup(1), os.dup(2)
    print("ready", file=answers, flush=True)
    for line in sys.stdin:
        job = json.loads(line)
        with open(job["log"], "w") as log:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                result = et_check(Path(job["file"]), job["rtol"], job["atol"])
            except Exception as error:  # noqa: BLE001 - the runtime refuses the program
                result = {"result": "error", "message": normalize(error)}
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
        if result["result"] == "error":
            result["log"] = log_tail(Path(job["log"]))
        print(json.dumps(result), file=answers, flush=True)


def log_tail(path: Path) -> list[str]:
    """The last three non-empty lines of a log."""
    return [line for line in path.read_text(errors="replace").splitlines() if line.strip()][-3:]


class EtRunner:
    """ExecuTorch in a child process, started again after it aborts or hangs."""

    def __init__(self, log: Path):
        self.log = log
        self.process = None

    def start(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--et-worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if self.answer(600) != "ready":
            raise SystemExit("the ExecuTorch worker did not start")

    def answer(self, timeout: float) -> str | None:
        """The worker's next line, or None when it exits or says nothing in time."""
        selector = selectors.DefaultSelector()
        selector.register(self.process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout)
        selector.close()
        return (self.process.stdout.readline().strip() or None) if ready else None

    def check(self, path: Path, rtol: float, atol: float) -> dict:
        if self.process is None:
            self.start()
        job = {"file": str(path), "rtol": rtol, "atol": atol, "log": str(self.log)}
        self.process.stdin.write(json.dumps(job) + "\n")
        self.process.stdin.flush()
        answer = self.answer(ET_TIMEOUT)
        if answer:
            return json.loads(answer)
        hung = self.process.poll() is None
        if hung:
            self.process.kill()
        status = self.process.wait()
        self.process = None
        if hung:
            return {"result": "timeout", "message": f"no answer within {ET_TIMEOUT} s", "log": log_tail(self.log)}
        return {"result": "crash", "message": f"the runtime exited with status {status}", "log": log_tail(self.log)}

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()


def run_executorch(out_dir: Path, fixtures: dict) -> None:
    """ExecuTorch's verdict on every fixture, stored in its entry as ``et``."""
    with tempfile.TemporaryDirectory() as scratch:
        runner = EtRunner(Path(scratch) / "et.log")
        for number, (name, entry) in enumerate(fixtures.items(), 1):
            entry["et"] = runner.check(out_dir / name, entry["rtol"], entry["atol"])
            if number % 200 == 0:
                print(f"ExecuTorch: {number}/{len(fixtures)} files", flush=True)
        runner.close()


# ---------------------------------------------------------------- assembling


def ranges(indices: list[int]) -> str:
    """``0-3,5,7-9``."""
    parts, start = [], None
    for i, index in enumerate(indices):
        if start is None:
            start = index
        if i + 1 == len(indices) or indices[i + 1] != index + 1:
            parts.append(str(start) if start == index else f"{start}-{index}")
            start = None
    return ",".join(parts)


def assemble(keys: list[str], work: Path, out_dir: Path, portable: frozenset, run_et: bool) -> int:
    """Writes the fixtures, ``index.json`` and ``skipped.json`` from the records."""
    records = [json.loads(record_path(work, key).read_text())
               for key in keys if record_path(work, key).exists()]
    missing = len(keys) - len(records)
    if missing:
        print(f"warning: {missing} OpInfos have no record yet; the index covers {len(records)}",
              flush=True)
    fixtures, opinfo_summary, skipped = {}, {}, {}
    for record in records:
        fixtures.update(record["fixtures"])
        summary = {
            "unsupported_dtypes": record["unsupported_dtypes"],
            "dtypes_not_walked": record.get("dtypes_not_walked", []),
            "dtypes": {},
        }
        for dtype, walked in record["dtypes"].items():
            if "error" in walked:
                summary["dtypes"][dtype] = {"error": walked["error"]}
                continue
            by_reason: dict[str, list[int]] = {}
            for index, reason in walked["skipped"].items():
                by_reason.setdefault(reason, []).append(int(index))
            written = [f for f in record["fixtures"].values() if f["dtype"] == dtype]
            summary["dtypes"][dtype] = {
                "samples": walked["samples"],
                "written": sum(len(f["samples"]) for f in written),
                "skipped": {reason: len(indices) for reason, indices in sorted(by_reason.items())},
            }
            if by_reason:
                skipped.setdefault(record["key"], {})[dtype] = {
                    reason: ranges(sorted(indices)) for reason, indices in sorted(by_reason.items())
                }
        opinfo_summary[record["key"]] = summary

    out_dir.mkdir(parents=True, exist_ok=True)
    for name in fixtures:
        source, target = work / "bpte" / name, out_dir / name
        if not target.exists() or target.read_bytes() != source.read_bytes():
            shutil.copyfile(source, target)
    for stale in sorted({p.name for p in out_dir.glob("*.bpte")} - set(fixtures)):
        (out_dir / stale).unlink()
        print(f"removed stale {stale}")

    if run_et:
        run_executorch(out_dir, fixtures)
    else:
        previous = load_index(out_dir).get("fixtures", {})
        for name, entry in fixtures.items():
            if name in previous and previous[name]["sha256"] == entry["sha256"] and "et" in previous[name]:
                entry["et"] = previous[name]["et"]

    index = {
        "generator": {
            "script": "scripts/gen_opinfo_fixtures.py",
            "torch": torch.__version__,
            "executorch": importlib.metadata.version("executorch"),
            "caps": {dtype_name(d): CAPS.get(d, DEFAULT_CAP) for d in DTYPES},
            "max_data_bytes": MAX_DATA_BYTES,
            "tolerances": {dtype_name(d): list(t) for d, t in TOLERANCES.items()},
            "portable_keys": sorted(portable),
            "not_walked": sorted(key for key in keys if not record_path(work, key).exists()),
        },
        "fixtures": dict(sorted(fixtures.items())),
        "opinfos": opinfo_summary,
    }
    write_json(out_dir / "index.json", index)
    write_json(out_dir / "skipped.json", skipped)
    print_totals(index)
    problems = check_sizes(fixtures, MAX_FIXTURE_BYTES, MAX_TOTAL_BYTES)
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1
    return 0


def load_index(out_dir: Path) -> dict:
    path = out_dir / "index.json"
    return json.loads(path.read_text()) if path.exists() else {}


def write_json(path: Path, value) -> None:
    with open(path, "w") as out:
        json.dump(value, out, indent=1, sort_keys=True, ensure_ascii=False, allow_nan=False)
        out.write("\n")


def print_totals(index: dict) -> None:
    fixtures, opinfo_summary = index["fixtures"], index["opinfos"]
    seen = written = 0
    reasons: dict[str, int] = {}
    for summary in opinfo_summary.values():
        for walked in summary["dtypes"].values():
            seen += walked.get("samples", 0)
            written += walked.get("written", 0)
            for reason, count in walked.get("skipped", {}).items():
                reasons[reason] = reasons.get(reason, 0) + count
    total_bytes = sum(entry["bytes"] for entry in fixtures.values())
    et: dict[str, int] = {}
    for entry in fixtures.values():
        verdict = entry.get("et", {}).get("result", "not run")
        et[verdict] = et.get(verdict, 0) + 1
    print(f"{len(opinfo_summary)} OpInfos, {seen} samples, {written} written in "
          f"{len(fixtures)} programs ({total_bytes} bytes); ExecuTorch: {et}")
    for reason, count in sorted(reasons.items(), key=lambda item: -item[1])[:25]:
        print(f"  {count:6d}  {reason}")


# ---------------------------------------------------------------- main


def portable_operator_keys() -> frozenset:
    from executorch.extension.pybindings import portable_lib

    keys = frozenset(portable_lib._get_operator_names())
    if len(keys) != 240:
        raise SystemExit(f"expected ExecuTorch 1.5.1's 240 portable operator keys, got {len(keys)}")
    return keys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR)
    parser.add_argument("--work", type=Path, default=DEFAULT_WORK_DIR)
    parser.add_argument("--only", nargs="+", metavar="OPINFO", help="walk these OpInfos again")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--minutes", type=float, help="start no OpInfo after this long (resume later)")
    parser.add_argument("--et-only", action="store_true", help="only run ExecuTorch on the files again")
    parser.add_argument("--no-et", action="store_true", help="keep ExecuTorch's previous verdicts")
    parser.add_argument("--et-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.et_worker:
        et_worker()
        return 0
    torch.set_num_threads(1)

    if args.et_only:
        index = load_index(args.out)
        run_executorch(args.out, index["fixtures"])
        write_json(args.out / "index.json", index)
        print_totals(index)
        return 0

    WORKER_OPINFOS.update(opinfos())
    keys = list(WORKER_OPINFOS)
    (args.work / "records").mkdir(parents=True, exist_ok=True)
    (args.work / "bpte").mkdir(parents=True, exist_ok=True)
    portable = portable_operator_keys()
    if args.only:
        unknown = sorted(set(args.only) - set(keys))
        if unknown:
            raise SystemExit(f"no such OpInfo: {', '.join(unknown)}")
        for key in args.only:
            record_path(args.work, key).unlink(missing_ok=True)
        walk(args.only, portable, args.work, args.jobs, args.minutes)
    else:
        walk(keys, portable, args.work, args.jobs, args.minutes)
    return assemble(keys, args.work, args.out, portable, run_et=not args.no_et)


if __name__ == "__main__":
    sys.exit(main())
