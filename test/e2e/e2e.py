#!/usr/bin/env python3
"""End-to-end tests: compile a GGUF model with kiln-compile, build the generated C
with a C compiler at -std=c99 -pedantic -Wall -Wextra -Werror, run it, and compare
with an independent oracle (model A's reference logits, or the naive Python
reference in test/tools/llama_ref.py for random-weight models).

Each subcommand is one ctest test and prints 'N passed, N failed'."""
import argparse
import json
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
sys.path.insert(0, os.path.join(ROOT, "test", "runtime"))
import gguf_tool  # noqa: E402
import llama_ref  # noqa: E402
import tokenizer_test  # noqa: E402  (its independent GPT-2 BPE encoder)

MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A")
STRICT = "-Wall -Wextra -Werror -pedantic"
# Sanitized builds (and the plain builds they are compared with): -O1, as the
# sanitizers' documentation advises, under a build type that adds no flags.
SANITIZE_OPT = "-O1 -g"


class Results:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, ok, what):
        print(("PASS " if ok else "FAIL ") + what, flush=True)
        if ok:
            self.passed += 1
        else:
            self.failed += 1

    def finish(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 and self.passed > 0 else 1


# The ISA table: each target's CPU features, and how to build for and run on
# the other architectures.
ISA_TABLE = json.load(open(os.path.join(ROOT, "codegen_targets", "isa_variants.json")))
VARIANTS = {v["name"]: v for v in ISA_TABLE["variants"]}
CROSS = {arch: (a["cc"], a["cmake"], a["run"].split())
         for arch, a in ISA_TABLE["arches"].items() if a["run"]}


def cpu_lacks(target, work):
    """The features of an x86 target that this CPU lacks, asked as the generated
    open asks them (__builtin_cpu_supports, in a probe built with gcc); none
    for a target of another architecture (those run under qemu)."""
    v = VARIANTS.get(target)
    if not v or v["arch"] != "x86_64":
        return []
    os.makedirs(work, exist_ok=True)
    probe = os.path.join(work, "cpu-probe")
    tests = "".join(f'  puts(__builtin_cpu_supports("{f}") ? "" : "{f}");\n' for f in v["cpu"])
    with open(probe + ".c", "w") as f:
        f.write(f"#include <stdio.h>\nint main(void) {{\n{tests}  return 0;\n}}\n")
    run(["gcc", probe + ".c", "-o", probe])
    return run([probe]).stdout.split()


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, text=True, capture_output=True, **kw)


def compile_model(args, gguf, out, *flags):
    shutil.rmtree(out, ignore_errors=True)
    run([args.kiln_compile, gguf, "-o", out, f"--target={args.target}", *flags])
    with open(os.path.join(out, "CMakeLists.txt")) as f:
        name = f.read().split("project(")[1].split()[0]
    return name


# Compiles go through ccache when it is there: sources that another build (of
# this test, another test or an earlier run) already compiled, such as the
# runtime every folder carries, are not compiled again. Paths under the e2e
# tests' work root are hashed relative to the build directory, so the same
# file in two folders is one entry.
CCACHE = shutil.which("ccache")
WORK_ROOT = None  # the parent of --work: every e2e test's folders are under it


def cmake_build(source, b, cc, cflags, *defs):
    """Configures and builds the CMake project at `source` in `b` with `cc` and
    `cflags`. One job: ctest runs one test per core, so a build never competes
    with another of its own test for a core."""
    launcher = [f"-DCMAKE_C_COMPILER_LAUNCHER={CCACHE}"] if CCACHE else []
    env = dict(os.environ, CCACHE_BASEDIR=WORK_ROOT, CCACHE_NOHASHDIR="1")
    run(["cmake", "-S", source, "-B", b, f"-DCMAKE_C_COMPILER={cc}",
         f"-DCMAKE_C_FLAGS={cflags}", *launcher, *defs], env=env)
    run(["cmake", "--build", b, "-j1"], env=env)
    return b


def build(out, cc, defs=()):
    """Builds the generated folder with `cc`; returns the build directory."""
    return cmake_build(out, os.path.join(out, "build-" + os.path.basename(cc)), cc, STRICT, *defs)


def generate(build_dir, pack, tokens, n, dump, *extra):
    r = run([os.path.join(build_dir, "kiln-generate"), "--pack", pack, "--tokens",
             ",".join(map(str, tokens)), "-n", str(n), "--dump-logits", dump, *extra])
    ids = [int(x) for x in r.stdout.split("ids:")[1].split(",")] if n else []
    return ids


def perplexity_in(stdout):
    """The value of kiln-generate --perplexity's "perplexity: X" line."""
    return float(stdout.split("perplexity:")[1].split()[0])


def npy_rows(path):
    shape, flat = llama_ref.read_npy(path)
    return [flat[i * shape[1]:(i + 1) * shape[1]] for i in range(shape[0])]


def profile_heatmap(res, args, gguf, generate, pack, out, sites, prompt, *flags):
    """kiln-generate --profile=FILE.html of a KILN_PROFILE build: FILE.json's
    calls and times per site against the printed profile and the run's shape,
    its weight bytes per call against the pack's tensors (--report), and the
    page in headless Chromium."""
    html = os.path.join(out, "profile.html")
    r = run([generate, "--pack", pack, "-p", prompt, "-n", "12", "--ignore-eos",
             "--profile", html, "--bandwidth", "20"])
    prof = json.load(open(os.path.join(out, "profile.json")))["sites"]
    total_ms = float(r.stderr.split("profile:")[1].split()[0])
    by_fn = {f: [s for s in prof if s["function"] == f] for f in ("prefill", "decode")}
    res.check(len(prof) == sites and abs(sum(s["ns"] for s in prof) * 1e-6 - total_ms) < 2e-3 and
              len({s["calls"] for s in by_fn["decode"]}) == 1 and
              len({s["calls"] for s in by_fn["prefill"]}) == 1 and
              by_fn["decode"][0]["calls"] == 11,
              f"profile.json: {sites} sites, every decode site called 11 times (12 tokens), "
              f"their times the printed {total_ms} ms")
    table = run([args.kiln_compile, gguf, "-o", os.path.join(out, "report-only"),
                 f"--target={args.target}", "--report", *flags]).stdout
    bytes_of = {f[0]: int(f[2]) for f in (line.split() for line in table.splitlines())
                if len(f) >= 4 and f[0].endswith(".weight") and f[2].isdigit()}
    matmuls = [s for s in prof if s["kind"] in ("qkv", "residual", "swiglu", "matmul")]
    res.check(matmuls and all(s["weight_bytes"] == sum(bytes_of[w] for w in
                                                       s["label"].split()[1].split("+"))
                              for s in matmuls) and
              all(s["weight_bytes"] == 0 for s in prof if s not in matmuls) and
              all(s["layer"] == int(s["label"].split("blk.")[1].split(".")[0])
                  for s in prof if "blk." in s["label"]),
              f"profile.json: {len(matmuls)} matmul sites read their weights' pack bytes, "
              "the others none; layers from the labels")
    chromium = shutil.which("chromium")
    if not chromium:
        res.check(False, "headless Chromium: not found (scripts/setup.sh --test installs it)")
        return
    dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                          "--disable-dev-shm-usage", "--enable-logging=stderr", "--v=0",
                          "--dump-dom", "file://" + html],
                         text=True, capture_output=True, timeout=120)
    console = [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    calls = sum(1 for s in by_fn["decode"] if s["calls"])
    res.check(dom.returncode == 0 and not console and 'id="heatmap-prefill"' in dom.stdout and
              'id="heatmap-decode"' in dom.stdout and
              dom.stdout.count('class="call"') == calls,
              f"profile.html in Chromium: two heatmaps, {calls} calls on the decode step's "
              f"path, nothing on the console {console}")


def model_a(args):
    res = Results()
    gguf = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    tol = 1e-4
    if args.type != "f32":
        gguf = os.path.join(args.work, f"tiny-llama-A-{args.type}.gguf")
        os.makedirs(args.work, exist_ok=True)
        run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"),
             "convert", os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), gguf,
             "--type", args.type])
        tol = args.tol
    out = os.path.join(args.work, "out")
    name = compile_model(args, gguf, out, f"--prefill-chunk={args.chunk}")
    pack = os.path.join(out, name + ".kpack")
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    for cc in args.cc:
        b = build(out, cc)
        res.check(True, f"{cc}: generated code builds with {STRICT} -std=c99")
        worst = 0.0
        for p in refs["prompts"]:
            k, toks = p["index"], p["token_ids"]
            dump = os.path.join(args.work, f"p{k}-{os.path.basename(cc)}.f32")
            ids = generate(b, pack, toks, 32, dump)
            rows = llama_ref.read_f32(dump, refs["n_vocab"])
            ref = npy_rows(os.path.join(MODEL_A, p["logits_file"]))
            ref += npy_rows(os.path.join(MODEL_A, p["greedy_logits_file"]))[1:]
            err, r, c = llama_ref.max_abs_diff(rows, ref)
            worst = max(worst, err)
            res.check(len(rows) == len(ref) and err <= tol,
                      f"{cc} prompt {k}: {len(rows)} logit rows, max abs error {err:.3g} "
                      f"(row {r}, col {c}) <= {tol}")
            res.check(ids == p["greedy_ids"], f"{cc} prompt {k}: greedy 32 ids equal")
            if cc == args.cc[0]:
                single = dump + ".decode"
                generate(b, pack, toks, 1, single, "--no-prefill")
                err2, _, _ = llama_ref.max_abs_diff(llama_ref.read_f32(single, refs["n_vocab"]),
                                                    rows[:len(toks)])
                res.check(err2 <= 1e-5, f"prompt {k}: prefill in chunks of {args.chunk} vs "
                          f"token-by-token decode: max abs diff {err2:.3g} <= 1e-5")
        print(f"{cc}: worst logit error over all prompts {worst:.3g}")
        check_no_heap(res, b, name)
    return res.finish()


def check_no_heap(res, build_dir, name):
    """The model library and the runtime call no allocator and keep no mutable
    globals: their objects have no undefined allocator symbols and no data/bss."""
    libs = [os.path.join(build_dir, f"lib{name}.a"), os.path.join(build_dir, "libkiln_runtime.a")]
    undefined = run(["nm", "-u", *libs]).stdout.split()
    heap = sorted({s for s in undefined if s in ("malloc", "calloc", "realloc", "free",
                                                 "aligned_alloc", "posix_memalign")})
    res.check(not heap, f"no allocator symbols referenced ({heap or 'none'})")
    # Symbols in .data/.bss; const tables with pointers may sit in .data.rel.ro,
    # which is read-only once relocated.
    writable = [line.split()[-1] for line in run(["objdump", "-t", *libs]).stdout.splitlines()
                if any(f" {sec}\t" in line or f" {sec}." in line
                       for sec in (".data", ".bss"))
                and " O " in line and ".data.rel.ro" not in line]
    res.check(not writable, f"no mutable globals ({writable or 'none'})")


# Quantized weights meet int8 activations in the kernels (as ggml's q8 dot
# products do), while the reference dequantizes and computes in double: those
# shapes are held to 3% of the largest logit instead of 1e-4.
QUANTIZED_RTOL = 0.03
# Wider matrices of ternary weights: on llama-tq2_0's shape the int8 activations
# alone move the logits by 3.2% (q2_k 3.1%, q4_k 4.5% on the same shape).
QUANTIZED_RTOL_FOR = {"llama-tq2_0": 0.05}
# A context shift against a recompute from scratch on the kept tokens: the
# shift keeps what the dropped tokens left in the kept ones' deeper keys, so
# only a loose bound, 20% of the largest logit, holds (see shift()).
RECOMPUTE_RTOL = 0.2

SHAPES = {
    # name: gguf_tool model flags, prefill chunk
    "mha-tied-f16": (["--n-embd", "96", "--n-layer", "3", "--n-head", "3", "--n-head-kv", "3",
                      "--n-ff", "160", "--vocab", "300", "--ctx", "40", "--tied", "--type", "f16"], 7),
    "gqa-q8_0": (["--n-embd", "128", "--n-layer", "2", "--n-head", "8", "--n-head-kv", "2",
                  "--n-ff", "96", "--vocab", "64", "--ctx", "32", "--type", "q8_0"], 8),
    "odd-layers-q4_0-v2": (["--n-embd", "64", "--n-layer", "5", "--n-head", "4", "--n-head-kv", "1",
                            "--n-ff", "96", "--vocab", "80", "--ctx", "24", "--type", "q4_0",
                            "--version", "2"], 5),
    "f32-rope-base": (["--n-embd", "48", "--n-layer", "1", "--n-head", "2", "--n-head-kv", "1",
                       "--n-ff", "40", "--vocab", "50", "--ctx", "20", "--rope-base", "500",
                       "--eps", "1e-6"], 20),
    # Llama 3's rope_freqs divisors, and linear scaling.
    "llama3-rope-f32": (["--n-embd", "256", "--n-layer", "2", "--n-head", "4", "--n-head-kv",
                                         "2", "--n-ff", "512", "--vocab", "64", "--ctx", "48",
                         "--rope-scaling", "llama3", "--rope-base", "500000"], 16),
    "linear-rope-f32": (["--n-embd", "64", "--n-layer", "2", "--n-head", "4", "--n-head-kv", "2",
                         "--n-ff", "96", "--vocab", "64", "--ctx", "40",
                         "--rope-scaling", "linear:4"], 8),
    # qwen2: biases on q, k and v (and the bias kernels under q8_0 weights).
    "qwen2-f32": (["--arch", "qwen2", "--n-embd", "64", "--n-layer", "2", "--n-head", "4",
                   "--n-head-kv", "2", "--n-ff", "96", "--vocab", "64", "--ctx", "32"], 8),
    "qwen2-q8_0": (["--arch", "qwen2", "--n-embd", "64", "--n-layer", "3", "--n-head", "4",
                    "--n-head-kv", "1", "--n-ff", "96", "--vocab", "64", "--ctx", "24",
                    "--type", "q8_0"], 5),
    # qwen3: per-head q/k norms, heads wider than n_embd / n_head.
    "qwen3-f32": (["--arch", "qwen3", "--n-embd", "64", "--n-layer", "2", "--n-head", "4",
                   "--n-head-kv", "2", "--head-dim", "32", "--n-ff", "96", "--vocab", "64",
                   "--ctx", "32"], 8),
    "qwen3-q4_k": (["--arch", "qwen3", "--n-embd", "256", "--n-layer", "2", "--n-head", "4",
                    "--n-head-kv", "2", "--head-dim", "128", "--n-ff", "256", "--vocab", "64",
                    "--ctx", "20", "--type", "q4_k"], 6),
    # Ternary weights (tq2_0) in every matrix.
    "llama-tq2_0": (["--n-embd", "256", "--n-layer", "2", "--n-head", "4", "--n-head-kv", "2",
                     "--n-ff", "512", "--vocab", "64", "--ctx", "20", "--type", "tq2_0"], 6),
    # gemma3: scaled embeddings, q/k norms, post-norms, GELU, a window on all but
    # every sixth layer (whose rope base is the file's), tied output.
    "gemma3-f32": (["--arch", "gemma3", "--n-embd", "64", "--n-layer", "7", "--n-head", "4",
                    "--n-head-kv", "1", "--head-dim", "32", "--n-ff", "96", "--vocab", "64",
                    "--ctx", "28", "--sliding-window", "6", "--rope-base", "1000000",
                    "--tied", "--eps", "1e-6"], 8),
    "gemma3-q8_0": (["--arch", "gemma3", "--n-embd", "64", "--n-layer", "6", "--n-head", "2",
                     "--n-head-kv", "1", "--head-dim", "64", "--n-ff", "128", "--vocab", "64",
                     "--ctx", "24", "--sliding-window", "5", "--tied", "--type", "q8_0"], 6),
    # phi3: fused qkv and gate|up tensors, partial rotary, LongRoPE past its
    # original context (the long factors and attn_factor).
    "phi3-f32": (["--arch", "phi3", "--n-embd", "96", "--n-layer", "2", "--n-head", "3",
                  "--n-head-kv", "3", "--rope-dim", "24", "--n-ff", "128", "--vocab", "64",
                  "--ctx", "32", "--rope-scaling", "longrope:8"], 8),
    # A window on every llama layer (llama.attention.sliding_window).
    "llama-swa-f32": (["--n-embd", "64", "--n-layer", "2", "--n-head", "4", "--n-head-kv", "2",
                       "--n-ff", "96", "--vocab", "64", "--ctx", "24", "--sliding-window", "5"],
                      8),
    # --kv-window on a model without one: every layer's cache a ring of 9 + 4 - 1
    # rows, a window wider than the chunk (llama-swa-f32's is narrower).
    "llama-kvwindow-f32": (["--n-embd", "64", "--n-layer", "2", "--n-head", "4", "--n-head-kv",
                            "2", "--n-ff", "96", "--vocab", "64", "--ctx", "24"], 4),
}
# Shapes compiled with --kv-window, and the window the reference gives every layer.
KV_WINDOW = {"llama-kvwindow-f32": 9}


