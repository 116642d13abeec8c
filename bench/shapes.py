#!/usr/bin/env python3
"""Speed of Kiln's generated code across model shapes, weight formats and targets,
measured against what one core of this machine can do (bench/probes.c).

  python3 bench/shapes.py [--shapes M,L,A] [--formats f16,q8_0,q4_0] [--targets c99,host]
                          [--repeat 3] [--work /tmp/kiln-bench-shapes] [--json FILE]
                          [--max-prefill-seconds 300]

Shapes: M and L are random-weight llama GGUFs (F16 matrices, F32 norms, context 8192)
written to WORK/models once and reused; A is model A from test/data. For each shape,
format and target: kiln-compile (timed), build the output folder, then kiln-generate
with token ids for prefill tokens/s on a 512-token prompt and decode tokens/s at
context 16 and 512 (median of --repeat runs, configurations interleaved). The table
also gives arena and pack bytes, the decode roofline fraction (weight bytes read per
token over the probe's read bandwidth) and the prefill fraction of peak (matmul flops
over the FMA peak for f16/f32, the int8 dot-product peak for q8_0/q4_0).
Prints a markdown table; writes it and the JSON to --json (default WORK/shapes.json)
and the same name with .md."""
import argparse
import glob
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
import gguf_tool  # noqa: E402

MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")

# Random-weight shapes: (n_embd, n_layer, n_head, n_head_kv, n_ff, n_vocab, n_ctx).
SHAPES = {
    "M": (768, 12, 12, 12, 2048, 32000, 8192),
    "L": (2048, 16, 32, 8, 5632, 32000, 8192),
    # Llama-3-8B's dimensions: bench/compile_memory.py's largest model (as q4_0).
    "8B": (4096, 32, 32, 8, 14336, 128256, 8192),
}
ALL_SHAPES = ["M", "L", "A"]

# Bytes one weight takes in each --quant format (a q8_0/q4_0 block is 32 weights
# plus an f16 scale).
BYTES_PER_WEIGHT = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "q8_0": 34 / 32, "q6_k": 210 / 256,
                    "q5_k": 176 / 256, "q5_1": 24 / 32, "q5_0": 22 / 32, "q4_1": 20 / 32,
                    "q4_k": 144 / 256, "q4_0": 18 / 32, "iq4_nl": 18 / 32, "q3_k": 110 / 256,
                    "q2_k": 84 / 256}
# llama.cpp's mixes (kiln-compile's --quant rules, no --pure): their bytes per token
# come from the compile's --report.
MIXES = ("q4_k_m", "q5_k_m")
INT8_FORMATS = ("q8_0", "q6_k", "q5_k", "q5_1", "q5_0", "q4_1", "q4_k", "q4_0", "iq4_nl",
                "q3_k", "q2_k") + MIXES

MAX_CONTEXT = 1024
PREFILL_CHUNK = 64
SHORT_PROMPT, SHORT_DECODE = 16, 32
LONG_PROMPT, LONG_DECODE = 512, 16
CFLAGS = "-O3 -march=native"


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def run(cmd, **kw):
    r = subprocess.run(cmd, text=True, capture_output=True, **kw)
    if r.returncode != 0:
        raise RuntimeError("%s failed (%d):\n%s%s" % (" ".join(cmd[:3]), r.returncode,
                                                      r.stdout[-2000:], r.stderr[-2000:]))
    return r


# ---------------------------------------------------------------------------
# Model files


def make_model(shape_name, work, ggml_type=gguf_tool.GGML_F16):
    """WORK/models/kiln-bench-<shape>[-<type>].gguf (gguf_tool's streamed writer, 2-D
    tensors in ggml_type), written unless it exists with the right size."""
    if shape_name == "A":
        return MODEL_A
    suffix = "" if ggml_type == gguf_tool.GGML_F16 else "-" + gguf_tool.type_name(ggml_type)
    path = os.path.join(work, "models", "kiln-bench-%s%s.gguf" % (shape_name, suffix.lower()))
    name = "kiln-bench-" + shape_name
    dims = SHAPES[shape_name]
    if os.path.exists(path) and os.path.getsize(path) == gguf_tool.streamed_llama_size(
            *dims, ggml_type=ggml_type, name=name):
        return path
    log("writing %s" % path)
    t0 = time.perf_counter()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    gguf_tool.write_streamed_llama(path, *dims, ggml_type=ggml_type, name=name)
    log("  %.1f s" % (time.perf_counter() - t0))
    return path


