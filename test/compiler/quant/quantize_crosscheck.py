#!/usr/bin/env python3
"""Cross-checks Kiln's Q8_0/Q4_0 encoders (compiler/quant/Quantize.cpp, through
`quantize_test --encode/--decode`) byte for byte against two Python encoders:

  * test/tools/gguf_tool.py's quantize(), an independent implementation used to
    build the test models;
  * a binary32-faithful transcription of ggml's quantize_row_q8_0_ref /
    quantize_row_q4_0_ref kept here, which rounds every intermediate to
    binary32 (for +, -, *, / of binary32 operands, rounding the exact double
    result is the same as the binary32 operation).

Kiln must equal the binary32 reference on every block. A gguf_tool.py that
rounds 1/d, x * (1/d) or x * (1/d) + 8.5 in double instead of binary32 picks
the neighbouring code where a value sits within a binary32 rounding of a code
boundary (for instance x = amax/2, exactly 63.5 steps). Blocks where only
gguf_tool differs are reported as KNOWN (value, both codes) and fail the run
only under --strict; anything else that differs is a failure. The constructed
blocks at the end are such boundary cases.

  quantize_crosscheck.py QUANTIZE_TEST [--count N] [--seed S] [--strict]

Standard library only.
"""

import argparse
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gguf_tool  # noqa: E402

BLOCK = 32


f32 = gguf_tool.f32


def f32_from_bits(bits):
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f16_bytes(x):
    try:
        return struct.pack("<e", x)
    except OverflowError:
        return struct.pack("<H", 0xFC00 if x < 0 else 0x7C00)


