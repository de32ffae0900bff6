#!/usr/bin/env bash
# Regenerates the committed Rust bindings in schema/src/generated/ from the
# .fbs files in schema/fbs/, with flatc 24.3.25 (the version the flatbuffers
# crate is pinned to). The output is deterministic: running this twice gives
# the same bytes, and `cargo test -p ptec-schema` fails when the committed
# files differ from what this script writes.
#
#   usage: schema/regenerate.sh [OUT_DIR]     (default: schema/src/generated)
#   flatc: $FLATC, else `flatc` on PATH; scripts/fetch_flatc.sh gets one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/src/generated}
flatc=${FLATC:-flatc}
want="flatc version 24.3.25"
have=$("$flatc" --version 2>/dev/null || true)
if [ "$have" != "$want" ]; then
  echo "regenerate.sh: need $want, '$flatc' says '${have:-nothing}' (set FLATC, or run scripts/fetch_flatc.sh)" >&2
  exit 1
fi
mkdir -p "$out"
rm -f "$out"/*.rs
for fbs in program bundled_program xnnpack vulkan flat_tensor; do
  (cd "$here/fbs" && "$flatc" --rust --gen-all -o "$out" "$fbs.fbs")
done
# A stamp of inputs and outputs, so that a test can tell, even without flatc,
# when a .fbs file or a generated file was edited without regenerating.
(cd "$here" && sha256sum fbs/*.fbs) > "$out/STAMP.sha256"
(cd "$out" && sha256sum ./*_generated.rs | sed 's#  \./#  src/generated/#') >> "$out/STAMP.sha256"
