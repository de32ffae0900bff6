#!/usr/bin/env bash
# Times ptec's Vulkan programs against its CPU JIT on a machine without a
# Rust toolchain: DIR holds a prebuilt `ptec` binary and the corpus's
# .bpte files. Each model's bundled test case is checked on the Vulkan
# device first (a wrong answer fast is no result), then both back ends are
# timed on the same file in the same run, and a table of medians (ms per
# inference) is printed.
#   usage: scripts/vulkan_gpu_bench.sh DIR [MODEL...]
#          (default models: mobilenet_v2 encoder llama_block)
# Environment: ITERS (default 50) and WARMUP (default 5) per measurement;
# PTEC_VULKAN_DEVICE picks a device by index or name as ptec does;
# VK_ICD_FILENAMES, if set, names the driver's ICD (e.g. NVIDIA's
# nvidia_icd.json), as for any Vulkan program.
set -euo pipefail
if [ $# -lt 1 ]; then
  echo "usage: $0 DIR [MODEL...]" >&2
  exit 2
fi
dir=$1
shift
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(mobilenet_v2 encoder llama_block)
ptec=$dir/ptec
iters=${ITERS:-50}
warmup=${WARMUP:-5}
if [ ! -x "$ptec" ]; then
  echo "error: no executable ptec in $dir" >&2
  exit 2
fi

# The median of one `ptec bench --json` object, whose fields are plain
# numbers and strings.
median() {
  sed -n 's/.*"median_ms":\([0-9.eE+-]*\).*/\1/p'
}

echo "host: $(uname -n), CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores"
if command -v nvidia-smi > /dev/null; then
  echo "GPU: $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
echo "iterations: $iters (after $warmup warm-up runs)"
echo

failed=0
rows=()
for model in "${models[@]}"; do
  file=$dir/$model.vulkan.bpte
  [ -f "$file" ] || file=$dir/$model.portable.bpte
  if [ ! -f "$file" ]; then
    echo "error: neither $model.vulkan.bpte nor $model.portable.bpte in $dir" >&2
    failed=1
    continue
  fi
  if ! check=$("$ptec" test --backend vulkan "$file" 2>&1); then
    echo "error: $model's test case fails on the Vulkan device:" >&2
    echo "$check" >&2
    failed=1
    continue
  fi
  vulkan=$("$ptec" bench --json --backend vulkan --iters "$iters" --warmup "$warmup" "$file" | median)
  cpu=$("$ptec" bench --json --backend jit --iters "$iters" --warmup "$warmup" "$file" | median)
  ratio=$(awk -v v="$vulkan" -v c="$cpu" 'BEGIN { printf "%.2f", v / c }')
  rows+=("$(printf '%-14s %14.3f %14.3f %10s' "$model" "$vulkan" "$cpu" "$ratio")")
done

printf '%-14s %14s %14s %10s\n' model "vulkan ms" "cpu jit ms" "vulkan/cpu"
for row in ${rows[@]+"${rows[@]}"}; do
  echo "$row"
done
exit $failed
