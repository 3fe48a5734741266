#!/usr/bin/python3
"""BERT with a masked-language-model head, in plain PyTorch, for export to
.raf with raf_torch (python/raf_torch) and as the reference that
test/ref/check_bert.py trains beside raf.

    from bert import Bert, CONFIGS
    model = Bert(**CONFIGS["small"])
    loss = model(input_ids, labels)     # i64 [B, T] each; labels -100 = unmasked

The model is BERT as Devlin et al. describe it and as Google's and Hugging
Face's BertForMaskedLM compute it:

- embeddings: token plus learned position, then LayerNorm (no token-type
  embedding: every sequence here is one segment, and a type embedding of a
  single type is one more learned row added to every position);
- `layers` post-LayerNorm encoder layers: x = LN(x + attn(x)), then
  x = LN(x + ffn(x)), the FFN `intermediate` wide with the exact (erf)
  GELU; bidirectional self-attention (no mask: every sequence is full
  length), written as matmul + softmax because PyTorch 1.13 has no
  F.scaled_dot_product_attention;
- the MLM head: dense + GELU + LayerNorm, then the decoder, whose weight is
  the token embedding (tied, as in BERT) plus a bias of its own;
- the loss: mean cross-entropy over the masked positions (labels -100
  elsewhere, PyTorch's and raf's ignore_index).

The tied decoder is written as `F.linear(h, word_embeddings.weight, bias)`
in the head rather than as an nn.Linear sharing the Parameter, so the
module has one parameter for both uses and the exporter sees one argument,
whose gradient sums both paths.

Dropout (`dropout`, default 0: the example and the parity check run
without it) is applied where BERT applies it: after the embedding
LayerNorm, to the attention probabilities and after each sub-layer's
output projection. It is a Python-level choice made at
construction, so torch.fx traces no dropout when it is 0.

Weights are initialised as BERT's: normal(0, 0.02) for matrices and
embeddings, zeros for biases, ones for LayerNorm gains.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# BERT-base (Devlin et al.) with the character vocabulary of
# examples/bert/prepare_data.py (76 characters + [MASK]); `seq` is the
# position table's length (BERT's is 512; here the training length).
CONFIGS = {
    "base": dict(vocab=77, seq=128, hidden=768, layers=12, heads=12,
                 intermediate=3072),
    "small": dict(vocab=77, seq=64, hidden=64, layers=2, heads=4,
                  intermediate=256),
}
LN_EPS = 1e-12  # BERT's LayerNorm epsilon


class SelfAttention(nn.Module):
    """Multi-head bidirectional self-attention with its output projection
    (BERT's BertSelfAttention + the dense of BertSelfOutput)."""

    def __init__(self, hidden, heads, dropout):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
        self.heads, self.head_dim, self.dropout = heads, hidden // heads, dropout
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.output = nn.Linear(hidden, hidden)

    def split_heads(self, t, B, T):
        # [B, T, hidden] -> [B, heads, T, head_dim]
        return t.view(B, T, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x):
        # (one dim at a time: torch.fx cannot unpack a traced shape)
        B, T, C = x.shape[0], x.shape[1], x.shape[2]
        q = self.split_heads(self.query(x), B, T)
        k = self.split_heads(self.key(x), B, T)
        v = self.split_heads(self.value(x), B, T)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        probs = F.softmax(scores, dim=-1)
        if self.dropout:
            probs = F.dropout(probs, self.dropout, self.training)
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(B, T, C)
        out = self.output(ctx)
        if self.dropout:
            out = F.dropout(out, self.dropout, self.training)
        return out


class EncoderLayer(nn.Module):
    """One post-LayerNorm transformer encoder layer, as BERT's BertLayer."""

    def __init__(self, hidden, heads, intermediate, dropout):
        super().__init__()
        self.dropout = dropout
        self.attention = SelfAttention(hidden, heads, dropout)
        self.attention_norm = nn.LayerNorm(hidden, eps=LN_EPS)
        self.intermediate = nn.Linear(hidden, intermediate)
        self.output = nn.Linear(intermediate, hidden)
        self.output_norm = nn.LayerNorm(hidden, eps=LN_EPS)

    def forward(self, x):
        x = self.attention_norm(x + self.attention(x))
        h = self.output(F.gelu(self.intermediate(x)))
        if self.dropout:
            h = F.dropout(h, self.dropout, self.training)
        return self.output_norm(x + h)


class Embeddings(nn.Module):
    """Token plus learned position embeddings, then LayerNorm."""

    def __init__(self, vocab, seq, hidden, dropout):
        super().__init__()
        self.dropout = dropout
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(seq, hidden)
        self.norm = nn.LayerNorm(hidden, eps=LN_EPS)

    def forward(self, input_ids):
        T = input_ids.shape[1]
        # The first T rows of the position table: the positions 0..T-1 of
        # every sequence (a slice rather than a lookup of arange(T)).
        pos = self.position_embeddings.weight[:T]
        x = self.norm(self.word_embeddings(input_ids) + pos)
        if self.dropout:
            x = F.dropout(x, self.dropout, self.training)
        return x


class Bert(nn.Module):
    """BERT encoder + masked-LM head; forward(input_ids, labels) -> the
    mean cross-entropy over the positions whose label is not -100."""

    def __init__(self, vocab, seq, hidden, layers, heads, intermediate,
                 dropout=0.0):
        super().__init__()
        self.vocab = vocab
        self.embeddings = Embeddings(vocab, seq, hidden, dropout)
        self.layers = nn.ModuleList(
            EncoderLayer(hidden, heads, intermediate, dropout)
            for _ in range(layers))
        # The MLM head (BERT's BertLMPredictionHead); the decoder's weight
        # is embeddings.word_embeddings.weight.
        self.head_dense = nn.Linear(hidden, hidden)
        self.head_norm = nn.LayerNorm(hidden, eps=LN_EPS)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))
        self.apply(self._init)

    @staticmethod
    def _init(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.bias)
        if isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    def logits(self, input_ids):
        x = self.embeddings(input_ids)
        for layer in self.layers:
            x = layer(x)
        h = self.head_norm(F.gelu(self.head_dense(x)))
        return F.linear(h, self.embeddings.word_embeddings.weight,
                        self.decoder_bias)

    def forward(self, input_ids, labels):
        logits = self.logits(input_ids)
        # ignore_index -100 (the default) leaves out the unmasked positions
        return F.cross_entropy(logits.reshape(-1, self.vocab),
                               labels.reshape(-1))


def count_params(model):
    return sum(p.numel() for p in model.parameters())
