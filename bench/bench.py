#!/usr/bin/env python3
"""Speed and memory of model A as Kiln compiles it, one format per row, all
measured in the same run (compare ratios, not absolute times across runs).

  python3 bench/bench.py [--build build] [--work /tmp/kiln-bench] [--cflags "-O3 -march=native"]

For each configuration: kiln-compile, build the generated folder, then
kiln-generate for prefill and decode tokens/s (median of --repeat runs), the
arena (exact, from the header) against plan-memory's lower bound, pack bytes
and peak RSS."""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")
PROMPT = ("It is a truth universally acknowledged, that a single man in possession of a "
          "good fortune, must be in want of a wife. However little known the feelings or "
          "views of such a man may be on his first entering a neighbourhood, this truth is "
          "so well fixed in the minds of the surrounding families")

FORMATS = [
    ("f32", []),
    ("f16", ["--quant=f16"]),
    ("q8_0", ["--quant=q8_0"]),
    ("q4_0", ["--quant=q4_0"]),
    ("i4g64", ["--quant=i4g64"]),
    ("q8_0 + kv q8", ["--quant=q8_0", "--kv-type=q8"]),
]
TARGETS = ["c99", "x86-avx2"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/kiln-bench")
    ap.add_argument("--cflags", default="-O3")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    compiler = os.path.join(args.build, "bin", "kiln-compile")
    rows = []
    configs = [(f"{target} {label}", [f"--target={target}", *flags])
               for target in TARGETS for label, flags in FORMATS]
    for label, flags in configs:
        out = os.path.join(args.work, re.sub(r"\W+", "-", label))
        mlir = sh([compiler, MODEL, "--emit=kernel-ir", *flags]).stdout
        bound = max(int(x) for x in re.findall(r"kiln.activation_lower_bound = (\d+)", mlir))
        kv = int(re.search(r"kiln.kv_bytes = (\d+)", mlir).group(1))
        sh([compiler, MODEL, "-o", out, *flags])
        sh(["cmake", "-S", out, "-B", os.path.join(out, "build"), "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_FLAGS={args.cflags}"])
        sh(["cmake", "--build", os.path.join(out, "build"), "-j2"])
        gen = [os.path.join(out, "build", "kiln-generate"), "--pack",
               os.path.join(out, "tiny_llama_A.kpack"), "-p", PROMPT, "-n", "96", "--ignore-eos"]
        prefill, decode, rss = [], [], 0
        for _ in range(args.repeat):
            err = sh(gen).stderr
            prefill.append(float(re.search(r"prefill: \d+ tokens, ([\d.]+)", err).group(1)))
            decode.append(float(re.search(r"decode: ([\d.]+)", err).group(1)))
            rss = int(re.search(r"peak RSS: (\d+)", err).group(1))
            arena = int(re.search(r"arena: (\d+)", err).group(1))
            pack = int(re.search(r"pack: (\d+)", err).group(1))
        rows.append((label, pack, arena, kv, arena - kv, bound, statistics.median(prefill),
                     statistics.median(decode), rss))
    base = rows[0]
    print(f"model A, C flags {args.cflags!r}, median of {args.repeat} runs; "
          f"decode ratios against c99 f32")
    print(f"{'config':23} {'pack B':>10} {'arena B':>9} {'KV B':>9} {'act B':>8} {'act LB':>8} "
          f"{'prefill t/s':>12} {'decode t/s':>11} {'decode x':>9} {'RSS KiB':>8}")
    for label, pack, arena, kv, act, bound, pf, dec, rss in rows:
        print(f"{label:23} {pack:>10} {arena:>9} {kv:>9} {act:>8} {bound:>8} {pf:>12.0f} "
              f"{dec:>11.0f} {dec / base[7]:>9.2f} {rss:>8}")


if __name__ == "__main__":
    sys.exit(main())
