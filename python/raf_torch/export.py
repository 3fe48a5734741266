"""The exporter's driver: traces a torch.nn.Module with torch.fx, gives every
node its static shape (ShapeProp on the example arguments), walks the graph
emitting one or more .raf statements per node (the op mapping is in
ops.py), and writes PREFIX.raf and PREFIX.safetensors.

Why this split: torch.fx gives a flat graph of call_module /
call_function / call_method nodes whose targets are PyTorch's own
functions, which is the level .raf's operators live at; and .raf shapes are
static, so every shape question (x.size(1), x.view(B, -1)) is answered here
from the example arguments and folded into constants.
"""
import os
import re
import traceback

import torch
import torch.fx
from torch.fx.passes.shape_prop import ShapeProp

from . import ops
from . import safetensors

DTYPES = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16",
          torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
          torch.int8: "i8", torch.uint8: "u8", torch.bool: "bool"}


class ExportError(Exception):
    """The module cannot be exported; the message says why and where."""


class UnsupportedError(ExportError):
    """Some call targets have no .raf mapping. `unsupported` lists them all
    as (target, location) pairs."""

    def __init__(self, unsupported):
        self.unsupported = unsupported
        lines = [f"  {loc}: {what}" for what, loc in unsupported]
        super().__init__(
            f"{len(unsupported)} call(s) have no .raf mapping "
            f"(docs/PyTorch.md lists what maps):\n" + "\n".join(lines))


class Value:
    """A .raf SSA value: its name (without %), element type and shape."""

    def __init__(self, name, dtype, shape):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)

    @property
    def type(self):
        return f"{self.dtype}[{','.join(str(d) for d in self.shape)}]"

    def __repr__(self):
        return f"%{self.name}: {self.type}"


class Unsupported(Exception):
    """Raised by an op handler: the call has no mapping (reported with the
    others at the end)."""


class _Poison:
    """The value of a node that could not be exported: its users are
    skipped, not reported again."""


def raf_dtype(dt):
    if dt not in DTYPES:
        raise Unsupported(f"dtype {dt}")
    return DTYPES[dt]


def _format_float(v):
    """A float literal .raf reads back to the same value."""
    v = float(v)
    if v != v:
        return "nan"
    if v in (float("inf"), float("-inf")):
        return "inf" if v > 0 else "-inf"
    return repr(v)


def format_attr(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return _format_float(v)
    if isinstance(v, str):
        if v in DTYPES.values():
            return v  # an element type is written bare
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, Value):
        return f"%{v.name}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_attr(x) for x in v) + "]"
    raise TypeError(f"attribute value {v!r}")


