#!/usr/bin/env python3
"""Naive reference forward pass of a llama-family GGUF model (llama, qwen2, qwen3,
gemma3, phi3), and logit comparison helpers.

This is a test oracle: it is written for clarity and independence from the compiler,
not for speed. Everything is computed in Python floats (double precision) from the
dequantized GGUF weights, one token at a time with a KV cache.

Command line:
  llama_ref.py logits MODEL.gguf --tokens 1,5,7 [--greedy N] --out FILE
      Writes raw little-endian float32 logits rows: one per prompt position, then one
      per generated token except the last (the row at the position of generated token i,
      which chose token i+1). That is len(tokens) + N - 1 rows when N > 0. Prints the
      greedy ids as a comma list on stdout.
  llama_ref.py compare A.f32 B.f32 --width V [--atol X]
      Prints the largest absolute difference and where it is; exits 1 if it exceeds atol.

As a module (add test/tools to sys.path, then `import llama_ref`):
  LlamaRef(path).logits(tokens) -> [[vocab floats] per position]
  LlamaRef(path).greedy(tokens, n) -> (ids, rows); rows[i] is the logits row that chose ids[i]
  read_npy(path) -> (shape, flat values)      little-endian float32 / int32, C order
  write_f32(path, rows), read_f32(path, width) -> rows
"""

import argparse
import ast
import math
import operator
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_tool  # noqa: E402


class RefError(Exception):
    pass


def _meta(metadata, key, default=None):
    if key in metadata:
        return metadata[key][1]
    if default is None:
        raise RefError("missing metadata key %s" % key)
    return default


def _dot(a, b):
    return sum(map(operator.mul, a, b))


def _matvec(rows, x):
    return [sum(map(operator.mul, row, x)) for row in rows]


def _rmsnorm(x, w, eps):
    scale = 1.0 / math.sqrt(_dot(x, x) / len(x) + eps)
    return [xi * scale * wi for xi, wi in zip(x, w)]


def _argmax(row):
    # First index on ties, like torch.argmax and llama.cpp's greedy sampler.
    return max(range(len(row)), key=row.__getitem__)


def _gelu(x):
    # tanh approximation, as gemma3 is trained with (gelu_pytorch_tanh)
    return 0.5 * x * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _silu(x):
    return x / (1.0 + math.exp(-x)) if x > -700 else 0.0


# How each architecture's forward pass differs from llama's (HF semantics):
# rope layout, biases, per-head q/k norms, post-norms, GELU, embedding scale,
# fused tensors, and which layers see a sliding window.
ARCHS = {
    "llama": {},
    "qwen2": {"neox": True, "qkv_bias": True},
    "qwen3": {"neox": True, "qk_norm": True},
    "gemma3": {"neox": True, "qk_norm": True, "post_norms": True, "gelu": True,
               "embed_scale": True, "global_every": 6},
    "phi3": {"neox": True, "fused": True},
}


