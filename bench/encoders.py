#!/usr/bin/python3
"""Encoders compiled from ONNX: a BERT-base shape at 128 tokens and a ViT-S shape
at 224x224, against PyTorch eager on the same machine and against the peaks of
the cores used (bench/probes.c), in the same run.

  /usr/bin/python3 bench/encoders.py [--build build] [--models bert,vit] [--quant f32,q8_0]
                                     [--repeat 5] [--threads 1,2] [--work DIR]

Debian's interpreter (it has python3-torch). Per model: PyTorch builds it with
random weights (fixed seed) and exports it (opset 14, as users do); kiln-compile
compiles it for the host with --threads at the most threads asked (--quant per
format; f32 keeps the file's weights); the generated CMakeLists.txt builds
kiln-run. Per thread count t, `--repeat` rounds, each of them: the peaks of t
cores probed at once (`probes peaks t`), then kiln-run -t t timing three runs
(their median). The machine's speed drifts by tens of percent from minute to
minute, so each round's time is set against its own probe. PyTorch eager runs
the same inputs under torch.no_grad() with torch.set_num_threads(t), median of
`--repeat` runs. Reported per row: Kiln's median ms, its GFLOP/s (the matmuls'
and attention's multiply-adds, 2 flops each), and the median over rounds of
its fraction of the FP32 FMA peak (f32) or the int8 dot-product peak (q8_0) of
the t cores. Targets (issue 38): f32 at least 70% of the FMA peak, q8_0 at
least 50% of the int8 peak, on one and two threads.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (layers, width, heads, ff, tokens) and how the input is made
MODELS = {
    "bert": dict(layers=12, width=768, heads=12, ff=3072, tokens=128, vocab=30522),
    "vit": dict(layers=12, width=384, heads=6, ff=1536, image=224, patch=16, classes=1000),
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def build_torch(name):
    import torch
    from torch import nn
    m = MODELS[name]
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(m["width"], m["heads"], m["ff"], dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=name == "vit")
    if name == "bert":
        class Bert(nn.Module):
            def __init__(self):
                super().__init__()
                self.tokens = nn.Embedding(m["vocab"], m["width"])
                self.positions = nn.Embedding(512, m["width"])
                self.norm = nn.LayerNorm(m["width"], eps=1e-12)
                self.encoder = nn.TransformerEncoder(layer, m["layers"], enable_nested_tensor=False)

            def forward(self, ids, mask):
                x = self.norm(self.tokens(ids) + self.positions(torch.arange(ids.shape[1]).unsqueeze(0)))
                return self.encoder(x, src_key_padding_mask=mask == 0)

        model = Bert().eval()
        ids = torch.randint(0, m["vocab"], (1, m["tokens"]))
        inputs, names = (ids, torch.ones_like(ids)), ["input_ids", "attention_mask"]
    else:
        class Vit(nn.Module):
            def __init__(self):
                super().__init__()
                self.patches = nn.Conv2d(3, m["width"], m["patch"], m["patch"])
                count = (m["image"] // m["patch"]) ** 2
                self.cls = nn.Parameter(torch.randn(1, 1, m["width"]))
                self.positions = nn.Parameter(torch.randn(1, count + 1, m["width"]))
                self.encoder = nn.TransformerEncoder(layer, m["layers"])
                self.norm = nn.LayerNorm(m["width"], eps=1e-6)
                self.head = nn.Linear(m["width"], m["classes"])

            def forward(self, image):
                x = self.patches(image).flatten(2).transpose(1, 2)
                x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
                return self.head(self.norm(self.encoder(x))[:, 0])

        model = Vit().eval()
        inputs, names = (torch.randn(1, 3, m["image"], m["image"]),), ["pixels"]
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    return model, inputs, names


def flops(name):
    """Multiply-adds x 2 of the matmuls (projections, FFN, patch embedding, head) and attention."""
    m = MODELS[name]
    w, ff = m["width"], m["ff"]
    s = m["tokens"] if name == "bert" else (m["image"] // m["patch"]) ** 2 + 1
    per_layer = 2 * s * (4 * w * w + 2 * w * ff) + 2 * 2 * s * s * w
    total = m["layers"] * per_layer
    if name == "vit":
        total += 2 * (s - 1) * 3 * m["patch"] ** 2 * w + 2 * w * m["classes"]
    return total


def time_torch(model, inputs, threads, repeat):
    import torch
    torch.set_num_threads(threads)
    with torch.no_grad():
        model(*inputs)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            model(*inputs)
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--models", default="bert,vit")
    parser.add_argument("--quant", default="f32,q8_0")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--work", default="/tmp/kiln-bench-encoders")
    args = parser.parse_args()
    import numpy as np
    import torch
    warnings.simplefilter("ignore")
    os.makedirs(args.work, exist_ok=True)
    compiler = os.path.join(args.build, "bin", "kiln-compile")
    probe_exe, probes = shapes.run_probes(args.work)
    rows = []
    for name in args.models.split(","):
        model, inputs, names = build_torch(name)
        onnx_path = os.path.join(args.work, name + ".onnx")
        log("exporting %s" % name)
        torch.onnx.export(model, inputs, onnx_path, input_names=names, output_names=["out"], opset_version=14)
        flags = []
        for n, x in zip(names, inputs):
            path = os.path.join(args.work, "%s-%s.npy" % (name, n))
            np.save(path, x.numpy())
            flags += ["--input", "%s=%s" % (n, path)]
        gflop = flops(name) / 1e9
        threads = [int(x) for x in args.threads.split(",")]
        for quant in args.quant.split(","):
            out = os.path.join(args.work, "%s-%s" % (name, quant))
            log("compiling %s %s" % (name, quant))
            shapes.run([compiler, onnx_path, "--target=host", "-o", out, "--name=" + name,
                        "--threads=%d" % max(threads)]
                       + ([] if quant == "f32" else ["--quant=" + quant]))
            shapes.run(["cmake", "-S", out, "-B", os.path.join(out, "build")])
            shapes.run(["cmake", "--build", os.path.join(out, "build")])
            for t in threads:
                times, fractions = [], []
                for _ in range(args.repeat):
                    peaks = json.loads(shapes.run([probe_exe, "peaks", str(t)]).stdout)
                    peak = peaks["fma_gflops"] if quant == "f32" else peaks["int8_gops"]
                    run = shapes.run([os.path.join(out, "build", "kiln-run"), "--pack",
                                      os.path.join(out, name + ".kpack"), "--repeat", "3",
                                      "-t", str(t), *flags]).stdout
                    ms = float(run.split("median ")[1].split(" ms")[0])
                    times.append(ms)
                    fractions.append(gflop / ms * 1e3 / peak)
                kiln_ms = statistics.median(times)
                torch_ms = time_torch(model, inputs, t, args.repeat)
                rows.append({"model": name, "quant": quant, "threads": t, "kiln_ms": kiln_ms,
                             "torch_ms": torch_ms, "gflop": gflop,
                             "kiln_gflops": gflop / kiln_ms * 1e3,
                             "kiln_of_peak": statistics.median(fractions),
                             "of_peak_rounds": fractions,
                             "speedup_vs_torch": torch_ms / kiln_ms})
                r = rows[-1]
                log("%s %s t=%d: kiln %.1f ms (%.1f GFLOP/s, %.0f%% of the %s peak of %d core%s), "
                    "torch %.1f ms: %.2fx"
                    % (name, quant, t, kiln_ms, r["kiln_gflops"], 100 * r["kiln_of_peak"],
                       "FMA" if quant == "f32" else "int8", t, "" if t == 1 else "s", torch_ms,
                       r["speedup_vs_torch"]))
    result = {"probes": probes, "rows": rows}
    with open(os.path.join(args.work, "encoders.json"), "w") as f:
        json.dump(result, f, indent=1)
    print("| model | weights | threads | Kiln ms | GFLOP/s | of peak | torch ms | torch / Kiln |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print("| %s | %s | %d | %.1f | %.1f | %.0f%% | %.1f | %.2f |" % (
            r["model"], r["quant"], r["threads"], r["kiln_ms"], r["kiln_gflops"], 100 * r["kiln_of_peak"],
            r["torch_ms"], r["speedup_vs_torch"]))
    print("probes (one core, at the start): FMA peak %.1f GFLOP/s (%s), int8 peak %.1f GOP/s (%s)" % (
        probes["fma_gflops"], probes.get("fma_isa", "?"), probes["int8_gops"], probes.get("int8_isa", "?")))


if __name__ == "__main__":
    main()