class Function:
    """One .raf function being written: its arguments, statements and
    results."""

    def __init__(self, name):
        self.name = name
        self.args = []      # (Value, attribute text)
        self.lines = []
        self.used = set()
        self.loc = None     # the location the next statements carry
        self._constants = {}

    def fresh(self, hint):
        base = re.sub(r"[^A-Za-z0-9_.]", "_", hint) or "v"
        name, k = base, 1
        while name in self.used:
            name = f"{base}.{k}"
            k += 1
        self.used.add(name)
        return name

    def argument(self, name, dtype, shape, attrs=""):
        v = Value(self.fresh(name), dtype, shape)
        if v.name != name:
            raise ExportError(f"two arguments are named %{name}")
        self.args.append((v, attrs))
        return v

    def _suffix(self):
        if not self.loc:
            return ""
        path, line = self.loc
        return f' loc("{path}":{line}:1)'

    def op(self, op, operands, attrs, dtype, shape, hint="t"):
        """%r = op(operands) {attrs} : type; returns the result."""
        return self.op_n(op, operands, attrs, [(dtype, shape)], hint)[0]

    def op_n(self, op, operands, attrs, types, hint="t"):
        """Several results; hint is one name or one per result."""
        hints = hint if isinstance(hint, list) else [hint] * len(types)
        results = [Value(self.fresh(h), dt, sh)
                   for h, (dt, sh) in zip(hints, types)]
        text = ", ".join(f"%{o.name}" for o in operands)
        a = ""
        if attrs:
            a = " {" + ", ".join(
                k if v is True else f"{k} = {format_attr(v)}"
                for k, v in attrs.items()) + "}"
        lhs = ", ".join(f"%{r.name}" for r in results)
        tys = ", ".join(r.type for r in results)
        self.lines.append(f"  {lhs} = {op}({text}){a} : {tys}{self._suffix()}")
        return results

    def constant(self, value, dtype, shape=()):
        """A constant: a Python number (a scalar or a splat) or a tensor
        (dense). Scalars and splats are shared."""
        if isinstance(value, torch.Tensor):
            data = value.detach().cpu()
            if data.dtype == torch.bool:
                lit = str(data.tolist()).replace("True", "true").replace(
                    "False", "false")
            elif data.is_floating_point():
                lit = _nested(data.to(torch.float64).tolist(), _format_float)
            else:
                lit = str(data.tolist())
            shape = tuple(data.shape)
            key = None
        else:
            if dtype == "bool":
                lit = "true" if value else "false"
            elif dtype in ("f32", "f64", "f16", "bf16"):
                lit = _format_float(value)
            else:
                lit = str(int(value))
            key = (lit, dtype, tuple(shape))
            if key in self._constants:
                return self._constants[key]
        v = Value(self.fresh("c"), dtype, shape)
        self.lines.append(f"  %{v.name} = constant {lit} : {v.type}")
        if key:
            self._constants[key] = v
        return v

    def text(self, results):
        """results: [(Value, attribute text)]."""
        args = ",\n    ".join(f"%{v.name}: {v.type}" + (f" {{{a}}}" if a else "")
                              for v, a in self.args)
        res = ", ".join(v.type + (f" {{{a}}}" if a else "") for v, a in results)
        if len(results) != 1 or results[0][1]:
            res = f"({res})"
        body = "\n".join(self.lines)
        ret = ", ".join(f"%{v.name}" for v, _ in results)
        return (f"func @{self.name}(\n    {args}) -> {res} {{\n{body}\n"
                f"  return {ret}\n}}\n")


def _nested(xs, fmt):
    if isinstance(xs, list):
        return "[" + ", ".join(_nested(x, fmt) for x in xs) + "]"
    return fmt(xs)


# Tensor properties a traced tensor answers with Python values: .raf shapes
# are static, so `B, T = x.shape`, `x.size(1)` and `if x.dim() == 3` are
# decided while tracing, from the example arguments.
_STATIC_ATTRS = ("shape", "ndim", "dtype", "size", "dim", "is_nested",
                 "device", "is_cuda", "layout", "is_sparse")


class _ShapedProxy(torch.fx.Proxy):
    """An fx Proxy that knows its example value (node.meta["example"])
    and answers shape questions with it."""

    def __getattr__(self, k):
        ex = self.node.meta.get("example")
        if isinstance(ex, torch.Tensor) and k in _STATIC_ATTRS:
            return getattr(ex, k)
        return super().__getattr__(k)

    def __iter__(self):
        ex = self.node.meta.get("example")
        # only tuples (split's results): a tensor that iterated would be
        # taken for a sequence of indices by Tensor.__getitem__
        if isinstance(ex, (tuple, list)):
            return iter([self[i] for i in range(len(ex))])
        return super().__iter__()


# nn.Module's own __call__ and __getattr__: fx replaces them while it
# traces, and a leaf module run for its example value must not be traced.
_MODULE_CALL = torch.nn.Module.__call__
_MODULE_GETATTR = torch.nn.Module.__getattr__


def _run_unpatched(mod, args, kwargs):
    patched = torch.nn.Module.__call__, torch.nn.Module.__getattr__
    torch.nn.Module.__call__, torch.nn.Module.__getattr__ = \
        _MODULE_CALL, _MODULE_GETATTR
    try:
        return mod(*args, **kwargs)
    finally:
        torch.nn.Module.__call__, torch.nn.Module.__getattr__ = patched


