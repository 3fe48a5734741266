"""The mapping of PyTorch calls onto .raf operators: one handler per
module type (call_module), function (call_function) and Tensor method
(call_method). docs/PyTorch.md lists them.

A handler gets the Context (the function being written), the fx node,
the node's (dtype, shape) from ShapeProp (None for non-tensor results),
then the call's arguments with every traced input replaced by its Value (or
by a Python value when it was computed statically). It emits statements and
returns the node's Value; it raises Unsupported, saying why, for a use it
cannot map (the exporter lists them all).
"""
import operator

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import export as ex

FLOATS = ("f32", "f64", "f16", "bf16")


def _arg(args, kwargs, i, name, default=None):
    if len(args) > i:
        return args[i]
    return kwargs.get(name, default)


def _pair(v):
    return list(v) if isinstance(v, (tuple, list)) else [v, v]


def _value(ctx, x, dtype):
    """x as a Value of element type dtype: a cast of a Value of another
    type, a scalar constant for a number, a dense constant for a tensor."""
    if isinstance(x, ex.Value):
        if x.dtype == dtype:
            return x
        return ctx.fn.op("cast", [x], {"dtype": dtype}, dtype, x.shape, "cast")
    if isinstance(x, torch.Tensor):
        t = x.to(_torch_dtype(dtype))
        if t.dim() == 0:
            return ctx.fn.constant(t.item(), dtype)
        return ctx.fn.constant(t, dtype)
    if isinstance(x, (bool, int, float)):
        return ctx.fn.constant(x, dtype)
    raise ex.Unsupported(f"operand {x!r}")


def _torch_dtype(d):
    return {v: k for k, v in ex.DTYPES.items()}[d]


def _axis(a, rank):
    return a + rank if a < 0 else a


def _need(meta):
    if meta is None:
        raise ex.Unsupported("no static shape for the result")
    return meta


# ---- elementwise -------------------------------------------------------


def _unary(op):
    def h(ctx, node, meta, x, *rest, **kw):
        dt, sh = _need(meta)
        return ctx.fn.op(op, [_value(ctx, x, dt)], None, dt, sh, node.name)
    return h


def _binary(op, swap=False):
    def h(ctx, node, meta, a, b, *rest, alpha=None, out=None, **kw):
        if rest or out is not None or kw:
            raise ex.Unsupported("extra arguments")
        if swap:
            a, b = b, a
        dt, sh = _need(meta)
        if alpha is not None and alpha != 1:
            b = ctx.fn.op("mul", [_value(ctx, b, dt), ctx.fn.constant(alpha, dt)],
                          None, dt, getattr(b, "shape", ()), "alpha")
        return ctx.fn.op(op, [_value(ctx, a, dt), _value(ctx, b, dt)], None,
                         dt, sh, node.name)
    return h


def _div(ctx, node, meta, a, b, rounding_mode=None):
    if rounding_mode is not None:
        raise ex.Unsupported(f"rounding_mode={rounding_mode!r}")
    return _binary("div")(ctx, node, meta, a, b)


def _compare(op):
    def h(ctx, node, meta, a, b):
        dt, sh = _need(meta)
        common = a.dtype if isinstance(a, ex.Value) else b.dtype
        return ctx.fn.op(op, [_value(ctx, a, common), _value(ctx, b, common)],
                         None, dt, sh, node.name)
    return h


def _neg(ctx, node, meta, x):
    dt, sh = _need(meta)
    return ctx.fn.op("neg", [x], None, dt, sh, node.name)


def _invert(ctx, node, meta, x):
    dt, sh = _need(meta)
    if x.dtype != "bool":
        raise ex.Unsupported("~ of a non-bool tensor")
    return ctx.fn.op("eq", [x, ctx.fn.constant(False, "bool")], None, dt, sh,
                     node.name)


def _pow(ctx, node, meta, a, b):
    dt, sh = _need(meta)
    if b == 2:
        a = _value(ctx, a, dt)
        return ctx.fn.op("mul", [a, a], None, dt, sh, node.name)
    if b == 0.5:
        return ctx.fn.op("sqrt", [_value(ctx, a, dt)], None, dt, sh, node.name)
    return ctx.fn.op("pow", [_value(ctx, a, dt), _value(ctx, b, dt)], None,
                     dt, sh, node.name)


