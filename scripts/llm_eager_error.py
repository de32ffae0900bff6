"""ExecuTorch's own error against eager PyTorch on the LLM fixtures: for each
configuration of tests/fixtures/llm, the float32 eager model
(``construct_transformer`` with the configuration's parameters and the
seeded weights gen_llm_fixtures.py exported) runs the same steps as the
step folders, and the script prints the largest difference between its
logits and ExecuTorch's recorded ones: the yardstick for ptec's own
tolerances (quantized and half-precision programs differ from eager
PyTorch by their rounding, not by ptec's).

Usage (the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/llm_eager_error.py [--fixtures tests/fixtures/llm]
"""

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_llm_fixtures  # noqa: E402


def eager_model(entry: dict, seed: int) -> torch.nn.Module:
    from executorch.examples.models.llama.llama_transformer import construct_transformer
    from executorch.examples.models.llama.model_args import ModelArgs

    params = entry["params"]
    with tempfile.TemporaryDirectory() as scratch:
        checkpoint = Path(scratch) / "checkpoint.pth"
        gen_llm_fixtures.write_checkpoint(
            params, entry["max_seq_len"], entry["max_context_len"], checkpoint, seed
        )
        weights = torch.load(checkpoint)
    args = ModelArgs(
        **params,
        max_seq_len=entry["max_seq_len"],
        max_context_len=entry["max_context_len"],
        use_kv_cache=True,
        enable_dynamic_shape=True,
    )
    model = construct_transformer(args).eval()
    # The caches and masks are buffers the checkpoint does not hold.
    model.load_state_dict(weights, strict=False)
    return model


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fixtures", type=Path, default=Path("tests/fixtures/llm"))
    args = parser.parse_args()
    index = json.loads((args.fixtures / "index.json").read_text())
    print("| configuration | ExecuTorch vs eager fp32, max abs | largest logit |")
    print("|---|---|---|")
    for seed, name in enumerate(gen_llm_fixtures.CONFIGS):
        if name not in index:
            continue
        model = eager_model(index[name], seed)
        worst = largest = 0.0
        with torch.no_grad():
            for step in sorted((args.fixtures / name).glob("step_*")):
                tokens = torch.from_numpy(np.load(step / "in_0.npy"))
                position = torch.from_numpy(np.load(step / "in_1.npy"))
                logits = model(tokens, {"input_pos": position})
                if isinstance(logits, tuple):
                    logits = logits[0]
                expected = np.load(step / "out_0.npy").astype(np.float64)
                got = logits.double().numpy().reshape(expected.shape)
                worst = max(worst, float(np.abs(got - expected).max()))
                largest = max(largest, float(np.abs(expected).max()))
        print(f"| {name} | {worst:.3g} | {largest:.3g} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
