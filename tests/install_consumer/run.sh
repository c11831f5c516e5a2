#!/usr/bin/env bash
# Installs the build tree into a temporary prefix, then configures, builds and
# runs a consumer project that uses find_package(tandem).
set -euo pipefail
build=$1; src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src" -B "$work/b" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/b" >/dev/null
"$work/b/consumer"
