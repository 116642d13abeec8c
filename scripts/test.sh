#!/usr/bin/env bash
# The README's test command: installs what is missing, builds from scratch if needed,
# and runs every test through ctest, one test per core.
#   scripts/test.sh               every test
#   scripts/test.sh --quick       the inner loop: lit, unit, the host's kernels, a few e2e
#   scripts/test.sh --tier=NAME   one tier: lit, unit, kernels, e2e, cross, sanitize, fuzz
# Other arguments go to ctest (e.g. -R e2e-shift).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD_DIR:-$root/build}

select=()
args=()
for a in "$@"; do
  case "$a" in
    --quick) select=(-L '^quick$') ;;
    --tier=*) select=(-L "^${a#--tier=}\$") ;;
    *) args+=("$a") ;;
  esac
done

bash "$root/scripts/setup.sh" --test
bash "$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "${select[@]}" "${args[@]}"