def model_info(model):
    """(matmul weights, vocabulary size). The matmul weights are those every token
    multiplies with: all 2-D tensors but the token embedding table, which decode reads
    one row of (unless it is tied as the output)."""
    with open(model, "rb") as f:
        head = f.read(64 << 20)  # the header; a 32000-token vocab takes ~1 MB
    info = gguf_tool.parse_gguf(memoryview(head), load_data=False)
    tensors = {t["name"]: gguf_tool.n_elements(t["ne"]) for t in info["tensors"]
               if len(t["ne"]) == 2}
    if "output.weight" in tensors:
        del tensors["token_embd.weight"]
    return sum(tensors.values()), len(info["metadata"]["tokenizer.ggml.tokens"][1][1])


# ---------------------------------------------------------------------------
# Probes, targets, one configuration

def run_probes(work):
    cc = os.environ.get("CC", "cc")
    exe = os.path.join(work, "probes")
    run([cc, "-O2", "-march=native", "-pthread", os.path.join(ROOT, "bench", "probes.c"), "-o",
         exe])
    log("probing bandwidth and peaks")
    return exe, json.loads(run([exe]).stdout)


def probe_bandwidth(exe, threads):
    return json.loads(run([exe, "bandwidth", str(threads)]).stdout)["bandwidth_gbs"]


def run_threads(gen_flags):
    """The threads a kiln-generate run uses: its -t N, else 1."""
    return int(gen_flags[gen_flags.index("-t") + 1]) if "-t" in gen_flags else 1


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def host_target(compiler):
    """The best target for this host: host, else x86-avx512, else x86-avx2 when
    kiln-compile knows it (--help, or the list an unknown --target prints) and the
    CPU has the instructions; c99 otherwise."""
    known = run([compiler, "--help"]).stdout
    probe = subprocess.run([compiler, MODEL_A, "--emit=mlir", "--target=?"],
                           text=True, capture_output=True)
    known += probe.stderr
    flags = cpu_flags()
    needs = {"host": set(), "x86-avx512": {"avx512f"}, "x86-avx2": {"avx2", "fma", "f16c"}}
    for target in ("host", "x86-avx512", "x86-avx2"):
        if re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(target), known) and needs[target] <= flags:
            return target
    return "c99"


def header_define(out, suffix):
    for h in glob.glob(os.path.join(out, "*.h")):
        with open(h) as f:
            m = re.search(r"#define \w+_%s (\d+)u" % suffix, f.read())
        if m:
            return int(m.group(1))
    raise RuntimeError("no _%s in %s/*.h" % (suffix, out))


def kernels_of(out):
    """The target whose kernels the folder holds, as its CMakeLists.txt names it (what
    --target=host chose); None when it does not say."""
    with open(os.path.join(out, "CMakeLists.txt")) as f:
        m = re.search(r"# Kernels for ([\w-]+)", f.read())
    return m and m.group(1)


def mix_bytes_per_token(out):
    """Bytes of every weight a decode step reads (all but the token embedding), from
    the compile's --report of a mix."""
    with open(os.path.join(out, "report", "report.json")) as f:
        tensors = json.load(f)["tensors"]
    return sum(t["bytes"] for t in tensors if t["name"] != "token_embd.weight")


