#!/usr/bin/env bash
# Usage: run_fuzzer.sh FUZZER SEEDER WORKDIR SECONDS [PYTHON [SEEDER_ARG...]]
# Builds a seed corpus of small valid and malformed inputs, then fuzzes for
# SECONDS and prints how many inputs were executed. SEEDER is gguf_tool.py (GGUF
# models and its malformed cases) or any script run as
# `PYTHON SEEDER SEEDDIR SEEDER_ARG...` that writes its seeds into SEEDDIR.
set -euo pipefail
fuzzer=$1 seeder=$2 workdir=$3 seconds=$4 python=${5:-python3}
shift $(($# < 5 ? $# : 5))

gguf_seeds() {
  local gguf_tool=$1 seeds=$2
  "$python" "$gguf_tool" model "$seeds/small.gguf" --n-embd 32 --n-layer 1 \
    --n-head 2 --n-head-kv 1 --n-ff 32 --vocab 12 --ctx 8
  "$python" "$gguf_tool" model "$seeds/small-v2-q8.gguf" --n-embd 32 --n-layer 1 \
    --n-head 2 --n-ff 32 --vocab 12 --ctx 8 --type q8_0 --version 2
  for c in $("$python" "$gguf_tool" bad --list | awk '{print $1}'); do
    "$python" "$gguf_tool" bad "$seeds/$c.gguf" --case "$c" --from "$seeds/small.gguf"
  done
}

rm -rf "$workdir" && mkdir -p "$workdir/seeds" "$workdir/corpus"
case "$(basename "$seeder")" in
  gguf_tool.py) gguf_seeds "$seeder" "$workdir/seeds" ;;
  *) "$python" "$seeder" "$workdir/seeds" "$@" ;;
esac

"$fuzzer" -max_total_time="$seconds" -max_len=16384 -print_final_stats=1 \
  "$workdir/corpus" "$workdir/seeds" 2> "$workdir/log" || { tail -40 "$workdir/log"; exit 1; }
grep -E "stat::number_of_executed_units|Done" "$workdir/log"