def check_ring_bytes(res, shape, out, name, flags, chunk, window):
    """The header's KV bytes: every layer's keys and values in rings of
    window + chunk - 1 f32 rows, not the whole context."""
    arg = lambda f: int(flags[flags.index(f) + 1])
    head_dim = arg("--n-embd") // arg("--n-head")
    rows = min(arg("--ctx"), window + chunk - 1)
    want = arg("--n-layer") * 2 * rows * arg("--n-head-kv") * head_dim * 4
    with open(os.path.join(out, name + ".h")) as f:
        header = f.read()
    got = int(header.split(f"{name.upper()}_KV_BYTES ")[1].split("u")[0])
    res.check(got == want, f"{shape}: KV cache {got} bytes == {want} (rings of {rows} rows)")


def random_model(args):
    res = Results()
    flags, chunk = SHAPES[args.shape]
    os.makedirs(args.work, exist_ok=True)
    gguf = os.path.join(args.work, args.shape + ".gguf")
    run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", gguf,
         "--seed", "7", "--name", args.shape, *flags])
    out = os.path.join(args.work, "out")
    window = KV_WINDOW.get(args.shape, 0)
    name = compile_model(args, gguf, out, f"--prefill-chunk={chunk}",
                         *([f"--kv-window={window}"] if window else []))
    b = build(out, args.cc[0])
    ref = llama_ref.LlamaRef(gguf)
    if window:
        ref.windows = [window] * len(ref.windows)
        check_ring_bytes(res, args.shape, out, name, flags, chunk, window)
    vocab = len(ref.logits([1])[0])
    ctx = int(flags[flags.index("--ctx") + 1])
    rng = random.Random(3)
    tokens = [rng.randrange(vocab) for _ in range(ctx - 6)]
    dump = os.path.join(args.work, "logits.f32")
    ids = generate(b, os.path.join(out, name + ".kpack"), tokens, 6, dump)
    ref.reset()
    want_ids, want_rows = ref.greedy(tokens, 6)
    ref.reset()
    prompt_rows = ref.logits(tokens)
    ref_rows = prompt_rows + want_rows[1:]
    rows = llama_ref.read_f32(dump, vocab)
    # Where the greedy ids part, the rows after it read different tokens: the
    # rows compared are those up to the one that chose the step (want_rows[s]
    # reads ids[s - 1]).
    first = next((i for i, (a, b) in enumerate(zip(ids, want_ids)) if a != b), None)
    same = len(ref_rows) if first is None else len(prompt_rows) + first
    err, r, c = llama_ref.max_abs_diff(rows[:same], ref_rows[:same])
    # Weights in a block format: int8 activations, a bound relative to the logits.
    quantized = "--type" in flags and flags[flags.index("--type") + 1] not in ("f32", "f16")
    rtol = QUANTIZED_RTOL_FOR.get(args.shape, QUANTIZED_RTOL)
    tol = rtol * max(abs(x) for row in ref_rows for x in row) if quantized else args.tol
    res.check(len(rows) == len(ref_rows) and err <= tol,
              f"{args.shape}: {same} of {len(rows)} rows vs naive reference, max abs error "
              f"{err:.3g} (row {r}, col {c}) <= {tol:.3g}")
    # Greedy ids agree up to a step whose top-2 margin the error could flip.
    margin = None
    if first is not None:
        top = sorted(want_rows[first], reverse=True)
        margin = top[0] - top[1]
    res.check(first is None or margin <= 2 * err,
              f"{args.shape}: greedy ids {ids} == reference {want_ids}"
              + ("" if first is None else f" up to step {first} (margin {margin:.3g})"))
    # Filling the context exactly works; one more token reports a full context.
    gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack"),
           "--tokens", ",".join(map(str, tokens))]
    fits, over = (subprocess.run(gen + ["-n", n], text=True, capture_output=True)
                  for n in ("7", "8"))
    res.check(fits.returncode == 0 and over.returncode == 1 and "context is full" in over.stderr,
              f"{args.shape}: {ctx} positions fit, one more fails cleanly: {over.stderr.strip()}")
    return res.finish()


def shift(args):
    """Context shift: a random llama model's context filled, then
    kiln-generate --keep K shifts it (keeps K tokens, drops half of the rest)
    and goes on, in both cache layouts (pos-major bit-identical to the default
    head-major).
    Each logits row after the shift against the naive reference
    shifted the same way (its cache rows removed, the later keys turned back
    in double): full caches (f32 within 1e-4; f16 and q8 caches, stored again
    after turning, within the quantized bound) and rings of --kv-window
    (turned whole). Against a recompute from scratch on the kept tokens,
    which also forgets what the dropped tokens put into the kept ones' deeper
    keys, within RECOMPUTE_RTOL of the largest logit: that is the shift's own
    approximation (0.12 here), which no exact bound can hold, while a cache
    left unshifted is 0.27 off. A shift that would leave a window reaching
    the kept tokens of a wrapped ring is refused. An int4 cache (head
    dimension 32: a model of its own) shifts in both layouts: head-major keeps
    a head's positions in tiles of 16, which the shift moves one by one."""
    res = Results()
    os.makedirs(args.work, exist_ok=True)
    ctx, chunk, keep = 24, 4, 3
    ggufs = {}
    for key, embd in (("hd16", "64"), ("hd32", "128")):
        ggufs[key] = os.path.join(args.work, f"m-{key}.gguf")
        run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model",
             ggufs[key], "--seed", "11", "--name", "shift", "--n-embd", embd, "--n-layer", "2",
             "--n-head", "4", "--n-head-kv", "2", "--n-ff", "96", "--vocab", "64",
             "--ctx", str(ctx)])
    rng = random.Random(5)
    prompt = [rng.randrange(64) for _ in range(ctx)]
    drop = (ctx - keep) // 2
    dumps = {}
    for label, flags, window, tol in (("f32", [], 0, 1e-4), ("kv-f16", ["--kv-type=f16"], 0, None),
                                      ("kv-q8", ["--kv-type=q8"], 0, None),
                                      ("kv-q4", ["--kv-type=q4"], 0, None),
                                      ("pos-major-kv-q4", ["--kv-layout=pos-major",
                                                           "--kv-type=q4"], 0, None),
                                      ("ring", ["--kv-window=9"], 9, 1e-4),
                                      ("pos-major", ["--kv-layout=pos-major"], 0, 1e-4),
                                      ("pos-major-ring-q8", ["--kv-layout=pos-major",
                                                             "--kv-window=9", "--kv-type=q8"],
                                       9, None),
                                      ("ring-q8", ["--kv-window=9", "--kv-type=q8"], 9, None)):
        gguf = ggufs["hd32" if "kv-q4" in label else "hd16"]
        out = os.path.join(args.work, label)
        name = compile_model(args, gguf, out, f"--prefill-chunk={chunk}", *flags)
        b = build(out, args.cc[0])
        dump = os.path.join(out, "logits.f32")
        n = 5
        ids = generate(b, os.path.join(out, name + ".kpack"), prompt, n, dump, "--keep", str(keep))
        dumps[label] = open(dump, "rb").read()
        rows = llama_ref.read_f32(dump, 64)[ctx:]
        ref = llama_ref.LlamaRef(gguf)
        if window:
            ref.windows = [window] * len(ref.windows)
        before = ref.logits(prompt)
        # An int4 cache of this random model is already 8% of the largest logit
        # off before any shift: its bounds add the run's own error there.
        own = (llama_ref.max_abs_diff(llama_ref.read_f32(dump, 64)[:ctx], before)[0]
               if "kv-q4" in label else 0.0)
        ref.shift(keep, drop)
        want = [ref.step(t) for t in ids[:n - 1]]
        err, r, c = llama_ref.max_abs_diff(rows, want)
        bound = tol if tol else max(QUANTIZED_RTOL * max(abs(x) for row in want for x in row),
                                    1.25 * own)
        kept = prompt[:keep] + prompt[keep + drop:]
        fresh = ref.logits(kept + ids[:n - 1])[len(kept):]
        fresh_err = llama_ref.max_abs_diff(rows, fresh)[0]
        fresh_bound = RECOMPUTE_RTOL * max(abs(x) for row in fresh for x in row) + 2 * own
        res.check(len(rows) == n - 1 and err <= bound,
                  f"{label}: {len(rows)} rows after a shift (keep {keep}, drop {drop}) vs the "
                  f"shifted reference: max abs error {err:.3g} <= {bound:.3g}")
        res.check(fresh_err <= fresh_bound,
                  f"{label}: vs a recompute from scratch on the {len(kept)} kept tokens: "
                  f"max abs error {fresh_err:.3g} <= {fresh_bound:.3g}")
    # The layouts order the same arithmetic: the same bits, shifts included
    # (int4: the portable kernels read tiles as rows).
    for a, b_ in (("f32", "pos-major"), ("ring-q8", "pos-major-ring-q8"),
                  ("kv-q4", "pos-major-kv-q4")):
        res.check(dumps[a] == dumps[b_], f"{b_}: logits bit-identical to {a}'s")
    # Refused: a window of 9 would reach the 12 kept tokens; drop past the cache.
    out = os.path.join(args.work, "ring")
    b = os.path.join(out, "build-" + os.path.basename(args.cc[0]))
    for keep_n, what in (("12", "a window reaching the kept tokens"),):
        r = subprocess.run([os.path.join(b, "kiln-generate"), "--pack",
                            os.path.join(out, "shift.kpack"), "--tokens",
                            ",".join(map(str, prompt)), "-n", "3", "--keep", keep_n],
                           text=True, capture_output=True)
        res.check(r.returncode == 1 and "context shift" in r.stderr,
                  f"ring: --keep {keep_n} ({what}) is refused: {r.stderr.strip()}")
    return res.finish()


def patch(data, offset, fmt, value):
    data = bytearray(data)
    struct.pack_into(fmt, data, offset, value)
    return bytes(data)


