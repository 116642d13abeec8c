#!/usr/bin/env python3
"""Compares .npy files: npy_compare.py EXPECTED ACTUAL --atol A [--rtol R]

Fails (exit 1) when a shape differs or some |actual - expected| exceeds
atol + rtol * |expected|; prints the largest absolute difference either way.
"""
import argparse
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("expected")
    parser.add_argument("actual")
    parser.add_argument("--atol", type=float, required=True)
    parser.add_argument("--rtol", type=float, default=0.0)
    args = parser.parse_args()
    expected, actual = np.load(args.expected), np.load(args.actual)
    if expected.shape != actual.shape:
        print("%s: shape %s, expected %s" % (args.actual, actual.shape, expected.shape))
        return 1
    diff = np.abs(actual.astype(np.float64) - expected.astype(np.float64))
    bound = args.atol + args.rtol * np.abs(expected.astype(np.float64))
    worst = float(diff.max()) if diff.size else 0.0
    bad = int((diff > bound).sum())
    print("%s: max abs diff %.3g over %d values, %d beyond the bound" % (args.actual, worst, diff.size, bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
