#!/usr/bin/env python3
"""Builds a small BERT-style encoder or ViT in PyTorch (random weights, fixed
seed) and exports it to ONNX as users do (Debian's python3-torch, opset 14).

  torch_export.py bert OUT.onnx [--reference DIR]   ids, attention mask, token types -> hidden, pooled
  torch_export.py vit OUT.onnx [--reference DIR]    a 3x32x32 image -> class logits

BERT's sequence length is symbolic ('seq'); the ViT's input is static. With
--reference, the example inputs (BERT's mask pads its last 4 tokens) and
PyTorch's outputs for them go to DIR/<name>.npy.
"""
import argparse
import os
import warnings

import numpy as np
import torch
from torch import nn

D, HEADS, FF, LAYERS = 32, 4, 64, 2


class Bert(nn.Module):
    def __init__(self, vocab=100, max_positions=64):
        super().__init__()
        self.tokens = nn.Embedding(vocab, D)
        self.positions = nn.Embedding(max_positions, D)
        self.types = nn.Embedding(2, D)
        self.norm = nn.LayerNorm(D, eps=1e-12)
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, activation="gelu", batch_first=True)
        # Without nested tensors PyTorch keeps the padded positions, as the
        # exported graph does.
        self.encoder = nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
        self.pooler = nn.Linear(D, D)

    def forward(self, ids, mask, types):
        positions = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.norm(self.tokens(ids) + self.positions(positions) + self.types(types))
        x = self.encoder(x, src_key_padding_mask=mask == 0)
        return x, torch.tanh(self.pooler(x[:, 0]))


class Vit(nn.Module):
    def __init__(self, image=32, patch=8, classes=10):
        super().__init__()
        self.patches = nn.Conv2d(3, D, kernel_size=patch, stride=patch)
        count = (image // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, D))
        self.positions = nn.Parameter(torch.randn(1, count + 1, D))
        layer = nn.TransformerEncoderLayer(D, HEADS, FF, dropout=0.0, activation=nn.GELU(approximate="tanh"),
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS)
        self.norm = nn.LayerNorm(D, eps=1e-6)
        self.head = nn.Linear(D, classes)

    def forward(self, image):
        x = self.patches(image).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        x = self.norm(self.encoder(x))
        return self.head(x[:, 0])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model", choices=["bert", "vit"])
    parser.add_argument("out")
    parser.add_argument("--reference", help="write the example inputs and PyTorch's outputs here")
    args = parser.parse_args()
    torch.manual_seed(0)
    warnings.simplefilter("ignore")
    if args.model == "bert":
        model = Bert().eval()
        ids = torch.randint(0, 100, (1, 16))
        mask, types = torch.ones_like(ids), torch.zeros_like(ids)
        mask[0, 12:] = 0
        types[0, 8:] = 1
        inputs = (ids, mask, types)
        names, outputs = ["input_ids", "attention_mask", "token_type_ids"], ["hidden", "pooled"]
        dynamic = {name: {1: "seq"} for name in names}
    else:
        model = Vit().eval()
        inputs = (torch.randn(1, 3, 32, 32),)
        names, outputs, dynamic = ["pixels"], ["logits"], None
    # Every tensor its own values: the encoder's layers start as copies of
    # one, and norms as ones and zeros, which the exporter would share.
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    torch.onnx.export(model, inputs, args.out, input_names=names, output_names=outputs, dynamic_axes=dynamic,
                      opset_version=14)
    if args.reference:
        os.makedirs(args.reference, exist_ok=True)
        # With gradients on, PyTorch runs the layers as written: its fused
        # inference path would take the tanh GELU for the exact one.
        results = model(*inputs)
        results = results if isinstance(results, tuple) else (results,)
        for name, value in list(zip(names, inputs)) + list(zip(outputs, results)):
            np.save(os.path.join(args.reference, name + ".npy"), value.detach().numpy())


if __name__ == "__main__":
    main()
