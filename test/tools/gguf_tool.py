#!/usr/bin/env python3
"""Read, write, convert and craft GGUF model files for tests (standard library only).

Command line:
  gguf_tool.py model OUT [--n-embd 64 --n-layer 2 ... --type q8_0]   random-weight llama model
               [--vocab-model llama|gpt2]                             SentencePiece- or GPT-2-style vocab
  gguf_tool.py convert IN OUT --type TYPE                             re-encode 2-D tensors
                                                                      (f32 f16 bf16 q8_0 q4_0 q4_1
                                                                      q5_0 q5_1 q2_k q3_k q4_k q5_k
                                                                      q6_k iq4_nl)
  gguf_tool.py convert IN OUT --mix q4_k_m|q5_k_m|q6_k|q4_0|...       llama-quantize's types
  gguf_tool.py copy IN OUT                                            read and write back
  gguf_tool.py bad OUT --case NAME [--from MODEL] | bad --list        malformed files
  gguf_tool.py dump IN                                                print metadata and tensors

As a module (add test/tools to sys.path, then `import gguf_tool`):
  read_gguf(path) -> (version, metadata, tensors)
  write_gguf(path, metadata, tensors, version=3)
  metadata: {key: (value_type, value)}; an array value is (element_type, [elements]).
  tensors:  [{"name", "ne", "type", "offset", "data"}]; ne is ggml order (ne[0] innermost),
            offset is relative to the data section, data is the raw tensor bytes.
  quantize(values, ggml_type) -> bytes, dequantize(data, ggml_type) -> [float]
            for every type in TYPE_BY_NAME; decoders are binary32-exact as ggml's
  mix_types(mix, metadata, tensors) -> {name: ggml type} (llama-quantize presets)
Keeping every value typed makes read-then-write byte-identical for files laid out the
usual way (tensors in order, each padded to the alignment).
"""

import argparse
import os
import bisect
import random
import math
import struct
import sys

GGUF_MAGIC = b"GGUF"
DEFAULT_ALIGNMENT = 32

# Metadata value types.
GGUF_U8 = 0
GGUF_I8 = 1
GGUF_U16 = 2
GGUF_I16 = 3
GGUF_U32 = 4
GGUF_I32 = 5
GGUF_F32 = 6
GGUF_BOOL = 7
GGUF_STRING = 8
GGUF_ARRAY = 9
GGUF_U64 = 10
GGUF_I64 = 11
GGUF_F64 = 12

VALUE_TYPE_NAMES = {
    GGUF_U8: "u8", GGUF_I8: "i8", GGUF_U16: "u16", GGUF_I16: "i16",
    GGUF_U32: "u32", GGUF_I32: "i32", GGUF_F32: "f32", GGUF_BOOL: "bool",
    GGUF_STRING: "str", GGUF_ARRAY: "arr", GGUF_U64: "u64", GGUF_I64: "i64",
    GGUF_F64: "f64",
}

_SCALAR_FORMATS = {
    GGUF_U8: "B", GGUF_I8: "b", GGUF_U16: "H", GGUF_I16: "h",
    GGUF_U32: "I", GGUF_I32: "i", GGUF_F32: "f", GGUF_BOOL: "?",
    GGUF_U64: "Q", GGUF_I64: "q", GGUF_F64: "d",
}

# ggml tensor types this tool encodes and decodes.
GGML_F32 = 0
GGML_F16 = 1
GGML_Q4_0 = 2
GGML_Q4_1 = 3
GGML_Q5_0 = 6
GGML_Q5_1 = 7
GGML_Q8_0 = 8
GGML_Q2_K = 10
GGML_Q3_K = 11
GGML_Q4_K = 12
GGML_Q5_K = 13
GGML_Q6_K = 14
GGML_IQ4_NL = 20
GGML_BF16 = 30
GGML_TQ2_0 = 35

# ggml type id -> (name, values per block, bytes per block). Only sizes matter for the
# types this tool cannot decode; they let files using them be read and dumped.
GGML_TYPES = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 36),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    20: ("IQ4_NL", 32, 18),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    30: ("BF16", 1, 2),
    35: ("TQ2_0", 256, 66),
}

TYPE_BY_NAME = {
    "f32": GGML_F32, "f16": GGML_F16, "bf16": GGML_BF16, "q8_0": GGML_Q8_0,
    "q4_0": GGML_Q4_0, "q4_1": GGML_Q4_1, "q5_0": GGML_Q5_0, "q5_1": GGML_Q5_1,
    "q2_k": GGML_Q2_K, "q3_k": GGML_Q3_K, "q4_k": GGML_Q4_K, "q5_k": GGML_Q5_K,
    "q6_k": GGML_Q6_K, "iq4_nl": GGML_IQ4_NL, "tq2_0": GGML_TQ2_0,
}

# general.file_type (llama.h's llama_ftype) for a model whose matrices use the given
# ggml type; a K-quant maps to its _M mix (Q3_K_M, Q4_K_M, Q5_K_M) as hub files do.
FILE_TYPE_FOR = {
    GGML_F32: 0, GGML_F16: 1, GGML_Q4_0: 2, GGML_Q4_1: 3, GGML_Q8_0: 7, GGML_Q5_0: 8,
    GGML_Q5_1: 9, GGML_Q2_K: 10, GGML_Q3_K: 12, GGML_Q4_K: 15, GGML_Q5_K: 17,
    GGML_Q6_K: 18, GGML_IQ4_NL: 25, GGML_BF16: 32, GGML_TQ2_0: 37,
}

GGML_MAX_DIMS = 4


class GGUFError(Exception):
    pass


def align_up(n, alignment):
    return (n + alignment - 1) // alignment * alignment


def type_name(ggml_type):
    entry = GGML_TYPES.get(ggml_type)
    return entry[0] if entry else "type%d" % ggml_type


def n_elements(ne):
    count = 1
    for dim in ne:
        count *= dim
    return count


def tensor_nbytes(ggml_type, ne):
    """Byte size of a tensor, as ggml computes it (whole blocks along ne[0])."""
    if ggml_type not in GGML_TYPES:
        raise GGUFError("unknown ggml type %d" % ggml_type)
    _, block, size = GGML_TYPES[ggml_type]
    if ne and ne[0] % block:
        raise GGUFError("ne[0]=%d is not a multiple of the %s block size %d"
                        % (ne[0], type_name(ggml_type), block))
    return n_elements(ne) // block * size


# ---------------------------------------------------------------------------
# Tensor data encoding

_F32 = struct.Struct("<f")


def f32(x):
    # ggml quantizes in binary32: round every intermediate as C float does (a
    # double result of one f32 operation rounds to the correctly rounded f32).
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _round_half_away(x):
    # C roundf semantics; Python's round() rounds halves to even.
    return int(x + 0.5) if x >= 0 else -int(0.5 - x)


def _quantize_q8_0(values):
    block = struct.Struct("<e32b")
    out = bytearray()
    for i in range(0, len(values), 32):
        chunk = values[i:i + 32]
        chunk = [f32(x) for x in chunk]
        amax = max(map(abs, chunk))
        d = f32(amax / 127)
        inv = f32(1.0 / d) if d else 0.0
        q = [max(-127, min(127, _round_half_away(f32(x * inv)))) for x in chunk]
        out += block.pack(d, *q)
    return bytes(out)


def _quantize_q4_0(values):
    block = struct.Struct("<e16B")
    out = bytearray()
    for i in range(0, len(values), 32):
        chunk = [f32(x) for x in values[i:i + 32]]
        # The signed value of largest magnitude (first one on ties) maps to -8.
        peak = 0.0
        for x in chunk:
            if abs(x) > abs(peak):
                peak = x
        d = f32(peak / -8)
        inv = f32(1.0 / d) if d else 0.0
        q = [max(0, min(15, int(f32(f32(x * inv) + 8.5)))) for x in chunk]
        packed = [q[j] | (q[j + 16] << 4) for j in range(16)]
        out += block.pack(d, *packed)
    return bytes(out)


# ---------------------------------------------------------------------------
# Further ggml block formats: Q4_1, Q5_0, Q5_1, the K-quants, IQ4_NL, BF16.
#
# Decoders compute each value as ggml's dequantize_row_* does, in binary32; the
# docstring of each gives the operation order a bit-exact implementation must
# follow. Every product in them is exact in binary32 (an f16 has 11 significant
# bits, the integer factors at most 7 + 5 more, and nothing reaches the subnormal
# or overflow range), so only the final add or subtract of the affine formats
# rounds, and contracting `a*q - m` into an FMA gives the same bits. Here the
# arithmetic runs in double and each result is rounded to binary32 once: for one
# +, -, * of binary32 operands that equals the binary32 operation.
#
# Encoders are simple searches of their own (they build test models; they need not
# reproduce llama.cpp's bytes): each sub-block gets a least-squares scale (and
# offset) over a few candidate grids, the K-quants then quantize those against the
# super-block d/dmin, and every code is finally re-chosen against the scale the
# decoder will actually use.

_F16 = struct.Struct("<e")
F16_MAX = 65504.0

# IQ4_NL's non-uniform 4-bit grid (ggml's kvalues_iq4nl).
IQ4NL_VALUES = (-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113)
# Midpoints between neighbouring grid values, for a nearest-value bisection.
_IQ4NL_MIDS = [(a + b) / 2 for a, b in zip(IQ4NL_VALUES, IQ4NL_VALUES[1:])]


def _f16(x):
    # An encoder's scale, rounded to f16; beyond f16's range it saturates so the
    # block stays finite.
    try:
        return _F16.unpack(_F16.pack(x))[0]
    except OverflowError:
        return math.copysign(F16_MAX, x)


def _f32s(values):
    # f32() over a list in one struct round trip (decoders call this per sub-block).
    try:
        return list(struct.unpack("<%df" % len(values), struct.pack("<%df" % len(values), *values)))
    except OverflowError:
        return [f32(v) for v in values]


def _blocks(values, size):
    if len(values) % size:
        raise GGUFError("%d values is not a whole number of %d-value blocks" % (len(values), size))
    return _f32s(values)


def _nearest(x):
    # C roundf for the encoders' code choice (ties away from zero).
    return int(x + 0.5) if x >= 0 else -int(0.5 - x)


# Candidate grids tried per sub-block: offsets (in code steps) added to the code
# range before it is stretched over the data. A few either side of the plain
# min..max mapping is enough once the least-squares refit adjusts the scale.
_AFFINE_STEPS = (-1.0, -0.7, -0.45, -0.25, -0.1, 0.0, 0.15, 0.35, 0.6, 0.9)
_SYMMETRIC_STEPS = (-0.6, -0.3, -0.1, 0.0, 0.15, 0.35, 0.6, 1.0)


