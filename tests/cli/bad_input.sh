#!/usr/bin/env bash
# Bad input at the command line: every case must end with a non-zero exit,
# exactly one "tandem: ..." line on stderr naming the file, and no crash
# (exit code >= 128 means a signal) or hang (timeout). classify must still
# classify the good images of the same call.
#   bad_input.sh TANDEM_BINARY MODEL.onnx
set -u
tandem=$1 model=$2
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fails=0
: > "$work/empty.onnx"
head -c 100000 "$model" > "$work/truncated.onnx"
head -c 4096 /dev/urandom > "$work/random.onnx"
echo "not a jpeg" > "$work/text.jpg"
: > "$work/empty.jpg"
head -c 3000 /usr/share/darknet/data/dog.jpg > "$work/truncated.jpg"

expect_error() {  # NAME EXPECTED_SUBSTRING COMMAND...
  local name=$1 want=$2; shift 2
  timeout 120 "$@" > "$work/out" 2> "$work/err"
  local rc=$?
  local lines; lines=$(grep -c '^tandem: ' "$work/err")
  if [ "$rc" -eq 0 ] || [ "$rc" -ge 124 ] || [ "$lines" -lt 1 ] || ! grep -q -- "$want" "$work/err"; then
    echo "FAIL $name: rc=$rc stderr:"; cat "$work/err"; fails=$((fails + 1))
  else
    echo "ok   $name: $(head -1 "$work/err")"
  fi
}

expect_error missing-model "nope.onnx" "$tandem" run "$work/nope.onnx"
expect_error empty-model "empty.onnx" "$tandem" run "$work/empty.onnx"
expect_error truncated-model "truncated.onnx" "$tandem" bench "$work/truncated.onnx"
expect_error random-model "random.onnx" "$tandem" run "$work/random.onnx"
expect_error missing-input-file "nope.npy" "$tandem" run "$model" --input "input=$work/nope.npy"
expect_error text-as-input "text.jpg" "$tandem" run "$model" --input "input=$work/text.jpg"
expect_error bad-images "truncated.jpg" "$tandem" classify /usr/share/darknet/data/dog.jpg \
  "$work/text.jpg" "$work/empty.jpg" "$work/truncated.jpg" "$work/missing.jpg" --model "$model" --json
# The good image in the same call was still classified, the bad ones reported.
if ! grep -q '"path":"/usr/share/darknet/data/dog.jpg","top"' "$work/out"; then
  echo "FAIL bad-images: dog.jpg was not classified"; fails=$((fails + 1))
fi
for f in text.jpg empty.jpg truncated.jpg missing.jpg; do
  grep -q "$f" "$work/err" || { echo "FAIL bad-images: no error line for $f"; fails=$((fails + 1)); }
done
echo "cli bad input: $fails failed"
[ "$fails" -eq 0 ]