def _where(ctx, node, meta, cond, a, b):
    dt, sh = _need(meta)
    return ctx.fn.op("where", [_value(ctx, cond, "bool"), _value(ctx, a, dt),
                               _value(ctx, b, dt)], None, dt, sh, node.name)


def _masked_fill(ctx, node, meta, x, mask, value):
    dt, sh = _need(meta)
    return ctx.fn.op("where", [_value(ctx, mask, "bool"), _value(ctx, value, dt),
                               _value(ctx, x, dt)], None, dt, sh, node.name)


def _gelu(ctx, node, meta, x, approximate="none"):
    dt, sh = _need(meta)
    attrs = {"approximate": approximate} if approximate != "none" else None
    return ctx.fn.op("gelu", [x], attrs, dt, sh, node.name)


def _relu_f(ctx, node, meta, x, inplace=False):
    return _unary("relu")(ctx, node, meta, x)


def _cast_to(dtype):
    def h(ctx, node, meta, x, *a, **kw):
        dt, sh = _need(meta)
        return _value(ctx, x, dt)
    return h


def _to(ctx, node, meta, x, *args, **kwargs):
    dt, sh = _need(meta)
    return _value(ctx, x, dt)


def _identity(ctx, node, meta, x, *args, **kwargs):
    return x


# ---- shapes ------------------------------------------------------------


def _reshape_to(ctx, node, meta, x):
    dt, sh = _need(meta)
    if tuple(x.shape) == tuple(sh):
        return x
    return ctx.fn.op("reshape", [x], {"shape": list(sh)}, dt, sh, node.name)


def _reshape(ctx, node, meta, x, *shape, **kw):
    return _reshape_to(ctx, node, meta, x)


def _flatten(ctx, node, meta, x, start_dim=0, end_dim=-1):
    return _reshape_to(ctx, node, meta, x)


def _transpose(ctx, node, meta, x, d0, d1):
    dt, sh = _need(meta)
    r = len(x.shape)
    perm = list(range(r))
    d0, d1 = _axis(d0, r), _axis(d1, r)
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return ctx.fn.op("transpose", [x], {"perm": perm}, dt, sh, node.name)


def _t(ctx, node, meta, x):
    if len(x.shape) < 2:
        return x
    return _transpose(ctx, node, meta, x, 0, 1)


def _permute(ctx, node, meta, x, *dims, **kw):
    dt, sh = _need(meta)
    dims = kw.get("dims", dims)
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    perm = [_axis(d, len(x.shape)) for d in dims]
    return ctx.fn.op("transpose", [x], {"perm": perm}, dt, sh, node.name)


def _expand(ctx, node, meta, x, *sizes):
    dt, sh = _need(meta)
    return ctx.fn.op("broadcast_to", [x], {"shape": list(sh)}, dt, sh,
                     node.name)


def _getattr(ctx, node, meta, x, attr):
    if attr == "shape":
        return torch.Size(x.shape)
    if attr == "dtype":
        return _torch_dtype(x.dtype)
    if attr == "ndim":
        return len(x.shape)
    if attr == "T":
        return _permute(ctx, node, meta, x, *reversed(range(len(x.shape))))
    raise ex.Unsupported(f"attribute {attr}")


def _size(ctx, node, meta, x, dim=None):
    if dim is None:
        return torch.Size(x.shape)
    return x.shape[dim]


def _dim(ctx, node, meta, x):
    return len(x.shape)


