"""Where the tests find their programs, and which runtime they test.

The shared corpus is ``../shared/corpus`` beside the repository, as the Rust
tests find it; without it the corpus tests are skipped with a notice, and
under CI (``CI`` set) they fail instead. ``PTEC_PYTEST_RUNTIME=executorch``
makes the runtime-agnostic tests import ``executorch.runtime`` instead of
``ptec.runtime``.
"""

import json
import os
from pathlib import Path
from typing import Any, List

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO.parent / "shared" / "corpus"
FIXTURES = REPO / "tests" / "fixtures"

# The runtime under test: "ptec" or "executorch".
RUNTIME = os.environ.get("PTEC_PYTEST_RUNTIME", "ptec")
UNDER_CI = "CI" in os.environ


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "executorch: needs executorch.runtime installed beside ptec"
    )


def not_run(why: str) -> None:
    """A test that cannot run here: skipped with the reason, or under CI a
    failure, never a silent pass."""
    if UNDER_CI:
        pytest.fail(f"cannot run under CI: {why}")
    pytest.skip(why)


def corpus_files() -> List[Path]:
    """The corpus's bundled programs, sorted; empty when the corpus is
    absent (a test over them then reports that through `corpus`)."""
    if not CORPUS.is_dir():
        return []
    return sorted(CORPUS.glob("*.bpte"))


def corpus_index() -> Any:
    return json.loads((CORPUS / "index.json").read_text())


@pytest.fixture
def corpus() -> Path:
    if not CORPUS.is_dir():
        not_run(f"the shared corpus is absent ({CORPUS})")
    return CORPUS


def atol_for(path: Path) -> float:
    """The absolute tolerance of a program's outputs: the int8 programs
    compute on a grid of about 0.1 (ExecuTorch's own error is 0.095, which
    `ptec test` documents with --atol 0.15)."""
    return 0.15 if ".xnnpack-q8." in path.name else 1e-5


RTOL = 1e-3


def to_numpy(value: Any) -> Any:
    """A tensor or array as a numpy array (bfloat16 widened to float32);
    scalars as they are."""
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(value, torch.Tensor):
        value = value.detach().cpu()
        if value.dtype == torch.bfloat16:
            value = value.float()
        return value.numpy()
    return value


def assert_close(got: Any, expected: Any, atol: float, what: str) -> None:
    got, expected = to_numpy(got), to_numpy(expected)
    if not isinstance(expected, np.ndarray):
        assert got == expected, what
        return
    assert isinstance(got, np.ndarray), f"{what}: got a {type(got).__name__}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, expected {expected.dtype}"
    assert got.shape == expected.shape, f"{what}: shape {got.shape}, expected {expected.shape}"
    if np.issubdtype(expected.dtype, np.floating):
        np.testing.assert_allclose(got, expected, rtol=RTOL, atol=atol, err_msg=what)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=what)
