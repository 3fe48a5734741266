#!/usr/bin/python3
"""convert.py: ONNX backend node tests -> raf-run cases.

Reads the node tests of Debian's libonnx-testdata (each a model.onnx and
test_data_set_0/{input,output}_N.pb) and converts every model whose ops map
onto .raf operators with the same semantics into a directory

    WORK/cases/TEST/case.raf     the graph as one .raf function, @TEST
    WORK/cases/TEST/*.npy        its inputs and expected outputs
    WORK/cases/TEST/case.json    how run.py calls raf-run

A model is converted node by node; an ONNX node may become several .raf
statements (Gemm is a matmul, a mul and an add; Conv1d is conv2d between
reshapes). Inputs that ONNX takes as tensors but .raf as attributes (a
Reshape's shape, a Slice's starts and ends, ReduceSum's axes, ...) are taken
from the initializers, Constant nodes, or the test's own input data (the
shapes are static, so the case is specialised to that data); values computed
only from constants and shapes (Shape, Size, ConstantOfShape, ...) are folded
here with NumPy. Everything else is a .raf statement.

A test that cannot be converted is skipped with a reason: an op with no .raf
equivalent, an element type .raf lacks, an attribute whose semantics .raf does
not have, a data-dependent shape, randomness. Run with --list-skipped to see
them grouped by reason.

Usage: convert.py [--data DIR] [--work DIR] [--only REGEX] [--list-skipped]
"""
import argparse
import collections
import glob
import json
import math
import os
import re
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DATA = '/usr/share/libonnx-testdata/data/node'

ONNX_DTYPES = {
    TensorProto.FLOAT: 'f32', TensorProto.DOUBLE: 'f64',
    TensorProto.FLOAT16: 'f16', TensorProto.BFLOAT16: 'bf16',
    TensorProto.INT64: 'i64', TensorProto.INT32: 'i32',
    TensorProto.INT8: 'i8', TensorProto.UINT8: 'u8', TensorProto.BOOL: 'bool',
}
NP_DTYPES = {
    'f64': np.float64, 'f32': np.float32, 'f16': np.float16,
    'i64': np.int64, 'i32': np.int32, 'i8': np.int8, 'u8': np.uint8,
    'bool': np.bool_,
}
FLOATS = ('f64', 'f32', 'f16', 'bf16')
INTS = ('i64', 'i32', 'i8', 'u8')
NUMBERS = FLOATS + INTS
ANY = NUMBERS + ('bool',)


def onnx_dtype_name(t):
    return TensorProto.DataType.Name(t)


class Skip(Exception):
    """A test that is not converted. `reason` groups tests in the report;
    `detail` says what exactly."""

    def __init__(self, reason, detail=''):
        super().__init__(reason)
        self.reason = reason
        self.detail = detail


def unsupported_dtype(dt_onnx, where):
    return Skip('element type not in .raf', onnx_dtype_name(dt_onnx))


class V:
    """A value of the ONNX graph during conversion.

    ref    the .raf value name holding it, or None (a constant not yet
           materialised)
    dt     .raf element type; shape a tuple
    const  NumPy value known at conversion time (initializers, Constant nodes,
           folded shape computations); such a value has no ref until used
    spec   for a graph input: the test's data, usable where .raf wants an
           attribute (the case is then specialised to it)
    """
    __slots__ = ('ref', 'dt', 'shape', 'const', 'spec', 'arg', 'lazy')

    def __init__(self, dt, shape, ref=None, const=None, spec=None, arg=None):
        self.ref = ref
        self.lazy = None
        self.dt = dt
        self.shape = tuple(int(s) for s in shape)
        self.const = const
        self.spec = spec
        self.arg = arg

    @property
    def rank(self):
        return len(self.shape)


def fmt_float(x):
    x = float(x)
    if math.isnan(x):
        return 'nan'
    if math.isinf(x):
        return 'inf' if x > 0 else '-inf'
    r = repr(x)
    return r


def fmt_scalar(x, dt):
    if dt == 'bool':
        return 'true' if bool(x) else 'false'
    if dt in FLOATS:
        return fmt_float(x)
    return str(int(x))


def fmt_literal(a, dt):
    a = np.asarray(a)
    if a.ndim == 0:
        return fmt_scalar(a.item(), dt)
    if a.size == 0:
        return fmt_scalar(0, dt)   # an empty splat: [] has no inner sizes
    if np.all(a == a.flat[0]) and not (
            dt in FLOATS and np.isnan(a.flat[0])):
        return fmt_scalar(a.flat[0], dt)   # a splat

    def rec(x):
        if x.ndim == 0:
            return fmt_scalar(x.item(), dt)
        return '[' + ', '.join(rec(x[i]) for i in range(x.shape[0])) + ']'
    return rec(a)


def fmt_type(dt, shape):
    return '%s[%s]' % (dt, ','.join(str(int(s)) for s in shape))


class DType(str):
    """An element-type attribute value (printed bare)."""


def fmt_attr_value(v):
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, DType):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return fmt_float(v)
    if isinstance(v, str):
        return '"%s"' % v.replace('\\', '\\\\').replace('"', '\\"')
    if isinstance(v, (list, tuple)):
        return '[' + ', '.join(fmt_attr_value(x) for x in v) + ']'
    raise TypeError(v)


def fmt_attrs(attrs):
    parts = []
    for k, v in attrs.items():
        if v is True:
            parts.append(k)
        else:
            parts.append('%s = %s' % (k, fmt_attr_value(v)))
    return '{' + ', '.join(parts) + '}'


def norm_axis(axis, rank, what='axis'):
    axis = int(axis)
    if not -rank <= axis < max(rank, 1):
        raise Skip('invalid model', '%s %d out of range for rank %d' %
                   (what, axis, rank))
    return axis + rank if axis < 0 else axis