def bad_packs(args):
    res = Results()
    os.makedirs(args.work, exist_ok=True)
    models = []
    for seed in ("1", "2"):
        gguf = os.path.join(args.work, f"m{seed}.gguf")
        run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", gguf,
             "--seed", seed, "--name", "bad-pack-model", "--n-embd", "32", "--n-layer", "1",
             "--n-head", "2", "--n-ff", "32", "--vocab", "16", "--ctx", "8"])
        out = os.path.join(args.work, "out" + seed)
        name = compile_model(args, gguf, out)
        models.append((out, os.path.join(out, name + ".kpack")))
    out, pack = models[0]
    b = build(out, args.cc[0])
    good = open(pack, "rb").read()
    data_offset, data_size, file_size = struct.unpack_from("<QQQ", good, 40)
    cases = {
        "truncated": (good[:len(good) // 2], "pack is truncated"),
        "empty": (b"", "pack is truncated"),
        "bad-magic": (b"KILNPACX" + good[8:], "not a Kiln pack"),
        "bad-version": (patch(good, 8, "<I", 9), "unsupported pack format version"),
        "wrong-model-hash": (patch(good, 16, "<Q", struct.unpack_from("<Q", good, 16)[0] ^ 1),
                             "model hash mismatch"),
        "other-model": (open(models[1][1], "rb").read(), "model hash mismatch"),
        "segment-out-of-bounds": (patch(patch(good, 48, "<Q", data_size + 4096), 56, "<Q",
                                        file_size + 4096) + bytes(4096),
                                  "disagree with the generated code"),
        "data-past-end": (patch(patch(good, 48, "<Q", data_size + 4096), 56, "<Q",
                                file_size + 4096), "pack is truncated"),
        "misaligned": (patch(patch(good, 40, "<Q", data_offset + 64), 56, "<Q", file_size + 64)
                       + bytes(64), "not page aligned"),
        "table-overlaps-data": (patch(good, 32, "<Q", data_offset), "header ranges are inconsistent"),
    }
    gen = os.path.join(b, "kiln-generate")
    for case, (data, message) in cases.items():
        path = os.path.join(args.work, case + ".kpack")
        with open(path, "wb") as f:
            f.write(data)
        r = subprocess.run([gen, "--pack", path, "--tokens", "1,2"], text=True,
                           capture_output=True)
        res.check(r.returncode == 1 and message in r.stderr and path in r.stderr,
                  f"{case}: exit {r.returncode}, {r.stderr.strip()}")
    r = subprocess.run([gen, "--pack", pack, "--tokens", "1,99"], text=True, capture_output=True)
    res.check(r.returncode == 1 and "token or index outside its table" in r.stderr,
              f"token out of range: {r.stderr.strip()}")
    r = subprocess.run([gen, "--pack", os.path.join(args.work, "missing.kpack"), "--tokens", "1"],
                       text=True, capture_output=True)
    res.check(r.returncode == 1 and "could not be opened" in r.stderr,
              f"missing pack: {r.stderr.strip()}")
    r = subprocess.run([gen, "--pack", pack, "--tokens", "1,2", "-n", "2"], text=True,
                       capture_output=True)
    res.check(r.returncode == 0, "the unmodified pack still runs")
    return res.finish()


def app(args):
    """kiln-generate on model A: text in, text out, against the references."""
    res = Results()
    out = os.path.join(args.work, "out")
    name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out)
    b = build(out, args.cc[0])
    gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack")]
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    for p in refs["prompts"]:
        r = run(gen + ["--tokenize", "-p", p["text"]])
        ids = [int(x) for x in r.stdout.split("ids:")[1].split(",")]
        res.check(ids == p["token_ids"], f"prompt {p['index']}: tokenizer ids equal the reference")
        r = run(gen + ["-p", p["text"], "-n", "32", "--ignore-eos"])
        res.check(r.stdout == p["full_text"] + "\n",
                  f"prompt {p['index']}: greedy text equals the reference: {r.stdout.strip()!r}")
        res.check(all(k in r.stderr for k in ("tokens/s", "time to first token", "arena:",
                                             "pack:", "peak RSS")),
                  f"prompt {p['index']}: stats printed: {' | '.join(r.stderr.splitlines())}")
    # Sampling: the same seed gives the same text, another seed another text.
    sample = gen + ["-p", "It was", "-n", "24", "--temp", "0.9", "--top-k", "40", "--top-p", "0.95",
                    "--repeat-penalty", "1.1", "--ignore-eos"]
    a, a2, c = (run(sample + ["--seed", s]).stdout for s in ("1", "1", "2"))
    res.check(a == a2 and a != c, f"seeded sampling is reproducible: {a.strip()!r} / {c.strip()!r}")
    # A KILN_PROFILE build times every kernel call and gives the same text.
    bp = os.path.join(out, "build-profile")
    cmake_build(out, bp, args.cc[0], STRICT, "-DKILN_PROFILE=ON")
    p = refs["prompts"][0]
    r = run([os.path.join(bp, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack"),
             "-p", p["text"], "-n", "32", "--ignore-eos"])
    profile = r.stderr.split("profile:")[1] if "profile:" in r.stderr else ""
    lines = profile.split("by kind:")[0].splitlines()
    kinds = profile.split("by kind:")[1].splitlines()[1:] if "by kind:" in profile else []
    res.check(r.stdout == p["full_text"] + "\n" and len(lines) == 13 and
              all(" ms " in line and "%" in line for line in lines[1:]),
              "KILN_PROFILE build: same text, per-kernel times: " + " | ".join(lines[:3]))
    # Every call is in one kind's total, per function and kind of kernel.
    calls = sum(int(k.split("(")[-1].split()[0]) for k in kinds if "calls)" in k)
    sites = int(run(["grep", "-c", "KILN_TIMED([0-9]", os.path.join(out, name + ".c")]).stdout)
    res.check(kinds and calls == sites and any("decode attention" in k for k in kinds),
              f"KILN_PROFILE build: time by kind covers all {sites} calls: " + " | ".join(kinds[:3]))
    profile_heatmap(res, args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"),
                    os.path.join(bp, "kiln-generate"), os.path.join(out, name + ".kpack"), out,
                    sites, p["text"])
    r = subprocess.run(gen + ["--tokens", "1", "-n", "1", "--profile",
                              os.path.join(out, "none.html")], text=True, capture_output=True)
    res.check(r.returncode == 1 and "--profile needs a build with -DKILN_PROFILE=ON" in r.stderr,
              f"--profile without KILN_PROFILE: {r.stderr.strip()}")
    # Perplexity, protocol of ../shared/models/README.md: 32 chunks of 256.
    r = run(gen + ["--perplexity", os.path.join(MODEL_A, "val.txt"), "--ctx", "256",
                   "--chunks", "32"])
    ppl = perplexity_in(r.stdout)
    want = refs["perplexity"]["ppl"]
    res.check(abs(ppl - want) / want <= 1e-3,
              f"perplexity {ppl:.5f} within 0.1% of the reference {want:.5f}")
    return res.finish()


def speculate(args):
    """kiln-generate --draft-lookup and --draft-model: plain greedy's text, token for
    token, for every prompt, draft length and n-gram size (with and without a
    repetition penalty), in fewer passes than tokens on text that repeats; the same
    on a model with a sliding-window ring; a draft of another vocabulary refused at
    compile time; the model API's truncate against a model that never saw the
    rolled-back tokens (test/e2e/Inputs/truncate_test.c)."""
    res = Results()
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    out = os.path.join(args.work, "a")
    name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out)
    b = build(out, args.cc[0])
    gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack")]
    repeats = "The cat sat on the mat. The dog sat on the log. The cat sat on the mat. The dog"
    prompts = [p["text"] for p in refs["prompts"]] + [repeats]
    per_pass = {}
    for prompt in prompts:
        for extra in ([], ["--repeat-penalty", "1.1"]):
            plain = run(gen + ["-p", prompt, "-n", "48", "--ignore-eos", *extra]).stdout
            bad = []
            for d in (1, 2, 4, 8):
                for g in (1, 3):
                    r = run(gen + ["-p", prompt, "-n", "48", "--ignore-eos", *extra,
                                   "--draft-lookup", str(d), "--draft-ngram", str(g)])
                    if r.stdout != plain:
                        bad.append((d, g))
                    m = re.search(r"([0-9.]+) tokens per pass", r.stderr)
                    per_pass[(prompt, d, g, bool(extra))] = float(m.group(1)) if m else 0.0
            res.check(not bad, f"{prompt[:24]!r}{' penalty 1.1' if extra else ''}: draft lengths "
                      f"1, 2, 4, 8 and n-grams 1, 3 give plain greedy's text (differ: {bad or 'none'})")
    best = max(v for (p, d, g, e), v in per_pass.items() if p == repeats)
    res.check(best >= 1.5, f"text that repeats: up to {best:.2f} tokens per pass (at least 1.5)")
    # Sampling: the speculative rule (its distribution is checked by the
    # runtime-speculative unit test); the same seed gives the same text.
    sample = ["-p", "It was", "-n", "40", "--ignore-eos", "--temp", "0.9", "--top-k", "40"]
    a, a2, c = (run(gen + sample + ["--seed", seed, "--draft-lookup", "4"]).stdout
                for seed in ("5", "5", "6"))
    res.check(a == a2 and a != c and len(a) > len("It was") + 20,
              f"sampling with lookup drafts: seeded, reproducible: {a.strip()!r} / {c.strip()!r}")
    # A draft model: model A at q4_0 drafting for model A at f32, compiled together.
    dout = os.path.join(args.work, "draft")
    compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), dout,
                  f"--draft={os.path.join(MODEL_A, 'tiny-llama-A-f32.gguf')}", "--draft-quant=q4_0")
    db = build(dout, args.cc[0])
    dgen = [os.path.join(db, "kiln-generate"), "--pack", os.path.join(dout, name + ".kpack")]
    for prompt in prompts:
        plain = run(dgen + ["-p", prompt, "-n", "40", "--ignore-eos"]).stdout
        bad, rates = [], []
        for d in (1, 3, 6):
            r = run(dgen + ["-p", prompt, "-n", "40", "--ignore-eos", "--draft-model", str(d)])
            if r.stdout != plain:
                bad.append(d)
            m = re.search(r"accepted \(([0-9.]+)%\)", r.stderr)
            rates.append(m.group(1) if m else "?")
        res.check(not bad, f"{prompt[:24]!r}: a q4_0 draft model of 1, 3, 6 tokens gives plain "
                  f"greedy's text (differ: {bad or 'none'}; accepted {', '.join(rates)}%)")
    # Self-speculative: the model's first 2 layers and its head draft for it.
    sout = os.path.join(args.work, "self")
    compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), sout, "--draft-layers=2")
    sb = build(sout, args.cc[0])
    sgen = [os.path.join(sb, "kiln-generate"), "--pack", os.path.join(sout, name + ".kpack")]
    bad = [p[:12] for p in prompts for d in (2, 5)
           if run(sgen + ["-p", p, "-n", "32", "--ignore-eos", "--draft-model", str(d)]).stdout !=
           run(sgen + ["-p", p, "-n", "32", "--ignore-eos"]).stdout]
    res.check(not bad, f"--draft-layers=2 drafts of 2 and 5 give plain greedy's text "
              f"(differ: {bad or 'none'})")
    r = subprocess.run([args.kiln_compile, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"),
                        "--draft-layers=99", "-o", os.path.join(args.work, "too-many")],
                       text=True, capture_output=True)
    res.check(r.returncode != 0 and "--draft-layers=99 must be in [1, the model's" in r.stderr,
              f"--draft-layers past the model's layers: {r.stderr.strip()}")
    a, a2 = (run(dgen + sample + ["--seed", "5", "--draft-model", "3"]) for _ in range(2))
    res.check(a.stdout == a2.stdout and "draft-model:" in a.stderr,
              f"sampling with a draft model: seeded, reproducible: {a.stdout.strip()!r}; "
              f"{a.stderr.strip().splitlines()[-1]}")
    r = subprocess.run(gen + ["-p", "It was", "--draft-model", "2"], text=True, capture_output=True)
    res.check(r.returncode == 2 and "no draft model in this folder" in r.stderr,
              f"--draft-model without a draft: {r.stderr.strip()}")
    other = os.path.join(args.work, "other.gguf")
    run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", other,
         "--seed", "3", "--name", "other", *SHAPES["gqa-q8_0"][0]])
    r = subprocess.run([args.kiln_compile, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"),
                        f"--draft={other}", "-o", os.path.join(args.work, "mismatch")],
                       text=True, capture_output=True)
    res.check(r.returncode != 0 and "cannot draft for" in r.stderr and "tokens" in r.stderr,
              f"a draft with another vocabulary: {r.stderr.strip()}")
    # A sliding-window ring: drafts never reach back past what the ring keeps.
    flags, chunk = SHAPES["llama-kvwindow-f32"]
    gguf = os.path.join(args.work, "ring.gguf")
    run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", gguf,
         "--seed", "7", "--name", "ring", *flags])
    ring_out = os.path.join(args.work, "ring")
    ring = compile_model(args, gguf, ring_out, f"--prefill-chunk={chunk}",
                         f"--kv-window={KV_WINDOW['llama-kvwindow-f32']}")
    rb = build(ring_out, args.cc[0])
    rgen = [os.path.join(rb, "kiln-generate"), "--pack", os.path.join(ring_out, ring + ".kpack")]
    ctx = int(flags[flags.index("--ctx") + 1])
    ids = ["--tokens", "5,6,7,5,6,7,5,6", "-n", str(ctx - 9)]
    plain = run(rgen + ids).stdout
    spec = run(rgen + ids + ["--draft-lookup", str(chunk - 1), "--draft-ngram", "1"]).stdout
    res.check(spec == plain, f"ring of a {KV_WINDOW['llama-kvwindow-f32']}-token window: "
              f"drafts of {chunk - 1} give plain greedy's text")
    # truncate, through the C API.
    upper = name.upper()
    exe = os.path.join(args.work, "truncate_test")
    run([args.cc[0], "-std=c99", "-O2", "-I", out, "-I", os.path.join(out, "runtime", "include"),
         f'-DMODEL_HEADER="{name}.h"', f"-DMODEL_API={name}_api", f"-DMODEL_TYPE={name}_model",
         f"-DARENA_BYTES={upper}_ARENA_BYTES", f"-DVOCAB={upper}_VOCAB",
         os.path.join(HERE, "Inputs", "truncate_test.c"), os.path.join(b, f"lib{name}.a"),
         os.path.join(b, "libkiln_runtime.a"), "-lm", "-o", exe])
    r = subprocess.run([exe, os.path.join(out, name + ".kpack")], text=True, capture_output=True)
    res.check(r.returncode == 0, "truncate: " + " | ".join(r.stdout.splitlines()))
    return res.finish()