def _fit_affine(xs, nmax, nonpositive_offset):
    """(a, b) such that x ~ a*q + b with q in 0..nmax, minimizing the squared error
    over a few candidate grids. With nonpositive_offset, b <= 0 (the K-quants store
    -b as an unsigned "min")."""
    lo = min(xs)
    hi = max(xs)
    if nonpositive_offset and lo > 0:
        lo = 0.0
    if hi <= lo:
        return 0.0, lo  # constant: every code 0, the offset carries the value
    n = len(xs)
    sx = sum(xs)
    sxx = sum([x * x for x in xs])
    shifted = [x - lo for x in xs]
    span = hi - lo
    best = None

    def refit(qs):
        # Least-squares a and b for fixed codes; returns (err, a, b) or None.
        sq = sum(qs)
        sqq = sum([q * q for q in qs])
        sxq = sum([x * q for x, q in zip(xs, qs)])
        det = n * sqq - sq * sq
        if det <= 0:
            return None
        a = (n * sxq - sq * sx) / det
        b = (sqq * sx - sq * sxq) / det
        if nonpositive_offset and b > 0:
            b = 0.0
            a = sxq / sqq
        if a <= 0:
            return None
        err = sxx - 2 * a * sxq - 2 * b * sx + a * a * sqq + 2 * a * b * sq + n * b * b
        return err, a, b

    for step in _AFFINE_STEPS:
        iscale = (nmax + step) / span
        qs = [min(nmax, int(v * iscale + 0.5)) for v in shifted]
        fit = refit(qs)
        if fit and (best is None or fit[0] < best[0]):
            best = fit
    if best is None:
        return span / nmax, lo
    # One more round: codes re-chosen for the best fit, then refit again.
    _, a, b = best
    inv = 1.0 / a
    qs = [max(0, min(nmax, int((x - b) * inv + 0.5))) for x in xs]
    fit = refit(qs)
    if fit and fit[0] < best[0]:
        best = fit
    return best[1], best[2]


def _fit_symmetric(xs, nneg, npos):
    """s such that x ~ s*q with q in -nneg..npos, minimizing the squared error over
    a few grids that put the largest-magnitude value near -nneg or near +npos."""
    peak = 0.0
    for x in xs:
        if abs(x) > abs(peak):
            peak = x
    if peak == 0:
        return 0.0
    top = nneg + npos
    off = nneg + 0.5
    best_score, best_s = -1.0, peak / -nneg
    candidates = [-(nneg + t) / peak for t in _SYMMETRIC_STEPS]
    candidates += [(npos + t) / peak for t in _SYMMETRIC_STEPS[:4]]
    for iscale in candidates:
        # int() truncates toward zero, and anything below zero clamps to 0 anyway.
        qs = [min(top, max(0, int(x * iscale + off))) - nneg for x in xs]
        sqq = sum([q * q for q in qs])
        if not sqq:
            continue
        sxq = sum([x * q for x, q in zip(xs, qs)])
        score = sxq * sxq / sqq  # the squared error is sum(x^2) - score
        if score > best_score:
            best_score, best_s = score, sxq / sqq
    return best_s


def _codes_affine(xs, dl, ml, nmax):
    # Codes for y = dl*q - ml, nearest to x.
    if not dl:
        return [0] * len(xs)
    inv = 1.0 / dl
    return [max(0, min(nmax, int((x + ml) * inv + 0.5))) for x in xs]


def _codes_symmetric(xs, dl, nneg, npos):
    # Codes q + nneg for y = dl*q, q in -nneg..npos nearest to x.
    if not dl:
        return [nneg] * len(xs)
    inv = 1.0 / dl
    top = nneg + npos
    off = nneg + 0.5
    return [min(top, max(0, int(x * inv + off))) for x in xs]


# -- Q4_1, Q5_0, Q5_1, IQ4_NL: 32-value blocks with f16 fields ------------------

def _quantize_q4_1(values):
    xs = _blocks(values, 32)
    out = bytearray()
    for i in range(0, len(xs), 32):
        chunk = xs[i:i + 32]
        a, b = _fit_affine(chunk, 15, False)
        d, m = _f16(a), _f16(b)
        q = _codes_affine(chunk, d, -m, 15)
        out += struct.pack("<ee", d, m)
        out += bytes([q[j] | (q[j + 16] << 4) for j in range(16)])
    return bytes(out)


def _dequantize_q4_1(data):
    """Q4_1, 20 bytes: f16 d, f16 m, qs[16]; q[j] = qs[j] & 15, q[j+16] = qs[j] >> 4.
    y = (float)q * d + m: the product is exact, the add rounds to binary32."""
    out = []
    for d, m, qs in struct.iter_unpack("<ee16s", data):
        lut = _f32s([q * d + m for q in range(16)])
        out.extend([lut[b & 15] for b in qs])
        out.extend([lut[b >> 4] for b in qs])
    return out


def _pack_q5(q):
    # (qh as uint32 LE, qs[16]) for 32 five-bit codes.
    qh = 0
    for j in range(32):
        qh |= (q[j] >> 4) << j
    return struct.pack("<I", qh) + bytes([(q[j] & 15) | ((q[j + 16] & 15) << 4) for j in range(16)])


def _quantize_q5_0(values):
    xs = _blocks(values, 32)
    out = bytearray()
    for i in range(0, len(xs), 32):
        chunk = xs[i:i + 32]
        d = _f16(_fit_symmetric(chunk, 16, 15))
        out += struct.pack("<e", d) + _pack_q5(_codes_symmetric(chunk, d, 16, 15))
    return bytes(out)


def _dequantize_q5_0(data):
    """Q5_0, 22 bytes: f16 d, qh[4] (uint32 LE; bit j is bit 4 of q[j]), qs[16] (low
    nibbles as Q4_0). y = (float)(q - 16) * d, exact."""
    out = []
    for d, qh, qs in struct.iter_unpack("<eI16s", data):
        lut = _f32s([(q - 16) * d for q in range(32)])
        out.extend([lut[(b & 15) | (((qh >> j) & 1) << 4)] for j, b in enumerate(qs)])
        out.extend([lut[(b >> 4) | (((qh >> (j + 16)) & 1) << 4)] for j, b in enumerate(qs)])
    return out


def _quantize_q5_1(values):
    xs = _blocks(values, 32)
    out = bytearray()
    for i in range(0, len(xs), 32):
        chunk = xs[i:i + 32]
        a, b = _fit_affine(chunk, 31, False)
        d, m = _f16(a), _f16(b)
        out += struct.pack("<ee", d, m) + _pack_q5(_codes_affine(chunk, d, -m, 31))
    return bytes(out)


def _dequantize_q5_1(data):
    """Q5_1, 24 bytes: f16 d, f16 m, qh[4], qs[16] (as Q5_0).
    y = (float)q * d + m: the product is exact, the add rounds to binary32."""
    out = []
    for d, m, qh, qs in struct.iter_unpack("<eeI16s", data):
        lut = _f32s([q * d + m for q in range(32)])
        out.extend([lut[(b & 15) | (((qh >> j) & 1) << 4)] for j, b in enumerate(qs)])
        out.extend([lut[(b >> 4) | (((qh >> (j + 16)) & 1) << 4)] for j, b in enumerate(qs)])
    return out


def _quantize_iq4_nl(values):
    xs = _blocks(values, 32)
    mids = _IQ4NL_MIDS
    grid = IQ4NL_VALUES
    out = bytearray()
    for i in range(0, len(xs), 32):
        chunk = xs[i:i + 32]
        peak = 0.0
        for x in chunk:
            if abs(x) > abs(peak):
                peak = x
        d = 0.0
        if peak:
            # Grids mapping the peak near -127 (the grid's long end) or near +113;
            # for each, nearest grid values and the least-squares d.
            best = -1.0
            for target in (-127, -124, -121, -118, -115, -112, -109, 113, 110, 107):
                iscale = target / peak
                ks = [grid[bisect.bisect_left(mids, x * iscale)] for x in chunk]
                skk = sum([k * k for k in ks])
                sxk = sum([x * k for x, k in zip(chunk, ks)])
                if sxk * sxk / skk > best:
                    best, d = sxk * sxk / skk, sxk / skk
        d = _f16(d)
        if d:
            inv = 1.0 / d
            q = [bisect.bisect_left(mids, x * inv) for x in chunk]
        else:
            q = [8] * 32  # grid value 1: y = 0 * 1 = 0
        out += struct.pack("<e", d) + bytes([q[j] | (q[j + 16] << 4) for j in range(16)])
    return bytes(out)


def _dequantize_iq4_nl(data):
    """IQ4_NL, 18 bytes: f16 d, qs[16] (nibbles as Q4_0).
    y = d * (float)IQ4NL_VALUES[q], exact."""
    out = []
    for d, qs in struct.iter_unpack("<e16s", data):
        lut = _f32s([d * k for k in IQ4NL_VALUES])
        out.extend([lut[b & 15] for b in qs])
        out.extend([lut[b >> 4] for b in qs])
    return out


# -- K-quants: 256-value super-blocks ---------------------------------------------

def _superblock_scales(scales, levels):
    # Quantize non-negative sub-block scales to 0..levels against one f16 step.
    d = _f16(max(scales) / levels)
    if not d:
        return 0.0, [0] * len(scales)
    return d, [min(levels, _nearest(s / d)) for s in scales]


def _superblock_signed(scales, lo, hi):
    # Quantize signed sub-block scales to lo..hi: the largest magnitude maps to lo.
    peak = 0.0
    for s in scales:
        if abs(s) > abs(peak):
            peak = s
    d = _f16(peak / lo)
    if not d:
        return 0.0, [0] * len(scales)
    return d, [max(lo, min(hi, _nearest(s / d))) for s in scales]


def _quantize_q2_k(values):
    xs = _blocks(values, 256)
    out = bytearray()
    for i in range(0, len(xs), 256):
        block = xs[i:i + 256]
        subs = [block[s * 16:(s + 1) * 16] for s in range(16)]
        fits = [_fit_affine(sub, 3, True) for sub in subs]
        d, sc = _superblock_scales([a for a, _ in fits], 15)
        dmin, mn = _superblock_scales([-b for _, b in fits], 15)
        qs = bytearray(64)
        for s in range(16):
            q = _codes_affine(subs[s], f32(d * sc[s]), f32(dmin * mn[s]), 3)
            # Element e = 128h + 32j + l sits in qs[32h + l] at bits 2j.
            base = s * 16
            for l, code in enumerate(q):
                e = base + l
                qs[(e >> 7) * 32 + (e & 31)] |= code << (2 * ((e >> 5) & 3))
        out += bytes([sc[s] | (mn[s] << 4) for s in range(16)]) + qs
        out += struct.pack("<ee", d, dmin)
    return bytes(out)


def _dequantize_q2_k(data):
    """Q2_K, 84 bytes: scales[16], qs[64], f16 d, f16 dmin. Element e (0..255) is
    in sub-block e // 16 with sc = scales[e // 16], and its 2-bit code is
    (qs[32*(e // 128) + e % 32] >> (2 * ((e // 32) % 4))) & 3.
    dl = d * (float)(sc & 15); ml = dmin * (float)(sc >> 4); y = dl * (float)q - ml
    (each rounded to binary32; only the subtraction is inexact)."""
    out = []
    for scales, qs, d, dmin in struct.iter_unpack("<16s64see", data):
        for s in range(16):
            sc = scales[s]
            dl = f32(d * (sc & 15))
            ml = f32(dmin * (sc >> 4))
            lut = _f32s([dl * q - ml for q in range(4)])
            shift = 2 * ((s >> 1) & 3)
            start = (s >> 3) * 32 + (s & 1) * 16
            out.extend([lut[(b >> shift) & 3] for b in qs[start:start + 16]])
    return out


def _q3_k_scales(raw):
    # The 16 six-bit scales (0..63, before the -32) of a Q3_K block: the low nibble
    # of scale j is nibble j // 8 of raw[j % 8], its top two bits are bits
    # 2 * (j // 4) of raw[8 + j % 4] (what ggml's kmask1/kmask2 shuffle unpacks).
    return [((raw[j & 7] >> (4 * (j >> 3))) & 15)
            | (((raw[8 + (j & 3)] >> (2 * (j >> 2))) & 3) << 4)
            for j in range(16)]


def _superblock_symmetric_codes(block, qneg, qpos, slo, shi):
    """Q3_K / Q6_K: the super-block scale d, the 16 signed sub-block scales in
    slo..shi, and the 256 codes (offset by qneg) against d * scale."""
    subs = [block[s * 16:(s + 1) * 16] for s in range(16)]
    d, sc = _superblock_signed([_fit_symmetric(sub, qneg, qpos) for sub in subs], slo, shi)
    codes = []
    for s in range(16):
        codes += _codes_symmetric(subs[s], f32(d * sc[s]), qneg, qpos)
    return d, sc, codes


