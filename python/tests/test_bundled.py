"""Every corpus program through the runtime under test gives its bundled
expected outputs: each case in order on one loaded method, so state carries
from case to case (the counter's buffer).

The runtime is one import: ``ptec.runtime`` by default, ``executorch.runtime``
with ``PTEC_PYTEST_RUNTIME=executorch`` (in the anchor environment), so that
this same file checks both. The cases come from ``ptec.bundled``, a reader
independent of either runtime; the program goes to the runtime as the
``.pte`` bytes the bundle holds, as ExecuTorch loads them.
"""

from pathlib import Path

import pytest

import ptec.bundled
from conftest import RUNTIME, assert_close, atol_for, corpus_files

if RUNTIME == "executorch":
    import torch
    from executorch.runtime import Runtime
else:
    from ptec.runtime import Runtime


def runnable(path: Path) -> bool:
    # ExecuTorch's Python runtime is built without its Vulkan backend, so
    # the Vulkan programs run only on ptec.
    return RUNTIME != "executorch" or ".vulkan." not in path.name


def as_input(value):
    """ExecuTorch takes torch tensors; ptec takes them and numpy arrays."""
    if RUNTIME == "executorch" and not isinstance(value, (bool, int, float, torch.Tensor)):
        return torch.from_numpy(value)
    return value


@pytest.mark.parametrize(
    "path", [p for p in corpus_files() if runnable(p)], ids=lambda p: p.name
)
def test_corpus_program_gives_expected_outputs(path: Path) -> None:
    bundle = ptec.bundled.read(path)
    program = Runtime.get().load_program(bundle.program)
    assert bundle.suites, f"{path.name} has no test suites"
    for suite in bundle.suites:
        assert suite.method in program.method_names
        method = program.load_method(suite.method)
        assert suite.cases, f"{path.name}: no cases for {suite.method}"
        for index, case in enumerate(suite.cases):
            outputs = method.execute([as_input(value) for value in case.inputs])
            assert len(outputs) == len(case.expected_outputs)
            for position, (got, expected) in enumerate(zip(outputs, case.expected_outputs)):
                what = f"{path.name} {suite.method} case {index} output {position}"
                assert_close(got, expected, atol_for(path), what)


def test_the_corpus_is_all_there(corpus: Path) -> None:
    """The parametrized test above ran on every program of the index."""
    from conftest import corpus_index

    assert sorted(p.name for p in corpus_files()) == sorted(corpus_index())
    assert len(corpus_files()) == 28