class _Tracer(torch.fx.Tracer):
    """torch.fx's tracer, keeping each node's Python stack and its example
    value (each node is run on the example arguments as it is traced), and
    tracing into every module whose type ops.py does not map, so that a
    module written from supported calls needs no mapping of its own."""

    def __init__(self, example_args):
        super().__init__()
        self.record_stack_traces = True
        self.example_args = list(example_args)

    def is_leaf_module(self, m, qualname):
        return type(m) in ops.MODULES

    def proxy(self, node):
        return _ShapedProxy(node, self)

    def _attr(self, target):
        """The attribute at a dotted path of the root module, read from
        the modules' own dictionaries: fx patches Module.__getattr__ while
        tracing, and going through it would trace again."""
        value = self.root
        for part in target.split("."):
            d = vars(value)
            for store in ("_parameters", "_buffers", "_modules"):
                if part in d.get(store, {}):
                    value = d[store][part]
                    break
            else:
                value = d[part] if part in d else object.__getattribute__(
                    value, part)
        return value

    def _example_of(self, x):
        """The example value of an argument; parameters fx turned into
        get_attr nodes (create_arg makes those without create_proxy)
        are looked up."""
        if not isinstance(x, torch.fx.Node):
            return x
        if "example" not in x.meta and x.op == "get_attr":
            x.meta["example"] = self._attr(x.target)
        return x.meta.get("example")

    def create_proxy(self, kind, target, args, kwargs, name=None,
                     type_expr=None, proxy_factory_fn=None):
        p = super().create_proxy(kind, target, args, kwargs, name, type_expr,
                                 proxy_factory_fn)
        node = p.node
        a = torch.fx.node.map_aggregate(node.args, self._example_of)
        kw = torch.fx.node.map_aggregate(node.kwargs, self._example_of)
        node.meta["example"] = None
        if kind != "placeholder" and _contains((a, kw), torch.fx.Proxy):
            return p  # no example value; ShapeProp gives the shape later
        with torch.no_grad():
            if kind == "placeholder":
                value = self.example_args.pop(0) if self.example_args else None
            elif kind == "get_attr":
                value = self._attr(target)
            elif kind == "call_module":
                value = _run_unpatched(self.root.get_submodule(target), a, kw)
            elif kind == "call_method":
                value = getattr(a[0], target)(*a[1:], **kw)
            elif kind == "call_function":
                value = target(*a, **kw)
            else:
                value = None
        node.meta["example"] = value
        return p


def _short(path):
    """A path relative to the working directory when it lies below it."""
    rel = os.path.relpath(os.path.abspath(path))
    return path if rel.startswith("..") else rel


def _user_frame_of(exc):
    """'FILE:LINE' of the innermost frame of exc's traceback in the user's
    code (outside torch), else in torch's modules (outside torch.fx)."""
    torch_dir = os.path.dirname(torch.__file__)
    fx_dir = os.path.dirname(torch.fx.__file__)
    own = os.path.dirname(os.path.abspath(__file__))
    user = inner = None
    for fs in traceback.extract_tb(exc.__traceback__):
        path = os.path.abspath(fs.filename)
        if path.startswith(own) or path.startswith(fx_dir):
            continue
        inner = f"{_short(path)}:{fs.lineno}"
        if not path.startswith(torch_dir):
            user = inner
    return user or inner


def trace(module, example_args):
    """torch.fx GraphModule of `module` traced on example_args. A
    TraceError (data-dependent control flow) is re-raised as an
    ExportError that says what it means for raf."""
    tracer = _Tracer(example_args)
    try:
        graph = tracer.trace(module)
    except torch.fx.proxy.TraceError as e:
        where = _user_frame_of(e) or "(unknown place)"
        raise ExportError(
            f"{where}: torch.fx cannot trace {type(module).__name__}: {e}.\n"
            f"The module's Python control flow (an `if`, a loop bound or an "
            f"assert) depends on tensor values, or on a tensor property fx "
            f"does not know while tracing. A .raf function is one static "
            f"graph with static shapes, so such a branch must be decided "
            f"before export: write the condition from Python values "
            f"(module attributes, shapes known at construction), turn the "
            f"branch into data flow (torch.where, masks), or export each "
            f"branch as its own module.") from e
    return torch.fx.GraphModule(module, graph)


