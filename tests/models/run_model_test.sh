#!/usr/bin/env bash
# One whole-model reference test: export MODEL at OPSET with PyTorch (if not
# cached), run it through `tandem run`, compare with PyTorch's output.
#   tests/models/run_model_test.sh [--export-only] TANDEM_BIN CACHE_DIR MODEL OPSET
# e.g. tests/models/run_model_test.sh build/cli/tandem build/cache/models resnet50 13
# --export-only stops after the export (CTest's model.*.export fixtures).
# The export step holds CACHE_DIR/.export.lock (flock), so concurrent tests
# never write the same folder and never run two torch exports at once.
# Environment: TANDEM_REF_PYTHON (default /usr/bin/python3, Debian's python
# with torch/torchvision/onnx), TANDEM_MODEL_THREADS (tandem --threads).
set -euo pipefail
export_only=0
if [ "${1:-}" = --export-only ]; then
  export_only=1
  shift
fi
if [ $# -ne 4 ]; then
  echo "usage: $0 [--export-only] TANDEM_BIN CACHE_DIR MODEL OPSET" >&2
  exit 2
fi
tandem=$1 cache=$2 model=$3 opset=$4
here=$(cd "$(dirname "$0")" && pwd)
py=${TANDEM_REF_PYTHON:-/usr/bin/python3}
ref_dir="$cache/$model.op$opset"
out_dir="$ref_dir/tandem_out"

mkdir -p "$cache"
t0=$(date +%s.%N)
flock "$cache/.export.lock" \
  "$py" "$here/export_torchvision.py" --out "$cache" --opset "$opset" "$model"
t1=$(date +%s.%N)
if [ $export_only = 1 ]; then
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "timing: export %.1f s\n", b - a }'
  exit 0
fi

if [ ! -x "$tandem" ]; then
  echo "FAIL $model.op$opset: tandem binary '$tandem' not found or not executable" >&2
  exit 1
fi
rm -rf "$out_dir"
mkdir -p "$out_dir"
threads=()
[ -n "${TANDEM_MODEL_THREADS:-}" ] && threads=(--threads "$TANDEM_MODEL_THREADS")
run_status=0
"$tandem" run "$ref_dir/model.onnx" --input "input=$ref_dir/input.npy" \
  --save-outputs "$out_dir" "${threads[@]}" || run_status=$?
if [ $run_status -ne 0 ]; then
  echo "FAIL $model.op$opset: tandem run exited $run_status" >&2
  exit 1
fi
t2=$(date +%s.%N)

status=0
"$py" "$here/compare.py" "$ref_dir" "$out_dir" --label "$model.op$opset" || status=$?
awk -v a="$t0" -v b="$t1" -v c="$t2" \
  'BEGIN { printf "timing: export %.1f s, tandem run %.1f s\n", b - a, c - b }'
exit $status
