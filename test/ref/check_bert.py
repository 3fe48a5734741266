#!/usr/bin/python3
"""examples/bert's BERT, exported by raf_torch and trained by raf and by
PyTorch side by side.

    /usr/bin/python3 test/ref/check_bert.py --bin BUILD_DIR [--keep DIR]

The model is examples/bert/bert.py's small config (2 layers, 4 heads, 64
wide, FFN 256, vocab 77, position table 64) on sequences of 32 in batches
of 4 (so the export slices the position table), 20 batches of
examples/bert/prepare_data.py's masked GPL-3. Dropout is 0, so both sides
compute the same function. Before export the biases are set to
normal(0, 0.02) and the LayerNorm gains to 1 + normal(0, 0.1) rather than
BERT's zeros and ones, so that no gradient term hides behind a zero or a
one. raf_torch.export writes the .raf and the weights; the weights raf
loads are those of the exported safetensors, and the torch side runs the
same nn.Module on them (torch.nn.utils.stateless.functional_call), so the
decoder tied to the token embedding is one param on both sides.
20 steps of AdamW must give the same losses, and the first step the same
gradients (see refcheck.py). Exits 1 on a mismatch.
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "examples", "bert"))
sys.path.insert(0, os.path.join(ROOT, "python"))
import refcheck  # noqa: E402  (exits when torch is missing)
from refcheck import np, torch  # noqa: E402
import bert  # noqa: E402
import prepare_data  # noqa: E402  (examples/bert's)
import raf_torch  # noqa: E402
from raf_torch import safetensors  # noqa: E402
from torch.nn.utils.stateless import functional_call  # noqa: E402

SEQ, BATCH, BATCHES = 32, 4, 20
ADAMW = {"lr": 3e-3, "beta1": 0.9, "beta2": 0.999, "eps": 1e-6,
         "weight_decay": 0.01}


def perturb(model, gen):
    """Biases normal(0, 0.02), LayerNorm gains 1 + normal(0, 0.1)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.copy_(torch.randn(p.shape, generator=gen) * 0.02)
            elif "norm" in name:
                p.copy_(1 + torch.randn(p.shape, generator=gen) * 0.1)


def main():
    torch.manual_seed(2024)
    model = bert.Bert(**bert.CONFIGS["small"])
    perturb(model, torch.Generator().manual_seed(2024))
    model.train()

    text, chars = prepare_data.gpt2_data.load()
    assert len(chars) + 1 <= model.vocab, len(chars)
    x, y = prepare_data.batches(text, chars, SEQ, BATCH, copies=1,
                                max_batches=BATCHES)
    batches = [(x[i * BATCH:(i + 1) * BATCH], y[i * BATCH:(i + 1) * BATCH])
               for i in range(len(x) // BATCH)]

    with tempfile.TemporaryDirectory(prefix="raf-ref-bert-export-") as d:
        prefix = os.path.join(d, "bert")
        module_text = raf_torch.export(
            model, tuple(torch.from_numpy(b) for b in batches[0]), prefix)
        weights = safetensors.read(prefix + ".safetensors")
    # [(name, f32 array)] in the function's argument order (the exporter
    # writes the safetensors in that order)
    params = [(n, t.numpy()) for n, t in weights.items()]

    def loss_fn(ps, input_ids, labels):
        return functional_call(model, ps, (input_ids, labels))

    # An attention key's bias adds q . b to every score of a query's row,
    # which softmax ignores: its exact gradient is 0, and both sides give
    # round-off (f64: 1e-21, raf's f32: 1e-12). Its error is measured
    # against the scale of the key weight's gradient instead.
    zero = {n: n.replace("key.bias", "key.weight") for n, _ in params
            if n.endswith("attention.key.bias")}
    refcheck.run_check("bert", module_text, "bert", params,
                       ["input_ids", "labels"], batches, loss_fn, ADAMW,
                       grad_scale_of=zero)


if __name__ == "__main__":
    main()
