"""``executorch.runtime``'s API on ptec: change one import,

.. code-block:: python

    from ptec.runtime import Runtime        # was: from executorch.runtime import Runtime

    program = Runtime.get().load_program("model.pte")
    forward = program.load_method("forward")
    outputs = forward.execute([torch.ones(2, 2), torch.ones(2, 2)])

and a test suite runs its programs compiled to native code by ptec instead
of through ExecuTorch's kernels. The classes and their methods are those of
``executorch.runtime`` (ExecuTorch 1.5.1), with the same behaviour, except
where the docstrings below say otherwise (``python/README.md`` lists every
difference). Beyond them, ``load_program`` and ``load_method`` take ptec's
switches as keyword arguments:

* ``backend``: ``"jit"`` (default: compiled in-process), ``"aot"`` (a shared
  object called through its C ABI) or ``"vulkan"`` (compute shaders on a
  Vulkan device);
* ``threads``: how many threads a method's kernels are split across
  (default ``None``: one per physical core, as ``ptec run``; ``1`` runs
  everything on the calling thread); the results are the same bits
  whatever the count;
* ``max_memory`` and ``max_code``: the largest arena a method may plan and
  the most machine code it may compile to, in bytes (the CLI's
  ``--max-memory`` and ``--max-code``; 16 GiB and 1 GiB by default),
  checked before anything is allocated;
* ``disable_passes`` (names of optimizer passes to switch off),
  ``stop_after`` (a pass to stop the pipeline after), ``verify`` (the IR
  verifier after every pass) and ``microkernels`` (the AVX2/AVX-512 GEMM
  microkernels; ``False`` generates every kernel with Cranelift).

The GIL is released while a method compiles and while it runs.
"""

import enum
import functools
import os
from pathlib import Path
from typing import Any, BinaryIO, Dict, List, Optional, Sequence, Set, Tuple, Union

import numpy as np

from . import _ptec
from ._tensors import from_native, native_inputs, torch
from .errors import UsageError

__all__ = [
    "BackendRegistry",
    "Method",
    "MethodMeta",
    "OperatorRegistry",
    "Program",
    "Runtime",
    "TensorInfo",
    "Verification",
]

# The back ends `backend=` names.
BACKENDS = ("jit", "aot", "vulkan")


class Verification(enum.Enum):
    """ExecuTorch's verification levels. ptec verifies every program fully
    (every flatbuffer through the verifier, every offset and index checked)
    whichever level is asked for."""

    Minimal = 0
    InternalConsistency = 1


class TensorInfo:
    """A method input's or output's tensor: ``sizes()`` (the upper bound
    of a dynamic dimension), ``dtype()`` (torch's ScalarType number, as
    ExecuTorch reports it), ``is_memory_planned()``, ``nbytes()``; and,
    beyond ExecuTorch, ``dim_order()``."""

    def __init__(self, info: Dict[str, Any]) -> None:
        self._info = info

    def sizes(self) -> Tuple[int, ...]:
        return tuple(self._info["sizes"])

    def dtype(self) -> int:
        return self._info["dtype"]

    def is_memory_planned(self) -> bool:
        return self._info["is_memory_planned"]

    def nbytes(self) -> int:
        return self._info["nbytes"]

    def dim_order(self) -> Tuple[int, ...]:
        """ptec's addition: the order of the dimensions in memory,
        outermost first (``(0, 2, 3, 1)`` is channels-last)."""
        return tuple(self._info["dim_order"])

    def __repr__(self) -> str:
        return (
            f"TensorInfo(sizes={list(self.sizes())}, dtype={self._info['dtype_name']}, "
            f"is_memory_planned={self.is_memory_planned()}, nbytes={self.nbytes()})"
        )

    __str__ = __repr__


class MethodMeta:
    """What a method takes and returns, as ExecuTorch's ``MethodMeta``."""

    def __init__(self, name: str, inputs: List[Any], outputs: List[Any]) -> None:
        self._name = name
        self._inputs = inputs
        self._outputs = outputs

    def name(self) -> str:
        return self._name

    def num_inputs(self) -> int:
        return len(self._inputs)

    def num_outputs(self) -> int:
        return len(self._outputs)

    def num_attributes(self) -> int:
        """Always 0: ptec's programs have no attribute tensors."""
        return 0

    def input_tensor_meta(self, index: int) -> TensorInfo:
        return _tensor_meta(self._inputs, index, "input")

    def output_tensor_meta(self, index: int) -> TensorInfo:
        return _tensor_meta(self._outputs, index, "output")

    def attribute_tensor_meta(self, index: int) -> TensorInfo:
        return _tensor_meta([], index, "attribute")

    def __repr__(self) -> str:
        # Values that are no tensors are listed by their kind's name, as
        # executorch.runtime lists them.
        inputs = [repr(TensorInfo(info)) if isinstance(info, dict) else info
                  for info in self._inputs]
        outputs = [repr(TensorInfo(info)) if isinstance(info, dict) else info
                   for info in self._outputs]
        return (
            f"MethodMeta(name={self._name!r}, num_inputs={self.num_inputs()}, "
            f"input_tensor_meta={inputs}, num_outputs={self.num_outputs()}, "
            f"output_tensor_meta={outputs})"
        )

    __str__ = __repr__


