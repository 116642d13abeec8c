#!/usr/bin/env bash
# The README's main job: installs what is missing, builds Kiln, and compiles the
# bundled model A.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD_DIR:-$root/build}
out=${KILN_OUT_DIR:-$root/out}

bash "$root/scripts/build.sh"
model="$root/test/data/tiny-llama-A/tiny-llama-A-f32.gguf"
"$build/bin/kiln-compile" "$model" -o "$out" --emit=mlir
echo "wrote $out/tiny_llama_A.mlir"