def checksums(args):
    """kiln-compile --pack-checksum: model A's text unchanged; a byte flipped in any
    decoder layer of the pack is KILN_ERR_CORRUPT naming that layer, before the first
    step (first-use) or at open (open), never text."""
    res = Results()
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    prompt = refs["prompts"][0]
    for mode in ("first-use", "open"):
        out = os.path.join(args.work, mode)
        name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out,
                             f"--pack-checksum={mode}")
        b = build(out, args.cc[0])
        gen = os.path.join(b, "kiln-generate")
        pack = os.path.join(out, name + ".kpack")
        r = run([gen, "--pack", pack, "-p", prompt["text"], "-n", "32", "--ignore-eos"])
        res.check(r.stdout == prompt["full_text"] + "\n", f"{mode}: the reference text")
        source = open(os.path.join(out, name + ".c")).read()
        rows = re.findall(r"\{(\d+)u, (\d+)u, 0x[0-9a-f]+ull\}",
                          source.split("layer_sum[][3]")[1].split("};")[0])
        data = open(pack, "rb").read()
        data_offset = struct.unpack_from("<Q", data, 40)[0]
        named = []
        for layer, (offset, size) in enumerate(rows):
            bad = bytearray(data)
            bad[data_offset + int(offset) + int(size) // 2] ^= 0x10
            path = os.path.join(out, f"bad{layer}.kpack")
            open(path, "wb").write(bad)
            r = subprocess.run([gen, "--pack", path, "-p", "It was", "-n", "4"], text=True,
                               capture_output=True)
            named.append(r.returncode != 0 and r.stdout in ("", "It was") and
                         "fails its checksum" in r.stderr and
                         f"the corrupt layer is {layer}" in r.stderr)
        res.check(rows and all(named), f"{mode}: a flipped byte in each of the {len(rows)} layers "
                  f"is caught and named ({named})")
    return res.finish()


def faults(args):
    """Injected faults under model A's generated code (test/e2e/Inputs/fault_test.c):
    mmap, fstat and open failing, madvise failing, a pack truncated before open, an
    arena one byte short or misaligned, the tokenizer's and sampler's buffers too
    small, and for a pack read into memory short and interrupted reads, a file that
    ends early, a read error, a buffer too small: each a status, the model closed or
    usable as documented."""
    res = Results()
    out = os.path.join(args.work, "a")
    name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out, "--quant=q8_0")
    b = build(out, args.cc[0])
    pack = os.path.join(out, name + ".kpack")
    short = os.path.join(args.work, "short.kpack")
    data = open(pack, "rb").read()
    open(short, "wb").write(data[:len(data) // 2])
    upper = name.upper()
    exe = os.path.join(args.work, "fault_test")
    run([args.cc[0], "-std=c99", "-O1", "-g", "-fsanitize=address,undefined", "-I", out,
         "-I", os.path.join(out, "runtime", "include"),
         f'-DMODEL_HEADER="{name}.h"', f"-DMODEL_API={name}_api", f"-DMODEL_TYPE={name}_model",
         f"-DARENA_BYTES={upper}_ARENA_BYTES", f"-DVOCAB={upper}_VOCAB",
         f"-DPACK_BYTES={upper}_PACK_BYTES", os.path.join(HERE, "Inputs", "fault_test.c"), os.path.join(b, f"lib{name}.a"),
         os.path.join(b, "libkiln_runtime.a"), "-ldl", "-lm", "-o", exe])
    r = subprocess.run([exe, pack, short], text=True, capture_output=True)
    for line in r.stdout.splitlines():
        if line.startswith(("PASS", "FAIL")):
            res.check(line.startswith("PASS"), line[5:])
    res.check(r.returncode == 0 and "FAIL" not in r.stdout and not r.stderr.strip(),
              f"the fault program exits cleanly under ASan/UBSan {r.stderr.strip()[:300]}")
    # kiln-generate --read-pack: the same ids and logits as the mapped pack; a
    # truncated pack named with the reason.
    tokens = [1, 2, 3, 4, 5]
    mapped, read = os.path.join(args.work, "mapped.f32"), os.path.join(args.work, "read.f32")
    ids = generate(b, pack, tokens, 6, mapped)
    res.check(generate(b, pack, tokens, 6, read, "--read-pack") == ids and
              open(read, "rb").read() == open(mapped, "rb").read(),
              "kiln-generate --read-pack: the ids and logits of the mapped pack")
    r = subprocess.run([os.path.join(b, "kiln-generate"), "--pack", short, "--read-pack",
                        "--tokens", "1,2", "-n", "1"], text=True, capture_output=True)
    res.check(r.returncode != 0 and short in r.stderr and "truncat" in r.stderr.lower(),
              f"--read-pack of a truncated pack: an error naming it ({r.stderr.strip()[:120]})")
    return res.finish()


# Quantized model A on the validation text (protocol of ../shared/models/README.md,
# 32 chunks of 256): perplexity relative to f32 and mean KL divergence from the
# f32 logits. Bounds: q8_0 +1% (the issue's), the others set from measurements
# (q4_0 +0.68%, KLD 0.0046; KV q8 +0.01%; KV f16 +0.0002%) with headroom.
QUANT_CONFIGS = [
    # name, kiln-compile flags, max perplexity ratio, max mean KLD
    ("q8_0", ["--quant=q8_0"], 1.01, 0.002),
    ("q4_0", ["--quant=q4_0", "--pure"], 1.015, 0.01),
    # The default policy keeps the output head at q6_k, as llama-quantize does
    # (its default Q4_0 of these weights: +0.29%).
    ("q4_0-default", ["--quant=q4_0"], 1.005, 0.006),
    ("q4_k_m", ["--quant=q4_k_m"], 1.005, 0.006),
    ("i4g64-q8_0-embeddings", ["--quant=i4g64", "--quant-override=token_embd.weight=q8_0",
                               "--quant-override=output.weight=q8_0"], 1.02, 0.015),
    ("kv-f16", ["--kv-type=f16"], 1.0005, 1e-4),
    ("kv-q8", ["--kv-type=q8"], 1.002, 5e-4),
    # int4 KV in groups of 32 with a scale and a minimum (measured +0.33%, KLD 0.0028).
    ("kv-q4", ["--kv-type=q4"], 1.005, 0.005),
    # The policy picks formats to fit 5 MB of pack + arena (f32: 22 MB).
    ("budget-5MB", ["--memory-budget=5000000"], 1.02, 0.015),
]
QUANT_ISA_CONFIGS = ("q8_0", "q4_0", "q4_k_m", "i4g64-q8_0-embeddings", "kv-q8", "kv-q4")


def quant(args):
    res = Results()
    val = os.path.join(MODEL_A, "val.txt")
    ppl_args = ["--perplexity", val, "--ctx", "256", "--chunks", "32"]
    base_dir = os.path.join(args.work, "f32")
    name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), base_dir)
    b = build(base_dir, args.cc[0])
    base_logits = os.path.join(args.work, "f32.logits")
    r = run([os.path.join(b, "kiln-generate"), "--pack", os.path.join(base_dir, name + ".kpack"),
             *ppl_args, "--dump-logits", base_logits])
    base_ppl = perplexity_in(r.stdout)
    base_arena = int(open(os.path.join(base_dir, name + ".h")).read()
                     .split("_ARENA_BYTES ")[1].split("u")[0])
    rows = []
    # An ISA variant runs the configurations that reach different kernels; the
    # policies (default head, memory budget) and f16 caches are the same code
    # on every target.
    configs = [c for c in QUANT_CONFIGS if args.target == "c99" or c[0] in QUANT_ISA_CONFIGS]
    for label, flags, max_ratio, max_kld in configs:
        out = os.path.join(args.work, label)
        compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out, *flags)
        b = build(out, args.cc[0])
        gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack")]
        r = run(gen + ppl_args + ["--kl-base", base_logits])
        ppl = perplexity_in(r.stdout)
        kld = float(r.stdout.split("KL divergence from")[1].split(":")[1].split()[0])
        header = open(os.path.join(out, name + ".h")).read()
        arena = int(header.split("_ARENA_BYTES ")[1].split("u")[0])
        pack = os.path.getsize(os.path.join(out, name + ".kpack"))
        rows.append((label, pack, arena, ppl, kld))
        res.check(ppl <= base_ppl * max_ratio,
                  f"{label}: perplexity {ppl:.4f} <= {max_ratio} x f32 {base_ppl:.4f}")
        res.check(kld <= max_kld, f"{label}: mean KLD {kld:.3g} <= {max_kld}")
        if label.startswith("budget"):
            res.check(pack + arena <= 5000000,
                      f"{label}: pack {pack} + arena {arena} = {pack + arena} <= 5000000")
    r = subprocess.run([args.kiln_compile, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), "-o",
                        os.path.join(args.work, "budget-too-small"), "--memory-budget=3000000"],
                       text=True, capture_output=True)
    res.check(r.returncode == 1 and "nothing fits in the memory budget of 3000000 bytes: the "
              "smallest reachable total is" in r.stderr, f"too small a budget: {r.stderr.strip()}")
    print(f"{'format':24} {'pack bytes':>11} {'arena+KV':>10} {'ppl':>9} {'KLD':>9}")
    print(f"{'f32':24} {os.path.getsize(os.path.join(base_dir, name + '.kpack')):>11} "
          f"{base_arena:>10} {base_ppl:>9.4f} {0:>9.3g}")
    for label, pack, arena, ppl, kld in rows:
        print(f"{label:24} {pack:>11} {arena:>10} {ppl:>9.4f} {kld:>9.3g}")

    # A GGUF already in Q8_0/Q4_0 (written by the test helper with ggml's block
    # rules) compiles to the same pack as the f32 model quantized by Kiln.
    for fmt in ("q8_0", "q4_0"):
        gguf = os.path.join(args.work, f"model-a-{fmt}.gguf")
        run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "convert",
             os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), gguf, "--type", fmt])
        pre = os.path.join(args.work, f"pre-{fmt}")
        compile_model(args, gguf, pre)
        ours = os.path.join(args.work, fmt if fmt != "q8_0" else "q8_0")
        same = open(os.path.join(pre, name + ".kpack"), "rb").read() == \
            open(os.path.join(ours, name + ".kpack"), "rb").read()
        res.check(same, f"{fmt}: pack from a {fmt.upper()} GGUF is byte-identical to Kiln's "
                  f"quantization of the f32 model")
    return res.finish()


LLAMACPP_A = os.path.join(ROOT, "test", "data", "llamacpp-A")

# Kiln's own writers of the GGUF block formats on model A: the bound on the
# perplexity change against f32 in the same run (llama.cpp's default Q4_0 of
# these weights: +0.29%, Q4_K_M +0.26%, Q6_K +0.03%).
BLOCK_WRITERS = [("bf16", 0.0005), ("q6_k", 0.001), ("q5_k", 0.003), ("q5_0", 0.003),
                 ("q5_1", 0.003), ("q4_k", 0.01), ("q4_1", 0.01), ("iq4_nl", 0.01),
                 ("q3_k", 0.04), ("q2_k", 0.25)]


def perplexity(gen, val, chunks):
    r = run(gen + ["--perplexity", val, "--ctx", "256", "--chunks", str(chunks)])
    return perplexity_in(r.stdout)


def block_formats(args):
    """Model A in the GGUF block formats: the files llama.cpp's quantizer wrote
    (their perplexity change against f32 within a margin of llama.cpp's own on
    the same file; A-Q4_K_M and A-Q5_K_M are its default mixes) and Kiln's
    writers of each format."""
    res = Results()
    val = os.path.join(MODEL_A, "val.txt")
    f32 = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")

    gens = {}

    def measure(label, gguf, *flags, text=val):
        out = os.path.join(args.work, label)
        if label not in gens:
            name = compile_model(args, gguf, out, *flags)
            b = build(out, args.cc[0])
            gens[label] = ([os.path.join(b, "kiln-generate"), "--pack",
                            os.path.join(out, name + ".kpack")],
                           os.path.getsize(os.path.join(out, name + ".kpack")))
        gen, size = gens[label]
        return perplexity(gen, text, args.chunks), size

    def read_refs(name):
        refs = {}
        for line in open(os.path.join(LLAMACPP_A, name)):
            if not line.startswith("#"):
                f, ppl, delta = line.split("\t")
                refs[f] = float(delta.strip().rstrip("%")) / 100
        return refs

    base, base_pack = measure("f32", f32)
    rows = [("f32", base, base_pack, base)]
    # llama.cpp's files, against llama.cpp's change on them plus a margin for
    # the protocols' differences (chunking, BOS) and int8 activations: the
    # files of refs.tsv on val.txt, the importance-matrix files of
    # imatrix-refs.tsv (Q2_K, Q3_K_M) on eval-half2.txt as llama.cpp measured them.
    eval_half = os.path.join(MODEL_A, "eval-half2.txt")
    texts = [(read_refs("refs.tsv"), val, base),
             (read_refs("imatrix-refs.tsv"), eval_half, measure("f32", f32, text=eval_half)[0])]
    for f in sorted(os.listdir(LLAMACPP_A)):
        if not f.endswith(".gguf"):
            continue
        refs, text, f32_ppl = next(t for t in texts if f in t[0])
        ppl, size = measure(f[:-5], os.path.join(LLAMACPP_A, f), text=text)
        delta = ppl / f32_ppl - 1
        rows.append((f + ("" if text == val else " (eval-half2)"), ppl, size, f32_ppl))
        res.check(delta <= refs[f] + 0.002,
                  f"{f}: perplexity {ppl:.4f} on {os.path.basename(text)}, {100 * delta:+.3f}% "
                  f"vs f32 (llama.cpp {100 * refs[f]:+.3f}%) within +0.2%")
    # Kiln's default policies against llama-quantize's defaults on the same
    # weights, both measured here: within 0.05% of perplexity (Kiln's q6_k
    # writer is not llama.cpp's search, so the output heads differ slightly).
    for quant, theirs in (("q4_0", "A-Q4_0.gguf"), ("q4_k_m", "A-Q4_K_M.gguf")):
        ppl, size = measure(f"kiln-{quant}-default", f32, f"--quant={quant}")
        rows.append((f"--quant={quant} (default policy)", ppl, size, base))
        their = next(r[1] for r in rows if r[0] == theirs)
        res.check(ppl <= their * 1.0005,
                  f"--quant={quant}: perplexity {ppl:.4f}, {100 * (ppl / base - 1):+.3f}% vs f32; "
                  f"llama.cpp's {theirs} {100 * (their / base - 1):+.3f}% (+0.05% allowed)")
    for fmt, bound in BLOCK_WRITERS:
        if args.writer is not None and fmt not in args.writer:
            continue
        ppl, size = measure(f"kiln-{fmt}", f32, f"--quant={fmt}")
        delta = ppl / base - 1
        rows.append((f"--quant={fmt}", ppl, size, base))
        res.check(delta <= bound, f"--quant={fmt}: perplexity {ppl:.4f}, {100 * delta:+.3f}% "
                  f"vs f32 <= +{100 * bound:.2f}%")
    print(f"{'model A':40} {'pack bytes':>11} {'ppl':>9} {'vs f32':>8}")
    for label, ppl, size, f32_ppl in rows:
        print(f"{label:40} {size:>11} {ppl:>9.4f} {100 * (ppl / f32_ppl - 1):>+7.3f}%")
    return res.finish()


IMATRIX_A = os.path.join(LLAMACPP_A, "imatrix", "A.imatrix.dat")


def imatrix_means(path):
    """name -> per-column mean squares of a legacy .dat (gguf_tool's own reader)."""
    entries, chunks, dataset = gguf_tool.read_imatrix_dat(path)
    return {name: [v / max(ncall, 1) for v in values] for name, ncall, values in entries}


