"""Export tiny language models with ExecuTorch's own LLM path and record
ExecuTorch's answers, step by step, as ptec's LLM fixtures.

For each configuration the script writes a ``params.json`` and a checkpoint
of seeded random weights (every weight the model has, norm weights
included, so that nothing in the exported program is left uninitialised),
runs export_llama (its own main, in a child interpreter) with the
configuration's flags, and runs the ``.pte`` (with its ``.ptd`` when the
weights are kept apart) on ExecuTorch's own Python runtime: a prefill of
``--prefill`` prompt tokens, then ``--decode`` greedy decode steps (each
feeds back the argmax of the previous logits), on one method instance, so
the KV cache carries over, and on to ``--greedy`` generated tokens (the C
decode loop's test compares them). Each of the prefill and the first
``--decode`` calls becomes a step folder::

    OUT/<config>/model.pte
    OUT/<config>/model.ptd  the weights, for configurations that keep them apart
    OUT/<config>/step_00/in_0.npy  tokens  int64 [1, n]
    OUT/<config>/step_00/in_1.npy  input_pos  int64 [1]
    OUT/<config>/step_00/out_0.npy  ExecuTorch's logits
    OUT/<config>/step_01/...

which is what ``ptec run FILE --steps OUT/<config> --output-dir DIR`` (with
``--data OUT/<config>/model.ptd`` when there is one) reads
(it ignores the ``out_*.npy`` files) and what ``tests/llm.rs`` compares
with. ``OUT/index.json`` lists each configuration: its flags, model
parameters, the operators of its program, file sizes and ExecuTorch's
greedy tokens. The LLM custom operators (``llama::*``) and the quantized
kernels are registered with the runtime by importing their modules.
A configuration with a ``twin`` (a Vulkan export: ExecuTorch's Python
runtime has no Vulkan backend) takes its twin's weights and copies its
steps instead of running.

Usage (the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_llm_fixtures.py [--out DIR] [--only NAME...]
        [--size tiny|fixture|bench] [--prefill 6] [--decode 16]

``--size fixture`` (the default) is small enough to commit; ``tiny`` is the
issue's dim-64 Llama; ``bench`` (dim 512, 8 layers, vocab 32000) is for
speed figures and not for committing.
"""

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

SIZES = {
    "fixture": dict(dim=32, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=128, max_seq_len=64),
    "tiny": dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, vocab_size=512, max_seq_len=64),
    "bench": dict(dim=512, n_layers=8, n_heads=8, n_kv_heads=4, vocab_size=32000, max_seq_len=128),
}

@dataclass
class Config:
    """One export: export_llama's flags, and changes to the size's parameters."""

    flags: list
    params: dict = field(default_factory=dict)
    # The longest input of one call, and the KV cache's length (at least
    # as long), when they differ from the size's.
    max_seq_len: int | None = None
    max_context_len: int | None = None
    # export_llama's foundation_weights_file: the data file the weights go to.
    weights_file: str | None = None
    # The prompt's length, where it is not --prefill: 1 for a program of
    # static shapes (--disable_dynamic_shape), which takes one token a call.
    prefill: int | None = None
    # A configuration of the same parameters, listed before this one, whose
    # weights this one takes and whose steps (inputs and ExecuTorch's
    # logits) it copies: for a delegate ExecuTorch's Python runtime lacks
    # (Vulkan), the same model run through one it has.
    twin: str | None = None


# The name of the data file of configurations that keep weights outside the program.
PTD_NAME = "model.ptd"

QWEN3 = dict(use_qk_norm=True, qk_norm_before_rope=True, use_hf_rope=True, head_dim=16, rope_theta=1e6)

