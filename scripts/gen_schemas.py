"""Write the operator schemas ptec's importer checks its table against.

ptec's operator table (``import/src/aten/``) writes each operator's schema
inline, next to the rule that reads its arguments by name; a test compares
every one with this file, so a typo in a name or a type cannot go unnoticed.
The file lists, one per line, ``key<TAB>schema`` for every operator that
ExecuTorch 1.5.1's portable kernel library registers, and for every operator
of the namespaces whose kernels ExecuTorch's LLM and quantized paths use
(``llama``, ``quantized_decomposed``, ``torchao``), and a few others ptec
imports (``EXTRA_KEYS``), as PyTorch prints them
once ExecuTorch has registered its own operators. The few that ExecuTorch's
emitter writes without registering them with PyTorch are listed by hand
below, with their argument lists as the emitter writes them.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_schemas.py [OUT]     # default: import/src/aten/schemas.txt
"""

import argparse
import importlib
from pathlib import Path

import torch

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "import" / "src" / "aten" / "schemas.txt"

# Modules whose import registers ExecuTorch's operators with PyTorch.
REGISTERING_MODULES = [
    "executorch.exir",
    "executorch.exir.passes.executorch_prim_ops_registry",
    "executorch.exir.passes.dim_order_ops_registry",
    "executorch.extension.llm.custom_ops.custom_ops",
    "executorch.kernels.quantized",
]

EXTRA_NAMESPACES = ["llama", "quantized_decomposed", "torchao"]

# Operators ptec imports beyond the portable library's.
EXTRA_KEYS = [
    "aten::_unsafe_view.out",
    "aten::all.all_out",
    "aten::hardsigmoid.out",
    "aten::hardswish.out",
    "aten::ones_like.out",
    "aten::silu.out",
    "aten::squeeze_copy.out",
    "aten::zeros_like.out",
]

# Emitted by ExecuTorch's emitter (exir/emit/_emitter.py) but never
# registered with PyTorch, and registered by ExecuTorch's runtime under
# overloads PyTorch does not know.
BY_HAND = {
    "executorch_prim::et_view.default": "executorch_prim::et_view.default(Tensor self, SymInt[] size) -> Tensor",
    "executorch_prim::et_copy_index.tensor": "executorch_prim::et_copy_index.tensor(Tensor(a!) copy_to, Tensor copy_from, SymInt index) -> ()",
    "executorch_prim::floordiv.int": "executorch_prim::floordiv.int(SymInt a, SymInt b) -> SymInt",
    "executorch_prim::mod.int": "executorch_prim::mod.int(SymInt a, SymInt b) -> SymInt",
}


def registered_schema(key: str):
    namespace, rest = key.split("::")
    name, _, overload = rest.partition(".")
    try:
        packet = getattr(getattr(torch.ops, namespace), name)
        return str(getattr(packet, overload or "default")._schema)
    except (AttributeError, RuntimeError):
        return None


def namespace_keys(namespace: str):
    keys = []
    for schema in torch._C._jit_get_all_schemas():
        if schema.name.startswith(namespace + "::"):
            keys.append(schema.name + ("." + schema.overload_name if schema.overload_name else ""))
    return keys


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    for module in REGISTERING_MODULES:
        try:
            importlib.import_module(module)
        except ImportError as error:
            print(f"note: {module} not importable ({error}); its operators are missing")
    from executorch.extension.pybindings import portable_lib

    keys = set(portable_lib._get_operator_names()) | set(EXTRA_KEYS)
    for namespace in EXTRA_NAMESPACES:
        keys.update(namespace_keys(namespace))
    lines = []
    for key in sorted(keys):
        schema = BY_HAND.get(key) or registered_schema(key)
        if schema is None:
            raise SystemExit(f"no schema for {key}: add it to BY_HAND")
        lines.append(f"{key}\t{schema}")
    args.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} schemas to {args.out}")


if __name__ == "__main__":
    main()
