#!/usr/bin/env python3
"""The pack writer's streamed encoding (compiler/pack/PackWriter.cpp: each weight
converted a few rows at a time by several threads, written, released) against
whole-tensor encoding:

  (a) model A compiled with --quant=F --pure for every writable format F, row
      layout (--target=c99), 2 threads: every tensor's bytes in the pack equal
      `quantize-test --encode` of the whole tensor's f32 values in one call (the
      quantizer itself is checked against Python's by quantize-crosscheck and
      block-formats-check), and tensors kept f32 equal the model file's bytes;
      every chunk boundary of the split falls inside these tensors;
  (b) the panel layout (--target=host where it has panels) is the same file,
      byte for byte, with 1 and with 3 threads, for a converted (q4_0) and an
      as-stored (f32) model;
  (c) --report states the compile's time and peak memory.

The pack table is read here from the FlatBuffers bytes (runtime/schema/kiln_pack.fbs).

  pack_writer_check.py --kiln-compile PATH --quantize-test PATH --work DIR"""
import argparse
import os
import re
import shutil
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import gguf_tool  # noqa: E402
from e2e import Results  # noqa: E402


def pack_formats():
    """kiln_pack.fbs's weight formats (the codes below 64; a graph's raw
    constants are numbered from 64): lowercase names by code."""
    schema = open(os.path.join(ROOT, "runtime", "schema", "kiln_pack.fbs")).read()
    body = re.search(r"enum Format : ubyte \{([^}]*)\}", schema).group(1)
    codes = {int(code): name.lower() for name, code in re.findall(r"(\w+) = (\d+)", body)
             if int(code) < 64}
    return [codes[i] for i in range(len(codes))]


FORMATS = pack_formats()
WRITABLE = ["f16", "bf16", "q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "iq4_nl", "q2_k", "q3_k",
            "q4_k", "q5_k", "q6_k", "i8g64", "i4g128"]


def run(cmd):
    r = subprocess.run(cmd, text=True, capture_output=True)
    if r.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


class Table:
    """A FlatBuffers table at `pos` of `buf`: fields by index."""

    def __init__(self, buf, pos):
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        self.vsize = struct.unpack_from("<H", buf, self.vtable)[0]

    def _field(self, i):
        at = 4 + 2 * i
        return struct.unpack_from("<H", self.buf, self.vtable + at)[0] if at < self.vsize else 0

    def scalar(self, i, fmt, default=0):
        off = self._field(i)
        return struct.unpack_from("<" + fmt, self.buf, self.pos + off)[0] if off else default

    def _ref(self, i):
        p = self.pos + self._field(i)
        return p + struct.unpack_from("<I", self.buf, p)[0]

    def string(self, i):
        p = self._ref(i)
        n = struct.unpack_from("<I", self.buf, p)[0]
        return bytes(self.buf[p + 4:p + 4 + n]).decode()

    def vector(self, i, fmt):
        p = self._ref(i)
        n = struct.unpack_from("<I", self.buf, p)[0]
        return list(struct.unpack_from("<%d%s" % (n, fmt), self.buf, p + 4))

    def tables(self, i):
        p = self._ref(i)
        n = struct.unpack_from("<I", self.buf, p)[0]
        return [Table(self.buf, q + struct.unpack_from("<I", self.buf, q)[0])
                for q in (p + 4 + 4 * k for k in range(n))]


def read_pack(path):
    """(data bytes, [{name, format, shape, offset, size}])."""
    blob = open(path, "rb").read()
    assert blob[:8] == b"KILNPACK", path
    table_offset, table_size, data_offset = struct.unpack_from("<QQQ", blob, 24)
    buf = memoryview(blob)[table_offset:table_offset + table_size]
    root = Table(buf, struct.unpack_from("<I", buf, 0)[0])
    tensors = []
    for t in root.tables(2):
        fmt = FORMATS[t.scalar(1, "B")]
        group = t.scalar(2, "I")
        tensors.append({"name": t.string(0),
                        "format": fmt + str(group) if fmt in ("i8g", "i4g") else fmt,
                        "shape": t.vector(3, "q"), "offset": t.scalar(4, "Q"),
                        "size": t.scalar(5, "Q")})
    return memoryview(blob)[data_offset:], tensors


def compile_model(kc, model, out, *flags):
    shutil.rmtree(out, ignore_errors=True)
    return run([kc, model, "-o", out] + list(flags))


def pack_of(out):
    (name,) = [f for f in os.listdir(out) if f.endswith(".kpack")]
    return os.path.join(out, name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--quantize-test", required=True)
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    res = Results()
    kc = args.kiln_compile

    _, _, model = gguf_tool.read_gguf(MODEL_A)
    source = {t["name"]: t for t in model}

    # (a) every writable format against whole-tensor encoding.
    for fmt in WRITABLE:
        out = os.path.join(args.work, "c99-" + fmt)
        compile_model(kc, MODEL_A, out, "--target=c99", "--quant=" + fmt, "--pure", "--jobs=2")
        data, tensors = read_pack(pack_of(out))
        # The converted tensors one after another, encoded in one call: blocks
        # never cross a tensor's rows, so each tensor's slice of the result is
        # its whole-tensor encoding.
        converted = [t for t in tensors if t["format"] != "f32"]
        f32 = os.path.join(args.work, "tensors.f32")
        enc = os.path.join(args.work, "tensors.bin")
        with open(f32, "wb") as f:
            for t in converted:
                f.write(source[t["name"]]["data"])
        run([args.quantize_test, "--encode", fmt, f32, enc])
        encoded, at, bad = open(enc, "rb").read(), 0, []
        for t in tensors:
            if t["format"] == "f32":
                want = bytes(source[t["name"]]["data"])
            else:
                want, at = encoded[at:at + t["size"]], at + t["size"]
            got = bytes(data[t["offset"]:t["offset"] + t["size"]])
            if got != want:
                first = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]),
                             min(len(got), len(want)))
                bad.append("%s (%s, %d bytes, first difference at byte %d)" %
                           (t["name"], t["format"], len(want), first))
        formats = {t["format"] for t in converted}
        if formats != {fmt}:
            bad.append("formats %s in the pack" % sorted(formats))
        res.check(converted and not bad,
                  "%s: %d converted tensors equal whole-tensor encoding%s" %
                  (fmt, len(converted), "; differ: " + ", ".join(bad[:4]) if bad else ""))

    # (b) panels: the same bytes on 1 and 3 threads.
    for label, flags in (("q4_0", ["--quant=q4_0"]), ("f32", [])):
        packs = []
        for jobs in (1, 3):
            out = os.path.join(args.work, "host-%s-%d" % (label, jobs))
            compile_model(kc, MODEL_A, out, "--target=host", "--jobs=%d" % jobs, *flags)
            packs.append(open(pack_of(out), "rb").read())
        res.check(packs[0] == packs[1],
                  "host %s: the pack is the same with 1 and 3 threads (%d bytes)" %
                  (label, len(packs[0])))

    # (c) the report's compile line.
    r = compile_model(kc, MODEL_A, os.path.join(args.work, "report"), "--quant=q8_0", "--report")
    m = re.search(r"^compile: ([0-9.]+) s, peak memory (\d+) MB$", r.stdout, re.M)
    res.check(m is not None and 0 < int(m.group(2)) < 4096,
              "--report gives the compile's time and peak memory (%s)" %
              (m.group(0) if m else "no 'compile:' line"))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