# Qwen3.5's hybrid: a Gated DeltaNet layer (llama::gated_delta_rule, grouped
# key heads, a causal depthwise convolution over its own state) before a
# gated attention layer.
QWEN3_5 = dict(
    layer_types=["linear_attention", "full_attention"],
    linear_num_key_heads=2,
    linear_num_value_heads=4,
    linear_key_head_dim=8,
    linear_value_head_dim=8,
    use_q_gate=True,
    use_qk_norm=True,
    qk_norm_before_rope=True,
    rms_norm_add_unit_offset=True,
    partial_rotary_factor=0.25,
    head_dim=16,
    use_hf_rope=True,
    rope_theta=1e7,
)

CONFIGS = {
    "llama_kv": Config(["-kv"]),
    "llama_xnnpack": Config(["-kv", "-X"]),
    "llama_sdpa_with_kv_cache": Config(["-kv", "--use_sdpa_with_kv_cache", "-X"]),
    "llama_8da4w_g32": Config(["-kv", "-X", "-qmode", "8da4w", "--group_size", "32"]),
    "llama_8da4w_g128": Config(
        ["-kv", "-X", "-qmode", "8da4w", "--group_size", "128"],
        params=dict(dim=128, hidden_dim=256),
    ),
    "llama_embedding_q8": Config(["-kv", "-E", "8,0"]),
    "llama_embedding_q4": Config(["-kv", "-E", "4,32"]),
    "llama_fp16": Config(["-kv", "-d", "fp16"]),
    "llama_bf16": Config(["-kv", "-d", "bf16"]),
    "llama_context": Config(["-kv", "-X"], max_seq_len=16, max_context_len=48),
    "qwen3_xnnpack": Config(["-kv", "-X", "--model", "qwen3_0_6b"], params=QWEN3),
    # The weights in a separate FlatTensor file, model.ptd beside model.pte:
    # export_llama tags every weight with this name and writes the file into
    # the output folder.
    "llama_xnnpack_ptd": Config(["-kv", "-X"], weights_file=PTD_NAME),
    # An int8 KV cache with a scale and zero point per token and head, the
    # query quantized alike (llama::custom_quantized_sdpa).
    "llama_quantized_kv_cache": Config(["-kv", "--use_sdpa_with_kv_cache", "--quantize_kv_cache", "-X"]),
    # XNNPACK's products in bf16 (xnn_datatype_bf16 values).
    "llama_xnnpack_bf16": Config(["-kv", "-X", "-d", "bf16", "--xnnpack-enable-bf16"]),
    # A ring buffer of 4 positions for the KV cache (update_cache_with_indices),
    # which wraps during the decode steps; static shapes.
    "llama_local_global": Config(
        ["-kv", "--use_sdpa_with_kv_cache", "-X", "--disable_dynamic_shape", "--local_global_attention", "[4]"],
        prefill=1,
    ),
    # Qwen3.5 as its own configuration exports it: static shapes, one token
    # a call.
    "qwen3_5_xnnpack": Config(
        [
            "-kv", "--use_sdpa_with_kv_cache", "-X", "--xnnpack-extended-ops",
            "--disable_dynamic_shape", "--model", "qwen3_5_0_8b",
        ],
        params=QWEN3_5,
        prefill=1,
    ),
    # ExecuTorch's Vulkan tutorial's export (start positions read by
    # et_vk.select_as_symint), checked against its XNNPACK twin.
    "llama_vulkan": Config(
        ["-d", "fp32", "-V", "-kv", "--use_sdpa_with_kv_cache"], twin="llama_sdpa_with_kv_cache"
    ),
    # The same computed in f16 from f32 inputs (staged as f32, converted on
    # the device).
    "llama_vulkan_fp16": Config(
        ["-d", "fp32", "-V", "-kv", "--use_sdpa_with_kv_cache", "--vulkan-force-fp16"],
        twin="llama_sdpa_with_kv_cache",
    ),
    # The Vulkan tutorial's command (8da4w) forced to f16, against the
    # XNNPACK 8da4w twin, whose activations are quantized by XNNPACK's rule
    # rather than torchao's.
    "llama_vulkan_8da4w_fp16": Config(
        ["-d", "fp32", "-V", "-qmode", "8da4w", "-G", "32", "-kv", "--use_sdpa_with_kv_cache", "--vulkan-force-fp16"],
        twin="llama_8da4w_g32",
    ),
}


