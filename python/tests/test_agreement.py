"""ptec.runtime and executorch.runtime agree on every corpus program that
ExecuTorch's Python runtime can run: method names, metadata (inputs' and
outputs' sizes, dtypes, planning, byte counts, and the repr), and outputs,
case by case. Runs where both are installed (the anchor environment);
elsewhere it is skipped, and under CI it fails.
"""

from pathlib import Path

import pytest

import ptec.bundled
import ptec.runtime
from conftest import assert_close, atol_for, corpus_files, not_run

pytestmark = pytest.mark.executorch


@pytest.fixture(scope="module")
def executorch_runtime():
    try:
        import torch  # noqa: F401
        from executorch.runtime import Runtime
    except ImportError as error:
        not_run(f"executorch is not installed: {error}")
    return Runtime.get()


def meta_facts(meta):
    """What a MethodMeta says, in plain values."""
    def infos(count, get):
        return [
            (tuple(info.sizes()), info.dtype(), info.is_memory_planned(), info.nbytes(), repr(info))
            for info in (get(i) for i in range(count))
        ]

    return (
        meta.name(),
        meta.num_inputs(),
        meta.num_outputs(),
        infos(meta.num_inputs(), meta.input_tensor_meta),
        infos(meta.num_outputs(), meta.output_tensor_meta),
        repr(meta),
    )


@pytest.mark.parametrize(
    "path", [p for p in corpus_files() if ".vulkan." not in p.name], ids=lambda p: p.name
)
def test_ptec_and_executorch_agree(path: Path, executorch_runtime) -> None:
    import torch

    bundle = ptec.bundled.read(path)
    theirs = executorch_runtime.load_program(bundle.program)
    ours = ptec.runtime.Runtime.get().load_program(bundle.program)
    assert ours.method_names == theirs.method_names
    for name in sorted(theirs.method_names):
        assert meta_facts(ours.metadata(name)) == meta_facts(theirs.metadata(name))
    for suite in bundle.suites:
        # ExecuTorch frees a method whose Program is gone: both stay alive.
        their_method = theirs.load_method(suite.method)
        our_method = ours.load_method(suite.method)
        assert meta_facts(our_method.metadata) == meta_facts(their_method.metadata)
        for index, case in enumerate(suite.cases):
            inputs = [torch.from_numpy(v) if not isinstance(v, torch.Tensor) else v
                      for v in case.inputs]
            expected = their_method.execute(inputs)
            got = our_method.execute(inputs)
            assert type(got) is type(expected) is list
            assert len(got) == len(expected)
            for position, (mine, reference) in enumerate(zip(got, expected)):
                assert type(mine) is type(reference)
                what = f"{path.name} {suite.method} case {index} output {position}"
                assert_close(mine, reference, atol_for(path), what)
