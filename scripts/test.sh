#!/usr/bin/env bash
# The README's test command: installs what is missing, builds from scratch if needed,
# and runs every test through ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD_DIR:-$root/build}

bash "$root/scripts/setup.sh" --test
bash "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