def _getitem(ctx, node, meta, x, index):
    if isinstance(x, (tuple, list)):
        return x[index]
    if not isinstance(x, ex.Value):
        raise ex.Unsupported(f"indexing {type(x).__name__}")
    dt, sh = _need(meta)
    if isinstance(index, ex.Value):
        index = (index,)
    if isinstance(index, tuple) and any(isinstance(i, ex.Value) for i in index):
        # one tensor of indices after full slices: take along that axis
        k = [isinstance(i, ex.Value) for i in index].index(True)
        if len(index) != k + 1 or any(i != slice(None) for i in index[:k]):
            raise ex.Unsupported("indexing with a tensor other than "
                                 "x[..full slices.., indices]")
        attrs = {"axis": k} if k else None
        return ctx.fn.op("take", [x, _value(ctx, index[k], index[k].dtype)],
                         attrs, dt, sh, node.name)
    if not isinstance(index, tuple):
        index = (index,)
    if any(i is Ellipsis for i in index):
        k = index.index(Ellipsis)
        fill = len(x.shape) - (len([i for i in index if i is not None]) - 1)
        index = index[:k] + (slice(None),) * fill + index[k + 1:]
    begin, end, strides = [], [], []
    axis = 0
    for i in index:
        if i is None:
            continue
        if isinstance(i, slice):
            size = x.shape[axis]
            b, e, s = i.indices(size)
            begin.append(b)
            end.append(e)
            strides.append(s)
        elif isinstance(i, int):
            i = _axis(i, x.shape[axis])
            begin.append(i)
            end.append(i + 1)
            strides.append(1)
        else:
            raise ex.Unsupported(f"index {i!r}")
        axis += 1
    while axis < len(x.shape):
        begin.append(0)
        end.append(x.shape[axis])
        strides.append(1)
        axis += 1
    sl_shape = [len(range(b, e, s)) for b, e, s in zip(begin, end, strides)]
    y = x
    if tuple(sl_shape) != tuple(x.shape):
        attrs = {"begin": begin, "end": end}
        if any(s != 1 for s in strides):
            attrs["strides"] = strides
        y = ctx.fn.op("slice", [x], attrs, dt, sl_shape, node.name)
    return _reshape_to(ctx, node, meta, y)


def _split(ctx, node, meta, x, split_size, dim=0):
    r = len(x.shape)
    dim = _axis(dim, r)
    n = x.shape[dim]
    if isinstance(split_size, int):
        sizes = [min(split_size, n - i) for i in range(0, n, split_size)]
    else:
        sizes = list(split_size)
    types = []
    for s in sizes:
        sh = list(x.shape)
        sh[dim] = s
        types.append((x.dtype, sh))
    if len(sizes) == 1:
        return (x,)
    return tuple(ctx.fn.op_n("split", [x], {"axis": dim, "sizes": sizes},
                             types, node.name))


