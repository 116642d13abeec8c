#!/usr/bin/env bash
# The README's main job: installs what is missing, builds Kiln, compiles the
# bundled model A to C for this host, builds the generated folder and generates
# text with it. Extra arguments go to kiln-generate (e.g. -p "Once upon" -n 64).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${KILN_BUILD_DIR:-$root/build}
out=${KILN_OUT_DIR:-$root/out/tiny-llama-A}

bash "$root/scripts/build.sh"

model="$root/test/data/tiny-llama-A/tiny-llama-A-f32.gguf"
# One share of each large kernel per core (at most the runtime pool's 64).
threads=$(nproc)
[ "$threads" -le 64 ] || threads=64
echo "== kiln-compile $model -o $out --target=host --threads=$threads"
start=$(date +%s%N)
"$build/bin/kiln-compile" "$model" -o "$out" --target=host --threads="$threads"
echo "compiled in $(( ($(date +%s%N) - start) / 1000000 )) ms:"
ls -l "$out" | grep -v '^total'

echo "== building the generated sources"
cmake -S "$out" -B "$out/build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$out/build" -j "$(nproc)" > /dev/null

echo "== kiln-generate"
cd "$out"
# Greedy with a repetition penalty: plain greedy falls into loops on a model
# this small ("and then, and then, ..."). Arguments replace these defaults.
if [ $# -eq 0 ]; then
  set -- -p "It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a" -n 48 --repeat-penalty 1.3
fi
./build/kiln-generate --pack tiny_llama_A.kpack -t "$threads" "$@"
