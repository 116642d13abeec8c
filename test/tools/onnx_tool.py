#!/usr/bin/env python3
"""Writes the small ONNX graphs the importer's tests read (Debian's python3-onnx).

  onnx_tool.py encoder OUT.onnx     one BERT-style layer as exporters write it
  onnx_tool.py bad OUT.onnx --case CASE

The encoder has a symbolic sequence length and computes its reshape targets
from Shape at run time, as PyTorch's exporter does; its LayerNorm is the
mean/variance subgraph and its GELU the erf subgraph.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

D, HEADS, FF, VOCAB = 16, 2, 32, 50


def const(name, value, dtype=np.float32):
    return numpy_helper.from_array(np.array(value, dtype=dtype), name)


def layer_norm(nodes, inits, x, prefix):
    """The exported LayerNorm: ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add."""
    rng = np.random.default_rng(len(prefix))
    inits += [numpy_helper.from_array(rng.standard_normal(D).astype(np.float32), prefix + ".weight"),
              numpy_helper.from_array(rng.standard_normal(D).astype(np.float32), prefix + ".bias"),
              const(prefix + ".two", 2.0), const(prefix + ".eps", 1e-12)]
    p = prefix + "/"
    nodes += [
        helper.make_node("ReduceMean", [x], [p + "mean"], axes=[-1], name=p + "ReduceMean"),
        helper.make_node("Sub", [x, p + "mean"], [p + "centred"], name=p + "Sub"),
        helper.make_node("Pow", [p + "centred", prefix + ".two"], [p + "square"], name=p + "Pow"),
        helper.make_node("ReduceMean", [p + "square"], [p + "var"], axes=[-1], name=p + "ReduceMean_1"),
        helper.make_node("Add", [p + "var", prefix + ".eps"], [p + "var_eps"], name=p + "Add"),
        helper.make_node("Sqrt", [p + "var_eps"], [p + "std"], name=p + "Sqrt"),
        helper.make_node("Div", [p + "centred", p + "std"], [p + "normed"], name=p + "Div"),
        helper.make_node("Mul", [p + "normed", prefix + ".weight"], [p + "scaled"], name=p + "Mul"),
        helper.make_node("Add", [p + "scaled", prefix + ".bias"], [p + "out"], name=p + "Add_1"),
    ]
    return p + "out"


def encoder(path):
    rng = np.random.default_rng(0)
    w = lambda name, *shape: numpy_helper.from_array(  # noqa: E731
        (rng.standard_normal(shape) * 0.1).astype(np.float32), name)
    inits = [w("tok.weight", VOCAB, D), w("q.weight", D, D), w("k.weight", D, D), w("v.weight", D, D),
             w("up.weight", D, FF), w("up.bias", FF), w("down.weight", FF, D),
             const("sqrt2", np.sqrt(2.0)), const("one", 1.0), const("half", 0.5),
             const("scale", 1 / np.sqrt(D // HEADS)),
             const("zero", [0], np.int64), const("heads", [HEADS, D // HEADS], np.int64),
             const("flat", [D], np.int64)]
    nodes = [helper.make_node("Gather", ["tok.weight", "input_ids"], ["embedded"], name="embed")]
    x = layer_norm(nodes, inits, "embedded", "ln0")
    # Per-head views: the target shape [1, seq, HEADS, D/HEADS] computed from Shape.
    nodes += [
        helper.make_node("Shape", [x], ["x_shape"], name="shape"),
        helper.make_node("Slice", ["x_shape", "zero_start", "two_end"], ["batch_seq"], name="batch_seq"),
        helper.make_node("Concat", ["batch_seq", "heads"], ["head_shape"], axis=0, name="head_shape"),
    ]
    inits += [const("zero_start", [0], np.int64), const("two_end", [2], np.int64)]
    for p in "qkv":
        nodes += [
            helper.make_node("MatMul", [x, p + ".weight"], [p], name=p + "_proj"),
            helper.make_node("Reshape", [p, "head_shape"], [p + "_heads"], name=p + "_reshape"),
            helper.make_node("Transpose", [p + "_heads"], [p + "_t"], perm=[0, 2, 1, 3], name=p + "_transpose"),
        ]
    nodes += [
        helper.make_node("Transpose", ["k_t"], ["k_tt"], perm=[0, 1, 3, 2], name="k_transpose_2"),
        helper.make_node("MatMul", ["q_t", "k_tt"], ["scores"], name="scores"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled_scores"], name="scale_scores"),
        helper.make_node("Softmax", ["scaled_scores"], ["probs"], axis=-1, name="softmax"),
        helper.make_node("MatMul", ["probs", "v_t"], ["context"], name="context"),
        helper.make_node("Transpose", ["context"], ["context_t"], perm=[0, 2, 1, 3], name="context_transpose"),
        helper.make_node("Shape", ["embedded"], ["e_shape"], name="e_shape"),
        helper.make_node("Slice", ["e_shape", "zero_start", "two_end"], ["e_batch_seq"], name="e_batch_seq"),
        helper.make_node("Concat", ["e_batch_seq", "flat"], ["flat_shape"], axis=0, name="flat_shape"),
        helper.make_node("Reshape", ["context_t", "flat_shape"], ["attended"], name="merge_heads"),
        helper.make_node("Add", [x, "attended"], ["residual"], name="residual"),
        helper.make_node("MatMul", ["residual", "up.weight"], ["up"], name="up_proj"),
        helper.make_node("Add", ["up", "up.bias"], ["up_b"], name="up_bias"),
        helper.make_node("Div", ["up_b", "sqrt2"], ["gelu_in"], name="gelu/Div"),
        helper.make_node("Erf", ["gelu_in"], ["gelu_erf"], name="gelu/Erf"),
        helper.make_node("Add", ["gelu_erf", "one"], ["gelu_one"], name="gelu/Add"),
        helper.make_node("Mul", ["up_b", "gelu_one"], ["gelu_times"], name="gelu/Mul"),
        helper.make_node("Mul", ["gelu_times", "half"], ["gelu"], name="gelu/Mul_1"),
        helper.make_node("MatMul", ["gelu", "down.weight"], ["down"], name="down_proj"),
        helper.make_node("Add", ["residual", "down"], ["hidden"], name="residual_2"),
    ]
    graph = helper.make_graph(
        nodes, "encoder",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [1, "seq"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, [1, "seq", D])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


def tiny(nodes, inputs=None, inits=(), opset=14, outputs=None):
    inputs = inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])]
    outputs = outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    graph = helper.make_graph(nodes, "tiny", inputs, outputs, list(inits))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def bad(path, case):
    if case in ("truncated", "corrupt"):
        encoder(path)
        data = open(path, "rb").read()
        if case == "truncated":
            data = data[: len(data) // 2]
        else:
            data = data[:40] + bytes([0xff] * 16) + data[56:]
        open(path, "wb").write(data)
        return
    relu = helper.make_node("Relu", ["x"], ["y"], name="act")
    if case == "dynamic":
        model = tiny([helper.make_node("Sqrt", ["x"], ["y"], name="root")],
                     inputs=[helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "seq"])])
    elif case == "cycle":
        model = tiny([helper.make_node("Add", ["x", "b"], ["a"], name="first"),
                      helper.make_node("Sqrt", ["a"], ["b"], name="second"),
                      helper.make_node("Sqrt", ["a"], ["y"], name="out")])
    elif case == "dangling":
        model = tiny([helper.make_node("Add", ["x", "nowhere"], ["y"], name="lost")])
    elif case == "unsupported":
        model = tiny([relu])
    elif case == "opset":
        model = tiny([helper.make_node("Sqrt", ["x"], ["y"], name="root")], opset=19)
    else:
        raise SystemExit("unknown case " + case)
    onnx.save(model, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    e = sub.add_parser("encoder")
    e.add_argument("out")
    b = sub.add_parser("bad")
    b.add_argument("out")
    b.add_argument("--case", required=True)
    args = parser.parse_args()
    if args.command == "encoder":
        encoder(args.out)
    else:
        bad(args.out, args.case)


if __name__ == "__main__":
    main()
