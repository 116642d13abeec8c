#!/usr/bin/env python3
"""ONNX's operator tests (Debian's libonnx-testdata) through Kiln.

  run_node_tests.py --data DIR --bin BUILD/bin --expected-failures FILE --work DIR [-j N] [--filter RE]

Every node test whose ops are all ones the importer reads runs twice: its
model is imported by `kiln-compile --emit=mlir` and its first data set
evaluated by `kiln-eval` (the reference evaluator of the imported IR); then
the model is compiled to C (`--target=c99`: the portable kernels every other
target is checked against), built with kiln-run and run on the same data set.
Each output of both is compared with the stored one at the ONNX backend
tests' tolerance (rtol 1e-3, atol 1e-7). The tests hold shapes, axes and indices as graph inputs; as in a
real model those are constants, so integer inputs after the first, and the
weights of Gemm, Conv and LayerNormalization, become initializers first.

A test listed in the expected-failures file (one name per line, then '#' and
why) must fail, and every other must pass: the run fails on an unexpected
failure and on an unexpected pass, so the list stays true.
"""
import argparse
import concurrent.futures
import os
import re
import subprocess
import sys

import numpy as np
import onnx
from onnx import numpy_helper

SUPPORTED = {"Add", "Sub", "Mul", "Div", "Pow", "Sqrt", "Erf", "Tanh", "Softmax", "ReduceMean",
             "LayerNormalization", "MatMul", "Gemm", "Gather", "Reshape", "Unsqueeze", "Squeeze",
             "Flatten", "Transpose", "Concat", "Slice", "Where", "Equal", "Cast", "Expand", "Identity",
             "Conv"}
WEIGHTED = {"Gemm", "Conv", "LayerNormalization"}
INTEGER = {onnx.TensorProto.INT64, onnx.TensorProto.INT32}


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def selected(data, pattern):
    tests = []
    for name in sorted(os.listdir(data)):
        if pattern and not re.search(pattern, name):
            continue
        try:
            model = onnx.load(os.path.join(data, name, "model.onnx"))
        except Exception:  # a test of a format this ONNX cannot load
            continue
        ops = {n.op_type for n in model.graph.node}
        if ops and ops <= SUPPORTED:
            tests.append(name)
    return tests


def run_test(name, args):
    """None when the test passes, else why it fails (one line)."""
    try:
        return check(name, args)
    except Exception as e:  # a test whose data this ONNX or numpy cannot read
        return "test data: %s" % str(e).splitlines()[0]


