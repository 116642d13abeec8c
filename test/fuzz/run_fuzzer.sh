#!/usr/bin/env bash
# Builds a seed corpus of small valid and malformed GGUF files, then fuzzes for
# SECONDS and prints how many inputs were executed.
set -euo pipefail
fuzzer=$1 gguf_tool=$2 workdir=$3 seconds=$4 python=${5:-python3}

rm -rf "$workdir" && mkdir -p "$workdir/seeds" "$workdir/corpus"
"$python" "$gguf_tool" model "$workdir/seeds/small.gguf" --n-embd 32 --n-layer 1 \
  --n-head 2 --n-head-kv 1 --n-ff 32 --vocab 12 --ctx 8
"$python" "$gguf_tool" model "$workdir/seeds/small-v2-q8.gguf" --n-embd 32 --n-layer 1 \
  --n-head 2 --n-ff 32 --vocab 12 --ctx 8 --type q8_0 --version 2
for c in $("$python" "$gguf_tool" bad --list | awk '{print $1}'); do
  "$python" "$gguf_tool" bad "$workdir/seeds/$c.gguf" --case "$c" \
    --from "$workdir/seeds/small.gguf"
done

"$fuzzer" -max_total_time="$seconds" -max_len=16384 -print_final_stats=1 \
  "$workdir/corpus" "$workdir/seeds" 2> "$workdir/log" || { tail -40 "$workdir/log"; exit 1; }
grep -E "stat::number_of_executed_units|Done" "$workdir/log"
