#!/usr/bin/env python3
"""Writes the seed corpus for tokenizer-fuzzer into DIR.

  make_vocab_seeds.py DIR VOCAB_SEGMENT_TOOL

Each seed is a fuzzer input: a vocab segment written by the compiler's encoder
(test/runtime/vocab_segment_tool, built from compiler/pack/VocabSegment.cpp),
optionally followed by text for the fuzzer to tokenize. The vocabularies are
model A's (SentencePiece-style), gguf_tool's synthetic llama and GPT-2 vocabs,
tokenizer_test.py's GPT-2 vocab with duplicate tokens and merges, and variants
without byte pieces or with other flags, so every encoder path starts covered.
A few malformed segments cover the first rejections. Standard library only.
"""
import json
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
sys.path.insert(0, os.path.join(ROOT, "test", "runtime"))
import dump_vocab  # noqa: E402
import gguf_tool  # noqa: E402
import tokenizer_test  # noqa: E402

MODEL_A = os.path.join(ROOT, "test", "data", "tiny-llama-A", "tiny-llama-A-f32.gguf")

TEXTS = [
    b"",
    b"Hello world, it's 12 o'clock.\nThe  end  ",
    "caf\u00e9 na\u00efve \u6771\u4eac \U0001f642 \u2581x".encode() + b" \xff\x80\xe2\x96",
]


def vocabs():
    """(name, vocab in dump_vocab.py's JSON shape)."""
    _, md, _ = gguf_tool.read_gguf(MODEL_A, load_data=False)
    model_a = dump_vocab.vocab_from_metadata(md)
    yield "model-a", model_a
    # Only the first 40 tokens: most bytes have no <0xXX> piece, so unk is used.
    yield "model-a-40", dict(model_a, tokens=model_a["tokens"][:40], scores=model_a["scores"][:40],
                             types=model_a["types"][:40], add_eos=True)
    yield "model-a-no-unk-no-prefix", dict(model_a, unk=-1, add_space_prefix=False)

    small = dict(n_embd=32, n_layer=1, n_head=2, n_head_kv=1, n_ff=32, n_ctx=8)
    md, _ = gguf_tool.random_llama(n_vocab=300, **small)
    yield "llama-synthetic", dump_vocab.vocab_from_metadata(md)
    md, _ = gguf_tool.random_llama(n_vocab=392, vocab_model="gpt2", **small)
    gpt2 = dump_vocab.vocab_from_metadata(md)
    yield "gpt2-synthetic", gpt2
    # The byte pieces removed: ids fall back to characters, then to unk.
    yield "gpt2-no-bytes", dict(gpt2, tokens=gpt2["tokens"][200:], types=gpt2["types"][200:],
                                bos=gpt2["bos"] - 200, eos=gpt2["eos"] - 200, unk=0,
                                add_bos=True, add_eos=True)
    yield "gpt2-duplicates", tokenizer_test.gpt2_vocab(True)[0]


def malformed(segment):
    yield "truncated", segment[:len(segment) // 2]
    yield "header-only", segment[:48]
    yield "bad-magic", b"KVOX" + segment[4:]
    yield "bad-version", segment[:4] + struct.pack("<I", 2) + segment[8:]
    # Token ids in the wrong order: the binary search would be misled.
    bad = bytearray(segment)
    n_tokens = struct.unpack_from("<I", bad, 8)[0]
    sorted_at = 48 + 4 * (n_tokens + 1) + 8 * n_tokens
    bad[sorted_at:sorted_at + 8] = bad[sorted_at + 4:sorted_at + 8] + bad[sorted_at:sorted_at + 4]
    yield "unsorted", bytes(bad)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: make_vocab_seeds.py DIR VOCAB_SEGMENT_TOOL")
    out, tool = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, vocab in vocabs():
            js, seg = os.path.join(tmp, name + ".json"), os.path.join(tmp, name + ".seg")
            with open(js, "w") as f:
                json.dump(vocab, f)
            subprocess.run([tool, js, seg], check=True)
            with open(seg, "rb") as f:
                segment = f.read()
            for k, text in enumerate(TEXTS):
                with open(os.path.join(out, "%s-text%d.seg" % (name, k)), "wb") as f:
                    f.write(segment + text)
            if name == "gpt2-synthetic":
                for bad_name, data in malformed(segment):
                    with open(os.path.join(out, bad_name + ".seg"), "wb") as f:
                        f.write(data)


if __name__ == "__main__":
    main()