_SCALARS = {"Int": int, "Bool": bool, "Double": float}


def _scalar(output: Any, kind: str) -> Any:
    """A method's Int, Bool or Double output (which ptec returns as a 0-dim
    tensor) as the Python number executorch.runtime gives."""
    data, element, _ = output
    return _SCALARS[kind](data.view(element)[0].item())


def _tensor_meta(infos: List[Any], index: int, what: str) -> TensorInfo:
    if not 0 <= index < len(infos):
        raise IndexError(f"Cannot get {what} tensor meta at {index}")
    info = infos[index]
    if not isinstance(info, dict):
        raise UsageError(f"{what} {index} is a {info}, not a tensor")
    return TensorInfo(info)


class _Switches:
    """ptec's keyword arguments of ``load_program`` and ``load_method``."""

    def __init__(
        self,
        backend: str = "jit",
        threads: Optional[int] = None,
        max_memory: int = _ptec.DEFAULT_MAX_MEMORY,
        max_code: int = _ptec.DEFAULT_MAX_CODE,
        disable_passes: Sequence[str] = (),
        stop_after: Optional[str] = None,
        verify: bool = False,
        microkernels: bool = True,
    ) -> None:
        if backend not in BACKENDS:
            raise UsageError(f"{backend!r} is not a back end (jit, aot or vulkan)")
        if threads is not None and not _is_int_in(threads, 1, MAX_THREADS):
            raise UsageError(f"threads={threads!r}: a method runs on 1 to {MAX_THREADS} threads")
        for name, limit in (("max_memory", max_memory), ("max_code", max_code)):
            if not _is_int_in(limit, 0, 2**64 - 1):
                raise UsageError(f"{name}={limit!r}: a limit is a number of bytes")
        if isinstance(disable_passes, str):
            disable_passes = [disable_passes]
        self.backend = backend
        self.threads = threads
        self.max_memory = max_memory
        self.max_code = max_code
        self.disable_passes = tuple(disable_passes)
        self.stop_after = stop_after
        self.verify = bool(verify)
        self.microkernels = bool(microkernels)

    def _values(self) -> Dict[str, Any]:
        return {
            "backend": self.backend,
            "threads": self.threads,
            "max_memory": self.max_memory,
            "max_code": self.max_code,
            "disable_passes": self.disable_passes,
            "stop_after": self.stop_after,
            "verify": self.verify,
            "microkernels": self.microkernels,
        }

    def key(self) -> Tuple[Any, ...]:
        return tuple(self._values().values())

    def updated(self, overrides: Dict[str, Any]) -> "_Switches":
        return _Switches(**{**self._values(), **overrides})

    def native(self) -> Dict[str, Any]:
        """The compiler's switches as the native half reads them (the back
        end goes separately)."""
        values = self._values()
        del values["backend"]
        values["disable_passes"] = list(self.disable_passes)
        return values


# As many threads as `ptec run --threads` accepts.
MAX_THREADS = 1024