def bcast(*shapes):
    try:
        return tuple(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        raise Skip('invalid model', 'shapes do not broadcast: %s' % (shapes,))


class Converter:
    def __init__(self, name, model, inputs):
        self.name = name
        self.model = model
        self.lines = []
        self.counter = 0
        self.args = []          # (V, npy array) in graph order
        self.env = {}
        self.opset = None
        for imp in model.opset_import:
            if imp.domain in ('', 'ai.onnx'):
                self.opset = imp.version
            else:
                raise Skip('op domain not converted', imp.domain)
        self.inputs = inputs

    # -- emitting ----------------------------------------------------------

    def fresh(self):
        self.counter += 1
        return '%%v%d' % self.counter

    def ref(self, v):
        """The .raf name of v, emitting a constant the first time a constant
        is used as data."""
        if v.ref is None and v.lazy is not None:
            v.ref = v.lazy()
        elif v.ref is None:
            assert v.const is not None
            if v.dt == 'bf16':
                f = self.fresh()
                self.lines.append('  %s = constant %s : %s' % (
                    f, fmt_literal(v.const.astype(np.float32), 'f32'),
                    fmt_type('f32', v.shape)))
                v.ref = self.fresh()
                self.lines.append('  %s = cast(%s) {dtype = bf16} : %s' % (
                    v.ref, f, fmt_type('bf16', v.shape)))
            else:
                v.ref = self.fresh()
                self.lines.append('  %s = constant %s : %s' % (
                    v.ref, fmt_literal(v.const, v.dt),
                    fmt_type(v.dt, v.shape)))
        if v.arg is not None:
            v.arg['used'] = True
        return v.ref

    def emit(self, op, args, attrs=None, results=None):
        """Emits %r.. = op(args) {attrs} : types; results is a list of
        (dtype, shape); returns the new values."""
        refs = [self.ref(a) for a in args]
        outs = [V(dt, shape, ref=self.fresh()) for dt, shape in results]
        s = '  %s = %s(%s)' % (', '.join(o.ref for o in outs), op,
                               ', '.join(refs))
        if attrs:
            s += ' ' + fmt_attrs(attrs)
        s += ' : ' + ', '.join(fmt_type(o.dt, o.shape) for o in outs)
        self.lines.append(s)
        return outs

    def emit1(self, op, args, dt, shape, attrs=None):
        return self.emit(op, args, attrs, [(dt, shape)])[0]

    def const(self, value, dt, shape=()):
        a = np.asarray(value)
        if dt == 'bf16':
            a = a.astype(np.float32)
        else:
            a = a.astype(NP_DTYPES[dt])
        a = np.broadcast_to(a, shape).copy() if a.shape != tuple(shape) else a
        return V(dt, shape, const=a)

    def scalar(self, value, dt):
        return self.const(value, dt, ())

    # -- helpers -----------------------------------------------------------

    def known(self, v, what):
        """The NumPy value of v where .raf needs an attribute."""
        if v is None:
            return None
        if v.const is not None:
            return v.const
        if v.spec is not None:
            return v.spec
        raise Skip('data-dependent attribute', '%s is computed at run time'
                   % what)

    def check_dt(self, v, allowed, opname):
        if v.dt not in allowed:
            raise Skip('element type not admitted by the .raf op',
                       '%s of %s' % (opname, v.dt))

    def reshape(self, v, shape):
        shape = tuple(int(s) for s in shape)
        if shape == v.shape:
            return v
        return self.emit1('reshape', [v], v.dt, shape, {'shape': list(shape)})

    def binary(self, op, a, b, dt=None):
        shape = bcast(a.shape, b.shape)
        return self.emit1(op, [a, b], dt or a.dt, shape)

    def unary(self, op, a, attrs=None):
        return self.emit1(op, [a], a.dt, a.shape, attrs)

    # -- conversion --------------------------------------------------------

    def convert(self):
        g = self.model.graph
        inits = {t.name: t for t in g.initializer}
        if any(n.domain not in ('', 'ai.onnx') for n in g.node):
            raise Skip('op domain not converted',
                       ','.join(sorted({n.domain for n in g.node})))
        for t in g.initializer:
            dt = ONNX_DTYPES.get(t.data_type)
            if dt is None:
                raise unsupported_dtype(t.data_type, 'initializer ' + t.name)
            self.env[t.name] = V(dt, t.dims, const=tensor_value(t, dt))
        real_inputs = [i for i in g.input if i.name not in inits]
        if len(real_inputs) != len(self.inputs):
            raise Skip('test data does not match the graph inputs', '')
        used_names = set()
        for vi, data in zip(real_inputs, self.inputs):
            dt = self.value_info_dtype(vi, 'input ' + vi.name)
            data = proto_value(data, dt)
            name = re.sub(r'[^A-Za-z0-9_.]', '_', vi.name) or 'arg'
            while name in used_names:
                name += '_'
            used_names.add(name)
            arg = {'name': name, 'used': False, 'dt': dt, 'data': data}
            v = V(dt, data.shape, ref='%' + name, spec=data, arg=arg)
            if dt == 'bf16':
                # .npy has no bf16: the argument is f32 (exact), cast to
                # bf16 at its first use.
                arg['dt'] = 'f32'
                v.ref = None
                v.lazy = self.bf16_cast(arg, v.shape)
            self.args.append(arg)
            self.env[vi.name] = v
        for node in g.node:
            self.node(node)
        outs = []
        for vo in g.output:
            v = self.env.get(vo.name)
            if v is None:
                raise Skip('invalid model', 'output %s undefined' % vo.name)
            self.value_info_dtype(vo, 'output ' + vo.name)
            if v.dt == 'bf16':
                v = self.emit1('cast', [v], 'f32', v.shape,
                               {'dtype': DType('f32')})
            outs.append(v)
        refs = [self.ref(v) for v in outs]
        params = ['%%%s: %s' % (a['name'], fmt_type(a['dt'], a['data'].shape))
                  for a in self.args if a['used']]
        rtypes = [fmt_type(v.dt, v.shape) for v in outs]
        rt = rtypes[0] if len(rtypes) == 1 else '(%s)' % ', '.join(rtypes)
        text = ['// %s: converted from the ONNX backend node test (opset %s)'
                % (self.name, self.opset),
                'func @%s(%s) -> %s {' % (self.name, ', '.join(params), rt)]
        text += self.lines
        text.append('  return ' + ', '.join(refs))
        text.append('}')
        return '\n'.join(text) + '\n', outs

    def bf16_cast(self, arg, shape):
        def emit():
            arg['used'] = True
            r = '%%%s.bf16' % arg['name']
            self.lines.append('  %s = cast(%%%s) {dtype = bf16} : %s' % (
                r, arg['name'], fmt_type('bf16', shape)))
            return r
        return emit

    def value_info_dtype(self, vi, where):
        t = vi.type
        if not t.HasField('tensor_type'):
            raise Skip('non-tensor input or output (sequence, optional, map)',
                       where)
        et = t.tensor_type.elem_type
        dt = ONNX_DTYPES.get(et)
        if dt is None:
            raise unsupported_dtype(et, where)
        return dt

    def node(self, node):
        op = node.op_type
        fn = getattr(self, 'op_' + op, None)
        if fn is None:
            raise Skip('op without a .raf equivalent', op)
        ins = [self.env[n] if n else None for n in node.input]
        for n, v in zip(node.input, ins):
            if n and v is None:
                raise Skip('invalid model', 'undefined input ' + n)
        attrs = {}
        for a in node.attribute:
            val = helper.get_attribute_value(a)
            if isinstance(val, bytes):
                val = val.decode()
            attrs[a.name] = val
        outs = fn(node, ins, attrs)
        if not isinstance(outs, (list, tuple)):
            outs = [outs]
        names = list(node.output)
        if len(outs) < len([n for n in names if n]):
            raise Skip('optional output not converted',
                       '%s output %d' % (op, len(outs)))
        for n, v in zip(names, outs):
            if n:
                self.env[n] = v

    # -- folding of values known at conversion time --------------------------

    def all_const(self, ins):
        return all(v is None or v.const is not None for v in ins)

    def folded(self, a, dt=None):
        a = np.asarray(a)
        if dt is None:
            dt = numpy_to_raf(a.dtype)
        return V(dt, a.shape, const=a.astype(NP_DTYPES['f32' if dt == 'bf16'
                                                         else dt]))

    # -- ops: elementwise ---------------------------------------------------

    def _unary(op, allowed):
        def f(self, node, ins, attrs):
            self.check_dt(ins[0], allowed, op)
            if ins[0].const is not None and op == 'neg' and \
                    ins[0].dt in INTS:
                return self.folded(-ins[0].const, ins[0].dt)
            return self.unary(op, ins[0])
        return f

    op_Abs = _unary('abs', NUMBERS)
    op_Neg = _unary('neg', ('f64', 'f32', 'f16', 'bf16', 'i64', 'i32', 'i8'))
    op_Exp = _unary('exp', FLOATS)
    op_Log = _unary('log', FLOATS)
    op_Sqrt = _unary('sqrt', FLOATS)
    op_Tanh = _unary('tanh', FLOATS)
    op_Sigmoid = _unary('sigmoid', FLOATS)
    op_Relu = _unary('relu', NUMBERS)
    op_Erf = _unary('erf', FLOATS)
    op_Cos = _unary('cos', FLOATS)
    op_Sin = _unary('sin', FLOATS)

    def op_Gelu(self, node, ins, attrs):
        self.check_dt(ins[0], FLOATS, 'gelu')
        return self.unary('gelu', ins[0], {'approximate':
                                           attrs.get('approximate', 'none')}
                          if attrs.get('approximate', 'none') != 'none'
                          else None)

    def op_Reciprocal(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'div')
        return self.binary('div', self.scalar(1, x.dt), x)

    def op_Identity(self, node, ins, attrs):
        return ins[0]

    def _binary(op, allowed, fold=None):
        def f(self, node, ins, attrs):
            a, b = ins
            if a.dt != b.dt:
                raise Skip('invalid model', 'operand types differ')
            if fold and self.all_const(ins) and a.dt in INTS:
                return self.folded(fold(a.const, b.const), a.dt)
            if a.dt not in allowed:
                if op == 'div' and a.dt in INTS:
                    raise Skip('integer Div (.raf div is true division)', '')
                self.check_dt(a, allowed, op)
            return self.binary(op, a, b)
        return f

    op_Add = _binary('add', NUMBERS, lambda a, b: a + b)
    op_Sub = _binary('sub', NUMBERS, lambda a, b: a - b)
    op_Mul = _binary('mul', NUMBERS, lambda a, b: a * b)
    op_Div = _binary('div', FLOATS)

    def op_Pow(self, node, ins, attrs):
        x, y = ins
        self.check_dt(x, NUMBERS, 'pow')
        if y.dt != x.dt:
            # ONNX lets the exponent have another type; .raf casts it first.
            yv = self.known(y, 'a Pow exponent of another element type')
            conv = np.asarray(yv).astype(NP_DTYPES[x.dt])
            if not np.array_equal(conv.astype(yv.dtype), yv):
                raise Skip('semantics differ', 'Pow exponent not exact in '
                           'the base type')
            y = self.emit1('cast', [y], x.dt, y.shape, {'dtype': DType(x.dt)})
        return self.binary('pow', x, y)

    def _compare(op, allowed):
        def f(self, node, ins, attrs):
            a, b = ins
            self.check_dt(a, allowed, op)
            return self.binary(op, a, b, dt='bool')
        return f

    op_Equal = _compare('eq', ANY)
    op_Less = _compare('lt', NUMBERS)
    op_LessOrEqual = _compare('le', NUMBERS)
    op_Greater = _compare('gt', NUMBERS)
    op_GreaterOrEqual = _compare('ge', NUMBERS)

    def op_Not(self, node, ins, attrs):
        return self.binary('eq', ins[0], self.scalar(False, 'bool'), 'bool')

    def op_And(self, node, ins, attrs):
        a, b = ins
        shape = bcast(a.shape, b.shape)
        return self.emit1('where', [a, b, self.scalar(False, 'bool')], 'bool',
                          shape)

    def op_Or(self, node, ins, attrs):
        a, b = ins
        shape = bcast(a.shape, b.shape)
        return self.emit1('where', [a, self.scalar(True, 'bool'), b], 'bool',
                          shape)

    def op_Xor(self, node, ins, attrs):
        return self.binary('ne', ins[0], ins[1], 'bool')

    def op_Where(self, node, ins, attrs):
        c, a, b = ins
        shape = bcast(c.shape, a.shape, b.shape)
        return self.emit1('where', [c, a, b], a.dt, shape)

    def _chain(op):
        def f(self, node, ins, attrs):
            self.check_dt(ins[0], NUMBERS, op)
            acc = ins[0]
            for v in ins[1:]:
                acc = self.binary(op, acc, v)
            return acc
        return f

    op_Max = _chain('maximum')
    op_Min = _chain('minimum')
    op_Sum = _chain('add')

    def op_Mean(self, node, ins, attrs):
        self.check_dt(ins[0], FLOATS, 'div')
        acc = ins[0]
        for v in ins[1:]:
            acc = self.binary('add', acc, v)
        return self.binary('div', acc, self.scalar(len(ins), acc.dt))

    def op_Cast(self, node, ins, attrs):
        x = ins[0]
        to = ONNX_DTYPES.get(attrs['to'])
        if to is None:
            raise unsupported_dtype(attrs['to'], 'Cast to')
        if to == 'bf16' and x.dt in ('f32', 'f64'):
            raise Skip('semantics differ', 'the 1.12 test data truncates '
                       'to bfloat16; .raf rounds to nearest even')
        if x.const is not None and to in INTS + ('bool',) and \
                x.dt in INTS + ('bool',):
            return self.folded(x.const.astype(NP_DTYPES[to]), to)
        return self.emit1('cast', [x], to, x.shape, {'dtype': DType(to)})

    def op_CastLike(self, node, ins, attrs):
        x, t = ins
        if t.dt == 'bf16' and x.dt in ('f32', 'f64'):
            raise Skip('semantics differ', 'the 1.12 test data truncates '
                       'to bfloat16; .raf rounds to nearest even')
        return self.emit1('cast', [x], t.dt, x.shape, {'dtype': DType(t.dt)})

    def op_Clip(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, NUMBERS, 'maximum')
        if self.opset < 11:
            lo = attrs.get('min')
            hi = attrs.get('max')
            lo = None if lo is None else self.scalar(lo, x.dt)
            hi = None if hi is None else self.scalar(hi, x.dt)
        else:
            lo = ins[1] if len(ins) > 1 else None
            hi = ins[2] if len(ins) > 2 else None
        if lo is not None:
            x = self.binary('maximum', x, lo)
        if hi is not None:
            x = self.binary('minimum', x, hi)
        return x

    def op_LeakyRelu(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'mul')
        alpha = attrs.get('alpha', 0.01)
        neg = self.binary('lt', x, self.scalar(0, x.dt), 'bool')
        ax = self.binary('mul', x, self.scalar(alpha, x.dt))
        return self.emit1('where', [neg, ax, x], x.dt, x.shape)

    def op_PRelu(self, node, ins, attrs):
        x, slope = ins
        self.check_dt(x, NUMBERS, 'mul')
        neg = self.binary('lt', x, self.scalar(0, x.dt), 'bool')
        ax = self.binary('mul', x, slope)
        return self.emit1('where', [neg, ax, x], x.dt, bcast(x.shape,
                                                             slope.shape))

    def op_ThresholdedRelu(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'gt')
        alpha = attrs.get('alpha', 1.0)
        gt = self.binary('gt', x, self.scalar(alpha, x.dt), 'bool')
        return self.emit1('where', [gt, x, self.scalar(0, x.dt)], x.dt,
                          x.shape)

    def _elu_neg(self, x, alpha):
        # alpha * (exp(x) - 1)
        e = self.unary('exp', x)
        e1 = self.binary('sub', e, self.scalar(1, x.dt))
        return self.binary('mul', e1, self.scalar(alpha, x.dt))

    def op_Elu(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'exp')
        neg = self.binary('lt', x, self.scalar(0, x.dt), 'bool')
        return self.emit1('where', [neg, self._elu_neg(x, attrs.get('alpha',
                                                                    1.0)), x],
                          x.dt, x.shape)

    def op_Selu(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'exp')
        alpha = attrs.get('alpha', 1.67326319217681884765625)
        gamma = attrs.get('gamma', 1.05070102214813232421875)
        # gamma * (alpha * e^x - alpha) for x <= 0, gamma * x for x > 0
        pos = self.binary('gt', x, self.scalar(0, x.dt), 'bool')
        e = self.binary('mul', self.unary('exp', x), self.scalar(alpha, x.dt))
        e = self.binary('sub', e, self.scalar(alpha, x.dt))
        w = self.emit1('where', [pos, x, e], x.dt, x.shape)
        return self.binary('mul', w, self.scalar(gamma, x.dt))

    def op_Celu(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'exp')
        alpha = attrs.get('alpha', 1.0)
        # max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
        xa = self.binary('div', x, self.scalar(alpha, x.dt))
        e = self._elu_neg(xa, alpha)
        a = self.binary('maximum', x, self.scalar(0, x.dt))
        b = self.binary('minimum', e, self.scalar(0, x.dt))
        return self.binary('add', a, b)

    def _hardsigmoid(self, x, alpha, beta):
        y = self.binary('mul', x, self.scalar(alpha, x.dt))
        y = self.binary('add', y, self.scalar(beta, x.dt))
        y = self.binary('maximum', y, self.scalar(0, x.dt))
        return self.binary('minimum', y, self.scalar(1, x.dt))

    def op_HardSigmoid(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'mul')
        return self._hardsigmoid(x, attrs.get('alpha', 0.2),
                                 attrs.get('beta', 0.5))

    def op_HardSwish(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'mul')
        return self.binary('mul', x, self._hardsigmoid(x, 1 / 6, 0.5))

    def op_Softsign(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'div')
        d = self.binary('add', self.unary('abs', x), self.scalar(1, x.dt))
        return self.binary('div', x, d)

    def op_Softplus(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'log')
        e = self.binary('add', self.unary('exp', x), self.scalar(1, x.dt))
        return self.unary('log', e)

    def op_Sign(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, NUMBERS, 'gt')
        z = self.scalar(0, x.dt)
        pos = self.binary('gt', x, z, 'bool')
        neg = self.binary('lt', x, z, 'bool')
        inner = self.emit1('where', [neg, self.scalar(-1, x.dt), z], x.dt,
                           x.shape) if x.dt != 'u8' else \
            self.emit1('where', [neg, z, z], x.dt, x.shape)
        return self.emit1('where', [pos, self.scalar(1, x.dt), inner], x.dt,
                          x.shape)

    def op_Shrink(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'add')
        lambd = attrs.get('lambd', 0.5)
        bias = attrs.get('bias', 0.0)
        lo = self.binary('lt', x, self.scalar(-lambd, x.dt), 'bool')
        hi = self.binary('gt', x, self.scalar(lambd, x.dt), 'bool')
        xp = self.binary('add', x, self.scalar(bias, x.dt))
        xm = self.binary('sub', x, self.scalar(bias, x.dt))
        inner = self.emit1('where', [hi, xm, self.scalar(0, x.dt)], x.dt,
                           x.shape)
        return self.emit1('where', [lo, xp, inner], x.dt, x.shape)

    def op_IsNaN(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'ne')
        return self.binary('ne', x, x, 'bool')

    def op_IsInf(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'eq')
        pos = attrs.get('detect_positive', 1)
        neg = attrs.get('detect_negative', 1)
        if pos and neg:
            return self.binary('eq', self.unary('abs', x),
                               self.scalar(np.inf, x.dt), 'bool')
        if pos:
            return self.binary('eq', x, self.scalar(np.inf, x.dt), 'bool')
        if neg:
            return self.binary('eq', x, self.scalar(-np.inf, x.dt), 'bool')
        return self.const(False, 'bool', x.shape)

    # -- ops: constants and shapes -------------------------------------------

    def op_Constant(self, node, ins, attrs):
        if 'value' in attrs:
            t = attrs['value']
            dt = ONNX_DTYPES.get(t.data_type)
            if dt is None:
                raise unsupported_dtype(t.data_type, 'Constant')
            return V(dt, t.dims, const=tensor_value(t, dt))
        for k, dt in (('value_float', 'f32'), ('value_int', 'i64')):
            if k in attrs:
                return self.folded(np.array(attrs[k]), dt)
        for k, dt in (('value_floats', 'f32'), ('value_ints', 'i64')):
            if k in attrs:
                return self.folded(np.array(attrs[k]), dt)
        raise Skip('attribute not converted', 'Constant ' + ','.join(attrs))

    def op_Shape(self, node, ins, attrs):
        s = np.array(ins[0].shape, dtype=np.int64)
        start = attrs.get('start', 0)
        end = attrs.get('end', None)
        return self.folded(s[start:end], 'i64')

    def op_Size(self, node, ins, attrs):
        return self.folded(np.array(int(np.prod(ins[0].shape)),
                                    dtype=np.int64), 'i64')

    def op_ConstantOfShape(self, node, ins, attrs):
        shape = [int(s) for s in self.known(ins[0], 'ConstantOfShape shape')]
        if 'value' in attrs:
            t = attrs['value']
            dt = ONNX_DTYPES.get(t.data_type)
            if dt is None:
                raise unsupported_dtype(t.data_type, 'ConstantOfShape')
            val = tensor_value(t, dt).reshape(())
        else:
            dt, val = 'f32', np.float32(0)
        return self.const(val, dt, tuple(shape))

    def op_EyeLike(self, node, ins, attrs):
        x = ins[0]
        dt = ONNX_DTYPES.get(attrs['dtype']) if 'dtype' in attrs else x.dt
        if dt is None:
            raise unsupported_dtype(attrs['dtype'], 'EyeLike')
        if x.rank != 2:
            raise Skip('invalid model', 'EyeLike of rank %d' % x.rank)
        return self.const(np.eye(x.shape[0], x.shape[1], attrs.get('k', 0)),
                          dt, x.shape)

    # -- ops: shape manipulation ---------------------------------------------

    def op_Reshape(self, node, ins, attrs):
        x = ins[0]
        if self.opset < 5:
            shape = list(attrs['shape'])
        else:
            shape = [int(s) for s in self.known(ins[1], 'Reshape shape')]
        if not attrs.get('allowzero', 0):
            shape = [x.shape[i] if s == 0 else s for i, s in enumerate(shape)]
        out = list(shape)
        if -1 in out:
            known = int(np.prod([s for s in out if s != -1]))
            out[out.index(-1)] = int(np.prod(x.shape)) // known if known \
                else 0
        if x.const is not None:
            return self.folded(x.const.reshape(out), x.dt)
        return self.emit1('reshape', [x], x.dt, out, {'shape': shape})

    def op_Flatten(self, node, ins, attrs):
        x = ins[0]
        axis = attrs.get('axis', 1)
        axis = axis + x.rank if axis < 0 else axis
        shape = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
        if x.const is not None:
            return self.folded(x.const.reshape(shape), x.dt)
        return self.emit1('reshape', [x], x.dt, shape,
                          {'shape': list(shape)})

    def op_Squeeze(self, node, ins, attrs):
        x = ins[0]
        if self.opset < 13:
            axes = attrs.get('axes')
        else:
            axes = self.known(ins[1], 'Squeeze axes') \
                if len(ins) > 1 and ins[1] is not None else None
        if axes is None:
            axes = [i for i, s in enumerate(x.shape) if s == 1]
        axes = {norm_axis(a, x.rank) for a in axes}
        shape = [s for i, s in enumerate(x.shape) if i not in axes]
        if x.const is not None:
            return self.folded(x.const.reshape(shape), x.dt)
        return self.emit1('reshape', [x], x.dt, shape, {'shape': shape})

    def op_Unsqueeze(self, node, ins, attrs):
        x = ins[0]
        if self.opset < 13:
            axes = attrs['axes']
        else:
            axes = self.known(ins[1], 'Unsqueeze axes')
        r = x.rank + len(axes)
        axes = sorted(norm_axis(a, r) for a in axes)
        shape = list(x.shape)
        for a in axes:
            shape.insert(a, 1)
        if x.const is not None:
            return self.folded(x.const.reshape(shape), x.dt)
        return self.emit1('reshape', [x], x.dt, shape, {'shape': shape})

    def op_Transpose(self, node, ins, attrs):
        x = ins[0]
        perm = attrs.get('perm')
        shape = x.shape[::-1] if perm is None else \
            tuple(x.shape[p] for p in perm)
        return self.emit1('transpose', [x], x.dt, shape,
                          {'perm': list(perm)} if perm is not None else None)

    def op_Expand(self, node, ins, attrs):
        x = ins[0]
        shape = [int(s) for s in self.known(ins[1], 'Expand shape')]
        out = bcast(x.shape, shape)
        return self.emit1('broadcast_to', [x], x.dt, out,
                          {'shape': list(out)})

    def op_Slice(self, node, ins, attrs):
        x = ins[0]
        if self.opset < 10:
            starts, ends = attrs['starts'], attrs['ends']
            axes, steps = attrs.get('axes'), None
        else:
            starts = self.known(ins[1], 'Slice starts')
            ends = self.known(ins[2], 'Slice ends')
            axes = self.known(ins[3], 'Slice axes') \
                if len(ins) > 3 and ins[3] is not None else None
            steps = self.known(ins[4], 'Slice steps') \
                if len(ins) > 4 and ins[4] is not None else None
        starts = [int(s) for s in starts]
        ends = [int(s) for s in ends]
        if axes is None:
            axes = list(range(len(starts)))
        if steps is None:
            steps = [1] * len(starts)
        begin = [0] * x.rank
        end = list(x.shape)
        strides = [1] * x.rank
        for a, b, e, s in zip(axes, starts, ends, steps):
            a = norm_axis(a, x.rank)
            begin[a], end[a], strides[a] = b, e, int(s)
        idx = tuple(slice(b, e, s) for b, e, s in zip(begin, end, strides))
        shape = np.empty(x.shape, dtype=np.bool_)[idx].shape
        if x.const is not None:
            return self.folded(x.const[idx], x.dt)
        attrs = {'begin': begin, 'end': end}
        if any(s != 1 for s in strides):
            attrs['strides'] = strides
        return self.emit1('slice', [x], x.dt, shape, attrs)

    def op_Concat(self, node, ins, attrs):
        axis = attrs['axis']
        if self.all_const(ins):
            return self.folded(np.concatenate([v.const for v in ins], axis),
                               ins[0].dt)
        x = ins[0]
        a = norm_axis(axis, x.rank)
        shape = list(x.shape)
        shape[a] = sum(v.shape[a] for v in ins)
        return self.emit1('concat', ins, x.dt, shape, {'axis': axis})

    def op_Split(self, node, ins, attrs):
        x = ins[0]
        axis = attrs.get('axis', 0)
        a = norm_axis(axis, x.rank)
        n = len(node.output)
        if self.opset < 13:
            split = attrs.get('split')
        else:
            split = self.known(ins[1], 'Split sizes') \
                if len(ins) > 1 and ins[1] is not None else None
        if split is not None and len(split) == 0:
            split = None
        if split is None:
            if 'num_outputs' in attrs or x.shape[a] % n:
                raise Skip('attribute not converted', 'uneven Split')
            sizes = [x.shape[a] // n] * n
            attrs2 = {'axis': axis, 'sections': n}
        else:
            sizes = [int(s) for s in split]
            if any(s <= 0 for s in sizes):
                raise Skip('split sizes of 0 (.raf sizes are positive)', '')
            attrs2 = {'axis': axis, 'sizes': sizes}
        results = []
        for s in sizes:
            shape = list(x.shape)
            shape[a] = s
            results.append((x.dt, shape))
        return self.emit('split', [x], attrs2, results)

    def op_Gather(self, node, ins, attrs):
        x, idx = ins
        axis = attrs.get('axis', 0)
        a = norm_axis(axis, x.rank)
        shape = x.shape[:a] + idx.shape + x.shape[a + 1:]
        if self.all_const(ins):
            return self.folded(np.take(x.const, idx.const, axis=a), x.dt)
        self.check_dt(idx, INTS, 'take indices')
        return self.emit1('take', [x, idx], x.dt, shape,
                          {'axis': axis} if axis else None)

    def op_Tile(self, node, ins, attrs):
        x, reps = ins
        reps = [int(r) for r in self.known(reps, 'Tile repeats')]
        # x [s0, s1, ..] -> [1, s0, 1, s1, ..] -> [r0, s0, r1, s1, ..]
        inter = []
        wide = []
        for s, r in zip(x.shape, reps):
            inter += [1, s]
            wide += [r, s]
        y = self.reshape(x, inter)
        y = self.emit1('broadcast_to', [y], x.dt, wide, {'shape': wide})
        return self.reshape(y, [s * r for s, r in zip(x.shape, reps)])

    def op_DepthToSpace(self, node, ins, attrs):
        x = ins[0]
        b = attrs['blocksize']
        n, c, h, w = x.shape
        if attrs.get('mode', 'DCR') == 'DCR':
            t = self.reshape(x, [n, b, b, c // (b * b), h, w])
            perm = [0, 3, 4, 1, 5, 2]
        else:
            t = self.reshape(x, [n, c // (b * b), b, b, h, w])
            perm = [0, 1, 4, 2, 5, 3]
        t = self.emit1('transpose', [t], x.dt,
                       [t.shape[p] for p in perm], {'perm': perm})
        return self.reshape(t, [n, c // (b * b), h * b, w * b])

    def op_SpaceToDepth(self, node, ins, attrs):
        x = ins[0]
        b = attrs['blocksize']
        n, c, h, w = x.shape
        t = self.reshape(x, [n, c, h // b, b, w // b, b])
        perm = [0, 3, 5, 1, 2, 4]
        t = self.emit1('transpose', [t], x.dt,
                       [t.shape[p] for p in perm], {'perm': perm})
        return self.reshape(t, [n, c * b * b, h // b, w // b])

    def op_Trilu(self, node, ins, attrs):
        x = ins[0]
        k = int(self.known(ins[1], 'Trilu k')) \
            if len(ins) > 1 and ins[1] is not None else 0
        rows, cols = x.shape[-2:]
        ones = np.ones((rows, cols), dtype=np.bool_)
        mask = np.triu(ones, k) if attrs.get('upper', 1) else \
            np.tril(ones, k)
        m = self.const(mask, 'bool', (rows, cols))
        return self.emit1('where', [m, x, self.scalar(0, x.dt)], x.dt,
                          x.shape)

    # -- ops: reductions ----------------------------------------------------

    def _reduce_axes(self, node, ins, attrs, from_input):
        x = ins[0]
        if from_input:
            axes = self.known(ins[1], node.op_type + ' axes') \
                if len(ins) > 1 and ins[1] is not None else None
        else:
            axes = attrs.get('axes')
        keep = bool(attrs.get('keepdims', 1))
        if axes is not None and len(axes) == 0:
            axes = None
        if axes is None:
            if attrs.get('noop_with_empty_axes', 0):
                return x, [], keep, x.shape
            red = list(range(x.rank))
        else:
            red = [norm_axis(a, x.rank) for a in axes]
        shape = tuple(1 if i in red else s for i, s in enumerate(x.shape)) \
            if keep else tuple(s for i, s in enumerate(x.shape)
                               if i not in red)
        axes = None if axes is None else [int(a) for a in axes]
        return x, axes, keep, shape

    def _reduce(self, op, x, axes, keep, shape):
        attrs = {}
        if axes is not None:
            attrs['axes'] = axes
        if keep:
            attrs['keepdims'] = True
        return self.emit1(op, [x], x.dt, shape, attrs)

    def _reducer(op, allowed, pre=None, post=None, axes_input_from=18):
        def f(self, node, ins, attrs):
            x, axes, keep, shape = self._reduce_axes(
                node, ins, attrs, self.opset >= axes_input_from)
            self.check_dt(x, allowed, op)
            if pre:
                x = pre(self, x)
            y = self._reduce(op, x, axes, keep, shape)
            if post:
                y = post(self, y)
            return y
        return f

    op_ReduceSum = _reducer('sum', NUMBERS, axes_input_from=13)
    op_ReduceMean = _reducer('mean', FLOATS)
    op_ReduceMax = _reducer('max', NUMBERS)
    op_ReduceMin = _reducer('min', NUMBERS)
    op_ReduceL1 = _reducer('sum', NUMBERS,
                           pre=lambda self, x: self.unary('abs', x))
    op_ReduceL2 = _reducer('sum', FLOATS,
                           pre=lambda self, x: self.binary('mul', x, x),
                           post=lambda self, y: self.unary('sqrt', y))
    op_ReduceSumSquare = _reducer('sum', NUMBERS,
                                  pre=lambda self, x: self.binary('mul', x,
                                                                  x))
    op_ReduceLogSum = _reducer('sum', FLOATS,
                               post=lambda self, y: self.unary('log', y))
    op_ReduceLogSumExp = _reducer('sum', FLOATS,
                                  pre=lambda self, x: self.unary('exp', x),
                                  post=lambda self, y: self.unary('log', y))

    def _argmax(self, node, ins, attrs, negate):
        x = ins[0]
        axis = attrs.get('axis', 0)
        a = norm_axis(axis, x.rank)
        keep = bool(attrs.get('keepdims', 1))
        if negate:
            if x.dt not in FLOATS:
                raise Skip('semantics differ', 'ArgMin of integers: '
                           'argmax(neg(x)) overflows')
            x = self.unary('neg', x)
        self.check_dt(x, NUMBERS, 'argmax')
        last = attrs.get('select_last_index', 0)
        if last:
            # The last largest is the first of the reversed axis.
            n = x.shape[a]
            x = self.emit1('slice', [x], x.dt, x.shape, {
                'begin': [-1 if i == a else 0 for i in range(x.rank)],
                'end': [-n - 1 if i == a else s
                        for i, s in enumerate(x.shape)],
                'strides': [-1 if i == a else 1 for i in range(x.rank)]})
        shape = tuple(1 if i == a else s for i, s in enumerate(x.shape)) \
            if keep else x.shape[:a] + x.shape[a + 1:]
        attrs2 = {'axis': axis}
        if keep:
            attrs2['keepdims'] = True
        y = self.emit1('argmax', [x], 'i64', shape, attrs2)
        if last:
            y = self.binary('sub', self.scalar(x.shape[a] - 1, 'i64'), y)
        return y

    def op_ArgMax(self, node, ins, attrs):
        return self._argmax(node, ins, attrs, False)

    def op_ArgMin(self, node, ins, attrs):
        return self._argmax(node, ins, attrs, True)

    # -- ops: linear algebra -------------------------------------------------

    def op_MatMul(self, node, ins, attrs):
        a, b = ins
        self.check_dt(a, NUMBERS, 'matmul')
        squeeze_a = squeeze_b = False
        if a.rank == 1:
            a = self.reshape(a, (1, a.shape[0]))
            squeeze_a = True
        if b.rank == 1:
            b = self.reshape(b, (b.shape[0], 1))
            squeeze_b = True
        batch = bcast(a.shape[:-2], b.shape[:-2])
        shape = batch + (a.shape[-2], b.shape[-1])
        y = self.emit1('matmul', [a, b], a.dt, shape)
        out = list(shape)
        if squeeze_b:
            out.pop(-1)
        if squeeze_a:
            out.pop(-2 if not squeeze_b else -1)
        return self.reshape(y, out)

    def op_Gemm(self, node, ins, attrs):
        a, b = ins[0], ins[1]
        c = ins[2] if len(ins) > 2 else None
        self.check_dt(a, NUMBERS, 'matmul')
        ta, tb = bool(attrs.get('transA', 0)), bool(attrs.get('transB', 0))
        m = a.shape[1] if ta else a.shape[0]
        n = b.shape[0] if tb else b.shape[1]
        mattrs = {}
        if ta:
            mattrs['transpose_a'] = True
        if tb:
            mattrs['transpose_b'] = True
        y = self.emit1('matmul', [a, b], a.dt, (m, n), mattrs)
        alpha = attrs.get('alpha', 1.0)
        beta = attrs.get('beta', 1.0)
        if alpha != 1.0:
            y = self.binary('mul', y, self.scalar(alpha, a.dt))
        if c is not None:
            if beta != 1.0:
                c = self.binary('mul', c, self.scalar(beta, a.dt))
            y = self.binary('add', y, c)
        return y

    # -- ops: nn -------------------------------------------------------------

    def _softmax(self, op, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, op)
        if self.opset >= 13:
            axis = attrs.get('axis', -1)
            return self.emit1(op, [x], x.dt, x.shape,
                              {'axis': axis} if axis != -1 else None)
        # Before opset 13: the input is coerced to 2-D at axis.
        axis = norm_axis(attrs.get('axis', 1), x.rank)
        flat = (int(np.prod(x.shape[:axis])), int(np.prod(x.shape[axis:])))
        y = self.reshape(x, flat)
        y = self.emit1(op, [y], x.dt, flat)
        return self.reshape(y, x.shape)

    def op_Softmax(self, node, ins, attrs):
        return self._softmax('softmax', ins, attrs)

    def op_LogSoftmax(self, node, ins, attrs):
        return self._softmax('log_softmax', ins, attrs)

    def op_Hardmax(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'argmax')
        if self.opset >= 13:
            axis = norm_axis(attrs.get('axis', -1), x.rank)
            shape = x.shape
            y = x
        else:
            axis = norm_axis(attrs.get('axis', 1), x.rank)
            shape = (int(np.prod(x.shape[:axis])),
                     int(np.prod(x.shape[axis:])))
            y = self.reshape(x, shape)
            axis = 1
        kshape = tuple(1 if i == axis else s for i, s in enumerate(shape))
        idx = self.emit1('argmax', [y], 'i64', kshape,
                         {'axis': axis, 'keepdims': True})
        iota_shape = tuple(shape[axis] if i == axis else 1
                           for i in range(len(shape)))
        iota = self.const(np.arange(shape[axis]).reshape(iota_shape), 'i64',
                          iota_shape)
        hot = self.binary('eq', idx, iota, 'bool')
        r = self.emit1('cast', [hot], x.dt, shape, {'dtype': DType(x.dt)})
        return self.reshape(r, x.shape)

    def op_LayerNormalization(self, node, ins, attrs):
        x, scale = ins[0], ins[1]
        bias = ins[2] if len(ins) > 2 else None
        self.check_dt(x, FLOATS, 'layer_norm')
        axis = attrs.get('axis', -1)
        a = norm_axis(axis, x.rank)
        eps = attrs.get('epsilon', 1e-5)
        norm_shape = x.shape[a:]
        if scale.shape != norm_shape:
            scale = self.emit1('broadcast_to', [scale], x.dt, norm_shape,
                               {'shape': list(norm_shape)})
        if bias is None:
            bias = self.const(0, x.dt, norm_shape)
        elif bias.shape != norm_shape:
            bias = self.emit1('broadcast_to', [bias], x.dt, norm_shape,
                              {'shape': list(norm_shape)})
        la = {}
        if axis != -1:
            la['axis'] = axis
        la['eps'] = eps
        y = self.emit1('layer_norm', [x, scale, bias], x.dt, x.shape, la)
        outs = [y]
        if len(node.output) > 1:
            # Mean and InvStdDev: the statistics, reduced with keepdims.
            axes = list(range(a, x.rank))
            kshape = x.shape[:a] + (1,) * (x.rank - a)
            mean = self._reduce('mean', x, axes, True, kshape)
            d = self.binary('sub', x, mean)
            var = self._reduce('mean', self.binary('mul', d, d), axes, True,
                               kshape)
            var = self.binary('add', var, self.scalar(eps, x.dt))
            outs += [mean, self.unary('rsqrt', var)]
        return outs

    def op_InstanceNormalization(self, node, ins, attrs):
        x, scale, bias = ins
        self.check_dt(x, FLOATS, 'layer_norm')
        eps = attrs.get('epsilon', 1e-5)
        norm = x.shape[2:]
        y = self.emit1('layer_norm', [x, self.const(1, x.dt, norm),
                                      self.const(0, x.dt, norm)],
                       x.dt, x.shape, {'axis': 2, 'eps': eps})
        cshape = (x.shape[1],) + (1,) * (x.rank - 2)
        y = self.binary('mul', y, self.reshape(scale, cshape))
        return self.binary('add', y, self.reshape(bias, cshape))

    def op_MeanVarianceNormalization(self, node, ins, attrs):
        # The function body of the ONNX op, statement by statement.
        x = ins[0]
        self.check_dt(x, FLOATS, 'mean')
        axes = list(attrs.get('axes', [0, 2, 3]))
        red = [norm_axis(a, x.rank) for a in axes]
        kshape = tuple(1 if i in red else s for i, s in enumerate(x.shape))
        mean = self._reduce('mean', x, axes, True, kshape)
        two = self.scalar(2, x.dt)
        msq = self.binary('pow', mean, two)
        sqm = self._reduce('mean', self.binary('pow', x, two), axes, True,
                           kshape)
        std = self.unary('sqrt', self.binary('sub', sqm, msq))
        d = self.binary('sub', x, mean)
        return self.binary('div', d, self.binary('add', std,
                                                 self.scalar(1e-9, x.dt)))

    def _pad_amounts(self, x, attrs, kernel, strides, dilations):
        """(begin, end) padding of a conv or pool, per spatial dim."""
        nd = len(kernel)
        spatial = x.shape[2:]
        auto = attrs.get('auto_pad', 'NOTSET')
        if auto in ('SAME_UPPER', 'SAME_LOWER'):
            pb, pe = [], []
            for i in range(nd):
                out = -(-spatial[i] // strides[i])
                total = max((out - 1) * strides[i] +
                            (kernel[i] - 1) * dilations[i] + 1 - spatial[i],
                            0)
                small, big = total // 2, total - total // 2
                if auto == 'SAME_UPPER':
                    pb.append(small)
                    pe.append(big)
                else:
                    pb.append(big)
                    pe.append(small)
            return pb, pe
        if auto == 'VALID':
            return [0] * nd, [0] * nd
        pads = list(attrs.get('pads', [0] * (2 * nd)))
        return pads[:nd], pads[nd:]

    def pad(self, x, begins, ends, value):
        """x padded with value (begins, ends per axis; negative crops), as
        concatenations of constant blocks."""
        if any(b < 0 for b in begins) or any(e < 0 for e in ends):
            b = [max(-p, 0) for p in begins]
            e = [s - max(-p, 0) for s, p in zip(x.shape, ends)]
            shape = [ee - bb for bb, ee in zip(b, e)]
            x = self.emit1('slice', [x], x.dt, shape, {'begin': b, 'end': e})
            begins = [max(p, 0) for p in begins]
            ends = [max(p, 0) for p in ends]
        for axis, (b, e) in enumerate(zip(begins, ends)):
            if not b and not e:
                continue
            parts = []
            for n in (b, None, e):
                if n is None:
                    parts.append(x)
                elif n:
                    shape = list(x.shape)
                    shape[axis] = n
                    parts.append(self.const(value, x.dt, shape))
            shape = list(x.shape)
            shape[axis] += b + e
            x = self.emit1('concat', parts, x.dt, shape, {'axis': axis})
        return x

    def _to2d(self, x, nd):
        """1-D conv and pool inputs [N, C, L] become [N, C, 1, L]."""
        if nd == 1:
            return self.reshape(x, x.shape[:2] + (1,) + x.shape[2:])
        if nd != 2:
            raise Skip('%d-D convolution or pooling (.raf has 2-D)' % nd, '')
        return x

    def op_Conv(self, node, ins, attrs):
        x, w = ins[0], ins[1]
        b = ins[2] if len(ins) > 2 else None
        self.check_dt(x, FLOATS, 'conv2d')
        nd = x.rank - 2
        if nd not in (1, 2):
            raise Skip('%d-D convolution or pooling (.raf has 2-D)' % nd, '')
        kernel = list(attrs.get('kernel_shape', w.shape[2:]))
        strides = list(attrs.get('strides', [1] * nd))
        dil = list(attrs.get('dilations', [1] * nd))
        group = attrs.get('group', 1)
        pb, pe = self._pad_amounts(x, attrs, kernel, strides, dil)
        x2 = self._to2d(x, nd)
        w2 = self._to2d(w, nd)
        if nd == 1:
            strides, dil, pb, pe = [1] + strides, [1] + dil, [0] + pb, \
                [0] + pe
        if pb != pe:
            # Asymmetric: zeros concatenated, then no padding.
            x2 = self.pad(x2, [0, 0] + pb, [0, 0] + pe, 0)
            pads = [0, 0]
        else:
            pads = pb
        k = w2.shape[2:]
        oh = (x2.shape[2] + 2 * pads[0] - dil[0] * (k[0] - 1) - 1) \
            // strides[0] + 1
        ow = (x2.shape[3] + 2 * pads[1] - dil[1] * (k[1] - 1) - 1) \
            // strides[1] + 1
        shape = (x.shape[0], w.shape[0], oh, ow)
        ca = {}
        if strides != [1, 1]:
            ca['stride'] = strides
        if pads != [0, 0]:
            ca['padding'] = pads
        if dil != [1, 1]:
            ca['dilation'] = dil
        if group != 1:
            ca['groups'] = group
        y = self.emit1('conv2d', [x2, w2], x.dt, shape, ca)
        if b is not None:
            y = self.binary('add', y, self.reshape(b, (b.shape[0], 1, 1)))
        if nd == 1:
            y = self.reshape(y, (shape[0], shape[1], shape[3]))
        return y

    def _pool(self, op, node, ins, attrs):
        x = ins[0]
        nd = x.rank - 2
        if nd not in (1, 2):
            raise Skip('%d-D convolution or pooling (.raf has 2-D)' % nd, '')
        self.check_dt(x, FLOATS, op)
        if len([o for o in node.output if o]) > 1:
            raise Skip('optional output not converted', 'MaxPool indices')
        kernel = list(attrs['kernel_shape'])
        strides = list(attrs.get('strides', [1] * nd))
        dil = list(attrs.get('dilations', [1] * nd))
        if any(d != 1 for d in dil):
            raise Skip('pooling with dilations (.raf pools have none)', '')
        pb, pe = self._pad_amounts(x, attrs, kernel, strides, dil)
        extra = [0] * nd     # ceil_mode: room for the last, partial window
        for i in range(nd):
            span = x.shape[2 + i] + pb[i] + pe[i] - kernel[i]
            if attrs.get('ceil_mode', 0):
                out = -(-span // strides[i]) + 1
                if (out - 1) * strides[i] >= x.shape[2 + i] + pb[i]:
                    out -= 1     # no window starts in the end padding
                extra[i] = max((out - 1) * strides[i] + kernel[i] -
                               (x.shape[2 + i] + pb[i] + pe[i]), 0)
        x2 = self._to2d(x, nd)
        if nd == 1:
            kernel, strides, pb, pe, extra = [1] + kernel, [1] + strides, \
                [0] + pb, [0] + pe, [0] + extra
        include = attrs.get('count_include_pad', 0)
        direct = pb == pe and not any(extra) and \
            all(2 * p <= k for p, k in zip(pb, kernel)) and \
            (op == 'max_pool2d' or include or not any(pb))
        pa = {'kernel': kernel, 'stride': strides}
        if direct:
            if pb != [0, 0]:
                pa['padding'] = pb
            xp = x2
        else:
            # Padding .raf pools cannot express (asymmetric, over half the
            # kernel, ceil_mode, padding left out of the average): the
            # padding is concatenated, max pools pad with -inf, and an
            # average is divided by the pooled mask of counted positions.
            ends = [e + c for e, c in zip(pe, extra)]
            xp = self.pad(x2, [0, 0] + pb, [0, 0] + ends,
                          -np.inf if op == 'max_pool2d' else 0)
        out = [(xp.shape[2 + i] + 2 * pa.get('padding', [0, 0])[i] -
                kernel[i]) // strides[i] + 1 for i in range(2)]
        y = self.emit1(op, [xp], x.dt, x.shape[:2] + tuple(out), pa)
        if op == 'avg_pool2d' and not direct:
            h, w = x2.shape[2:]
            mask = np.zeros(xp.shape[2:], dtype=np.float64)
            if include:
                mask[:pb[0] + h + pe[0], :pb[1] + w + pe[1]] = 1
            else:
                mask[pb[0]:pb[0] + h, pb[1]:pb[1] + w] = 1
            if not mask.all():
                m = self.const(mask.reshape((1, 1) + mask.shape), x.dt,
                               (1, 1) + mask.shape)
                cnt = self.emit1(op, [m], x.dt, (1, 1) + tuple(out), pa)
                y = self.binary('div', y, cnt)
        if nd == 1:
            y = self.reshape(y, x.shape[:2] + (out[1],))
        return y

    def op_MaxPool(self, node, ins, attrs):
        if attrs.get('storage_order', 0):
            raise Skip('attribute not converted', 'MaxPool storage_order')
        return self._pool('max_pool2d', node, ins, attrs)

    def op_AveragePool(self, node, ins, attrs):
        return self._pool('avg_pool2d', node, ins, attrs)

    def op_Pad(self, node, ins, attrs):
        x = ins[0]
        mode = attrs.get('mode', 'constant')
        if self.opset < 11:
            pads = list(attrs['pads'])
            value = attrs.get('value', 0.0)
        else:
            pads = [int(p) for p in self.known(ins[1], 'Pad pads')]
            value = None
            if len(ins) > 2 and ins[2] is not None:
                value = ins[2]
        if len(ins) > 3 and ins[3] is not None:
            raise Skip('attribute not converted', 'Pad axes')
        r = x.rank
        begins, ends = pads[:r], pads[r:]
        if mode == 'constant':
            if value is None or not isinstance(value, V):
                return self.pad(x, begins, ends, value or 0)
            # A run-time pad value: pad with zeros, then select.
            mask = np.zeros([s + b + e for s, b, e in zip(x.shape, begins,
                                                           ends)], np.bool_)
            mask[tuple(slice(b, b + s) for b, s in zip(begins, x.shape))] = 1
            y = self.pad(x, begins, ends, 0)
            m = self.const(mask, 'bool', mask.shape)
            return self.emit1('where', [m, y, value], x.dt, y.shape)
        if any(p < 0 for p in pads):
            raise Skip('attribute not converted', 'negative pads with mode '
                       + mode)
        for axis in range(r):
            b, e = begins[axis], ends[axis]
            if not b and not e:
                continue
            n = x.shape[axis]
            parts = []

            def sl(begin, end, stride, x=x, axis=axis):
                bb = [0] * r
                ee = list(x.shape)
                st = [1] * r
                bb[axis], ee[axis], st[axis] = begin, end, stride
                shape = list(x.shape)
                shape[axis] = len(range(*slice(begin, end, stride).indices(
                    x.shape[axis])))
                at = {'begin': bb, 'end': ee}
                if stride != 1:
                    at['strides'] = st
                return self.emit1('slice', [x], x.dt, shape, at)

            def widen(v, k, axis=axis):
                shape = list(v.shape)
                shape[axis] = k
                return self.emit1('broadcast_to', [v], v.dt, shape,
                                  {'shape': shape})
            if mode == 'edge':
                if b:
                    parts.append(widen(sl(0, 1, 1), b))
                parts.append(x)
                if e:
                    parts.append(widen(sl(n - 1, n, 1), e))
            elif mode == 'reflect':
                if b >= n or e >= n:
                    raise Skip('invalid model', 'reflect pad too wide')
                if b:
                    parts.append(sl(b, 0, -1))
                parts.append(x)
                if e:
                    end = n - 2 - e
                    parts.append(sl(n - 2, end if end >= 0 else -n - 1, -1))
            else:
                raise Skip('attribute not converted', 'Pad mode ' + mode)
            shape = list(x.shape)
            shape[axis] += b + e
            x = self.emit1('concat', parts, x.dt, shape, {'axis': axis})
        return x

    def op_GlobalAveragePool(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'mean')
        axes = list(range(2, x.rank))
        return self._reduce('mean', x, axes, True,
                            x.shape[:2] + (1,) * len(axes))

    def op_GlobalMaxPool(self, node, ins, attrs):
        x = ins[0]
        self.check_dt(x, FLOATS, 'max')
        axes = list(range(2, x.rank))
        return self._reduce('max', x, axes, True,
                            x.shape[:2] + (1,) * len(axes))

    def op_BatchNormalization(self, node, ins, attrs):
        x, scale, bias, mean, var = ins
        self.check_dt(x, FLOATS, 'batch_norm')
        training = attrs.get('training_mode', 0)
        if self.opset < 7 and not attrs.get('is_test', 0):
            training = 1
        if training or len([o for o in node.output if o]) > 1:
            raise Skip('semantics differ', 'BatchNormalization training: '
                       'ONNX updates the running variance with the biased '
                       'batch variance, .raf (as PyTorch) with the unbiased')
        if attrs.get('spatial', 1) != 1:
            raise Skip('attribute not converted', 'BatchNormalization '
                       'spatial=0')
        c = x.shape[1]
        res = self.emit('batch_norm', [x, scale, bias, mean, var],
                        {'eps': attrs.get('epsilon', 1e-5),
                         'training': False},
                        [(x.dt, x.shape), (x.dt, (c,)), (x.dt, (c,))])
        return res[0]

    def op_Dropout(self, node, ins, attrs):
        x = ins[0]
        if self.opset >= 12:
            ratio = float(self.known(ins[1], 'Dropout ratio')) \
                if len(ins) > 1 and ins[1] is not None else 0.5
            training = bool(self.known(ins[2], 'Dropout training_mode')) \
                if len(ins) > 2 and ins[2] is not None else False
        else:
            ratio = attrs.get('ratio', 0.5)
            training = self.opset < 7 and not attrs.get('is_test', 0)
        if training and ratio != 0:
            raise Skip('random (training-mode Dropout with a ratio > 0)', '')
        if training:
            self.check_dt(x, FLOATS, 'dropout')
            y = self.emit1('dropout', [x, self.scalar(0, 'i64')], x.dt,
                           x.shape, {'p': 0.0})
        else:
            y = x
        outs = [y]
        if len(node.output) > 1 and node.output[1]:
            mdt = 'bool' if self.opset >= 10 else x.dt
            outs.append(self.const(True, mdt, x.shape))
        return outs

    def gather_elements(self, x, idx, axis):
        """ONNX GatherElements as a one-hot selection: for each index, the
        elements of x along axis where an iota equals it, summed (exactly one
        term is not zero)."""
        a = norm_axis(axis, x.rank)
        self.check_dt(idx, INTS, 'take indices')
        n = x.shape[a]
        # x restricted to the index's extent on the other axes
        if any(i != s for d, (i, s) in enumerate(zip(idx.shape, x.shape))
               if d != a):
            shape = [n if d == a else i for d, i in enumerate(idx.shape)]
            x = self.emit1('slice', [x], x.dt, shape,
                           {'begin': [0] * x.rank, 'end': shape})
        if idx.dt != 'i64':
            idx = self.emit1('cast', [idx], 'i64', idx.shape,
                             {'dtype': DType('i64')})
        # negative indices count from the end
        neg = self.binary('lt', idx, self.scalar(0, 'i64'), 'bool')
        wrapped = self.binary('add', idx, self.scalar(n, 'i64'))
        idx = self.emit1('where', [neg, wrapped, idx], 'i64', idx.shape)
        # idx [.., I_a, 1, ..] against iota [1, .., n, ..] at axis a + 1
        ie = self.reshape(idx, idx.shape[:a + 1] + (1,) + idx.shape[a + 1:])
        xe = self.reshape(x, x.shape[:a] + (1,) + x.shape[a:])
        ishape = tuple(n if d == a + 1 else 1 for d in range(x.rank + 1))
        iota = self.const(np.arange(n).reshape(ishape), 'i64', ishape)
        hot = self.binary('eq', ie, iota, 'bool')
        sel = self.emit1('where', [hot, xe, self.scalar(0, x.dt)], x.dt,
                         bcast(hot.shape, xe.shape))
        return self._reduce('sum', sel, [a + 1], False, idx.shape)

    def op_GatherElements(self, node, ins, attrs):
        return self.gather_elements(ins[0], ins[1], attrs.get('axis', 0))

    def nll_loss(self, x, target, weight, ignore, red):
        """NegativeLogLikelihoodLoss as its ONNX function body does it."""
        self.check_dt(x, FLOATS, 'neg')
        t = self.reshape(target, target.shape[:1] + (1,) + target.shape[1:])
        mask = None
        if ignore is not None:
            mask = self.binary('eq', t, self.scalar(ignore, t.dt), 'bool')
            t = self.emit1('where', [mask, self.scalar(0, t.dt), t], t.dt,
                           t.shape)
        g = self.gather_elements(x, t, 1)
        if mask is not None:
            g = self.emit1('where', [mask, self.scalar(0, x.dt), g], x.dt,
                           g.shape)
        loss = self.reshape(self.unary('neg', g), target.shape)
        w = None
        if weight is not None:
            w = self.emit1('take', [weight, self.reshape(t, target.shape)],
                           x.dt, target.shape)
        if mask is not None:
            m = self.reshape(mask, target.shape)
            w = self.emit1('where', [m, self.scalar(0, x.dt),
                                     w if w is not None else
                                     self.scalar(1, x.dt)],
                           x.dt, target.shape)
        if w is not None:
            loss = self.binary('mul', loss, w)
        if red == 'none':
            return loss
        if red == 'sum':
            return self._reduce('sum', loss, None, False, ())
        if w is None:
            return self._reduce('mean', loss, None, False, ())
        return self.binary('div', self._reduce('sum', loss, None, False, ()),
                           self._reduce('sum', w, None, False, ()))

    def op_NegativeLogLikelihoodLoss(self, node, ins, attrs):
        x, target = ins[0], ins[1]
        weight = ins[2] if len(ins) > 2 else None
        return self.nll_loss(x, target, weight, attrs.get('ignore_index'),
                             attrs.get('reduction', 'mean'))

    def op_OneHot(self, node, ins, attrs):
        idx, depth, values = ins
        depth = int(self.known(depth, 'OneHot depth').reshape(()))
        r = idx.rank + 1
        a = norm_axis(attrs.get('axis', -1), r)
        if idx.dt in FLOATS:
            idx = self.emit1('cast', [idx], 'i64', idx.shape,
                             {'dtype': DType('i64')})
        self.check_dt(idx, INTS, 'add')
        neg = self.binary('lt', idx, self.scalar(0, idx.dt), 'bool')
        wrapped = self.binary('add', idx, self.scalar(depth, idx.dt))
        idx = self.emit1('where', [neg, wrapped, idx], idx.dt, idx.shape)
        ie = self.reshape(idx, idx.shape[:a] + (1,) + idx.shape[a:])
        ishape = tuple(depth if d == a else 1 for d in range(r))
        iota = self.const(np.arange(depth).reshape(ishape), idx.dt, ishape)
        hot = self.binary('eq', ie, iota, 'bool')
        off = self.reshape(self.emit1('slice', [values], values.dt, (1,),
                                      {'begin': [0], 'end': [1]}), ())
        on = self.reshape(self.emit1('slice', [values], values.dt, (1,),
                                     {'begin': [1], 'end': [2]}), ())
        return self.emit1('where', [hot, on, off], values.dt, hot.shape)

    def op_SoftmaxCrossEntropyLoss(self, node, ins, attrs):
        x, labels = ins[0], ins[1]
        self.check_dt(x, FLOATS, 'cross_entropy')
        red = attrs.get('reduction', 'mean')
        if len(ins) > 2 and ins[2] is not None:
            # Class weights, which cross_entropy lacks: the ONNX function
            # body, log_softmax then the negative log-likelihood.
            lp = self.emit1('log_softmax', [x], x.dt, x.shape, {'axis': 1})
            loss = self.nll_loss(lp, labels, ins[2],
                                 attrs.get('ignore_index'), red)
            return [loss, lp]
        ca = {}
        if red != 'mean':
            ca['reduction'] = red
        if 'ignore_index' in attrs:
            ca['ignore_index'] = attrs['ignore_index']
        elif labels.spec is not None and np.any(labels.spec == -100):
            raise Skip('semantics differ', 'label -100 without ignore_index')
        # ONNX has the classes on axis 1, .raf on the last axis.
        if x.rank > 2:
            perm = [0] + list(range(2, x.rank)) + [1]
            xt = self.emit1('transpose', [x], x.dt,
                            [x.shape[p] for p in perm], {'perm': perm})
        else:
            xt = x
        shape = labels.shape if red == 'none' else ()
        loss = self.emit1('cross_entropy', [xt, labels], x.dt, shape, ca)
        outs = [loss]
        if len(node.output) > 1 and node.output[1]:
            outs.append(self.emit1('log_softmax', [x], x.dt, x.shape,
                                   {'axis': 1}))
        return outs


def numpy_to_raf(dtype):
    for k, v in NP_DTYPES.items():
        if np.dtype(v) == dtype:
            return k
    raise Skip('element type not in .raf', str(dtype))


def bf16_bits_to_f32(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def tensor_value(t, dt):
    a = numpy_helper.to_array(t)
    if dt == 'bf16':
        return bf16_bits_to_f32(a.astype(np.uint16))
    return np.ascontiguousarray(a.astype(NP_DTYPES[dt]))


def proto_value(a, dt):
    """Test data as loaded by load_pb, in the .npy dtype for .raf type dt."""
    if dt == 'bf16':
        return bf16_bits_to_f32(a.view(np.uint16) if a.dtype == np.uint16
                                else a.astype(np.uint16))
    want = np.dtype(NP_DTYPES[dt])
    if a.dtype != want:
        raise Skip('test data does not match the graph types',
                   '%s vs %s' % (a.dtype, dt))
    return np.ascontiguousarray(a)


def declared_shape(vi):
    t = vi.type.tensor_type
    if not t.HasField('shape'):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField('dim_value'):
            return None
        dims.append(d.dim_value)
    return tuple(dims)


def load_pb(path):
    t = onnx.TensorProto()
    with open(path, 'rb') as f:
        t.ParseFromString(f.read())
    if t.data_type not in ONNX_DTYPES and t.data_type != TensorProto.UINT16:
        raise unsupported_dtype(t.data_type, os.path.basename(path))
    return numpy_helper.to_array(t)


def tolerance(dtypes):
    """atol, rtol for a case whose outputs have these .raf types: the
    loosest float type decides (integers and bool compare exactly)."""
    tol = {'f64': (1e-9, 1e-7), 'f32': (1e-5, 1e-4), 'f16': (1e-3, 5e-3),
           'bf16': (1e-2, 2e-2)}
    best = (0.0, 0.0)
    for d in dtypes:
        if d in tol:
            best = max(best, tol[d])
    return best


def convert_test(d, work):
    name = os.path.basename(d)
    model = onnx.load(os.path.join(d, 'model.onnx'))
    for vi in list(model.graph.input) + list(model.graph.output):
        if not vi.type.HasField('tensor_type'):
            raise Skip('non-tensor input or output (sequence, optional, map)',
                       '')
        et = vi.type.tensor_type.elem_type
        if et not in ONNX_DTYPES:
            raise unsupported_dtype(et, vi.name)
    ds = os.path.join(d, 'test_data_set_0')
    inputs = []
    for p in sorted(glob.glob(os.path.join(ds, 'input_*.pb')),
                    key=lambda p: int(re.findall(r'\d+', os.path.basename(p))
                                      [0])):
        inputs.append(load_pb(p))
    outputs = []
    for p in sorted(glob.glob(os.path.join(ds, 'output_*.pb')),
                    key=lambda p: int(re.findall(r'\d+', os.path.basename(p))
                                      [0])):
        outputs.append(load_pb(p))
    conv = Converter(name, model, inputs)
    text, outs = conv.convert()
    if len(outs) != len(outputs):
        raise Skip('test data does not match the graph outputs', '')
    expected = []
    for v, vo, data in zip(outs, model.graph.output, outputs):
        et = vo.type.tensor_type.elem_type
        if et == TensorProto.BFLOAT16:
            data = bf16_bits_to_f32(data.astype(np.uint16))
        else:
            data = np.ascontiguousarray(data)
        if tuple(data.shape) != v.shape and data.size == int(
                np.prod(v.shape)) and declared_shape(vo) in (None, v.shape):
            # The 1.12 data holds some scalars (Size, SoftmaxCrossEntropyLoss)
            # as [1]; the graph declares them scalars.
            data = data.reshape(v.shape)
        if tuple(data.shape) != v.shape:
            raise RuntimeError('%s: converted output %s has shape %s, the '
                               'test expects %s' % (name, vo.name, v.shape,
                                                    data.shape))
        if np.dtype(NP_DTYPES[v.dt]) != data.dtype:
            raise RuntimeError('%s: converted output %s has type %s, the '
                               'test expects %s' % (name, vo.name, v.dt,
                                                    data.dtype))
        expected.append(data)
    out = os.path.join(work, name)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'case.raf'), 'w') as f:
        f.write(text)
    case = {'name': name, 'function': name, 'inputs': [], 'outputs': []}
    for a in conv.args:
        if not a['used']:
            continue
        fn = 'in_%s.npy' % a['name']
        np.save(os.path.join(out, fn), a['data'])
        case['inputs'].append([a['name'], fn])
    for i, data in enumerate(expected):
        fn = 'out_%d.npy' % i
        np.save(os.path.join(out, fn), data)
        case['outputs'].append(fn)
    case['atol'], case['rtol'] = tolerance([v.dt for v in outs])
    with open(os.path.join(out, 'case.json'), 'w') as f:
        json.dump(case, f, indent=1)
    return case


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--data', default=DATA,
                    help='the node tests (default %(default)s)')
    ap.add_argument('--work', default='build/onnx',
                    help='output directory; cases go to WORK/cases')
    ap.add_argument('--only', help='convert the tests matching this regex')
    ap.add_argument('--list-skipped', action='store_true',
                    help='print the skipped tests grouped by reason '
                    '(Markdown)')
    ap.add_argument('-q', '--quiet', action='store_true')
    args = ap.parse_args(argv)

    tests = sorted(glob.glob(os.path.join(args.data, 'test_*')))
    if args.only:
        tests = [t for t in tests if re.search(args.only,
                                               os.path.basename(t))]
    cases_dir = os.path.join(args.work, 'cases')
    if os.path.isdir(cases_dir):
        shutil.rmtree(cases_dir)
    os.makedirs(cases_dir)
    skipped = collections.defaultdict(list)
    converted = []
    errors = []
    for d in tests:
        name = os.path.basename(d)
        try:
            converted.append(convert_test(d, cases_dir))
        except Skip as s:
            skipped[s.reason].append((name, s.detail))
        except RuntimeError as e:
            errors.append(str(e))
    nskip = sum(len(v) for v in skipped.values())
    with open(os.path.join(args.work, 'summary.json'), 'w') as f:
        json.dump({'total': len(tests), 'converted': len(converted),
                   'skipped': nskip, 'errors': errors,
                   'skipped_by_reason': {k: [n for n, _ in v]
                                         for k, v in skipped.items()}},
                  f, indent=1)
    if args.list_skipped:
        print_skipped(skipped, len(tests), len(converted))
    elif not args.quiet:
        print('convert: converted %d, skipped %d of %d tests' %
              (len(converted), nskip, len(tests)))
        for reason, items in sorted(skipped.items(),
                                    key=lambda kv: (-len(kv[1]), kv[0])):
            print('  %4d  %s' % (len(items), reason))
    for e in errors:
        print('convert: error: ' + e, file=sys.stderr)
    return 1 if errors else 0


def print_skipped(skipped, total, converted):
    nskip = sum(len(v) for v in skipped.values())
    print('%d of the %d node tests are skipped (%d converted).\n' %
          (nskip, total, converted))
    for reason, items in sorted(skipped.items(),
                                key=lambda kv: (-len(kv[1]), kv[0])):
        print('### %s (%d)\n' % (reason, len(items)))
        details = collections.defaultdict(list)
        for n, det in items:
            details[det].append(n)
        for det, names in sorted(details.items()):
            line = ', '.join('`%s`' % n[5:] for n in names)
            print('- %s%s' % ('%s: ' % det if det else '', line))
        print()


if __name__ == '__main__':
    sys.exit(main())
