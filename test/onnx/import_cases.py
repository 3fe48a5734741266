#!/usr/bin/python3
"""import_cases.py: ONNX backend node tests -> raf-run cases, by raf-import.

Reads the node tests of Debian's libonnx-testdata (each a model.onnx and
test_data_set_0/{input,output}_N.pb) and writes, for every model the C tool
raf-import imports,

    WORK/cases/TEST/case.raf           the graph as one .raf function, @TEST
    WORK/cases/TEST/case.safetensors   its initializers used as data, if any
    WORK/cases/TEST/*.npy              its inputs and expected outputs
    WORK/cases/TEST/case.json          how run.py calls raf-run

and WORK/summary.json. The mapping of ONNX onto .raf is raf-import's alone;
this script only writes the test's data from its .pb files (with
onnx.numpy_helper), picks the tolerances, and tells raf-run how to call the
function. Every graph input is given to raf-import with --specialize, so an
input that .raf takes as an attribute (a Reshape's shape) is specialised to
the test's data. A model raf-import refuses is skipped with raf-import's own
message as the reason.

Usage: import_cases.py --raf-import BIN [--data DIR] [--work DIR]
                       [--only REGEX] [--jobs N]
"""
import argparse
import collections
import concurrent.futures
import glob
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

DATA = '/usr/share/libonnx-testdata/data/node'

# The ONNX element types .raf has, by their .raf names.
ONNX_DTYPES = {
    TensorProto.FLOAT: 'f32', TensorProto.DOUBLE: 'f64',
    TensorProto.FLOAT16: 'f16', TensorProto.BFLOAT16: 'bf16',
    TensorProto.INT64: 'i64', TensorProto.INT32: 'i32',
    TensorProto.INT8: 'i8', TensorProto.UINT8: 'u8', TensorProto.BOOL: 'bool',
}
# The .npy type of each .raf type (bf16 travels as f32: --bf16-io=f32).
NP_DTYPES = {
    'f64': np.float64, 'f32': np.float32, 'f16': np.float16,
    'i64': np.int64, 'i32': np.int32, 'i8': np.int8, 'u8': np.uint8,
    'bool': np.bool_,
}


class Skip(Exception):
    pass


