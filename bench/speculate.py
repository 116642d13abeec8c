#!/usr/bin/env python3
"""Speculative decoding (kiln-generate --draft-lookup and --draft-model) against
plain greedy decode, model A on this machine (--target=host), in the same run.

  python3 bench/speculate.py [--build build] [--work /tmp/kiln-spec-bench] [--repeat 5]

For each target, draft kind, prompt and draft length D: the acceptance rate a
(accepted / drafted), the tokens per target pass, decode tokens/s (median of
--repeat runs) and the speedup over plain greedy. The standard formula allows
(1 - a^(D+1)) / (1 - a) tokens per pass at a cost of c*D + 1 target decodes
(c: a draft token's cost over a target decode's, 0 for lookup, measured for a
draft model; not measured for the self-speculative draft, which has no program
of its own); `efficiency` is the measured speedup over that allowance."""
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


def allowed(a, d, c):
    per_pass = d + 1 if a >= 1.0 else (1 - a ** (d + 1)) / (1 - a)
    return per_pass / (c * d + 1)


def build(args, name, *flags):
    out = os.path.join(args.work, name)
    run([os.path.join(args.build, "bin", "kiln-compile"), MODEL, "-o", out, "--target=host", *flags])
    run(["cmake", "-S", out, "-B", os.path.join(out, "build"), "-DCMAKE_BUILD_TYPE=Release"])
    run(["cmake", "--build", os.path.join(out, "build"), "-j2"])
    return [os.path.join(out, "build", "kiln-generate"), "--pack",
            os.path.join(out, "tiny_llama_A.kpack")]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/kiln-spec-bench")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("-n", type=int, default=128)
    args = ap.parse_args()
    print("| target | draft | prompt | D | accepted | tokens/pass | decode tok/s | speedup | "
          "allowed | efficiency |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    q4 = build(args, "q4_0", "--quant=q4_0")
    self_gen = build(args, "self", "--draft-layers=2")
    for fmt in ("f32", "f16"):
        gen = build(args, fmt + "-draft", *([f"--quant={fmt}"] if fmt != "f32" else []),
                    f"--draft={MODEL}", "--draft-quant=q4_0")
        for name, prompt in PROMPTS.items():
            plain, _ = decode_rate(gen, prompt, args.n, [], args.repeat)
            draft_rate, _ = decode_rate(q4, prompt, args.n, [], args.repeat)
            print(f"| {fmt} | none | {name} | | | 1.00 | {plain:.0f} | 1.00x | | |")
            runs = [("lookup", gen, "lookup", 0.0),
                    (f"q4_0 model (c {plain / draft_rate:.2f})", gen, "model", plain / draft_rate)]
            if fmt == "f32":
                runs.append(("first 2 of 6 layers", self_gen, "model", None))
            for label, g, kind, c in runs:
                for d in (2, 4):
                    rate, (acc, per_pass) = decode_rate(g, prompt, args.n,
                                                        [f"--draft-{kind}", str(d)], args.repeat)
                    allow = allowed(acc / 100, d, c) if c is not None else None
                    print(f"| {fmt} | {label} | {name} | {d} | {acc:.0f}% | {per_pass:.2f} | "
                          f"{rate:.0f} | {rate / plain:.2f}x | "
                          f"{f'{allow:.2f}x' if allow else ''} | "
                          f"{f'{rate / plain / allow:.2f}' if allow else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
