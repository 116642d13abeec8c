#!/usr/bin/env python3
"""Checks Kiln's decoders and encoders of the ggml block formats Q4_1, Q5_0, Q5_1,
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL and BF16 (through `quantize-test --decode` and
`--encode`) against test/tools/gguf_tool.py, whose decoders compute every value
in binary32 exactly as ggml's dequantize_row_* do (the operation order is in
each decoder's docstring there).

  (a) decode: random blocks (random payload bytes under sane f16 scales), blocks
      whose f16 fields are edge values (+0, -0, the smallest subnormal, the
      largest subnormal, the smallest normal, 1, +-65504, +-inf, quiet and
      signalling NaN), all-zero and all-0xFF blocks, and for BF16 every one of
      the 65536 bit patterns: Kiln's floats must equal Python's bit for bit
      (any NaN equals any NaN);
  (b) decode: the first --real-blocks blocks of every tensor of these formats in
      the files llama.cpp's llama-quantize wrote (--models, by default
      test/data/llamacpp-A),
      bit for bit as in (a); a format no file holds is named on a NOTE line;
  (c) encode: gaussian rows of assorted scales, Kiln's bytes decoded by Python,
      relative RMS error sqrt(sum (y - x)^2 / sum x^2) pooled over the rows must
      be at most 1.25 * Python's own encoder's + 0.002 on the same rows, and no
      single row may exceed 2 * Python's + 0.005. (llama.cpp's reference
      quantizers measure 0.9 to 1.12 times gguf_tool's on model A and on
      gaussian data, so a port of them passes.) Edge rows: all zeros must
      decode to zeros; a constant row, a negative-only row and a row with one
      outlier are held to the per-row bound. BF16 has one correct answer (round
      to nearest even, NaN stays NaN): Kiln's bytes must equal Python's, and a
      NaN input must give a NaN. Kiln's decode of its own bytes must also
      equal Python's, bit for bit.

  block_formats_check.py QUANTIZE_TEST [--count N] [--seed S] [--real-blocks N]
                         [--models DIR] [--show N]

Exits 1 on any failure; each failure names the format, the part, the block (and
where it came from) and the values. Standard library only.
"""

import argparse
import math
import os
import random
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))
import gguf_tool  # noqa: E402

# name -> (ggml type, values per block, bytes per block, offsets of the f16 fields)
FORMATS = {
    "q4_1": (gguf_tool.GGML_Q4_1, 32, 20, (0, 2)),
    "q5_0": (gguf_tool.GGML_Q5_0, 32, 22, (0,)),
    "q5_1": (gguf_tool.GGML_Q5_1, 32, 24, (0, 2)),
    "q2_k": (gguf_tool.GGML_Q2_K, 256, 84, (80, 82)),
    "q3_k": (gguf_tool.GGML_Q3_K, 256, 110, (108,)),
    "q4_k": (gguf_tool.GGML_Q4_K, 256, 144, (0, 2)),
    "q5_k": (gguf_tool.GGML_Q5_K, 256, 176, (0, 2)),
    "q6_k": (gguf_tool.GGML_Q6_K, 256, 210, (208,)),
    "iq4_nl": (gguf_tool.GGML_IQ4_NL, 32, 18, (0,)),
    "tq2_0": (gguf_tool.GGML_TQ2_0, 256, 66, (64,)),
    "bf16": (gguf_tool.GGML_BF16, 1, 2, ()),
}

# f16 bit patterns for the scale fields, with what they are.
EDGE_F16 = [
    (0x0000, "+0"), (0x8000, "-0"), (0x0001, "min subnormal"), (0x8001, "-min subnormal"),
    (0x03FF, "max subnormal"), (0x0400, "min normal"), (0x3C00, "1"), (0x7BFF, "65504"),
    (0xFBFF, "-65504"), (0x7C00, "+inf"), (0xFC00, "-inf"), (0x7E00, "quiet NaN"),
    (0x7C01, "signalling NaN"),
]

# Pooled and per-row bounds on Kiln's encoder error, relative to Python's.
POOLED_FACTOR, POOLED_SLACK = 1.25, 0.002
ROW_FACTOR, ROW_SLACK = 2.0, 0.005

DEFAULT_MODEL_DIRS = [
    os.path.join(REPO, "test", "data", "llamacpp-A"),
]


def f32_words(floats):
    """binary32 bit patterns of Python floats (already binary32 values)."""
    return struct.unpack("<%dI" % len(floats), struct.pack("<%df" % len(floats), *floats))


def is_nan_word(w):
    return (w & 0x7F800000) == 0x7F800000 and (w & 0x007FFFFF) != 0


def same_word(a, b):
    return a == b or (is_nan_word(a) and is_nan_word(b))


def word_str(w):
    return "0x%08X (%r)" % (w, struct.unpack("<f", struct.pack("<I", w))[0])