def bf16_bits_to_f32(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def load_pb(path):
    """A test's input or output file as a NumPy array (bf16 as its uint16
    bits); Skip for an element type .raf lacks."""
    t = onnx.TensorProto()
    with open(path, 'rb') as f:
        t.ParseFromString(f.read())
    if t.data_type not in ONNX_DTYPES and t.data_type != TensorProto.UINT16:
        raise Skip('element type %s is not in .raf' %
                   TensorProto.DataType.Name(t.data_type))
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


def raf_names(model):
    """ONNX value name -> the .raf argument name raf-import gives it: other
    characters than [A-Za-z0-9_.] become '_', a clash (or a name like the
    temporaries, t1, t2, ...) gets '_' appended; named in this order: the
    graph inputs first, then the initializers (raf-import/imp.c,
    imp_unique_name; raf-import/model.c, import_inputs)."""
    taken = set()
    out = {}

    def name(n):
        s = re.sub(r'[^A-Za-z0-9_.]', '_', n) or 'arg'
        while re.fullmatch(r't[0-9]+', s) or s in taken:
            s += '_'
        taken.add(s)
        return s
    inits = [t.name for t in model.graph.initializer]
    for vi in model.graph.input:
        if vi.name not in inits and vi.name not in out:
            out[vi.name] = name(vi.name)
    for n in inits:
        if n not in out:
            out[n] = name(n)
    return out


def parse_signature(text, function):
    """The arguments (name, type) and result types of the function."""
    m = re.search(r'^func @%s\((.*)\) -> (.*) \{$' % re.escape(function),
                  text, re.M)
    if not m:
        raise RuntimeError('no signature for @%s' % function)
    args = re.findall(r'%([A-Za-z0-9_.]+): ([a-z0-9]+)\[([0-9,]*)\]',
                      m.group(1))
    results = re.findall(r'([a-z0-9]+)\[([0-9,]*)\]', m.group(2))

    def shape(s):
        return tuple(int(x) for x in s.split(',')) if s else ()
    return ([(n, dt, shape(s)) for n, dt, s in args],
            [(dt, shape(s)) for dt, s in results])


def numbered(ds, kind):
    return sorted(glob.glob(os.path.join(ds, kind + '_*.pb')),
                  key=lambda p: int(re.findall(r'\d+', os.path.basename(p))
                                    [0]))


def import_test(d, work, raf_import):
    name = os.path.basename(d)
    model_path = os.path.join(d, 'model.onnx')
    model = onnx.load(model_path)
    ds = os.path.join(d, 'test_data_set_0')
    try:
        inputs = [load_pb(p) for p in numbered(ds, 'input')]
        outputs = [load_pb(p) for p in numbered(ds, 'output')]
    except (Skip, ValueError):
        # Data that is no tensor (sequences, optionals) or of a type .raf
        # lacks: raf-import says why it refuses the model.
        inputs = outputs = None
    inits = {t.name for t in model.graph.initializer}
    real_inputs = [vi for vi in model.graph.input if vi.name not in inits]
    out = os.path.join(work, name)
    os.makedirs(out, exist_ok=True)
    names = raf_names(model)
    files = {}
    cmd = [raf_import, model_path, '-o', os.path.join(out, 'case.raf'),
           '--function=' + name, '--bf16-io=f32']
    if inputs is not None and len(real_inputs) != len(inputs):
        raise Skip('test data does not match the graph inputs')
    for i, (vi, data) in enumerate(zip(real_inputs, inputs or [])):
        tt = vi.type.tensor_type if vi.type.HasField('tensor_type') else None
        if tt is None or tt.elem_type not in ONNX_DTYPES:
            continue    # raf-import refuses the input and says why
        if tt.elem_type == TensorProto.BFLOAT16:
            data = bf16_bits_to_f32(data.astype(np.uint16))
        fn = 'in_%d.npy' % i
        np.save(os.path.join(out, fn), np.ascontiguousarray(data))
        files[names[vi.name]] = fn
        cmd.append('--specialize=%s=@%s' % (vi.name, os.path.join(out, fn)))
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    report = p.stdout.decode(errors='replace')
    if 'Sanitizer' in report or 'runtime error:' in report:
        # A leak or a fault in raf-import is a failure, not a skip.
        raise RuntimeError('%s: raf-import under the sanitizers:\n%s' %
                           (name, report))
    if p.returncode < 0 or p.returncode > 1:
        # A crash (a signal) is a failure too; raf-import refuses with 1.
        raise RuntimeError('%s: raf-import crashed (exit %d):\n%s' %
                           (name, p.returncode, report))
    if p.returncode != 0:
        shutil.rmtree(out)
        lines = report.strip().splitlines()
        first = lines[0] if lines else 'raf-import failed'
        # "raf-import: error: FILE: node 3 (Op): REASON" -> "Op: REASON"
        first = first.replace('raf-import: error: ', '').replace(
            model_path + ': ', '')
        raise Skip(re.sub(r'^node \d+ (\'[^\']*\' )?', '', first))
    if inputs is None:
        shutil.rmtree(out)
        raise Skip('the test data cannot be read as .raf tensors')
    with open(os.path.join(out, 'case.raf')) as f:
        args, results = parse_signature(f.read(), name)
    case = {'name': name, 'function': name, 'inputs': [], 'outputs': []}
    for arg, dt, shape in args:
        if arg in files:
            case['inputs'].append([arg, files[arg]])
    if os.path.exists(os.path.join(out, 'case.safetensors')):
        case['load'] = 'case.safetensors'
    if len(results) != len(outputs):
        raise RuntimeError('%s: %d results, the test expects %d' %
                           (name, len(results), len(outputs)))
    for i, ((dt, shape), vo, data) in enumerate(zip(results,
                                                   model.graph.output,
                                                   outputs)):
        if vo.type.tensor_type.elem_type == TensorProto.BFLOAT16:
            data = bf16_bits_to_f32(data.astype(np.uint16))
        data = np.ascontiguousarray(data)
        if data.shape != shape and data.size == int(np.prod(shape)):
            # The 1.12 data holds some scalars (Size, SoftmaxCrossEntropyLoss)
            # as [1]; the graph declares them scalars.
            data = data.reshape(shape)
        if data.shape != shape or np.dtype(NP_DTYPES[dt]) != \
                data.dtype:
            raise RuntimeError('%s: result %d is %s%s, the test expects %s%s'
                               % (name, i, dt, list(shape), data.dtype,
                                  list(data.shape)))
        fn = 'out_%d.npy' % i
        np.save(os.path.join(out, fn), data)
        case['outputs'].append(fn)
    case['atol'], case['rtol'] = tolerance([dt for dt, _ in results])
    with open(os.path.join(out, 'case.json'), 'w') as f:
        json.dump(case, f, indent=1)
    return case


def one(d, cases_dir, raf_import):
    try:
        return 'ok', import_test(d, cases_dir, raf_import)
    except Skip as s:
        return 'skip', str(s)
    except RuntimeError as e:
        return 'error', str(e)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--raf-import', required=True)
    ap.add_argument('--data', default=DATA)
    ap.add_argument('--work', default='build/onnx')
    ap.add_argument('--only')
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--list-skipped', action='store_true',
                    help='print the skipped tests with their reasons')
    args = ap.parse_args(argv)
    tests = sorted(glob.glob(os.path.join(args.data, 'test_*')))
    if args.only:
        tests = [t for t in tests if re.search(args.only,
                                               os.path.basename(t))]
    cases_dir = os.path.join(args.work, 'cases')
    if os.path.isdir(cases_dir):
        shutil.rmtree(cases_dir)
    os.makedirs(cases_dir)
    raf_import = os.path.abspath(args.raf_import)
    skipped = collections.defaultdict(list)
    imported, errors = [], []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = [(d, pool.submit(one, d, cases_dir, raf_import))
                for d in tests]
        for d, fut in futs:
            kind, res = fut.result()
            if kind == 'ok':
                imported.append(res)
            elif kind == 'skip':
                skipped[res].append(os.path.basename(d))
            else:
                errors.append(res)
    nskip = sum(len(v) for v in skipped.values())
    with open(os.path.join(args.work, 'summary.json'), 'w') as f:
        json.dump({'total': len(tests), 'imported': len(imported),
                   'skipped': nskip, 'errors': errors,
                   'skipped_by_reason': skipped}, f, indent=1)
    print('raf-import: imported %d, skipped %d of %d tests' %
          (len(imported), nskip, len(tests)))
    if args.list_skipped:
        # Markdown, as test/onnx/README.md lists them
        print('\n%d of the %d node tests are skipped (%d imported).\n' %
              (nskip, len(tests), len(imported)))
        for reason, names in sorted(skipped.items()):
            print('- %s: %s' % (reason, ', '.join('`%s`' % n[5:]
                                                  for n in names)))
    for e in errors:
        print('import: error: ' + e, file=sys.stderr)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
