#!/usr/bin/python3
"""models.py: the composition matrix's four models, as forward .raf models.

    /usr/bin/python3 test/compose/models.py DIR    # writes DIR/MODEL-{mean,sum}.raf

Each model is written twice, with a mean and with a summed loss (the
loss's `reduction`), so that every pipeline of test/compose/compose.py
sees both ways a loss combines over a batch. Tiny sizes, so that a run of
5 steps takes well under a second:

- `mlp`: a two-layer perceptron with dropout (p = 0.2) after the hidden
  ReLU; batches of 8 rows of 16 features, 4 classes.
- `cnn`: a small ResNet: a 3x3 stem convolution, batch_norm, ReLU, one
  residual block (conv, batch_norm, ReLU, conv, batch_norm, add, ReLU),
  max_pool2d 2x2, avg_pool2d over what is left, a linear head; batches of
  8 images 3x8x8; the three batch_norms' running statistics are `{state}`
  arguments updated by the forward (`{updates}` results).
- `gpt2`: GPT-2 as examples/gpt2/gen_gpt2.py writes it (pre-LayerNorm
  blocks, causal attention, tanh GELU, tied head), 2 layers, 2 heads,
  embedding 16, vocab 32, sequences of 8 in batches of 4, with dropout
  (p = 0.1) on the embeddings, the attention output and the MLP output.
- `bert`: a post-LayerNorm BERT encoder (1 layer, 2 heads, embedding 16,
  vocab 32, sequences of 8 in batches of 4) with the masked-LM head (dense,
  GELU, LayerNorm, the decoder tied to the word embedding plus a bias);
  the loss is cross_entropy over every position with `ignore_index =
  -100`, the labels being -100 wherever a token was not masked (data in
  compose.py: one sequence of some batches masks nothing, so at world 4 a
  rank counts no label).

Dropout follows python/raf_torch's export: one key, `%dropout.key: i64[]
{state, init = "zeros"}`, incremented by an `{updates}` result each step;
site i draws with `key + i * 2^32`.
"""
import os
import sys

SIZES = {
    "mlp": dict(B=8),
    "cnn": dict(B=8),
    "gpt2": dict(B=4, T=8),
    "bert": dict(B=4, T=8),
}
GPT = dict(L=2, H=2, C=16, V=32, T=16, B=8)
BERT = dict(L=1, H=2, C=16, V=32, T=16, B=8)


def ty(*dims, dt="f32"):
    return f"{dt}[" + ",".join(str(d) for d in dims) + "]"


class Fn:
    def __init__(self):
        self.args, self.body, self.rets = [], [], []

    def arg(self, name, t, attrs=""):
        self.args.append(f"%{name}: {t}" + (f" {{{attrs}}}" if attrs else ""))

    def param(self, name, t, init):
        self.arg(name, t, f'param, init = "{init}"')

    def state(self, name, t, init="zeros"):
        self.arg(name, t, f'state, init = "{init}"')

    def s(self, text):
        self.body.append("  " + text)

    def text(self, name, header):
        rets = ["f32[]"] + [f"{t} {{updates = %{a}}}" for t, a, _ in self.rets]
        rtype = rets[0] if len(rets) == 1 else "(" + ", ".join(rets) + ")"
        vals = ", ".join(["%loss"] + [f"%{v}" for _, _, v in self.rets])
        return (header + f"func @{name}(" + ",\n    ".join(self.args) +
                f")\n    -> {rtype} {{\n" + "\n".join(self.body) +
                f"\n  return {vals}\n}}\n")


def dropout_key(f, sites):
    """The key state, its update, and one key per site (key + i * 2^32)."""
    f.state("dropout.key", "i64[]")
    f.s("%key.one = constant 1 : i64[]")
    f.s("%dropout.key.next = add(%dropout.key, %key.one)")
    f.rets.append(("i64[]", "dropout.key", "dropout.key.next"))
    keys = ["dropout.key"]
    for i in range(1, sites):
        f.s(f"%key.off{i} = constant {i * 2 ** 32} : i64[]")
        f.s(f"%key{i} = add(%dropout.key, %key.off{i})")
        keys.append(f"key{i}")
    return keys


