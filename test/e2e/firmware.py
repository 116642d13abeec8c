#!/usr/bin/env python3
"""The firmware sample (samples/firmware) built against an installed Kiln, as a
firmware project builds it (find_package(Kiln), kiln_add_model, the repo's
arm-none-eabi toolchain file), booted on each emulated board in
qemu-system-arm. For each image: its greedy text equals the host c99 build of
the same model and quantization; it references no heap, file or stdio symbol;
its weights and arena sections are the generated header's PACK_BYTES and
ARENA_BYTES in the board's regions. A model that does not fit a board is a
kiln-compile error naming the region and the overflow.

Prints 'N passed, N failed', a flash and RAM table and the cycle counts."""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e  # noqa: E402
from e2e import MODEL_A, ROOT, Results, run  # noqa: E402

MODEL_A_F32 = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
# At most 1 MB of weights for the Cortex-M7 board: 0.86 M parameters at q8_0.
SMALL = ["--n-embd", "128", "--n-layer", "4", "--n-head", "4", "--n-head-kv", "2",
         "--n-ff", "384", "--vocab", "300", "--ctx", "256"]
BANNED = {"malloc", "calloc", "realloc", "free", "_sbrk", "_sbrk_r", "_malloc_r", "fopen",
          "printf", "puts", "_write", "_read", "_open", "mmap"}
TOKENS = 24


def firmware_build(args, b, board, model, quant, target, prompt, extra=()):
    """Configures and builds samples/firmware in `b`; returns the image."""
    shutil.rmtree(b, ignore_errors=True)
    launcher = [f"-DCMAKE_C_COMPILER_LAUNCHER={e2e.CCACHE}"] if e2e.CCACHE else []
    run(["cmake", "-S", os.path.join(ROOT, "samples", "firmware"), "-B", b, "-G", "Ninja",
         f"-DCMAKE_TOOLCHAIN_FILE={os.path.join(ROOT, 'cmake', 'arm-none-eabi.cmake')}",
         f"-DKiln_DIR={os.path.join(args.prefix, 'lib', 'cmake', 'Kiln')}",
         f"-DKILN_BOARD={board}", f"-DKILN_MODEL={model}", f"-DKILN_QUANT={quant}",
         f"-DKILN_TARGET={target}", f"-DKILN_PROMPT={prompt}", f"-DKILN_TOKENS={TOKENS}",
         "-DKILN_OPTIONS=" + ";".join(extra), "-DKILN_PRINT_LOGITS=ON", *launcher])
    r = run(["cmake", "--build", b, "-j1"])
    return os.path.join(b, "firmware.elf"), r.stdout


def boot(b, icount=False):
    """Runs the image through the sample's run target; returns the UART text."""
    r = subprocess.run(["cmake", "--build", b, "--target", "run-icount" if icount else "run"],
                       encoding="latin-1", capture_output=True, timeout=1200)
    # The build tool's line announcing the emulator comes first.
    lines = r.stdout.split("\n")
    while lines and lines[0].startswith("[") and "qemu-system-arm" in lines[0]:
        lines.pop(0)
    return r.returncode, "\n".join(lines)


def host_run(args, model, quant, prompt, extra=()):
    """The host c99 build's greedy text for the model at `quant`, and its
    logits (a row per evaluated position)."""
    out = os.path.join(args.work, "host-" + os.path.basename(model) + "-" + quant + "".join(extra))
    host = argparse.Namespace(**{**vars(args), "target": "c99"})
    name = e2e.compile_model(host, model, out, f"--quant={quant}", *extra)
    b = e2e.build(out, "gcc")
    # Bytes as they are (a random model's text need not be UTF-8).
    dump = os.path.join(out, "logits.f32")
    r = subprocess.run([os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack"),
                        "-p", prompt, "-n", str(TOKENS), "--ignore-eos", "--dump-logits", dump],
                       check=True, encoding="latin-1", capture_output=True)
    with open(dump, "rb") as f:
        data = f.read()
    return r.stdout, data


def header_constant(b, suffix):
    for root, _, files in os.walk(b):
        for f in files:
            if f.endswith(".h") and not f.endswith("_kernels.h") and root.endswith(".kiln"):
                m = re.search(r"#define \w+_" + suffix + r" (\d+)", open(os.path.join(root, f)).read())
                if m:
                    return int(m.group(1))
    return None