def sane_f16(rng):
    # Scales as quantizers write them: mostly small, either sign.
    x = 2.0 ** rng.uniform(-20, 6)
    if rng.random() < 0.3:
        x = -x
    return struct.unpack("<H", struct.pack("<e", x))[0]


class Runner:
    def __init__(self, binary, workdir):
        self.binary = binary
        self.workdir = workdir

    def run(self, mode, fmt, data):
        src = os.path.join(self.workdir, "in.bin")
        dst = os.path.join(self.workdir, "out.bin")
        with open(src, "wb") as f:
            f.write(data)
        if os.path.exists(dst):
            os.remove(dst)
        proc = subprocess.run([self.binary, mode, fmt, src, dst], capture_output=True, text=True)
        if proc.returncode != 0:
            return None, "%s %s %s exited %d: %s" % (self.binary, mode, fmt, proc.returncode,
                                                     proc.stderr.strip()[-500:])
        if not os.path.exists(dst):
            return None, "%s %s %s wrote no output" % (self.binary, mode, fmt)
        with open(dst, "rb") as f:
            return f.read(), None


class Tally:
    def __init__(self, show):
        self.passed = 0
        self.failed = 0
        self.show = show

    def result(self, ok, line):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
        print("%s %s" % ("ok" if ok else "FAIL", line))


def decode_blocks(fmt, blocks):
    ggml_type = FORMATS[fmt][0]
    return f32_words(gguf_tool.dequantize(b"".join(blocks), ggml_type))


def compare_decode(runner, tally, fmt, part, blocks, labels):
    """Kiln's decode of `blocks` against Python's, bit for bit; labels[i] says where
    block i came from."""
    _, per_block, size, _ = FORMATS[fmt]
    data = b"".join(blocks)
    out, err = runner.run("--decode", fmt, data)
    if err:
        tally.result(False, "%s %s: %s" % (fmt, part, err))
        return
    want = decode_blocks(fmt, blocks)
    if len(out) != 4 * len(want):
        tally.result(False, "%s %s: Kiln wrote %d bytes for %d blocks, want %d"
                     % (fmt, part, len(out), len(blocks), 4 * len(want)))
        return
    got = struct.unpack("<%dI" % len(want), out)
    bad_blocks = 0
    for b in range(len(blocks)):
        lo = b * per_block
        diffs = [j for j in range(per_block) if not same_word(got[lo + j], want[lo + j])]
        if not diffs:
            continue
        bad_blocks += 1
        if bad_blocks <= tally.show:
            shown = "; ".join("element %d: Kiln %s, Python %s"
                              % (j, word_str(got[lo + j]), word_str(want[lo + j]))
                              for j in diffs[:4])
            print("  %s %s block %d (%s), %d element(s) differ: %s; block bytes %s"
                  % (fmt, part, b, labels[b], len(diffs), shown, blocks[b].hex()))
    tally.result(bad_blocks == 0, "%s %s: %d blocks, %d differ from Python's decode"
                 % (fmt, part, len(blocks), bad_blocks))


def random_blocks(fmt, rng, count):
    """(blocks, labels) for part (a)."""
    _, _, size, fields = FORMATS[fmt]
    if fmt == "bf16":
        blocks = [struct.pack("<H", w) for w in range(65536)]
        return blocks, ["bits 0x%04X" % w for w in range(65536)]

    def block(payload, values):
        raw = bytearray(payload)
        for offset, bits in zip(fields, values):
            struct.pack_into("<H", raw, offset, bits)
        return bytes(raw)

    blocks, labels = [], []
    for i in range(count):
        blocks.append(block(rng.randbytes(size), [sane_f16(rng) for _ in fields]))
        labels.append("random %d" % i)
    for bits, what in EDGE_F16:
        for k, offset in enumerate(fields):
            values = [sane_f16(rng) for _ in fields]
            values[k] = bits
            blocks.append(block(rng.randbytes(size), values))
            labels.append("f16 field at byte %d = %s" % (offset, what))
        if len(fields) > 1:
            blocks.append(block(rng.randbytes(size), [bits] * len(fields)))
            labels.append("every f16 field = %s" % what)
    blocks.append(bytes(size))
    labels.append("all-zero block")
    blocks.append(b"\xff" * size)
    labels.append("all-0xFF block")
    # Largest codes and scales under sane f16 fields.
    blocks.append(block(b"\xff" * size, [sane_f16(rng) for _ in fields]))
    labels.append("all-0xFF payload, sane scales")
    blocks.append(block(bytes(size), [sane_f16(rng) for _ in fields]))
    labels.append("all-zero payload, sane scales")
    return blocks, labels


def find_model_dir(given):
    if given:
        return given if os.path.isdir(given) else None
    for d in DEFAULT_MODEL_DIRS:
        if os.path.isdir(d):
            return os.path.normpath(d)
    return None