def build(compiler, model, out, target, fmt, extra):
    """kiln-compile and cmake; returns (compile seconds, generate cmd prefix, arena, pack,
    weight bytes per token for a mix, else None)."""
    # --pure: every matmul weight in the format the row names, as the bytes per
    # token assume (no q6_k output head); a mix takes the compiler's rules.
    rules = ["--report=" + os.path.join(out, "report")] if fmt in MIXES else ["--pure"]
    cmd = [compiler, model, "-o", out, "--target=" + target, "--quant=" + fmt, *rules,
           "--max-context=%d" % MAX_CONTEXT, "--prefill-chunk=%d" % PREFILL_CHUNK, *extra]
    t0 = time.perf_counter()
    run(cmd)
    seconds = time.perf_counter() - t0
    bdir = os.path.join(out, "build")
    run(["cmake", "-S", out, "-B", bdir, "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_C_FLAGS=" + CFLAGS])
    run(["cmake", "--build", bdir, "-j1"])  # one job: the machine is shared
    packs = glob.glob(os.path.join(out, "*.kpack"))
    if len(packs) != 1:
        raise RuntimeError("%s: expected one .kpack, found %d" % (out, len(packs)))
    gen = [os.path.join(bdir, "kiln-generate"), "--pack", packs[0], "--ignore-eos"]
    mix = mix_bytes_per_token(out) if fmt in MIXES else None
    return seconds, gen, header_define(out, "ARENA_BYTES"), os.path.getsize(packs[0]), mix


def generate(gen, ids, n_decode):
    """(prefill t/s, decode t/s, peak RSS KiB) of one kiln-generate run over `ids`,
    then n_decode decode calls (-n counts the first sampled token, which needs none)."""
    err = run(gen + ["--tokens", ",".join(map(str, ids)), "-n", str(n_decode + 1)]).stderr
    prefill = re.search(r"prefill: (\d+) tokens, ([\d.]+) tokens/s", err)
    decode = re.search(r"generated (\d+) tokens; decode: ([\d.]+) tokens/s", err)
    rss = re.search(r"peak RSS: (\d+) KiB", err)
    if not prefill or not decode or int(prefill.group(1)) != len(ids) \
            or int(decode.group(1)) != n_decode + 1:
        raise RuntimeError("unexpected kiln-generate output:\n" + err)
    return float(prefill.group(2)), float(decode.group(2)), int(rss.group(1))


# ---------------------------------------------------------------------------
# Report

def fraction(x):
    return "n/a" if x is None else "%.1f%%" % (100 * x)


def ratio(x):
    return "n/a" if x is None else "%.2f" % x


def rate(x):
    if x is None:
        return "skipped"
    return "%.0f" % x if x >= 100 else "%.1f" % x


COLUMNS = ["shape", "target", "format", "compile s", "prefill t/s", "prefill / q4_0",
           "decode t/s @16", "decode t/s @512", "arena B", "pack B", "decode roofline",
           "prefill of peak"]
# --formats=all: every GGUF type Kiln's kernels read, as llama.cpp writes them.
ALL_FORMATS = "f16,q8_0,q6_k,q5_k,q5_1,q5_0,q4_1,q4_k,q4_0,iq4_nl,q3_k,q2_k,q4_k_m"


