"""ptec's exceptions.

Every error ptec reports is a :class:`Error`, which is a ``RuntimeError``
as ExecuTorch's own errors are, so that ``pytest.raises(RuntimeError)``
written for ``executorch.runtime`` still holds. The message is ptec's: it
says what is wrong and where.
"""


class Error(RuntimeError):
    """Any error ptec reports."""


class ReadError(Error):
    """The file cannot be read, or its bytes are not a program ptec can
    read (the message names the table or byte offset that is wrong)."""


class MethodNotFoundError(Error, KeyError):
    """The program has no method of that name. Also a ``KeyError``, which
    is what ``executorch.runtime.Program.load_method`` raises."""

    def __str__(self) -> str:
        # KeyError quotes its argument; ptec's message is a sentence.
        return str(self.args[0]) if self.args else ""


class CompileError(Error):
    """ptec cannot compile the method: an operator, node type or element
    type it does not implement, or a failure of a compiler stage."""


class InputError(Error):
    """The inputs do not fit the method: their number, element types or
    shapes, or a value that is not a tensor, array or scalar."""


class ExecutionError(Error):
    """The method failed while running (for example an integer division by
    zero, or an index out of range)."""


class DeviceError(Error):
    """The Vulkan device cannot be opened or cannot run the method."""


class UsageError(Error, ValueError):
    """An argument ptec does not accept (a back end, an output kind, a pass
    name, a feature ptec does not have). Also a ``ValueError``."""


class InternalError(Error):
    """A bug in ptec (a panic in its Rust code), reported instead of
    crashing the interpreter."""


__all__ = [
    "Error",
    "ReadError",
    "MethodNotFoundError",
    "CompileError",
    "InputError",
    "ExecutionError",
    "DeviceError",
    "UsageError",
    "InternalError",
]