def mlp(red):
    B, D, Hd, K = 256, 8, 32, 4
    f = Fn()
    f.arg("x", ty(B, D))
    f.arg("labels", ty(B, dt="i64"))
    dims = [D, Hd, Hd, Hd, K]
    for i in range(4):
        f.param(f"w{i + 1}", ty(dims[i], dims[i + 1]),
                "normal(0, 0.25)" if i == 0 else "normal(0, 0.15)")
        f.param(f"b{i + 1}", ty(dims[i + 1]), "zeros")
    (key,) = dropout_key(f, 1)
    f.s("%h1 = matmul(%x, %w1)")
    f.s("%h1.b = add(%h1, %b1)")
    f.s("%a1 = relu(%h1.b)")
    f.s(f"%d1 = dropout(%a1, %{key}) {{p = 0.2}}")
    f.s("%h2 = matmul(%d1, %w2)")
    f.s("%h2.b = add(%h2, %b2)")
    f.s("%a2 = tanh(%h2.b)")
    f.s("%h3 = matmul(%a2, %w3)")
    f.s("%h3.b = add(%h3, %b3)")
    f.s("%a3 = silu(%h3.b)")
    f.s("%h4 = matmul(%a3, %w4)")
    f.s("%logits = add(%h4, %b4)")
    f.s(f'%loss = cross_entropy(%logits, %labels) {{reduction = "{red}"}}')
    return f.text("mlp", f"// mlp, {red} loss: four linear layers, relu, dropout, tanh, "
                  "silu, cross_entropy.\n")


def cnn(red):
    B, C0, S, C, K = 16, 3, 8, 8, 4
    f = Fn()
    f.arg("x", ty(B, C0, S, S))
    f.arg("labels", ty(B, dt="i64"))
    f.param("conv0", ty(C, C0, 3, 3), "normal(0, 0.2)")
    for i in (1, 2):
        f.param(f"conv{i}", ty(C, C, 3, 3), "normal(0, 0.12)")
    for i in range(3):
        f.param(f"bn{i}.weight", ty(C), "ones")
        f.param(f"bn{i}.bias", ty(C), "zeros")
    f.param("fc.weight", ty(C, K), "normal(0, 0.3)")
    f.param("fc.bias", ty(K), "zeros")
    for i in range(3):
        f.state(f"bn{i}.running_mean", ty(C), "zeros")
        f.state(f"bn{i}.running_var", ty(C), "ones")

    def bn(i, src, dst):
        f.s(f"%{dst}, %bn{i}.m, %bn{i}.v = batch_norm(%{src}, %bn{i}.weight, "
            f"%bn{i}.bias, %bn{i}.running_mean, %bn{i}.running_var)")
        f.rets.append((ty(C), f"bn{i}.running_mean", f"bn{i}.m"))
        f.rets.append((ty(C), f"bn{i}.running_var", f"bn{i}.v"))

    f.s("%c0 = conv2d(%x, %conv0) {padding = [1, 1]}")
    bn(0, "c0", "n0")
    f.s("%a0 = relu(%n0)")
    f.s("%c1 = conv2d(%a0, %conv1) {padding = [1, 1]}")
    bn(1, "c1", "n1")
    f.s("%a1 = relu(%n1)")
    f.s("%c2 = conv2d(%a1, %conv2) {padding = [1, 1]}")
    bn(2, "c2", "n2")
    f.s("%r = add(%n2, %a0)")
    f.s("%a2 = relu(%r)")
    f.s("%p = max_pool2d(%a2) {kernel = [2, 2]}")
    f.s(f"%g = avg_pool2d(%p) {{kernel = [{S // 2}, {S // 2}]}}")
    f.s(f"%feat = reshape(%g) {{shape = [{B}, {C}]}}")
    f.s("%o = matmul(%feat, %fc.weight)")
    f.s("%logits = add(%o, %fc.bias)")
    f.s(f'%loss = cross_entropy(%logits, %labels) {{reduction = "{red}"}}')
    return f.text("cnn", f"// cnn, {red} loss: a ResNet-like stem and residual block "
                  "with batch_norm, pooling, a linear head.\n")


def attention(f, b, shape, causal):
    """%b.att.m [B*T, C]: multi-head attention over %b.q, %b.k, %b.v
    [B*T, C], split into H heads of hd and merged back."""
    B, T, H, hd = shape
    for t in "qkv":
        f.s(f"%{b}.{t}.s = reshape(%{b}.{t}) {{shape = [{B}, {T}, {H}, {hd}]}}")
        f.s(f"%{b}.{t}.h = transpose(%{b}.{t}.s) {{perm = [0, 2, 1, 3]}}")
    f.s(f"%{b}.att = scaled_dot_product_attention(%{b}.q.h, %{b}.k.h, %{b}.v.h)"
        + (" {causal}" if causal else ""))
    f.s(f"%{b}.att.t = transpose(%{b}.att) {{perm = [0, 2, 1, 3]}}")
    f.s(f"%{b}.att.m = reshape(%{b}.att.t) {{shape = [{B * T}, {H * hd}]}}")


