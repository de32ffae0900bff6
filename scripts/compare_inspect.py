"""Compare ``ptec inspect --json`` with ExecuTorch's own Python deserializer.

For every ``.pte`` or ``.bpte`` file given, this script builds a reference
summary of the program with the deserializer shipped in the executorch
package, runs ``ptec inspect --json FILE``, and compares the two:

  * method (execution plan) names, in order;
  * number of inputs and outputs, and for each one the reference holds as a
    Tensor: dtype (torch names, e.g. ``float32``), sizes and dim_order;
  * the operator histogram of KernelCall instructions, keyed ``name.overload``
    (just ``name`` when the overload is empty);
  * the backend id of each DelegateCall instruction, in instruction order;
  * ``non_const_buffer_sizes``;
  * for bundled programs, the test suites (method name, number of cases).

It prints one row per file and a final "N passed, M failed" line, and exits
with status 1 if any file disagrees. Fields ptec reports beyond these (input
dynamism, delegate node counts and constant bytes) are not checked.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/compare_inspect.py [--ptec PATH] FILE...
    $ANCHOR_PY scripts/compare_inspect.py --reference-only FILE...

The default binary is target/release/ptec, else target/debug/ptec.
``--reference-only`` prints the reference summaries as JSON (one object per
line) without running ptec.
"""

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Optional

from executorch.devtools.bundled_program.serialize import (
    deserialize_from_flatbuffer_to_bundled_program,
)
from executorch.exir import schema
from executorch.exir._serialize._program import deserialize_pte_binary
from executorch.exir.scalar_type import ScalarType

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_BINARIES = [REPO_ROOT / "target" / "release" / "ptec", REPO_ROOT / "target" / "debug" / "ptec"]

# Flatbuffer file identifiers (bytes 4..8) of a bundled program and a program.
BUNDLED_IDENTIFIER = b"BP08"
PROGRAM_IDENTIFIER = b"ET12"

# ExecuTorch ScalarType -> the torch dtype name ptec reports.
DTYPE_NAMES = {
    ScalarType.BYTE: "uint8",
    ScalarType.CHAR: "int8",
    ScalarType.SHORT: "int16",
    ScalarType.INT: "int32",
    ScalarType.LONG: "int64",
    ScalarType.HALF: "float16",
    ScalarType.FLOAT: "float32",
    ScalarType.DOUBLE: "float64",
    ScalarType.COMPLEX32: "complex32",
    ScalarType.COMPLEX64: "complex64",
    ScalarType.COMPLEX128: "complex128",
    ScalarType.BOOL: "bool",
    ScalarType.QINT8: "qint8",
    ScalarType.QUINT8: "quint8",
    ScalarType.QINT32: "qint32",
    ScalarType.BFLOAT16: "bfloat16",
    ScalarType.QUINT4x2: "quint4x2",
    ScalarType.QUINT2x4: "quint2x4",
    ScalarType.BITS16: "bits16",
    ScalarType.FLOAT8E5M2: "float8_e5m2",
    ScalarType.FLOAT8E4M3FN: "float8_e4m3fn",
    ScalarType.FLOAT8E5M2FNUZ: "float8_e5m2fnuz",
    ScalarType.FLOAT8E4M3FNUZ: "float8_e4m3fnuz",
    ScalarType.UINT16: "uint16",
    ScalarType.UINT32: "uint32",
    ScalarType.UINT64: "uint64",
}


# ---------------------------------------------------------------- reference side


def describe_value(value: schema.EValue) -> dict:
    """A method input or output: dtype, sizes and dim_order for tensors,
    otherwise just the kind of value (``Int``, ``Null``, ...)."""
    val = value.val
    if isinstance(val, schema.Tensor):
        return {
            "dtype": DTYPE_NAMES.get(val.scalar_type, f"scalar_type_{int(val.scalar_type)}"),
            "sizes": [int(s) for s in val.sizes],
            "dim_order": [int(d) for d in val.dim_order],
        }
    return {"kind": type(val).__name__}


