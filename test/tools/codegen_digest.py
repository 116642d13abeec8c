#!/usr/bin/env python3
"""Digests of everything kiln-compile writes for model A, on every target and a
spread of options, so that a change meant to keep the output (a refactor) can be
checked byte for byte:

    codegen_digest.py --kiln-compile build/bin/kiln-compile --save before.json
    ... change ...
    codegen_digest.py --kiln-compile build/bin/kiln-compile --compare before.json

--compare prints every file whose bytes differ (or that is new or gone) and exits
1 when there is one. Files the output folder copies from the repository (the
runtime, the kernel library, the samples) are listed apart from the model's own
generated files (<name>.h/.c, <name>_kernels.h/.c, the pack, CMakeLists.txt)."""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")
LLAMACPP_A = os.path.join(ROOT, "test", "data", "llamacpp-A")

TARGETS = ["c99", "x86-avx2", "x86-avxvnni", "x86-avx512", "arm-neon", "arm-neon-i8mm",
           "riscv-rvv"]
# (label, model, flags): each compiled for every target.
CONFIGS = [
    ("f32", MODEL_A, []),
    ("q8_0-t2", MODEL_A, ["--quant=q8_0", "--threads=2"]),
    ("q4_0-kvq4", MODEL_A, ["--quant=q4_0", "--kv-type=q4", "--max-context=256"]),
    ("i4g64-kvq8-posmajor", MODEL_A, ["--quant=i4g64", "--kv-type=q8", "--kv-layout=pos-major",
                                      "--prefill-chunk=16"]),
    ("f16-kvf16-window", MODEL_A, ["--quant=f16", "--kv-type=f16", "--kv-window=64",
                                   "--max-context=128"]),
    ("q4_k_m-t2", os.path.join(LLAMACPP_A, "A-Q4_K_M.gguf"), ["--threads=2"]),
    ("q5_k_m", os.path.join(LLAMACPP_A, "A-Q5_K_M.gguf"), []),
    ("q6_k-kvq4-posmajor", os.path.join(LLAMACPP_A, "A-Q6_K.gguf"),
     ["--kv-type=q4", "--kv-layout=pos-major", "--max-context=96"]),
    ("q5_0", os.path.join(LLAMACPP_A, "A-Q5_0.gguf"), []),
    ("iq4_nl-nofuse", os.path.join(LLAMACPP_A, "A-IQ4_NL.gguf"), ["--fuse="]),
    ("embed", MODEL_A, ["--quant=q8_0", "--weights=embed", "--max-context=64"]),
]


def sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def digests(kiln_compile, targets):
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, flags in CONFIGS:
            for target in targets:
                d = os.path.join(tmp, "out")
                shutil.rmtree(d, ignore_errors=True)
                subprocess.run([kiln_compile, model, "-o", d, f"--target={target}", *flags],
                               check=True, capture_output=True)
                for base, _, files in os.walk(d):
                    for f in files:
                        rel = os.path.relpath(os.path.join(base, f), d)
                        out[f"{label}/{target}/{rel}"] = sha(os.path.join(base, f))
    return out


def copied(key):
    rel = key.split("/", 2)[2]
    return rel.split("/")[0] in ("runtime", "codegen_targets", "kernels", "samples")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--targets", default=",".join(TARGETS))
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save")
    g.add_argument("--compare")
    args = ap.parse_args()
    now = digests(args.kiln_compile, args.targets.split(","))
    if args.save:
        with open(args.save, "w") as f:
            json.dump(now, f, indent=0, sort_keys=True)
        print(f"{len(now)} files")
        return 0
    before = json.load(open(args.compare))
    differ = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    for kind, keep in (("generated", False), ("copied from the repository", True)):
        ks = [k for k in differ if copied(k) == keep]
        print(f"{kind}: {len(ks)} of "
              f"{sum(1 for k in set(before) | set(now) if copied(k) == keep)} files differ")
        for k in ks:
            state = "new" if k not in before else "gone" if k not in now else "changed"
            print(f"  {state} {k}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
