#!/usr/bin/python3
"""run.py: imports the ONNX backend node tests and runs them through raf-run.

    run.py --raf-run build/raf-run [--raf-import build/raf-import]
           [--work build/onnx] [--jobs 2] [--only REGEX] [--no-import]
           [--passes PIPELINE] [-v]

Imports every test's model with raf-import (import_cases.py; the raf-import
next to raf-run unless --raf-import says), then (unless --no-import) runs
every case as

    raf-run case.raf --function=TEST --input=NAME=@in_N.npy ...
            [--load=case.safetensors]
            --expected-output=@out_0.npy ... --atol=A --rtol=R

on --jobs processes, prints each failure with raf-run's output, and ends with
`onnx: P passed, F failed, S skipped of T`. Exits 1 if a case fails or the
import reports an error (a crash of raf-import is one, never a skip).
The skipped tests must be exactly those of expected-skips.txt (each listed with its reason): a skip not listed there
fails, and so does a listed test that is now imported (it leaves the list);
--write-expected-skips rewrites the list from this run. With --passes, each case goes through
`raf-opt -p PIPELINE` first (raf-opt next to raf-run, or --raf-opt), so the
passes are checked to keep every case's results.
"""
import argparse
import concurrent.futures
import re
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import import_cases  # noqa: E402


def command(raf_run, case_dir, case):
    cmd = [raf_run, os.path.join(case_dir, 'case.raf'),
           '--function=' + case['function']]
    for name, fn in case['inputs']:
        cmd.append('--input=%s=@%s' % (name, os.path.join(case_dir, fn)))
    if case.get('load'):
        cmd.append('--load=' + os.path.join(case_dir, case['load']))
    for fn in case['outputs']:
        cmd.append('--expected-output=@' + os.path.join(case_dir, fn))
    if case['atol'] or case['rtol']:
        cmd += ['--atol=%g' % case['atol'], '--rtol=%g' % case['rtol']]
    return cmd


def run_case(raf_run, case_dir, timeout, threads, raf_opt, passes):
    with open(os.path.join(case_dir, 'case.json')) as f:
        case = json.load(f)
    cmd = command(raf_run, case_dir, case)
    if threads:
        cmd.append('--threads=%d' % threads)
    if passes:
        opt = os.path.join(case_dir, 'case.opt.raf')
        ocmd = [raf_opt, '-p', passes, cmd[1], '-o', opt]
        p = subprocess.run(ocmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        if p.returncode != 0:
            return case['name'], False, p.returncode, \
                p.stdout.decode(errors='replace'), ocmd
        cmd[1] = opt
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
        out = p.stdout.decode(errors='replace')
        ok = p.returncode == 0 and '[SUCCESS]' in out
        rc = p.returncode
    except subprocess.TimeoutExpired:
        ok, out, rc = False, 'timed out after %d s' % timeout, None
    return case['name'], ok, rc, out, cmd


EXPECTED_SKIPS = os.path.join(HERE, 'expected-skips.txt')


def read_expected_skips(path):
    """{test: reason} of expected-skips.txt."""
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip() and not line.startswith('#'):
                name, _, reason = line.rstrip('\n').partition(': ')
                out[name] = reason
    return out


def check_skips(summary, only, write, path):
    """The skips against the expected-skips file at path: the problems
    found."""
    skipped = {n: r for r, names in summary['skipped_by_reason'].items()
               for n in names}
    if write:
        with open(path) as f:
            head = [l for l in f if l.startswith('#')]
        with open(path, 'w') as f:
            f.writelines(head)
            for n in sorted(skipped):
                f.write('%s: %s\n' % (n, skipped[n].replace('\n', ' ')))
        return []
    expected = read_expected_skips(path)
    if only:
        expected = {n: r for n, r in expected.items() if re.search(only, n)}
    problems = ['%s is skipped but not listed in expected-skips.txt: %s' %
                (n, skipped[n]) for n in sorted(set(skipped) - set(expected))]
    problems += ['%s is listed in expected-skips.txt (%s) but was imported: '
                 'take it off the list' % (n, expected[n])
                 for n in sorted(set(expected) - set(skipped))]
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--raf-run', required=True, help='the raf-run binary')
    ap.add_argument('--raf-import', help='the raf-import binary (default: '
                    'next to raf-run)')
    ap.add_argument('--work', default='build/onnx',
                    help='where the cases are generated')
    ap.add_argument('--data', default=import_cases.DATA)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--threads', type=int, default=1,
                    help='raf-run --threads per case (default 1; 0: '
                    "raf-run's default)")
    ap.add_argument('--timeout', type=int, default=60)
    ap.add_argument('--passes', help='run raf-opt -p PASSES on each case '
                    'first, e.g. canonicalize,cse,dce')
    ap.add_argument('--raf-opt', help='the raf-opt binary (default: next to '
                    'raf-run)')
    ap.add_argument('--only', help='run the tests matching this regex')
    ap.add_argument('--no-import', action='store_true',
                    help='run the cases already in WORK')
    ap.add_argument('-v', '--verbose', action='store_true',
                    help='print every case')
    ap.add_argument('--expected-skips', default=EXPECTED_SKIPS,
                    help='the list of expected skips (default: '
                    'expected-skips.txt beside run.py)')
    ap.add_argument('--write-expected-skips', action='store_true',
                    help='rewrite expected-skips.txt from this run\'s skips')
    args = ap.parse_args()

    if not os.path.isdir(args.data):
        print('onnx: no test data at %s (Debian package libonnx-testdata)'
              % args.data)
        return 1
    t0 = time.time()
    raf_run = os.path.abspath(args.raf_run)
    raf_import = os.path.abspath(args.raf_import or os.path.join(
        os.path.dirname(raf_run), 'raf-import'))
    if not args.no_import:
        import_args = ['--data', args.data, '--work', args.work,
                       '--raf-import', raf_import, '--jobs', str(args.jobs)]
        if args.only:
            import_args += ['--only', args.only]
        if import_cases.main(import_args) != 0:
            print('onnx: the import failed')
            return 1
    with open(os.path.join(args.work, 'summary.json')) as f:
        summary = json.load(f)
    skip_problems = []
    if not args.no_import:
        skip_problems = check_skips(summary, args.only,
                                    args.write_expected_skips,
                                    args.expected_skips)
        for problem in skip_problems:
            print('onnx: ' + problem)
    cases_dir = os.path.join(args.work, 'cases')
    cases = sorted(os.listdir(cases_dir))
    raf_opt = os.path.abspath(args.raf_opt or os.path.join(
        os.path.dirname(raf_run), 'raf-opt'))
    passed, failed = [], []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futs = [pool.submit(run_case, raf_run, os.path.join(cases_dir, c),
                            args.timeout, args.threads, raf_opt, args.passes)
                for c in cases]
        for fut in futs:
            name, ok, rc, out, cmd = fut.result()
            if ok:
                passed.append(name)
                if args.verbose:
                    print('PASS %s' % name)
                continue
            failed.append(name)
            print('FAIL %s (exit %s)' % (name, rc))
            print('  $ ' + ' '.join(cmd))
            for line in out.rstrip().splitlines()[-30:]:
                print('  | ' + line)
    total = summary['total']
    print('onnx: %d passed, %d failed, %d skipped of %d (%.1f s)' %
          (len(passed), len(failed), summary['skipped'], total,
           time.time() - t0))
    if failed:
        print('onnx: failed: ' + ' '.join(failed))
    if skip_problems:
        print('onnx: %d skips differ from expected-skips.txt' %
              len(skip_problems))
    return 1 if failed or skip_problems else 0


if __name__ == '__main__':
    sys.exit(main())
