#!/usr/bin/env bash
# Builds bench/tile_ab.c against the kernels of git revision REV (old) and of
# the work tree (new), then runs it with the remaining arguments:
#   bash bench/tile_ab.sh REV q6_k [n=256] [k=2048] [rows=64] [mr=4] [passes=41] [new mr=mr]
# (REV = HEAD with a new mr: the tile heights of the same kernels against each other)
# KILN_TILE_AB_CALLGRIND=1 prints each build's instruction count instead
# (valgrind's callgrind: the same count whatever else the machine is doing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/old"
git -C "$root" archive "$rev" kernels runtime/include | tar -x -C "$work/old"
flags=(-O3 -march=native)
cc "${flags[@]}" -I"$work/old" -I"$work/old/runtime/include" -I"$root" -DKILN_TILE_AB_VARIANT=run_old \
  -c "$root/bench/tile_ab.c" -o "$work/old.o"
cc "${flags[@]}" -I"$root" -I"$root/runtime/include" -DKILN_TILE_AB_VARIANT=run_new \
  -c "$root/bench/tile_ab.c" -o "$work/new.o"
cc "${flags[@]}" -I"$root" -I"$root/runtime/include" "$root/bench/tile_ab.c" "$work/old.o" \
  "$work/new.o" -o "$work/tile_ab" -lm
if [ "${KILN_TILE_AB_CALLGRIND:-0}" = 1 ]; then
  for fn in run_old run_new; do
    valgrind --tool=callgrind --callgrind-out-file="$work/cg.$fn" --toggle-collect=$fn \
      "$work/tile_ab" "$@" > /dev/null 2>&1
    echo "$fn: $(callgrind_annotate "$work/cg.$fn" | grep -m1 'PROGRAM TOTALS' | awk '{print $1}') instructions"
  done
else
  "$work/tile_ab" "$@"
fi