def _quantize_q3_k(values):
    xs = _blocks(values, 256)
    out = bytearray()
    for i in range(0, len(xs), 256):
        block = xs[i:i + 256]
        d, sc, codes = _superblock_symmetric_codes(block, 4, 3, -32, 31)  # q + 4, 0..7
        hmask = bytearray(32)
        qs = bytearray(64)
        for e, code in enumerate(codes):
            qs[(e >> 7) * 32 + (e & 31)] |= (code & 3) << (2 * ((e >> 5) & 3))
            hmask[e & 31] |= (code >> 2) << (e >> 5)
        raw = bytearray(12)
        for j in range(16):
            v = sc[j] + 32
            raw[j & 7] |= (v & 15) << (4 * (j >> 3))
            raw[8 + (j & 3)] |= (v >> 4) << (2 * (j >> 2))
        out += hmask + qs + raw + struct.pack("<e", d)
    return bytes(out)


def _dequantize_q3_k(data):
    """Q3_K, 110 bytes: hmask[32], qs[64], scales[12], f16 d. Element e (0..255):
    sub-block e // 16, scale sc = _q3_k_scales(scales)[e // 16] (0..63); low code
    lo = (qs[32*(e // 128) + e % 32] >> (2 * ((e // 32) % 4))) & 3; high bit
    h = (hmask[e % 32] >> (e // 32)) & 1.
    dl = d * (float)(sc - 32); y = dl * (float)(lo - (h ? 0 : 4)), both exact."""
    out = []
    for hmask, qs, raw, d in struct.iter_unpack("<32s64s12se", data):
        scales = _q3_k_scales(raw)
        for s in range(16):
            dl = f32(d * (scales[s] - 32))
            lut = _f32s([dl * (u - 4) for u in range(8)])  # u = lo + 4*h
            jj = (s >> 1) & 3
            shift = 2 * jj
            bit = (s >> 3) * 4 + jj
            start = (s & 1) * 16
            qstart = (s >> 3) * 32 + start
            out.extend([lut[((qs[qstart + l] >> shift) & 3)
                            | (((hmask[start + l] >> bit) & 1) << 2)]
                        for l in range(16)])
    return out


def _scale_min_k4(j, raw):
    # Six-bit scale and min of sub-block j from Q4_K/Q5_K's 12 packed bytes
    # (ggml's get_scale_min_k4).
    if j < 4:
        return raw[j] & 63, raw[j + 4] & 63
    return ((raw[j + 4] & 15) | ((raw[j - 4] >> 6) << 4),
            (raw[j + 4] >> 4) | ((raw[j] >> 6) << 4))


def _pack_scale_min_k4(sc, mn):
    raw = bytearray(12)
    for j in range(4):
        raw[j] = sc[j] | ((sc[j + 4] >> 4) << 6)
        raw[j + 4] = mn[j] | ((mn[j + 4] >> 4) << 6)
        raw[j + 8] = (sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4)
    return bytes(raw)


def _quantize_k_affine(values, nmax):
    # Q4_K (nmax 15) and Q5_K (nmax 31): eight 32-value sub-blocks.
    xs = _blocks(values, 256)
    out = bytearray()
    for i in range(0, len(xs), 256):
        block = xs[i:i + 256]
        subs = [block[s * 32:(s + 1) * 32] for s in range(8)]
        fits = [_fit_affine(sub, nmax, True) for sub in subs]
        d, sc = _superblock_scales([a for a, _ in fits], 63)
        dmin, mn = _superblock_scales([-b for _, b in fits], 63)
        codes = [_codes_affine(subs[s], f32(d * sc[s]), f32(dmin * mn[s]), nmax) for s in range(8)]
        out += struct.pack("<ee", d, dmin) + _pack_scale_min_k4(sc, mn)
        if nmax == 31:
            # qh[l] bit s holds bit 4 of sub-block s's code l.
            qh = bytearray(32)
            for s in range(8):
                for l, code in enumerate(codes[s]):
                    qh[l] |= (code >> 4) << s
            out += qh
        for c in range(4):
            lo, hi = codes[2 * c], codes[2 * c + 1]
            out += bytes([(lo[l] & 15) | ((hi[l] & 15) << 4) for l in range(32)])
    return bytes(out)


def _dequantize_q4_k(data):
    """Q4_K, 144 bytes: f16 d, f16 dmin, scales[12], qs[128]. Sub-block s (0..7) holds
    elements 32s..32s+31; (sc, m) = _scale_min_k4(s, scales); its code l is
    qs[32*(s // 2) + l] & 15 for even s, >> 4 for odd s.
    d1 = d * (float)sc; m1 = dmin * (float)m; y = d1 * (float)q - m1
    (each rounded to binary32; only the subtraction is inexact)."""
    out = []
    for d, dmin, raw, qs in struct.iter_unpack("<ee12s128s", data):
        for s in range(8):
            sc, m = _scale_min_k4(s, raw)
            d1 = f32(d * sc)
            m1 = f32(dmin * m)
            lut = _f32s([d1 * q - m1 for q in range(16)])
            chunk = qs[32 * (s >> 1):32 * (s >> 1) + 32]
            if s & 1:
                out.extend([lut[b >> 4] for b in chunk])
            else:
                out.extend([lut[b & 15] for b in chunk])
    return out


def _dequantize_q5_k(data):
    """Q5_K, 176 bytes: f16 d, f16 dmin, scales[12], qh[32], qs[128]. As Q4_K, with
    bit 4 of sub-block s's code l in (qh[l] >> s) & 1 (ggml's u1/u2 masks, shifted by
    2 per 64-value chunk).
    d1 = d * (float)sc; m1 = dmin * (float)m; y = d1 * (float)q - m1
    (each rounded to binary32; only the subtraction is inexact)."""
    out = []
    for d, dmin, raw, qh, qs in struct.iter_unpack("<ee12s32s128s", data):
        for s in range(8):
            sc, m = _scale_min_k4(s, raw)
            d1 = f32(d * sc)
            m1 = f32(dmin * m)
            lut = _f32s([d1 * q - m1 for q in range(32)])
            chunk = qs[32 * (s >> 1):32 * (s >> 1) + 32]
            shift = 4 * (s & 1)
            out.extend([lut[((b >> shift) & 15) | (((h >> s) & 1) << 4)]
                        for b, h in zip(chunk, qh)])
    return out


def _quantize_q6_k(values):
    xs = _blocks(values, 256)
    out = bytearray()
    for i in range(0, len(xs), 256):
        block = xs[i:i + 256]
        d, sc, codes = _superblock_symmetric_codes(block, 32, 31, -128, 127)  # q + 32, 0..63
        ql = bytearray(128)
        qh = bytearray(64)
        for e, code in enumerate(codes):
            # Element e = 128h + 32g + l: low nibble in ql[64h + 32(g & 1) + l]
            # (high half of the byte for g >= 2), top bits in qh[32h + l] at 2g.
            h, g, ll = e >> 7, (e >> 5) & 3, e & 31
            ql[64 * h + 32 * (g & 1) + ll] |= (code & 15) << (4 * (g >> 1))
            qh[32 * h + ll] |= (code >> 4) << (2 * g)
        out += ql + qh + struct.pack("<16b", *sc) + struct.pack("<e", d)
    return bytes(out)


def _dequantize_q6_k(data):
    """Q6_K, 210 bytes: ql[128], qh[64], int8 scales[16], f16 d. Element
    e = 128h + 32g + l (h 0..1, g 0..3, l 0..31): low nibble of
    ql[64h + 32(g & 1) + l] (g < 2) or its high nibble (g >= 2), bits 4-5 from
    (qh[32h + l] >> 2g) & 3; sub-block e // 16 gives sc = scales[e // 16].
    y = (d * (float)sc) * (float)(q - 32), both products exact."""
    out = []
    for ql, qh, raw, d in struct.iter_unpack("<128s64s16se", data):
        scales = struct.unpack("<16b", raw)
        for s in range(16):
            ds = f32(d * scales[s])
            h, g, half = s >> 3, (s >> 1) & 3, (s & 1) * 16
            lstart = 64 * h + 32 * (g & 1) + half
            hstart = 32 * h + half
            lshift = 4 * (g >> 1)
            hshift = 2 * g
            out.extend(_f32s([ds * ((((ql[lstart + l] >> lshift) & 15)
                                     | (((qh[hstart + l] >> hshift) & 3) << 4)) - 32)
                              for l in range(16)]))
    return out


# -- BF16 ---------------------------------------------------------------------------

def _quantize_bf16(values):
    """The top half of each binary32, rounded to nearest even; NaN stays a (quiet) NaN."""
    try:
        words = struct.unpack("<%dI" % len(values), struct.pack("<%df" % len(values), *values))
    except OverflowError:
        words = struct.unpack("<%dI" % len(values),
                              struct.pack("<%df" % len(values), *[f32(v) for v in values]))
    out = []
    for w in words:
        if (w & 0x7FFFFFFF) > 0x7F800000:
            out.append((w >> 16) | 0x40)  # keep sign and top payload, force quiet
        else:
            out.append((w + 0x7FFF + ((w >> 16) & 1)) >> 16)
    return struct.pack("<%dH" % len(out), *out)