def _is_int_in(value: Any, low: int, high: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


class Method:
    """A method compiled by ptec, ready to run. Its state (mutable buffers
    such as KV caches) persists across ``execute`` calls."""

    def __init__(self, native: "_ptec.NativeMethod", meta: MethodMeta) -> None:
        self._native = native
        self._meta = meta
        self._infos = meta._inputs

    def execute(self, inputs: Sequence[Any]) -> List[Any]:
        """Runs the method on ``inputs`` (torch tensors, numpy arrays, or
        Python scalars for 0-dimensional tensor inputs; a lone tensor is
        taken as the one input) and returns its outputs: torch tensors when
        torch is importable, otherwise numpy arrays."""
        if _is_tensor_like(inputs):
            inputs = [inputs]
        native = native_inputs(list(inputs), self._infos)
        outputs = self._native.execute(native)
        return [
            from_native(output) if isinstance(info, dict) else _scalar(output, info)
            for output, info in zip(outputs, self._meta._outputs)
        ]

    @property
    def metadata(self) -> MethodMeta:
        """The method's inputs and outputs."""
        return self._meta

    @property
    def backend(self) -> str:
        """ptec's addition: the back end the method was compiled for."""
        return self._native.backend

    @property
    def compile_ms(self) -> float:
        """ptec's addition: how long importing, optimizing and compiling
        the method took, in milliseconds."""
        return self._native.compile_ms


def _is_tensor_like(value: Any) -> bool:
    return isinstance(value, np.ndarray) or (torch is not None and isinstance(value, torch.Tensor))


class Program:
    """A program read by ptec. ``load_method`` compiles a method the first
    time it is asked for and returns the same ``Method`` (and so the same
    state) after that, as ExecuTorch caches them; each method has memory of
    its own (ExecuTorch's host-only methods share one arena)."""

    def __init__(self, native: "_ptec.NativeProgram", switches: _Switches) -> None:
        self._native = native
        self._switches = switches
        self._methods: Dict[Tuple[Any, ...], Method] = {}

    @property
    def method_names(self) -> Set[str]:
        """The names of the program's methods."""
        return set(self._native.method_names())

    def load_method(self, name: str, **switches: Any) -> Method:
        """Compiles the method ``name`` (once per set of switches), with the
        program's switches or those given here (``backend``, ``threads``,
        ``max_memory``, ``max_code``, ``disable_passes``, ``stop_after``,
        ``verify``, ``microkernels``).
        Raises ``ptec.MethodNotFoundError`` (a ``KeyError``) when the program
        has no such method, and ``ptec.CompileError`` when ptec cannot
        compile it."""
        chosen = self._switches.updated(switches)
        key = (name,) + chosen.key()
        method = self._methods.get(key)
        if method is None:
            native = self._native.load_method(
                name,
                chosen.backend,
                chosen.native(),
            )
            method = Method(native, self.metadata(name))
            self._methods[key] = method
        return method

    def metadata(self, method_name: str) -> MethodMeta:
        """The method's inputs and outputs, without compiling it."""
        inputs, outputs = self._native.method_meta(method_name)
        return MethodMeta(method_name, inputs, outputs)

    def write_etdump_result_to_file(self, etdump_path: str, debug_buffer_path: str) -> None:
        """ptec records no ETDump: raises ``ptec.UsageError``."""
        raise UsageError("ptec records no ETDump (enable_etdump is not supported)")


class BackendRegistry:
    """The delegates ptec compiles: it links no backend, but turns the
    payloads of these into its own code."""

    @property
    def registered_backend_names(self) -> List[str]:
        return ["XnnpackBackend", "VulkanBackend"]

    def is_available(self, backend_name: str) -> bool:
        return backend_name in self.registered_backend_names


class OperatorRegistry:
    """The kernel operators ptec compiles (``aten::add.out``, ...)."""

    @property
    def operator_names(self) -> Set[str]:
        return set(_ptec.operators("jit"))


class Runtime:
    """ptec as ``executorch.runtime.Runtime``: ``Runtime.get()`` is the one
    instance; ``load_program`` reads a program."""

    @staticmethod
    @functools.lru_cache(maxsize=1)
    def get() -> "Runtime":
        """The Runtime singleton."""
        return Runtime()

    def __init__(self) -> None:
        self.backend_registry = BackendRegistry()
        self.operator_registry = OperatorRegistry()

    def load_program(
        self,
        data: Union[bytes, bytearray, BinaryIO, Path, str],
        *,
        verification: Verification = Verification.InternalConsistency,
        enable_etdump: bool = False,
        debug_buffer_size: int = 0,
        data_path: Optional[Union[Path, str]] = None,
        **switches: Any,
    ) -> Program:
        """Reads a program: a path (``str`` or ``Path``: the file is
        mapped, not read into memory), ``bytes`` (kept, not copied), a
        ``bytearray`` (copied) or a file-like object (read). A ``.bpte``
        bundled program is read too (its program is used). ``data_path`` is
        the ``.ptd`` file holding the weights the program keeps outside it.
        ``verification`` is accepted and ptec verifies fully;
        ``enable_etdump=True`` raises ``ptec.UsageError``, since ptec records
        no ETDump. ``switches`` are ptec's (see the module's documentation)
        and apply to every method the program loads."""
        if not isinstance(verification, Verification) and not hasattr(verification, "name"):
            raise TypeError(f"verification must be a Verification, not {type(verification).__name__}")
        if enable_etdump:
            raise UsageError("ptec records no ETDump: enable_etdump=True is not supported")
        chosen = _Switches(**switches)
        data_files = [] if data_path is None else [os.fspath(data_path)]
        if isinstance(data, (Path, str)):
            native = _ptec.NativeProgram.open(os.fspath(data), data_files)
        elif isinstance(data, (bytes, bytearray)):
            native = _ptec.NativeProgram.from_bytes(data, data_files)
        elif hasattr(data, "read"):
            native = _ptec.NativeProgram.from_bytes(data.read(), data_files)
        else:
            raise TypeError(
                "Expected data to be bytes, bytearray, a path to a .pte file, or a "
                f"file-like object, but got {type(data).__name__}."
            )
        return Program(native, chosen)