def _location(node):
    """(file, line) of the innermost user frame of an fx node, or None."""
    st = getattr(node, "stack_trace", None)
    if not st:
        return None
    hits = re.findall(r'File "([^"]+)", line (\d+)', st)
    if not hits:
        return None
    # traceback.walk_stack lists the innermost frame first; the exporter's
    # own frames (the loss wrapper) are not the user's source
    own = os.path.dirname(os.path.abspath(__file__))
    torch_dir = os.path.dirname(torch.__file__)
    for path, line in hits:
        path = os.path.abspath(path)
        if not path.startswith(own) and not path.startswith(torch_dir):
            return _short(path), int(line)
    return None


def _loc_text(loc):
    return f"{loc[0]}:{loc[1]}" if loc else "(no source line)"


class Context:
    """What op handlers see: the function being written, the module (for
    call_module targets and attributes), the mode, and the state updates
    batch_norm and dropout record."""

    def __init__(self, fn, module, training, conv="op"):
        self.fn = fn
        self.conv = conv
        self.module = module
        self.training = training
        self.params = {}       # qualified name -> Value
        self.updates = []      # (new Value, state argument Value)
        self.dropout_sites = 0
        self.dropout_key = None

    def tensor_arg(self, qualname):
        if qualname not in self.params:
            raise Unsupported(f"{qualname} is not a parameter or exported "
                              f"buffer of the module")
        return self.params[qualname]


def _map_nested(x, f):
    if isinstance(x, tuple):
        return tuple(_map_nested(y, f) for y in x)
    if isinstance(x, list):
        return [_map_nested(y, f) for y in x]
    if isinstance(x, dict):
        return {k: _map_nested(v, f) for k, v in x.items()}
    if isinstance(x, slice):
        return slice(_map_nested(x.start, f), _map_nested(x.stop, f),
                     _map_nested(x.step, f))
    return f(x)


def _contains(x, cls):
    found = []
    _map_nested(x, lambda y: found.append(y) if isinstance(y, cls) else None)
    return bool(found)


def _describe(node, module):
    if node.op == "call_module":
        m = module.get_submodule(node.target)
        return f"module {type(m).__module__}.{type(m).__name__} ({node.target})"
    if node.op == "call_method":
        return f"method Tensor.{node.target}"
    if node.op == "get_attr":
        return f"attribute {node.target}"
    t = node.target
    name = getattr(t, "__name__", str(t))
    mod = getattr(t, "__module__", None) or ""
    return f"function {mod + '.' if mod else ''}{name}"


def _walk(ctx, gm, env, module):
    """Emits every node of gm into ctx.fn; env maps placeholders to their
    values on entry. Returns the output node's value. Unsupported calls are
    collected, not raised one by one."""
    unsupported = []
    out = None
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            out = _map_nested(node.args[0], lambda n: env[n]
                              if isinstance(n, torch.fx.Node) else n)
            break
        args = _map_nested(node.args, lambda n: env[n]
                           if isinstance(n, torch.fx.Node) else n)
        kwargs = _map_nested(node.kwargs, lambda n: env[n]
                             if isinstance(n, torch.fx.Node) else n)
        if _contains((args, kwargs), _Poison):
            # a user of an unsupported call: reported only when its own
            # target has no mapping either
            env[node] = _Poison()
            if not _has_handler(node, module):
                unsupported.append((_describe(node, module),
                                    _loc_text(_location(node))))
            continue
        loc = _location(node)
        ctx.fn.loc = loc
        try:
            env[node] = _emit_node(ctx, node, args, kwargs, module)
        except Unsupported as e:
            what = _describe(node, module)
            detail = str(e)
            unsupported.append((what + (f": {detail}" if detail else ""),
                                _loc_text(loc)))
            env[node] = _Poison()
        ctx.fn.loc = None
    if unsupported:
        raise UnsupportedError(unsupported)
    return out


def _has_handler(node, module):
    if node.op == "call_module":
        return type(module.get_submodule(node.target)) in ops.MODULES
    if node.op == "call_method":
        return node.target in ops.METHODS
    if node.op == "call_function":
        return node.target in ops.FUNCTIONS
    return True


