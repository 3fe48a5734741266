#!/usr/bin/python3
"""A small GPT-2 from examples/gpt2/gen_gpt2.py trained by raf and by PyTorch.

    /usr/bin/python3 test/ref/check_gpt2.py --bin BUILD_DIR [--keep DIR]

2 layers, 2 heads, embedding 32, vocab 80, sequences of 16 in batches of 2,
on 20 batches of examples/gpt2/prepare_data.py's character-level GPL-3. The
torch model below is written from GPT-2's definition, not from the .raf.
The weights follow the init attributes of the .raf for the matrices
(normal(0, 0.02), c_proj normal(0, 0.02 / sqrt(2 * layers))), but biases are
normal(0, 0.02) and LayerNorm gains 1 + normal(0, 0.1) rather than GPT-2's
zeros and ones, so that no gradient term hides behind a zero or a one.
20 steps of AdamW must give the same losses, and the first step the same
gradients (see refcheck.py). Exits 1 on a mismatch.
"""
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "gpt2"))
import refcheck  # noqa: E402  (exits when torch is missing)
from refcheck import np, torch  # noqa: E402
import gen_gpt2  # noqa: E402
import prepare_data  # noqa: E402

F = torch.nn.functional
CFG = {"layers": 2, "heads": 2, "embd": 32, "vocab": 80, "seq": 16,
       "batch": 2}
BATCHES = 20
ADAMW = {"lr": 3e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8,
         "weight_decay": 0.1}


def params_of(text, rng):
    """[(name, f32 array)] for @gpt2's params, in argument order."""
    head = text[text.index("func @gpt2("):text.index(") -> f32[]")]
    out = []
    for m in re.finditer(r'%([\w.]+): f32\[([\d,]*)\] \{param, init = "([^"]*)"\}',
                         head):
        shape = tuple(int(d) for d in m.group(2).split(","))
        init = m.group(3)
        if init == "zeros":
            a = rng.normal(0, 0.02, shape)
        elif init == "ones":
            a = 1 + rng.normal(0, 0.1, shape)
        else:
            std = float(re.fullmatch(r"normal\(0, (.*)\)", init).group(1))
            a = rng.normal(0, std, shape)
        out.append((m.group(1), a.astype(np.float32)))
    return out


def block(p, l, h, mask):
    """Transformer block l of GPT-2 on the residual stream h, in torch."""
    C, H = CFG["embd"], CFG["heads"]
    B, T, _ = h.shape
    hd = C // H
    q = lambda n: p[f"h.{l}.{n}"]  # noqa: E731
    a = F.layer_norm(h, (C,), q("ln_1.weight"), q("ln_1.bias"), eps=1e-5)
    qkv = a @ q("attn.c_attn.weight") + q("attn.c_attn.bias")
    qq, kk, vv = (t.view(B, T, H, hd).transpose(1, 2)
                  for t in qkv.split(C, dim=2))
    att = (qq @ kk.transpose(-2, -1)) / math.sqrt(hd)
    att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
    o = (att @ vv).transpose(1, 2).reshape(B, T, C)
    h = h + o @ q("attn.c_proj.weight") + q("attn.c_proj.bias")
    m = F.layer_norm(h, (C,), q("ln_2.weight"), q("ln_2.bias"), eps=1e-5)
    m = F.gelu(m @ q("mlp.c_fc.weight") + q("mlp.c_fc.bias"),
               approximate="tanh")
    return h + m @ q("mlp.c_proj.weight") + q("mlp.c_proj.bias")


def loss_fn(p, x, y, run_block=None):
    """GPT-2's forward pass and mean cross-entropy, in torch.

    run_block(block, p, l, h, mask) runs each block (default: calls it);
    bench/gpt2_torch.py passes torch.utils.checkpoint's to recompute the
    blocks in the backward pass."""
    L, C = CFG["layers"], CFG["embd"]
    B, T = x.shape
    h = p["wte.weight"][x] + p["wpe.weight"][:T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for l in range(L):
        h = (run_block(block, p, l, h, mask) if run_block
             else block(p, l, h, mask))
    h = F.layer_norm(h, (C,), p["ln_f.weight"], p["ln_f.bias"], eps=1e-5)
    logits = h @ p["wte.weight"].t()
    return F.cross_entropy(logits.reshape(B * T, -1), y.reshape(B * T))


def main():
    text = gen_gpt2.generate(CFG["layers"], CFG["heads"], CFG["embd"],
                             CFG["vocab"], CFG["seq"], CFG["batch"],
                             CFG["seq"])
    rng = np.random.default_rng(2024)
    params = params_of(text, rng)
    corpus, vocab = prepare_data.load()
    assert len(vocab) <= CFG["vocab"], len(vocab)
    x, y = prepare_data.batches(corpus, vocab, CFG["seq"], CFG["batch"],
                                BATCHES)
    B = CFG["batch"]
    batches = [(x[i * B:(i + 1) * B], y[i * B:(i + 1) * B])
               for i in range(len(x) // B)]
    refcheck.run_check("gpt2", text, "gpt2", params, ["x", "y"], batches,
                       loss_fn, ADAMW)


if __name__ == "__main__":
    main()
