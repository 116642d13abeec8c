#!/usr/bin/env python3
"""Sessions over a pool of KV pages (kiln-compile --sessions): batched decode
against one session's decode, and the prefix cache's time to first token, in
the same run.

  python3 bench/sessions.py [--build build] [--shapes M,L] [--format q4_0] [--repeat 3]

Per shape, one build with --sessions=4 --kv-page=16 --threads=2, run on one and
two threads (-t). Per repeat, seconds apart:
  - one session: kiln-generate --tokens (the plain API, session 0: decode's
    one-row kernels), decode tokens/s after a 220-token prompt;
  - four sessions: kiln-generate --tokens SHARED --session OWN x 4 (200 shared
    tokens, --own of each session's own, default 20): each prompt's time to first token (the
    first computes the prefix, the others map its pages), then batched decode
    (one pass a token of all four; the prefill kernels, four rows) in tokens/s
    summed over the sessions, and the pages in use against separate caches.
Reported: medians; batched / single decode (target: at least 3.5 on L q4_0);
the later sessions' largest time to first token over the first's (target: at
most 0.10; own / (200 + own) is the floor: 0.091 at 20).

The second and later prompts map the 12 full pages of the prefix and copy the
8 positions of the 13th that the first session holds (kv_pages_adopt_part), so
they compute only their own tokens."""
import argparse
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes  # noqa: E402

PREFIX, DECODE = 200, 64


def ids(seed, n):
    """n token ids of a fixed sequence, inside every shape's vocabulary."""
    return [(seed * 7919 + i * 104729) % 509 + 2 for i in range(n)]


def one_repeat(gen, threads, own):
    t = ["-t", str(threads), "--ignore-eos"]
    single = shapes.run(gen + t + ["--tokens", ",".join(map(str, ids(1, PREFIX + own))), "-n",
                                   str(DECODE + 1)]).stderr
    single_rate = float(re.search(r"decode: ([\d.]+) tokens/s", single).group(1))
    sessions = sum((["--session", ",".join(map(str, ids(10 + s, own)))] for s in range(4)), [])
    err = shapes.run(gen + t + ["--tokens", ",".join(map(str, ids(1, PREFIX))), *sessions, "-n",
                                str(DECODE + 1)]).stderr
    ttft = [float(x) for x in re.findall(r"time to first token ([\d.]+) ms", err)]
    pages = re.search(r"KV pages in use: (\d+) of \d+ positions each \(separate caches: (\d+)\)",
                      err)
    batched = float(re.search(r"batched decode: 4 sessions, \d+ tokens, ([\d.]+) tokens/s",
                              err).group(1))
    if len(ttft) != 4 or not pages:
        raise RuntimeError("unexpected kiln-generate output:\n" + err)
    return {"single": single_rate, "batched": batched, "ttft_first": ttft[0],
            "ttft_later": max(ttft[1:]), "pages": int(pages.group(1)),
            "separate": int(pages.group(2))}


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--build", default=os.path.join(shapes.ROOT, "build"))
    ap.add_argument("--work", default="/tmp/kiln-bench-sessions")
    ap.add_argument("--shapes", default="M,L")
    ap.add_argument("--format", default="q4_0")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--own", type=int, default=20,
                    help="each session's own tokens after the shared 200 (the later sessions' "
                         "time to first token can be no less than own / (200 + own) of the "
                         "first's)")
    args = ap.parse_args()
    compiler = os.path.join(args.build, "bin", "kiln-compile")
    target = shapes.host_target(compiler)
    rows = []
    for shape in args.shapes.split(","):
        model = shapes.make_model(shape, args.work)
        out = os.path.join(args.work, "%s-%s" % (shape, args.format))
        shapes.log("compiling %s %s" % (shape, args.format))
        _, gen, arena, _, _ = shapes.build(compiler, model, out, target, args.format,
                                           ["--sessions=4", "--kv-page=16", "--threads=2"])
        for threads in (1, 2):
            runs = [one_repeat(gen, threads, args.own) for _ in range(args.repeat)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            rows.append((shape, threads, arena, med,
                         statistics.median(r["batched"] / r["single"] for r in runs),
                         statistics.median(r["ttft_later"] / r["ttft_first"] for r in runs)))
            shapes.log("  %s t%d done" % (shape, threads))
    print("| shape | format | threads | arena B | decode t/s, 1 session | batched t/s, 4 sessions "
          "| batched / 1 | TTFT 1st ms | TTFT 2-4 ms (largest) | later / 1st | pages (separate) |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape, threads, arena, m, speedup, later in rows:
        print("| %s | %s | %d | %d | %.1f | %.1f | %.2f | %.2f | %.2f | %.3f | %d (%d) |" % (
            shape, args.format, threads, arena, m["single"], m["batched"], speedup,
            m["ttft_first"], m["ttft_later"], later, m["pages"], m["separate"]))


if __name__ == "__main__":
    main()
