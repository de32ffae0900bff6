"""Generate the random operators' fixture: one portable bundled program that
draws with ``rand``, ``randn`` and ``native_dropout`` (in training and not).

Its expected outputs are PyTorch's own draws, which no other generator
reproduces, so ``tests/random.rs`` does not compare them: it runs the program
with ``ptec run`` and checks the shapes, ranges and statistics of what ptec
draws.

Usage (with the anchor environment from ../shared/anchor/setup.sh):
    $ANCHOR_PY scripts/gen_random_fixtures.py [OUT_DIR]   # default: tests/fixtures/random
"""

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_op_fixtures import REPO_ROOT, OpFixture, export_bundled, fn, out_dir_argument  # noqa: E402

COUNT = 1024


def draws(x, h):
    return (
        torch.rand(COUNT),
        torch.rand(8, COUNT // 8, dtype=torch.float64),
        torch.rand(COUNT, dtype=torch.float16),
        torch.randn(COUNT),
        torch.randn(COUNT, dtype=torch.bfloat16).float(),
        *torch.ops.aten.native_dropout(x, 0.25, True),
        *torch.ops.aten.native_dropout(h, 0.5, None),
        *torch.ops.aten.native_dropout(x, 0.25, False),
    )


SPEC = OpFixture(
    "random",
    "rand/randn/native_dropout",
    f"rand [{COUNT}] f32, [8,{COUNT // 8}] f64 and [{COUNT}] f16; randn [{COUNT}] f32 and bf16 (widened to f32); "
    f"native_dropout of ones [{COUNT}] f32 (p 0.25, train), of ones f16 (p 0.5, train None), "
    f"and in eval",
    fn(draws),
    lambda: [(torch.ones(COUNT), torch.ones(COUNT, dtype=torch.float16))],
)


def main() -> int:
    out_dir = out_dir_argument(__doc__, REPO_ROOT / "tests" / "fixtures" / "random")
    data, _, outputs, operators = export_bundled(SPEC, seed_scope="random")
    (out_dir / "random.portable.bpte").write_bytes(data)
    print(f"wrote random.portable.bpte ({len(data)} bytes): {operators}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
