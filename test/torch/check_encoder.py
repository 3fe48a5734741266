#!/usr/bin/python3
"""A small BERT encoder written with torch.nn (embeddings, self-attention
with matmul and softmax, GELU feed-forward, post-LayerNorm residuals, a
masked-LM head tied to the word embeddings) exported by raf_torch and run
by raf-run.

    /usr/bin/python3 test/torch/check_encoder.py [--bin BUILD_DIR]

2 layers, 2 heads, width 32, vocabulary 50, sequences of 8 in batches of 2.
Checked to 1e-4 against torch in f64, in eval mode (dropout off): the
logits; the CrossEntropyLoss and every gradient (raf-opt --autodiff). In
train mode with dropout 0.1 the export must carry the dropout key state
(%dropout.key, incremented by an {updates} result) and run; its loss is
not compared (raf's dropout masks are not torch's).
"""
import copy
import math
import os
import re

import torchcheck as tc
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import raf_torch

V, D, H, L, T, B = 50, 32, 2, 2, 8, 2


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.query = nn.Linear(D, D)
        self.key = nn.Linear(D, D)
        self.value = nn.Linear(D, D)
        self.attn_out = nn.Linear(D, D)
        self.ln1 = nn.LayerNorm(D, eps=1e-12)
        self.ffn_in = nn.Linear(D, 4 * D)
        self.ffn_out = nn.Linear(4 * D, D)
        self.ln2 = nn.LayerNorm(D, eps=1e-12)
        self.drop = nn.Dropout(0.1)

    def heads(self, t):
        b, s, _ = t.shape
        return t.view(b, s, H, D // H).permute(0, 2, 1, 3)

    def forward(self, h):
        b, s, _ = h.size()
        q, k, v = (self.heads(f(h)) for f in (self.query, self.key,
                                              self.value))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(D // H)
        att = self.drop(F.softmax(scores, dim=-1))
        ctx = torch.matmul(att, v).transpose(1, 2).contiguous().view(b, s, D)
        h = self.ln1(h + self.drop(self.attn_out(ctx)))
        f = self.ffn_out(F.gelu(self.ffn_in(h)))
        return self.ln2(h + self.drop(f))


class Bert(nn.Module):
    def __init__(self):
        super().__init__()
        self.word = nn.Embedding(V, D)
        self.position = nn.Embedding(T, D)
        self.ln = nn.LayerNorm(D, eps=1e-12)
        self.layers = nn.ModuleList([Layer() for _ in range(L)])
        self.head_bias = nn.Parameter(torch.zeros(V))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        h = self.ln(self.word(ids) + self.position(pos))
        for layer in self.layers:
            h = layer(h)
        return F.linear(h, self.word.weight, self.head_bias)


def loss_fn(logits, labels):
    return F.cross_entropy(logits.reshape(-1, V), labels.reshape(-1))


def main():
    torch.manual_seed(0)
    m = Bert()
    with torch.no_grad():  # no param at a value that hides a gradient term
        for p in m.parameters():
            p.add_(0.05 * torch.randn(p.shape))
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, V, (B, T), generator=g)
    labels = torch.randint(0, V, (B, T), generator=g)
    b, work = tc.bindir(), tc.scratch("encoder")
    ok = True

    m.eval()
    m64 = copy.deepcopy(m).double()
    prefix = os.path.join(work, "logits")
    raf_torch.export(m, (ids,), prefix, name="bert")
    got = tc.run(b, prefix + ".raf", "bert", prefix + ".safetensors",
                 {"ids": ids.numpy()}, 1, work, "logits")
    with torch.no_grad():
        want = m64(ids).numpy()
    print("eval mode, logits:")
    ok &= tc.close("logits", got[0], want)

    prefix = os.path.join(work, "loss")
    raf_torch.export(m, (ids,), prefix, name="bert", loss=loss_fn,
                     target=labels)
    tc.autodiff(b, prefix + ".raf", prefix + ".grad.raf")
    names = [n for n, _ in m.named_parameters()]
    got = tc.run(b, prefix + ".grad.raf", "bert_grad",
                 prefix + ".safetensors",
                 {"ids": ids.numpy(), "labels": labels.numpy()},
                 1 + len(names), work, "grad")
    loss = loss_fn(m64(ids), labels)
    loss.backward()
    print("eval mode, loss and gradients against torch.autograd (f64):")
    ok &= tc.close("loss", got[0], loss.item())
    ref = {n: p.grad.numpy() for n, p in m64.named_parameters()}
    largest = max(float(np.abs(g).max()) for g in ref.values())
    for n, p in zip(names, got[1:]):
        ok &= tc.close(n, p, ref[n], zero_scale=largest)

    m.train()
    prefix = os.path.join(work, "train")
    text = raf_torch.export(m, (ids,), prefix, name="bert", loss=loss_fn,
                            target=labels)
    sites = len(re.findall(r"= dropout\(", text))
    print(f"train mode: {sites} dropout sites, key state "
          f"{'present' if 'updates = %dropout.key' in text else 'MISSING'}")
    ok &= sites == 3 * L and "updates = %dropout.key" in text
    got = tc.run(b, prefix + ".raf", "bert", prefix + ".safetensors",
                 {"ids": ids.numpy(), "labels": labels.numpy()}, 2, work,
                 "train")
    ok &= bool(np.isfinite(got[0])) and int(got[1]) == 1
    print(f"  loss {float(got[0]):.4f} (eval mode {loss.item():.4f}), "
          f"next key {int(got[1])}")
    tc.finish("torch/encoder", ok)


if __name__ == "__main__":
    main()