def operator_key(operator: schema.Operator) -> str:
    return f"{operator.name}.{operator.overload}" if operator.overload else operator.name


def describe_plan(plan: schema.ExecutionPlan) -> dict:
    """The reference summary of one execution plan (method)."""
    operators, delegates = Counter(), []
    for chain in plan.chains:
        for instruction in chain.instructions:
            args = instruction.instr_args
            if isinstance(args, schema.KernelCall):
                operators[operator_key(plan.operators[args.op_index])] += 1
            elif isinstance(args, schema.DelegateCall):
                delegates.append({"id": plan.delegates[args.delegate_index].id})
    return {
        "name": plan.name,
        "inputs": [describe_value(plan.values[i]) for i in plan.inputs],
        "outputs": [describe_value(plan.values[i]) for i in plan.outputs],
        "operators": dict(sorted(operators.items())),
        "delegates": delegates,
        "non_const_buffer_sizes": [int(s) for s in plan.non_const_buffer_sizes],
    }


def reference_summary(path: Path) -> dict:
    """Summarize a .pte or .bpte file with ExecuTorch's Python deserializer,
    in the shape of ptec's ``inspect --json`` output."""
    data = path.read_bytes()
    identifier = data[4:8]
    test_suites = []
    if identifier == BUNDLED_IDENTIFIER:
        bundled = deserialize_from_flatbuffer_to_bundled_program(data)
        test_suites = [
            {"method": suite.method_name, "cases": len(suite.test_cases)}
            for suite in bundled.method_test_suites
        ]
        data = bytes(bundled.program)
    elif identifier != PROGRAM_IDENTIFIER:
        raise ValueError(f"unknown file identifier {identifier!r}")
    program = deserialize_pte_binary(data).program
    return {
        "file": str(path),
        "methods": [describe_plan(plan) for plan in program.execution_plan],
        "test_suites": test_suites,
    }


# ---------------------------------------------------------------- ptec side


def find_ptec(explicit: Optional[Path]) -> Path:
    if explicit is not None:
        return explicit
    for candidate in DEFAULT_BINARIES:
        if candidate.is_file():
            return candidate
    raise SystemExit(f"no ptec binary found (looked for {', '.join(map(str, DEFAULT_BINARIES))}); use --ptec")


def ptec_summary(ptec: Path, path: Path) -> dict:
    """Run ``ptec inspect --json`` on a file; raise RuntimeError on failure."""
    result = subprocess.run(
        [str(ptec), "inspect", "--json", str(path)], capture_output=True, text=True, timeout=120
    )
    if result.returncode != 0:
        message = (result.stderr.strip().splitlines() or ["no stderr"])[-1]
        raise RuntimeError(f"ptec exited with {result.returncode}: {message}")
    try:
        return json.loads(result.stdout)
    except json.JSONDecodeError as error:
        raise RuntimeError(f"ptec printed invalid JSON: {error}") from error


# ---------------------------------------------------------------- comparison


def diff_histograms(ours: dict, theirs: dict) -> str:
    """Describe how ptec's operator histogram differs from the reference."""
    parts = []
    for key in sorted(set(ours) | set(theirs)):
        if ours.get(key) != theirs.get(key):
            parts.append(f"{key}: ptec {theirs.get(key, 0)} vs ref {ours.get(key, 0)}")
    return "; ".join(parts)


def compare_values(where: str, reference: list, reported: list) -> list[str]:
    """Compare the inputs (or outputs) of one method."""
    if len(reference) != len(reported):
        return [f"{where}: count ptec {len(reported)} vs ref {len(reference)}"]
    problems = []
    for i, (ref, got) in enumerate(zip(reference, reported)):
        if "dtype" not in ref:
            continue  # not a tensor: only the count is compared
        for field in ("dtype", "sizes", "dim_order"):
            if got.get(field) != ref[field]:
                problems.append(f"{where}[{i}].{field}: ptec {got.get(field)} vs ref {ref[field]}")
    return problems


