#!/usr/bin/env python3
"""Independent reimplementation of the Kiln sampler (kiln_sampler.h) for the
golden test. Standard library only.

  sampler_reference.py              print the expected golden sequences
  sampler_reference.py BINARY       run the sampler test BINARY with the
                                    sequences on its command line and compare
                                    them with the "golden" lines it prints

Float32 arithmetic is emulated by rounding every result to binary32: for
+, -, *, / of binary32 operands, rounding the exact double result is the same
as a binary32 operation. expf is exp() rounded to binary32, which a libm may
miss by one ulp in rare cases; the cases below leave wide margins.

Keep GOLDEN_CASES in step with golden_cases in sampler_test.c.
"""

import math
import os
import subprocess
import sys

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1
PCG32_MULT = 6364136223846793005
PCG32_INC = 1442695040888963407


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from gguf_tool import f32  # noqa: E402  (binary32 rounding)


class Pcg32:
    """pcg32_random_r / pcg32_srandom_r from the PCG reference C code."""

    def __init__(self, seed, inc=PCG32_INC):
        self.inc = inc
        self.state = 0
        self.next()
        self.state = (self.state + seed) & MASK64
        self.next()

    def next(self):
        old = self.state
        self.state = (old * PCG32_MULT + self.inc) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & MASK32
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & MASK32


def check_pcg32():
    # The published pcg32-demo output for initstate 42, initseq 54.
    rng = Pcg32(42, inc=(54 << 1) | 1)
    got = [rng.next() for _ in range(6)]
    want = [0xA15C02B7, 0x7B47F409, 0xBA1D3330, 0x83D2F293, 0xBFA4784B, 0xCBED606E]
    if got != want:
        raise SystemExit("Pcg32 does not match the reference demo vector")


def sample(params, rng, logits, history):
    """One kiln_sampler_sample call on binary32 `logits`. Returns the token
    and the smallest relative distance of a decision from its threshold, so
    the golden cases can be kept well clear of rounding."""
    temperature, top_k, top_p, penalty, last_n = params
    l = list(logits)
    vocab = len(l)

    window = history if last_n == -1 else history[len(history) - min(last_n, len(history)):]
    if window and penalty != 1.0:
        for t in set(window):
            l[t] = f32(l[t] / penalty) if l[t] > 0.0 else f32(l[t] * penalty)
    l = [-math.inf if math.isnan(v) else v for v in l]

    if temperature <= 0.0:
        return min(range(vocab), key=lambda i: (-l[i], i)), math.inf

    r = rng.next()
    truncate_k = 0 < top_k < vocab
    truncate_p = top_p < 1.0
    ranked = sorted(range(vocab), key=lambda i: (-l[i], i))
    if truncate_k:
        cand = ranked[:top_k]
        sum_order = cand
    elif truncate_p:
        cand = ranked
        sum_order = range(vocab)
    else:
        cand = list(range(vocab))
        sum_order = cand
    lmax = l[ranked[0]]
    if math.isinf(lmax):
        return ranked[0], math.inf

    e = {}
    for i in cand:
        e[i] = f32(math.exp(f32(f32(l[i] - lmax) / temperature)))
    total = 0.0
    for i in sum_order:
        total = f32(total + e[i])
    p = [f32(e[i] / total) for i in cand]

    margin = math.inf
    kept = len(cand)
    cum = 0.0
    for j, pj in enumerate(p):
        cum = f32(cum + pj)
        if truncate_p:
            margin = min(margin, abs(cum - top_p))
            if cum >= top_p:
                kept = j + 1
                break

    u = f32((r >> 8) * 2.0 ** -24)
    target = f32(u * cum)
    total_kept = cum
    cum = 0.0
    last_positive = cand[0]
    for j in range(kept):
        cum = f32(cum + p[j])
        margin = min(margin, abs(cum - target) / total_kept)
        if p[j] > 0.0:
            last_positive = cand[j]
        if target < cum:
            return cand[j], margin
    return last_positive, margin


# name, (temperature, top_k, top_p, repeat_penalty, repeat_last_n), seed,
# logits, initial history; each drawn token is appended to the history.
GOLDEN_DRAWS = 8
# Decisions this close to a threshold could flip with a 1-ulp expf difference.
MIN_MARGIN = 1e-4
DIST8 = [1.0, 2.5, -0.5, 0.25, 2.0, -1.75, 1.5, 0.0]
# 300 distinct-ish dyadic logits in [-3, 3.25]; many ties. Same formula as
# sampler_test.c's wide300.
WIDE300 = [((i * 37) % 101) * 0.0625 - 3.0 for i in range(300)]
GOLDEN_CASES = [
    ("uniform256", (1.0, 0, 1.0, 1.0, 0), 42, [0.5] * 256, []),
    ("plain", (0.75, 0, 1.0, 1.0, 0), 42, DIST8, []),
    ("full", (0.75, 6, 0.875, 1.25, 4), 42, DIST8, [3, 1, 4]),
    ("nucleus", (1.0, 0, 0.9, 1.0, 0), 1234, DIST8, []),
    ("wide300", (2.0, 0, 0.95, 1.0, 0), 42, WIDE300, []),
    ("wide300k", (2.0, 100, 0.9, 1.125, 8), 7, WIDE300, [5, 17, 250]),
]


def golden():
    out = {}
    worst = math.inf
    for name, params, seed, logits, history in GOLDEN_CASES:
        rng = Pcg32(seed)
        logits = [f32(v) for v in logits]
        hist = list(history)
        seq = []
        for _ in range(GOLDEN_DRAWS):
            t, margin = sample(params, rng, logits, hist)
            worst = min(worst, margin)
            seq.append(t)
            hist.append(t)
        out[name] = seq
    if worst < MIN_MARGIN:
        raise SystemExit("golden case decision within %g of a threshold" % worst)
    return out, worst


def main(argv):
    # --runner CMD runs the test binary through CMD (e.g. qemu-aarch64).
    runner = []
    if len(argv) > 2 and argv[1] == "--runner":
        runner, argv = [argv[2]], [argv[0]] + argv[3:]
    check_pcg32()
    # With 256 equal logits the token is the top byte of each pcg32 output,
    # which pins the generator itself.
    rng = Pcg32(42)
    raw = [rng.next() for _ in range(GOLDEN_DRAWS)]
    want, margin = golden()
    assert want["uniform256"] == [v >> 24 for v in raw]
    # sampler_test.c's U0_SEED: the first draw is u = 0 exactly.
    assert Pcg32(10483741).next() >> 8 == 0

    args = ["%s=%s" % (k, ",".join(map(str, v))) for k, v in want.items()]
    if len(argv) < 2:
        print("pcg32 seed 42:", " ".join("0x%08x" % v for v in raw))
        print("smallest decision margin: %.3g" % margin)
        for a in args:
            print(a)
        return 0

    proc = subprocess.run(runner + [argv[1]] + args, stdout=subprocess.PIPE,
                          universal_newlines=True)
    sys.stdout.write(proc.stdout)
    got = {}
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "golden":
            got[parts[1]] = [int(v) for v in parts[2:]]
    bad = [k for k in want if got.get(k) != want[k]]
    for k in bad:
        print("reference mismatch %s: binary %s, reference %s" % (k, got.get(k), want[k]))
    if bad or proc.returncode != 0:
        return 1
    print("reference: %d golden sequences agree" % len(want))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