def _chunk(ctx, node, meta, x, chunks, dim=0):
    n = x.shape[_axis(dim, len(x.shape))]
    return _split(ctx, node, meta, x, -(-n // chunks), dim)


def _cat(ctx, node, meta, tensors, dim=0):
    dt, sh = _need(meta)
    vals = [_value(ctx, t, dt) for t in tensors]
    return ctx.fn.op("concat", vals, {"axis": _axis(dim, len(sh))}, dt, sh,
                     node.name)


def _unsqueeze(ctx, node, meta, x, dim):
    return _reshape_to(ctx, node, meta, x)


# ---- reductions --------------------------------------------------------


def _reduce(op):
    def h(ctx, node, meta, x, dim=None, keepdim=False, dtype=None, **kw):
        dt, sh = _need(meta)
        attrs = {}
        if dim is not None:
            dims = dim if isinstance(dim, (tuple, list)) else [dim]
            attrs["axes"] = [_axis(d, len(x.shape)) for d in dims]
        if keepdim:
            attrs["keepdims"] = True
        return ctx.fn.op(op, [_value(ctx, x, dt)], attrs, dt, sh, node.name)
    return h


def _softmax(op):
    def h(ctx, node, meta, x, dim=None, *rest, **kw):
        dt, sh = _need(meta)
        if dim is None:
            raise ex.Unsupported("softmax without dim")
        return ctx.fn.op(op, [_value(ctx, x, dt)], {"axis": dim}, dt, sh,
                         node.name)
    return h


def _argmax(ctx, node, meta, x, dim=None, keepdim=False):
    dt, sh = _need(meta)
    if dim is None:
        raise ex.Unsupported("argmax without dim")
    attrs = {"axis": dim}
    if keepdim:
        attrs["keepdims"] = True
    return ctx.fn.op("argmax", [x], attrs, dt, sh, node.name)


# ---- linear algebra ----------------------------------------------------


def _matmul(ctx, node, meta, a, b):
    dt, sh = _need(meta)
    if len(a.shape) < 2 or len(b.shape) < 2:
        raise ex.Unsupported("matmul of a vector (raf's matmul takes rank >= 2)")
    return ctx.fn.op("matmul", [_value(ctx, a, dt), _value(ctx, b, dt)], None,
                     dt, sh, node.name)


def _linear_of(ctx, node, meta, x, w, b):
    dt, sh = _need(meta)
    if len(x.shape) < 2:
        raise ex.Unsupported("linear of a vector")
    mm_shape = tuple(x.shape[:-1]) + (w.shape[0],)
    y = ctx.fn.op("matmul", [x, w], {"transpose_b": True}, dt, mm_shape,
                  node.name + ".mm" if b is not None else node.name)
    if b is None:
        return y
    return ctx.fn.op("add", [y, b], None, dt, sh, node.name)


def _linear_f(ctx, node, meta, x, weight, bias=None):
    return _linear_of(ctx, node, meta, x, weight, bias)


def _linear_m(ctx, node, mod, meta, x):
    b = ctx.tensor_arg(node.target + ".bias") if mod.bias is not None else None
    return _linear_of(ctx, node, meta, x, ctx.tensor_arg(node.target + ".weight"), b)


# ---- normalisation -----------------------------------------------------


def _layer_norm_of(ctx, node, meta, x, shape, w, b, eps):
    dt, sh = _need(meta)
    n = len(shape) if isinstance(shape, (tuple, list)) else 1
    if w is None:
        w = ctx.fn.constant(1.0, dt, tuple(x.shape[-n:]))
    if b is None:
        b = ctx.fn.constant(0.0, dt, tuple(x.shape[-n:]))
    return ctx.fn.op("layer_norm", [x, w, b], {"axis": -n, "eps": float(eps)},
                     dt, sh, node.name)


def _layer_norm_f(ctx, node, meta, x, normalized_shape, weight=None,
                  bias=None, eps=1e-5):
    return _layer_norm_of(ctx, node, meta, x, normalized_shape, weight, bias, eps)


def _layer_norm_m(ctx, node, mod, meta, x):
    w = b = None
    if mod.elementwise_affine:
        w = ctx.tensor_arg(node.target + ".weight")
        b = ctx.tensor_arg(node.target + ".bias")
    return _layer_norm_of(ctx, node, meta, x, mod.normalized_shape, w, b,
                          mod.eps)


def _batch_norm_m(ctx, node, mod, meta, x):
    """In train mode the batch's statistics normalise and the new running
    statistics are results that update the running_mean and running_var
    states (and num_batches_tracked counts the step); in eval mode the
    running statistics normalise."""
    dt, sh = _need(meta)
    c = mod.num_features
    p = node.target
    if mod.training and mod.track_running_stats and mod.momentum is None:
        raise ex.Unsupported("momentum=None (a cumulative moving average) "
                             "has no .raf batch_norm form")
    w = ctx.tensor_arg(p + ".weight") if mod.affine else ctx.fn.constant(1.0, dt, (c,))
    b = ctx.tensor_arg(p + ".bias") if mod.affine else ctx.fn.constant(0.0, dt, (c,))
    if mod.track_running_stats:
        mean = ctx.tensor_arg(p + ".running_mean")
        var = ctx.tensor_arg(p + ".running_var")
    else:
        mean = ctx.fn.constant(0.0, dt, (c,))
        var = ctx.fn.constant(1.0, dt, (c,))
    batch_stats = mod.training or not mod.track_running_stats
    attrs = {"eps": float(mod.eps)}
    if mod.momentum is not None and mod.momentum != 0.1:
        attrs["momentum"] = float(mod.momentum)
    if not batch_stats:
        attrs["training"] = False
    y, new_mean, new_var = ctx.fn.op_n(
        "batch_norm", [x, w, b, mean, var], attrs,
        [(dt, sh), (dt, (c,)), (dt, (c,))],
        [node.name, p + ".new_mean", p + ".new_var"])
    if mod.training and mod.track_running_stats:
        ctx.updates.append((new_mean, mean))
        ctx.updates.append((new_var, var))
        count = ctx.params.get(p + ".num_batches_tracked")
        if count is not None:
            one = ctx.fn.constant(1, count.dtype)
            new_count = ctx.fn.op("add", [count, one], None, count.dtype, (),
                                  p + ".count")
            ctx.updates.append((new_count, count))
    return y


# ---- convolution and pooling -------------------------------------------


def _conv2d_of(ctx, node, meta, x, w, b, stride, padding, dilation, groups):
    dt, sh = _need(meta)
    if isinstance(padding, str):
        raise ex.Unsupported(f"padding={padding!r} (give the numbers)")
    attrs = {}
    for k, v, d in (("stride", stride, 1), ("padding", padding, 0),
                    ("dilation", dilation, 1)):
        v = _pair(v)
        if v != [d, d]:
            attrs[k] = v
    if groups != 1:
        attrs["groups"] = groups
    name = node.name + ".conv" if b is not None else node.name
    if ctx.conv == "matmul" and groups == 1:
        y = _conv2d_as_matmul(ctx, x, w, _pair(stride), _pair(padding),
                              _pair(dilation), dt, sh, name)
    else:
        y = ctx.fn.op("conv2d", [x, w], attrs, dt, sh, name)
    if b is None:
        return y
    bb = ctx.fn.op("reshape", [b], {"shape": [1, sh[1], 1, 1]}, dt,
                   (1, sh[1], 1, 1), node.name + ".bias")
    return ctx.fn.op("add", [y, bb], None, dt, sh, node.name)


def _conv2d_as_matmul(ctx, x, w, stride, padding, dilation, dt, sh, name):
    """conv2d as one matmul (im2col): x zero-padded by concat, each of the
    KH*KW taps a strided slice [N, C, OH*OW], the taps stacked into
    [N, C*KH*KW, OH*OW], times the weight as [O, C*KH*KW]. Every op is one
    autodiff differentiates, and the matmul runs on BLAS."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    oh, ow = sh[2], sh[3]
    fn = ctx.fn
    ph, pw = padding
    if ph:
        z = fn.constant(0.0, dt, (n, c, ph, wd))
        h += 2 * ph
        x = fn.op("concat", [z, x, z], {"axis": 2}, dt, (n, c, h, wd),
                  name + ".padh")
    if pw:
        z = fn.constant(0.0, dt, (n, c, h, pw))
        wd += 2 * pw
        x = fn.op("concat", [z, x, z], {"axis": 3}, dt, (n, c, h, wd),
                  name + ".padw")
    taps = []
    for i in range(kh):
        for j in range(kw):
            b = [0, 0, i * dilation[0], j * dilation[1]]
            e = [n, c, b[2] + (oh - 1) * stride[0] + 1,
                 b[3] + (ow - 1) * stride[1] + 1]
            t = x
            if b != [0, 0, 0, 0] or e != [n, c, h, wd] or stride != [1, 1]:
                attrs = {"begin": b, "end": e}
                if stride != [1, 1]:
                    attrs["strides"] = [1, 1] + stride
                t = fn.op("slice", [x], attrs, dt, (n, c, oh, ow),
                          name + ".tap")
            taps.append(fn.op("reshape", [t], {"shape": [n, c, 1, oh * ow]},
                              dt, (n, c, 1, oh * ow), name + ".tap"))
    cols = taps[0] if len(taps) == 1 else fn.op(
        "concat", taps, {"axis": 2}, dt, (n, c, kh * kw, oh * ow),
        name + ".taps")
    cols = fn.op("reshape", [cols], {"shape": [n, c * kh * kw, oh * ow]}, dt,
                 (n, c * kh * kw, oh * ow), name + ".cols")
    w2 = fn.op("reshape", [w], {"shape": [o, c * kh * kw]}, dt,
               (o, c * kh * kw), name + ".w")
    y = fn.op("matmul", [w2, cols], None, dt, (n, o, oh * ow), name + ".mm")
    return fn.op("reshape", [y], {"shape": list(sh)}, dt, sh, name)


def _conv2d_m(ctx, node, mod, meta, x):
    if mod.padding_mode != "zeros":
        raise ex.Unsupported(f"padding_mode={mod.padding_mode!r}")
    w = ctx.tensor_arg(node.target + ".weight")
    b = ctx.tensor_arg(node.target + ".bias") if mod.bias is not None else None
    return _conv2d_of(ctx, node, meta, x, w, b, mod.stride, mod.padding,
                      mod.dilation, mod.groups)


def _conv2d_f(ctx, node, meta, x, weight, bias=None, stride=1, padding=0,
              dilation=1, groups=1):
    return _conv2d_of(ctx, node, meta, x, weight, bias, stride, padding,
                      dilation, groups)


def _pool_of(ctx, node, meta, op, x, kernel, stride, padding, ceil_mode,
             dilation=1, count_include_pad=True):
    dt, sh = _need(meta)
    if ceil_mode:
        raise ex.Unsupported("ceil_mode=True")
    if _pair(dilation) != [1, 1]:
        raise ex.Unsupported("dilation")
    if not count_include_pad and _pair(padding) != [0, 0]:
        raise ex.Unsupported("count_include_pad=False with padding")
    attrs = {"kernel": _pair(kernel),
             "stride": _pair(stride if stride is not None else kernel)}
    if _pair(padding) != [0, 0]:
        attrs["padding"] = _pair(padding)
    return ctx.fn.op(op, [x], attrs, dt, sh, node.name)


def _max_pool_m(ctx, node, mod, meta, x):
    if mod.return_indices:
        raise ex.Unsupported("return_indices=True")
    return _pool_of(ctx, node, meta, "max_pool2d", x, mod.kernel_size,
                    mod.stride, mod.padding, mod.ceil_mode, mod.dilation)


def _avg_pool_m(ctx, node, mod, meta, x):
    if mod.divisor_override:
        raise ex.Unsupported("divisor_override")
    return _pool_of(ctx, node, meta, "avg_pool2d", x, mod.kernel_size,
                    mod.stride, mod.padding, mod.ceil_mode, 1,
                    mod.count_include_pad)


def _max_pool_f(ctx, node, meta, x, kernel_size, stride=None, padding=0,
                dilation=1, ceil_mode=False, return_indices=False):
    if return_indices:
        raise ex.Unsupported("return_indices=True")
    return _pool_of(ctx, node, meta, "max_pool2d", x, kernel_size, stride,
                    padding, ceil_mode, dilation)


def _adaptive_avg_m(ctx, node, mod, meta, x):
    return _adaptive_avg_f(ctx, node, meta, x, mod.output_size)


def _adaptive_avg_f(ctx, node, meta, x, output_size):
    """(1, 1) is the mean over H and W; an output size dividing the input
    is an avg_pool2d with kernel = stride = input / output."""
    dt, sh = _need(meta)
    h, w = x.shape[-2:]
    oh, ow = sh[-2:]
    if (oh, ow) == (1, 1):
        return ctx.fn.op("mean", [x], {"axes": [2, 3], "keepdims": True},
                         dt, sh, node.name)
    if h % oh or w % ow:
        raise ex.Unsupported(f"output size {oh}x{ow} does not divide "
                             f"{h}x{w}")
    k = [h // oh, w // ow]
    return ctx.fn.op("avg_pool2d", [x], {"kernel": k, "stride": k}, dt, sh,
                     node.name)


# ---- dropout, embedding, loss ------------------------------------------


def _dropout_of(ctx, node, meta, x, p, training):
    """Identity in eval mode or with p = 0. In train mode: raf's dropout
    with a key: one i64[] state argument %dropout.key, incremented every
    step (an {updates} result), so each step draws new masks; site i uses
    key + i * 2^32, so no two sites share a mask (for 2^32 steps)."""
    if not training or p == 0:
        return x
    dt, sh = _need(meta)
    if ctx.dropout_key is None:
        ctx.dropout_key = ctx.fn.argument("dropout.key", "i64", (),
                                          'state, init = "zeros"')
        one = ctx.fn.constant(1, "i64")
        ctx.updates.append((ctx.fn.op("add", [ctx.dropout_key, one], None,
                                      "i64", (), "dropout.next_key"),
                            ctx.dropout_key))
    site = ctx.dropout_sites
    ctx.dropout_sites += 1
    key = ctx.fn.op("add", [ctx.dropout_key, ctx.fn.constant(site << 32, "i64")],
                    None, "i64", (), "dropout.site")
    return ctx.fn.op("dropout", [x, key], {"p": float(p)}, dt, sh, node.name)


def _dropout_m(ctx, node, mod, meta, x):
    return _dropout_of(ctx, node, meta, x, mod.p, mod.training)


def _dropout_f(ctx, node, meta, x, p=0.5, training=True, inplace=False):
    return _dropout_of(ctx, node, meta, x, p, training)


def _embedding_of(ctx, node, meta, idx, w, padding_idx, max_norm):
    dt, sh = _need(meta)
    if max_norm is not None:
        raise ex.Unsupported("max_norm")
    if padding_idx is not None:
        raise ex.Unsupported("padding_idx (its row gets no gradient in torch; "
                             "raf's take_grad has no such rule)")
    if not isinstance(idx, ex.Value):  # a constant: torch.arange(T)
        idx = _value(ctx, idx, "i64")
    return ctx.fn.op("take", [w, idx], None, dt, sh, node.name)


def _embedding_m(ctx, node, mod, meta, idx):
    return _embedding_of(ctx, node, meta, idx,
                         ctx.tensor_arg(node.target + ".weight"),
                         mod.padding_idx, mod.max_norm)


def _embedding_f(ctx, node, meta, idx, weight, padding_idx=None,
                 max_norm=None, *rest, **kw):
    return _embedding_of(ctx, node, meta, idx, weight, padding_idx, max_norm)


def _cross_entropy_of(ctx, node, meta, logits, target, reduction,
                      ignore_index, label_smoothing, weight):
    dt, sh = _need(meta)
    if weight is not None:
        raise ex.Unsupported("class weights")
    if label_smoothing:
        raise ex.Unsupported("label_smoothing")
    if isinstance(target, ex.Value) and target.dtype in FLOATS:
        raise ex.Unsupported("class probabilities as targets")
    if len(logits.shape) > 2:
        raise ex.Unsupported("classes on dim 1 of a rank > 2 input "
                             "(raf's cross_entropy takes them last: "
                             "permute, or reshape to [N, C])")
    attrs = {}
    if reduction != "mean":
        attrs["reduction"] = reduction
    if ignore_index != -100:
        attrs["ignore_index"] = ignore_index
    return ctx.fn.op("cross_entropy", [logits, target], attrs, dt, sh,
                     node.name)


def _cross_entropy_m(ctx, node, mod, meta, logits, target):
    return _cross_entropy_of(ctx, node, meta, logits, target, mod.reduction,
                             mod.ignore_index, mod.label_smoothing, mod.weight)


def _cross_entropy_f(ctx, node, meta, logits, target, weight=None,
                     size_average=None, ignore_index=-100, reduce=None,
                     reduction="mean", label_smoothing=0.0):
    return _cross_entropy_of(ctx, node, meta, logits, target, reduction,
                             ignore_index, label_smoothing, weight)


def _mse_m(ctx, node, mod, meta, a, b):
    dt, sh = _need(meta)
    attrs = {"reduction": mod.reduction} if mod.reduction != "mean" else None
    return ctx.fn.op("mse_loss", [a, b], attrs, dt, sh, node.name)


def _module_unary(op):
    def h(ctx, node, mod, meta, x):
        return _unary(op)(ctx, node, meta, x)
    return h


def _gelu_m(ctx, node, mod, meta, x):
    return _gelu(ctx, node, meta, x, mod.approximate)


def _softmax_m(op):
    def h(ctx, node, mod, meta, x):
        return _softmax(op)(ctx, node, meta, x, mod.dim)
    return h


def _flatten_m(ctx, node, mod, meta, x):
    return _reshape_to(ctx, node, meta, x)


def _identity_m(ctx, node, mod, meta, x):
    return x


MODULES = {
    nn.Conv2d: _conv2d_m,
    nn.BatchNorm1d: _batch_norm_m,
    nn.BatchNorm2d: _batch_norm_m,
    nn.ReLU: _module_unary("relu"),
    nn.Tanh: _module_unary("tanh"),
    nn.Sigmoid: _module_unary("sigmoid"),
    nn.GELU: _gelu_m,
    nn.SiLU: _module_unary("silu"),
    nn.MaxPool2d: _max_pool_m,
    nn.AvgPool2d: _avg_pool_m,
    nn.AdaptiveAvgPool2d: _adaptive_avg_m,
    nn.Linear: _linear_m,
    nn.LayerNorm: _layer_norm_m,
    nn.Dropout: _dropout_m,
    nn.Embedding: _embedding_m,
    nn.Softmax: _softmax_m("softmax"),
    nn.LogSoftmax: _softmax_m("log_softmax"),
    nn.Flatten: _flatten_m,
    nn.Identity: _identity_m,
    nn.CrossEntropyLoss: _cross_entropy_m,
    nn.MSELoss: _mse_m,
}

FUNCTIONS = {
    operator.add: _binary("add"), torch.add: _binary("add"),
    operator.sub: _binary("sub"), torch.sub: _binary("sub"),
    operator.mul: _binary("mul"), torch.mul: _binary("mul"),
    operator.truediv: _div, torch.div: _div,
    operator.neg: _neg, torch.neg: _neg, operator.invert: _invert,
    operator.pow: _pow, torch.pow: _pow,
    operator.matmul: _matmul, torch.matmul: _matmul, torch.bmm: _matmul,
    operator.eq: _compare("eq"), operator.ne: _compare("ne"),
    operator.lt: _compare("lt"), operator.le: _compare("le"),
    operator.gt: _compare("gt"), operator.ge: _compare("ge"),
    operator.getitem: _getitem, getattr: _getattr,
    torch.maximum: _binary("maximum"), torch.minimum: _binary("minimum"),
    torch.relu: _relu_f, F.relu: _relu_f,
    torch.tanh: _unary("tanh"), torch.sigmoid: _unary("sigmoid"),
    torch.exp: _unary("exp"), torch.log: _unary("log"),
    torch.sqrt: _unary("sqrt"), torch.rsqrt: _unary("rsqrt"),
    torch.erf: _unary("erf"), torch.abs: _unary("abs"),
    F.gelu: _gelu, F.silu: _unary("silu"),
    F.softmax: _softmax("softmax"), torch.softmax: _softmax("softmax"),
    F.log_softmax: _softmax("log_softmax"),
    torch.log_softmax: _softmax("log_softmax"),
    F.linear: _linear_f, F.layer_norm: _layer_norm_f,
    F.conv2d: _conv2d_f, F.max_pool2d: _max_pool_f,
    F.adaptive_avg_pool2d: _adaptive_avg_f,
    F.dropout: _dropout_f, F.embedding: _embedding_f,
    F.cross_entropy: _cross_entropy_f,
    torch.flatten: _flatten, torch.reshape: _reshape,
    torch.transpose: _transpose, torch.permute: _permute,
    torch.cat: _cat, torch.concat: _cat, torch.split: _split,
    torch.chunk: _chunk, torch.unsqueeze: _unsqueeze,
    torch.where: _where, torch.masked_fill: _masked_fill,
    torch.mean: _reduce("mean"), torch.sum: _reduce("sum"),
    torch.amax: _reduce("max"), torch.amin: _reduce("min"),
    torch.argmax: _argmax,
}

METHODS = {
    "add": _binary("add"), "sub": _binary("sub"), "mul": _binary("mul"),
    "div": _div, "pow": _pow, "neg": _neg, "matmul": _matmul,
    "relu": _relu_f, "tanh": _unary("tanh"), "sigmoid": _unary("sigmoid"),
    "exp": _unary("exp"), "log": _unary("log"), "sqrt": _unary("sqrt"),
    "rsqrt": _unary("rsqrt"), "abs": _unary("abs"),
    "softmax": _softmax("softmax"), "log_softmax": _softmax("log_softmax"),
    "view": _reshape, "reshape": _reshape, "flatten": _flatten,
    "transpose": _transpose, "permute": _permute, "t": _t,
    "contiguous": _identity, "expand": _expand, "unsqueeze": _unsqueeze,
    "squeeze": _reshape, "split": _split, "chunk": _chunk,
    "__getitem__": _getitem, "size": _size, "dim": _dim, "masked_fill": _masked_fill,
    "mean": _reduce("mean"), "sum": _reduce("sum"),
    "amax": _reduce("max"), "amin": _reduce("min"), "argmax": _argmax,
    "float": _cast_to("f32"), "double": _cast_to("f64"), "long": _cast_to("i64"),
    "bool": _cast_to("bool"), "to": _to, "type_as": _to,
}