def calibration(args):
    """Calibrated quantization on model A (the issue's protocol: calibrate on
    calib-half1.txt, measure on eval-half2.txt, 64 chunks of 256): Kiln's own
    calibration against llama-imatrix's matrix of the same text; the taps leave
    the logits bit for bit; each format with llama.cpp's matrix against
    without it (mean KL divergence from f32, the sensitive measure, lower for
    every format; perplexity lower for the 3- and 2-bit mixes, where the change
    is above the 4-bit formats' noise); each with the error feedback of Kiln's
    own calibration against both; Kiln's q4_k_m against llama.cpp's own Q4_K_M
    made with that matrix."""
    res = Results()
    f32 = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    calib = os.path.join(MODEL_A, "calib-half1.txt")
    text = os.path.join(MODEL_A, "eval-half2.txt")
    ppl_args = ["--perplexity", text, "--ctx", "256", "--chunks", "64"]
    os.makedirs(args.work, exist_ok=True)

    # The float model with and without taps: the same logits, bit for bit.
    base_dir = os.path.join(args.work, "f32")
    name = compile_model(args, f32, base_dir)
    pack = os.path.join(base_dir, name + ".kpack")
    plain = build(base_dir, args.cc[0])
    tapped = cmake_build(base_dir, os.path.join(base_dir, "build-taps"), args.cc[0], STRICT,
                         "-DKILN_TAPS=ON")
    base_logits = os.path.join(args.work, "f32.logits")
    tapped_logits = os.path.join(args.work, "f32-taps.logits")
    r = run([os.path.join(plain, "kiln-generate"), "--pack", pack, *ppl_args,
             "--dump-logits", base_logits])
    base_ppl = perplexity_in(r.stdout)
    run([os.path.join(tapped, "kiln-generate"), "--pack", pack, *ppl_args,
         "--dump-logits", tapped_logits, "--imatrix-out", os.path.join(args.work, "eval.dat")])
    res.check(open(base_logits, "rb").read() == open(tapped_logits, "rb").read(),
              "the taps leave the float model's logits bit for bit (64 chunks of eval-half2)")

    # kiln-compile --calibration against llama-imatrix on the same text and
    # chunks (llama.cpp ran the f16 model: the same mean squares to 1e-4).
    kiln_dat = os.path.join(args.work, "kiln.imatrix.dat")
    kiln_moments = os.path.join(args.work, "kiln.moments")
    calibrated = os.path.join(args.work, "kiln-q4_k_m-calibrated")
    compile_model(args, f32, calibrated, "--quant=q4_k_m", f"--calibration={calib}",
                  "--calibration-ctx=256", f"--imatrix-out={kiln_dat}",
                  f"--moments-out={kiln_moments}")
    ours, theirs = imatrix_means(kiln_dat), imatrix_means(IMATRIX_A)
    res.check(set(theirs) <= set(ours) and set(ours) - set(theirs) <= {"output.weight"},
              f"--calibration's entries: llama-imatrix's {len(theirs)} (and output.weight)")
    worst_cos, worst_ratio = 1.0, 0.0
    for entry, want in theirs.items():
        got = ours.get(entry, [0.0] * len(want))
        dot = sum(a * b for a, b in zip(got, want))
        norm = math.sqrt(sum(a * a for a in got) * sum(b * b for b in want)) or 1.0
        worst_cos = min(worst_cos, dot / norm)
        worst_ratio = max(worst_ratio, abs(sum(got) / sum(want) - 1))
    res.check(worst_cos > 0.9999 and worst_ratio < 0.001,
              f"--calibration against llama-imatrix: per-weight cosine >= {worst_cos:.6f}, "
              f"column sums within {100 * worst_ratio:.4f}% (> 0.9999, < 0.1%)")

    def measure(label, gguf, *flags, out=None):
        out = out or os.path.join(args.work, label)
        if not os.path.exists(os.path.join(out, "CMakeLists.txt")):
            compile_model(args, gguf, out, *flags)
        n = open(os.path.join(out, "CMakeLists.txt")).read().split("project(")[1].split()[0]
        b = build(out, args.cc[0])
        r = run([os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, n + ".kpack"),
                 *ppl_args, "--kl-base", base_logits])
        kld = float(r.stdout.split("KL divergence from")[1].split(":")[1].split()[0])
        return perplexity_in(r.stdout), kld

    rows = [("f32", base_ppl, 0.0)]
    results = {}
    for quant in ("q4_0", "q4_k_m", "q3_k_m", "q2_k"):
        without = measure(f"{quant}", f32, f"--quant={quant}")
        with_ = measure(f"{quant}-imatrix", f32, f"--quant={quant}", f"--imatrix={IMATRIX_A}")
        results[quant] = with_
        rows += [(f"--quant={quant}", *without), (f"--quant={quant} --imatrix", *with_)]
        res.check(with_[1] < without[1],
                  f"{quant}: mean KLD {with_[1]:.5g} with llama.cpp's matrix < {without[1]:.5g} "
                  f"without")
        if quant in ("q3_k_m", "q2_k"):
            res.check(with_[0] < without[0],
                      f"{quant}: perplexity {with_[0]:.4f} with the matrix < {without[0]:.4f}")
    # Error feedback from Kiln's second moments (the calibration's, saved and
    # given back; q4_k_m's is the calibrated compile's below): lower KLD and
    # perplexity than without calibration and than with llama.cpp's matrix.
    for quant in ("q4_0", "q3_k_m", "q2_k"):
        fed_dir = os.path.join(args.work, f"{quant}-moments")
        shutil.rmtree(fed_dir, ignore_errors=True)
        r = run([args.kiln_compile, f32, "-o", fed_dir, f"--target={args.target}",
                 f"--quant={quant}", f"--imatrix={kiln_moments}", "--report"])
        fed = measure(f"{quant}-moments", f32, out=fed_dir)
        rows.append((f"--quant={quant} --calibration", *fed))
        without = next(row for row in rows if row[0] == f"--quant={quant}")
        marked = [line for line in r.stdout.splitlines() if line.startswith("blk.")
                  and "_norm." not in line]
        res.check(len(marked) == 42 and all("(moments)" in line for line in marked),
                  f"{quant} --imatrix with Kiln's moments: the report marks the {len(marked)} "
                  f"matmul weights encoded with them (42)")
        res.check(fed[1] < 0.8 * min(without[2], results[quant][1]) and fed[0] < without[1]
                  and fed[0] < results[quant][0],
                  f"{quant} with error feedback: KLD {fed[1]:.5g} < 0.8 x {without[2]:.5g} "
                  f"without and {results[quant][1]:.5g} with llama.cpp's matrix; perplexity "
                  f"{fed[0]:.4f} < {without[1]:.4f} and {results[quant][0]:.4f}")
    own = measure("q4_k_m-calibrated", f32, out=calibrated)
    rows.append(("--quant=q4_k_m --calibration", *own))
    theirs_imx = measure("llamacpp-Q4_K_M-imx", os.path.join(LLAMACPP_A, "imatrix",
                                                             "A-Q4_K_M-imx.gguf"))
    rows.append(("llama.cpp A-Q4_K_M-imx.gguf", *theirs_imx))
    # With llama.cpp's matrix Kiln's q4_k_m is as good as llama.cpp's own file
    # (measured 0.00145 / 0.00145 and perplexity 12.3674 / 12.3674 on Xeon;
    # 2% and 0.01% cover the other targets' int8 activations); with its own
    # calibration's error feedback, well ahead of it.
    for label, (ppl, kld), bound in (("--imatrix", results["q4_k_m"], 1.02),
                                     ("--calibration", own, 0.8)):
        res.check(kld <= theirs_imx[1] * bound and ppl <= theirs_imx[0] * 1.0001,
                  f"q4_k_m {label}: KLD {kld:.5g}, perplexity {ppl:.4f}; llama.cpp's "
                  f"A-Q4_K_M-imx {theirs_imx[1]:.5g}, {theirs_imx[0]:.4f} (KLD x {bound}, "
                  f"perplexity +0.01%)")
    # --memory-budget at llama.cpp's Q4_K_M file's bytes plus Kiln's arena, the
    # losses measured on the calibration text (KLD of one tensor changed at a
    # time), against that file.
    header = open(os.path.join(args.work, "q4_k_m", name + ".h")).read()
    arena = int(header.split("_ARENA_BYTES ")[1].split("u")[0])
    llama_q4_k_m = os.path.join(LLAMACPP_A, "A-Q4_K_M.gguf")
    budget = os.path.getsize(llama_q4_k_m) + arena
    budget_dir = os.path.join(args.work, "budget")
    shutil.rmtree(budget_dir, ignore_errors=True)
    budget_report = os.path.join(args.work, "budget-report")
    r = run([args.kiln_compile, f32, "-o", budget_dir, f"--target={args.target}",
             f"--memory-budget={budget}", f"--calibration={calib}", "--calibration-ctx=256",
             f"--report={budget_report}"])
    predicted = float(r.stdout.split("predicted loss ")[1].split()[0])
    measured = float(r.stdout.split("measured loss ")[1].split()[0])
    shown = json.load(open(os.path.join(budget_report, "report.json")))["budget"]
    html = open(os.path.join(budget_report, "report.html")).read()
    res.check(shown["bytes"] == budget and abs(shown["predicted_loss"] / predicted - 1) < 1e-3
              and abs(shown["measured_loss"] / measured - 1) < 1e-3 and 'id="budget"' in html,
              f"report.json's budget: {shown}; report.html says it")
    total = int(r.stdout.split("pack + arena = ")[1].split()[0])
    ours = measure("budget", f32, out=budget_dir)
    theirs_mix = measure("llamacpp-Q4_K_M", llama_q4_k_m)
    rows += [(f"--memory-budget={budget} --calibration", *ours),
             ("llama.cpp A-Q4_K_M.gguf", *theirs_mix)]
    res.check(total <= budget and ours[1] <= theirs_mix[1] and ours[0] <= theirs_mix[0] * 1.0001,
              f"--memory-budget={budget} (A-Q4_K_M.gguf + the arena): pack + arena {total}, "
              f"KLD {ours[1]:.5g}, perplexity {ours[0]:.4f}; llama.cpp's A-Q4_K_M "
              f"{theirs_mix[1]:.5g}, {theirs_mix[0]:.4f} (KLD no more, perplexity +0.01%)")
    res.check(0.67 < predicted / measured < 1.5,
              f"the budget's predicted loss {predicted:.4g} (each choice's KLD alone, summed) "
              f"against its measured {measured:.4g} (all at once): within 1.5x")
    print(f"{'model A on eval-half2':36} {'ppl':>9} {'vs f32':>8} {'KLD':>9}")
    for label, ppl, kld in rows:
        print(f"{label:36} {ppl:>9.4f} {100 * (ppl / base_ppl - 1):>+7.3f}% {kld:>9.5f}")

    # Activation-aware scales: on model A none pays by 1% at q4_0 (its
    # activations have no outliers); on model A with outliers at layer 2's
    # attention input (the same function), the scales are chosen there and
    # lower the KLD from that model's own f32 logits. Its moments are model
    # A's with that input's entries times k_i k_j, which is what a
    # calibration of the outlier model would measure.
    layer, channels, k = 2, set(range(5, 256, 37)), 32.0
    outliers = os.path.join(args.work, "outliers.gguf")
    outlier_model(f32, outliers, layer, channels, k)
    moments = read_moments(kiln_moments)
    scaled_moments = os.path.join(args.work, "outliers.moments")
    for i, (names, cols, rows, tri) in enumerate(moments):
        if names.startswith(f"blk.{layer}.attn_q.weight"):
            f = [k if c in channels else 1.0 for c in range(cols)]
            tri = [v * f[a] * f[b] for (a, b), v in
                   zip(((a, b) for a in range(cols) for b in range(a, cols)), tri)]
            moments[i] = (names, cols, rows, tri)
    write_moments(scaled_moments, moments)
    outlier_base = os.path.join(args.work, "outliers-f32")
    compile_model(args, outliers, outlier_base)
    ob = build(outlier_base, args.cc[0])
    outlier_logits = os.path.join(args.work, "outliers.logits")
    short = ["--perplexity", text, "--ctx", "256", "--chunks", "16"]
    run([os.path.join(ob, "kiln-generate"), "--pack", os.path.join(outlier_base, name + ".kpack"),
         *short, "--dump-logits", outlier_logits])
    klds, said = {}, {}
    for label, flag in (("scaled", "true"), ("unscaled", "false")):
        out = os.path.join(args.work, f"outliers-q4_0-{label}")
        shutil.rmtree(out, ignore_errors=True)
        r = run([args.kiln_compile, outliers, "-o", out, f"--target={args.target}",
                 "--quant=q4_0", f"--imatrix={scaled_moments}", f"--activation-scales={flag}",
                 "--report"])
        said[label] = [line for line in r.stdout.splitlines()
                       if line.startswith("activation-aware scales:")]
        b = build(out, args.cc[0])
        r = run([os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack"),
                 *short, "--kl-base", outlier_logits])
        klds[label] = float(r.stdout.split("KL divergence from")[1].split(":")[1].split()[0])
    chosen = [line.split()[2] for line in said["scaled"]]
    res.check(f"blk.{layer}.attn_norm.weight" in chosen and not said["unscaled"],
              f"activation-aware scales on the outlier model: {said['scaled']}")
    res.check(klds["scaled"] < 0.95 * klds["unscaled"],
              f"the outlier model at q4_0 with activation-aware scales: KLD {klds['scaled']:.5g} "
              f"< 0.95 x {klds['unscaled']:.5g} without")
    r = run([args.kiln_compile, f32, "-o", os.path.join(args.work, "q4_0-moments"),
             f"--target={args.target}", "--quant=q4_0", f"--imatrix={kiln_moments}", "--report"])
    ratios = [float(line.split("output error x")[1]) for line in r.stdout.splitlines()
              if line.startswith("activation-aware scales:")]
    res.check(all(x < 0.99 for x in ratios) and len(ratios) < 4,
              f"model A at q4_0: activation-aware scales kept on {len(ratios)} of 12 norms, "
              f"each lowering the output error by 1% at least ({ratios})")

    # --calibration-tokens: the ids of a text (kiln-generate --tokenize, which
    # takes a context's worth) give the matrix the text gives; an id outside
    # the vocabulary is refused.
    piece = os.path.join(args.work, "piece.txt")
    with open(calib) as f:
        open(piece, "w").write(f.read(350))
    r = run([os.path.join(plain, "kiln-generate"), "--pack", pack, "--tokenize", "-p",
             open(piece).read()])
    _, md, _ = gguf_tool.read_gguf(f32, load_data=False)
    bos = md["tokenizer.ggml.bos_token_id"][1]
    text_ids = [int(i) for i in r.stdout.split("ids:")[1].split(",")]
    assert text_ids[0] == bos, text_ids[:3]  # --tokenize adds BOS; the chunks add their own
    ids = os.path.join(args.work, "piece.ids")
    open(ids, "w").write(" ".join(map(str, text_ids[1:])) + "\n")
    matrices = {}
    for flag, source in (("--calibration", piece), ("--calibration-tokens", ids)):
        dat = os.path.join(args.work, os.path.basename(source) + ".dat")
        run([args.kiln_compile, f32, "-o", os.path.join(args.work, "piece"), "--quant=q4_0",
             f"{flag}={source}", "--calibration-ctx=128", f"--imatrix-out={dat}"])
        matrices[flag] = imatrix_means(dat)
    res.check(matrices["--calibration"] == matrices["--calibration-tokens"],
              f"--calibration-tokens with a text's ids: the text's importance matrix "
              f"({len(matrices['--calibration'])} entries alike)")
    outside = os.path.join(args.work, "outside.ids")
    open(outside, "w").write("1, 2, 3\n4 99999 5\n")
    r = subprocess.run([args.kiln_compile, f32, "-o", os.path.join(args.work, "bad"),
                        "--quant=q4_0", f"--calibration-tokens={outside}"],
                       text=True, capture_output=True)
    res.check(r.returncode == 1 and outside in r.stderr and "token 5 ('99999') is not an id of "
              "the model's vocabulary of 512" in r.stderr,
              f"--calibration-tokens with an id outside the vocabulary: {r.stderr.strip()}")

    # Bad calibration input: an empty text, a missing one.
    empty = os.path.join(args.work, "empty.txt")
    open(empty, "w").close()
    for bad, says in ((empty, "fewer than 256 tokens"),
                      (os.path.join(args.work, "missing.txt"), "no such text for --calibration")):
        r = subprocess.run([args.kiln_compile, f32, "-o", os.path.join(args.work, "bad"),
                            "--quant=q4_0", f"--calibration={bad}", "--calibration-ctx=256"],
                           text=True, capture_output=True)
        res.check(r.returncode == 1 and bad in r.stderr and says in r.stderr,
                  f"--calibration={os.path.basename(bad)}: {r.stderr.strip()[-160:]}")
        kept = re.search(r"its files are in (\S+)\)", r.stderr)
        if kept:  # the failed run's folder, kept for its logs
            shutil.rmtree(kept.group(1), ignore_errors=True)
    return res.finish()


