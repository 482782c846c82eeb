#!/usr/bin/env python3
"""Writes the scripted models of the TorchScript tests into OUT_DIR:

  tiny_cnn.pt      our tiny CNN: input [b, 3, 16, 16] -> [b, 10]
  tiny_bn.pt       the same with a BatchNorm1d on the pooled features (raises at micro_batch 1)
  resnet18.pt      torchvision's ResNet-18 as shipped (BatchNorm), 10 classes: input [b, 3, 32, 32]
                   (needs python3-torchvision; skipped with a message without it)
  token_encoder.pt a torch.nn.TransformerEncoder over token ids with a key-padding mask and
                   dropout 0.1, predicting a token per position: forward(tokens [b, 32] int64,
                   pad_mask [b, 32] bool) -> [b, 32, 1000]
                   (gaccum-tune flags: --input tokens:1000:32 --input pad-mask:32 --target tokens:1000)

Usage: make-torchscript-fixture.py OUT_DIR
Needs PyTorch (Debian's python3-torch: /usr/bin/python3). The benchmarks' larger models
(ResNet-18 with GroupNorm) are written by bench/ddp_peer.py write-model.
"""
import os
import sys

import torch
import torch.nn as nn


class TinyCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(x.mean(dim=(2, 3)))


class TinyBn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm1d(8)
        self.fc = nn.Linear(8, 10)

    def forward(self, x):
        x = torch.relu(self.conv(x))
        return self.fc(self.bn(x.mean(dim=(2, 3))))


class TokenEncoder(nn.Module):
    def __init__(self, vocab: int = 1000, d_model: int = 64, heads: int = 4, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=128, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor, pad_mask: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens), src_key_padding_mask=pad_mask))


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.jit.script(TinyCnn()).save(os.path.join(out, "tiny_cnn.pt"))
    print("wrote", os.path.join(out, "tiny_cnn.pt"))
    torch.manual_seed(0)
    torch.jit.script(TinyBn()).save(os.path.join(out, "tiny_bn.pt"))
    print("wrote", os.path.join(out, "tiny_bn.pt"))
    torch.manual_seed(0)
    torch.jit.script(TokenEncoder()).save(os.path.join(out, "token_encoder.pt"))
    print("wrote", os.path.join(out, "token_encoder.pt"))
    try:
        import torchvision
    except ImportError:
        print("python3-torchvision not installed: resnet18.pt skipped (the tests that need it say so)")
        return
    torch.manual_seed(0)
    torch.jit.script(torchvision.models.resnet18(num_classes=10)).save(os.path.join(out, "resnet18.pt"))
    print("wrote", os.path.join(out, "resnet18.pt"))


if __name__ == "__main__":
    main()
