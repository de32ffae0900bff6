"""ptec from Python: ExecuTorch programs (``.pte``, ``.bpte``) compiled to
native code.

* :mod:`ptec.runtime` is ``executorch.runtime``'s API (``Runtime.get()``,
  ``load_program``, ``load_method``, ``execute``, ``metadata``), so that
  changing one import switches a test suite over to ptec.
* :func:`compile` compiles a program ahead of time into files
  (``ptec compile``), :func:`inspect` reports what a file holds
  (``ptec inspect --json``), and :func:`test` runs a bundled program's test
  cases (``ptec test``).
* :mod:`ptec.bundled` reads a bundled program's program and test cases.
* Errors are :class:`ptec.Error` and its subclasses (:mod:`ptec.errors`).
"""

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from . import bundled, errors, runtime
from ._ptec import __version__
from .errors import (
    CompileError,
    DeviceError,
    Error,
    ExecutionError,
    InputError,
    InternalError,
    MethodNotFoundError,
    ReadError,
    UsageError,
)

__all__ = [
    "CompileError",
    "DeviceError",
    "Error",
    "ExecutionError",
    "InputError",
    "InternalError",
    "MethodNotFoundError",
    "ReadError",
    "UsageError",
    "__version__",
    "bundled",
    "compile",
    "errors",
    "inspect",
    "runtime",
    "test",
]

PathLike = Union[str, Path]


def _optional_path(path: Optional[PathLike]) -> Optional[str]:
    return None if path is None else os.fspath(path)


def _paths(paths: Sequence[PathLike]) -> List[str]:
    if isinstance(paths, (str, Path)):
        raise TypeError("data is a sequence of paths: write data=[path]")
    return [os.fspath(path) for path in paths]


def compile(
    path: PathLike,
    output: Optional[PathLike] = None,
    target: Optional[str] = None,
    emit: str = "so",
    *,
    method: Optional[str] = None,
    header: Optional[PathLike] = None,
    prefix: str = "ptec",
    linker: Optional[str] = None,
    data: Sequence[PathLike] = (),
    **switches: Any,
) -> Optional[str]:
    """Compiles the program at ``path`` ahead of time, as ``ptec compile``:
    ``emit`` is ``"so"`` (a shared object with a C ABI, needing only libc
    and libm), ``"obj"``, ``"asm"``, ``"ir"`` or ``"spirv"`` (a directory of
    Vulkan compute shaders); ``target`` a triple such as
    ``"aarch64-unknown-linux-gnu"`` (default: this machine). ``output``
    defaults to ``<stem>.so``/``.o``/``.spirv`` in the current directory;
    for ``"asm"`` and ``"ir"`` without an output, the text is returned.
    Returns ``None`` when a file was written. ``data`` are the program's
    ``.ptd`` data files (weights it keeps outside), whose contents are
    embedded in the library. ``switches`` are those of ``ptec.runtime``'s
    ``load_program`` (the pass switches, ``max_memory`` and ``max_code``;
    a library's thread count is set through its C ABI instead)."""
    return _ptec.compile(
        os.fspath(path),
        _paths(data),
        _optional_path(output),
        target,
        emit,
        method,
        _optional_path(header),
        prefix,
        linker,
        runtime._Switches(**switches).native(),
    )


def inspect(path: PathLike, *, data: Sequence[PathLike] = ()) -> Dict[str, Any]:
    """What the file at ``path`` holds: ``ptec inspect --json``'s object
    (methods with their inputs, outputs, operators and delegates, test
    suites, segments, constants, named data, including that of the ``.ptd``
    data files ``data``)."""
    return json.loads(_ptec.inspect(os.fspath(path), _paths(data)))


def test(
    bpte_path: PathLike,
    rtol: float = 1e-3,
    atol: float = 1e-5,
    *,
    backend: str = "jit",
    data: Sequence[PathLike] = (),
    **switches: Any,
) -> Dict[str, Any]:
    """Runs every test case of the bundled program at ``bpte_path``, in
    order on one instance per method, and compares the outputs with the
    expected ones (floats within ``atol + rtol * |expected|``): ``ptec test
    --json``'s report, ``{"file", "pass", "cases": [{"method", "pass",
    "max_abs_err", "problem"?}], "error"?}``. A file that cannot be read or
    compiled is reported with ``"pass": False`` and its ``"error"``, not
    raised. ``switches`` are those of ``ptec.runtime``'s ``load_program``."""
    return json.loads(
        _ptec.test(
            os.fspath(bpte_path),
            _paths(data),
            backend,
            rtol,
            atol,
            runtime._Switches(backend=backend, **switches).native(),
        )
    )
