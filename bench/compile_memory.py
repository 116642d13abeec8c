#!/usr/bin/env python3
"""Peak memory and time of kiln-compile on large random-weight models, against the
streaming bounds: at most 0.5 GB plus the largest tensor for the M and L shapes
(f16 files quantized to q4_0) and 1.5 GB plus the largest tensor for a
Llama-3-8B shape stored in q4_0, compiled for the host target.

  python3 bench/compile_memory.py [--build build] [--work /tmp/kiln-bench-compile]
                                  [--models M,L,8B] [--compare OTHER_KILN_COMPILE]

Models are written once to WORK/models (bench/shapes.py's shapes; the 8B shape
takes 4.5 GB of disk and its pack as much again). Peak memory is the child's
maximum resident set (file pages it mapped included), read by wait4. --compare
runs another kiln-compile on the same models in the same run, and says whether
its packs are byte-identical. Prints a markdown table."""
import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
import gguf_tool  # noqa: E402
from shapes import make_model  # noqa: E402

# Each model (a shape of bench/shapes.py): its file type, --quant, and the bound's
# fixed part in bytes (plus the largest tensor).
MODELS = {
    "M": (gguf_tool.GGML_F16, "q4_0", 0.5e9),
    "L": (gguf_tool.GGML_F16, "q4_0", 0.5e9),
    "8B": (gguf_tool.GGML_Q4_0, None, 1.5e9),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def largest_tensor(path):
    with open(path, "rb") as f:
        head = f.read(64 << 20)
    info = gguf_tool.parse_gguf(memoryview(head), load_data=False)
    return max(gguf_tool.tensor_nbytes(t["type"], t["ne"]) for t in info["tensors"])


def compile_once(kc, model, out, quant):
    """(seconds, peak resident bytes)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [kc, model, "--target=host", "-o", out] + (["--quant=" + quant] if quant else [])
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError("%s failed:\n%s" % (" ".join(cmd), err[-2000:]))
    return seconds, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/kiln-bench-compile")
    ap.add_argument("--models", default="M,L,8B")
    ap.add_argument("--compare", help="another kiln-compile, run on the same models")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    kc = os.path.join(args.build, "bin", "kiln-compile")
    compilers = [("kiln-compile", kc)] + ([("compare", args.compare)] if args.compare else [])
    rows = []
    for name in args.models.split(","):
        ggml_type, quant, fixed = MODELS[name]
        path = make_model(name, args.work, ggml_type)
        size, largest = os.path.getsize(path), largest_tensor(path)
        outs = []
        for label, exe in compilers:
            out = os.path.join(args.work, "out-%s-%s" % (name, label))
            log("%s: %s" % (name, label))
            seconds, peak = compile_once(exe, path, out, quant)
            outs.append(out)
            rows.append((name, label, size, largest, quant or "as stored", peak, fixed + largest,
                         seconds))
        if len(outs) == 2:
            pack = [f for f in os.listdir(outs[0]) if f.endswith(".kpack")][0]
            same = filecmp.cmp(os.path.join(outs[0], pack), os.path.join(outs[1], pack),
                               shallow=False)
            log("%s: packs %s" % (name, "byte-identical" if same else "DIFFER"))
    print("| model | compiler | file | largest tensor | quant | peak RSS | bound | within |"
          " compile s | s per GB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, label, size, largest, quant, peak, bound, seconds in rows:
        print("| %s | %s | %.2f GB | %.0f MB | %s | %.0f MB | %.0f MB | %s | %.1f | %.1f |" %
              (name, label, size / 1e9, largest / 1e6, quant, peak / 1e6, bound / 1e6,
               "yes" if peak <= bound else "NO", seconds, seconds / (size / 1e9)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
