"""export_bert.py ROOT OUT: examples/bert/bert.py's BERT, shrunk (1 layer,
32 wide, 2 heads, FFN 64, 77 tokens, sequences of 16 in batches of 2),
exported by raf_torch in train mode as OUT/bert.raf and its initial weights
OUT/bert.safetensors, with a dataset of 20 such batches of random tokens,
15% of them masked (labels -100 elsewhere): OUT/ids.npy, OUT/labels.npy."""
import os
import sys

import numpy as np
import torch

root, out = sys.argv[1], sys.argv[2]
sys.path[:0] = [os.path.join(root, "python"), os.path.join(root, "examples", "bert")]
import bert  # noqa: E402
import raf_torch  # noqa: E402

SEQ, BATCH, VOCAB = 16, 2, 77
r = np.random.RandomState(0)
ids = r.randint(0, VOCAB - 1, (20 * BATCH, SEQ))
masked = r.rand(*ids.shape) < 0.15
masked[:, 0] = True  # every sequence has a masked position
labels = np.where(masked, ids, -100)
ids = np.where(masked, VOCAB - 1, ids)  # [MASK]
np.save(os.path.join(out, "ids.npy"), ids)
np.save(os.path.join(out, "labels.npy"), labels)
torch.manual_seed(0)
model = bert.Bert(vocab=VOCAB, seq=SEQ, hidden=32, layers=1, heads=2,
                  intermediate=64).train()
raf_torch.export(model, (torch.from_numpy(ids[:BATCH]), torch.from_numpy(labels[:BATCH])),
                 os.path.join(out, "bert"))