def fragile_model(src, dst, name, scale):
    """Model A with one fragile weight: in each row, the column of least
    importance (llama-imatrix's matrix) of every 32 scaled by `scale`. Such
    outliers barely move the float model (their inputs are small) but set
    their q4_0 blocks' scale, which rounds the other 31 weights away."""
    imp = imatrix_means(IMATRIX_A)[name]
    version, md, tensors = gguf_tool.read_gguf(src)
    for t in tensors:
        t["data"] = bytes(t["data"])
        if t["name"] == name:
            cols = t["ne"][0]
            quiet = [min(range(b, b + 32), key=lambda j: imp[j]) for b in range(0, cols, 32)]
            v = list(struct.unpack("<%df" % (len(t["data"]) // 4), t["data"]))
            for r in range(0, len(v), cols):
                for c in quiet:
                    v[r + c] *= scale
            t["data"] = struct.pack("<%df" % len(v), *v)
    gguf_tool.write_gguf(dst, md, tensors, version)


def outlier_model(src, dst, layer, channels, k):
    """Model A with activation outliers: attn_norm's weight of `layer` times
    k at `channels`, the columns of attn_q/k/v that read them divided by k.
    The float model computes the same function; a 4-bit block holding such a
    column rounds it away."""
    version, md, tensors = gguf_tool.read_gguf(src)
    prefix = f"blk.{layer}."
    for t in tensors:
        t["data"] = bytes(t["data"])
        name = t["name"]
        if name == prefix + "attn_norm.weight":
            factor = lambda c: k if c in channels else 1.0  # noqa: E731
        elif name in (prefix + "attn_q.weight", prefix + "attn_k.weight", prefix + "attn_v.weight"):
            factor = lambda c: 1.0 / k if c in channels else 1.0  # noqa: E731
        else:
            continue
        cols = t["ne"][0]
        v = struct.unpack("<%df" % (len(t["data"]) // 4), t["data"])
        t["data"] = struct.pack("<%df" % len(v), *(x * factor(j % cols) for j, x in enumerate(v)))
    gguf_tool.write_gguf(dst, md, tensors, version)


def read_moments(path):
    """Kiln's second moments (compiler/quant/Imatrix.h): [(names, cols, rows,
    upper triangle floats)]."""
    b = open(path, "rb").read()
    assert b[:8] == b"KILNMOM1", path
    (n,), at, out = struct.unpack_from("<i", b, 8), 12, []
    for _ in range(n):
        (length,) = struct.unpack_from("<i", b, at)
        names = b[at + 4:at + 4 + length].decode()
        cols, rows = struct.unpack_from("<iq", b, at + 4 + length)
        at += 16 + length
        count = cols * (cols + 1) // 2
        out.append((names, cols, rows, list(struct.unpack_from("<%df" % count, b, at))))
        at += 4 * count
    return out


def write_moments(path, entries):
    with open(path, "wb") as f:
        f.write(b"KILNMOM1" + struct.pack("<i", len(entries)))
        for names, cols, rows, tri in entries:
            f.write(struct.pack("<i", len(names)) + names.encode() + struct.pack("<iq", cols, rows))
            f.write(struct.pack("<%df" % len(tri), *tri))


def tap_records(path):
    """kiln-generate --taps-out's records: (key "LAYER OP FIRST-WEIGHT", floats)."""
    buf = open(path, "rb").read()
    at = 0
    while at < len(buf):
        (n,) = struct.unpack_from("<i", buf, at)
        label = buf[at + 4:at + 4 + n].decode()
        rows, cols = struct.unpack_from("<ii", buf, at + 4 + n)
        values = struct.unpack_from("<%df" % (rows * cols), buf, at + 12 + n)
        at += 12 + n + 4 * rows * cols
        layer, op, *weights = label.split(" ")
        yield " ".join([layer, op] + ([weights[0].split("+")[0]] if weights else [])), values


def compare(args):
    """kiln-compile --report=DIR --compare=TEXT: on model A with one fragile
    weight (blk.3.ffn_down), the first layer past the threshold is 3 and that
    weight, compiled in f32 alone, takes the most error from the logits; on
    model A itself no layer passes; report.json's per-op figures against a
    recomputation here from the two runs' taps; report.html's chart."""
    res = Results()
    os.makedirs(args.work, exist_ok=True)
    f32 = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    text = os.path.join(MODEL_A, "eval-half2.txt")
    fragile = os.path.join(args.work, "fragile.gguf")
    fragile_model(f32, fragile, "blk.3.ffn_down.weight", 200.0)

    def compare_run(label, gguf):
        report_dir = os.path.join(args.work, label + "-report")
        shutil.rmtree(report_dir, ignore_errors=True)
        r = run([args.kiln_compile, gguf, "-o", os.path.join(args.work, label),
                 f"--target={args.target}", "--quant=q4_0", f"--report={report_dir}",
                 f"--compare={text}"])
        print(r.stdout.strip().splitlines()[-1])
        return report_dir, json.load(open(os.path.join(report_dir, "report.json")))["compare"]

    report_dir, c = compare_run("fragile", fragile)
    layers = {l["layer"]: l["rel_error"] for l in c["layers"]}
    res.check(c["first_diverging_layer"] == 3,
              f"fragile blk.3.ffn_down: the first layer past {c['threshold']} is "
              f"{c['first_diverging_layer']} (layer errors "
              f"{', '.join(f'{e:.3f}' for e in layers.values())})")
    weights = {w["name"]: w["logits_rel_error_in_f32"] for w in c["weights_in_f32"]}
    res.check(c["most_contributing"] == "blk.3.ffn_down.weight" and len(weights) == 7 and
              weights["blk.3.ffn_down.weight"] < 0.7 * c["logits_rel_error"],
              f"layer 3's weights in f32 alone: {c['most_contributing']} takes the logits' "
              f"error from {c['logits_rel_error']:.4f} to "
              f"{weights.get('blk.3.ffn_down.weight', 0):.4f} (the others: "
              f"{min(v for k, v in weights.items() if 'ffn_down' not in k):.4f} at best)")

    # The figures recomputed from the two runs' taps: the ops both builds have
    # (the compiled one fuses norms into matmuls), in order, summed per op.
    ref = list(tap_records(os.path.join(report_dir, "taps-float.bin")))
    got = list(tap_records(os.path.join(report_dir, "taps-compiled.bin")))
    keys_ref, keys_got = {k for k, _ in ref}, {k for k, _ in got}
    ref = [r for r in ref if r[0] in keys_got]
    got = [g for g in got if g[0] in keys_ref]
    sums = {}
    for (key, a), (key2, b) in zip(ref, got):
        assert key == key2, (key, key2)
        s = sums.setdefault(key, [0.0, 0.0, 0.0, 0.0])
        s[0] += sum(x * x for x in a)
        s[1] += sum(y * y for y in b)
        s[2] += sum(x * y for x, y in zip(a, b))
        s[3] += sum((x - y) ** 2 for x, y in zip(a, b))
    worst = 0.0
    for op in c["ops"]:
        s = sums.get(op["key"])
        if s is None:
            worst = math.inf
            continue
        rel, cos = math.sqrt(s[3] / s[0]), s[2] / math.sqrt(s[0] * s[1])
        worst = max(worst, abs(op["rel_error"] / rel - 1), abs(op["cosine"] - cos))
    res.check(len(c["ops"]) == len(sums) and worst < 1e-9,
              f"report.json's {len(c['ops'])} ops against a recomputation from the taps: "
              f"relative error and cosine within {worst:.1e} (< 1e-9)")

    html = open(os.path.join(report_dir, "report.html")).read()
    series = set(re.findall(r'class="op-series" data-op="([^"]+)"', html))
    want = {"qkv_matmul attn_q", "attention", "residual_matmul attn_output",
            "swiglu_matmul ffn_gate", "residual_matmul ffn_down"}
    res.check('<svg id="layer-error"' in html and want <= series and 'stroke="red"' in html,
              f"report.html: the per-layer chart with a line per op kind ({', '.join(sorted(series))}) "
              f"and the first diverging layer marked")

    _, c = compare_run("plain", f32)
    res.check(c["first_diverging_layer"] is None,
              f"model A at q4_0: no layer past {c['threshold']} (largest layer error "
              f"{max(l['rel_error'] for l in c['layers']):.3f})")
    r = subprocess.run([args.kiln_compile, f32, "-o", os.path.join(args.work, "bad"),
                        "--quant=q4_0", f"--compare={text}"], text=True, capture_output=True)
    res.check(r.returncode == 1 and "--compare writes its figures into --report=DIR" in r.stderr,
              f"--compare without --report: {r.stderr.strip()}")
    return res.finish()


# Texts for the GPT-2 vocabulary: words the merges cover, punctuation and
# contractions (their own pre-split words), digit runs, whitespace runs whose last
# space joins the next word, and multi-byte UTF-8 (letters to the pre-splitter).
GPT2_TEXTS = [
    "the cat sat on the mat",
    "Hello, World! It's a test: (one), \"two\"... 3.14?",
    "they'll say we've I'm he'd 'quoted' it's",
    "1999 and 2000, 007 agents; 12345678 x2",
    "  leading,   runs   of spaces\tand\ttabs \n\n new lines  ",
    "caf\u00e9, na\u00efve r\u00e9sum\u00e9 \u2014 \u6771\u4eac \U0001f642 \u00fc\u00e9\u00e9",
    "There their these without station nation within rather",
    "---...!!! ((( \"\" ))) ~`^",
]
GPT2_PROMPTS = ["The cat", "Hello, World!", "caf\u00e9 \u6771\u4eac with"]


def gpt2_vocab(args):
    """A random model with a GPT-2 byte-level BPE vocabulary: kiln-generate's
    tokenizer against the Python encoder in test/runtime/tokenizer_test.py, and its
    printed continuation against a Python decoding of the same greedy ids."""
    res = Results()
    os.makedirs(args.work, exist_ok=True)
    gguf = os.path.join(args.work, "gpt2.gguf")
    run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", gguf,
         "--seed", "11", "--name", "gpt2-vocab", "--vocab-model", "gpt2", "--vocab", "392",
         "--n-embd", "64", "--n-layer", "2", "--n-head", "4", "--n-head-kv", "2",
         "--n-ff", "96", "--ctx", "96"])
    _, md, _ = gguf_tool.read_gguf(gguf, load_data=False)
    tokens = md["tokenizer.ggml.tokens"][1][1]
    types = md["tokenizer.ggml.token_type"][1][1]
    merges = [tuple(m.split(" ", 1)) for m in md["tokenizer.ggml.merges"][1][1]]
    vocab = {"ids": {tok: i for i, tok in enumerate(tokens)},
             "ranks": {pair: r for r, pair in reversed(list(enumerate(merges)))}, "unk": -1}
    byte_of = {c: b for b, c in tokenizer_test.BYTE_CHAR.items()}

    def decode(ids):
        # Normal pieces map back through the byte alphabet; control tokens print nothing.
        return b"".join(bytes(byte_of[ch] for ch in tokens[i]) if types[i] == 1 else b""
                        for i in ids)

    out = os.path.join(args.work, "out")
    name = compile_model(args, gguf, out)
    b = build(out, args.cc[0])
    gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack")]

    for text in GPT2_TEXTS:
        want = tokenizer_test.bpe_reference(vocab, text.encode())
        r = run(gen + ["--tokenize", "-p", text])
        ids = [int(x) for x in r.stdout.split("ids:")[1].split(",")]
        res.check(ids == want, f"--tokenize {text!r}: {len(ids)} ids equal the Python BPE"
                  + ("" if ids == want else f" (got {ids}, want {want})"))
        res.check(decode(ids) == text.encode(), f"{text!r}: ids decode back to the text")
    merged = [i for t in GPT2_TEXTS for i in tokenizer_test.bpe_reference(vocab, t.encode())
              if i >= 256]
    res.check(len(set(merged)) >= 20, f"the texts use {len(set(merged))} merged pieces (>= 20)")

    for prompt in GPT2_PROMPTS:
        ids = tokenizer_test.bpe_reference(vocab, prompt.encode())
        r = run(gen + ["--tokens", ",".join(map(str, ids)), "-n", "8"])
        greedy = [int(x) for x in r.stdout.split("ids:")[1].split(",")]
        res.check(len(greedy) == 8 and all(0 <= i < len(tokens) for i in greedy),
                  f"{prompt!r}: 8 greedy ids {greedy}")
        # Bytes, not text: a random model's continuation need not be valid UTF-8.
        r = subprocess.run(gen + ["-p", prompt, "-n", "8", "--ignore-eos"], capture_output=True,
                           check=True)
        head = prompt.encode()
        res.check(r.stdout.startswith(head), f"{prompt!r}: output starts with the prompt")
        cont, want = r.stdout[len(head):], decode(greedy) + b"\n"
        res.check(cont == want, f"{prompt!r}: continuation {cont!r} equals the decoded ids "
                  + ("" if cont == want else f"{want!r}"))

    r = subprocess.run(gen + ["--chat"], input="hi\n", capture_output=True, text=True)
    res.check(r.returncode == 1 and "no chat template Kiln knows" in r.stderr,
              f"--chat without a known template fails cleanly: {r.stderr.strip()}")
    chat_model(args, res, gguf, md, vocab, decode)
    return res.finish()


def chat_model(args, res, gguf, md, vocab, decode):
    """--chat over the same weights with two tokens renamed to ChatML's markers
    and a ChatML template: each reply equals the greedy ids (--tokens) of the
    conversation so far, as Python formats and tokenizes it, cut at the first
    end-of-generation id."""
    _, md, tensors = gguf_tool.read_gguf(gguf)
    tokens = list(md["tokenizer.ggml.tokens"][1][1])
    types = list(md["tokenizer.ggml.token_type"][1][1])
    # The two normal tokens before the vocab's <|endoftext|>.
    start, end = tokens.index("<|endoftext|>") - 2, tokens.index("<|endoftext|>") - 1
    tokens[start], tokens[end] = "<|im_start|>", "<|im_end|>"
    types[start] = types[end] = 3
    md["tokenizer.ggml.tokens"] = (gguf_tool.GGUF_ARRAY, (gguf_tool.GGUF_STRING, tokens))
    md["tokenizer.ggml.token_type"] = (gguf_tool.GGUF_ARRAY, (gguf_tool.GGUF_I32, types))
    md["tokenizer.chat_template"] = (gguf_tool.GGUF_STRING,
                                     "{% for m in messages %}<|im_start|>{{ m['role'] }}\n"
                                     "{{ m['content'] }}<|im_end|>\n{% endfor %}")
    chat_gguf = os.path.join(args.work, "chat.gguf")
    gguf_tool.write_gguf(chat_gguf, md, tensors)
    out = os.path.join(args.work, "chat-out")
    name = compile_model(args, chat_gguf, out)
    b = build(out, args.cc[0])
    gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack")]
    vocab = dict(vocab, ids={tok: i for i, tok in enumerate(tokens)})
    eog = {md["tokenizer.ggml.eos_token_id"][1], end}

    def tokenize(text):
        ids = []
        for part in tokenizer_test.partition(text.encode(), [t.encode() for t in tokens], types,
                                             True):
            ids += tokenizer_test.bpe_reference(vocab, part) if isinstance(part, bytes) else [part]
        return ids

    turns = ["hello there", "the cat", "and then"]
    prompts = ["<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello there<|im_end|>\n"
               "<|im_start|>assistant\n"] + [
        f"<|im_end|>\n<|im_start|>user\n{t}<|im_end|>\n<|im_start|>assistant\n" for t in turns[1:]]
    conversation, want = [], b""
    for prompt in prompts:
        conversation += tokenize(prompt)
        r = run(gen + ["--tokens", ",".join(map(str, conversation)), "-n", "6"])
        greedy = [int(x) for x in r.stdout.split("ids:")[1].split(",")]
        reply = greedy[:next((i for i, x in enumerate(greedy) if x in eog), len(greedy))]
        conversation += reply
        want += decode(reply) + b"\n"
    r = subprocess.run(gen + ["--chat", "-sys", "Be brief.", "-n", "6"],
                       input="\n".join(turns).encode() + b"\n", capture_output=True)
    res.check(r.returncode == 0 and r.stdout == want,
              f"--chat, 3 turns: replies {r.stdout!r} equal the greedy ids of the conversation "
              f"(ChatML markers as single tokens, {len(conversation)} tokens)"
              + ("" if r.stdout == want else f"; want {want!r}"))


# How to build for and run on each cross architecture: compiler, CMake
# definitions, emulator command. RISC-V goes through clang (gcc 12 has no RVV
# intrinsics) with the cross gcc's sysroot, and needs qemu's vector unit enabled.


def sampler_on_arch(res, cc, runner, work):
    sampler = os.path.join(work, "sampler-test")
    run([cc, "-std=c99", "-O2", "-static", "-I", os.path.join(ROOT, "runtime", "include"),
         os.path.join(ROOT, "test", "runtime", "sampler_test.c"),
         os.path.join(ROOT, "runtime", "src", "sampler.c"), "-lm", "-o", sampler])
    r = subprocess.run([sys.executable, os.path.join(ROOT, "test", "runtime", "sampler_reference.py"),
                        "--runner", runner, sampler], text=True, capture_output=True)
    res.check(r.returncode == 0, f"seeded sampling under {runner} matches the reference draws: "
              f"{r.stdout.strip().splitlines()[-1] if r.stdout.strip() else r.stderr.strip()}")


def cross(args):
    """The generated folder cross-built for another architecture and run under
    qemu-user: model A's logits against the reference, and q4_0, q4_k_m and
    llama.cpp's IQ4_NL and Q2_K files' perplexity against the same model built
    for the host."""
    res = Results()
    cc, defs, qemu = CROSS[args.arch]
    if not (shutil.which(cc) and shutil.which(qemu[0])):
        res.check(False, f"{cc} and {qemu[0]} are installed (scripts/setup.sh)")
        return res.finish()
    cross_defs = ["-DCMAKE_SYSTEM_NAME=Linux", "-DCMAKE_EXE_LINKER_FLAGS=-static", *defs]
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    out = os.path.join(args.work, "f32")
    name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out)
    b = build(out, cc, cross_defs)
    for p in refs["prompts"][:args.prompts]:
        dump = os.path.join(args.work, f"p{p['index']}.f32")
        r = run(qemu + [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, name + ".kpack"),
                        "--tokens", ",".join(map(str, p["token_ids"])), "-n", "32",
                        "--dump-logits", dump])
        ids = [int(x) for x in r.stdout.split("ids:")[1].split(",")]
        ref = npy_rows(os.path.join(MODEL_A, p["logits_file"]))
        ref += npy_rows(os.path.join(MODEL_A, p["greedy_logits_file"]))[1:]
        err, row, col = llama_ref.max_abs_diff(llama_ref.read_f32(dump, refs["n_vocab"]), ref)
        res.check(err <= 1e-4 and ids == p["greedy_ids"],
                  f"{args.arch} {args.target} prompt {p['index']}: max abs error {err:.3g} <= 1e-4, "
                  f"greedy ids equal")
    # The sampler draws the same tokens for a seed on AArch64 as on the host:
    # its golden sequences come from an independent Python model.
    if args.arch == "aarch64":
        sampler_on_arch(res, cc, qemu[0], args.work)
    ppl_args = ["--perplexity", os.path.join(MODEL_A, "val.txt"), "--ctx", str(args.ctx),
                "--chunks", str(args.chunks)]
    # q4_0 (with its q6_k output head) and the q4_k_m mix: the panel kernels
    # and the k-quant block kernels of the target; llama.cpp's IQ4_NL and Q2_K
    # files: the blocks of 32 and the low-bit k-quants (panels on arm-neon).
    f32 = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    for quant, gguf, flags in (("q4_0", f32, ["--quant=q4_0"]), ("q4_k_m", f32, ["--quant=q4_k_m"]),
                               ("iq4_nl", os.path.join(LLAMACPP_A, "A-IQ4_NL.gguf"), []),
                               ("q2_k", os.path.join(LLAMACPP_A, "A-Q2_K-imx.gguf"), [])):
        ppl = {}
        for where in (args.arch, "host"):
            out = os.path.join(args.work, f"{quant}-{where}")
            host_args = argparse.Namespace(**{**vars(args), "target": "c99"})
            qname = compile_model(args if where != "host" else host_args, gguf, out, *flags)
            b = build(out, cc if where != "host" else "gcc", cross_defs if where != "host" else [])
            gen = [os.path.join(b, "kiln-generate"), "--pack", os.path.join(out, qname + ".kpack")]
            r = run((qemu if where != "host" else []) + gen + ppl_args)
            ppl[where] = perplexity_in(r.stdout)
        res.check(abs(ppl[args.arch] - ppl["host"]) <= 0.005 * ppl["host"],
                  f"{quant} perplexity over {args.chunks} chunks of {args.ctx}: {args.arch} "
                  f"{args.target} {ppl[args.arch]:.4f}, host c99 {ppl['host']:.4f} (within 0.5%)")
    return res.finish()


def sanitize(args):
    """Generated code built with AddressSanitizer and UndefinedBehaviorSanitizer:
    every format's kernels, the KV cache types and the runtime run model A
    without a report (out-of-bounds access past the static arena, misaligned
    loads, overflow). Text equals the unsanitized build's. Three generate past a
    small capacity with context shifts (--keep): in a full q8 cache, in rings
    of --kv-window and in a full int4 cache (whose tiles a shift moves position
    by position)."""
    res = Results()
    flags = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    configs = [("f32", [], []), ("f16-kv-f16", ["--quant=f16", "--kv-type=f16"], []),
               ("q8_0-kv-q8", ["--quant=q8_0", "--kv-type=q8"], []),
               ("q4_0-i4g64", ["--quant=q4_0", "--quant-override=*.ffn_*=i4g64"], []),
               ("shift-kv-q8", ["--max-context=64", "--kv-type=q8"], ["--keep", "4"]),
               ("shift-kv-q4", ["--max-context=64", "--kv-type=q4"], ["--keep", "4"]),
               ("shift-ring", ["--max-context=64", "--kv-window=12"], ["--keep", "2"])]
    prompt = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))["prompts"][2]
    for label, extra, run_flags in configs:
        out = os.path.join(args.work, label)
        name = compile_model(args, os.path.join(MODEL_A, "tiny-llama-A-f32.gguf"), out,
                             "--prefill-chunk=16", *extra)
        texts = []
        for build_dir, cflags in (("build-plain", STRICT), ("build-sanitized", STRICT + " " + flags)):
            b = os.path.join(out, build_dir)
            cmake_build(out, b, "clang-19", f"{cflags} {SANITIZE_OPT}", "-DCMAKE_BUILD_TYPE=Test",
                        f"-DCMAKE_EXE_LINKER_FLAGS={flags if 'sanitized' in build_dir else ''}")
            r = subprocess.run([os.path.join(b, "kiln-generate"), "--pack",
                                os.path.join(out, name + ".kpack"), "-p", prompt["text"], "-n",
                                "40", "--ignore-eos", *run_flags], text=True, capture_output=True)
            texts.append((r.returncode, r.stdout, r.stderr))
        (rc0, plain, _), (rc1, checked, err) = texts
        shifted = "context shifts: 0" not in err
        res.check(rc0 == 0 and rc1 == 0 and plain == checked and "runtime error" not in err
                  and shifted == bool(run_flags),
                  f"{args.target} {label}: sanitized run clean and identical"
                  + (", shifting the context" if run_flags else "")
                  + ("" if rc1 == 0 else f": {err.strip()[-400:]}"))
    return res.finish()