def gpt2(red):
    L, H, C, V, T, B = (GPT[k] for k in "LHCVTB")
    hd, BT = C // H, B * T
    f = Fn()
    f.arg("x", ty(B, T, dt="i64"))
    f.arg("y", ty(B, T, dt="i64"))
    f.param("wte", ty(V, C), "normal(0, 0.1)")
    f.param("wpe", ty(T, C), "normal(0, 0.05)")
    for l in range(L):
        p = f"h{l}"
        f.param(f"{p}.ln1.g", ty(C), "ones")
        f.param(f"{p}.ln1.b", ty(C), "zeros")
        f.param(f"{p}.qkv.w", ty(C, 3 * C), "normal(0, 0.1)")
        f.param(f"{p}.qkv.b", ty(3 * C), "zeros")
        f.param(f"{p}.proj.w", ty(C, C), "normal(0, 0.05)")
        f.param(f"{p}.proj.b", ty(C), "zeros")
        f.param(f"{p}.ln2.g", ty(C), "ones")
        f.param(f"{p}.ln2.b", ty(C), "zeros")
        f.param(f"{p}.fc.w", ty(C, 4 * C), "normal(0, 0.1)")
        f.param(f"{p}.fc.b", ty(4 * C), "zeros")
        f.param(f"{p}.mlp.w", ty(4 * C, C), "normal(0, 0.05)")
        f.param(f"{p}.mlp.b", ty(C), "zeros")
    f.param("lnf.g", ty(C), "ones")
    f.param("lnf.b", ty(C), "zeros")
    keys = dropout_key(f, 1 + 2 * L)
    f.s("%tok = take(%wte, %x)")
    f.s("%emb = add(%tok, %wpe)")
    f.s(f"%emb.d = dropout(%emb, %{keys[0]}) {{p = 0.1}}")
    f.s(f"%res0 = reshape(%emb.d) {{shape = [{BT}, {C}]}}")
    cur = "res0"
    for l in range(L):
        p, b = f"h{l}", f"b{l}"
        f.s(f"%{b}.ln1 = layer_norm(%{cur}, %{p}.ln1.g, %{p}.ln1.b)")
        f.s(f"%{b}.qkv.mm = matmul(%{b}.ln1, %{p}.qkv.w)")
        f.s(f"%{b}.qkv = add(%{b}.qkv.mm, %{p}.qkv.b)")
        f.s(f"%{b}.q, %{b}.k, %{b}.v = split(%{b}.qkv) {{axis = 1, sections = 3}}")
        attention(f, b, (B, T, H, hd), causal=True)
        f.s(f"%{b}.proj.mm = matmul(%{b}.att.m, %{p}.proj.w)")
        f.s(f"%{b}.proj = add(%{b}.proj.mm, %{p}.proj.b)")
        f.s(f"%{b}.proj.d = dropout(%{b}.proj, %{keys[1 + 2 * l]}) {{p = 0.1}}")
        f.s(f"%{b}.res1 = add(%{cur}, %{b}.proj.d)")
        f.s(f"%{b}.ln2 = layer_norm(%{b}.res1, %{p}.ln2.g, %{p}.ln2.b)")
        f.s(f"%{b}.fc.mm = matmul(%{b}.ln2, %{p}.fc.w)")
        f.s(f"%{b}.fc = add(%{b}.fc.mm, %{p}.fc.b)")
        f.s(f'%{b}.gelu = gelu(%{b}.fc) {{approximate = "tanh"}}')
        f.s(f"%{b}.mlp.mm = matmul(%{b}.gelu, %{p}.mlp.w)")
        f.s(f"%{b}.mlp = add(%{b}.mlp.mm, %{p}.mlp.b)")
        f.s(f"%{b}.mlp.d = dropout(%{b}.mlp, %{keys[2 + 2 * l]}) {{p = 0.1}}")
        f.s(f"%{b}.res2 = add(%{b}.res1, %{b}.mlp.d)")
        cur = f"{b}.res2"
    f.s(f"%lnf = layer_norm(%{cur}, %lnf.g, %lnf.b)")
    f.s("%logits = matmul(%lnf, %wte) {transpose_b}")
    f.s(f"%targets = reshape(%y) {{shape = [{BT}]}}")
    f.s(f'%loss = cross_entropy(%logits, %targets) {{reduction = "{red}"}}')
    return f.text("gpt2", f"// gpt2, {red} loss: {L} pre-LayerNorm blocks with "
                  "dropout, causal attention, tied head.\n")