def markdown(result):
    p = result["probes"]
    n = result.get("long_context", 0)
    columns = COLUMNS + (["decode t/s @%d" % n, "loss @%d vs @16" % n] if n else [])
    threads_lines = [
        "Read bandwidth of %s threads, one per core (the roofline of the rows run with -t %s): "
        "%.1f GB/s (median of %s)." % (t, t, b["median"], ", ".join("%.1f" % x for x in b["samples"]))
        for t, b in sorted(p.get("threads_bandwidth_gbs", {}).items())]
    lines = [
        "Kiln shapes benchmark: %s, C flags `%s`, median of %d runs; host target `%s`."
        % (result["date"], CFLAGS, result["repeat"], result["host_target"]),
        "",
        "Probes (one core): read bandwidth %.1f GB/s (median of %d probes, one before each "
        "round of runs: %s); FP32 FMA peak %.0f GFLOP/s (%s); int8 dot peak %.0f GOPS (%s)."
        % (p["bandwidth_gbs"], len(p["bandwidth_samples_gbs"]),
           ", ".join("%.1f" % b for b in p["bandwidth_samples_gbs"]), p["fma_gflops"],
           p["fma_isa"], p["int8_gops"], p["int8_isa"]),
        "",
    ] + (threads_lines + [""] if threads_lines else []) + [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for r in result["rows"]:
        if "error" in r:
            lines.append("| %s | %s | %s | failed: %s |" % (r["shape"], r["target"], r["format"],
                                                          r["error"].splitlines()[0]))
            continue
        target = r["target"]
        if r.get("kernels") and r["kernels"] != target:
            target += " (%s)" % r["kernels"]
        lines.append("| " + " | ".join([
            r["shape"], target, r["format"], "%.2f" % r["compile_s"],
            rate(r["prefill_tps"]), ratio(r.get("prefill_vs_q4_0")),
            rate(r["decode16_tps"]), rate(r["decode512_tps"]),
            str(r["arena_bytes"]), str(r["pack_bytes"]), fraction(r["decode_roofline"]),
            fraction(r["prefill_of_peak"])] +
            ([rate(r["decode_long_tps"]), fraction(r["long_context_loss"])] if n else [])) + " |")
    skipped = ["%s %s %s: %d-token runs skipped (%s, over --max-prefill-seconds)."
               % (r["shape"], r["target"], r["format"], LONG_PROMPT, r["long_skipped"])
               for r in result["rows"] if "long_skipped" in r]
    if skipped:
        lines += [""] + skipped
    lines += [
        "",
        "prefill: %d-token prompt in chunks of %d; decode @16 / @512: %d / %d decode calls "
        "after a prompt of that length; KV capacity %d. Decode roofline: matmul weight bytes "
        "per token (all 2-D weights but the token embedding) times decode t/s @16, over the "
        "read bandwidth of as many threads as the run's -t. Prefill / q4_0: per repeat, "
        "against the q4_0 run of the same shape, target and flags in that repeat (seconds "
        "apart), then the median. Prefill of peak: 2 x matmul weights "
        "x prefill t/s, over the int8 peak for the quantized formats and the FMA peak for "
        "f32/f16, times the run's threads (attention flops not counted)."
        % (LONG_PROMPT, PREFILL_CHUNK, SHORT_DECODE, LONG_DECODE, MAX_CONTEXT),
    ]
    if n:
        lines[-1] += (" Loss @%d: per repeat, 1 - decode @%d / decode @16 of the same repeat; "
                      "the median of those." % (n, n))
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default="M,L,A")
    ap.add_argument("--formats", default="f16,q8_0,q4_0",
                    help="comma-separated --quant formats, or `all`: " + ALL_FORMATS)
    ap.add_argument("--targets", default="c99,host",
                    help="kiln-compile targets; 'host' means the best one for this machine")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default="/tmp/kiln-bench-shapes")
    ap.add_argument("--json", help="results as JSON (default WORK/shapes.json); the table "
                                   "goes beside it as .md")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="Kiln build folder")
    ap.add_argument("--max-prefill-seconds", type=float, default=300,
                    help="skip the %d-token runs of a configuration whose first "
                         "%d-token prefill predicts a longer prefill" % (LONG_PROMPT, SHORT_PROMPT))
    ap.add_argument("--models-only", action="store_true", help="write the model files and stop")
    ap.add_argument("--long-context", type=int, default=0,
                    help="also decode after a prompt of this many tokens (the KV capacity "
                         "grows to fit) and give its loss against decode @16, e.g. 2048 with "
                         "--kiln-flags=--kv-type=f16 --kiln-flags=--kv-type=q4")
    ap.add_argument("--kiln-flags", action="append",
                    help="more kiln-compile flags, named in the rows; repeat it for several "
                         "variants in the same run, e.g. --kiln-flags= "
                         "--kiln-flags=--tile=mr=4,kc=99999 holds a fixed tile against "
                         "tile-for-cache's choice")
    ap.add_argument("--run-flags", action="append",
                    help="more kiln-generate flags, named in the rows; repeatable like "
                         "--kiln-flags (every pair is a row), e.g. --kiln-flags=--threads=2 "
                         "--run-flags='-t 1' --run-flags='-t 2' sets 1 thread against 2")
    args = ap.parse_args()
    global MAX_CONTEXT
    MAX_CONTEXT = max(MAX_CONTEXT, args.long_context + LONG_DECODE + 2)
    shapes = args.shapes.split(",")
    formats = (ALL_FORMATS if args.formats == "all" else args.formats).split(",")
    for s in shapes:
        if s not in ALL_SHAPES:
            ap.error("unknown shape %r (M, L, A)" % s)
    for f in formats:
        if f not in BYTES_PER_WEIGHT and f not in MIXES:
            ap.error("unknown format %r (%s)" % (f, ", ".join(list(BYTES_PER_WEIGHT) + list(MIXES))))
    os.makedirs(args.work, exist_ok=True)
    models = {s: make_model(s, args.work) for s in shapes}
    if args.models_only:
        return 0

    compiler = os.path.join(args.build, "bin", "kiln-compile")
    best = host_target(compiler)
    targets = [best if t == "host" else t for t in args.targets.split(",")]
    targets = list(dict.fromkeys(targets))  # host may resolve to c99
    variants = [f.split() for f in (args.kiln_flags or [""])]
    run_variants = [f.split() for f in (args.run_flags or [""])]
    probe_exe, probes = run_probes(args.work)
    # The machine's bandwidth drifts between minutes: probed again before every round
    # of runs, and the roofline takes the median of all the probes. Rows run with
    # -t N take the bandwidth of N threads, probed the same way.
    thread_counts = sorted({1} | {run_threads(g) for g in run_variants})
    bandwidths = {n: [probes["bandwidth_gbs"] if n == 1 else probe_bandwidth(probe_exe, n)]
                  for n in thread_counts}

    rows = []
    for shape in shapes:
        weights, vocab = model_info(models[shape])
        built = {}
        # formats innermost: in each round the runs set against each other (a format
        # and the q4_0 of the same target and flags) are seconds apart
        for target, fmt, extra, gen_flags in [(t, f, e, g) for t in targets for e in variants
                                              for g in run_variants for f in formats]:
            row = {"shape": shape,
                   "target": target + "".join(" " + f for f in extra + gen_flags),
                   "format": fmt,
                   "model": models[shape], "matmul_weights": weights, "vocab": vocab,
                   "weight_bytes_per_token": round(weights * BYTES_PER_WEIGHT.get(fmt, 0)),
                   "prefill": [], "decode16": [], "decode512": [], "decode_long": [],
                   "rss_kib": 0, "threads": run_threads(gen_flags)}
            out = os.path.join(args.work, "out", re.sub(r"[^\w.-]+", "_", "%s-%s-%s%s" % (
                shape, target, fmt, "".join(extra))))
            try:
                if out not in built:
                    log("compile %s %s %s" % (shape, target, fmt))
                    built[out] = build(compiler, models[shape], out, target, fmt, extra)
                row["compile_s"], gen, row["arena_bytes"], row["pack_bytes"], mix = built[out]
                if mix:
                    row["weight_bytes_per_token"] = mix
                row["gen"] = gen + gen_flags
                row["kernels"] = kernels_of(out)
            except RuntimeError as e:
                row["error"] = str(e)
                log(row["error"])
            rows.append(row)

    # Runs of all configurations interleaved, so a slow spell of the machine spreads
    # over all of them rather than one.
    for rep in range(args.repeat):
        if rep:
            for n in thread_counts:
                bandwidths[n].append(probe_bandwidth(probe_exe, n))
        for row in rows:
            if "error" in row:
                continue
            rng = random.Random(rep)  # the same prompts for every configuration
            ids = [rng.randrange(3, row["vocab"])
                   for _ in range(max(LONG_PROMPT, args.long_context))]
            label = "%s %s %s (run %d)" % (row["shape"], row["target"], row["format"], rep + 1)
            try:
                log("run " + label)
                pf16, dec, rss = generate(row["gen"], ids[:SHORT_PROMPT], SHORT_DECODE)
                row["decode16"].append(dec)
                row["rss_kib"] = max(row["rss_kib"], rss)
                predicted = LONG_PROMPT / pf16
                if predicted > args.max_prefill_seconds:
                    row["long_skipped"] = "predicted prefill %.0f s" % predicted
                    continue
                pf, dec, rss = generate(row["gen"], ids[:LONG_PROMPT], LONG_DECODE)
                row["prefill"].append(pf)
                row["decode512"].append(dec)
                row["rss_kib"] = max(row["rss_kib"], rss)
                if args.long_context:
                    _, dec, rss = generate(row["gen"], ids[:args.long_context], LONG_DECODE)
                    row["decode_long"].append(dec)
                    row["rss_kib"] = max(row["rss_kib"], rss)
            except RuntimeError as e:
                row["error"] = str(e)
                log(row["error"])

    probes["bandwidth_samples_gbs"] = bandwidths[1]
    probes["bandwidth_gbs"] = statistics.median(bandwidths[1])
    probes["threads_bandwidth_gbs"] = {str(n): {"median": statistics.median(b), "samples": b}
                                       for n, b in bandwidths.items() if n > 1}
    for row in rows:
        bandwidth = statistics.median(bandwidths[row["threads"]]) * 1e9
        row.pop("gen", None)
        for key in ("prefill", "decode16", "decode512", "decode_long"):
            row[key + "_tps"] = statistics.median(row[key]) if row[key] else None
        # Per repeat against its own @16, seconds apart, then the median: the
        # machine's memory speed drifts between minutes, which a ratio of the
        # two columns' medians (kept as long_context_loss_of_medians) takes in.
        pairs = [1 - lo / sh for sh, lo in zip(row["decode16"], row["decode_long"]) if sh]
        row["long_context_loss"] = statistics.median(pairs) if pairs else None
        row["long_context_loss_of_medians"] = (row["decode_long_tps"] and row["decode16_tps"] and
                                               1 - row["decode_long_tps"] / row["decode16_tps"])
        # Per repeat against the q4_0 row's run of the same repeat, then the median
        # (the machine's speed moves by up to 1.7x between minutes).
        base = next((b for b in rows if b["format"] == "q4_0" and b["shape"] == row["shape"]
                     and b["target"] == row["target"] and "error" not in b), None)
        ratios = [pf / q for pf, q in zip(row["prefill"], base["prefill"] if base else []) if q]
        row["prefill_vs_q4_0"] = statistics.median(ratios) if ratios else None
        dec, pf = row["decode16_tps"], row["prefill_tps"]
        peak = (probes["int8_gops" if row["format"] in INT8_FORMATS else "fma_gflops"] * 1e9 *
                row["threads"])
        row["decode_roofline"] = dec and row["weight_bytes_per_token"] * dec / bandwidth
        row["decode512_roofline"] = (row["decode512_tps"] and
                                     row["weight_bytes_per_token"] * row["decode512_tps"] / bandwidth)
        row["prefill_of_peak"] = pf and 2 * row["matmul_weights"] * pf / peak

    result = {"date": time.strftime("%Y-%m-%d %H:%M"), "repeat": args.repeat,
              "host_target": best, "cflags": CFLAGS, "max_context": MAX_CONTEXT,
              "long_context": args.long_context,
              "prefill_chunk": PREFILL_CHUNK, "probes": probes, "rows": rows}
    md = markdown(result)
    print(md, end="")
    json_path = args.json or os.path.join(args.work, "shapes.json")
    with open(os.path.splitext(json_path)[0] + ".md", "w") as f:
        f.write(md)
    with open(json_path, "w") as f:
        json.dump(result, f, indent=1)
        f.write("\n")
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
