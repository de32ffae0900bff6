"""The time of a user's typical test: load mobilenet_v2's program and run
one inference, in a fresh process, with ``executorch.runtime`` (the
portable and the XNNPACK program) and with ``ptec.runtime`` (the portable
program, jit and aot).

Each measurement is a child process that imports the runtime, loads the
program's ``.pte`` bytes (taken from the corpus's ``.bpte`` by
``ptec.bundled``), loads ``forward`` and runs it once on the bundle's first
input; the child times that (import excluded, then included) and checks the
output against the bundle's expected one. Rounds interleave the variants;
medians are printed.

    python benchmarks/typical_test.py [--rounds N] [--corpus DIR]

Needs an environment with torch, executorch and ptec (the anchor
environment with ptec installed, or one that adds the anchor's packages).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, sys, time
start = time.perf_counter()
runtime_name, pte, bpte, switches = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
import numpy as np
import torch
if runtime_name == "executorch":
    from executorch.runtime import Runtime
else:
    from ptec.runtime import Runtime
imported = time.perf_counter()
program = Runtime.get().load_program(pte, **switches)
method = program.load_method("forward")
loaded = time.perf_counter()
import ptec.bundled
case = ptec.bundled.read(bpte).suites[0].cases[0]
inputs = [torch.as_tensor(np.asarray(v)) for v in case.inputs]
begin = time.perf_counter()
[output] = method.execute(inputs)
ran = time.perf_counter()
error = float((output.float() - torch.as_tensor(np.asarray(case.expected_outputs[0]))).abs().max())
print(json.dumps({
    "import_s": imported - start,
    "load_s": loaded - imported,
    "run_s": ran - begin,
    "test_s": (loaded - imported) + (ran - begin),
    "max_abs_err": error,
}))
"""

VARIANTS = [
    ("executorch portable", "executorch", "mobilenet_v2.portable", {}),
    ("executorch xnnpack", "executorch", "mobilenet_v2.xnnpack", {}),
    ("ptec jit (portable)", "ptec", "mobilenet_v2.portable", {"backend": "jit"}),
    ("ptec aot (portable)", "ptec", "mobilenet_v2.portable", {"backend": "aot"}),
    ("ptec jit (xnnpack)", "ptec", "mobilenet_v2.xnnpack", {"backend": "jit"}),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    default_corpus = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
    parser.add_argument("--corpus", type=Path, default=default_corpus)
    args = parser.parse_args()
    import ptec.bundled

    with tempfile.TemporaryDirectory() as scratch:
        files = {}
        for _, _, stem, _ in VARIANTS:
            bpte = args.corpus / f"{stem}.bpte"
            pte = Path(scratch) / f"{stem}.pte"
            pte.write_bytes(ptec.bundled.read(bpte).program)
            files[stem] = (pte, bpte)
        results = {label: [] for label, *_ in VARIANTS}
        for _ in range(args.rounds):
            for label, runtime_name, stem, switches in VARIANTS:
                pte, bpte = files[stem]
                child = subprocess.run(
                    [sys.executable, "-c", CHILD, runtime_name, str(pte), str(bpte), json.dumps(switches)],
                    capture_output=True, text=True, check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"},
                )
                results[label].append(json.loads(child.stdout.strip().splitlines()[-1]))
    print(f"{'runtime':24} {'load+run s':>10} {'load s':>8} {'run s':>8} {'import s':>9} {'max err':>9}")
    for label, runs in results.items():
        median = {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        print(f"{label:24} {median['test_s']:10.3f} {median['load_s']:8.3f} {median['run_s']:8.3f} "
              f"{median['import_s']:9.3f} {max(r['max_abs_err'] for r in runs):9.2e}")


if __name__ == "__main__":
    main()
