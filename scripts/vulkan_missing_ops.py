"""List the operators ExecuTorch's VulkanPartitioner may delegate that ptec
does not translate.

The partitioner's registry (``executorch.backends.vulkan.op_registry.
vulkan_supported_ops``) is keyed by operator objects, whose ``__name__`` is the
name a VK00 graph's operator call carries (``aten.cat.default``), by Python's
symbolic-integer functions (``operator.add``: ``add``) and by strings for the
custom operators that may not be loaded (``et_vk::sdpa``, whose calls are named
``et_vk.sdpa.default``; ``llama::update_cache``, which the edge program keeps as
a torch operator: ``update_cache.default``). ``ptec operators --json`` lists what
ptec translates (``source`` ``vulkan``).

Usage (with the anchor environment, from the repository root, after
``cargo build --release``):
    $ANCHOR_PY scripts/vulkan_missing_ops.py [--ptec target/release/ptec] [--json]
"""

import argparse
import json
import subprocess

from executorch.backends.vulkan.op_registry import vulkan_supported_ops


def call_name(op) -> str:
    """The name an operator call of a VK00 graph carries for ``op``."""
    if isinstance(op, str):
        namespace, name = op.split("::")
        if namespace == "llama":
            # The edge program keeps ExecuTorch's LLM operators as torch
            # operators, whose names lack the namespace.
            return f"{name}.default"
        return f"{namespace}.{name}.default"
    return op.__name__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ptec", default="target/release/ptec")
    parser.add_argument("--json", action="store_true", help="print the missing ones as JSON")
    args = parser.parse_args()
    listed = json.loads(subprocess.check_output([args.ptec, "operators", "--json"]))
    translated = {op["key"] for op in listed["operators"] if op["source"] == "vulkan"}
    schemas = {call_name(op): str(getattr(op, "_schema", "")) for op in vulkan_supported_ops}
    missing = sorted(set(schemas) - translated)
    if args.json:
        print(json.dumps({"partitioner": len(schemas), "missing": missing}, indent=2))
        return
    print(
        f"{len(schemas)} operators the partitioner may delegate; ptec translates "
        f"{len(schemas) - len(missing)}, {len(missing)} missing:"
    )
    for name in missing:
        print(f"  {name}  {schemas[name]}")


if __name__ == "__main__":
    main()