def _meta(node):
    """(dtype, shape) of a node's tensor result from ShapeProp, or None."""
    tm = node.meta.get("tensor_meta")
    if tm is None or not hasattr(tm, "shape"):
        return None
    return raf_dtype(tm.dtype), tuple(tm.shape)


def _emit_node(ctx, node, args, kwargs, module):
    if node.op == "get_attr":
        return _get_attr(ctx, node.target, module)
    static = not _contains((args, kwargs), Value)
    if node.op == "call_module":
        sub = module.get_submodule(node.target)
        handler = ops.MODULES.get(type(sub))
        if handler is None:
            raise Unsupported("")
        return handler(ctx, node, sub, _meta(node), *args, **kwargs)
    if static:
        # every input is a Python value or a constant tensor: compute it
        # now (shape arithmetic, masks built with torch.ones(...).tril())
        with torch.no_grad():
            if node.op == "call_method":
                return getattr(args[0], node.target)(*args[1:], **kwargs)
            return node.target(*args, **kwargs)
    if node.op == "call_method":
        handler = ops.METHODS.get(node.target)
    else:
        handler = ops.FUNCTIONS.get(node.target)
    if handler is None:
        raise Unsupported("")
    return handler(ctx, node, _meta(node), *args, **kwargs)


def _get_attr(ctx, target, module):
    if target in ctx.params:
        return ctx.params[target]
    obj = module
    for part in target.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, torch.Tensor):
        if obj.requires_grad:
            # fx made a constant of a tensor computed from parameters
            # outside the trace: its gradient would be lost
            raise Unsupported(
                f"a tensor computed from parameters outside the trace "
                f"({target}): read parameters as module attributes "
                f"(self.fc.weight), not from named_parameters() or a "
                f"dict of them, so that their uses are traced")
        return obj.detach()  # a constant: a non-persistent buffer, a plain tensor
    return obj


def _func_name(prefix, name):
    if name:
        return name
    base = re.sub(r"[^A-Za-z0-9_.]", "_", os.path.basename(prefix))
    if not re.match(r"[A-Za-z_]", base):
        base = "f_" + base
    return base


class _LossWrapper(torch.nn.Module):
    """The loss as a module of its own, so that fx traces it with
    placeholders named `output` and `target`."""

    def __init__(self, loss):
        super().__init__()
        self.loss = loss

    def forward(self, output, target):
        return self.loss(output, target)


def _exported_state(module):
    """[(name, tensor, kind)] in argument order: the parameters, then the
    buffers the state_dict holds (num_batches_tracked included)."""
    out = [(n, p, "param") for n, p in module.named_parameters()]
    persistent = set(module.state_dict().keys())
    out += [(n, b, "state") for n, b in module.named_buffers()
            if n in persistent]
    return out


