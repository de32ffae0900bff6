"""Prefill and decode speed of a language model exported by export_llama:
ptec's compiled library driven by the C decode loop (examples/llm/decode.c)
against ExecuTorch's runtime (with XNNPACK, for -X programs) on the same
.pte, in the same run.

Each side runs a prefill of ``--prompt`` tokens and ``--decode`` greedy
decode steps on a fresh instance, ``--repeats`` times; the script prints
the median prefill and decode speeds (tokens/s), their ratios, and the CPU.
With ``--one-core`` both sides run pinned to core 0 (``taskset -c 0``);
without it both run unpinned (ExecuTorch's thread pool then uses every
core; ptec runs on one thread).

Usage (the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/compare_llm_speed.py MODEL.pte [--ptec target/release/ptec]
        [--prompt 64] [--decode 64] [--repeats 5] [--one-core]
"""

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def executorch_once(pte: Path, prompt: list, decode: int) -> tuple:
    """One prefill and ``decode`` steps on ExecuTorch; returns (prefill tokens/s, decode tokens/s, tokens)."""
    import torch
    from executorch.runtime import Runtime

    import executorch.extension.llm.custom_ops.custom_ops  # noqa: F401  (llama::*)
    try:
        import executorch.kernels.quantized  # noqa: F401
    except ImportError:
        pass
    program = Runtime.get().load_program(str(pte))
    method = program.load_method("forward")
    tokens = torch.tensor([prompt], dtype=torch.int64)
    position = 0
    generated = []
    prefill_seconds = decode_seconds = 0.0
    for step in range(1 + decode):
        inputs = [tokens, torch.tensor([position], dtype=torch.int64)]
        start = time.perf_counter()
        (logits,) = method.execute(inputs)
        seconds = time.perf_counter() - start
        if step == 0:
            prefill_seconds = seconds
        else:
            decode_seconds += seconds
        position += tokens.shape[1]
        token = int(logits.reshape(-1, logits.shape[-1])[-1].argmax())
        generated.append(token)
        tokens = torch.tensor([[token]], dtype=torch.int64)
    return len(prompt) / prefill_seconds, decode / decode_seconds, generated


def run_executorch(pte: Path, prompt: list, decode: int, pin: list) -> tuple:
    """Runs ExecuTorch in a child process (pinned like ptec) and parses its result."""
    code = (
        "import json, sys; sys.path.insert(0, %r); import compare_llm_speed as c; "
        "print(json.dumps(c.executorch_once(%r, %r, %d)))" % (str(REPO / "scripts"), str(pte), prompt, decode)
    )
    output = subprocess.run(pin + [sys.executable, "-c", code], capture_output=True, text=True, check=True)
    prefill, decoding, tokens = json.loads(output.stdout.strip().splitlines()[-1])
    return prefill, decoding, tokens


def build_decode_loop(ptec: Path, pte: Path, folder: Path) -> Path:
    library, header, program = folder / "model.so", folder / "model.h", folder / "decode"
    subprocess.run([str(ptec), "compile", str(pte), "-o", str(library), "--header", str(header)], check=True)
    subprocess.run(
        ["cc", "-O2", "-I", str(folder), str(REPO / "examples/llm/decode.c"), str(library), "-lm", "-o", str(program)],
        check=True,
    )
    return program


def run_ptec(program: Path, prompt: list, decode: int, pin: list) -> tuple:
    environment = dict(os.environ, LD_LIBRARY_PATH=str(program.parent))
    command = pin + [str(program), "--steps", str(1 + decode)] + [str(token) for token in prompt]
    output = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    ids, speeds = output.stdout.strip().splitlines()[-2:]
    # "prefill: P tokens in X ms (A tokens/s); decode: D tokens in Y ms (B tokens/s)"
    rates = [float(part.split("(")[1].split()[0]) for part in speeds.split(";")]
    return rates[0], rates[1], [int(token) for token in ids.split()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pte", type=Path)
    parser.add_argument("--ptec", type=Path, default=REPO / "target/release/ptec")
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--one-core", action="store_true")
    args = parser.parse_args()

    pin = ["taskset", "-c", "0"] if args.one_core else []
    prompt = [(7919 * i + 13) % args.vocab for i in range(args.prompt)]
    with tempfile.TemporaryDirectory() as scratch:
        program = build_decode_loop(args.ptec, args.pte, Path(scratch))
        results = {"ExecuTorch": [], "ptec": []}
        tokens = {}
        for _ in range(args.repeats):
            for name, run in (("ExecuTorch", run_executorch), ("ptec", run_ptec)):
                if name == "ExecuTorch":
                    prefill, decoding, generated = run(args.pte, prompt, args.decode, pin)
                else:
                    prefill, decoding, generated = run(program, prompt, args.decode, pin)
                results[name].append((prefill, decoding))
                tokens[name] = generated
    cores = "one core (taskset -c 0)" if args.one_core else f"all {os.cpu_count()} cores, unpinned"
    print(f"{args.pte.name}: prompt {args.prompt} tokens, {args.decode} decode steps, "
          f"median of {args.repeats}, {cores}, {cpu_model()}")
    medians = {}
    for name, runs in results.items():
        prefill = statistics.median(run[0] for run in runs)
        decoding = statistics.median(run[1] for run in runs)
        medians[name] = (prefill, decoding)
        print(f"  {name:10} prefill {prefill:9.1f} tokens/s   decode {decoding:8.1f} tokens/s")
    (et_prefill, et_decode), (prefill, decoding) = medians["ExecuTorch"], medians["ptec"]
    print(f"  ptec's time / ExecuTorch's: prefill {et_prefill / prefill:.2f}, decode {et_decode / decoding:.2f}")
    # Dynamically quantized activations (8da4w) round onto a grid derived
    # from each row's range, so a last-bit difference in a float sum can move
    # a value to the neighbouring step; greedy decoding then may part ways.
    agree = next(
        (i for i, (a, b) in enumerate(zip(tokens["ExecuTorch"], tokens["ptec"])) if a != b),
        len(tokens["ptec"]),
    )
    print(f"  greedy tokens agree on the first {agree} of {len(tokens['ptec'])} steps")
    return 0


if __name__ == "__main__":
    sys.exit(main())