class LlamaRef:
    def __init__(self, path, max_context=None):
        _, metadata, tensors = gguf_tool.read_gguf(path)
        arch = _meta(metadata, "general.architecture", "llama")
        if arch not in ARCHS:
            raise RefError("architecture %r is not one of %s" % (arch, ", ".join(ARCHS)))
        self.arch = arch
        traits = ARCHS[arch]
        self.traits = traits
        self.n_embd = _meta(metadata, arch + ".embedding_length")
        self.n_layer = _meta(metadata, arch + ".block_count")
        self.n_ff = _meta(metadata, arch + ".feed_forward_length")
        self.n_head = _meta(metadata, arch + ".attention.head_count")
        self.n_head_kv = _meta(metadata, arch + ".attention.head_count_kv", self.n_head)
        self.n_ctx = _meta(metadata, arch + ".context_length", 0)
        self.eps = float(_meta(metadata, arch + ".attention.layer_norm_rms_epsilon", 1e-5))
        self.freq_base = float(_meta(metadata, arch + ".rope.freq_base", 10000.0))
        if self.n_head % self.n_head_kv:
            raise RefError("n_head %d is not a multiple of n_head_kv %d"
                           % (self.n_head, self.n_head_kv))
        self.head_dim = _meta(metadata, arch + ".attention.key_length",
                              self.n_embd // self.n_head)
        self.rope_dim = _meta(metadata, arch + ".rope.dimension_count", self.head_dim)
        if self.rope_dim % 2 or not 0 < self.rope_dim <= self.head_dim:
            raise RefError("rope dimension %d is not even and in (0, %d]"
                           % (self.rope_dim, self.head_dim))
        window = _meta(metadata, arch + ".attention.sliding_window", 0)
        every = traits.get("global_every", 0)
        # Layers with a window attend to its last `window` positions, the
        # current one included.
        self.windows = [window if window and (not every or (l + 1) % every) else 0
                        for l in range(self.n_layer)]

        by_name = {t["name"]: t for t in tensors}
        D, F, hd = self.n_embd, self.n_ff, self.head_dim
        q_dim, kv_dim = self.n_head * hd, self.n_head_kv * hd

        def vector(name, n):
            t = self._tensor(by_name, name, [n])
            return gguf_tool.tensor_values(t)

        def matrix(name, n_in, n_out):
            t = self._tensor(by_name, name, [n_in, n_out])
            values = gguf_tool.tensor_values(t)
            return [values[o * n_in:(o + 1) * n_in] for o in range(n_out)]

        embd = by_name.get("token_embd.weight")
        if embd is None or len(embd["ne"]) != 2 or embd["ne"][0] != D:
            raise RefError("token_embd.weight must have ne [%d, n_vocab]" % D)
        self.n_vocab = embd["ne"][1]
        self.token_embd = matrix("token_embd.weight", D, self.n_vocab)
        self.embed_scale = math.sqrt(D) if traits.get("embed_scale") else 1.0
        self.layers = []
        for l in range(self.n_layer):
            p = "blk.%d." % l
            layer = {"attn_norm": vector(p + "attn_norm.weight", D),
                     "ffn_norm": vector(p + "ffn_norm.weight", D),
                     "wo": matrix(p + "attn_output.weight", q_dim, D),
                     "down": matrix(p + "ffn_down.weight", F, D)}
            if traits.get("fused"):
                # phi3: q, k, v rows in one tensor; gate rows then up rows in ffn_up.
                qkv = matrix(p + "attn_qkv.weight", D, q_dim + 2 * kv_dim)
                layer.update(wq=qkv[:q_dim], wk=qkv[q_dim:q_dim + kv_dim],
                             wv=qkv[q_dim + kv_dim:])
                gate_up = matrix(p + "ffn_up.weight", D, 2 * F)
                layer.update(gate=gate_up[:F], up=gate_up[F:])
            else:
                layer.update(wq=matrix(p + "attn_q.weight", D, q_dim),
                             wk=matrix(p + "attn_k.weight", D, kv_dim),
                             wv=matrix(p + "attn_v.weight", D, kv_dim),
                             gate=matrix(p + "ffn_gate.weight", D, F),
                             up=matrix(p + "ffn_up.weight", D, F))
            if traits.get("qkv_bias"):
                layer.update(bq=vector(p + "attn_q.bias", q_dim),
                             bk=vector(p + "attn_k.bias", kv_dim),
                             bv=vector(p + "attn_v.bias", kv_dim))
            if traits.get("qk_norm"):
                layer.update(q_norm=vector(p + "attn_q_norm.weight", hd),
                             k_norm=vector(p + "attn_k_norm.weight", hd))
            if traits.get("post_norms"):
                layer.update(post_attn=vector(p + "post_attention_norm.weight", D),
                             post_ffn=vector(p + "post_ffw_norm.weight", D))
            self.layers.append(layer)
        self.output_norm = vector("output_norm.weight", D)
        if "output.weight" in by_name:
            self.output = matrix("output.weight", D, self.n_vocab)
        else:
            self.output = self.token_embd

        # Rotation angle per pair, relative to position: ggml scales by the rope dims,
        # and divides by linear scaling's factor and by rope_freqs (Llama 3) or
        # phi3's short / long factors, whose attn_factor also scales q and k.
        pairs = self.rope_dim // 2
        self.inv_freq = [self.freq_base ** (-2.0 * i / self.rope_dim) for i in range(pairs)]
        self.mscale = 1.0
        scaling = _meta(metadata, arch + ".rope.scaling.type", "none")
        if scaling == "linear":
            factor = float(_meta(metadata, arch + ".rope.scaling.factor"))
            self.inv_freq = [f / factor for f in self.inv_freq]
        elif scaling not in ("none", "llama3", "longrope"):
            raise RefError("rope scaling %r is not modelled" % scaling)
        if "rope_freqs.weight" in by_name:
            factors = vector("rope_freqs.weight", pairs)
            self.inv_freq = [f / g for f, g in zip(self.inv_freq, factors)]
        if "rope_factors_short.weight" in by_name:
            original = _meta(metadata, arch + ".rope.scaling.original_context_length")
            context = max_context or self.n_ctx
            which = "long" if context > original else "short"
            factors = vector("rope_factors_%s.weight" % which, pairs)
            self.inv_freq = [f / g for f, g in zip(self.inv_freq, factors)]
            self.mscale = float(_meta(metadata, arch + ".rope.scaling.attn_factor", 1.0))
        # gemma3's local layers: their own base, no scaling.
        local_base = float(_meta(metadata, arch + ".rope.freq_base_swa", 10000.0))
        self.local_inv_freq = [local_base ** (-2.0 * i / self.rope_dim) for i in range(pairs)]
        self.reset()

    @staticmethod
    def _tensor(by_name, name, ne):
        t = by_name.get(name)
        if t is None:
            raise RefError("missing tensor %s" % name)
        if list(t["ne"]) != ne:
            raise RefError("%s has ne %s, expected %s" % (name, t["ne"], ne))
        return t

    def reset(self):
        """Empty the KV cache: cache[l] = (keys, values), each a list per kv head of
        per-position head vectors."""
        self.pos = 0
        self.cache = [([[] for _ in range(self.n_head_kv)],
                       [[] for _ in range(self.n_head_kv)])
                      for _ in range(self.n_layer)]

    def _rope(self, vec, pos, inv_freq, mscale):
        # Pair i: elements 2i, 2i+1 (llama's GGUF layout) or i, i + rope_dim/2 (NeoX);
        # features past rope_dim pass unchanged.
        out = list(vec)
        half = self.rope_dim // 2
        for i, f in enumerate(inv_freq):
            theta = pos * f
            c, s = math.cos(theta) * mscale, math.sin(theta) * mscale
            a, b = (i, i + half) if self.traits.get("neox") else (2 * i, 2 * i + 1)
            out[a] = vec[a] * c - vec[b] * s
            out[b] = vec[a] * s + vec[b] * c
        return out

    def step(self, token):
        """Feed one token at the next position; returns that position's logits."""
        if not 0 <= token < self.n_vocab:
            raise RefError("token %d out of range [0, %d)" % (token, self.n_vocab))
        pos = self.pos
        hd = self.head_dim
        group = self.n_head // self.n_head_kv
        scale = 1.0 / math.sqrt(hd)
        act = _gelu if self.traits.get("gelu") else _silu
        x = [v * self.embed_scale for v in self.token_embd[token]]
        for l, (layer, (k_cache, v_cache)) in enumerate(zip(self.layers, self.cache)):
            window = self.windows[l]
            local = window and "global_every" in self.traits
            inv_freq = self.local_inv_freq if local else self.inv_freq
            mscale = 1.0 if local else self.mscale
            a = _rmsnorm(x, layer["attn_norm"], self.eps)
            q = _matvec(layer["wq"], a)
            k = _matvec(layer["wk"], a)
            v = _matvec(layer["wv"], a)
            if "bq" in layer:
                q = [x_ + b_ for x_, b_ in zip(q, layer["bq"])]
                k = [x_ + b_ for x_, b_ in zip(k, layer["bk"])]
                v = [x_ + b_ for x_, b_ in zip(v, layer["bv"])]
            heads_q = [q[h * hd:(h + 1) * hd] for h in range(self.n_head)]
            heads_k = [k[g * hd:(g + 1) * hd] for g in range(self.n_head_kv)]
            if "q_norm" in layer:
                heads_q = [_rmsnorm(h, layer["q_norm"], self.eps) for h in heads_q]
                heads_k = [_rmsnorm(h, layer["k_norm"], self.eps) for h in heads_k]
            for g in range(self.n_head_kv):
                k_cache[g].append(self._rope(heads_k[g], pos, inv_freq, mscale))
                v_cache[g].append(v[g * hd:(g + 1) * hd])
            first = max(0, pos + 1 - window) if window else 0
            attn = []
            for h in range(self.n_head):
                g = h // group
                qh = self._rope(heads_q[h], pos, inv_freq, mscale)
                scores = [_dot(qh, kp) * scale for kp in k_cache[g][first:]]
                top = max(scores)
                weights = [math.exp(s - top) for s in scores]
                total = sum(weights)
                o = [0.0] * hd
                for w, vp in zip(weights, v_cache[g][first:]):
                    w /= total
                    o = [oi + w * vi for oi, vi in zip(o, vp)]
                attn.extend(o)
            y = _matvec(layer["wo"], attn)
            if "post_attn" in layer:
                y = _rmsnorm(y, layer["post_attn"], self.eps)
            x = [xi + yi for xi, yi in zip(x, y)]
            f = _rmsnorm(x, layer["ffn_norm"], self.eps)
            gate = _matvec(layer["gate"], f)
            up = _matvec(layer["up"], f)
            hidden = [act(gi) * ui for gi, ui in zip(gate, up)]
            y = _matvec(layer["down"], hidden)
            if "post_ffn" in layer:
                y = _rmsnorm(y, layer["post_ffn"], self.eps)
            x = [xi + yi for xi, yi in zip(x, y)]
        self.pos += 1
        return _matvec(self.output, _rmsnorm(x, self.output_norm, self.eps))

    def shift(self, keep, drop):
        """Context shift as llama.cpp's --keep does it: the cached positions
        keep..keep+drop-1 removed, the later keys turned back by drop positions
        (no mscale: they carry it already)."""
        for l, (k_cache, v_cache) in enumerate(self.cache):
            local = self.windows[l] and "global_every" in self.traits
            inv_freq = self.local_inv_freq if local else self.inv_freq
            for g in range(self.n_head_kv):
                del k_cache[g][keep:keep + drop]
                del v_cache[g][keep:keep + drop]
                k_cache[g][keep:] = [self._rope(k, -drop, inv_freq, 1.0) for k in k_cache[g][keep:]]
        self.pos -= drop

    def logits(self, tokens):
        """Logits at every position of tokens, from an empty cache."""
        self.reset()
        return [self.step(t) for t in tokens]

    def greedy(self, tokens, n):
        """Append the argmax n times. Returns (ids, rows), rows[i] = logits that chose ids[i]."""
        if not tokens:
            raise RefError("greedy decoding needs at least one prompt token")
        return self.decode(self.logits(tokens)[-1], n)

    def decode(self, row, n):
        """greedy() continuing from the current cache, whose last logits are row."""
        ids, rows = [], []
        for i in range(n):
            ids.append(_argmax(row))
            rows.append(row)
            if i + 1 < n:
                row = self.step(ids[-1])
        return ids, rows


# ---------------------------------------------------------------------------
# Files

_NPY_TYPES = {"<f4": "f", "<i4": "i"}


def read_npy(path):
    """Read a little-endian float32 or int32 .npy file (C order).

    Returns (shape tuple, flat list); int32 values come back as ints."""
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:6] != b"\x93NUMPY":
        raise RefError("%s: not a .npy file" % path)
    major = buf[6]
    if major == 1:
        (header_len,), start = struct.unpack_from("<H", buf, 8), 10
    elif major in (2, 3):
        (header_len,), start = struct.unpack_from("<I", buf, 8), 12
    else:
        raise RefError("%s: unsupported .npy version %d" % (path, major))
    header = ast.literal_eval(buf[start:start + header_len].decode("latin-1"))
    descr = header.get("descr")
    if descr not in _NPY_TYPES:
        raise RefError("%s: dtype %r is not <f4 or <i4" % (path, descr))
    if header.get("fortran_order"):
        raise RefError("%s: fortran_order arrays are not supported" % path)
    shape = tuple(header["shape"])
    count = 1
    for dim in shape:
        count *= dim
    data_start = start + header_len
    if len(buf) - data_start != 4 * count:
        raise RefError("%s: %d data bytes for shape %s" % (path, len(buf) - data_start, shape))
    values = struct.unpack_from("<%d%s" % (count, _NPY_TYPES[descr]), buf, data_start)
    return shape, list(values)