def sections(elf):
    """{name: (size, address)} from size -A."""
    out = {}
    for line in run(["arm-none-eabi-size", "-A", elf]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1].isdigit():
            out[parts[0]] = (int(parts[1]), int(parts[2]))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--build-dir", required=True, help="Kiln's build directory, to install")
    ap.add_argument("--work", required=True)
    args = ap.parse_args()
    args.target = "c99"
    e2e.WORK_ROOT = os.path.dirname(os.path.abspath(args.work))
    os.makedirs(args.work, exist_ok=True)
    res = Results()
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if not shutil.which(tool):
            res.check(False, f"{tool} is installed (scripts/setup.sh)")
            return res.finish()

    args.prefix = os.path.join(args.work, "prefix")
    shutil.rmtree(args.prefix, ignore_errors=True)
    run(["cmake", "--install", args.build_dir, "--prefix", args.prefix])

    small = os.path.join(args.work, "small.gguf")
    run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", small,
         "--seed", "11", "--name", "small", *SMALL])
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    prompt = refs["prompts"][0]["text"]

    # board, target, model, quant, kiln-compile options. The greedy text is
    # compared on model A only: a random model's flat distributions leave
    # near-ties that the last bits of libm's functions may break either way.
    images = [
        ("mps3-an547", "arm-cortex-m55", MODEL_A_F32, "q8_0", ()),
        ("mps3-an547", "arm-cortex-m55", MODEL_A_F32, "q4_0", ("--pure", "--kv-type=q8")),
        ("mps3-an547", "c99", MODEL_A_F32, "q8_0", ()),
        ("mps2-an500", "arm-cortex-m7", small, "q8_0", ("--kv-type=f16",)),
        ("mps2-an500", "arm-cortex-m7", small, "q4_0", ("--pure",)),
        # Cortex-M4's FPU has no doubles: newlib's float functions, which
        # compute in double, round their last bits otherwise than where fma
        # contracts them; the random model amplifies that, model A does not.
        ("mps2-an386", "arm-cortex-m4", MODEL_A_F32, "q4_0", ("--pure",)),
    ]
    want = {}
    table = []
    for board, target, model, quant, extra in images:
        key = (model, quant, extra)
        if key not in want:
            want[key] = host_run(args, model, quant, prompt, extra)
        host_text, host_logits = want[key]
        label = f"{board} {target} {os.path.basename(model)} {quant}{''.join(extra)}"
        b = os.path.join(args.work, f"{board}-{target}-{os.path.basename(model)}-{quant}")
        elf, link = firmware_build(args, b, board, model, quant, target, prompt, extra)
        status, uart = boot(b)
        head, _, rest = uart.partition("\n")
        text, _, figures = rest.partition("\nkiln: ")
        got = [struct.unpack("<f", bytes.fromhex(w)[::-1])[0]
               for w in head[len("logits:"):].split(",")] if head.startswith("logits:") else []
        n_prompt = int(re.search(r"prompt tokens (\d+)", figures).group(1)) if figures else 0
        vocab = len(got)
        ref = struct.unpack(f"<{vocab}f", host_logits[4 * vocab * (n_prompt - 1):
                                                       4 * vocab * n_prompt]) if n_prompt else ()
        err = max((abs(a - r) for a, r in zip(got, ref)), default=float("inf"))
        bound = 1e-4 * max(1.0, max((abs(r) for r in ref), default=0.0))
        res.check(status == 0 and vocab > 0 and len(ref) == vocab and err <= bound,
                  f"{label}: boots; the prompt's last logits within {bound:.2g} of the host c99 "
                  f"build's (max abs difference {err:.3g})")
        if model == MODEL_A_F32:
            res.check(text + "\n" == host_text,
                      f"{label}: its greedy text is the host c99 build's: {text!r}")
        else:
            print(f"{label}: text {text!r}")
        undefined = set(run(["arm-none-eabi-nm", "-u", elf]).stdout.split())
        defined = {line.split()[-1] for line in run(["arm-none-eabi-nm", elf]).stdout.splitlines()}
        banned = sorted((undefined | defined) & BANNED)
        res.check(not banned, f"{label}: no heap, file or stdio symbols ({banned or 'none'})")
        s = sections(elf)
        pack, arena = header_constant(b, "PACK_BYTES"), header_constant(b, "ARENA_BYTES")
        res.check(s.get(".kiln_weights", (0, 0))[0] == pack and
                  s.get(".kiln_arena", (0, 0))[0] == arena,
                  f"{label}: .kiln_weights {s.get('.kiln_weights')} is PACK_BYTES {pack}, "
                  f".kiln_arena {s.get('.kiln_arena')} is ARENA_BYTES {arena}")
        code = sum(s.get(n, (0, 0))[0] for n in (".vectors", ".text", ".ARM.exidx")) + \
            s.get(".data", (0, 0))[0]
        ram = sum(s.get(n, (0, 0))[0] for n in (".data", ".bss", ".heap", ".stack"))
        table.append((label, code, s.get(".kiln_weights", (0, 0))[0], ram, arena,
                      figures.strip()))
        print(link[link.find("Memory region"):].strip() if "Memory region" in link else "")

    # The image has no heap: the same boot code and link, with a call to malloc, fails to link.
    heap = os.path.join(args.work, "heap.c")
    with open(heap, "w") as f:
        f.write("#include <stdlib.h>\nint main(void) { return malloc(16) != 0; }\n")
    memory = os.path.join(args.work, f"mps3-an547-arm-cortex-m55-{os.path.basename(MODEL_A_F32)}-q8_0")
    boot_dir = os.path.join(ROOT, "samples", "firmware")
    r = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard",
                        "-O2", f"-I{boot_dir}", "-DKILN_UART_BASE=0x59303000u", "-nostartfiles",
                        "--specs=nano.specs", f"-L{memory}",
                        f"-T{os.path.join(boot_dir, 'boot', 'firmware.ld')}", heap,
                        os.path.join(boot_dir, "boot", "startup.c"),
                        "-o", os.path.join(args.work, "heap.elf")], text=True, capture_output=True)
    res.check(r.returncode != 0 and "_sbrk" in r.stderr,
              "a firmware that calls malloc does not link: "
              f"{[l for l in r.stderr.splitlines() if '_sbrk' in l][:1]}")

    # A model that does not fit: model A at q8_0 (5.3 MB) on the 4 MB flash of mps2-an500.
    r = subprocess.run([args.kiln_compile, MODEL_A_F32, "--quant=q8_0", "--board=mps2-an500",
                        "--weights=embed", "-o", os.path.join(args.work, "too-big")],
                       text=True, capture_output=True)
    res.check(r.returncode != 0 and "does not fit board mps2-an500" in r.stderr and
              "region ssram1" in r.stderr and "bytes over" in r.stderr,
              f"a model too big for the board: a clear error: {r.stderr.strip()}")

    print("\n| image | code + data image (flash) | weights (flash) | statics + stack (RAM) | "
          "arena (RAM) | figures |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in table:
        print("| " + " | ".join(str(c) for c in row) + " |")
    return res.finish()


if __name__ == "__main__":
    sys.exit(main())
