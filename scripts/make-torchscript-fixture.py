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
  causal_lm.pt     a small causal language model (one causally masked TransformerEncoderLayer, no
                   dropout) over token ids, an optional HF-style attention mask (1 = real token):
                   forward(tokens [b, S] int64, mask [b, S] int64 = None) -> [b, S, 200]
                   (flags: --input tokens:200:S --target tokens:200, every sample S real tokens;
                   add --input mask:S for padding)
  lstm_lm.pt       a torch.nn.LSTM language model (2 layers, dropout 0.1 between them inside the
                   LSTM op, no Dropout module) over token ids: tokens [b, S] -> [b, S, 200]
                   (flags: --input tokens:200:S --target tokens:200)
  noise_mlp.pt     an MLP that adds Gaussian noise to its hidden features in training
                   (torch.randn_like in forward, no module says so): input [b, 16] -> [b, 10]
  convnext_sd.pt   torchvision's ConvNeXt (two small stages) with stochastic depth 0.5 (its
                   StochasticDepth draws torch.empty(...).bernoulli_ per sample): input
                   [b, 3, 32, 32] -> [b, 10] (needs python3-torchvision)
  efficientnet_b0.pt torchvision's EfficientNet-B0 as shipped, 10 classes (BatchNorm on 1x1 maps at
                   32x32 inputs: gradient terms of 1e11 that cancel; stochastic depth, dropout):
                   input [b, 3, 32, 32] -> [b, 10] (needs python3-torchvision)
  swin_sd.pt       torchvision's Swin Transformer (two small stages, windows of 2x2) with stochastic
                   depth 0.2: int64 relative_position_index buffers that index a table in forward:
                   input [b, 3, 32, 32] -> [b, 10] (needs python3-torchvision)
  Written only with --torch2 (by a python whose torch is 2.x: the LibTorch 2.x build's tests):
  sdpa_lm.pt       a causal language model whose attention is F.scaled_dot_product_attention with
                   dropout_p 0.1 in training: tokens [b, S] -> [b, S, 200]
  sdpa_lm_nodrop.pt the same with dropout_p 0.0 (draws nothing)
  Sequences of blocks (run block by block: pipeline stages, zero3 gathering one block at a time):
  seq_mlp.pt       a scripted nn.Sequential of 6 Linear layers, each but the last followed by a GELU:
                   input [b, 16] -> [b, 10] (flags: --input-shape 16); 6 units, 4 blocks
  blocks_lm.pt     a scripted language model: an embedding, a ModuleList of 4 pre-norm MLP blocks
                   looped in forward(), a head: tokens [b, S] -> [b, S, 200]
                   (flags: --input tokens:200:S --target tokens:200); 6 units, 4 blocks
  blocks_lm_traced.pt the same model traced (torch.jit.trace) at S = 16
  seq_dropout.pt   seq_mlp with a Dropout(0.1) after each GELU (a pipeline refuses it: its masks)
  Hostile models (the profiler's and runner's failure paths, tests/harden.cmake), input [b, 4] -> [b, 10]:
  nan_loss.pt      its output is NaN, so is the loss
  huge_alloc.pt    asks for a 4 TiB tensor in forward (out of memory on any host)
  hang.pt          its forward never returns (a loop that does not end)
  hang_in_ranks.pt returns from its first 4 forwards in a process, then never returns: the
                   profile's own memory sweep and gradient norms finish, its rank processes hang

Usage: make-torchscript-fixture.py [--torch2] OUT_DIR
Needs PyTorch (Debian's python3-torch: /usr/bin/python3). The benchmarks' larger models
(ResNet-18 with GroupNorm) are written by bench/ddp_peer.py write-model.
"""
import os
import sys
from typing import Optional

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


class CausalLm(nn.Module):
    def __init__(self, vocab: int = 200, d_model: int = 32, heads: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model, padding_idx=0)
        self.block = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor, mask: Optional[torch.Tensor] = None) -> torch.Tensor:
        s = tokens.size(1)
        causal = torch.triu(torch.full((s, s), float("-inf"), device=tokens.device), diagonal=1)
        padding = None if mask is None else mask == 0
        return self.head(self.block(self.embed(tokens), src_mask=causal, src_key_padding_mask=padding))


def seq_mlp(dropout: float = 0.0) -> nn.Sequential:
    layers = []
    for w in [16, 64, 64, 64, 64]:
        layers += [nn.Linear(w, 64), nn.GELU()] + ([nn.Dropout(dropout)] if dropout > 0 else [])
    return nn.Sequential(*layers, nn.Linear(64, 10))


class MlpBlock(nn.Module):
    def __init__(self, d: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class Head(nn.Module):
    def __init__(self, d: int, vocab: int):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.proj = nn.Linear(d, vocab)

    def forward(self, x):
        return self.proj(self.norm(x))


class BlocksLm(nn.Module):
    def __init__(self, vocab: int = 200, d: int = 64, layers: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([MlpBlock(d) for _ in range(layers)])
        self.head = Head(d, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class NanLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        return self.fc(x) * float("nan")


class HugeAlloc(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 10)

    def forward(self, x):
        big = torch.empty([1 << 40], dtype=torch.float32)  # 4 TiB
        return self.fc(x) + big[:1].zero_().sum()


class Hang(nn.Module):
    calls: int

    def __init__(self, returns: int):
        super().__init__()
        self.fc = nn.Linear(4, 10)
        self.calls = 0
        self.returns = returns

    def forward(self, x):
        self.calls += 1
        if self.calls > self.returns:
            i = 0
            while i >= 0:  # int64: does not end in this machine's lifetime
                i += 1
        return self.fc(x)


class LstmLm(torch.nn.Module):
    def __init__(self, vocab: int = 200, d: int = 32, hidden: int = 64):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, hidden, num_layers=2, batch_first=True, dropout=0.1)
        self.head = torch.nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.embed(tokens))
        return self.head(h)


class NoiseMlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.fc1(x))
        if self.training:
            h = h + 0.1 * torch.randn_like(h)
        return self.fc2(h)


class SdpaLm(nn.Module):
    """Attention through F.scaled_dot_product_attention (torch >= 2.0), dropout only in training."""

    def __init__(self, dropout_p: float, vocab: int = 200, d: int = 32, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.dropout_p = dropout_p
        self.embed = nn.Embedding(vocab, d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.head = nn.Linear(d, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        p = self.dropout_p if self.training else 0.0
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=p, is_causal=True)
        return self.head(x + self.proj(y.transpose(1, 2).reshape(b, s, d)))


class SdpaLmDeterministic(SdpaLm):
    def __init__(self):
        super().__init__(0.0)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.0, is_causal=True)
        return self.head(x + self.proj(y.transpose(1, 2).reshape(b, s, d)))


def write_torch2(out):
    if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
        print(f"torch {torch.__version__} has no scaled_dot_product_attention: sdpa fixtures skipped")
        return
    for name, model in [("sdpa_lm.pt", SdpaLm(0.1)), ("sdpa_lm_nodrop.pt", SdpaLmDeterministic())]:
        torch.manual_seed(0)
        torch.jit.script(model).save(os.path.join(out, name))
        print("wrote", os.path.join(out, name))


def main():
    if sys.argv[1] == "--torch2":
        os.makedirs(sys.argv[2], exist_ok=True)
        write_torch2(sys.argv[2])
        return
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
    for name, model in [("seq_mlp.pt", seq_mlp()), ("blocks_lm.pt", BlocksLm()), ("seq_dropout.pt", seq_mlp(0.1))]:
        torch.manual_seed(0)
        torch.jit.script(model).save(os.path.join(out, name))
        print("wrote", os.path.join(out, name))
    torch.manual_seed(0)
    traced = torch.jit.trace(BlocksLm(), torch.randint(1, 200, (2, 16)))
    traced.save(os.path.join(out, "blocks_lm_traced.pt"))
    print("wrote", os.path.join(out, "blocks_lm_traced.pt"))
    for name, model in [("causal_lm.pt", CausalLm()), ("lstm_lm.pt", LstmLm()), ("noise_mlp.pt", NoiseMlp()),
                        ("nan_loss.pt", NanLoss()), ("huge_alloc.pt", HugeAlloc()),
                        ("hang.pt", Hang(0)), ("hang_in_ranks.pt", Hang(4))]:
        torch.manual_seed(0)
        torch.jit.script(model).save(os.path.join(out, name))
        print("wrote", os.path.join(out, name))
    try:
        import torchvision
    except ImportError:
        print("python3-torchvision not installed: resnet18.pt skipped (the tests that need it say so)")
        return
    torch.manual_seed(0)
    torch.jit.script(torchvision.models.resnet18(num_classes=10)).save(os.path.join(out, "resnet18.pt"))
    print("wrote", os.path.join(out, "resnet18.pt"))
    from torchvision.models.convnext import ConvNeXt, CNBlockConfig
    torch.manual_seed(0)
    convnext = ConvNeXt([CNBlockConfig(16, 32, 1), CNBlockConfig(32, None, 1)], stochastic_depth_prob=0.5, num_classes=10)
    torch.jit.script(convnext).save(os.path.join(out, "convnext_sd.pt"))
    print("wrote", os.path.join(out, "convnext_sd.pt"))
    torch.manual_seed(0)
    torch.jit.script(torchvision.models.efficientnet_b0(num_classes=10)).save(os.path.join(out, "efficientnet_b0.pt"))
    print("wrote", os.path.join(out, "efficientnet_b0.pt"))
    from torchvision.models.swin_transformer import SwinTransformer
    torch.manual_seed(0)
    swin = SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[1, 1], num_heads=[1, 2], window_size=[2, 2],
                           stochastic_depth_prob=0.2, num_classes=10)
    torch.jit.script(swin).save(os.path.join(out, "swin_sd.pt"))
    print("wrote", os.path.join(out, "swin_sd.pt"))


if __name__ == "__main__":
    main()