def threads(args):
    """--threads=N: every split kernel's shares are fixed at compile time and each
    output is computed the same way whichever worker holds it, so the logits of
    a prompt (prefill in chunks whose rows do not divide by N) and its greedy
    continuation are bit-identical for N = 1..4 and any pool size up to N, on
    model A and on random shapes with odd head counts where every kernel is
    split (--min-split-work=1), and to model A's unfused schedule (--fuse=none).
    The pooled builds also run clean under ThreadSanitizer and under
    AddressSanitizer with UBSan."""
    res = Results()
    os.makedirs(args.work, exist_ok=True)
    odd = os.path.join(args.work, "odd.gguf")
    run([sys.executable, os.path.join(ROOT, "test", "tools", "gguf_tool.py"), "model", odd,
         "--seed", "5", "--name", "odd", "--n-embd", "96", "--n-layer", "2", "--n-head", "3",
         "--n-head-kv", "1", "--n-ff", "170", "--vocab", "300", "--ctx", "64"])
    model_a = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    # Thread counts: an odd one that divides no chunk (3), and 4; each build
    # runs with pools of n and n - 1 workers, so every pool size 1..4 runs.
    configs = [("model-a-f32", model_a, ["--prefill-chunk=16"], (1, 4)),
               ("model-a-q4_0", model_a, ["--prefill-chunk=16", "--quant=q4_0"], (1, 3)),
               ("odd-q8_0", odd, ["--prefill-chunk=7", "--quant=q8_0", "--min-split-work=1"],
                (1, 3, 4)),
               ("odd-f16-kv-q8", odd, ["--prefill-chunk=5", "--quant=f16", "--kv-type=q8",
                                       "--min-split-work=1"], (1, 3)),
               ("model-a-kv-q4", model_a, ["--prefill-chunk=16", "--kv-type=q4"], (1, 3))]
    rng = random.Random(11)
    tokens = [1] + [rng.randrange(3, 300) for _ in range(36)]
    for label, gguf, flags, counts in configs:
        base = None
        for n in counts:
            out = os.path.join(args.work, f"{label}-t{n}")
            name = compile_model(args, gguf, out, f"--threads={n}", *flags)
            b = build(out, args.cc[0])
            pack = os.path.join(out, name + ".kpack")
            for pool in sorted({n, max(1, n - 1)}):
                dump = os.path.join(out, f"logits-t{pool}.f32")
                generate(b, pack, tokens, 8, dump, "-t", str(pool))
                data = open(dump, "rb").read()
                if base is None:
                    base = data
                    continue
                res.check(len(data) == len(base) and data == base,
                          f"{label}: --threads={n} -t {pool}: {len(data) // 4} logits "
                          "bit-identical to one thread")
        if label.startswith("model-a"):
            # kiln-fuse's kernels do the float operations of the ops they replace
            # in the same order: the unfused schedule gives the same bits.
            plain = os.path.join(args.work, f"{label}-unfused")
            pname = compile_model(args, gguf, plain, "--fuse=none", *flags)
            dump = os.path.join(plain, "logits.f32")
            generate(build(plain, args.cc[0]), os.path.join(plain, pname + ".kpack"), tokens, 8,
                     dump)
            res.check(open(dump, "rb").read() == base,
                      f"{label}: --fuse=none: logits bit-identical to the fused kernels")
        if label == "model-a-q4_0":
            sanitized_runs(res, args, out, name, tokens, ("thread", "address,undefined"))
        elif label.startswith("odd-"):
            # Every kernel split: the most shared schedule under TSan.
            sanitized_runs(res, args, out, name, tokens, ("thread",))
    return res.finish()


SANITIZER_FLAGS = {"thread": "-fsanitize=thread",
                   "address,undefined": "-fsanitize=address,undefined -fno-sanitize-recover=all"}


