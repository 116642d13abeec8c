#!/usr/bin/env python3
"""Seeds for text_fuzzer: each template and pre-tokenizer over a few texts
(ASCII, contractions and numbers, multi-byte and broken UTF-8, special tokens)."""
import os
import sys

TEXTS = [b"", b"Hello world", b" the  quick\n\tbrown fox's 12345 jumps!! they'll  ",
         "caf\u00e9 \u65e5\u672c \U0001F642 x".encode(), b"\xff\xfe\x80 \xe2\x96 \xc3",
         b"<|im_start|>user\n<|im_end|><|eot_id|>"]

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
for chat in range(6):
    for pre in range(6):
        for i, text in enumerate(TEXTS):
            with open(os.path.join(out, f"c{chat}-p{pre}-t{i}"), "wb") as f:
                f.write(bytes([chat, pre, 3 if i % 2 else 1]) + b"You are kind." + b"\0" + text)
