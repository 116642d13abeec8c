#!/usr/bin/env python3
"""kiln-compile --report=DIR: report.json's numbers against the generated
header's constants, the pack file, plan-memory's attributes in the kernel IR and
the model file's shapes; the predicted speeds against the roofline recomputed
here from those numbers and each device's figures, for the table and for
--device=FILE; report.html's tables and SVG against report.json (parsed here),
then the page in headless Chromium: no console message, the DOM holds the
tables and SVG, and a screenshot that is not blank.

  report_test.py --kiln-compile PATH --work DIR [--chromium PATH]"""
import argparse
import html.parser
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import gguf_tool  # noqa: E402
from e2e import Results  # noqa: E402

TABLE_DEVICES = ["cortex-a76", "cortex-a55", "cortex-m7", "cortex-m55", "riscv-rvv"]
# A host's figures as bench/probes.c prints them.
HOST = {"name": "probe-host", "bandwidth_gbs": 12.5, "cache_bytes": 8388608, "cache_gbs": 30.0,
        "fma_gflops": 150.0, "int8_gops": 600.0}


def run(cmd):
    r = subprocess.run(cmd, text=True, capture_output=True)
    if r.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), r.returncode, r.stdout, r.stderr))
    return r


def header_constants(out):
    """NAME_SUFFIX -> value of the generated header's #defines."""
    (h,) = [f for f in os.listdir(out) if f.endswith(".h") and not f.endswith("_kernels.h")]
    text = open(os.path.join(out, h)).read()
    prefix = h[:-2].upper() + "_"
    return {m.group(1): int(m.group(2))
            for m in re.finditer("#define " + prefix + r"(\w+) (\d+)", text)}


def kernel_ir_plan(ir):
    """Per function: its plan attributes and the slots of its ops, from the
    kernel IR as text."""
    funcs = {}
    current = None
    for line in ir.splitlines():
        m = re.match(r"\s*func\.func @(\w+)\(.*kiln\.activation_bytes = (\d+) : i64, "
                     r"kiln\.activation_lower_bound = (\d+)", line)
        if m:
            current = funcs[m.group(1)] = {"activation_bytes": int(m.group(2)),
                                           "lower_bound": int(m.group(3)), "slots": []}
            continue
        if current is None or "kiln.kv_cache" in line or "kiln.kv_write" in line:
            continue
        for kind in ("slot", "scratch"):
            for s in re.finditer(kind + r" = #kiln\.slot<offset = (\d+), bytes = (\d+)>", line):
                current["slots"].append((int(s.group(1)), int(s.group(2)), kind == "scratch"))
    return funcs


class Page(html.parser.HTMLParser):
    """Counts what the report's page holds: tables by id and their body rows,
    SVG elements by id and class, and any reference to another resource."""

    def __init__(self):
        super().__init__()
        self.rows = {}
        self.table = None
        self.in_body = False
        self.svgs = {}
        self.svg = None
        self.rects = {}
        self.external = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        for key in ("src", "href"):
            if key in a:
                self.external.append(a[key])
        if tag == "table":
            self.table = a.get("id")
            self.rows[self.table] = 0
        elif tag == "tbody":
            self.in_body = True
        elif tag == "tr" and self.table and self.in_body:
            self.rows[self.table] += 1
        elif tag == "svg":
            self.svg = a.get("id")
            self.svgs[self.svg] = a.get("class", "")
            self.rects[self.svg] = 0
        elif tag == "rect" and self.svg and "buffer" in a.get("class", ""):
            self.rects[self.svg] += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_body = False
        elif tag == "table":
            self.table = None
        elif tag == "svg":
            self.svg = None