def f16_round(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def round_half_away(x):
    return int(x + 0.5) if x >= 0 else -int(0.5 - x)


def ggml_q8_0(chunk):
    """quantize_row_q8_0_ref with every operation in binary32."""
    amax = 0.0
    for x in chunk:
        amax = amax if amax > abs(x) else abs(x)
    d = f32(amax / 127)
    inv = f32(1.0 / d) if d else 0.0
    q = [round_half_away(f32(x * inv)) for x in chunk]
    return f16_bytes(d) + struct.pack("<32b", *q)


def ggml_q4_0(chunk):
    """quantize_row_q4_0_ref with every operation in binary32."""
    amax = peak = 0.0
    for x in chunk:
        if amax < abs(x):
            amax, peak = abs(x), x
    d = f32(peak / -8)
    inv = f32(1.0 / d) if d else 0.0
    q = [min(15, int(f32(f32(x * inv) + 8.5))) for x in chunk]
    return f16_bytes(d) + bytes(q[j] | q[j + 16] << 4 for j in range(16))


FORMATS = {
    "q8_0": (gguf_tool.GGML_Q8_0, ggml_q8_0, 34),
    "q4_0": (gguf_tool.GGML_Q4_0, ggml_q4_0, 18),
}


def random_blocks(rng, count):
    """`count` values (a multiple of 32) in blocks of assorted shapes."""
    values = []
    while len(values) < count:
        kind = rng.randrange(7)
        scale = 10 ** rng.uniform(-4, 3)
        if kind == 0:  # gaussian weights
            block = [rng.gauss(0.0, scale) for _ in range(BLOCK)]
        elif kind == 1:  # uniform
            block = [rng.uniform(-scale, scale) for _ in range(BLOCK)]
        elif kind == 2:  # one outlier
            block = [rng.gauss(0.0, scale) for _ in range(BLOCK)]
            block[rng.randrange(BLOCK)] = rng.choice([-1, 1]) * scale * rng.uniform(10, 100)
        elif kind == 3:  # a magnitude tie of opposite signs, first one wins in q4_0
            block = [rng.uniform(-scale, scale) for _ in range(BLOCK)]
            i, j = rng.sample(range(BLOCK), 2)
            block[i], block[j] = scale * 1.5, -scale * 1.5
        elif kind == 4:  # exact quarter steps: ties land exactly on .5
            block = [rng.randrange(-64, 65) / 4.0 for _ in range(BLOCK)]
        elif kind == 5:  # sparse, with exact zeros
            block = [rng.gauss(0.0, scale) if rng.random() < 0.3 else 0.0 for _ in range(BLOCK)]
        else:  # f16 weights (a converted f16 model) holding +-amax/2: x/d = 63.5
            block = [f16_round(rng.gauss(0.0, scale)) for _ in range(BLOCK)]
            top = max(range(BLOCK), key=lambda i: abs(block[i]))
            block[(top + 1 + rng.randrange(BLOCK - 1)) % BLOCK] = block[top] / rng.choice([2, -2])
        values.extend(f32(v) for v in block)
    return values[:count]


def constructed_blocks():
    """Blocks whose codes need binary32 rounding (see quantize_test.cpp)."""
    def block(*pairs):
        b = [0.0] * BLOCK
        for index, bits in pairs:
            b[index] = f32_from_bits(bits)
        return b
    return [
        [0.0] * BLOCK,
        # q8_0: amax 0.60189492, id = 211.00029; x * id = 102.5 - 2.3e-6, which
        # binary32 (spacing 7.6e-6) rounds to 102.5 -> 103; in double x / d is
        # 102.4999964 -> 102.
        block((0, 0x3F1A15C9), (1, 0x3EF8B854)),
        # q4_0: d = 1, 2.5 - 2^-22 + 8.5 rounds to 11.0 in binary32 -> 11; double 10.
        block((0, 0xC1000000), (1, 0x401FFFFF)),
        # q4_0: fl(-8/3) max, id = 3.0; x * 3 + 8.5 rounds to 11 in two binary32
        # steps (ties to even twice) -> 11; double 10.
        block((0, 0xC02AAAAB), (1, 0x3F555552)),
    ]


def run_codec(binary, mode, fmt, data, workdir):
    src = os.path.join(workdir, "in.bin")
    dst = os.path.join(workdir, "out.bin")
    with open(src, "wb") as f:
        f.write(data)
    proc = subprocess.run([binary, mode, fmt, src, dst], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit("%s %s %s failed (%d): %s" % (binary, mode, fmt, proc.returncode,
                                                       proc.stderr.strip()))
    with open(dst, "rb") as f:
        return f.read()


def describe_codes(fmt, chunk, ours, theirs, name_ours, name_theirs):
    """The elements whose codes differ: value (bits) and both codes."""
    out = []
    if ours[:2] != theirs[:2]:
        out.append("scale %s vs %s" % (ours[:2].hex(), theirs[:2].hex()))
    for j in range(BLOCK):
        if fmt == "q8_0":
            a = struct.unpack("b", ours[2 + j:3 + j])[0]
            b = struct.unpack("b", theirs[2 + j:3 + j])[0]
        else:
            shift = 0 if j < 16 else 4
            a = (ours[2 + j % 16] >> shift) & 15
            b = (theirs[2 + j % 16] >> shift) & 15
        if a != b:
            out.append("x[%d] = %r (0x%08X): %s q = %d, %s q = %d"
                       % (j, chunk[j], f32_bits(chunk[j]), name_ours, a, name_theirs, b))
    return "; ".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", help="the quantize_test executable")
    parser.add_argument("--count", type=int, default=4096, help="random values (x32)")
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--show", type=int, default=8,
                        help="print at most this many KNOWN blocks per format")
    parser.add_argument("--strict", action="store_true",
                        help="count gguf_tool double-precision discrepancies as failures")
    args = parser.parse_args(argv)

    rng = random.Random(args.seed)
    count = max(BLOCK, args.count // BLOCK * BLOCK)
    values = random_blocks(rng, count)
    for b in constructed_blocks():
        values.extend(b)
    n_blocks = len(values) // BLOCK
    raw = struct.pack("<%df" % len(values), *values)

    passed = failed = known = 0
    with tempfile.TemporaryDirectory() as workdir:
        for fmt, (ggml_type, reference, size) in FORMATS.items():
            ours = run_codec(args.binary, "--encode", fmt, raw, workdir)
            theirs = gguf_tool.quantize(values, ggml_type)
            if len(ours) != n_blocks * size or len(theirs) != n_blocks * size:
                print("FAIL %s: sizes %d (Kiln) %d (gguf_tool), want %d"
                      % (fmt, len(ours), len(theirs), n_blocks * size))
                failed += 1
                continue
            bad_ref = bad_tool = 0
            for b in range(n_blocks):
                chunk = values[b * BLOCK:(b + 1) * BLOCK]
                mine = ours[b * size:(b + 1) * size]
                tool = theirs[b * size:(b + 1) * size]
                ref = reference(chunk)
                if mine != ref:
                    bad_ref += 1
                    print("FAIL %s block %d: Kiln %s != binary32 reference %s (%s)"
                          % (fmt, b, mine.hex(), ref.hex(),
                             describe_codes(fmt, chunk, mine, ref, "Kiln", "reference")))
                elif mine != tool:
                    bad_tool += 1
                    if bad_tool <= args.show:
                        print("KNOWN %s block %d (gguf_tool off binary32): amax %r; %s"
                              % (fmt, b, max(map(abs, chunk)),
                                 describe_codes(fmt, chunk, mine, tool, "ggml/Kiln", "gguf_tool")))
            known += bad_tool
            ok = bad_ref == 0 and (bad_tool == 0 or not args.strict)
            passed += ok
            failed += not ok
            print("%s %s encode: %d blocks, %d differ from the binary32 reference, "
                  "%d from gguf_tool" % ("ok" if ok else "FAIL", fmt, n_blocks, bad_ref, bad_tool))

            # Decoding is exact in both (an 11-bit scale times a small integer),
            # so Kiln's floats must equal gguf_tool's for Kiln's bytes.
            decoded = run_codec(args.binary, "--decode", fmt, ours, workdir)
            mine = struct.unpack("<%df" % (len(decoded) // 4), decoded)
            tool = [f32(v) for v in gguf_tool.dequantize(ours, ggml_type)]
            same = len(mine) == len(tool) and all(
                f32_bits(a) == f32_bits(b) for a, b in zip(mine, tool))
            passed += same
            failed += not same
            print("%s %s decode matches gguf_tool.dequantize" % ("ok" if same else "FAIL", fmt))

    if known:
        print("%d block(s) where gguf_tool.py departs from ggml's binary32 arithmetic "
              "(marked KNOWN%s)" % (known, ", failing under --strict" if args.strict else ""))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
