#!/usr/bin/env python3
"""Dump the tokenizer vocabulary of a GGUF file as JSON for vocab_segment_tool.

  dump_vocab.py MODEL.gguf OUT.json

Output (one object): model (str), tokens and merges (lists of byte-value lists,
so invalid UTF-8 survives), scores (floats), types (ints), bos/eos/unk (-1 when
absent), add_bos/add_eos/add_space_prefix (bools). Missing keys get the
defaults LlamaImporter uses. Standard library only.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
import gguf_tool  # noqa: E402


def as_bytes(s):
    return list(s.encode("utf-8", "surrogateescape") if isinstance(s, str) else bytes(s))


def vocab_from_metadata(md):
    def get(key, default=None):
        return md[key][1] if key in md else default

    def array(key):
        value = get(key)
        return [] if value is None else value[1]

    tokens = array("tokenizer.ggml.tokens")
    return {
        "model": get("tokenizer.ggml.model", "llama"),
        "tokens": [as_bytes(t) for t in tokens],
        "scores": [float(x) for x in array("tokenizer.ggml.scores")],
        "types": [int(x) for x in array("tokenizer.ggml.token_type")],
        "merges": [as_bytes(m) for m in array("tokenizer.ggml.merges")],
        "bos": int(get("tokenizer.ggml.bos_token_id", -1)),
        "eos": int(get("tokenizer.ggml.eos_token_id", -1)),
        "unk": int(get("tokenizer.ggml.unknown_token_id", -1)),
        "add_bos": bool(get("tokenizer.ggml.add_bos_token", True)),
        "add_eos": bool(get("tokenizer.ggml.add_eos_token", False)),
        "add_space_prefix": bool(get("tokenizer.ggml.add_space_prefix", True)),
    }


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: dump_vocab.py MODEL.gguf OUT.json\n")
        return 2
    _, metadata, _ = gguf_tool.read_gguf(argv[1], load_data=False)
    with open(argv[2], "w") as f:
        json.dump(vocab_from_metadata(metadata), f, separators=(",", ":"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