def png_pixels(path):
    """The decompressed image data of a PNG (filter bytes included)."""
    data = open(path, "rb").read()
    pos, idat = 8, b""
    while pos < len(data):
        n = int.from_bytes(data[pos:pos + 4], "big")
        kind = data[pos + 4:pos + 8]
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    return zlib.decompress(idat)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--chromium", default=shutil.which("chromium") or "")
    args = ap.parse_args()
    res = Results()
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)
    out, rep, ir_dir = (os.path.join(args.work, d) for d in ("out", "report", "ir"))
    # Mixed formats (q4_k_m's rules) and an int8 KV cache: every table has rows of
    # more than one kind.
    flags = ["--quant=q4_k_m", "--kv-type=q8"]
    host = os.path.join(args.work, "host.json")
    json.dump(HOST, open(host, "w"))
    text = run([args.kiln_compile, MODEL_A, "-o", out, "--report=" + rep, "--device=" + host,
                *flags]).stdout
    run([args.kiln_compile, MODEL_A, "-o", ir_dir, "--emit=kernel-ir", *flags])
    (ir_file,) = os.listdir(ir_dir)
    plan = kernel_ir_plan(open(os.path.join(ir_dir, ir_file)).read())
    report = json.load(open(os.path.join(rep, "report.json")))
    sizes = report["sizes"]

    consts = header_constants(out)
    (pack,) = [f for f in os.listdir(out) if f.endswith(".kpack")]
    for key, const in (("arena_bytes", "ARENA_BYTES"), ("kv_bytes", "KV_BYTES"),
                       ("pack_bytes", "PACK_BYTES")):
        res.check(sizes[key] == consts[const],
                  "report.json %s %d == the header's %s %d" % (key, sizes[key], const,
                                                               consts[const]))
    res.check(sizes["pack_bytes"] == os.path.getsize(os.path.join(out, pack)),
              "pack_bytes is the pack file's size")
    res.check(sizes["activation_bytes"] == sizes["arena_bytes"] - sizes["kv_bytes"],
              "activations are the arena less the KV cache")

    names = [f["name"] for f in report["functions"]]
    res.check(sorted(names) == sorted(plan), "functions %s as in the kernel IR" % names)
    for fn in report["functions"]:
        want = plan[fn["name"]]
        res.check(fn["activation_bytes"] == want["activation_bytes"] and
                  fn["activation_lower_bound"] == want["lower_bound"],
                  "@%s: activation bytes %d and lower bound %d as plan-memory's attributes"
                  % (fn["name"], fn["activation_bytes"], fn["activation_lower_bound"]))
        slots = sorted((b["offset"], b["bytes"], b["scratch"]) for b in fn["buffers"])
        res.check(slots == sorted(want["slots"]),
                  "@%s: %d buffers, the slots of the kernel IR's ops" % (fn["name"], len(slots)))
        top = max(b["offset"] + b["bytes"] for b in fn["buffers"])
        inside = all(b["offset"] >= sizes["kv_bytes"] and 0 <= b["first"] <= b["last"] <
                     fn["steps"] for b in fn["buffers"])
        peak = [b for b in fn["buffers"] if b["first"] <= fn["peak_step"] <= b["last"]]
        res.check(inside and top == sizes["kv_bytes"] + fn["activation_bytes"] and
                  max(b["offset"] + b["bytes"] for b in peak) == top,
                  "@%s: buffers after the KV cache, their top %d at the peak step %d"
                  % (fn["name"], top, fn["peak_step"]))

    table = [line.split() for line in text.splitlines()[1:] if re.match(r"\S+\s+\S+\s+\d+\s", line)
             and not line.startswith(("weights:", "arena:", "total"))]
    tensors = report["tensors"]
    res.check([(t["name"], t["format"], t["bytes"]) for t in tensors] ==
              [(r[0], r[1], int(r[2])) for r in table],
              "%d tensors: names, formats and bytes as --report prints them" % len(tensors))
    res.check(sum(t["bytes"] for t in tensors) == sizes["weights_bytes"],
              "weights_bytes is the tensors' sum")
    res.check(all((t["rms_error"] is None) == (r[3] == "as") for t, r in zip(tensors, table)),
              "an rms error exactly where a tensor was converted")

    # The work of a token: every 2-D weight but the embedding table, from the
    # model file's shapes; the KV cache per position of the header's context.
    ne = {t["name"]: t["ne"] for t in gguf_tool.read_gguf(MODEL_A, load_data=False)[2]}
    matmul = [t for t in tensors if t["name"] != "token_embd.weight" and "norm" not in t["name"]]
    work = report["workload"]
    macs = sum(ne[t["name"]][0] * ne[t["name"]][1] for t in matmul)
    res.check(work["weight_bytes"] == sum(t["bytes"] for t in matmul) and work["macs"] == macs
              and work["quantized_bytes"] == work["weight_bytes"],
              "a decode step reads %d bytes of weights, %d multiply-adds"
              % (work["weight_bytes"], work["macs"]))
    res.check(work["capacity"] == consts["MAX_CONTEXT"] and
              work["prefill_chunk"] == consts["PREFILL_CHUNK"] and
              work["kv_bytes_per_position"] * work["capacity"] == sizes["kv_bytes"],
              "KV cache %d bytes per position of %d; prefill chunk %d"
              % (work["kv_bytes_per_position"], work["capacity"], work["prefill_chunk"]))

    def roofline(d, context=None):
        bw = lambda b: (d["cache_gbs"] if b <= d["cache_bytes"] else d["dram_gbs"]) * 1e9
        peak = d["int8_gops"] * 1e9
        if context is None:  # prefill: the weights once per chunk
            b, ops = work["weight_bytes"] / work["prefill_chunk"], 2 * work["macs"]
        else:
            b = work["weight_bytes"] + work["kv_bytes_per_position"] * context
            ops = 2 * (work["macs"] + work["attention_macs_per_position"] * context)
        return 1 / max(b / bw(b), ops / peak)

    preds = {p["device"]: p for p in report["predictions"]}
    res.check(sorted(preds) == sorted(TABLE_DEVICES + [HOST["name"]]),
              "predictions for the table and the --device file: %s" % sorted(preds))
    close = lambda a, b: abs(a - b) <= 1e-9 * max(abs(b), 1)
    res.check(all(close(p["decode_tps_16"], roofline(p, 16)) and
                  close(p["decode_tps_max"], roofline(p, work["capacity"])) and
                  close(p["prefill_tps"], roofline(p)) for p in preds.values()),
              "every prediction is the roofline of its device's figures")
    h = preds[HOST["name"]]
    res.check(h["dram_gbs"] == HOST["bandwidth_gbs"] and h["cache_gbs"] == HOST["cache_gbs"] and
              ("predicted on %s: decode %.1f tokens/s" % (HOST["name"], h["decode_tps_16"]))
              in text, "--device=FILE reads the probes' figures; kiln-compile prints its line")
    bad = subprocess.run([args.kiln_compile, MODEL_A, "-o", os.path.join(args.work, "bad"),
                          "--device=no-such-board"], text=True, capture_output=True)
    res.check(bad.returncode == 1 and "--device=no-such-board: neither a device of the table"
              in bad.stderr, "an unknown device is an error naming it: " + bad.stderr.strip())

    # The progress line: on a terminal only, ending with the count and the time.
    quiet = run([args.kiln_compile, MODEL_A, "-o", os.path.join(args.work, "quiet"),
                 "--quant=q4_k"]).stderr
    leader, follower = pty.openpty()
    tty = subprocess.run([args.kiln_compile, MODEL_A, "-o", os.path.join(args.work, "tty"),
                          "--quant=q4_k"], stderr=follower, stdout=subprocess.DEVNULL)
    os.close(follower)
    shown = b""
    try:
        while True:
            chunk = os.read(leader, 1 << 16)
            if not chunk:
                break
            shown += chunk
    except OSError:
        pass
    os.close(leader)
    last = shown.decode(errors="replace").split("\r")[-2:]
    res.check(quiet == "" and tty.returncode == 0 and "packing tensor 1/57" in shown.decode()
              and re.match(r"kiln-compile: 57 tensors packed in \d+\.\d s", last[0]) is not None,
              "a progress line on a terminal (%r), none otherwise" % last[0][:60])

    # Machine code and stack as gcc builds the folder, measured again here:
    # `size` of each object's .text sections, the deepest chain of the call
    # graphs GCC writes.
    code = report["code"]
    scratch = os.path.join(args.work, "objects")
    os.makedirs(scratch)
    text = {"model": 0, "runtime": 0}
    graphs = []
    name = [f for f in os.listdir(out) if f.endswith("_kernels.c")][0][:-len("_kernels.c")]
    for i, (src, part) in enumerate([(name + ".c", "model"), (name + "_kernels.c", "model")] +
                                    [("runtime/src/%s.c" % f, "runtime")
                                     for f in ("status", "pack", "tokenizer", "pretokenize",
                                               "chat", "sampler")]):
        obj = os.path.join(scratch, "%d.o" % i)
        run(["gcc", "-O2", "-std=c99", "-ffp-contract=off", "-fcallgraph-info=su", "-c", "-I", out,
             "-I", os.path.join(out, "runtime", "include"), os.path.join(out, src), "-o", obj])
        sections = run(["size", "-A", "-d", obj]).stdout.splitlines()
        text[part] += sum(int(line.split()[1]) for line in sections
                          if line.startswith(".text"))
        graphs.append(open(os.path.join(scratch, "%d.ci" % i)).read())
    frames, calls = {}, {}
    for g in graphs:
        for m in re.finditer(r'node: \{ title: "([^"]+)" label: "[^"]*\\n(\d+) bytes \(([a-z,]+)\)', g):
            frames[m.group(1)] = int(m.group(2))
        for m in re.finditer(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', g):
            calls.setdefault(m.group(1), []).append(m.group(2))
    memo = {}

    def deepest(fn):
        if fn not in memo:
            memo[fn] = frames.get(fn, 0) + max([deepest(c) for c in calls.get(fn, [])] or [0])
        return memo[fn]

    bound = max(deepest(f) for f in frames)
    res.check(code.get("model_text_bytes") == text["model"] and
              code.get("runtime_text_bytes") == text["runtime"] and
              code.get("stack_bound_bytes") == bound and bound >= max(frames.values()),
              "code: %s model bytes, %s runtime bytes, stack bound %s (from %s) as gcc, size "
              "and the call graph give them" % (code.get("model_text_bytes"),
                                                code.get("runtime_text_bytes"),
                                                code.get("stack_bound_bytes"),
                                                code.get("stack_entry")))

    page = Page()
    page.feed(open(os.path.join(rep, "report.html")).read())
    res.check(page.rows.get("sizes") == 8 and page.rows.get("tensors") == len(tensors) and
              page.rows.get("predictions") == len(preds),
              "report.html: the sizes table, one row per tensor and per prediction")
    res.check("sizes-bar" in page.svgs and all(
        page.rects.get("plan-" + fn["name"]) == len(fn["buffers"]) for fn in report["functions"]),
              "report.html: the sizes bar and one SVG bar per buffer of each function's plan")
    res.check(not page.external, "report.html refers to nothing else: %s" % page.external)

    if not args.chromium:
        res.check(False, "headless Chromium: not found (scripts/setup.sh installs it)")
        return res.finish()
    url = "file://" + os.path.join(rep, "report.html")
    # No sandbox (root in CI) and no /dev/shm (small in containers).
    base = [args.chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0"]
    dom = subprocess.run(base + ["--dump-dom", url], text=True, capture_output=True,
                         timeout=120)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    res.check(dom.returncode == 0 and not console,
              "Chromium renders report.html with nothing on the console %s" % console)
    res.check(all(s in dom.stdout for s in ('<table id="sizes"', '<table id="tensors"',
                                             '<table id="predictions"', '<svg id="sizes-bar"',
                                             'class="plan"')),
              "Chromium's DOM holds the tables and the SVG")
    shot = os.path.join(args.work, "report.png")
    subprocess.run(base + ["--screenshot=" + shot, "--window-size=1000,1400", url],
                   capture_output=True, timeout=120)
    pixels = png_pixels(shot) if os.path.exists(shot) else b""
    res.check(len(set(pixels)) > 16, "the screenshot is not blank (%d distinct bytes)"
              % len(set(pixels)))
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
