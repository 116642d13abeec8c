#!/usr/bin/env python3
"""End-to-end tests of the vocab segment writer and the runtime tokenizer.

  tokenizer_test.py BUILD_TOOLS_DIR [--tokenizer-test PATH] [--segment-tool PATH]

BUILD_TOOLS_DIR holds the `tokenizer_test` (test/runtime/tokenizer_test.c) and
`vocab_segment_tool` (test/runtime/vocab_segment_tool.cpp) executables; the
options override either path. Expected ids come from model A's reference files
or from the simple encoders below, never from the code under test. Prints
"N passed, N failed"; the exit status is non-zero on any failure.
Standard library only.
"""

import argparse
import ast
import json
import os
import random
import re
import struct
import subprocess
import sys
import tempfile
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
MODEL_A_DIR = os.path.join(REPO, "test", "data", "tiny-llama-A")
MODEL_A = os.path.join(MODEL_A_DIR, "tiny-llama-A-f32.gguf")
SPACE_MARK = "\u2581".encode()


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL: %s%s" % (what, (": " + detail) if detail else ""))


# ---- running the tools -------------------------------------------------------

class Tools:
    def __init__(self, tokenizer_test, segment_tool, workdir):
        self.tokenizer_test = tokenizer_test
        self.segment_tool = segment_tool
        self.workdir = workdir

    def segment(self, vocab, name):
        """Writes vocab (the dump_vocab.py JSON shape) and converts it."""
        js = os.path.join(self.workdir, name + ".json")
        seg = os.path.join(self.workdir, name + ".seg")
        with open(js, "w") as f:
            json.dump(vocab, f)
        subprocess.run([self.segment_tool, js, seg], check=True)
        return seg

    def encode(self, seg, texts, special):
        """special: False, True (add BOS/EOS) or KILN_TOKENIZE_* flags."""
        data = b"".join(struct.pack("<I", len(t)) + t for t in texts)
        r = subprocess.run([self.tokenizer_test, seg, "encode", str(int(special))],
                           input=data, capture_output=True, check=True)
        lines = r.stdout.decode().split("\n")[:len(texts)]
        return [[int(x) for x in line.split()] for line in lines]

    def decode(self, seg, id_lists):
        data = "".join(" ".join(map(str, ids)) + "\n" for ids in id_lists).encode()
        r = subprocess.run([self.tokenizer_test, seg, "decode"], input=data,
                           capture_output=True, check=True)
        out, pos = [], 0
        while pos < len(r.stdout):
            (n,) = struct.unpack_from("<I", r.stdout, pos)
            out.append(r.stdout[pos + 4:pos + 4 + n])
            pos += 4 + n
        return out

    def run(self, seg, *args, stdin=b""):
        return subprocess.run([self.tokenizer_test, seg] + list(args), input=stdin,
                              capture_output=True)


def read_npy_int32(path):
    with open(path, "rb") as f:
        data = f.read()
    assert data[:6] == b"\x93NUMPY", "not an .npy file"
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack_from("<H", data, 8)
        start = 10
    else:
        (hlen,) = struct.unpack_from("<I", data, 8)
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    assert header["descr"] == "<i4" and not header["fortran_order"], header
    (count,) = header["shape"]
    body = start + hlen
    return list(struct.unpack_from("<%di" % count, data, body))


# ---- independent reference encoders ------------------------------------------

def utf8_symbols(s):
    """Characters: the length from the lead byte's high nibble when that many
    continuation bytes follow, else a single byte."""
    out, i = [], 0
    while i < len(s):
        hi = s[i] >> 4
        n = 1 if hi < 12 else (2 if hi < 14 else (3 if hi == 14 else 4))
        if i + n > len(s) or any(b & 0xC0 != 0x80 for b in s[i + 1:i + n]):
            n = 1
        out.append(s[i:i + n])
        i += n
    return out


