#!/usr/bin/env python3
"""Compares .npy files: npy_compare.py EXPECTED ACTUAL (--atol A [--rtol R] | --rel-rms E)

Fails (exit 1) when a shape differs, or some |actual - expected| exceeds
atol + rtol * |expected|, or (--rel-rms, for quantized results) the RMS of
actual - expected exceeds E times the RMS of expected; prints the largest
absolute difference and the relative RMS either way.
"""
import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("expected")
    parser.add_argument("actual")
    parser.add_argument("--atol", type=float)
    parser.add_argument("--rel-rms", type=float)
    parser.add_argument("--rtol", type=float, default=0.0)
    args = parser.parse_args()
    expected, actual = np.load(args.expected), np.load(args.actual)
    if expected.shape != actual.shape:
        print("%s: shape %s, expected %s" % (args.actual, actual.shape, expected.shape))
        return 1
    if (args.atol is None) == (args.rel_rms is None):
        parser.error("give --atol or --rel-rms")
    diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    worst = float(diff.max()) if diff.size else 0.0
    scale = float(np.sqrt((expected.astype(np.float64) ** 2).mean())) if diff.size else 0.0
    rel = float(np.sqrt((diff ** 2).mean())) / scale if scale > 0 else 0.0
    if args.rel_rms is not None:
        print("%s: relative RMS error %.4f over %d values (bound %g), max abs diff %.3g"
              % (args.actual, rel, diff.size, args.rel_rms, worst))
        return 1 if rel > args.rel_rms else 0
    bound = args.atol + args.rtol * np.abs(expected.astype(np.float64))
    bad = int((diff > bound).sum())
    print("%s: max abs diff %.3g over %d values, %d beyond the bound" % (args.actual, worst, diff.size, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
