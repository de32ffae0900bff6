"""Bad input raises a ptec.Error with ptec's message, never a crash of the
interpreter: every refusal the CLI makes, from files that are not programs
to inputs that do not fit."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ptec
import ptec.bundled
from ptec.runtime import Runtime
from conftest import FIXTURES

ADD = FIXTURES / "add.portable.bpte"


def load(source, **switches):
    return Runtime.get().load_program(source, **switches)


def test_errors_are_runtime_errors() -> None:
    for error in (ptec.ReadError, ptec.CompileError, ptec.InputError, ptec.ExecutionError,
                  ptec.MethodNotFoundError, ptec.UsageError, ptec.DeviceError, ptec.InternalError):
        assert issubclass(error, ptec.Error) and issubclass(error, RuntimeError)
    assert issubclass(ptec.MethodNotFoundError, KeyError)
    assert issubclass(ptec.UsageError, ValueError)


def test_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ptec.ReadError, match="cannot read .*nothing.pte"):
        load(tmp_path / "nothing.pte")


def test_bytes_that_are_no_program() -> None:
    with pytest.raises(ptec.ReadError, match="not an ExecuTorch file|identifier"):
        load(b"garbage" * 10)
    with pytest.raises(ptec.ReadError):
        load(b"")


def test_a_program_of_the_wrong_type() -> None:
    with pytest.raises(TypeError, match="got int"):
        load(3)


def test_every_truncation_and_corruption_is_an_error_or_a_program() -> None:
    """Cut at many lengths, or with bytes flipped, the file either still
    reads (and then compiles and runs, or says why not) or raises
    ptec.Error; nothing else escapes and nothing crashes."""
    data = ADD.read_bytes()
    x, y = np.ones((4, 8), np.float32), np.ones(8, np.float32)
    variants = [data[:length] for length in range(0, len(data), max(1, len(data) // 97))]
    rng = np.random.default_rng(7)
    for _ in range(150):
        corrupt = bytearray(data)
        for position in rng.integers(0, len(data), size=4):
            corrupt[position] ^= int(rng.integers(1, 256))
        variants.append(bytes(corrupt))
    outcomes = {"read": 0, "refused": 0}
    for variant in variants:
        try:
            method = load(variant).load_method("forward")
            method.execute([x, y])
            outcomes["read"] += 1
        except ptec.Error:
            outcomes["refused"] += 1
    assert outcomes["refused"] > 0 and sum(outcomes.values()) == len(variants)


def test_no_such_method() -> None:
    program = load(ADD)
    with pytest.raises(ptec.MethodNotFoundError, match='no method "backward" \\(it has forward\\)'):
        program.load_method("backward")
    with pytest.raises(KeyError):
        program.metadata("backward")


def test_inputs_that_do_not_fit() -> None:
    method = load(ADD).load_method("forward")
    x, y = np.ones((4, 8), np.float32), np.ones(8, np.float32)
    with pytest.raises(ptec.InputError, match="takes 2 inputs, 1 given"):
        method.execute([x])
    with pytest.raises(ptec.InputError, match="input 0: expected float32.*got float64"):
        method.execute([x.astype(np.float64), y])
    with pytest.raises(ptec.InputError, match="input 0: dimension 1 must be 8"):
        method.execute([np.ones((4, 9), np.float32), y])
    with pytest.raises(ptec.InputError, match="input 1: a Python scalar for a tensor of sizes \\[8\\]"):
        method.execute([x, 1.0])
    with pytest.raises(ptec.InputError, match="input 1: a str is not a tensor"):
        method.execute([x, "y"])
    with pytest.raises(ptec.InputError, match="no element type \"complex64\""):
        method.execute([x.astype(np.complex64), y])
    # Still usable after refusals.
    [out] = method.execute([x, y])
    assert tuple(out.shape) == (4, 8)


def test_integer_division_by_zero_is_an_execution_error() -> None:
    path = FIXTURES / "ops" / "floor_divide_int64.portable.bpte"
    method = load(path).load_method("forward")
    numerator = np.arange(1, 13, dtype=np.int64).reshape(3, 4)
    with pytest.raises(ptec.ExecutionError, match="integer division by zero"):
        method.execute([numerator, np.array([3, -2, 0, 5], dtype=np.int64)])
    [out] = method.execute([numerator, np.array([3, -2, 1, 5], dtype=np.int64)])
    assert tuple(out.shape) == (3, 4)


def test_what_the_vulkan_backend_cannot_run_is_refused() -> None:
    # Kernels no shader expresses run on the CPU; a method with dynamic
    # shapes is refused whole.
    with pytest.raises((ptec.CompileError, ptec.DeviceError), match="Vulkan"):
        load(FIXTURES / "dyn_batch.portable.bpte", backend="vulkan").load_method("forward")


def test_unknown_switches() -> None:
    with pytest.raises(ptec.UsageError, match="not a back end"):
        load(ADD, backend="cuda")
    with pytest.raises(ptec.UsageError, match='unknown pass "no-such-pass"'):
        load(ADD).load_method("forward", disable_passes=["no-such-pass"])
    with pytest.raises(TypeError):
        load(ADD, no_such_switch=True)


def test_what_ptec_does_not_have() -> None:
    with pytest.raises(ptec.UsageError, match="ETDump"):
        load(ADD, enable_etdump=True)
    with pytest.raises(ptec.UsageError, match="ETDump"):
        load(ADD).write_etdump_result_to_file("a", "b")


def test_data_files_that_are_missing_or_not_data_files(tmp_path: Path) -> None:
    program = FIXTURES / "llm" / "llama_xnnpack_ptd" / "model.pte"
    with pytest.raises(ptec.ReadError, match='"tok_embeddings.weight".*--data'):
        load(program)
    with pytest.raises(ptec.ReadError, match="cannot read .*nothing.ptd"):
        load(program, data_path=tmp_path / "nothing.ptd")
    junk = tmp_path / "junk.ptd"
    junk.write_bytes(b"\0" * 64)
    with pytest.raises(ptec.ReadError, match='junk.ptd: data file: expected file identifier "FT01"'):
        load(program, data_path=junk)
    with pytest.raises(ptec.ReadError, match='"tok_embeddings.weight"'):
        ptec.inspect(program)
    with pytest.raises(TypeError, match="data=\\[path\\]"):
        ptec.inspect(program, data=str(junk))


def test_tools_refuse_bad_files(tmp_path: Path) -> None:
    junk = tmp_path / "junk.pte"
    junk.write_bytes(b"\0" * 64)
    with pytest.raises(ptec.ReadError):
        ptec.inspect(junk)
    with pytest.raises(ptec.ReadError):
        ptec.compile(junk, tmp_path / "junk.so")
    with pytest.raises(ptec.UsageError, match="not an output kind"):
        ptec.compile(ADD, emit="exe")
    with pytest.raises(ptec.UsageError, match="target"):
        ptec.compile(ADD, tmp_path / "a.so", target="not-a-triple")
    with pytest.raises(ptec.ReadError, match="no test cases"):
        ptec.bundled.read(_plain_program(tmp_path))
    report = ptec.test(junk)
    assert report["pass"] is False and "error" in report


def _plain_program(tmp_path: Path) -> Path:
    path = tmp_path / "add.pte"
    path.write_bytes(ptec.bundled.read(ADD).program)
    return path


def test_a_panic_is_not_a_crash() -> None:
    """The interpreter survives whatever ptec does with hostile input: a
    child interpreter loads every fixture with every byte after the header
    zeroed and exits normally."""
    script = (
        "import sys, ptec\n"
        "from ptec.runtime import Runtime\n"
        "data = bytearray(open(sys.argv[1], 'rb').read())\n"
        "for start in range(8, len(data), 61):\n"
        "    bad = bytes(data[:start]) + bytes(len(data) - start)\n"
        "    try:\n"
        "        Runtime.get().load_program(bad).load_method('forward')\n"
        "    except ptec.Error:\n"
        "        pass\n"
        "print('survived')\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(ADD)], capture_output=True, text=True)
    assert result.returncode == 0 and "survived" in result.stdout, result.stderr