def model_params(size: dict, config: Config) -> dict:
    params = {k: v for k, v in size.items() if k != "max_seq_len"}
    params.update(norm_eps=1e-5, multiple_of=32)
    params.update(config.params)
    return params


def write_checkpoint(params: dict, max_seq_len: int, max_context_len: int, path: Path, seed: int) -> None:
    """A state dict of seeded random weights for every parameter the model has."""
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    args = ModelArgs(**params, max_seq_len=max_seq_len, max_context_len=max_context_len)
    state = construct_transformer(args).state_dict()
    generator = torch.Generator().manual_seed(seed)
    weights = {}
    for name, tensor in state.items():
        if not tensor.is_floating_point():
            weights[name] = tensor
        elif name.endswith("norm.weight"):
            # Around one, so that the norms' weights matter.
            weights[name] = 1 + 0.1 * torch.randn(tensor.shape, generator=generator)
        else:
            scale = tensor.shape[-1] ** -0.5 if tensor.dim() > 1 else 0.1
            weights[name] = scale * torch.randn(tensor.shape, generator=generator)
    torch.save(weights, path)


# export_llama's own main (same seed), plus the foundation weights file, which
# its configuration has but its command line does not offer.
EXPORT_LLAMA = """
import sys
import torch
from executorch.examples.models.llama.export_llama_lib import build_args_parser, export_llama
sys.setrecursionlimit(4096)
torch.manual_seed(42)
weights_file, flags = sys.argv[1], sys.argv[2:]
args = build_args_parser().parse_args(flags)
if weights_file:
    args.foundation_weights_file = weights_file
export_llama(args)
"""


