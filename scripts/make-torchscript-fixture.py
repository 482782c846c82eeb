#!/usr/bin/env python3
"""Writes a tiny scripted CNN (input [b, 3, 16, 16] -> [b, 10]) for the TorchScript tests.

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


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    torch.jit.script(TinyCnn()).save(os.path.join(out, "tiny_cnn.pt"))
    print("wrote", os.path.join(out, "tiny_cnn.pt"))


if __name__ == "__main__":
    main()
