#!/usr/bin/env bash
# Long fuzzing campaigns, outside the test suite (whose fuzz tier runs each
# fuzzer for seconds): each fuzzer of the build for --runs executions (default
# 10 million) or --seconds, over its corpus in test/fuzz/corpus/<fuzzer>, which
# the run extends with the inputs that reach new code (commit them), plus the
# seeds the tests generate. A finding stops that fuzzer with its crash input
# in the work folder; add it to the corpus as a regression input once fixed.
#
#   bash bench/fuzz.sh [--build build] [--runs N | --seconds S] [--jobs J] [fuzzer...]
#
# Fuzzers: gguf-reader, pack-reader, tokenizer, text (chat templates and
# pre-tokenizers). Prints each one's executions and the corpus size.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build runs=10000000 seconds=0 jobs=1 fuzzers=()
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; runs=-1; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) fuzzers+=("$1"); shift ;;
  esac
done
[ ${#fuzzers[@]} -gt 0 ] || fuzzers=(gguf-reader pack-reader tokenizer text)
build=$(cd "$build" && pwd)
work=${KILN_FUZZ_WORK:-/tmp/kiln-fuzz}
fuzz_dir=$root/test/fuzz

seeds() { # the same seeds as the fuzz tests (test/fuzz/run_fuzzer.sh)
  local name=$1 dir=$2
  case $name in
    gguf-reader)
      python3 "$root/test/tools/gguf_tool.py" model "$dir/small.gguf" --n-embd 32 --n-layer 1 \
        --n-head 2 --n-head-kv 1 --n-ff 32 --vocab 12 --ctx 8 > /dev/null
      for c in $(python3 "$root/test/tools/gguf_tool.py" bad --list | awk '{print $1}'); do
        python3 "$root/test/tools/gguf_tool.py" bad "$dir/$c.gguf" --case "$c" \
          --from "$dir/small.gguf" > /dev/null
      done ;;
    pack-reader) python3 "$fuzz_dir/make_pack_seeds.py" "$dir" ;;
    tokenizer) python3 "$fuzz_dir/make_vocab_seeds.py" "$dir" "$build/bin/vocab-segment-tool" ;;
    text) python3 "$fuzz_dir/make_text_seeds.py" "$dir" ;;
  esac
}

campaign() {
  local name=$1 exe=$build/bin/$1-fuzzer
  local corpus=$fuzz_dir/corpus/$name dir=$work/$name
  [ -x "$exe" ] || { echo "$name: no $exe (a clang build makes the fuzzers)"; return 1; }
  rm -rf "$dir" && mkdir -p "$dir/seeds" "$corpus"
  seeds "$name" "$dir/seeds"
  (cd "$dir" && "$exe" -runs="$runs" -max_total_time="$seconds" -max_len=16384 \
     -print_final_stats=1 "$corpus" "$dir/seeds" 2> "$dir/log") ||
    { if grep -q "run interrupted" "$dir/log"; then echo "$name: interrupted after" \
        "$(grep -o 'number_of_executed_units: [0-9]*' "$dir/log")"; else
        echo "$name: FINDING (see $dir)"; tail -30 "$dir/log"; fi; return 1; }
  echo "$name: $(grep -o 'number_of_executed_units: [0-9]*' "$dir/log") in" \
    "$(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$dir/log" | grep -o '[0-9]* second(s)'), corpus" \
    "$(ls "$corpus" | wc -l) inputs"
}

status=0
running=0
for f in "${fuzzers[@]}"; do
  campaign "$f" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || status=1
    running=$((running - 1))
  fi
done
wait || status=1
exit $status
