#!/usr/bin/env python3
"""Work per decoded token on the emulated Cortex-M boards: the firmware sample
(samples/firmware) built against an installed Kiln for each board with the
portable kernels (c99) and with the board's core kernels, booted under
qemu-system-arm -icount shift=0.

qemu is not cycle-accurate, so this counts instructions, not time: with
-icount shift=0 the emulated core retires one instruction per nanosecond of
virtual time, and the firmware's SysTick counts at the board's core clock, so
instructions = SysTick cycles x 1e9 / clock (checked: a loop of 20 M
instructions reads 640 000 cycles at 32 MHz and 500 000 at 25 MHz).

  python3 bench/firmware.py [--build build] [--work /tmp/kiln-firmware-bench]

Beside the counts: the decode speed the compile report's roofline predicts on
the board core's device (kiln-compile --device), and the speed the counted
instructions give at that device's clock if it retired one a cycle.

Targets (issue 33): M55 int8 at least 4x fewer instructions than c99, M7 at
least 2x."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
import firmware  # noqa: E402  (the e2e test's build helpers)

MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")
TABLE = json.load(open(os.path.join(ROOT, "codegen_targets", "isa_variants.json")))
CLOCK = {b["name"]: b["clock_hz"] for b in TABLE["boards"]}
PROMPT = "It is a truth universally acknowledged, that a single man"

# The report's device for each board's core, and its clock (the device table's).
DEVICE = {"mps3-an547": ("cortex-m55", 400e6), "mps2-an500": ("cortex-m7", 480e6),
          "mps2-an386": ("cortex-m7", 480e6)}
# A 2.4 MB model at q8_0 for the M7 board: model A's q8_0 (5.3 MB) is over its
# 4 MB of code and weights memory.
MEDIUM = ["--n-embd", "256", "--n-layer", "3", "--n-head", "4", "--n-head-kv", "2",
          "--n-ff", "768", "--vocab", "300", "--ctx", "256"]

# board, model, quant, kiln-compile options: model A where it fits the board,
# random models of the e2e test's 0.96 MB and of 2.4 MB on M7.
RUNS = [
    ("mps3-an547", "A", "q8_0", ()),
    ("mps3-an547", "A", "q4_0", ("--pure",)),
    ("mps2-an500", "small", "q8_0", ()),
    ("mps2-an500", "medium", "q8_0", ()),
    ("mps2-an500", "A", "q4_0", ("--pure",)),
    ("mps2-an386", "A", "q4_0", ("--pure",)),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--work", default="/tmp/kiln-firmware-bench")
    ap.add_argument("--boards", default="", help="comma-separated; default: all")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    args.prefix = os.path.join(args.work, "prefix")
    shutil.rmtree(args.prefix, ignore_errors=True)
    subprocess.run(["cmake", "--install", args.build, "--prefix", args.prefix], check=True,
                   capture_output=True)
    models = {"A": MODEL_A}
    for name, shape in (("small", firmware.SMALL), ("medium", MEDIUM)):
        models[name] = os.path.join(args.work, name + ".gguf")
        subprocess.run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"),
                        "model", models[name], "--seed", "11", "--name", name, *shape], check=True)
    print("| board | model | quant | target | prefill instructions/token | "
          "decode instructions/token | c99 / target (decode) | decode tokens/s at 1 IPC | "
          "roofline prediction |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for board, model, quant, extra in RUNS:
        if args.boards and board not in args.boards.split(","):
            continue
        core = next(b["variants"][0] for b in TABLE["boards"] if b["name"] == board)
        counts = {}
        for target in ("c99", core):
            b = os.path.join(args.work, f"{board}-{target}-{model}-{quant}")
            firmware.firmware_build(args, b, board, models[model], quant, target, PROMPT, extra)
            status, uart = firmware.boot(b, icount=True)
            m = re.search(r"prompt tokens (\d+) prefill cycles (\d+) decode cycles/token (\d+)",
                          uart)
            if status != 0 or not m:
                print(f"{board} {target}: the run failed: {uart[-300:]!r}")
                return 1
            scale = 1e9 / CLOCK[board]
            counts[target] = (int(m.group(2)) * scale / int(m.group(1)), int(m.group(3)) * scale)
        device, clock = DEVICE[board]
        r = subprocess.run([os.path.join(args.prefix, "bin", "kiln-compile"), models[model],
                            f"--quant={quant}", *extra, f"--target={core}", f"--device={device}",
                            "-o", os.path.join(args.work, "predict")],
                           check=True, text=True, capture_output=True)
        m = re.search(r"decode ([0-9.]+) tokens/s at context 16 \((\w+)-bound\)", r.stdout)
        predicted = f"{device}: {m.group(1)} tokens/s ({m.group(2)}-bound)" if m else "?"
        for target in ("c99", core):
            ratio = counts["c99"][1] / counts[target][1]
            print(f"| {board} | {model} | {quant}{''.join(extra)} | {target} | "
                  f"{counts[target][0]:,.0f} | {counts[target][1]:,.0f} | {ratio:.2f}x | "
                  f"{clock / counts[target][1]:.1f} | {predicted if target == core else ''} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