def real_blocks(model_dir, limit):
    """{fmt: (blocks, labels)} from every tensor of a checked format in the files."""
    by_type = {spec[0]: name for name, spec in FORMATS.items()}
    found = {}
    for fname in sorted(os.listdir(model_dir)):
        if not fname.endswith(".gguf"):
            continue
        _, _, tensors = gguf_tool.read_gguf(os.path.join(model_dir, fname))
        for t in tensors:
            fmt = by_type.get(t["type"])
            if fmt is None:
                continue
            size = FORMATS[fmt][2]
            n = min(limit, len(t["data"]) // size)
            blocks, labels = found.setdefault(fmt, ([], []))
            for b in range(n):
                blocks.append(t["data"][b * size:(b + 1) * size])
                labels.append("%s %s block %d" % (fname, t["name"], b))
    return found


def rel_rms(y, x):
    num = sum((a - b) ** 2 for a, b in zip(y, x))
    den = sum(b * b for b in x)
    return math.sqrt(num / den) if den else math.sqrt(num)


def encode_rows(rng, n_rows, width):
    """(gaussian rows, edge rows as (label, row)); values are binary32."""
    f32 = gguf_tool.f32
    rows = []
    for _ in range(n_rows):
        sigma = 10 ** rng.uniform(-3, 1)
        rows.append([f32(rng.gauss(0.0, sigma)) for _ in range(width)])
    outlier = [f32(rng.gauss(0.0, 0.05)) for _ in range(width)]
    outlier[rng.randrange(width)] = 4.0
    edges = [
        ("all-zero row", [0.0] * width),
        ("constant row 0.37", [f32(0.37)] * width),
        ("negative-only row", [f32(-abs(rng.gauss(0.0, 0.1)) - 0.01) for _ in range(width)]),
        ("row with one outlier (4.0 among sigma 0.05)", outlier),
    ]
    return rows, edges


def check_encoder(runner, tally, fmt, rng, n_rows):
    ggml_type, per_block, size, _ = FORMATS[fmt]
    width = 512
    rows, edges = encode_rows(rng, n_rows, width)
    if fmt == "bf16":
        check_bf16_encoder(runner, tally, rng, rows)
        return
    all_rows = rows + [r for _, r in edges]
    values = [v for r in all_rows for v in r]
    out, err = runner.run("--encode", fmt, struct.pack("<%df" % len(values), *values))
    if err:
        tally.result(False, "%s (c) encode: %s" % (fmt, err))
        return
    want_bytes = len(values) // per_block * size
    if len(out) != want_bytes:
        tally.result(False, "%s (c) encode: Kiln wrote %d bytes for %d values, want %d"
                     % (fmt, len(out), len(values), want_bytes))
        return
    row_bytes = width // per_block * size
    kiln = gguf_tool.dequantize(out, ggml_type)
    ours = gguf_tool.dequantize(gguf_tool.quantize(values, ggml_type), ggml_type)

    # Pooled over the gaussian rows, each row normalized to its own scale.
    k_sq = p_sq = 0.0
    worst = []
    for i, x in enumerate(rows):
        yk = kiln[i * width:(i + 1) * width]
        yp = ours[i * width:(i + 1) * width]
        ek, ep = rel_rms(yk, x), rel_rms(yp, x)
        k_sq += ek * ek
        p_sq += ep * ep
        if not ek <= ROW_FACTOR * ep + ROW_SLACK:
            worst.append((i, ek, ep))
    ek, ep = math.sqrt(k_sq / len(rows)), math.sqrt(p_sq / len(rows))
    bound = POOLED_FACTOR * ep + POOLED_SLACK
    tally.result(ek <= bound, "%s (c) encode: %d gaussian rows of %d, relative RMS error "
                 "Kiln %.5f, Python %.5f, bound %.5f" % (fmt, len(rows), width, ek, ep, bound))
    for i, a, b in worst[:tally.show]:
        print("  %s (c) gaussian row %d (block %d on): Kiln %.5f > %.1f * Python %.5f + %.3f"
              % (fmt, i, i * width // per_block, a, ROW_FACTOR, b, ROW_SLACK))
    tally.result(not worst, "%s (c) encode: %d gaussian row(s) over the per-row bound"
                 % (fmt, len(worst)))

    for k, (label, x) in enumerate(edges):
        i = len(rows) + k
        yk = kiln[i * width:(i + 1) * width]
        if label == "all-zero row":
            nonzero = [j for j, v in enumerate(yk) if v != 0.0]
            tally.result(not nonzero, "%s (c) encode %s decodes to zeros%s"
                         % (fmt, label, "" if not nonzero else ": element %d is %r (block %d)"
                            % (nonzero[0], yk[nonzero[0]], nonzero[0] // per_block)))
            continue
        a = rel_rms(yk, x)
        b = rel_rms(ours[i * width:(i + 1) * width], x)
        bound = ROW_FACTOR * b + ROW_SLACK
        tally.result(a <= bound, "%s (c) encode %s: Kiln %.5f, Python %.5f, bound %.5f"
                     % (fmt, label, a, b, bound))

    # Kiln's own decode of its bytes, against Python's: realistic blocks for (a).
    blocks = [out[b * size:(b + 1) * size] for b in range(len(out) // size)]
    labels = ["Kiln-encoded row %d block %d" % (b * size // row_bytes, b % (row_bytes // size))
              for b in range(len(blocks))]
    compare_decode(runner, tally, fmt, "(c) decode of Kiln's encoding", blocks, labels)


def check_bf16_encoder(runner, tally, rng, rows):
    words = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000,
             0x7F800001, 0x7FBFFFFF, 0xFF812345, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F8000,
             0x7F7F7FFF, 0x00000001, 0x807FFFFF, 0x00008000, 0x00018000, 0x3F808000,
             0x3F818000, 0x3F80FFFF, 0x3F807FFF, 0x3F808001]
    words += [rng.getrandbits(32) for _ in range(4096)]
    # Bit patterns go in as they are (a float round trip could quiet a signalling NaN).
    data = struct.pack("<%dI" % len(words), *words)
    data += b"".join(struct.pack("<%df" % len(r), *r) for r in rows)
    words = struct.unpack("<%dI" % (len(data) // 4), data)
    values = list(struct.unpack("<%df" % (len(data) // 4), data))
    out, err = runner.run("--encode", "bf16", data)
    if err:
        tally.result(False, "bf16 (c) encode: %s" % err)
        return
    if len(out) != 2 * len(values):
        tally.result(False, "bf16 (c) encode: Kiln wrote %d bytes for %d values, want %d"
                     % (len(out), len(values), 2 * len(values)))
        return
    got = struct.unpack("<%dH" % len(values), out)
    want = struct.unpack("<%dH" % len(values), gguf_tool.quantize(values, gguf_tool.GGML_BF16))
    bad = 0
    for i, (w, g, p) in enumerate(zip(words, got, want)):
        if is_nan_word(w):
            ok = (g & 0x7F80) == 0x7F80 and (g & 0x7F) != 0
        else:
            ok = g == p
        if not ok:
            bad += 1
            if bad <= tally.show:
                print("  bf16 (c) value %d = %s: Kiln 0x%04X, want 0x%04X"
                      % (i, word_str(w), g, p))
    tally.result(bad == 0, "bf16 (c) encode: %d values, %d differ from round-to-nearest-even"
                 % (len(values), bad))
    compare_decode(runner, tally, "bf16", "(c) decode of Kiln's encoding",
                   [out[i:i + 2] for i in range(0, len(out), 2)],
                   ["Kiln-encoded value %d" % i for i in range(len(values))])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binary", help="the quantize-test executable")
    parser.add_argument("--count", type=int, default=256,
                        help="random blocks per format for (a); (c) uses count/8 rows (at least 8)")
    parser.add_argument("--seed", type=int, default=20240611)
    parser.add_argument("--real-blocks", type=int, default=256,
                        help="blocks from the start of each llama.cpp tensor for (b)")
    parser.add_argument("--models", help="folder of llama.cpp-quantized GGUF files for (b)")
    parser.add_argument("--show", type=int, default=5, help="details printed per failing check")
    args = parser.parse_args(argv)

    tally = Tally(args.show)
    model_dir = find_model_dir(args.models)
    real = {}
    if model_dir is None:
        tally.result(False, "(b): no folder of llama.cpp files (looked in %s); give --models DIR"
                     % (args.models or ", ".join(os.path.normpath(d) for d in DEFAULT_MODEL_DIRS)))
    else:
        print("(b) llama.cpp files from %s" % model_dir)
        real = real_blocks(model_dir, args.real_blocks)

    with tempfile.TemporaryDirectory() as workdir:
        runner = Runner(args.binary, workdir)
        for fmt in FORMATS:
            # One generator per format, so a subset of formats sees the same data.
            rng = random.Random("%d %s" % (args.seed, fmt))
            blocks, labels = random_blocks(fmt, rng, args.count)
            compare_decode(runner, tally, fmt, "(a) decode", blocks, labels)
            if fmt in real:
                compare_decode(runner, tally, fmt, "(b) decode of llama.cpp's blocks", *real[fmt])
            elif model_dir is not None:
                print("NOTE %s (b): no tensor of this format in %s; covered by (a) and (c) only"
                      % (fmt, model_dir))
            check_encoder(runner, tally, fmt, rng, max(8, args.count // 8))

    print("%d passed, %d failed" % (tally.passed, tally.failed))
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
