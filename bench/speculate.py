#!/usr/bin/env python3
"""Speculative decoding with prompt-lookup drafts (kiln-generate --draft-lookup)
against plain greedy decode, model A on this machine, in the same run.

  python3 bench/speculate.py [--build build] [--work /tmp/kiln-spec-bench] [--repeat 5]

For each format, prompt and draft length: the acceptance rate, the tokens per
target pass, decode tokens/s (median of --repeat runs) and the speedup over plain
greedy. A lookup draft costs nothing, so the expected-tokens-per-pass formula
allows a speedup of tokens-per-pass x (decode time / pass time); the last column
is the measured speedup over the tokens per pass, the efficiency if a pass cost
one decode."""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")
PROMPTS = {
    "prose": "It is a truth universally acknowledged, that a single man in possession of a "
             "good fortune, must be in want of a",
    "repeats": "The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog",
}


def run(cmd):
    return subprocess.run(cmd, check=True, text=True, capture_output=True)


def decode_rate(gen, prompt, n, extra, repeat):
    rates, accept = [], None
    for _ in range(repeat):
        r = run(gen + ["-p", prompt, "-n", str(n), "--ignore-eos", *extra])
        rates.append(float(re.search(r"decode: ([0-9.]+) tokens/s", r.stderr).group(1)))
        m = re.search(r"accepted \(([0-9.]+)%\), ([0-9.]+) tokens per pass", r.stderr)
        if m:
            accept = (float(m.group(1)), float(m.group(2)))
    return statistics.median(rates), accept


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/kiln-spec-bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-n", type=int, default=128)
    args = ap.parse_args()
    print("| format | prompt | draft | accepted | tokens/pass | decode tok/s | speedup | "
          "speedup / tokens-per-pass |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for fmt in ("f32", "q4_0"):
        out = os.path.join(args.work, fmt)
        run([os.path.join(args.build, "bin", "kiln-compile"), MODEL, "-o", out, "--target=host",
             *([f"--quant={fmt}"] if fmt != "f32" else [])])
        run(["cmake", "-S", out, "-B", os.path.join(out, "build"), "-DCMAKE_BUILD_TYPE=Release"])
        run(["cmake", "--build", os.path.join(out, "build"), "-j2"])
        gen = [os.path.join(out, "build", "kiln-generate"), "--pack",
               os.path.join(out, "tiny_llama_A.kpack")]
        for name, prompt in PROMPTS.items():
            plain, _ = decode_rate(gen, prompt, args.n, [], args.repeat)
            print(f"| {fmt} | {name} | none | | 1.00 | {plain:.0f} | 1.00x | |")
            for d in (2, 4, 8):
                rate, (acc, per_pass) = decode_rate(gen, prompt, args.n,
                                                    ["--draft-lookup", str(d)], args.repeat)
                print(f"| {fmt} | {name} | {d} | {acc:.0f}% | {per_pass:.2f} | {rate:.0f} | "
                      f"{rate / plain:.2f}x | {rate / plain / per_pass:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