def _dequantize_bf16(data):
    """BF16: y = the binary32 whose top 16 bits are the stored ones (exact)."""
    data = bytes(data)
    wide = bytearray(2 * len(data))
    wide[2::4] = data[0::2]
    wide[3::4] = data[1::2]
    return list(struct.unpack("<%df" % (len(data) // 2), wide))


def _quantize_tq2_0(values):
    """TQ2_0 as ggml's reference quantizer writes it: per block of 256, d = max |x|
    and the code round(x / d) + 1 (0, 1, 2 for -1, 0, 1)."""
    xs = _blocks(values, 256)
    out = bytearray()
    for i in range(0, len(xs), 256):
        block = xs[i:i + 256]
        d = max(abs(v) for v in block)
        inv = f32(1.0 / d) if d else 0.0
        qs = bytearray(64)
        for e, v in enumerate(block):
            q = _round_half_away(f32(v * inv)) + 1
            qs[(e >> 7) * 32 + (e & 31)] |= (q & 3) << (2 * ((e >> 5) & 3))
        out += qs + struct.pack("<e", d)
    return bytes(out)


def _dequantize_tq2_0(data):
    """TQ2_0, 66 bytes: qs[64], f16 d. Element e (0..255) has the code
    (qs[32*(e // 128) + e % 32] >> (2 * ((e // 32) % 4))) & 3 and is (code - 1) * d."""
    out = []
    for qs, d in struct.iter_unpack("<64se", data):
        for e in range(256):
            q = (qs[(e >> 7) * 32 + (e & 31)] >> (2 * ((e >> 5) & 3))) & 3
            out.append(f32((q - 1) * d))
    return out


_ENCODERS = {
    GGML_Q8_0: _quantize_q8_0,
    GGML_Q4_0: _quantize_q4_0,
    GGML_Q4_1: _quantize_q4_1,
    GGML_Q5_0: _quantize_q5_0,
    GGML_Q5_1: _quantize_q5_1,
    GGML_Q2_K: _quantize_q2_k,
    GGML_Q3_K: _quantize_q3_k,
    GGML_Q4_K: lambda values: _quantize_k_affine(values, 15),
    GGML_Q5_K: lambda values: _quantize_k_affine(values, 31),
    GGML_Q6_K: _quantize_q6_k,
    GGML_IQ4_NL: _quantize_iq4_nl,
    GGML_BF16: _quantize_bf16,
    GGML_TQ2_0: _quantize_tq2_0,
}

_DECODERS = {
    GGML_Q4_1: _dequantize_q4_1,
    GGML_Q5_0: _dequantize_q5_0,
    GGML_Q5_1: _dequantize_q5_1,
    GGML_Q2_K: _dequantize_q2_k,
    GGML_Q3_K: _dequantize_q3_k,
    GGML_Q4_K: _dequantize_q4_k,
    GGML_Q5_K: _dequantize_q5_k,
    GGML_Q6_K: _dequantize_q6_k,
    GGML_IQ4_NL: _dequantize_iq4_nl,
    GGML_BF16: _dequantize_bf16,
    GGML_TQ2_0: _dequantize_tq2_0,
}


def quantize(values, ggml_type):
    """Encode a flat list of floats (ne[0] innermost) as bytes of ggml_type (any type
    in TYPE_BY_NAME)."""
    n = len(values)
    if ggml_type == GGML_F32:
        return struct.pack("<%df" % n, *values)
    if ggml_type == GGML_F16:
        return struct.pack("<%de" % n, *values)
    if ggml_type not in _ENCODERS:
        raise GGUFError("cannot encode ggml type %s" % type_name(ggml_type))
    block = GGML_TYPES[ggml_type][1]
    if n % block:
        raise GGUFError("%d values is not a whole number of %d-value blocks" % (n, block))
    return _ENCODERS[ggml_type](values)


def dequantize(data, ggml_type):
    """Decode bytes of ggml_type (any type in TYPE_BY_NAME) to a flat list of floats."""
    if ggml_type in GGML_TYPES and ggml_type != GGML_F32:
        size = GGML_TYPES[ggml_type][2]
        if len(data) % size:
            raise GGUFError("%d bytes is not a whole number of %d-byte %s blocks"
                            % (len(data), size, type_name(ggml_type)))
    if ggml_type == GGML_F32:
        return list(struct.unpack("<%df" % (len(data) // 4), data))
    if ggml_type == GGML_F16:
        return list(struct.unpack("<%de" % (len(data) // 2), data))
    if ggml_type == GGML_Q8_0:
        out = []
        for fields in struct.iter_unpack("<e32b", data):
            d = fields[0]
            out.extend(d * q for q in fields[1:])
        return out
    if ggml_type == GGML_Q4_0:
        out = []
        for fields in struct.iter_unpack("<e16B", data):
            d = fields[0]
            packed = fields[1:]
            out.extend(((b & 0x0F) - 8) * d for b in packed)
            out.extend(((b >> 4) - 8) * d for b in packed)
        return out
    if ggml_type in _DECODERS:
        return _DECODERS[ggml_type](data)
    raise GGUFError("cannot decode ggml type %s" % type_name(ggml_type))


def tensor_values(tensor):
    """The tensor's values as floats, flat with ne[0] innermost."""
    return dequantize(tensor["data"], tensor["type"])


# ---------------------------------------------------------------------------
# Reading

class _Cursor:
    def __init__(self, buf):
        self.buf = buf
        self.pos = 0

    def remaining(self):
        return len(self.buf) - self.pos

    def need(self, n, what):
        if n > self.remaining():
            raise GGUFError("truncated file: %s needs %d bytes at offset %d, %d left"
                            % (what, n, self.pos, self.remaining()))

    def unpack(self, fmt, what):
        size = struct.calcsize(fmt)
        self.need(size, what)
        values = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return values

    def u32(self, what):
        return self.unpack("<I", what)[0]

    def u64(self, what):
        return self.unpack("<Q", what)[0]

    def string(self, what):
        length = self.u64(what + " length")
        if length > self.remaining():
            raise GGUFError("%s: string length %d at offset %d exceeds the %d bytes left"
                            % (what, length, self.pos - 8, self.remaining()))
        raw = bytes(self.buf[self.pos:self.pos + length])
        self.pos += length
        # surrogateescape keeps any invalid UTF-8 bytes intact for a rewrite.
        return raw.decode("utf-8", "surrogateescape")


def _min_value_size(vtype):
    if vtype in _SCALAR_FORMATS:
        return struct.calcsize(_SCALAR_FORMATS[vtype])
    if vtype == GGUF_STRING:
        return 8
    return 12  # array: element type + count


def _read_value(cur, vtype, what):
    if vtype in _SCALAR_FORMATS:
        return cur.unpack("<" + _SCALAR_FORMATS[vtype], what)[0]
    if vtype == GGUF_STRING:
        return cur.string(what)
    if vtype == GGUF_ARRAY:
        etype = cur.u32(what + " element type")
        count = cur.u64(what + " count")
        if etype not in VALUE_TYPE_NAMES:
            raise GGUFError("%s: unknown array element type %d" % (what, etype))
        # Reject impossible counts before allocating anything for them.
        if count * _min_value_size(etype) > cur.remaining():
            raise GGUFError("%s: array count %d does not fit in the %d bytes left"
                            % (what, count, cur.remaining()))
        if etype in _SCALAR_FORMATS:
            items = list(cur.unpack("<%d%s" % (count, _SCALAR_FORMATS[etype]), what))
        else:
            items = [_read_value(cur, etype, what) for _ in range(count)]
        return (etype, items)
    raise GGUFError("%s: unknown value type %d" % (what, vtype))


def parse_gguf(buf, load_data=True):
    """Parse a whole GGUF file held in memory.

    Returns a dict with version, metadata, tensors, alignment, data_start and size.
    With load_data=False the tensor data is not checked or sliced (data is None), which
    lets damaged files still be inspected.
    """
    cur = _Cursor(buf)
    magic = bytes(cur.unpack("<4s", "magic")[0])
    if magic != GGUF_MAGIC:
        raise GGUFError("bad magic %r" % magic)
    version = cur.u32("version")
    if version not in (2, 3):
        raise GGUFError("unsupported GGUF version %d" % version)
    tensor_count = cur.u64("tensor count")
    kv_count = cur.u64("metadata count")
    # Reject impossible counts before looping over them.
    if kv_count * 12 > cur.remaining():
        raise GGUFError("metadata count %d is too large for the file" % kv_count)

    metadata = {}
    for index in range(kv_count):
        key = cur.string("metadata key %d" % index)
        if key in metadata:
            raise GGUFError("duplicate metadata key %r" % key)
        vtype = cur.u32("type of " + key)
        metadata[key] = (vtype, _read_value(cur, vtype, key))

    if tensor_count * 24 > cur.remaining():
        raise GGUFError("tensor count %d is too large for the file" % tensor_count)
    tensors = []
    names = set()
    for index in range(tensor_count):
        name = cur.string("tensor name %d" % index)
        if name in names:
            raise GGUFError("duplicate tensor name %r" % name)
        names.add(name)
        n_dims = cur.u32(name + " n_dims")
        if n_dims > GGML_MAX_DIMS:
            raise GGUFError("%s: %d dimensions (max %d)" % (name, n_dims, GGML_MAX_DIMS))
        ne = list(cur.unpack("<%dQ" % n_dims, name + " dims"))
        ggml_type = cur.u32(name + " type")
        offset = cur.u64(name + " offset")
        tensors.append({"name": name, "ne": ne, "type": ggml_type,
                        "offset": offset, "data": None})

    info = {"version": version, "metadata": metadata, "tensors": tensors,
            "alignment": None, "data_start": None, "size": len(buf)}
    alignment = DEFAULT_ALIGNMENT
    if "general.alignment" in metadata:
        atype, alignment = metadata["general.alignment"]
        if atype != GGUF_U32 or alignment <= 0 or alignment & (alignment - 1):
            if load_data:
                raise GGUFError("general.alignment must be a u32 power of two, got %s %r"
                                % (VALUE_TYPE_NAMES.get(atype, atype), alignment))
            return info
    info["alignment"] = alignment
    info["data_start"] = align_up(cur.pos, alignment)
    if not load_data:
        return info

    data_start = info["data_start"]
    spans = []
    for t in tensors:
        nbytes = tensor_nbytes(t["type"], t["ne"])
        if t["offset"] % alignment:
            raise GGUFError("%s: offset %d is not a multiple of the alignment %d"
                            % (t["name"], t["offset"], alignment))
        start = data_start + t["offset"]
        if start + nbytes > len(buf):
            raise GGUFError("%s: data [%d, %d) runs past the end of the file (%d bytes)"
                            % (t["name"], start, start + nbytes, len(buf)))
        t["data"] = bytes(buf[start:start + nbytes])
        spans.append((t["offset"], t["offset"] + nbytes, t["name"]))
    spans.sort()
    for (_, end, first), (start, _, second) in zip(spans, spans[1:]):
        if start < end:
            raise GGUFError("tensors %s and %s overlap" % (first, second))
    return info


def read_gguf(path, load_data=True):
    """Read a GGUF file: returns (version, metadata, tensors)."""
    with open(path, "rb") as f:
        buf = f.read()
    info = parse_gguf(memoryview(buf), load_data)
    return info["version"], info["metadata"], info["tensors"]


# ---------------------------------------------------------------------------
# Writing

def _encode_string(value, out):
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    out += struct.pack("<Q", len(raw))
    out += raw


def _encode_value(vtype, value, out):
    if vtype in _SCALAR_FORMATS:
        out += struct.pack("<" + _SCALAR_FORMATS[vtype], value)
    elif vtype == GGUF_STRING:
        _encode_string(value, out)
    elif vtype == GGUF_ARRAY:
        etype, items = value
        out += struct.pack("<IQ", etype, len(items))
        if etype in _SCALAR_FORMATS:
            out += struct.pack("<%d%s" % (len(items), _SCALAR_FORMATS[etype]), *items)
        else:
            for item in items:
                _encode_value(etype, item, out)
    else:
        raise GGUFError("cannot encode value type %r" % vtype)


def metadata_alignment(metadata):
    entry = metadata.get("general.alignment")
    if entry is None:
        return DEFAULT_ALIGNMENT
    alignment = entry[1]
    if not isinstance(alignment, int) or alignment <= 0:
        raise GGUFError("general.alignment %r cannot be used for a layout" % (alignment,))
    return alignment


def default_offsets(tensors, alignment):
    """Tensors back to back in order, each starting on an alignment boundary."""
    offsets = []
    position = 0
    for t in tensors:
        position = align_up(position, alignment)
        offsets.append(position)
        position += len(t["data"])
    return offsets


def _encode_header(version, metadata, infos):
    """The header, KVs and tensor infos [(name, ne, ggml_type, offset)], padded to the
    data section. Returns (bytearray, layout) as encode_gguf describes layout."""
    out = bytearray(GGUF_MAGIC)
    out += struct.pack("<IQQ", version, len(infos), len(metadata))
    layout = {"kv": [], "tensor_info": [], "offsets": [info[3] for info in infos]}
    for key, (vtype, value) in metadata.items():
        start = len(out)
        _encode_string(key, out)
        out += struct.pack("<I", vtype)
        _encode_value(vtype, value, out)
        layout["kv"].append((key, start, len(out)))
    for name, ne, ggml_type, offset in infos:
        start = len(out)
        _encode_string(name, out)
        out += struct.pack("<I%dQ" % len(ne), len(ne), *ne)
        out += struct.pack("<IQ", ggml_type, offset)
        layout["tensor_info"].append((name, start, len(out)))
    data_start = align_up(len(out), metadata_alignment(metadata))
    layout["data_start"] = data_start
    out += bytes(data_start - len(out))
    return out, layout


def encode_gguf(metadata, tensors, version=3, offsets=None, check_sizes=True):
    """Serialize a GGUF file. Returns (bytearray, layout).

    offsets overrides the data offsets (default: default_offsets). layout records where
    things landed so callers can patch single fields: "kv" and "tensor_info" are lists
    of (name, start, end) byte ranges, plus "data_start" and "offsets".
    """
    alignment = metadata_alignment(metadata)
    if offsets is None:
        offsets = default_offsets(tensors, alignment)
    if check_sizes:
        for t in tensors:
            expected = tensor_nbytes(t["type"], t["ne"])
            if len(t["data"]) != expected:
                raise GGUFError("%s: %d data bytes, %s %s needs %d"
                                % (t["name"], len(t["data"]), type_name(t["type"]),
                                   t["ne"], expected))

    out, layout = _encode_header(version, metadata,
                                 [(t["name"], t["ne"], t["type"], off)
                                  for t, off in zip(tensors, offsets)])
    data_size = max([off + len(t["data"]) for t, off in zip(tensors, offsets)] or [0])
    data = bytearray(align_up(data_size, alignment))
    for t, offset in zip(tensors, offsets):
        data[offset:offset + len(t["data"])] = t["data"]
    out += data
    return out, layout


def write_gguf(path, metadata, tensors, version=3, offsets=None):
    blob, layout = encode_gguf(metadata, tensors, version, offsets)
    with open(path, "wb") as f:
        f.write(blob)
    return layout


# ---------------------------------------------------------------------------
# Random llama model

def synthetic_vocab(n_vocab):
    """(tokens, scores, token_types) shaped like a SentencePiece llama vocab."""
    if n_vocab < 3:
        raise GGUFError("vocab must hold at least <unk>, <s>, </s>")
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]
    n_bytes = min(256, n_vocab - 3)
    tokens += ["<0x%02X>" % b for b in range(n_bytes)]
    types += [6] * n_bytes
    scores = [0.0] * len(tokens)
    for k in range(1, n_vocab - len(tokens) + 1):
        tokens.append("\u2581t%d" % k)
        types.append(1)
        scores.append(float(-k))
    return tokens, scores, types


def gpt2_byte_chars():
    """The 256 characters of GPT-2's bytes_to_unicode in its vocab order: printable
    Latin-1 as itself first, then the other 68 bytes as U+0100 upwards."""
    printable = (list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD))
                 + list(range(0xAE, 0x100)))
    return [chr(b) for b in printable] + [chr(0x100 + k) for k in range(256 - len(printable))]


# Merges in the order GPT-2 learned them (roughly), written in its alphabet
# (\u0120 = space, \u010a = newline). Each result is a new piece and both halves
# exist before it, so a prefix of the list is always a consistent vocabulary.
GPT2_MERGES = [
    "\u0120 t", "\u0120 a", "h e", "i n", "r e", "o n", "\u0120t he", "e r", "\u0120 s",
    "a t", "\u0120 w", "\u0120 o", "e n", "\u0120 c", "i t", "i s", "a n", "o r", "e s",
    "\u0120 b", "e d", "\u0120 f", "in g", "\u0120 p", "o u", "\u0120a n", "a l", "a r",
    "\u0120t o", "\u0120 m", "\u0120o f", "\u0120 in", "\u0120 d", "\u0120 h", "\u0120an d",
    "i c", "a s", "l e", "\u0120t h", "i on", "o m", "l l", "en t", "\u0120 n", "\u0120 l",
    "s t", "\u0120 re", "v e", "\u0120 e", "r o", "l y", "\u0120b e", "\u0120 g", "\u0120 T",
    "c t", "\u0120 S", "i d", "o t", "\u0120 I", "u t", "e t", "\u0120 A", "\u0120 is",
    "\u0120o n", "i m", "a m", "o w", "a y", "a d", "s e", "\u0120th at", "\u0120 C", "i g",
    "\u0120f or", "a c", "\u0120 y", "v er", "u r", "\u0120 u", "l d", "\u0120s t", "\u0120 M",
    "' s", "\u0120 he", "\u0120 it", "at ion", "it h", "i r", "c e", "\u0120y ou", "i l",
    "\u0120 B", "\u0120w h", "o l", "\u0120 P", "\u0120w ith", "\u0120 1", "t er", "c h",
    "\u0120a s", "\u0120w e", "\u0120 (", "n d", "i ll", "\u0120 D", "i f", "\u0120 2", "a g",
    "er s", "k e", "\u0120 \"", "\u0120 H", "e m", "\u0120c on", "\u0120 W", "h er",
    "\u0120w as", "\u0120 r", "o d", "\u0120 F", "u l", "at e", "\u0120a t", "r i", "p p",
    "o re", "\u0120T he", "0 0", "1 9", ". .", "\u010a \u010a", "\u0120 \u0120",
    "\u00c3 \u00a9", "\u0120 \u00c3\u00a9",
]

GPT2_SPECIALS = ["<|endoftext|>", "<|pad|>"]


def gpt2_vocab(n_vocab):
    """(tokens, merges, token_types, eos id) of a GPT-2 byte-level BPE vocab: the 256
    byte pieces, one piece per merge of a prefix of GPT2_MERGES, then the control
    tokens; <|endoftext|> serves as BOS and EOS."""
    lo = 256 + len(GPT2_SPECIALS)
    hi = lo + len(GPT2_MERGES)
    if not lo <= n_vocab <= hi:
        raise GGUFError("a gpt2 vocab holds 256 byte pieces, up to %d merges and %d control "
                        "tokens: --vocab must be in [%d, %d], got %d"
                        % (len(GPT2_MERGES), len(GPT2_SPECIALS), lo, hi, n_vocab))
    tokens = gpt2_byte_chars()
    merges = GPT2_MERGES[:n_vocab - lo]
    known = set(tokens)
    for m in merges:
        left, right = m.split(" ")
        if left not in known or right not in known or left + right in known:
            raise GGUFError("inconsistent merge %r" % m)  # a bad edit of GPT2_MERGES
        known.add(left + right)
        tokens.append(left + right)
    types = [1] * len(tokens) + [3] * len(GPT2_SPECIALS)
    eos = len(tokens)
    tokens += GPT2_SPECIALS
    return tokens, merges, types, eos


# Where each architecture's tensors depart from llama's (as llama.cpp's
# converters write them): qwen2's q/k/v biases, per-head q/k norms (qwen3,
# gemma3), gemma3's post-norms, phi3's fused attn_qkv and gate|up ffn_up.
ARCH_TRAITS = {
    "llama": set(),
    "qwen2": {"qkv_bias"},
    "qwen3": {"qk_norm"},
    "gemma3": {"qk_norm", "post_norms"},
    "phi3": {"fused"},
}


def llama_tensor_shapes(n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, tied=False,
                        arch="llama", head_dim=None):
    """[(name, ne)] in file order; 1-D tensors are norms and biases."""
    traits = ARCH_TRAITS[arch]
    head_dim = head_dim or n_embd // n_head
    q_dim, kv_dim = n_head * head_dim, n_head_kv * head_dim
    shapes = [("token_embd.weight", [n_embd, n_vocab])]
    for layer in range(n_layer):
        p = "blk.%d." % layer
        shapes.append((p + "attn_norm.weight", [n_embd]))
        if "fused" in traits:
            shapes.append((p + "attn_qkv.weight", [n_embd, q_dim + 2 * kv_dim]))
        else:
            shapes += [(p + "attn_q.weight", [n_embd, q_dim]),
                       (p + "attn_k.weight", [n_embd, kv_dim]),
                       (p + "attn_v.weight", [n_embd, kv_dim])]
        if "qkv_bias" in traits:
            shapes += [(p + "attn_q.bias", [q_dim]), (p + "attn_k.bias", [kv_dim]),
                       (p + "attn_v.bias", [kv_dim])]
        if "qk_norm" in traits:
            shapes += [(p + "attn_q_norm.weight", [head_dim]),
                       (p + "attn_k_norm.weight", [head_dim])]
        shapes.append((p + "attn_output.weight", [q_dim, n_embd]))
        if "post_norms" in traits:
            shapes.append((p + "post_attention_norm.weight", [n_embd]))
        shapes.append((p + "ffn_norm.weight", [n_embd]))
        if "fused" in traits:
            shapes.append((p + "ffn_up.weight", [n_embd, 2 * n_ff]))
        else:
            shapes += [(p + "ffn_gate.weight", [n_embd, n_ff]),
                       (p + "ffn_up.weight", [n_embd, n_ff])]
        shapes.append((p + "ffn_down.weight", [n_ff, n_embd]))
        if "post_norms" in traits:
            shapes.append((p + "post_ffw_norm.weight", [n_embd]))
    shapes.append(("output_norm.weight", [n_embd]))
    if not tied:
        shapes.append(("output.weight", [n_embd, n_vocab]))
    return shapes


def random_llama(n_embd=64, n_layer=2, n_head=4, n_head_kv=2, n_ff=96, n_vocab=64,
                 n_ctx=64, tied=False, ggml_type=GGML_F32, seed=1, rope_base=10000.0,
                 eps=1e-5, alignment=DEFAULT_ALIGNMENT, arch="llama", name=None,
                 vocab_model="llama", rope_scaling="none", head_dim=None,
                 sliding_window=0, rope_dim=None):
    """A model of architecture `arch` (ARCH_TRAITS) with seeded random weights.
    Returns (metadata, tensors).
    vocab_model picks the tokenizer: "llama" (synthetic_vocab) or "gpt2" (gpt2_vocab).
    rope_scaling: "none", "linear:F" (rope.scaling.type linear, factor F),
    "llama3" (a rope_freqs.weight tensor of Llama 3's per-pair divisors, with
    factor 8, low/high frequency factors 1 and 4 over an original context of
    n_ctx / 4, as Llama 3.1's converter writes it: no scaling type key) or
    "longrope:C" (phi3's short and long per-pair divisors, attn_factor for a
    training context of n_ctx over an original one of C).
    head_dim (attention.key_length) defaults to n_embd / n_head, rope_dim to
    head_dim; a non-zero sliding_window writes attention.sliding_window."""
    if arch not in ARCH_TRAITS:
        raise GGUFError("unknown architecture %r (%s)" % (arch, ", ".join(ARCH_TRAITS)))
    if n_head <= 0 or (not head_dim and n_embd % n_head):
        raise GGUFError("n_embd %d is not divisible by n_head %d" % (n_embd, n_head))
    if n_head_kv <= 0 or n_head % n_head_kv:
        raise GGUFError("n_head %d is not divisible by n_head_kv %d" % (n_head, n_head_kv))
    if ggml_type not in FILE_TYPE_FOR:
        raise GGUFError("unsupported weight type %s" % type_name(ggml_type))
    block = GGML_TYPES[ggml_type][1]
    if n_embd % block or n_ff % block or (n_head * (head_dim or 0)) % block:
        raise GGUFError("%s needs n_embd, n_ff and n_head * head_dim to be multiples of %d"
                        % (type_name(ggml_type), block))
    if vocab_model not in ("llama", "gpt2"):
        raise GGUFError("unknown vocab model %r (llama or gpt2)" % vocab_model)
    head_dim = head_dim or n_embd // n_head
    rope_dim = rope_dim or head_dim
    metadata = {
        "general.architecture": (GGUF_STRING, arch),
        "general.name": (GGUF_STRING, name or "random-" + arch),
        "general.alignment": (GGUF_U32, alignment),
        "general.file_type": (GGUF_U32, FILE_TYPE_FOR[ggml_type]),
        arch + ".context_length": (GGUF_U32, n_ctx),
        arch + ".embedding_length": (GGUF_U32, n_embd),
        arch + ".block_count": (GGUF_U32, n_layer),
        arch + ".feed_forward_length": (GGUF_U32, n_ff),
        arch + ".attention.head_count": (GGUF_U32, n_head),
        arch + ".attention.head_count_kv": (GGUF_U32, n_head_kv),
        arch + ".rope.dimension_count": (GGUF_U32, rope_dim),
        arch + ".rope.freq_base": (GGUF_F32, rope_base),
        arch + ".attention.layer_norm_rms_epsilon": (GGUF_F32, eps),
        arch + ".vocab_size": (GGUF_U32, n_vocab),
    }
    if head_dim * n_head != n_embd:
        metadata[arch + ".attention.key_length"] = (GGUF_U32, head_dim)
        metadata[arch + ".attention.value_length"] = (GGUF_U32, head_dim)
    if sliding_window:
        metadata[arch + ".attention.sliding_window"] = (GGUF_U32, sliding_window)
    if vocab_model == "llama":
        tokens, scores, token_types = synthetic_vocab(n_vocab)
        metadata.update({
            "tokenizer.ggml.model": (GGUF_STRING, "llama"),
            "tokenizer.ggml.tokens": (GGUF_ARRAY, (GGUF_STRING, tokens)),
            "tokenizer.ggml.scores": (GGUF_ARRAY, (GGUF_F32, scores)),
            "tokenizer.ggml.token_type": (GGUF_ARRAY, (GGUF_I32, token_types)),
            "tokenizer.ggml.bos_token_id": (GGUF_U32, 1),
            "tokenizer.ggml.eos_token_id": (GGUF_U32, 2),
            "tokenizer.ggml.unknown_token_id": (GGUF_U32, 0),
            "tokenizer.ggml.add_bos_token": (GGUF_BOOL, True),
            "tokenizer.ggml.add_eos_token": (GGUF_BOOL, False),
            "tokenizer.ggml.add_space_prefix": (GGUF_BOOL, True),
        })
    else:
        # As llama.cpp's converter writes GPT-2 vocabs: no scores, no unknown token.
        tokens, merges, token_types, eos = gpt2_vocab(n_vocab)
        metadata.update({
            "tokenizer.ggml.model": (GGUF_STRING, "gpt2"),
            "tokenizer.ggml.tokens": (GGUF_ARRAY, (GGUF_STRING, tokens)),
            "tokenizer.ggml.token_type": (GGUF_ARRAY, (GGUF_I32, token_types)),
            "tokenizer.ggml.merges": (GGUF_ARRAY, (GGUF_STRING, merges)),
            "tokenizer.ggml.bos_token_id": (GGUF_U32, eos),
            "tokenizer.ggml.eos_token_id": (GGUF_U32, eos),
            "tokenizer.ggml.add_bos_token": (GGUF_BOOL, False),
            "tokenizer.ggml.add_eos_token": (GGUF_BOOL, False),
        })

    rng = random.Random(seed)
    tensors = []
    if rope_scaling.startswith("linear:"):
        metadata[arch + ".rope.scaling.type"] = (GGUF_STRING, "linear")
        metadata[arch + ".rope.scaling.factor"] = (GGUF_F32, float(rope_scaling[7:]))
    elif rope_scaling == "llama3":
        original = max(n_ctx / 4, 1.0)
        low_wavelen, high_wavelen = original / 1.0, original / 4.0
        factors = []
        for i in range(rope_dim // 2):
            freq = rope_base ** (-2.0 * i / rope_dim)
            wavelen = 2 * math.pi / freq
            if wavelen < high_wavelen:
                factors.append(1.0)
            elif wavelen > low_wavelen:
                factors.append(8.0)
            else:
                smooth = (original / wavelen - 1.0) / (4.0 - 1.0)
                factors.append(1.0 / ((1 - smooth) / 8.0 + smooth))
        tensors.append({"name": "rope_freqs.weight", "ne": [rope_dim // 2], "type": GGML_F32,
                        "offset": None, "data": quantize(factors, GGML_F32)})
    elif rope_scaling.startswith("longrope:"):
        # phi3's converter: both factor lists as tensors, the original context and
        # the magnitude scale sqrt(1 + ln(scale) / ln(original)) as metadata.
        original = int(rope_scaling[9:])
        metadata[arch + ".rope.scaling.original_context_length"] = (GGUF_U32, original)
        scale = n_ctx / original
        metadata[arch + ".rope.scaling.attn_factor"] = (
            GGUF_F32, math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1 else 1.0)
        for which, lo, hi in (("short", 1.0, 1.5), ("long", 1.0, 8.0)):
            factors = [lo + (hi - lo) * i / max(rope_dim // 2 - 1, 1)
                       for i in range(rope_dim // 2)]
            tensors.append({"name": "rope_factors_%s.weight" % which, "ne": [rope_dim // 2],
                            "type": GGML_F32, "offset": None,
                            "data": quantize(factors, GGML_F32)})
    elif rope_scaling != "none":
        raise GGUFError("unknown rope scaling %r (none, linear:F, llama3, longrope:C)"
                        % rope_scaling)
    for tname, ne in llama_tensor_shapes(n_embd, n_layer, n_head, n_head_kv, n_ff,
                                         n_vocab, tied, arch, head_dim):
        count = n_elements(ne)
        if tname.endswith(".bias"):
            values = [rng.gauss(0.0, 0.2) for _ in range(count)]
            ttype = GGML_F32
        elif len(ne) == 1:
            values = [1.0 + rng.gauss(0.0, 0.1) for _ in range(count)]
            ttype = GGML_F32  # norms stay F32, as llama.cpp's converters keep them
        else:
            sigma = 0.5 if tname == "token_embd.weight" else 0.08
            values = [rng.gauss(0.0, sigma) for _ in range(count)]
            ttype = ggml_type
        tensors.append({"name": tname, "ne": ne, "type": ttype, "offset": None,
                        "data": quantize(values, ttype)})
    if arch == "qwen2":
        metadata["tokenizer.ggml.pre"] = (GGUF_STRING, "qwen2")
    return metadata, tensors


# ---------------------------------------------------------------------------
# Conversion

# Streamed models: large random-weight files written without holding them.
STREAM_POOL_VALUES = 1000003  # not a power of two, so tiles never line up with rows


def _streamed_layout(n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx, ggml_type,
                     name):
    """(metadata, [(name, ne, ggml_type, offset, nbytes)], data_bytes)."""
    # random_llama writes the metadata a Kiln-readable llama needs (vocab, tokenizer
    # keys); a 1-wide model keeps its pure-Python weights free, then the real
    # dimensions replace the tiny ones.
    metadata, _ = random_llama(n_embd=1, n_layer=1, n_head=1, n_head_kv=1, n_ff=1,
                               n_vocab=n_vocab, n_ctx=n_ctx, ggml_type=GGML_F16, name=name)
    set_file_type(metadata, ggml_type)
    metadata.update({
        "llama.context_length": (GGUF_U32, n_ctx),
        "llama.embedding_length": (GGUF_U32, n_embd),
        "llama.block_count": (GGUF_U32, n_layer),
        "llama.feed_forward_length": (GGUF_U32, n_ff),
        "llama.attention.head_count": (GGUF_U32, n_head),
        "llama.attention.head_count_kv": (GGUF_U32, n_head_kv),
        "llama.rope.dimension_count": (GGUF_U32, n_embd // n_head),
    })
    alignment = metadata_alignment(metadata)
    tensors, position = [], 0
    for tname, ne in llama_tensor_shapes(n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab):
        ttype = GGML_F32 if len(ne) == 1 else ggml_type
        nbytes = tensor_nbytes(ttype, ne)
        position = align_up(position, alignment)
        tensors.append((tname, ne, ttype, position, nbytes))
        position += nbytes
    return metadata, tensors, align_up(position, alignment)


def _streamed_header(metadata, tensors):
    """Header, KVs and tensor infos of a streamed model, padded to the data section."""
    return _encode_header(3, metadata, [t[:4] for t in tensors])[0]


def streamed_llama_size(n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx,
                        ggml_type=GGML_F16, name=None):
    """Bytes of the file write_streamed_llama writes."""
    metadata, tensors, data_bytes = _streamed_layout(n_embd, n_layer, n_head, n_head_kv, n_ff,
                                                     n_vocab, n_ctx, ggml_type, name)
    return len(_streamed_header(metadata, tensors)) + data_bytes


def write_streamed_llama(path, n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx,
                         ggml_type=GGML_F16, name=None, seed=7):
    """A llama of any size with random weights (F32 norms, 2-D tensors of ggml_type:
    F16, Q8_0 or Q4_0), written tensor by tensor: each is a tiling of one pool of
    gaussian values (encoded once), starting at a different point of it, so the data
    is varied but cheap and the memory small whatever the model's size."""
    if ggml_type not in (GGML_F16, GGML_Q8_0, GGML_Q4_0):
        raise GGUFError("streamed models are F16, Q8_0 or Q4_0, not %s" % type_name(ggml_type))
    metadata, tensors, data_bytes = _streamed_layout(n_embd, n_layer, n_head, n_head_kv, n_ff,
                                                     n_vocab, n_ctx, ggml_type, name)
    rng = random.Random(seed)
    block_values, block_bytes = GGML_TYPES[ggml_type][1], GGML_TYPES[ggml_type][2]
    # Whole blocks of values, each pool twice over so any start has a pool after it.
    count = STREAM_POOL_VALUES - STREAM_POOL_VALUES % block_values
    pools = {}
    for kind, sigma in (("weights", 0.08), ("embed", 0.5)):
        values = [rng.gauss(0.0, sigma) for _ in range(STREAM_POOL_VALUES)][:count]
        pool = (struct.pack("<%de" % count, *values) if ggml_type == GGML_F16
                else quantize(values, ggml_type))
        pools[kind] = memoryview(pool + pool)
    size = len(pools["weights"]) // 2
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(_streamed_header(metadata, tensors))
        position = 0
        for index, (tname, ne, ttype, offset, nbytes) in enumerate(tensors):
            f.write(bytes(offset - position))
            if ttype == GGML_F32:  # norms: small, drawn one by one
                values = [1.0 + rng.gauss(0.0, 0.1) for _ in range(ne[0])]
                f.write(struct.pack("<%df" % ne[0], *values))
            else:
                view = pools["embed" if tname == "token_embd.weight" else "weights"]
                start = (index * 7919 * block_bytes) % size  # on a block
                left = nbytes
                while left:
                    n = min(left, size)
                    f.write(view[start:start + n])
                    left -= n
                    start = (start + n) % size
            position = offset + nbytes
        f.write(bytes(data_bytes - position))
    os.replace(tmp, path)


def set_file_type(metadata, ggml_type):
    # Assigning an existing key keeps its position, so the KV order is unchanged.
    metadata["general.file_type"] = (GGUF_U32, FILE_TYPE_FOR[ggml_type])


# Types convert can read back (quantize() encodes all of them too).
DECODABLE = (GGML_F32, GGML_F16, GGML_BF16, GGML_Q8_0, GGML_Q4_0, GGML_Q4_1, GGML_Q5_0,
             GGML_Q5_1, GGML_Q2_K, GGML_Q3_K, GGML_Q4_K, GGML_Q5_K, GGML_Q6_K, GGML_IQ4_NL,
             GGML_TQ2_0)


def convert_tensors(tensors, ggml_type):
    """Re-encode every 2-D tensor of a decodable type to ggml_type; 1-D ones stay."""
    return convert_tensors_to(tensors, {t["name"]: ggml_type for t in tensors})


def convert_tensors_to(tensors, types):
    """Re-encode each 2-D tensor named in `types` to its type there; 1-D ones stay."""
    result = []
    for t in tensors:
        t = dict(t)
        ggml_type = types.get(t["name"])
        if (ggml_type is not None and len(t["ne"]) == 2 and t["type"] in DECODABLE
                and t["type"] != ggml_type):
            tensor_nbytes(ggml_type, t["ne"])  # raises if ne[0] does not fit the blocks
            t["data"] = quantize(tensor_values(t), ggml_type)
            t["type"] = ggml_type
        result.append(t)
    return result


# llama-quantize presets: name -> (default ggml type, general.file_type).
MIXES = {
    "q8_0": (GGML_Q8_0, 7),
    "q4_0": (GGML_Q4_0, 2),
    "q4_1": (GGML_Q4_1, 3),
    "q5_0": (GGML_Q5_0, 8),
    "q5_1": (GGML_Q5_1, 9),
    "iq4_nl": (GGML_IQ4_NL, 25),
    "q6_k": (GGML_Q6_K, 18),
    "q4_k_m": (GGML_Q4_K, 15),
    "q5_k_m": (GGML_Q5_K, 17),
}

# What llama.cpp falls back to when ne[0] is not a whole number of the chosen type's
# blocks (then F16 if that does not fit either).
_FALLBACK = {GGML_Q2_K: GGML_IQ4_NL, GGML_Q3_K: GGML_IQ4_NL, GGML_TQ2_0: GGML_IQ4_NL, GGML_Q4_K: GGML_Q5_0,
             GGML_Q5_K: GGML_Q5_1, GGML_Q6_K: GGML_Q8_0}


def _use_more_bits(i, n):
    # The layers llama.cpp's _M mixes give more bits: the first and last eighth
    # and every third layer between.
    return i < n // 8 or i >= 7 * n // 8 or (i - n // 8) % 3 == 2


def _layer_of(name):
    # "blk.N." -> N; -1 for tensors outside the layers.
    if name.startswith("blk."):
        head = name[4:].split(".", 1)[0]
        if head.isdigit():
            return int(head)
    return -1


def mix_types(mix, metadata, tensors):
    """{tensor name: ggml type} as llama-quantize's default (non --pure, no imatrix)
    rules pick them for `mix`, for the tensors it would quantize.

    Follows llama.cpp's llama_tensor_get_type for these presets:
      * output.weight (token_embd.weight when the model has no output.weight, i.e.
        tied) -> Q8_0 when its ne[0] is not a multiple of the base type's block, else
        Q6_K unless the base is Q8_0;
      * q4_k_m, q5_k_m: attn_v.weight and ffn_down -> Q6_K on the use_more_bits
        layers (i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2); attn_qkv.weight ->
        Q5_K (q4_k_m) or Q6_K (q5_k_m);
      * iq4_nl: attn_v.weight -> Q5_K when n_head / n_head_kv >= 4, ffn_down -> Q5_K
        on layers i < n/8;
      * everything else at the base type; then a type whose block does not divide
        ne[0] falls back as llama.cpp does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0,
        and F16 if that does not fit either); a legacy base type that does not fit
        is an error there and here.
    Simplified: the layer index is read from the "blk.N." name (llama.cpp counts
    attn_v/ffn_down tensors in its layer-then-name order, the same for llama files);
    the Falcon, 70B, n_expert == 8 and MoE special cases and the output/embedding
    type overrides are not modelled. Tensors quantized: 2-D, name ending in
    "weight", not a norm.
    """
    if mix not in MIXES:
        raise GGUFError("unknown mix %r (%s)" % (mix, ", ".join(sorted(MIXES))))
    base = MIXES[mix][0]
    arch = metadata.get("general.architecture", (GGUF_STRING, "llama"))[1]
    names = [t["name"] for t in tensors]
    n_layer = metadata.get(arch + ".block_count", (GGUF_U32, None))[1]
    if n_layer is None:
        n_layer = max([_layer_of(n) for n in names] + [-1]) + 1
    n_attention_wv = sum(1 for n in names if "attn_v.weight" in n or "attn_qkv.weight" in n)
    n_head = metadata.get(arch + ".attention.head_count", (GGUF_U32, 1))[1]
    n_head_kv = metadata.get(arch + ".attention.head_count_kv", (GGUF_U32, n_head))[1] or n_head
    n_gqa = n_head // n_head_kv if n_head_kv else 1
    has_output = "output.weight" in names
    result = {}
    for t in tensors:
        name, ne = t["name"], t["ne"]
        if len(ne) != 2 or not name.endswith("weight") or "_norm.weight" in name:
            continue
        layer = _layer_of(name)
        new = base
        if name == "output.weight" or (not has_output and name == "token_embd.weight"):
            if ne[0] % GGML_TYPES[base][1]:
                new = GGML_Q8_0
            elif base != GGML_Q8_0:
                new = GGML_Q6_K
        elif name == "token_embd.weight":
            pass
        elif "attn_v.weight" in name:
            if mix == "iq4_nl" and n_gqa >= 4:
                new = GGML_Q5_K
            elif mix in ("q4_k_m", "q5_k_m") and _use_more_bits(layer, n_attention_wv):
                new = GGML_Q6_K
        elif "ffn_down" in name:
            if mix in ("q4_k_m", "q5_k_m") and _use_more_bits(layer, n_layer):
                new = GGML_Q6_K
            elif mix == "iq4_nl" and layer < n_layer // 8:
                new = GGML_Q5_K
        elif "attn_qkv.weight" in name:
            if mix == "q4_k_m":
                new = GGML_Q5_K
            elif mix == "q5_k_m":
                new = GGML_Q6_K
        if ne[0] % GGML_TYPES[new][1]:
            if new not in _FALLBACK:
                raise GGUFError("%s: ne[0]=%d is not a multiple of the %s block size %d"
                                % (name, ne[0], type_name(new), GGML_TYPES[new][1]))
            new = _FALLBACK[new]
            if ne[0] % GGML_TYPES[new][1]:
                new = GGML_F16
        result[name] = new
    return result


# ---------------------------------------------------------------------------
# Malformed files

BAD_CASES = {
    "bad-magic": "magic is not GGUF",
    "bad-version": "version 7",
    "version1": "version 1 (the old u32-count format is not supported)",
    "truncated-header": "file ends inside the 24-byte header",
    "truncated-metadata": "file ends in the middle of a metadata KV",
    "truncated-tensor-info": "file ends in the middle of a tensor info",
    "truncated-data": "file ends inside the last tensor's data",
    "offset-past-end": "last tensor's offset lies beyond the end of the file",
    "misaligned-offset": "a tensor offset is not a multiple of the alignment",
    "overlapping-tensors": "two tensors' byte ranges overlap",
    "unknown-arch": 'general.architecture is "mamba"',
    "missing-tensor": "blk.0.ffn_up.weight is absent",
    "misshaped-tensor": "blk.0.attn_k.weight has one extra row (ne[1] + 1)",
    "unsupported-type": "blk.0.attn_q.weight has ggml type 15 (Q8_K, an activation-only format)",
    "bad-value-type": "a metadata value has type 99",
    "huge-string": "a metadata key claims a length of 2^62",
    "huge-array": "an array claims 2^60 elements",
    "bad-alignment": "general.alignment is 0",
    "missing-metadata": "<arch>.embedding_length is absent",
    "extra-tensor": "a tensor the architecture does not use (blk.0.attn_q.bias) is present",
    "rope-scaling": '<arch>.rope.scaling.type is "yarn" (factor 4)',
}


def _kv_span(layout, key):
    for name, start, end in layout["kv"]:
        if name == key:
            return start, end
    raise GGUFError("base model has no metadata key %r" % key)


def _tensor_index(tensors, name):
    for index, t in enumerate(tensors):
        if t["name"] == name:
            return index
    raise GGUFError("base model has no tensor %r" % name)


def _patch(blob, position, fmt, value):
    struct.pack_into("<" + fmt, blob, position, value)


def make_bad(case, metadata, tensors, version=3):
    """Bytes of a file that is `metadata`/`tensors` with only `case` broken."""
    if case not in BAD_CASES:
        raise GGUFError("unknown case %r (see bad --list)" % case)
    metadata = dict(metadata)
    tensors = [dict(t) for t in tensors]
    arch = metadata.get("general.architecture", (GGUF_STRING, "llama"))[1]
    alignment = metadata_alignment(metadata)

    # Cases that change content are encoded normally.
    if case == "unknown-arch":
        metadata["general.architecture"] = (GGUF_STRING, "mamba")
    elif case == "missing-metadata":
        key = arch + ".embedding_length"
        if key not in metadata:
            raise GGUFError("base model has no metadata key %r" % key)
        del metadata[key]
    elif case == "missing-tensor":
        del tensors[_tensor_index(tensors, "blk.0.ffn_up.weight")]
    elif case == "extra-tensor":
        width = tensors[_tensor_index(tensors, "blk.0.attn_q.weight")]["ne"][1]
        tensors.append({"name": "blk.0.attn_q.bias", "ne": [width], "type": GGML_F32,
                        "data": bytes(4 * width)})
    elif case == "rope-scaling":
        metadata[arch + ".rope.scaling.type"] = (GGUF_STRING, "yarn")
        metadata[arch + ".rope.scaling.factor"] = (GGUF_F32, 4.0)
    elif case == "misshaped-tensor":
        t = tensors[_tensor_index(tensors, "blk.0.attn_k.weight")]
        row_bytes = len(t["data"]) // t["ne"][1]
        t["ne"] = [t["ne"][0], t["ne"][1] + 1] + t["ne"][2:]
        t["data"] = t["data"] + t["data"][:row_bytes]
    elif case == "unsupported-type":
        t = tensors[_tensor_index(tensors, "blk.0.attn_q.weight")]
        _, block, size = GGML_TYPES[15]
        nbytes = (n_elements(t["ne"]) + block - 1) // block * size
        t["type"] = 15
        t["data"] = random.Random(15).randbytes(nbytes)
    elif case == "bad-alignment" and "general.alignment" not in metadata:
        metadata["general.alignment"] = (GGUF_U32, alignment)

    offsets = default_offsets(tensors, alignment)
    if case == "misaligned-offset":
        # Move one tensor off the boundary and push the rest one alignment further,
        # so nothing overlaps and every other offset stays aligned.
        k = _tensor_index(tensors, "blk.0.attn_q.weight")
        shift = 4 if alignment > 4 else 1
        offsets = offsets[:k] + [offsets[k] + shift] + [o + alignment for o in offsets[k + 1:]]
    elif case == "overlapping-tensors":
        # Start blk.0.attn_k.weight one alignment step into blk.0.attn_q.weight.
        k = _tensor_index(tensors, "blk.0.attn_k.weight")
        q = _tensor_index(tensors, "blk.0.attn_q.weight")
        if len(tensors[q]["data"]) <= alignment:
            raise GGUFError("blk.0.attn_q.weight is too small to overlap")
        offsets[k] = offsets[q] + alignment

    blob, layout = encode_gguf(metadata, tensors, version, offsets,
                               check_sizes=case != "unsupported-type")

    if case == "bad-magic":
        blob[0:4] = b"GGUX"
    elif case == "bad-version":
        _patch(blob, 4, "I", 7)
    elif case == "version1":
        _patch(blob, 4, "I", 1)
    elif case == "truncated-header":
        del blob[20:]
    elif case == "truncated-metadata":
        _, start, end = layout["kv"][len(layout["kv"]) // 2]
        del blob[(start + end) // 2:]
    elif case == "truncated-tensor-info":
        _, start, end = layout["tensor_info"][len(layout["tensor_info"]) // 2]
        del blob[(start + end) // 2:]
    elif case == "truncated-data":
        last = tensors[-1]
        del blob[layout["data_start"] + layout["offsets"][-1] + len(last["data"]) // 2:]
    elif case == "offset-past-end":
        past = align_up(len(blob) - layout["data_start"] + 1, alignment)
        _patch(blob, layout["tensor_info"][-1][2] - 8, "Q", past)
    elif case == "bad-value-type":
        start, _ = _kv_span(layout, "general.name")
        key_len = struct.unpack_from("<Q", blob, start)[0]
        _patch(blob, start + 8 + key_len, "I", 99)
    elif case == "huge-string":
        start, _ = _kv_span(layout, "general.name")
        _patch(blob, start, "Q", 1 << 62)
    elif case == "huge-array":
        key = next((k for k, (vt, _) in metadata.items() if vt == GGUF_ARRAY), None)
        if key is None:
            raise GGUFError("base model has no array metadata")
        start, _ = _kv_span(layout, key)
        # key length, key, value type, element type, then the u64 count
        _patch(blob, start + 8 + len(key.encode("utf-8")) + 8, "Q", 1 << 60)
    elif case == "bad-alignment":
        start, _ = _kv_span(layout, "general.alignment")
        _patch(blob, start + 8 + len("general.alignment") + 4, "I", 0)
    return bytes(blob)


# ---------------------------------------------------------------------------
# Text dump

def _format_scalar(vtype, value):
    if vtype == GGUF_STRING:
        return repr(value)
    if vtype in (GGUF_F32, GGUF_F64):
        return "%.9g" % value
    return str(value)


def format_value(vtype, value, max_items=8):
    if vtype != GGUF_ARRAY:
        return _format_scalar(vtype, value)
    etype, items = value
    shown = [format_value(etype, item, max_items) for item in items[:max_items]]
    more = ", ... (%d more)" % (len(items) - max_items) if len(items) > max_items else ""
    return "[%s%s]" % (", ".join(shown), more)


def _type_label(vtype, value):
    if vtype == GGUF_ARRAY:
        etype, items = value
        return "arr[%s,%d]" % (VALUE_TYPE_NAMES.get(etype, etype), len(items))
    return VALUE_TYPE_NAMES.get(vtype, str(vtype))


def dump(path, out=sys.stdout, max_items=8):
    with open(path, "rb") as f:
        buf = memoryview(f.read())
    info = parse_gguf(buf, load_data=False)
    print("GGUF v%d, %d bytes, %d metadata, %d tensors, alignment %s, data at %s"
          % (info["version"], info["size"], len(info["metadata"]), len(info["tensors"]),
             info["alignment"], info["data_start"]), file=out)
    for key, (vtype, value) in info["metadata"].items():
        print("  %-45s %-14s %s" % (key, _type_label(vtype, value),
                                     format_value(vtype, value, max_items)), file=out)
    for t in info["tensors"]:
        try:
            nbytes = str(tensor_nbytes(t["type"], t["ne"]))
        except GGUFError:
            nbytes = "?"
        print("  %-32s %-6s ne=%-14s offset=%-10d bytes=%s"
              % (t["name"], type_name(t["type"]), "[%s]" % ",".join(map(str, t["ne"])),
                 t["offset"], nbytes), file=out)
    try:
        parse_gguf(buf, load_data=True)
        print("data: ok", file=out)
    except GGUFError as e:
        print("data: %s" % e, file=out)


# ---------------------------------------------------------------------------
# Command line

def _cmd_model(args):
    metadata, tensors = random_llama(
        n_embd=args.n_embd, n_layer=args.n_layer, n_head=args.n_head,
        n_head_kv=args.n_head_kv, n_ff=args.n_ff, n_vocab=args.vocab, n_ctx=args.ctx,
        tied=args.tied, ggml_type=TYPE_BY_NAME[args.type], seed=args.seed,
        rope_base=args.rope_base, eps=args.eps, alignment=args.alignment,
        arch=args.arch, name=args.name, vocab_model=args.vocab_model,
        rope_scaling=args.rope_scaling, head_dim=args.head_dim,
        sliding_window=args.sliding_window, rope_dim=args.rope_dim)
    write_gguf(args.out, metadata, tensors, args.version)


def _cmd_large(args):
    dims = [int(d) for d in args.dims.split(",")]
    if len(dims) != 7:
        raise GGUFError("--dims takes 7 numbers, got %d" % len(dims))
    write_streamed_llama(args.out, *dims, ggml_type=TYPE_BY_NAME[args.type], name=args.name)


def _cmd_convert(args):
    version, metadata, tensors = read_gguf(args.input)
    if args.mix:
        tensors = convert_tensors_to(tensors, mix_types(args.mix, metadata, tensors))
        metadata["general.file_type"] = (GGUF_U32, MIXES[args.mix][1])
    else:
        ggml_type = TYPE_BY_NAME[args.type]
        tensors = convert_tensors(tensors, ggml_type)
        set_file_type(metadata, ggml_type)
    write_gguf(args.out, metadata, tensors, version)


def _cmd_copy(args):
    version, metadata, tensors = read_gguf(args.input)
    write_gguf(args.out, metadata, tensors, version)


def _cmd_bad(args):
    if args.list:
        for name, what in BAD_CASES.items():
            print("%-22s %s" % (name, what))
        return
    if not args.out or not args.case:
        raise GGUFError("bad needs OUT and --case (or --list)")
    if args.from_model:
        version, metadata, tensors = read_gguf(args.from_model)
    else:
        # n_embd 256 so a retyped tensor can be a well-formed Q4_K (256-value blocks).
        version = 3
        metadata, tensors = random_llama(n_embd=256, n_layer=1, n_head=4, n_head_kv=2,
                                         n_ff=256, n_vocab=64, n_ctx=64)
    blob = make_bad(args.case, metadata, tensors, version)
    with open(args.out, "wb") as f:
        f.write(blob)


def _cmd_dump(args):
    dump(args.input, max_items=args.items)


def read_imatrix_dat(path):
    """llama.cpp's legacy importance matrix: [(name, ncall, [float32 sums])],
    chunks, dataset (int32 entries; per entry int32 length, name, int32 ncall,
    int32 nval, float32 values; then int32 chunks, int32 length, dataset)."""
    with open(path, "rb") as f:
        buf = f.read()
    (count,), at = struct.unpack_from("<i", buf, 0), 4
    entries = []
    for _ in range(count):
        (length,) = struct.unpack_from("<i", buf, at)
        name = buf[at + 4:at + 4 + length].decode()
        at += 4 + length
        ncall, nval = struct.unpack_from("<ii", buf, at)
        values = list(struct.unpack_from("<%df" % nval, buf, at + 8))
        at += 8 + 4 * nval
        entries.append((name, ncall, values))
    chunks, dataset = 0, ""
    if at < len(buf):
        chunks, length = struct.unpack_from("<ii", buf, at)
        dataset = buf[at + 8:at + 8 + length].decode()
    return entries, chunks, dataset


def _cmd_imatrix(args):
    """The GGUF form of a legacy .dat: X.in_sum2 holds the .dat's values (the
    mean square times ncall) and X.counts ncall, so in_sum2 / counts is the
    mean square the .dat gives."""
    entries, chunks, dataset = read_imatrix_dat(args.input)
    metadata = {"general.type": (GGUF_STRING, "imatrix"),
                "imatrix.chunk_count": (GGUF_U32, chunks),
                "imatrix.chunk_size": (GGUF_U32, 256),
                "imatrix.datasets": (GGUF_ARRAY, (GGUF_STRING, [dataset]))}
    tensors = []
    for name, ncall, values in sorted(entries):
        tensors.append({"name": name + ".in_sum2", "ne": [len(values), 1], "type": 0,
                        "data": struct.pack("<%df" % len(values), *values)})
        tensors.append({"name": name + ".counts", "ne": [1, 1], "type": 0,
                        "data": struct.pack("<f", float(ncall))})
    write_gguf(args.out, metadata, tensors)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Craft and inspect GGUF files for tests.")
    sub = parser.add_subparsers(dest="command", required=True)
    types = sorted(TYPE_BY_NAME)

    p = sub.add_parser("model", help="write a random-weight llama model")
    p.add_argument("out")
    p.add_argument("--n-embd", type=int, default=64)
    p.add_argument("--n-layer", type=int, default=2)
    p.add_argument("--n-head", type=int, default=4)
    p.add_argument("--n-head-kv", type=int, default=2)
    p.add_argument("--n-ff", type=int, default=96)
    p.add_argument("--vocab", type=int, default=64)
    p.add_argument("--ctx", type=int, default=64)
    p.add_argument("--tied", action="store_true", help="omit output.weight")
    p.add_argument("--type", choices=types, default="f32", help="type of 2-D tensors")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rope-base", type=float, default=10000.0)
    p.add_argument("--rope-scaling", default="none",
                   help="none, linear:F, llama3 or longrope:C (phi3)")
    p.add_argument("--head-dim", type=int, help="attention.key_length (default n_embd/n_head)")
    p.add_argument("--rope-dim", type=int, help="rope.dimension_count (default the head dim)")
    p.add_argument("--sliding-window", type=int, default=0,
                   help="attention.sliding_window (gemma3: all but every sixth layer)")
    p.add_argument("--eps", type=float, default=1e-5)
    p.add_argument("--version", type=int, choices=(2, 3), default=3)
    p.add_argument("--alignment", type=int, default=DEFAULT_ALIGNMENT)
    p.add_argument("--arch", choices=sorted(ARCH_TRAITS), default="llama")
    p.add_argument("--name")
    p.add_argument("--vocab-model", choices=("llama", "gpt2"), default="llama",
                   help="tokenizer: SentencePiece-style (default) or GPT-2 byte-level BPE")
    p.set_defaults(func=_cmd_model)

    p = sub.add_parser("large", help="write a large random-weight llama, streamed")
    p.add_argument("out")
    p.add_argument("--dims", required=True,
                   help="n_embd,n_layer,n_head,n_head_kv,n_ff,n_vocab,n_ctx "
                        "(Llama-3-8B: 4096,32,32,8,14336,128256,8192)")
    p.add_argument("--type", choices=("f16", "q8_0", "q4_0"), default="f16")
    p.add_argument("--name")
    p.set_defaults(func=_cmd_large)

    p = sub.add_parser("convert", help="re-encode the 2-D tensors of a model")
    p.add_argument("input")
    p.add_argument("out")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--type", choices=types, help="every 2-D tensor in this type")
    how.add_argument("--mix", choices=sorted(MIXES),
                     help="types per tensor as llama-quantize's preset of this name picks them")
    p.set_defaults(func=_cmd_convert)

    p = sub.add_parser("copy", help="read a model and write it back unchanged")
    p.add_argument("input")
    p.add_argument("out")
    p.set_defaults(func=_cmd_copy)

    p = sub.add_parser("imatrix", help="write a legacy .dat importance matrix in GGUF form")
    p.add_argument("input")
    p.add_argument("out")
    p.set_defaults(func=_cmd_imatrix)

    p = sub.add_parser("bad", help="write a deliberately malformed file")
    p.add_argument("out", nargs="?")
    p.add_argument("--case", choices=sorted(BAD_CASES))
    p.add_argument("--from", dest="from_model", metavar="MODEL",
                   help="derive from this model instead of a small random one")
    p.add_argument("--list", action="store_true", help="list the cases")
    p.set_defaults(func=_cmd_bad)

    p = sub.add_parser("dump", help="print metadata and tensor infos")
    p.add_argument("input")
    p.add_argument("--items", type=int, default=8, help="array elements to show")
    p.set_defaults(func=_cmd_dump)

    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (GGUFError, OSError) as e:
        print("gguf_tool: %s" % e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
