"""A reader of bundled programs (``.bpte``), independent of any runtime:
the program they hold (its ``.pte`` bytes, which any runtime loads) and
their test cases, with inputs and expected outputs, so that the same test
runs against ``ptec.runtime`` and ``executorch.runtime``.

.. code-block:: python

    bundle = ptec.bundled.read("model.bpte")
    program = Runtime.get().load_program(bundle.program)
    for suite in bundle.suites:
        method = program.load_method(suite.method)
        for case in suite.cases:
            outputs = method.execute(case.inputs)   # compare with case.expected_outputs

Tensors are torch tensors when torch is importable, else numpy arrays; other
values are Python scalars.
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Union

from . import _ptec
from ._tensors import from_native

__all__ = ["Bundle", "Case", "Suite", "read"]


@dataclass(frozen=True)
class Case:
    """One test case: the inputs, and the outputs expected of them."""

    inputs: List[Any]
    expected_outputs: List[Any]


@dataclass(frozen=True)
class Suite:
    """The test cases of one method, to be run in order on one loaded
    method (state carries from case to case)."""

    method: str
    cases: List[Case]


@dataclass(frozen=True)
class Bundle:
    """A bundled program: the program's bytes and the test suites."""

    program: bytes
    suites: List[Suite]


def _value(value: Any) -> Any:
    if isinstance(value, tuple) and value and value[0] == "tensor":
        return from_native(value[1])
    return value


def read(path: Union[str, Path]) -> Bundle:
    """Reads the bundled program at ``path``; raises ``ptec.ReadError`` when
    it is not one."""
    program, suites = _ptec.read_bundled(os.fspath(path))
    return Bundle(
        program=program,
        suites=[
            Suite(
                method=method,
                cases=[
                    Case([_value(v) for v in inputs], [_value(v) for v in expected])
                    for inputs, expected in cases
                ],
            )
            for method, cases in suites
        ],
    )