def export(
    config: Config, params_path: Path, checkpoint: Path, max_seq_len: int, max_context_len: int, out: Path
) -> None:
    command = [
        sys.executable, "-c", EXPORT_LLAMA, config.weights_file or "",
        "--checkpoint", str(checkpoint),
        "--params", str(params_path),
        "--max_seq_length", str(max_seq_len),
        "--max_context_length", str(max_context_len),
        "-o", str(out.parent),
        "--output_name", str(out),
        *config.flags,
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not out.exists():
        sys.stderr.write(result.stdout[-4000:] + result.stderr[-4000:])
        raise RuntimeError(f"export_llama failed: {' '.join(command)}")


def register_custom_ops() -> None:
    """Registers the LLM custom operators and quantized kernels with the runtime."""
    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401  (llama::*)
    try:
        import executorch.kernels.quantized  # noqa: F401  (quantized_decomposed::*)
    except ImportError:
        pass


def run_steps(
    pte: Path, folder: Path, vocab: int, prefill: int, decode: int, greedy: int, seed: int
) -> list:
    """Runs a prefill and greedy decode steps on one method instance, writing
    step folders for the prefill and the first ``decode`` steps; returns the
    first ``greedy`` tokens greedy decoding generates."""
    from executorch.runtime import Runtime

    register_custom_ops()
    ptd = pte.with_name(PTD_NAME)
    program = Runtime.get().load_program(str(pte), data_path=str(ptd) if ptd.exists() else None)
    method = program.load_method("forward")
    generator = torch.Generator().manual_seed(seed)
    tokens = torch.randint(0, vocab, (1, prefill), generator=generator, dtype=torch.int64)
    position = 0
    generated = []
    for step in range(max(1 + decode, greedy)):
        inputs = [tokens, torch.tensor([position], dtype=torch.int64)]
        (logits,) = method.execute(inputs)
        if step <= decode:
            directory = folder / f"step_{step:02d}"
            directory.mkdir(parents=True, exist_ok=True)
            for index, tensor in enumerate(inputs):
                np.save(directory / f"in_{index}.npy", tensor.numpy())
            np.save(directory / "out_0.npy", logits.float().numpy())
        position += tokens.shape[1]
        token = int(logits.reshape(-1, logits.shape[-1])[-1].argmax())
        generated.append(token)
        tokens = torch.tensor([[token]], dtype=torch.int64)
    return generated[:greedy]


def operators(pte: Path) -> list:
    from executorch.exir._serialize._program import deserialize_pte_binary

    program = deserialize_pte_binary(pte.read_bytes())
    program = getattr(program, "program", program)
    plan = next(plan for plan in program.execution_plan if plan.name == "forward")
    return sorted({f"{op.name}.{op.overload}" if op.overload else op.name for op in plan.operators})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/fixtures/llm"))
    parser.add_argument("--only", nargs="*", default=None)
    parser.add_argument("--size", choices=sorted(SIZES), default="fixture")
    parser.add_argument("--prefill", type=int, default=6)
    parser.add_argument("--decode", type=int, default=16)
    parser.add_argument(
        "--greedy", type=int, default=32, help="greedy tokens to record (the C decode loop's test)"
    )
    args = parser.parse_args()

    size = SIZES[args.size]
    args.out.mkdir(parents=True, exist_ok=True)
    index_path = args.out / "index.json"
    index = json.loads(index_path.read_text()) if index_path.exists() else {}
    names = args.only or list(CONFIGS)
    unknown = sorted(set(names) - set(CONFIGS))
    if unknown:
        parser.error(f"unknown configurations {unknown}; there are {sorted(CONFIGS)}")
    failed = []
    seeds = {name: seed for seed, name in enumerate(CONFIGS)}
    for name, config in CONFIGS.items():
        if name not in names:
            continue
        seed = seeds[config.twin or name]
        prefill = config.prefill or args.prefill
        params = model_params(size, config)
        max_seq_len = config.max_seq_len or size["max_seq_len"]
        max_context_len = config.max_context_len or max_seq_len
        folder = args.out / name
        for old in folder.glob("step_*/*.npy"):
            old.unlink()
        folder.mkdir(parents=True, exist_ok=True)
        pte = folder / "model.pte"
        pte.with_name(PTD_NAME).unlink(missing_ok=True)
        with tempfile.TemporaryDirectory() as scratch:
            scratch = Path(scratch)
            (scratch / "params.json").write_text(json.dumps(params))
            write_checkpoint(params, max_seq_len, max_context_len, scratch / "checkpoint.pth", seed)
            try:
                export(
                    config,
                    scratch / "params.json",
                    scratch / "checkpoint.pth",
                    max_seq_len,
                    max_context_len,
                    pte,
                )
            except RuntimeError as error:
                print(f"{name}: {error}", file=sys.stderr)
                failed.append(name)
                continue
        if config.twin:
            twin = args.out / config.twin
            for step in sorted(twin.glob("step_*")):
                (folder / step.name).mkdir(exist_ok=True)
                for array in step.glob("*.npy"):
                    shutil.copyfile(array, folder / step.name / array.name)
            greedy = index[config.twin]["greedy_tokens"]
            prefill = index[config.twin]["prefill"]
        else:
            greedy = run_steps(
                pte, folder, params["vocab_size"], prefill, args.decode, args.greedy, seed
            )
        index[name] = {
            "flags": config.flags,
            "size": args.size,
            "params": params,
            "max_seq_len": max_seq_len,
            "max_context_len": max_context_len,
            "steps": 1 + args.decode,
            "prefill": prefill,
            "greedy_tokens": greedy,
            "operators": operators(pte),
            "bytes": pte.stat().st_size,
            "sha256": hashlib.sha256(pte.read_bytes()).hexdigest(),
        }
        ptd = pte.with_name(PTD_NAME)
        if ptd.exists():
            index[name]["data"] = {
                "file": PTD_NAME,
                "bytes": ptd.stat().st_size,
                "sha256": hashlib.sha256(ptd.read_bytes()).hexdigest(),
            }
        print(f"{name}: {pte.stat().st_size} bytes, greedy {greedy}")
    index_path.write_text(json.dumps(index, indent=1, sort_keys=True) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
