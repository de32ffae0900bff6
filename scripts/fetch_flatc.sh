#!/usr/bin/env bash
# Puts flatc 24.3.25 (the compiler the schema bindings are generated with) at
# DIR/flatc and prints its path. The public ExecuTorch 1.5.1 wheel ships this
# exact flatc; only the wheel is downloaded (no dependencies, no install).
#   usage: scripts/fetch_flatc.sh [DIR]      (default: ~/.cache/ptec-flatc)
set -euo pipefail
dir=${1:-$HOME/.cache/ptec-flatc}
if [ -x "$dir/flatc" ] && [ "$("$dir/flatc" --version)" = "flatc version 24.3.25" ]; then
  echo "$dir/flatc"; exit 0
fi
mkdir -p "$dir/wheel"
python3 -m pip download -q --no-deps --only-binary=:all: -d "$dir/wheel" executorch==1.5.1 >&2
python3 - "$dir" <<'PY'
import glob, os, sys, zipfile
out = sys.argv[1]
wheel = glob.glob(os.path.join(out, "wheel", "executorch-1.5.1-*.whl"))[0]
with zipfile.ZipFile(wheel) as archive:
    data = archive.read("executorch/data/bin/flatc")
path = os.path.join(out, "flatc")
with open(path, "wb") as f:
    f.write(data)
os.chmod(path, 0o755)
PY
rm -rf "$dir/wheel"
echo "$dir/flatc"