def compare_method(reference: dict, reported: dict) -> list[str]:
    name = reference["name"]
    problems = compare_values(f"{name}.inputs", reference["inputs"], reported.get("inputs", []))
    problems += compare_values(f"{name}.outputs", reference["outputs"], reported.get("outputs", []))
    operators = reported.get("operators", {})
    if operators != reference["operators"]:
        problems.append(f"{name}.operators: {diff_histograms(reference['operators'], operators)}")
    ref_ids = [d["id"] for d in reference["delegates"]]
    got_ids = [d.get("id") for d in reported.get("delegates", [])]
    if got_ids != ref_ids:
        problems.append(f"{name}.delegates: ptec {got_ids} vs ref {ref_ids}")
    got_sizes = reported.get("non_const_buffer_sizes")
    if got_sizes != reference["non_const_buffer_sizes"]:
        problems.append(
            f"{name}.non_const_buffer_sizes: ptec {got_sizes} vs ref {reference['non_const_buffer_sizes']}"
        )
    return problems


def compare(reference: dict, reported: dict) -> list[str]:
    """All disagreements between the reference summary and ptec's output."""
    ref_names = [m["name"] for m in reference["methods"]]
    got_names = [m.get("name") for m in reported.get("methods", [])]
    if got_names != ref_names:
        return [f"method names: ptec {got_names} vs ref {ref_names}"]
    problems = []
    for ref_method, got_method in zip(reference["methods"], reported["methods"]):
        problems += compare_method(ref_method, got_method)
    got_suites = reported.get("test_suites", [])
    if got_suites != reference["test_suites"]:
        problems.append(f"test_suites: ptec {got_suites} vs ref {reference['test_suites']}")
    return problems


# ---------------------------------------------------------------- report


def delegate_column(reference: dict) -> str:
    """Delegate ids with repeat counts, e.g. ``XnnpackBackend x14``."""
    ids = Counter(d["id"] for m in reference["methods"] for d in m["delegates"])
    return ", ".join(f"{i} x{n}" if n > 1 else i for i, n in sorted(ids.items())) or "-"


def report_row(path: Path, reference: Optional[dict], problems: list[str]) -> list[str]:
    if reference is None:
        methods = ops = delegates = "?"
    else:
        methods = ",".join(m["name"] for m in reference["methods"])
        calls = sum(sum(m["operators"].values()) for m in reference["methods"])
        kinds = sum(len(m["operators"]) for m in reference["methods"])
        ops = f"{calls} ({kinds} kinds)"
        delegates = delegate_column(reference)
    verdict = "ok" if not problems else "MISMATCH: " + " | ".join(problems)
    # The parent directory tells apart equally named files (corpus/ vs fixtures/).
    return [f"{path.parent.name}/{path.name}", methods, ops, delegates, verdict]


def print_table(rows: list[list[str]]) -> None:
    header = ["file", "methods", "ops compared", "delegates", "verdict"]
    widths = [max(len(r[i]) for r in rows + [header]) for i in range(len(header) - 1)]
    for row in [header] + rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]
        print("  ".join(cells))


def check_file(ptec: Path, path: Path) -> tuple[Optional[dict], list[str]]:
    """The reference summary of a file (None if it could not be read) and
    the list of disagreements with ptec."""
    try:
        reference = reference_summary(path)
    except Exception as error:  # noqa: BLE001 - report it as this file's failure
        return None, [f"reference deserializer failed: {error}"]
    try:
        reported = ptec_summary(ptec, path)
    except (RuntimeError, subprocess.TimeoutExpired) as error:
        return reference, [str(error)]
    return reference, compare(reference, reported)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptec", type=Path, help="ptec binary (default: target/release/ptec, else target/debug/ptec)")
    parser.add_argument("--reference-only", action="store_true", help="print reference summaries as JSON and exit")
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()

    if args.reference_only:
        for path in args.files:
            print(json.dumps(reference_summary(path)), flush=True)
        return 0

    ptec = find_ptec(args.ptec)
    rows, failed = [], 0
    for path in args.files:
        reference, problems = check_file(ptec, path)
        rows.append(report_row(path, reference, problems))
        failed += bool(problems)
    print_table(rows)
    print(f"{len(rows) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