def bert(red):
    L, H, C, V, T, B = (BERT[k] for k in "LHCVTB")
    hd, BT = C // H, B * T
    f = Fn()
    f.arg("x", ty(B, T, dt="i64"))
    f.arg("labels", ty(B, T, dt="i64"))
    f.param("word", ty(V, C), "normal(0, 0.1)")
    f.param("pos", ty(T, C), "normal(0, 0.05)")
    f.param("emb.ln.g", ty(C), "ones")
    f.param("emb.ln.b", ty(C), "zeros")
    for l in range(L):
        p = f"l{l}"
        for n, shape, init in (("q", (C, C), "normal(0, 0.1)"), ("k", (C, C), "normal(0, 0.1)"),
                               ("v", (C, C), "normal(0, 0.1)"), ("o", (C, C), "normal(0, 0.05)")):
            f.param(f"{p}.{n}.w", ty(*shape), init)
            f.param(f"{p}.{n}.b", ty(C), "zeros")
        f.param(f"{p}.ln1.g", ty(C), "ones")
        f.param(f"{p}.ln1.b", ty(C), "zeros")
        f.param(f"{p}.fc.w", ty(C, 4 * C), "normal(0, 0.1)")
        f.param(f"{p}.fc.b", ty(4 * C), "zeros")
        f.param(f"{p}.out.w", ty(4 * C, C), "normal(0, 0.05)")
        f.param(f"{p}.out.b", ty(C), "zeros")
        f.param(f"{p}.ln2.g", ty(C), "ones")
        f.param(f"{p}.ln2.b", ty(C), "zeros")
    f.param("head.w", ty(C, C), "normal(0, 0.1)")
    f.param("head.b", ty(C), "zeros")
    f.param("head.ln.g", ty(C), "ones")
    f.param("head.ln.b", ty(C), "zeros")
    f.param("decoder.b", ty(V), "zeros")
    f.s("%tok = take(%word, %x)")
    f.s("%emb = add(%tok, %pos)")
    f.s(f"%emb.r = reshape(%emb) {{shape = [{BT}, {C}]}}")
    f.s("%h0 = layer_norm(%emb.r, %emb.ln.g, %emb.ln.b)")
    cur = "h0"
    for l in range(L):
        p, b = f"l{l}", f"b{l}"
        for t in "qkv":
            f.s(f"%{b}.{t}.mm = matmul(%{cur}, %{p}.{t}.w)")
            f.s(f"%{b}.{t} = add(%{b}.{t}.mm, %{p}.{t}.b)")
        attention(f, b, (B, T, H, hd), causal=False)
        f.s(f"%{b}.o.mm = matmul(%{b}.att.m, %{p}.o.w)")
        f.s(f"%{b}.o = add(%{b}.o.mm, %{p}.o.b)")
        f.s(f"%{b}.r1 = add(%{cur}, %{b}.o)")
        f.s(f"%{b}.n1 = layer_norm(%{b}.r1, %{p}.ln1.g, %{p}.ln1.b)")
        f.s(f"%{b}.fc.mm = matmul(%{b}.n1, %{p}.fc.w)")
        f.s(f"%{b}.fc = add(%{b}.fc.mm, %{p}.fc.b)")
        f.s(f"%{b}.gelu = gelu(%{b}.fc)")
        f.s(f"%{b}.out.mm = matmul(%{b}.gelu, %{p}.out.w)")
        f.s(f"%{b}.out = add(%{b}.out.mm, %{p}.out.b)")
        f.s(f"%{b}.r2 = add(%{b}.n1, %{b}.out)")
        f.s(f"%{b}.n2 = layer_norm(%{b}.r2, %{p}.ln2.g, %{p}.ln2.b)")
        cur = f"{b}.n2"
    f.s(f"%hd.mm = matmul(%{cur}, %head.w)")
    f.s("%hd = add(%hd.mm, %head.b)")
    f.s("%hd.g = gelu(%hd)")
    f.s("%hd.n = layer_norm(%hd.g, %head.ln.g, %head.ln.b)")
    f.s("%dec = matmul(%hd.n, %word) {transpose_b}")
    f.s("%logits = add(%dec, %decoder.b)")
    f.s(f"%targets = reshape(%labels) {{shape = [{BT}]}}")
    f.s(f'%loss = cross_entropy(%logits, %targets) {{reduction = "{red}", ignore_index = -100}}')
    return f.text("bert", f"// bert, {red} loss: a post-LayerNorm encoder and the "
                  "masked-LM head, cross_entropy with ignore_index.\n")


MODELS = {"mlp": mlp, "cnn": cnn, "gpt2": gpt2, "bert": bert}


def write(out_dir, names=None):
    """Writes out_dir/NAME-{mean,sum}.raf for each model; returns the paths."""
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for name, gen in MODELS.items():
        if names and name not in names:
            continue
        for red in ("mean", "sum"):
            path = os.path.join(out_dir, f"{name}-{red}.raf")
            with open(path, "w") as f:
                f.write(gen(red))
            paths[f"{name}-{red}"] = path
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    for p in write(sys.argv[1]).values():
        print(p)
