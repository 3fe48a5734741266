#!/usr/bin/python3
"""make_models.py: the small ONNX models of raf-import's lit tests, made
with onnx.helper at test time (no binary files in the repository).

    make_models.py OUTDIR

writes OUTDIR/NAME.onnx for each model below, and for `mlp` also its input
x.npy and the expected output y.npy computed here with NumPy.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def model(nodes, inputs, outputs, inits=(), opset=13, name='g'):
    graph = helper.make_graph(nodes, name, inputs, outputs,
                              initializer=list(inits))
    return helper.make_model(graph, opset_imports=[
        helper.make_opsetid('', opset)])


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def main(out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    models = {}

    # An MLP: Gemm with weight initializers, Relu, a Reshape whose shape is
    # an initializer (folded, not a parameter), an integer initializer used
    # as data (a {state}), and an input name raf must rename.
    w1 = rng.standard_normal((4, 8)).astype(np.float32)
    b1 = rng.standard_normal((8,)).astype(np.float32)
    shape = np.array([2, 4, 2], dtype=np.int64)
    offset = np.array([1], dtype=np.int32)
    models['mlp'] = model(
        [helper.make_node('Gemm', ['input:0', 'w1', 'b1'], ['h'], name='fc1'),
         helper.make_node('Relu', ['h'], ['r']),
         helper.make_node('Reshape', ['r', 'shape'], ['y']),
         helper.make_node('Cast', ['offset'], ['offset_f'],
                          to=TensorProto.FLOAT),
         helper.make_node('Add', ['y', 'offset_f'], ['z'])],
        [f32('input:0', [2, 4])], [f32('z', [2, 4, 2])],
        [numpy_helper.from_array(w1, 'w1'), numpy_helper.from_array(b1, 'b1'),
         numpy_helper.from_array(shape, 'shape'),
         numpy_helper.from_array(offset, 'offset')])
    x = rng.standard_normal((2, 4)).astype(np.float32)
    y = (np.maximum(x @ w1 + b1, 0).reshape(2, 4, 2) + 1).astype(np.float32)
    np.save(os.path.join(out, 'x.npy'), x)
    np.save(os.path.join(out, 'y.npy'), y)

    # A shape-only subgraph (Shape, Gather, Unsqueeze, Concat) feeding a
    # Reshape: folded into the reshape's attribute.
    models['fold'] = model(
        [helper.make_node('Shape', ['x'], ['s']),
         helper.make_node('Gather', ['s', 'zero'], ['n']),
         helper.make_node('Unsqueeze', ['n', 'axes'], ['n1']),
         helper.make_node('Concat', ['n1', 'minus1'], ['target'], axis=0),
         helper.make_node('Reshape', ['x', 'target'], ['y'])],
        [f32('x', [3, 4, 5])], [f32('y', [3, 20])],
        [numpy_helper.from_array(np.array(0, dtype=np.int64), 'zero'),
         numpy_helper.from_array(np.array([0], dtype=np.int64), 'axes'),
         numpy_helper.from_array(np.array([-1], dtype=np.int64), 'minus1')])

    # Three nodes raf-import cannot map (one unnamed, one of another
    # domain), between nodes it can.
    models['unmappable'] = model(
        [helper.make_node('TopK', ['x', 'k'], ['v', 'i'], name='top'),
         helper.make_node('Relu', ['v'], ['r']),
         helper.make_node('Det', ['x'], ['d']),
         helper.make_node('Neg', ['x'], ['n']),
         helper.make_node('Frobnicate', ['n'], ['y'], name='frob',
                          domain='com.example')],
        [f32('x', [3, 3])], [f32('r', [3, 1]), f32('d', []), f32('y', [3, 3])],
        [numpy_helper.from_array(np.array([1], dtype=np.int64), 'k')])

    # Names that are no .raf identifiers, that clash once made ones, and
    # that look like raf-import's temporaries (%t1, ...).
    models['names'] = model(
        [helper.make_node('Add', ['a-b', 'a_b'], ['s']),
         helper.make_node('Mul', ['s', 't1'], ['out/0'])],
        [f32('a-b', [2]), f32('a_b', [2]), f32('t1', [2])],
        [f32('out/0', [2])], name='torch-jit export')

    # bfloat16 in and out (.npy has none: --bf16-io=f32).
    models['bf16'] = model(
        [helper.make_node('Relu', ['x'], ['y'])],
        [helper.make_tensor_value_info('x', TensorProto.BFLOAT16, [2])],
        [helper.make_tensor_value_info('y', TensorProto.BFLOAT16, [2])])

    # Models that decode but break ONNX's rules: a node reading a name
    # nothing defines, one missing a required input, an output declared
    # with another type than it has.
    models['malformed'] = model(
        [helper.make_node('Relu', ['nowhere'], ['r']),
         helper.make_node('Add', ['x'], ['a'], name='half')],
        [f32('x', [2])], [f32('r', [2]), f32('a', [2])])
    models['badtype'] = model(
        [helper.make_node('Relu', ['x'], ['y'])], [f32('x', [2])],
        [helper.make_tensor_value_info('y', TensorProto.INT64, [2])])

    # A good model at an opset raf-import does not know yet.
    models['opset99'] = model([helper.make_node('Relu', ['x'], ['y'])],
                              [f32('x', [2])], [f32('y', [2])], opset=99)

    # An input whose shape is symbolic: it needs --specialize.
    models['symbolic'] = model([helper.make_node('Relu', ['x'], ['y'])],
                               [f32('x', ['batch', 2])],
                               [f32('y', ['batch', 2])])

    for name, m in models.items():
        onnx.save(m, os.path.join(out, name + '.onnx'))
    # A truncated model and a file that is no protobuf at all.
    data = models['mlp'].SerializeToString()
    with open(os.path.join(out, 'truncated.onnx'), 'wb') as f:
        f.write(data[:len(data) // 2])
    with open(os.path.join(out, 'garbage.onnx'), 'wb') as f:
        f.write(b'\xff\xff\xff\xff this is not a protobuf \x07\x08')


if __name__ == '__main__':
    main(sys.argv[1])
