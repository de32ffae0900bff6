"""Times ptec and ExecuTorch side by side, in one run, on one core or on all.

For each model, runs `ptec bench` on its portable program (or another
variant: --ptec-variant) and ExecuTorch's runtime (../shared/anchor/et_run.py)
on the XNNPACK-delegated program of the same model (or --et-variant), each pinned to CPU 0 (ptec with
--threads 1), in alternating rounds so that machine noise hits both alike, and prints the CPU model
and a table of medians and ratios.

With --threads N [N ...] both run unpinned on every core: ExecuTorch's XNNPACK thread pool sizes
itself to the cores, and ptec is timed once per thread count in each round (its ratio to
ExecuTorch is the last count's, and the speedup column is the first count's time over the last's).
--all-cores alone runs both unpinned with ptec's default thread count (the physical cores). ExecuTorch's
portable kernels are timed afterwards, apart: their runs take seconds, and on
a VM that slows down under sustained load they would penalise whichever
measurement follows them.

With --baseline OTHER_PTEC, another ptec binary (a build of an earlier
commit) is timed in the same rounds too, for before/after comparisons of a
change in one run.

Usage (with the anchor environment of ../shared/anchor/setup.sh):
  $ANCHOR_PY scripts/compare_speed.py [--ptec target/release/ptec] [--rounds 3]
      [--corpus ../shared/corpus] [--skip-et-portable] [--baseline OTHER_PTEC] [--all-cores]
      [--ptec-variant portable] [--et-variant xnnpack] [--threads 1 2] MODEL...
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ET_RUN = os.path.join(HERE, "..", "..", "shared", "anchor", "et_run.py")


# CPU 0 only, unless --all-cores or --threads lets both runtimes use every core
# (ExecuTorch's XNNPACK thread pool sizes itself to the cores it may use;
# ptec to its --threads, by default the physical cores it may use).
PIN = ["taskset", "-c", "0"]


def pinned(command):
    return PIN + command


def ptec_median(ptec, path, iters, threads=None):
    command = [ptec, "bench", path, "--iters", str(iters), "--json"]
    if threads is not None:
        command += ["--threads", str(threads)]
    out = subprocess.run(pinned(command), check=True, capture_output=True, text=True).stdout
    return json.loads(out)["median_ms"]


def cpu_model():
    try:
        out = subprocess.run(["lscpu"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown (lscpu failed)"
    fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
    model = fields.get("Model name", "unknown").strip()
    return f"{model}, {fields.get('CPU(s)', '?').strip()} CPUs, flags avx2={'avx2' in out} avx512f={'avx512f' in out}"


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
                        help="another ptec binary to time in the same rounds (before/after a change), "
                             "run as it runs by default")
    parser.add_argument("--threads", type=int, nargs="+",
                        help="run both unpinned on every core, ptec once per thread count")
    parser.add_argument("models", nargs="+")
    args = parser.parse_args()
    if args.all_cores or args.threads:
        PIN.clear()
    # Pinned, ptec runs on one thread; unpinned, on each --threads count (or its default).
    counts = args.threads or ([None] if args.all_cores else [1])

    print(f"CPU: {cpu_model()}; {'pinned to CPU 0' if PIN else 'unpinned, all cores'}")
    baseline_columns = " baseline ptec ms | ratio ptec/baseline |" if args.baseline else ""
    ptec_columns = "".join(
        f" ptec JIT ({args.ptec_variant}, {'default' if n is None else n} threads) ms |" for n in counts)
    speedup_column = f" speedup {counts[0]} -> {counts[-1]} threads |" if len(counts) > 1 else ""
    print(f"| model |{ptec_columns} ExecuTorch ({args.et_variant}) ms | ratio ptec/ET |{speedup_column}{baseline_columns} ExecuTorch portable ms |")
    print("|---|" + "---|" * len(counts) + "---|---|" + ("---|" if len(counts) > 1 else "")
          + ("---|---|" if args.baseline else "") + "---|")
    for model in args.models:
        portable = os.path.join(args.corpus, f"{model}.portable.bpte")
        ptec_file = os.path.join(args.corpus, f"{model}.{args.ptec_variant}.bpte")
        xnnpack = os.path.join(args.corpus, f"{model}.{args.et_variant}.bpte")
        ptec_times = {n: [] for n in counts}
        et_times, baseline_times = [], []
        for _ in range(args.rounds):
            for n in counts:
                ptec_times[n].append(ptec_median(args.ptec, ptec_file, args.iters, n))
            et_times.append(et_median(xnnpack, args.iters))
            if args.baseline:
                baseline_times.append(ptec_median(args.baseline, ptec_file, args.iters))
        medians = [statistics.median(ptec_times[n]) for n in counts]
        ptec_ms, et_ms = medians[-1], statistics.median(et_times)
        baseline = ""
        if args.baseline:
            baseline_ms = statistics.median(baseline_times)
            baseline = f" {baseline_ms:.3f} | {ptec_ms / baseline_ms:.2f} |"
        portable_ms = "not run" if args.skip_et_portable else f"{et_median(portable, max(1, args.iters // 4)):.3f}"
        ptec_cells = "".join(f" {ms:.3f} |" for ms in medians)
        speedup = f" {medians[0] / medians[-1]:.2f}x |" if len(counts) > 1 else ""
        print(f"| {model} |{ptec_cells} {et_ms:.3f} | {ptec_ms / et_ms:.2f} |{speedup}{baseline} {portable_ms} |", flush=True)


if __name__ == "__main__":
    main()