def check(name, args):
    folder = os.path.join(args.data, name)
    work = os.path.join(args.work, name)
    os.makedirs(work, exist_ok=True)
    model = onnx.load(os.path.join(folder, "model.onnx"))
    graph = model.graph
    given = {t.name for t in graph.initializer}
    inputs = [v for v in graph.input if v.name not in given]
    readers = {}
    for node in graph.node:
        for i, name_in in enumerate(node.input):
            readers.setdefault(name_in, []).append((node.op_type, i))
    data_set = os.path.join(folder, "test_data_set_0")
    kept, values = [], {}
    for i, v in enumerate(inputs):
        array = load_tensor(os.path.join(data_set, "input_%d.pb" % i))
        uses = readers.get(v.name, [])
        constant = uses and all(pos >= 1 and (v.type.tensor_type.elem_type in INTEGER or op in WEIGHTED)
                                for op, pos in uses)
        if constant:
            graph.initializer.append(numpy_helper.from_array(array, v.name))
        else:
            kept.append(v)
            values[v.name] = array
    del graph.input[:]
    graph.input.extend(kept)
    path = os.path.join(work, "model.onnx")
    onnx.save(model, path)
    flags = []
    for v in kept:
        npy = os.path.join(work, "in_%s.npy" % re.sub(r"[^A-Za-z0-9_]", "_", v.name))
        np.save(npy, values[v.name])
        flags.append("--input=%s=%s" % (v.name, npy))
    ir_dir = os.path.join(work, "ir")
    step = subprocess.run([os.path.join(args.bin, "kiln-compile"), path, "--emit=mlir", "-o", ir_dir,
                           "--name=model"], capture_output=True, text=True)
    if step.returncode:
        return "import: " + step.stderr.strip().splitlines()[-1]
    out_dir = os.path.join(work, "out")
    step = subprocess.run([os.path.join(args.bin, "kiln-eval"), os.path.join(ir_dir, "model.mlir"),
                           "--onnx", path, "--output-dir", out_dir, *flags], capture_output=True, text=True)
    if step.returncode:
        return "evaluate: " + step.stderr.strip().splitlines()[-1]
    wrong = compare(graph, data_set, out_dir)
    if wrong:
        return wrong
    c_dir = os.path.join(work, "c")
    step = subprocess.run([os.path.join(args.bin, "kiln-compile"), path, "--target=c99", "-o", c_dir,
                           "--name=model"], capture_output=True, text=True)
    if step.returncode:
        return "compile: " + step.stderr.strip().splitlines()[-1]
    run = os.path.join(c_dir, "kiln-run")
    sources = ["model.c", "model_kernels.c", "runtime/src/status.c", "runtime/src/pack.c",
               "runtime/src/pack_file.c", "samples/run/kiln_run.c", "samples/run/npy.c"]
    step = subprocess.run(["cc", "-std=c99", "-O1", "-ffp-contract=off", "-Wall", "-Wextra", "-Werror",
                           "-I" + c_dir, "-I" + os.path.join(c_dir, "runtime", "include"),
                           '-DKILN_GRAPH_HEADER="model.h"', "-DKILN_GRAPH_API=model_api",
                           "-DKILN_GRAPH_TYPE=model_model", "-DKILN_ARENA_BYTES=MODEL_ARENA_BYTES",
                           '-DKILN_DEFAULT_PACK="model.kpack"', "-o", run,
                           *[os.path.join(c_dir, f) for f in sources], "-lm"], capture_output=True, text=True)
    if step.returncode:
        return "build: " + (step.stderr.strip().splitlines() or ["cc failed"])[0]
    run_dir = os.path.join(work, "run")
    os.makedirs(run_dir, exist_ok=True)
    step = subprocess.run([run, "--pack", os.path.join(c_dir, "model.kpack"), "--output-dir", run_dir,
                           *sum([["--input", f[len("--input="):]] for f in flags], [])],
                          capture_output=True, text=True)
    if step.returncode:
        return "run: " + step.stderr.strip().splitlines()[-1]
    wrong = compare(graph, data_set, run_dir)
    return "compiled: " + wrong if wrong else None


def compare(graph, data_set, out_dir):
    """None when every output in out_dir matches the data set's, else how one differs."""
    for i, v in enumerate(graph.output):
        expected = load_tensor(os.path.join(data_set, "output_%d.pb" % i))
        actual = np.load(os.path.join(out_dir, v.name.replace("/", "_") + ".npy"))
        if actual.shape != expected.shape:
            return "output %s: shape %s, expected %s" % (v.name, actual.shape, expected.shape)
        if not np.allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=1e-3, atol=1e-7):
            worst = np.abs(actual.astype(np.float64) - expected.astype(np.float64)).max()
            return "output %s: off by up to %.3g" % (v.name, worst)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--bin", required=True, help="the folder of kiln-compile and kiln-eval")
    parser.add_argument("--expected-failures", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--filter", help="only tests whose name matches")
    parser.add_argument("-j", type=int, default=os.cpu_count())
    args = parser.parse_args()
    if not os.path.isdir(args.data):
        print("no ONNX node tests at %s (Debian's libonnx-testdata; scripts/setup.sh --test installs it)"
              % args.data)
        return 1
    expected = {}
    with open(args.expected_failures) as f:
        for line in f:
            name, _, why = line.partition("#")
            if name.strip():
                expected[name.strip()] = why.strip()
    tests = selected(args.data, args.filter)
    with concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        results = dict(zip(tests, pool.map(lambda t: run_test(t, args), tests)))
    bad = 0
    for name in tests:
        failure = results[name]
        if failure and name in expected:
            print("XFAIL %s: %s" % (name, failure))
        elif failure:
            print("FAIL  %s: %s" % (name, failure))
            bad += 1
        elif name in expected:
            print("XPASS %s (listed as failing: %s)" % (name, expected[name]))
            bad += 1
        else:
            print("PASS  %s" % name)
    stale = sorted(set(expected) - set(tests)) if not args.filter else []
    for name in stale:
        print("STALE %s: listed as failing but not a selected test" % name)
    passed = sum(1 for t in tests if not results[t])
    print("%d node tests: %d pass, %d expected failures, %d wrong" % (len(tests), passed,
                                                                    len(tests) - passed - bad, bad + len(stale)))
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