def spm_reference(vocab, text, add_prefix):
    """Quadratic SentencePiece-style BPE: best score, leftmost, until stuck."""
    ids = vocab["ids"]
    scores = vocab["scores"]
    if not text:
        return []
    s = (b" " + text if add_prefix else text).replace(b" ", SPACE_MARK)
    syms = utf8_symbols(s)
    while True:
        best = None
        for k in range(len(syms) - 1):
            tid = ids.get(syms[k] + syms[k + 1])
            if tid is not None and (best is None or scores[tid] > best[0]):
                best = (scores[tid], k)
        if best is None:
            break
        k = best[1]
        syms[k:k + 2] = [syms[k] + syms[k + 1]]
    out = []
    for sym in syms:
        if sym in ids:
            out.append(ids[sym])
        else:
            out.extend(ids[b"<0x%02X>" % b] for b in sym)
    return out


def bytes_to_unicode():
    """GPT-2's table, built the way its encoder builds it."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1))
          + list(range(ord("\xae"), ord("\xff") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_CHAR = bytes_to_unicode()


# ---- pre-tokenizers, from their regex definitions ------------------------------

def _class_ranges(pred):
    out, start = [], None
    for cp in range(0x110000):
        inside = pred(chr(cp))
        if inside and start is None:
            start = cp
        elif not inside and start is not None:
            out.append((start, cp - 1))
            start = None
    return "".join(re.escape(chr(a)) + ("-" + re.escape(chr(b)) if b > a else "")
                   for a, b in out)


# \p{L}, \p{N} by general category; \s as Unicode's White_Space property.
LETTERS = _class_ranges(lambda c: unicodedata.category(c).startswith("L"))
NUMBERS = _class_ranges(lambda c: unicodedata.category(c).startswith("N"))
SPACES = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"

# llama.cpp's patterns (llama-vocab.cpp) per tokenizer.ggml.pre family, in the
# order they are applied; text no match covers stays a piece of its own.
_CONTRACTIONS_ANY_CASE = "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]"
_GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
_LLAMA3 = (_CONTRACTIONS_ANY_CASE + r"|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
           r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# GPT-4o's case-aware words as llama.cpp rewrites them: an "upper" letter is a
# letter but a-z, a "lower" one a letter but A-Z.
_UPPER, _LOWER = r"(?:(?=\p{L})[^a-z])", r"(?:(?=\p{L})[^A-Z])"
_GPT4O = (r"[^\r\n\p{L}\p{N}]?" + _UPPER + "*" + _LOWER + "+(?:" + _CONTRACTIONS_ANY_CASE + ")?"
          r"|[^\r\n\p{L}\p{N}]?" + _UPPER + "+" + _LOWER + "*(?:" + _CONTRACTIONS_ANY_CASE + ")?"
          r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PATTERNS = {
    0: [_GPT2],                                   # gpt-2
    1: [_LLAMA3],                                 # llama-bpe
    2: [_LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")],  # qwen2
    3: [r"\p{N}", _GPT2],                         # smollm
    4: [_GPT4O],                                  # gpt-4o
}


def _compile(pattern):
    # Inside a class the escapes expand to ranges; \S outside one is [^\s].
    pattern = pattern.replace(r"[^\s\p{L}\p{N}]", "[^" + SPACES + LETTERS + NUMBERS + "]")
    pattern = pattern.replace(r"[^\r\n\p{L}\p{N}]", "[^\r\n" + LETTERS + NUMBERS + "]")
    pattern = pattern.replace(r"(?!\S)", "(?![^" + SPACES + "])")
    pattern = pattern.replace(r"\p{L}", "[" + LETTERS + "]").replace(r"\p{N}", "[" + NUMBERS + "]")
    pattern = pattern.replace(r"\s", "[" + SPACES + "]")
    return re.compile(pattern)


COMPILED = {pre: [_compile(p) for p in pats] for pre, pats in PATTERNS.items()}


def pre_split(data, pre):
    """The byte pieces of data under pre-tokenizer `pre`; bytes that are not
    UTF-8 are characters of their own (surrogate escapes: neither L, N nor \\s)."""
    pieces = [data.decode("utf-8", "surrogateescape")] if data else []
    for regex in COMPILED[pre]:
        out = []
        for piece in pieces:
            pos = 0
            for m in regex.finditer(piece):
                if m.start() > pos:
                    out.append(piece[pos:m.start()])
                if m.end() > m.start():
                    out.append(m.group())
                pos = m.end()
            if pos < len(piece):
                out.append(piece[pos:])
        pieces = out
    return [p.encode("utf-8", "surrogateescape") for p in pieces]


def bpe_reference(vocab, text, pre=0):
    """GPT-2 encoder loop: merge every occurrence of the lowest-rank pair."""
    ranks, ids, unk = vocab["ranks"], vocab["ids"], vocab["unk"]
    out = []
    for word in pre_split(text, pre):
        parts = [BYTE_CHAR[b] for b in word]
        while len(parts) > 1:
            pairs = set(zip(parts, parts[1:]))
            best = min(pairs, key=lambda p: ranks.get(p, float("inf")))
            if best not in ranks:
                break
            merged, i = [], 0
            while i < len(parts):
                if i + 1 < len(parts) and (parts[i], parts[i + 1]) == best:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        for p in parts:
            if p in ids:
                out.append(ids[p])
            else:
                for ch in p:
                    if ch in ids:
                        out.append(ids[ch])
                    elif unk >= 0:
                        out.append(unk)
    return out


# ---- random text --------------------------------------------------------------

def random_utf8(rng, words):
    """Words, spaces, newlines and characters from every UTF-8 length."""
    parts = []
    for _ in range(rng.randint(0, 24)):
        r = rng.random()
        if r < 0.4:
            parts.append(rng.choice(words))
        elif r < 0.6:
            parts.append(rng.choice([" ", " ", "  ", "\n", "\t", " \n ", "   "]))
        elif r < 0.75:
            parts.append(chr(rng.randint(0x21, 0x7E)))
        else:
            lo, hi = rng.choice([(0xA0, 0x7FF), (0x800, 0xFFFF), (0x10000, 0x10FFFF)])
            c = rng.randint(lo, hi)
            if 0xD800 <= c <= 0xDFFF or c == 0x2581:
                c = 0x263A
            parts.append(chr(c))
    return "".join(parts).encode("utf-8")


def random_bytes(rng, words):
    """UTF-8 text cut up with stray continuation bytes, truncated and bare
    lead bytes, and raw random bytes."""
    parts = []
    for _ in range(rng.randint(1, 20)):
        r = rng.random()
        if r < 0.3:
            parts.append(rng.choice(words).encode())
        elif r < 0.45:
            parts.append(b" ")
        elif r < 0.6:
            parts.append(bytes([rng.randint(0x80, 0xFF)]))
        elif r < 0.75:
            full = chr(rng.randint(0x800, 0xFFFF) if rng.random() < 0.5 else rng.randint(0x10000, 0x10FFFF))
            raw = full.encode("utf-8", "surrogatepass")
            parts.append(raw[:rng.randint(1, len(raw))])
        else:
            parts.append(bytes(rng.randint(0, 255) for _ in range(rng.randint(1, 4))))
    s = b"".join(parts)
    return s.replace(SPACE_MARK, b"\xe2\x96")  # U+2581 itself decodes as a space


# ---- model A (SentencePiece-style) ---------------------------------------------

def test_model_a(t, tools, rng):
    js = os.path.join(tools.workdir, "model-a.json")
    subprocess.run([sys.executable, os.path.join(HERE, "dump_vocab.py"), MODEL_A, js], check=True)
    seg = os.path.join(tools.workdir, "model-a.seg")
    subprocess.run([tools.segment_tool, js, seg], check=True)
    with open(js) as f:
        raw = json.load(f)
    tokens = [bytes(x) for x in raw["tokens"]]
    vocab = {"ids": {tok: i for i, tok in enumerate(tokens)}, "scores": raw["scores"]}

    r = tools.run(seg, "check")
    t.check(r.returncode == 0, "model A: C checks", r.stdout.decode().strip().split("\n")[-1])
    for line in r.stdout.decode().split("\n"):
        if line.startswith("FAIL"):
            print("  " + line)

    with open(os.path.join(MODEL_A_DIR, "tiny-llama-A-refs.json")) as f:
        refs = json.load(f)
    texts = [p["text"].encode() for p in refs["prompts"]]
    got = tools.encode(seg, texts, special=True)
    for i, p in enumerate(refs["prompts"]):
        t.check(got[i] == p["token_ids"], "model A: reference prompt %d" % i,
                "got %s" % got[i][:20])

    examples = [(b"Hello world", [1, 393, 104, 288, 114, 265, 287, 310]),
                (b"CHAPTER 7\nThe", [1, 406, 75, 68, 83, 87, 72, 85, 259, 58, 13, 87, 261]),
                (b"", [1])]
    got = tools.encode(seg, [e[0] for e in examples], special=True)
    for (text, want), g in zip(examples, got):
        t.check(g == want, "model A: README example %r" % text, "got %s" % g)
    t.check(tools.encode(seg, [b""], special=False) == [[]], "model A: empty text, no BOS")

    with open(os.path.join(MODEL_A_DIR, "val.txt"), "rb") as f:
        val = f.read()
    want = read_npy_int32(os.path.join(MODEL_A_DIR, "tiny-llama-A-val-tokens-8192.npy"))
    (got,) = tools.encode(seg, [val], special=False)
    t.check(got[:8192] == want, "model A: val.txt first 8192 tokens",
            "first difference at %s" % next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None))
    t.check(len(got) == 95738, "model A: val.txt token count (README: 95,738)", str(len(got)))
    (back,) = tools.decode(seg, [got])
    t.check(back == val, "model A: val.txt decodes back to itself")

    lines = [l for l in val.split(b"\n") if l][:40]
    got = tools.encode(seg, lines, special=False)
    bad = [i for i, l in enumerate(lines) if got[i] != spm_reference(vocab, l, True)]
    t.check(not bad, "model A: val.txt lines match the reference SPM encoder", "lines %s" % bad[:5])

    words = sorted(set(re.findall(r"[A-Za-z']+", val.decode()[:20000])))
    for kind, gen in (("UTF-8", random_utf8), ("invalid bytes", random_bytes)):
        texts = [gen(rng, words) for _ in range(400)]
        got = tools.encode(seg, texts, special=False)
        bad = [i for i, s in enumerate(texts) if got[i] != spm_reference(vocab, s, True)]
        t.check(not bad, "model A: random %s match the reference SPM encoder" % kind,
                "%d mismatches, first %r" % (len(bad), texts[bad[0]] if bad else None))
        for special in (False, True):
            ids = tools.encode(seg, texts, special=special)
            back = tools.decode(seg, ids)
            bad = [i for i, s in enumerate(texts) if back[i] != s]
            t.check(not bad, "model A: random %s round trip (BOS %s)" % (kind, special),
                    "%d mismatches, first %r -> %r" % (len(bad), texts[bad[0]], back[bad[0]]) if bad else "")

    r = tools.run(seg, "time", "5", stdin=val)
    fields = r.stdout.decode().split()
    seconds = float(fields[fields.index("seconds") + 1]) if "seconds" in fields else 1e9
    print("val.txt (%d bytes): %s" % (len(val), r.stdout.decode().strip()))
    t.check(r.returncode == 0 and seconds < 1.0, "model A: val.txt tokenizes in under a second",
            "%.3f s" % seconds)


# ---- a synthetic GPT-2 byte-level BPE ---------------------------------------------

def gpt2_vocab(add_bos):
    c = BYTE_CHAR
    sp, nl = c[ord(" ")], c[ord("\n")]
    e_acute = "".join(c[b] for b in "\u00e9".encode())
    merges = [
        (sp, "t"), ("h", "e"), (sp + "t", "he"), (sp, "a"), ("n", "d"), (sp + "a", "nd"),
        ("i", "n"), ("in", "g"), ("e", "r"), ("'", "s"), ("1", "2"),
        (e_acute[0], e_acute[1]), (nl, nl), (sp, sp),
        ("x", "y"),            # result not a token: per-character fallback
        ("t", "h"),
        ("h", "e"),            # duplicate, ranked after "t h": the first one counts
        ("e", "e"), (sp, "1"), (sp + "1", "2"), ("ee", "e"), ("in", "in"),
    ]
    tokens = [c[b] for b in range(256)]
    for a, b in merges:
        if a + b not in tokens and a + b != "xy":
            tokens.append(a + b)
    tokens.append("he")        # duplicate text: the last id counts
    tokens.append("<|endoftext|>")
    types = [1] * (len(tokens) - 1) + [3]
    special = len(tokens) - 1
    as_list = lambda s: list(s.encode("utf-8"))
    return {
        "model": "gpt2",
        "tokens": [as_list(x) for x in tokens],
        "scores": [],
        "types": types,
        "merges": [as_list(a + " " + b) for a, b in merges],
        "bos": special, "eos": special, "unk": -1,
        "add_bos": add_bos, "add_eos": False, "add_space_prefix": True,
    }, {
        "ids": {tok: i for i, tok in enumerate(tokens)},
        "ranks": {pair: r for r, pair in reversed(list(enumerate(merges)))},
        "unk": -1, "bos": special,
    }


def test_gpt2(t, tools, rng):
    for add_bos in (False, True):
        raw, vocab = gpt2_vocab(add_bos)
        seg = tools.segment(raw, "gpt2-bos%d" % add_bos)
        tag = "gpt2 (add_bos %s)" % add_bos
        r = tools.run(seg, "check")
        t.check(r.returncode == 0, tag + ": C checks", r.stdout.decode().strip().split("\n")[-1])
        for line in r.stdout.decode().split("\n"):
            if line.startswith("FAIL"):
                print("  " + line)

        fixed = [b"the and thing", b"  the\n\nthe's 12 123 x xy yx", b"eeeee theee",
                 b"caf\xc3\xa9 \xc3\xa9t\xc3\xa9", b"\t \n  \tend  ", b"it's they'll we've I'm 'd",
                 b"\xff\xfe bytes \x80", b"", b" ", b"inin ining!?", b"x" * 50]
        fragments = [b"the", b" the", b"and", b" and", b"ing", b"er", b"'s", b"'t", b"'re", b"'",
                     b"12", b"1", b"\xc3\xa9", b"x", b"y", b"xy", b" ", b"  ", b"\n", b"\n\n", b"\t",
                     b"eee", b"th", b"!", b"?!", b".", b"ab", b"\xff", b"\xe6\x97\xa5", b"\r\n",
                     b"'ll", b"inin", b"0", b"  \n", b"-"]
        texts = fixed + [b"".join(rng.choice(fragments) for _ in range(rng.randint(0, 20)))
                         for _ in range(500)]
        bos = [vocab["bos"]] if add_bos else []
        want = [bos + bpe_reference(vocab, s) for s in texts]
        got = tools.encode(seg, texts, special=True)
        bad = [i for i in range(len(texts)) if got[i] != want[i]]
        t.check(not bad, tag + ": ids match the reference BPE encoder",
                "%d mismatches, first %r: got %s want %s" % (len(bad), texts[bad[0]], got[bad[0]],
                                                             want[bad[0]]) if bad else "")
        t.check(got[0] == bos + [vocab["ids"][c] for c in ("t", "he", BYTE_CHAR[32] + "and",
                                                           BYTE_CHAR[32] + "t", "h", "ing")],
                tag + ": 'the and thing' by hand", str(got[0]))
        back = tools.decode(seg, got)
        bad = [i for i in range(len(texts)) if back[i] != texts[i]]
        t.check(not bad, tag + ": round trip",
                "%d mismatches, first %r -> %r" % (len(bad), texts[bad[0]], back[bad[0]]) if bad else "")
        # Raw random bytes: every byte is a token, so this must round-trip too.
        noise = [bytes(rng.randint(0, 255) for _ in range(rng.randint(0, 40))) for _ in range(200)]
        got = tools.encode(seg, noise, special=False)
        t.check(all(got[i] == bpe_reference(vocab, s) for i, s in enumerate(noise)),
                tag + ": random bytes match the reference")
        t.check(tools.decode(seg, got) == noise, tag + ": random bytes round trip")


PRE_NAMES = {0: "gpt-2", 1: "llama-bpe", 2: "qwen2", 3: "smollm", 4: "gpt-4o"}

# Digits, contractions in both cases, CJK, emoji, other scripts' letters and
# numbers, runs of spaces, tabs and line breaks, punctuation runs.
CRAFTED = ["Hello world", "I'm 12345 they'LL WE'VE it's", "  spaces   and\n\nnewlines\r\n x",
           "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 123", "emoji \U0001F600\U0001F389 ok",
           "tabs\t\tx\t", "mixed: (foo)bar... 'quote' \"dq\"", "\u0661\u0662\u0663\u0664 arabic",
           "\u216b roman x\u00b2", "\u3000full\u3000width", "caf\u00e9 na\u00efve", "a\n\n\nb",
           "end with spaces   ", "1234567", " 12 345 6789 ", "!!!\n\n", "x \n y", "\u00a0nbsp",
           "\u0e2a\u0e27\u0e31\u0e2a\u0e14\u0e35", "\u041f\u0440\u0438\u0432\u0435\u0442 \u043c\u0438\u0440",
           "'", "''", "'s", " 's", "don't", "\r\r\n\t \n", "$100.00", "a-b_c", "   \n   ",
           "HelloWorld ABCdef aBC XMLHttp", "x.\n/y ./\n/ a/b", "\u00c9A caf\u00e9S \u00c0\u00e9", ""]


def test_pre_tokenizers(t, tools, rng):
    fragments = [c.encode() for c in CRAFTED if c] + [
        b" ", b"  ", b"\n", b"\r\n", b"\t", b"'", b"'S", b"'ll", b"1", b"22", b"\xff", b"\x80",
        b"\xe6\x97", b"\xed\xa0\x80", b"\xc0\xaf", b"\xe3\x80\x80", b"\xf0\x9f\x98\x80",
        b"ab", b"X", b"Ab", b"aB", b"/", b".", b",", b"(", b"\xd9\xa1", b"\xe2\x85\xab",
        b"\xc3\x89"]
    texts = ([c.encode() for c in CRAFTED] +
             [b"".join(rng.choice(fragments) for _ in range(rng.randint(1, 12)))
              for _ in range(400)])
    raw, vocab = gpt2_vocab(False)
    for pre, name in PRE_NAMES.items():
        raw["pre"] = pre
        seg = tools.segment(raw, "pre-%d" % pre)
        data = b"".join(struct.pack("<I", len(x)) + x for x in texts)
        r = subprocess.run([tools.tokenizer_test, seg, "split"], input=data,
                           capture_output=True, check=True)
        got = [[int(n) for n in line.split()] for line in r.stdout.decode().split("\n")[:len(texts)]]
        want = [[len(p) for p in pre_split(x, pre)] for x in texts]
        bad = [i for i in range(len(texts)) if got[i] != want[i]]
        t.check(not bad, "%s: pieces match the regex split (%d texts)" % (name, len(texts)),
                "%d mismatches, first %r: got %s want %s" % (
                    len(bad), texts[bad[0]], got[bad[0]], want[bad[0]]) if bad else "")
        ids = tools.encode(seg, texts, special=False)
        t.check(all(ids[i] == bpe_reference(vocab, x, pre) for i, x in enumerate(texts)),
                "%s: ids match the reference BPE over those pieces" % name)
    # By hand, from the patterns' definitions.
    split = lambda s, pre: [p.decode() for p in pre_split(s.encode(), pre)]
    t.check(split("I'LL 12345", 0) == ["I", "'", "LL", " 12345"], "gpt-2 by hand")
    t.check(split("I'LL 12345", 1) == ["I", "'LL", " ", "123", "45"], "llama-bpe by hand")
    t.check(split("I'LL 12345", 2) == ["I", "'LL", " ", "1", "2", "3", "4", "5"], "qwen2 by hand")
    t.check(split("a 12\n\nb", 3) == ["a", " ", "1", "2", "\n", "\n", "b"], "smollm by hand")
    t.check(split("HelloWorld I'LL x.\n/y 12345", 4) ==
            ["Hello", "World", " I'LL", " x", ".\n/", "y", " ", "123", "45"], "gpt-4o by hand")
    t.check(split("\u00c9A caf\u00e9S", 4) == ["\u00c9", "A", " caf\u00e9", "S"],
            "gpt-4o by hand: non-ASCII letters are upper and lower")


ADD_SPECIAL, PARSE_SPECIAL = 1, 2
CONTROL, USER_DEFINED = 3, 4


def partition(text, tokens, types, parse):
    """llama.cpp's special-token partition: at each position the longest
    special text (control ones only when parse), the rest raw fragments."""
    specials = sorted(((tok, i) for i, tok in enumerate(tokens)
                       if tok and (types[i] == USER_DEFINED or (parse and types[i] == CONTROL))),
                      key=lambda x: (-len(x[0]), x[1]))
    out, start, i = [], 0, 0
    while i < len(text):
        hit = next((x for x in specials if text.startswith(x[0], i)), None)
        if hit is None:
            i += 1
            continue
        out += [text[start:i], hit[1]]
        i += len(hit[0])
        start = i
    return out + [text[start:]]


def test_special_tokens(t, tools, rng):
    raw, vocab = gpt2_vocab(False)
    raw["tokens"] = list(raw["tokens"])
    raw["types"] = list(raw["types"])
    extra = [("<|im_start|>", CONTROL), ("<|im_end|>", CONTROL), ("<|im", USER_DEFINED),
             ("[U]", USER_DEFINED), ("<|eot|>", CONTROL)]
    for text, kind in extra:
        vocab["ids"][text] = len(raw["tokens"])
        raw["tokens"].append(list(text.encode()))
        raw["types"].append(kind)
    eot = vocab["ids"]["<|eot|>"]
    raw["eog"] = [eot, raw["eos"], eot]
    tokens = [bytes(x) for x in raw["tokens"]]
    seg = tools.segment(raw, "specials")
    r = tools.run(seg, "check")
    t.check(r.returncode == 0, "specials: C checks", r.stdout.decode().strip().split("\n")[-1])
    pieces = [b"<|im_start|>", b"<|im_end|>", b"<|im", b"[U]", b"<|eot|>", b"<|", b"im", b"the",
              b" ", b"\n", b"user", b"[", b"U]", b"'s", b"12", b"\xe6\x97\xa5", b"<|endoftext|>"]
    texts = [b"<|im_start|>user\nthe and<|im_end|>\n<|im_start|>assistant\n", b"<|im_x",
             b"[U][U]", b"a<|endoftext|>b", b""] + [
        b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 10))) for _ in range(300)]
    for flags, tag in ((0, "plain"), (PARSE_SPECIAL, "parse_special")):
        want = []
        for x in texts:
            ids = []
            for part in partition(x, tokens, raw["types"], flags & PARSE_SPECIAL):
                ids += bpe_reference(vocab, part) if isinstance(part, bytes) else [part]
            want.append(ids)
        got = tools.encode(seg, texts, flags)
        bad = [i for i in range(len(texts)) if got[i] != want[i]]
        t.check(not bad, "specials (%s): ids match the partition reference" % tag,
                "%d mismatches, first %r: got %s want %s" % (len(bad), texts[bad[0]], got[bad[0]],
                                                             want[bad[0]]) if bad else "")
    got = tools.encode(seg, [texts[0]], PARSE_SPECIAL)[0]
    t.check(got[0] == vocab["ids"]["<|im_start|>"] and vocab["ids"]["<|im_end|>"] in got,
            "specials: chat markup by hand", str(got))
    r = tools.run(seg, "eog")
    t.check(r.stdout.decode().split() == [str(x) for x in sorted({eot, raw["eos"]})],
            "specials: end-of-generation ids", r.stdout.decode().strip())

    # SentencePiece: <s> and </s> of model A are control tokens; each fragment
    # after one gets its own space prefix.
    js = os.path.join(tools.workdir, "model-a.json")
    with open(js) as f:
        raw = json.load(f)
    tokens = [bytes(x) for x in raw["tokens"]]
    spm = {"ids": {tok: i for i, tok in enumerate(tokens)}, "scores": raw["scores"]}
    seg = os.path.join(tools.workdir, "model-a.seg")
    texts = [b"<s>Hello</s> world", b"x</s></s>y", b"</s", b"The <s> end"]
    want = []
    for x in texts:
        ids = []
        for part in partition(x, tokens, raw["types"], True):
            ids += spm_reference(spm, part, True) if isinstance(part, bytes) else [part]
        want.append(ids)
    got = tools.encode(seg, texts, PARSE_SPECIAL)
    t.check(got == want, "specials: model A control tokens in text", "got %s want %s" % (got, want))


# The templates, written out from each family's chat template.
CHAT = {
    1: ("<|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"),
    2: ("<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n"
        "<|im_start|>assistant\n",
        "<|im_end|>\n<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"),
    3: ("<start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\n",
        "<end_of_turn>\n<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n"),
    4: ("<|system|>\nBe brief.<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\n",
        "<|end|>\n<|user|>\nHi there<|end|>\n<|assistant|>\n"),
}


def test_chat(t, tools):
    seg = os.path.join(tools.workdir, "model-a.seg")
    for chat, (first, later) in CHAT.items():
        r = tools.run(seg, "chat", str(chat), "1", "Be brief.", stdin=b"Hi there")
        t.check(r.returncode == 0 and r.stdout.decode() == first,
                "chat template %d: first exchange with a system turn" % chat, repr(r.stdout))
        r = tools.run(seg, "chat", str(chat), "0", stdin=b"Hi there")
        t.check(r.returncode == 0 and r.stdout.decode() == later,
                "chat template %d: a later exchange" % chat, repr(r.stdout))
    r = tools.run(seg, "chat", "0", "1", stdin=b"Hi")
    t.check(r.returncode != 0, "chat: no template is refused")


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("tools_dir")
    ap.add_argument("--tokenizer-test")
    ap.add_argument("--segment-tool")
    ap.add_argument("--seed", type=int, default=20240601)
    args = ap.parse_args(argv[1:])
    tt = args.tokenizer_test or os.path.join(args.tools_dir, "tokenizer_test")
    st = args.segment_tool or os.path.join(args.tools_dir, "vocab_segment_tool")
    t = Tally()
    with tempfile.TemporaryDirectory() as workdir:
        tools = Tools(tt, st, workdir)
        rng = random.Random(args.seed)
        test_model_a(t, tools, rng)
        test_gpt2(t, tools, rng)
        test_pre_tokenizers(t, tools, rng)
        test_special_tokens(t, tools, rng)
        test_chat(t, tools)
    print("%d passed, %d failed" % (t.passed, t.failed))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
