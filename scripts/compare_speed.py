"""Times ptec and ExecuTorch side by side, in one run, on one core.

For each model, runs `ptec bench` on its portable program (or another
variant: --ptec-variant) and ExecuTorch's runtime (../shared/anchor/et_run.py)
on the XNNPACK-delegated program of the same model (or --et-variant), each pinned to CPU 0 (or not: --all-cores), in alternating rounds so that machine noise
hits both alike, and prints a table of medians and ratios. ExecuTorch's
portable kernels are timed afterwards, apart: their runs take seconds, and on
a VM that slows down under sustained load they would penalise whichever
measurement follows them.

With --baseline OTHER_PTEC, another ptec binary (a build of an earlier
commit) is timed in the same rounds too, for before/after comparisons of a
change in one run.

Usage (with the anchor environment of ../shared/anchor/setup.sh):
  $ANCHOR_PY scripts/compare_speed.py [--ptec target/release/ptec] [--rounds 3]
      [--corpus ../shared/corpus] [--skip-et-portable] [--baseline OTHER_PTEC] [--all-cores]
      [--ptec-variant portable] [--et-variant xnnpack] MODEL...
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ET_RUN = os.path.join(HERE, "..", "..", "shared", "anchor", "et_run.py")


# CPU 0 only, unless --all-cores lets both runtimes use every core
# (ExecuTorch's XNNPACK thread pool sizes itself to the cores it may use;
# ptec runs a method on one thread either way).
PIN = ["taskset", "-c", "0"]


def pinned(command):
    return PIN + command


def ptec_median(ptec, path, iters):
    out = subprocess.run(pinned([ptec, "bench", path, "--iters", str(iters), "--json"]),
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def et_median(path, iters):
    out = subprocess.run(pinned([sys.executable, ET_RUN, "--iters", str(iters), path]),
                         check=True, capture_output=True, text=True).stdout
    result = json.loads(out.strip().splitlines()[-1])
    # ExecuTorch's own quantized runs miss the default tolerance (`ok` is
    # false there) but still ran; only a run without a time is a failure.
    if result.get("median_ms") is None:
        raise RuntimeError(f"ExecuTorch failed on {path}: {result}")
    return result["median_ms"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ptec", default=os.path.join(HERE, "..", "target", "release", "ptec"))
    parser.add_argument("--corpus", default=os.path.join(HERE, "..", "..", "shared", "corpus"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--all-cores", action="store_true",
                        help="do not pin the runs to CPU 0 (ExecuTorch's XNNPACK then uses every core)")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--skip-et-portable", action="store_true",
                        help="do not time ExecuTorch's portable kernels (slow on the large models)")
    parser.add_argument("--ptec-variant", default="portable",
                        help="the file ptec runs: MODEL.VARIANT.bpte (portable, xnnpack, xnnpack-q8)")
    parser.add_argument("--et-variant", default="xnnpack",
                        help="the file ExecuTorch runs: MODEL.VARIANT.bpte")
    parser.add_argument("--baseline",
                        help="another ptec binary to time in the same rounds (before/after a change)")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    if args.all_cores:
        PIN.clear()

    baseline_columns = " baseline ptec ms | ratio ptec/baseline |" if args.baseline else ""
    print(f"| model | ptec JIT ({args.ptec_variant}) ms | ExecuTorch ({args.et_variant}) ms | ratio ptec/ET |{baseline_columns} ExecuTorch portable ms |")
    print("|---|---|---|---|" + ("---|---|" if args.baseline else "") + "---|")
    for model in args.models:
        portable = os.path.join(args.corpus, f"{model}.portable.bpte")
        ptec_file = os.path.join(args.corpus, f"{model}.{args.ptec_variant}.bpte")
        xnnpack = os.path.join(args.corpus, f"{model}.{args.et_variant}.bpte")
        ptec_times, et_times, baseline_times = [], [], []
        for _ in range(args.rounds):
            ptec_times.append(ptec_median(args.ptec, ptec_file, args.iters))
            et_times.append(et_median(xnnpack, args.iters))
            if args.baseline:
                baseline_times.append(ptec_median(args.baseline, ptec_file, args.iters))
        ptec_ms, et_ms = statistics.median(ptec_times), statistics.median(et_times)
        baseline = ""
        if args.baseline:
            baseline_ms = statistics.median(baseline_times)
            baseline = f" {baseline_ms:.3f} | {ptec_ms / baseline_ms:.2f} |"
        portable_ms = "not run" if args.skip_et_portable else f"{et_median(portable, max(1, args.iters // 4)):.3f}"
        print(f"| {model} | {ptec_ms:.3f} | {et_ms:.3f} | {ptec_ms / et_ms:.2f} |{baseline} {portable_ms} |", flush=True)


if __name__ == "__main__":
    main()