def export(module, example_args, prefix, loss=None, target=None, name=None,
           label_name="labels", update_state=True, conv="op"):
    """Exports `module` (in its current mode: train() or eval()) as the .raf
    function @NAME in PREFIX.raf, and its parameters and buffers (under
    their state_dict names) in PREFIX.safetensors.

    example_args: a tensor or tuple of tensors, the forward's data
    arguments (their shapes and dtypes become the function's). loss: a
    callable (output, target) -> scalar, e.g. nn.CrossEntropyLoss(); then
    the function takes the data and LABEL_NAME and returns the loss. target:
    an example target (default for a loss: int64 of output.shape[:-1]).
    name: the function's name (default: PREFIX's base name).
    update_state: in train mode, return the new running statistics of
    batch_norm (and dropout's next key) as {updates} results after the
    outputs; False leaves them out (the batch still normalises with its own
    statistics), for a function whose only result is the loss.
    conv: "op" writes raf's conv2d; "matmul" writes each convolution (of
    one group) as zero padding, strided slices and one matmul (im2col),
    which runs on BLAS where a dialect has no fast conv2d.

    Returns the .raf text. Raises ExportError (UnsupportedError listing
    every unmapped call with its source line)."""
    if isinstance(example_args, torch.Tensor):
        example_args = (example_args,)
    example_args = tuple(example_args)
    fname = _func_name(prefix, name)
    # Tracing and ShapeProp run the module: keep its buffers (batch_norm's
    # running statistics in train mode) as they were before export.
    saved = {k: v.clone() for k, v in module.state_dict().items()}
    rng = torch.get_rng_state()
    try:
        gm = trace(module, example_args)
    finally:
        module.load_state_dict(saved)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_args):
        raise ExportError(
            f"{type(module).__name__}.forward takes {len(placeholders)} "
            f"argument(s) ({', '.join(p.target for p in placeholders)}), "
            f"but {len(example_args)} example argument(s) were given")

    # ShapeProp runs the module: keep its buffers (batch_norm's running
    # statistics in train mode) as they were before export.
    saved = {k: v.clone() for k, v in module.state_dict().items()}
    rng = torch.get_rng_state()
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(*example_args)
            out_example = module(*example_args)
    finally:
        module.load_state_dict(saved)
        torch.set_rng_state(rng)

    fn = Function(fname)
    if conv not in ("op", "matmul"):
        raise ExportError(f'conv must be "op" or "matmul", not {conv!r}')
    ctx = Context(fn, module, module.training, conv)
    env = {}
    for ph, ex in zip(placeholders, example_args):
        if not isinstance(ex, torch.Tensor):
            raise ExportError(f"example argument {ph.target} is not a tensor")
        env[ph] = fn.argument(ph.target, raf_dtype(ex.dtype), ex.shape)
    loss_gm = None
    if loss is not None:
        if target is None:
            if not isinstance(out_example, torch.Tensor):
                raise ExportError("give an example target: the output is "
                                  "not one tensor")
            target = torch.zeros(out_example.shape[:-1], dtype=torch.int64)
        loss_gm = trace(_LossWrapper(loss), (out_example, target))
        ShapeProp(loss_gm).propagate(out_example, target)
        env_label = fn.argument(label_name, raf_dtype(target.dtype),
                                target.shape)
    state = _exported_state(module)
    for qual, t, kind in state:
        ctx.params[qual] = fn.argument(qual, raf_dtype(t.dtype), t.shape, kind)

    result = _walk(ctx, gm, env, module)
    if loss_gm is not None:
        lph = [n for n in loss_gm.graph.nodes if n.op == "placeholder"]
        lenv = {lph[0]: result, lph[1]: env_label}
        result = _walk(ctx, loss_gm, lenv, loss_gm)

    flat = []
    _map_nested(result, flat.append)
    for r in flat:
        if not isinstance(r, Value):
            raise ExportError(f"the module returns {r!r}, which is not a "
                              f"tensor computed from its arguments")
    results = [(v, "") for v in flat]
    if update_state:
        results += [(new, f"updates = %{arg.name}")
                    for new, arg in ctx.updates]
    text = (f"// {os.path.basename(prefix)}.raf: {type(module).__name__} "
            f"exported by raf_torch in "
            f"{'train' if module.training else 'eval'} mode"
            + (f" with {type(loss).__name__}" if loss is not None else "")
            + ".\n// The weights are in "
            f"{os.path.basename(prefix)}.safetensors (raf-run --load).\n"
            + fn.text(results))
    d = os.path.dirname(prefix)
    if d:
        os.makedirs(d, exist_ok=True)
    with open(prefix + ".raf", "w") as f:
        f.write(text)
    safetensors.write(prefix + ".safetensors",
                      [(q, t) for q, t, _ in state])
    return text


def load_checkpoint(module, path):
    """Loads the params and buffers a raf checkpoint (raf-run --save) holds
    under the module's state_dict names into `module`. Other tensors (the
    optimizer's moments) are skipped. Returns the names loaded."""
    tensors = safetensors.read(path)
    own = module.state_dict()
    found = {k: v for k, v in tensors.items() if k in own}
    missing = [k for k in own if k not in found]
    if missing:
        raise ExportError(f"{path} lacks {', '.join(missing)}")
    module.load_state_dict(found)
    return list(found)