def write_f32(path, rows):
    """Write rows of floats as raw little-endian float32, row-major."""
    with open(path, "wb") as f:
        for row in rows:
            f.write(struct.pack("<%df" % len(row), *row))


def read_f32(path, width):
    """Read a raw little-endian float32 file as rows of width floats."""
    with open(path, "rb") as f:
        buf = f.read()
    if width <= 0 or len(buf) % (4 * width):
        raise RefError("%s: %d bytes is not a whole number of %d-float rows"
                       % (path, len(buf), width))
    values = struct.unpack("<%df" % (len(buf) // 4), buf)
    return [list(values[i:i + width]) for i in range(0, len(values), width)]


def max_abs_diff(a_rows, b_rows):
    """(largest |a - b|, row, col) over two equally shaped row lists; NaN counts as inf."""
    if len(a_rows) != len(b_rows):
        raise RefError("%d rows vs %d rows" % (len(a_rows), len(b_rows)))
    worst, where = -1.0, (0, 0)
    for r, (ra, rb) in enumerate(zip(a_rows, b_rows)):
        if len(ra) != len(rb):
            raise RefError("row %d: %d values vs %d" % (r, len(ra), len(rb)))
        for c, (x, y) in enumerate(zip(ra, rb)):
            d = abs(x - y)
            if d != d:
                d = math.inf
            if d > worst:
                worst, where = d, (r, c)
    return max(worst, 0.0), where[0], where[1]


# ---------------------------------------------------------------------------
# Command line

def _parse_tokens(text):
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise RefError("--tokens must be a comma list of integers, got %r" % text)


def _cmd_logits(args):
    model = LlamaRef(args.model)
    tokens = _parse_tokens(args.tokens)
    if not tokens:
        raise RefError("no tokens given")
    rows = model.logits(tokens)
    ids = []
    if args.greedy > 0:
        ids, chosen = model.decode(rows[-1], args.greedy)
        # chosen[0] is the last prompt row, already in rows.
        rows.extend(chosen[1:])
    write_f32(args.out, rows)
    if ids:
        print(",".join(str(i) for i in ids))
    return 0


def _cmd_compare(args):
    a = read_f32(args.a, args.width)
    b = read_f32(args.b, args.width)
    diff, row, col = max_abs_diff(a, b)
    print("max abs diff %.6g at row %d col %d (%d rows)" % (diff, row, col, len(a)))
    return 1 if diff > args.atol else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("logits", help="reference logits for a token list")
    p.add_argument("model")
    p.add_argument("--tokens", required=True, help="comma-separated token ids")
    p.add_argument("--greedy", type=int, default=0, metavar="N",
                   help="also decode N tokens greedily")
    p.add_argument("--out", required=True, help="raw float32 logits rows")
    p.set_defaults(func=_cmd_logits)

    p = sub.add_parser("compare", help="max abs difference of two float32 files")
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--width", type=int, required=True, help="floats per row (n_vocab)")
    p.add_argument("--atol", type=float, default=1e-4)
    p.set_defaults(func=_cmd_compare)

    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (RefError, gguf_tool.GGUFError, OSError) as e:
        print("llama_ref: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