def sanitized_runs(res, args, out, name, tokens, sanitizers):
    """The --threads=N build in `out` under each of `sanitizers` (ThreadSanitizer,
    ASan/UBSan): no report with N workers, and the logits of one worker."""
    n = int(out.rsplit("-t", 1)[1])
    for label in sanitizers:
        flags = SANITIZER_FLAGS[label]
        flags += " -fno-omit-frame-pointer"
        b = os.path.join(out, "build-" + label.replace(",", "-"))
        cmake_build(out, b, "clang-19", f"{STRICT} {flags} {SANITIZE_OPT}",
                    "-DCMAKE_BUILD_TYPE=Test", f"-DCMAKE_EXE_LINKER_FLAGS={flags}")
        runs = []
        for pool in (1, n):
            dump = os.path.join(b, f"logits-t{pool}.f32")
            r = subprocess.run([os.path.join(b, "kiln-generate"), "--pack",
                                os.path.join(out, name + ".kpack"), "--tokens",
                                ",".join(map(str, tokens)), "-n", "8", "-t", str(pool),
                                "--dump-logits", dump], text=True, capture_output=True,
                               env=dict(os.environ, TSAN_OPTIONS="halt_on_error=1"))
            runs.append((r, open(dump, "rb").read() if r.returncode == 0 else b""))
        (r1, one), (rn, many) = runs
        clean = all(r.returncode == 0 and "Sanitizer" not in r.stderr
                    and "runtime error" not in r.stderr for r, _ in runs)
        res.check(clean and one and one == many,
                  f"{os.path.basename(out)}: -fsanitize={label}, {n} threads: clean run, "
                  "the logits of one thread"
                  + ("" if clean else f": {(r1.stderr + rn.stderr).strip()[-600:]}"))


VARIANTS_APP = r"""/* Every variant of model A in one program: each opened on its own pack, in
 * the order given; an x86 variant this CPU cannot run refuses with
 * KILN_ERR_CPU. Prints each variant's status and its last logits row. */
#define _POSIX_C_SOURCE 200112L
#include "kiln/kiln.h"
#include "kiln/kiln_model.h"

#include <stdio.h>
#include <stdlib.h>

%(declarations)s
static const kiln_model_api *const apis[] = {%(apis)s};

int main(int argc, char **argv) {
  const int32_t n = argc - 1 - (int32_t)(sizeof apis / sizeof apis[0]);
  int32_t *tokens = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
  size_t v;
  int32_t i;
  if (n <= 0 || !tokens)
    return 2;
  for (i = 0; i < n; ++i)
    tokens[i] = atoi(argv[1 + (int)(sizeof apis / sizeof apis[0]) + i]);
  for (v = 0; v < sizeof apis / sizeof apis[0]; ++v) {
    const kiln_model_api *api = apis[v];
    kiln_pack_source src;
    void *model = malloc(api->model_bytes), *arena = NULL;
    float *logits = malloc(sizeof(float) * (size_t)api->vocab);
    kiln_status s = kiln_pack_source_open_file(&src, argv[1 + v]);
    if (!model || !logits || posix_memalign(&arena, 64, api->arena_bytes) != 0)
      return 2;
    if (s == KILN_OK) {
      s = api->open(model, &src, arena, api->arena_bytes);
      if (s == KILN_OK)
        s = api->prefill_last(model, tokens, n, logits);
      if (s == KILN_OK)
        api->close(model);
      kiln_pack_source_close(&src);
    }
    printf("%%s %%s", api->name,
           s == KILN_OK ? "KILN_OK" : s == KILN_ERR_CPU ? "KILN_ERR_CPU" : "other-error");
    for (i = 0; s == KILN_OK && i < api->vocab; ++i)
      printf(" %%.9g", logits[i]);
    printf("\n");
    free(model), free(arena), free(logits);
  }
  free(tokens);
  return 0;
}
"""


def sessions_demo(res, out, gen):
    """kiln-generate -p SHARED --session TEXT ...: each session's greedy text is
    plain generation's from SHARED + TEXT, and the pool holds fewer pages than
    separate caches would."""
    shared = ("It is a truth universally acknowledged, that a single man in possession of a "
              "good fortune, must be in want of a wife. However little known the feelings or "
              "views of such a man may be on his first entering a neighbourhood,")
    own = [" Mrs. Bennet said", " her husband replied", " Elizabeth thought"]
    pack = ["--pack", os.path.join(out, "ses.kpack")]
    r = run([gen, *pack, "-p", shared, *sum((["--session", t] for t in own), []), "-n", "20",
             "--ignore-eos"])
    texts = [line.split("] ", 1)[1] for line in r.stdout.splitlines() if line.startswith("[session")]
    plain = [run([gen, *pack, "-p", shared + t, "-n", "20", "--ignore-eos"]).stdout.strip()
             for t in own]
    res.check(texts == plain, f"--session: each session's text is plain generation's "
              f"({len(texts)} of {len(own)})")
    m = re.search(r"KV pages in use: (\d+) of \d+ positions each \(separate caches: (\d+)\)",
                  r.stderr)
    res.check(m and int(m.group(1)) < int(m.group(2)),
              f"--session: {m.group(0) if m else r.stderr.strip()[-200:]}")


def sessions(args):
    """kiln-compile --sessions: four sessions over a pool of KV pages against the
    same weights compiled without sessions, logits bit for bit (test/e2e/Inputs/
    sessions_test.c: a shared prefix held once, batched decode, copy on write,
    context shift, misuse and a full pool); portable kernels under AddressSanitizer
    and UndefinedBehaviorSanitizer, the host's kernels, an int4 cache, split
    kernels and quantized weights (decode's one-row kernels against the batch's
    prefill kernels)."""
    res = Results()
    gguf = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    sanitize = "-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
    # (label, target, kiln-compile flags, C flags, the reference's own flags:
    # an int4 cache's AVX-512 attention ends its chunks at page ends, so its
    # reference is one session over pages of the same size)
    configs = [("c99-sanitized", "c99", [], sanitize, []),
               ("c99-kv-q4", "c99", ["--kv-type=q4"], "", []),
               ("host", "host", [], "", []),
               ("host-kv-q4", "host", ["--kv-type=q4"], "", ["--sessions=1", "--kv-page=16"]),
               ("host-threads-2", "host", ["--threads=2"], "", []),
               ("host-q4_0", "host", ["--quant=q4_0"], "", []),
               ("host-q4_k", "host", ["--quant=q4_k"], "", [])]
    for label, target, flags, cflags, ref_flags in configs:
        work = os.path.join(args.work, label)
        outs = {}
        for name, extra in (("ref", ref_flags), ("ses", ["--sessions=4", "--kv-page=16",
                                                          "--kv-pages=40"])):
            out = os.path.join(work, name)
            shutil.rmtree(out, ignore_errors=True)
            run([args.kiln_compile, gguf, "-o", out, f"--target={target}", f"--name={name}",
                 "--prefill-chunk=64", *flags, *extra])
            b = cmake_build(out, os.path.join(out, "build"), args.cc[0],
                            f"{STRICT} {cflags} {SANITIZE_OPT}", "-DCMAKE_BUILD_TYPE=Test",
                            "-DKILN_HOSTED=ON")
            outs[name] = (out, b)
        exe = os.path.join(work, "sessions_test")
        (ref_out, ref_b), (ses_out, ses_b) = outs["ref"], outs["ses"]
        run([args.cc[0], "-std=c99", *STRICT.split(), *cflags.split(), *SANITIZE_OPT.split(),
             "-I", ref_out, "-I", ses_out, "-I", os.path.join(ses_out, "runtime", "include"),
             os.path.join(HERE, "Inputs", "sessions_test.c"), os.path.join(ref_b, "libref.a"),
             os.path.join(ses_b, "libses.a"), os.path.join(ses_b, "libkiln_runtime.a"), "-lm",
             "-lpthread", "-o", exe])
        r = subprocess.run([exe, os.path.join(ref_out, "ref.kpack"),
                            os.path.join(ses_out, "ses.kpack")], text=True, capture_output=True)
        lines = r.stdout.splitlines()
        fails = [line for line in lines if line.startswith("FAIL")]
        res.check(r.returncode == 0 and not fails and len(lines) > 20,
                  f"{label}: {len(lines)} checks, {'; '.join(fails) or 'all pass'}"
                  + ("" if r.returncode == 0 else f" (exit {r.returncode}: {r.stderr.strip()[-300:]})"))
        print("\n".join(f"  {label}: {line}" for line in lines if not line.startswith("PASS")))
        if label == "host":
            sessions_demo(res, ses_out, os.path.join(ses_b, "kiln-generate"))
    # Options that cannot hold: a clear error, no output.
    for flags, msg in ((["--sessions=2", "--kv-page=24"], "--kv-page=24 must be a multiple of 16"),
                       (["--sessions=2", "--kv-window=32"], "does not take sliding windows"),
                       (["--kv-pages=8"], "size the page pool of --sessions")):
        r = subprocess.run([args.kiln_compile, gguf, "-o", os.path.join(args.work, "bad"), *flags],
                           text=True, capture_output=True)
        res.check(r.returncode != 0 and msg in r.stderr,
                  f"kiln-compile {' '.join(flags)}: {r.stderr.strip()[:160]}")
    return res.finish()


def variants(args):
    """Every ISA variant of this machine's architecture and c99, each compiled
    as its own model (--name), linked into one program with one runtime: the
    names never collide, each variant this CPU runs gives model A's reference
    logits, and each it cannot run refuses with KILN_ERR_CPU at open."""
    res = Results()
    gguf = os.path.join(MODEL_A, "tiny-llama-A-f32.gguf")
    machine = os.uname().machine
    names = ["c99"] + [v for v, row in VARIANTS.items() if row["arch"] == machine]
    cc = args.cc[0]
    objs, packs = [], []
    for v in names:
        out = os.path.join(args.work, v)
        shutil.rmtree(out, ignore_errors=True)
        name = "a_" + v.replace("-", "_")
        run([args.kiln_compile, gguf, "-o", out, f"--target={v}", f"--name={name}"])
        packs.append(os.path.join(out, name + ".kpack"))
        flags = VARIANTS.get(v, {}).get("flags", "").split()
        for src in (name + ".c", name + "_kernels.c"):
            obj = os.path.join(args.work, src + ".o")
            run([cc, "-std=c99", *STRICT.split(), "-O2", "-ffp-contract=off", *flags, "-I", out,
                 "-I", os.path.join(out, "runtime", "include"), "-c", os.path.join(out, src),
                 "-o", obj])
            objs.append(obj)
    runtime = os.path.join(args.work, "c99", "runtime")
    for src in sorted(os.listdir(os.path.join(runtime, "src"))):
        if src.endswith(".c") and src != "pool.c":
            obj = os.path.join(args.work, "runtime-" + src + ".o")
            run([cc, "-std=c99", *STRICT.split(), "-O2", "-I", os.path.join(runtime, "include"),
                 "-c", os.path.join(runtime, "src", src), "-o", obj])
            objs.append(obj)
    app = os.path.join(args.work, "variants.c")
    models = ["a_" + v.replace("-", "_") for v in names]
    with open(app, "w") as f:
        f.write(VARIANTS_APP % {
            "declarations": "".join(f"extern const kiln_model_api {m}_api;\n" for m in models),
            "apis": ", ".join(f"&{m}_api" for m in models)})
    exe = os.path.join(args.work, "variants")
    run([cc, "-std=c99", *STRICT.split(), "-O2", "-I", os.path.join(runtime, "include"), app,
         *objs, "-o", exe, "-lm"])
    res.check(True, f"{len(names)} variants link into one program: {', '.join(names)}")
    refs = json.load(open(os.path.join(MODEL_A, "tiny-llama-A-refs.json")))
    p = refs["prompts"][0]
    want = npy_rows(os.path.join(MODEL_A, p["logits_file"]))[-1]
    lines = run([exe, *packs, *map(str, p["token_ids"])]).stdout.splitlines()
    for v, m, line in zip(names, models, lines):
        fields = line.split()
        lacks = cpu_lacks(v, args.work)
        if lacks:
            res.check(fields[:2] == [m, "KILN_ERR_CPU"],
                      f"{v}: this CPU lacks {', '.join(lacks)}, open refuses: {' '.join(fields[:2])}")
            continue
        got = [float(x) for x in fields[2:]]
        err = max((abs(a - b) for a, b in zip(got, want)), default=float("inf"))
        res.check(fields[:2] == [m, "KILN_OK"] and len(got) == len(want) and err <= 1e-4,
                  f"{v}: last logits of prompt {p['index']} within 1e-4 of the reference "
                  f"(max abs error {err:.3g})")
    res.check(len(lines) == len(names), f"one line per variant: {len(lines)} of {len(names)}")
    return res.finish()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--kiln-compile", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cc", action="append", default=None)
    ap.add_argument("--target", default="c99", help="kiln-compile --target")
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("model-a")
    a.add_argument("--type", default="f32")
    a.add_argument("--chunk", type=int, default=16)
    a.add_argument("--tol", type=float, default=1e-4)
    r = sub.add_parser("random")
    r.add_argument("--shape", choices=sorted(SHAPES), required=True)
    r.add_argument("--tol", type=float, default=1e-4)
    sub.add_parser("bad-packs")
    sub.add_parser("app")
    sub.add_parser("quant")
    bf = sub.add_parser("block-formats")
    bf.add_argument("--chunks", type=int, default=16)
    bf.add_argument("--writer", action="append", default=None,
                    help="only these of Kiln's own writers (their packs are the same on every "
                    "target); --writer=none for none")
    sub.add_parser("sanitize")
    sub.add_parser("threads")
    c = sub.add_parser("cross")
    c.add_argument("--arch", choices=sorted(CROSS), default="aarch64")
    c.add_argument("--prompts", type=int, default=3, help="reference prompts to run")
    c.add_argument("--ctx", type=int, default=256)
    c.add_argument("--chunks", type=int, default=4)
    sub.add_parser("gpt2-vocab")
    sub.add_parser("shift")
    sub.add_parser("variants")
    sub.add_parser("sessions")
    sub.add_parser("speculate")
    sub.add_parser("checksums")
    sub.add_parser("faults")
    sub.add_parser("calibration")
    sub.add_parser("compare")
    args = ap.parse_args()
    args.cc = args.cc or ["gcc"]
    global WORK_ROOT
    WORK_ROOT = os.path.dirname(os.path.abspath(args.work))
    arch = VARIANTS.get(args.target, {}).get("arch")
    if arch and arch != os.uname().machine and args.cmd != "cross":
        print(f"skipped: --target={args.target} runs on {arch}, not on this {os.uname().machine}")
        return 77
    missing = cpu_lacks(args.target, args.work)
    if missing:
        print(f"skipped: this CPU lacks {', '.join(missing)} for --target={args.target}")
        return 77  # ctest's SKIP_RETURN_CODE: reported as skipped, not passed
    return {"model-a": model_a, "random": random_model, "bad-packs": bad_packs, "app": app,
            "quant": quant, "block-formats": block_formats, "gpt2-vocab": gpt2_vocab,
            "cross": cross, "sanitize": sanitize, "threads": threads, "shift": shift,
            "variants": variants, "sessions": sessions, "speculate": speculate, "checksums": checksums,
            "faults": faults, "calibration": calibration, "compare": compare}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
