"""Between Python values and ptec's tensors.

Inputs: torch tensors, numpy arrays and Python scalars. A CPU tensor or an
array that is already C-contiguous, in native byte order, is handed to ptec
as a view of its own memory (no copy; the method's run copies it into its
planned memory, as ExecuTorch's does); anything else (a channels-last or
strided tensor, a Fortran-ordered array) is first made contiguous, which
copies. A Python scalar is accepted for a 0-dimensional tensor input, in
that input's dtype.

Outputs: each output's bytes come from ptec in a buffer that numpy adopts
without copying; they are returned as torch tensors sharing that memory
(``torch.from_numpy``) when torch is importable, otherwise as the numpy
arrays.
"""

from typing import Any, Dict, List, Sequence, Tuple, Union

import numpy as np

from .errors import InputError

try:
    import torch
except ImportError:  # torch is optional: outputs are numpy arrays then.
    torch = None

# What the native module takes: a C-contiguous array and its element type.
NativeInput = Tuple[np.ndarray, str]
# An input's description from the program: a dict for a tensor, the kind's
# name for another value; None past the method's inputs.
Info = Union[Dict[str, Any], str, None]


def to_native(index: int, value: Any, info: Info) -> NativeInput:
    """Input ``index`` as the native module takes it; ``info`` is the
    input's description from the program (a dict for a tensor)."""
    if torch is not None and isinstance(value, torch.Tensor):
        return _from_torch(index, value)
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.ascontiguousarray(value)
        if array.dtype.byteorder == ">":
            array = array.astype(array.dtype.newbyteorder("<"))
        return array, array.dtype.name
    if isinstance(value, (bool, int, float)):
        return _from_scalar(index, value, info)
    raise InputError(
        f"input {index}: a {type(value).__name__} is not a tensor, an array or a scalar"
    )


def _from_torch(index: int, tensor: "torch.Tensor") -> NativeInput:
    tensor = tensor.detach()
    if tensor.device.type != "cpu":
        raise InputError(
            f"input {index}: the tensor is on {tensor.device}; ptec reads tensors "
            "in CPU memory (move it with .cpu())"
        )
    if not tensor.is_contiguous():
        tensor = tensor.contiguous()
    if tensor.dtype == torch.bfloat16:
        # numpy has no bfloat16: the same bytes, as 16-bit integers.
        return tensor.view(torch.int16).numpy(), "bfloat16"
    try:
        array = tensor.numpy()
    except (TypeError, RuntimeError):
        raise InputError(
            f"input {index}: ptec has no element type for torch's {tensor.dtype}"
        ) from None
    return array, array.dtype.name


def _from_scalar(index: int, value: Union[bool, int, float], info: Info) -> NativeInput:
    if info is None:
        array = np.asarray(value)
        return array, array.dtype.name
    if not isinstance(info, dict):
        raise InputError(f"input {index}: the method takes a {info} here, which ptec does not compile")
    if info["sizes"]:
        raise InputError(
            f"input {index}: a Python scalar for a tensor of sizes {info['sizes']}; "
            "pass a tensor or an array"
        )
    array = np.array(value, dtype=info["element"])
    if array.item() != value:
        raise InputError(
            f"input {index}: {value!r} is not a value of the input's dtype {info['element']}"
        )
    return array, info["element"]


def from_native(output: Tuple[np.ndarray, str, List[int]]) -> Any:
    """An output as a torch tensor when torch is importable, else as a
    numpy array; both share the memory ptec returned it in."""
    data, element, sizes = output
    if element == "bfloat16":
        bits = data.view(np.uint16).reshape(sizes)
        if torch is not None:
            return torch.from_numpy(bits.view(np.int16)).view(torch.bfloat16)
        # numpy has no bfloat16: widened to float32, which is exact.
        return (bits.astype(np.uint32) << 16).view(np.float32)
    array = data.view(np.dtype(element)).reshape(sizes)
    if torch is not None:
        return torch.from_numpy(array)
    return array


def native_inputs(inputs: Sequence[Any], infos: Sequence[Info]) -> List[NativeInput]:
    """Every input as the native module takes it (past the method's inputs,
    a scalar keeps numpy's dtype; the method then refuses the count)."""
    return [
        to_native(index, value, infos[index] if index < len(infos) else None)
        for index, value in enumerate(inputs)
    ]
